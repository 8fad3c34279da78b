/* See gate.h.
 *
 * A decision's life: an isv_auth is made for the request and the host's callback runs with
 * the auth's phase IN_CB. isv_auth_done moves it to DECIDED. If the callback returned first,
 * the loop moves it to LATER instead (one compare-and-swap decides who came first, so a host
 * deciding on another thread at that very moment is safe), and the decision comes back through
 * the core's async handle as an offload: the request counts as in flight meanwhile, and the
 * server's close waits for it. Decided inside the callback, it is applied at once, with no
 * trip through the async handle. */
#include "protocol/gate.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/offload.h"
#include "protocol/frontend.h"

enum { IN_CB = 0, LATER = 1, DECIDED = 2 };

#define LIT(s) s, sizeof s - 1 /* a literal and its length */

struct isv_auth {
  isv__offload off; /* first: the async way back */
  isv__gate *g;
  atomic_int phase;
  int decision;
  char *message;
  char challenge[256];
  char client[128];
  /* what the host sees */
  const char *protocol;
  int grpc;
  const char *method;
  const char *path;
  char *model;
  const isv__header *headers;
  size_t n_headers;
  const char *peer;
  const char *identity;
  /* HTTP: the routed request and its handler */
  isv__http_req q;
  isv__http_handler h;
  char *caps; /* q's captures, copied when the decision comes later */
  int cancelled;
  /* gRPC */
  isv__gate_done done;
  void *ctx;
};

void isv__gate_init(isv__gate *g, isv__core *core) {
  memset(g, 0, sizeof *g);
  g->core = core;
}

int isv__gate_on(const isv__gate *g) {
  return g && (g->cb != NULL || g->core->opts.max_client_requests != 0);
}

/* ---- per-client counts (core/clients.h: the server's table, or its group's) ----------------- */

static void release_on_free(void *ctx) { isv__client_release(ctx); }

/* The client's key: the host's, else the peer's address without its port. */
static void client_key(const isv_auth *a, char *out, size_t cap) {
  if (a->client[0]) {
    snprintf(out, cap, "%s", a->client);
    return;
  }
  const char *p = a->peer ? a->peer : "";
  size_t n = strlen(p);
  const char *cut = p[0] == '[' ? strchr(p, ']') : strrchr(p, ':');
  if (cut) n = (size_t)(cut - p) + (p[0] == '[');
  snprintf(out, cap, "%.*s", (int)(n < cap ? n : cap - 1), p);
}

/* Count a's request under its client: 0, or ISV_ETOOMANY / ISV_ENOMEM with msg set. */
static int admit(isv_auth *a, isv__client **out, char *msg, size_t cap) {
  *out = NULL;
  unsigned max = a->g->core->opts.max_client_requests;
  if (max == 0) return 0;
  char key[128];
  client_key(a, key, sizeof key);
  int full;
  if ((*out = isv__clients_take(a->g->core->clients, key, max, &full)) != NULL) return 0;
  if (!full) {
    snprintf(msg, cap, "out of memory");
    return ISV_ENOMEM;
  }
  snprintf(msg, cap, "client '%.100s' has %u requests in flight, the most one client may have",
           key, max);
  return ISV_ETOOMANY;
}

/* ---- the decision ------------------------------------------------------------------------ */

static void auth_free(isv_auth *a) {
  isv__free(a->message);
  isv__free(a->model);
  isv__free(a->caps);
  isv__free(a);
}

static int decision_error(int d) { return d == ISV_AUTH_FORBIDDEN ? ISV_EFORBIDDEN : ISV_EUNAUTH; }

static void apply_http(isv_auth *a) {
  isv__exchange *ex = a->q.ex;
  const isv__frontend *fe = a->q.fe;
  ex->on_cancel = NULL;
  ex->app = NULL;
  char msg[300];
  if (a->cancelled) { /* nobody will read it: the carrier drops it */
    isv__router_error_as(fe, ex, isv_err_http_status(ISV_ECANCELED), "the client went away",
                         NULL, 0);
  } else if (a->decision != ISV_AUTH_ALLOW) {
    int err = decision_error(a->decision);
    isv__header www = {LIT("WWW-Authenticate"), a->challenge, strlen(a->challenge)};
    int with = err == ISV_EUNAUTH && a->challenge[0];
    isv__router_error_as(fe, ex, isv_err_http_status(err),
                         a->message ? a->message : isv_strerror(err), with ? &www : NULL,
                         (size_t)with);
  } else {
    isv__client *c;
    int rc = admit(a, &c, msg, sizeof msg);
    if (rc != 0) {
      isv__router_error_as(fe, ex, isv_err_http_status(rc), msg, NULL, 0);
    } else {
      if (c) {
        ex->on_free = release_on_free;
        ex->on_free_ctx = c;
      }
      a->h(&a->q);
    }
  }
  auth_free(a);
}

