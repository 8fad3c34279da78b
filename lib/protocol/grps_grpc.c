/* grps over gRPC: grps.protos.v1.GrpsService as a method table for the call layer
 * (grpc_service.h). Online, Offline, CheckLiveness, CheckReadiness, ServerMetadata and
 * ModelMetadata are answered here; Predict (unary) and PredictStreaming (server stream: each
 * response of a decoupled model is one message) are codecs around the core. Errors travel as
 * grps does: a GrpsMessage whose status says FAILURE with the HTTP-like code, and gRPC OK. */
#include <stdio.h>
#include <string.h>

#include "protocol/gate.h"
#include "protocol/grps.h"
#include "protocol/grps_conv.h"
#include "protocol/grps_meta.h"
#include "core/queries.h"

#define SVC "/grps.protos.v1.GrpsService/"

static isv__grps_limits limits_of(const isv__core *c) {
  isv__grps_limits lim = {c->opts.max_tensors, c->opts.max_json_depth};
  return lim;
}

/* m into u->out. */
static int answer_msg(isv__grpc_unary *u, const isv__grps_msg *m) {
  int rc = isv__grps_pb_encode(m, u->out, u->err, sizeof u->err);
  if (rc == 0 && u->out->failed) rc = ISV_ENOMEM;
  if (rc == ISV_ENOMEM) snprintf(u->err, sizeof u->err, "out of memory");
  return rc == 0 || rc == ISV_ENOMEM ? rc : ISV_EINTERNAL;
}

static int answer_failure(isv__grpc_unary *u, int err, const char *msg) {
  isv__grps_msg m;
  isv__grps_error_reply(err, msg, &m);
  return answer_msg(u, &m);
}

static int answer_ok(isv__grpc_unary *u, const char *str, size_t len) {
  isv__grps_msg m = {.has_status = 1, .code = 200, .msg = "OK", .msg_len = 2,
                     .flag = ISV__GRPS_SUCCESS};
  if (str) {
    m.kind = ISV__GRPS_STR_DATA;
    m.data = str;
    m.data_len = len;
  }
  return answer_msg(u, &m);
}

static int online(isv__grpc_unary *u) {
  isv__core_set_online(u->core, 1);
  return answer_ok(u, NULL, 0);
}

static int offline(isv__grpc_unary *u) {
  isv__core_set_online(u->core, 0); /* readiness on every protocol: load balancers drain this replica */
  return answer_ok(u, NULL, 0);
}

static int liveness(isv__grpc_unary *u) { return answer_ok(u, NULL, 0); }

static int readiness(isv__grpc_unary *u) {
  if (isv__core_ready(u->core)) return answer_ok(u, NULL, 0);
  return answer_failure(u, ISV_EUNAVAIL, isv__core_online(u->core) ? "the server is not ready"
                                                         : "the server is offline");
}

static int answer_yaml(isv__grpc_unary *u, isv__buf *y) {
  int rc = y->failed ? answer_failure(u, ISV_ENOMEM, "out of memory")
                     : answer_ok(u, y->data, y->len);
  isv__buf_free(y);
  return rc;
}

static int server_metadata(isv__grpc_unary *u) {
  isv__buf y;
  isv__buf_init(&y, u->core->mem);
  isv__grps_server_yaml(u->core, &y);
  return answer_yaml(u, &y);
}

/* The model named in str_data ("name-version"; empty: the default model). */
static int model_metadata(isv__grpc_unary *u) {
  isv_request *r = isv__request_new(u->core);
  if (r == NULL) return answer_failure(u, ISV_ENOMEM, "out of memory");
  isv__grps_msg m;
  isv__grps_limits lim = limits_of(u->core);
  char err[256];
  int rc = isv__grps_pb_decode(u->msg, u->len, &lim, &r->arena, &m, err, sizeof err);
  if (rc != 0) isv__request_fail(r, rc, "%s", err);
  else if (m.kind != ISV__GRPS_NONE && m.kind != ISV__GRPS_STR_DATA)
    isv__request_fail(r, ISV_EBADREQ, "ModelMetadata takes the model's name in str_data");
  else isv__grps_select_model(r, m.kind ? m.data : m.model, m.kind ? m.data_len : m.model_len);
  if (r->status == 0 && (rc = isv__grpc_unary_model(u, r->model->cfg->name, r->model->version))) {
    char why[sizeof u->err]; /* u->err is the answer's too: the encoder clears it */
    snprintf(why, sizeof why, "%s", u->err);
    if (rc != ISV__GATE_LATER) rc = answer_failure(u, rc, why); /* in grps's status */
  } else if (r->status != 0) {
    rc = answer_failure(u, r->status, r->errmsg);
  } else {
    isv__buf y;
    isv__buf_init(&y, u->core->mem);
    isv__grps_model_yaml(u->core, r->model, &y);
    rc = answer_yaml(u, &y);
  }
  isv_request_free(r);
  return rc;
}

