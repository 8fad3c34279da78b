#include "codec/timeheap.h"

#include <stdlib.h>

#include "inferserve.h"

void isv__timeheap_init(isv__timeheap *h, const isv_mem *mem) {
  h->v = NULL;
  h->n = h->cap = 0;
  h->mem = mem;
}

void isv__timeheap_free(isv__timeheap *h) {
  for (size_t i = 0; i < h->n; i++) h->v[i]->pos = 0;
  isv__free(h->v);
  isv__timeheap_init(h, h->mem);
}

static void place(isv__timeheap *h, size_t i, isv__timed *e) {
  h->v[i] = e;
  e->pos = i + 1;
}

static void sift_up(isv__timeheap *h, size_t i) {
  isv__timed *e = h->v[i];
  while (i > 0) {
    size_t parent = (i - 1) / 2;
    if (h->v[parent]->when <= e->when) break;
    place(h, i, h->v[parent]);
    i = parent;
  }
  place(h, i, e);
}

static void sift_down(isv__timeheap *h, size_t i) {
  isv__timed *e = h->v[i];
  for (;;) {
    size_t c = 2 * i + 1;
    if (c >= h->n) break;
    if (c + 1 < h->n && h->v[c + 1]->when < h->v[c]->when) c++;
    if (e->when <= h->v[c]->when) break;
    place(h, i, h->v[c]);
    i = c;
  }
  place(h, i, e);
}

int isv__timeheap_reserve(isv__timeheap *h, size_t n) {
  if (n <= h->cap) return 0;
  size_t cap = h->cap ? h->cap : 16;
  while (cap < n) cap *= 2;
  isv__timed **v = isv__realloc(h->mem, h->v, cap * sizeof *v);
  if (v == NULL) return ISV_ENOMEM;
  h->v = v;
  h->cap = cap;
  return 0;
}

int isv__timeheap_set(isv__timeheap *h, isv__timed *e, uint64_t when) {
  if (e->pos) {
    uint64_t old = e->when;
    e->when = when;
    if (when < old) sift_up(h, e->pos - 1);
    else sift_down(h, e->pos - 1);
    return 0;
  }
  if (h->n == h->cap && isv__timeheap_reserve(h, h->n + 1) != 0) return ISV_ENOMEM;
  e->when = when;
  place(h, h->n++, e);
  sift_up(h, h->n - 1);
  return 0;
}

void isv__timeheap_remove(isv__timeheap *h, isv__timed *e) {
  if (e->pos == 0) return;
  size_t i = e->pos - 1;
  e->pos = 0;
  isv__timed *last = h->v[--h->n];
  if (i == h->n) return;
  place(h, i, last);
  if (i > 0 && h->v[(i - 1) / 2]->when > last->when) sift_up(h, i);
  else sift_down(h, i);
}

isv__timed *isv__timeheap_top(const isv__timeheap *h) { return h->n ? h->v[0] : NULL; }
