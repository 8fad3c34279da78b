/* Allocation through an isv_mem, each block prefixed with its allocator (see mem.h). */
#include "codec/mem.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static void *libc_malloc(size_t n, void *u) {
  (void)u;
  return malloc(n);
}
static void libc_free(void *p, void *u) {
  (void)u;
  free(p);
}
static void *libc_calloc(size_t n, size_t size, void *u) {
  (void)u;
  return calloc(n, size);
}
static void *libc_realloc(void *p, size_t n, void *u) {
  (void)u;
  return realloc(p, n);
}

const isv_mem isv__libc_mem = {sizeof(isv_mem), NULL, libc_malloc, libc_free, libc_calloc,
                               libc_realloc};

void *isv__realloc(const isv_mem *m, void *p, size_t n) {
  if (p == NULL) return isv__malloc(m, n);
  if (n > SIZE_MAX - ISV__MEM_PREFIX) return NULL;
  const isv_mem *own = isv__mem_owner(p);
  return isv__mem_stamp(own->realloc((char *)p - ISV__MEM_PREFIX, n + ISV__MEM_PREFIX, own->user),
                        own);
}

char *isv__strdup(const isv_mem *m, const char *s) {
  size_t n = strlen(s) + 1;
  char *d = isv__malloc(m, n);
  if (d) memcpy(d, s, n);
  return d;
}

void isv__mem_rehome(void *p, const isv_mem *m) {
  memcpy((char *)p - ISV__MEM_PREFIX, &m, sizeof m);
  memset((char *)p - ISV__MEM_PREFIX + sizeof m, 0, ISV__MEM_PREFIX - sizeof m);
}

int isv__mem_check(const isv_mem *mem) {
  size_t need = offsetof(isv_mem, realloc) + sizeof mem->realloc;
  if (mem->struct_size < need) return -1;
  return mem->malloc && mem->free && mem->calloc && mem->realloc ? 0 : -1;
}
