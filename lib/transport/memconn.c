/* The transport seam in memory (memconn.h): what conn.c does with a socket and a loop, done
 * with a buffer and the caller's clock, so that the engines' tests and fuzzers need neither. */
#include "transport/memconn.h"

#include <string.h>

#include "transport/tls.h"

struct isv__memconn_write {
  isv__write_cb cb;
  void *ctx;
  size_t end; /* its last byte + 1, in out */
  size_t len;
};

static isv__memconn *mem_of(isv__conn *c) { return (isv__memconn *)(void *)c; }
static const isv__memconn *cmem_of(const isv__conn *c) {
  return (const isv__memconn *)(const void *)c;
}

static uint64_t mc_now(const isv__conn *c) { return *cmem_of(c)->clock; }
/* Durations only: the ms clock is fine enough for a test. */
static uint64_t mc_now_ns(const isv__conn *c) { return *cmem_of(c)->clock * 1000000u; }

static void mc_deadline(isv__conn *c, uint64_t ms) {
  if (c->closing) return;
  c->deadline = ms ? mc_now(c) + ms : 0;
}

static void mc_tls_check(isv__conn *c, uint64_t ms) {
  if (!c->closing) c->tls_check = mc_now(c) + ms;
}

static int mc_write(isv__conn *c, const uv_buf_t *bufs, size_t n, isv__write_cb cb, void *ctx) {
  isv__memconn *m = mem_of(c);
  if (c->closing || m->shut_wr) return ISV_ECANCELED; /* (after a hangup: accepted, fails) */
  size_t len = 0;
  for (size_t i = 0; i < n; i++) len += bufs[i].len;
  if (m->n_writes == m->writes_cap) {
    size_t cap = m->writes_cap ? 2 * m->writes_cap : 16;
    isv__memconn_write *w = isv__realloc(c->t->mem, m->writes, cap * sizeof *w);
    if (w == NULL) return ISV_ENOMEM;
    m->writes = w;
    m->writes_cap = cap;
  }
  if (m->out_len + len > m->out_cap) {
    size_t cap = m->out_cap ? m->out_cap : 4096;
    while (cap < m->out_len + len) cap *= 2;
    char *out = isv__realloc(c->t->mem, m->out, cap);
    if (out == NULL) return ISV_ENOMEM;
    m->out = out;
    m->out_cap = cap;
  }
  for (size_t i = 0; i < n; i++) {
    if (bufs[i].len) memcpy(m->out + m->out_len, bufs[i].base, bufs[i].len);
    m->out_len += bufs[i].len;
  }
  m->writes[m->n_writes++] = (isv__memconn_write){cb, ctx, m->out_len, len};
  c->write_pending += len; /* the seam's contract (conn.h): until its callback */
  if (m->write_check == 0 && c->t->limits.send_timeout_ms) { /* watch the peer's progress */
    m->write_mark = isv__memconn_accepted(m);
    m->write_check = mc_now(c) + c->t->limits.send_timeout_ms;
  }
  return 0;
}

static void mc_read_stop(isv__conn *c) { c->reading = 0; }
static void mc_read_start(isv__conn *c) {
  if (!c->closing) c->reading = 1;
}
static void mc_batch_reads(isv__conn *c, size_t must_come) { mem_of(c)->must_come = must_come; }

static void mc_close(isv__conn *c) {
  if (c->closing) return;
  isv__conn_idle(c, 0);
  c->closing = 1;
  c->reading = 0;
  if (c->proto) c->proto->free(c);
  c->proto_state = NULL;
}

static void mc_linger_close(isv__conn *c) {
  isv__memconn *m = mem_of(c);
  if (c->closing || c->lingering) return;
  if (c->proto) c->proto->free(c);
  c->proto = NULL;
  c->proto_state = NULL;
  isv__conn_idle(c, 0);
  c->lingering = 1;
  m->write_check = 0;
  m->shut_wr = 1;
  mc_deadline(c, ISV__LINGER_MS); /* no engine: the deadline closes (isv__memconn_fire) */
  mc_read_start(c);
}

const isv__conn_io isv__memconn_io = {
    .write = mc_write,
    .deadline = mc_deadline,
    .read_stop = mc_read_stop,
    .read_start = mc_read_start,
    .batch_reads = mc_batch_reads,
    .close = mc_close,
    .linger_close = mc_linger_close,
    .tls_check = mc_tls_check,
    .now_ms = mc_now,
    .now_ns = mc_now_ns,
};

isv__memconn *isv__memconn_new(isv__transport *t, const uint64_t *clock) {
  isv__memconn *m = isv__calloc(t->mem, 1, sizeof *m);
  if (m == NULL) return NULL;
  m->clock = clock;
  m->c.io = &isv__memconn_io;
  m->c.t = t;
  m->c.reading = 1;
  memcpy(m->c.peer, "memory", 7);
  isv__conn_idle(&m->c, 1); /* nothing asked yet */
  m->c.deadline = *clock + t->limits.idle_timeout_ms; /* as conn.c starts one */
  if (t->limits.idle_timeout_ms == 0) m->c.deadline = 0;
  return m;
}

