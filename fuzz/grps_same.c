/* See grps_same.h. */
#include "grps_same.h"

#include <math.h>
#include <string.h>

#include "codec/half.h"

static int same_bytes(const void *a, size_t na, const void *b, size_t nb) {
  return na == nb && (na == 0 || memcmp(a, b, na) == 0);
}

/* Element i of two arrays of dt: BYTES by content, floats bitwise or NaN as NaN. */
static int same_elem(isv_datatype dt, const void *a, const void *b, size_t i, unsigned how) {
  if (dt == ISV_BYTES) {
    const isv_bytes *x = (const isv_bytes *)a + i, *y = (const isv_bytes *)b + i;
    return same_bytes(x->ptr, x->len, y->ptr, y->len);
  }
  if (!(how & ISV_GRPS_SAME_BITS)) {
    if (dt == ISV_FP32 && isnan(((const float *)a)[i])) return isnan(((const float *)b)[i]);
    if (dt == ISV_FP64 && isnan(((const double *)a)[i])) return isnan(((const double *)b)[i]);
    if (dt == ISV_FP16 && isnan(isv__f16_to_f32(((const uint16_t *)a)[i])))
      return isnan(isv__f16_to_f32(((const uint16_t *)b)[i]));
  }
  size_t sz = isv_datatype_size(dt); /* bitwise: -0 stays -0 */
  return memcmp((const char *)a + i * sz, (const char *)b + i * sz, sz) == 0;
}

static int same_tensor(const isv_tensor *a, const isv_tensor *b, unsigned how) {
  if (strcmp(a->name, b->name) != 0 || a->dt != b->dt || a->ndim != b->ndim ||
      a->count != b->count || a->byte_size != b->byte_size)
    return 0;
  for (size_t i = 0; i < a->ndim; i++)
    if (a->shape[i] != b->shape[i]) return 0;
  for (size_t i = 0; i < a->count; i++)
    if (!same_elem(a->dt, a->data, b->data, i, how)) return 0;
  return 1;
}

static int same_entry(const isv__grps_entry *a, const isv__grps_entry *b, unsigned how) {
  if (a->map != b->map || !same_bytes(a->key, a->key_len, b->key, b->key_len)) return 0;
  switch (a->map) {
  case ISV__GRPS_S_S:
  case ISV__GRPS_S_B: return same_bytes(a->v.s.p, a->v.s.n, b->v.s.p, b->v.s.n);
  case ISV__GRPS_S_F: return same_elem(ISV_FP32, &a->v.f, &b->v.f, 0, how);
  case ISV__GRPS_S_D: return same_elem(ISV_FP64, &a->v.d, &b->v.d, 0, how);
  case ISV__GRPS_S_T: return same_tensor(&a->t, &b->t, how);
  default: return a->v.i == b->v.i;
  }
}

/* The entries of map `map` of x and y, in order, and no others left over. */
static int same_map(const isv__grps_msg *x, const isv__grps_msg *y, int map, unsigned how) {
  size_t i = 0, j = 0;
  for (;;) {
    while (i < x->n_entries && (int)x->entries[i].map != map) i++;
    while (j < y->n_entries && (int)y->entries[j].map != map) j++;
    if (i == x->n_entries || j == y->n_entries) break;
    if (!same_entry(&x->entries[i++], &y->entries[j++], how)) return 0;
  }
  return i == x->n_entries && j == y->n_entries;
}

int isv_grps_same(const isv__grps_msg *a, const isv__grps_msg *b, unsigned how) {
  if (a->kind != b->kind || a->has_status != b->has_status || a->code != b->code ||
      a->flag != b->flag || !same_bytes(a->msg, a->msg_len, b->msg, b->msg_len) ||
      !same_bytes(a->model, a->model_len, b->model, b->model_len) ||
      a->n_tensors != b->n_tensors || a->n_entries != b->n_entries)
    return 0;
  if ((a->kind == ISV__GRPS_BIN_DATA || a->kind == ISV__GRPS_STR_DATA) &&
      !same_bytes(a->data, a->data_len, b->data, b->data_len))
    return 0;
  for (size_t i = 0; i < a->n_tensors; i++)
    if (!same_tensor(&a->tensors[i], &b->tensors[i], how)) return 0;
  if (how & ISV_GRPS_SAME_ENTRY_ORDER) {
    for (size_t i = 0; i < a->n_entries; i++)
      if (!same_entry(&a->entries[i], &b->entries[i], how)) return 0;
    return 1;
  }
  for (int map = ISV__GRPS_S_S; map <= ISV__GRPS_S_T; map++)
    if (!same_map(a, b, map, how)) return 0;
  return 1;
}
