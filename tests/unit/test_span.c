/* codec/span.h: isv__bytes_same agrees with memcmp(...) == 0 for every length from 0 to past
 * the point where it hands over to memcmp, a difference at every position (the first, the
 * last, the overlapping middle of the 4..7 case) and unaligned starts; isv__bytes_same_nocase
 * with strncasecmp on every pair of bytes; ISV__SPAN_IS and isv__span_eq compare the length
 * first. */
#include "cmocka_prelude.h"

#include <ctype.h>
#include <string.h>
#include <strings.h>

#include "codec/span.h"

static void bytes_same_agrees_with_memcmp(void **state) {
  (void)state;
  unsigned char a[80], b[80];
  for (size_t off = 0; off < 3; off++) {     /* unaligned starts */
    for (size_t n = 0; n <= 40; n++) {        /* both sides of the 32-byte hand-over */
      for (size_t i = 0; i < n + off; i++) a[i] = b[i] = (unsigned char)(i * 37 + 11);
      assert_true(isv__bytes_same(a + off, b + off, n));
      assert_int_equal(isv__bytes_same(a + off, b + off, n), memcmp(a + off, b + off, n) == 0);
      for (size_t k = 0; k < n; k++) { /* one byte differs, at each place in turn */
        b[off + k] ^= 0x20; /* a case flip: the same letter in the other case is not the same */
        assert_false(isv__bytes_same(a + off, b + off, n));
        b[off + k] ^= 0x20;
        b[off + k] ^= 0x80; /* the high bit */
        assert_false(isv__bytes_same(a + off, b + off, n));
        b[off + k] ^= 0x80;
      }
      assert_true(isv__bytes_same(a + off, b + off, n)); /* restored */
    }
  }
  /* bytes past n are not looked at as a difference */
  assert_true(isv__bytes_same("OUTPUT0x", "OUTPUT0y", 7));
  assert_false(isv__bytes_same("OUTPUT0", "OUTPUT1", 7));
  assert_true(isv__bytes_same("", "", 0));
}

/* isv__bytes_same_nocase agrees with strncasecmp(...) == 0 (for bytes without a NUL) on every
 * pair of bytes — letters in either case the same, and the pairs that differ by 0x20 without
 * being letters ('@' and '`', '[' and '{', digits and their controls) different — and on
 * header names. */
static void bytes_same_nocase_agrees_with_strncasecmp(void **state) {
  (void)state;
  for (unsigned c = 1; c < 256; c++) {
    for (unsigned d = 1; d < 256; d++) {
      char a[2] = {(char)c, 0}, b[2] = {(char)d, 0};
      assert_int_equal(isv__bytes_same_nocase(a, b, 1), strncasecmp(a, b, 1) == 0);
    }
  }
  assert_false(isv__bytes_same_nocase("@", "`", 1));
  assert_false(isv__bytes_same_nocase("[", "{", 1));
  assert_true(isv__bytes_same_nocase("Content-Type", "content-type", 12));
  assert_true(isv__bytes_same_nocase("HOST", "host", 4));
  assert_false(isv__bytes_same_nocase("hosu", "host", 4)); /* the last byte */
  assert_false(isv__bytes_same_nocase("HTTPS://", "http://x", 8));
  assert_true(isv__bytes_same_nocase("HtTpS://", "https://", 8));
  assert_true(isv__bytes_same_nocase("", "x", 0));
}

/* ... and so it does on spans of every length the word-at-a-time way takes (4..7 in two
 * overlapping halves, 8 and more in words, the last one overlapping), with every pair of
 * bytes at every position of a header name whose other letters differ in case. */
static void bytes_same_nocase_in_words(void **state) {
  (void)state;
  static const char name[] = "Inference-Header-Content-Length-X";
  static const size_t lens[] = {4, 6, 7, 8, 9, 15, 16, 17, 33};
  for (size_t k = 0; k < sizeof lens / sizeof lens[0]; k++) {
    size_t n = lens[k];
    char a[48], b[48];
    for (size_t at = 0; at < n; at++)
      for (unsigned c = 1; c < 256; c++)
        for (unsigned d = 1; d < 256; d++) {
          memcpy(a + 1, name, n); /* unaligned starts */
          for (size_t i = 0; i < n; i++) b[1 + i] = (char)tolower((unsigned char)name[i]);
          a[1 + at] = (char)c;
          b[1 + at] = (char)d;
          if (isv__bytes_same_nocase(a + 1, b + 1, n) != (strncasecmp(a + 1, b + 1, n) == 0))
            fail_msg("length %zu, bytes %#x and %#x at %zu", n, c, d, at);
        }
  }
}

static void span_tests_compare_lengths_first(void **state) {
  (void)state;
  assert_true(ISV__SPAN_IS("name", 4, "name"));
  assert_false(ISV__SPAN_IS("names", 5, "name"));
  assert_false(ISV__SPAN_IS("nam", 3, "name"));
  assert_true(isv__span_eq("datatype", 8, "datatype"));
  assert_false(isv__span_eq("datatype", 4, "datatype"));
  assert_false(isv__span_eq("data", 4, "dat"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(bytes_same_agrees_with_memcmp),
      cmocka_unit_test(bytes_same_nocase_agrees_with_strncasecmp),
      cmocka_unit_test(bytes_same_nocase_in_words),
      cmocka_unit_test(span_tests_compare_lengths_first),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
