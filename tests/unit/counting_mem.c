/* See counting_mem.h. */
#include "counting_mem.h"

#include <stdlib.h>

static void *c_malloc(size_t n, void *u) {
  counting_mem *c = u;
  atomic_fetch_add(&c->mallocs, 1);
  atomic_fetch_add(&c->live, 1);
  return malloc(n);
}

static void c_free(void *p, void *u) {
  counting_mem *c = u;
  if (p == NULL) return;
  atomic_fetch_add(&c->frees, 1);
  atomic_fetch_sub(&c->live, 1);
  free(p);
}

static void *c_calloc(size_t n, size_t size, void *u) {
  counting_mem *c = u;
  atomic_fetch_add(&c->callocs, 1);
  atomic_fetch_add(&c->live, 1);
  return calloc(n, size);
}

static void *c_realloc(void *p, size_t n, void *u) {
  counting_mem *c = u;
  atomic_fetch_add(&c->reallocs, 1);
  if (p == NULL) atomic_fetch_add(&c->live, 1);
  return realloc(p, n);
}

isv_mem counting_mem_init(counting_mem *c) {
  atomic_store(&c->mallocs, 0);
  atomic_store(&c->callocs, 0);
  atomic_store(&c->reallocs, 0);
  atomic_store(&c->frees, 0);
  atomic_store(&c->live, 0);
  return (isv_mem){sizeof(isv_mem), c, c_malloc, c_free, c_calloc, c_realloc};
}

long counting_mem_allocs(const counting_mem *c) {
  return atomic_load(&c->mallocs) + atomic_load(&c->callocs) + atomic_load(&c->reallocs);
}

long counting_mem_calls(const counting_mem *c) {
  return counting_mem_allocs(c) + atomic_load(&c->frees);
}
