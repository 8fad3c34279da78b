/* The demo's TLS listener (--tls-listen HOST:PORT with --tls-cert and --tls-key; --tls-client-ca
 * asks clients for a certificate, --tls-require-client-cert insists). SIGHUP reads the files
 * again and gives the listener the new configuration: open connections keep theirs. With
 * --threads every loop listens on the same TLS port with the same configuration (threads.c),
 * and a reload reaches each on its own loop. */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <uv.h>

#include "zoo.h"

static struct {
  isv_server *srv;
  const char *cert, *key, *client_ca;
  int require;
  unsigned index; /* the listener's */
  uv_signal_t sighup;
  int active;
  isv_tls *first; /* the configuration the other loops listen with, until demo_tls_shared_done */
} tls;

/* A configuration from the files; NULL (said on stderr) when they do not make one. */
static isv_tls *load(void) {
  isv_tls *t;
  int rc = isv_tls_new(&t);
  if (rc != 0) {
    fprintf(stderr, "inferserve-demo: TLS: %s (%s)\n", isv_strerror(rc), isv_tls_last_error(NULL));
    return NULL;
  }
  if ((rc = isv_tls_set_cert_files(t, tls.cert, tls.key)) == 0 && tls.client_ca)
    rc = isv_tls_set_client_ca_file(t, tls.client_ca, tls.require);
  if (rc != 0) {
    fprintf(stderr, "inferserve-demo: TLS: %s\n", isv_tls_last_error(t));
    isv_tls_free(t);
    return NULL;
  }
  return t;
}

static void on_sighup(uv_signal_t *h, int signum) {
  (void)h;
  (void)signum;
  isv_tls *t = load();
  if (t == NULL) return; /* the listener keeps what it had */
  int rc = isv_server_set_listener_tls(tls.srv, tls.index, t);
  if (rc != 0) {
    fprintf(stderr, "inferserve-demo: TLS reload: %s\n", isv_server_last_error(tls.srv));
    isv_tls_free(t);
    return;
  }
  isv_tls_free(t);
  demo_threads_set_tls(load, tls.index); /* the other loops' listeners too */
  fprintf(stderr, "inferserve-demo: TLS configuration reloaded\n");
}

int demo_tls_listen(isv_server *srv, uv_loop_t *loop, const char *host, int port,
                    const char *cert, const char *key, const char *client_ca, int require,
                    unsigned index) {
  tls.srv = srv;
  tls.cert = cert;
  tls.key = key;
  tls.client_ca = client_ca;
  tls.require = require;
  tls.index = index;
  isv_tls *t = load();
  if (t == NULL) return -1;
  int rc = isv_server_listen_tls(srv, host, port, t);
  if (rc != 0) {
    isv_tls_free(t);
    fprintf(stderr, "inferserve-demo: %s\n", isv_server_last_error(srv));
    return -1;
  }
  tls.first = t;
  uv_signal_init(loop, &tls.sighup);
  uv_signal_start(&tls.sighup, on_sighup, SIGHUP);
  tls.active = 1;
  return 0;
}

const isv_tls *demo_tls_shared(void) { return tls.first; }

void demo_tls_shared_done(void) {
  isv_tls_free(tls.first); /* listeners keep their own reference */
  tls.first = NULL;
}

void demo_tls_closed(void) {
  if (tls.active) uv_close((uv_handle_t *)&tls.sighup, NULL);
  tls.active = 0;
}
