/* TensorFlow Serving's REST JSON (PROTOCOLS.md §3) ⇄ the canonical request: the predict body in
 * its row ("instances") and columnar ("inputs") formats, and the answers.
 *
 * No DOM: one pull reader over the body. Row format walks the instances twice — once skipping,
 * to count them, then converting each element straight into its tensor, the shape of each
 * input learned from the first instance and checked on every other. Strings (BYTES) point into
 * the body, unescaped or base64-decoded in place: the body must live as long as the request. */
#ifndef ISV_PROTOCOL_TFS_JSON_H
#define ISV_PROTOCOL_TFS_JSON_H

#include "protocol/layer.h"

#include <stddef.h>

#include "codec/buf.h"
#include "core/registry.h"
#include "core/request.h"
#include "protocol/tfs.h"

/* Decode a :predict body into r's inputs. r must be bound to its model (r->model: its inputs
 * name the tensors and give their datatypes). *row says which format it was (the answer takes
 * the same one); *sig the signature "signature_name" chose (NULL: the implicit one), whose
 * aliases name the inputs in the body and the outputs in the answer, and whose outputs are
 * requested. 0, or r failed with a message that names the problem (and the instance).
 *
 * ISV__TFS_VERTEX: AI Platform / Vertex AI's body (PROTOCOLS.md §4): "instances" only; the
 * members of "parameters" and every other top-level key become request parameters — numbers,
 * booleans and strings as such, objects and arrays as a string holding their JSON text
 * (DECISION: custom prediction routines get them as the client wrote them). */
#define ISV__TFS_VERTEX 1u
int isv__tfs_decode_predict(isv_request *r, char *body, size_t len, unsigned max_depth,
                            unsigned flags, int *row, const isv__signature **sig);

/* {"predictions": ...} (row) or {"outputs": ...} (columnar) from r's outputs, with
 * "deployedModelId" after the predictions when deployed_id is not NULL (Vertex AI). 0, or
 * ISV_EINVAL with msg set when the model's answer cannot take that shape (row format: every
 * output needs the batch dimension of the instances). */
int isv__tfs_encode_predict(const isv_request *r, const isv__signature *sig, int row,
                            const char *deployed_id, isv__buf *b, char *msg, size_t cap);

/* Decode a :classify or :regress body — {"signature_name"?, "context"?, "examples": [...]} —
 * into r's inputs: each example is an object of features named as the model's inputs, the
 * context's features are merged into every example (DECISION: an example's own value of a
 * feature wins over the context's), and input k is every example's value of feature k stacked
 * on dimension 0. A named signature must be of `method` (TF Serving's "Expected classification
 * signature method_name..."). 0, or r failed with a message naming the problem (and the
 * example). *sig as isv__tfs_decode_predict's. */
int isv__tfs_decode_examples(isv_request *r, char *body, size_t len, unsigned max_depth,
                             isv_signature_method method, const isv__signature **sig);

/* Output names below are the signature's aliases. {"results": [[[label, score], ...], ...]}
 * from the "scores" output (or the only one; FP32 or
 * FP64, [n] or [n, k]) with labels from a "classes" output (BYTES, the same shape), else the
 * model's labels (isv_model_config_set_labels, when there are k), else the class index. 0, or
 * ISV_EINVAL with msg set. */
int isv__tfs_encode_classify(const isv_request *r, const isv__signature *sig, isv__buf *b,
                             char *msg, size_t cap);

/* {"results": [v, ...]} from the "outputs" output (or the only one): FP32 or FP64, one value per
 * example ([n] or [n, 1]). 0, or ISV_EINVAL with msg set. */
int isv__tfs_encode_regress(const isv_request *r, const isv__signature *sig, isv__buf *b,
                            char *msg, size_t cap);

#endif
