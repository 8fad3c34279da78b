/* codec/buf: the growable output buffer (append, reserve, release, free), the sticky `failed`
 * flag, and the inline putc/puts. */
#include "cmocka_prelude.h"

#include <stdlib.h>
#include <string.h>

#include "codec/buf.h"

static void assert_empty(const isv__buf *b) {
  assert_null(b->data);
  assert_int_equal(b->len, 0);
  assert_int_equal(b->cap, 0);
  assert_int_equal(b->failed, 0);
}

static void init_is_empty_and_free_resets(void **state) {
  (void)state;
  isv__buf b;
  memset(&b, 0xA5, sizeof b);
  isv__buf_init(&b, NULL);
  assert_empty(&b);
  isv__buf_free(&b); /* freeing an empty buffer is fine */
  assert_empty(&b);
  isv__buf_append(&b, "abc", 3);
  assert_non_null(b.data);
  b.failed = 1;
  isv__buf_free(&b);
  assert_empty(&b); /* free also clears the failure: the buffer is reusable */
  isv__buf_append(&b, "xy", 2);
  assert_int_equal(b.len, 2);
  assert_memory_equal(b.data, "xy", 2);
  isv__buf_free(&b);
}

static void appends_grow_and_keep_every_byte(void **state) {
  (void)state;
  enum { TOTAL = 20000 };
  static unsigned char want[TOTAL];
  for (size_t i = 0; i < TOTAL; i++) want[i] = (unsigned char)(i * 131 + (i >> 7));
  isv__buf b;
  isv__buf_init(&b, NULL);
  size_t off = 0, step = 1;
  while (off < TOTAL) {
    size_t n = step < TOTAL - off ? step : TOTAL - off;
    isv__buf_append(&b, want + off, n);
    off += n;
    assert_false(b.failed);
    assert_int_equal(b.len, off);
    assert_true(b.cap >= b.len);
    step = step * 7 % 997 + 1; /* sizes from 1 to 997, crossing many growth points */
  }
  assert_memory_equal(b.data, want, TOTAL);
  /* one append much larger than the current capacity */
  size_t cap = b.cap;
  static unsigned char big[5 * TOTAL];
  memset(big, 0x5A, sizeof big);
  isv__buf_append(&b, big, sizeof big);
  assert_false(b.failed);
  assert_int_equal(b.len, TOTAL + sizeof big);
  assert_true(b.cap > cap && b.cap >= b.len);
  assert_memory_equal(b.data, want, TOTAL);
  assert_memory_equal(b.data + TOTAL, big, sizeof big);
  isv__buf_free(&b);
}

static void appending_nothing_changes_nothing(void **state) {
  (void)state;
  isv__buf b;
  isv__buf_init(&b, NULL);
  isv__buf_append(&b, NULL, 0);
  isv__buf_append(&b, "ignored", 0);
  assert_int_equal(b.len, 0);
  assert_false(b.failed);
  isv__buf_append(&b, "ab", 2);
  isv__buf_append(&b, "cd", 0);
  assert_int_equal(b.len, 2);
  assert_memory_equal(b.data, "ab", 2);
  isv__buf_free(&b);
}

static void reserve_makes_room_at_the_end_without_adding_bytes(void **state) {
  (void)state;
  isv__buf b;
  isv__buf_init(&b, NULL);
  isv__buf_append(&b, "head", 4);
  char *p = isv__buf_reserve(&b, 1000);
  assert_non_null(p);
  assert_ptr_equal(p, b.data + b.len); /* the free space starts right after the data */
  assert_int_equal(b.len, 4);          /* reserving adds no bytes */
  assert_true(b.cap - b.len >= 1000);
  memset(p, 'z', 1000); /* the whole reservation is writable (ASan checks this) */
  b.len += 1000;        /* how encoders commit what they wrote */
  assert_memory_equal(b.data, "head", 4);
  for (size_t i = 4; i < b.len; i++) assert_int_equal(b.data[i], 'z');
  /* a reservation that fits in the spare room points at the same place */
  size_t spare = b.cap - b.len;
  if (spare > 0) {
    char *q = isv__buf_reserve(&b, spare);
    assert_ptr_equal(q, b.data + b.len);
  }
  /* a reservation larger than the spare room grows the buffer and keeps the data */
  size_t more = b.cap + 1;
  p = isv__buf_reserve(&b, more);
  assert_non_null(p);
  assert_ptr_equal(p, b.data + b.len);
  assert_true(b.cap - b.len >= more);
  assert_memory_equal(b.data, "head", 4);
  assert_int_equal(b.data[b.len - 1], 'z');
  isv__buf_free(&b);
}

