/* Shared by the transport tests (test_http1, test_http2, test_conn, test_listener), in one of
 * two modes chosen by the setup function:
 *   - sockets (tf_setup: test_conn, test_listener — what they test IS the socket): a real
 *     isv__transport on a uv loop, serving connections adopted from one end of a socketpair
 *     (wrapped in a uv_pipe_t, as fuzz/conn_harness.c does with the public server); a uv_poll_t
 *     on the other end reads what the server writes, so tf_run_until() can block in the loop
 *     until a condition holds;
 *   - memory (tf_setup_mem: test_http1, test_http2 — the engines): no socket and no loop. Each
 *     connection is an isv__memconn (transport/memconn.h) the fixture feeds and reads, and time
 *     is a fake clock (w->clock, ms): tf_run_until() does what is due now (bytes each way, write
 *     completions), and when nothing is, moves the clock to the next deadline — the engines'
 *     (through the seam) or the test handler's timers (tf_timer) — and fires it. Nothing waits
 *     for real time; a condition that can no longer come true fails at once.
 * Both serve a test handler that records what the transport hands it and answers it. The client
 * speaks raw bytes for HTTP/1.1, or an nghttp2 client session for HTTP/2; tests read the same in
 * both modes.
 *
 * The handler (tf_world):
 *   exchange — recorded; answered 200 text/plain "<METHOD> <path>[?<query>][ <body>]" (a body
 *              over TF_ECHO_MAX bytes as "<N bytes HASH>"): at once, from a 5 ms uv_timer when
 *              the path starts with "/slow", or when the test calls tf_answer_held() when it
 *              starts with "/hold". A path that starts with "/stream" is answered streamed
 *              (isv__exchange_write, tf_streamed): "/stream/manual..." with no first piece,
 *              then what the test writes (tf_stream_write) until it ends it (tf_stream_end);
 *              any other "/stream..." with "<METHOD> <path>\n" first, then from a 1 ms
 *              repeating timer an empty write and TF_STREAM_PIECES pieces "piece <i>\n", then
 *              the end. Every exchange's on_cancel is recorded in its tf_rec (and asserted to
 *              come at most once, and never after the answer ended); the answer still comes.
 *   error    — recorded; answered with the status and the message as a text/plain body;
 *   grpc     — recorded; "/test.Echo/Unary" answers "pong:" + the messages joined with ','
 *              (large ones as "<N bytes HASH>") and OK ("all good")
 *              once the client half-closes, "/test.Echo/Fail" finishes at once with NOT_FOUND
 *              and a message, anything else ("/test.Echo/Hold") waits for on_cancel and
 *              finishes from a uv_timer after it.
 * Every callback also appends a line to the world's event log, so tests can check the order of
 * what happened.
 *
 * No timing assertion anywhere: a guard (10 s, of real or fake time) fails a test whose
 * condition never holds. */
#ifndef ISV_TESTS_TRANSPORT_FIXTURE_H
#define ISV_TESTS_TRANSPORT_FIXTURE_H

#include <nghttp2/nghttp2.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "transport/conn.h"
#include "transport/memconn.h"
#include "transport/transport.h"

#define TF_MAX_RECS 16
/* Bodies and messages longer than this are echoed as "<N bytes HASH>" (HASH: tf_hash, %08x). */
#define TF_ECHO_MAX 1024
#define TF_MAX_CLIENTS 8
#define TF_MAX_STREAMS 8
#define TF_MAX_CALLS 8
#define TF_MAX_STREAMED 8
#define TF_STREAM_PIECES 3

enum { TF_EXCHANGE = 1, TF_ERROR, TF_GRPC };

/* What the handler was handed, copied. */
typedef struct tf_world tf_world;

/* The test handler's own timers: a uv_timer_t with sockets, an entry on the fake clock in
 * memory. */
typedef struct tf_timer tf_timer;
struct tf_timer {
  tf_world *w;
  void (*cb)(tf_timer *t);
  void *data;
  int open;          /* initialised (and, with sockets, its handle to close) */
  uv_timer_t uv;     /* sockets */
  int active;        /* memory: armed at `due`, then every `repeat` ms (0: once) */
  uint64_t due, repeat;
};

typedef struct tf_rec {
  tf_world *w;
  int kind;
  int status; /* TF_ERROR */
  char msg[256];
  isv__method method;
  char method_name[32];
  int has_path; /* path was not NULL */
  char path[256];
  size_t path_len;
  char query[256];
  size_t query_len;
  char headers[2048]; /* "name: value\n" each, in order */
  size_t n_headers;
  char body[4096]; /* its start */
  size_t body_len;
  uint32_t body_hash; /* tf_hash of the whole body */
  uint64_t timeout_ms; /* TF_GRPC */
  int coding;          /* TF_GRPC: the call's grpc-encoding (isv__coding) */
  int cancels;  /* TF_EXCHANGE: on_cancel calls */
  int answered; /* TF_EXCHANGE: responded whole, or its streamed answer ended */
} tf_rec;

