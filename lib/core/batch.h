/* Dynamic batching's data work (core/scheduler.c decides when): which waiting requests can run
 * as one backend call, their inputs concatenated along dimension 0 into a batch request, and
 * the batch's outputs handed back to each request as its own rows. No loop, no clock. */
#ifndef ISV_CORE_BATCH_H
#define ISV_CORE_BATCH_H

#include "core/layer.h"

#include <stddef.h>
#include <stdint.h>

#include "core/request.h"

/* A request's rows: dimension 0 of its inputs (validation made them agree). */
uint64_t isv__batch_rows(const isv_request *r);
/* Whether b may run in one call with a: the same inputs by name, each with the same datatype
 * and dimensions beyond the first, and equal parameters (those the core itself reads —
 * timeout, sequence_*, priority — aside). */
int isv__batch_joinable(const isv_request *a, const isv_request *b);
/* The waiting requests from head on (next(r): the one after r in the scheduler's queue, NULL
 * at its end) that join head, in that order, up to max_rows rows and max_n requests: their
 * count, their rows in *rows. */
size_t isv__batch_pick(isv_request *head, isv_request *(*next)(const isv_request *),
                       uint64_t max_rows, isv_request **out, size_t max_n, uint64_t *rows);
/* Whether `rows` is one of the model's preferred batch sizes. */
int isv__batch_preferred(const isv_model_config *c, uint64_t rows);
/* A batch: one execution of several requests' rows. `req` is what the backend sees — the
 * members' inputs concatenated — and holds the outputs the members' rows point into after the
 * split. It lives in req's arena and goes with req, when its last reference is dropped. */
typedef struct isv__batch {
  isv_request *req;
  isv_request **members;
  size_t n_members;
  unsigned refs; /* members whose outputs point into req, + 1 (the scheduler's) while it runs */
} isv__batch;

/* Fill req — a new request holding a reference to the members' model — with the members'
 * inputs concatenated along dimension 0 (their memory copied into req), the outputs any of them
 * asked for (all, when one asked for none), and the first member's parameters. The batch (one
 * reference: the caller's), or NULL when out of memory (req is the caller's to free then). */
isv__batch *isv__batch_build(isv_request *req, isv_request **members, size_t n);
/* After b ran: each member gets b's status, or its own rows of each of b's outputs (pointing
 * into b's request, which each member then keeps alive: isv__batch_release) and b's response
 * parameters. An output whose first dimension is not the batch's rows fails every member. */
void isv__batch_split(isv__batch *b);
/* Drop one reference to a batch (an isv__batch *); the last frees its request. */
void isv__batch_release(void *b);

#endif
