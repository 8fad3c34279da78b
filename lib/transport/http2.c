/* HTTP/2 connections (h2c, prior knowledge) with nghttp2 driven by mem_recv/mem_send, and gRPC
 * calls on top of them.
 *
 * Each stream is either a REST exchange (body collected, then the same isv__exchange as
 * HTTP/1.1) or a gRPC call (content-type application/grpc*: DATA is deframed into whole
 * messages as it arrives, so bidirectional streams work). A REST answer may be streamed
 * (exchange.h): its pieces are queued as they come and leave as DATA frames within the
 * client's windows (read_data defers while the queue is empty), END_STREAM at its end. A
 * RST_STREAM, or the connection's end, cancels an exchange still pending or streaming.
 *
 * Output: nghttp2 produces frames; each flush gathers them into one write (isv__conn_write).
 * While more than ISV__H2_HIGH_WATER bytes are queued in libuv we stop asking nghttp2 for
 * frames; the write callback resumes. Incoming windows are reopened by nghttp2 as data is
 * consumed (copied into its message or body buffer, both bounded by the size limit).
 *
 * Large gRPC messages are read in batches (conn.h, "Read batching"): the low-water mark is
 * what the stream whose DATA came last must still receive to complete its message, bounded by
 * the client's stream and connection windows.
 *
 * Time: the seam gives a connection ONE deadline (isv__conn_deadline); this engine has many —
 * each stream's (its header block must end; grpc-timeout; a REST body that must keep
 * arriving), the connection's own (the idle timeout while no stream is open, the send check
 * while responses are going out) and the shutdown notice's wait. They are entries of one
 * min-heap per connection (codec/timeheap.h, h2->timers) living inside their owners, and the
 * seam's deadline is always the heap's earliest (rearm). No timer handle per stream, nothing to
 * allocate when a deadline is armed: the heap's room is reserved when a stream is created, and
 * a stream that cannot get it is refused like one whose memory could not be had — so no stream
 * is ever without its deadline.
 *
 * A REST body announced (content-length) at ISV__BIGBUF_BLOCK_MIN or more is received into one
 * block of its size, end-aligned as on HTTP/1.1 (a binary tensor at its end is used in place),
 * instead of a buffer doubled as it grows — that copied and faulted 64 MiB on the loop in one
 * turn (163 ms, bench/loop_stall.sh h2c-binary-64MiB). A fresh block — that body's, or a gRPC
 * message's (the deframer stops at it: ISV__DEFRAME_FRESH) — is faulted in on the server's
 * pool first: the connection stops reading meanwhile, and what was already read for the
 * stream waits in st->pend (at most one read's worth).
 *
 * Errors found here before a REST request reaches its handler (431, 413, 408, a gRPC GET) are
 * handed to the transport's error handler with the stream's path, so the protocol that path
 * belongs to answers them in its own shape; gRPC calls end with a gRPC status.
 *
 * nghttp2 must not be re-entered: calls that arrive from inside its callbacks (a service
 * answering synchronously, a stream closing during mem_send) only mark the session for a
 * flush, done when nghttp2 has returned. */
#include <nghttp2/nghttp2.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "codec/numfmt.h"
#include "codec/span.h"
#include "codec/timeheap.h"
#include "codec/zcoding.h"
#include "transport/conn.h"
#include "transport/grpc_frame.h"
#include "transport/h2_fields.h"

#define ISV__H2_HIGH_WATER (1u << 20)
#define ISV__H2_MAX_STREAMS 100
#define ISV__H2_WINDOW (16 << 20)
#define ISV__H2_CONN_WINDOW (64 << 20)
#define ISV__H2_MAX_FRAME (1u << 20) /* what clients may send: 16 frames for 16 MiB, not 1,024 */
/* HPACK lets a few bytes name a large header again and again (a 4 KB table entry costs one
 * byte per repeat), and nghttp2 validates every decoded byte. So a connection may not make the
 * server decode more than ISV__H2_HEADER_RATE bytes of headers a second beyond each stream's
 * first ISV__H2_HEADER_FREE — those cost no more than the request they open, which its own
 * limits bound (a legitimate client at 80k requests a second on one connection, ~200 bytes of
 * headers each, decodes 16 MiB a second: it must not be taken for a flood) — and one that sends
 * ISV__H2_OVERSIZE_BLOCKS header blocks past twice the header limit is closed (GOAWAY
 * ENHANCE_YOUR_CALM). A block past the limit is still decoded to its end — nothing of it past
 * the limit is kept — and answered 431 (a gRPC call: RESOURCE_EXHAUSTED) as on HTTP/1.1:
 * stopping nghttp2 half way (a callback failure) can only reset the stream, INTERNAL_ERROR,
 * and the rate bounds what a connection can make us decode either way. */
#define ISV__H2_OVERSIZE_BLOCKS 4
#define ISV__H2_HEADER_RATE (16u << 20)
#define ISV__H2_HEADER_FREE 4096
#define HEAD_LENS (2 * sizeof(uint32_t)) /* before each header in a stream's head */
/* A stream's head's first block: a gRPC request's (~7 headers, ~300 bytes stored) fits it */
#define HEAD_FIRST ((size_t)512)
/* A shutdown's PING unanswered this long: the final GOAWAY goes anyway; and after it, this
 * long for the streams already open to finish arriving. */
#define ISV__H2_NOTICE_WAIT_MS 500
static const uint8_t drain_ping[8] = {'i', 's', 'v', 'd', 'r', 'a', 'i', 'n'};

typedef struct out_item {
  struct out_item *next;
  void (*release)(void *);
  void *ctx;
  isv__exchange *ex; /* REST: the request, freed with the response (outputs may point into it) */
  size_t n, idx, off;
  unsigned char prefix[5];
  uv_buf_t parts[]; /* parts[0] is the prefix for gRPC messages */
} out_item;

typedef struct h2_stream {
  struct h2 *h2;
  const isv_mem *mem; /* the server's (it may outlive its connection) */
  struct h2_stream *prev, *next;
  int32_t id;
  /* request headers: each its two lengths (uint32_t, HEAD_LENS bytes) then "name\0value\0" */
  isv__buf head;
  size_t n_headers;
  isv__h2_fields fields; /* RFC 9113's rules, made as the fields come (h2_fields.h) */
  int malformed;         /* a rule broken: reset (PROTOCOL_ERROR), nothing more of it used */
  const char *path, *method, *ctype;
  size_t path_len;
  const char *cencoding; /* content-encoding, NULL when absent */
  unsigned n_cencoding;  /* its lines: two are one list (RFC 9110 §5.3), and a list is refused */
  int is_grpc;
  int bad_encoding; /* a grpc-encoding other than identity, gzip and deflate */
  isv__buf body;  /* REST: from isv__bigbuf_alloc when body_big, else doubled as it grows */
  int body_big;
  struct h2_fault *faulting; /* body.data's fresh pages being faulted in on the pool */
  isv__buf pend;  /* ... and the body bytes that came meanwhile */
  int end_pending; /* END_STREAM came while faulting: dispatched once the body is in place */
  isv__grpc_deframer df; /* gRPC */
  isv__grpc_call call;
  isv__header *hdrs; /* for the call / exchange */
  int dispatched;    /* handed to the service / handler */
  int app_done;      /* the service called finish (or the handler responded) */
  int closed;        /* nghttp2 closed the stream */
  int cancelled;
  int in_cancel; /* on_cancel is running: finish must not free the stream under us */
  int remote_closed; /* the client sent END_STREAM */
  int draining;      /* shutting down: no more messages are delivered */
  int headers_too_big;
  int headers_complete; /* the header block ended (END_HEADERS) */
  size_t header_bytes;  /* decoded for this block */
  isv__exchange *ex;
  /* response */
  out_item *q_head, *q_tail;
  int submitted; /* response headers submitted */
  int eof;       /* no more data after the queue */
  int trailer_status;
  char *trailer_msg;
  isv__timed deadline; /* in h2->timers (H2_T_STREAM): the header block must end; gRPC:
                        * grpc-timeout; REST: the body must keep arriving (408) */
  int rst_after_end;    /* answered before the client finished sending: RST once answered */
  size_t reserved;      /* of the server's receiving budget: a REST body, a gRPC message */
  uint64_t body_start;  /* REST: isv__conn_now() when the headers were complete */
  size_t sent;          /* response DATA bytes handed to nghttp2 */
  size_t queued;        /* bytes in the queue (q_head), not yet in a DATA frame (backpressure) */
  size_t pieces;        /* items in the queue: each costs ISV__QUEUED_PIECE_COST more */
  int want_writable;    /* stream_writable said no: on_writable once it drains */
  uint64_t call_start_ns;          /* gRPC, with an access log: when the call was dispatched */
  uint64_t call_in, call_out;      /* gRPC, with an access log: message bytes each way */
  size_t sent_at_check; /* ... at the last send-progress check */
} h2_stream;

/* nghttp2 keeps no closed streams here (nghttp2_option_set_no_closed_streams): kept ones
 * cost 3-7% of the CPU of a small gRPC call (each new stream evicted one closed 100 requests
 * before, cold) and up to 100 of them a connection. Without them nghttp2 would ignore a
 * client's HEADERS on a stream it had ended, where RFC 9113 section 5.1 wants an error: the
 * last H2_ENDED such streams are remembered and a HEADERS on one is answered as nghttp2
 * answers it on the streams it keeps, a connection error STREAM_CLOSED (on_begin_frame).
 * Older ones are ignored; streams that closed before the client ended them are never counted
 * (a trailer may cross our RST_STREAM). DATA on a closed stream is dropped, its bytes counted
 * against the connection's window, as h2o does: nghttp2 calls nothing for such a frame. */
#define H2_ENDED 16

typedef struct h2 {
  isv__conn *c;
  nghttp2_session *s;
  h2_stream *streams;
  unsigned n_streams;
  int in_session; /* inside nghttp2 (mem_recv or mem_send): flushing now would re-enter it */
  struct h2_write *cur; /* the write flush() is filling (for send_data) */
  int want_flush;
  int shutting_down;
  int goaway_notice; /* the shutdown's first GOAWAY and its PING are out; the final one waits
                      * for the PING's ACK (h2_shutdown) */
  isv__timed notice; /* ... or for this, at most ISV__H2_NOTICE_WAIT_MS (H2_T_NOTICE) */
  isv__timed conn_timer; /* the idle timeout or the send check (H2_T_CONN; conn_deadline) */
  isv__timeheap timers;  /* every stream's deadline, conn_timer and notice */
  uint64_t armed_at;     /* the seam's deadline now (isv__conn_now ms), 0: none (rearm) */
  int dead;
  h2_stream *rx; /* the gRPC stream whose DATA came last (it decides the low-water mark) */
  /* the stream whose header block began last: on_header's, without a lookup per header (a
   * block's frames come back to back on the connection, RFC 9113 6.10) */
  h2_stream *hb;
  unsigned faulting; /* streams whose body block is being faulted in: reading stops */
  unsigned oversize_blocks; /* header blocks dropped for passing twice the limit */
  int send_check; /* the connection's deadline checks response progress (streams are open) */
  size_t queued;     /* its streams' queued bytes together */
  size_t pieces;     /* ... and their queued items */
  int want_any;      /* some stream waits for on_writable */
  int notifying;     /* notify_writable is running */
  uint64_t header_second;   /* isv__conn_now() when the current second of header decoding began */
  size_t header_second_bytes;
  uint32_t ended[H2_ENDED];  /* the last streams closed after the client's END_STREAM (a ring) */
  uint32_t ended_max;        /* ... the highest id among them */
  unsigned ended_next;
} h2;