static void apply_grpc(isv_auth *a) {
  char msg[300];
  if (a->decision != ISV_AUTH_ALLOW) {
    int err = decision_error(a->decision);
    a->done(a->ctx, err, a->message ? a->message : isv_strerror(err), NULL);
  } else {
    isv__client *c;
    int rc = admit(a, &c, msg, sizeof msg);
    a->done(a->ctx, rc, rc ? msg : NULL, c);
  }
  auth_free(a);
}

static void apply(isv_auth *a) {
  if (a->grpc) apply_grpc(a);
  else apply_http(a);
}

static void after_later(isv__offload *o) { apply((isv_auth *)o); }

/* The client left while the host decides: answered into the void once it has. */
static void cancel_pending(isv__exchange *ex) { ((isv_auth *)ex->app)->cancelled = 1; }

/* Make the decision read, or wait for it. */
static void ask(isv_auth *a) {
  isv__gate *g = a->g;
  if (g->cb == NULL) {
    a->decision = ISV_AUTH_ALLOW;
    apply(a);
    return;
  }
  isv__offload_begin(g->core, &a->off, after_later);
  atomic_store(&a->phase, IN_CB);
  g->cb(a, g->user);
  int expected = IN_CB;
  if (!atomic_compare_exchange_strong(&a->phase, &expected, LATER)) {
    isv__offload_end_now(&a->off); /* decided inside the callback */
    apply(a);
    return;
  }
  /* later: the router's scratch the captures point into is reused by the next request */
  if (!a->grpc) {
    size_t total = 0;
    for (size_t i = 0; i < a->q.n_caps; i++) total += a->q.cap_len[i] + 1;
    a->caps = isv__malloc(g->core->mem, total ? total : 1);
    char *p = a->caps;
    for (size_t i = 0; p && i < a->q.n_caps; i++) {
      memcpy(p, a->q.cap[i], a->q.cap_len[i] + 1);
      a->q.cap[i] = p;
      p += a->q.cap_len[i] + 1;
    }
    if (p == NULL) a->q.n_caps = 0; /* out of memory: the handler sees no captures */
    a->q.ex->app = a;
    a->q.ex->on_cancel = cancel_pending;
  }
}

static char *dup_n(const isv_mem *mem, const char *s, size_t n) {
  char *d = isv__malloc(mem, n + 1);
  if (d) {
    memcpy(d, s, n);
    d[n] = '\0';
  }
  return d;
}

void isv__gate_http(isv__gate *g, const isv__http_req *q, isv__http_handler h) {
  isv_auth *a = isv__calloc(g->core->mem, 1, sizeof *a);
  size_t mlen = 0;
  const char *model = q ? isv__http_capture(q, "model", &mlen) : NULL;
  if (a == NULL || (model && (a->model = dup_n(g->core->mem, model, mlen)) == NULL)) {
    isv__free(a);
    isv__router_error_as(q->fe, q->ex, 500, "out of memory", NULL, 0);
    return;
  }
  isv__exchange *ex = q->ex;
  a->g = g;
  a->protocol = q->fe->name;
  a->method = ex->method_name;
  a->path = ex->path;
  a->headers = ex->headers;
  a->n_headers = ex->n_headers;
  a->peer = ex->peer;
  a->identity = ex->identity;
  a->q = *q;
  a->h = h;
  ask(a);
}

void isv__gate_grpc(isv__gate *g, isv__grpc_call *call, const char *protocol, const char *model,
                    size_t model_len, isv__gate_done done, void *ctx) {
  isv_auth *a = isv__calloc(g->core->mem, 1, sizeof *a);
  if (a == NULL || (model && (a->model = dup_n(g->core->mem, model, model_len)) == NULL)) {
    isv__free(a);
    done(ctx, ISV_ENOMEM, "out of memory", NULL);
    return;
  }
  a->g = g;
  a->grpc = 1;
  a->protocol = protocol;
  a->method = call->path;
  a->path = call->path;
  a->headers = call->headers;
  a->n_headers = call->n_headers;
  a->peer = call->peer;
  a->identity = call->identity;
  a->done = done;
  a->ctx = ctx;
  ask(a);
}

/* ---- the public face ---------------------------------------------------------------------- */

ISV_EXTERN const char *isv_auth_protocol(const isv_auth *a) { return a ? a->protocol : NULL; }
ISV_EXTERN int isv_auth_is_grpc(const isv_auth *a) { return a && a->grpc; }
ISV_EXTERN const char *isv_auth_method(const isv_auth *a) { return a ? a->method : NULL; }
ISV_EXTERN const char *isv_auth_path(const isv_auth *a) { return a ? a->path : NULL; }
ISV_EXTERN const char *isv_auth_model(const isv_auth *a) { return a ? a->model : NULL; }
ISV_EXTERN const char *isv_auth_peer(const isv_auth *a) { return a ? a->peer : NULL; }
ISV_EXTERN const char *isv_auth_identity(const isv_auth *a) { return a ? a->identity : NULL; }

