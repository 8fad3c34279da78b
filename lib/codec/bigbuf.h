/* Buffers for request bodies, gRPC messages and tensors, with a small cache of large blocks.
 *
 * Why: a 16 MiB tensor in fresh memory costs ~4,000 page faults (and their zeroing) every time
 * it is touched first, about ten times the cost of copying it into memory that is already
 * mapped. Large blocks (>= ISV__BIGBUF_BLOCK_MIN) are therefore mmap'd 2 MiB-aligned with
 * transparent huge pages requested, and a freed one is kept (up to the cache's byte limit) for
 * the next request instead of being unmapped. Small buffers come from malloc.
 *
 * Every buffer carries a header just before the pointer handed out, so isv__bigbuf_free()
 * needs nothing but that pointer and may run on any thread. One cache per server (no global
 * state); it must outlive every buffer taken from it. */
#ifndef ISV_CODEC_BIGBUF_H
#define ISV_CODEC_BIGBUF_H

#include <stddef.h>
#include <uv.h>

#include "codec/mem.h"

#define ISV__BIGBUF_BLOCK_MIN ((size_t)1 << 20)
#define ISV__BIGBUF_ALIGN 64
#define ISV__BIGBUF_SLOTS 8

typedef struct isv__bigbuf_block {
  void *base;
  size_t size;
} isv__bigbuf_block;

typedef struct isv__bigbuf_cache {
  uv_mutex_t mu;
  size_t limit; /* bytes kept mapped while unused; 0 = keep none */
  size_t held;
  unsigned n;
  isv__bigbuf_block slot[ISV__BIGBUF_SLOTS];
  const isv_mem *mem; /* small buffers come from it (codec/mem.h); NULL: libc's */
} isv__bigbuf_cache;

int isv__bigbuf_cache_init(isv__bigbuf_cache *c, size_t limit, const isv_mem *mem);
/* Unmaps the cached blocks. Buffers still out must not be freed afterwards. */
void isv__bigbuf_cache_destroy(isv__bigbuf_cache *c);

/* n bytes (n == 0 gives a valid pointer). end_aligned = 0: the start is ISV__BIGBUF_ALIGN-
 * aligned; 1: the END (p + n) is — for bodies and messages whose tensors sit at their end
 * (Triton's binary extension, gRPC's raw_input_contents), so the last tensor lands aligned
 * and is used in place. c may be NULL (no cache). NULL when out of memory. */
void *isv__bigbuf_alloc(isv__bigbuf_cache *c, size_t n, int end_aligned);
/* Free what isv__bigbuf_alloc returned (NULL is a no-op). Any thread. */
void isv__bigbuf_free(void *p);

/* The size of the block a buffer of n bytes (>= ISV__BIGBUF_BLOCK_MIN) is mapped in: what the
 * cache's limit must allow to keep it. */
size_t isv__bigbuf_block_size(size_t n);
/* Map `count` blocks that each hold a buffer of n bytes, fault them in, and put them in the
 * cache — within its limit and slots; the rest are unmapped. Slow (the faults): a worker
 * thread's job. 0, or ISV_ENOMEM when a mapping failed (those mapped are still cached). */
int isv__bigbuf_prefault(isv__bigbuf_cache *c, size_t n, unsigned count);

/* Whether p (from isv__bigbuf_alloc) is a block mapped for it, never touched: its pages are
 * zeroed by the kernel on first touch — ~1 ms per MiB, 2 MiB at a time with huge pages, on a
 * small VM — which a loop thread should not pay (transport/http1.c faults a fresh body in on the
 * server's pool first). 0 for malloc'd buffers and blocks from the cache. */
int isv__bigbuf_fresh(const void *p);
/* Fault in p's first n bytes now (Linux's MADV_POPULATE_WRITE; elsewhere, or when the kernel
 * refuses it, a read and write back of one byte per page). Nothing else may write to them
 * meanwhile. Any thread. */
void isv__bigbuf_populate(void *p, size_t n);

#endif
