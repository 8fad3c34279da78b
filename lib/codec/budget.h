/* A count of bytes held against a cap, shared by threads: the server's receiving budget
 * (isv_options_set_max_receiving_bytes), which request bodies and gRPC messages hold while they
 * arrive (transport/) and decoded (inflated) bodies hold from the moment each byte comes out of
 * the decoder until the request lets go of them (protocol/content_coding.c, grpc_service.c).
 * Taking is a compare-and-swap, never past the cap; giving back is one atomic subtraction. */
#ifndef ISV_CODEC_BUDGET_H
#define ISV_CODEC_BUDGET_H

#include <stdatomic.h>
#include <stddef.h>

typedef struct isv__budget {
  atomic_size_t used;
  size_t cap; /* 0: no cap */
} isv__budget;

static inline void isv__budget_init(isv__budget *b, size_t cap) {
  atomic_init(&b->used, 0);
  b->cap = cap;
}

/* Take n bytes: 0, or -1 when that would pass the cap (nothing taken). A NULL budget: 0. */
static inline int isv__budget_take(isv__budget *b, size_t n) {
  if (b == NULL || n == 0) return 0;
  size_t u = atomic_load_explicit(&b->used, memory_order_relaxed);
  do {
    if (b->cap && (n > b->cap || u > b->cap - n)) return -1;
  } while (!atomic_compare_exchange_weak_explicit(&b->used, &u, u + n, memory_order_relaxed,
                                                  memory_order_relaxed));
  return 0;
}

/* Give back n bytes taken before (any thread). */
static inline void isv__budget_give(isv__budget *b, size_t n) {
  if (b && n) atomic_fetch_sub_explicit(&b->used, n, memory_order_relaxed);
}

static inline size_t isv__budget_used(isv__budget *b) {
  return atomic_load_explicit(&b->used, memory_order_relaxed);
}

#endif
