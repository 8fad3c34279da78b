/* The connection (conn.h): socket, timer, writes, read batching, protocol choice, life — the
 * libuv side of the seam (isv__conn_uv_io), and the bookkeeping every seam shares. */
#include "transport/conn.h"
#include "transport/tls.h"

#include <stdlib.h>
#include <string.h>
#ifndef _WIN32
#include <arpa/inet.h>
#include <stdio.h>
#include <sys/socket.h>
#include <netinet/in.h>
#endif

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf);
static void on_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf);
static void uvc_close(isv__conn *c);
static uint64_t uvc_now(const isv__conn *c) { return uv_now(c->t->loop); }
static uint64_t uvc_now_ns(const isv__conn *c) {
  (void)c;
  return uv_hrtime();
}

/* ---- time --------------------------------------------------------------------------------- */

static void on_timer(uv_timer_t *h);
static void pump(isv__conn *c);

/* Arm the timer for the earliest of the deadline, the watchdog and the write check — lazily.
 * A keep-alive request used to move the deadline three times (header, body, none while it is
 * answered, idle again): a uv_timer_stop and a uv_timer_start each, every request. Now the
 * timer is only moved when something falls due sooner than it is set for; when the deadline
 * moves later (or goes away) it stays, fires early, finds nothing due (on_timer compares every
 * time with the clock) and is set again for what is due then. The deadlines stay exact; a
 * connection costs one spurious wake-up per header timeout at most. With nothing due and the
 * stream not read, the timer is stopped: a stale one would keep the host's loop alive. */
static void arm(isv__conn *c) {
  if (c->closing) return;
  uint64_t now = uv_now(c->t->loop);
  if (c->pump_due) { /* the next loop turn */
    uv_timer_start(&c->timer, on_timer, 0, 0);
    c->armed = now ? now : 1;
    return;
  }
  uint64_t at = c->deadline;
  if (c->watchdog && (at == 0 || c->watchdog < at)) at = c->watchdog;
  if (c->write_check && (at == 0 || c->write_check < at)) at = c->write_check;
  if (c->tls_check && (at == 0 || c->tls_check < at)) at = c->tls_check;
  if (at == 0) {
    if (c->armed && !c->reading) {
      uv_timer_stop(&c->timer);
      c->armed = 0;
    }
    return;
  }
  if (c->armed && c->armed <= at) return; /* it fires in time (perhaps early: see above) */
  uv_timer_start(&c->timer, on_timer, at > now ? at - now : 0, 0);
  c->armed = at > now ? at : now ? now : 1;
}

static void uvc_deadline(isv__conn *c, uint64_t ms) {
  c->deadline = ms ? uv_now(c->t->loop) + ms : 0;
  if (c->in_read) c->arm_due = 1; /* an HTTP/1.1 request moves it 4 times in one read: the
                                   * timer is armed once, when the read's delivery ends */
  else arm(c);
}

static void uvc_tls_check(isv__conn *c, uint64_t ms) {
  c->tls_check = uv_now(c->t->loop) + ms;
  arm(c);
}

/* Bytes not yet taken by the kernel: libuv's queue and the slices not given to libuv yet. */
static size_t queued(const isv__conn *c) {
  return uv_stream_get_write_queue_size(c->stream) + c->held;
}

/* The close that follows sends a reset (SO_LINGER {1, 0}), not a FIN after the queued bytes:
 * the kernel drops what the client never read at once, instead of keeping it (and retrying)
 * while the client keeps its window shut — nginx's reset_timedout_connection. */
static void reset_on_close(isv__conn *c) {
#ifndef _WIN32
  uv_os_fd_t fd;
  struct linger lg = {1, 0};
  if (c->stream->type == UV_TCP && uv_fileno((const uv_handle_t *)c->stream, &fd) == 0)
    setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
#else
  (void)c;
#endif
}

