/* A protocol's decimal integer field — a Content-Length, an Inference-Timeout-Us header, a
 * trace setting: ASCII digits only (no sign, no space, not empty), at most a given maximum.
 * Inline: HTTP/1.1's and HTTP/2's readers parse a Content-Length per request. */
#ifndef ISV_CODEC_DECIMAL_H
#define ISV_CODEC_DECIMAL_H

#include <stddef.h>
#include <stdint.h>

/* The n bytes at s as a number of at most max into *out: 0, or -1 (*out untouched) when they
 * are empty, hold a byte that is not a digit, or say more than max. */
static inline int isv__decimal_u64(const char *s, size_t n, uint64_t max, uint64_t *out) {
  if (n == 0) return -1;
  uint64_t v = 0;
  size_t i = 0;
  for (; i < n && i < 19; i++) { /* 19 digits never pass 2^64: no check but the digit's */
    unsigned d = (unsigned char)s[i] - (unsigned)'0';
    if (d > 9) return -1;
    v = v * 10 + d;
  }
  for (; i < n; i++) {
    unsigned d = (unsigned char)s[i] - (unsigned)'0';
    if (d > 9 || __builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, d, &v)) return -1;
  }
  if (v > max) return -1;
  *out = v;
  return 0;
}

#endif
