/* The demo's custom HTTP routes (isv_server_add_route; see zoo.h):
 *   POST /custom/echo        the body back, uppercased (inline)
 *   POST /custom/sse?n=N     Server-Sent Events "data: 0" .. "data: N-1", then "data: [DONE]"
 *                            (on the worker pool; &delay_ms=D between events; N <= 100000)
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

static int sse(isv_http_request *req, void *user) {
  (void)user;
  const char *q = isv_http_query(req);
  long n = query_num(q, "n", 100000), delay = query_num(q, "delay_ms", 1000);
  if (n < 0) {
    static const char msg[] = "query parameter n (0..100000) is needed\n";
    return isv_http_respond(req, 400, "text/plain", msg, sizeof msg - 1, ISV_STATIC);
  }
  int rc = isv_http_add_header(req, "Cache-Control", "no-cache");
  if (rc == 0) rc = isv_http_begin(req, 200, "text/event-stream");
  for (long i = 0; rc == 0 && i < n; i++) {
    if (isv_http_cancelled(req)) break; /* the client left: stop generating */
    if (delay > 0 && i) uv_sleep((unsigned)delay);
    char ev[40];
    int len = snprintf(ev, sizeof ev, "data: %ld\n\n", i);
    rc = isv_http_write(req, ev, (size_t)len, ISV_TRANSIENT);
  }
  static const char done[] = "data: [DONE]\n\n";
  if (rc == 0 && !isv_http_cancelled(req))
    rc = isv_http_write(req, done, sizeof done - 1, ISV_STATIC);
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
