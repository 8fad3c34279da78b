/* codec/pbwire: the protobuf wire reader and writer. */
#include "cmocka_prelude.h"

#include <string.h>

#include "codec/pbwire.h"

static isv__pb_reader reader(const void *p, size_t n) {
  isv__pb_span s = {p, n};
  return isv__pb_reader_of(s);
}

static void varints_round_trip_at_every_length(void **state) {
  (void)state;
  uint64_t vals[] = {0, 1, 127, 128, 300, 16383, 16384, UINT32_MAX, (uint64_t)1 << 56, UINT64_MAX};
  for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++) {
    uint8_t buf[16];
    uint8_t *end = isv__pb_put_varint(buf, vals[i]);
    assert_int_equal((size_t)(end - buf), isv__pb_varint_len(vals[i]));
    isv__pb_reader r = reader(buf, (size_t)(end - buf));
    uint64_t v;
    assert_int_equal(isv__pb_read_varint(&r, &v), 0);
    assert_true(v == vals[i]);
    assert_ptr_equal(r.p, end);
  }
  assert_int_equal(isv__pb_varint_len(UINT64_MAX), 10);
  static const uint8_t eleven[11] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01};
  isv__pb_reader r = reader(eleven, 11);
  uint64_t v;
  assert_int_equal(isv__pb_read_varint(&r, &v), -1); /* over 10 bytes */
  r = reader(eleven, 3);
  assert_int_equal(isv__pb_read_varint(&r, &v), -1); /* truncated */
}

static void fields_of_every_wire_type(void **state) {
  (void)state;
  uint8_t buf[64], *p = buf;
  p = isv__pb_put_key(p, 1, ISV__PB_VARINT);
  p = isv__pb_put_varint(p, 150);
  p = isv__pb_put_bytes(p, 2, "abc", 3);
  p = isv__pb_put_key(p, 3, ISV__PB_I32);
  memcpy(p, "\x01\x02\x03\x04", 4);
  p += 4;
  p = isv__pb_put_key(p, 4, ISV__PB_I64);
  memcpy(p, "\x01\x00\x00\x00\x00\x00\x00\x80", 8);
  p += 8;
  p = isv__pb_put_bytes(p, 5, "", 0);
  assert_int_equal(isv__pb_len_field_size(3), 5);
  isv__pb_reader r = reader(buf, (size_t)(p - buf));
  isv__pb_field f;
  assert_int_equal(isv__pb_read_field(&r, &f), 1);
  assert_true(f.num == 1 && f.wt == ISV__PB_VARINT && f.v == 150);
  assert_int_equal(isv__pb_read_field(&r, &f), 1);
  assert_true(f.num == 2 && f.wt == ISV__PB_LEN && f.s.n == 3);
  assert_memory_equal(f.s.p, "abc", 3);
  assert_true(f.s.p > buf && f.s.p < p); /* a span of the message, not a copy */
  assert_int_equal(isv__pb_read_field(&r, &f), 1);
  assert_true(f.num == 3 && f.wt == ISV__PB_I32 && f.v == 0x04030201u);
  assert_int_equal(isv__pb_read_field(&r, &f), 1);
  assert_true(f.num == 4 && f.wt == ISV__PB_I64 && f.v == 0x8000000000000001ull);
  assert_int_equal(isv__pb_read_field(&r, &f), 1);
  assert_true(f.num == 5 && f.s.n == 0);
  assert_int_equal(isv__pb_read_field(&r, &f), 0); /* end */
}

static void malformed_fields_are_refused(void **state) {
  (void)state;
  isv__pb_field f;
  static const struct {
    const char *bytes;
    size_t n;
  } bad[] = {
      {"\x00\x01", 2},         /* field number 0 */
      {"\x0b", 1},             /* wire type 3: start group */
      {"\x0c", 1},             /* wire type 4: end group */
      {"\x0e", 1},             /* wire type 6: reserved */
      {"\x12\x05" "abc", 5},   /* LEN past the end */
      {"\x1d\x01\x02", 3},     /* I32 truncated */
      {"\x21\x01", 2},         /* I64 truncated */
      {"\x08", 1},             /* VARINT value missing */
      {"\x80\x80\x80\x80\x80\x01", 6}, /* a key above 32 bits */
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    isv__pb_reader r = reader(bad[i].bytes, bad[i].n);
    if (isv__pb_read_field(&r, &f) != -1) fail_msg("case %zu was accepted", i);
  }
  isv__pb_reader r = reader("", 0);
  assert_int_equal(isv__pb_read_field(&r, &f), 0);
}

/* The inline reader (one-byte keys with one-byte values or lengths) against the general one:
 * every 1- and 2-byte message, and every 3- and 4-byte one whose later bytes are edge values. */
static void inline_reader_agrees_with_the_general_one(void **state) {
  (void)state;
  static const uint8_t edge[] = {0x00, 0x01, 0x02, 0x7f, 0x80, 0xff};
  uint8_t m[4];
  size_t checked = 0;
  for (size_t len = 1; len <= 4; len++)
    for (unsigned a = 0; a < 256; a++)
      for (unsigned b = 0; b < (len >= 2 ? 256u : 1u); b++)
        for (size_t c = 0; c < (len >= 3 ? sizeof edge : 1); c++)
          for (size_t d = 0; d < (len >= 4 ? sizeof edge : 1); d++) {
            m[0] = (uint8_t)a, m[1] = (uint8_t)b, m[2] = edge[c], m[3] = edge[d];
            isv__pb_reader r1 = {m, m + len}, r2 = r1;
            isv__pb_field f1, f2;
            memset(&f1, 0xa5, sizeof f1);
            memset(&f2, 0xa5, sizeof f2);
            int k1 = isv__pb_read_field(&r1, &f1), k2 = isv__pb_read_field_any(&r2, &f2);
            if (k1 != k2 || r1.p != r2.p)
              fail_msg("len %zu bytes %02x %02x: %d/%d", len, a, b, k1, k2);
            if (k1 == 1 && (f1.num != f2.num || f1.wt != f2.wt ||
                            (f1.wt == ISV__PB_LEN ? f1.s.p != f2.s.p || f1.s.n != f2.s.n
                                                  : f1.v != f2.v)))
              fail_msg("len %zu bytes %02x %02x: fields differ", len, a, b);
            checked++;
          }
  assert_true(checked > 65536);
  isv__pb_reader empty = {NULL, NULL}; /* an absent field's span */
  isv__pb_field f;
  assert_int_equal(isv__pb_read_field(&empty, &f), 0);
}

static void little_endian_loads(void **state) {
  (void)state;
  assert_true(isv__pb_le_load((const uint8_t *)"\x34\x12", 2) == 0x1234);
  assert_true(isv__pb_le_load((const uint8_t *)"\xff", 1) == 0xff);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(varints_round_trip_at_every_length),
      cmocka_unit_test(fields_of_every_wire_type),
      cmocka_unit_test(malformed_fields_are_refused),
      cmocka_unit_test(inline_reader_agrees_with_the_general_one),
      cmocka_unit_test(little_endian_loads),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
