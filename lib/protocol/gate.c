/* See gate.h.
 *
 * A decision's life: an isv_auth is made for the question and the host's callback runs with
 * the auth's phase IN_CB. isv_auth_complete moves it to DECIDED. If the callback returned first,
 * the loop moves it to LATER instead (one compare-and-swap decides who came first, so a host
 * deciding on another thread at that very moment is safe), and the decision comes back through
 * the core's async handle as an offload: it counts as work in flight meanwhile, and the
 * server's close waits for it. Decided inside the callback, it is applied at once, with no
 * trip through the async handle. */
#include "protocol/gate.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/offload.h"
#include "core/request.h"
#include "core/scheduler.h"

enum { IN_CB = 0, LATER = 1, DECIDED = 2 };

#define LIT(s) s, sizeof s - 1 /* a literal and its length */

struct isv_auth {
  isv__offload off; /* first: the async way back */
  isv__gate *g;
  atomic_int phase;
  int decision;
  char *message;
  isv_auth_stage stage;
  isv__caller *who;
  char client[ISV__CALLER_KEY_MAX]; /* isv_auth_set_client's, "" none */
  char challenge[256];               /* isv_auth_set_challenge's: the caller's once applied */
  char *model;   /* the model stage's; NULL at the caller stage */
  char *version; /* NULL: none */
  isv__client **held; /* the caller stage's count goes here (NULL: count nothing) */
  isv__gate_done done;
  void *ctx;
};

static int core_authorize(void *ctx, isv_request *r, const char *model, const char *version);

void isv__gate_init(isv__gate *g, isv__core *core) {
  memset(g, 0, sizeof *g);
  g->core = core;
  core->authorize = core_authorize;
  core->authorize_ctx = g;
}

int isv__gate_on(const isv__gate *g) {
  return g && (g->cb != NULL || g->core->opts.max_client_requests != 0);
}

/* ---- per-client counts (core/clients.h: the server's table, or its group's) ----------------- */

/* The peer's address without its port: the client's key when the host named none. */
static void peer_key(const char *peer, char *out, size_t cap) {
  const char *p = peer ? peer : "";
  size_t n = strlen(p);
  const char *cut = p[0] == '[' ? strchr(p, ']') : strrchr(p, ':');
  if (cut) n = (size_t)(cut - p) + (p[0] == '[');
  snprintf(out, cap, "%.*s", (int)(n < cap ? n : cap - 1), p);
}

int isv__gate_admit(isv__gate *g, const isv__caller *who, isv__client **out, char *msg,
                    size_t cap) {
  *out = NULL;
  unsigned max = g->core->opts.max_client_requests;
  if (max == 0) return 0;
  int full;
  if ((*out = isv__clients_take(g->core->clients, who->client, max, &full)) != NULL) return 0;
  if (!full) {
    snprintf(msg, cap, "out of memory");
    return ISV_ENOMEM;
  }
  snprintf(msg, cap, "client '%.100s' has %u requests in flight, the most one client may have",
           who->client, max);
  return ISV_ETOOMANY;
}

/* ---- the decision ------------------------------------------------------------------------ */

static void auth_free(isv_auth *a) {
  isv__free(a->message);
  isv__free(a->model);
  isv__free(a->version);
  isv__free(a);
}

static int decision_error(int d) { return d == ISV_AUTH_FORBIDDEN ? ISV_EFORBIDDEN : ISV_EUNAUTH; }

/* The decision as (code, message): what the caller stage also counts. */
static int outcome(isv_auth *a, char *msg, size_t cap) {
  isv__caller *who = a->who;
  memcpy(who->challenge, a->challenge, sizeof who->challenge); /* on the loop: the caller's */
  if (a->decision != ISV_AUTH_ALLOW) {
    int err = decision_error(a->decision);
    snprintf(msg, cap, "%s", a->message ? a->message : isv_strerror(err));
    return err;
  }
  if (a->stage != ISV_AUTH_STAGE_CALLER) return 0;
  if (a->client[0]) snprintf(who->client, sizeof who->client, "%s", a->client);
  return a->held ? isv__gate_admit(a->g, who, a->held, msg, cap) : 0;
}

