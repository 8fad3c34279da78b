/* Decimal number literals -> IEEE binary, correctly rounded (nearest even), without strtod (so
 * without locale dependence). Used by the JSON reader for every number it converts; the hot
 * functions are inline so that the tensor loops compile to straight-line code.
 *
 * Algorithm:
 *   1. The literal is scanned once into w (its first 19 significant digits, a uint64), q (a
 *      decimal exponent: value = w * 10^q) and a "truncated" flag (nonzero digits dropped).
 *   2. FP64: Clinger's fast path (w <= 2^53, |q| <= 22: one IEEE multiply or divide of two
 *      exact doubles, hence correctly rounded).  FP32: the same double, then converted to
 *      float; this is exact unless the double is itself a float midpoint (checked from its
 *      bits), because every float midpoint is a double and rounding is monotonic.
 *   3. Otherwise isv__num_dec2bin(): w is multiplied by a 128-bit truncation of 10^q (pow10.h),
 *      giving a 192-bit X with a proven error interval [X, X + 2^63) (or + 2^132 when
 *      digits were truncated).  Rounding is decided from the interval when no rounding
 *      boundary lies inside; when a representable value lies inside, that is the answer;
 *      when a MIDPOINT lies inside (rare: exact ties such as "16777217" for FP32, or inputs
 *      within 2^-70 relative of a tie), the literal's digits are compared exactly with the
 *      midpoint's full decimal expansion (isv__num_cmp_exact: small bignum, no allocation).
 *   The same isv__num_dec2bin() rounds directly to FP32, FP16 and BF16, so there is never a
 *   double rounding (text -> double -> half). */
#ifndef ISV_CODEC_NUMPARSE_H
#define ISV_CODEC_NUMPARSE_H

#include <stdint.h>
#include <string.h>

#include "compiler.h"
#include "pow10.h"
#include "swar.h"

ISV_INLINE int isv__num_is_digit(unsigned char c) { return (unsigned)(c - '0') < 10u; }

/* ---------------------------------------------------------------------------------------------
 * Number literals
 * ------------------------------------------------------------------------------------------- */
enum { ISV__NUM_FINITE = 0, ISV__NUM_NAN = 1, ISV__NUM_INF = 2 };
enum {
  ISV__NERR_NONE = 0,
  ISV__NERR_SYNTAX,      /* not a number at all */
  ISV__NERR_LEADING0,    /* 0 followed by a digit */
  ISV__NERR_FRAC,        /* '.' not followed by a digit */
  ISV__NERR_EXP          /* 'e' not followed by a digit */
};

typedef struct isv__numlit {
  uint64_t w;      /* first 19 significant digits */
  int64_t q;       /* value ~= w * 10^q */
  int neg;
  int special;     /* NUM_* */
  int truncated;   /* nonzero digits were dropped from w */
  int is_int;      /* no fraction, no exponent */
  const char *start, *end;
} isv__numlit;

#define ISV__NUM_EXP_SAT 100000000000LL

/* SWAR: the number of leading ASCII digits in the 8 bytes at p (0..8) and their value. */
ISV_INLINE int isv__num_swar_digits(const char *p, uint64_t *val) {
  uint64_t x = isv__swar_load(p) ^ 0x3030303030303030u; /* digits become 0..9 */
  /* high bit of each byte that is not a digit (carries only ever leave non-digit bytes, so
   * the first non-digit byte is always flagged correctly) */
  uint64_t nd = ((x + 0x7676767676767676u) | x) & 0x8080808080808080u;
  int k = nd ? __builtin_ctzll(nd) >> 3 : 8;
  if (k == 0) {
    *val = 0;
    return 0;
  }
  x <<= 8 * (8 - k); /* drop the non-digits; the vacated low bytes are leading zeros */
  x = (x * 10) + (x >> 8);
  x = (((x & 0x000000FF000000FFu) * (100 + (UINT64_C(1000000) << 32))) +
       (((x >> 16) & 0x000000FF000000FFu) * (1 + (UINT64_C(10000) << 32)))) >> 32;
  *val = x;
  return k;
}

/* SWAR: whether the 8 bytes at p are four one-digit elements of a JSON array, "d,d,d,d," (1),
 * or its last four, "d,d,d,d]" (2); else 0. Element i's value (0..9) is byte 2i of *digits, the
 * odd bytes 0. Masks, one-hot rows and class labels are mostly this: four elements per word. */
