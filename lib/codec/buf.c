/* Growable output byte buffer (see buf.h). */
#include "buf.h"

#include <stdint.h>
#include <stdlib.h>

void isv__buf_init(isv__buf *b, const isv_mem *mem) {
  b->data = NULL;
  b->len = 0;
  b->cap = 0;
  b->failed = 0;
  b->mem = mem;
}

void isv__buf_free(isv__buf *b) {
  isv__free(b->data);
  isv__buf_init(b, b->mem);
}

/* Only isv__buf_reserve calls here, when b has failed or has no room for n. */
char *isv__buf_reserve_grow(isv__buf *b, size_t n) {
  if (b->failed) return NULL;
  if (n > SIZE_MAX / 2 - b->len) {
    b->failed = 1;
    return NULL;
  }
  size_t need = b->len + n;
  size_t cap = b->cap ? b->cap : 256;
  while (cap < need) cap *= 2;
  char *p = isv__realloc(b->mem, b->data, cap);
  if (!p) {
    b->failed = 1;
    return NULL;
  }
  b->data = p;
  b->cap = cap;
  return b->data + b->len;
}

void isv__buf_append_grow(isv__buf *b, const void *p, size_t n) {
  char *dst = isv__buf_reserve(b, n);
  if (!dst) return;
  memcpy(dst, p, n);
  b->len += n;
}

char *isv__buf_release(isv__buf *b, size_t *len) {
  char *d = b->data;
  if (len) *len = b->len;
  isv__buf_init(b, b->mem);
  return d;
}
