/* TLS on a connection (transport/tls.c): the connection's BIO, the handshake, records cut at
 * any byte, sealed answers, the close. A real OpenSSL client in memory talks to the harness's
 * server (conn_harness.h) through the memory seam; the input says how:
 *   byte 0: bits 0-2 the size the client's records are cut to as they arrive (1, 5, 64, 300,
 *           4 KiB, 16 KiB + 5, whole); bit 3 TLS 1.2 at most (else 1.3); bit 4 ALPN "h2" offered
 *           before "http/1.1"; bit 5 one byte of what the client sends flipped, at the offset in
 *           bytes 1-2; bit 6 the client ends with a close_notify before it hangs up; bit 7
 *           the client is silent for 2.5 s after the handshake and after each segment (the
 *           server gives its buffers back in between, tls.h's quiet check) — and, with the
 *           records cut small, once in the middle of its first record after the handshake;
 *   then the plaintext the client sends, in segments cut at ISV_FUZZ_SEP (each sent as its own
 *           SSL_write once the server has answered the one before) — HTTP/1.1 or, after the h2
 *           preface, HTTP/2 frames.
 * The oracle beyond the sanitizers: every byte the server sends is TLS the client reads
 * without error (unless a byte was flipped: then the server's alert may be all it reads), and
 * the server never stalls — it answers, or it closes. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include "conn_harness.h"
#include "inferserve.h"
#include "self_signed.h"
#include "transport/memconn.h"
#include "transport/tls.h"

static void *server_ctx;   /* the listener's SSL_CTX, as isv__tls_ctx_ref gives it */
static SSL_CTX *client_ctx;

static void init(void) {
  char *cert, *key;
  isv_self_signed("localhost", &cert, &key);
  isv_tls *tls;
  if (isv_tls_new(&tls) != 0 || isv_tls_set_cert_pem(tls, cert, key) != 0) abort();
  if ((server_ctx = isv__tls_ctx_ref(tls)) == NULL) abort();
  isv_tls_free(tls); /* server_ctx keeps its own reference, for the whole run */
  free(cert);
  free(key);
  if ((client_ctx = SSL_CTX_new(TLS_client_method())) == NULL) abort();
  SSL_CTX_set_verify(client_ctx, SSL_VERIFY_NONE, NULL);
}

typedef struct client {
  SSL *ssl;
  BIO *in;  /* the server's bytes, for the client to read */
  BIO *out; /* what the client wrote, for the server */
  char *pend; /* the client's bytes the server has not taken yet (it stopped reading) */
  size_t pend_len, pend_cap, sent;
  size_t cut;      /* bytes fed at a time */
  long flip_at;    /* the offset of the byte flipped in what the client sends, -1: none */
  int broken;      /* a TLS error at the client (allowed only once a byte was flipped) */
} client;

/* What the client wrote since, after the bytes still pending (the byte at flip_at flipped). */
static void pend_more(client *cl) {
  char buf[16384];
  int n;
  while ((n = BIO_read(cl->out, buf, sizeof buf)) > 0) {
    size_t at = cl->sent + cl->pend_len; /* the offset of buf[0] in all the client sent */
    if (cl->flip_at >= 0 && (size_t)cl->flip_at >= at && (size_t)cl->flip_at < at + (size_t)n)
      buf[(size_t)cl->flip_at - at] ^= 0x5a;
    if (cl->pend_len + (size_t)n > cl->pend_cap) {
      cl->pend_cap = 2 * (cl->pend_len + (size_t)n);
      if ((cl->pend = realloc(cl->pend, cl->pend_cap)) == NULL) abort();
    }
    memcpy(cl->pend + cl->pend_len, buf, (size_t)n);
    cl->pend_len += (size_t)n;
  }
}

/* Feed what the client sent (at most `most` bytes), a cut at a time while the server reads;
 * whether any was taken. */
static int feed(client *cl, isv__memconn *m, size_t most) {
  pend_more(cl);
  size_t took = 0;
  while (took < cl->pend_len && took < most && !m->c.closing) {
    size_t n = cl->pend_len - took;
    if (n > cl->cut) n = cl->cut;
    size_t k = isv__memconn_feed(m, cl->pend + took, n);
    took += k;
    if (k < n) break; /* the server stopped reading: the rest waits */
  }
  memmove(cl->pend, cl->pend + took, cl->pend_len - took);
  cl->pend_len -= took;
  cl->sent += took;
  return took > 0;
}

/* The server's bytes to the client, which reads them: the handshake's, then answers (their
 * plaintext dropped). Whether any came. */
