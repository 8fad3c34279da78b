/* The gRPC seam: a call is whole messages in, messages and one final status out. The HTTP/2
 * transport (http2.c) carries calls over h2c — framing, trailers, deadlines, cancellation —
 * and anything else that can deliver whole messages (a host's own gRPC stack, a test) can
 * carry them too, by filling `send` and `finish`. A service never sees frames. */
#ifndef ISV_TRANSPORT_GRPC_H
#define ISV_TRANSPORT_GRPC_H

#include "transport/layer.h"

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "codec/zcoding.h"
#include "transport/exchange.h"

/* gRPC status codes used by the library */
enum {
  ISV__GRPC_OK = 0,
  ISV__GRPC_CANCELLED = 1,
  ISV__GRPC_INVALID_ARGUMENT = 3,
  ISV__GRPC_DEADLINE_EXCEEDED = 4,
  ISV__GRPC_NOT_FOUND = 5,
  ISV__GRPC_RESOURCE_EXHAUSTED = 8,
  ISV__GRPC_UNIMPLEMENTED = 12,
  ISV__GRPC_INTERNAL = 13,
  ISV__GRPC_UNAVAILABLE = 14
};

typedef struct isv__grpc_call isv__grpc_call;

struct isv__grpc_call {
  const char *path; /* "/package.Service/Method", NUL-terminated */
  size_t path_len;
  const isv__header *headers;
  size_t n_headers;
  uint64_t timeout_ms; /* from grpc-timeout; 0 = none */
  isv__coding coding;  /* grpc-encoding: how its compressed messages are coded (gzip, deflate) */
  char peer[ISV__PEER_LEN]; /* who called, as isv__exchange.peer */
  char *identity;           /* as isv__exchange.identity; the carrier's, valid until finish */

  /* Set by the service when the call is handed to it (on_grpc). Each may be NULL. */
  void *app;
  /* One whole message, now the service's: free it with isv__bigbuf_free(). compressed: its
   * flag said so — its bytes are coded with `coding` (never identity: the carrier ends such a
   * call itself). */
  void (*on_message)(isv__grpc_call *call, uint8_t *msg, size_t len, int compressed);
  /* The client sent its last message. */
  void (*on_half_close)(isv__grpc_call *call);
  /* RST_STREAM, disconnect, or the deadline passed: nothing more will be delivered and
   * whatever is sent is dropped; the service must still call isv__grpc_finish once. */
  void (*on_cancel)(isv__grpc_call *call);
  /* The server is shutting down and no more messages will be delivered: finish once what is
   * in flight is answered (UNAVAILABLE tells the client to go elsewhere). */
  void (*on_drain)(isv__grpc_call *call);
  /* Once after isv__grpc_writable said no: the call can take more messages (as
   * isv__exchange_writable's on_writable; on_cancel instead when it is gone first). */
  void (*on_writable)(isv__grpc_call *call);

  /* Set by the carrier. send: queue one message made of parts; they stay referenced until
   * release(ctx) runs — after they were written, or at once when the call is gone (then
   * ISV_ECANCELED). finish: end the call with a status and message, exactly once; the call
   * must not be used afterwards (the carrier may free it). */
  int (*send)(isv__grpc_call *call, const uv_buf_t *parts, size_t n, void (*release)(void *),
              void *ctx);
  void (*finish)(isv__grpc_call *call, int status, const char *message);
  /* As send, for a message whose bytes the service coded with answer_coding (its flag says
   * compressed). NULL: the carrier sends no compressed messages (the service does not try). */
  int (*send_compressed)(isv__grpc_call *call, const uv_buf_t *parts, size_t n,
                         void (*release)(void *), void *ctx);
  /* Set by the service before its first send: the coding its compressed messages use (gzip or
   * deflate), which the carrier names in the response's grpc-encoding. Identity: none. */
  isv__coding answer_coding;
  /* backpressure (isv__grpc_writable); NULL: the carrier queues without bound */
  int (*writable)(isv__grpc_call *call);
  void *carrier; /* the carrier's own state (http2.c: the stream) */
};

static inline int isv__grpc_send(isv__grpc_call *call, const uv_buf_t *parts, size_t n,
                                 void (*release)(void *), void *ctx) {
  return call->send(call, parts, n, release, ctx);
}
/* 1 while the messages sent and not yet taken by the client stay under the transport's
 * bounds (per call, per connection); else 0, and call->on_writable runs once when they drained
 * to half (isv__exchange_writable's rules). */
static inline int isv__grpc_writable(isv__grpc_call *call) {
  return call->writable ? call->writable(call) : 1;
}
static inline int isv__grpc_send_compressed(isv__grpc_call *call, const uv_buf_t *parts,
                                            size_t n, void (*release)(void *), void *ctx) {
  return call->send_compressed(call, parts, n, release, ctx);
}
static inline void isv__grpc_finish(isv__grpc_call *call, int status, const char *message) {
  call->finish(call, status, message);
}

#endif
