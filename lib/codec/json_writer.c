/* JSON writer: shortest round-trip floats (Schubfach), integers, strings, tensors.
 *
 * Floats use Raffaello Giulietti's Schubfach algorithm ("The Schubfach way to render
 * doubles", 2020): the rounding interval of the binary value is scaled by a 128-bit (FP64)
 * or 64-bit (FP32/FP16/BF16) approximation of a power of ten, computed with round-to-odd,
 * which yields the shortest decimal in the interval, closest to the value on ties of length.
 * The powers of ten are the reader's table (json_reader.c). The FP16/BF16 variant is the
 * 32-bit algorithm with the narrower significand and interval; it is verified exhaustively
 * over all 65,536 bit patterns of each format by tests/unit/test_json_writer.c, and FP32
 * over all 2^32 patterns by bench/json/check_all_f32.c.
 *
 * Text form (Python's repr): fixed notation when the decimal exponent of the leading digit
 * is in [-4, 15] ("0.0001", "123.5", "1e+16" vs "1000000000000000.0"), otherwise
 * scientific "d[.ddd]e[+-]XX" with at least two exponent digits; integral values in fixed
 * notation keep ".0"; NaN, Infinity, -Infinity bare; -0.0 is "-0.0". */
#include "json_writer.h"

#include <string.h>

#include "base64.h"
#include "half.h"
#include "json_reader.h" /* isv__pow10_tab */
#include "utf8.h"

__extension__ typedef unsigned __int128 isv_w_u128;