ISV_EXTERN const char *isv_auth_header(const isv_auth *a, const char *name, size_t *len) {
  if (a == NULL || name == NULL) return NULL;
  size_t n = strlen(name);
  for (size_t i = 0; i < a->n_headers; i++)
    if (a->headers[i].name_len == n && strncasecmp(a->headers[i].name, name, n) == 0) {
      if (len) *len = a->headers[i].value_len;
      return a->headers[i].value;
    }
  return NULL;
}

ISV_EXTERN int isv_auth_set_client(isv_auth *a, const char *key) {
  if (a == NULL || key == NULL || strlen(key) >= sizeof a->client) return ISV_EINVAL;
  memcpy(a->client, key, strlen(key) + 1);
  return 0;
}

ISV_EXTERN int isv_auth_set_challenge(isv_auth *a, const char *value) {
  if (a == NULL || value == NULL || strlen(value) >= sizeof a->challenge) return ISV_EINVAL;
  for (const char *p = value; *p; p++)
    if ((unsigned char)*p < 0x20 || *p == 0x7f) return ISV_EINVAL; /* no header injection */
  memcpy(a->challenge, value, strlen(value) + 1);
  return 0;
}

ISV_EXTERN int isv_auth_done(isv_auth *a, isv_auth_decision decision, const char *message) {
  if (a == NULL || (decision != ISV_AUTH_ALLOW && decision != ISV_AUTH_UNAUTHENTICATED &&
                    decision != ISV_AUTH_FORBIDDEN))
    return ISV_EINVAL;
  a->decision = decision;
  if (message && decision != ISV_AUTH_ALLOW) {
    size_t n = strlen(message);
    a->message = dup_n(a->g->core->mem, message, n > 200 ? 200 : n);
  }
  int expected = IN_CB;
  if (atomic_compare_exchange_strong(&a->phase, &expected, DECIDED)) return 0; /* ask applies */
  isv__offload_finish(&a->off);
  return 0;
}

/* ---- CORS -------------------------------------------------------------------------------- */

int isv__cors_origin_allowed(const char *origins, const char *origin, size_t n) {
  if (origins == NULL || origins[0] == '\0' || n == 0) return 0;
  for (size_t i = 0; i < n; i++) /* it is echoed in a header: visible ASCII only */
    if ((unsigned char)origin[i] <= 0x20 || (unsigned char)origin[i] >= 0x7f) return 0;
  if (strcmp(origins, "*") == 0) return 1;
  for (const char *p = origins; *p;) {
    while (*p == ' ') p++;
    size_t k = strcspn(p, " ");
    if (k == n && strncasecmp(p, origin, n) == 0) return 1;
    p += k;
  }
  return 0;
}

/* A header list a browser asks for: tokens, commas and spaces only (anything else is not
 * echoed). */
static int token_list(const char *s, size_t n) {
  if (n == 0 || n > 512) return 0;
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if (!(c == ',' || c == ' ' || c == '-' || c == '_' || c == '.' || (c >= '0' && c <= '9') ||
          (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')))
      return 0;
  }
  return 1;
}

int isv__gate_cors(const char *origins, isv__exchange *ex) {
  if (origins == NULL || origins[0] == '\0') return 0;
  const isv__header *o = isv__exchange_header(ex, "origin");
  if (o == NULL || !isv__cors_origin_allowed(origins, o->value, o->value_len)) return 0;
  ex->extra[0] = (isv__header){LIT("Access-Control-Allow-Origin"), o->value, o->value_len};
  ex->extra[1] = (isv__header){LIT("Vary"), LIT("Origin")};
  if (ex->method == ISV__M_OPTIONS && isv__exchange_header(ex, "access-control-request-method")) {
    const isv__header *rh = isv__exchange_header(ex, "access-control-request-headers");
    isv__header hs[5] = {
        ex->extra[0], ex->extra[1],
        {LIT("Access-Control-Allow-Methods"), LIT("GET, HEAD, POST, PUT, DELETE, OPTIONS")},
        {LIT("Access-Control-Max-Age"), LIT("600")}};
    size_t n = 4;
    if (rh && token_list(rh->value, rh->value_len))
      hs[n++] = (isv__header){LIT("Access-Control-Allow-Headers"), rh->value, rh->value_len};
    ex->n_extra = 0;
    isv__response r = {.status = 204, .headers = hs, .n_headers = n};
    isv__exchange_respond(ex, &r);
    return 1;
  }
  ex->extra[2] = (isv__header){LIT("Access-Control-Expose-Headers"),
                               LIT("Inference-Header-Content-Length, Content-Encoding")};
  ex->n_extra = 3;
  return 0;
}