/* A streamed answer as the test handler holds it. */
typedef struct tf_streamed {
  tf_world *w;
  isv__exchange *ex; /* NULL once ended */
  int rec;
  int manual;
  int next; /* timer-driven: the next piece */
  int ended;
  int handed, released; /* pieces given to the exchange, and released by it */
  int last_rc;          /* of the last isv__exchange_write */
  tf_timer timer;
} tf_streamed;

/* A gRPC call as the test service holds it. */
typedef struct tf_call {
  tf_world *w;
  isv__grpc_call *call;
  int rec;
  char msgs[1024]; /* the messages, joined with ',' */
  size_t msgs_len;
  int n_msgs;
  int half_closed, cancelled, finished;
  tf_timer finish_timer; /* finishes a cancelled call a little later */
} tf_call;

/* One HTTP/2 stream as the client sees it. */
typedef struct tf_h2_stream {
  int32_t id;
  int status;         /* :status */
  char ctype[64];     /* content-type */
  int grpc_status;    /* -1: none */
  char grpc_message[256];
  int grpc_in_trailers; /* grpc-status came in trailers (else trailers-only) */
  char body[8192];
  size_t body_len; /* of body: what fits of the DATA */
  size_t data_len; /* all of the DATA */
  int closed;
  int has_clen;       /* a content-length header came */
  int data_frames;    /* DATA frames received */
  int data_end_stream; /* END_STREAM came on a DATA frame */
  uint32_t error_code; /* of its close: NGHTTP2_NO_ERROR, ... */
  int rst_received;
  /* the request body the data provider sends */
  const uint8_t *req;
  size_t req_len, req_off;
  int keep_open; /* no END_STREAM after the body */
} tf_h2_stream;

typedef struct tf_client {
  tf_world *w;
  int index;
  int fd; /* the client's end; -1 once closed (memory: 0 while open) */
  isv__memconn *mc; /* memory: the server's end */
  uv_pipe_t *pipe;  /* the server's end, adopted (freed by its close callback) */
  int marker;       /* pipe->data before adopt: the close callback must see it again */
  int adopt_rc;
  int stream_closed; /* the close callback ran (with data == &marker) */
  uv_poll_t poll;
  int poll_open;
  int poll_events; /* what the poll handle waits for now */
  int paused;      /* tf_pause_reading: the client reads nothing */
  char *out; /* written by the client, not yet taken by the socket */
  size_t out_len, out_off, out_cap;
  int shut_pending; /* SHUT_WR once out is written */
  int write_failed; /* the server closed before taking all of it */
  char *in; /* what the server wrote */
  size_t in_len, in_cap;
  int eof;   /* the server closed its end (EOF or ECONNRESET) */
  int reset; /* ... with unread bytes of ours: ECONNRESET */
  nghttp2_session *h2;
  tf_h2_stream streams[TF_MAX_STREAMS];
  int n_streams;
  int goaway_received;
  int32_t goaway_last[4]; /* the last-stream-id of each GOAWAY, in order (the first 4) */
  int n_goaways;
} tf_client;

#define TF_MAX_TIMERS 32

struct tf_world {
  int mem;         /* memory mode (tf_setup_mem) */
  uint64_t clock;  /* memory: the fake clock, ms */
  int mem_closing; /* memory: tf_close_transport was called */
  tf_timer *timers[TF_MAX_TIMERS]; /* memory: every tf_timer initialised */
  int n_timers;
  uv_loop_t loop;  /* sockets */
  isv__transport t;
  uv_timer_t guard;
  int guard_fired;
  int transport_closed;
  tf_rec recs[TF_MAX_RECS];
  int n_recs;
  char events[4096]; /* one line per event */
  size_t events_len;
  /* exchanges answered later */
  isv__exchange *held[8];
  int n_held;
  isv__exchange *slow[8];
  int n_slow;
  tf_timer slow_timer;
  tf_streamed streamed[TF_MAX_STREAMED];
  int n_streamed;
  tf_call calls[TF_MAX_CALLS];
  int n_calls;
  tf_client clients[TF_MAX_CLIENTS];
  int n_clients;
};

/* FNV-1a, 32 bits. */
uint32_t tf_hash(const void *p, size_t n);

/* Limits every test starts from; tests change w->t.limits before connecting. */
void tf_default_limits(isv__transport_limits *l);
/* cmocka setup/teardown: *state is a tf_world. Teardown closes every client, answers what is
 * held, closes the transport and checks that the loop has no handle left. */
int tf_setup(void **state);
int tf_setup_mem(void **state);
int tf_teardown(void **state);

/* The server's end of a client's connection, and how many are not closed (either mode). */
isv__conn *tf_server_conn(tf_client *c);
int tf_open_conns(tf_world *w);
/* Work the transport offers the pool (w->t.h.offload = tf_hold_job): held, not run, until the
 * test runs it (tf_run_held_job: work, then done) — so it sees the state while it is pending. */