static const char digits2[200] = {
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
  isv_w_u128 x = (isv_w_u128)g0 * cp;
  isv_w_u128 y = (isv_w_u128)g1 * cp;
  isv_w_u128 z = y + (uint64_t)(x >> 64);
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
  isv_w_u128 p = (isv_w_u128)g * cp;
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
static inline int count_digits(uint64_t v) {
  int n = 1;
  while (v >= 10000) {
    v /= 10000;
    n += 4;
  }
  if (v >= 100) {
    n += 2;
    v /= 100;
  }
  return n + (v >= 10);
}

/* Write the n decimal digits of v ending just before `end`. */
static inline void put_digits(char *end, uint64_t v) {
  while (v >= 100) {
    unsigned r = (unsigned)(v % 100);
    v /= 100;
    end -= 2;
    memcpy(end, digits2 + 2 * r, 2);
  }
  if (v >= 10) {
    end -= 2;
    memcpy(end, digits2 + 2 * v, 2);
  } else {
    *--end = (char)('0' + v);
  }
}

/* Render d * 10^k (d > 0) per Python repr into out; returns the length. */
static size_t render(char *out, int neg, uint64_t d, int k) {
  while (d % 10 == 0) { /* trailing zeros belong in the exponent */
    d /= 10;
    k++;
  }
  char *p = out;
  if (neg) *p++ = '-';
  const int n = count_digits(d);
  const int decpt = n + k; /* value = 0.DIGITS * 10^decpt */
  if (decpt > -4 && decpt <= 16) {
    if (decpt <= 0) {
      *p++ = '0';
      *p++ = '.';
      for (int i = 0; i < -decpt; i++) *p++ = '0';
      put_digits(p + n, d);
      p += n;
    } else if (decpt >= n) {
      put_digits(p + n, d);
      p += n;
      for (int i = n; i < decpt; i++) *p++ = '0';
      *p++ = '.';
      *p++ = '0';
    } else {
      /* digits with a point after decpt of them */
      put_digits(p + n + 1, d);
      memmove(p, p + 1, (size_t)decpt);
      p[decpt] = '.';
      p += n + 1;
    }
  } else {
    put_digits(p + n + 1, d);
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
    memcpy(p, digits2 + 2 * e, 2);
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

size_t isv__json_format_f64(char out[32], double v) {
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

size_t isv__json_format_f32(char out[32], float v) {
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

size_t isv__json_format_f16(char out[32], uint16_t bits) {
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

size_t isv__json_format_bf16(char out[32], uint16_t bits) {
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

/* ---------------------------------------------------------------------------------------------
 * Scalars
 * ------------------------------------------------------------------------------------------- */
static inline size_t fmt_u64(char *out, uint64_t v) {
  int n = count_digits(v);
  put_digits(out + n, v);
  return (size_t)n;
}

static inline size_t fmt_i64(char *out, int64_t v) {
  if (v < 0) {
    out[0] = '-';
    return 1 + fmt_u64(out + 1, 0 - (uint64_t)v);
  }
  return fmt_u64(out, (uint64_t)v);
}

size_t isv__json_format_u64(char out[20], uint64_t v) { return fmt_u64(out, v); }

void isv__json_write_f32(isv__buf *b, float v) {
  char *p = isv__buf_reserve(b, 32);
  if (p) b->len += isv__json_format_f32(p, v);
}

void isv__json_write_f64(isv__buf *b, double v) {
  char *p = isv__buf_reserve(b, 32);
  if (p) b->len += isv__json_format_f64(p, v);
}

void isv__json_write_i64(isv__buf *b, int64_t v) {
  char *p = isv__buf_reserve(b, 24);
  if (p) b->len += fmt_i64(p, v);
}

void isv__json_write_u64(isv__buf *b, uint64_t v) {
  char *p = isv__buf_reserve(b, 24);
  if (p) b->len += fmt_u64(p, v);
}

/* 0: byte copied as is; otherwise the escape letter, or 'u' for \u00XX. */
static const char esc_tab[256] = {
    'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'b', 't', 'n', 'u', 'f', 'r', 'u', 'u',
    'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u',
    0,   0,   '"', 0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,
    0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,
    0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,
    0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   '\\'};

void isv__json_write_string(isv__buf *b, const char *s, size_t len) {
  static const char hex[] = "0123456789ABCDEF";
  const unsigned char *u = (const unsigned char *)s;
  isv__buf_putc(b, '"');
  size_t i = 0;
  while (i < len) {
    size_t j = i;
    while (j < len && esc_tab[u[j]] == 0) j++;
    isv__buf_append(b, s + i, j - i);
    if (j >= len) break;
    char e = esc_tab[u[j]];
    if (e == 'u') {
      char t[6] = {'\\', 'u', '0', '0', hex[u[j] >> 4], hex[u[j] & 15]};
      isv__buf_append(b, t, 6);
    } else {
      char t[2] = {'\\', e};
      isv__buf_append(b, t, 2);
    }
    i = j + 1;
  }
  isv__buf_putc(b, '"');
}

void isv__json_write_bytes_element(isv__buf *b, const char *s, size_t len) {
  if (isv__utf8_valid(s, len)) {
    isv__json_write_string(b, s, len);
    return;
  }
  isv__buf_append(b, "{\"b64\":\"", 8);
  isv__base64_encode(b, s, len);
  isv__buf_append(b, "\"}", 2);
}

/* ---------------------------------------------------------------------------------------------
 * Tensors
 * ------------------------------------------------------------------------------------------- */
/* Format element i of a fixed-size type into p (room for 32 bytes); returns the length. */
static inline size_t fmt_elem(char *p, isv_datatype dt, const void *data, size_t i) {
  switch (dt) {
    case ISV_BOOL:
      if (((const uint8_t *)data)[i]) {
        memcpy(p, "true", 4);
        return 4;
      }
      memcpy(p, "false", 5);
      return 5;
    case ISV_UINT8: return fmt_u64(p, ((const uint8_t *)data)[i]);
    case ISV_UINT16: return fmt_u64(p, ((const uint16_t *)data)[i]);
    case ISV_UINT32: return fmt_u64(p, ((const uint32_t *)data)[i]);
    case ISV_UINT64: return fmt_u64(p, ((const uint64_t *)data)[i]);
    case ISV_INT8: return fmt_i64(p, ((const int8_t *)data)[i]);
    case ISV_INT16: return fmt_i64(p, ((const int16_t *)data)[i]);
    case ISV_INT32: return fmt_i64(p, ((const int32_t *)data)[i]);
    case ISV_INT64: return fmt_i64(p, ((const int64_t *)data)[i]);
    case ISV_FP16: return isv__json_format_f16(p, ((const uint16_t *)data)[i]);
    case ISV_BF16: return isv__json_format_bf16(p, ((const uint16_t *)data)[i]);
    case ISV_FP32: return isv__json_format_f32(p, ((const float *)data)[i]);
    case ISV_FP64: return isv__json_format_f64(p, ((const double *)data)[i]);
    default: return 0;
  }
}

/* Elements [from, from + n) separated by commas (no brackets). */
static inline void write_run(isv__buf *b, const isv_datatype dt, const void *data, size_t from,
                             size_t n) {
  if (dt == ISV_BYTES) {
    const isv_bytes *e = data;
    for (size_t i = 0; i < n; i++) {
      if (i) isv__buf_putc(b, ',');
      isv__json_write_bytes_element(b, e[from + i].ptr, e[from + i].len);
    }
    return;
  }
  size_t i = 0;
  while (i < n) {
    size_t chunk = n - i < 256 ? n - i : 256;
    char *p = isv__buf_reserve(b, chunk * 33);
    if (!p) return;
    char *start = p;
    for (size_t j = 0; j < chunk; j++, i++) {
      if (i) *p++ = ',';
      p += fmt_elem(p, dt, data, from + i);
    }
    b->len += (size_t)(p - start);
  }
}

static void write_flat(isv__buf *b, isv_datatype dt, const void *data, size_t from, size_t n) {
  isv__buf_putc(b, '[');
  switch (dt) { /* one instantiation per type: no per-element dispatch */
#define CASE(T) \
  case T: write_run(b, T, data, from, n); break;
    CASE(ISV_BOOL) CASE(ISV_UINT8) CASE(ISV_UINT16) CASE(ISV_UINT32) CASE(ISV_UINT64)
    CASE(ISV_INT8) CASE(ISV_INT16) CASE(ISV_INT32) CASE(ISV_INT64) CASE(ISV_FP16)
    CASE(ISV_BF16) CASE(ISV_FP32) CASE(ISV_FP64) CASE(ISV_BYTES)
#undef CASE
    default: break;
  }
  isv__buf_putc(b, ']');
}

void isv__json_write_tensor(isv__buf *b, isv_datatype dt, const void *data, size_t count) {
  write_flat(b, dt, data, 0, count);
}

static void write_nested(isv__buf *b, isv_datatype dt, const void *data, const int64_t *shape,
                         size_t ndim, size_t *pos) {
  size_t n = shape[0] > 0 ? (size_t)shape[0] : 0;
  if (ndim == 1) {
    write_flat(b, dt, data, *pos, n);
    *pos += n;
    return;
  }
  isv__buf_putc(b, '[');
  for (size_t i = 0; i < n; i++) {
    if (i) isv__buf_putc(b, ',');
    write_nested(b, dt, data, shape + 1, ndim - 1, pos);
  }
  isv__buf_putc(b, ']');
}

void isv__json_write_tensor_nested(isv__buf *b, isv_datatype dt, const void *data,
                                   const int64_t *shape, size_t ndim) {
  if (ndim == 0) {
    if (dt == ISV_BYTES) {
      const isv_bytes *e = data;
      isv__json_write_bytes_element(b, e->ptr, e->len);
      return;
    }
    char *p = isv__buf_reserve(b, 33);
    if (p) b->len += fmt_elem(p, dt, data, 0);
    return;
  }
  size_t pos = 0;
  write_nested(b, dt, data, shape, ndim, &pos);
}
