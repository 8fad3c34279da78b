/* Every allocation of the library goes through an isv_mem (inferserve.h): the server's
 * (isv_options_set_mem), or libc's where there is no server yet (options, model configs).
 *
 * Each block carries its allocator in a prefix of ISV__MEM_PREFIX bytes, so isv__free needs
 * nothing but the pointer: memory that travels — a response body freed by the transport once
 * written, a message freed by whichever side finishes last, a buffer freed on a worker thread —
 * is released with the allocator that made it, wherever it ends. The allocator must outlive
 * the blocks it made (a server's lives in its core, freed last; isv__mem_rehome points a block
 * at another copy of the same functions). */
#ifndef ISV_CODEC_MEM_H
#define ISV_CODEC_MEM_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "inferserve.h"

/* Keeps the data aligned as malloc's is (max_align_t). The allocator pointer takes the first 8
 * bytes; the next 8 belong to the allocator's functions (they see the block from its base):
 * codec/recycler.h keeps a block's size class there. */
#define ISV__MEM_PREFIX 16

extern const isv_mem isv__libc_mem;

/* The allocator a block (from isv__malloc...) was made with, read from its prefix. */
static inline const isv_mem *isv__mem_owner(const void *p) {
  const isv_mem *m;
  memcpy(&m, (const char *)p - ISV__MEM_PREFIX, sizeof m);
  return m;
}

/* The block's data, its allocator written in front (NULL stays NULL). */
static inline void *isv__mem_stamp(void *base, const isv_mem *m) {
  if (base == NULL) return NULL;
  memcpy(base, &m, sizeof m);
  return (char *)base + ISV__MEM_PREFIX;
}

/* isv__malloc, isv__calloc and isv__free are inline: the loop makes and frees ~20 small blocks
 * per request, each then one indirect call to the allocator, not two calls. */

/* m NULL: libc's. NULL when out of memory (or the size overflows). */
static inline void *isv__malloc(const isv_mem *m, size_t n) {
  if (m == NULL) m = &isv__libc_mem;
  if (n > SIZE_MAX - ISV__MEM_PREFIX) return NULL;
  return isv__mem_stamp(m->malloc(n + ISV__MEM_PREFIX, m->user), m);
}

static inline void *isv__calloc(const isv_mem *m, size_t nmemb, size_t size) {
  if (m == NULL) m = &isv__libc_mem;
  if (size != 0 && nmemb > (SIZE_MAX - ISV__MEM_PREFIX) / size) return NULL;
  return isv__mem_stamp(m->calloc(1, nmemb * size + ISV__MEM_PREFIX, m->user), m);
}

/* p NULL: isv__malloc(m, n). Otherwise p keeps the allocator it was made with (m is ignored);
 * on failure p is left as it was. */
void *isv__realloc(const isv_mem *m, void *p, size_t n);

/* NULL is a no-op. Any thread. */
static inline void isv__free(void *p) {
  if (p == NULL) return;
  const isv_mem *m = isv__mem_owner(p);
  void (*f)(void *, void *) = m->free; /* m may live inside p (a server's struct) */
  void *user = m->user;
  f((char *)p - ISV__MEM_PREFIX, user);
}
char *isv__strdup(const isv_mem *m, const char *s);

/* p (from isv__malloc...) is freed with `m` from now on: for a block that holds the allocator it
 * was made with, e.g. the server's struct, made with the options' copy. m must be a copy of the
 * functions that made p: the prefix's second 8 bytes are cleared (what m's functions see there
 * is then what a block they did not tag carries). */
void isv__mem_rehome(void *p, const isv_mem *m);

/* 0 when mem is usable as an allocator (every function set, struct_size large enough). */
int isv__mem_check(const isv_mem *mem);

#endif
