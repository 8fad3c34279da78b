/* See edge.h. An exchange's record (ex->edge) is made at the caller stage and lives until the
 * exchange is freed: it is what the requests the handler submits carry as their caller, it
 * holds the client's count under the per-client limit, and it remembers what is done, so that
 * an exchange re-entering the edge (after a decision, after its body was inflated) goes on
 * from where it stopped. */
#include "protocol/edge.h"

#include <stdio.h>
#include <string.h>

#include "protocol/content_coding.h"
#include "protocol/frontend.h"
#include "protocol/gate.h"

typedef struct edge_http {
  isv__caller who; /* first: the caller the gate and the core see */
  isv__router *r;
  isv__exchange *ex;
  isv__client *count; /* the per-client count, released with the exchange */
  int cancelled;      /* the client left while a decision was pending */
  const isv__frontend *fe; /* the error shape of a pending model-stage decision */
  isv__gate_pin allowed;   /* the model a later decision allowed (isv__edge_http_allowed) */
} edge_http;

static void edge_free(void *p) {
  edge_http *e = p;
  isv__client_release(e->count);
  isv__gate_pin_free(&e->allowed);
  isv__free(e);
}

void *isv__edge_caller(const isv__exchange *ex) { return ex->edge; }

/* The client went away while the host decides: the decision is applied into the void. */
static void cancel_pending(isv__exchange *ex) { ((edge_http *)ex->edge)->cancelled = 1; }

static void wait_for_decision(edge_http *e) {
  e->ex->on_cancel = cancel_pending;
}

/* A refusal, in fe's shape; 401 carries the host's challenge. */
static void refuse(edge_http *e, const isv__frontend *fe, int err, const char *msg) {
  isv__header www = {"WWW-Authenticate", 16, e->who.challenge, strlen(e->who.challenge)};
  int with = err == ISV_EUNAUTH && e->who.challenge[0];
  isv__router_error_as(fe, e->ex, isv_err_http_status(err), msg && msg[0] ? msg : isv_strerror(err),
                       with ? &www : NULL, (size_t)with);
}

/* After a pending decision: 1 when the exchange goes on; 0 when it was answered. */
static int decided(edge_http *e, const isv__frontend *fe, int err, const char *msg) {
  isv__exchange *ex = e->ex;
  ex->on_cancel = NULL;
  if (e->cancelled) { /* nobody will read it: the carrier drops it */
    isv__router_error_as(fe, ex, isv_err_http_status(ISV_ECANCELED), "the client went away",
                         NULL, 0);
    return 0;
  }
  if (err) {
    refuse(e, fe, err, msg);
    return 0;
  }
  return 1;
}

/* ---- the caller stage ---------------------------------------------------------------------- */

static void caller_decided(void *ctx, int err, const char *msg) {
  edge_http *e = ctx;
  if (decided(e, isv__router_owner(e->r, e->ex), err, msg)) isv__edge_http(e->r, e->ex);
}

/* 1: authenticated now (go on); 0: refused and answered, or waiting for the host. */
static int authenticate(isv__router *r, isv__exchange *ex) {
  edge_http *e = isv__calloc(ex->mem, 1, sizeof *e);
  if (e == NULL) {
    isv__router_error(r, ex, 500, "out of memory", NULL, 0);
    return 0;
  }
  const isv__frontend *owner = isv__router_owner(r, ex);
  e->r = r;
  e->ex = ex;
  e->who = (isv__caller){.protocol = owner ? owner->name : "http",
                         .method = ex->method_name,
                         .path = ex->path,
                         .headers = ex->headers,
                         .n_headers = ex->n_headers,
                         .peer = ex->peer,
                         .identity = ex->identity};
  ex->edge = e;
  ex->on_free = edge_free;
  ex->on_free_ctx = e;
  char msg[300];
  int rc = isv__gate_caller(r->gate, &e->who, &e->count, caller_decided, e, msg, sizeof msg);
  if (rc == ISV__GATE_LATER) {
    wait_for_decision(e);
    return 0;
  }
  if (rc != 0) {
    refuse(e, owner, rc, msg);
    return 0;
  }
  return 1;
}

void isv__edge_http(isv__router *r, isv__exchange *ex) {
  /* a browser's preflight is answered here; an allowed origin's answer gets its CORS headers */
  if (isv__gate_cors(r->core->opts.cors_origins, ex)) return;
  if (ex->edge == NULL && isv__gate_on(r->gate) && !authenticate(r, ex)) return;
  if (isv__content_decode(r, ex)) return; /* the edge again once the body is plain */
  isv__router_dispatch(r, ex);
}

/* ---- the model stage of what a handler answers itself -------------------------------------- */

const char *isv__edge_http_allowed(const isv__http_req *q, const char **version) {
  const edge_http *e = q->ex->edge;
  if (version) *version = e ? e->allowed.version : NULL;
  return e ? e->allowed.model : NULL;
}

static void model_decided(void *ctx, int err, const char *msg) {
  edge_http *e = ctx;
  if (decided(e, e->fe, err, msg)) isv__router_dispatch(e->r, e->ex); /* the handler again */
}

int isv__edge_http_model(const isv__http_req *q, const char *name, const char *version) {
  edge_http *e = q->ex->edge;
  if (e == NULL) return 1; /* nobody judges */
  if (isv__gate_pin_is(&e->allowed, name, version)) return 1;
  char msg[300];
  int rc = isv__gate_model(e->r->gate, &e->who, name, version, model_decided, e, msg, sizeof msg);
  if (rc == 0) return 1;
  if (rc != ISV__GATE_LATER) {
    refuse(e, q->fe, rc, msg);
    return 0;
  }
  /* remembered now: the handler that runs again finds it (a refusal answers instead) */
  isv__gate_pin_set(&e->allowed, q->ex->mem, name, version);
  e->fe = q->fe;
  wait_for_decision(e);
  return 0;
}