static int receive(client *cl, isv__memconn *m) {
  char buf[16384];
  size_t n;
  int any = 0;
  while ((n = isv__memconn_take(m, buf, sizeof buf)) > 0) {
    BIO_write(cl->in, buf, (int)n);
    any = 1;
  }
  if (cl->broken) return any;
  for (;;) {
    int r = SSL_is_init_finished(cl->ssl) ? SSL_read(cl->ssl, buf, sizeof buf)
                                          : SSL_do_handshake(cl->ssl);
    if (r > 0 && SSL_is_init_finished(cl->ssl)) continue;
    int e = SSL_get_error(cl->ssl, r);
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE || r == 1) break;
    if (e == SSL_ERROR_ZERO_RETURN) break; /* the server's close_notify */
    /* the server sent what is not TLS, or an alert: only after a flipped byte */
    if (cl->flip_at < 0 || (size_t)cl->flip_at >= cl->sent) abort();
    cl->broken = 1;
    break;
  }
  ERR_clear_error();
  return any;
}

/* Until neither side has anything left to say. */
static void converse(client *cl, isv__memconn *m) {
  int quiet = 0;
  for (int spins = 0; quiet < 4 && !m->c.closing; spins++) {
    if (spins == 100000) abort(); /* a server that never goes quiet is a hang */
    int busy = feed(cl, m, (size_t)-1);
    busy |= isv_fuzz_turn(m);
    busy |= receive(cl, m);
    quiet = busy ? 0 : quiet + 1;
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const size_t cuts[8] = {1, 5, 64, 300, 4096, 16389, (size_t)-1, 64};
  static int ready;
  if (!ready) {
    init();
    ready = 1;
  }
  if (size < 3) return 0;
  unsigned flags = data[0];
  client cl = {.cut = cuts[flags & 7], .flip_at = (flags & 0x20) ? (data[1] << 8 | data[2]) : -1};
  data += 3;
  size -= 3;
  if ((cl.ssl = SSL_new(client_ctx)) == NULL) abort();
  cl.in = BIO_new(BIO_s_mem());
  cl.out = BIO_new(BIO_s_mem());
  SSL_set_bio(cl.ssl, cl.in, cl.out);
  SSL_set_connect_state(cl.ssl);
  SSL_set_tlsext_host_name(cl.ssl, "localhost");
  if (flags & 0x08) SSL_set_max_proto_version(cl.ssl, TLS1_2_VERSION);
  static const unsigned char h2_first[] = "\x02h2\x08http/1.1", h1_only[] = "\x08http/1.1";
  if (flags & 0x10) SSL_set_alpn_protos(cl.ssl, h2_first, sizeof h2_first - 1);
  else SSL_set_alpn_protos(cl.ssl, h1_only, sizeof h1_only - 1);

  isv__memconn *m = isv_fuzz_connect();
  if (isv__tls_attach(&m->c, server_ctx) != 0) abort();
  SSL_do_handshake(cl.ssl); /* the ClientHello */
  converse(&cl, m);
  if (flags & 0x80) isv_fuzz_wait(m, 2500);
  const uint8_t *seg = data, *end = data + size;
  while (!m->c.closing && !cl.broken && SSL_is_init_finished(cl.ssl)) {
    const uint8_t *sep = seg;
    while (end - sep >= ISV_FUZZ_SEP_LEN && memcmp(sep, ISV_FUZZ_SEP, ISV_FUZZ_SEP_LEN) != 0) sep++;
    if (end - sep < ISV_FUZZ_SEP_LEN) sep = end;
    if (sep > seg && SSL_write(cl.ssl, seg, (int)(sep - seg)) <= 0) break; /* it was closed */
    if ((flags & 0x80) && seg == data && cl.cut < 300) { /* a record's first piece, then quiet */
      feed(&cl, m, cl.cut);
      isv_fuzz_turn(m);
      isv_fuzz_wait(m, 2500);
    }
    converse(&cl, m);
    if (flags & 0x80) isv_fuzz_wait(m, 2500);
    if (sep == end) break;
    seg = sep + ISV_FUZZ_SEP_LEN;
  }
  if ((flags & 0x40) && !m->c.closing && !cl.broken) {
    SSL_shutdown(cl.ssl);
    converse(&cl, m);
  }
  isv_fuzz_hang_up(m);
  SSL_free(cl.ssl); /* and its BIOs */
  free(cl.pend);
  ERR_clear_error();
  return 0;
}