static h2 *h2_of(isv__conn *c) { return c->proto_state; }

/* ---- time: one heap per connection -------------------------------------------------------- */

enum { H2_T_STREAM = 0, H2_T_CONN, H2_T_NOTICE }; /* isv__timed.kind: whose entry it is */

/* The seam's one deadline follows the heap's earliest entry. */
static void rearm(h2 *h) {
  if (h->dead) return;
  isv__timed *e = isv__timeheap_top(&h->timers);
  uint64_t at = e ? e->when : 0;
  if (at == h->armed_at) return;
  h->armed_at = at;
  uint64_t now = isv__conn_now(h->c);
  isv__conn_deadline(h->c, at == 0 ? 0 : at > now ? at - now : 1);
}

/* e fires `ms` from now (0: never). Cannot fail: every entry's room is reserved (h2_start,
 * on_begin_headers), so isv__timeheap_set never allocates here. Inside nghttp2 the seam's
 * deadline is left for the end of the call (no timer fires before it returns): a call's
 * stream takes and drops its deadlines within one mem_recv, and the seam then moves once. */
static void set_timer(h2 *h, isv__timed *e, uint64_t ms) {
  if (ms == 0) isv__timeheap_remove(&h->timers, e);
  else (void)isv__timeheap_set(&h->timers, e, isv__conn_now(h->c) + ms);
  if (!h->in_session) rearm(h);
}

/* The stream's deadline off (answered, dispatched, ended). */
static void stop_deadline(h2_stream *st) {
  if (st->h2 && isv__timed_armed(&st->deadline)) {
    isv__timeheap_remove(&st->h2->timers, &st->deadline);
    if (!st->h2->in_session) rearm(st->h2);
  }
}

/* One uv_write: the bytes nghttp2 serialised (copied into `copy`) interleaved with DATA
 * payloads referenced where the service left them (NGHTTP2_DATA_FLAG_NO_COPY): a 16 MiB
 * tensor goes from the response's memory to the socket without a copy of our own. The queue
 * items whose memory is referenced are held until the write completes. */
typedef struct seg {
  const char *ref; /* NULL: `len` bytes at `off` in copy */
  size_t off, len;
} seg;

/* One flush's write, in one block for a small one: frame headers and small pieces are copied
 * into `small` until it is full, then into `copy` (what `small` held moved there, at the same
 * offsets); the segments list starts in `seg_room`. A gRPC call's answer (HEADERS, DATA, the
 * trailers) fits, so a flush allocates this block and nothing else, and nothing is kept after
 * the write: an idle connection holds no write buffer. */
#define H2_SMALL_COPY 512
#define H2_SEG_ROOM 8
typedef struct h2_write {
  isv__conn *c;
  size_t len; /* all bytes of the write */
  size_t small_len;
  int spilled; /* the copies are in `copy` now, not `small` */
  isv__buf copy;
  seg *segs;
  size_t n_segs, cap_segs;
  out_item *held; /* released after the write */
  int failed;
  seg seg_room[H2_SEG_ROOM];
  char small[H2_SMALL_COPY];
} h2_write;

static void flush(h2 *h);
static void final_goaway(h2 *h);
static void notice_expired(h2 *h);
static void stream_maybe_free(h2_stream *st);
static void stream_unreserve(h2_stream *st);
static int admit_message(void *ctx, size_t len);

/* ---- writing ----------------------------------------------------------------------------- */

static seg *push_seg(h2_write *w) {
  if (w->n_segs == w->cap_segs) {
    size_t cap = 2 * w->cap_segs;
    seg *s = isv__malloc(w->c->t->mem, cap * sizeof *s);
    if (s == NULL) {
      w->failed = 1;
      return NULL;
    }
    memcpy(s, w->segs, w->n_segs * sizeof *s);
    if (w->segs != w->seg_room) isv__free(w->segs);
    w->segs = s;
    w->cap_segs = cap;
  }
  return &w->segs[w->n_segs++];
}

/* Where copied bytes live: `small`, or `copy` once they outgrew it. */
static const char *copied(const h2_write *w) { return w->spilled ? w->copy.data : w->small; }

static void w_copy(h2_write *w, const void *p, size_t n) {
  size_t off;
  if (!w->spilled && w->small_len + n <= H2_SMALL_COPY) {
    off = w->small_len;
    memcpy(w->small + off, p, n);
    w->small_len += n;
  } else {
    if (!w->spilled) { /* the same offsets in copy as in small */
      isv__buf_append(&w->copy, w->small, w->small_len);
      w->spilled = 1;
    }
    off = w->copy.len;
    isv__buf_append(&w->copy, p, n);
    if (w->copy.failed) {
      w->failed = 1;
      return;
    }
  }
  seg *last = w->n_segs ? &w->segs[w->n_segs - 1] : NULL;
  if (last && last->ref == NULL && last->off + last->len == off) {
    last->len += n;
  } else {
    seg *s = push_seg(w);
    if (s) *s = (seg){NULL, off, n};
  }
  w->len += n;
}

static void w_ref(h2_write *w, const char *p, size_t n) {
  seg *s = push_seg(w);
  if (s) *s = (seg){p, 0, n};
  w->len += n;
}

static void item_free(out_item *it) {
  if (it->release) it->release(it->ctx);
  if (it->ex) {
    it->ex->refs--;
    isv__exchange_collect(it->ex);
  }
  isv__free(it);
}

static void write_free(h2_write *w) {
  out_item *it = w->held;
  while (it) {
    out_item *next = it->next;
    item_free(it);
    it = next;
  }
  isv__buf_free(&w->copy);
  if (w->segs != w->seg_room) isv__free(w->segs);
  isv__free(w);
}

static void notify_writable(h2 *h);

static void after_write(isv__conn *c, void *ctx, int status) {
  write_free(ctx);
  if (c->closing) return;
  if (status < 0) {
    isv__conn_close(c);
    return;
  }
  flush(h2_of(c));
  if (!c->closing) notify_writable(h2_of(c)); /* what went out may have made room */
}

static int start_write(h2 *h, h2_write *w) {
  /* Not zeroed (1 KiB a write): the first n_segs are written below, and only they are read. */
  uv_buf_t small[64];
  small[0] = uv_buf_init(NULL, 0); /* for GCC, which cannot see the loop through a const parameter */
  uv_buf_t *bufs = w->n_segs <= 64 ? small : isv__malloc(h->c->t->mem, w->n_segs * sizeof *bufs);
  if (bufs == NULL) return -1;
  for (size_t i = 0; i < w->n_segs; i++) {
    const seg *s = &w->segs[i];
    bufs[i].base = (char *)(s->ref ? s->ref : copied(w) + s->off);
    bufs[i].len = s->len;
  }
  int rc = isv__conn_write(h->c, bufs, w->n_segs, after_write, w); /* copies bufs */
  if (bufs != small) isv__free(bufs);
  return rc;
}

/* What nghttp2 has to send, gathered into one write: 0, or -1 (the connection must close). */
static int send_pending(h2 *h) {
  h2_write *w = isv__malloc(h->c->t->mem, sizeof *w);
  if (w == NULL) return -1;
  /* field by field: `small` and `seg_room` are written before they are read */
  w->c = h->c;
  w->len = w->small_len = 0;
  w->spilled = 0;
  isv__buf_init(&w->copy, h->c->t->mem);
  w->segs = w->seg_room;
  w->n_segs = 0;
  w->cap_segs = H2_SEG_ROOM;
  w->held = NULL;
  w->failed = 0;
  h->cur = w;
  h->in_session = 1;
  ssize_t n = 0;
  while (h->c->write_pending + w->len < ISV__H2_HIGH_WATER && !w->failed) {
    const uint8_t *data;
    n = nghttp2_session_mem_send(h->s, &data);
    if (n <= 0) break;
    w_copy(w, data, (size_t)n);
  }
  h->in_session = 0;
  rearm(h);
  h->cur = NULL;
  if (n >= 0 && !w->failed && (w->len == 0 || start_write(h, w) == 0)) {
    if (w->len == 0) write_free(w);
    return 0;
  }
  write_free(w);
  return -1;
}

static void flush(h2 *h) {
  if (h->dead || h->c->closing) return;
  if (h->in_session) {
    h->want_flush = 1;
    return;
  }
  h->want_flush = 0;
  /* a call's second flush (after its trailers went out with the first) usually has nothing */
  if (nghttp2_session_want_write(h->s) && send_pending(h) != 0) {
    isv__conn_close(h->c);
    return;
  }
  if (!nghttp2_session_want_read(h->s) && !nghttp2_session_want_write(h->s) &&
      h->c->write_pending == 0)
    isv__conn_close(h->c);
  else if (h->shutting_down && h->n_streams == 0 && h->c->write_pending == 0)
    isv__conn_close(h->c);
}

/* ---- response data ----------------------------------------------------------------------- */

static void release_items(h2_stream *st) {
  if (st->h2) st->h2->queued -= st->queued, st->h2->pieces -= st->pieces;
  st->queued = st->pieces = 0;
  out_item *it = st->q_head;
  st->q_head = st->q_tail = NULL;
  while (it) {
    out_item *next = it->next;
    item_free(it);
    it = next;
  }
}

/* Header names are lower-case literals: nghttp2 takes them as they are (NO_COPY_NAME), without
 * copying and lower-casing them into every frame's header array. NVL's value is a literal too;
 * NV's, computed for this answer, is copied. */
#define NV(n, v) \
  {(uint8_t *)(n), (uint8_t *)(v), sizeof(n) - 1, strlen(v), NGHTTP2_NV_FLAG_NO_COPY_NAME}
#define NVL(n, v)                                                  \
  {(uint8_t *)(n), (uint8_t *)(v), sizeof(n) - 1, sizeof(v) - 1, \
   NGHTTP2_NV_FLAG_NO_COPY_NAME | NGHTTP2_NV_FLAG_NO_COPY_VALUE}

/* v in decimal, NUL-ended, into out (24 bytes): a status or a length for a header, without
 * snprintf's cost on every answer. */
static const char *decimal(char out[24], int64_t v) {
  out[isv__fmt_i64(out, v)] = '\0';
  return out;
}

static void submit_trailers(h2_stream *st) {
  char status[24];
  nghttp2_nv nv[2] = {NV("grpc-status", decimal(status, st->trailer_status)),
                      NV("grpc-message", st->trailer_msg ? st->trailer_msg : "")};
  nghttp2_submit_trailer(st->h2->s, st->id, nv, st->trailer_msg && st->trailer_msg[0] ? 2 : 1);
}

/* Pieces smaller than this are copied next to their frame header rather than given an iovec
 * of their own. */
