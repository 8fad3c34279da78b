/* The scheduler (core/scheduler.c): the path of a submitted request — bind, the edge's model
 * stage, validation, admission, the model's queue, execution on an instance (alone or in a
 * dynamic batch, on the loop or a worker thread), completion from any thread, the answer —
 * and cancellation, deadlines and the drain. Loop thread, but for isv_request_complete and
 * the responses of core/responses.h. */
#ifndef ISV_CORE_SCHEDULER_H
#define ISV_CORE_SCHEDULER_H

#include "core/layer.h"

#include "core/queries.h"
#include "core/request.h"

/* Resolve r's model_name / version / label and hold the model (a repository operation: its
 * hidden model, repository.c). 0, or r failed with ISV_ENOTFOUND (replacing any decode error:
 * an unknown model is reported first) or with ISV_EBADREQ when no model is named. isv__core_submit binds; a front end may bind before
 * decoding to skip the work for an unknown model, or because it needs the model to decode. */
int isv__request_bind(isv_request *r);

/* Submit a request already filled by a frontend (or the in-process API). `done` runs on the
 * loop thread exactly once — possibly before this returns. Returns 0; never fails otherwise:
 * every request-level error reaches `done`. */
void isv__core_submit(isv__core *c, isv_request *r, isv_infer_cb done, void *data);

/* The decision on a request that waited for it came (r failed when refused): it goes on from
 * where isv__core_submit left it. Loop thread. */
void isv__core_authorized(isv_request *r);

/* A request's client is gone (disconnect, RST_STREAM, gRPC cancel): one still queued is taken
 * out and finished ISV_ECANCELED without running (its done callback runs before this
 * returns); one running is marked cancelled for its backend. Nothing for a finished one. */
void isv__core_cancel(isv_request *r);
/* Whether r waits in its model's queue (submitted, not yet running nor finished). */
int isv__core_queued(const isv_request *r);

/* The server is closing: requests queued or running may finish for drain_ms (0: no limit);
 * then the queued ones are answered 503 without running and the running ones cancelled.
 * on_idle runs once nothing is in flight. */
void isv__core_begin_close(isv__core *c, uint64_t drain_ms);

/* The async handle's callback: finish the requests completed from other threads
 * (scheduler.c). */
void isv__core_drain_completions(uv_async_t *h);

/* Both the backend and its owner are done with an abandoned execution: free it (any thread;
 * not holding core->mu). */
void isv__abandoned_release(isv_request *x);

/* When r's deadline passes (uv_hrtime ns; a batch's: its earliest member's), 0 when none:
 * what a nested request it makes inherits (core/nested.c). Loop thread. */
uint64_t isv__request_deadline_ns(const isv_request *r);

/* Instances of m running an execution now (0 before its first request). */
unsigned isv__sched_busy(const isv_model *m);

#endif
