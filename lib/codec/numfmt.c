/* Shortest round-trip text of floats (Schubfach) and the digits of integers (numfmt.h).
 *
 * Floats use Raffaello Giulietti's Schubfach algorithm ("The Schubfach way to render
 * doubles", 2020): the rounding interval of the binary value is scaled by a 128-bit (FP64)
 * or 64-bit (FP32/FP16/BF16) approximation of a power of ten, computed with round-to-odd,
 * which yields the shortest decimal in the interval, closest to the value on ties of length.
 * The powers of ten are pow10.h's table (shared with the number parser). The FP16/BF16 variant is the
 * 32-bit algorithm with the narrower significand and interval; it is verified exhaustively
 * over all 65,536 bit patterns of each format by tests/unit/test_json_writer.c, and FP32
 * over all 2^32 patterns by bench/json/check_all_f32.c.
 *
 * Text form (Python's repr): fixed notation when the decimal exponent of the leading digit
 * is in [-4, 15] ("0.0001", "123.5", "1e+16" vs "1000000000000000.0"), otherwise
 * scientific "d[.ddd]e[+-]XX" with at least two exponent digits; integral values in fixed
 * notation keep ".0"; NaN, Infinity, -Infinity bare; -0.0 is "-0.0". */
#include "numfmt.h"

#include <string.h>

#include "compiler.h"
#include "pow10.h"

const char isv__digits2[200] = {
    '0', '0', '0', '1', '0', '2', '0', '3', '0', '4', '0', '5', '0', '6', '0', '7', '0', '8',
    '0', '9', '1', '0', '1', '1', '1', '2', '1', '3', '1', '4', '1', '5', '1', '6', '1', '7',
    '1', '8', '1', '9', '2', '0', '2', '1', '2', '2', '2', '3', '2', '4', '2', '5', '2', '6',
    '2', '7', '2', '8', '2', '9', '3', '0', '3', '1', '3', '2', '3', '3', '3', '4', '3', '5',
    '3', '6', '3', '7', '3', '8', '3', '9', '4', '0', '4', '1', '4', '2', '4', '3', '4', '4',
    '4', '5', '4', '6', '4', '7', '4', '8', '4', '9', '5', '0', '5', '1', '5', '2', '5', '3',
    '5', '4', '5', '5', '5', '6', '5', '7', '5', '8', '5', '9', '6', '0', '6', '1', '6', '2',
    '6', '3', '6', '4', '6', '5', '6', '6', '6', '7', '6', '8', '6', '9', '7', '0', '7', '1',
    '7', '2', '7', '3', '7', '4', '7', '5', '7', '6', '7', '7', '7', '8', '7', '9', '8', '0',
    '8', '1', '8', '2', '8', '3', '8', '4', '8', '5', '8', '6', '8', '7', '8', '8', '8', '9',
    '9', '0', '9', '1', '9', '2', '9', '3', '9', '4', '9', '5', '9', '6', '9', '7', '9', '8',
    '9', '9'};

static inline int floor_log10_pow2(int e) { return (e * 1262611) >> 22; }
static inline int floor_log10_three_quarters_pow2(int e) { return (e * 1262611 - 524031) >> 22; }
static inline int floor_log2_pow10(int e) { return (e * 1741647) >> 19; }

/* ---------------------------------------------------------------------------------------------
 * Schubfach, 64-bit (FP64)
 * ------------------------------------------------------------------------------------------- */
static inline uint64_t round_to_odd64(uint64_t g1, uint64_t g0, uint64_t cp) {
  isv__u128 x = (isv__u128)g0 * cp;
  isv__u128 y = (isv__u128)g1 * cp;
  isv__u128 z = y + (uint64_t)(x >> 64);
  uint64_t z1 = (uint64_t)(z >> 64), z0 = (uint64_t)z;
  return z1 | (z0 > 1);
}

