/* codec/raw_bytes: the binary BYTES tensor form (per element a u32 little-endian length, then
 * the bytes): count, split, size, write, every malformed framing and its error fields. */
#include "cmocka_prelude.h"

#include <stdlib.h>
#include <string.h>

#include "codec/raw_bytes.h"

/* Count a framing held in an exact-size heap copy, so that ASan catches any read past it. */
static int count_exact(const void *p, size_t n, size_t *count, isv__rawbytes_err *err) {
  void *copy = malloc(n ? n : 1);
  assert_non_null(copy);
  if (n) memcpy(copy, p, n);
  int rc = isv__rawbytes_count(copy, n, count, err);
  free(copy);
  return rc;
}

static void count_and_split_well_formed(void **state) {
  (void)state;
  static const char in[] = "\x03\x00\x00\x00" "abc"
                           "\x00\x00\x00\x00"
                           "\x02\x00\x00\x00" "hi";
  const size_t n = sizeof in - 1;
  size_t count = 99;
  isv__rawbytes_err err;
  assert_int_equal(count_exact(in, n, &count, &err), 0);
  assert_int_equal(count, 3);
  isv_bytes out[3];
  isv__rawbytes_split(in, count, out);
  /* pointers into the input, not copies */
  assert_ptr_equal(out[0].ptr, in + 4);
  assert_int_equal(out[0].len, 3);
  assert_memory_equal(out[0].ptr, "abc", 3);
  assert_ptr_equal(out[1].ptr, in + 11);
  assert_int_equal(out[1].len, 0);
  assert_ptr_equal(out[2].ptr, in + 15);
  assert_int_equal(out[2].len, 2);
  assert_memory_equal(out[2].ptr, "hi", 2);
}

static void lengths_are_little_endian(void **state) {
  (void)state;
  /* 0x00000102 = 258 bytes: read big-endian it would claim 0x02010000 and fail */
  unsigned char in[4 + 258];
  in[0] = 0x02;
  in[1] = 0x01;
  in[2] = 0x00;
  in[3] = 0x00;
  for (size_t i = 0; i < 258; i++) in[4 + i] = (unsigned char)i;
  size_t count = 0;
  isv__rawbytes_err err;
  assert_int_equal(count_exact(in, sizeof in, &count, &err), 0);
  assert_int_equal(count, 1);
  isv_bytes out[1];
  isv__rawbytes_split(in, 1, out);
  assert_int_equal(out[0].len, 258);
  assert_memory_equal(out[0].ptr, in + 4, 258);
  /* the top byte of the length counts too */
  static const unsigned char huge[] = {0x00, 0x00, 0x00, 0x01, 'x'};
  assert_int_equal(count_exact(huge, sizeof huge, &count, &err), -1);
  assert_int_equal(err.elem, 0);
  assert_int_equal(err.in_prefix, 0);
  assert_int_equal(err.len, 0x01000000);
  assert_int_equal(err.left, 1);
}

static void empty_tensor(void **state) {
  (void)state;
  size_t count = 99;
  isv__rawbytes_err err;
  assert_int_equal(isv__rawbytes_count(NULL, 0, &count, &err), 0);
  assert_int_equal(count, 0);
  assert_int_equal(count_exact("", 0, &count, &err), 0);
  assert_int_equal(count, 0);
  isv__rawbytes_split(NULL, 0, NULL); /* nothing to point out */
  assert_int_equal(isv__rawbytes_size(NULL, 0), 0);
  isv_bytes none[1] = {{"unused", 6}};
  assert_int_equal(isv__rawbytes_size(none, 0), 0);
  unsigned char dst[4] = {0xEE, 0xEE, 0xEE, 0xEE};
  isv__rawbytes_write(dst, none, 0);
  isv__rawbytes_write(dst, NULL, 0);
  for (int i = 0; i < 4; i++) assert_int_equal(dst[i], 0xEE); /* nothing written */
}

