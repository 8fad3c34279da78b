/* JSON writer: numbers (numfmt.h: shortest round-trip floats, integers), strings, tensors. */
#include "json_writer.h"

#include <string.h>

#include "base64.h"
#include "half.h"
#include "numfmt.h"
#include "swar.h"
#include "utf8.h"

/* ---------------------------------------------------------------------------------------------
 * Scalars
 * ------------------------------------------------------------------------------------------- */
void isv__json_write_f32(isv__buf *b, float v) {
  char *p = isv__buf_reserve(b, 32);
  if (p) b->len += isv__fmt_f32(p, v);
}

void isv__json_write_f64(isv__buf *b, double v) {
  char *p = isv__buf_reserve(b, 32);
  if (p) b->len += isv__fmt_f64(p, v);
}

void isv__json_write_i64(isv__buf *b, int64_t v) {
  char *p = isv__buf_reserve(b, 24);
  if (p) b->len += isv__fmt_i64(p, v);
}

void isv__json_write_u64(isv__buf *b, uint64_t v) {
  char *p = isv__buf_reserve(b, 24);
  if (p) b->len += isv__fmt_u64(p, v);
}

/* 0: byte copied as is; otherwise the escape letter, or 'u' for \u00XX. */
static const char esc_tab[256] = {
    'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'b', 't', 'n', 'u', 'f', 'r', 'u', 'u',
    'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u',
    0,   0,   '"', 0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,
    0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,
    0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,
    0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   '\\'};

/* Whether none of a word's bytes needs an escape (esc_tab 0): no '"', no '\\', none below 0x20.
 * A borrow may flag a byte falsely, only after one truly flagged: then the bytes decide. */
static inline int plain_word(uint64_t w) {
  return (isv__swar_is(w, '"') | isv__swar_is(w, '\\') | isv__swar_below(w, 0x20)) == 0;
}