/* v = c * 2^q (c, q from the IEEE fields) -> shortest d * 10^k. */
static inline void to_decimal64(uint64_t frac, int bexp, uint64_t *d, int *k_out) {
  uint64_t c;
  int q;
  if (bexp != 0) {
    c = (UINT64_C(1) << 52) | frac;
    q = bexp - 1075;
    /* Small integers: exact, and shortest once trailing zeros are removed. */
    if (q <= 0 && q > -53 && (c & ((UINT64_C(1) << -q) - 1)) == 0) {
      *d = c >> -q;
      *k_out = 0;
      return;
    }
  } else {
    c = frac;
    q = -1074;
  }
  const int is_even = !(c & 1);
  const int lower_closer = frac == 0 && bexp > 1;
  const uint64_t cbl = 4 * c - 2 + (uint64_t)lower_closer;
  const uint64_t cb = 4 * c;
  const uint64_t cbr = 4 * c + 2;
  const int k = lower_closer ? floor_log10_three_quarters_pow2(q) : floor_log10_pow2(q);
  const int h = q + floor_log2_pow10(-k) + 1;
  const uint64_t *T = isv__pow10_tab[-k - ISV__POW10_KMIN];
  uint64_t g0 = T[1] + 1, g1 = T[0] + (T[1] + 1 == 0);
  const uint64_t vbl = round_to_odd64(g1, g0, cbl << h);
  const uint64_t vb = round_to_odd64(g1, g0, cb << h);
  const uint64_t vbr = round_to_odd64(g1, g0, cbr << h);
  const uint64_t lower = vbl + !is_even;
  const uint64_t upper = vbr - !is_even;
  const uint64_t s = vb / 4;
  if (s >= 10) {
    const uint64_t sp = s / 10;
    const int up_inside = lower <= 40 * sp;
    const int wp_inside = 40 * sp + 40 <= upper;
    if (up_inside != wp_inside) {
      *d = sp + (uint64_t)wp_inside;
      *k_out = k + 1;
      return;
    }
  }
  const int u_inside = lower <= 4 * s;
  const int w_inside = 4 * s + 4 <= upper;
  if (u_inside != w_inside) {
    *d = s + (uint64_t)w_inside;
    *k_out = k;
    return;
  }
  const uint64_t mid = 4 * s + 2;
  const int round_up = vb > mid || (vb == mid && (s & 1) != 0);
  *d = s + (uint64_t)round_up;
  *k_out = k;
}

/* ---------------------------------------------------------------------------------------------
 * Schubfach, 32-bit (FP32; also FP16 and BF16 with a narrower significand)
 * ------------------------------------------------------------------------------------------- */
static inline uint32_t round_to_odd32(uint64_t g, uint32_t cp) {
  isv__u128 p = (isv__u128)g * cp;
  uint32_t y1 = (uint32_t)(p >> 64);
  uint32_t y0 = (uint32_t)(p >> 32);
  return y1 | (y0 > 1);
}

/* v = c * 2^q, c < 2^24; lower_closer when the lower neighbour is half as far (c is a power
 * of two and not the smallest normal). */
static inline void to_decimal32(uint32_t c, int q, int lower_closer, uint32_t *d, int *k_out) {
  const int is_even = !(c & 1);
  const uint32_t cbl = 4 * c - 2 + (uint32_t)lower_closer;
  const uint32_t cb = 4 * c;
  const uint32_t cbr = 4 * c + 2;
  const int k = lower_closer ? floor_log10_three_quarters_pow2(q) : floor_log10_pow2(q);
  const int h = q + floor_log2_pow10(-k) + 1;
  const uint64_t g = isv__pow10_tab[-k - ISV__POW10_KMIN][0] + 1;
  const uint32_t vbl = round_to_odd32(g, cbl << h);
  const uint32_t vb = round_to_odd32(g, cb << h);
  const uint32_t vbr = round_to_odd32(g, cbr << h);
  const uint32_t lower = vbl + !is_even;
  const uint32_t upper = vbr - !is_even;
  const uint32_t s = vb / 4;
  if (s >= 10) {
    const uint32_t sp = s / 10;
    const int up_inside = lower <= 40 * sp;
    const int wp_inside = 40 * sp + 40 <= upper;
    if (up_inside != wp_inside) {
      *d = sp + (uint32_t)wp_inside;
      *k_out = k + 1;
      return;
    }
  }
  const int u_inside = lower <= 4 * s;
  const int w_inside = 4 * s + 4 <= upper;
  if (u_inside != w_inside) {
    *d = s + (uint32_t)w_inside;
    *k_out = k;
    return;
  }
  const uint32_t mid = 4 * s + 2;
  const int round_up = vb > mid || (vb == mid && (s & 1) != 0);
  *d = s + (uint32_t)round_up;
  *k_out = k;
}

/* Decode a small binary format (P significand bits incl. hidden, bias) and run Schubfach. */
static inline void small_to_decimal(uint32_t frac, int bexp, int P, int bias, uint32_t *d,
                                    int *k) {
  uint32_t c;
  int q;
  if (bexp != 0) {
    c = (1u << (P - 1)) | frac;
    q = bexp - bias - (P - 1);
    if (q <= 0 && q > -P && (c & ((1u << -q) - 1)) == 0) {
      *d = c >> -q;
      *k = 0;
      return;
    }
  } else {
    c = frac;
    q = 1 - bias - (P - 1);
  }
  to_decimal32(c, q, frac == 0 && bexp > 1, d, k);
}

/* ---------------------------------------------------------------------------------------------
 * Text
 * ------------------------------------------------------------------------------------------- */
static inline uint64_t rotr64(uint64_t x, int r) { return (x >> r) | (x << (64 - r)); }

/* d (> 0) without its trailing decimal zeros, their count added to *k. The shortest digits of
 * most floats end in several (Schubfach's come with all the precision's places, one dropped
 * at most: 0.25f is 25000000e-8), and a division by 10 per zero was a fifth of a float's text.
 * Divisibility by 100, then by 10, is told by a multiplication with the inverse of 25 (of 5)
 * modulo 2^64 and a rotation, as Dragonbox does: the product, rotated, is d / 100 when 100
 * divides d and more than UINT64_MAX / 100 when it does not (Granlund and Montgomery). */
