/* The service's edge (include/inferserve.h, "authorization, per-client limits, CORS"): what
 * every request passes between being routed and being handled, whatever its protocol —
 * the host's authorizer (allow, deny, or decide later from another thread), the per-client
 * count of requests in flight, and the CORS headers browsers need. The router calls it for
 * HTTP (after matching: the path's model is known), the gRPC call layer for gRPC (once the
 * first message is whole: the model named in it is known). Loop thread, but for
 * isv_auth_done. */
#ifndef ISV_PROTOCOL_GATE_H
#define ISV_PROTOCOL_GATE_H

#include "protocol/layer.h"

#include "core/core.h"
#include "protocol/router.h"
#include "transport/grpc.h"

typedef struct isv__gate {
  isv__core *core;
  isv_authorize_cb cb;
  void *user;
} isv__gate;

void isv__gate_init(isv__gate *g, isv__core *core);
/* Whether requests must pass it (an authorizer, or a per-client limit). */
int isv__gate_on(const isv__gate *g);

/* A routed HTTP request: authorize and count it, then run h(q) — now, or later on the loop
 * thread with q's captures copied — or answer it in q->fe's error shape (401, 403, 429). */
void isv__gate_http(isv__gate *g, const isv__http_req *q, isv__http_handler h);

/* A gRPC call whose first message names `model` (NULL: none): authorize and count it, then
 * done(ctx, 0, NULL, client) — now or later — or done(ctx, code, message, NULL) with an ISV_E*
 * code (EUNAUTH, EFORBIDDEN, ETOOMANY). `client`, when not NULL, is released with
 * isv__client_release (core/clients.h) once the call is over. The call must stay valid until done ran. */
typedef void (*isv__gate_done)(void *ctx, int err, const char *message, isv__client *client);
void isv__gate_grpc(isv__gate *g, isv__grpc_call *call, const char *protocol, const char *model,
                    size_t model_len, isv__gate_done done, void *ctx);

/* CORS, before routing: a preflight from an allowed origin is answered here (1: ex is
 * answered); an actual request from one gets its answer's CORS headers (ex->extra). 0: go on.
 * `origins` is isv_options' cors_origins. */
int isv__gate_cors(const char *origins, isv__exchange *ex);
/* Whether `origin` (n bytes) is one of `origins` (space-separated, or "*"). */
int isv__cors_origin_allowed(const char *origins, const char *origin, size_t n);

#endif
