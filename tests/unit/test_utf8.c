/* Unit tests: lib/codec/utf8.c */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "codec/utf8.h"

static size_t encode(uint32_t cp, unsigned char *o) {
  if (cp < 0x80) {
    o[0] = (unsigned char)cp;
    return 1;
  }
  if (cp < 0x800) {
    o[0] = (unsigned char)(0xC0 | cp >> 6);
    o[1] = (unsigned char)(0x80 | (cp & 63));
    return 2;
  }
  if (cp < 0x10000) {
    o[0] = (unsigned char)(0xE0 | cp >> 12);
    o[1] = (unsigned char)(0x80 | ((cp >> 6) & 63));
    o[2] = (unsigned char)(0x80 | (cp & 63));
    return 3;
  }
  o[0] = (unsigned char)(0xF0 | cp >> 18);
  o[1] = (unsigned char)(0x80 | ((cp >> 12) & 63));
  o[2] = (unsigned char)(0x80 | ((cp >> 6) & 63));
  o[3] = (unsigned char)(0x80 | (cp & 63));
  return 4;
}

static void test_every_code_point(void **state) {
  (void)state;
  for (uint32_t cp = 0; cp <= 0x10FFFF; cp++) {
    unsigned char b[8];
    size_t n = encode(cp, b);
    int want = !(cp >= 0xD800 && cp <= 0xDFFF);
    assert_int_equal(isv__utf8_valid((const char *)b, n), want);
    /* truncated sequences are invalid */
    if (n > 1) assert_int_equal(isv__utf8_valid((const char *)b, n - 1), 0);
  }
}

static void test_invalid_sequences(void **state) {
  (void)state;
  static const char *const bad[] = {
      "\x80",             /* lone continuation */
      "\xBF",             "\xC0\x80",         /* overlong NUL */
      "\xC1\xBF",         /* overlong */
      "\xE0\x80\x80",     "\xE0\x9F\xBF",     /* overlong 3-byte */
      "\xED\xA0\x80",     /* U+D800 */
      "\xED\xBF\xBF",     /* U+DFFF */
      "\xF0\x80\x80\x80", "\xF0\x8F\xBF\xBF", /* overlong 4-byte */
      "\xF4\x90\x80\x80", /* > U+10FFFF */
      "\xF5\x80\x80\x80", "\xFE",            "\xFF",
      "\xC2\x41",         "\xE2\x82",         "abc\xE2\x82\xACxyz\xC3",
      "0123456789abcdef\x80",
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    assert_int_equal(isv__utf8_valid(bad[i], strlen(bad[i])), 0);
}

static void test_valid_strings(void **state) {
  (void)state;
  static const char *const good[] = {
      "",      "hello, world",     "\xC2\x80", "\xDF\xBF", "\xE0\xA0\x80", "\xEF\xBF\xBF",
      "\xF0\x90\x80\x80", "\xF4\x8F\xBF\xBF", "na\xC3\xAFve caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80",
      "a long ascii run that is longer than eight bytes, several times over........",
  };
  for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
    assert_int_equal(isv__utf8_valid(good[i], strlen(good[i])), 1);
  /* embedded NUL is valid UTF-8 */
  assert_int_equal(isv__utf8_valid("a\0b", 3), 1);
}

/* isv__utf8_text is isv__utf8_valid and no NUL, wherever the NUL sits against the 8-byte words
 * (every offset in and around one) and whatever else is in the word (ASCII, multi-byte, 0x01
 * and 0x80 bytes, the ones a borrow could confuse). */
static void test_text_is_valid_without_nul(void **state) {
  (void)state;
  static const char *const fill[] = {"abcdefghijklmnopqrstuvwx", "\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01",
                                     "\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9",
                                     "\x7F\x7F\x7F\x7F\x7F\x7F\x7F\x7F\x7F\x7F\x7F\x7F\x7F"};
  for (size_t f = 0; f < sizeof fill / sizeof fill[0]; f++) {
    size_t n = strlen(fill[f]);
    assert_int_equal(isv__utf8_text(fill[f], n), 1);
    for (size_t len = 1; len <= n; len++) {
      assert_int_equal(isv__utf8_text(fill[f], len), isv__utf8_valid(fill[f], len));
      for (size_t at = 0; at < len; at++) {
        char b[32];
        memcpy(b, fill[f], len);
        b[at] = '\0';
        assert_int_equal(isv__utf8_text(b, len), 0);
        b[at] = (char)0xFF; /* never in UTF-8: invalid either way */
        assert_int_equal(isv__utf8_text(b, len), 0);
        assert_int_equal(isv__utf8_valid(b, len), 0);
      }
    }
  }
  assert_int_equal(isv__utf8_text("", 0), 1);
  assert_int_equal(isv__utf8_text("\xC0\x80", 2), 0); /* the overlong NUL stays invalid */
  /* every 2-byte string: text exactly when valid and neither byte is 0 */
  for (unsigned a = 0; a < 256; a++)
    for (unsigned c = 0; c < 256; c++) {
      char b[2] = {(char)a, (char)c};
      assert_int_equal(isv__utf8_text(b, 2), isv__utf8_valid(b, 2) && a != 0 && c != 0);
    }
}

/* Strings of 4 to 7 bytes (names, datatypes) are looked at as two overlapping words: every byte
 * value at every position of an ASCII one, and a multi-byte character whole at every place. */
static void test_short_strings_every_byte(void **state) {
  (void)state;
  for (size_t len = 4; len <= 7; len++)
    for (size_t at = 0; at < len; at++)
      for (unsigned v = 0; v < 256; v++) {
        char b[8];
        memcpy(b, "abcdefg", len);
        b[at] = (char)v; /* alone among ASCII bytes: UTF-8 only when ASCII itself */
        assert_int_equal(isv__utf8_valid(b, len), v < 0x80);
        assert_int_equal(isv__utf8_text(b, len), v < 0x80 && v != 0);
      }
  for (size_t len = 4; len <= 7; len++)
    for (size_t at = 0; at + 2 <= len; at++) {
      char b[8];
      memcpy(b, "abcdefg", len);
      memcpy(b + at, "\xC3\xA9", 2);
      assert_int_equal(isv__utf8_text(b, len), 1);
      b[at + 1] = 'x'; /* the continuation byte gone */
      assert_int_equal(isv__utf8_text(b, len), 0);
    }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_every_code_point),
      cmocka_unit_test(test_invalid_sequences),
      cmocka_unit_test(test_valid_strings),
      cmocka_unit_test(test_text_is_valid_without_nul),
      cmocka_unit_test(test_short_strings_every_byte),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
