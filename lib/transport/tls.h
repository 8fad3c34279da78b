/* TLS on a connection (OpenSSL 3, when built with -Dtls): the socket carries records, the
 * engines see plaintext. It runs on the loop thread with a BIO of its own over the connection —
 * SSL reads the ciphertext straight from the socket's read buffer and writes its records into
 * a buffer the connection keeps between answers; plaintext comes out to the engine; what the
 * engine writes is encrypted at once (small parts gathered into one record) and the records go
 * out through the connection's ordinary writes (their slices, send timeout and callbacks) — so
 * no thread and no socket I/O of its own. The
 * protocol is still chosen by sniffing the plaintext (ALPN "h2" and "http/1.1" are offered
 * for the clients that insist on it; both end at the same sniff). Loop thread only. */
#ifndef ISV_TRANSPORT_TLS_H
#define ISV_TRANSPORT_TLS_H

#include "transport/layer.h"

#include "transport/conn.h"

/* Whether the library was built with TLS. */
int isv__tls_available(void);

/* A listener's configuration (an SSL_CTX, shared by reference): isv_tls's, referenced again. */
void *isv__tls_ctx_ref(const isv_tls *tls);
void isv__tls_ctx_unref(void *ctx);

/* Make c a TLS connection of ctx (before its first read). 0 or ISV_ENOMEM. */
int isv__tls_attach(isv__conn *c, void *ctx);
/* Ciphertext read from the socket: decrypted and handed to `deliver` (the sniff or the
 * engine), the handshake's own answers written. c may be closed when it returns. */
void isv__tls_on_read(isv__conn *c, const char *data, size_t len,
                      void (*deliver)(isv__conn *c, const char *data, size_t len));
/* Encrypt and write (isv__conn_write's contract). */
int isv__tls_write(isv__conn *c, const uv_buf_t *bufs, size_t n, isv__write_cb cb, void *ctx);
/* Buffers are held while the connection is busy — OpenSSL's for records in and out (about
 * 17 KiB each) and the block the answers' records are written from — and given back once it
 * has been quiet (nothing read or written) for ISV__TLS_QUIET_MS, so that an idle connection
 * holds none: tls.c asks for the check (isv__conn_tls_check) when it becomes busy, and this
 * answers it — the ms until it wants to be asked again, 0 once the buffers are given back.
 * OpenSSL's own SSL_MODE_RELEASE_BUFFERS gives them back after every record: a malloc and a
 * free of each per request. */
#define ISV__TLS_QUIET_MS 1000
uint64_t isv__tls_quiet(isv__conn *c);
/* The connection is gone: free what TLS holds. */
void isv__tls_free(isv__conn *c);

#endif
