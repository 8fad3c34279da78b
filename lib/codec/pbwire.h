/* The protobuf wire format by hand, for messages too large for nanopb (Debian's nanopb has a
 * 16-bit pb_size_t) and for zero-copy: a reader that hands out LEN fields as spans of the
 * message (nothing copied), and a writer of keys, varints and LEN fields into a buffer the
 * caller sized with the *_size functions. Every front end with tensor-sized messages (V2's
 * ModelInferRequest, grps's GenericTensor) uses these. */
#ifndef ISV_CODEC_PBWIRE_H
#define ISV_CODEC_PBWIRE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Wire types (3 and 4, groups, are refused by the reader). */
enum { ISV__PB_VARINT = 0, ISV__PB_I64 = 1, ISV__PB_LEN = 2, ISV__PB_I32 = 5 };

typedef struct isv__pb_span {
  const uint8_t *p;
  size_t n;
} isv__pb_span;

typedef struct isv__pb_reader {
  const uint8_t *p, *end;
} isv__pb_reader;

typedef struct isv__pb_field {
  uint32_t num;
  int wt;
  uint64_t v;       /* VARINT, I64, I32 (little-endian value) */
  isv__pb_span s;   /* LEN: the payload, in the message; I32/I64: their raw bytes */
} isv__pb_field;

/* A reader of span s; an empty span may have no pointer (a field that was absent): NULL + 0 is
 * undefined in C, so it is not computed. */
static inline isv__pb_reader isv__pb_reader_of(isv__pb_span s) {
  isv__pb_reader r = {s.p, s.p ? s.p + s.n : s.p};
  return r;
}

/* 0, or -1 when truncated or longer than 10 bytes. */
int isv__pb_read_varint(isv__pb_reader *r, uint64_t *v);
/* The next field: 1 read, 0 end of the message, -1 malformed (truncated, a field number of 0
 * above 2^29 - 1, a group or reserved wire type, a LEN past the end). Any field, out of line;
 * isv__pb_read_field below is the same with the usual case inline. */
int isv__pb_read_field_any(isv__pb_reader *r, isv__pb_field *f);

/* isv__pb_read_field_any, with a field of number 1..15 whose value (VARINT) or length (LEN) is
 * one byte read inline: nearly every field of a small message, which a decoder reads in a loop. */
static inline int isv__pb_read_field(isv__pb_reader *r, isv__pb_field *f) {
  const uint8_t *p = r->p;
  if (p != r->end && r->end - p >= 2 && p[0] >= 8 && p[0] < 0x80 && p[1] < 0x80) {
    int wt = p[0] & 7;
    if (wt == ISV__PB_VARINT) {
      f->num = (uint32_t)(p[0] >> 3);
      f->wt = wt;
      f->v = p[1];
      r->p = p + 2;
      return 1;
    }
    if (wt == ISV__PB_LEN && p[1] <= r->end - p - 2) {
      f->num = (uint32_t)(p[0] >> 3);
      f->wt = wt;
      f->s.p = p + 2;
      f->s.n = p[1];
      r->p = p + 2 + p[1];
      return 1;
    }
  }
  return isv__pb_read_field_any(r, f);
}
/* n (<= 8) little-endian bytes. */
uint64_t isv__pb_le_load(const uint8_t *p, unsigned n);

/* ---- writing: size first, then write into exactly that many bytes ---- */
static inline size_t isv__pb_varint_len(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    n++;
  }
  return n;
}

static inline uint8_t *isv__pb_put_varint(uint8_t *p, uint64_t v) {
  while (v >= 0x80) {
    *p++ = (uint8_t)(v | 0x80);
    v >>= 7;
  }
  *p++ = (uint8_t)v;
  return p;
}

static inline uint8_t *isv__pb_put_key(uint8_t *p, uint32_t num, int wt) {
  return isv__pb_put_varint(p, ((uint64_t)num << 3) | (uint64_t)wt);
}

/* The wire size of a LEN field of n bytes whose number is 1..15 (a one-byte key). */
static inline size_t isv__pb_len_field_size(size_t n) { return 1 + isv__pb_varint_len(n) + n; }

/* Key, length and the n bytes at s. */
static inline uint8_t *isv__pb_put_bytes(uint8_t *p, uint32_t num, const void *s, size_t n) {
  p = isv__pb_put_key(p, num, ISV__PB_LEN);
  p = isv__pb_put_varint(p, n);
  if (n) memcpy(p, s, n);
  return p + n;
}

/* A map<string, M> entry as field `num` (1..15) of its message: the entry's key, length and map
 * key (its field 1), then the key and length of its value (field 2, a message of value_len
 * bytes) — the caller writes those bytes next. isv__pb_map_entry_size: the whole entry's wire
 * size, its value included. */
static inline size_t isv__pb_map_entry_size(size_t key_len, size_t value_len) {
  return isv__pb_len_field_size(isv__pb_len_field_size(key_len) +
                                isv__pb_len_field_size(value_len));
}
static inline uint8_t *isv__pb_put_map_entry_head(uint8_t *p, uint32_t num, const char *key,
                                                  size_t key_len, size_t value_len) {
  p = isv__pb_put_key(p, num, ISV__PB_LEN);
  p = isv__pb_put_varint(p, isv__pb_len_field_size(key_len) + isv__pb_len_field_size(value_len));
  p = isv__pb_put_bytes(p, 1, key, key_len);
  p = isv__pb_put_key(p, 2, ISV__PB_LEN);
  return isv__pb_put_varint(p, value_len);
}

#endif
