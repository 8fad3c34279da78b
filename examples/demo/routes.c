/* The demo's custom HTTP routes (isv_server_add_route; see zoo.h):
 *   POST /custom/echo        the body back, uppercased (inline)
 *   POST /custom/sse?n=N     Server-Sent Events "data: 0" .. "data: N-1", then "data: [DONE]"
 *                            (on the worker pool; &delay_ms=D between events; N <= 100000;
 *                            &pad=P: each event carries P more bytes, "data: i xxx...")
 *   GET  /custom/loop        which of the demo's loops (--threads) served the connection: 0
 *                            for the main thread's, 1.. for the others (text) */
#include "zoo.h"

#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

static int echo_upper(isv_http_request *req, void *user) {
  (void)user;
  size_t n;
  const char *body = isv_http_body(req, &n);
  char *out = malloc(n ? n : 1);
  if (out == NULL) return ISV_ENOMEM;
  for (size_t i = 0; i < n; i++) out[i] = (char)toupper((unsigned char)body[i]);
  return isv_http_respond(req, 200, "text/plain", out, n, free); /* freed once written */
}

/* Query parameter `key` as a number in [0, max], or -1. */
static long query_num(const char *query, const char *key, long max) {
  size_t kl = strlen(key);
  for (const char *p = query; p && *p; p = strchr(p, '&') ? strchr(p, '&') + 1 : NULL) {
    if (strncmp(p, key, kl) != 0 || p[kl] != '=') continue;
    char *end;
    long v = strtol(p + kl + 1, &end, 10);
    if (end == p + kl + 1 || (*end && *end != '&') || v < 0 || v > max) return -1;
    return v;
  }
  return -1;
}

/* Backpressure (isv_http_write's contract): past the stream's bound a write answers ISV_EAGAIN
 * and takes nothing; the handler, on a worker thread, waits for the writable callback — which
 * runs on the loop and must not block — then writes the same event again. */
typedef struct sse_wait {
  uv_mutex_t mu;
  uv_cond_t cv;
  int ready;
} sse_wait;

static void sse_writable(isv_http_request *req, void *user) {
  (void)req;
  sse_wait *w = user;
  uv_mutex_lock(&w->mu);
  w->ready = 1;
  uv_cond_signal(&w->cv);
  uv_mutex_unlock(&w->mu); /* the last touch: the handler may return once it has the lock */
}

/* Write one event, waiting for room as long as the client is there. */
static int sse_write(isv_http_request *req, sse_wait *w, const void *ev, size_t len,
                     isv_destructor del) {
  for (;;) {
    int rc = isv_http_write(req, ev, len, del);
    if (rc != ISV_EAGAIN) return rc;
    uv_mutex_lock(&w->mu);
    w->ready = 0;
    uv_mutex_unlock(&w->mu);
    if ((rc = isv_http_on_writable(req, sse_writable, w)) != 0) return rc;
    uv_mutex_lock(&w->mu);
    while (!w->ready) uv_cond_wait(&w->cv, &w->mu);
    uv_mutex_unlock(&w->mu);
    if (isv_http_is_cancelled(req)) return 0; /* the client left: the caller stops */
  }
}

static int sse(isv_http_request *req, void *user) {
  (void)user;
  const char *q = isv_http_query(req);
  long n = query_num(q, "n", 100000), delay = query_num(q, "delay_ms", 1000);
  long pad = query_num(q, "pad", 65536);
  if (n < 0) {
    static const char msg[] = "query parameter n (0..100000) is needed\n";
    return isv_http_respond(req, 400, "text/plain", msg, sizeof msg - 1, ISV_STATIC);
  }
  sse_wait w = {.ready = 0};
  if (uv_mutex_init(&w.mu) != 0) return ISV_ENOMEM;
  if (uv_cond_init(&w.cv) != 0) {
    uv_mutex_destroy(&w.mu);
    return ISV_ENOMEM;
  }
  int rc = isv_http_add_header(req, "Cache-Control", "no-cache");
  if (rc == 0) rc = isv_http_begin(req, 200, "text/event-stream");
  for (long i = 0; rc == 0 && i < n; i++) {
    if (isv_http_is_cancelled(req)) break; /* the client left: stop generating */
    if (delay > 0 && i) uv_sleep((unsigned)delay);
    char ev[40 + 65536];
    int len = snprintf(ev, 40, "data: %ld", i);
    if (pad > 0) {
      ev[len++] = ' ';
      memset(ev + len, 'x', (size_t)pad);
      len += (int)pad;
    }
    memcpy(ev + len, "\n\n", 2);
    len += 2;
    rc = sse_write(req, &w, ev, (size_t)len, ISV_TRANSIENT);
  }
  static const char done[] = "data: [DONE]\n\n";
  if (rc == 0 && !isv_http_is_cancelled(req))
    rc = sse_write(req, &w, done, sizeof done - 1, ISV_STATIC);
  uv_cond_destroy(&w.cv);
  uv_mutex_destroy(&w.mu);
  return rc ? rc : isv_http_end(req);
}

static int which_loop(isv_http_request *req, void *user) {
  char *out = malloc(24);
  if (out == NULL) return ISV_ENOMEM;
  int n = snprintf(out, 24, "%u\n", (unsigned)(uintptr_t)user);
  return isv_http_respond(req, 200, "text/plain", out, (size_t)n, free);
}

int demo_routes_register(isv_server *srv, unsigned loop) {
  isv_route r;
  memset(&r, 0, sizeof r);
  r.struct_size = sizeof r;
  r.method = "GET";
  r.path = "/custom/loop";
  r.mode = ISV_EXEC_INLINE;
  r.handler = which_loop;
  r.user = (void *)(uintptr_t)loop;
  int rc = isv_server_add_route(srv, &r);
  if (rc != 0) return rc;
  r.user = NULL;
  r.method = "POST";
  r.path = "/custom/echo";
  r.mode = ISV_EXEC_INLINE;
  r.handler = echo_upper;
  rc = isv_server_add_route(srv, &r);
  if (rc != 0) return rc;
  r.path = "/custom/sse";
  r.mode = ISV_EXEC_POOL;
  r.instances = 8;
  r.handler = sse;
  return isv_server_add_route(srv, &r);
}
