#include "cmocka_prelude.h"

#include <string.h>

#include "codec/poison.h"
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

/* The shared chunk passes from a released arena to the next through a spare (isv__arena_detach,
 * isv__arena.spare): a dedicated chunk is not taken, the rest stays for isv__arena_free; the
 * chunk comes back empty, poisoned under ASan while it waits, and serves the next arena's first
 * small allocation — not a large one, which gets its own chunk. */
static void the_shared_chunk_passes_to_the_next_arena(void **state) {
  (void)state;
  _Atomic(isv__arena_chunk *) spare = NULL;
  isv__arena a = ISV__ARENA_INIT, b = ISV__ARENA_INIT;
  assert_null(isv__arena_detach(&a)); /* no chunk */
  char *big = isv__arena_alloc(&a, 5000); /* a dedicated chunk, the head */
  assert_non_null(big);
  assert_null(isv__arena_detach(&a)); /* its head is dedicated: nothing to keep */
  char *small = isv__arena_alloc(&a, 100); /* a shared chunk in front of it */
  assert_non_null(small);
  isv__arena_chunk *k = isv__arena_detach(&a);
  assert_non_null(k);
  assert_int_equal(k->used, 0);
  assert_null(k->next);
  assert_non_null(a.head); /* the dedicated one is left */
  assert_true(a.head->cap >= 5000 && a.head->cap < 8192);
#ifdef ISV__ASAN
  assert_true(__asan_address_is_poisoned(small));
#endif
  spare = k;
  b.spare = &spare;
  char *large = isv__arena_alloc(&b, 4000); /* its own chunk: the spare stays */
  assert_non_null(large);
  assert_ptr_equal(spare, k);
  isv__arena_free(&b);
  b = (isv__arena)ISV__ARENA_INIT;
  b.spare = &spare;
  char *again = isv__arena_alloc(&b, 100);
  assert_ptr_equal(again, small); /* the same bytes, from the start */
  assert_null(spare);
  memset(again, 1, 100);
  assert_non_null(isv__arena_alloc(&b, 200)); /* and on from there */
  isv__arena_chunk_free(isv__arena_detach(&b));
  assert_null(b.head);
  isv__arena_free(&a);
  isv__arena_free(&b);
  isv__arena_chunk_free(NULL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(small_allocations_are_aligned_and_distinct),
      cmocka_unit_test(large_allocation_gets_its_own_chunk),
      cmocka_unit_test(overflow_and_strndup),
      cmocka_unit_test(the_shared_chunk_passes_to_the_next_arena),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
