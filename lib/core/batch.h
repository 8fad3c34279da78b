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
/* The requests of q, from its head, that join the head, in queue order, up to max_rows rows
 * and max_n requests: their count, their rows in *rows. */
size_t isv__batch_pick(const isv__reqq *q, uint64_t max_rows, isv_request **out, size_t max_n,
                       uint64_t *rows);
/* Whether `rows` is one of the model's preferred batch sizes. */
int isv__batch_preferred(const isv_model_config *c, uint64_t rows);
/* Fill b — a new request holding a reference to the members' model — with the members' inputs
 * concatenated along dimension 0 (their memory copied into b), the outputs any of them asked
 * for (all, when one asked for none), and the first member's parameters. 0, or ISV_ENOMEM. */
int isv__batch_build(isv_request *b, isv_request **members, size_t n);
/* After b ran: each member gets b's status, or its own rows of each of b's outputs (pointing
 * into b, which each member then keeps alive: isv__batch_release) and b's response
 * parameters. An output whose first dimension is not the batch's rows fails every member. */
void isv__batch_split(isv_request *b);
/* Drop one reference to a batch request; the last frees it. */
void isv__batch_release(void *b);

#endif