static void on_timer(uv_timer_t *h) {
  isv__conn *c = h->data;
  c->armed = 0; /* it fired (a one-shot): arm() below sets it again if anything is due */
  if (c->pump_due) { /* a slice was written last turn: the next */
    c->pump_due = 0;
    c->write_burst_ns = uv_hrtime();
    pump(c);
    if (c->closing) return;
  }
  uint64_t now = uv_now(c->t->loop);
  if (c->write_check && c->write_check <= now) {
    /* Progress is what the kernel took, not a shorter queue: a stream's pieces keep joining the
     * queue while a slow client reads. */
    size_t q = queued(c), taken = c->write_total - q;
    if (c->write_pending && q && taken == c->write_mark) { /* nothing taken since the last look */
      reset_on_close(c);
      isv__conn_close(c);
      return;
    }
    c->write_mark = taken;
    c->write_check = c->write_pending ? now + c->t->limits.send_timeout_ms : 0;
  }
  isv__conn_tls_due(c, now);
  if (c->watchdog && c->watchdog <= now) {
    /* the client paused mid-body or mid-message: take what it sent */
    c->watchdog = 0;
    isv__conn_set_lowat(c, 1);
  }
  if (c->deadline && c->deadline <= now) {
    c->deadline = 0;
    arm(c);
    if (c->proto) c->proto->on_deadline(c); /* may close c */
    else isv__conn_close(c);                /* silent since it connected: idle */
    return;
  }
  arm(c);
}

/* ---- read batching ------------------------------------------------------------------------ */

void isv__conn_set_lowat(isv__conn *c, int v) {
  if (c->lowat_off || v == (c->lowat ? c->lowat : 1)) return;
#if defined(SO_RCVLOWAT) && !defined(_WIN32)
  uv_os_fd_t fd;
  if (uv_fileno((const uv_handle_t *)c->stream, &fd) == 0 &&
      setsockopt(fd, SOL_SOCKET, SO_RCVLOWAT, &v, sizeof v) == 0) {
    c->lowat = v;
    return;
  }
#endif
  c->lowat_off = 1; /* a pipe, or a platform without it: read as bytes come */
}

static void uvc_batch_reads(isv__conn *c, size_t must_come) {
  if (must_come > ISV__LOWAT_MAX) must_come = ISV__LOWAT_MAX;
  isv__conn_set_lowat(c, must_come >= ISV__LOWAT_MIN ? (int)must_come : 1);
  uint64_t w = c->lowat > 1 ? uv_now(c->t->loop) + ISV__LOWAT_WATCHDOG_MS : 0;
  if (w != c->watchdog) {
    c->watchdog = w;
    arm(c);
  }
}

/* ---- writing ------------------------------------------------------------------------------ */

/* A write of more than ISV__WRITE_SLICE is given to libuv a slice at a time, the next from the
 * previous one's callback while the connection's budget for this loop turn lasts, else from its
 * timer next turn (conn.h): a non-blocking write() to loopback keeps copying while the reader
 * drains, and one 37 MiB write held the host's loop ~31 ms (bench/RESULTS.md, loop stall).
 * Writes behind a sliced one wait in the connection's queue (wq_head) so that bytes go out in
 * order. */
#define ISV__WRITE_SLICE_IOV 64

typedef struct conn_write {
  uv_write_t req;
  isv__conn *c;
  size_t len;
  isv__write_cb cb;
  void *ctx;
  /* a queued write (sliced, or behind one) */
  struct conn_write *next;
  uv_buf_t *pieces; /* the caller's array, copied */
  uv_buf_t *rest;   /* the pieces not given to libuv yet (in `pieces`) */
  size_t n_rest;
  int in_libuv;    /* a slice of it is with libuv (its req in use) */
} conn_write;

static void run_done(isv__conn *c);

