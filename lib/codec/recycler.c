/* Small blocks kept for one thread (recycler.h). */
#include "codec/recycler.h"

#include <pthread.h>
#include <string.h>

#include "codec/poison.h"

/* The tag in a block's bytes 8..15: SIZED | the block's class, for a block made at a class's
 * size; 0 for any other (larger than ISV__RECYCLER_MAX, or not made here). */
#define TAG_AT 8
#define SIZED ((uint64_t)0x52435943u << 32)
/* A kept block's link and tag stay readable; the rest is poisoned. */
#define KEPT_HEAD 16

/* Classes: every 16 bytes up to 1 KiB, then every 128 bytes up to 16 KiB — the sizes malloc
 * rounds to anyway below 1 KiB, an eighth at most above it. Every block of a class is made at
 * the class's size, so any serves the next allocation of the class. */
#define FINE_MAX 1024u
#define FINE 16u
#define COARSE 128u
#define FINE_CLASSES (FINE_MAX / FINE)

static unsigned class_of(size_t n) { /* 0 < n <= ISV__RECYCLER_MAX */
  if (n <= FINE_MAX) return (unsigned)((n + FINE - 1) / FINE) - 1;
  return FINE_CLASSES + (unsigned)((n - FINE_MAX + COARSE - 1) / COARSE) - 1;
}

static size_t class_size(unsigned k) {
  if (k < FINE_CLASSES) return (size_t)(k + 1) * FINE;
  return FINE_MAX + (size_t)(k - FINE_CLASSES + 1) * COARSE;
}

static void tag(void *base, uint64_t t) { memcpy((char *)base + TAG_AT, &t, sizeof t); }

/* The block's class, or -1 for a block made at its own size. */
static int class_of_block(const void *base) {
  uint64_t t;
  memcpy(&t, (const char *)base + TAG_AT, sizeof t);
  if ((t & ~(uint64_t)0xffffffffu) != SIZED) return -1;
  uint64_t k = t & 0xffffffffu;
  return k < ISV__RECYCLER_CLASSES ? (int)k : -1;
}

/* The calling thread, as the recycler tells threads apart on every allocation and free: its
 * thread pointer where the compiler reads that in one instruction (no call, and no registers
 * saved around one: half of a free's cost was that), else pthread_self. Either is unique among
 * the threads alive, as a pthread_t is. */
#if defined(__has_builtin) && (defined(__x86_64__) || defined(__aarch64__))
#if __has_builtin(__builtin_thread_pointer) /* GCC knows it on targets it cannot expand it for */
#define ISV__RECYCLER_TP 1
#endif
#endif
static uintptr_t self(void) {
#ifdef ISV__RECYCLER_TP
  return (uintptr_t)__builtin_thread_pointer();
#else
  return (uintptr_t)pthread_self();
#endif
}

static int mine(const isv__recycler *r) { return self() == r->owner; }

static void *pop(isv__recycler *r, unsigned k) {
  isv__recycler_list *l = &r->list[k];
  void *base = l->head;
  if (base == NULL) return NULL;
  ISV__UNPOISON(base, l->size);
  memcpy(&l->head, base, sizeof l->head);
  l->n--;
  r->held -= l->size;
  r->taken++;
  return base;
}

/* 1 when kept (the owner's free, within the bounds). */
static int push(isv__recycler *r, void *base, unsigned k) {
  /* mine() first: the counts are the owner's to read */
  if (!mine(r)) return 0;
  isv__recycler_list *l = &r->list[k];
  size_t size = l->size;
  if (l->n >= ISV__RECYCLER_PER_CLASS || r->held + size > r->limit) return 0;
  memcpy(base, &l->head, sizeof l->head);
  l->head = base;
  l->n++;
  r->held += size;
  ISV__POISON((char *)base + KEPT_HEAD, size - KEPT_HEAD);
  return 1;
}

static void give_back(isv__recycler *r, void *base) {
  tag(base, 0); /* the allocator beneath may hand this memory to someone else's isv__malloc */
  r->under->free(base, r->under->user);
}

/* n >= ISV__MEM_PREFIX: only isv__malloc & co. call here. */
static void *make(isv__recycler *r, size_t n, int zero) {
  const isv_mem *u = r->under;
  if (n > ISV__RECYCLER_MAX) {
    void *base = zero ? u->calloc(1, n, u->user) : u->malloc(n, u->user);
    if (base) tag(base, 0);
    return base;
  }
  unsigned k = class_of(n);
  void *base = NULL;
  if (r->limit > 0 && mine(r)) base = pop(r, k);
  if (base != NULL) {
    if (zero) memset(base, 0, n);
  } else {
    size_t size = r->list[k].size;
    base = zero ? u->calloc(1, size, u->user) : u->malloc(size, u->user);
    if (base == NULL) return NULL;
  }
  tag(base, SIZED | k);
  return base;
}

static void *r_malloc(size_t n, void *user) { return make(user, n, 0); }

static void *r_calloc(size_t nmemb, size_t size, void *user) {
  size_t n;
  if (__builtin_mul_overflow(nmemb, size, &n)) return NULL;
  return make(user, n, 1);
}

static void r_free(void *base, void *user) {
  isv__recycler *r = user;
  if (base == NULL) return;
  int k = class_of_block(base);
  if (k >= 0 && push(r, base, (unsigned)k)) return;
  give_back(r, base);
}

static void *r_realloc(void *base, size_t n, void *user) {
  isv__recycler *r = user;
  if (base == NULL) return make(r, n, 0);
  int k = class_of_block(base);
  if (k < 0) return r->under->realloc(base, n, r->under->user); /* its tag (0) moves too */
  size_t have = r->list[k].size;
  if (n <= have) return base;
  void *to = make(r, n, 0);
  if (to == NULL) return NULL; /* base is left as it was */
  /* the isv__mem prefix's first 8 bytes are stamped by the caller; bytes 8..15 are to's tag */
  memcpy((char *)to + TAG_AT + 8, (char *)base + TAG_AT + 8, have - (TAG_AT + 8));
  r_free(base, r);
  return to;
}

void isv__recycler_init(isv__recycler *r, const isv_mem *under, size_t limit) {
  memset(r, 0, sizeof *r);
  r->under = under ? under : &isv__libc_mem;
  r->mem = (isv_mem){sizeof(isv_mem), r, r_malloc, r_free, r_calloc, r_realloc};
  r->owner = self();
  r->limit = limit;
  for (unsigned k = 0; k < ISV__RECYCLER_CLASSES; k++) r->list[k].size = (unsigned)class_size(k);
}

void isv__recycler_destroy(isv__recycler *r) {
  r->limit = 0; /* blocks freed from now on go back at once */
  for (unsigned k = 0; k < ISV__RECYCLER_CLASSES; k++) {
    void *base;
    while ((base = pop(r, k)) != NULL) give_back(r, base);
  }
}
