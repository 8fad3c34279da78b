/* codec/bigbuf: alignment of both kinds, and the cache of large blocks. */
#include "cmocka_prelude.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "codec/bigbuf.h"
#include "core/arena.h"

#define MiB ((size_t)1 << 20)

static void start_and_end_alignment(void **state) {
  (void)state;
  static const size_t sizes[] = {0, 1, 3, 63, 64, 65, 4095, 100001, 3 * MiB + 7};
  for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
    size_t n = sizes[i];
    char *a = isv__bigbuf_alloc(NULL, n, 0);
    char *b = isv__bigbuf_alloc(NULL, n, 1);
    assert_non_null(a);
    assert_non_null(b);
    assert_int_equal((uintptr_t)a % ISV__BIGBUF_ALIGN, 0);
    assert_int_equal((uintptr_t)(b + n) % ISV__BIGBUF_ALIGN, 0);
    memset(a, 0x5a, n); /* the whole size is writable (ASan checks the malloc'd ones) */
    memset(b, 0xa5, n);
    isv__bigbuf_free(a);
    isv__bigbuf_free(b);
  }
  isv__bigbuf_free(NULL);
}

static void freed_large_blocks_are_reused(void **state) {
  (void)state;
  isv__bigbuf_cache c;
  assert_int_equal(isv__bigbuf_cache_init(&c, 64 * MiB, NULL), 0);
  char *p = isv__bigbuf_alloc(&c, 16 * MiB, 1);
  assert_non_null(p);
  memset(p, 1, 16 * MiB);
  isv__bigbuf_free(p);
  assert_int_equal(c.n, 1);
  size_t held = c.held;
  assert_true(held >= 16 * MiB && held % (2 * MiB) == 0);
  /* A smaller request takes the cached block (still mapped, still holding our bytes). */
  char *q = isv__bigbuf_alloc(&c, 8 * MiB, 0);
  assert_int_equal(c.n, 0);
  assert_int_equal(c.held, 0);
  assert_int_equal(q[0], 1);
  /* A bigger one than anything cached maps a new block. */
  char *r = isv__bigbuf_alloc(&c, 20 * MiB, 0);
  assert_non_null(r);
  isv__bigbuf_free(q);
  isv__bigbuf_free(r);
  assert_int_equal(c.n, 2);
  isv__bigbuf_cache_destroy(&c);
}

/* Fresh: a block mapped for the buffer, never touched — not a cached one, not a malloc'd one. */
static void a_block_is_fresh_only_when_mapped_for_it(void **state) {
  (void)state;
  isv__bigbuf_cache c;
  assert_int_equal(isv__bigbuf_cache_init(&c, 64 * MiB, NULL), 0);
  char *small = isv__bigbuf_alloc(&c, 1000, 0);
  assert_false(isv__bigbuf_fresh(small));
  char *p = isv__bigbuf_alloc(&c, 4 * MiB + 5, 1);
  assert_true(isv__bigbuf_fresh(p));
  isv__bigbuf_populate(p, 4 * MiB + 5); /* faults them in, contents unchanged: zeroes */
  assert_int_equal(p[0], 0);
  assert_int_equal(p[4 * MiB + 4], 0);
  memset(p, 7, 4 * MiB + 5);
  isv__bigbuf_populate(p + 3, 2 * MiB); /* on bytes in use: still unchanged */
  assert_int_equal(p[3], 7);
  assert_int_equal(p[2 * MiB + 2], 7);
  isv__bigbuf_free(p);
  char *q = isv__bigbuf_alloc(&c, 4 * MiB, 0); /* the same block, from the cache */
  assert_false(isv__bigbuf_fresh(q));
  isv__bigbuf_free(q);
  isv__bigbuf_free(small);
  isv__bigbuf_cache_destroy(&c);
}

