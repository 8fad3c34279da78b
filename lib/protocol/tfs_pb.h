/* TensorFlow Serving's gRPC messages (proto/tensorflow_serving.proto, tensorflow_core.proto) by
 * hand over codec/pbwire.h, as grps_pb.c and v2_pb.c do: tensors never pass through nanopb's
 * 16-bit sizes, tensor_content is used in place when it is aligned for its type (else copied
 * once into the request's arena), string_val elements point into the message, and an answer's
 * tensor_content is referenced where the output lives.
 *
 * TensorProto → a canonical tensor (PROTOCOLS.md §3, gRPC):
 *  - dtype: DT_FLOAT DT_DOUBLE DT_INT8/16/32/64 DT_UINT8/16/32/64 DT_BOOL DT_HALF DT_BFLOAT16
 *    DT_STRING; any other (complex, quantized, resource, variant) is refused, naming the input.
 *  - tensor_shape: every dimension known and >= 0; unknown_rank refused; none: a scalar.
 *  - the elements in exactly one of tensor_content (little-endian, exactly the shape's bytes;
 *    not for DT_STRING) or the typed field of the dtype (float_val, double_val, int_val for
 *    8/16/32-bit integers, int64_val, uint32_val, uint64_val, bool_val, half_val for the 16
 *    bits of DT_HALF and DT_BFLOAT16, string_val); a value out of its type's range is refused
 *    (TF casts silently), as is a typed field of another dtype.
 *  - DECISION (TF's rule, tensor.cc FromProtoField): a typed field with fewer values than the
 *    shape holds is filled out with its last value (a constant tensor in one value); beyond TF,
 *    none at all for a non-empty shape, and more than the shape holds, are refused (TF fills
 *    zeros and drops the rest silently). The filled tensor counts against max_body_bytes.
 * Loop thread or a worker (decode); the codec touches the request only. */
#ifndef ISV_PROTOCOL_TFS_PB_H
#define ISV_PROTOCOL_TFS_PB_H

#include "protocol/layer.h"

#include <stddef.h>
#include <stdint.h>

#include "codec/buf.h"
#include "codec/pbwire.h"
#include "core/core.h"
#include "core/request.h"
#include "protocol/grpc_service.h"
#include "protocol/tfs.h"

/* A ModelSpec, its strings spans of the message. */
typedef struct isv__tfs_spec {
  isv__pb_span name, label, signature;
  int has_version, has_label;
  int64_t version;
} isv__tfs_spec;

/* The model_spec (field `num`) of a request message: 1 found, 0 the message has none, -1
 * malformed. The last occurrence of each field wins (protobuf's rule: a nested message given
 * twice is merged, which for these scalar fields is the same). */
int isv__tfs_pb_spec(const uint8_t *msg, size_t len, uint32_t num, isv__tfs_spec *spec);

/* The model a spec names in the core's terms (core/core.h): its name, and its version (written
 * into buf, of at least 24 bytes) or its label. Spans of the message, not copied. */
isv__model_spec isv__tfs_model_spec(const isv__tfs_spec *s, char *buf, size_t cap);

/* What a TF Serving call keeps on its request (r->fe_data): the signature chosen. */
typedef struct isv__tfs_task {
  const isv__signature *sig; /* NULL: the implicit serving_default */
  const char *sig_name;      /* what the answer's model_spec says ("" when the request's was) */
  int kind;                  /* ISV__TFS_CLASSIFY or ISV__TFS_REGRESS */
} isv__tfs_task;
typedef struct isv__tfs_call {
  const isv__signature *sig; /* NULL: the implicit serving_default */
  const char *sig_name;      /* what the answer's model_spec says */
  int kind;                  /* ISV__TFS_PREDICT, CLASSIFY, REGRESS, MULTI */
  isv__tfs_task *tasks;      /* MULTI: every task (sig: the first's) */
  size_t n_tasks;
} isv__tfs_call;
enum { ISV__TFS_PREDICT, ISV__TFS_CLASSIFY, ISV__TFS_REGRESS, ISV__TFS_MULTI };

/* The model a request's model_spec names, bound to r, its signature chosen into a call in
 * r->fe_data; or r failed with TF Serving's text and code: no model_spec "Missing ModelSpec"
 * (INVALID_ARGUMENT), an unknown model or version "Servable not found for request: ..."
 * (NOT_FOUND), an unknown label (INVALID_ARGUMENT), an unknown signature "Serving signature
 * key \"s\" not found." (FAILED_PRECONDITION). Loop thread (the registry). */
int isv__tfs_pb_bind(isv_request *r, const uint8_t *msg, size_t len, int kind);

/* One TensorProto into t (name, dt, shape, data, count, byte_size), `alias` naming it in
 * errors; its data in place in the message or in r's arena. 0, or r failed. */
int isv__tfs_pb_decode_tensor(isv_request *r, isv__pb_span tp, const char *alias, isv_tensor *t);

/* A PredictRequest into r's inputs (named by the model, found by the signature's aliases) and
 * requested outputs (output_filter, or the signature's). r bound by isv__tfs_pb_bind (a
 * failed r is left as it is). 0, or r failed with TF Serving's texts. */
int isv__tfs_pb_decode_predict(isv_request *r, const uint8_t *msg, size_t len);