static void after_later(isv__offload *o) {
  isv_auth *a = (isv_auth *)o;
  char msg[300];
  int rc = outcome(a, msg, sizeof msg);
  isv__caller *who = a->who;
  isv__gate_done done = a->done;
  void *ctx = a->ctx;
  auth_free(a);
  if (who->release) who->release(who);
  done(ctx, rc, rc ? msg : NULL);
}

/* Ask the host; see gate.h for what it returns. */
static int ask(isv__gate *g, isv_auth *a, char *msg, size_t cap) {
  if (g->cb == NULL) {
    a->decision = ISV_AUTH_ALLOW;
    int rc = outcome(a, msg, cap);
    auth_free(a);
    return rc;
  }
  isv__offload_begin(g->core, &a->off, after_later);
  atomic_store(&a->phase, IN_CB);
  if (a->who->hold) a->who->hold(a->who); /* before the host may hand a to another thread */
  g->cb(a, g->user);
  int expected = IN_CB;
  if (atomic_compare_exchange_strong(&a->phase, &expected, LATER)) return ISV__GATE_LATER;
  isv__offload_end_now(&a->off); /* decided inside the callback */
  if (a->who->release) a->who->release(a->who);
  int rc = outcome(a, msg, cap);
  auth_free(a);
  return rc;
}

static char *dup_str(const isv_mem *mem, const char *s) {
  size_t n = strlen(s);
  char *d = isv__malloc(mem, n + 1);
  if (d) memcpy(d, s, n + 1);
  return d;
}

static isv_auth *auth_new(isv__gate *g, isv__caller *who, isv_auth_stage stage,
                          isv__gate_done done, void *ctx) {
  isv_auth *a = isv__calloc(g->core->mem, 1, sizeof *a);
  if (a == NULL) return NULL;
  a->g = g;
  a->stage = stage;
  a->who = who;
  a->done = done;
  a->ctx = ctx;
  return a;
}

int isv__gate_caller(isv__gate *g, isv__caller *who, isv__client **held, isv__gate_done done,
                     void *ctx, char *msg, size_t cap) {
  if (held) *held = NULL;
  peer_key(who->peer, who->client, sizeof who->client); /* until the host names the client */
  isv_auth *a = auth_new(g, who, ISV_AUTH_STAGE_CALLER, done, ctx);
  if (a == NULL) {
    snprintf(msg, cap, "out of memory");
    return ISV_ENOMEM;
  }
  a->held = held;
  return ask(g, a, msg, cap);
}

int isv__gate_model(isv__gate *g, isv__caller *who, const char *name, const char *version,
                    isv__gate_done done, void *ctx, char *msg, size_t cap) {
  if (g->cb == NULL) return 0; /* the per-client limit counted at the caller stage */
  isv_auth *a = auth_new(g, who, ISV_AUTH_STAGE_MODEL, done, ctx);
  if (a == NULL || (a->model = dup_str(g->core->mem, name ? name : "")) == NULL ||
      (version && (a->version = dup_str(g->core->mem, version)) == NULL)) {
    if (a) auth_free(a);
    snprintf(msg, cap, "out of memory");
    return ISV_ENOMEM;
  }
  return ask(g, a, msg, cap);
}

/* ---- a handler's model, judged later (gate.h) --------------------------------------------- */

int isv__gate_pin_is(const isv__gate_pin *p, const char *name, const char *version) {
  if (p->model == NULL || strcmp(p->model, name) != 0) return 0;
  return (p->version == NULL && version == NULL) ||
         (p->version && version && strcmp(p->version, version) == 0);
}