static void write_done(conn_write *w, int status) {
  isv__conn *c = w->c;
  /* A write the kernel took at once came before this one: its callback first (libuv runs its
   * completions before the idle handles of the turn). */
  run_done(c);
  c->write_pending -= w->len;
  if (c->write_pending == 0 && c->write_check) {
    c->write_check = 0;
    arm(c);
  }
  isv__write_cb cb = w->cb;
  void *ctx = w->ctx;
  isv__free(w->pieces);
  isv__free(w);
  cb(c, ctx, status);
}

static void on_write(uv_write_t *req, int status) { write_done((conn_write *)req, status); }

static void on_slice_written(uv_write_t *req, int status);

/* Give libuv the next slice of the queue's head. 0, or libuv's error. */
static int next_slice(conn_write *w) {
  isv__conn *c = w->c;
  uv_buf_t slice[ISV__WRITE_SLICE_IOV];
  size_t k = 0, bytes = 0;
  while (w->n_rest && k < ISV__WRITE_SLICE_IOV && bytes < ISV__WRITE_SLICE) {
    uv_buf_t *b = w->rest;
    size_t take = b->len < ISV__WRITE_SLICE - bytes ? b->len : ISV__WRITE_SLICE - bytes;
    slice[k++] = uv_buf_init(b->base, (unsigned)take);
    bytes += take;
    b->base += take;
    b->len -= take;
    if (b->len == 0) {
      w->rest++;
      w->n_rest--;
    }
  }
  int rc = uv_write(&w->req, c->stream, slice, (unsigned)k, on_slice_written);
  if (rc == 0) {
    w->in_libuv = 1;
    c->held -= bytes;
  }
  return rc;
}

/* Every queued write fails (the connection is closing, or libuv refused): callbacks in order.
 * The queue is taken first: a callback may start new writes. */
static void fail_queue(isv__conn *c, int status) {
  conn_write *w = c->wq_head;
  c->wq_head = c->wq_tail = NULL;
  while (w) {
    conn_write *next = w->next;
    for (size_t i = 0; i < w->n_rest; i++) c->held -= w->rest[i].len;
    write_done(w, status);
    w = next;
  }
}

/* Give libuv the next slice of the queue's head, or finish the head and go on with the next.
 * A callback may write more meanwhile: a head whose slice is already with libuv waits. */
static void pump(isv__conn *c) {
  while (c->wq_head && !c->wq_head->in_libuv) {
    conn_write *w = c->wq_head;
    if (w->n_rest) {
      int rc = next_slice(w);
      if (rc != 0) fail_queue(c, rc);
      return;
    }
    c->wq_head = w->next; /* all written */
    if (c->wq_head == NULL) c->wq_tail = NULL;
    write_done(w, 0);
  }
}

/* The next slice goes out from here while this turn's budget lasts: libuv then writes it at once
 * and runs its callback in the same turn. Past the budget it waits for the timer — without the
 * check, a fast reader would take the whole response in one turn. */
static void on_slice_written(uv_write_t *req, int status) {
  conn_write *w = (conn_write *)req;
  isv__conn *c = w->c;
  w->in_libuv = 0;
  if (status != 0 || c->closing) {
    fail_queue(c, status ? status : UV_ECANCELED);
    return;
  }
  if (uv_hrtime() - c->write_burst_ns < c->t->slice_budget_ns) {
    pump(c);
    return;
  }
  c->pump_due = 1;
  arm(c);
}

int isv__conn_write(isv__conn *c, const uv_buf_t *bufs, size_t n, isv__write_cb cb, void *ctx) {
  if (c->closing) return ISV_ECANCELED;
  if (c->tls) return isv__tls_write(c, bufs, n, cb, ctx);
  return c->io->write(c, bufs, n, cb, ctx);
}

/* isv__conn.done_due: whose turn it is to run a write's deferred callback */
enum { DONE_AFTER_READ = 1, DONE_BY_IDLE = 2 };