void isv__json_write_string(isv__buf *b, const char *s, size_t len) {
  static const char hex[] = "0123456789ABCDEF";
  const unsigned char *u = (const unsigned char *)s;
  size_t i = 0;
  /* The usual string (a name, a datatype) has nothing to escape and fits the room left: quoted
   * and copied in one pass, with no call — eight bytes at a time (the last word overlapping the
   * one before), or two overlapping halves of one for 4 to 7 bytes, then byte by byte from
   * where a word had a byte to escape. At the first byte that needs an escape the quote and the
   * bytes before it are kept, and the general way goes on from there. */
  if (b->data && !b->failed && b->cap - b->len >= 2 && len <= b->cap - b->len - 2) {
    char *p = b->data + b->len;
    if (len >= 8) {
      for (; len - i >= 8 && plain_word(isv__swar_load(u + i)); i += 8) memcpy(p + 1 + i, u + i, 8);
      if (i < len && len - i < 8 && plain_word(isv__swar_load(u + len - 8))) {
        memcpy(p + 1 + len - 8, u + len - 8, 8);
        i = len;
      }
    } else if (len >= 4) {
      uint64_t w = isv__swar_load_4to8(u, len);
      if (plain_word(w)) {
        uint32_t head = (uint32_t)w, tail = (uint32_t)(w >> 32);
        memcpy(p + 1, &head, 4);
        memcpy(p + 1 + len - 4, &tail, 4);
        i = len;
      }
    }
    while (i < len && esc_tab[u[i]] == 0) {
      p[1 + i] = (char)u[i];
      i++;
    }
    p[0] = '"';
    if (i == len) {
      p[1 + len] = '"';
      b->len += len + 2;
      return;
    }
    b->len += 1 + i;
  } else {
    isv__buf_putc(b, '"');
  }
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
/* The integers under 100 — most small integer tensors' values — with the comma that follows
 * each: the text in the low bytes (the first byte in memory the lowest), its length in the top
 * byte. One 4-byte store writes the element; the bytes past its length are left for the next
 * to overwrite. */
#define SMALL_ELEM(v)                                                                          \
  ((v) < 10 ? (uint32_t)('0' + (v)) | (uint32_t)',' << 8 | 2u << 24                         \
            : (uint32_t)('0' + (v) / 10) | (uint32_t)('0' + (v) % 10) << 8 |                 \
                  (uint32_t)',' << 16 | 3u << 24)
#define SMALL_ELEMS10(t)                                                                       \
  SMALL_ELEM(t), SMALL_ELEM(t + 1), SMALL_ELEM(t + 2), SMALL_ELEM(t + 3), SMALL_ELEM(t + 4),   \
      SMALL_ELEM(t + 5), SMALL_ELEM(t + 6), SMALL_ELEM(t + 7), SMALL_ELEM(t + 8), SMALL_ELEM(t + 9)
static const uint32_t small_elems[100] = {
    SMALL_ELEMS10(0),  SMALL_ELEMS10(10), SMALL_ELEMS10(20), SMALL_ELEMS10(30), SMALL_ELEMS10(40),
    SMALL_ELEMS10(50), SMALL_ELEMS10(60), SMALL_ELEMS10(70), SMALL_ELEMS10(80), SMALL_ELEMS10(90)};
#undef SMALL_ELEMS10
#undef SMALL_ELEM

static inline size_t put_small_elem(char *p, unsigned v) {
  uint32_t e = small_elems[v];
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  uint32_t m = __builtin_bswap32(e);
  memcpy(p, &m, 4);
#else
  memcpy(p, &e, 4);
#endif
  return e >> 24;
}

/* Element i of an integer tensor in *v: 1, or 0 for any other datatype. A UINT64 of 2^63 and
 * up comes out negative, and back whole through (uint64_t). With a constant dt (every caller
 * below), the switch folds away. */
static inline int int_elem(isv_datatype dt, const void *data, size_t i, int64_t *v) {
  switch (dt) {
    case ISV_UINT8: *v = ((const uint8_t *)data)[i]; return 1;
    case ISV_UINT16: *v = ((const uint16_t *)data)[i]; return 1;
    case ISV_UINT32: *v = ((const uint32_t *)data)[i]; return 1;
    case ISV_UINT64: *v = (int64_t)((const uint64_t *)data)[i]; return 1;
    case ISV_INT8: *v = ((const int8_t *)data)[i]; return 1;
    case ISV_INT16: *v = ((const int16_t *)data)[i]; return 1;
    case ISV_INT32: *v = ((const int32_t *)data)[i]; return 1;
    case ISV_INT64: *v = ((const int64_t *)data)[i]; return 1;
    default: return 0;
  }
}

/* Format element i of a fixed-size type into p (room for 32 bytes); returns the length. */
static inline size_t fmt_elem(char *p, isv_datatype dt, const void *data, size_t i) {
  int64_t v;
  if (int_elem(dt, data, i, &v)) {
    int is_unsigned = dt == ISV_UINT8 || dt == ISV_UINT16 || dt == ISV_UINT32 || dt == ISV_UINT64;
    return is_unsigned ? isv__fmt_u64(p, (uint64_t)v) : isv__fmt_i64(p, v);
  }
  switch (dt) {
    case ISV_BOOL:
      if (((const uint8_t *)data)[i]) {
        memcpy(p, "true", 4);
        return 4;
      }
      memcpy(p, "false", 5);
      return 5;
    case ISV_FP16: return isv__fmt_f16(p, ((const uint16_t *)data)[i]);
    case ISV_BF16: return isv__fmt_bf16(p, ((const uint16_t *)data)[i]);
    case ISV_FP32: return isv__fmt_f32(p, ((const float *)data)[i]);
    case ISV_FP64: return isv__fmt_f64(p, ((const double *)data)[i]);
    default: return 0;
  }
}

/* Element i and a comma after it (room for 33 bytes); returns the length, the comma's included. */
static inline size_t fmt_elem_comma(char *p, isv_datatype dt, const void *data, size_t i) {
  int64_t v;
  if (int_elem(dt, data, i, &v) && (uint64_t)v < 100) /* an integer under 100: from the table */
    return put_small_elem(p, (unsigned)v);
  size_t n = fmt_elem(p, dt, data, i);
  p[n] = ',';
  return n + 1;
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
    for (size_t j = 0; j < chunk; j++, i++) /* each element with a comma after it ... */
      p += fmt_elem_comma(p, dt, data, from + i);
    b->len += (size_t)(p - start);
  }
  if (n) b->len--; /* ... but the last */
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
