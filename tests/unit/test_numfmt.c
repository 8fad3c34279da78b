/* codec/numfmt: shortest round-trip text of FP64/FP32/FP16/BF16 in Python's repr() form, and
 * the decimal digits of integers; sampled round trips through strtod/strtof and numparse. */
#include "cmocka_prelude.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/numfmt.h"
#include "codec/numparse.h"

/* Format into a 32-byte area followed by guard bytes; the text must fit in 32. */
typedef size_t (*fmt_fn)(char out[32], const void *v);
static size_t f64_fn(char out[32], const void *v) { return isv__fmt_f64(out, *(const double *)v); }
static size_t f32_fn(char out[32], const void *v) { return isv__fmt_f32(out, *(const float *)v); }
static size_t f16_fn(char out[32], const void *v) {
  return isv__fmt_f16(out, *(const uint16_t *)v);
}
static size_t bf16_fn(char out[32], const void *v) {
  return isv__fmt_bf16(out, *(const uint16_t *)v);
}

static const char *text(char buf[48], fmt_fn fn, const void *v) {
  memset(buf, '#', 48);
  size_t n = fn(buf, v);
  assert_true(n > 0 && n <= 32);
  for (int i = 32; i < 48; i++) assert_int_equal(buf[i], '#'); /* nothing past out[32] */
  buf[n] = '\0';
  return buf;
}

static double dbl(uint64_t u) {
  double d;
  memcpy(&d, &u, 8);
  return d;
}
static float flt(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}

static void fp64_in_python_repr_form(void **state) {
  (void)state;
  /* bit patterns and their Python repr() */
  static const struct {
    uint64_t bits;
    const char *want;
  } cases[] = {
      {0x3F1A36E2EB1C432Du, "0.0001"}, /* the last fixed exponent, -4 */
      {0x3F202E4B6CE5DC68u, "0.00012345"},
      {0x3EE4F8B588E368F1u, "1e-05"}, /* one below: scientific, two exponent digits */
      {0x3F1A36371EA531A8u, "9.999e-05"},
      {0x3F1A36E2EB1C432Cu, "9.999999999999999e-05"},
      {0x3EFA36E2EB1C432Du, "2.5e-05"},
      {0x4341C37937E08000u, "1e+16"},              /* exponent 16: scientific */
      {0x430C6BF526340000u, "1000000000000000.0"}, /* exponent 15: fixed */
      {0x430C6BF52633FFFFu, "999999999999999.9"},
      {0x4341C37937E07FFFu, "9999999999999998.0"},
      {0x4345EE2A2EB5A5C4u, "1.2345678901234568e+16"},
      {0x42DC12218377DE66u, "123456789012345.6"},
      {0x4340000000000000u, "9007199254740992.0"},
      {0x444B1AE4D6E2EF50u, "1e+21"},
      {0x4480F0CF064DD592u, "1e+22"},
      {0x44B52D02C7E14AF6u, "1e+23"},
      {0x54B249AD2594C37Du, "1e+100"},               /* three exponent digits */
      {0x2B3147F19DD7EB02u, "1.2345e-100"},
      {0x7FEFFFFFFFFFFFFFu, "1.7976931348623157e+308"}, /* DBL_MAX */
      {0x0010000000000000u, "2.2250738585072014e-308"}, /* DBL_MIN */
      {0x000FFFFFFFFFFFFFu, "2.225073858507201e-308"},  /* the largest subnormal */
      {0x0018000000000000u, "3.337610787760802e-308"},
      {0x0000000000000001u, "5e-324"},   /* closest of 3e-324 ... 7e-324 */
      {0x0000000000000003u, "1.5e-323"},
      {0x3FD5555555555555u, "0.3333333333333333"},
      {0x3FB999999999999Au, "0.1"},
      {0x3FD3333333333334u, "0.30000000000000004"},
      {0x3E7AD7F29ABCAF48u, "1e-07"},
      {0x3E8421F5F40D8376u, "1.5e-07"},
      {0x405EDD2F1A9FBE77u, "123.456"},
      {0xC05EDD2F1A9FBE77u, "-123.456"},
      {0x43E0000000000000u, "9.223372036854776e+18"},
      {0x43F0000000000000u, "1.8446744073709552e+19"},
      {0x3FF0000000000001u, "1.0000000000000002"},
      {0x3FEFFFFFFFFFFFFFu, "0.9999999999999999"},
      {0x4059000000000000u, "100.0"},
      {0x3FE0000000000000u, "0.5"},
      {0x3FF0000000000000u, "1.0"},
      {0xBFF0000000000000u, "-1.0"},
      {0x4008000000000000u, "3.0"},
      {0x40934A0000000000u, "1234.5"},
      {0x3F50624DD2F1A9FCu, "0.001"},
      {0xBF5437C5692B3CC5u, "-0.001234"},
      {0x4011666666666666u, "4.35"},
      {0x3F50624CC010EB7Au, "0.0009999990000000001"},
      {0x0000000000000000u, "0.0"},
      {0x8000000000000000u, "-0.0"},
      {0x7FF0000000000000u, "Infinity"},
      {0xFFF0000000000000u, "-Infinity"},
      {0x7FF8000000000000u, "NaN"},
      {0xFFF8000000000000u, "NaN"}, /* NaN has no sign in the text */
      {0x7FF0000000000001u, "NaN"}, /* a signalling NaN too */
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char buf[48];
    double d = dbl(cases[i].bits);
    const char *got = text(buf, f64_fn, &d);
    if (strcmp(got, cases[i].want))
      fail_msg("%016" PRIx64 ": got %s want %s", cases[i].bits, got, cases[i].want);
  }
}

