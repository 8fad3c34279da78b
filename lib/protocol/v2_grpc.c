/* KServe V2 over gRPC (inference.GRPCInferenceService) and grpc.health.v1.Health/Check.
 *
 * Unary RPCs collect their one message and answer on half-close. ModelStreamInfer submits each
 * message as it arrives and answers each in completion order; the call ends (OK) once the
 * client has half-closed and every request has been answered. A cancelled call marks its
 * requests cancelled (backends can see it) and drops their answers. */
#include "protocol/v2_grpc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/v2_pb.h"

#define SVC "/inference.GRPCInferenceService/"

typedef enum {
  RPC_SERVER_LIVE,
  RPC_SERVER_READY,
  RPC_MODEL_READY,
  RPC_SERVER_METADATA,
  RPC_MODEL_METADATA,
  RPC_MODEL_INFER,
  RPC_MODEL_STREAM_INFER,
  RPC_HEALTH_CHECK
} rpc;

static const struct {
  const char *path;
  rpc id;
} rpcs[] = {
    {SVC "ServerLive", RPC_SERVER_LIVE},
    {SVC "ServerReady", RPC_SERVER_READY},
    {SVC "ModelReady", RPC_MODEL_READY},
    {SVC "ServerMetadata", RPC_SERVER_METADATA},
    {SVC "ModelMetadata", RPC_MODEL_METADATA},
    {SVC "ModelInfer", RPC_MODEL_INFER},
    {SVC "ModelStreamInfer", RPC_MODEL_STREAM_INFER},
    {"/grpc.health.v1.Health/Check", RPC_HEALTH_CHECK},
};

typedef struct job job;

typedef struct gcall {
  isv__core *core;
  isv__grpc_call *call;
  rpc id;
  uint8_t *msg; /* unary: the one message */
  size_t len;
  unsigned n_msgs;
  int half_closed;
  int cancelled;
  int draining; /* server shutdown: end with UNAVAILABLE once in-flight work is answered */
  int finished;
  unsigned inflight;
  unsigned busy; /* inside one of our event callbacks: a synchronous completion must not free */
  job *jobs; /* requests in flight, to mark them cancelled */
} gcall;

/* One inference request of a call: owns the message its inputs point into. */
struct job {
  gcall *g; /* NULL once the call is gone */
  job *prev, *next;
  isv_request *r;
  uint8_t *msg;
};

static void gcall_finish(gcall *g, int status, const char *msg) {
  if (g->finished) return;
  g->finished = 1;
  isv__grpc_finish(g->call, status, msg);
}

static void gcall_maybe_free(gcall *g) {
  if (g->finished && g->inflight == 0 && g->busy == 0) {
    isv__bigbuf_free(g->msg);
    free(g);
  }
}

static void finish_error(gcall *g, int err, const char *msg) {
  gcall_finish(g, isv_err_grpc_status(err), msg ? msg : isv_strerror(err));
}

static void send_buf(gcall *g, isv__buf *b) {
  if (b->failed) {
    isv__buf_free(b);
    finish_error(g, ISV_ENOMEM, "out of memory");
    return;
  }
  size_t len;
  char *data = isv__buf_release(b, &len);
  uv_buf_t part = uv_buf_init(data, (unsigned)len);
  isv__grpc_send(g->call, &part, 1, free, data);
  gcall_finish(g, 0, NULL);
}

/* ---- inference --------------------------------------------------------------------------- */

static void job_free(void *p) {
  job *j = p;
  isv_request_free(j->r);
  isv__bigbuf_free(j->msg);
  free(j);
}

static void job_unlink(job *j) {
  gcall *g = j->g;
  if (j->prev) j->prev->next = j->next;
  else g->jobs = j->next;
  if (j->next) j->next->prev = j->prev;
  g->inflight--;
}

/* A streaming call ends OK after the client's half-close, UNAVAILABLE when drained. */
static void end_stream(gcall *g) {
  if (g->draining) gcall_finish(g, ISV__GRPC_UNAVAILABLE, "server is shutting down");
  else gcall_finish(g, 0, NULL);
}

