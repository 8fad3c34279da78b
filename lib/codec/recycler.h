/* Small blocks kept for one thread: an isv_mem over another that keeps freed blocks of 16 KiB
 * or less, by size class, for its owner thread's next allocations.
 *
 * Why: a server's loop makes and frees ~20 small blocks per request (a stream, a call, a
 * request's first arena chunk, nghttp2's frames, the answer's buffer). With 64 requests in one
 * loop turn glibc's per-thread cache (7 blocks per size, none over 1 KiB) overflows, and the rest
 * go through _int_malloc and _int_free with their bin sorting and coalescing: 11% of a gRPC
 * request's samples. Here a block the owner thread frees waits in a list for its next
 * allocation of the same class: a pop, a push.
 *
 * A block is made at its class's size — the next multiple of 16 bytes up to 1 KiB (what malloc
 * rounds to anyway), of 128 bytes up to 16 KiB (an eighth more at most) — so that any kept
 * block of a class serves the next allocation of it.
 *
 * The rule between threads: only the owner touches the lists. Any thread may allocate and free
 * through the recycler's mem; a free on another thread goes to the allocator beneath at once,
 * and so does a block past the bounds, or larger than 16 KiB.
 *
 * Every block carries its class in the second 8 bytes of its isv__mem prefix (codec/mem.h gives
 * them to the allocator's functions). Sanitizer builds poison a kept block: a use after free
 * still trips ASan. */
#ifndef ISV_CODEC_RECYCLER_H
#define ISV_CODEC_RECYCLER_H

#include <stddef.h>
#include <stdint.h>

#include "codec/mem.h"

/* Size classes: every 16 bytes up to 1 KiB, every 128 bytes up to 16 KiB. Sizes are the whole
 * block's, prefix included. */
#define ISV__RECYCLER_CLASSES (64 + 120)
#define ISV__RECYCLER_MAX ((size_t)16 << 10)
/* Blocks kept per class at most, whatever the byte bound. */
#define ISV__RECYCLER_PER_CLASS 256

typedef struct isv__recycler_list {
  void *head;    /* each kept block's first 8 bytes point to the next */
  unsigned n;
  unsigned size; /* the class's block size, beside what a pop or a push reads anyway */
} isv__recycler_list;

typedef struct isv__recycler {
  isv_mem mem;          /* blocks are made with this (its user is the recycler): never copied */
  const isv_mem *under; /* where blocks come from and go back to */
  uintptr_t owner;      /* the one thread that keeps and takes blocks (recycler.c: self) */
  size_t limit;         /* bytes kept at most (0: none kept: every block goes back at once) */
  size_t held;          /* bytes kept now (owner) */
  uint64_t taken;       /* allocations served from a list (owner) */
  isv__recycler_list list[ISV__RECYCLER_CLASSES];
} isv__recycler;

/* r keeps up to `limit` bytes of freed blocks for the calling thread, its owner. Its blocks come
 * from `under` (NULL: libc's). */
void isv__recycler_init(isv__recycler *r, const isv_mem *under, size_t limit);
/* Gives every kept block back to the allocator beneath. Any thread, once no other uses r. Blocks
 * still out may be freed afterwards only while r's memory lives (they go back directly). */
void isv__recycler_destroy(isv__recycler *r);

#endif
