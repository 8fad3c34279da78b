/* A request's W3C trace context from what it came with: the `traceparent` and `tracestate`
 * HTTP headers of a REST request, the same gRPC metadata entries of a call. Every front end
 * makes its requests through these, so every protocol carries the context the same way; a
 * value that does not parse is ignored (codec/tracectx.h). */
#ifndef ISV_PROTOCOL_TRACE_H
#define ISV_PROTOCOL_TRACE_H

#include "protocol/layer.h"

#include <stddef.h>

#include "core/request.h"
#include "transport/exchange.h"

/* Keep the trace context named by headers[0..n) with r (several tracestate lines are one list,
 * joined with commas, as the spec says). Never fails the request: only an allocation failure
 * loses the context. */
void isv__trace_from_headers(isv_request *r, const isv__header *headers, size_t n);

#endif
