/* Whether bytes that are not NUL-ended (a JSON token, a protobuf field, a header) are a given
 * string: the one test every parser here makes, lengths first (most candidates differ there),
 * then the bytes. */
#ifndef ISV_CODEC_SPAN_H
#define ISV_CODEC_SPAN_H

#include <stddef.h>
#include <string.h>

/* The n bytes at p are the string literal lit (its length known when compiled). */
#define ISV__SPAN_IS(p, n, lit) ((n) == sizeof(lit) - 1 && memcmp((p), (lit), sizeof(lit) - 1) == 0)

/* The n bytes at p are the NUL-ended string s (known only at run time). */
static inline int isv__span_eq(const void *p, size_t n, const char *s) {
  size_t k = strlen(s);
  return n == k && memcmp(p, s, k) == 0;
}

#endif