static void zero_length_elements(void **state) {
  (void)state;
  static const unsigned char in[12] = {0};
  size_t count = 0;
  isv__rawbytes_err err;
  assert_int_equal(count_exact(in, sizeof in, &count, &err), 0);
  assert_int_equal(count, 3);
  isv_bytes out[3];
  isv__rawbytes_split(in, 3, out);
  for (int i = 0; i < 3; i++) {
    assert_int_equal(out[i].len, 0);
    assert_ptr_equal(out[i].ptr, (const char *)in + 4 * (i + 1));
  }
  /* and the other way: "" and a NULL pointer with length 0 are both empty elements */
  const isv_bytes elems[3] = {{"", 0}, {NULL, 0}, {"z", 1}};
  size_t size = isv__rawbytes_size(elems, 3);
  assert_int_equal(size, 4 + 4 + 5);
  unsigned char *dst = malloc(size);
  assert_non_null(dst);
  isv__rawbytes_write(dst, elems, 3);
  assert_memory_equal(dst, "\0\0\0\0\0\0\0\0\x01\0\0\0z", 13);
  free(dst);
}

static void truncated_length_prefix(void **state) {
  (void)state;
  size_t count = 99;
  isv__rawbytes_err err;
  /* 1, 2 or 3 bytes where the first prefix should be */
  for (size_t n = 1; n < 4; n++) {
    memset(&err, 0xA5, sizeof err);
    assert_int_equal(count_exact("\x01\x00\x00", n, &count, &err), -1);
    assert_int_equal(err.elem, 0);
    assert_int_equal(err.in_prefix, 1);
    assert_int_equal(err.left, n);
    assert_int_equal(err.len, 0);
  }
  /* two whole elements, then two stray bytes */
  static const char in[] = "\x01\x00\x00\x00" "a"
                           "\x00\x00\x00\x00"
                           "\x05\x00";
  memset(&err, 0xA5, sizeof err);
  assert_int_equal(count_exact(in, sizeof in - 1, &count, &err), -1);
  assert_int_equal(err.elem, 2);
  assert_int_equal(err.in_prefix, 1);
  assert_int_equal(err.left, 2);
  assert_int_equal(err.len, 0);
}

static void length_past_the_end(void **state) {
  (void)state;
  static const struct {
    const char *bytes;
    size_t n;
    size_t elem, len, left;
  } bad[] = {
      {"\x05\x00\x00\x00" "abc", 7, 0, 5, 3},           /* 5 claimed, 3 there */
      {"\x01\x00\x00\x00", 4, 0, 1, 0},                 /* a prefix and no byte */
      {"\xff\xff\xff\xff", 4, 0, 0xFFFFFFFFu, 0},       /* the largest length */
      {"\x00\x00\x00\x00" "\x02\x00\x00\x00" "x", 9, 1, 2, 1},
      {"\x01\x00\x00\x00" "a" "\x01\x00\x00\x00" "b" "\x04\x00\x00\x00" "abc", 17, 2, 4, 3},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    size_t count = 99;
    isv__rawbytes_err err;
    memset(&err, 0xA5, sizeof err);
    assert_int_equal(count_exact(bad[i].bytes, bad[i].n, &count, &err), -1);
    assert_int_equal(err.elem, bad[i].elem);
    assert_int_equal(err.in_prefix, 0);
    assert_int_equal(err.len, bad[i].len);
    assert_int_equal(err.left, bad[i].left);
  }
  /* one byte fewer than a correct framing fails; the correct framing is accepted */
  static const char ok[] = "\x03\x00\x00\x00" "abc" "\x02\x00\x00\x00" "de";
  size_t count = 0;
  isv__rawbytes_err err;
  assert_int_equal(count_exact(ok, sizeof ok - 1, &count, &err), 0);
  assert_int_equal(count, 2);
  assert_int_equal(count_exact(ok, sizeof ok - 2, &count, &err), -1);
  assert_int_equal(err.elem, 1);
  assert_int_equal(err.in_prefix, 0);
  assert_int_equal(err.len, 2);
  assert_int_equal(err.left, 1);
  /* one byte more is a truncated prefix of a third element */
  char longer[sizeof ok];
  memcpy(longer, ok, sizeof ok - 1);
  longer[sizeof ok - 1] = 0;
  assert_int_equal(count_exact(longer, sizeof longer, &count, &err), -1);
  assert_int_equal(err.elem, 2);
  assert_int_equal(err.in_prefix, 1);
  assert_int_equal(err.left, 1);
}