/* The deferred callback of a write the kernel took at once (try_write): as write_done. */
static void run_done(isv__conn *c) {
  if (!c->done_due) return;
  int by_idle = c->done_due == DONE_BY_IDLE;
  c->done_due = 0;
  if (by_idle && !c->closing) uv_idle_stop(&c->done_idle); /* else its lines are not touched */
  c->write_pending -= c->done_len;
  if (c->write_pending == 0 && c->write_check) {
    c->write_check = 0;
    arm(c);
  }
  c->done_cb(c, c->done_ctx, c->done_status);
}

static void on_done_idle(uv_idle_t *h) { run_done(h->data); }

/* The usual write — a small answer, nothing else pending — goes to the kernel at once with
 * uv_try_write: libuv's uv_write would take it as fast, but then its completion stops watching
 * for POLLOUT, and libuv 1.44 re-submits a watcher it touched with an epoll_ctl(MOD) — one more
 * syscall per request. 1: taken whole, or failed (the callback is due next turn with the
 * status); 0: not at all or in part (*done: the bytes the kernel took; the rest goes to libuv). */
#define TRY_WRITE_IOV 16
static int try_write(isv__conn *c, const uv_buf_t *bufs, size_t n, size_t len, isv__write_cb cb,
                     void *ctx, size_t *done) {
  *done = 0;
  if (c->write_pending || c->wq_head || n > TRY_WRITE_IOV)
    return 0;
  int rc = uv_try_write(c->stream, bufs, (unsigned)n);
  if (rc == UV_EAGAIN || (rc >= 0 && (size_t)rc < len)) {
    *done = rc > 0 ? (size_t)rc : 0;
    return 0;
  }
  c->done_cb = cb;
  c->done_ctx = ctx;
  c->done_len = len;
  c->done_status = rc < 0 ? rc : 0; /* as uv_write's callback would have said */
  c->done_due = c->in_read ? DONE_AFTER_READ : DONE_BY_IDLE;
  /* From the read callback: on_read runs it as soon as the delivery returns — no extra turn,
   * no handle started, and the request's blocks go back before the next connection's read
   * takes them (its exchange and write blocks stay warm: bench/RESULTS.md "Warm blocks"). From
   * anywhere else (a timer, a completion from the worker pool, a check or prepare callback)
   * only an idle handle is sure to run soon. */
  if (!c->in_read) uv_idle_start(&c->done_idle, on_done_idle);
  return 1;
}

static int uvc_write(isv__conn *c, const uv_buf_t *bufs, size_t n, isv__write_cb cb, void *ctx) {
  if (c->closing) return ISV_ECANCELED;
  size_t len = 0, done = 0;
  for (size_t i = 0; i < n; i++) len += bufs[i].len;
  if (len <= ISV__WRITE_SLICE && try_write(c, bufs, n, len, cb, ctx, &done)) {
    c->write_pending += len;
    c->write_total += len;
    return 0;
  }
  uv_buf_t rest[TRY_WRITE_IOV];
  if (done) { /* the kernel took the first `done` bytes: libuv writes the others */
    size_t k = 0, skip = done;
    for (size_t i = 0; i < n; i++) {
      if (skip >= bufs[i].len) {
        skip -= bufs[i].len;
        continue;
      }
      rest[k++] = uv_buf_init(bufs[i].base + skip, (unsigned)(bufs[i].len - skip));
      skip = 0;
    }
    bufs = rest;
    n = k;
  }
  conn_write *w = isv__calloc(c->t->mem, 1, sizeof *w);
  if (w == NULL) return ISV_ENOMEM;
  w->c = c;
  w->cb = cb;
  w->ctx = ctx;
  w->len = len;
  if (c->wq_head == NULL && w->len <= ISV__WRITE_SLICE) { /* the usual case: straight to libuv */
    if (uv_write(&w->req, c->stream, bufs, (unsigned)n, on_write) != 0) { /* copies bufs */
      isv__free(w);
      return ISV_EIO;
    }
  } else {
    w->pieces = w->rest = isv__malloc(c->t->mem, (n ? n : 1) * sizeof *w->rest);
    if (w->rest == NULL) {
      isv__free(w);
      return ISV_ENOMEM;
    }
    memcpy(w->rest, bufs, n * sizeof *bufs);
    w->n_rest = n;
    c->held += w->len;
    int first = c->wq_head == NULL;
    if (first) c->write_burst_ns = uv_hrtime();
    if (c->wq_tail) c->wq_tail->next = w;
    else c->wq_head = w;
    c->wq_tail = w;
    if (first && next_slice(w) != 0) {
      c->wq_head = c->wq_tail = NULL;
      c->held -= w->len;
      isv__free(w->pieces);
      isv__free(w);
      return ISV_EIO;
    }
  }
  c->write_pending += w->len;
  c->write_total += w->len;
  if (c->write_check == 0 && queued(c) && c->t->limits.send_timeout_ms) {
    /* the kernel did not take it all: watch its progress */
    c->write_mark = c->write_total - queued(c);
    c->write_check = uv_now(c->t->loop) + c->t->limits.send_timeout_ms;
    arm(c);
  }
  return 0;
}

