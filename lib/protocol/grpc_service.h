/* gRPC services as data: a method table of {path, kind, answer | decode/encode/encode_error}
 * that front ends export, and ONE call layer that runs every method of every front end — the
 * call's life (collect the unary message, deliver each message of a stream), requests into the
 * core and their answers back, cancellation (the backend sees it), deadlines (the transport's),
 * and drain on shutdown. A front end writes codecs; it never sees a call's state.
 *
 * Kinds:
 *  - UNARY with `answer`: one message in, one out, answered by the front end at once (health,
 *    metadata). A nonzero ISV_E* code ends the call with its gRPC status and u->err. An answer
 *    that takes time (TF Serving's HandleReloadConfigRequest: repository operations) sets
 *    u->keep and leaves u->out empty: its one message goes later with isv__grpc_kept_send then
 *    isv__grpc_kept_end, or the call fails with isv__grpc_kept_fail; keep.end tells it the
 *    call is over first (the client went away; the server's close ends it UNAVAILABLE).
 *  - UNARY with decode/encode: one message → one inference request → its response message
 *    then OK, or the request's error status (ModelInfer).
 *  - SERVER_STREAM: one message → one request → each of its responses as a message (a
 *    decoupled model's, as the backend sends them), then OK.
 *  - BIDI_STREAM: every message is a request, answered in completion order; a failed one is
 *    answered in-stream with encode_error when the method has one (ModelStreamInfer), else it
 *    ends the call. The call ends OK once the client half-closed and every request answered.
 *  - SERVER_STREAM with `answer`: the one message answered by the front end, u->out the first
 *    message; the call then ends OK, unless the answer kept it open (u->keep, health's Watch):
 *    then the front end sends later messages with isv__grpc_kept_send until the call is over —
 *    client cancel or reset, or the server's close, where a kept call ends OK (its answer has
 *    already said what the close means to its client) — and keep.end tells it so.
 *  - BIDI_STREAM with `answer`: each message answered at once by the front end, one message
 *    each (a nonzero code ends the call with its status: reflection); the call ends OK at the
 *    client's half-close. A client that sends without reading its answers, until the
 *    transport's queue for the call is full, gets RESOURCE_EXHAUSTED.
 * A UNARY or SERVER_STREAM method with encode_error answers a failed request with that message
 * and then OK (grps carries its errors in the message's status); without, with the error's
 * gRPC status.
 * Loop thread only. */
#ifndef ISV_PROTOCOL_GRPC_SERVICE_H
#define ISV_PROTOCOL_GRPC_SERVICE_H

#include "protocol/layer.h"

#include <stddef.h>
#include <stdint.h>

#include "codec/buf.h"
#include "core/request.h"
#include "transport/grpc.h"

/* A message as a list of parts: parts[] and the non-tensor bytes live in the request's arena,
 * tensors are referenced where they are (the request outlives the write). */
typedef struct isv__parts {
  uv_buf_t *v;
  size_t n;
  size_t total; /* sum of v[i].len */
} isv__parts;

typedef enum { ISV__RPC_UNARY, ISV__RPC_SERVER_STREAM, ISV__RPC_BIDI_STREAM } isv__rpc_kind;

typedef struct isv__grpc_services isv__grpc_services;

/* What an answer that keeps its SERVER_STREAM call open leaves with the call layer. */
typedef struct isv__grpc_keep {
  /* The call is over (cancelled, reset, the server closing, a failed send, or
   * isv__grpc_kept_end): free what the answer kept. Runs once; the call must not be used after it. NULL: the call is not kept. */
  void (*end)(void *data);
  /* Optional: the call drained after isv__grpc_kept_send said it was full. */
  void (*writable)(void *data);
  void *data;
} isv__grpc_keep;

/* A unary call answered by the front end itself. */
typedef struct isv__grpc_unary {
  isv__core *core;
  const isv__grpc_services *services; /* e.g. for grpc.health: which services exist */
  const uint8_t *msg;                 /* the request message */
  size_t len;
  isv__buf *out;                      /* the response message */
  char err[256];                      /* the status message of a nonzero answer */
  struct gcall *call;                 /* the call layer's (isv__grpc_unary_model, kept_send) */
  isv__grpc_keep keep;                /* SERVER_STREAM: set to keep the call open */
} isv__grpc_unary;

