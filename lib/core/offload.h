/* Work a front end moves off the loop thread: decoding or encoding a large JSON body takes
 * ~3 ms per MB, and the loop is the host's — its timers and its own sockets wait meanwhile.
 * The work runs on the server's worker pool (pool.h) and its continuation comes back to the
 * loop through the core's async handle, in the order the work finished.
 *
 * An offload is counted like a request in flight: the loop stays alive for it and the
 * server's close waits for it (isv__core_idle). Its struct is the caller's (embedded in what
 * it works on) and must live until `after` ran. */
#ifndef ISV_CORE_OFFLOAD_H
#define ISV_CORE_OFFLOAD_H

#include "core/layer.h"

#include <stddef.h>

#include "core/core.h"
#include "codec/zcoding.h"
#include "core/pool.h"

/* Bodies or responses of at least this many bytes are worth the trip to a worker thread (two
 * thread hand-offs, ~20-50 us): below it the work takes less than ~0.3 ms of the loop. */
#define ISV__OFFLOAD_MIN_BYTES ((size_t)96 << 10)

typedef struct isv__offload isv__offload;
struct isv__offload {
  isv__pool_job job;
  isv__core *core;
  void (*work)(isv__offload *o);  /* on a worker thread: must not touch loop-only state */
  void (*after)(isv__offload *o); /* then on the loop thread */
  isv__offload *next;             /* in the core's list of finished ones (under core->mu) */
  int posted;                     /* isv__offload_post's: never counted in core->offloads */
};

/* Run work on a worker thread, then after on the loop thread (never before this returns).
 * 0, or ISV_ENOMEM when no worker thread could be started — nothing ran: the caller does the
 * work itself. Loop thread. */
int isv__offload_run(isv__core *c, isv__offload *o, void (*work)(isv__offload *),
                     void (*after)(isv__offload *));

/* Work done by someone else — the host deciding on a thread of its own (an authorization):
 * counted now as an offload (the loop stays alive, the close waits), `after` runs on the loop
 * thread once isv__offload_finish(o) was called, exactly once, from any thread. Loop thread. */
void isv__offload_begin(isv__core *c, isv__offload *o, void (*after)(isv__offload *));
void isv__offload_finish(isv__offload *o);
/* Run after(o) on the loop thread, soon, from ANY thread — for a thread that has work for the
 * loop (a nested request a backend submits: core/nested.h). Not counted as an offload: the
 * caller holds something in flight (its running request) that keeps the loop alive and the
 * close waiting until after ran. 0, or ISV_ESTATE when the core closed (after never runs). */
int isv__offload_post(isv__core *c, isv__offload *o, void (*after)(isv__offload *));
/* ... or, when the work was done before it had to come back (the host decided inside its
 * callback): stop counting it, on the loop thread, without `after`. */
void isv__offload_end_now(isv__offload *o);

/* A coded body or message decoded by an inflater (codec/zcoding.h) the caller made: one slice
 * (ISV__INFLATE_LOOP_SLICE of output) here, on the loop — most bodies end there — and what is
 * left on a worker thread, so that a small body costs no thread hand-off and a large one never
 * holds the loop. done(j) runs on the loop thread with j->rc: 0, or the inflater's error —
 * before isv__offload_inflate_run returns when the slice was enough or no worker thread could
 * take the rest (it ran here then). Both HTTP bodies (Content-Encoding) and gRPC messages
 * (grpc-encoding) go this way. Loop thread. */
typedef struct isv__offload_inflate {
  isv__offload off;
  isv__inflater *f;
  int rc;
  void (*done)(struct isv__offload_inflate *j);
} isv__offload_inflate;
void isv__offload_inflate_run(isv__core *c, isv__offload_inflate *j,
                              void (*done)(isv__offload_inflate *j));

/* Free p (malloc'd) on a worker thread: unmapping tens of MB of small pages (a large JSON
 * response once written) takes ~10 ms. At once, here, when it cannot be offloaded. Loop
 * thread. */
#define ISV__FREE_LATER_MIN_BYTES ((size_t)1 << 20)
void isv__offload_free(isv__core *c, void *p);

/* The async handle's part: run the continuations of the offloads that finished (scheduler.c's
 * isv__core_drain_completions calls it). Loop thread. */
void isv__offload_drain(isv__core *c);

#endif
