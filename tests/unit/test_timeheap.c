/* core/timeheap.c: the earliest entry always on top through inserts, moves (earlier and
 * later) and removals from any position; positions kept right; removing what is not in is a
 * no-op; a random workload checked against a sorted reference. */
#include "cmocka_prelude.h"

#include <stdlib.h>
#include <string.h>

#include "core/timeheap.h"

static void check_heap(const isv__timeheap *h) {
  for (size_t i = 0; i < h->n; i++) {
    assert_int_equal(h->v[i]->pos, i + 1);
    if (i) assert_true(h->v[(i - 1) / 2]->when <= h->v[i]->when);
  }
}

static void the_earliest_is_on_top(void **state) {
  (void)state;
  isv__timeheap h;
  isv__timeheap_init(&h, NULL);
  assert_null(isv__timeheap_top(&h));
  isv__timed e[5] = {{0}};
  uint64_t when[5] = {50, 10, 40, 30, 20};
  for (int i = 0; i < 5; i++) {
    assert_false(isv__timed_armed(&e[i]));
    assert_int_equal(isv__timeheap_set(&h, &e[i], when[i]), 0);
    assert_true(isv__timed_armed(&e[i]));
    check_heap(&h);
  }
  assert_ptr_equal(isv__timeheap_top(&h), &e[1]);
  /* popping gives them in time order */
  uint64_t last = 0;
  for (int i = 0; i < 5; i++) {
    isv__timed *t = isv__timeheap_top(&h);
    assert_true(t->when >= last);
    last = t->when;
    isv__timeheap_remove(&h, t);
    assert_false(isv__timed_armed(t));
    check_heap(&h);
  }
  assert_null(isv__timeheap_top(&h));
  isv__timeheap_free(&h);
}

static void moving_an_entry_earlier_or_later(void **state) {
  (void)state;
  isv__timeheap h;
  isv__timeheap_init(&h, NULL);
  isv__timed a = {0}, b = {0}, c = {0};
  isv__timeheap_set(&h, &a, 10);
  isv__timeheap_set(&h, &b, 20);
  isv__timeheap_set(&h, &c, 30);
  assert_int_equal(isv__timeheap_set(&h, &c, 5), 0); /* already in: moved, not added */
  assert_int_equal(h.n, 3);
  assert_ptr_equal(isv__timeheap_top(&h), &c);
  isv__timeheap_set(&h, &c, 25);
  assert_ptr_equal(isv__timeheap_top(&h), &a);
  isv__timeheap_set(&h, &a, 100);
  assert_ptr_equal(isv__timeheap_top(&h), &b);
  check_heap(&h);
  isv__timeheap_remove(&h, &b);
  isv__timeheap_remove(&h, &b); /* not in any more: nothing */
  assert_int_equal(h.n, 2);
  assert_ptr_equal(isv__timeheap_top(&h), &c);
  isv__timeheap_free(&h); /* entries still in are marked out */
  assert_false(isv__timed_armed(&a));
  assert_false(isv__timed_armed(&c));
}

static int cmp_u64(const void *x, const void *y) {
  uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
  return a < b ? -1 : a > b;
}

static void a_random_workload_matches_a_sorted_reference(void **state) {
  (void)state;
  enum { N = 500 };
  isv__timeheap h;
  isv__timeheap_init(&h, NULL);
  static isv__timed e[N];
  memset(e, 0, sizeof e);
  srand(7);
  for (int step = 0; step < 20000; step++) {
    isv__timed *t = &e[rand() % N];
    if (rand() % 3 == 0) isv__timeheap_remove(&h, t);
    else assert_int_equal(isv__timeheap_set(&h, t, (uint64_t)(rand() % 100000)), 0);
  }
  check_heap(&h);
  uint64_t ref[N];
  size_t n = 0;
  for (int i = 0; i < N; i++)
    if (isv__timed_armed(&e[i])) ref[n++] = e[i].when;
  assert_int_equal(n, h.n);
  qsort(ref, n, sizeof *ref, cmp_u64);
  for (size_t i = 0; i < n; i++) {
    isv__timed *t = isv__timeheap_top(&h);
    assert_true(t->when == ref[i]);
    isv__timeheap_remove(&h, t);
  }
  isv__timeheap_free(&h);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(the_earliest_is_on_top),
      cmocka_unit_test(moving_an_entry_earlier_or_later),
      cmocka_unit_test(a_random_workload_matches_a_sorted_reference),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