static void the_cache_keeps_at_most_its_limit(void **state) {
  (void)state;
  isv__bigbuf_cache c;
  assert_int_equal(isv__bigbuf_cache_init(&c, 8 * MiB, NULL), 0);
  char *a = isv__bigbuf_alloc(&c, 6 * MiB, 0), *b = isv__bigbuf_alloc(&c, 6 * MiB, 0);
  isv__bigbuf_free(a);
  isv__bigbuf_free(b); /* over the limit: unmapped */
  assert_int_equal(c.n, 1);
  assert_true(c.held <= 8 * MiB);
  isv__bigbuf_cache_destroy(&c);
  /* limit 0: nothing kept */
  assert_int_equal(isv__bigbuf_cache_init(&c, 0, NULL), 0);
  isv__bigbuf_free(isv__bigbuf_alloc(&c, 2 * MiB, 0));
  assert_int_equal(c.n, 0);
  isv__bigbuf_cache_destroy(&c);
  /* small buffers never enter the cache */
  assert_int_equal(isv__bigbuf_cache_init(&c, 64 * MiB, NULL), 0);
  isv__bigbuf_free(isv__bigbuf_alloc(&c, 1000, 0));
  assert_int_equal(c.n, 0);
  isv__bigbuf_cache_destroy(&c);
}

/* Every page of [p, p + n) resident (mincore). */
static int resident(const void *p, size_t n) {
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  uintptr_t a = (uintptr_t)p & ~(uintptr_t)(page - 1);
  size_t len = (uintptr_t)p + n - a, pages = (len + page - 1) / page;
  unsigned char *v = malloc(pages);
  assert_non_null(v);
  assert_int_equal(mincore((void *)a, len, v), 0);
  int all = 1;
  for (size_t i = 0; i < pages; i++) all &= v[i] & 1;
  free(v);
  return all;
}

/* isv_options_set_buffer_prefault's blocks: mapped, faulted in, kept; the buffers of that size
 * taken next are resident and not fresh, and once they are out a further one is mapped fresh. */
static void prefaulted_blocks_come_out_of_the_cache_resident(void **state) {
  (void)state;
  isv__bigbuf_cache c;
  size_t n = 5 * MiB, block = isv__bigbuf_block_size(n);
  assert_true(block >= n && block % (2 * MiB) == 0);
  assert_int_equal(isv__bigbuf_cache_init(&c, 2 * block, NULL), 0);
  assert_int_equal(isv__bigbuf_prefault(&c, n, 2), 0);
  assert_int_equal(c.n, 2);
  assert_int_equal(c.held, 2 * block);
  char *a = isv__bigbuf_alloc(&c, n, 1), *b = isv__bigbuf_alloc(&c, n - 1000, 0);
  assert_non_null(a);
  assert_non_null(b);
  assert_false(isv__bigbuf_fresh(a));
  assert_false(isv__bigbuf_fresh(b));
  assert_true(resident(a, n));
  assert_true(resident(b, n - 1000));
  char *d = isv__bigbuf_alloc(&c, n, 0);
  assert_true(isv__bigbuf_fresh(d));
  isv__bigbuf_free(d);
  isv__bigbuf_free(b);
  isv__bigbuf_free(a);
  assert_int_equal(c.n, 2); /* the limit holds two: the third was unmapped */
  /* more blocks than the limit holds: those past it are unmapped again */
  isv__bigbuf_cache_destroy(&c);
  assert_int_equal(isv__bigbuf_cache_init(&c, block, NULL), 0);
  assert_int_equal(isv__bigbuf_prefault(&c, n, 3), 0);
  assert_int_equal(c.n, 1);
  isv__bigbuf_cache_destroy(&c);
}

static void arena_chunks_go_back_to_the_cache(void **state) {
  (void)state;
  isv__bigbuf_cache c;
  assert_int_equal(isv__bigbuf_cache_init(&c, 64 * MiB, NULL), 0);
  for (int round = 0; round < 3; round++) {
    isv__arena a = ISV__ARENA_INIT;
    a.bufs = &c;
    char *t = isv__arena_alloc(&a, 4 * MiB);
    assert_non_null(t);
    assert_int_equal((uintptr_t)t % 16, 0);
    memset(t, round, 4 * MiB);
    isv__arena_free(&a);
    assert_int_equal(c.n, 1); /* the same block goes round */
  }
  isv__bigbuf_cache_destroy(&c);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(start_and_end_alignment),
      cmocka_unit_test(freed_large_blocks_are_reused),
      cmocka_unit_test(a_block_is_fresh_only_when_mapped_for_it),
      cmocka_unit_test(the_cache_keeps_at_most_its_limit),
      cmocka_unit_test(arena_chunks_go_back_to_the_cache),
      cmocka_unit_test(prefaulted_blocks_come_out_of_the_cache_resident),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
