/* Triton's trace extension (extension_trace.md): GET / POST /v2/trace/setting and
 * /v2/models/{model}/trace/setting, gRPC TraceSetting (model_name in the message) read and
 * change the trace settings (core/traceset.h) — trace_level (["OFF"] or ["TIMESTAMPS"];
 * "TENSORS" is unimplemented), trace_rate, trace_count (-1: no limit), log_frequency,
 * trace_file — every value a string as Triton writes them (a JSON number is taken too; the
 * level a string or an array of them). A change is applied whole or not at all; a setting set
 * to null (JSON) or to no values (gRPC) is cleared: a model's falls back to the global one, a
 * global one returns to what the server started with. An unknown name or a bad value is 400 /
 * INVALID_ARGUMENT naming it; an unknown model 404 / NOT_FOUND. The answer is every setting as
 * it now applies to the scope asked about. Without a trace hook (isv_options_set_trace) the
 * endpoints answer 501 / UNIMPLEMENTED: nothing would be traced. */
#ifndef ISV_PROTOCOL_V2_TRACE_H
#define ISV_PROTOCOL_V2_TRACE_H

#include "protocol/layer.h"

#include <stddef.h>
#include <stdint.h>

#include "codec/buf.h"
#include "core/traceset.h"
#include "protocol/grpc_service.h"
#include "protocol/router.h"

void isv__v2trace_http(isv__http_req *q); /* GET and POST [/v2/models/{model}]/trace/setting */
int isv__v2trace_grpc(isv__grpc_unary *u); /* inference.GRPCInferenceService/TraceSetting */

/* The codecs, for tests and fuzzing. A change (a JSON object; a TraceSettingRequest, whose
 * model_name goes to model — cap bytes, NUL-terminated — when model is not NULL) into *ch: 0,
 * or ISV_EBADREQ / ISV_EUNIMPL with err naming the problem. */
int isv__v2trace_parse_json(isv__trace_change *ch, char *body, size_t len, unsigned max_depth,
                            char *err, size_t cap);
int isv__v2trace_parse_pb(isv__trace_change *ch, char *model, size_t model_cap,
                          const uint8_t *msg, size_t len, char *err, size_t cap);
void isv__v2trace_write_json(const isv__trace_view *v, isv__buf *out);
void isv__v2trace_write_pb(const isv__trace_view *v, isv__buf *out); /* TraceSettingResponse */

#endif
