/* Listeners and connections: bytes on sockets → isv__exchange → the handler the server
 * installed. Knows nothing of models or protocols. Loop thread only. */
#ifndef ISV_TRANSPORT_TRANSPORT_H
#define ISV_TRANSPORT_TRANSPORT_H

#include "transport/layer.h"

#include "codec/budget.h"

#include <uv.h>

#include "codec/bigbuf.h"
#include "inferserve.h" /* the ISV_E* codes */
#include "transport/exchange.h"
#include "transport/grpc.h"
#include "transport/h1_quick.h"

typedef struct isv__transport isv__transport;

/* What the transport enforces; the server fills it from its isv_options. */
typedef struct isv__transport_limits {
  size_t max_body_bytes;     /* HTTP body / gRPC message: 413 / RESOURCE_EXHAUSTED beyond */
  size_t max_header_bytes;   /* request line + headers, or an HTTP/2 header block: 431 */
  uint64_t idle_timeout_ms;  /* a connection with no request in progress */
  uint64_t header_timeout_ms; /* a request's head, then each pause of its body: 408 */
  /* 0 in any of the following: no such limit */
  uint64_t send_timeout_ms;  /* a response that makes no progress this long is dropped */
  uint64_t drain_timeout_ms; /* isv__transport_close: connections still open after it closed */
  size_t min_body_rate;      /* bytes/s a body must average once min_rate_grace_ms passed */
  uint64_t min_rate_grace_ms;
  size_t max_receiving;      /* request bytes being received, all connections together */
  uint64_t tls_handshake_timeout_ms; /* a TLS client's handshake must be done within it */
  unsigned max_connections;
  /* a streamed answer's bytes queued and not yet written (pieces, messages), per stream and per
   * connection: past either, isv__exchange_writable / isv__grpc_writable say wait (0: none) */
  size_t max_queued_stream;
  size_t max_queued_conn;
} isv__transport_limits;
typedef struct isv__conn isv__conn;

/* Work the transport moves off the loop thread (http1.c: faulting in a fresh body block). */
typedef struct isv__transport_job isv__transport_job;
struct isv__transport_job {
  void (*work)(isv__transport_job *j); /* on a worker thread: touches nothing of the loop's */
  void (*done)(isv__transport_job *j); /* then on the loop thread, never before offload returns */
};

/* Where the transport hands its work, all on the loop thread: */
typedef struct isv__transport_handler {
  void *app;
  /* A whole request to answer (isv__exchange_respond), now or later. */
  void (*exchange)(void *app, isv__exchange *ex);
  /* A request the transport refuses before handing it over — a limit (413, 431), a timeout
   * (408), malformed HTTP (400, 505): the app answers ex with `status` and `msg` in the shape of
   * the protocol ex's path belongs to. ex->path is NULL when the request line was not read. */
  void (*error)(void *app, isv__exchange *ex, int status, const char *msg);
  /* A new gRPC call: the handler sets call->app and the callbacks, or finishes it at once. */
  void (*grpc)(void *app, isv__grpc_call *call);
  /* Something the host should know (a limit reached): level is an isv_log_level. */
  void (*log)(void *app, int level, const char *msg);
  /* One request answered (an access log); NULL: none, and nothing is measured for it. */
  void (*access)(void *app, const isv_access_entry *e);
  /* Run j->work on a worker thread, then j->done here. 0, or nonzero when it cannot (nothing
   * ran: the caller does without). NULL: there are no worker threads. */
  int (*offload)(void *app, isv__transport_job *j);
} isv__transport_handler;

#define ISV__MAX_LISTENERS 16
#define ISV__READ_BUF (256u * 1024u)
#define ISV__TLS_PLAIN (64u * 1024u)  /* plaintext taken from SSL_read at a time */
#define ISV__TLS_RECORD (16u * 1024u) /* TLS's largest record of plaintext */

typedef struct isv__listener {
  uv_tcp_t tcp;
  isv__transport *t;
  int port;
  void *tls_ctx; /* its TLS configuration (tls.c; a reference), NULL: plain */
} isv__listener;

/* A few freed blocks of one kind, the last freed on top (isv__transport.h1_warm_*). */
#define ISV__H1_WARM 4
typedef struct isv__h1_warm {
  void *block[ISV__H1_WARM];
  unsigned n;
} isv__h1_warm;

