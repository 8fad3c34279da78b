/* See pbwire.h. */
#include "pbwire.h"

int isv__pb_read_varint(isv__pb_reader *r, uint64_t *v) {
  uint64_t x = 0;
  for (unsigned shift = 0; shift < 64; shift += 7) {
    if (r->p == r->end) return -1;
    uint8_t b = *r->p++;
    x |= (uint64_t)(b & 0x7f) << shift;
    if (!(b & 0x80)) {
      *v = x;
      return 0;
    }
  }
  return -1; /* more than 10 bytes */
}

uint64_t isv__pb_le_load(const uint8_t *p, unsigned n) {
  uint64_t v = 0;
  for (unsigned i = 0; i < n; i++) v |= (uint64_t)p[i] << (8 * i);
  return v;
}

int isv__pb_read_field_any(isv__pb_reader *r, isv__pb_field *f) {
  if (r->p == r->end) return 0;
  uint64_t key, len;
  if (isv__pb_read_varint(r, &key) != 0 || key > UINT32_MAX || (key >> 3) == 0) return -1;
  f->num = (uint32_t)(key >> 3);
  f->wt = (int)(key & 7);
  switch (f->wt) {
  case ISV__PB_VARINT: return isv__pb_read_varint(r, &f->v) == 0 ? 1 : -1;
  case ISV__PB_I64:
  case ISV__PB_I32: {
    size_t n = f->wt == ISV__PB_I64 ? 8 : 4;
    if ((size_t)(r->end - r->p) < n) return -1;
    f->s.p = r->p;
    f->s.n = n;
    f->v = isv__pb_le_load(r->p, (unsigned)n);
    r->p += n;
    return 1;
  }
  case ISV__PB_LEN:
    if (isv__pb_read_varint(r, &len) != 0 || len > (uint64_t)(r->end - r->p)) return -1;
    f->s.p = r->p;
    f->s.n = (size_t)len;
    r->p += len;
    return 1;
  default: return -1; /* groups (3, 4) and reserved types */
  }
}