#define ISV__H2_REF_MIN 1024

static void pop_item(h2_stream *st, out_item **held) {
  out_item *it = st->q_head;
  st->pieces--;
  if (st->h2) st->h2->pieces--;
  st->q_head = it->next;
  if (st->q_head == NULL) st->q_tail = NULL;
  if (held) { /* referenced by the write being built: released after it */
    it->next = *held;
    *held = it;
  } else {
    item_free(it);
  }
}

/* Says how much the next DATA frame carries; send_data() then writes it by reference. */
static ssize_t read_data(nghttp2_session *s, int32_t id, uint8_t *buf, size_t length,
                         uint32_t *flags, nghttp2_data_source *src, void *user) {
  (void)s;
  (void)id;
  (void)buf;
  (void)user;
  h2_stream *st = src->ptr;
  while (st->q_head && st->q_head->idx == st->q_head->n) pop_item(st, NULL); /* empty */
  size_t avail = 0;
  for (out_item *it = st->q_head; it && avail < length; it = it->next)
    for (size_t i = it->idx; i < it->n && avail < length; i++)
      avail += it->parts[i].len - (i == it->idx ? it->off : 0);
  size_t n = avail < length ? avail : length;
  if (n) *flags |= NGHTTP2_DATA_FLAG_NO_COPY;
  if (n == avail && st->eof) {
    *flags |= NGHTTP2_DATA_FLAG_EOF;
    if (st->is_grpc) {
      *flags |= NGHTTP2_DATA_FLAG_NO_END_STREAM;
      submit_trailers(st);
    }
    return (ssize_t)n;
  }
  if (n == 0) return NGHTTP2_ERR_DEFERRED;
  return (ssize_t)n;
}

/* DATA frames as large as the peer takes (grpcio advertises 4 MiB), up to the write high-water
 * mark: payloads are referenced, so a big frame costs us no more than a small one, and the peer
 * parses far fewer (1 MiB frames: 16 per 16 MiB tensor instead of 1,024). */
static ssize_t data_length(nghttp2_session *s, uint8_t type, int32_t id, int32_t session_window,
                           int32_t stream_window, uint32_t max_frame, void *user) {
  (void)s;
  (void)type;
  (void)id;
  (void)user;
  int64_t n = ISV__H2_HIGH_WATER;
  if (session_window < n) n = session_window;
  if (stream_window < n) n = stream_window;
  if ((int64_t)max_frame < n) n = max_frame;
  return n > 0 ? (ssize_t)n : 1;
}

/* A DATA frame of `length` bytes from the stream's queue: its header copied, its payload
 * referenced (small pieces copied). Runs inside flush()'s nghttp2_session_mem_send. */
static int send_data(nghttp2_session *s, nghttp2_frame *frame, const uint8_t *framehd,
                     size_t length, nghttp2_data_source *src, void *user) {
  (void)s;
  h2 *h = user;
  h2_stream *st = src->ptr;
  h2_write *w = h->cur;
  if (w == NULL || frame->data.padlen > 0) return NGHTTP2_ERR_CALLBACK_FAILURE; /* never pads */
  w_copy(w, framehd, 9);
  st->sent += length;
  st->queued -= length;
  h->queued -= length;
  while (length > 0) {
    out_item *it = st->q_head;
    if (it == NULL) return NGHTTP2_ERR_CALLBACK_FAILURE; /* read_data counted these bytes */
    if (it->idx == it->n) {
      pop_item(st, &w->held);
      continue;
    }
    uv_buf_t *p = &it->parts[it->idx];
    size_t take = p->len - it->off < length ? p->len - it->off : length;
    if (take < ISV__H2_REF_MIN) w_copy(w, p->base + it->off, take);
    else w_ref(w, p->base + it->off, take);
    length -= take;
    it->off += take;
    if (it->off == p->len) {
      it->idx++;
      it->off = 0;
      while (it->idx < it->n && it->parts[it->idx].len == 0) it->idx++;
      if (it->idx == it->n) pop_item(st, &w->held);
    }
  }
  return w->failed ? NGHTTP2_ERR_CALLBACK_FAILURE : 0;
}

static int enqueue(h2_stream *st, const uv_buf_t *parts, size_t n, int grpc_prefix,
                   void (*release)(void *), void *ctx) {
  size_t total = 0;
  for (size_t i = 0; i < n; i++) total += parts[i].len;
  out_item *it = isv__malloc(st->mem, sizeof *it + (n + 1) * sizeof(uv_buf_t));
  if (it == NULL) {
    if (release) release(ctx);
    return ISV_ENOMEM;
  }
  it->next = NULL;
  it->release = release;
  it->ctx = ctx;
  it->ex = NULL;
  it->idx = it->off = 0;
  size_t k = 0;
  if (grpc_prefix) { /* 1: a message; 2: a compressed one (its flag byte 1) */
    isv__grpc_prefix(it->prefix, total);
    it->prefix[0] = grpc_prefix == 2;
    it->parts[k++] = uv_buf_init((char *)it->prefix, ISV__GRPC_PREFIX);
  }
  for (size_t i = 0; i < n; i++) it->parts[k++] = parts[i];
  it->n = k;
  while (it->idx < it->n && it->parts[it->idx].len == 0) it->idx++;
  if (st->q_tail) st->q_tail->next = it;
  else st->q_head = it;
  st->q_tail = it;
  size_t bytes = total + (grpc_prefix ? ISV__GRPC_PREFIX : 0);
  st->queued += bytes;
  st->pieces++;
  if (st->h2) st->h2->queued += bytes, st->h2->pieces++;
  return 0;
}

/* Backpressure (isv__exchange_writable, isv__grpc_writable): 1 while the stream's queue and
 * the connection's stay under their bounds; else 0, and notify_writable tells it once both
 * drained to half. */
/* What a stream's and a connection's queues hold against their bounds: their bytes, and what
 * each queued piece costs besides (ISV__QUEUED_PIECE_COST). */
static size_t stream_load(const h2_stream *st) {
  return st->queued + st->pieces * ISV__QUEUED_PIECE_COST;
}
static size_t conn_load(const h2 *h) { return h->queued + h->pieces * ISV__QUEUED_PIECE_COST; }

static int stream_writable(h2_stream *st) {
  h2 *h = st->h2;
  if (h == NULL || st->closed) return 1;
  const isv__transport_limits *l = &h->c->t->limits;
  if ((l->max_queued_stream == 0 || stream_load(st) < l->max_queued_stream) &&
      (l->max_queued_conn == 0 || conn_load(h) < l->max_queued_conn))
    return 1;
  st->want_writable = 1;
  h->want_any = 1;
  return 0;
}

static int h2_rest_writable(isv__exchange *ex) { return stream_writable(ex->conn); }
static int h2_grpc_writable(isv__grpc_call *call) { return stream_writable(call->carrier); }

/* After a write completed (never from inside a call of a handler or service): the streams
 * waiting for room that have it — their queue at half its bound or less, and the connection's
 * — hear on_writable, one at a time (a callback may end streams or close the connection). */
static void notify_writable(h2 *h) {
  if (!h->want_any || h->notifying) return;
  isv__conn *c = h->c;
  const isv__transport_limits *l = &c->t->limits;
  h->notifying = 1;
  for (;;) {
    if (l->max_queued_conn && conn_load(h) > l->max_queued_conn / 2) break;
    h2_stream *st = h->streams, *waiting = NULL;
    for (; st; st = st->next) {
      if (!st->want_writable) continue;
      waiting = st;
      if (l->max_queued_stream == 0 || stream_load(st) <= l->max_queued_stream / 2) break;
    }
    if (waiting == NULL) h->want_any = 0;
    if (st == NULL) break;
    st->want_writable = 0;
    if (st->is_grpc) {
      if (st->call.on_writable && st->dispatched && !st->app_done && !st->cancelled &&
          !st->closed)
        st->call.on_writable(&st->call);
    } else if (st->ex && st->ex->on_writable) {
      st->ex->on_writable(st->ex);
    }
    if (c->closing) return; /* h is gone */
  }
  h->notifying = 0;
}

static int submit_or_resume(h2_stream *st, const nghttp2_nv *nv, size_t nvlen) {
  h2 *h = st->h2;
  if (!h->send_check) { /* a response that stops moving is dropped (conn_deadline) */
    h->send_check = 1;
    set_timer(h, &h->conn_timer, h->c->t->limits.send_timeout_ms);
  }
  if (!st->submitted) {
    if (nv == NULL) return 0; /* a resume for a response never submitted (its stream is reset) */
    nghttp2_data_provider prd = {.source.ptr = st, .read_callback = read_data};
    st->submitted = 1;
    return nghttp2_submit_response(st->h2->s, st->id, nv, nvlen, &prd);
  }
  return nghttp2_session_resume_data(st->h2->s, st->id);
}

/* ---- REST over h2c ----------------------------------------------------------------------- */

/* A REST answer's piece: queued behind the others, ex kept until it is written. */
static int enqueue_piece(h2_stream *st, isv__exchange *ex, const uv_buf_t *parts, size_t n,
                         void (*release)(void *), void *ctx) {
  int rc = enqueue(st, parts, n, 0, release, ctx);
  if (rc == 0) {
    st->q_tail->ex = ex; /* the body may hold tensors the response refers to */
    ex->refs++;
  }
  return rc;
}

static size_t parts_len(const uv_buf_t *parts, size_t n) {
  size_t len = 0;
  for (size_t i = 0; i < n; i++) len += parts[i].len;
  return len;
}

/* A whole answer, or the head and first piece of a streamed one: its DATA frames follow as
 * the pieces come (read_data defers while the queue is empty), END_STREAM at the end. */
