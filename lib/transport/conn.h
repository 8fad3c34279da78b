/* A client connection: the socket, its timer, its writes, read batching, and the choice of
 * protocol. The first bytes decide: the HTTP/2 connection preface goes to the HTTP/2 engine
 * (http2.c), anything else to the HTTP/1.1 engine (http1.c) — llhttp would half-parse a partial
 * preface, so it never sees one. From then on the engine gets the bytes and events through
 * isv__conn_proto and does ALL its I/O and reads ALL its time through the connection's seam,
 * isv__conn_io (below): no engine calls libuv on the stream, reads uv_now, or owns a timer, and
 * neither engine knows the other.
 *
 * The seam has two implementations. conn.c's (isv__conn_uv_io) is the socket on the host's loop:
 * one uv_timer_t serves the engine's deadline (idle, header, body: isv__conn_deadline), the
 * read-batching watchdog, and the write check (a connection whose writes make no progress for
 * the send timeout — a client that stopped reading — is closed with a reset, so that the kernel
 * drops the bytes queued for it) and TLS's quiet check (tls.h: an idle connection's buffers
 * given back), armed at the earliest — lazily: it is moved only when something
 * falls due sooner than it is set for (a keep-alive request moves no timer). A small write with
 * nothing pending goes to the kernel at once (uv_try_write: no POLLOUT watcher to stop, so no
 * epoll_ctl per answer), its callback still on a later phase of the loop. memconn.c's is memory: bytes in from
 * the caller, bytes out into a buffer, a clock the caller moves — tests and fuzzers drive the
 * engines with no socket and no loop (transport/memconn.h). */
#ifndef ISV_TRANSPORT_CONN_H
#define ISV_TRANSPORT_CONN_H

#include "transport/layer.h"

#include "transport/transport.h"

#define ISV__H2_PREFACE "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
#define ISV__H2_PREFACE_LEN 24

/* What a protocol engine implements. Every callback runs on the loop thread; c->proto_state
 * is the engine's. After isv__conn_close() no callback but free runs. */
typedef struct isv__conn_proto {
  const char *name;
  /* Take over the connection; `data` holds the bytes read so far (the sniffed ones). 0, or
   * nonzero after closing the connection. */
  int (*start)(isv__conn *c, const char *data, size_t len);
  /* Where the next read should land (a body read in place); NULL member: the shared buffer. */
  void (*read_buf)(isv__conn *c, uv_buf_t *buf);
  void (*on_read)(isv__conn *c, const char *data, size_t len);
  /* The client half-closed (EOF): answer what it sent, or close. */
  void (*on_eof)(isv__conn *c);
  /* The engine's deadline (isv__conn_deadline) passed. */
  void (*on_deadline)(isv__conn *c);
  /* Graceful close: finish what is in flight, then isv__conn_close. */
  void (*shutdown)(isv__conn *c);
  /* The connection is closing: let go of everything (exchanges answer into the void). */
  void (*free)(isv__conn *c);
} isv__conn_proto;

extern const isv__conn_proto isv__http1_proto;
extern const isv__conn_proto isv__http2_proto;

/* A write's completion: once, on the loop thread (never from inside the write call), when the
 * bytes were taken or the write failed — also when the connection closes meanwhile (status < 0;
 * c is still valid then, closing). */
typedef void (*isv__write_cb)(isv__conn *c, void *ctx, int status);

/* The transport seam: what touches the peer or the clock, one table per kind of connection
 * (c->io). The engines reach it through the isv__conn_* wrappers below — one indirect call, no
 * copy. Bookkeeping against the transport (the idle list, the receiving budget, the body-rate
 * arithmetic, stamping an exchange) is not in the table: it is the same for every seam and
 * works on c->t (conn.c). Each entry's contract is its wrapper's. */
typedef struct isv__conn_io {
  /* the bytes as they go to the peer (TLS records, once tls.c sealed them): isv__conn_write_raw */
  int (*write)(isv__conn *c, const uv_buf_t *bufs, size_t n, isv__write_cb cb, void *ctx);
  void (*deadline)(isv__conn *c, uint64_t ms);
  void (*read_stop)(isv__conn *c);
  void (*read_start)(isv__conn *c);
  void (*batch_reads)(isv__conn *c, size_t must_come);
  void (*close)(isv__conn *c);
  void (*linger_close)(isv__conn *c);
  /* isv__tls_quiet(c) is due `ms` from now: isv__conn_tls_check */
  void (*tls_check)(isv__conn *c, uint64_t ms);
  uint64_t (*now_ms)(const isv__conn *c); /* the deadlines' clock (the loop's uv_now) */
  uint64_t (*now_ns)(const isv__conn *c); /* a fine one, for durations (uv_hrtime) */
} isv__conn_io;

