/* Unit tests: lib/codec/json_writer.c (and write -> read round trips through the reader). */
#define _GNU_SOURCE 1
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <float.h>

#include <cmocka.h>

#include "codec/half.h"
#include "codec/json_reader.h"
#include "codec/json_writer.h"
#include "json_string_same.h"
#include "codec/numfmt.h"

static char *cstr(isv__buf *b) {
  isv__buf_putc(b, '\0');
  b->len--;
  assert_false(b->failed);
  return b->data;
}

static void check_f64(double v, const char *want) {
  char o[32];
  size_t n = isv__fmt_f64(o, v);
  assert_true(n < 32);
  o[n] = 0;
  if (strcmp(o, want)) fail_msg("f64 %a: got %s want %s", v, o, want);
}
static void check_f32(float v, const char *want) {
  char o[32];
  size_t n = isv__fmt_f32(o, v);
  o[n] = 0;
  if (strcmp(o, want)) fail_msg("f32 %a: got %s want %s", (double)v, o, want);
}

static void test_format_f64(void **state) {
  (void)state;
  /* expected strings are Python's repr() */
  check_f64(0.0, "0.0");
  check_f64(-0.0, "-0.0");
  check_f64(1.0, "1.0");
  check_f64(3.0, "3.0");
  check_f64(-2.5, "-2.5");
  check_f64(0.1, "0.1");
  check_f64(0.3, "0.3");
  check_f64(0.1 + 0.2, "0.30000000000000004");
  check_f64(2.0 / 3, "0.6666666666666666");
  check_f64(100.0, "100.0");
  check_f64(123456.789, "123456.789");
  check_f64(1e15, "1000000000000000.0");
  check_f64(1e16, "1e+16");
  check_f64(1.5e16, "1.5e+16");
  check_f64(9007199254740992.0, "9007199254740992.0");
  check_f64(1e22, "1e+22");
  check_f64(1e23, "1e+23");
  check_f64(0.0001, "0.0001");
  check_f64(0.00012, "0.00012");
  check_f64(0.00001, "1e-05");
  check_f64(1.5e-7, "1.5e-07");
  check_f64(5e-324, "5e-324");
  check_f64(2.2250738585072014e-308, "2.2250738585072014e-308");
  check_f64(DBL_MAX, "1.7976931348623157e+308");
  check_f64(1e100, "1e+100");
  check_f64(4.35, "4.35");
  check_f64(5e-5, "5e-05");
  check_f64(NAN, "NaN");
  check_f64(INFINITY, "Infinity");
  check_f64(-INFINITY, "-Infinity");
  check_f64(0x1p-1022, "2.2250738585072014e-308");
  check_f64(0x1p+63, "9.223372036854776e+18");
  /* trailing zeros of the shortest digits, odd and even counts, moved into the exponent */
  check_f64(1e17, "1e+17");
  check_f64(120.0, "120.0");
  check_f64(1e-7, "1e-07");
  check_f64(1.2e-5, "1.2e-05");
  check_f64(12345678900000000.0, "1.23456789e+16");
  check_f64(1e300, "1e+300");
  check_f64(1e-300, "1e-300");
  check_f64(9e15, "9000000000000000.0");
  check_f64(1234500.0, "1234500.0");
  check_f64(1e21, "1e+21");
  check_f64(5e-310, "5e-310");
}

static void test_format_f32(void **state) {
  (void)state;
  check_f32(0.0f, "0.0");
  check_f32(-0.0f, "-0.0");
  check_f32(0.1f, "0.1");
  check_f32(0.3f, "0.3");
  check_f32(1.0f / 3, "0.33333334");
  check_f32(3.0f, "3.0");
  check_f32(16777216.0f, "16777216.0");
  check_f32(1e10f, "10000000000.0");
  check_f32(1e16f, "1e+16");
  check_f32(FLT_MAX, "3.4028235e+38");
  check_f32(FLT_MIN, "1.1754944e-38");
  check_f32(0x1p-149f, "1e-45");
  check_f32(1.17549421e-38f, "1.1754942e-38");
  check_f32(NAN, "NaN");
  check_f32(-INFINITY, "-Infinity");
  check_f32(8.589973e9f, "8589974000.0"); /* 8589973504: 8589974000 is the closest 7-digit */
  check_f32(2.0e-7f, "2e-07");
  check_f32(1.5f, "1.5");
  check_f32(1e-10f, "1e-10");
  check_f32(2.5e8f, "250000000.0");
  check_f32(1e9f, "1000000000.0");
  check_f32(120.0f, "120.0");
  check_f32(0.25f, "0.25");
  check_f32(1e-38f, "1e-38");
  check_f32(7e22f, "7e+22");
  check_f32(33554432.0f, "33554432.0");
  check_f32(100000.0f, "100000.0");
}

