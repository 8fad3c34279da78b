/* The HTTP edge: the one order every HTTP request passes, whatever its front end —
 *   CORS preflight → the caller stage (authentication, then the per-client count: gate.h) →
 *   content decoding (content_coding.h) → routing (router.h) → the handler, which decodes and
 *   resolves, and whose model is judged at the model stage (isv__core_submit for the requests
 *   it submits, isv__edge_http_model for what it answers itself) → queueing.
 * The router only matches paths; nothing before the caller stage reads the body. With no
 * authorizer and no per-client limit the edge allocates nothing. Loop thread. */
#ifndef ISV_PROTOCOL_EDGE_H
#define ISV_PROTOCOL_EDGE_H

#include "protocol/layer.h"

#include "protocol/router.h"

/* Take a new exchange through the edge. Re-entered, with what is done remembered on the
 * exchange, once a pending step finishes (a decision, a body inflated on a worker). */
void isv__edge_http(isv__router *r, isv__exchange *ex);

/* Who sent ex, for the requests its handler submits (isv_request.caller): NULL when nobody
 * judges. */
void *isv__edge_caller(const isv__exchange *ex);

/* The model stage for a handler that answers about a model itself (metadata, readiness,
 * config, statistics): `name` and `version` (NULL: none) are the model version it resolved.
 * 1: go on. 0: the edge took the exchange — refused and answered in q->fe's shape, or the host
 * decides later: once it allows, the exchange is routed again and the handler runs again from
 * the start, finding this model allowed (isv__edge_http_allowed). So a handler calls this
 * before it answers and before it consumes its body (decoders change the body in place). */
int isv__edge_http_model(const isv__http_req *q, const char *name, const char *version);
/* The model a later decision allowed for q's exchange (a handler that decoded its body the
 * first time uses it instead of decoding again), its version in *version; NULL: none. */
const char *isv__edge_http_allowed(const isv__http_req *q, const char **version);

#endif
