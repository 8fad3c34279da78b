/* KServe V2 over HTTP/REST: health, metadata, readiness and infer (PROTOCOLS.md §1). */
#ifndef ISV_PROTOCOL_V2_HTTP_H
#define ISV_PROTOCOL_V2_HTTP_H

#include "protocol/layer.h"

#include "core/core.h"
#include "protocol/router.h"
#include "transport/exchange.h"

/* rt->seg[0] is "v2" (of ex->path). */
void isv__v2_route(isv__core *core, isv__exchange *ex, const isv__route *rt);

#endif