static void test_integers_and_strings(void **state) {
  (void)state;
  isv__buf b;
  isv__buf_init(&b, NULL);
  isv__json_write_i64(&b, INT64_MIN);
  isv__buf_putc(&b, ' ');
  isv__json_write_i64(&b, INT64_MAX);
  isv__buf_putc(&b, ' ');
  isv__json_write_u64(&b, UINT64_MAX);
  isv__buf_putc(&b, ' ');
  isv__json_write_i64(&b, 0);
  isv__buf_putc(&b, ' ');
  isv__json_write_i64(&b, -7);
  isv__buf_putc(&b, ' ');
  isv__json_write_f32(&b, 0.5f);
  isv__buf_putc(&b, ' ');
  isv__json_write_f64(&b, -1e300);
  assert_string_equal(cstr(&b), "-9223372036854775808 9223372036854775807 18446744073709551615 0 -7 0.5 -1e+300");
  isv__buf_free(&b);

  isv__buf_init(&b, NULL);
  const char s[] = "q\"b\\s/\n\t\r\b\f\x01\x1f\x7f caf\xC3\xA9 \xF0\x9F\x98\x80";
  isv__json_write_string(&b, s, sizeof s - 1);
  assert_string_equal(cstr(&b),
                      "\"q\\\"b\\\\s/\\n\\t\\r\\b\\f\\u0001\\u001F\x7f caf\xC3\xA9 \xF0\x9F\x98\x80\"");
  /* it reads back to the same bytes */
  isv__json_reader r;
  isv__json_reader_init(&r, b.data, b.len, 4);
  isv__json_token t;
  assert_int_equal(isv__json_next(&r, &t), ISV__JSON_STRING);
  assert_int_equal(t.len, sizeof s - 1);
  assert_memory_equal(t.ptr, s, t.len);
  isv__buf_free(&b);

  isv__buf_init(&b, NULL);
  isv__json_write_string(&b, "a\0b", 3);
  assert_string_equal(cstr(&b), "\"a\\u0000b\"");
  isv__buf_free(&b);
}

/* isv__json_write_string's one-pass way (a string with nothing to escape, in the room left) and
 * its general way give the same bytes: for every room from none to more than enough, for a
 * plain string and for one with an escape at each position (the one pass gives up there, with
 * nothing committed), after text already in the buffer. */
static void test_string_in_the_room_left(void **state) {
  (void)state;
  const char plain[] = "OUTPUT0_name";
  const size_t n = sizeof plain - 1;
  for (size_t esc_at = 0; esc_at <= n; esc_at++) { /* esc_at == n: no escape */
    char s[sizeof plain];
    memcpy(s, plain, sizeof plain);
    if (esc_at < n) s[esc_at] = esc_at % 2 ? '"' : '\n';
    isv__buf want;
    isv__buf_init(&want, NULL); /* no data yet: the general way */
    isv__buf_append(&want, "x:", 2);
    isv__json_write_string(&want, s, n);
    assert_false(want.failed);
    for (size_t room = 0; room <= n + 4; room++) {
      isv__buf b;
      isv__buf_init(&b, NULL);
      assert_non_null(isv__buf_reserve(&b, 64));
      b.cap = b.len + 2 + room; /* pretend the block ends room bytes after "x:" (it is larger) */
      isv__buf_append(&b, "x:", 2);
      isv__json_write_string(&b, s, n);
      assert_false(b.failed);
      assert_true(b.len <= b.cap); /* never past the room it had */
      assert_int_equal(b.len, want.len);
      assert_memory_equal(b.data, want.data, want.len);
      isv__buf_free(&b);
    }
    isv__buf_free(&want);
  }
}

