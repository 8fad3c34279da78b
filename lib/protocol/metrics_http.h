/* GET /metrics: the core's per model-version numbers in Prometheus text format 0.0.4. */
#ifndef ISV_PROTOCOL_METRICS_HTTP_H
#define ISV_PROTOCOL_METRICS_HTTP_H

#include "protocol/layer.h"

#include "codec/buf.h"
#include "core/core.h"
#include "protocol/router.h"
#include "transport/exchange.h"

void isv__metrics_render(isv__core *core, isv__buf *b);
/* The route handler: the rendered text, 200 text/plain (grps serves it at its own paths too). */
void isv__metrics_handler(isv__http_req *q);

#endif