static int h2_respond(isv__exchange *ex, const isv__response *resp) {
  h2_stream *st = ex->conn;
  ex->phase = resp->more ? ISV__EX_STREAMING : ISV__EX_DONE;
  if (st == NULL) { /* stream or connection gone */
    if (resp->release) resp->release(resp->release_ctx);
    isv__exchange_collect(ex);
    return 0;
  }
  h2 *h = st->h2;
  int is_head = ex->method == ISV__M_HEAD;
  if (!resp->more || is_head) { /* complete on the wire once sent: the stream lets go of ex */
    st->ex = NULL;
    st->app_done = 1;
    ex->conn = NULL;
  }
  size_t body = parts_len(resp->parts, resp->n_parts);
  char status[24], clen[24];
  decimal(status, resp->status);
  decimal(clen, (int64_t)body);
  /* HTTP/2 field names are lower case; nghttp2 copies them, so they may live on the stack */
  size_t names = 0;
  for (size_t i = 0; i < resp->n_headers; i++) names += resp->headers[i].name_len;
  nghttp2_nv nv_small[3 + 16];
  char lower_small[1024];
  int small = resp->n_headers <= 16 && names <= sizeof lower_small;
  nghttp2_nv *nv = small ? nv_small : isv__malloc(st->mem, (3 + resp->n_headers) * sizeof *nv);
  char *lower = small ? lower_small : isv__malloc(st->mem, names ? names : 1);
  if (nv == NULL || lower == NULL) {
    if (!small) {
      isv__free(nv);
      isv__free(lower);
    }
    if (resp->release) resp->release(resp->release_ctx);
    isv__exchange_collect(ex); /* streaming: its stream's reset lets go of it */
    nghttp2_submit_rst_stream(h->s, NGHTTP2_FLAG_NONE, st->id, NGHTTP2_INTERNAL_ERROR);
    flush(h);
    return ISV_ENOMEM;
  }
  size_t n = 0;
  nv[n++] = (nghttp2_nv)NV(":status", status);
  if (!resp->more) nv[n++] = (nghttp2_nv)NV("content-length", clen);
  if (resp->content_type) nv[n++] = (nghttp2_nv)NV("content-type", resp->content_type);
  char *lp = lower;
  for (size_t i = 0; i < resp->n_headers; i++) {
    const isv__header *x = &resp->headers[i];
    for (size_t k = 0; k < x->name_len; k++)
      lp[k] = (char)((x->name[k] >= 'A' && x->name[k] <= 'Z') ? x->name[k] + 32 : x->name[k]);
    nv[n++] = (nghttp2_nv){(uint8_t *)lp, (uint8_t *)x->value, x->name_len, x->value_len,
                           NGHTTP2_NV_FLAG_NONE};
    lp += x->name_len;
  }
  int rc = 0;
  if (is_head) { /* headers only, END_STREAM on them; a streamed body is dropped as it comes */
    if (resp->release) resp->release(resp->release_ctx);
    st->submitted = 1;
    nghttp2_submit_response(h->s, st->id, nv, n, NULL);
  } else if (body == 0) {
    if (resp->release) resp->release(resp->release_ctx);
    st->eof = !resp->more;
    submit_or_resume(st, nv, n);
  } else if ((rc = enqueue_piece(st, ex, resp->parts, resp->n_parts, resp->release,
                                 resp->release_ctx)) != 0) {
    nghttp2_submit_rst_stream(h->s, NGHTTP2_FLAG_NONE, st->id, NGHTTP2_INTERNAL_ERROR);
  } else {
    st->eof = !resp->more;
    submit_or_resume(st, nv, n);
  }
  isv__exchange_collect(ex);
  if (!small) {
    isv__free(nv);
    isv__free(lower);
  }
  flush(h); /* ex is not touched after this: on_cancel may end it from inside */
  return rc;
}

static int h2_rest_write(isv__exchange *ex, const uv_buf_t *parts, size_t n,
                         void (*release)(void *), void *ctx) {
  h2_stream *st = ex->conn;
  if (st == NULL || parts_len(parts, n) == 0) {
    if (release) release(ctx);
    return st == NULL && ex->cancelled ? ISV_ECANCELED : 0;
  }
  h2 *h = st->h2;
  int rc = enqueue_piece(st, ex, parts, n, release, ctx);
  if (rc != 0) /* a piece lost: the rest would make no sense */
    nghttp2_submit_rst_stream(h->s, NGHTTP2_FLAG_NONE, st->id, NGHTTP2_INTERNAL_ERROR);
  else
    submit_or_resume(st, NULL, 0);
  ex->refs++; /* held across flush: on_cancel may end ex from inside it */
  flush(h);
  ex->refs--;
  if (rc == 0 && ex->conn == NULL) rc = ISV_ECANCELED; /* the flush found the stream gone */
  isv__exchange_collect(ex);
  return rc;
}

static int h2_rest_end(isv__exchange *ex) {
  h2_stream *st = ex->conn;
  ex->phase = ISV__EX_DONE;
  ex->conn = NULL;
  isv__exchange_collect(ex); /* unless pieces still point into it */
  if (st == NULL) return 0;
  st->ex = NULL;
  st->app_done = 1;
  st->eof = 1;
  submit_or_resume(st, NULL, 0); /* the last DATA frame carries END_STREAM */
  flush(st->h2);
  return 0;
}

/* ---- gRPC calls -------------------------------------------------------------------------- */

/* A call's response headers: grpc-encoding when the service codes its answers. */
static void grpc_response_headers(h2_stream *st) {
  nghttp2_nv nv[3] = {NVL(":status", "200"), NVL("content-type", "application/grpc")};
  size_t k = 2;
  if (st->call.answer_coding != ISV__CODING_IDENTITY)
    nv[k++] = (nghttp2_nv)NV("grpc-encoding", isv__coding_name(st->call.answer_coding));
  submit_or_resume(st, nv, k);
}

static int grpc_send(isv__grpc_call *call, const uv_buf_t *parts, size_t n, int compressed,
                     void (*release)(void *), void *ctx) {
  h2_stream *st = call->carrier;
  if (st->closed || st->cancelled || st->h2 == NULL) {
    if (release) release(ctx);
    return ISV_ECANCELED;
  }
  size_t total = 0;
  for (size_t i = 0; i < n; i++) total += parts[i].len;
  if (total > UINT32_MAX) {
    if (release) release(ctx);
    return ISV_ETOOBIG;
  }
  int rc = enqueue(st, parts, n, compressed ? 2 : 1, release, ctx);
  if (rc) return rc;
  st->call_out += total;
  grpc_response_headers(st);
  flush(st->h2);
  return 0;
}

static int h2_grpc_send(isv__grpc_call *call, const uv_buf_t *parts, size_t n,
                        void (*release)(void *), void *ctx) {
  return grpc_send(call, parts, n, 0, release, ctx);
}

static int h2_grpc_send_compressed(isv__grpc_call *call, const uv_buf_t *parts, size_t n,
                                   void (*release)(void *), void *ctx) {
  return grpc_send(call, parts, n, 1, release, ctx);
}

/* A call's line in the access log (only when its status reaches the client). */
static void grpc_access(h2_stream *st, int status) {
  const isv__transport *t = st->h2->c->t;
  if (t->h.access == NULL || st->call_start_ns == 0) return;
  char trace[33];
  isv_access_entry e = {
      .struct_size = sizeof e,
      .protocol = "grpc",
      .method = "POST",
      .path = st->path ? st->path : "",
      .status = status,
      .bytes_in = st->call_in,
      .bytes_out = st->call_out,
      .duration_us = (isv__conn_now_ns(st->h2->c) - st->call_start_ns) / 1000,
      .trace_id = isv__access_trace_id(st->call.headers, st->call.headers ? st->call.n_headers : 0,
                                       trace),
  };
  t->h.access(t->h.app, &e);
}

static void h2_grpc_finish(isv__grpc_call *call, int status, const char *message) {
  h2_stream *st = call->carrier;
  if (st->app_done) return;
  st->app_done = 1;
  stop_deadline(st);
  if (st->closed || st->cancelled || st->h2 == NULL) {
    if (!st->in_cancel) stream_maybe_free(st);
    return;
  }
  h2 *h = st->h2;
  grpc_access(st, status);
  isv__buf m; /* the message, percent-encoded; none (no block made) for an empty one */
  isv__buf_init(&m, st->mem);
  if (message && message[0]) {
    isv__grpc_percent_encode(&m, message);
    isv__buf_putc(&m, '\0');
  }
  char status_s[24];
  decimal(status_s, status);
  if (!st->submitted && st->q_head == NULL) { /* trailers-only */
    nghttp2_nv nv[] = {NVL(":status", "200"), NVL("content-type", "application/grpc"),
                       NV("grpc-status", status_s),
                       NV("grpc-message", m.failed || !m.data ? "" : m.data)};
    st->submitted = 1;
    nghttp2_submit_response(h->s, st->id, nv, m.len > 1 && !m.failed ? 4 : 3, NULL);
    isv__buf_free(&m);
  } else {
    st->trailer_status = status;
    st->trailer_msg = m.failed ? NULL : m.data; /* NULL: no grpc-message */
    if (m.failed) isv__buf_free(&m);
    st->eof = 1;
    grpc_response_headers(st);
  }
  flush(h);
}

static void notify_cancel(h2_stream *st) {
  if (st->call.on_cancel == NULL) return;
  st->in_cancel = 1;
  st->call.on_cancel(&st->call);
  st->in_cancel = 0;
}

/* The transport ends a call itself (deadline, oversized or malformed or truncated message):
 * the client gets `status` now, the service hears on_cancel and must still call
 * isv__grpc_finish once (which then only lets go of the stream). */
static void transport_end(h2_stream *st, int status, const char *message) {
  if (st->app_done || st->closed || st->cancelled || st->h2 == NULL) return;
  h2 *h = st->h2;
  stop_deadline(st);
  isv__buf m;
  isv__buf_init(&m, st->mem);
  isv__grpc_percent_encode(&m, message);
  isv__buf_putc(&m, '\0');
  if (m.failed) {
    isv__buf_free(&m);
    isv__buf_init(&m, st->mem);
  }
  if (!st->submitted && st->q_head == NULL) {
    char s[24];
    nghttp2_nv nv[] = {NVL(":status", "200"), NVL("content-type", "application/grpc"),
                       NV("grpc-status", decimal(s, status)),
                       NV("grpc-message", m.data ? m.data : "")};
    st->submitted = 1;
    nghttp2_submit_response(h->s, st->id, nv, 4, NULL);
    isv__buf_free(&m);
  } else { /* after what is already queued */
    st->trailer_status = status;
    isv__free(st->trailer_msg);
    st->trailer_msg = m.data;
    st->eof = 1;
    nghttp2_session_resume_data(h->s, st->id);
  }
  st->cancelled = 1;
  notify_cancel(st);
  flush(h);
}

static void stream_error(h2_stream *st, int status, const char *msg);
static void body_release(h2_stream *st);
static int start_fault(h2_stream *st, void *block, size_t len);
static void grpc_remote_end(h2_stream *st);
static void deframe(h2_stream *st, const uint8_t *d, size_t n);

/* The stream's deadline passed (h2_on_deadline took it out of the heap). */
static void stream_deadline(h2_stream *st) {
  if (!st->headers_complete) {
    /* A header block that never ends: HTTP/2 allows no other frame on the connection until
     * it does, so the connection is held — end it. */
    h2 *h = st->h2;
    if (h == NULL) return;
    nghttp2_session_terminate_session(h->s, NGHTTP2_ENHANCE_YOUR_CALM);
    h->shutting_down = 1;
    isv__conn *c = h->c;
    flush(h); /* may free st */
    if (!c->closing) isv__conn_close(c);
    return;
  }
  if (st->is_grpc) {
    transport_end(st, ISV__GRPC_DEADLINE_EXCEEDED, "deadline exceeded");
    return;
  }
  if (st->dispatched || st->h2 == NULL) return;
  /* A REST request whose body stopped arriving, as HTTP/1.1 answers it; then RST_STREAM, so
   * that neither side keeps the stream (and its half body) open. */
  st->rst_after_end = 1;
  isv__conn *c = st->h2->c;
  stream_error(st, 408, isv__conn_body_too_slow(c, isv__conn_now(c) - st->body_start,
                                                st->body.len)
                            ? "request body arriving too slowly (under the server's minimum rate)"
                            : "request not received in time"); /* answered and flushed: st may
                                                                * be gone */
}

/* (Re)arm the stream's deadline: `ms` from now. A stream its connection let go of (h2_free)
 * has no deadline left to keep. */
