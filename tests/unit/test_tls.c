/* TLS on a listener (lib/transport/tls.c), in process: configurations from PEM in memory
 * (made by the test with OpenSSL's API), their errors, a handshake with ALPN and a request over
 * it from a client thread, a reload, records cut at every byte over the memory seam, and a
 * build without TLS saying so. */
#include "cmocka_prelude.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "inferserve.h"

#ifdef ISV_HAVE_TLS
#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <sys/socket.h>
#include <unistd.h>

#include "self_signed.h"      /* fuzz/: the certificates */
#include "server_internal.h" /* isv__server_transport */
#include "transport/memconn.h"
#include "transport/tls.h"

static void configurations_and_their_errors(void **state) {
  (void)state;
  char *cert, *key, *cert2, *key2;
  isv_self_signed("one", &cert, &key);
  isv_self_signed("two", &cert2, &key2);
  isv_tls *t;
  assert_int_equal(isv_tls_new(&t), 0);
  assert_int_equal(isv_tls_set_cert_pem(t, "not a certificate", key), ISV_EINVAL);
  assert_non_null(strstr(isv_tls_last_error(t), "certificate PEM"));
  assert_int_equal(isv_tls_set_cert_pem(t, cert, key2), ISV_EINVAL); /* not its key */
  assert_non_null(strstr(isv_tls_last_error(t), "key"));
  assert_int_equal(isv_tls_set_cert_files(t, "/nonexistent.pem", "/nonexistent.key"),
                   ISV_EINVAL);
  assert_non_null(strstr(isv_tls_last_error(t), "certificate chain file"));
  assert_int_equal(isv_tls_set_client_ca_file(t, "/nonexistent.pem", 1), ISV_EINVAL);

  uv_loop_t loop;
  uv_loop_init(&loop);
  isv_server *srv;
  assert_int_equal(isv_server_new(&loop, NULL, &srv), 0);
  isv_tls *empty;
  assert_int_equal(isv_tls_new(&empty), 0);
  assert_int_equal(isv_server_listen_tls(srv, "127.0.0.1", 0, empty), ISV_EINVAL);
  assert_non_null(strstr(isv_server_last_error(srv), "no certificate"));
  assert_int_equal(isv_tls_set_cert_pem(t, cert, key), 0);
  assert_int_equal(isv_server_listen(srv, "127.0.0.1", 0), 0);
  assert_int_equal(isv_server_set_listener_tls(srv, 0, t), ISV_EINVAL); /* a plain one */
  isv_tls_free(empty);
  isv_tls_free(t);
  isv_server_close(srv, NULL, NULL);
  uv_run(&loop, UV_RUN_DEFAULT);
  assert_int_equal(uv_loop_close(&loop), 0);
  free(cert), free(key), free(cert2), free(key2);
}

typedef struct client {
  int port;
  char alpn[16];
  char subject_cn[64];
  char reply[512];
  atomic_int done; /* the client thread is through: the rest may be read */
} client;

/* A blocking TLS client: handshake offering h2 and http/1.1, then one HTTP/1.1 request. */
static void client_run(void *arg) {
  client *c = arg;
  SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
  SSL_CTX_set_alpn_protos(ctx, (const unsigned char *)"\x02h2\x08http/1.1", 12);
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)c->port)};
  inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
  if (connect(fd, (struct sockaddr *)&a, sizeof a) == 0) {
    SSL *ssl = SSL_new(ctx);
    SSL_set_fd(ssl, fd);
    if (SSL_connect(ssl) == 1) {
      const unsigned char *p;
      unsigned n;
      SSL_get0_alpn_selected(ssl, &p, &n);
      snprintf(c->alpn, sizeof c->alpn, "%.*s", (int)n, p);
      X509 *peer = SSL_get1_peer_certificate(ssl);
      X509_NAME_get_text_by_NID(X509_get_subject_name(peer), NID_commonName, c->subject_cn,
                                sizeof c->subject_cn);
      X509_free(peer);
      static const char req[] = "GET /v2/health/live HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
      SSL_write(ssl, req, sizeof req - 1);
      size_t got = 0;
      int k;
      while ((k = SSL_read(ssl, c->reply + got, (int)(sizeof c->reply - 1 - got))) > 0)
        got += (size_t)k;
    }
    SSL_free(ssl);
  }
  close(fd);
  SSL_CTX_free(ctx);
  atomic_store(&c->done, 1);
}


/* Run the loop until the client thread is done. */
static void serve_client(uv_loop_t *loop, client *c) {
  uv_thread_t th;
  uv_thread_create(&th, client_run, c);
  for (int i = 0; i < 4000 && !atomic_load(&c->done); i++) {
    uv_run(loop, UV_RUN_NOWAIT);
    uv_sleep(1);
  }
  for (int i = 0; i < 50; i++) uv_run(loop, UV_RUN_NOWAIT);
  uv_thread_join(&th);
}

/* A configuration with this certificate and key (the caller frees it). */
static isv_tls *tls_of(const char *cert, const char *key) {
  isv_tls *t;
  assert_int_equal(isv_tls_new(&t), 0);
  assert_int_equal(isv_tls_set_cert_pem(t, cert, key), 0);
  return t;
}

