/* TLS on a listener (lib/transport/tls.c), in process: configurations from PEM in memory
 * (made by the test with OpenSSL's API), their errors, a handshake with ALPN and a request over
 * it from a client thread, a reload, records cut at every byte over the memory seam, an idle
 * connection giving its buffers back, and a build without TLS saying so. */
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

/* OpenSSL's heap, counted (main installs these before OpenSSL allocates anything): what the
 * server's SSL object holds between requests is seen as bytes here. Atomic: a test's client
 * thread allocates too. */
static atomic_size_t ossl_held;
#define HDR 16 /* keeps OpenSSL's blocks 16-aligned */
static void *ossl_malloc(size_t n, const char *file, int line) {
  (void)file, (void)line;
  char *p = malloc(HDR + n);
  if (p == NULL) return NULL;
  memcpy(p, &n, sizeof n);
  atomic_fetch_add(&ossl_held, n);
  return p + HDR;
}
static void ossl_free(void *q, const char *file, int line) {
  (void)file, (void)line;
  if (q == NULL) return;
  size_t n;
  memcpy(&n, (char *)q - HDR, sizeof n);
  atomic_fetch_sub(&ossl_held, n);
  free((char *)q - HDR);
}
static void *ossl_realloc(void *q, size_t n, const char *file, int line) {
  if (q == NULL) return ossl_malloc(n, file, line);
  char *r = ossl_malloc(n, file, line);
  if (r == NULL) return NULL;
  size_t old;
  memcpy(&old, (char *)q - HDR, sizeof old);
  memcpy(r, q, old < n ? old : n);
  ossl_free(q, file, line);
  return r;
}

/* A server connection over the memory seam (transport/memconn.h) with a self-signed
 * certificate for "localhost", and an OpenSSL client over memory BIOs, on a fake clock. */
typedef struct seam {
  uv_loop_t loop;
  isv_server *srv;
  void *ctx;
  uint64_t clock;
  isv__memconn *m;
  SSL_CTX *cctx;
  SSL *ssl;
  BIO *in, *out; /* the client's: records to it, records from it */
} seam;

static void seam_open(seam *s) {
  uv_loop_init(&s->loop);
  assert_int_equal(isv_server_new(&s->loop, NULL, &s->srv), 0);
  char *cert, *key;
  isv_self_signed("localhost", &cert, &key);
  isv_tls *t = tls_of(cert, key);
  free(cert), free(key);
  s->ctx = isv__tls_ctx_ref(t);
  isv_tls_free(t);
  assert_non_null(s->ctx);
  s->clock = 1000;
  s->m = isv__memconn_new(isv__server_transport(s->srv), &s->clock);
  assert_non_null(s->m);
  s->m->sndbuf = (size_t)1 << 20;
  assert_int_equal(isv__tls_attach(&s->m->c, s->ctx), 0);
  s->cctx = SSL_CTX_new(TLS_client_method());
  s->ssl = SSL_new(s->cctx);
  s->in = BIO_new(BIO_s_mem());
  s->out = BIO_new(BIO_s_mem());
  SSL_set_bio(s->ssl, s->in, s->out);
  SSL_set_connect_state(s->ssl);
}

static void seam_close(seam *s) {
  SSL_free(s->ssl);
  SSL_CTX_free(s->cctx);
  isv__memconn_free(s->m);
  isv__tls_ctx_unref(s->ctx);
  isv_server_close(s->srv, NULL, NULL);
  uv_run(&s->loop, UV_RUN_DEFAULT);
  assert_int_equal(uv_loop_close(&s->loop), 0);
}

/* The handshake if not done yet, then `req`, until the answer holds `want`: the answer. The
 * client's records go to the server a byte per read (`bytewise`) or as they come. *fed: the
 * bytes the server took. */
static void seam_ask(seam *s, const char *req, const char *want, int bytewise, size_t *fed,
                     char *reply, size_t cap) {
  size_t got = 0;
  int sent = 0;
  reply[0] = '\0';
  *fed = 0;
  for (int spin = 0; spin < 20000 && !strstr(reply, want); spin++) {
    if (!SSL_is_init_finished(s->ssl)) SSL_do_handshake(s->ssl);
    else if (!sent) sent = SSL_write(s->ssl, req, (int)strlen(req)) > 0;
    char buf[16384];
    int k = BIO_read(s->out, buf, bytewise ? 1 : (int)sizeof buf);
    if (k > 0) *fed += isv__memconn_feed(s->m, buf, (size_t)k);
    uv_run(&s->loop, UV_RUN_NOWAIT);
    isv__memconn_settle(s->m);
    size_t n;
    while ((n = isv__memconn_take(s->m, buf, sizeof buf)) > 0) BIO_write(s->in, buf, (int)n);
    while (SSL_is_init_finished(s->ssl) &&
           (k = SSL_read(s->ssl, reply + got, (int)(cap - 1 - got))) > 0)
      got += (size_t)k;
    reply[got] = '\0';
    ERR_clear_error();
  }
}

static const char live_req[] = "GET /v2/health/live HTTP/1.1\r\nHost: x\r\n\r\n";