ISV_INLINE int isv__num_swar_digits4(const char *p, uint64_t *digits) {
  uint64_t x = isv__swar_load(p) ^ 0x2c302c302c302c30u; /* "0,0,0,0,": digits 0..9, commas 0 */
  uint64_t last = x >> 56;              /* the fourth separator: ',' gives 0, ']' 0x71 */
  x &= 0x00ffffffffffffffu;
  /* the separators are commas; each digit byte is 0..9 (a byte of 0x80 or more is flagged by
   * itself, 0x0a..0x7f by the add; only a flagged byte carries, into a comma's byte) */
  if ((x & 0x0000ff00ff00ff00u) != 0 || (((x + 0x0076007600760076u) | x) & 0x0080008000800080u) != 0 ||
      (last != 0 && last != (']' ^ ',')))
    return 0;
  *digits = x;
  return last ? 2 : 1;
}

/* The same for four one-digit elements separated as Python's json.dumps writes them, "d, d, d,
 * d," (1) or "d, d, d, d]" (2), in the 11 bytes at p; else 0. *digits as isv__num_swar_digits4
 * gives them: element i's value in byte 2i. */
ISV_INLINE int isv__num_swar_digits4_spaced(const char *p, uint64_t *digits) {
  uint64_t x = isv__swar_load(p) ^ 0x2c30202c30202c30u; /* "0, 0, 0,": digits 0..9, the rest 0 */
  uint32_t y;
  memcpy(&y, p + 7, 4);
  y ^= 0x2c30202cu;      /* ", 0,": bytes 7 and 8 0, the fourth digit 0..9, its separator */
  uint32_t last = y >> 24; /* ',' gives 0, ']' 0x71 */
  /* as in isv__num_swar_digits4: the separators' bytes 0, each digit byte 0..9 */
  if ((x & 0xff00ffff00ffff00u) != 0 || (y & 0xffffu) != 0 || ((y >> 16) & 0xffu) > 9 ||
      (((x + 0x0076000076000076u) | x) & 0x0080000080000080u) != 0 ||
      (last != 0 && last != (']' ^ ',')))
    return 0;
  *digits = (x & 0xffu) | ((x >> 24) & 0xffu) << 16 | ((x >> 48) & 0xffu) << 32 |
            (uint64_t)((y >> 16) & 0xffu) << 48;
  return last ? 2 : 1;
}

static const uint64_t isv__num_p10u[9] = {1, 10, 100, 1000, 10000, 100000, 1000000, 10000000, 100000000};

/* Scan one number literal at p (p < end). Returns the end, or NULL with *err set (and the
 * returned error position in *errp). */
ISV_INLINE const char *isv__num_scan(const char *p, const char *end, isv__numlit *n, int *err,
                                const char **errp) {
  n->start = p;
  n->neg = 0;
  n->special = ISV__NUM_FINITE;
  n->truncated = 0;
  n->is_int = 1;
  if (*p == '-') {
    n->neg = 1;
    p++;
    if (ISV_UNLIKELY(p >= end)) goto syntax;
  }
  uint64_t w = 0;
  int64_t q = 0;
  int nd = 0;
  unsigned char c = (unsigned char)*p;
  if (c == '0') {
    p++;
    if (ISV_UNLIKELY(p < end && isv__num_is_digit((unsigned char)*p))) {
      *err = ISV__NERR_LEADING0;
      *errp = p - 1;
      return NULL;
    }
  } else if (ISV_LIKELY(isv__num_is_digit(c))) {
    while (end - p >= 8 && nd <= 11) {
      uint64_t v;
      int k = isv__num_swar_digits(p, &v);
      w = w * isv__num_p10u[k] + v;
      nd += k;
      p += k;
      if (k < 8) goto int_done;
    }
    while (p < end && isv__num_is_digit((unsigned char)*p)) {
      unsigned d = (unsigned char)*p - '0';
      if (ISV_LIKELY(nd < 19)) {
        w = w * 10 + d;
        nd++;
      } else {
        q++;
        n->truncated |= (d != 0);
      }
      p++;
    }
  int_done:;
  } else if (c == 'I') {
    if (end - p >= 8 && memcmp(p, "Infinity", 8) == 0) {
      n->special = ISV__NUM_INF;
      n->is_int = 0;
      n->w = 0;
      n->q = 0;
      n->end = p + 8;
      return p + 8;
    }
    goto syntax;
  } else if (c == 'N' && !n->neg) {
    if (end - p >= 3 && memcmp(p, "NaN", 3) == 0) {
      n->special = ISV__NUM_NAN;
      n->is_int = 0;
      n->w = 0;
      n->q = 0;
      n->end = p + 3;
      return p + 3;
    }
    goto syntax;
  } else {
    goto syntax;
  }
  if (p < end && *p == '.') {
    n->is_int = 0;
    p++;
    if (ISV_UNLIKELY(p >= end || !isv__num_is_digit((unsigned char)*p))) {
      *err = ISV__NERR_FRAC;
      *errp = p;
      return NULL;
    }
    if (w == 0) { /* skip leading zeros of the fraction: they are not significant */
      while (p < end && *p == '0') {
        p++;
        q--;
      }
    }
    while (end - p >= 8 && nd <= 11) {
      uint64_t v;
      int k = isv__num_swar_digits(p, &v);
      w = w * isv__num_p10u[k] + v;
      nd += k;
      q -= k;
      p += k;
      if (k < 8) goto frac_done;
    }
    while (p < end && isv__num_is_digit((unsigned char)*p)) {
      unsigned d = (unsigned char)*p - '0';
      if (ISV_LIKELY(nd < 19)) {
        w = w * 10 + d;
        nd++;
        q--;
      } else {
        n->truncated |= (d != 0);
      }
      p++;
    }
  frac_done:;
  }
  if (p < end && (*p | 0x20) == 'e') {
    n->is_int = 0;
    p++;
    int eneg = 0;
    if (p < end && (*p == '+' || *p == '-')) {
      eneg = (*p == '-');
      p++;
    }
    if (ISV_UNLIKELY(p >= end || !isv__num_is_digit((unsigned char)*p))) {
      *err = ISV__NERR_EXP;
      *errp = p;
      return NULL;
    }
    int64_t e = 0;
    do {
      if (e < ISV__NUM_EXP_SAT) e = e * 10 + ((unsigned char)*p - '0');
      p++;
    } while (p < end && isv__num_is_digit((unsigned char)*p));
    q += eneg ? -e : e;
  }
  n->w = w;
  n->q = q;
  n->end = p;
  return p;
syntax:
  *err = ISV__NERR_SYNTAX;
  *errp = n->start;
  return NULL;
}

