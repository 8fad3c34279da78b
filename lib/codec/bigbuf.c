#include "codec/bigbuf.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define HUGE_PAGE ((size_t)2 << 20)

/* Lives just before every pointer handed out. */
typedef struct header {
  isv__bigbuf_cache *cache; /* for a mapped block: where it goes back (NULL: unmap) */
  void *base;               /* what malloc or mmap returned */
  size_t size;              /* mapped size; 0 = malloc'd */
  size_t fresh;             /* mapped for this buffer (not from the cache); also keeps the
                             * header a multiple of 16 bytes */
} header;

/* Room in front of the data for the header, keeping the data aligned. */
#define FRONT (((sizeof(header) + ISV__BIGBUF_ALIGN - 1) / ISV__BIGBUF_ALIGN) * ISV__BIGBUF_ALIGN)

int isv__bigbuf_cache_init(isv__bigbuf_cache *c, size_t limit, const isv_mem *mem) {
  c->limit = limit;
  c->mem = mem;
  c->held = 0;
  c->n = 0;
  return uv_mutex_init(&c->mu);
}

void isv__bigbuf_cache_destroy(isv__bigbuf_cache *c) {
  for (unsigned i = 0; i < c->n; i++) munmap(c->slot[i].base, c->slot[i].size);
  c->n = 0;
  c->held = 0;
  uv_mutex_destroy(&c->mu);
}

/* A 2 MiB-aligned mapping of `size` (a multiple of 2 MiB), huge pages requested. */
static void *map_block(size_t size) {
  size_t over = size + HUGE_PAGE;
  char *p = mmap(NULL, over, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return NULL;
  uintptr_t a = ((uintptr_t)p + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1);
  size_t lead = a - (uintptr_t)p;
  if (lead) munmap(p, lead);
  if (over - lead - size) munmap((char *)a + size, over - lead - size);
  /* Huge pages requested (a hint: fine to fail) — except for the first 2 MiB: the header is
   * written there by whichever thread allocates, often the loop, and the first touch of a huge
   * page zeroes all 2 MiB of it (0.2 ms, and 5 ms on a VM whose host had not backed those pages
   * yet: bench/RESULTS.md, "TLS on the connection's BIO"); the rest is faulted in by
   * isv__bigbuf_populate off the loop, or by its first writer. */
#ifdef MADV_NOHUGEPAGE
  madvise((void *)a, HUGE_PAGE, MADV_NOHUGEPAGE);
#endif
#ifdef MADV_HUGEPAGE
  if (size > HUGE_PAGE) madvise((char *)a + HUGE_PAGE, size - HUGE_PAGE, MADV_HUGEPAGE);
#endif
  return (void *)a;
}

/* The smallest cached block that holds `need`, taken out of the cache. */
static int take_cached(isv__bigbuf_cache *c, size_t need, isv__bigbuf_block *out) {
  int found = 0;
  uv_mutex_lock(&c->mu);
  unsigned best = 0;
  for (unsigned i = 0; i < c->n; i++)
    if (c->slot[i].size >= need && (!found || c->slot[i].size < c->slot[best].size)) {
      best = i;
      found = 1;
    }
  if (found) {
    *out = c->slot[best];
    c->slot[best] = c->slot[--c->n];
    c->held -= out->size;
  }
  uv_mutex_unlock(&c->mu);
  return found;
}

/* What a buffer of n bytes takes: header, data, slack for either alignment. */
static size_t need_of(size_t n) { return FRONT + n + 2 * ISV__BIGBUF_ALIGN; }

size_t isv__bigbuf_block_size(size_t n) {
  if (n > SIZE_MAX - 2 * FRONT - HUGE_PAGE) return SIZE_MAX;
  return (need_of(n) + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1);
}

int isv__bigbuf_prefault(isv__bigbuf_cache *c, size_t n, unsigned count) {
  void *p[ISV__BIGBUF_SLOTS];
  unsigned got = 0;
  int rc = 0;
  if (count > ISV__BIGBUF_SLOTS) count = ISV__BIGBUF_SLOTS;
  /* all taken before any is given back, or each would come out of the cache again */
  while (got < count) {
    if ((p[got] = isv__bigbuf_alloc(c, n, 0)) == NULL) {
      rc = ISV_ENOMEM;
      break;
    }
    isv__bigbuf_populate(p[got], n);
    got++;
  }
  while (got) isv__bigbuf_free(p[--got]);
  return rc;
}

void *isv__bigbuf_alloc(isv__bigbuf_cache *c, size_t n, int end_aligned) {
  if (n > SIZE_MAX - 2 * FRONT - HUGE_PAGE) return NULL;
  size_t need = need_of(n);
  header h = {NULL, NULL, 0, 0};
  char *base;
  if (need < ISV__BIGBUF_BLOCK_MIN) {
    base = isv__malloc(c ? c->mem : NULL, need);
    if (base == NULL) return NULL;
    h.base = base;
  } else {
    isv__bigbuf_block b;
    size_t fresh = 0;
    if (c == NULL || !take_cached(c, need, &b)) {
      b.size = (need + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1);
      b.base = map_block(b.size);
      if (b.base == NULL) return NULL;
      fresh = 1;
    }
    base = b.base;
    h = (header){c, b.base, b.size, fresh};
  }
  /* base is at least 16-aligned (malloc) or 2 MiB-aligned (mmap). */
  uintptr_t p = ((uintptr_t)base + FRONT + ISV__BIGBUF_ALIGN - 1) & ~(uintptr_t)(ISV__BIGBUF_ALIGN - 1);
  if (end_aligned) {
    uintptr_t end = (p + n + ISV__BIGBUF_ALIGN - 1) & ~(uintptr_t)(ISV__BIGBUF_ALIGN - 1);
    p = end - n; /* still >= base + FRONT: only moved forward, by less than the slack */
  }
  memcpy((void *)(p - sizeof(header)), &h, sizeof h); /* p - 32 may be unaligned */
  return (void *)p;
}

void isv__bigbuf_free(void *p) {
  if (p == NULL) return;
  header h;
  memcpy(&h, (char *)p - sizeof(header), sizeof h);
  if (h.size == 0) {
    isv__free(h.base);
    return;
  }
  isv__bigbuf_cache *c = h.cache;
  if (c != NULL) {
    uv_mutex_lock(&c->mu);
    int keep = c->n < ISV__BIGBUF_SLOTS && c->held + h.size <= c->limit;
    if (keep) {
      c->slot[c->n++] = (isv__bigbuf_block){h.base, h.size};
      c->held += h.size;
    }
    uv_mutex_unlock(&c->mu);
    if (keep) return;
  }
  munmap(h.base, h.size);
}

int isv__bigbuf_fresh(const void *p) {
  header h;
  memcpy(&h, (const char *)p - sizeof(header), sizeof h);
  return h.size != 0 && h.fresh;
}

void isv__bigbuf_populate(void *p, size_t n) {
  if (n == 0) return;
  const uintptr_t page = 4096;
#ifdef MADV_POPULATE_WRITE
  uintptr_t start = (uintptr_t)p & ~(page - 1);
  if (madvise((void *)start, (uintptr_t)p + n - start, MADV_POPULATE_WRITE) == 0) return;
#endif
  /* one byte of each page, read and written back as it is */
  volatile char *v = p;
  uintptr_t a = (uintptr_t)p, end = a + n;
  for (uintptr_t q = a; q < end; q = (q & ~(page - 1)) + page) v[q - a] = v[q - a];
}