/* The transport's list of idle connections (transport.h): appended when one becomes idle, so
 * the head is the one idle the longest. */
static void idle_unlink(isv__conn *c) {
  isv__transport *t = c->t;
  if (c->idle_prev) c->idle_prev->idle_next = c->idle_next;
  else if (t->idle_head == c) t->idle_head = c->idle_next;
  if (c->idle_next) c->idle_next->idle_prev = c->idle_prev;
  else if (t->idle_tail == c) t->idle_tail = c->idle_prev;
  c->idle_prev = c->idle_next = NULL;
}

void isv__conn_idle(isv__conn *c, int idle) {
  idle = idle != 0 && !c->closing && !c->lingering;
  if (idle == c->idle) return;
  c->idle = idle;
  if (!idle) {
    idle_unlink(c);
    return;
  }
  isv__transport *t = c->t;
  c->idle_since = isv__conn_now(c);
  c->idle_prev = t->idle_tail;
  if (t->idle_tail) t->idle_tail->idle_next = c;
  else t->idle_head = c;
  t->idle_tail = c;
}

int isv__conn_reserve(isv__conn *c, size_t n) {
  isv__transport *t = c->t;
  if (isv__budget_take(&t->receiving, n) != 0) {
    if (t->h.log)
      t->h.log(t->h.app, ISV_LOG_INFO, "request refused: the request bytes being received "
                                       "would exceed the server's budget");
    return -1;
  }
  return 0;
}

void isv__conn_release(isv__conn *c, size_t n) { isv__budget_give(&c->t->receiving, n); }

int isv__conn_body_too_slow(const isv__conn *c, uint64_t elapsed_ms, size_t got) {
  const isv__transport_limits *l = &c->t->limits;
  if (l->min_body_rate == 0) return 0;
  /* mod_reqtimeout's MinRate: the grace, plus one second per min_body_rate bytes received */
  double allowed_ms = (double)l->min_rate_grace_ms + (double)got * 1000.0 / (double)l->min_body_rate;
  return (double)elapsed_ms > allowed_ms ? -1 : 0;
}

uint64_t isv__conn_body_deadline(const isv__conn *c, uint64_t elapsed_ms, size_t got) {
  const isv__transport_limits *l = &c->t->limits;
  uint64_t ms = l->header_timeout_ms;
  if (l->min_body_rate) {
    double allowed_ms = (double)l->min_rate_grace_ms + (double)got * 1000.0 / (double)l->min_body_rate;
    double left = allowed_ms - (double)elapsed_ms;
    /* past it by 1 ms when it fires, so that isv__conn_body_too_slow says so */
    uint64_t rate_ms = left < 0 ? 1 : left > 1e12 ? (uint64_t)1e12 : (uint64_t)left + 1;
    if (ms == 0 || rate_ms < ms) ms = rate_ms;
  }
  return ms;
}

