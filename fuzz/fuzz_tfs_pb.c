/* TF Serving's gRPC codec (lib/protocol/tfs_pb.c). The first byte picks what the rest is:
 * bit 0 set — one TensorProto decoded on its own; else bits 1-2: 0 a PredictRequest,
 * bound (the fixture's models "m" and "one", the latter with signatures serving_default and
 * "c", classify, whose input goes by "in"), decoded, validated, then every decoded input
 * answered as an output (an identity model) through the PredictResponse encoder; 1 a
 * ClassificationRequest, 2 a RegressionRequest (tf.Examples), 3 a MultiInferenceRequest,
 * decoded and answered with a "y" of one FP32 per example through their encoder. Every decoded tensor is touched whole (ASan
 * sees a reference past the message) and round-tripped: encoded as a TensorProto and decoded
 * again, it must come back with the same dtype, shape and element bytes. A refusal has a code
 * and a message. Must never crash, leak or read past the input. */
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "core/request.h"
#include "core_fixture.h"
#include "protocol/tfs_pb.h"

static unsigned touch(const isv_tensor *t) {
  unsigned acc = 0;
  size_t count = 1;
  if (t->ndim > 32 || (t->count && t->data == NULL)) abort();
  for (size_t i = 0; i < t->ndim; i++) {
    if (t->shape[i] < 0) abort();
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
  if (el == 0 || t->byte_size != t->count * el || (t->count && (uintptr_t)t->data % el)) abort();
  const unsigned char *p = t->data;
  for (size_t i = 0; i < t->byte_size; i++) acc += p[i];
  return acc;
}

static int same_tensor(const isv_tensor *a, const isv_tensor *b) {
  if (a->dt != b->dt || a->ndim != b->ndim || a->count != b->count ||
      a->byte_size != b->byte_size)
    return 0;
  for (size_t i = 0; i < a->ndim; i++)
    if (a->shape[i] != b->shape[i]) return 0;
  if (a->dt != ISV_BYTES) return a->byte_size == 0 || memcmp(a->data, b->data, a->byte_size) == 0;
  const isv_bytes *x = a->data, *y = b->data;
  for (size_t i = 0; i < a->count; i++)
    if (x[i].len != y[i].len || (x[i].len && memcmp(x[i].ptr, y[i].ptr, x[i].len) != 0)) return 0;
  return 1;
}

/* t → TensorProto → tensor: the same. */
static void round_trip(const isv_tensor *t) {
  isv__buf b;
  isv__buf_init(&b, NULL);
  isv__tfs_pb_put_tensor(&b, t);
  if (b.failed) abort();
  isv_request *r = isv_fuzz_request_unbound();
  isv_tensor u;
  /* a tensor of no elements is answered with no values; its shape comes back */
  if (isv__tfs_pb_decode_tensor(r, (isv__pb_span){(const uint8_t *)b.data, b.len}, "t", &u) != 0 ||
      !same_tensor(t, &u))
    abort();
  isv_request_free(r);
  isv__buf_free(&b);
}

static void check_refusal(const isv_request *r) {
  if (r->status == 0 || r->errmsg == NULL || r->errmsg[0] == '\0') abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0) return 0;
  int tensor_only = data[0] & 1, mode = (data[0] >> 1) & 3;
  data++;
  size--;
  uint8_t *msg = malloc(size ? size : 1); /* an exact-size copy: reads past it are caught */
  if (size) memcpy(msg, data, size);
  isv_fuzz_core()->opts.max_body_bytes = 1 << 20; /* a filled-out tensor stays small */
  volatile unsigned sink = 0;
  isv_request *r = isv_fuzz_request_unbound();
  if (tensor_only) {
    isv_tensor t;
    if (isv__tfs_pb_decode_tensor(r, (isv__pb_span){msg, size}, "in", &t) == 0) {
      sink += touch(&t);
      round_trip(&t);
    } else {
      check_refusal(r);
    }
  } else if (mode != 0) {
    int kind = mode == 1 ? ISV__TFS_CLASSIFY : ISV__TFS_REGRESS;
    if ((mode == 3 ? isv__tfs_pb_bind_multi(r, msg, size)
                   : isv__tfs_pb_bind(r, msg, size, kind)) != 0) {
      check_refusal(r);
    } else if ((mode == 3 ? isv__tfs_pb_decode_multi(r, msg, size)
                          : isv__tfs_pb_decode_examples(r, msg, size)) != 0) {
      check_refusal(r);
    } else {
      size_t n = r->n_inputs ? (size_t)r->inputs[0].shape[0] : 0;
      for (size_t i = 0; i < r->n_inputs; i++) {
        sink += touch(&r->inputs[i]);
        if ((size_t)r->inputs[i].shape[0] != n) abort(); /* one row per example */
        round_trip(&r->inputs[i]);
      }
      isv__request_validate(r);
      int64_t *shape = isv__arena_alloc(&r->arena, sizeof *shape);
      float *y = isv__arena_calloc(&r->arena, n + 1, sizeof *y);
      isv_tensor *o = isv__arena_calloc(&r->arena, 1, sizeof *o);
      if (shape == NULL || y == NULL || o == NULL) abort();
      *shape = (int64_t)n;
      *o = (isv_tensor){.name = "y", .dt = ISV_FP32, .shape = shape, .ndim = 1, .data = y,
                        .count = n, .byte_size = n * sizeof *y};
      r->outputs = o;
      r->n_outputs = 1;
      isv__parts parts;
      int rc = mode == 3 ? isv__tfs_pb_encode_multi(r, &parts)
                         : isv__tfs_pb_encode_examples(r, &parts);
      if (rc == 0) {
        for (size_t i = 0; i < parts.n; i++) sink += (unsigned)parts.v[i].len;
      } else if (rc != ISV_EBADREQ || r->status != ISV_EBADREQ) {
        abort(); /* only "not a classification / regression", said in r */
      }
      r->outputs = NULL;
      r->n_outputs = 0;
    }
  } else if (isv__tfs_pb_bind(r, msg, size, ISV__TFS_PREDICT) != 0) {
    check_refusal(r);
    if (isv__tfs_pb_decode_predict(r, msg, size) != r->status) abort(); /* left as it is */
  } else if (isv__tfs_pb_decode_predict(r, msg, size) != 0) {
    check_refusal(r);
  } else {
    if (r->model == NULL || r->fe_data == NULL) abort();
    for (size_t i = 0; i < r->n_inputs; i++) {
      sink += touch(&r->inputs[i]);
      round_trip(&r->inputs[i]);
    }
    isv__request_validate(r);
    /* the inputs as an identity model's outputs, named as the model's outputs */
    isv_tensor *o = isv__arena_calloc(&r->arena, r->n_inputs + 1, sizeof *o);
    if (o == NULL) abort();
    const isv_model_config *cfg = r->model->cfg;
    for (size_t i = 0; i < r->n_inputs; i++) {
      o[i] = r->inputs[i];
      o[i].name = cfg->outputs[i % cfg->n_outputs].name;
    }
    r->outputs = o;
    r->n_outputs = r->n_inputs;
    isv__parts parts;
    if (isv__tfs_pb_encode_predict(r, &parts) != 0) abort();
    size_t total = 0;
    for (size_t i = 0; i < parts.n; i++) {
      const unsigned char *p = (const unsigned char *)parts.v[i].base;
      for (size_t j = 0; j < parts.v[i].len; j++) sink += p[j];
      total += parts.v[i].len;
    }
    if (total != parts.total) abort();
    r->outputs = NULL;
    r->n_outputs = 0;
  }
  isv_request_free(r);
  free(msg);
  (void)sink;
  return 0;
}