static void arm_deadline(h2_stream *st, uint64_t ms) {
  if (st->h2) set_timer(st->h2, &st->deadline, ms);
}

/* ---- read batching (SO_RCVLOWAT) ----------------------------------------------------------- */

/* After each read: how much must be queued before the next wake-up. Only a gRPC message in
 * progress makes it more than 1, and only by bytes the client must send to finish it and may
 * send without waiting for us (its stream and connection windows as nghttp2 last granted). */
static void update_lowat(h2 *h) {
  size_t owed = 0;
  h2_stream *st = h->rx;
  if (st && isv__grpc_deframer_owed(&st->df) && !st->app_done && !st->cancelled &&
      !st->draining && !h->shutting_down && !h->dead) {
    int32_t sw = nghttp2_session_get_stream_local_window_size(h->s, st->id);
    int32_t cw = nghttp2_session_get_local_window_size(h->s);
    int32_t w = sw < cw ? sw : cw;
    owed = isv__grpc_deframer_owed(&st->df);
    if (w <= 0) owed = 0;
    else if ((size_t)w < owed) owed = (size_t)w;
  }
  isv__conn_batch_reads(h->c, owed);
}

/* ---- streams ----------------------------------------------------------------------------- */

static void stream_free(h2_stream *st) {
  h2 *h = st->h2;
  if (h) {
    if (st->prev) st->prev->next = st->next;
    else h->streams = st->next;
    if (st->next) st->next->prev = st->prev;
    h->n_streams--;
    if (h->rx == st) {
      h->rx = NULL;
      if (!h->dead) update_lowat(h);
    }
    if (h->hb == st) h->hb = NULL;
    isv__timeheap_remove(&h->timers, &st->deadline);
    if (h->n_streams == 0 && !h->dead) {
      h->send_check = 0;
      set_timer(h, &h->conn_timer, h->c->t->limits.idle_timeout_ms);
      isv__conn_idle(h->c, 1);
    }
    rearm(h);
  }
  int close_now = h && !h->dead && h->shutting_down && h->n_streams == 0;
  stream_unreserve(st);
  release_items(st);
  isv__buf_free(&st->head);
  body_release(st);
  isv__free(st->call.identity);
  isv__grpc_deframer_free(&st->df);
  isv__free(st->hdrs);
  isv__free(st->trailer_msg);
  isv__free(st);
  if (close_now) flush(h); /* sends what is left, then closes the drained connection */
}

/* A stream is freed once nghttp2 closed it and its handler/service has let go of it. */
static void stream_maybe_free(h2_stream *st) {
  if (st->closed && (!st->dispatched || st->app_done)) stream_free(st);
}

static h2_stream *stream_of(nghttp2_session *s, int32_t id) {
  return nghttp2_session_get_stream_user_data(s, id);
}

/* stream_of, without nghttp2's lookup when id is the stream whose header block began last (a
 * call's headers, its DATA and its end all name it). A closed stream is not nghttp2's any more
 * (on_stream_close took its user data away): NULL, as stream_of says. */
static h2_stream *stream_at(h2 *h, nghttp2_session *s, int32_t id) {
  if (h->hb && h->hb->id == id) return h->hb->closed ? NULL : h->hb;
  return stream_of(s, id);
}

/* A request that breaks RFC 9113's rules (h2_fields.h) is a stream error: RST_STREAM
 * PROTOCOL_ERROR, as nghttp2 answers when it makes the checks (it does not here:
 * nghttp2_option_set_no_http_messaging). Nothing more of the stream is used; nghttp2 closes it
 * once the RST is out (on_stream_close frees it). */
static void malformed(h2 *h, h2_stream *st) {
  st->malformed = 1;
  nghttp2_submit_rst_stream(h->s, NGHTTP2_FLAG_NONE, st->id, NGHTTP2_PROTOCOL_ERROR);
}

static int on_begin_headers(nghttp2_session *s, const nghttp2_frame *f, void *user) {
  h2 *h = user;
  if (f->hd.type != NGHTTP2_HEADERS || f->headers.cat != NGHTTP2_HCAT_REQUEST) return 0;
  h2_stream *st = isv__calloc(h->c->t->mem, 1, sizeof *st);
  /* room in the heap for its deadline, the others' and the connection's two: arming it can
   * then never fail — refused now (RST_STREAM) if there is none */
  if (st == NULL || isv__timeheap_reserve(&h->timers, h->n_streams + 3) != 0) {
    isv__free(st);
    return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
  }
  st->deadline.kind = H2_T_STREAM;
  st->h2 = h;
  st->mem = h->c->t->mem;
  st->id = f->hd.stream_id;
  isv__buf_init(&st->head, h->c->t->mem);
  isv__buf_init(&st->body, h->c->t->mem);
  isv__buf_init(&st->pend, h->c->t->mem);
  isv__h2_fields_init(&st->fields);
  st->df.max_len = h->c->t->limits.max_body_bytes;
  st->df.bufs = h->c->t->bufs;
  st->df.admit = admit_message;
  st->df.admit_ctx = st;
  st->df.stop_fresh = h->c->t->h.offload != NULL; /* fresh message blocks faulted in off the loop */
  st->next = h->streams;
  if (h->streams) h->streams->prev = st;
  h->streams = st;
  h->n_streams++;
  if (!h->send_check) set_timer(h, &h->conn_timer, 0); /* each stream keeps its own time */
  arm_deadline(st, h->c->t->limits.header_timeout_ms); /* the header block must end */
  nghttp2_session_set_stream_user_data(s, st->id, st);
  h->hb = st;
  return 0;
}

/* memcpy for the few bytes of a header name or value: fixed-size moves the compiler inlines
 * (two overlapping ones), not a call per string. */
static inline void copy_short(char *d, const uint8_t *s, size_t n) {
  if (n >= 8 && n <= 16) {
    memcpy(d, s, 8);
    memcpy(d + n - 8, s + n - 8, 8);
  } else if (n >= 4 && n < 8) {
    memcpy(d, s, 4);
    memcpy(d + n - 4, s + n - 4, 4);
  } else if (n > 0 && n < 4) {
    d[0] = (char)s[0];
    d[n / 2] = (char)s[n / 2];
    d[n - 1] = (char)s[n - 1];
  } else if (n) {
    memcpy(d, s, n);
  }
}

static int on_header(nghttp2_session *s, const nghttp2_frame *f, const uint8_t *name, size_t nlen,
                     const uint8_t *value, size_t vlen, uint8_t flags, void *user) {
  (void)flags;
  h2 *h = user;
  h2_stream *st = stream_at(h, s, f->hd.stream_id);
  if (st == NULL || f->hd.type != NGHTTP2_HEADERS) return 0;
  size_t limit = h->c->t->limits.max_header_bytes;
  size_t free_left =
      st->header_bytes < ISV__H2_HEADER_FREE ? ISV__H2_HEADER_FREE - st->header_bytes : 0;
  st->header_bytes += nlen + vlen;
  if (nlen + vlen > free_left) { /* the clock is read only for bytes that count */
    uint64_t now = isv__conn_now(h->c);
    if (now - h->header_second >= 1000) {
      h->header_second = now;
      h->header_second_bytes = 0;
    }
    h->header_second_bytes += nlen + vlen - free_left;
    if (h->header_second_bytes > ISV__H2_HEADER_RATE) {
      nghttp2_session_terminate_session(s, NGHTTP2_ENHANCE_YOUR_CALM);
      return NGHTTP2_ERR_CALLBACK_FAILURE; /* mem_recv fails: the GOAWAY is flushed, then close */
    }
  }
  if (st->malformed) return 0;
  int trailer = f->headers.cat != NGHTTP2_HCAT_REQUEST;
  if (isv__h2_field(&st->fields, name, nlen, value, vlen, trailer) != 0) {
    malformed(h, st);
    return 0;
  }
  if (trailer) return 0; /* request trailers: checked, then ignored */
  if (st->headers_too_big) {
    if (st->header_bytes <= 2 * limit || st->header_bytes - (nlen + vlen) > 2 * limit)
      return 0; /* dropped; the block is answered 431 once complete (headers_done) */
    /* this one took the block past twice the limit: counted once per block */
    if (++h->oversize_blocks >= ISV__H2_OVERSIZE_BLOCKS) {
      nghttp2_session_terminate_session(s, NGHTTP2_ENHANCE_YOUR_CALM);
      return NGHTTP2_ERR_CALLBACK_FAILURE;
    }
    return 0;
  }
  size_t stored = st->head.len - st->n_headers * HEAD_LENS; /* names and values, NULs too */
  if (stored + nlen + vlen + 2 > limit || nlen + vlen > UINT32_MAX || st->n_headers >= 100) {
    st->headers_too_big = 1; /* answered 431 once the header block is complete, as on HTTP/1.1 */
    return 0;
  }
  uint32_t lens[2] = {(uint32_t)nlen, (uint32_t)vlen}; /* no strlen to find them again */
  size_t need = HEAD_LENS + nlen + 1 + vlen + 1;
  char *d;
  if (st->head.data && need <= st->head.cap - st->head.len && !st->head.failed) {
    d = st->head.data + st->head.len; /* room already: most headers after the first */
  } else {
    size_t room = st->head.cap || need > HEAD_FIRST ? need : HEAD_FIRST;
    if ((d = isv__buf_reserve(&st->head, room)) == NULL)
      return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
  }
  memcpy(d, lens, HEAD_LENS);
  copy_short(d + HEAD_LENS, name, nlen);
  d[HEAD_LENS + nlen] = '\0';
  copy_short(d + HEAD_LENS + nlen + 1, value, vlen);
  d[need - 1] = '\0';
  st->head.len += need;
  st->n_headers++;
  return 0;
}

/* Point path/method/ctype at the stored headers and build the header array. */
static int index_headers(h2_stream *st) {
  st->hdrs = isv__calloc(st->mem, st->n_headers ? st->n_headers : 1, sizeof *st->hdrs);
  if (st->hdrs == NULL) return -1;
  const char *p = st->head.data;
  for (size_t i = 0; i < st->n_headers; i++) {
    uint32_t lens[2];
    memcpy(lens, p, sizeof lens);
    const char *n = p + HEAD_LENS;
    size_t nl = lens[0];
    const char *v = n + nl + 1;
    size_t vl = lens[1];
    p = v + vl + 1;
    st->hdrs[i] = (isv__header){n, nl, v, vl};
/* the length first: most headers are none of these, and are told so without a byte compared */
#define IS(lit) ISV__SPAN_IS(n, nl, lit)
    if (IS(":path")) st->path = v, st->path_len = vl;
    else if (IS(":method")) st->method = v;
    else if (IS("content-type")) st->ctype = v;
    else if (IS("content-encoding")) st->cencoding = v, st->n_cencoding++;
    else if (IS("grpc-timeout")) st->call.timeout_ms = isv__grpc_parse_timeout(v, vl);
    else if (IS("grpc-encoding")) {
      st->call.coding = isv__coding_of(v, vl);
      st->bad_encoding = st->call.coding == ISV__CODING_UNKNOWN;
    }
#undef IS
  }
  return 0;
}