extern const isv__conn_io isv__conn_uv_io; /* conn.c: a libuv stream on the host's loop */

struct isv__conn {
  /* What every request reads or writes, together at the front: with a connection's state
   * spread over its 1 KiB, a request touched a dozen lines of it, each gone cold under the
   * other connections' requests (bench/RESULTS.md, "Warm blocks"). */
  const isv__conn_io *io; /* the seam: conn.c's, or memconn.c's */
  isv__transport *t;
  uv_stream_t *stream;
  const isv__conn_proto *proto; /* NULL until the first bytes chose it */
  void *proto_state;
  void *tls;      /* its TLS state (tls.c); NULL: plain */
  int reading;    /* uv_read_start is in effect */
  int idle;       /* no request in flight: may be closed to make room (isv__conn_idle) */
  int closing;
  int lingering;  /* isv__conn_linger_close: reading only to discard */
  int in_read;    /* inside on_read's delivery */
  int arm_due;    /* the deadline moved inside it: arm() when the delivery ends (conn.c) */
  int read_yield; /* on_alloc gave libuv no buffer: the budget is spent (conn.c) */
  int pump_due;   /* a slice went out: the next goes next loop turn (the timer) */
  uint64_t deadline;      /* the engine's (io->now_ms), 0 = none */
  uint64_t armed;         /* when the timer is set to fire (uv_now ms), 0 = stopped: it is moved
                           * only when something falls due sooner (conn.c, arm) */
  uint64_t watchdog;      /* read batching, 0 = none */
  uint64_t write_check;   /* when to look at write progress, 0 = nothing written */
  uint64_t tls_check;     /* when to ask tls.c whether the connection was quiet, 0 = not due */
  size_t write_pending;   /* bytes handed to io->write whose callback has not run: every seam
                           * keeps it (http2.c's high-water mark and drained-close read it) */
  size_t write_total;     /* bytes ever handed to isv__conn_write (modulo SIZE_MAX + 1) */
  struct conn_write *wq_head, *wq_tail; /* large writes, and those behind them, given to libuv
                                         * a slice at a time (conn.c) */
  uint64_t read_burst_ns;  /* uv_hrtime() when this turn's second read began (the first is not
                            * timed: ISV__BURST_UNSTAMPED); 0: no burst */
  /* A small write the kernel took at once (uv_try_write): its callback waits (a write callback
   * never runs from inside the write call) — for the end of this connection's read callback
   * when the write was made from it (an inline handler answering: on_read runs it once the
   * delivery returns), else for the next turn (`done_idle`: an active idle handle keeps the
   * poll from blocking). At most one: a write is tried only when nothing else is pending. */
  isv__write_cb done_cb;
  void *done_ctx;
  size_t done_len;
  int done_status;
  int done_due; /* 0, or who runs done_cb: on_read as it ends, or done_idle (conn.c) */
  /* the rest: set up once, or touched when something other than a small request happens */
  uv_idle_t done_idle;
  isv__conn *prev, *next;
  isv__conn *idle_prev, *idle_next; /* in the transport's list of idle ones, oldest first */
  uint64_t idle_since;
  uv_tcp_t tcp; /* the stream, when we accepted it ourselves */
  uv_timer_t timer;
  int adopted;
  uv_close_cb adopted_closed; /* the host's, for an adopted stream */
  void *adopted_data;         /* the stream's data before we took it */
  int late;             /* accepted from a closing listener's queue: shut down once its engine
                         * has read what the client sent (listener.c, accept_queued) */
  size_t linger_bytes;
  int handles_open;
  size_t write_mark;      /* bytes the kernel had taken (write_total - queue) at the last look */
  size_t held;            /* bytes of the queued writes not yet given to libuv */
  uint64_t write_burst_ns; /* uv_hrtime() when this turn's first write slice was given out */
  unsigned read_yields;    /* how many times (what tests look at) */
  int lowat;     /* SO_RCVLOWAT in effect (0: never set, i.e. 1) */
  int lowat_off; /* the stream is not a socket that takes it */
  char sniff[ISV__H2_PREFACE_LEN];
  size_t sniff_len;
  char peer[ISV__PEER_LEN]; /* the client's address (isv__exchange.peer), read at the start */
  char *identity; /* its TLS certificate's subject; NULL: none (freed with c) */
};

