/* KServe V2 gRPC messages (package inference) ⇄ the canonical request and response: by hand
 * (codec/pbwire.h) for inference, with nanopb for the small messages. No I/O; the fuzz target drives these directly.
 *
 * Zero-copy contract: a decoded request references the message buffer (raw_input_contents and
 * bytes_contents are used in place), so the buffer must outlive the request. An encoded
 * response references the request's output tensors (raw_output_contents are not copied), so
 * the request must outlive the write of the parts. */
#ifndef ISV_PROTOCOL_V2_PB_H
#define ISV_PROTOCOL_V2_PB_H

#include "protocol/layer.h"

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "codec/buf.h"
#include "core/request.h"
#include "protocol/grpc_service.h" /* isv__parts */

/* ModelInferRequest → r: model_name, version (NULL when empty), id (has_id when non-empty),
 * parameters, inputs (raw_input_contents[i] belongs to the i-th input — or, when there are
 * fewer entries than inputs, to the i-th input not in shared memory, as Triton's clients send
 * them; an input naming a shared memory region (shared_memory_* parameters) is read from it
 * (a copy, or in place when trusted), and a requested output naming one is written there
 * (core/shm.h); an input with both raw
 * and typed contents, a raw entry without its input, or a size not matching shape × datatype
 * are errors; typed contents are converted to the canonical little-endian buffer; BYTES raw
 * data is u32-LE length + bytes per element), requested outputs (int64_param
 * "classification" → classification; "binary_data" ignored). Returns 0, or the ISV_E* code
 * with r's status and message set (isv__request_fail). */
int isv__v2pb_decode_infer_request(isv_request *r, const uint8_t *msg, size_t len);

/* A finished, successful request → ModelInferResponse (model_name, model_version, id,
 * outputs with name/datatype/shape, raw_output_contents by reference; BYTES outputs
 * serialised as u32-LE length + bytes into the arena). 0 or ISV_ENOMEM. */
int isv__v2pb_encode_infer_response(isv_request *r, isv__parts *out);
/* ModelStreamInferResponse{infer_response} around the same, or {error_message}. */
int isv__v2pb_encode_stream_response(isv_request *r, isv__parts *out);
int isv__v2pb_encode_stream_error(int status, const char *message, isv__buf *out);

/* ModelReadyRequest / ModelMetadataRequest {name 1, version 2}: copies into the arrays
 * (NUL-terminated; version "" when absent). -1 on a malformed message or too-long string. */
int isv__v2pb_decode_model_ref(const uint8_t *msg, size_t len, char *name, size_t name_cap,
                               char *version, size_t version_cap);
/* {bool field 1}: ServerLiveResponse.live, ServerReadyResponse.ready, ModelReadyResponse.ready */
int isv__v2pb_encode_bool1(int v, isv__buf *out);
int isv__v2pb_encode_server_metadata(const char *name, const char *version,
                                     const char *const *extensions, size_t n, isv__buf *out);
/* ModelMetadataResponse of m: name, every version of its entry, platform, inputs, outputs
 * (shape with a leading -1 when max_batch > 0, as the REST metadata shows). */
int isv__v2pb_encode_model_metadata(const isv_model *m, isv__buf *out);
/* ModelStatisticsResponse (Triton's statistics extension, grpc_service.proto) of n model
 * versions: per version name, version, last_inference, inference_count, execution_count,
 * inference_stats (success, fail, queue, compute_input/infer/output), batch_stats (executions
 * per batch size; time per size not measured: 0). 0 or ISV_ENOMEM. */
/* ModelConfigResponse {config: Triton's ModelConfig} of m's registration: name, platform,
 * max_batch_size, input / output (TYPE_* datatype, dims without the batch dimension),
 * instance_group (KIND_CPU × instances), dynamic or sequence batching (direct), decoupled.
 * 0 or ISV_ENOMEM. */
int isv__v2pb_encode_model_config(const isv_model *m, isv__buf *out);
int isv__v2pb_encode_model_statistics(const isv_model *const *models, size_t n, isv__buf *out);

#endif
