/* KServe V2 JSON: the infer request body → the canonical request, and the canonical response →
 * the response body. No I/O: the fuzz target drives these directly. */
#ifndef ISV_PROTOCOL_V2_JSON_H
#define ISV_PROTOCOL_V2_JSON_H

#include "codec/buf.h"
#include "core/request.h"

/* Fill r's id, parameters, inputs and requested outputs from the body (mutable: strings are
 * unescaped in place and tensors may point into it, so it must outlive r). Returns 0, or the
 * ISV_E* code with r's status and message set (the message names the problem and, for syntax
 * errors, the byte offset). */
int isv__v2_decode_request(isv_request *r, char *body, size_t len, unsigned max_depth);
void isv__v2_encode_response(const isv_request *r, isv__buf *b);

#endif
