/* Triton's logging extension (extension_logging.md): GET / POST /v2/logging and gRPC
 * LogSettings read and change the server's log settings (core/logset.h) — which levels of its
 * messages reach the host's log callback, and the file, format and verbose level the host is
 * told of (isv_options_set_log_settings_cb). Settings: log_file (string), log_info,
 * log_warning, log_error (booleans), log_verbose_level (unsigned 32-bit), log_format
 * ("default" or "ISO8601"); a change names any of them and is applied whole or not at all; an
 * unknown name or a value of the wrong type is 400 / INVALID_ARGUMENT naming it. The answer is
 * every setting as it now is. */
#ifndef ISV_PROTOCOL_V2_LOGGING_H
#define ISV_PROTOCOL_V2_LOGGING_H

#include "protocol/layer.h"

#include <stddef.h>
#include <stdint.h>

#include "codec/buf.h"
#include "core/logset.h"
#include "protocol/grpc_service.h"
#include "protocol/router.h"

void isv__v2log_http(isv__http_req *q); /* GET and POST /v2/logging */
int isv__v2log_grpc(isv__grpc_unary *u); /* inference.GRPCInferenceService/LogSettings */

/* The codecs, for tests and fuzzing: a change (JSON object / LogSettingsRequest) applied to v;
 * 0, or -1 with err naming the problem (v then unchanged). */
int isv__v2log_apply_json(isv__log_view *v, char *body, size_t len, unsigned max_depth,
                          char *err, size_t cap);
int isv__v2log_apply_pb(isv__log_view *v, const uint8_t *msg, size_t len, char *err, size_t cap);
void isv__v2log_write_json(const isv__log_view *v, isv__buf *out);
void isv__v2log_write_pb(const isv__log_view *v, isv__buf *out); /* LogSettingsResponse */

#endif
