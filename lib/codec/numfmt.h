/* Numbers as text: the shortest round-trip text of a float, the digits of an integer. No
 * allocation, no locale, no snprintf; used wherever a number is written (JSON, HTTP heads,
 * classification labels, metrics).
 *
 * Floats: the SHORTEST text that reads back (strtof/strtod, or for FP16/BF16 numparse.h's
 * round-to-nearest-even) to the same value, closest to the value on ties of length; an
 * integral float keeps ".0" ("3.0"); NaN, Infinity and -Infinity as bare tokens. The form is
 * Python's repr(): fixed notation while the leading digit's decimal exponent is in [-4, 15]
 * ("0.0001", "1000000000000000.0", "-0.0"), otherwise "1e+16", "1.5e-07". */
#ifndef ISV_CODEC_NUMFMT_H
#define ISV_CODEC_NUMFMT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Not NUL-terminated; each returns its length (<= 32). */
size_t isv__fmt_f32(char out[32], float v);
size_t isv__fmt_f64(char out[32], double v);
/* FP16 / BF16 bits: the shortest text the reader rounds back to the same 16 bits. */
size_t isv__fmt_f16(char out[32], uint16_t bits);
size_t isv__fmt_bf16(char out[32], uint16_t bits);

/* "00" "01" ... "99" */
extern const char isv__digits2[200];

/* Integers: the decimal digits (no NUL; at most 20 bytes) and their count. Inline: they sit in
 * the tensor writer's loops. */
static inline int isv__fmt_count_digits(uint64_t v) {
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
static inline void isv__fmt_put_digits(char *end, uint64_t v) {
  while (v >= 100) {
    unsigned r = (unsigned)(v % 100);
    v /= 100;
    end -= 2;
    memcpy(end, isv__digits2 + 2 * r, 2);
  }
  if (v >= 10) {
    end -= 2;
    memcpy(end, isv__digits2 + 2 * v, 2);
  } else {
    *--end = (char)('0' + v);
  }
}

static inline size_t isv__fmt_u64(char *out, uint64_t v) {
  int n = isv__fmt_count_digits(v);
  isv__fmt_put_digits(out + n, v);
  return (size_t)n;
}

static inline size_t isv__fmt_i64(char *out, int64_t v) {
  if (v < 0) {
    out[0] = '-';
    return 1 + isv__fmt_u64(out + 1, 0 - (uint64_t)v);
  }
  return isv__fmt_u64(out, (uint64_t)v);
}

#endif
