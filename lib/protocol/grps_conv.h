/* grps ⇄ the canonical request (PROTOCOLS.md §5 and its decisions): which model a message is
 * for, its data as the request's inputs, and a finished request's outputs as the reply's data.
 * Shared by grps's HTTP and gRPC front ends; knows no wire (grps_msg.h has the codecs).
 *
 * Into a request (the backend reads the kind in the request parameter "grps_data":
 * "str_data", "bin_data", "gtensors", "ndarray" or "gmap"):
 *   str_data, bin_data  one BYTES [1] input: the model's only declared input, else named
 *                       "str_data" / "bin_data";
 *   ndarray             one FP32 input of the array's shape: the only declared input, else
 *                       "ndarray";
 *   gtensors            one input per tensor, by its name; an unnamed tensor i takes the
 *                       model's i-th declared input name, else "tensor_<i>";
 *   gmap                one input per entry, named "<map>/<key>" ("s_s/prompt", "s_i32/n"):
 *                       s_s and s_b BYTES [1], s_i32 INT32 [1], s_i64 INT64 [1], s_f FP32 [1],
 *                       s_d FP64 [1], s_t the tensor;
 *   a native model      (isv_model_config_set_native) the serialized GrpsMessage as BYTES [1]
 *                       input "grps_message".
 * Out of a request, the reply's data kind is: ndarray when the client asked
 * (?return-ndarray=true: one FP32 output), else the one the backend names in the response
 * parameter "grps_data" (it must fit the outputs), else the request's kind when the outputs fit it
 * (str_data/bin_data: exactly one BYTES output of one element; gmap: always), else gtensors
 * (every output by name). Into gmap, an output named "<map>/<key>" goes to that map; any other
 * goes by its type: BYTES [1] → s_s when UTF-8 else s_b, INT32 [1] → s_i32, INT64 [1] → s_i64,
 * FP32 [1] → s_f, FP64 [1] → s_d, anything else → s_t. A native model answers with its output
 * "grps_message" (a serialized GrpsMessage), sent as it is but for the status. */
#ifndef ISV_PROTOCOL_GRPS_CONV_H
#define ISV_PROTOCOL_GRPS_CONV_H

#include "protocol/layer.h"

#include "core/request.h"
#include "protocol/grps_msg.h"

/* isv_request.proto_flags of a grps request: the request's kind, and the client's ask. */
#define ISV__GRPS_F_KIND 0x7u    /* isv__grps_kind */
#define ISV__GRPS_F_NDARRAY 0x8u /* ?return-ndarray=true */

/* Select and bind r's model: "name-version" or "name" (a whole name that is registered wins
 * over a split at its last '-'), empty → the server's default model
 * (isv_server_set_default_model). 0, or r failed (ISV_ENOTFOUND naming what is unknown). */
int isv__grps_select_model(isv_request *r, const char *model, size_t len);

/* r's inputs and "grps_data" parameter from m (r bound to its model; m's memory must live as
 * long as r: r's arena and r->body). wire: m's serialized form when it came as protobuf, which
 * a native model takes as it is (NULL: m is serialized for it). 0, or r failed. */
int isv__grps_to_request(isv_request *r, const isv__grps_msg *m, const uint8_t *wire,
                         size_t wire_len);

/* The reply of r — a finished request, or one response of a decoupled one — in r's arena (it
 * points into r's outputs: use it before r is freed). status SUCCESS 200 "OK". `flags`: the
 * request's proto_flags. 0, or an ISV_E* code with r failed (the outputs do not fit the kind
 * asked, a native answer that does not decode). */
int isv__grps_reply_of(isv_request *r, unsigned flags, isv__grps_msg *out);

/* The reply of a failure: status {HTTP status of err, msg, FAILURE}, no data. A msg that is
 * not UTF-8 (a client's bytes quoted) is replaced by a copy with '?' for every non-ASCII byte,
 * in a buffer of this thread valid until its next call (at most 511 bytes). */
void isv__grps_error_reply(int err, const char *msg, isv__grps_msg *out);

/* grps's names of the data kinds ("str_data", ...; "" for none). */
const char *isv__grps_kind_name(isv__grps_kind k);

#endif