static void release_hands_over_the_data_and_resets(void **state) {
  (void)state;
  isv__buf b;
  isv__buf_init(&b, NULL);
  isv__buf_append(&b, "hello, ", 7);
  isv__buf_puts(&b, "world");
  size_t len = 0;
  char *d = isv__buf_release(&b, &len);
  assert_non_null(d);
  assert_int_equal(len, 12);
  assert_memory_equal(d, "hello, world", 12);
  assert_empty(&b);
  /* the buffer is reusable and independent of the released data */
  isv__buf_append(&b, "again", 5);
  assert_memory_equal(d, "hello, world", 12);
  isv__free(d);
  d = isv__buf_release(&b, NULL); /* len may be NULL */
  assert_non_null(d);
  assert_memory_equal(d, "again", 5);
  isv__free(d);
  /* releasing an empty buffer gives no data and a zero length */
  len = 99;
  assert_null(isv__buf_release(&b, &len));
  assert_int_equal(len, 0);
}

static void failed_is_sticky_and_appends_become_no_ops(void **state) {
  (void)state;
  isv__buf b;
  isv__buf_init(&b, NULL);
  b.failed = 1;
  isv__buf_append(&b, "abc", 3);
  isv__buf_puts(&b, "def");
  isv__buf_putc(&b, 'g');
  assert_null(isv__buf_reserve(&b, 1));
  assert_int_equal(b.len, 0);
  assert_null(b.data); /* nothing was allocated */
  assert_int_equal(b.failed, 1);

  /* a buffer holding data that fails later keeps what it had */
  isv__buf_init(&b, NULL);
  isv__buf_append(&b, "kept", 4);
  b.failed = 1;
  isv__buf_append(&b, "lost", 4);
  isv__buf_puts(&b, "lost too");
  assert_null(isv__buf_reserve(&b, 10));
  assert_int_equal(b.len, 4);
  assert_memory_equal(b.data, "kept", 4);
  assert_int_equal(b.failed, 1);
  isv__buf_free(&b);
}

static void an_impossible_reservation_sets_failed(void **state) {
  (void)state;
  isv__buf b;
  isv__buf_init(&b, NULL);
  isv__buf_append(&b, "abc", 3);
  assert_null(isv__buf_reserve(&b, SIZE_MAX));
  assert_int_equal(b.failed, 1);
  assert_int_equal(b.len, 3);
  assert_memory_equal(b.data, "abc", 3); /* the data already written survives */
  isv__buf_putc(&b, 'x'); /* room left in the block: still nothing is written */
  assert_int_equal(b.len, 3);
  /* sticky: even a tiny append that would fit is refused now */
  isv__buf_append(&b, "d", 1);
  isv__buf_puts(&b, "ef");
  assert_null(isv__buf_reserve(&b, 1));
  assert_int_equal(b.len, 3);
  assert_int_equal(b.failed, 1);
  isv__buf_free(&b);

  isv__buf_init(&b, NULL);
  assert_null(isv__buf_reserve(&b, SIZE_MAX / 2 + 1));
  assert_int_equal(b.failed, 1);
  assert_int_equal(b.len, 0);
  isv__buf_free(&b);
}

static void putc_and_puts_append_text(void **state) {
  (void)state;
  isv__buf b;
  isv__buf_init(&b, NULL);
  isv__buf_putc(&b, 'a'); /* on an empty buffer: takes the slow path */
  assert_int_equal(b.len, 1);
  assert_int_equal(b.data[0], 'a');
  isv__buf_puts(&b, "");
  assert_int_equal(b.len, 1);
  isv__buf_puts(&b, "bcd");
  assert_int_equal(b.len, 4);
  assert_memory_equal(b.data, "abcd", 4);
  /* enough single bytes to cross several growth points */
  enum { N = 5000 };
  for (int i = 0; i < N; i++) isv__buf_putc(&b, (char)('A' + i % 26));
  isv__buf_putc(&b, '\0'); /* a NUL is a byte like any other */
  assert_false(b.failed);
  assert_int_equal(b.len, 4 + N + 1);
  assert_true(b.cap >= b.len);
  for (int i = 0; i < N; i++) assert_int_equal(b.data[4 + i], 'A' + i % 26);
  assert_int_equal(b.data[4 + N], '\0');
  isv__buf_puts(&b, "tail");
  assert_int_equal(b.len, 4 + N + 1 + 4);
  assert_memory_equal(b.data + 4 + N + 1, "tail", 4);
  isv__buf_free(&b);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(init_is_empty_and_free_resets),
      cmocka_unit_test(appends_grow_and_keep_every_byte),
      cmocka_unit_test(appending_nothing_changes_nothing),
      cmocka_unit_test(reserve_makes_room_at_the_end_without_adding_bytes),
      cmocka_unit_test(release_hands_over_the_data_and_resets),
      cmocka_unit_test(failed_is_sticky_and_appends_become_no_ops),
      cmocka_unit_test(an_impossible_reservation_sets_failed),
      cmocka_unit_test(putc_and_puts_append_text),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