static void start_call(h2 *h, h2_stream *st) {
  st->dispatched = 1;
  st->call.path = st->path;
  st->call.path_len = st->path_len;
  st->call.headers = st->hdrs;
  st->call.n_headers = st->n_headers;
  st->call.carrier = st;
  memcpy(st->call.peer, h->c->peer, sizeof st->call.peer);
  if (h->c->identity) { /* a copy: the stream may outlive its connection */
    size_t n = strlen(h->c->identity) + 1;
    if ((st->call.identity = isv__malloc(st->mem, n)) != NULL) memcpy(st->call.identity, h->c->identity, n);
  }
  st->call.send = h2_grpc_send;
  st->call.send_compressed = h2_grpc_send_compressed;
  st->call.finish = h2_grpc_finish;
  st->call.writable = h2_grpc_writable;
  if (h->c->t->h.access) st->call_start_ns = isv__conn_now_ns(h->c);
  if (st->call.timeout_ms) arm_deadline(st, st->call.timeout_ms);
  h->c->t->h.grpc(h->c->t->h.app, &st->call);
}

static void grpc_refuse(h2_stream *st, int status, const char *msg, const char *extra_name,
                        const char *extra_value) {
  char s[24];
  nghttp2_nv nv[5] = {NVL(":status", "200"), NVL("content-type", "application/grpc"),
                      NV("grpc-status", decimal(s, status)), NV("grpc-message", msg)};
  size_t n = 4;
  if (extra_name) nv[n++] = (nghttp2_nv){(uint8_t *)extra_name, (uint8_t *)extra_value,
                                         strlen(extra_name), strlen(extra_value), NGHTTP2_NV_FLAG_NONE};
  st->submitted = 1;
  st->dispatched = 1;
  st->app_done = 1;
  nghttp2_submit_response(st->h2->s, st->id, nv, n, NULL);
}

/* The exchange of a REST stream: its path, method and headers (the exchange takes them), and
 * its body when `with_body`. NULL when out of memory. */
static isv__exchange *make_exchange(h2_stream *st, int with_body) {
  isv__exchange *ex = isv__calloc(st->mem, 1, sizeof *ex);
  if (ex) ex->mem = st->mem;
  size_t plen = st->path ? st->path_len : 0, hlen = st->head.len;
  /* The exchange owns its text — the header block its headers point into, then a copy of the
   * path to cut at '?' — for it may outlive its stream (a reset, a connection gone). */
  char *text = isv__malloc(st->mem, hlen + plen + 1);
  if (ex == NULL || text == NULL) {
    isv__free(ex);
    isv__free(text);
    return NULL;
  }
  if (hlen) memcpy(text, st->head.data, hlen);
  char *copy = text + hlen;
  copy[0] = '\0';
  if (st->path) {
    memcpy(copy, st->path, plen + 1);
    char *q = strchr(copy, '?');
    ex->path = copy;
    if (q) {
      *q = '\0';
      ex->query = q + 1;
      ex->query_len = strlen(q + 1);
    } else {
      ex->query = copy + plen;
    }
    ex->path_len = strlen(copy);
  }
  ex->method_name = st->method ? text + (st->method - st->head.data) : "";
  ex->method = isv__method_of(ex->method_name);
  ex->headers = st->hdrs; /* the exchange frees them */
  ex->n_headers = st->hdrs ? st->n_headers : 0;
  for (size_t i = 0; i < ex->n_headers; i++) {
    ex->headers[i].name = text + (ex->headers[i].name - st->head.data);
    ex->headers[i].value = text + (ex->headers[i].value - st->head.data);
  }
  st->hdrs = NULL;
  ex->storage = text;
  if (with_body) {
    ex->body = st->body.data;
    ex->body_len = st->body.len;
    ex->body_big = st->body_big;
    isv__buf_init(&st->body, st->mem);
    st->body_big = 0;
  }
  ex->conn = st;
  isv__conn_stamp(st->h2->c, ex);
  isv__exchange_start_access(ex, st->h2->c->t->h.access, st->h2->c->t->h.app,
                             st->h2->c->tls ? "h2" : "h2c"); /* ALPN's names */
  ex->respond = h2_respond;
  ex->write = h2_rest_write;
  ex->end = h2_rest_end;
  ex->writable = h2_rest_writable;
  st->ex = ex;
  st->dispatched = 1;
  return ex;
}

static void rest_dispatch(h2 *h, h2_stream *st) {
  stop_deadline(st);
  stream_unreserve(st);
  isv__exchange *ex = make_exchange(st, 1);
  if (ex == NULL) {
    nghttp2_submit_rst_stream(h->s, NGHTTP2_FLAG_NONE, st->id, NGHTTP2_INTERNAL_ERROR);
    return;
  }
  h->c->t->h.exchange(h->c->t->h.app, ex);
}

/* A REST stream refused before its handler (a limit, a timeout, a gRPC GET): the app answers
 * `status` in the shape of the path's protocol; what was received of the body is dropped. */
static void stream_error(h2_stream *st, int status, const char *msg) {
  h2 *h = st->h2;
  stop_deadline(st);
  stream_unreserve(st);
  body_release(st);
  if (st->hdrs == NULL && index_headers(st) != 0) st->hdrs = NULL;
  isv__exchange *ex = make_exchange(st, 0);
  if (ex == NULL) {
    st->app_done = 1;
    nghttp2_submit_rst_stream(h->s, NGHTTP2_FLAG_NONE, st->id, NGHTTP2_INTERNAL_ERROR);
    return;
  }
  h->c->t->h.error(h->c->t->h.app, ex, status, msg);
}

static int headers_done(h2 *h, h2_stream *st) {
  st->headers_complete = 1;
  isv__conn_idle(h->c, 0); /* a request in flight (until no stream is left: stream_free) */
  stop_deadline(st); /* the header block's; a body re-arms it */
  if (index_headers(st) != 0) return -1;
  st->is_grpc = st->ctype && strncmp(st->ctype, "application/grpc", 16) == 0;
  if (st->headers_too_big) { /* answered here, whatever it was */
    if (st->is_grpc) { /* gRPC's analogue of 431: a trailers-only RESOURCE_EXHAUSTED */
      grpc_refuse(st, ISV__GRPC_RESOURCE_EXHAUSTED, "request metadata exceeds the server's "
                  "limit", NULL, NULL);
      return 0;
    }
    stream_error(st, 431, "request headers exceed the server's limit");
    return 0;
  }
  if (!st->is_grpc) {
    if (st->cencoding &&
        (st->n_cencoding > 1 ||
         isv__coding_of(st->cencoding, strlen(st->cencoding)) == ISV__CODING_UNKNOWN)) {
      char msg[160]; /* as on HTTP/1.1: gzip and deflate are decoded by the router */
      snprintf(msg, sizeof msg, "Content-Encoding '%.40s%s' is not supported: send gzip, "
               "deflate or identity", st->cencoding, st->n_cencoding > 1 ? ", ..." : "");
      stream_error(st, 415, msg);
    }
    return 0;
  }
  if (st->method == NULL || strcmp(st->method, "POST") != 0) {
    st->is_grpc = 0;
    stream_error(st, 405, "gRPC calls must use POST");
    return 0;
  }
  if (h->shutting_down) {
    grpc_refuse(st, ISV__GRPC_UNAVAILABLE, "server is shutting down", NULL, NULL);
    return 0;
  }
  if (st->ctype[16] != '\0' && strcmp(st->ctype + 16, "+proto") != 0) {
    char s[] = "415";
    nghttp2_nv nv[] = {NV(":status", s)};
    st->dispatched = st->app_done = st->submitted = 1;
    nghttp2_submit_response(h->s, st->id, nv, 1, NULL);
    return 0;
  }
  if (st->bad_encoding) {
    grpc_refuse(st, ISV__GRPC_UNIMPLEMENTED, "this grpc-encoding is not supported; use identity, "
                "deflate or gzip", "grpc-accept-encoding", "identity,deflate,gzip");
    return 0;
  }

  start_call(h, st);
  return 0;
}

/* The receiving budget (conn.h): what a stream holds while its body or message arrives. */
static int stream_reserve(h2_stream *st, size_t n) {
  if (isv__conn_reserve(st->h2->c, n) != 0) return -1;
  st->reserved += n;
  return 0;
}

static void stream_unreserve(h2_stream *st) {
  if (st->reserved && st->h2) isv__conn_release(st->h2->c, st->reserved);
  st->reserved = 0;
}

static int admit_message(void *ctx, size_t len) { return stream_reserve(ctx, len); }

/* ---- large REST bodies ------------------------------------------------------------------- */

typedef struct h2_fault {
  isv__transport_job job;
  h2_stream *st; /* NULL: the stream let go (the job frees the block) */
  void *block;
  size_t len;
} h2_fault;

static void fault_in(isv__transport_job *j) {
  h2_fault *f = (h2_fault *)j;
  isv__bigbuf_populate(f->block, f->len);
}

/* The stream stops waiting for its block: the connection may read again. */
static void fault_over(h2 *h) {
  if (h && !h->dead && --h->faulting == 0 && !h->c->closing) {
    isv__conn_read_start(h->c);
    update_lowat(h);
  }
}

static void faulted(isv__transport_job *j) {
  h2_fault *f = (h2_fault *)j;
  h2_stream *st = f->st;
  if (st == NULL) {
    isv__bigbuf_free(f->block);
    isv__free(f);
    return;
  }
  isv__free(f);
  st->faulting = NULL;
  h2 *h = st->h2;
  if (st->is_grpc) { /* what came meanwhile, deframed now (it may begin another fault) */
    isv__buf pend = st->pend;
    isv__buf_init(&st->pend, st->mem);
    if (h && !h->dead) {
      deframe(st, (const uint8_t *)pend.data, pend.len);
      if (st->end_pending && !st->faulting) {
        st->end_pending = 0;
        grpc_remote_end(st);
      }
    }
    isv__buf_free(&pend);
    if (h && !h->dead) flush(h);
    fault_over(h);
    return;
  }
  /* what came meanwhile: within the block (on_data_chunk checked the limit, nghttp2 the
   * content-length) */
  size_t n = st->pend.len < st->body.cap - st->body.len ? st->pend.len : st->body.cap - st->body.len;
  if (n) memcpy(st->body.data + st->body.len, st->pend.data, n);
  st->body.len += n;
  isv__buf_free(&st->pend);
  isv__buf_init(&st->pend, st->mem);
  if (st->end_pending && !st->dispatched && h && !h->dead) {
    st->end_pending = 0;
    rest_dispatch(h, st);
    flush(h);
  }
  fault_over(h);
}

/* At the end of a REST stream's headers: a body of a known large size gets its block now. */
static void big_body(h2 *h, h2_stream *st) {
  int64_t clen = st->fields.content_length; /* DATA never runs past it: h2_fields.h */
  if (clen < (int64_t)ISV__BIGBUF_BLOCK_MIN || (uint64_t)clen > h->c->t->limits.max_body_bytes)
    return; /* small, unknown (grown as it comes) or too large (413 as it comes) */
  void *block = isv__bigbuf_alloc(h->c->t->bufs, (size_t)clen, 1);
  if (block == NULL) return; /* grown as it comes, as without this */
  isv__buf_free(&st->body);
  st->body.data = block;
  st->body.len = 0;
  st->body.cap = (size_t)clen;
  st->body_big = 1;
  if (isv__bigbuf_fresh(block)) start_fault(st, block, (size_t)clen);
}