struct isv__transport {
  uv_loop_t *loop;
  isv__transport_limits limits;
  isv__transport_handler h;
  isv__bigbuf_cache *bufs; /* large bodies and messages; may be NULL */
  const isv_mem *mem;      /* every other allocation (codec/mem.h); NULL: libc's */
  uint64_t slice_budget_ns; /* ISV__SLICE_BUDGET_NS (conn.h); tests set 0: two reads and one
                             * write slice per turn */
  int reuse_port; /* listeners bind with SO_REUSEPORT: other servers may listen on their ports */
  int reuse_port_first; /* ...but the next listen is the address's first: it must be free (a
                         * plain bind is tried first), so that SO_REUSEPORT never quietly
                         * shares a port with another process */
  isv__listener *listeners[ISV__MAX_LISTENERS];
  unsigned n_listeners;
  isv__conn *conns; /* doubly linked */
  isv__conn *idle_head, *idle_tail; /* those without a request in flight, not closing: oldest
                                     * idle first (isv__conn_idle) */
  unsigned n_conns;
  unsigned n_closing;  /* of n_conns: closed, their handles not yet */
  unsigned n_hosted;   /* exchanges and calls the host's own server carries (adapter.c) */
  struct isv_grpc_call *hosted_calls; /* of those, the gRPC calls at work: told to drain */
  int at_limit;        /* the connection limit was reached (logged once until it is not) */
  isv__budget receiving; /* request bytes held by bodies and messages still arriving, and by
                          * decoded bodies (the protocol layer charges them: isv__core.receiving) */
  unsigned open_handles; /* listeners (and the drain timer) being closed */
  uv_timer_t drain;       /* isv__transport_close's deadline */
  int drain_armed;
  int closing;
  void (*on_closed)(isv__transport *t);
  char rbuf[ISV__READ_BUF]; /* shared: libuv reads into it and we consume it at once */
  /* TLS's (tls.c), shared the same way: the plaintext SSL_read gives, consumed at once, and an
   * answer's small parts gathered into one record. Here, not per thread: a library's static
   * thread-local storage is set up at the creation of every thread of the host, which paid
   * 80 KiB of resident memory per thread for them. */
  char tls_plain[ISV__TLS_PLAIN];
  char tls_stage[ISV__TLS_RECORD];
  isv__h1_quick_memo h1_memo; /* the last HTTP/1.1 head read quickly (h1_quick.h) */
  /* Blocks of HTTP/1.1 exchanges and writes that ended (http1.c), the last let go of on top:
   * the next request on any of the loop's connections takes one still in the CPU's cache, where
   * a connection's own spare was last touched a round of the other connections ago (with the
   * write callbacks run as each read ends, conn.c: 36 of a request's 96 L1d misses at 16
   * connections, bench/RESULTS.md "Warm blocks"). Freed with the last HTTP/1.1 engine. */
  isv__h1_warm h1_warm_ex, h1_warm_write;
  unsigned n_h1; /* HTTP/1.1 engines alive */
  char last_error[256];
};

void isv__transport_init(isv__transport *t, uv_loop_t *loop, const isv__transport_limits *limits,
                         const isv__transport_handler *h);
int isv__transport_listen(isv__transport *t, const char *host, int port);
/* The same with TLS: tls_ctx (tls.h's reference) is the listener's from now, even when this
 * fails (it is dropped then). */
int isv__transport_listen_tls(isv__transport *t, const char *host, int port, void *tls_ctx);
/* The index-th listener's TLS configuration replaced (a reload): new handshakes use tls_ctx,
 * open connections keep theirs. ISV_EINVAL (tls_ctx dropped) for a plain listener or a wrong
 * index. */
int isv__transport_set_tls(isv__transport *t, unsigned index, void *tls_ctx);
/* Serve a connection accepted elsewhere; on_closed(stream) runs once the library closed it
 * (NULL: nothing runs), even when this fails. */
int isv__transport_adopt(isv__transport *t, uv_stream_t *stream, uv_close_cb on_closed);
/* Stop accepting; close idle connections now and busy ones after their response — or at the
 * drain deadline, whichever comes first; then on_closed (possibly before this returns). */
void isv__transport_close(isv__transport *t, void (*on_closed)(isv__transport *t));
/* Make room for one more connection under max_connections: when the limit is reached, close
 * the connection idle the longest — no request in flight: silent since its accept, in its TLS
 * handshake or HTTP/2 preface, still sending a request's head, or between keep-alive requests
 * (nginx's reuse of keep-alive connections, extended to those that never finished a request) —
 * so that clients that hold connections without asking anything cannot lock new ones out. A
 * connection with a request in flight is never closed. O(1). 0, or -1 when every connection is
 * busy. */
int isv__transport_make_room(isv__transport *t);
/* conn.c: a connection is gone (its handles closed). */
void isv__transport_conn_gone(isv__transport *t);

#endif