/* ---- reading ------------------------------------------------------------------------------ */

static void uvc_read_stop(isv__conn *c) {
  if (c->reading) uv_read_stop(c->stream);
  c->reading = 0;
  arm(c); /* a timer left running with nothing due is stopped now (arm) */
}

static void uvc_read_start(isv__conn *c) {
  if (c->reading || c->closing) return;
  c->read_burst_ns = 0;
  if (uv_read_start(c->stream, on_alloc, on_read) == 0) c->reading = 1;
  else isv__conn_close(c);
}

/* Reads go a slice per read() while the connection's budget for this loop turn lasts (conn.h):
 * a body read in place, or the shared buffer an engine parses from (HTTP/2 frames, a gRPC
 * message copied out of them). Past the budget, an empty buffer: libuv ends its read loop with
 * UV_ENOBUFS, leaves the socket watched, and the next turn's poll finds it readable again. */
static void on_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf) {
  (void)hint;
  isv__conn *c = h->data;
  buf->base = NULL;
  if (c->proto && c->proto->read_buf && c->tls == NULL) c->proto->read_buf(c, buf); /* TLS:
                                                     * records land in the shared buffer */
  if (buf->base == NULL) *buf = uv_buf_init(c->t->rbuf, sizeof c->t->rbuf);
  else if (buf->len > ISV__READ_SLICE) buf->len = ISV__READ_SLICE;
  /* The clock is read from a burst's second read on: a small request's one short read (most
   * of them) costs no clock read; the first read's slice is outside the budget. */
  if (c->read_burst_ns == 0) {
    c->read_burst_ns = ISV__BURST_UNSTAMPED;
    return;
  }
  uint64_t now = uv_hrtime();
  if (c->read_burst_ns == ISV__BURST_UNSTAMPED) {
    c->read_burst_ns = now;
  } else if (now - c->read_burst_ns >= c->t->slice_budget_ns) {
    c->read_burst_ns = 0; /* the next read is next turn's first */
    c->read_yield = 1;
    c->read_yields++;
    *buf = uv_buf_init(NULL, 0);
  }
}

/* The first bytes choose the engine: the HTTP/2 preface is 24 bytes and may arrive split, so a
 * prefix of it waits in c->sniff until it matches or stops matching. */
static void sniff(isv__conn *c, const char *data, size_t len) {
  size_t want = ISV__H2_PREFACE_LEN - c->sniff_len, take = len < want ? len : want;
  memcpy(c->sniff + c->sniff_len, data, take);
  c->sniff_len += take;
  int is_prefix = memcmp(c->sniff, ISV__H2_PREFACE, c->sniff_len) == 0;
  if (is_prefix && c->sniff_len < ISV__H2_PREFACE_LEN) return; /* need more */
  c->proto = is_prefix ? &isv__http2_proto : &isv__http1_proto;
  char held[ISV__H2_PREFACE_LEN];
  size_t n = c->sniff_len;
  memcpy(held, c->sniff, n);
  if (c->proto->start(c, held, n) != 0 || c->closing) return;
  if (len > take) c->proto->on_read(c, data + take, len - take);
  /* accepted as its listener closed: what the client sent before seeing it close is served,
   * then the engine ends the connection as every other one of the close (isv__conn_shutdown) */
  if (c->late && !c->closing) c->proto->shutdown(c);
}

void isv__conn_tls_due(isv__conn *c, uint64_t now) {
  if (c->tls_check == 0 || c->tls_check > now) return;
  uint64_t again = isv__tls_quiet(c);
  c->tls_check = again ? now + again : 0;
}

