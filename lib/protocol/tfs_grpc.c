/* TensorFlow Serving over gRPC: tensorflow.serving.PredictionService and ModelService as a
 * method table for the call layer (grpc_service.h), part of the "tfserving" front end (one
 * switch for TF Serving's REST and gRPC APIs). Predict, Classify, Regress and MultiInference
 * are codecs around the core (tfs_pb.h); GetModelMetadata and GetModelStatus are answered
 * here; HandleReloadConfigRequest runs the host's repository callbacks (tfs_reload.c). Errors
 * travel as TF Serving's do:
 * the gRPC status with its code and text. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "core/queries.h"
#include "core/resolve.h"
#include "protocol/gate.h"
#include "protocol/tfs_pb.h"

#define PS "/tensorflow.serving.PredictionService/"
#define MS "/tensorflow.serving.ModelService/"

/* ---- Predict -------------------------------------------------------------------------------- */

static int predict_bind(isv_request *r, const uint8_t *msg, size_t len) {
  return isv__tfs_pb_bind(r, msg, len, ISV__TFS_PREDICT);
}

static int predict_decode(isv_request *r, const uint8_t *msg, size_t len) {
  return isv__tfs_pb_decode_predict(r, msg, len);
}

static int predict_encode(isv_request *r, isv__parts *out) {
  return isv__tfs_pb_encode_predict(r, out);
}

/* ---- Classify and Regress ------------------------------------------------------------------ */

static int classify_bind(isv_request *r, const uint8_t *msg, size_t len) {
  return isv__tfs_pb_bind(r, msg, len, ISV__TFS_CLASSIFY);
}

static int regress_bind(isv_request *r, const uint8_t *msg, size_t len) {
  return isv__tfs_pb_bind(r, msg, len, ISV__TFS_REGRESS);
}

static int examples_decode(isv_request *r, const uint8_t *msg, size_t len) {
  return isv__tfs_pb_decode_examples(r, msg, len);
}

static int examples_encode(isv_request *r, isv__parts *out) {
  return isv__tfs_pb_encode_examples(r, out);
}

/* ---- MultiInference: one execution of one model, each task a classify or regress signature */

static int multi_bind(isv_request *r, const uint8_t *msg, size_t len) {
  return isv__tfs_pb_bind_multi(r, msg, len);
}

static int multi_decode(isv_request *r, const uint8_t *msg, size_t len) {
  return isv__tfs_pb_decode_multi(r, msg, len);
}

static int multi_encode(isv_request *r, isv__parts *out) {
  return isv__tfs_pb_encode_multi(r, out);
}

/* ---- GetModelMetadata ----------------------------------------------------------------------- */

/* The model version a request's model_spec names, judged at the edge's model stage (`every`:
 * the model as a whole). 0, or the call's error (ISV__GATE_LATER: wait). */
static int spec_model(isv__grpc_unary *u, const isv__tfs_spec *s, isv_model **m, int every) {
  char version[24];
  isv__model_spec spec = isv__tfs_model_spec(s, version, sizeof version);
  isv__why why = isv__core_resolve(u->core, &spec, m);
  if (why != ISV__FOUND) return isv__why_say(why, ISV__WORDS_TFS, &spec, u->err, sizeof u->err);
  return isv__grpc_unary_model(u, (*m)->cfg->name, every ? NULL : (*m)->version);
}

static int read_spec(isv__grpc_unary *u, isv__tfs_spec *s) {
  int rc = isv__tfs_pb_spec(u->msg, u->len, 1, s);
  if (rc > 0) return 0;
  snprintf(u->err, sizeof u->err, "%s", rc < 0 ? "malformed request message" : "Missing ModelSpec");
  return ISV_EBADREQ;
}

