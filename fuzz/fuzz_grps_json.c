/* grps's GrpsMessage JSON (protocol/grps_json.c): decode → encode → decode again, and the two
 * decoded messages must be the same field by field (kind, status, model, data, tensors' names,
 * dtypes, shapes and element bytes — NaN as NaN, whatever its payload — and each map's entries
 * in order). Must never crash, leak or hang; a refused body must carry ISV_EBADREQ or
 * ISV_ENOMEM and a message; what the decoder made, the encoder must take (ISV_EINVAL is kept
 * for BYTES that are not UTF-8, which JSON cannot produce). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "codec/half.h"
#include "protocol/grps_msg.h"

static const isv__grps_limits lim = {.max_tensors = 64, .max_depth = 64};

static int same_bytes(const void *a, size_t na, const void *b, size_t nb) {
  return na == nb && (na == 0 || memcmp(a, b, na) == 0);
}

static int same_elem(isv_datatype dt, const void *a, const void *b, size_t i) {
  switch (dt) {
  case ISV_BYTES: {
    const isv_bytes *x = (const isv_bytes *)a + i, *y = (const isv_bytes *)b + i;
    return same_bytes(x->ptr, x->len, y->ptr, y->len);
  }
  case ISV_FP32:
    if (isnan(((const float *)a)[i])) return isnan(((const float *)b)[i]);
    break;
  case ISV_FP64:
    if (isnan(((const double *)a)[i])) return isnan(((const double *)b)[i]);
    break;
  case ISV_FP16:
    if (isnan(isv__f16_to_f32(((const uint16_t *)a)[i])))
      return isnan(isv__f16_to_f32(((const uint16_t *)b)[i]));
    break;
  default: break;
  }
  size_t sz = isv_datatype_size(dt); /* bitwise: -0 stays -0 */
  return memcmp((const char *)a + i * sz, (const char *)b + i * sz, sz) == 0;
}

static int same_tensor(const isv_tensor *a, const isv_tensor *b) {
  if (strcmp(a->name, b->name) != 0 || a->dt != b->dt || a->ndim != b->ndim ||
      a->count != b->count || a->byte_size != b->byte_size)
    return 0;
  for (size_t i = 0; i < a->ndim; i++)
    if (a->shape[i] != b->shape[i]) return 0;
  for (size_t i = 0; i < a->count; i++)
    if (!same_elem(a->dt, a->data, b->data, i)) return 0;
  return 1;
}

static int same_entry(const isv__grps_entry *a, const isv__grps_entry *b) {
  if (a->map != b->map || !same_bytes(a->key, a->key_len, b->key, b->key_len)) return 0;
  switch (a->map) {
  case ISV__GRPS_S_S:
  case ISV__GRPS_S_B: return same_bytes(a->v.s.p, a->v.s.n, b->v.s.p, b->v.s.n);
  case ISV__GRPS_S_F: return same_elem(ISV_FP32, &a->v.f, &b->v.f, 0);
  case ISV__GRPS_S_D: return same_elem(ISV_FP64, &a->v.d, &b->v.d, 0);
  case ISV__GRPS_S_T: return same_tensor(&a->t, &b->t);
  default: return a->v.i == b->v.i;
  }
}

/* Each map's entries in the same order (the encoder writes a map's entries together, so the
 * order across maps is not kept). */
static int same_maps(const isv__grps_msg *x, const isv__grps_msg *y) {
  for (int map = ISV__GRPS_S_S; map <= ISV__GRPS_S_T; map++) {
    size_t i = 0, j = 0;
    for (;;) {
      while (i < x->n_entries && (int)x->entries[i].map != map) i++;
      while (j < y->n_entries && (int)y->entries[j].map != map) j++;
      if (i == x->n_entries || j == y->n_entries) break;
      if (!same_entry(&x->entries[i++], &y->entries[j++])) return 0;
    }
    if (i != x->n_entries || j != y->n_entries) return 0;
  }
  return 1;
}

static int same_msg(const isv__grps_msg *x, const isv__grps_msg *y) {
  if (x->kind != y->kind || x->has_status != y->has_status || x->code != y->code ||
      x->flag != y->flag || !same_bytes(x->msg, x->msg_len, y->msg, y->msg_len) ||
      !same_bytes(x->model, x->model_len, y->model, y->model_len) ||
      !same_bytes(x->data, x->data_len, y->data, y->data_len) || x->n_tensors != y->n_tensors)
    return 0;
  for (size_t i = 0; i < x->n_tensors; i++)
    if (!same_tensor(&x->tensors[i], &y->tensors[i])) return 0;
  return same_maps(x, y);
}

/* A refusal: the right code, and a message. */
static void check_refusal(int rc, const char *err) {
  if ((rc != ISV_EBADREQ && rc != ISV_ENOMEM) || err[0] == '\0') abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *body = malloc(size ? size : 1);
  if (body == NULL) return 0;
  if (size) memcpy(body, data, size);
  isv__arena a1 = ISV__ARENA_INIT, a2 = ISV__ARENA_INIT;
  isv__grps_msg m1, m2;
  char err[512];
  int rc = isv__grps_json_decode(body, size, &lim, &a1, &m1, err, sizeof err);
  if (rc != 0) {
    check_refusal(rc, err);
  } else {
    isv__buf b;
    isv__buf_init(&b, NULL);
    if (isv__grps_json_encode(&m1, &b, err, sizeof err) != 0) abort();
    rc = isv__grps_json_decode(b.data, b.len, &lim, &a2, &m2, err, sizeof err);
    if (rc == ISV_ENOMEM) check_refusal(rc, err);
    else if (rc != 0 || !same_msg(&m1, &m2)) abort();
    isv__buf_free(&b);
  }
  isv__arena_free(&a1);
  isv__arena_free(&a2);
  free(body);
  return 0;
}