static void infer_done(isv_request *r, int status, void *data) {
  job *j = data;
  gcall *g = j->g;
  job_unlink(j);
  if (g->cancelled || g->finished) {
    job_free(j);
    gcall_maybe_free(g);
    return;
  }
  isv__parts parts;
  if (g->id == RPC_MODEL_INFER) {
    if (status != 0) {
      finish_error(g, status, isv_request_error_message(r));
      job_free(j);
    } else if (isv__v2pb_encode_infer_response(r, &parts) != 0) {
      finish_error(g, ISV_ENOMEM, "out of memory while encoding the response");
      job_free(j);
    } else {
      isv__grpc_send(g->call, parts.v, parts.n, job_free, j); /* tensors by reference */
      gcall_finish(g, 0, NULL);
    }
  } else { /* stream: one response per request; errors travel in error_message */
    if (status == 0 && isv__v2pb_encode_stream_response(r, &parts) == 0) {
      isv__grpc_send(g->call, parts.v, parts.n, job_free, j);
    } else {
      isv__buf b;
      isv__buf_init(&b);
      isv__v2pb_encode_stream_error(status ? isv_request_error_message(r) : "out of memory", &b);
      job_free(j);
      size_t len;
      char *d = isv__buf_release(&b, &len);
      if (d) {
        uv_buf_t part = uv_buf_init(d, (unsigned)len);
        isv__grpc_send(g->call, &part, 1, free, d);
      }
    }
    if (g->half_closed && g->inflight == 0) end_stream(g);
  }
  gcall_maybe_free(g);
}

/* Decode and submit one ModelInferRequest; takes msg. */
static void submit(gcall *g, uint8_t *msg, size_t len) {
  job *j = calloc(1, sizeof *j);
  isv_request *r = isv__request_new(g->core);
  if (j == NULL || r == NULL) {
    free(j);
    isv__bigbuf_free(msg);
    isv_request_free(r);
    finish_error(g, ISV_ENOMEM, "out of memory");
    return;
  }
  j->g = g;
  j->r = r;
  r->protocol = ISV__PROTO_V2_GRPC;
  j->msg = msg;
  j->next = g->jobs;
  if (g->jobs) g->jobs->prev = j;
  g->jobs = j;
  g->inflight++;
  isv__v2pb_decode_infer_request(r, msg, len);
  if (r->model_name == NULL || r->model_name[0] == '\0') {
    if (r->status == 0) isv__request_fail(r, ISV_EBADREQ, "model_name is required");
  } else if (r->model == NULL) {
    /* An unknown model or version is NOT_FOUND, whatever else is wrong (as on REST). */
    char m[512];
    isv_model *mv;
    int rc = isv__registry_resolve(&g->core->reg, r->model_name, strlen(r->model_name), r->version,
                                   r->version ? strlen(r->version) : 0, &mv, m, sizeof m);
    if (rc != 0) isv__request_fail(r, rc, "%s", m);
  }
  isv__core_submit(g->core, r, infer_done, j);
}

/* ---- the small RPCs ---------------------------------------------------------------------- */

static int model_ref(gcall *g, char *name, size_t ncap, char *version, size_t vcap) {
  if (isv__v2pb_decode_model_ref(g->msg, g->len, name, ncap, version, vcap) != 0) {
    finish_error(g, ISV_EBADREQ, "malformed request message");
    return -1;
  }
  return 0;
}

static isv_model *lookup(gcall *g, const char *name, const char *version) {
  char msg[512];
  isv_model *m;
  if (isv__registry_resolve(&g->core->reg, name, strlen(name), version[0] ? version : NULL,
                            strlen(version), &m, msg, sizeof msg) != 0) {
    finish_error(g, ISV_ENOTFOUND, msg);
    return NULL;
  }
  return m;
}

static void health_check(gcall *g) {
  char service[256];
  if (isv__health_decode_request(g->msg, g->len, service, sizeof service) != 0) {
    finish_error(g, ISV_EBADREQ, "malformed HealthCheckRequest");
    return;
  }
  int status; /* 1 SERVING, 2 NOT_SERVING */
  if (service[0] == '\0' || strcmp(service, "inference.GRPCInferenceService") == 0) {
    status = isv__core_ready(g->core) ? 1 : 2;
  } else {
    isv__model_entry *e = isv__registry_entry(&g->core->reg, service, strlen(service));
    if (e == NULL) { /* the health protocol's answer for an unknown service */
      char msg[300];
      snprintf(msg, sizeof msg, "unknown service or model '%s'", service);
      gcall_finish(g, ISV__GRPC_NOT_FOUND, msg);
      return;
    }
    isv_model *m = isv__entry_default(e);
    status = m && m->state == ISV_MODEL_READY && g->core->online && !g->core->closing ? 1 : 2;
  }
  isv__buf b;
  isv__buf_init(&b);
  isv__health_encode_response(status, &b);
  send_buf(g, &b);
}