extern isv__transport_job *tf_held_job;
extern int tf_jobs_offered;
int tf_hold_job(void *app, isv__transport_job *j);
void tf_run_held_job(void);

/* isv__transport_close, recording its callback (teardown checks that it ran once). Memory: each
 * connection's isv__conn_shutdown, as the transport's close does; "closed" once all are. */
void tf_close_transport(tf_world *w);

/* A new client connection adopted by the transport (asserts adopt returned `want_rc`). */
tf_client *tf_connect(tf_world *w);
tf_client *tf_connect_rc(tf_world *w, int want_rc);
/* Write bytes to the server: queued, and written as the socket takes them (now, or while the
 * loop runs). Never runs the loop itself. */
void tf_write(tf_client *c, const void *data, size_t len);
void tf_write_str(tf_client *c, const char *s);
/* The client half-closes (SHUT_WR) / closes its end. */
void tf_shutdown_write(tf_client *c);
void tf_close_client(tf_client *c);
/* Stop (1) or go on (0) reading what the server writes: its writes then back up. */
void tf_pause_reading(tf_client *c, int paused);
/* While paused: read at most max bytes now (what is there). */
size_t tf_read_some(tf_client *c, size_t max);

/* Run the loop until pred(w, arg) holds; fails the test after 10 s. */
typedef int (*tf_pred)(tf_world *w, void *arg);
void tf_run_until(tf_world *w, tf_pred pred, void *arg);
/* Run the loop for about `ms` (until a timer of that length fired). No assertion on time. */
void tf_run_for(tf_world *w, uint64_t ms);
/* Run the loop without blocking until it has nothing immediate left to do. */
void tf_settle(tf_world *w);
void tf_wait_eof(tf_client *c);
void tf_wait_recs(tf_world *w, int n);
void tf_wait_stream_closed(tf_client *c); /* the adopted stream's close callback */
void tf_wait_in(tf_client *c, const char *needle);   /* the server wrote this */

/* Answer the exchanges held by "/hold" paths, oldest first. */
void tf_answer_held(tf_world *w);
/* Streamed answers, by the order they began: the next piece (a copy of len bytes of data, or
 * of text) and its isv__exchange_write's code; the end. */
int tf_stream_write(tf_world *w, int i, const void *data, size_t len);
int tf_stream_write_str(tf_world *w, int i, const char *text);
/* One piece of data (copied) handed as n parts of lens[0..n) bytes (n <= 64). */
int tf_stream_write_parts(tf_world *w, int i, const void *data, const size_t *lens, size_t n);
void tf_stream_end(tf_world *w, int i);
/* Until recs[rec] heard on_cancel. */
void tf_wait_cancelled(tf_world *w, int rec);
/* Does the event log contain `line` (a whole line)? Its position, or -1. */
int tf_event_pos(const tf_world *w, const char *line);

/* ---- HTTP/1.1 responses as the client read them ------------------------------------------ */

typedef struct tf_resp {
  int status;
  char head[1024]; /* status line and headers */
  char body[4096]; /* chunked: decoded */
  size_t body_len;
  int chunks; /* chunked: the chunks of data (the last, empty one not counted) */
} tf_resp;

/* The complete responses in c->in (interim 1xx ones included), at most max. The body is
 * Content-Length bytes, chunked, or (neither) what came until the server closed. Not for HEAD
 * answers (their head announces a body that does not come). */
int tf_h1_responses(const tf_client *c, tf_resp *out, int max);
/* A header's value ("" when empty), NUL-terminated into buf; NULL when absent. */
const char *tf_resp_header(const tf_resp *r, const char *name, char *buf, size_t cap);
void tf_wait_responses(tf_client *c, int n);

/* ---- HTTP/2 client ----------------------------------------------------------------------- */

/* Start an nghttp2 client session on c (nothing written yet: tf_h2_flush writes the preface
 * and the SETTINGS). */
void tf_h2_start(tf_client *c);
/* Queue a request; body may be NULL. Returns the stream. */
tf_h2_stream *tf_h2_request(tf_client *c, const nghttp2_nv *nv, size_t n, const void *body,
                            size_t len, int keep_open);
/* Write everything the session wants to send. */
void tf_h2_flush(tf_client *c);
/* Bytes the session wants to send, without writing them (for tests that split them). */
size_t tf_h2_take(tf_client *c, uint8_t *out, size_t cap);
void tf_h2_wait_closed(tf_client *c, tf_h2_stream *st);
/* Every stream of c has closed: forget them and the world's records and event log, so that the
 * next requests take their slots (a test that makes thousands). */
void tf_h2_forget(tf_client *c);

#define TF_NV(n, v)                                                                              \
  { (uint8_t *)(n), (uint8_t *)(v), sizeof(n) - 1, sizeof(v) - 1, NGHTTP2_NV_FLAG_NONE }

#endif
