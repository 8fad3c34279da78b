/* Whether bytes that are not NUL-ended (a JSON token, a protobuf field, a header) are a given
 * string: the one test every parser here makes, lengths first (most candidates differ there),
 * then the bytes. */
#ifndef ISV_CODEC_SPAN_H
#define ISV_CODEC_SPAN_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "swar.h"

/* The n bytes at p are the string literal lit (its length known when compiled). */
#define ISV__SPAN_IS(p, n, lit) ((n) == sizeof(lit) - 1 && memcmp((p), (lit), sizeof(lit) - 1) == 0)

/* The n bytes at p are the NUL-ended string s (known only at run time). */
static inline int isv__span_eq(const void *p, size_t n, const char *s) {
  size_t k = strlen(s);
  return n == k && memcmp(p, s, k) == 0;
}

/* The n bytes at a and at b are the same: memcmp(a, b, n) == 0 without a call for the short
 * spans compared on every request — tensor names against a model's, path segments against a
 * route's — where libc's vectorized memcmp spends ~20 instructions of set-up on 7 bytes.
 * Longer spans go to memcmp. */
static inline int isv__bytes_same(const void *a, const void *b, size_t n) {
  const unsigned char *x = a, *y = b;
  if (n > 32) return memcmp(x, y, n) == 0;
  for (; n >= 8; x += 8, y += 8, n -= 8) {
    uint64_t u, v;
    memcpy(&u, x, 8);
    memcpy(&v, y, 8);
    if (u != v) return 0;
  }
  if (n >= 4) { /* 4..7 left: two loads that may overlap */
    uint32_t u0, v0, u1, v1;
    memcpy(&u0, x, 4);
    memcpy(&v0, y, 4);
    memcpy(&u1, x + n - 4, 4);
    memcpy(&v1, y + n - 4, 4);
    return ((u0 ^ v0) | (u1 ^ v1)) == 0;
  }
  for (; n; x++, y++, n--)
    if (*x != *y) return 0;
  return 1;
}

/* Two words of bytes are the same, ASCII letters' case aside: where they differ, only in the
 * 0x20 bit, and u's byte is a letter there. */
static inline int isv__nocase_word_same(uint64_t u, uint64_t v) {
  uint64_t d = u ^ v;
  if (d == 0) return 1;
  if (d & ~(ISV__SWAR_ONES * 0x20)) return 0;
  /* each byte's 0x20 difference moved to its high bit */
  return ((d << 2) & ~isv__swar_letters(u)) == 0;
}

/* The n bytes at a and at b are the same, ASCII letters' case aside (header names, a URL's
 * scheme): strncasecmp(a, b, n) == 0 without its call when neither holds a NUL in its first n
 * bytes — a NUL is one more byte here, where strncasecmp stops. Eight bytes at a time, the
 * last eight (or four) loaded again where they overlap the ones before. */
static inline int isv__bytes_same_nocase(const void *a, const void *b, size_t n) {
  const unsigned char *x = a, *y = b;
  uint64_t u, v;
  if (n >= 8) {
    for (size_t i = 0; i + 8 <= n; i += 8) {
      memcpy(&u, x + i, 8);
      memcpy(&v, y + i, 8);
      if (!isv__nocase_word_same(u, v)) return 0;
    }
    if (n % 8 == 0) return 1;
    memcpy(&u, x + n - 8, 8);
    memcpy(&v, y + n - 8, 8);
    return isv__nocase_word_same(u, v);
  }
  if (n >= 4) {
    uint32_t u0, v0, u1, v1;
    memcpy(&u0, x, 4);
    memcpy(&v0, y, 4);
    memcpy(&u1, x + n - 4, 4);
    memcpy(&v1, y + n - 4, 4);
    return isv__nocase_word_same((uint64_t)u0 << 32 | u1, (uint64_t)v0 << 32 | v1);
  }
  for (; n; x++, y++, n--) {
    unsigned c = *x | 0x20u;
    if (*x != *y && (c != (*y | 0x20u) || c - 'a' > (unsigned)('z' - 'a'))) return 0;
  }
  return 1;
}

#endif