static void unary(gcall *g) {
  isv__buf b;
  isv__buf_init(&b);
  char name[256], version[64];
  switch (g->id) {
  case RPC_SERVER_LIVE:
    isv__v2pb_encode_bool1(1, &b);
    send_buf(g, &b);
    return;
  case RPC_SERVER_READY:
    isv__v2pb_encode_bool1(isv__core_ready(g->core), &b);
    send_buf(g, &b);
    return;
  case RPC_SERVER_METADATA: {
    static const char *const ext[] = {"classification", "binary_tensor_data"}; /* as on REST, like Triton */
    isv__v2pb_encode_server_metadata(g->core->opts.server_name, g->core->opts.server_version, ext,
                                     1, &b);
    send_buf(g, &b);
    return;
  }
  case RPC_MODEL_READY:
  case RPC_MODEL_METADATA: {
    if (model_ref(g, name, sizeof name, version, sizeof version) != 0) return;
    isv_model *m = lookup(g, name, version);
    if (m == NULL) return;
    if (g->id == RPC_MODEL_READY)
      isv__v2pb_encode_bool1(m->state == ISV_MODEL_READY && g->core->online && !g->core->closing, &b);
    else
      isv__v2pb_encode_model_metadata(m, &b);
    send_buf(g, &b);
    return;
  }
  case RPC_HEALTH_CHECK:
    health_check(g);
    return;
  case RPC_MODEL_INFER: {
    uint8_t *msg = g->msg;
    g->msg = NULL;
    submit(g, msg, g->len);
    return;
  }
  case RPC_MODEL_STREAM_INFER: return;
  }
}

/* ---- call events ------------------------------------------------------------------------- */

static void on_message(isv__grpc_call *call, uint8_t *msg, size_t len) {
  gcall *g = call->app;
  g->busy++;
  if (g->id == RPC_MODEL_STREAM_INFER) {
    submit(g, msg, len);
  } else if (++g->n_msgs > 1) {
    isv__bigbuf_free(msg);
    finish_error(g, ISV_EBADREQ, "a unary call takes exactly one request message");
  } else {
    g->msg = msg;
    g->len = len;
  }
  g->busy--;
  gcall_maybe_free(g);
}

static void on_half_close(isv__grpc_call *call) {
  gcall *g = call->app;
  g->half_closed = 1;
  if (g->finished) return;
  g->busy++;
  if (g->id == RPC_MODEL_STREAM_INFER) {
    if (g->inflight == 0) end_stream(g);
  } else if (g->n_msgs != 1) {
    finish_error(g, ISV_EBADREQ, "a unary call takes exactly one request message");
  } else {
    unary(g);
  }
  g->busy--;
  gcall_maybe_free(g);
}

static void on_cancel(isv__grpc_call *call) {
  gcall *g = call->app;
  g->cancelled = 1;
  g->busy++;
  for (job *j = g->jobs; j; j = j->next)
    atomic_store_explicit(&j->r->cancelled, 1, memory_order_relaxed);
  gcall_finish(g, ISV__GRPC_CANCELLED, "cancelled"); /* the transport drops it */
  g->busy--;
  gcall_maybe_free(g);
}

static void on_drain(isv__grpc_call *call) {
  gcall *g = call->app;
  if (g->finished) return;
  g->draining = 1;
  g->busy++;
  if (g->id == RPC_MODEL_STREAM_INFER) {
    g->half_closed = 1; /* nothing more will come */
    if (g->inflight == 0) end_stream(g);
  } else { /* a unary call still waiting for its message */
    gcall_finish(g, ISV__GRPC_UNAVAILABLE, "server is shutting down");
  }
  g->busy--;
  gcall_maybe_free(g);
}

void isv__grpc_dispatch(isv__core *core, isv__grpc_call *call) {
  for (size_t i = 0; i < sizeof rpcs / sizeof rpcs[0]; i++) {
    if (strcmp(call->path, rpcs[i].path) != 0) continue;
    gcall *g = calloc(1, sizeof *g);
    if (g == NULL) {
      isv__grpc_finish(call, ISV__GRPC_RESOURCE_EXHAUSTED, "out of memory");
      return;
    }
    g->core = core;
    g->call = call;
    g->id = rpcs[i].id;
    call->app = g;
    call->on_message = on_message;
    call->on_half_close = on_half_close;
    call->on_cancel = on_cancel;
    call->on_drain = on_drain;
    return;
  }
  char msg[300];
  snprintf(msg, sizeof msg, "unknown method %.200s", call->path);
  isv__grpc_finish(call, ISV__GRPC_UNIMPLEMENTED, msg);
}