void isv__conn_deliver(isv__conn *c, const char *data, size_t len) {
  if (c->proto == NULL) sniff(c, data, len);
  else c->proto->on_read(c, data, len);
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf) {
  isv__conn *c = s->data;
  if (nread == UV_ENOBUFS && c->read_yield) { /* on_alloc's: until the next turn */
    c->read_yield = 0;
    return;
  }
  if (nread == 0 || c->closing) return;
  if (c->lingering) { /* the answer is out: what the client still sends is dropped */
    if (nread < 0 || (c->linger_bytes += (size_t)nread) > ISV__LINGER_BYTES) isv__conn_close(c);
    return;
  }
  if (nread < 0) {
    if (nread == UV_EOF && c->proto) {
      isv__conn_read_stop(c);
      c->proto->on_eof(c);
    } else {
      isv__conn_close(c);
    }
    return;
  }
  if ((size_t)nread < buf->len) c->read_burst_ns = 0; /* drained: the next read starts a burst */
  c->in_read = 1;
  if (c->tls) isv__tls_on_read(c, buf->base, (size_t)nread, isv__conn_deliver);
  else isv__conn_deliver(c, buf->base, (size_t)nread);
  /* a write the kernel took meanwhile: its callback now that the write call has returned (one
   * it makes, a pipelined request's answer, comes back here too) */
  while (c->done_due && !c->closing) run_done(c);
  c->in_read = 0;
  if (c->arm_due) {
    c->arm_due = 0;
    arm(c);
  }
}

/* ---- life --------------------------------------------------------------------------------- */

static void handle_gone(isv__conn *c) {
  if (--c->handles_open > 0) return;
  isv__transport *t = c->t;
  t->n_closing--;
  if (c->prev) c->prev->next = c->next;
  else t->conns = c->next;
  if (c->next) c->next->prev = c->prev;
  t->n_conns--;
  isv__tls_free(c);
  isv__free(c->identity);
  isv__free(c);
  isv__transport_conn_gone(t);
}

static void on_timer_closed(uv_handle_t *h) { handle_gone(h->data); }
static void on_idle_closed(uv_handle_t *h) { handle_gone(h->data); }

static void on_stream_closed(uv_handle_t *h) {
  isv__conn *c = h->data;
  run_done(c); /* a write the kernel took before the close: its callback, with its status */
  fail_queue(c, UV_ECANCELED); /* writes waiting for their turn when the connection closed */
  if (c->adopted) {
    h->data = c->adopted_data; /* the host's again */
    if (c->adopted_closed) c->adopted_closed(h);
  }
  handle_gone(c);
}

static void uvc_close(isv__conn *c) {
  if (c->closing) return;
  isv__conn_idle(c, 0); /* no longer one to close to make room */
  c->closing = 1;
  c->t->n_closing++;
  if (c->proto) c->proto->free(c);
  c->proto_state = NULL;
  uv_close((uv_handle_t *)c->stream, on_stream_closed);
  uv_close((uv_handle_t *)&c->timer, on_timer_closed);
  uv_close((uv_handle_t *)&c->done_idle, on_idle_closed);
}

static void on_shutdown(uv_shutdown_t *req, int status) {
  (void)status;
  isv__free(req);
}

static void uvc_linger_close(isv__conn *c) {
  if (c->closing || c->lingering) return;
  if (c->proto) c->proto->free(c);
  c->proto = NULL;
  c->proto_state = NULL;
  isv__conn_idle(c, 0); /* its last answer is on its way to the client */
  c->lingering = 1;
  c->watchdog = c->write_check = 0;
  isv__conn_set_lowat(c, 1);
  uv_shutdown_t *req = isv__malloc(c->t->mem, sizeof *req);
  if (req == NULL || uv_shutdown(req, c->stream, on_shutdown) != 0) {
    isv__free(req);
    isv__conn_close(c);
    return;
  }
  isv__conn_deadline(c, ISV__LINGER_MS); /* no engine: the deadline closes (on_timer) */
  isv__conn_read_start(c);
}