/* Sign of (|literal| - B * 2^eB) for the literal's text [lit, lit_end), finite and nonzero:
 * the exact tie-break of isv__num_dec2bin (numparse.c). */
int isv__num_cmp_exact(const char *lit, const char *lit_end, uint64_t B, int eB);

/* ---------------------------------------------------------------------------------------------
 * Decimal -> binary, correctly rounded (nearest even), for a format with P significand bits
 * (hidden bit included) and EB exponent bits. w != 0. Returns the bits without the sign.
 * ------------------------------------------------------------------------------------------- */
ISV_INLINE uint64_t isv__num_dec2bin(const isv__numlit *n, const int P, const int EB) {
  const int bias = (1 << (EB - 1)) - 1;
  const int emin = 1 - bias;
  const uint64_t inf = (uint64_t)((1u << EB) - 1) << (P - 1);
  int64_t q = n->q;
  if (q < ISV__POW10_KMIN) return 0; /* w * 10^q < 10^-324: below half of every subnormal */
  if (q > 308) return inf;
  uint64_t w = n->w;
  int truncated = n->truncated;
  if (ISV_UNLIKELY(w >> 63)) { /* 19 digits above 2^63: drop one more digit */
    truncated |= (w % 10 != 0);
    w /= 10;
    q++;
  }
  const int lz = __builtin_clzll(w) - 1;
  const uint64_t wn = w << lz; /* in [2^62, 2^63) */
  const uint64_t *T = isv__pow10_tab[q - ISV__POW10_KMIN];
  const isv__u128 a = (isv__u128)wn * T[1];
  const isv__u128 b = (isv__u128)wn * T[0];
  const uint64_t x0 = (uint64_t)a;
  const isv__u128 mid = (isv__u128)(uint64_t)b + (uint64_t)(a >> 64);
  const uint64_t x1 = (uint64_t)mid;
  const uint64_t x2 = (uint64_t)(b >> 64) + (uint64_t)(mid >> 64);
  /* The exact value is Y * 2^S with Y in [X, X + 2^63), or [X, X + 2^132) when digits were
   * dropped (w+1 instead of w and T+1 instead of T bound the error). */
  const int Eq = (int)((q * 1741647) >> 19);
  const int S = Eq - 127 - lz;
  const int topbit = (x2 >> 62) ? 190 : 189;
  const int be = topbit + S; /* unbiased exponent of X */
  if (be > bias) return inf;
  const int ue = (be < emin ? emin : be) - (P - 1); /* exponent of one ulp */
  const int p = ue - S - 1;                         /* bit position of half an ulp in X */
  if (p >= topbit + 2) return 0;
  const int sh = p - 128; /* p is in [128, 191] for every supported format */
  const uint64_t RL = x2 >> sh;
  const int L_on_boundary = ((x2 & ((UINT64_C(1) << sh) - 1)) | x1 | x0) == 0;
  uint64_t u0 = x0 + (UINT64_C(1) << 63);
  uint64_t c0 = u0 < x0;
  uint64_t u1 = x1 + c0;
  uint64_t u2 = x2 + (u1 < c0) + (truncated ? 16u : 0u);
  const uint64_t RU = u2 >> sh;
  uint64_t M, B;
  if (RL == RU) {
    if (ISV_LIKELY(!((RL & 1) && L_on_boundary))) {
      M = (RL + 1) >> 1;
      goto assemble;
    }
    B = RL;
  } else {
    /* One boundary (RU * 2^p) inside: a representable value (even) or a midpoint (odd). */
    if (!(RU & 1)) {
      M = RU >> 1;
      goto assemble;
    }
    B = RU;
  }
  {
    int c = isv__num_cmp_exact(n->start, n->end, B, p + S);
    uint64_t down = (B - 1) >> 1, up = down + 1;
    M = c < 0 ? down : c > 0 ? up : ((down & 1) ? up : down);
  }
assemble:;
  uint64_t bits = be < emin ? M : ((uint64_t)(be + bias - 1) << (P - 1)) + M;
  return bits > inf ? inf : bits;
}