/* Every length up to 24 (the byte loop, the two halves of 4 to 7, the words with the
 * overlapping last one), each byte that needs an escape — and each that does not but sits
 * next to the classes' edges — at every position, with room to spare and with none. */
static void test_string_every_length_and_place(void **state) {
  (void)state;
  static const unsigned char odd[] = {'"', '\\', 0x00, 0x1f, '\n', 0x20, 0x21, 0x5b, 0x5d,
                                      0x7f, 0x80, 0xc3, 0xff};
  unsigned char s[24];
  char want[24 * 6 + 2];
  for (size_t n = 0; n <= sizeof s; n++)
    for (size_t at = 0; at <= n; at++)
      for (size_t k = 0; k < (at < n ? sizeof odd : 1); k++) {
        for (size_t i = 0; i < n; i++) s[i] = (unsigned char)('A' + (i * 7 + n) % 26);
        if (at < n) s[at] = odd[k];
        size_t wl = jss_escape(want, s, n); /* fuzz/json_string_same.h */
        char *exact = malloc(n ? n : 1); /* no byte past the string's (ASan would say) */
        assert_non_null(exact);
        memcpy(exact, s, n);
        for (int spare = 0; spare < 2; spare++) {
          isv__buf b;
          isv__buf_init(&b, NULL);
          if (spare) assert_non_null(isv__buf_reserve(&b, 256));
          isv__json_write_string(&b, exact, n);
          assert_false(b.failed);
          assert_int_equal(b.len, wl);
          assert_memory_equal(b.data, want, wl);
          isv__buf_free(&b);
        }
        free(exact);
      }
}

static void test_bytes_elements(void **state) {
  (void)state;
  isv__buf b;
  isv__buf_init(&b, NULL);
  isv_bytes e[3] = {{"text", 4}, {"\xff\x00\x01", 3}, {"", 0}};
  isv__json_write_tensor(&b, ISV_BYTES, e, 3);
  assert_string_equal(cstr(&b), "[\"text\",{\"b64\":\"/wAB\"},\"\"]");
  isv__json_reader r;
  isv__json_reader_init(&r, b.data, b.len, 4);
  isv__json_token t;
  isv_bytes back[3];
  assert_int_equal(isv__json_next(&r, &t), ISV__JSON_ARRAY_BEGIN);
  assert_int_equal(isv__json_read_tensor(&r, &t, ISV_BYTES, back, 3), 0);
  for (int i = 0; i < 3; i++) {
    assert_int_equal(back[i].len, e[i].len);
    assert_memory_equal(back[i].ptr, e[i].ptr, e[i].len);
  }
  isv__buf_free(&b);
}

/* Integer tensors of every type against printf, over the values written from the digit-pair
 * table (0..99, a one-digit value's spare byte overwritten by the next comma or the ']') and
 * those either side of them, in tensors longer than one formatting chunk (256 elements). */
static void test_integer_tensors_like_printf(void **state) {
  (void)state;
  enum { N = 700 };
  static const isv_datatype dts[] = {ISV_UINT8, ISV_UINT16, ISV_UINT32, ISV_UINT64,
                                     ISV_INT8,  ISV_INT16,  ISV_INT32,  ISV_INT64};
  static char want[N * 24 + 2];
  isv__buf b;
  isv__buf_init(&b, NULL);
  for (size_t d = 0; d < sizeof dts / sizeof dts[0]; d++) {
    isv_datatype dt = dts[d];
    int is_signed = dt == ISV_INT8 || dt == ISV_INT16 || dt == ISV_INT32 || dt == ISV_INT64;
    int64_t lo = is_signed ? -128 : 0, hi = dt == ISV_INT8 ? 127 : 255;
    for (size_t n = 0; n <= N; n += n < 12 ? 1 : 229) {
      int64_t v[N];
      size_t w = 0;
      want[w++] = '[';
      for (size_t i = 0; i < n; i++) {
        v[i] = lo + (int64_t)((i * 37) % (size_t)(hi - lo + 1));
        w += (size_t)snprintf(want + w, sizeof want - w, "%s%lld", i ? "," : "", (long long)v[i]);
      }
      snprintf(want + w, sizeof want - w, "]");
      unsigned char data[N * 8];
      for (size_t i = 0; i < n; i++) {
        switch (dt) {
          case ISV_UINT8: ((uint8_t *)data)[i] = (uint8_t)v[i]; break;
          case ISV_UINT16: ((uint16_t *)data)[i] = (uint16_t)v[i]; break;
          case ISV_UINT32: ((uint32_t *)data)[i] = (uint32_t)v[i]; break;
          case ISV_UINT64: ((uint64_t *)data)[i] = (uint64_t)v[i]; break;
          case ISV_INT8: ((int8_t *)data)[i] = (int8_t)v[i]; break;
          case ISV_INT16: ((int16_t *)data)[i] = (int16_t)v[i]; break;
          case ISV_INT32: ((int32_t *)data)[i] = (int32_t)v[i]; break;
          default: ((int64_t *)data)[i] = v[i]; break;
        }
      }
      b.len = 0;
      isv__json_write_tensor(&b, dt, data, n);
      if (strcmp(cstr(&b), want) != 0)
        fail_msg("%zu elements of %s: %.80s, not %.80s", n, isv_datatype_name(dt), cstr(&b), want);
    }
  }
  isv__buf_free(&b);
}