/* The PredictResponse of a finished request: outputs by alias, each a TensorProto (dtype,
 * shape, tensor_content referenced where the output is, string_val for DT_STRING), and the
 * model_spec that answered (name, version when it is a number, signature). 0 or ISV_ENOMEM;
 * ISV_EBACKEND for an output TF Serving cannot carry. */
int isv__tfs_pb_encode_predict(isv_request *r, isv__parts *out);

/* A ClassificationRequest or RegressionRequest's input (tf.Example, TF Serving's Input: an
 * ExampleList, or an ExampleListWithContext whose context's features every example takes
 * unless it has its own) into r's inputs, as the REST :classify / :regress map "examples":
 * each input of the signature (a named one must be of the call's method, else TF Serving's
 * "Expected classification signature method_name to be ..."; a model without signatures
 * serves every method through its implicit one) is the feature of its alias in every
 * example, stacked on dimension 0 — DECISION: the model's input says what an example's k
 * values (the same k in every example) are: one value for an input of rank 1 ([n]), a vector
 * for rank 2 ([n, k]), its fixed inner shape for a higher rank; an input of any rank: one
 * value [n], k values [n, k]; float_list feeds a floating input (FP32, FP64,
 * FP16, BF16), int64_list an integer or floating one (range-checked), bytes_list a BYTES one. A
 * feature that is no input of the signature, or missing from an example and the context, is
 * refused naming the example. r bound by isv__tfs_pb_bind (kind CLASSIFY or REGRESS). */
int isv__tfs_pb_decode_examples(isv_request *r, const uint8_t *msg, size_t len);

/* ClassificationResponse (a Classifications of Class {label, score} per example, from the
 * outputs isv__tfs_classes_of picks) or RegressionResponse (a Regression {value} per example),
 * with the model_spec that answered. 0, ISV_ENOMEM, or ISV_EBADREQ with r failed (the model's
 * answer is not a classification / regression). */
int isv__tfs_pb_encode_examples(isv_request *r, isv__parts *out);

/* MultiInferenceRequest {tasks: InferenceTask {model_spec, method_name}, input}: one model
 * (every task's model_spec names it; the first's version or label chooses the version), each
 * task a signature of it run as classify or regress on the one Input — one execution of the
 * model, every task's outputs requested, as TF Serving's runner does. Bound to r (the loop's
 * step, as isv__tfs_pb_bind), or r failed with TF Serving's texts: "Found ModelSpec with an
 * empty model name.", "All ModelSpecs in a MultiInferenceRequest must access the same model
 * name.", "Duplicate evaluation of signature: s", "Requested signature not found in model
 * graph: s" (INVALID_ARGUMENT), "Unsupported signature method_name: m" (UNIMPLEMENTED).
 * DECISION: every task's signature must take the same inputs under the same aliases (TF
 * Serving's takes one input tensor for all). */
int isv__tfs_pb_bind_multi(isv_request *r, const uint8_t *msg, size_t len);
/* Its Input into r's inputs (as isv__tfs_pb_decode_examples, through the first task's
 * signature) and every task's outputs requested. */
int isv__tfs_pb_decode_multi(isv_request *r, const uint8_t *msg, size_t len);
/* MultiInferenceResponse: an InferenceResult per task, in order — its model_spec and its
 * classification or regression result. 0, ISV_ENOMEM, or ISV_EBADREQ with r failed. */
int isv__tfs_pb_encode_multi(isv_request *r, isv__parts *out);

/* A TensorProto of t (its data copied) into b: what the predict answer carries per output. */
void isv__tfs_pb_put_tensor(isv__buf *b, const isv_tensor *t);

/* GetModelMetadataResponse of m: model_spec, and metadata["signature_def"] an Any of a
 * SignatureDefMap (the registered signatures, or the implicit serving_default) — the REST
 * metadata's signatures. */
int isv__tfs_pb_encode_metadata(const isv_model *m, isv__buf *out);

/* GetModelStatusResponse: one ModelVersionStatus per model version in v[0..n). */
int isv__tfs_pb_encode_status(const isv_model *const *v, size_t n, isv__buf *out);

/* tensorflow.serving.PredictionService and ModelService (tfs_grpc.c), served by the
 * "tfserving" front end (tfs_http.c) with the label "tfserving_grpc". */
extern const isv__grpc_method isv__tfs_methods[]; /* ends with {0} */
/* ModelService/HandleReloadConfigRequest on the host's repository callbacks (tfs_reload.c). */
int isv__tfs_reload_config(isv__grpc_unary *u);
/* Most models a reload may list. */
#define ISV__TFS_RELOAD_MAX 4096
/* A ReloadConfigRequest's model names (its ModelConfigList: each non-empty, valid UTF-8 without
 * NUL, listed once; copied to a) into *names, *n, sorted (strcmp). 0, or ISV_EBADREQ (malformed,
 * not a ModelConfigList, a bad or repeated name) / ISV_EUNIMPL (version_labels) / ISV_ENOMEM
 * with a message in err — TF Serving's words where it has them. */
int isv__tfs_reload_decode(const uint8_t *msg, size_t len, isv__arena *a, const char ***names,
                           size_t *n, char *err, size_t cap);

#endif