/* A fresh block (a REST body's, a gRPC message's) faulted in on the pool: 1, or 0 when it
 * cannot be (the loop faults it in as it copies). The connection stops reading until done. */
static int start_fault(h2_stream *st, void *block, size_t len) {
  h2 *h = st->h2;
  if (h->c->t->h.offload == NULL) return 0;
  h2_fault *f = isv__malloc(h->c->t->mem, sizeof *f);
  if (f == NULL) return 0;
  *f = (h2_fault){{fault_in, faulted}, st, block, len};
  if (h->c->t->h.offload(h->c->t->h.app, &f->job) != 0) {
    isv__free(f);
    return 0;
  }
  st->faulting = f;
  if (h->faulting++ == 0) isv__conn_read_stop(h->c);
  return 1;
}

/* The stream's body or message being received, whatever it is, let go of (a fault in progress
 * keeps the block: the job frees it). */
static void body_release(h2_stream *st) {
  if (st->faulting) {
    st->faulting->st = NULL;
    st->faulting = NULL;
    if (st->is_grpc) st->df.msg = NULL; /* the job's now */
    else st->body_big = 0;
    isv__buf_init(&st->body, st->mem);
    fault_over(st->h2);
  } else if (st->body_big) {
    isv__bigbuf_free(st->body.data);
  } else {
    isv__buf_free(&st->body);
  }
  isv__buf_init(&st->body, st->mem);
  st->body_big = 0;
  isv__buf_free(&st->pend);
  isv__buf_init(&st->pend, st->mem);
}

static void deliver_message(h2_stream *st, uint8_t *m, size_t len, int compressed) {
  stream_unreserve(st); /* received: the message is the service's now */
  if (st->call.on_message && !st->app_done && !st->cancelled)
    st->call.on_message(&st->call, m, len, compressed);
  else isv__bigbuf_free(m);
}

/* DATA of a gRPC stream: whole messages to the service as they complete (grpc_frame.h). */
static void deframe(h2_stream *st, const uint8_t *d, size_t n) {
  while (n > 0 && !st->app_done && !st->cancelled && !st->draining) {
    uint8_t *msg;
    size_t len;
    if (st->faulting) { /* its message's block: the rest waits (faulted() goes on) */
      isv__buf_append(&st->pend, d, n);
      if (st->pend.failed) transport_end(st, ISV__GRPC_RESOURCE_EXHAUSTED, "out of memory");
      return;
    }
    switch (isv__grpc_deframe(&st->df, &d, &n, &msg, &len)) {
    case ISV__DEFRAME_MORE: return;
    case ISV__DEFRAME_FRESH:
      start_fault(st, st->df.msg, st->df.msg_len); /* else the loop faults it in as it copies */
      break;
    case ISV__DEFRAME_MESSAGE: deliver_message(st, msg, len, 0); break;
    case ISV__DEFRAME_COMPRESSED:
      if (st->call.coding == ISV__CODING_IDENTITY) { /* gRPC's spec: INTERNAL */
        stream_unreserve(st);
        isv__bigbuf_free(msg);
        transport_end(st, ISV__GRPC_INTERNAL, "a compressed message on a call without a "
                      "grpc-encoding");
        return;
      }
      deliver_message(st, msg, len, 1);
      break;
    case ISV__DEFRAME_BAD_FLAG:
      transport_end(st, ISV__GRPC_INTERNAL, "malformed message: its flag byte is neither 0 nor 1");
      return;
    case ISV__DEFRAME_TOO_BIG: {
      char text[128];
      snprintf(text, sizeof text, "message of %zu bytes exceeds the server's limit of %zu", len,
               st->df.max_len);
      transport_end(st, ISV__GRPC_RESOURCE_EXHAUSTED, text);
      return;
    }
    case ISV__DEFRAME_REFUSED:
      transport_end(st, ISV__GRPC_UNAVAILABLE,
                    "the server is receiving too much request data at once; retry later");
      return;
    case ISV__DEFRAME_NOMEM: transport_end(st, ISV__GRPC_RESOURCE_EXHAUSTED, "out of memory"); return;
    }
  }
}

static int on_data_chunk(nghttp2_session *s, uint8_t flags, int32_t id, const uint8_t *data,
                         size_t len, void *user) {
  (void)flags;
  h2 *h = user;
  h2_stream *st = stream_at(h, s, id);
  if (st == NULL || st->malformed) return 0;
  if (isv__h2_fields_data(&st->fields, len) != 0) { /* past its content-length */
    malformed(h, st);
    return 0;
  }
  if (st->is_grpc) {
    if (st->dispatched && !st->app_done && !st->cancelled) {
      st->call_in += len;
      h->rx = st;
      deframe(st, data, len);
    }
    return 0;
  }
  if (st->dispatched) return 0;
  /* still arriving: the next bytes within the header timeout and the rate */
  arm_deadline(st, isv__conn_body_deadline(h->c, isv__conn_now(h->c) - st->body_start,
                                             st->body.len + len));
  if (st->body.len + len > h->c->t->limits.max_body_bytes) {
    stream_error(st, 413, "request body exceeds the server's limit");
    return 0;
  }
  if (isv__conn_body_too_slow(h->c, isv__conn_now(h->c) - st->body_start, st->body.len + len)) {
    st->rst_after_end = 1;
    stream_error(st, 408, "request body arriving too slowly (under the server's minimum rate)");
    return 0;
  }
  if (stream_reserve(st, len) != 0) {
    st->rst_after_end = 1;
    stream_error(st, 503, "the server is receiving too much request data at once; retry later");
    return 0;
  }
  if (st->faulting) {
    isv__buf_append(&st->pend, data, len);
    return st->pend.failed ? NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE : 0;
  }
  if (st->body_big) {
    if (len > st->body.cap - st->body.len) { /* DATA is held to content-length: never */
      st->rst_after_end = 1;
      stream_error(st, 400, "request body longer than its content-length");
      return 0;
    }
    memcpy(st->body.data + st->body.len, data, len);
    st->body.len += len;
    return 0;
  }
  isv__buf_append(&st->body, data, len);
  return st->body.failed ? NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE : 0;
}

static int on_frame_recv(nghttp2_session *s, const nghttp2_frame *f, void *user) {
  h2 *h = user;
  if (f->hd.type == NGHTTP2_PING && (f->hd.flags & NGHTTP2_FLAG_ACK) && h->goaway_notice &&
      !h->shutting_down && memcmp(f->ping.opaque_data, drain_ping, 8) == 0) {
    final_goaway(h); /* every stream the client opened before it saw the notice has come */
    return 0;
  }
  if (f->hd.type != NGHTTP2_HEADERS && f->hd.type != NGHTTP2_DATA) return 0;
  h2_stream *st = stream_at(h, s, f->hd.stream_id);
  if (st == NULL || st->malformed) return 0;
  int headers = f->hd.type == NGHTTP2_HEADERS;
  int trailer = headers && f->headers.cat != NGHTTP2_HCAT_REQUEST;
  if (isv__h2_fields_frame_end(&st->fields, headers, trailer,
                               (f->hd.flags & NGHTTP2_FLAG_END_STREAM) != 0) != 0) {
    malformed(h, st);
    return 0;
  }
  if (f->hd.type == NGHTTP2_HEADERS && f->headers.cat == NGHTTP2_HCAT_REQUEST) {
    if (headers_done(h, st) != 0) return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
    if (!st->is_grpc && !st->dispatched && !(f->hd.flags & NGHTTP2_FLAG_END_STREAM)) {
      arm_deadline(st, isv__conn_body_deadline(h->c, 0, 0)); /* its body must keep arriving */
      st->body_start = isv__conn_now(h->c);
      big_body(h, st);
    }
  }
  if (f->hd.flags & NGHTTP2_FLAG_END_STREAM) {
    st->remote_closed = 1;
    if (st->faulting) {
      st->end_pending = 1; /* faulted() goes on with it once what came before is in place */
    } else if (st->is_grpc) {
      grpc_remote_end(st);
    } else if (!st->dispatched) {
      rest_dispatch(h, st);
    }
  }
  return 0;
}

/* The client's END_STREAM on a gRPC stream, once every byte before it was deframed. */
static void grpc_remote_end(h2_stream *st) {
  if (isv__grpc_deframer_partial(&st->df) && st->dispatched) {
    transport_end(st, ISV__GRPC_INTERNAL, "stream ended inside a message");
  } else if (st->call.on_half_close && !st->app_done && !st->cancelled) {
    st->call.on_half_close(&st->call);
  }
}

static void cancel_stream(h2_stream *st) {
  st->closed = 1;
  isv__exchange *ex = st->ex; /* pending or streaming: its handler answers into the void */
  if (ex) {
    ex->conn = NULL;
    st->ex = NULL;
    st->app_done = 1;
  }
  if (st->dispatched && st->is_grpc && !st->app_done && !st->cancelled) { /* once */
    st->cancelled = 1;
    notify_cancel(st);
  }
  release_items(st);
  if (ex) isv__exchange_cancel(ex); /* last: it may end ex */
}

/* We ended a gRPC stream the client is still sending on (an early error, a drained call):
 * tell it to stop with RST_STREAM(NO_ERROR) (RFC 9113 §8.1), so neither side waits for the
 * rest. REST streams are left to finish their upload: some HTTP clients (curl 7.88) report
 * that RST as an error even after a complete response. */
static int on_frame_send(nghttp2_session *s, const nghttp2_frame *f, void *user) {
  if ((f->hd.type != NGHTTP2_HEADERS && f->hd.type != NGHTTP2_DATA) ||
      !(f->hd.flags & NGHTTP2_FLAG_END_STREAM))
    return 0;
  h2_stream *st = stream_at(user, s, f->hd.stream_id);
  if (st && (st->is_grpc || st->rst_after_end) && !st->remote_closed)
    nghttp2_submit_rst_stream(s, NGHTTP2_FLAG_NONE, st->id, NGHTTP2_NO_ERROR);
  return 0;
}

/* A frame begins: HEADERS on a stream the client ended, now closed (a stream id is never used
 * twice), ends the connection (H2_ENDED). */
static int on_begin_frame(nghttp2_session *s, const nghttp2_frame_hd *hd, void *user) {
  h2 *h = user;
  uint32_t id = (uint32_t)hd->stream_id;
  if (hd->type != NGHTTP2_HEADERS || id == 0 || id > h->ended_max) return 0;
  for (unsigned i = 0; i < H2_ENDED; i++)
    if (h->ended[i] == id) {
      nghttp2_session_terminate_session(s, NGHTTP2_STREAM_CLOSED);
      break;
    }
  return 0;
}