static const double isv__num_p10d[23] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

ISV_INLINE uint64_t isv__num_dbl_bits(double d) {
  uint64_t u;
  memcpy(&u, &d, sizeof u);
  return u;
}
ISV_INLINE double isv__num_bits_dbl(uint64_t u) {
  double d;
  memcpy(&d, &u, sizeof d);
  return d;
}
ISV_INLINE float isv__num_bits_flt(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

ISV_INLINE double isv__num_to_f64(const isv__numlit *n) {
  uint64_t s = (uint64_t)n->neg << 63;
  if (ISV_UNLIKELY(n->special)) return isv__num_bits_dbl(s | (n->special == ISV__NUM_NAN ? 0x7FF8000000000000u : 0x7FF0000000000000u));
  if (n->w == 0) return isv__num_bits_dbl(s);
  if (ISV_LIKELY(!n->truncated && n->w <= (UINT64_C(1) << 53) && n->q >= -22 && n->q <= 22)) {
    double d = (double)n->w;
    d = n->q < 0 ? d / isv__num_p10d[-n->q] : d * isv__num_p10d[n->q];
    return n->neg ? -d : d;
  }
  return isv__num_bits_dbl(s | isv__num_dec2bin(n, 53, 11));
}

ISV_INLINE float isv__num_to_f32(const isv__numlit *n) {
  uint32_t s = (uint32_t)n->neg << 31;
  if (ISV_UNLIKELY(n->special)) return isv__num_bits_flt(s | (n->special == ISV__NUM_NAN ? 0x7FC00000u : 0x7F800000u));
  if (n->w == 0) return isv__num_bits_flt(s);
  if (ISV_LIKELY(!n->truncated && n->w <= (UINT64_C(1) << 53) && n->q >= -22 && n->q <= 22)) {
    double d = (double)n->w;
    d = n->q < 0 ? d / isv__num_p10d[-n->q] : d * isv__num_p10d[n->q];
    uint64_t b = isv__num_dbl_bits(d);
    /* (float)d is the correctly rounded float of the literal unless d is exactly a float
     * midpoint (low 29 bits 1000...0) or lies in the float subnormal range. */
    if (ISV_LIKELY((b & 0x1FFFFFFFu) != 0x10000000u && (b >> 52) >= 1023 - 126)) {
      float f = (float)d;
      return n->neg ? -f : f;
    }
  }
  return isv__num_bits_flt(s | (uint32_t)isv__num_dec2bin(n, 24, 8));
}

ISV_INLINE uint16_t isv__num_to_f16(const isv__numlit *n) {
  uint16_t s = (uint16_t)(n->neg << 15);
  if (n->special) return (uint16_t)(s | (n->special == ISV__NUM_NAN ? 0x7E00u : 0x7C00u));
  if (n->w == 0) return s;
  return (uint16_t)(s | isv__num_dec2bin(n, 11, 5));
}

ISV_INLINE uint16_t isv__num_to_bf16(const isv__numlit *n) {
  uint16_t s = (uint16_t)(n->neg << 15);
  if (n->special) return (uint16_t)(s | (n->special == ISV__NUM_NAN ? 0x7FC0u : 0x7F80u));
  if (n->w == 0) return s;
  return (uint16_t)(s | isv__num_dec2bin(n, 8, 8));
}

/* Integer literal: magnitude and sign; 0 ok, -1 not an integer (fraction/exponent/NaN/Inf),
 * -2 overflow of uint64. */
ISV_INLINE int isv__num_to_mag(const isv__numlit *n, uint64_t *mag) {
  if (!n->is_int) return -1;
  /* Re-read the digits exactly (w holds at most 19 of them). */
  const char *p = n->start + n->neg;
  uint64_t v = 0;
  for (; p < n->end; p++) {
    unsigned d = (unsigned char)*p - '0';
    if (v > (UINT64_MAX - d) / 10) return -2;
    v = v * 10 + d;
  }
  *mag = v;
  return 0;
}

#endif
