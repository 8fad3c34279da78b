/* gRPC calls over HTTP/2 (http2.c): the 5-byte message framing, trailers, deadlines and
 * cancellation. A protocol service sees whole messages and answers with messages and one
 * final status; it never sees frames. */
#ifndef ISV_TRANSPORT_GRPC_H
#define ISV_TRANSPORT_GRPC_H

#include "transport/layer.h"

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

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

  /* Set by the service when the call is handed to it (on_grpc). Each may be NULL. */
  void *app;
  /* One whole message, now the service's: free it with isv__bigbuf_free(). */
  void (*on_message)(isv__grpc_call *call, uint8_t *msg, size_t len);
  /* The client sent its last message. */
  void (*on_half_close)(isv__grpc_call *call);
  /* RST_STREAM, disconnect, or the deadline passed: nothing more will be delivered and
   * whatever is sent is dropped; the service must still call isv__grpc_finish once. */
  void (*on_cancel)(isv__grpc_call *call);
  /* The server is shutting down and no more messages will be delivered: finish once what is
   * in flight is answered (UNAVAILABLE tells the client to go elsewhere). */
  void (*on_drain)(isv__grpc_call *call);

  void *stream; /* transport-private */
};

/* Queue one message made of parts (the 5-byte prefix is added). The parts stay referenced
 * until release(ctx) runs — after they were copied out, or when the call is gone. */
int isv__grpc_send(isv__grpc_call *call, const uv_buf_t *parts, size_t n, void (*release)(void *),
                   void *ctx);
/* End the call with a status and message (percent-encoded into grpc-message). Exactly once;
 * the call must not be used afterwards. Before any message it is a trailers-only response. */
void isv__grpc_finish(isv__grpc_call *call, int status, const char *message);

#endif