size_t isv__memconn_feed(isv__memconn *m, const void *data, size_t len) {
  isv__conn *c = &m->c;
  const char *p = data;
  size_t fed = 0;
  while (fed < len && c->reading && !c->closing) {
    size_t n = len - fed;
    if (c->lingering) { /* the answer is out: what the peer still sends is dropped */
      if ((c->linger_bytes += n) > ISV__LINGER_BYTES) mc_close(c);
      return len;
    }
    uv_buf_t b = uv_buf_init(NULL, 0);
    /* TLS: records are not the engine's bytes, nothing is read in place (conn.c's on_alloc) */
    if (c->proto && c->proto->read_buf && c->tls == NULL) c->proto->read_buf(c, &b);
    if (b.base) { /* read in place, as conn.c's on_alloc lets the engine ask */
      if (n > b.len) n = b.len;
      if (n > ISV__READ_SLICE) n = ISV__READ_SLICE;
      memcpy(b.base, p + fed, n);
      fed += n;
      isv__conn_deliver(c, b.base, n);
    } else {
      if (n > ISV__READ_BUF) n = ISV__READ_BUF;
      fed += n;
      if (c->tls) isv__tls_on_read(c, p + fed - n, n, isv__conn_deliver);
      else isv__conn_deliver(c, p + fed - n, n);
    }
  }
  return fed;
}

void isv__memconn_eof(isv__memconn *m) {
  isv__conn *c = &m->c;
  m->eof = 1;
  if (c->closing) return;
  if (c->lingering || c->proto == NULL) {
    mc_close(c);
    return;
  }
  mc_read_stop(c);
  c->proto->on_eof(c);
}

/* Complete the writes that are done (status 0), or all of them (status < 0), oldest first; a
 * callback may write more. Whether any ran. */
static int complete(isv__memconn *m, int status) {
  int ran = 0;
  while (m->n_writes && (status < 0 || m->writes[0].end <= isv__memconn_accepted(m))) {
    isv__memconn_write w = m->writes[0];
    memmove(m->writes, m->writes + 1, --m->n_writes * sizeof *m->writes);
    m->c.write_pending -= w.len;
    if (m->n_writes == 0) m->write_check = 0; /* nothing out: nothing to watch */
    w.cb(&m->c, w.ctx, status);
    ran = 1;
  }
  if (m->taken == m->out_len && m->n_writes == 0) m->taken = m->out_len = 0;
  return ran;
}

size_t isv__memconn_take(isv__memconn *m, void *dst, size_t max) {
  size_t n = m->out_len - m->taken;
  if (n > max) n = max;
  if (dst && n) memcpy(dst, m->out + m->taken, n);
  m->taken += n;
  complete(m, m->c.closing ? UV_ECANCELED : m->hung_up ? UV_EPIPE : 0);
  return n;
}

int isv__memconn_settle(isv__memconn *m) {
  return complete(m, m->c.closing ? UV_ECANCELED : m->hung_up ? UV_EPIPE : 0);
}

void isv__memconn_hangup(isv__memconn *m) {
  m->hung_up = 1;
  if (!m->eof) isv__memconn_eof(m);
}

uint64_t isv__memconn_next(const isv__memconn *m) {
  if (m->c.closing) return 0;
  uint64_t at = m->c.deadline;
  if (m->write_check && (at == 0 || m->write_check < at)) at = m->write_check;
  if (m->c.tls_check && (at == 0 || m->c.tls_check < at)) at = m->c.tls_check;
  return at;
}

void isv__memconn_fire(isv__memconn *m) {
  isv__conn *c = &m->c;
  uint64_t now = *m->clock;
  if (c->closing) return;
  if (m->write_check && m->write_check <= now) {
    size_t took = isv__memconn_accepted(m);
    if (m->n_writes && took == m->write_mark) { /* nothing taken since the last look */
      m->reset = 1;
      mc_close(c);
      return;
    }
    m->write_mark = took;
    m->write_check = m->n_writes ? now + c->t->limits.send_timeout_ms : 0;
  }
  isv__conn_tls_due(c, now);
  if (c->deadline && c->deadline <= now) {
    c->deadline = 0;
    if (c->proto) c->proto->on_deadline(c); /* may close c */
    else mc_close(c);                       /* silent since it connected, or lingering */
  }
}

void isv__memconn_free(isv__memconn *m) {
  if (m == NULL) return;
  mc_close(&m->c);
  isv__memconn_settle(m);
  isv__tls_free(&m->c); /* after the writes' callbacks, as conn.c's handle_gone */
  isv__free(m->writes);
  isv__free(m->out);
  isv__free(m->c.identity);
  isv__free(m);
}