/* A later message of a kept call (isv__grpc_keep): msg is taken (and emptied). 1: sent, the
 * call takes more; 0: sent, but the call's queue is full (keep.writable runs once it drained:
 * send less meanwhile); -1: the call is over — keep.end has run, here or before. */
int isv__grpc_kept_send(struct gcall *call, isv__buf *msg);
/* End a kept call OK (after its last message): keep.end runs first, here. */
void isv__grpc_kept_end(struct gcall *call);
/* End a kept call with err's gRPC status and msg (NULL: err's text): keep.end runs first. */
void isv__grpc_kept_fail(struct gcall *call, int err, const char *msg);
/* Who made the call, for the requests an answer makes itself (isv_request.caller: the core's
 * model stage asks the edge about each) — NULL when nobody judges (no gate). Valid until
 * keep.end (a kept call) or the answer's return. */
struct isv__caller *isv__grpc_unary_caller(isv__grpc_unary *u);

/* The model stage (gate.h) for an answer about a model (metadata, readiness, config,
 * statistics): `name`, `version` (NULL: none) are what the answer resolved — call it before
 * answering. 0: go on. ISV__GATE_LATER: return it from `answer`; once the host allows, the
 * answer runs again from the start and this returns 0 for the same model. Another code (with
 * u->err set): the refusal — return it. */
int isv__grpc_unary_model(isv__grpc_unary *u, const char *name, const char *version);

typedef struct isv__grpc_method {
  const char *path; /* "/package.Service/Method" */
  isv__rpc_kind kind;
  /* Either this (UNARY only): 0 with *u->out filled, or an ISV_E* code with u->err set. */
  int (*answer)(isv__grpc_unary *u);
  /* Or these: a message into a request (model named in it; 0 or the ISV_E* code with r
   * failed — the core still reports an unknown model first), ... */
  int (*decode)(isv_request *r, const uint8_t *msg, size_t len);
  /* ... a finished request's response message, or one response of a decoupled model (a
   * request whose parent is set) on a stream: 0 (parts->n 0: nothing to send), or
   * ISV_ENOMEM, or another ISV_E* code with r failed (its message is the call's), ... */
  int (*encode)(isv_request *r, isv__parts *out);
  /* ... and, for methods that carry errors in their messages, an error message for the
   * ISV_E* code `status`. NULL: an error ends the call with its status. */
  int (*encode_error)(int status, const char *message, isv__buf *out);
  /* Optional, with decode: run on the loop thread before decode (which runs on a worker
   * thread for a large message): name r's model from the message and bind it
   * (isv__request_bind), or fail r with the protocol's own words for an unknown model — for a
   * decoder that needs the model (TF Serving's signatures) and must not touch the registry off
   * the loop. */
  int (*bind)(isv_request *r, const uint8_t *msg, size_t len);
} isv__grpc_method;

typedef struct isv__grpc_entry {
  const isv__grpc_method *method;
  size_t path_len;   /* strlen(method->path): most entries are told apart by it alone */
  unsigned protocol; /* label index of the requests it makes */
} isv__grpc_entry;

struct isv__grpc_services {
  isv__core *core;
  struct isv__gate *gate; /* the edge's judge (gate.h); NULL: none */
  isv__grpc_entry *entries;
  size_t n, cap;
  size_t last; /* the entry the last call found: looked at first (a client calls one method) */
};

void isv__grpc_services_init(isv__grpc_services *s, isv__core *core);
void isv__grpc_services_free(isv__grpc_services *s);
/* Serve m (not copied: a static table) with requests counted under `protocol_label`.
 * ISV_EEXIST when its path is already served, ISV_EINVAL for an inconsistent method. */
int isv__grpc_services_add(isv__grpc_services *s, const isv__grpc_method *m,
                           const char *protocol_label);
/* Stop serving m (calls already running go on). */
void isv__grpc_services_remove(isv__grpc_services *s, const isv__grpc_method *m);
/* Whether some method of `service` ("package.Service") is served. */
int isv__grpc_services_has(const isv__grpc_services *s, const char *service);
/* A new call from the transport: its method takes it, or it ends UNIMPLEMENTED. */
void isv__grpc_services_dispatch(isv__grpc_services *s, isv__grpc_call *call);

#endif