static int get_model_metadata(isv__grpc_unary *u) {
  isv__tfs_spec s;
  int rc = read_spec(u, &s);
  if (rc) return rc;
  /* metadata_field (2): "signature_def" only, TF Serving's texts */
  isv__pb_reader rd = isv__pb_reader_of((isv__pb_span){u->msg, u->len});
  isv__pb_field f;
  int n_fields = 0;
  while (isv__pb_read_field(&rd, &f) > 0) {
    if (f.num != 2) continue;
    if (f.wt != ISV__PB_LEN) {
      snprintf(u->err, sizeof u->err, "malformed request message");
      return ISV_EBADREQ;
    }
    n_fields++;
    if (f.s.n != 13 || memcmp(f.s.p, "signature_def", 13) != 0) {
      snprintf(u->err, sizeof u->err, "Metadata field %.*s is not supported",
               (int)(f.s.n > 128 ? 128 : f.s.n), (const char *)f.s.p);
      return ISV_EBADREQ;
    }
  }
  if (n_fields == 0) {
    snprintf(u->err, sizeof u->err, "GetModelMetadataRequest must specify at least one "
                                    "metadata_field");
    return ISV_EBADREQ;
  }
  isv_model *m;
  if ((rc = spec_model(u, &s, &m, 0)) != 0) return rc;
  if (isv__tfs_pb_encode_metadata(m, u->out) != 0) {
    snprintf(u->err, sizeof u->err, "out of memory");
    return ISV_ENOMEM;
  }
  return 0;
}

/* ---- ModelService --------------------------------------------------------------------------- */

/* TF Serving's GetModelStatus: the version named (its Int64Value), else every version of the
 * model; a label is not looked at (TF Serving reads only the version). */
static int get_model_status(isv__grpc_unary *u) {
  isv__tfs_spec s;
  int rc = read_spec(u, &s);
  if (rc) return rc;
  s.has_label = 0;
  isv_model *m;
  rc = spec_model(u, &s, &m, !s.has_version);
  if (rc == ISV_ENOTFOUND) { /* TF Serving's texts (get_model_status_impl.cc) */
    if (s.has_version)
      snprintf(u->err, sizeof u->err, "Could not find version %" PRId64 " of model %.*s",
               s.version, (int)(s.name.n > 128 ? 128 : s.name.n), (const char *)s.name.p);
    else
      snprintf(u->err, sizeof u->err, "Could not find any versions of model %.*s",
               (int)(s.name.n > 128 ? 128 : s.name.n), (const char *)s.name.p);
  }
  if (rc) return rc;
  const isv_model *one[1] = {m};
  const isv_model *list[64];
  const isv_model *const *v = one;
  size_t n = 1;
  if (!s.has_version && m->entry) {
    n = 0;
    for (const isv_model *x = m->entry->versions; x && n < 64; x = x->next) list[n++] = x;
    v = list;
  }
  if (isv__tfs_pb_encode_status(v, n, u->out) != 0) {
    snprintf(u->err, sizeof u->err, "out of memory");
    return ISV_ENOMEM;
  }
  return 0;
}

const isv__grpc_method isv__tfs_methods[] = {
    {PS "Predict", ISV__RPC_UNARY, NULL, predict_decode, predict_encode, NULL, predict_bind},
    {PS "GetModelMetadata", ISV__RPC_UNARY, get_model_metadata, NULL, NULL, NULL, NULL},
    {PS "Classify", ISV__RPC_UNARY, NULL, examples_decode, examples_encode, NULL, classify_bind},
    {PS "Regress", ISV__RPC_UNARY, NULL, examples_decode, examples_encode, NULL, regress_bind},
    {PS "MultiInference", ISV__RPC_UNARY, NULL, multi_decode, multi_encode, NULL, multi_bind},
    {MS "GetModelStatus", ISV__RPC_UNARY, get_model_status, NULL, NULL, NULL, NULL},
    {MS "HandleReloadConfigRequest", ISV__RPC_UNARY, isv__tfs_reload_config, NULL, NULL, NULL,
     NULL},
    {0},
};