static inline uint64_t strip_zeros(uint64_t d, int *k) {
  for (;;) {
    uint64_t q = rotr64(d * UINT64_C(0x8f5c28f5c28f5c29), 2);
    if (q > UINT64_MAX / 100) break;
    d = q;
    *k += 2;
  }
  uint64_t q = rotr64(d * UINT64_C(0xcccccccccccccccd), 1);
  if (q <= UINT64_MAX / 10) {
    d = q;
    *k += 1;
  }
  return d;
}

/* Render d * 10^k (d > 0) per Python repr into out; returns the length. */
static size_t render(char *out, int neg, uint64_t d, int k) {
  d = strip_zeros(d, &k); /* trailing zeros belong in the exponent */
  char *p = out;
  if (neg) *p++ = '-';
  const int n = isv__fmt_count_digits(d);
  const int decpt = n + k; /* value = 0.DIGITS * 10^decpt */
  if (decpt > -4 && decpt <= 16) {
    if (decpt <= 0) {
      *p++ = '0';
      *p++ = '.';
      for (int i = 0; i < -decpt; i++) *p++ = '0';
      isv__fmt_put_digits(p + n, d);
      p += n;
    } else if (decpt >= n) {
      isv__fmt_put_digits(p + n, d);
      p += n;
      for (int i = n; i < decpt; i++) *p++ = '0';
      *p++ = '.';
      *p++ = '0';
    } else {
      /* digits with a point after decpt of them */
      isv__fmt_put_digits(p + n + 1, d);
      memmove(p, p + 1, (size_t)decpt);
      p[decpt] = '.';
      p += n + 1;
    }
  } else {
    isv__fmt_put_digits(p + n + 1, d);
    p[0] = p[1];
    if (n > 1) {
      p[1] = '.';
      p += n + 1;
    } else {
      p += 1;
    }
    int e = decpt - 1;
    *p++ = 'e';
    if (e < 0) {
      *p++ = '-';
      e = -e;
    } else {
      *p++ = '+';
    }
    if (e >= 100) {
      *p++ = (char)('0' + e / 100);
      e %= 100;
    }
    memcpy(p, isv__digits2 + 2 * e, 2);
    p += 2;
  }
  return (size_t)(p - out);
}

static size_t special(char *out, int neg, int is_nan, int is_zero) {
  const char *s = is_nan ? "NaN" : is_zero ? (neg ? "-0.0" : "0.0") : (neg ? "-Infinity" : "Infinity");
  size_t l = strlen(s);
  memcpy(out, s, l);
  return l;
}

size_t isv__fmt_f64(char out[32], double v) {
  uint64_t u;
  memcpy(&u, &v, sizeof u);
  const int neg = (int)(u >> 63);
  const int bexp = (int)((u >> 52) & 0x7FF);
  const uint64_t frac = u & ((UINT64_C(1) << 52) - 1);
  if (bexp == 0x7FF) return special(out, neg, frac != 0, 0);
  if (bexp == 0 && frac == 0) return special(out, neg, 0, 1);
  uint64_t d;
  int k;
  to_decimal64(frac, bexp, &d, &k);
  return render(out, neg, d, k);
}

size_t isv__fmt_f32(char out[32], float v) {
  uint32_t u;
  memcpy(&u, &v, sizeof u);
  const int neg = (int)(u >> 31);
  const int bexp = (int)((u >> 23) & 0xFF);
  const uint32_t frac = u & 0x7FFFFFu;
  if (bexp == 0xFF) return special(out, neg, frac != 0, 0);
  if (bexp == 0 && frac == 0) return special(out, neg, 0, 1);
  uint32_t d;
  int k;
  small_to_decimal(frac, bexp, 24, 127, &d, &k);
  return render(out, neg, d, k);
}

size_t isv__fmt_f16(char out[32], uint16_t bits) {
  const int neg = bits >> 15;
  const int bexp = (bits >> 10) & 0x1F;
  const uint32_t frac = bits & 0x3FFu;
  if (bexp == 0x1F) return special(out, neg, frac != 0, 0);
  if (bexp == 0 && frac == 0) return special(out, neg, 0, 1);
  uint32_t d;
  int k;
  small_to_decimal(frac, bexp, 11, 15, &d, &k);
  return render(out, neg, d, k);
}

size_t isv__fmt_bf16(char out[32], uint16_t bits) {
  const int neg = bits >> 15;
  const int bexp = (bits >> 7) & 0xFF;
  const uint32_t frac = bits & 0x7Fu;
  if (bexp == 0xFF) return special(out, neg, frac != 0, 0);
  if (bexp == 0 && frac == 0) return special(out, neg, 0, 1);
  uint32_t d;
  int k;
  small_to_decimal(frac, bexp, 8, 127, &d, &k);
  return render(out, neg, d, k);
}
