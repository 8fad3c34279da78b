/* A throw-away self-signed certificate (P-256, SHA-256, valid from an hour ago for a year) and
 * its key, as PEM strings: for fuzz_tls_session and tests/unit/test_tls.c (a fuzz/ helper a test
 * links, as grps_same.c is). Aborts when OpenSSL cannot make one. */
#ifndef ISV_FUZZ_SELF_SIGNED_H
#define ISV_FUZZ_SELF_SIGNED_H

/* CN=cn; *cert and *key are malloc'd, NUL-ended. */
void isv_self_signed(const char *cn, char **cert, char **key);

#endif
