/* Per-request bump allocator: everything a request needs is released at once with it.
 * Not thread-safe; a request is touched by one thread at a time. */
#ifndef ISV_CORE_ARENA_H
#define ISV_CORE_ARENA_H

#include "core/layer.h"

#include <stdatomic.h>
#include <stddef.h>

#include "codec/bigbuf.h"

typedef struct isv__arena_chunk isv__arena_chunk;

/* Here, not in arena.c, for isv__arena_alloc's inline bump: a request makes a dozen small
 * allocations, each then a few instructions, not a call. */
struct isv__arena_chunk {
  isv__arena_chunk *next;
  size_t cap;
  size_t used;
  _Alignas(16) unsigned char data[];
};

typedef struct isv__arena {
  isv__arena_chunk *head;
  isv__bigbuf_cache *bufs; /* where big chunks come from and go back to; may be NULL */
  /* Where the arena's owner keeps a shared chunk an arena let go (isv__arena_detach), for the
   * first small allocation of this one to take instead of a new chunk; may be NULL. Any thread
   * may take it (an exchange). */
  _Atomic(isv__arena_chunk *) *spare;
} isv__arena;

#define ISV__ARENA_INIT {NULL, NULL, NULL}

/* isv__arena_alloc when the head chunk has no room (or there is none). */
void *isv__arena_alloc_slow(isv__arena *a, size_t n);

/* 16-byte aligned; NULL when out of memory or n overflows. n == 0 gives a valid pointer. */
static inline void *isv__arena_alloc(isv__arena *a, size_t n) {
  isv__arena_chunk *h = a->head;
  size_t need = (n + 15) & ~(size_t)15; /* 0 when n is 0 or overflows: the slow way decides */
  if (h != NULL && need != 0 && h->cap - h->used >= need) {
    void *p = h->data + h->used;
    h->used += need;
    return p;
  }
  return isv__arena_alloc_slow(a, n);
}
void *isv__arena_calloc(isv__arena *a, size_t count, size_t size);
/* A NUL-terminated copy of (s, n). */
char *isv__arena_strndup(isv__arena *a, const char *s, size_t n);
void isv__arena_free(isv__arena *a);
/* The arena's shared chunk (the one small allocations come from) taken out of it, emptied and
 * (under ASan) poisoned, for an owner to keep in a spare (isv__arena.spare): NULL when its head
 * is not one. The rest of the arena is left for isv__arena_free. */
isv__arena_chunk *isv__arena_detach(isv__arena *a);
/* Free a chunk isv__arena_detach gave (NULL: nothing). */
void isv__arena_chunk_free(isv__arena_chunk *c);
/* The bytes its chunks hold (what freeing it gives back). */
size_t isv__arena_capacity(const isv__arena *a);

#endif
