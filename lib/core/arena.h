/* Per-request bump allocator: everything a request needs is released at once with it.
 * Not thread-safe; a request is touched by one thread at a time. */
#ifndef ISV_CORE_ARENA_H
#define ISV_CORE_ARENA_H

#include "core/layer.h"

#include <stddef.h>

#include "codec/bigbuf.h"

typedef struct isv__arena_chunk isv__arena_chunk;

typedef struct isv__arena {
  isv__arena_chunk *head;
  isv__bigbuf_cache *bufs; /* where big chunks come from and go back to; may be NULL */
} isv__arena;

#define ISV__ARENA_INIT {NULL, NULL}

/* 16-byte aligned; NULL when out of memory or n overflows. n == 0 gives a valid pointer. */
void *isv__arena_alloc(isv__arena *a, size_t n);
void *isv__arena_calloc(isv__arena *a, size_t count, size_t size);
/* A NUL-terminated copy of (s, n). */
char *isv__arena_strndup(isv__arena *a, const char *s, size_t n);
void isv__arena_free(isv__arena *a);
/* The bytes its chunks hold (what freeing it gives back). */
size_t isv__arena_capacity(const isv__arena *a);

#endif
