/* Models calling models (Triton's business logic scripting): a backend, on whatever thread it
 * runs, makes a request to another registered model of its server (isv_request_new_nested),
 * runs it with a callback (isv_request_submit) or waits for it (isv_request_run), and reads its
 * outputs. Ensembles (core/ensemble.h) are built on the same call.
 *
 * A nested request belongs to the request whose backend made it (its parent: the execution
 * handed to infer). The core runs it as any in-process request — bound, validated, queued,
 * scheduled, counted in its model's statistics under "inprocess" — with these additions:
 *  - it is submitted on the loop thread: from another thread it travels there through the
 *    core's async handle (core/offload.h's isv__offload_post); the parent, in flight, keeps
 *    the loop alive and the close waiting meanwhile;
 *  - it inherits the parent's remaining deadline and trace context; cancelling the parent
 *    (its client gone, its deadline, isv_request_cancel) cancels its nested requests in flight
 *    (isv__nested_cancel, called by the scheduler);
 *  - it may not run a model version that is on its own call chain (a cycle: it could wait for
 *    an instance its ancestor holds, forever) and the chain is at most ISV__NESTED_MAX_DEPTH
 *    deep;
 *  - its memory is released with its parent's at the latest, on the loop thread
 *    (isv__nested_free): its outputs may become the parent's outputs by reference
 *    (isv_request_set_output with ISV_STATIC) without a copy.
 *
 * Blocking (isv_request_run): never on the loop thread (ISV_ETHREAD: the loop would wait for
 * itself). Elsewhere the thread sleeps on a condition variable of its own, and two rules keep
 * a wait from ever waiting for a thread that cannot come:
 *  - the nested request's own ISV_EXEC_POOL execution (not a batch's) is handed to the waiting
 *    thread (the run_here hook, asked by the scheduler when it starts it), which runs it
 *    itself: no hop to a worker, and nothing else runs on the waiter's stack — only its own
 *    call chain, which has no cycle;
 *  - a pool worker that waits leaves the pool's count while it waits (isv__pool_block): the
 *    pool starts a thread when jobs wait and none is idle — an execution holding the instance
 *    the nested request needs may be queued behind the blocked workers.
 *
 * The scheduler, below this file in core/, reaches it through the core's nest_ops
 * (isv__nested_ops, core/request.h's isv__nest_ops) for a request whose nest is set: the
 * cancellation and release hooks here, the waiter's run_here, and in_flight (an inline backend
 * with a nested request in flight may return without completing).
 *
 * Locking: the nest fields below are under core->mu, except those written before the request
 * is visible to another thread (parent, depth) and the callback (written before submission,
 * read on the loop). */
#ifndef ISV_CORE_NESTED_H
#define ISV_CORE_NESTED_H

#include "core/layer.h"

#include <stdatomic.h>

#include "core/offload.h"
#include "core/request.h"

/* The longest chain of models calling models (the first nested request has depth 1). */
#define ISV__NESTED_MAX_DEPTH 16

typedef enum {
  ISV__NEST_NEW = 0, /* made, not submitted */
  ISV__NEST_POSTED,  /* submitted from another thread, on its way to the loop */
  ISV__NEST_RUNNING, /* in the core */
  ISV__NEST_DONE     /* its done callback ran */
} isv__nest_state;

typedef struct isv__nest_wait isv__nest_wait;

/* A request's part in nesting: as a nested request (parent != NULL), and as the parent of
 * nested requests (kids). In the request's arena. */
typedef struct isv__nest {
  isv_request *self;         /* the request this is the nest of */
  isv_request *parent;       /* the execution whose backend made it; NULL: only a parent */
  isv_request *prev, *next;  /* in the parent's kids */
  unsigned depth;            /* 1 for a request a client's request made */
  isv__nest_state state;
  int orphan;      /* its parent was freed while it ran: the library frees it when done */
  int cancel_sent; /* isv__nested_cancel reached it */
  int dropped;     /* its backend freed it off the loop: released with its parent */
  isv_infer_cb cb; /* isv_request_submit's; NULL with a waiter */
  void *cb_data;
  isv__nest_wait *wait; /* isv_request_run's */
  isv__offload post;    /* the trip to the loop (from another thread) */
  /* as a parent */
  unsigned in_flight;    /* its nested requests submitted and not done; under core->mu */
  isv_request *kids;     /* nested requests not yet released, newest first */
  unsigned busy;         /* the loop walks its kids (isv__nested_cancel): a free waits */
  int free_pending;      /* its owner freed it while kids lived (or while busy) */
} isv__nest;

/* isv_request_free's first step for a request with a nest (loop thread for the release; off
 * the loop a nested request is only marked, and released with its parent). 1: r is not
 * released now (its kids still run, it is walked, or it waits for its parent) — it will be.
 * 0: release r now; *then (may be set) is its parent, whose deferred free is due after it. */
int isv__nested_free(isv_request *r, isv_request **then);

/* x, an execution, was cancelled (client gone, deadline, drain): its nested requests in flight
 * are cancelled too — queued ones finish ECANCELED at once, running ones see
 * isv_request_is_cancelled. Loop thread. */
void isv__nested_cancel(isv_request *x);

/* These hooks, as the core holds them (isv__core_init: core->nest_ops) for the scheduler. */
extern const isv__nest_ops isv__nested_ops;

#endif
