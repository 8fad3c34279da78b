/* Unit tests: lib/codec/base64.c */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "codec/base64.h"

static const char *const rfc[][2] = {
    {"", ""},         {"f", "Zg=="},         {"fo", "Zm8="},         {"foo", "Zm9v"},
    {"foob", "Zm9vYg=="}, {"fooba", "Zm9vYmE="}, {"foobar", "Zm9vYmFy"},
};

static void test_encode_rfc4648(void **state) {
  (void)state;
  for (size_t i = 0; i < sizeof rfc / sizeof rfc[0]; i++) {
    isv__buf b;
    isv__buf_init(&b, NULL);
    isv__base64_encode(&b, rfc[i][0], strlen(rfc[i][0]));
    assert_false(b.failed);
    assert_int_equal(b.len, strlen(rfc[i][1]));
    if (b.len) assert_memory_equal(b.data, rfc[i][1], b.len);
    isv__buf_free(&b);
  }
}

static void test_decode_rfc4648(void **state) {
  (void)state;
  for (size_t i = 0; i < sizeof rfc / sizeof rfc[0]; i++) {
    unsigned char out[16];
    size_t n = isv__base64_decode(rfc[i][1], strlen(rfc[i][1]), out);
    assert_int_equal(n, strlen(rfc[i][0]));
    if (n) assert_memory_equal(out, rfc[i][0], n);
  }
}

static void test_decode_invalid(void **state) {
  (void)state;
  const char *bad[] = {"Zg",     "Zg=",    "Z===",  "Zm9v\n", " Zm9v", "Zm 9",   "Zm9v!", "Zg==Zg==",
                       "=Zm9",   "Zm=v",   "Zm9vY", "Zm9vY=", "Zm-_", "\xff\xff\xff\xff"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    unsigned char out[16];
    assert_int_equal(isv__base64_decode(bad[i], strlen(bad[i]), out), (size_t)-1);
  }
}

static void test_decode_in_place_and_random(void **state) {
  (void)state;
  uint64_t s = 12345;
  for (int iter = 0; iter < 2000; iter++) {
    unsigned char data[300];
    size_t n = (size_t)(iter % 300);
    for (size_t i = 0; i < n; i++) {
      s = s * 6364136223846793005u + 1442695040888963407u;
      data[i] = (unsigned char)(s >> 56);
    }
    isv__buf b;
    isv__buf_init(&b, NULL);
    isv__base64_encode(&b, data, n);
    assert_int_equal(b.len, (n + 2) / 3 * 4);
    /* decode in place (out aliases in) */
    size_t m = isv__base64_decode(b.data, b.len, (unsigned char *)b.data);
    assert_int_equal(m, n);
    if (n) assert_memory_equal(b.data, data, n);
    isv__buf_free(&b);
  }
}

static void test_all_bytes(void **state) {
  (void)state;
  unsigned char data[256];
  for (int i = 0; i < 256; i++) data[i] = (unsigned char)i;
  isv__buf b;
  isv__buf_init(&b, NULL);
  isv__base64_encode(&b, data, 256);
  for (size_t i = 0; i < b.len; i++) {
    char c = b.data[i];
    assert_true((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                c == '+' || c == '/' || c == '=');
  }
  unsigned char out[256];
  assert_int_equal(isv__base64_decode(b.data, b.len, out), 256);
  assert_memory_equal(out, data, 256);
  isv__buf_free(&b);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_encode_rfc4648),
      cmocka_unit_test(test_decode_rfc4648),
      cmocka_unit_test(test_decode_invalid),
      cmocka_unit_test(test_decode_in_place_and_random),
      cmocka_unit_test(test_all_bytes),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
