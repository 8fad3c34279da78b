/* See self_signed.h. */
#include "self_signed.h"

#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

/* What b holds, as a NUL-ended malloc'd string. */
static char *pem_text(BIO *b) {
  char *p;
  long n = BIO_get_mem_data(b, &p);
  char *s = n >= 0 ? strndup(p, (size_t)n) : NULL;
  if (s == NULL) abort();
  return s;
}

void isv_self_signed(const char *cn, char **cert, char **key) {
  EVP_PKEY *pk = EVP_EC_gen("P-256"); /* an RSA key takes ~0.1 s to make */
  X509 *x = X509_new();
  if (pk == NULL || x == NULL) abort();
  X509_set_version(x, 2);
  ASN1_INTEGER_set(X509_get_serialNumber(x), 1);
  X509_gmtime_adj(X509_getm_notBefore(x), -3600);
  X509_gmtime_adj(X509_getm_notAfter(x), 3600L * 24 * 365);
  X509_NAME *name = X509_get_subject_name(x);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)cn, -1, -1, 0);
  X509_set_issuer_name(x, name);
  X509_set_pubkey(x, pk);
  if (X509_sign(x, pk, EVP_sha256()) == 0) abort();
  BIO *c = BIO_new(BIO_s_mem()), *k = BIO_new(BIO_s_mem());
  if (!PEM_write_bio_X509(c, x) || !PEM_write_bio_PrivateKey(k, pk, NULL, NULL, 0, NULL, NULL))
    abort();
  *cert = pem_text(c);
  *key = pem_text(k);
  BIO_free(c);
  BIO_free(k);
  X509_free(x);
  EVP_PKEY_free(pk);
}
