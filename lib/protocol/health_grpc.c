/* grpc.health.v1.Health (Kubernetes gRPC probes, grpc's client-side health checking) as a
 * front end of its own: Check and Watch.
 *
 * service "" or any served gRPC service ("inference.GRPCInferenceService"): the server's
 * readiness; a model name: that model's (default version's) readiness; anything else: Check
 * answers NOT_FOUND, Watch SERVICE_UNKNOWN — and goes on watching, as grpc's own health
 * service does (the model may be added later).
 *
 * Watch sends the status at once and again whenever it changes: the core tells its readiness
 * watches (core/watch.h) of every change, each watcher asks the same question Check asks and
 * sends only a new answer. At the server's close the watcher sends NOT_SERVING (nothing is
 * ready while closing, as grpc-go's Shutdown says) and the call ends OK. (grpc C++ ends its
 * watchers CANCELLED at shutdown without a word; a client of either retries elsewhere.) */
#include <stdio.h>
#include <string.h>

#include "codec/mem.h"
#include "codec/nanopb_glue.h"
#include "health.pb.h"
#include "protocol/builtin.h"
#include "core/queries.h"
#include "core/watch.h"

enum { SERVING = 1, NOT_SERVING = 2, SERVICE_UNKNOWN = 3 };

/* The status of `service` now: SERVING, NOT_SERVING, or SERVICE_UNKNOWN. */
static int status_of(isv__core *core, const isv__grpc_services *services, const char *service) {
  if (service[0] == '\0' || isv__grpc_services_has(services, service))
    return isv__core_ready(core) ? SERVING : NOT_SERVING;
  isv_model *m;
  isv__model_spec spec = {service, strlen(service), NULL, 0, NULL, 0}; /* its default version */
  if (isv__core_resolve(core, &spec, &m) != ISV__FOUND) return SERVICE_UNKNOWN;
  return isv__core_model_ready(core, m) ? SERVING : NOT_SERVING;
}

/* The request's service into service[cap]: 0, or ISV_EBADREQ with u->err set. */
static int decode_request(isv__grpc_unary *u, char *service, size_t cap) {
  grpc_health_v1_HealthCheckRequest req = grpc_health_v1_HealthCheckRequest_init_zero;
  isv__nanopb_cstr_dst dst = {service, cap};
  service[0] = '\0';
  isv__nanopb_read_cstr(&req.service, &dst);
  pb_istream_t in = pb_istream_from_buffer(u->msg ? u->msg : (const pb_byte_t *)"", u->len);
  if (!pb_decode(&in, grpc_health_v1_HealthCheckRequest_fields, &req)) {
    strcpy(u->err, "malformed HealthCheckRequest");
    return ISV_EBADREQ;
  }
  return 0;
}

static int encode_status(int status, isv__buf *out) {
  grpc_health_v1_HealthCheckResponse resp = grpc_health_v1_HealthCheckResponse_init_zero;
  resp.status = (grpc_health_v1_HealthCheckResponse_ServingStatus)status;
  return isv__nanopb_encode(grpc_health_v1_HealthCheckResponse_fields, &resp, out);
}

static int check(isv__grpc_unary *u) {
  char service[256];
  int rc = decode_request(u, service, sizeof service);
  if (rc) return rc;
  int status = status_of(u->core, u->services, service);
  if (status == SERVICE_UNKNOWN) { /* Check's word for it (the health protocol's) */
    snprintf(u->err, sizeof u->err, "unknown service or model '%.200s'", service);
    return ISV_ENOTFOUND;
  }
  return encode_status(status, u->out);
}

/* ---- Watch ---------------------------------------------------------------------------------- */

typedef struct watcher {
  isv__core_watch w; /* first: the core's notification finds the watcher */
  isv__core *core;
  const isv__grpc_services *services;
  struct gcall *call;
  int sent;    /* the status the client was told last */
  int blocked; /* the call's queue is full: the status of the moment goes once it drained */
  char service[256];
} watcher;

/* Readiness may have changed: tell the client when its answer did. */
static void changed(isv__core_watch *cw) {
  watcher *w = (watcher *)cw;
  if (w->blocked) { /* a client that does not read hears the latest once it does */
    if (isv__core_closing(w->core)) isv__grpc_kept_end(w->call); /* frees w (end) */
    return;
  }
  int status = status_of(w->core, w->services, w->service);
  if (status == w->sent) {
    if (isv__core_closing(w->core)) isv__grpc_kept_end(w->call); /* frees w (end) */
    return;
  }
  isv__buf b;
  isv__buf_init(&b, w->core->mem);
  if (encode_status(status, &b) != 0) {
    isv__buf_free(&b);
    if (isv__core_closing(w->core)) isv__grpc_kept_end(w->call); /* no next change */
    return; /* out of memory: the next change tries again */
  }
  w->sent = status;
  struct gcall *call = w->call;
  int closing = isv__core_closing(w->core);
  int rc = isv__grpc_kept_send(call, &b); /* -1: the call is over, w is gone */
  if (rc == 0) w->blocked = 1;
  /* the close: its NOT_SERVING was the last word, and the stream ends OK — before the
   * transport's drain, which would wait for a stream the client keeps open */
  if (rc >= 0 && closing) isv__grpc_kept_end(call);
}

static void writable(void *data) {
  watcher *w = data;
  w->blocked = 0;
  changed(&w->w);
}

static void end(void *data) {
  watcher *w = data;
  isv__core_watch_remove(w->core, &w->w);
  isv__free(w);
}

static int watch(isv__grpc_unary *u) {
  char service[256];
  int rc = decode_request(u, service, sizeof service);
  if (rc) return rc;
  if (isv__core_closing(u->core)) /* nothing will change again: one answer, then OK */
    return encode_status(status_of(u->core, u->services, service), u->out);
  watcher *w = isv__calloc(u->core->mem, 1, sizeof *w);
  if (w == NULL) {
    strcpy(u->err, "out of memory");
    return ISV_ENOMEM;
  }
  w->w.changed = changed;
  w->core = u->core;
  w->services = u->services;
  w->call = u->call;
  memcpy(w->service, service, sizeof service);
  w->sent = status_of(u->core, u->services, service);
  isv__core_watch_add(u->core, &w->w);
  u->keep = (isv__grpc_keep){.end = end, .writable = writable, .data = w};
  return encode_status(w->sent, u->out); /* nonzero: the call layer runs end */
}

static const isv__grpc_method methods[] = {
    {"/grpc.health.v1.Health/Check", ISV__RPC_UNARY, check, NULL, NULL, NULL, NULL},
    {"/grpc.health.v1.Health/Watch", ISV__RPC_SERVER_STREAM, watch, NULL, NULL, NULL, NULL},
    {0},
};

const isv__frontend isv__grpc_health_frontend = {
    .name = "grpc_health",
    .enabled_by_default = 1,
    .methods = methods,
    .grpc_label = "grpc_health",
};