/* ---- for the engines ---------------------------------------------------------------------- */

/* The engine's deadline: on_deadline runs `ms` from now (0: none). Replaces the previous one.
 * ONE per connection: an engine with many (HTTP/2's streams) keeps them in a heap and gives the
 * seam its earliest. */
static inline void isv__conn_deadline(isv__conn *c, uint64_t ms) { c->io->deadline(c, ms); }
/* The seam's clocks: ms for deadlines (the loop's cached time), ns for durations. */
static inline uint64_t isv__conn_now(const isv__conn *c) { return c->io->now_ms(c); }
static inline uint64_t isv__conn_now_ns(const isv__conn *c) { return c->io->now_ns(c); }

/* Write bufs in order (the array is copied; the memory stays referenced until cb runs). On a
 * socket (conn.c), a large write is handed to the kernel ISV__WRITE_SLICE bytes at a time, and a connection goes on with
 * its next slice in the same loop turn only while its slices of this turn took less than
 * ISV__SLICE_BUDGET_NS (then from the connection's timer, next turn): one response of any size
 * never holds the host's loop much longer than the budget (loopback copies while the reader
 * drains, ~1 ms per MiB on a small VM), and a fast reader still gets several slices per turn.
 * cb runs as isv__write_cb says. 0, or a negative code and cb is NOT called. */
#define ISV__WRITE_SLICE ((size_t)256 << 10)
/* What one queued piece of a streamed answer costs besides its bytes — its write context,
 * uv_write_t, iovecs, the producer's block header — counted against the queue bounds
 * (isv_options_set_max_queued_stream_bytes): a stream of 40-byte events must not queue
 * 100,000 of them under a 4 MiB bound. */
#define ISV__QUEUED_PIECE_COST ((size_t)256)
/* A body read in place (the engine's read_buf) is read at most this much per read(); every
 * read, in place or into the shared buffer, is under the same budget: once the connection's
 * reads of this turn took ISV__SLICE_BUDGET_NS, the rest waits for the next loop turn — a read()
 * from loopback keeps copying while the sender fills the socket, and an HTTP/2 engine parses
 * (and copies out) what each read brought. */
#define ISV__READ_SLICE ((size_t)256 << 10)
#define ISV__BURST_UNSTAMPED UINT64_MAX /* read_burst_ns: one read so far, the clock not read */
/* Per connection, per direction, per loop turn (uv_hrtime ns; the transport's slice_budget_ns).
 * A turn's worst is about the budget plus one slice (reads: two, the first read is not timed). */
#define ISV__SLICE_BUDGET_NS ((uint64_t)400 * 1000)
/* Encrypted first on a TLS connection (tls.c), then the seam's write. */
int isv__conn_write(isv__conn *c, const uv_buf_t *bufs, size_t n, isv__write_cb cb, void *ctx);
/* The seam's write itself, whatever TLS does: for tls.c, which writes its records with it. */
static inline int isv__conn_write_raw(isv__conn *c, const uv_buf_t *bufs, size_t n,
                                      isv__write_cb cb, void *ctx) {
  return c->io->write(c, bufs, n, cb, ctx);
}

/* The engine says whether a request is in flight — its head is complete (it is being
 * received, processed or answered) — or not: idle, the connection may be closed to make room
 * under max_connections (isv__transport_make_room). A connection is idle from its accept
 * (silent, in its TLS handshake, its HTTP/2 preface still coming), between keep-alive
 * requests, while a request's head is still arriving, and on HTTP/2 while no stream has a
 * complete header block. The transport keeps the idle ones in a list, oldest idle first. */
void isv__conn_idle(isv__conn *c, int idle);

/* Request bytes being received count against the server's budget (limits.max_receiving): a
 * body or message reserves its size (announced, or as it grows) and releases it once complete
 * or dropped, so that slow uploads cannot hold the server's memory. 0, or -1 when the budget
 * would be exceeded (nothing reserved: answer 503 / UNAVAILABLE). */
int isv__conn_reserve(isv__conn *c, size_t n);
void isv__conn_release(isv__conn *c, size_t n);

