/* Triton's generate extension (a provisional part of the KServe V2 front end): a flat JSON
 * object instead of V2's tensor list, for text models. POST .../generate answers one JSON object;
 * .../generate_stream answers Server-Sent Events, one "data:" event per response of a decoupled
 * model. No I/O here: the fuzz target drives these directly.
 *
 * Request: {"text_input": "...", "parameters": {...}, <key>: <value>...}. A key that names an
 * input of the model becomes that input — a scalar as one element, a flat array as its
 * elements, shaped by the model's declaration (a batch dimension of 1 in front when the model
 * batches) — and any other key a request parameter (a bool, number or string). Response:
 * {"model_name", "model_version", <output name>: a scalar when the output has one element, else
 * a flat array}. Errors: {"error": "..."}. */
#ifndef ISV_PROTOCOL_V2_GENERATE_H
#define ISV_PROTOCOL_V2_GENERATE_H

#include "protocol/layer.h"

#include "codec/buf.h"
#include "core/request.h"

/* Fill r (bound to its model: the inputs' datatypes and shapes come from it) from the body.
 * The body is mutable and tensors may point into it: it must outlive r. 0, or the ISV_E* code
 * with r failed (the message names the key and, for syntax errors, the byte offset). */
int isv__v2gen_decode_request(isv_request *r, char *body, size_t len, unsigned max_depth);
/* r's outputs (a finished request, or one response of a decoupled model) as the response
 * object. 0, or an ISV_E* code; b->failed reports allocation failure. */
int isv__v2gen_encode_response(const isv_request *r, isv__buf *b);

#endif