/* The client's records fed one byte at a time: the connection's BIO gets every record in
 * pieces, and the answer is the same. */
static void records_cut_at_every_byte_over_the_memory_seam(void **state) {
  (void)state;
  seam s;
  seam_open(&s);
  char reply[4096];
  size_t fed;
  seam_ask(&s, live_req, "{\"live\":true}", 1, &fed, reply, sizeof reply);
  assert_true(fed > 200); /* the handshake and the request, each byte its own read */
  assert_non_null(strstr(reply, "HTTP/1.1 200"));
  assert_non_null(strstr(reply, "{\"live\":true}"));
  seam_close(&s);
}

/* OpenSSL's buffers (~17 KiB each way) stay with a connection while it is busy — no malloc and
 * free of them per request — and go back once it has been quiet for ISV__TLS_QUIET_MS, checked
 * on the connection's own clock; the next request gets them again. A record half received is
 * kept through the checks. */
static void an_idle_connection_gives_its_buffers_back(void **state) {
  (void)state;
  seam s;
  seam_open(&s);
  char reply[4096];
  size_t fed;
  seam_ask(&s, live_req, "{\"live\":true}", 0, &fed, reply, sizeof reply);
  assert_non_null(strstr(reply, "{\"live\":true}"));
  uint64_t due = isv__memconn_next(s.m);
  assert_true(due > s.clock && due <= s.clock + ISV__TLS_QUIET_MS); /* the check, first */

  /* busy within the last period: kept, looked at again a period later */
  size_t busy = ossl_held;
  s.clock = due;
  isv__memconn_fire(s.m);
  assert_int_equal(ossl_held, busy);
  assert_int_equal(isv__memconn_next(s.m), s.clock + ISV__TLS_QUIET_MS);

  /* a request within that period: still kept (no release and allocation per request) */
  s.clock += ISV__TLS_QUIET_MS / 2;
  seam_ask(&s, live_req, "{\"live\":true}", 0, &fed, reply, sizeof reply);
  assert_non_null(strstr(reply, "{\"live\":true}"));
  size_t again = ossl_held;
  s.clock += ISV__TLS_QUIET_MS / 2;
  isv__memconn_fire(s.m);
  assert_int_equal(ossl_held, again);

  /* a whole period with nothing read or written: given back */
  s.clock += ISV__TLS_QUIET_MS;
  isv__memconn_fire(s.m);
  assert_true(again - ossl_held >= (size_t)32 << 10);
  assert_true(isv__memconn_next(s.m) > s.clock + ISV__TLS_QUIET_MS); /* no check: the idle
                                                                        deadline is next */
  /* and the connection goes on */
  size_t quiet = ossl_held;
  seam_ask(&s, live_req, "{\"live\":true}", 1, &fed, reply, sizeof reply);
  assert_non_null(strstr(reply, "HTTP/1.1 200"));
  assert_true(ossl_held >= quiet + ((size_t)32 << 10));
  assert_true(isv__memconn_next(s.m) <= s.clock + ISV__TLS_QUIET_MS);

  /* half a record received, then quiet: SSL keeps what it holds of it (it refuses to give the
   * buffer back), and the rest of the record completes the request */
  assert_int_equal(SSL_write(s.ssl, live_req, (int)strlen(live_req)), (int)strlen(live_req));
  char rec[4096];
  int k = BIO_read(s.out, rec, sizeof rec);
  assert_true(k > 40);
  assert_int_equal(isv__memconn_feed(s.m, rec, (size_t)k / 2), (size_t)k / 2);
  for (int i = 0; i < 3; i++) {
    s.clock += ISV__TLS_QUIET_MS;
    isv__memconn_fire(s.m);
  }
  assert_false(s.m->c.closing);
  assert_int_equal(isv__memconn_pending(s.m), 0); /* no answer yet */
  assert_int_equal(isv__memconn_feed(s.m, rec + k / 2, (size_t)(k - k / 2)), (size_t)(k - k / 2));
  uv_run(&s.loop, UV_RUN_NOWAIT);
  isv__memconn_settle(s.m);
  size_t n = isv__memconn_take(s.m, rec, sizeof rec);
  assert_true(n > 0);
  BIO_write(s.in, rec, (int)n);
  k = SSL_read(s.ssl, reply, (int)sizeof reply - 1);
  assert_true(k > 0);
  reply[k] = '\0';
  assert_non_null(strstr(reply, "HTTP/1.1 200"));
  seam_close(&s);
}

int main(void) {
  /* before OpenSSL allocates anything (else it refuses: 0) */
  if (!CRYPTO_set_mem_functions(ossl_malloc, ossl_realloc, ossl_free)) {
    fprintf(stderr, "OpenSSL allocated before main: its heap cannot be counted\n");
    return 1;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(configurations_and_their_errors),
      cmocka_unit_test(a_request_over_tls_and_a_reload),
      cmocka_unit_test(records_cut_at_every_byte_over_the_memory_seam),
      cmocka_unit_test(an_idle_connection_gives_its_buffers_back),
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