/* A body that has been arriving for `elapsed_ms` with `got` bytes so far: 0 while it keeps the
 * minimum rate — it may take the grace period plus one second per min_body_rate bytes received
 * (Apache mod_reqtimeout's MinRate) — or -1 when it is too slow (answer 408). */
int isv__conn_body_too_slow(const isv__conn *c, uint64_t elapsed_ms, size_t got);
/* The deadline (ms from now) for the next bytes of that body: the header timeout, or sooner
 * the moment it becomes too slow if nothing more comes — a body that stops altogether is cut
 * once the minimum rate's allowance is spent, not a header timeout later. At least 1. */
uint64_t isv__conn_body_deadline(const isv__conn *c, uint64_t elapsed_ms, size_t got);

/* Reading: pause (pipelined work waits) and resume. */
static inline void isv__conn_read_stop(isv__conn *c) { c->io->read_stop(c); }
static inline void isv__conn_read_start(isv__conn *c) { c->io->read_start(c); }

/* Read batching: while a large body (HTTP/1.1, known length) or gRPC message (HTTP/2) is half
 * received, SO_RCVLOWAT asks the kernel to wake the loop only once min(what must still come,
 * ISV__LOWAT_MAX) is queued, instead of for every segment (which also costs the sender a
 * wake-up on loopback). The mark is only ever set to bytes the client must send to finish what
 * it started; a client that pauses anyway is heard after ISV__LOWAT_WATCHDOG_MS, when the
 * watchdog drops the mark back to 1. */
#define ISV__LOWAT_MIN (32u << 10)
#define ISV__LOWAT_MAX (512u << 10)
#define ISV__LOWAT_WATCHDOG_MS 5
/* The mark itself (1: wake for every byte; a libuv connection only). */
void isv__conn_set_lowat(isv__conn *c, int bytes);
/* After a read: `must_come` bytes are still owed by the client (0: nothing known). Sets the mark
 * to min(must_come, ISV__LOWAT_MAX) when that is at least ISV__LOWAT_MIN, else 1, and (re)arms
 * the watchdog while it is above 1 (memory: only recorded). */
static inline void isv__conn_batch_reads(isv__conn *c, size_t must_come) {
  c->io->batch_reads(c, must_come);
}

/* Close now (idempotent): the engine's free runs, then the handles close. */
static inline void isv__conn_close(isv__conn *c) { c->io->close(c); }
/* Close after the last response when the client may still be sending (an error answered
 * before its body was read): shut down writing (FIN), then read and discard for up to
 * ISV__LINGER_MS or ISV__LINGER_BYTES before closing — nginx's lingering close. Closing at once
 * with unread input makes the kernel send a reset, and the client may lose the answer. The
 * engine's free runs first. */
#define ISV__LINGER_MS 2000
/* How long a connection accepted from a closing listener's queue may stay silent. */
#define ISV__LATE_MS 1000
#define ISV__LINGER_BYTES (1u << 20)
static inline void isv__conn_linger_close(isv__conn *c) { c->io->linger_close(c); }

/* For tls.c: run isv__tls_quiet(c) `ms` from now (on the connection's timer; ms > 0), and again
 * as often as it asks. */
static inline void isv__conn_tls_check(isv__conn *c, uint64_t ms) { c->io->tls_check(c, ms); }

/* Stamp an exchange with who sent it: the peer's address and a copy of its TLS identity. 0,
 * or ISV_ENOMEM (the identity could not be copied: the exchange has none). */
int isv__conn_stamp(const isv__conn *c, isv__exchange *ex);

/* ---- for the seams ------------------------------------------------------------------------- */

/* Plaintext that came from the peer (read from the socket, decrypted by tls.c, or fed by
 * memconn.c): the sniff that chooses the engine, then the engine's on_read. */
void isv__conn_deliver(isv__conn *c, const char *data, size_t len);
/* The seam's timer at `now` (its ms clock): TLS's quiet check if it is due, and the next one if
 * tls.c asks for it. */
void isv__conn_tls_due(isv__conn *c, uint64_t now);

/* ---- for the transport (listener.c) -------------------------------------------------------- */

isv__conn *isv__conn_new(isv__transport *t, uv_stream_t *stream, int adopted);
void isv__conn_start(isv__conn *c);
void isv__conn_shutdown(isv__conn *c); /* graceful */

#endif
