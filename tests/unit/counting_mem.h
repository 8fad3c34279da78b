/* An allocator for the tests that check where allocations go (test_mem, test_recycler,
 * test_warm_requests): libc's, counting its calls and the blocks it has out. Any thread: the
 * counts are atomic. */
#ifndef ISV_TEST_COUNTING_MEM_H
#define ISV_TEST_COUNTING_MEM_H

#include <stdatomic.h>

#include "inferserve.h"

typedef struct counting_mem {
  atomic_long mallocs, callocs, reallocs;
  atomic_long frees; /* of a block (free(NULL) is not counted) */
  atomic_long live;  /* blocks out */
} counting_mem;

/* Zeroes c; the allocator that counts into it. */
isv_mem counting_mem_init(counting_mem *c);
/* malloc + calloc + realloc. */
long counting_mem_allocs(const counting_mem *c);
/* Every call that reached the allocator: allocations and frees. */
long counting_mem_calls(const counting_mem *c);

#endif
