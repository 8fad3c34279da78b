/* codec/recycler: the owner thread's freed small blocks serve its next allocations of their
 * class; other threads' frees, blocks too large, and blocks past the bounds go straight
 * to the allocator beneath; contents survive growth; destroy gives everything back. */
#include "cmocka_prelude.h"

#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "codec/recycler.h"
#include "counting_mem.h"

typedef struct world {
  counting_mem count; /* the allocator beneath's calls */
  isv_mem under;
  isv__recycler r;
} world;

static world *world_new(size_t limit) {
  world *w = calloc(1, sizeof *w);
  w->under = counting_mem_init(&w->count);
  isv__recycler_init(&w->r, &w->under, limit);
  return w;
}

static void world_free(world *w) {
  isv__recycler_destroy(&w->r);
  assert_int_equal(atomic_load(&w->count.live), 0); /* everything went back */
  free(w);
}

static void a_freed_block_serves_the_next_of_its_size(void **state) {
  (void)state;
  world *w = world_new(1 << 20);
  const isv_mem *m = &w->r.mem;
  uint64_t sizes = 0;
  for (size_t n = 1; n <= ISV__RECYCLER_MAX - ISV__MEM_PREFIX; n += 1 + n / 7, sizes++) {
    char *p = isv__malloc(m, n);
    assert_non_null(p);
    assert_int_equal((uintptr_t)p % 16, 0);
    memset(p, 'x', n); /* the whole size asked for is the caller's (ASan checks) */
    isv__free(p);
    long calls = counting_mem_allocs(&w->count);
    char *q = isv__malloc(m, n); /* a kept block: this one, or a larger one kept before */
    memset(q, 'y', n);
    assert_int_equal(counting_mem_allocs(&w->count), calls);
    isv__free(q);
  }
  assert_true(sizes > 50 && w->r.taken >= sizes);
  assert_int_equal(atomic_load(&w->count.frees), 0); /* all of them kept */
  world_free(w);
  /* A block is made at its class's size (16-byte steps to 1 KiB): 200 (216 with the prefix:
   * 224) serves 205, not 210 (240) nor 190 (208) */
  w = world_new(1 << 20);
  m = &w->r.mem;
  char *a = isv__malloc(m, 200);
  isv__free(a);
  assert_int_equal(w->r.held, 224);
  char *b = isv__malloc(m, 210), *c = isv__malloc(m, 190);
  assert_ptr_not_equal(b, a);
  assert_ptr_not_equal(c, a);
  assert_ptr_equal(isv__malloc(m, 205), a);
  isv__free(a);
  isv__free(b);
  isv__free(c);
  world_free(w);
}

static void calloc_zeroes_a_recycled_block(void **state) {
  (void)state;
  world *w = world_new(1 << 20);
  char *p = isv__malloc(&w->r.mem, 300);
  memset(p, 0x7f, 300);
  isv__free(p);
  char *q = isv__calloc(&w->r.mem, 30, 10);
  assert_ptr_equal(q, p);
  for (int i = 0; i < 300; i++) assert_int_equal(q[i], 0);
  isv__free(q);
  world_free(w);
}

static void growth_keeps_the_contents(void **state) {
  (void)state;
  world *w = world_new(1 << 20);
  const isv_mem *m = &w->r.mem;
  unsigned char *p = isv__malloc(m, 20);
  if (p == NULL) abort(); /* cmocka's fail() is not noreturn: GCC would see a write through
                          * NULL (-Wstringop-overflow with LTO) */
  for (int i = 0; i < 20; i++) p[i] = (unsigned char)i;
  unsigned char *q = isv__realloc(m, p, 20); /* no larger: the same block */
  assert_ptr_equal(q, p);
  size_t n = 20;
  while (n < 100000) { /* through every class, then past them to the allocator's realloc */
    size_t grow = n * 3 / 2;
    q = isv__realloc(m, q, grow);
    assert_non_null(q);
    for (size_t i = 0; i < n; i++) assert_int_equal(q[i], (unsigned char)i);
    for (size_t i = n; i < grow; i++) q[i] = (unsigned char)i;
    n = grow;
  }
  isv__free(q);
  world_free(w);
}

static void large_blocks_are_not_kept(void **state) {
  (void)state;
  world *w = world_new(1 << 20);
  char *p = isv__malloc(&w->r.mem, ISV__RECYCLER_MAX);
  isv__free(p);
  assert_int_equal(atomic_load(&w->count.frees), 1);
  assert_int_equal(w->r.held, 0);
  world_free(w);
}