/* ---- Predict and PredictStreaming ----------------------------------------------------------- */

static int decode(isv_request *r, const uint8_t *msg, size_t len) {
  isv__grps_msg m;
  isv__grps_limits lim = limits_of(r->core);
  char err[256];
  int rc = isv__grps_pb_decode(msg, len, &lim, &r->arena, &m, err, sizeof err);
  if (rc != 0) return isv__request_fail(r, rc, "%s", err);
  if (isv__grps_select_model(r, m.model, m.model_len) != 0) return r->status;
  return isv__grps_to_request(r, &m, msg, len); /* a native model takes msg as it is */
}

/* Payloads at least this large are referenced in the answer rather than copied into it. */
#define ISV__GRPS_REF_MIN 1024

/* m serialized into parts in r's arena, its large tensors and data referenced where they are
 * (r's outputs, which live until the answer is written), as V2's answers are. */
static int serialize(isv_request *r, const isv__grps_msg *m, isv__parts *out) {
  char err[256];
  int rc = isv__grps_pb_encode_ref(m, &r->arena, ISV__GRPS_REF_MIN, &out->v, &out->n,
                                   &out->total, err, sizeof err);
  if (rc != 0 && rc != ISV_ENOMEM) { /* an output grps cannot carry: the backend's fault */
    isv__grps_msg e;
    const char *copy = isv__arena_strndup(&r->arena, err, strlen(err));
    isv__grps_error_reply(ISV_EBACKEND, copy ? copy : "the answer cannot be encoded", &e);
    rc = isv__grps_pb_encode_ref(&e, &r->arena, ISV__GRPS_REF_MIN, &out->v, &out->n,
                                 &out->total, err, sizeof err);
  }
  return rc != 0 ? ISV_ENOMEM : 0;
}

static int encode(isv_request *r, isv__parts *out) {
  isv_request *req = r->parent ? r->parent : r;
  out->n = out->total = 0;
  if (r->n_outputs == 0 && r->model->cfg->decoupled) return 0; /* the stream's plain end */
  isv__grps_msg m;
  if (isv__grps_reply_of(r, req->proto_flags, &m) != 0)
    isv__grps_error_reply(r->status, r->errmsg, &m);
  return serialize(r, &m, out);
}

static int encode_error(int status, const char *message, isv__buf *out) {
  isv__grps_msg m;
  char err[256];
  isv__grps_error_reply(status, message, &m);
  return isv__grps_pb_encode(&m, out, err, sizeof err);
}

const isv__grpc_method isv__grps_methods[] = {
    {SVC "Online", ISV__RPC_UNARY, online, NULL, NULL, NULL, NULL},
    {SVC "Offline", ISV__RPC_UNARY, offline, NULL, NULL, NULL, NULL},
    {SVC "CheckLiveness", ISV__RPC_UNARY, liveness, NULL, NULL, NULL, NULL},
    {SVC "CheckReadiness", ISV__RPC_UNARY, readiness, NULL, NULL, NULL, NULL},
    {SVC "ServerMetadata", ISV__RPC_UNARY, server_metadata, NULL, NULL, NULL, NULL},
    {SVC "ModelMetadata", ISV__RPC_UNARY, model_metadata, NULL, NULL, NULL, NULL},
    {SVC "Predict", ISV__RPC_UNARY, NULL, decode, encode, encode_error, NULL},
    {SVC "PredictStreaming", ISV__RPC_SERVER_STREAM, NULL, decode, encode, encode_error, NULL},
    {0},
};