static void size_and_write_encode_each_element(void **state) {
  (void)state;
  const isv_bytes elems[3] = {{"abc", 3}, {"", 0}, {"hello world", 11}};
  size_t size = isv__rawbytes_size(elems, 3);
  assert_int_equal(size, 4 + 3 + 4 + 0 + 4 + 11);
  unsigned char *dst = malloc(size); /* exactly the size: ASan catches an overrun */
  assert_non_null(dst);
  isv__rawbytes_write(dst, elems, 3);
  static const char want[] = "\x03\x00\x00\x00" "abc"
                             "\x00\x00\x00\x00"
                             "\x0b\x00\x00\x00" "hello world";
  assert_memory_equal(dst, want, size);
  free(dst);
}

static void size_refuses_an_element_a_u32_cannot_measure(void **state) {
  (void)state;
#if SIZE_MAX > UINT32_MAX
  /* size reads only the lengths, so a short object may claim a large length here */
  static const char byte[1] = {'x'};
  isv_bytes e[2] = {{byte, 1}, {byte, (size_t)UINT32_MAX}};
  assert_int_equal(isv__rawbytes_size(e, 2), 5 + 4 + (size_t)UINT32_MAX);
  e[1].len = (size_t)UINT32_MAX + 1;
  assert_true(isv__rawbytes_size(e, 2) == SIZE_MAX);
  assert_true(isv__rawbytes_size(e + 1, 1) == SIZE_MAX);
#else
  skip(); /* a 32-bit size_t cannot hold such a length */
#endif
}

static uint64_t rng_state = 0x9E3779B97F4A7C15u;
static uint64_t rng(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return rng_state;
}

static void write_then_count_and_split_round_trip(void **state) {
  (void)state;
  static char pool[70000];
  for (size_t i = 0; i < sizeof pool; i++) pool[i] = (char)rng();
  for (int iter = 0; iter < 200; iter++) {
    size_t n = (size_t)(rng() % 40);
    isv_bytes in[40];
    for (size_t i = 0; i < n; i++) {
      /* mostly short, sometimes empty, sometimes above 255 and 65535 bytes */
      size_t len = rng() % 8 == 0 ? 0 : (size_t)(rng() % 300);
      if (rng() % 50 == 0) len = 65536 + (size_t)(rng() % 1000);
      in[i].ptr = pool + rng() % (sizeof pool - len);
      in[i].len = len;
    }
    size_t size = isv__rawbytes_size(in, n);
    size_t want = 0;
    for (size_t i = 0; i < n; i++) want += 4 + in[i].len;
    assert_int_equal(size, want);
    unsigned char *enc = malloc(size ? size : 1);
    assert_non_null(enc);
    isv__rawbytes_write(enc, in, n);
    size_t count = 0;
    isv__rawbytes_err err;
    assert_int_equal(isv__rawbytes_count(enc, size, &count, &err), 0);
    assert_int_equal(count, n);
    isv_bytes out[40];
    isv__rawbytes_split(enc, count, out);
    const unsigned char *expect_ptr = enc;
    for (size_t i = 0; i < n; i++) {
      assert_ptr_equal(out[i].ptr, (const char *)expect_ptr + 4);
      assert_int_equal(out[i].len, in[i].len);
      if (in[i].len) assert_memory_equal(out[i].ptr, in[i].ptr, in[i].len);
      expect_ptr += 4 + in[i].len;
    }
    /* every strict prefix that does not end on an element boundary is refused */
    if (size > 0) {
      size_t cut = (size_t)(rng() % size);
      size_t off = 0, k = 0;
      while (off + 4 + out[k].len <= cut) off += 4 + out[k++].len;
      int on_boundary = off == cut;
      int rc = isv__rawbytes_count(enc, cut, &count, &err);
      if (on_boundary) {
        assert_int_equal(rc, 0);
        assert_int_equal(count, k);
      } else {
        assert_int_equal(rc, -1);
        assert_int_equal(err.elem, k);
        assert_int_equal(err.in_prefix, cut - off < 4);
        assert_int_equal(err.left, cut - off - (cut - off < 4 ? 0 : 4));
        if (!err.in_prefix) assert_int_equal(err.len, out[k].len);
      }
    }
    free(enc);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(count_and_split_well_formed),
      cmocka_unit_test(lengths_are_little_endian),
      cmocka_unit_test(empty_tensor),
      cmocka_unit_test(zero_length_elements),
      cmocka_unit_test(truncated_length_prefix),
      cmocka_unit_test(length_past_the_end),
      cmocka_unit_test(size_and_write_encode_each_element),
      cmocka_unit_test(size_refuses_an_element_a_u32_cannot_measure),
      cmocka_unit_test(write_then_count_and_split_round_trip),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