static void test_tensors(void **state) {
  (void)state;
  isv__buf b;
  isv__buf_init(&b, NULL);
  const int32_t i32[6] = {1, -2, 3, INT32_MIN, INT32_MAX, 0};
  isv__json_write_tensor(&b, ISV_INT32, i32, 6);
  assert_string_equal(cstr(&b), "[1,-2,3,-2147483648,2147483647,0]");
  b.len = 0;
  isv__json_write_tensor_nested(&b, ISV_INT32, i32, (const int64_t[]){2, 3}, 2);
  assert_string_equal(cstr(&b), "[[1,-2,3],[-2147483648,2147483647,0]]");
  b.len = 0;
  isv__json_write_tensor_nested(&b, ISV_INT32, i32, (const int64_t[]){3, 1, 2}, 3);
  assert_string_equal(cstr(&b), "[[[1,-2]],[[3,-2147483648]],[[2147483647,0]]]");
  b.len = 0;
  isv__json_write_tensor_nested(&b, ISV_INT32, i32, (const int64_t[]){2, 0}, 2);
  assert_string_equal(cstr(&b), "[[],[]]");
  b.len = 0;
  isv__json_write_tensor_nested(&b, ISV_INT32, i32, (const int64_t[]){0, 5}, 2);
  assert_string_equal(cstr(&b), "[]");
  b.len = 0;
  isv__json_write_tensor_nested(&b, ISV_INT32, i32, NULL, 0);
  assert_string_equal(cstr(&b), "1");
  b.len = 0;
  isv__json_write_tensor(&b, ISV_INT32, i32, 0);
  assert_string_equal(cstr(&b), "[]");
  b.len = 0;
  const uint8_t bo[3] = {1, 0, 7};
  isv__json_write_tensor(&b, ISV_BOOL, bo, 3);
  assert_string_equal(cstr(&b), "[true,false,true]");
  b.len = 0;
  const uint8_t u8[2] = {0, 255};
  isv__json_write_tensor(&b, ISV_UINT8, u8, 2);
  assert_string_equal(cstr(&b), "[0,255]");
  b.len = 0;
  const int8_t i8[2] = {-128, 127};
  isv__json_write_tensor(&b, ISV_INT8, i8, 2);
  assert_string_equal(cstr(&b), "[-128,127]");
  b.len = 0;
  const uint16_t u16[2] = {0, 65535};
  isv__json_write_tensor(&b, ISV_UINT16, u16, 2);
  assert_string_equal(cstr(&b), "[0,65535]");
  b.len = 0;
  const int16_t i16[2] = {-32768, 32767};
  isv__json_write_tensor(&b, ISV_INT16, i16, 2);
  assert_string_equal(cstr(&b), "[-32768,32767]");
  b.len = 0;
  const uint32_t u32[1] = {UINT32_MAX};
  isv__json_write_tensor(&b, ISV_UINT32, u32, 1);
  assert_string_equal(cstr(&b), "[4294967295]");
  b.len = 0;
  const uint64_t u64[1] = {UINT64_MAX};
  isv__json_write_tensor(&b, ISV_UINT64, u64, 1);
  assert_string_equal(cstr(&b), "[18446744073709551615]");
  b.len = 0;
  const int64_t i64[2] = {INT64_MIN, INT64_MAX};
  isv__json_write_tensor(&b, ISV_INT64, i64, 2);
  assert_string_equal(cstr(&b), "[-9223372036854775808,9223372036854775807]");
  b.len = 0;
  const float f[5] = {1.0f, -0.0f, NAN, INFINITY, 0.1f};
  isv__json_write_tensor(&b, ISV_FP32, f, 5);
  assert_string_equal(cstr(&b), "[1.0,-0.0,NaN,Infinity,0.1]");
  b.len = 0;
  const double d[3] = {1e16, 0.5, -INFINITY};
  isv__json_write_tensor(&b, ISV_FP64, d, 3);
  assert_string_equal(cstr(&b), "[1e+16,0.5,-Infinity]");
  b.len = 0;
  const uint16_t h[6] = {0x3C00, 0x6800, 0x7BFF, 0x0001, 0x7E00, 0x8000};
  isv__json_write_tensor(&b, ISV_FP16, h, 6);
  assert_string_equal(cstr(&b), "[1.0,2048.0,65500.0,6e-08,NaN,-0.0]");
  b.len = 0;
  const uint16_t bf[4] = {0x3F80, 0x3DCD, 0x7F7F, 0xFF80};
  isv__json_write_tensor(&b, ISV_BF16, bf, 4);
  assert_string_equal(cstr(&b), "[1.0,0.1,3.39e+38,-Infinity]");
  isv__buf_free(&b);
}