static void the_bounds_hold(void **state) {
  (void)state;
  /* per class */
  world *w = world_new(1 << 20);
  void *p[ISV__RECYCLER_PER_CLASS + 10];
  for (int i = 0; i < ISV__RECYCLER_PER_CLASS + 10; i++) p[i] = isv__malloc(&w->r.mem, 40);
  for (int i = 0; i < ISV__RECYCLER_PER_CLASS + 10; i++) isv__free(p[i]);
  assert_int_equal(atomic_load(&w->count.frees), 10);
  world_free(w);
  /* bytes: 3 blocks of 4 KiB (4,000 and the prefix, in 128-byte steps) fit in 12.3 KB, not 4 */
  w = world_new(12300);
  for (int i = 0; i < 4; i++) p[i] = isv__malloc(&w->r.mem, 4000);
  for (int i = 0; i < 4; i++) isv__free(p[i]);
  assert_int_equal(atomic_load(&w->count.frees), 1);
  assert_int_equal(w->r.held, 3 * 4096);
  world_free(w);
  /* 0: nothing kept */
  w = world_new(0);
  for (int i = 0; i < 4; i++) isv__free(isv__malloc(&w->r.mem, 100));
  assert_int_equal(atomic_load(&w->count.frees), 4);
  assert_int_equal(w->r.taken, 0);
  world_free(w);
}

typedef struct on_thread {
  world *w;
  void *free_this; /* freed on the thread */
  void *made;      /* made on the thread */
} on_thread;

static void other_thread(void *arg) {
  on_thread *t = arg;
  isv__free(t->free_this);
  t->made = isv__malloc(&t->w->r.mem, 500);
}

static void only_the_owner_keeps(void **state) {
  (void)state;
  world *w = world_new(1 << 20);
  on_thread t = {w, isv__malloc(&w->r.mem, 500), NULL};
  uv_thread_t th;
  assert_int_equal(uv_thread_create(&th, other_thread, &t), 0);
  uv_thread_join(&th);
  assert_int_equal(atomic_load(&w->count.frees), 1); /* the other thread's free went back */
  assert_int_equal(w->r.held, 0);
  isv__free(t.made); /* made elsewhere at its class's size: the owner keeps it */
  assert_int_equal(atomic_load(&w->count.frees), 1);
  assert_ptr_equal(isv__malloc(&w->r.mem, 500), t.made);
  isv__free(t.made);
  world_free(w);
}

static void a_rehomed_block_goes_back(void **state) {
  (void)state;
  /* A block the allocator beneath made (whatever its bytes held) and rehomed onto the recycler:
   * not one of its classes, so freed straight back, never kept. */
  world *w = world_new(1 << 20);
  char *k = isv__malloc(&w->r.mem, 64);
  char *p = isv__malloc(&w->under, 64);
  if (k == NULL || p == NULL) abort(); /* (inlined, isv__malloc's NULL path is visible) */
  memcpy(p - 8, k - 8, 8); /* a class's tag left in the foreign block's prefix */
  isv__mem_rehome(p, &w->r.mem);
  isv__free(p);
  assert_int_equal(atomic_load(&w->count.frees), 1);
  assert_int_equal(w->r.held, 0);
  isv__free(k);
  assert_int_equal(w->r.held, 80); /* 64 and the prefix */
  world_free(w);
}

static void destroy_gives_everything_back(void **state) {
  (void)state;
  world *w = world_new(1 << 20);
  void *p[50];
  for (int i = 0; i < 50; i++) p[i] = isv__malloc(&w->r.mem, (size_t)(i * 300 + 1));
  for (int i = 0; i < 50; i++) isv__free(p[i]);
  assert_true(w->r.held > 0);
  assert_int_equal(atomic_load(&w->count.frees), 0);
  char *late = isv__malloc(&w->r.mem, 100);
  isv__recycler_destroy(&w->r);
  assert_int_equal(atomic_load(&w->count.live), 1);
  isv__free(late); /* a block freed after destroy goes back at once */
  assert_int_equal(atomic_load(&w->count.live), 0);
  free(w);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(a_freed_block_serves_the_next_of_its_size),
      cmocka_unit_test(calloc_zeroes_a_recycled_block),
      cmocka_unit_test(growth_keeps_the_contents),
      cmocka_unit_test(large_blocks_are_not_kept),
      cmocka_unit_test(the_bounds_hold),
      cmocka_unit_test(only_the_owner_keeps),
      cmocka_unit_test(a_rehomed_block_goes_back),
      cmocka_unit_test(destroy_gives_everything_back),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
