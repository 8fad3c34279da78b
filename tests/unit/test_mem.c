/* codec/mem: every block goes back to the allocator that made it, whatever the call site has
 * at hand; sizes that overflow are refused; a bad allocator table is refused. */
#include "cmocka_prelude.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "codec/mem.h"
#include "counting_mem.h"
#include "inferserve.h"

static void blocks_go_back_to_their_own_allocator(void **state) {
  (void)state;
  counting_mem a, b;
  isv_mem ma = counting_mem_init(&a), mb = counting_mem_init(&b);
  char *p = isv__malloc(&ma, 100);
  assert_non_null(p);
  assert_int_equal((uintptr_t)p % 16, 0); /* aligned as malloc's */
  memset(p, 'x', 100);
  /* realloc through another allocator's hands: the block keeps its own */
  p = isv__realloc(&mb, p, 5000);
  assert_non_null(p);
  assert_int_equal(p[99], 'x');
  assert_int_equal(a.reallocs, 1);
  assert_int_equal(b.reallocs + b.mallocs, 0);
  isv__free(p);
  assert_int_equal(a.live, 0);
  assert_int_equal(b.frees, 0);
  /* realloc(NULL) is a malloc from the allocator given */
  char *q = isv__realloc(&mb, NULL, 10);
  assert_non_null(q);
  assert_int_equal(b.live, 1);
  isv__free(q);
  assert_int_equal(b.live, 0);
}

static void calloc_zeroes_and_sizes_that_overflow_are_refused(void **state) {
  (void)state;
  counting_mem a;
  isv_mem m = counting_mem_init(&a);
  unsigned char *z = isv__calloc(&m, 10, 7);
  assert_non_null(z);
  for (int i = 0; i < 70; i++) assert_int_equal(z[i], 0);
  isv__free(z);
  assert_null(isv__calloc(&m, SIZE_MAX / 2, 3));
  assert_null(isv__malloc(&m, SIZE_MAX - 3));
  assert_int_equal(a.mallocs + a.callocs, 1); /* the refused ones never reached it */
  char *s = isv__strdup(&m, "hello");
  assert_string_equal(s, "hello");
  isv__free(s);
  isv__free(NULL);
  assert_int_equal(a.live, 0);
}

static void no_allocator_means_libc(void **state) {
  (void)state;
  char *p = isv__malloc(NULL, 64);
  assert_non_null(p);
  p = isv__realloc(NULL, p, 128);
  isv__free(p);
  char *q = isv__calloc(NULL, 4, 4);
  isv__free(q);
}

/* A block made with one copy of the functions, moved to another (the server's own struct). */
static void a_rehomed_block_is_freed_with_the_new_copy(void **state) {
  (void)state;
  counting_mem a, b;
  isv_mem ma = counting_mem_init(&a), mb = counting_mem_init(&b);
  void *p = isv__malloc(&ma, 32);
  isv__mem_rehome(p, &mb);
  isv__free(p);
  assert_int_equal(a.frees, 0);
  assert_int_equal(b.frees, 1);
}

static void options_refuse_an_incomplete_allocator(void **state) {
  (void)state;
  counting_mem a;
  isv_mem m = counting_mem_init(&a);
  isv_options *o;
  assert_int_equal(isv_options_new(&o), 0);
  assert_int_equal(isv_options_set_mem(o, &m), 0);
  assert_int_equal(isv_options_set_mem(o, NULL), 0); /* back to libc's */
  isv_mem bad = m;
  bad.calloc = NULL;
  assert_int_equal(isv_options_set_mem(o, &bad), ISV_EINVAL);
  bad = m;
  bad.struct_size = offsetof(isv_mem, realloc);
  assert_int_equal(isv_options_set_mem(o, &bad), ISV_EINVAL);
  assert_int_equal(isv_options_set_mem(NULL, &m), ISV_EINVAL);
  isv_options_free(o);
  assert_int_equal(a.mallocs + a.callocs + a.reallocs, 0); /* options are libc's */
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(blocks_go_back_to_their_own_allocator),
      cmocka_unit_test(calloc_zeroes_and_sizes_that_overflow_are_refused),
      cmocka_unit_test(no_allocator_means_libc),
      cmocka_unit_test(a_rehomed_block_is_freed_with_the_new_copy),
      cmocka_unit_test(options_refuse_an_incomplete_allocator),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
