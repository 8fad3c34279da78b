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
/* Free every chunk of a but one of the shared size (the one a small request filled), which is
 * returned emptied — NULL when a has none: what a request's struct hands the next request, so a
 * small one allocates nothing (the core keeps a few: core.h's spare_chunks). a is empty after. */
isv__arena_chunk *isv__arena_release_keep(isv__arena *a);
/* An empty arena's first chunk is c (from isv__arena_release_keep; NULL: none). */
void isv__arena_seed(isv__arena *a, isv__arena_chunk *c);
/* Free a chunk isv__arena_release_keep returned (NULL is a no-op). */
void isv__arena_chunk_free(isv__arena_chunk *c);
/* The bytes its chunks hold (what freeing it gives back). */
size_t isv__arena_capacity(const isv__arena *a);

#endif
