/* One HTTP exchange (request in, one response out), the same type for HTTP/1.1 and HTTP/2 —
 * and for anything else that carries HTTP (a host's own server): whoever fills it sets
 * `respond`, and `write` and `end` when it can stream. All of it runs on the loop thread.
 *
 * A protocol handler answers it exactly once — at once or later — in one of two ways:
 *  - whole: isv__exchange_respond() with `more` = 0. The handler must not touch ex afterwards.
 *  - streamed (Server-Sent Events, a long answer made as it goes): isv__exchange_respond() with
 *    `more` = 1 sends the status and headers (and the first piece of the body, maybe none);
 *    then any number of isv__exchange_write(), each piece sent as soon as the connection takes
 *    it; then isv__exchange_end() exactly once, whatever the calls before it returned. The
 *    handler must not touch ex after end. HTTP/1.1 frames the pieces as chunks
 *    (Transfer-Encoding: chunked); an HTTP/1.0 client gets a body that ends when the connection
 *    closes; HTTP/2 sends them as DATA frames, END_STREAM at the end. A HEAD request gets the
 *    head only: its pieces are dropped (written "successfully"), and the connection goes on
 *    with the next request as soon as the head is out.
 *
 * The client may go away first (it closed or reset the connection, half-closed an HTTP/1.1
 * connection, reset its HTTP/2 stream; or the connection was dropped: a send timeout, the
 * drain deadline): while ex is pending (not yet answered) or streaming (not yet ended), the
 * carrier then calls ex->on_cancel once, if the handler set it — never after the handler
 * ended its answer (respond without `more`, or end). The handler still answers it exactly once
 * as above. What it answers is still written while the connection takes it (a client that only
 * half-closed may read on); once the carrier let go of ex it is dropped: bodies are released at
 * once, writes return ISV_ECANCELED. on_cancel may run inside one of the handler's own calls to
 * isv__exchange_* (for this exchange or another) when that call is what finds the connection
 * broken. HTTP/1.1 hears a client leave while it reads, which it stops doing after 64 KiB of
 * pipelined requests; past that, only a failed write tells.
 *
 * The carrier frees ex once it is answered (or ended) and written, or dropped. */
#ifndef ISV_TRANSPORT_EXCHANGE_H
#define ISV_TRANSPORT_EXCHANGE_H

#include "transport/layer.h"

#include "codec/budget.h"

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "codec/mem.h"
#include "inferserve.h" /* isv_access_entry, isv_mem */

typedef enum {
  ISV__M_OTHER = 0,
  ISV__M_GET,
  ISV__M_HEAD,
  ISV__M_POST,
  ISV__M_PUT,
  ISV__M_DELETE,
  ISV__M_OPTIONS
} isv__method;

#define ISV__EXTRA_HEADERS 3

/* "[ffff:...:ffff]:65535" and its NUL fit */
#define ISV__PEER_LEN 56

typedef struct isv__header {
  const char *name;
  size_t name_len;
  const char *value;
  size_t value_len;
} isv__header;

typedef struct isv__exchange isv__exchange;

typedef struct isv__response {
  int status;
  const char *content_type;   /* NULL = no Content-Type */
  const isv__header *headers; /* extra headers, copied before respond returns */
  size_t n_headers;
  const uv_buf_t *parts; /* the body (with `more`: its first piece): referenced until release */
  size_t n_parts;
  void (*release)(void *ctx); /* called once the body was written or dropped; may be NULL */
  void *release_ctx;
  int more; /* 1: the body goes on with isv__exchange_write, until isv__exchange_end */
} isv__response;

/* Where an answer stands (isv__exchange.phase). */
enum { ISV__EX_PENDING = 0, ISV__EX_STREAMING, ISV__EX_DONE };

struct isv__exchange {
  const isv_mem *mem; /* the server's allocator (codec/mem.h), for what answers it */
  isv__method method;
  const char *method_name;
  char *path; /* raw path, NUL-terminated, not percent-decoded */
  size_t path_len;
  char *query; /* after '?', NUL-terminated ("" when none) */
  size_t query_len;
  isv__header *headers;
  size_t n_headers;
  char *body; /* mutable: decoders unescape strings in place */
  size_t body_len;
  /* Who sent it, copied from its connection when the exchange was made (it may outlive the
   * connection): "127.0.0.1:40000", "[::1]:40000", "unix" for a pipe, "" when unknown. */
  char peer[ISV__PEER_LEN];
  /* The subject of the client's TLS certificate (OpenSSL's one-line RFC 2253 form); NULL
   * without TLS or without a certificate. Owned: freed with ex. */
  char *identity;
  /* Set by whoever routes ex (the router, for CORS): headers added to its answer, whichever
   * handler makes it — they point into ex's own headers or static text. */
  isv__header extra[ISV__EXTRA_HEADERS];
  size_t n_extra;
  /* Set by whoever admitted ex (a per-client count): called once when ex is freed. */
  void (*on_free)(void *ctx);
  void *on_free_ctx;
  /* Set by the handler; each may stay NULL. on_cancel: the client is gone (see the top). */
  void (*on_cancel)(isv__exchange *ex);
  /* Set by the handler (may stay NULL): the stream can take more pieces again, once after
   * isv__exchange_writable said no (see there). */
  void (*on_writable)(isv__exchange *ex);
  void *app;
  void *edge; /* the protocol layer's record of who sent it (protocol/edge.c); freed by on_free */
  isv__budget *held_budget; /* what its decoded body holds of the receiving budget, given back */
  size_t held;              /* when ex is freed (isv__exchange_hold_budget) */
  /* transport-private */
  void *conn; /* the carrier's; NULL once it let go of ex (the client is gone, or HEAD's head
               * is out): what is answered then goes into the void */
  int (*respond)(isv__exchange *ex, const isv__response *resp);
  /* NULL when the carrier cannot stream (respond with `more` is then ISV_EUNIMPL) */
  int (*write)(isv__exchange *ex, const uv_buf_t *parts, size_t n, void (*release)(void *),
               void *ctx);
  int (*end)(isv__exchange *ex);
  /* NULL: the carrier queues without bound (isv__exchange_writable always says yes) */
  int (*writable)(isv__exchange *ex);
  int phase;      /* ISV__EX_*: the carrier moves it as the handler answers */
  int cancelled;  /* the carrier let go of it while it was pending or streaming */
  unsigned refs;  /* the carrier's writes and queued pieces that still point into it */
  char *storage;  /* path, query and header text */
  size_t block;   /* nonzero: headers and storage live in ex's own allocation of this many
                   * bytes (http1.c), freed with it */
  int body_big;   /* body came from isv__bigbuf_alloc */
  /* the access log (transport.h's handler `access`): set by the carrier when there is one,
   * called when ex is freed; status and bytes_out are what the handler answered */
  void (*access)(void *app, const isv_access_entry *e);
  void *access_app;
  const char *access_proto;
  uint64_t start_ns;
  int status;
  uint64_t bytes_out;
};