/* All 65,536 FP16 and BF16 patterns: the text reads back to the same bits, and no text with
 * fewer significant digits does (checked on both neighbours at one digit less). */
static int sig_digits(const char *t) {
  int n = 0, started = 0, zeros = 0;
  for (; *t && *t != 'e'; t++) {
    if (*t < '0' || *t > '9') continue;
    if (*t != '0') started = 1;
    if (!started) continue;
    if (*t == '0') {
      zeros++;
    } else {
      n += zeros + 1;
      zeros = 0;
    }
  }
  return n;
}

static void test_half_exhaustive(void **state) {
  (void)state;
  for (int bf = 0; bf < 2; bf++) {
    for (uint32_t h = 0; h < 65536; h++) {
      char o[40];
      size_t n = bf ? isv__fmt_bf16(o, (uint16_t)h) : isv__fmt_f16(o, (uint16_t)h);
      o[n] = 0;
      int is_nan = bf ? ((h & 0x7F80) == 0x7F80 && (h & 0x7F)) : ((h & 0x7C00) == 0x7C00 && (h & 0x3FF));
      if (is_nan) {
        assert_string_equal(o, "NaN");
        continue;
      }
      isv__json_token t = {ISV__JSON_NUMBER, o, n, 0};
      uint16_t back;
      assert_int_equal(bf ? isv__json_to_bf16(&t, &back) : isv__json_to_f16(&t, &back), 0);
      if (back != h) fail_msg("%s %04X -> %s -> %04X", bf ? "BF16" : "FP16", h, o, back);
      int nd = sig_digits(o);
      double v = bf ? isv__bf16_to_f32((uint16_t)h) : isv__f16_to_f32((uint16_t)h);
      if (nd <= 1 || isinf(v)) continue;
      for (int dir = 0; dir < 2; dir++) {
        char c[64];
        /* v rounded down/up to nd-1 significant digits, via exact %.*e of the neighbours */
        snprintf(c, sizeof c, "%.*e", nd - 2, fabs(v));
        double cv = strtod(c, NULL);
        if (dir == 0 && cv > fabs(v)) snprintf(c, sizeof c, "%.*e", nd - 2, nextafter(fabs(v), 0) - (cv - fabs(v)));
        if (dir == 1 && cv < fabs(v)) snprintf(c, sizeof c, "%.*e", nd - 2, fabs(v) + (fabs(v) - cv));
        isv__json_token t2 = {ISV__JSON_NUMBER, c, strlen(c), 0};
        uint16_t b2;
        assert_int_equal(bf ? isv__json_to_bf16(&t2, &b2) : isv__json_to_f16(&t2, &b2), 0);
        if ((b2 & 0x7FFF) == (h & 0x7FFF) && sig_digits(c) < nd)
          fail_msg("%s %04X -> %s but %s is shorter", bf ? "BF16" : "FP16", h, o, c);
      }
    }
  }
}

