#include "codec/raw_bytes.h"

#include <stdint.h>
#include <string.h>

static size_t load_u32(const unsigned char *p) {
  return (size_t)p[0] | (size_t)p[1] << 8 | (size_t)p[2] << 16 | (size_t)p[3] << 24;
}

int isv__rawbytes_count(const void *p, size_t n, size_t *count, isv__rawbytes_err *err) {
  const unsigned char *s = p;
  size_t off = 0, k = 0;
  while (off < n) {
    if (n - off < 4) {
      *err = (isv__rawbytes_err){.elem = k, .in_prefix = 1, .left = n - off};
      return -1;
    }
    size_t len = load_u32(s + off);
    off += 4;
    if (len > n - off) {
      *err = (isv__rawbytes_err){.elem = k, .len = len, .left = n - off};
      return -1;
    }
    off += len;
    k++;
  }
  *count = k;
  return 0;
}

void isv__rawbytes_split(const void *p, size_t count, isv_bytes *out) {
  const unsigned char *s = p;
  for (size_t i = 0; i < count; i++) {
    size_t len = load_u32(s);
    out[i].ptr = (const char *)s + 4;
    out[i].len = len;
    s += 4 + len;
  }
}

static size_t elem_len(const isv_bytes *b) { return b->ptr ? b->len : 0; }

size_t isv__rawbytes_size(const isv_bytes *b, size_t n) {
  size_t total = 0;
  for (size_t i = 0; b && i < n; i++) {
    size_t l = elem_len(&b[i]);
    if (l > UINT32_MAX || total > SIZE_MAX - 4 - l) return SIZE_MAX;
    total += 4 + l;
  }
  return total;
}

void isv__rawbytes_write(void *dst, const isv_bytes *b, size_t n) {
  unsigned char *q = dst;
  for (size_t i = 0; b && i < n; i++) {
    size_t l = elem_len(&b[i]);
    for (unsigned j = 0; j < 4; j++) *q++ = (unsigned char)(l >> (8 * j));
    if (l) memcpy(q, b[i].ptr, l);
    q += l;
  }
}
