/* The service's edge, its judging half (include/inferserve.h, "the service's edge"): who a
 * request comes from, and whether it may act on a model. One host callback answers two
 * questions, asked at two stages:
 *   - the CALLER stage, before a byte of the body is decoded or inflated: authentication
 *     (bearer token, TLS identity) and then the per-client count;
 *   - the MODEL stage, for each model a request acts on, after every resolution rule
 *     (name-version, default model, Vertex endpoint, TF label, default version): the model
 *     that runs, is loaded or unloaded, or whose metadata is returned. The core asks it for
 *     every submitted request that carries a caller (core.h, isv__core.authorize); a handler
 *     that answers about a model itself asks isv__gate_model (through edge.h for HTTP, the
 *     gRPC call layer for gRPC) with the model it resolved — never a name read a second way.
 * edge.c runs the HTTP order, grpc_service.c the gRPC one. Loop thread, but isv_auth_complete. */
#ifndef ISV_PROTOCOL_GATE_H
#define ISV_PROTOCOL_GATE_H

#include "protocol/layer.h"

#include "core/core.h"
#include "transport/exchange.h"

typedef struct isv__gate {
  isv__core *core;
  isv_authorize_cb cb;
  void *user;
} isv__gate;

#define ISV__CALLER_KEY_MAX 128

/* Who sent a request, as the carrier describes it: what the authorizer is shown at both stages.
 * Owned by the carrier (an exchange's edge record, a gRPC call); it must stay valid — and its
 * pointers too — while a decision on it is pending: hold/release bracket each pending one. */
typedef struct isv__caller isv__caller;
struct isv__caller {
  const char *protocol; /* front end or method label */
  int grpc;
  const char *method;
  const char *path;
  const isv__header *headers;
  size_t n_headers;
  const char *peer;
  const char *identity;
  char client[ISV__CALLER_KEY_MAX]; /* its key under the per-client limit (the caller stage's) */
  char challenge[256];              /* WWW-Authenticate of a refusal ("" none) */
  void (*hold)(isv__caller *who);   /* a decision became pending (may be NULL) */
  void (*release)(isv__caller *who); /* ... and was applied */
};

/* A decision taken later: done(ctx, 0, NULL) allowed, or done(ctx, code, message) refused with
 * ISV_EUNAUTH / ISV_EFORBIDDEN / ISV_ETOOMANY / ISV_ENOMEM. On the loop thread. */
typedef void (*isv__gate_done)(void *ctx, int err, const char *message);

/* What isv__gate_caller and isv__gate_model return when the host decides later. */
#define ISV__GATE_LATER 1

void isv__gate_init(isv__gate *g, isv__core *core);
/* Whether requests must pass it (an authorizer, or a per-client limit). */
int isv__gate_on(const isv__gate *g);

/* The caller stage: authenticate `who`, then (count != 0) take one count of its client under
 * the per-client limit into *held (released with isv__client_release). 0: go on; an ISV_E*
 * code with msg (cap bytes) set: refused; ISV__GATE_LATER: done runs once decided (and *held
 * is filled then — it must stay valid). */
int isv__gate_caller(isv__gate *g, isv__caller *who, isv__client **held, isv__gate_done done,
                     void *ctx, char *msg, size_t cap);

/* The model stage: may `who` act on model `name`, version `version` (NULL: none resolved — a
 * model not registered, or every version)? Returns as isv__gate_caller. */
int isv__gate_model(isv__gate *g, isv__caller *who, const char *name, const char *version,
                    isv__gate_done done, void *ctx, char *msg, size_t cap);

/* One more request of who's client (each request of a stream counts): 0 with *out (NULL when
 * there is no limit), or ISV_ETOOMANY / ISV_ENOMEM with msg set. */
int isv__gate_admit(isv__gate *g, const isv__caller *who, isv__client **out, char *msg,
                    size_t cap);

/* The model a handler asked about when the host decided later: the handler runs again once
 * the decision came, and finds it here (isv__gate_pin_is) instead of asking twice. */
typedef struct isv__gate_pin {
  char *model;   /* NULL: none */
  char *version; /* NULL: none */
} isv__gate_pin;
/* Whether p holds (name, version). */
int isv__gate_pin_is(const isv__gate_pin *p, const char *name, const char *version);
/* p holds copies of (name, version) — or nothing, out of memory (the run after the decision
 * then asks again). */
void isv__gate_pin_set(isv__gate_pin *p, const isv_mem *mem, const char *name,
                       const char *version);
void isv__gate_pin_free(isv__gate_pin *p);

/* CORS, before routing: a preflight from an allowed origin is answered here (1: ex is
 * answered); an actual request from one gets its answer's CORS headers (ex->extra). 0: go on.
 * `origins` is isv_options' cors_origins. */
int isv__gate_cors(const char *origins, isv__exchange *ex);
/* Whether `origin` (n bytes) is one of `origins` (space-separated, or "*"). */
int isv__cors_origin_allowed(const char *origins, const char *origin, size_t n);

#endif
