/* The transport seam in memory (conn.h, isv__conn_io): a connection with no socket and no
 * loop, for tests and fuzzers. The caller is the peer and the clock:
 *   - bytes in: isv__memconn_feed hands them to the engine as reads would (the sniff first, a
 *     body read in place where the engine asks for it, at most ISV__READ_SLICE per read), while
 *     the engine reads; what it does not take (it stopped reading) stays with the caller;
 *   - bytes out: every write is appended to `out` at once, in order; the peer reads them with
 *     isv__memconn_take. Between the two sits `sndbuf`, what a socket's kernel buffer would hold
 *     (0: none): a write is done once all its bytes are taken or fit in it, and its callback
 *     runs from isv__memconn_settle (or take) — never from inside the write, as on a socket —
 *     with UV_ECANCELED after the connection closed, UV_EPIPE after the peer hung up;
 *   - time: *clock (ms, the caller's; several connections may share one) is the seam's now;
 *     isv__memconn_next says when the connection's deadline, write check or TLS quiet check
 *     is due, and isv__memconn_fire runs what is due now — the engine's on_deadline, the close
 *     of a connection whose peer took nothing for the send timeout (`reset`), TLS giving back
 *     an idle connection's buffers — as conn.c does.
 * The connection is the caller's: it lives until isv__memconn_free, also after it closed. Its
 * transport is an isv__transport the caller initialised (limits, handler, memory; its loop may
 * be NULL: nothing here touches it). Bookkeeping (idle list, receiving budget) is the
 * transport's as for any connection. TLS works here too (isv__tls_attach before the first
 * feed): the bytes fed and taken are then records. One thread. */
#ifndef ISV_TRANSPORT_MEMCONN_H
#define ISV_TRANSPORT_MEMCONN_H

#include "transport/layer.h"

#include "transport/conn.h"

typedef struct isv__memconn_write isv__memconn_write;

typedef struct isv__memconn {
  isv__conn c; /* first: what the engines see */
  const uint64_t *clock;
  char *out;            /* everything written and not yet taken is out[taken..out_len) */
  size_t out_len, out_cap, taken;
  isv__memconn_write *writes; /* not yet completed, oldest first */
  size_t n_writes, writes_cap;
  size_t sndbuf;        /* what the "kernel" holds for the peer before it reads (the caller's) */
  size_t must_come;     /* the engine's last read-batching hint (isv__conn_batch_reads) */
  uint64_t write_check; /* as conn.c's: when to look at the peer's progress, 0: nothing out */
  size_t write_mark;    /* isv__memconn_accepted at the last look */
  int hung_up;          /* isv__memconn_hangup: writes fail */
  int shut_wr;          /* linger_close sent its FIN */
  int reset;            /* closed because the peer took nothing for the send timeout */
  int eof;              /* isv__memconn_eof was called */
} isv__memconn;

extern const isv__conn_io isv__memconn_io;

/* A new connection of t, idle (as accepted), its clock *clock. NULL: out of memory. */
isv__memconn *isv__memconn_new(isv__transport *t, const uint64_t *clock);
/* Give the engine up to len bytes; the bytes it took (fewer once it stops reading or the
 * connection closes). */
size_t isv__memconn_feed(isv__memconn *m, const void *data, size_t len);
/* The peer half-closed. */
void isv__memconn_eof(isv__memconn *m);
/* The peer closed its end: the engine reads the end, and every write not yet done fails
 * (UV_EPIPE), as on a socket whose client went. */
void isv__memconn_hangup(isv__memconn *m);
/* The peer reads at most max bytes of what was written: copied to dst (may be NULL), and the
 * writes now wholly taken complete (their callbacks run). The bytes taken. */
size_t isv__memconn_take(isv__memconn *m, void *dst, size_t max);
/* Bytes written and not yet taken. */
static inline size_t isv__memconn_pending(const isv__memconn *m) { return m->out_len - m->taken; }
/* Bytes the "kernel" took: read by the peer, or in sndbuf. */
static inline size_t isv__memconn_accepted(const isv__memconn *m) {
  return m->out_len - m->taken > m->sndbuf ? m->taken + m->sndbuf : m->out_len;
}
/* Complete the writes that are done (their callbacks), or after the close or a hangup fail
 * those still waiting. Whether any callback ran. */
int isv__memconn_settle(isv__memconn *m);
/* When something is due (ms on the clock): the deadline, the write check or the TLS quiet
 * check; 0: nothing. */
uint64_t isv__memconn_next(const isv__memconn *m);
/* Run what is due at *clock. */
void isv__memconn_fire(isv__memconn *m);
/* Close (if open), settle, and free. */
void isv__memconn_free(isv__memconn *m);

#endif
