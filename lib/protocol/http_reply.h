/* Answers shared by every HTTP frontend: JSON bodies and {"error": "..."} errors. */
#ifndef ISV_PROTOCOL_HTTP_REPLY_H
#define ISV_PROTOCOL_HTTP_REPLY_H

#include "protocol/layer.h"

#include "codec/buf.h"
#include "core/core.h"
#include "transport/exchange.h"

/* Send b's bytes as application/json; takes b's memory (also on failure). */
int isv__reply_json(isv__exchange *ex, int status, isv__buf *b);
/* The same, with extra headers (copied). */
int isv__reply_json_headers(isv__exchange *ex, int status, isv__buf *b, const isv__header *extra,
                            size_t n_extra);
/* The same, for a body that may be large: one of ISV__FREE_LATER_MIN_BYTES or more is freed on
 * c's worker pool once written, not on the loop (isv__offload_free). */
int isv__reply_json_large(isv__core *c, isv__exchange *ex, int status, isv__buf *b);
/* {"error": message} with the HTTP status mapped from the ISV_E* code. The message may
 * contain client bytes: invalid UTF-8 is replaced, the rest escaped. */
int isv__reply_error(isv__exchange *ex, int err, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
int isv__reply_error_msg(isv__exchange *ex, int http_status, const char *msg,
                         const isv__header *extra, size_t n_extra);
/* One Server-Sent Events piece of a streamed answer (b's bytes, taken; empty or failed:
 * nothing but the head): the first also sends the 200 and its head (text/event-stream,
 * Cache-Control: no-cache) and sets *begun. Generate's and OpenAI's streams. */
void isv__sse_send(isv__exchange *ex, int *begun, isv__buf *b);
/* The request takes the exchange's body, which its inputs may point into (zero-copy tensors,
 * strings unescaped in place): freed with the request, which may outlive the exchange (a
 * request the server's close abandons waits for its backend). */
void isv__http_give_body(isv_request *r, isv__exchange *ex);
/* Whether a Content-Type header is the string literal `type` (case-insensitive; parameters
 * after ';' ignored): its length known here, not found by strlen on every request. */
#define isv__media_is(ct, type) isv__media_is_n((ct), "" type, sizeof(type) - 1)
int isv__media_is_n(const isv__header *ct, const char *type, size_t n);
/* A refused request's Retry-After (the core's estimate, r->retry_after_s): *h set, its value
 * written in buf (cap >= 12); 1, or 0 when the core has none. */
size_t isv__retry_after(const isv_request *r, isv__header *h, char *buf, size_t cap);
/* Triton's "priority" and "timeout" request parameters from the headers Inference-Priority and
 * Inference-Timeout-Us (decimal integers; gRPC: metadata of those names), for the protocols
 * whose messages cannot carry them (TF Serving, Vertex, grps) and any other: a request that
 * has the parameter already keeps it (the body's wins). 0, or r failed (400 naming the
 * header). Only on a request not failed already. */
int isv__queue_headers(isv_request *r, const isv__header *h, size_t n);
int isv__http_queue_headers(isv_request *r, const isv__exchange *ex); /* the exchange's */
/* Append {"error": msg} to b (UTF-8 sanitised). */
void isv__json_error_body(isv__buf *b, const char *msg);

#endif