const isv__conn_io isv__conn_uv_io = {
    .write = uvc_write,
    .deadline = uvc_deadline,
    .read_stop = uvc_read_stop,
    .read_start = uvc_read_start,
    .batch_reads = uvc_batch_reads,
    .close = uvc_close,
    .linger_close = uvc_linger_close,
    .tls_check = uvc_tls_check,
    .now_ms = uvc_now,
    .now_ns = uvc_now_ns,
};

isv__conn *isv__conn_new(isv__transport *t, uv_stream_t *stream, int adopted) {
  isv__conn *c = isv__calloc(t->mem, 1, sizeof *c);
  if (c == NULL) return NULL;
  c->io = &isv__conn_uv_io;
  c->t = t;
  c->adopted = adopted;
  if (adopted) {
    c->stream = stream;
    c->adopted_data = stream->data;
  } else {
    uv_tcp_init(t->loop, &c->tcp);
    c->stream = (uv_stream_t *)&c->tcp;
  }
  c->stream->data = c;
  uv_timer_init(t->loop, &c->timer);
  c->timer.data = c;
  uv_idle_init(t->loop, &c->done_idle);
  c->done_idle.data = c;
  c->handles_open = 3;
  isv__conn_idle(c, 1); /* nothing asked yet */
  c->next = t->conns;
  if (t->conns) t->conns->prev = c;
  t->conns = c;
  t->n_conns++;
  return c;
}

/* "ip:port" or "[ip6]:port" of a TCP peer, "unix" for a pipe, "" when unknown. */
static void read_peer(isv__conn *c) {
  c->peer[0] = '\0';
  if (c->stream->type == UV_NAMED_PIPE) {
    memcpy(c->peer, "unix", 5);
    return;
  }
  struct sockaddr_storage ss;
  int len = sizeof ss;
  if (c->stream->type != UV_TCP ||
      uv_tcp_getpeername((uv_tcp_t *)c->stream, (struct sockaddr *)&ss, &len) != 0)
    return;
  char ip[INET6_ADDRSTRLEN] = "";
  if (ss.ss_family == AF_INET) {
    const struct sockaddr_in *a = (const struct sockaddr_in *)&ss;
    uv_ip4_name(a, ip, sizeof ip);
    snprintf(c->peer, sizeof c->peer, "%s:%u", ip, (unsigned)ntohs(a->sin_port));
  } else if (ss.ss_family == AF_INET6) {
    const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)&ss;
    uv_ip6_name(a, ip, sizeof ip);
    snprintf(c->peer, sizeof c->peer, "[%s]:%u", ip, (unsigned)ntohs(a->sin6_port));
  }
}

int isv__conn_stamp(const isv__conn *c, isv__exchange *ex) {
  memcpy(ex->peer, c->peer, sizeof ex->peer);
  if (c->identity == NULL) return 0;
  size_t n = strlen(c->identity) + 1;
  if ((ex->identity = isv__malloc(c->t->mem, n)) == NULL) return ISV_ENOMEM;
  memcpy(ex->identity, c->identity, n);
  return 0;
}

void isv__conn_start(isv__conn *c) {
  if (c->stream->type == UV_TCP) uv_tcp_nodelay((uv_tcp_t *)c->stream, 1);
  read_peer(c);
  /* a TLS client has the handshake timeout to finish its handshake, then the idle one */
  isv__conn_deadline(c, c->tls && c->t->limits.tls_handshake_timeout_ms
                            ? c->t->limits.tls_handshake_timeout_ms
                            : c->t->limits.idle_timeout_ms);
  isv__conn_read_start(c);
}

void isv__conn_shutdown(isv__conn *c) {
  if (c->closing) return;
  if (c->proto) c->proto->shutdown(c);
  else if (!c->late) isv__conn_close(c); /* not a byte yet (a late one: at its first, sniff) */
}