static uint64_t rng_state = 0x2545F4914F6CDD1Du;
static uint64_t rng(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return rng_state;
}

/* 1e6 random FP32 bit patterns: write_tensor -> read_tensor gives the same bits (NaN as NaN). */
static void test_roundtrip_f32_tensor(void **state) {
  (void)state;
  const size_t N = 1000000;
  uint32_t *in = malloc(N * 4), *out = malloc(N * 4);
  assert_non_null(in);
  assert_non_null(out);
  for (size_t i = 0; i < N; i++) in[i] = (uint32_t)rng();
  isv__buf b;
  isv__buf_init(&b, NULL);
  isv__json_write_tensor(&b, ISV_FP32, in, N);
  assert_false(b.failed);
  isv__json_reader r;
  isv__json_reader_init(&r, b.data, b.len, 4);
  isv__json_token t;
  assert_int_equal(isv__json_next(&r, &t), ISV__JSON_ARRAY_BEGIN);
  assert_int_equal(isv__json_read_tensor(&r, &t, ISV_FP32, out, N), 0);
  assert_int_equal(isv__json_next(&r, &t), ISV__JSON_EOF);
  for (size_t i = 0; i < N; i++) {
    int nan_in = (in[i] & 0x7F800000u) == 0x7F800000u && (in[i] & 0x7FFFFFu);
    if (nan_in) {
      assert_true((out[i] & 0x7F800000u) == 0x7F800000u && (out[i] & 0x7FFFFFu));
    } else if (in[i] != out[i]) {
      fail_msg("element %zu: %08X -> %08X", i, in[i], out[i]);
    }
  }
  isv__buf_free(&b);
  free(in);
  free(out);
}

static void test_roundtrip_f64_and_shortest(void **state) {
  (void)state;
  const size_t N = 200000;
  uint64_t *in = malloc(N * 8), *out = malloc(N * 8);
  assert_non_null(in);
  assert_non_null(out);
  for (size_t i = 0; i < N; i++) {
    uint64_t u = rng();
    if (i % 3 == 1) u = (u & 0x800FFFFFFFFFFFFFu) | ((uint64_t)(1023 + (int)(rng() % 80) - 40) << 52);
    if (i % 3 == 2) u = (u & 0xFFF0000000000000u) | (rng() % 4096); /* short mantissas */
    in[i] = u;
  }
  isv__buf b;
  isv__buf_init(&b, NULL);
  isv__json_write_tensor_nested(&b, ISV_FP64, in, (const int64_t[]){2, (int64_t)N / 2}, 2);
  isv__json_reader r;
  isv__json_reader_init(&r, b.data, b.len, 4);
  isv__json_token t;
  assert_int_equal(isv__json_next(&r, &t), ISV__JSON_ARRAY_BEGIN);
  assert_int_equal(isv__json_read_tensor(&r, &t, ISV_FP64, out, N), 0);
  for (size_t i = 0; i < N; i++) {
    double d;
    memcpy(&d, &in[i], 8);
    if (isnan(d)) continue;
    if (in[i] != out[i]) fail_msg("element %zu: %016llx -> %016llx", i, (unsigned long long)in[i], (unsigned long long)out[i]);
  }
  /* shortest: no text with fewer digits (the correctly rounded %.*e at each precision) */
  for (size_t i = 0; i < 20000; i++) {
    double d;
    memcpy(&d, &in[i], 8);
    if (!isfinite(d)) continue;
    char o[32], c[40];
    size_t n = isv__fmt_f64(o, d);
    o[n] = 0;
    int nd = sig_digits(o);
    for (int p = 1; p < nd; p++) {
      snprintf(c, sizeof c, "%.*e", p - 1, d);
      if (strtod(c, NULL) == d) fail_msg("%s is shorter than %s", c, o);
    }
  }
  isv__buf_free(&b);
  free(in);
  free(out);
}