/* "GET" -> ISV__M_GET ...; ISV__M_OTHER for the rest. */
isv__method isv__method_of(const char *name);
/* Case-insensitive lookup of the header named (name, n); NULL when absent. */
const isv__header *isv__exchange_header_n(const isv__exchange *ex, const char *name, size_t n);
/* ... of a name given as a string literal (its length known when compiled, no strlen). */
#define isv__exchange_header(ex, lit) isv__exchange_header_n((ex), "" lit "", sizeof(lit) - 1)
/* The trace id of the one valid traceparent in headers[0..n), as 32 hex digits in out; ""
 * when none (the access log's trace_id). Returns out. */
const char *isv__access_trace_id(const isv__header *headers, size_t n, char out[33]);
/* The one header named `name` (len bytes, any case) among headers[0..n): NULL when there is
 * none or more than one — W3C trace context's rule for traceparent (two are neither), which
 * the access log and every front end's request (protocol/trace.c) follow alike. */
const isv__header *isv__header_one(const isv__header *headers, size_t n, const char *name,
                                   size_t len);
/* Answer ex (see the top). The parts are referenced until release(ctx) runs: once written, or
 * at once when they are dropped. 0 — also when the client is gone and the answer is dropped —
 * or a negative ISV_E* code when the carrier failed (the connection is then closed: a streamed
 * answer still needs its end); ISV_EUNIMPL for `more` on a carrier that cannot stream (ex is
 * still pending: answer it whole). */
int isv__exchange_respond(isv__exchange *ex, const isv__response *resp);
/* A streamed answer's next piece, sent as soon as the connection takes it (an empty one sends
 * nothing). The parts are referenced until release(ctx) runs: once written, or at once when the
 * piece is dropped — 0 for HEAD (no body), ISV_ECANCELED once the carrier let go of ex (the
 * client is gone, see the top) or the connection failed. Before a respond with `more`:
 * ISV_ESTATE (release runs too). After the end, ex must not be used at all. */
int isv__exchange_write(isv__exchange *ex, const uv_buf_t *parts, size_t n,
                        void (*release)(void *), void *ctx);
/* Backpressure on a streamed answer: 1 while the pieces written and not yet taken by the
 * client stay under the transport's bounds (limits.max_queued_stream for ex, max_queued_conn
 * for its connection), else 0 — and then ex->on_writable runs once, on the loop thread, when
 * both drained to half their bound (never from inside a call on ex; not at all when the
 * client leaves first: on_cancel runs instead). A write past the bound is still queued: the
 * handler is expected to stop producing until on_writable. 1 once the carrier let go of ex. */
int isv__exchange_writable(isv__exchange *ex);
/* The end of a streamed answer, exactly once — also after failed writes or on_cancel; ex must
 * not be used afterwards. 0; ISV_ESTATE before a respond with `more` (nothing happened). */
int isv__exchange_end(isv__exchange *ex);
/* For carriers: the client is gone while ex is pending or streaming — on_cancel, at most once
 * and never after the answer ended. ex may be freed when it returns (the handler may answer it
 * inside on_cancel). */
void isv__exchange_cancel(isv__exchange *ex);
/* For carriers: free ex once nothing holds it any more — its answer ended (ISV__EX_DONE), its
 * carrier let go of it (conn NULL) and none of the carrier's writes points into it (refs 0).
 * 1 when it was freed. */
int isv__exchange_collect(isv__exchange *ex);
const char *isv__http_reason(int status);
/* For carriers, when the transport has an access log: measure ex from now, and log it (as
 * protocol `proto`) when it is freed. */
void isv__exchange_start_access(isv__exchange *ex, void (*access)(void *, const isv_access_entry *),
                                void *app, const char *proto);
/* Free an exchange the HTTP engines built (storage, body, headers, itself); an answered one
 * goes to the access log first. */
void isv__exchange_free(isv__exchange *ex);
/* The same, but ex's own block (ex->block bytes, with its headers and storage) is kept for the
 * carrier's next exchange: only when isv__exchange_collect would free it. Its memory is left as
 * it is: whoever takes it again clears it. */
void isv__exchange_clear(isv__exchange *ex);
/* ex holds n more bytes of budget b (taken already) until it is freed: its decoded body. */
void isv__exchange_hold_budget(isv__exchange *ex, isv__budget *b, size_t n);

#endif
