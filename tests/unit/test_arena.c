#include "cmocka_prelude.h"

#include <string.h>

#include "core/arena.h"

static void small_allocations_are_aligned_and_distinct(void **state) {
  (void)state;
  isv__arena a = ISV__ARENA_INIT;
  char *prev = NULL;
  for (int i = 0; i < 1000; i++) {
    char *p = isv__arena_alloc(&a, (size_t)(i % 37) + 1);
    assert_non_null(p);
    assert_int_equal((uintptr_t)p % 16, 0);
    memset(p, 0xAB, (size_t)(i % 37) + 1);
    assert_ptr_not_equal(p, prev);
    prev = p;
  }
  isv__arena_free(&a);
  assert_null(a.head);
}

static void large_allocation_gets_its_own_chunk(void **state) {
  (void)state;
  isv__arena a = ISV__ARENA_INIT;
  char *s = isv__arena_alloc(&a, 8);
  char *big = isv__arena_alloc(&a, 1 << 20);
  char *s2 = isv__arena_alloc(&a, 8);
  assert_non_null(big);
  memset(big, 1, 1 << 20);
  /* the small ones still share the first chunk */
  assert_ptr_equal(s2, s + 16);
  isv__arena_free(&a);
}

static void overflow_and_strndup(void **state) {
  (void)state;
  isv__arena a = ISV__ARENA_INIT;
  assert_null(isv__arena_alloc(&a, SIZE_MAX));
  assert_null(isv__arena_calloc(&a, SIZE_MAX / 2, 4));
  char *d = isv__arena_strndup(&a, "hello world", 5);
  assert_string_equal(d, "hello");
  int *z = isv__arena_calloc(&a, 10, sizeof(int));
  for (int i = 0; i < 10; i++) assert_int_equal(z[i], 0);
  assert_non_null(isv__arena_alloc(&a, 0));
  isv__arena_free(&a);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(small_allocations_are_aligned_and_distinct),
      cmocka_unit_test(large_allocation_gets_its_own_chunk),
      cmocka_unit_test(overflow_and_strndup),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
