#include "core/arena.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "codec/poison.h"

/* Small requests share 8 KiB chunks; anything over a quarter of that gets its own chunk so a
 * big tensor never wastes the tail of a shared one. */
#define ISV__ARENA_CHUNK 8192u

static isv__arena_chunk *new_chunk(isv__arena *a, size_t cap) {
  if (cap > SIZE_MAX - sizeof(isv__arena_chunk)) return NULL;
  isv__arena_chunk *c = isv__bigbuf_alloc(a->bufs, sizeof *c + cap, 0);
  if (c == NULL) return NULL;
  c->cap = cap;
  c->used = 0;
  return c;
}

void *isv__arena_alloc_slow(isv__arena *a, size_t n) {
  if (n > SIZE_MAX - 15) return NULL;
  size_t need = (n + 15) & ~(size_t)15;
  if (need == 0) need = 16;
  isv__arena_chunk *h = a->head;
  if (h != NULL && h->cap - h->used >= need) {
    void *p = h->data + h->used;
    h->used += need;
    return p;
  }
  if (need > ISV__ARENA_CHUNK / 4) {
    /* Dedicated chunk, linked behind the head so the head keeps serving small allocations. */
    isv__arena_chunk *c = new_chunk(a, need);
    if (c == NULL) return NULL;
    c->used = need;
    if (h == NULL) {
      c->next = NULL;
      a->head = c;
    } else {
      c->next = h->next;
      h->next = c;
    }
    return c->data;
  }
  isv__arena_chunk *c = h == NULL && a->spare ? atomic_exchange(a->spare, NULL) : NULL;
  if (c != NULL) /* the first chunk: the one kept from an arena before (isv__arena_detach) */
    ISV__UNPOISON(c->data, c->cap);
  else if ((c = new_chunk(a, ISV__ARENA_CHUNK)) == NULL)
    return NULL;
  c->next = h;
  a->head = c;
  c->used = need;
  return c->data;
}

void *isv__arena_calloc(isv__arena *a, size_t count, size_t size) {
  if (size != 0 && count > SIZE_MAX / size) return NULL;
  void *p = isv__arena_alloc(a, count * size);
  if (p != NULL) memset(p, 0, count * size);
  return p;
}

char *isv__arena_strndup(isv__arena *a, const char *s, size_t n) {
  if (n == SIZE_MAX) return NULL;
  char *p = isv__arena_alloc(a, n + 1);
  if (p == NULL) return NULL;
  if (n) memcpy(p, s, n);
  p[n] = '\0';
  return p;
}

void isv__arena_free(isv__arena *a) {
  isv__arena_chunk *c = a->head;
  while (c != NULL) {
    isv__arena_chunk *next = c->next;
    isv__bigbuf_free(c);
    c = next;
  }
  a->head = NULL;
}

isv__arena_chunk *isv__arena_detach(isv__arena *a) {
  isv__arena_chunk *c = a->head;
  if (c == NULL || c->cap != ISV__ARENA_CHUNK) return NULL; /* none, or a dedicated one */
  a->head = c->next;
  c->next = NULL;
  c->used = 0;
  ISV__POISON(c->data, c->cap); /* nobody's until adopted */
  return c;
}

void isv__arena_chunk_free(isv__arena_chunk *c) {
  if (c == NULL) return;
  ISV__UNPOISON(c->data, c->cap);
  isv__bigbuf_free(c);
}

size_t isv__arena_capacity(const isv__arena *a) {
  size_t n = 0;
  for (const isv__arena_chunk *c = a->head; c != NULL; c = c->next) n += c->cap;
  return n;
}
