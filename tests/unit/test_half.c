/* Unit tests: lib/codec/half.c */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <math.h>

#include <cmocka.h>

#include "codec/half.h"

static float fbits(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}
static uint32_t bitsf(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}

static void test_f16_edges(void **state) {
  (void)state;
  assert_int_equal(isv__f32_to_f16(0.0f), 0x0000);
  assert_int_equal(isv__f32_to_f16(-0.0f), 0x8000);
  assert_int_equal(isv__f32_to_f16(1.0f), 0x3C00);
  assert_int_equal(isv__f32_to_f16(-2.0f), 0xC000);
  assert_int_equal(isv__f32_to_f16(65504.0f), 0x7BFF);       /* max */
  assert_int_equal(isv__f32_to_f16(65519.99f), 0x7BFF);      /* below the overflow threshold */
  assert_int_equal(isv__f32_to_f16(65520.0f), 0x7C00);       /* tie -> even -> inf */
  assert_int_equal(isv__f32_to_f16(1e10f), 0x7C00);
  assert_int_equal(isv__f32_to_f16(-INFINITY), 0xFC00);
  assert_int_equal(isv__f32_to_f16(ldexpf(1, -14)), 0x0400); /* smallest normal */
  assert_int_equal(isv__f32_to_f16(ldexpf(1, -24)), 0x0001); /* smallest subnormal */
  assert_int_equal(isv__f32_to_f16(ldexpf(1, -25)), 0x0000); /* tie -> even 0 */
  assert_int_equal(isv__f32_to_f16(ldexpf(3, -26)), 0x0001); /* above the tie */
  assert_int_equal(isv__f32_to_f16(ldexpf(3, -25)), 0x0002); /* 1.5 ulp: tie -> even 2 */
  assert_int_equal(isv__f32_to_f16(2049.0f), 0x6800);        /* 2048 */
  assert_int_equal(isv__f32_to_f16(2050.0f), 0x6801);
  assert_int_equal(isv__f32_to_f16(2051.0f), 0x6802);        /* tie -> 2052 */
  uint16_t n = isv__f32_to_f16(NAN);
  assert_true((n & 0x7C00) == 0x7C00 && (n & 0x3FF) != 0);
  assert_true((n & 0x0200) != 0); /* quiet */
}

static void test_bf16_edges(void **state) {
  (void)state;
  assert_int_equal(isv__f32_to_bf16(1.0f), 0x3F80);
  assert_int_equal(isv__f32_to_bf16(fbits(0x3F808000u)), 0x3F80); /* tie -> even */
  assert_int_equal(isv__f32_to_bf16(fbits(0x3F818000u)), 0x3F82); /* tie -> even (up) */
  assert_int_equal(isv__f32_to_bf16(fbits(0x3F808001u)), 0x3F81);
  assert_int_equal(isv__f32_to_bf16(fbits(0x7F7FFFFFu)), 0x7F80); /* FLT_MAX rounds to inf */
  assert_int_equal(isv__f32_to_bf16(fbits(0x7F7F7FFFu)), 0x7F7F);
  assert_int_equal(isv__f32_to_bf16(fbits(0x00000001u)), 0x0000);
  assert_int_equal(isv__f32_to_bf16(fbits(0x80008000u)), 0x8000);
  assert_int_equal(isv__f32_to_bf16(fbits(0x00018000u)), 0x0002);
  uint16_t n = isv__f32_to_bf16(fbits(0x7F800001u)); /* signalling NaN stays NaN */
  assert_true((n & 0x7F80) == 0x7F80 && (n & 0x7F) != 0);
  assert_int_equal(isv__f64_to_bf16(1e300), 0x7F80);
  assert_int_equal(isv__f64_to_bf16(-1e-300), 0x8000);
}

static void test_widen_narrow_all(void **state) {
  (void)state;
  for (uint32_t h = 0; h < 65536; h++) {
    float f = isv__f16_to_f32((uint16_t)h);
    int is_nan = (h & 0x7C00) == 0x7C00 && (h & 0x3FF);
    if (is_nan) {
      assert_true(isnan(f));
    } else {
      assert_int_equal(isv__f32_to_f16(f), h);
      assert_int_equal(isv__f64_to_f16((double)f), h);
    }
    float g = isv__bf16_to_f32((uint16_t)h);
    assert_int_equal(bitsf(g), h << 16);
    if (!((h & 0x7F80) == 0x7F80 && (h & 0x7F))) {
      assert_int_equal(isv__f32_to_bf16(g), h);
      assert_int_equal(isv__f64_to_bf16((double)g), h);
    }
  }
  /* A few known values */
  assert_true(isv__f16_to_f32(0x0001) == ldexpf(1, -24));
  assert_true(isv__f16_to_f32(0x03FF) == ldexpf(1023, -24));
  assert_true(isv__f16_to_f32(0x7BFF) == 65504.0f);
  assert_true(isinf(isv__f16_to_f32(0x7C00)));
  assert_true(isv__f16_to_f32(0x8000) == 0.0f && signbit(isv__f16_to_f32(0x8000)));
}

/* Reference: round a float to FP16 by brute force (nearest of all finite halves, ties to
 * even mantissa, overflow threshold 65520). */
static uint16_t ref_f16(float f) {
  if (isnan(f)) return 0x7E00;
  uint16_t sign = signbit(f) ? 0x8000 : 0;
  double a = fabs((double)f);
  if (a >= 65520.0) return sign | 0x7C00;
  uint16_t best = 0;
  double bestd = INFINITY;
  /* binary search over the monotonic positive halves */
  uint16_t lo = 0, hi = 0x7BFF;
  while (lo < hi) {
    uint16_t mid = (uint16_t)((lo + hi + 1) / 2);
    if ((double)isv__f16_to_f32(mid) <= a)
      lo = mid;
    else
      hi = (uint16_t)(mid - 1);
  }
  for (uint16_t c = lo; c <= lo + 1 && c <= 0x7BFF; c++) {
    double d = fabs((double)isv__f16_to_f32(c) - a);
    if (d < bestd || (d == bestd && !(c & 1))) {
      bestd = d;
      best = c;
    }
  }
  return sign | best;
}

static void test_f32_to_f16_random(void **state) {
  (void)state;
  uint64_t s = 7;
  for (int i = 0; i < 300000; i++) {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    /* floats in and around the FP16 range */
    uint32_t u = (uint32_t)s;
    u = (u & 0x807FFFFFu) | ((uint32_t)(100 + (s >> 40) % 60) << 23);
    float f = fbits(u);
    assert_int_equal(isv__f32_to_f16(f), ref_f16(f));
  }
}

static void test_no_double_rounding(void **state) {
  (void)state;
  /* 1 + 2^-11 + 2^-40: just above the midpoint of 1 and 1+2^-10. Through float it would
   * become exactly the midpoint and round down to even; directly it must round up. */
  double d = 1.0 + ldexp(1, -11) + ldexp(1, -40);
  assert_int_equal(isv__f64_to_f16(d), 0x3C01);
  assert_int_equal(isv__f32_to_f16((float)d), 0x3C00);
  double e = 1.0 + ldexp(1, -8) + ldexp(1, -40);
  assert_int_equal(isv__f64_to_bf16(e), 0x3F81);
  assert_int_equal(isv__f64_to_bf16(1.0 + ldexp(1, -8)), 0x3F80);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_f16_edges),        cmocka_unit_test(test_bf16_edges),
      cmocka_unit_test(test_widen_narrow_all), cmocka_unit_test(test_f32_to_f16_random),
      cmocka_unit_test(test_no_double_rounding),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
