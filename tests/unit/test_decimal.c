/* codec/decimal.h: digits only and not empty; the maximum held exactly at its edge (2^63 - 1,
 * 2^64 - 1, 0); more than 19 digits (leading zeros, or past 2^64) read without wrapping; and
 * every number up to 10^6 the same as snprintf wrote it. */
#include "cmocka_prelude.h"

#include <stdio.h>
#include <string.h>

#include "codec/decimal.h"

static int parse(const char *s, uint64_t max, uint64_t *v) {
  return isv__decimal_u64(s, strlen(s), max, v);
}

static void digits_only_and_not_empty(void **state) {
  (void)state;
  uint64_t v = 7;
  static const char *const bad[] = {"", "+1", "-1", " 1", "1 ", "1a", "0x10", "1.0", "１"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    assert_int_equal(parse(bad[i], UINT64_MAX, &v), -1);
    assert_int_equal(v, 7); /* untouched */
  }
  assert_int_equal(isv__decimal_u64("12", 1, UINT64_MAX, &v), 0); /* n bytes, not the string */
  assert_int_equal(v, 1);
}

static void the_maximum_at_its_edge(void **state) {
  (void)state;
  uint64_t v;
  assert_int_equal(parse("9223372036854775807", INT64_MAX, &v), 0);
  assert_true(v == (uint64_t)INT64_MAX);
  assert_int_equal(parse("9223372036854775808", INT64_MAX, &v), -1);
  assert_int_equal(parse("18446744073709551615", UINT64_MAX, &v), 0);
  assert_true(v == UINT64_MAX);
  assert_int_equal(parse("18446744073709551616", UINT64_MAX, &v), -1);
  assert_int_equal(parse("99999999999999999999", UINT64_MAX, &v), -1);
  assert_int_equal(parse("184467440737095516150", UINT64_MAX, &v), -1); /* 21 digits: wraps */
  assert_int_equal(parse("0", 0, &v), 0);
  assert_int_equal(parse("1", 0, &v), -1);
  assert_int_equal(parse("4294967295", UINT32_MAX, &v), 0);
  assert_int_equal(parse("4294967296", UINT32_MAX, &v), -1);
  assert_int_equal(parse("0000000000000000000000042", 42, &v), 0); /* 25 digits */
  assert_int_equal(v, 42);
  assert_int_equal(parse("0000000000000000000000042", 41, &v), -1);
}

static void every_small_number_reads_back(void **state) {
  (void)state;
  char s[24];
  for (uint64_t i = 0; i <= 1000000; i++) {
    snprintf(s, sizeof s, "%llu", (unsigned long long)i);
    uint64_t v = 0;
    assert_int_equal(parse(s, UINT64_MAX, &v), 0);
    if (v != i) fail_msg("%s read as %llu", s, (unsigned long long)v);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(digits_only_and_not_empty),
      cmocka_unit_test(the_maximum_at_its_edge),
      cmocka_unit_test(every_small_number_reads_back),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
