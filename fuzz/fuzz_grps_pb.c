/* grps's GrpsMessage protobuf (lib/protocol/grps_pb.c): arbitrary bytes → decode; a message
 * that decodes is encoded, decoded again and must equal the first decode field by field (kind,
 * status, model, data, every tensor's name, dtype, shape and element bytes, every map entry),
 * and encoding that second decode must give the same bytes. A refusal must be ISV_EBADREQ or
 * ISV_ENOMEM with a message. Must never crash, leak or read past the input. */
#include <stdlib.h>
#include <string.h>

#include "grps_same.h"
#include "protocol/grps_msg.h"

static int same_bytes(const void *a, size_t an, const void *b, size_t bn) {
  return an == bn && (an == 0 || memcmp(a, b, an) == 0);
}

/* Touch every byte a decoded tensor claims (ASan sees any out-of-bounds reference) and check
 * what grps_msg.h promises of it. */
static unsigned touch(const isv_tensor *t) {
  unsigned acc = 0;
  size_t count = 1;
  if (t->name == NULL || t->ndim == 0 || t->data == NULL) abort();
  for (size_t i = 0; i < t->ndim; i++) {
    if (t->shape[i] < 0 || t->shape[i] > (int64_t)UINT32_MAX) abort();
    count *= (size_t)t->shape[i];
  }
  if (count != t->count) abort();
  if (t->dt == ISV_BYTES) {
    const isv_bytes *b = t->data;
    size_t total = 0;
    for (size_t i = 0; i < t->count; i++) {
      for (size_t j = 0; j < b[i].len; j++) acc += (unsigned char)b[i].ptr[j];
      total += b[i].len;
    }
    if (total != t->byte_size) abort();
    return acc;
  }
  size_t el = isv_datatype_size(t->dt);
  if (el == 0 || t->byte_size != t->count * el || (uintptr_t)t->data % el != 0) abort();
  const unsigned char *p = t->data;
  for (size_t i = 0; i < t->byte_size; i++) acc += p[i];
  return acc;
}

static unsigned touch_msg(const isv__grps_msg *m) {
  unsigned acc = 0;
  if ((unsigned)m->flag > ISV__GRPS_FAILURE || (unsigned)m->kind > ISV__GRPS_GMAP) abort();
  if (m->kind == ISV__GRPS_NDARRAY && m->n_tensors != 0) abort(); /* never over protobuf */
  for (size_t i = 0; i < m->n_tensors; i++) acc += touch(&m->tensors[i]);
  for (size_t i = 0; i < m->n_entries; i++) {
    const isv__grps_entry *e = &m->entries[i];
    if (e->key[e->key_len] != '\0') abort(); /* keys are NUL-terminated */
    if (e->map < ISV__GRPS_S_S || e->map > ISV__GRPS_S_T) abort(); /* always in one of the maps */
    if (e->map == ISV__GRPS_S_I32 && (e->v.i < INT32_MIN || e->v.i > INT32_MAX)) abort();
    if (e->map == ISV__GRPS_S_T) acc += touch(&e->t);
  }
  for (size_t i = 0; i < m->data_len; i++) acc += (unsigned char)m->data[i];
  return acc;
}

static void check_refusal(int rc, const char *err) {
  if ((rc != ISV_EBADREQ && rc != ISV_ENOMEM) || err[0] == '\0') abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  uint8_t *msg = malloc(size ? size : 1); /* an exact-size copy: reads past it are caught */
  if (size) memcpy(msg, data, size);
  isv__grps_limits lim = {64, 64};
  isv__arena a = ISV__ARENA_INIT;
  isv__grps_msg m1, m2;
  char err[256] = "";
  volatile unsigned sink = 0;
  int rc = isv__grps_pb_decode(msg, size, &lim, &a, &m1, err, sizeof err);
  if (rc != 0) {
    check_refusal(rc, err);
  } else {
    sink += touch_msg(&m1);
    isv__buf b1, b2;
    isv__buf_init(&b1, NULL);
    isv__buf_init(&b2, NULL);
    if (isv__grps_pb_encode(&m1, &b1, err, sizeof err) != 0) abort();
    if (isv__grps_pb_decode((const uint8_t *)b1.data, b1.len, &lim, &a, &m2, err, sizeof err))
      abort(); /* what was encoded must decode */
    if (!isv_grps_same(&m1, &m2, ISV_GRPS_SAME_BITS | ISV_GRPS_SAME_ENTRY_ORDER)) abort();
    if (isv__grps_pb_encode(&m2, &b2, err, sizeof err) != 0) abort();
    if (!same_bytes(b1.data, b1.len, b2.data, b2.len)) abort(); /* encoding is stable */
    /* the by-reference encoder (grps gRPC answers): its parts joined are the same bytes,
     * whatever it references (every payload it can, or those of 16+ bytes) */
    for (size_t min = 1; min <= 16; min += 15) {
      uv_buf_t *v;
      size_t nv, total, off = 0;
      if (isv__grps_pb_encode_ref(&m1, &a, min, &v, &nv, &total, err, sizeof err) != 0) abort();
      if (total != b1.len) abort();
      for (size_t i = 0; i < nv; i++) {
        if (v[i].len > b1.len - off || !same_bytes(v[i].base, v[i].len, b1.data + off, v[i].len))
          abort();
        off += v[i].len;
      }
      if (off != b1.len) abort();
    }
    isv__buf_free(&b1);
    isv__buf_free(&b2);
  }
  (void)sink;
  isv__arena_free(&a);
  free(msg);
  return 0;
}
