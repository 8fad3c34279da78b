/* A min-heap of timed entries (request deadlines, a model's batching delay, a sequence's idle
 * timeout, the drain deadline): the core arms ONE uv_timer at the earliest instead of one
 * timer per request, whose handles would each need an asynchronous close before their owner
 * could be freed. Each entry lives inside its owner and knows its position, so an owner that
 * goes away (a request answered before its deadline) leaves in O(log n). Pure: no clock, no
 * loop; loop thread only. */
#ifndef ISV_CORE_TIMEHEAP_H
#define ISV_CORE_TIMEHEAP_H

#include "core/layer.h"

#include "codec/mem.h"

#include <stddef.h>
#include <stdint.h>

typedef struct isv__timed {
  uint64_t when; /* ns, uv_hrtime()'s clock */
  size_t pos;    /* index in the heap + 1; 0 = not in the heap */
  int kind;      /* the owner's tag: which field of which struct this entry is */
} isv__timed;

typedef struct isv__timeheap {
  isv__timed **v;
  size_t n, cap;
  const isv_mem *mem; /* NULL: libc's */
} isv__timeheap;

void isv__timeheap_init(isv__timeheap *h, const isv_mem *mem);
void isv__timeheap_free(isv__timeheap *h);
/* Insert e at `when`, or move it there when it is already in. 0, or ISV_ENOMEM (e not in). */
int isv__timeheap_set(isv__timeheap *h, isv__timed *e, uint64_t when);
/* Take e out; nothing when it is not in. */
void isv__timeheap_remove(isv__timeheap *h, isv__timed *e);
/* The earliest entry, or NULL. */
isv__timed *isv__timeheap_top(const isv__timeheap *h);
static inline int isv__timed_armed(const isv__timed *e) { return e->pos != 0; }

#endif
