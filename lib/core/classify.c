/* Triton's classification extension: an output becomes BYTES "value:index[:label]", the k
 * highest values first (per batch row for a batched model). Ties keep the lower index first,
 * which Triton leaves unordered; NaN sorts last. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/half.h"
#include "codec/numfmt.h"
#include "core/request.h"

typedef struct {
  double v;     /* the value, for every type but the 64-bit integers */
  uint64_t key; /* INT64 / UINT64: the value's order, exactly (a double holds 2^53 + 1 as 2^53) */
  size_t idx;
} scored;

static int by_value_desc(const void *a, const void *b) {
  const scored *x = a, *y = b;
  int xn = isnan(x->v), yn = isnan(y->v);
  if (xn != yn) return xn - yn;
  if (!xn && x->v != y->v) return x->v > y->v ? -1 : 1;
  return x->idx < y->idx ? -1 : x->idx > y->idx;
}

static int by_key_desc(const void *a, const void *b) {
  const scored *x = a, *y = b;
  if (x->key != y->key) return x->key > y->key ? -1 : 1;
  return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* The order of a 64-bit integer as an unsigned key (INT64: its sign bit flipped). */
static uint64_t key_at(isv_datatype dt, const void *d, size_t i) {
  if (dt == ISV_UINT64) return ((const uint64_t *)d)[i];
  return (uint64_t)((const int64_t *)d)[i] ^ (UINT64_C(1) << 63);
}

static double value_at(isv_datatype dt, const void *d, size_t i) {
  switch (dt) {
  case ISV_UINT8: return ((const uint8_t *)d)[i];
  case ISV_UINT16: return ((const uint16_t *)d)[i];
  case ISV_UINT32: return ((const uint32_t *)d)[i];

  case ISV_INT8: return ((const int8_t *)d)[i];
  case ISV_INT16: return ((const int16_t *)d)[i];
  case ISV_INT32: return ((const int32_t *)d)[i];

  case ISV_FP16: return isv__f16_to_f32(((const uint16_t *)d)[i]);
  case ISV_BF16: return isv__bf16_to_f32(((const uint16_t *)d)[i]);
  case ISV_FP32: return ((const float *)d)[i];
  case ISV_FP64: return ((const double *)d)[i];
  default: return 0;
  }
}

/* The value as text in its own type: integers exactly, floats shortest round-trip ("3.3"). */
static size_t value_text(char out[32], isv_datatype dt, const void *d, size_t i) {
  switch (dt) {
  case ISV_UINT64: return isv__fmt_u64(out, ((const uint64_t *)d)[i]);
  case ISV_INT64: return isv__fmt_i64(out, ((const int64_t *)d)[i]);
  case ISV_FP16: return isv__fmt_f16(out, ((const uint16_t *)d)[i]);
  case ISV_BF16: return isv__fmt_bf16(out, ((const uint16_t *)d)[i]);
  case ISV_FP32: return isv__fmt_f32(out, ((const float *)d)[i]);
  case ISV_FP64: return isv__fmt_f64(out, ((const double *)d)[i]);
  default: return isv__fmt_i64(out, (int64_t)value_at(dt, d, i)); /* narrower: exact in a double */
  }
}

int isv__classify(isv_request *r, isv_tensor *t, uint32_t k) {
  const isv_model_config *c = r->model->cfg;
  size_t rows = 1, classes = t->count;
  int batched = c->max_batch > 0 && t->ndim >= 1;
  if (batched) {
    rows = (size_t)t->shape[0];
    classes = rows ? t->count / rows : 0;
  }
  size_t kk = k < classes ? k : classes;
  scored *s = isv__arena_alloc(&r->arena, (classes ? classes : 1) * sizeof *s);
  size_t n_out = rows * kk;
  isv_bytes *out = isv__arena_alloc(&r->arena, (n_out ? n_out : 1) * sizeof *out);
  int64_t *shape = isv__arena_alloc(&r->arena, 2 * sizeof *shape);
  if (s == NULL || out == NULL || shape == NULL)
    return isv__request_fail(r, ISV_ENOMEM, "out of memory");
  for (size_t row = 0; row < rows; row++) {
    int exact = t->dt == ISV_INT64 || t->dt == ISV_UINT64;
    for (size_t j = 0; j < classes; j++) {
      if (exact) s[j].key = key_at(t->dt, t->data, row * classes + j);
      else s[j].v = value_at(t->dt, t->data, row * classes + j);
      s[j].idx = j;
    }
    qsort(s, classes, sizeof *s, exact ? by_key_desc : by_value_desc);
    for (size_t j = 0; j < kk; j++) {
      char num[32];
      size_t nl = value_text(num, t->dt, t->data, row * classes + s[j].idx);
      const char *label = s[j].idx < c->n_labels ? c->labels[s[j].idx] : NULL;
      size_t cap = nl + 24 + (label ? strlen(label) + 1 : 0);
      char *e = isv__arena_alloc(&r->arena, cap);
      if (e == NULL) return isv__request_fail(r, ISV_ENOMEM, "out of memory");
      int n = snprintf(e, cap, "%.*s:%zu%s%s", (int)nl, num, s[j].idx, label ? ":" : "",
                       label ? label : "");
      out[row * kk + j].ptr = e;
      out[row * kk + j].len = (size_t)n;
    }
  }
  if (batched) {
    shape[0] = (int64_t)rows;
    shape[1] = (int64_t)kk;
    t->ndim = 2;
  } else {
    shape[0] = (int64_t)kk;
    t->ndim = 1;
  }
  t->shape = shape;
  t->dt = ISV_BYTES;
  t->data = out;
  t->count = rows * kk;
  t->byte_size = isv__bytes_total(out, rows * kk);
  return 0;
}
