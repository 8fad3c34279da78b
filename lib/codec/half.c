/* IEEE binary16 (FP16) and bfloat16 (BF16) conversions, round to nearest even.
 *
 * Every narrowing conversion goes through one exact routine working on the double's bits:
 * float -> double is exact, so converting a float through it rounds only once. */
#include "half.h"

#include <string.h>

/* Round |v| (given as double bits without the sign) to a binary format with P significand
 * bits (hidden bit included) and EB exponent bits; returns the bits without the sign. */
static inline uint16_t round_small(uint64_t a, int P, int EB) {
  const int bias = (1 << (EB - 1)) - 1;
  const int emin = 1 - bias;
  const uint32_t inf = (uint32_t)((1u << EB) - 1) << (P - 1);
  if (a >= 0x7FF0000000000000u) {
    if (a == 0x7FF0000000000000u) return (uint16_t)inf;
    /* NaN: quiet it, keep the top payload bits. */
    uint32_t payload = (uint32_t)((a & 0x000FFFFFFFFFFFFFu) >> (53 - P));
    return (uint16_t)(inf | (1u << (P - 2)) | payload);
  }
  int e = (int)(a >> 52) - 1023;
  if (e < emin - P - 1) return 0; /* below half the smallest subnormal (also double subnormals) */
  if (e > bias) return (uint16_t)inf;
  uint64_t m = (a & 0x000FFFFFFFFFFFFFu) | 0x0010000000000000u;
  int shift = 52 - (P - 1);
  if (e < emin) shift += emin - e;
  uint64_t r = m >> shift;
  uint64_t rem = m & ((UINT64_C(1) << shift) - 1);
  uint64_t half = UINT64_C(1) << (shift - 1);
  if (rem > half || (rem == half && (r & 1))) r++;
  uint32_t bits;
  if (e < emin)
    bits = (uint32_t)r; /* subnormal; r == 2^(P-1) encodes the smallest normal */
  else
    bits = ((uint32_t)(e + bias - 1) << (P - 1)) + (uint32_t)r; /* carry may reach inf */
  if (bits > inf) bits = inf;
  return (uint16_t)bits;
}

static inline uint64_t dbits(double v) {
  uint64_t u;
  memcpy(&u, &v, sizeof u);
  return u;
}

uint16_t isv__f64_to_f16(double v) {
  uint64_t u = dbits(v);
  uint16_t s = (uint16_t)((u >> 48) & 0x8000u);
  return (uint16_t)(s | round_small(u & 0x7FFFFFFFFFFFFFFFu, 11, 5));
}

uint16_t isv__f64_to_bf16(double v) {
  uint64_t u = dbits(v);
  uint16_t s = (uint16_t)((u >> 48) & 0x8000u);
  return (uint16_t)(s | round_small(u & 0x7FFFFFFFFFFFFFFFu, 8, 8));
}

uint16_t isv__f32_to_f16(float v) { return isv__f64_to_f16((double)v); }

uint16_t isv__f32_to_bf16(float v) {
  uint32_t u;
  memcpy(&u, &v, sizeof u);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return (uint16_t)((u >> 16) | 0x0040u); /* quiet NaN */
  /* Round to nearest even on the low 16 bits; a carry into the exponent is correct. */
  u += 0x7FFFu + ((u >> 16) & 1u);
  return (uint16_t)(u >> 16);
}

float isv__f16_to_f32(uint16_t h) {
  uint32_t s = (uint32_t)(h & 0x8000u) << 16;
  uint32_t e = (h >> 10) & 0x1Fu;
  uint32_t m = h & 0x3FFu;
  uint32_t u;
  if (e == 0x1F) {
    u = s | 0x7F800000u | (m << 13);
  } else if (e != 0) {
    u = s | ((e + 112) << 23) | (m << 13);
  } else if (m == 0) {
    u = s;
  } else {
    /* Subnormal: normalise. */
    int sh = 0;
    while (!(m & 0x400u)) {
      m <<= 1;
      sh++;
    }
    m &= 0x3FFu;
    u = s | ((uint32_t)(113 - sh) << 23) | (m << 13);
  }
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

float isv__bf16_to_f32(uint16_t h) {
  uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}