static void a_request_over_tls_and_a_reload(void **state) {
  (void)state;
  char *cert, *key, *cert2, *key2;
  isv_self_signed("first", &cert, &key);
  isv_self_signed("second", &cert2, &key2);
  uv_loop_t loop;
  uv_loop_init(&loop);
  isv_server *srv;
  assert_int_equal(isv_server_new(&loop, NULL, &srv), 0);
  isv_tls *t = tls_of(cert, key);
  assert_int_equal(isv_server_listen_tls(srv, "127.0.0.1", 0, t), 0);
  isv_tls_free(t); /* the listener keeps its own reference */
  client c = {.port = isv_server_bound_port(srv, 0)};
  serve_client(&loop, &c);
  assert_string_equal(c.alpn, "h2");
  assert_string_equal(c.subject_cn, "first");
  /* the client spoke HTTP/1.1 whatever ALPN said: the plaintext decides */
  assert_non_null(strstr(c.reply, "HTTP/1.1 200"));
  assert_non_null(strstr(c.reply, "{\"live\":true}"));

  t = tls_of(cert2, key2);
  assert_int_equal(isv_server_set_listener_tls(srv, 0, t), 0);
  isv_tls_free(t);
  client d = {.port = c.port};
  serve_client(&loop, &d);
  assert_string_equal(d.subject_cn, "second");

  isv_server_close(srv, NULL, NULL);
  uv_run(&loop, UV_RUN_DEFAULT);
  assert_int_equal(uv_loop_close(&loop), 0);
  free(cert), free(key), free(cert2), free(key2);
}

/* TLS over the memory seam (transport/memconn.h), the client's records fed one byte at a time:
 * the connection's BIO gets every record in pieces, and the answer is the same. */
static void records_cut_at_every_byte_over_the_memory_seam(void **state) {
  (void)state;
  char *cert, *key;
  isv_self_signed("localhost", &cert, &key);
  uv_loop_t loop;
  uv_loop_init(&loop);
  isv_server *srv;
  assert_int_equal(isv_server_new(&loop, NULL, &srv), 0);
  isv_tls *t = tls_of(cert, key);
  void *ctx = isv__tls_ctx_ref(t);
  isv_tls_free(t);
  assert_non_null(ctx);
  uint64_t clock = 1000;
  isv__memconn *m = isv__memconn_new(isv__server_transport(srv), &clock);
  assert_non_null(m);
  m->sndbuf = (size_t)1 << 20;
  assert_int_equal(isv__tls_attach(&m->c, ctx), 0);

  SSL_CTX *cctx = SSL_CTX_new(TLS_client_method());
  SSL *ssl = SSL_new(cctx);
  BIO *in = BIO_new(BIO_s_mem()), *out = BIO_new(BIO_s_mem());
  SSL_set_bio(ssl, in, out);
  SSL_set_connect_state(ssl);
  static const char req[] = "GET /v2/health/live HTTP/1.1\r\nHost: x\r\n\r\n";
  char reply[4096] = "", buf[16384];
  size_t got = 0, fed = 0;
  int sent = 0;
  for (int spin = 0; spin < 20000 && !strstr(reply, "{\"live\":true}"); spin++) {
    if (!SSL_is_init_finished(ssl)) SSL_do_handshake(ssl);
    else if (!sent) sent = SSL_write(ssl, req, sizeof req - 1) > 0;
    char one;
    if (BIO_read(out, &one, 1) == 1) fed += isv__memconn_feed(m, &one, 1); /* a byte a time */
    uv_run(&loop, UV_RUN_NOWAIT);
    isv__memconn_settle(m);
    size_t n;
    while ((n = isv__memconn_take(m, buf, sizeof buf)) > 0) BIO_write(in, buf, (int)n);
    int k;
    while (SSL_is_init_finished(ssl) &&
           (k = SSL_read(ssl, reply + got, (int)(sizeof reply - 1 - got))) > 0)
      got += (size_t)k;
    reply[got] = '\0';
    ERR_clear_error();
  }
  assert_true(fed > 200); /* the handshake and the request, each byte its own read */
  assert_non_null(strstr(reply, "HTTP/1.1 200"));
  assert_non_null(strstr(reply, "{\"live\":true}"));
  SSL_free(ssl);
  SSL_CTX_free(cctx);
  isv__memconn_free(m);
  isv__tls_ctx_unref(ctx);
  isv_server_close(srv, NULL, NULL);
  uv_run(&loop, UV_RUN_DEFAULT);
  assert_int_equal(uv_loop_close(&loop), 0);
  free(cert), free(key);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(configurations_and_their_errors),
      cmocka_unit_test(a_request_over_tls_and_a_reload),
      cmocka_unit_test(records_cut_at_every_byte_over_the_memory_seam),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

#else /* a build without OpenSSL */

static void without_tls_every_call_says_so(void **state) {
  (void)state;
  isv_tls *t = (isv_tls *)&t;
  assert_int_equal(isv_tls_new(&t), ISV_EUNIMPL);
  assert_null(t);
  assert_non_null(strstr(isv_tls_last_error(NULL), "without TLS"));
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(without_tls_every_call_says_so)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}

#endif