static void test_roundtrip_f32_shortest_sample(void **state) {
  (void)state;
  for (int i = 0; i < 100000; i++) {
    uint32_t u = (uint32_t)rng();
    float f;
    memcpy(&f, &u, 4);
    if (!isfinite(f)) continue;
    char o[32], c[40];
    size_t n = isv__fmt_f32(o, f);
    o[n] = 0;
    if (strtof(o, NULL) != f) fail_msg("%s does not read back as %a", o, (double)f);
    int nd = sig_digits(o);
    for (int p = 1; p < nd; p++) {
      snprintf(c, sizeof c, "%.*e", p - 1, (double)f);
      if (strtof(c, NULL) == f) fail_msg("%s is shorter than %s", c, o);
    }
  }
}

static void test_roundtrip_all_types(void **state) {
  (void)state;
  static const isv_datatype types[] = {ISV_BOOL,  ISV_UINT8, ISV_UINT16, ISV_UINT32, ISV_UINT64,
                                       ISV_INT8,  ISV_INT16, ISV_INT32,  ISV_INT64,  ISV_FP16,
                                       ISV_BF16,  ISV_FP32,  ISV_FP64};
  static const size_t sizes[] = {1, 1, 2, 4, 8, 1, 2, 4, 8, 2, 2, 4, 8};
  enum { N = 4096 };
  static uint8_t in[N * 8], out[N * 8];
  for (size_t k = 0; k < sizeof types / sizeof types[0]; k++) {
    for (size_t i = 0; i < N * sizes[k]; i++) in[i] = (uint8_t)rng();
    if (types[k] == ISV_BOOL)
      for (size_t i = 0; i < N; i++) in[i] &= 1;
    isv__buf b;
    isv__buf_init(&b, NULL);
    isv__json_write_tensor_nested(&b, types[k], in, (const int64_t[]){16, 16, 16}, 3);
    isv__json_reader r;
    isv__json_reader_init(&r, b.data, b.len, 8);
    isv__json_token t;
    assert_int_equal(isv__json_next(&r, &t), ISV__JSON_ARRAY_BEGIN);
    if (isv__json_read_tensor(&r, &t, types[k], out, N)) fail_msg("%s", isv__json_error(&r, NULL));
    for (size_t i = 0; i < N; i++) {
      const uint8_t *a = in + i * sizes[k], *o = out + i * sizes[k];
      if (memcmp(a, o, sizes[k]) == 0) continue;
      /* NaNs only need to stay NaN */
      if (types[k] == ISV_FP16) {
        uint16_t x, y;
        memcpy(&x, a, 2);
        memcpy(&y, o, 2);
        if ((x & 0x7C00) == 0x7C00 && (x & 0x3FF) && (y & 0x7C00) == 0x7C00 && (y & 0x3FF)) continue;
      } else if (types[k] == ISV_BF16) {
        uint16_t x, y;
        memcpy(&x, a, 2);
        memcpy(&y, o, 2);
        if ((x & 0x7F80) == 0x7F80 && (x & 0x7F) && (y & 0x7F80) == 0x7F80 && (y & 0x7F)) continue;
      } else if (types[k] == ISV_FP32) {
        float x, y;
        memcpy(&x, a, 4);
        memcpy(&y, o, 4);
        if (isnan(x) && isnan(y)) continue;
      } else if (types[k] == ISV_FP64) {
        double x, y;
        memcpy(&x, a, 8);
        memcpy(&y, o, 8);
        if (isnan(x) && isnan(y)) continue;
      }
      fail_msg("type %d element %zu differs", (int)types[k], i);
    }
    isv__buf_free(&b);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_format_f64),
      cmocka_unit_test(test_format_f32),
      cmocka_unit_test(test_integers_and_strings),
      cmocka_unit_test(test_string_in_the_room_left),
      cmocka_unit_test(test_string_every_length_and_place),
      cmocka_unit_test(test_bytes_elements),
      cmocka_unit_test(test_integer_tensors_like_printf),
      cmocka_unit_test(test_tensors),
      cmocka_unit_test(test_half_exhaustive),
      cmocka_unit_test(test_roundtrip_f32_tensor),
      cmocka_unit_test(test_roundtrip_f64_and_shortest),
      cmocka_unit_test(test_roundtrip_f32_shortest_sample),
      cmocka_unit_test(test_roundtrip_all_types),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
