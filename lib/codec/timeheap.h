/* A min-heap of timed entries, so that an owner of many deadlines arms ONE timer at the
 * earliest instead of one timer per entry, whose handles would each need an asynchronous close
 * before their owner could be freed. Its users: the core (request deadlines, a model's batching
 * delay, a sequence's idle timeout, the drain deadline: core/timeheap.h) and each HTTP/2
 * connection (its streams' deadlines, its own idle/send check and shutdown notice:
 * transport/http2.c). Each entry lives inside its owner and knows its position, so an owner
 * that goes away (a request answered before its deadline) leaves in O(log n).
 *
 * It lives in codec/ (the bottom layer: pure code every layer may use) rather than core/ because
 * the transport needs it too and may not include core/ (docs/ARCHITECTURE.md); it is pure — no
 * clock, no loop, the unit of `when` is its owner's — so it belongs with the other pure pieces.
 * One thread per heap (the owner's loop thread). */
#ifndef ISV_CODEC_TIMEHEAP_H
#define ISV_CODEC_TIMEHEAP_H

#include "codec/mem.h"

#include <stddef.h>
#include <stdint.h>

typedef struct isv__timed {
  uint64_t when; /* the owner's clock (core: uv_hrtime() ns; http2.c: the seam's ms) */
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
/* Make room for `n` entries in all, so that the next isv__timeheap_set calls of entries not
 * yet in (up to n in the heap) cannot fail: an owner that must never be left without its
 * deadline reserves when it is created, where a failure can still be refused. 0 or
 * ISV_ENOMEM. */
int isv__timeheap_reserve(isv__timeheap *h, size_t n);
/* Insert e at `when`, or move it there when it is already in. 0, or ISV_ENOMEM (e not in). */
int isv__timeheap_set(isv__timeheap *h, isv__timed *e, uint64_t when);
/* Take e out; nothing when it is not in. */
void isv__timeheap_remove(isv__timeheap *h, isv__timed *e);
/* The earliest entry, or NULL. */
isv__timed *isv__timeheap_top(const isv__timeheap *h);
static inline int isv__timed_armed(const isv__timed *e) { return e->pos != 0; }

#endif