static void fp32_in_python_repr_form(void **state) {
  (void)state;
  /* the shortest digits that strtof reads back, in repr's layout */
  static const struct {
    uint32_t bits;
    const char *want;
  } cases[] = {
      {0x3DCCCCCDu, "0.1"},
      {0x3EAAAAABu, "0.33333334"},
      {0x3E99999Au, "0.3"},
      {0x4B800000u, "16777216.0"},
      {0x58635FA9u, "1000000000000000.0"}, /* the float nearest 1e15 */
      {0x5A0E1BCAu, "1e+16"},
      {0x7F7FFFFFu, "3.4028235e+38"},
      {0x00800000u, "1.1754944e-38"},
      {0x007FFFFFu, "1.1754942e-38"},
      {0x00000001u, "1e-45"}, /* closest of 1e-45 and 2e-45 */
      {0x00000002u, "3e-45"},
      {0x00000005u, "7e-45"},
      {0x3727C5ACu, "1e-05"},
      {0x38D1B717u, "0.0001"},
      {0x47F12065u, "123456.79"},
      {0x3456BF95u, "2e-07"},
      {0x50000026u, "8589974000.0"}, /* 8589973504: 7 digits, then zeros */
      {0x40490FDBu, "3.1415927"},
      {0xC0200000u, "-2.5"},
      {0x477FE000u, "65504.0"},
      {0x00000000u, "0.0"},
      {0x80000000u, "-0.0"},
      {0x7F800000u, "Infinity"},
      {0xFF800000u, "-Infinity"},
      {0x7FC00000u, "NaN"},
      {0xFFC00001u, "NaN"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char buf[48];
    float f = flt(cases[i].bits);
    const char *got = text(buf, f32_fn, &f);
    if (strcmp(got, cases[i].want))
      fail_msg("%08" PRIx32 ": got %s want %s", cases[i].bits, got, cases[i].want);
  }
}

static void half_formats_in_repr_form(void **state) {
  (void)state;
  /* shortest texts that round (nearest even) back to the same 16 bits (Python's fractions) */
  static const struct {
    uint16_t bits;
    const char *want;
  } f16[] = {
      {0x3C00, "1.0"},      {0x7BFF, "65500.0"},   {0x0001, "6e-08"},   {0x3555, "0.3333"},
      {0x0400, "6.104e-05"}, {0x03FF, "6.1e-05"},  {0x3E00, "1.5"},     {0x5640, "100.0"},
      {0x2E66, "0.1"},      {0x8000, "-0.0"},      {0x7C00, "Infinity"}, {0xFC00, "-Infinity"},
      {0x7E00, "NaN"},      {0xBC00, "-1.0"},
  },
    bf16[] = {
      {0x3F80, "1.0"},    {0x4049, "3.14"},     {0x7F7F, "3.39e+38"}, {0x0001, "9e-41"},
      {0x3DCD, "0.1"},    {0x4780, "65500.0"},  {0x0080, "1.18e-38"}, {0x4B18, "9960000.0"},
      {0x8000, "-0.0"},   {0x7F80, "Infinity"}, {0xFF80, "-Infinity"}, {0x7FC0, "NaN"},
  };
  for (size_t i = 0; i < sizeof f16 / sizeof f16[0]; i++) {
    char buf[48];
    const char *got = text(buf, f16_fn, &f16[i].bits);
    if (strcmp(got, f16[i].want))
      fail_msg("FP16 %04x: got %s want %s", f16[i].bits, got, f16[i].want);
  }
  for (size_t i = 0; i < sizeof bf16 / sizeof bf16[0]; i++) {
    char buf[48];
    const char *got = text(buf, bf16_fn, &bf16[i].bits);
    if (strcmp(got, bf16[i].want))
      fail_msg("BF16 %04x: got %s want %s", bf16[i].bits, got, bf16[i].want);
  }
}

/* Read t with numparse (the reader the 16-bit formats promise to round trip through). */
static isv__numlit scan_text(const char *t) {
  isv__numlit n;
  int err = 0;
  const char *errp = NULL;
  const char *end = isv__num_scan(t, t + strlen(t), &n, &err, &errp);
  if (end != t + strlen(t)) fail_msg("%s is not one number literal", t);
  return n;
}

static void half_formats_round_trip_through_numparse(void **state) {
  (void)state;
  for (uint32_t h = 0; h < 65536; h++) {
    char buf[48];
    uint16_t bits = (uint16_t)h;
    const char *t16 = text(buf, f16_fn, &bits);
    isv__numlit n = scan_text(t16);
    uint16_t back = isv__num_to_f16(&n);
    int nan16 = (h & 0x7C00) == 0x7C00 && (h & 0x3FF);
    if (nan16 ? strcmp(t16, "NaN") != 0 : back != h)
      fail_msg("FP16 %04x -> %s -> %04x", h, t16, back);
    const char *tb = text(buf, bf16_fn, &bits);
    n = scan_text(tb);
    back = isv__num_to_bf16(&n);
    int nanb = (h & 0x7F80) == 0x7F80 && (h & 0x7F);
    if (nanb ? strcmp(tb, "NaN") != 0 : back != h) fail_msg("BF16 %04x -> %s -> %04x", h, tb, back);
  }
}

/* The layout repr() gives a finite, nonzero value: fixed notation when the decimal exponent of
 * its leading digit is in [-4, 15], else d[.ddd]e[+-]XX. */
static void check_layout(const char *t) {
  const char *p = t + (t[0] == '-');
  const char *e = strchr(p, 'e');
  const char *dot = strchr(p, '.');
  int exp10; /* of the leading digit, as the text states it */
  if (e) {
    exp10 = atoi(e + 1);
  } else if (p[0] != '0') {
    exp10 = (int)((dot ? dot : p + strlen(p)) - p) - 1;
  } else {
    size_t z = strspn(dot + 1, "0");
    exp10 = -(int)z - 1;
  }
  if (exp10 >= -4 && exp10 <= 15) {
    if (e || !dot || dot[1] == '\0') fail_msg("%s: expected fixed notation with a point", t);
    if (p[0] == '0' && p[1] != '.') fail_msg("%s: leading zero", t);
  } else {
    if (!e) fail_msg("%s: expected scientific notation", t);
    if (p[0] < '1' || p[0] > '9') fail_msg("%s: bad leading digit", t);
    if (dot && (dot != p + 1 || dot + 1 == e)) fail_msg("%s: bad point", t);
    if (dot && e[-1] == '0') fail_msg("%s: trailing zero in the digits", t);
    if (e[1] != '+' && e[1] != '-') fail_msg("%s: exponent without a sign", t);
    if (strlen(e + 2) < 2 || strspn(e + 2, "0123456789") != strlen(e + 2))
      fail_msg("%s: exponent needs at least two digits", t);
  }
}

/* The number of significant digits of a formatted number. */
static int sig_digits(const char *t) {
  int n = 0, started = 0, zeros = 0;
  for (const char *p = t; *p && *p != 'e'; p++) {
    if (*p < '0' || *p > '9') continue;
    if (*p == '0' && !started) continue;
    started = 1;
    if (*p == '0') {
      zeros++;
    } else {
      n += zeros + 1;
      zeros = 0;
    }
  }
  return n;
}

static uint64_t rng_state = 0x853C49E6748FEA9Bu;
static uint64_t rng(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return rng_state;
}

static void fp64_sampled_round_trip(void **state) {
  (void)state;
  for (int i = 0; i < 6000; i++) {
    uint64_t u = rng();
    switch (i % 4) {
    case 1: /* moderate magnitudes, where fixed notation applies */
      u = (u & 0x800FFFFFFFFFFFFFu) | ((uint64_t)(1023 - 20 + (int)(rng() % 80)) << 52);
      break;
    case 2: /* short significands: exact small decimals */
      u = (u & 0xFFF0000000000000u) | (rng() % 4096) << 40;
      break;
    case 3: /* subnormals */
      u &= 0x800FFFFFFFFFFFFFu;
      break;
    }
    double d = dbl(u);
    char buf[48];
    const char *t = text(buf, f64_fn, &d);
    if (isnan(d)) {
      assert_string_equal(t, "NaN");
      continue;
    }
    double back = strtod(t, NULL);
    if (memcmp(&back, &d, 8)) fail_msg("%016" PRIx64 " -> %s -> %a", u, t, back);
    if (!isfinite(d) || d == 0) continue;
    check_layout(t);
    /* shortest: no correctly rounded text with fewer significant digits reads back */
    int nd = sig_digits(t);
    for (int p = 1; p < nd; p++) {
      char c[40];
      snprintf(c, sizeof c, "%.*e", p - 1, d);
      if (strtod(c, NULL) == d) fail_msg("%s reads back too, shorter than %s", c, t);
    }
  }
}

static void fp32_sampled_round_trip(void **state) {
  (void)state;
  for (int i = 0; i < 6000; i++) {
    uint32_t u = (uint32_t)rng();
    switch (i % 4) {
    case 1:
      u = (u & 0x807FFFFFu) | (uint32_t)(127 - 20 + (int)(rng() % 80)) << 23;
      break;
    case 2:
      u = (u & 0xFF800000u) | (uint32_t)(rng() % 256) << 15;
      break;
    case 3:
      u &= 0x807FFFFFu;
      break;
    }
    float f = flt(u);
    char buf[48];
    const char *t = text(buf, f32_fn, &f);
    if (isnan(f)) {
      assert_string_equal(t, "NaN");
      continue;
    }
    float back = strtof(t, NULL);
    if (memcmp(&back, &f, 4)) fail_msg("%08" PRIx32 " -> %s -> %a", u, t, (double)back);
    /* numparse, the library's own reader, agrees */
    if (isfinite(f)) {
      isv__numlit n = scan_text(t);
      float back2 = isv__num_to_f32(&n);
      if (memcmp(&back2, &f, 4))
        fail_msg("%08" PRIx32 " -> %s -> numparse %a", u, t, (double)back2);
    }
    if (!isfinite(f) || f == 0) continue;
    check_layout(t);
    int nd = sig_digits(t);
    for (int p = 1; p < nd; p++) {
      char c[40];
      snprintf(c, sizeof c, "%.*e", p - 1, (double)f);
      if (strtof(c, NULL) == f) fail_msg("%s reads back too, shorter than %s", c, t);
    }
  }
}

static void unsigned_integers(void **state) {
  (void)state;
  uint64_t vals[64];
  size_t nv = 0;
  vals[nv++] = 0;
  vals[nv++] = UINT64_MAX;
  uint64_t p = 1;
  for (int k = 1; k <= 19; k++) { /* each power of ten and the number before it */
    p *= 10;
    vals[nv++] = p - 1;
    vals[nv++] = p;
  }
  vals[nv++] = 4294967295u;
  vals[nv++] = 4294967296u;
  for (size_t i = 0; i < nv; i++) {
    char want[32], out[32];
    int wn = snprintf(want, sizeof want, "%" PRIu64, vals[i]);
    memset(out, '#', sizeof out);
    size_t n = isv__fmt_u64(out, vals[i]);
    assert_int_equal(n, (size_t)wn);
    assert_int_equal(isv__fmt_count_digits(vals[i]), wn);
    assert_memory_equal(out, want, n);
    assert_int_equal(out[n], '#'); /* no NUL, nothing past the digits */
  }
  char out[32];
  assert_int_equal(isv__fmt_u64(out, 0), 1);
  assert_memory_equal(out, "0", 1);
  assert_int_equal(isv__fmt_u64(out, UINT64_MAX), 20);
  assert_memory_equal(out, "18446744073709551615", 20);
  for (int i = 0; i < 5000; i++) {
    uint64_t v = rng() >> (rng() % 64);
    char want[32];
    int wn = snprintf(want, sizeof want, "%" PRIu64, v);
    memset(out, '#', sizeof out);
    size_t n = isv__fmt_u64(out, v);
    assert_int_equal(n, (size_t)wn);
    assert_memory_equal(out, want, n);
    assert_int_equal(out[n], '#');
  }
}

static void signed_integers(void **state) {
  (void)state;
  static const struct {
    int64_t v;
    const char *want;
  } cases[] = {
      {0, "0"},
      {-1, "-1"},
      {1, "1"},
      {-9, "-9"},
      {-10, "-10"},
      {INT64_MAX, "9223372036854775807"},
      {INT64_MIN, "-9223372036854775808"},
      {INT64_MIN + 1, "-9223372036854775807"},
      {-1000000000000000000, "-1000000000000000000"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char out[32];
    memset(out, '#', sizeof out);
    size_t n = isv__fmt_i64(out, cases[i].v);
    assert_int_equal(n, strlen(cases[i].want));
    assert_memory_equal(out, cases[i].want, n);
    assert_int_equal(out[n], '#');
  }
  for (int i = 0; i < 5000; i++) {
    int64_t v = (int64_t)(rng() >> (rng() % 64));
    if (rng() % 2) v = -v;
    char want[32], out[32];
    int wn = snprintf(want, sizeof want, "%" PRId64, v);
    size_t n = isv__fmt_i64(out, v);
    assert_int_equal(n, (size_t)wn);
    assert_memory_equal(out, want, n);
  }
}

static void two_digit_table(void **state) {
  (void)state;
  for (int i = 0; i < 100; i++) {
    assert_int_equal(isv__digits2[2 * i], '0' + i / 10);
    assert_int_equal(isv__digits2[2 * i + 1], '0' + i % 10);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(fp64_in_python_repr_form),
      cmocka_unit_test(fp32_in_python_repr_form),
      cmocka_unit_test(half_formats_in_repr_form),
      cmocka_unit_test(half_formats_round_trip_through_numparse),
      cmocka_unit_test(fp64_sampled_round_trip),
      cmocka_unit_test(fp32_sampled_round_trip),
      cmocka_unit_test(unsigned_integers),
      cmocka_unit_test(signed_integers),
      cmocka_unit_test(two_digit_table),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