static int on_stream_close(nghttp2_session *s, int32_t id, uint32_t err, void *user) {
  (void)err;
  h2 *h = user;
  h2_stream *st = stream_of(s, id);
  if (st == NULL) return 0;
  if (st->remote_closed) {
    h->ended[h->ended_next++ % H2_ENDED] = (uint32_t)id;
    if ((uint32_t)id > h->ended_max) h->ended_max = (uint32_t)id;
  }
  nghttp2_session_set_stream_user_data(s, id, NULL);
  cancel_stream(st);
  stream_maybe_free(st);
  return 0;
}

/* ---- connection -------------------------------------------------------------------------- */

static void h2_on_read(isv__conn *c, const char *data, size_t len);

/* nghttp2's session allocates through the server's allocator too (codec/mem.h). */
static void *ng_malloc(size_t n, void *u) { return isv__malloc(u, n); }
static void ng_free(void *p, void *u) {
  (void)u;
  isv__free(p);
}
static void *ng_calloc(size_t n, size_t size, void *u) { return isv__calloc(u, n, size); }
static void *ng_realloc(void *p, size_t n, void *u) { return isv__realloc(u, p, n); }

static int h2_start(isv__conn *c, const char *data, size_t len) {
  h2 *h = isv__calloc(c->t->mem, 1, sizeof *h);
  nghttp2_session_callbacks *cb = NULL;
  nghttp2_option *opt = NULL;
  if (h == NULL || nghttp2_session_callbacks_new(&cb) != 0 || nghttp2_option_new(&opt) != 0)
    goto fail;
  h->c = c;
  h->conn_timer.kind = H2_T_CONN;
  h->notice.kind = H2_T_NOTICE;
  isv__timeheap_init(&h->timers, c->t->mem);
  if (isv__timeheap_reserve(&h->timers, 2) != 0) goto fail; /* conn_timer and notice */
  nghttp2_session_callbacks_set_on_begin_headers_callback(cb, on_begin_headers);
  nghttp2_session_callbacks_set_on_header_callback(cb, on_header);
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, on_data_chunk);
  nghttp2_session_callbacks_set_on_frame_recv_callback(cb, on_frame_recv);
  nghttp2_session_callbacks_set_on_stream_close_callback(cb, on_stream_close);
  nghttp2_session_callbacks_set_on_begin_frame_callback(cb, on_begin_frame);
  nghttp2_session_callbacks_set_on_frame_send_callback(cb, on_frame_send);
  nghttp2_session_callbacks_set_send_data_callback(cb, send_data);
  nghttp2_session_callbacks_set_data_source_read_length_callback(cb, data_length);
  nghttp2_option_set_max_send_header_block_length(opt, 64 * 1024);
  nghttp2_option_set_no_closed_streams(opt, 1);
  /* RFC 9113's request rules are made by h2_fields.c as on_header stores each field: nghttp2's
   * copy of them cost ~2,400 of a small gRPC call's ~28,400 instructions. */
  nghttp2_option_set_no_http_messaging(opt, 1);
  nghttp2_mem mem = {(void *)c->t->mem, ng_malloc, ng_free, ng_calloc, ng_realloc};
  if (nghttp2_session_server_new3(&h->s, cb, h, opt, &mem) != 0) goto fail; /* copies mem */
  nghttp2_session_callbacks_del(cb);
  nghttp2_option_del(opt);
  cb = NULL;
  opt = NULL;
  nghttp2_settings_entry iv[] = {
      {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, ISV__H2_MAX_STREAMS},
      {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, ISV__H2_WINDOW},
      {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, (uint32_t)c->t->limits.max_header_bytes},
      {NGHTTP2_SETTINGS_MAX_FRAME_SIZE, ISV__H2_MAX_FRAME},
  };
  if (nghttp2_submit_settings(h->s, NGHTTP2_FLAG_NONE, iv, 4) != 0 ||
      nghttp2_session_set_local_window_size(h->s, NGHTTP2_FLAG_NONE, 0, ISV__H2_CONN_WINDOW) != 0)
    goto fail;
  c->proto_state = h;
  set_timer(h, &h->conn_timer, c->t->limits.idle_timeout_ms);
  h2_on_read(c, data, len);
  return 0;
fail:
  if (cb) nghttp2_session_callbacks_del(cb);
  if (opt) nghttp2_option_del(opt);
  if (h && h->s) nghttp2_session_del(h->s);
  if (h) isv__timeheap_free(&h->timers);
  isv__free(h);
  isv__conn_close(c);
  return -1;
}

static void h2_on_read(isv__conn *c, const char *data, size_t len) {
  h2 *h = h2_of(c);
  h->in_session = 1;
  ssize_t n = nghttp2_session_mem_recv(h->s, (const uint8_t *)data, len);
  h->in_session = 0;
  rearm(h);
  if (h->dead || c->closing) return;
  if (n < 0) {
    /* a protocol error (or flood): nghttp2 queued a GOAWAY; send it, then close */
    h->shutting_down = 1;
    flush(h);
    if (!c->closing) isv__conn_close(c);
    return;
  }
  flush(h);
  if (!c->closing) update_lowat(h); /* flush may have closed the connection */
}

/* The client half-closed its side: HTTP/2 has no use for the connection after that. */
static void h2_on_eof(isv__conn *c) { isv__conn_close(c); }

/* The connection's own deadline is the idle timeout while no stream is open, and the send
 * check while responses are being sent: a stream whose response sent nothing since the last
 * check (the client keeps its window at 0) is reset, which frees what it holds. */
static void conn_deadline(h2 *h) {
  isv__conn *c = h->c;
  if (h->n_streams == 0) {
    isv__conn_close(c);
    return;
  }
  int pending = 0;
  for (h2_stream *st = h->streams; st; st = st->next) {
    if (!st->submitted || st->closed || st->q_head == NULL) continue;
    if (st->sent == st->sent_at_check) {
      nghttp2_submit_rst_stream(h->s, NGHTTP2_FLAG_NONE, st->id, NGHTTP2_CANCEL);
      continue;
    }
    st->sent_at_check = st->sent;
    pending = 1;
  }
  h->send_check = pending;
  if (pending) set_timer(h, &h->conn_timer, c->t->limits.send_timeout_ms);
  flush(h);
}

/* The seam's deadline: every entry of the heap that is due, earliest first — each may end
 * streams or close the connection — then the seam armed at the next. */
static void h2_on_deadline(isv__conn *c) {
  h2 *h = h2_of(c);
  h->armed_at = 0; /* spent */
  uint64_t now = isv__conn_now(c);
  isv__timed *e;
  while (!c->closing && (e = isv__timeheap_top(&h->timers)) != NULL && e->when <= now) {
    isv__timeheap_remove(&h->timers, e);
    if (e->kind == H2_T_CONN) conn_deadline(h);
    else if (e->kind == H2_T_NOTICE) notice_expired(h);
    else stream_deadline((h2_stream *)(void *)((char *)e - offsetof(h2_stream, deadline)));
  }
  if (!c->closing) rearm(h);
}

/* The end of a shutdown's grace: requests being worked on finish, but a stream that still
 * only waits for its client (still sending, or a gRPC stream the client keeps open) is ended
 * now, so a client cannot hold the server's shutdown open. */
static void end_waiting_streams(h2 *h) {
  isv__conn *c = h->c;
  for (h2_stream *st = h->streams, *next; st; st = next) {
    next = st->next;
    if (st->remote_closed || st->app_done || st->cancelled) continue;
    if (st->is_grpc && st->dispatched) {
      st->draining = 1; /* no more messages are delivered */
      if (st->call.on_drain) st->call.on_drain(&st->call);
      else transport_end(st, ISV__GRPC_UNAVAILABLE, "server is shutting down");
      if (c->closing) return; /* its flush found the connection done: h is gone */
    } else if (!st->dispatched) {
      nghttp2_submit_rst_stream(h->s, NGHTTP2_FLAG_NONE, st->id, NGHTTP2_REFUSED_STREAM);
    }
  }
  flush(h); /* from on_frame_recv: deferred to mem_recv's caller */
  if (!c->closing) update_lowat(h); /* flush may have closed the connection */
}

/* The shutdown's second step: GOAWAY with the last stream processed — no stream after it will
 * be — then ISV__H2_NOTICE_WAIT_MS for the streams already open to finish arriving (a unary
 * call whose message is still on its way is served, not ended). */
static void final_goaway(h2 *h) {
  isv__conn *c = h->c;
  h->shutting_down = 1;
  nghttp2_submit_goaway(h->s, NGHTTP2_FLAG_NONE, nghttp2_session_get_last_proc_stream_id(h->s),
                        NGHTTP2_NO_ERROR, NULL, 0);
  set_timer(h, &h->notice, ISV__H2_NOTICE_WAIT_MS);
  flush(h);
  if (!c->closing) update_lowat(h);
}

/* The first step's wait (no PING ACK came: the final GOAWAY goes anyway), or the second's. */
static void notice_expired(h2 *h) {
  if (h->dead) return;
  if (!h->shutting_down) final_goaway(h);
  else end_waiting_streams(h);
}

/* Graceful, in steps (RFC 9113 §6.8): a GOAWAY with the largest stream id — open no more
 * streams — and a PING; streams the client opened before it read that are still served; its
 * PING ACK says none is on its way, and the final GOAWAY follows (final_goaway), then a grace
 * for what is still arriving. A proxy that reuses its connection (nginx's grpc_pass) thus
 * never has a call it already sent refused. A peer that does not answer the PING within
 * ISV__H2_NOTICE_WAIT_MS gets the final GOAWAY then: a client that does not read holds the
 * shutdown two such waits at most. */
static void h2_shutdown(isv__conn *c) {
  h2 *h = h2_of(c);
  if (h->shutting_down || h->goaway_notice) return;
  h->goaway_notice = 1;
  if (nghttp2_submit_shutdown_notice(h->s) != 0 ||
      nghttp2_submit_ping(h->s, NGHTTP2_FLAG_NONE, drain_ping) != 0) {
    final_goaway(h); /* out of memory: the one-step shutdown */
    return;
  }
  set_timer(h, &h->notice, ISV__H2_NOTICE_WAIT_MS);
  flush(h);
  if (!c->closing) update_lowat(h);
}

static void h2_free(isv__conn *c) {
  h2 *h = h2_of(c);
  if (h == NULL) return;
  h->dead = 1;
  h->hb = NULL; /* the streams leave h (a detached one is freed without it) */
  while (h->streams) {
    h2_stream *st = h->streams;
    h->streams = st->next;
    if (st->next) st->next->prev = NULL;
    st->prev = st->next = NULL;
    h->n_streams--;
    isv__timeheap_remove(&h->timers, &st->deadline); /* nothing to keep time for it now */
    st->h2 = NULL;
    cancel_stream(st);
    if (!st->dispatched || st->app_done) stream_free(st);
    /* else: the service frees it in isv__grpc_finish */
  }
  isv__timeheap_free(&h->timers);
  nghttp2_session_del(h->s);
  c->proto_state = NULL;
  isv__free(h);
}

const isv__conn_proto isv__http2_proto = {
    .name = "h2c",
    .start = h2_start,
    .on_read = h2_on_read,
    .on_eof = h2_on_eof,
    .on_deadline = h2_on_deadline,
    .shutdown = h2_shutdown,
    .free = h2_free,
};