void isv__gate_pin_set(isv__gate_pin *p, const isv_mem *mem, const char *name,
                       const char *version) {
  isv__gate_pin_free(p);
  p->model = dup_str(mem, name);
  p->version = version ? dup_str(mem, version) : NULL;
  if (p->model == NULL || (version && p->version == NULL)) isv__gate_pin_free(p);
}

void isv__gate_pin_free(isv__gate_pin *p) {
  isv__free(p->model);
  isv__free(p->version);
  p->model = p->version = NULL;
}

/* ---- the core's question: a submitted request's model (core.h) ---------------------------- */

static void request_decided(void *ctx, int err, const char *message) {
  isv_request *r = ctx;
  if (err) isv__request_fail(r, err, "%s", message);
  isv__core_authorized(r);
}

static int core_authorize(void *ctx, isv_request *r, const char *model, const char *version) {
  isv__gate *g = ctx;
  char msg[300];
  int rc = isv__gate_model(g, r->caller, model, version, request_decided, r, msg, sizeof msg);
  if (rc == ISV__GATE_LATER) return ISV__AUTHZ_LATER;
  if (rc) isv__request_fail(r, rc, "%s", msg);
  return rc;
}

/* ---- the public face ---------------------------------------------------------------------- */

ISV_EXTERN isv_auth_stage isv_auth_get_stage(const isv_auth *a) {
  return a ? a->stage : ISV_AUTH_STAGE_CALLER;
}
ISV_EXTERN const char *isv_auth_protocol(const isv_auth *a) { return a ? a->who->protocol : NULL; }
ISV_EXTERN int isv_auth_is_grpc(const isv_auth *a) { return a && a->who->grpc; }
ISV_EXTERN const char *isv_auth_method(const isv_auth *a) { return a ? a->who->method : NULL; }
ISV_EXTERN const char *isv_auth_path(const isv_auth *a) { return a ? a->who->path : NULL; }
ISV_EXTERN const char *isv_auth_model(const isv_auth *a) { return a ? a->model : NULL; }
ISV_EXTERN const char *isv_auth_version(const isv_auth *a) { return a ? a->version : NULL; }
ISV_EXTERN const char *isv_auth_peer(const isv_auth *a) { return a ? a->who->peer : NULL; }
ISV_EXTERN const char *isv_auth_identity(const isv_auth *a) { return a ? a->who->identity : NULL; }
ISV_EXTERN const char *isv_auth_client(const isv_auth *a) {
  if (a == NULL) return NULL;
  return a->client[0] ? a->client : a->who->client;
}

ISV_EXTERN const char *isv_auth_header(const isv_auth *a, const char *name, size_t *len) {
  if (a == NULL || name == NULL) return NULL;
  size_t n = strlen(name);
  const isv__caller *w = a->who;
  for (size_t i = 0; i < w->n_headers; i++)
    if (w->headers[i].name_len == n && strncasecmp(w->headers[i].name, name, n) == 0) {
      if (len) *len = w->headers[i].value_len;
      return w->headers[i].value;
    }
  return NULL;
}

ISV_EXTERN int isv_auth_set_client(isv_auth *a, const char *key) {
  if (a == NULL || key == NULL || strlen(key) >= sizeof a->client) return ISV_EINVAL;
  if (a->stage != ISV_AUTH_STAGE_CALLER) return ISV_ESTATE; /* counted already */
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

ISV_EXTERN int isv_auth_complete(isv_auth *a, isv_auth_decision decision, const char *message) {
  if (a == NULL || (decision != ISV_AUTH_ALLOW && decision != ISV_AUTH_UNAUTHENTICATED &&
                    decision != ISV_AUTH_FORBIDDEN))
    return ISV_EINVAL;
  a->decision = decision;
  if (message && decision != ISV_AUTH_ALLOW) {
    size_t n = strlen(message);
    if (n > 200) n = 200;
    if ((a->message = isv__malloc(a->g->core->mem, n + 1)) != NULL) {
      memcpy(a->message, message, n);
      a->message[n] = '\0';
    }
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
