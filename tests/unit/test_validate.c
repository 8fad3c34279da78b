/* core/validate.c: a request checked against its model before the backend runs (every rule
 * and its message: inputs, datatypes, ranks, dimensions, batch sizes, requested outputs), and
 * the post-processing after it ran (which outputs, in which order, classification). */
#include "cmocka_prelude.h"

#include <stdlib.h>
#include <string.h>

#include "core/request.h"
#include "core/lifecycle.h"

static int noop(isv_request *r, void *u) {
  (void)r;
  (void)u;
  return 0;
}

typedef struct fixture {
  uv_loop_t loop;
  isv__core core;
  isv_model *m;    /* max_batch 4: A, B INT32 [16]; Y INT32 [16], Z FP32 [-1], S BYTES, F BOOL */
  isv_model *nb;   /* max_batch 0: X FP32 [2,-1]; outputs P FP32 [-1], Q INT64 [-1] */
  isv_model *none; /* no inputs, no outputs */
  isv_model *ar;   /* max_batch 0: V FP32 and output W FP32, both ISV_ANY_RANK */
  isv_model *arb;  /* max_batch 4: the same */
} fixture;

static isv_model *reg(fixture *f, isv_model_config *c) {
  isv_backend be = {.struct_size = sizeof be, .infer = noop};
  isv_model *m;
  assert_int_equal(isv__registry_add(&f->core.reg, c, "1", &be, NULL, &m), 0);
  isv_model_config_free(c);
  return m;
}

static int setup(void **state) {
  fixture *f = calloc(1, sizeof *f);
  uv_loop_init(&f->loop);
  isv_options o;
  isv__options_defaults(&o);
  assert_int_equal(isv__core_init(&f->core, &f->loop, &o), 0);

  isv_model_config *c;
  int64_t s16[] = {16}, any[] = {-1}, two_any[] = {2, -1};
  isv_model_config_new("m", &c);
  isv_model_config_add_input(c, "A", ISV_INT32, s16, 1);
  isv_model_config_add_input(c, "B", ISV_INT32, s16, 1);
  isv_model_config_add_output(c, "Y", ISV_INT32, s16, 1);
  isv_model_config_add_output(c, "Z", ISV_FP32, any, 1);
  isv_model_config_add_output(c, "S", ISV_BYTES, any, 1);
  isv_model_config_add_output(c, "F", ISV_BOOL, any, 1);
  isv_model_config_set_max_batch(c, 4);
  f->m = reg(f, c);

  isv_model_config_new("nb", &c);
  isv_model_config_add_input(c, "X", ISV_FP32, two_any, 2);
  isv_model_config_add_output(c, "P", ISV_FP32, any, 1);
  isv_model_config_add_output(c, "Q", ISV_INT64, any, 1);
  f->nb = reg(f, c);

  isv_model_config_new("none", &c);
  f->none = reg(f, c);

  for (int b = 0; b < 2; b++) {
    isv_model_config_new(b ? "arb" : "ar", &c);
    assert_int_equal(isv_model_config_add_input(c, "V", ISV_FP32, NULL, ISV_ANY_RANK), 0);
    assert_int_equal(isv_model_config_add_output(c, "W", ISV_FP32, NULL, ISV_ANY_RANK), 0);
    isv_model_config_set_max_batch(c, b ? 4 : 0);
    *(b ? &f->arb : &f->ar) = reg(f, c);
  }
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fixture *f = *state;
  isv__core_close(&f->core, NULL);
  uv_run(&f->loop, UV_RUN_DEFAULT);
  assert_int_equal(uv_loop_close(&f->loop), 0);
  free(f);
  return 0;
}

/* A request bound to m, as isv__core_submit leaves it before validation. */
static isv_request *req(fixture *f, isv_model *m) {
  isv_request *r = isv__request_new(&f->core);
  isv__model_ref(m);
  r->model = m;
  return r;
}

static void add(isv_request *r, const char *name, isv_datatype dt, const int64_t *shape,
                size_t ndim) {
  static uint64_t zeros[1024];
  size_t count, bytes;
  assert_int_equal(isv__shape_count(shape, ndim, isv_datatype_size(dt), &count, &bytes), 0);
  assert_true(bytes <= sizeof zeros);
  assert_int_equal(isv_request_add_input(r, name, dt, shape, ndim, zeros, bytes, ISV_STATIC), 0);
}

/* An input of m: [batch, n] INT32. */
static void add_bn(isv_request *r, const char *name, int64_t batch, int64_t n) {
  int64_t shape[] = {batch, n};
  add(r, name, ISV_INT32, shape, 2);
}

static void expect_valid(isv_request *r) {
  int rc = isv__request_validate(r);
  if (rc != 0) fail_msg("unexpected failure: %s", r->errmsg);
  assert_int_equal(r->status, 0);
  isv_request_free(r);
}

static void expect_message(isv_request *r, const char *message) {
  assert_int_equal(isv__request_validate(r), ISV_EBADREQ);
  assert_int_equal(r->status, ISV_EBADREQ);
  assert_string_equal(r->errmsg, message);
  isv_request_free(r);
}

static void a_well_formed_request_passes(void **state) {
  fixture *f = *state;
  isv_request *r = req(f, f->m);
  add_bn(r, "B", 1, 16); /* any order */
  add_bn(r, "A", 1, 16);
  expect_valid(r);
  r = req(f, f->m);
  add_bn(r, "A", 4, 16); /* the max batch itself */
  add_bn(r, "B", 4, 16);
  isv_request_add_requested_output(r, "Z", 0);
  isv_request_add_requested_output(r, "Y", 3); /* classification of a numeric output */
  isv_request_add_requested_output(r, "S", 0); /* BYTES, not classified: fine */
  expect_valid(r);
  /* -1 takes any size, including 0 */
  int64_t s[] = {2, 0};
  r = req(f, f->nb);
  add(r, "X", ISV_FP32, s, 2);
  expect_valid(r);
  int64_t s2[] = {2, 100};
  r = req(f, f->nb);
  add(r, "X", ISV_FP32, s2, 2);
  expect_valid(r);
  r = req(f, f->none); /* no input declared, none sent */
  expect_valid(r);
}

/* ISV_ANY_RANK: any number of dimensions of any size; a batched model still wants its batch
 * dimension, within max_batch. Outputs follow the same rule. */
static void any_rank_inputs_and_outputs(void **state) {
  fixture *f = *state;
  int64_t s[] = {3, 2, 1, 2};
  for (size_t ndim = 0; ndim <= 4; ndim++) {
    isv_request *r = req(f, f->ar);
    add(r, "V", ISV_FP32, s, ndim);
    expect_valid(r);
    r = req(f, f->ar);
    void *data;
    assert_int_equal(isv_request_alloc_output(r, "W", ISV_FP32, s, ndim, &data), 0);
    isv_request_free(r);
  }
  for (size_t ndim = 1; ndim <= 4; ndim++) {
    isv_request *r = req(f, f->arb);
    add(r, "V", ISV_FP32, s, ndim);
    expect_valid(r);
  }
  isv_request *r = req(f, f->arb);
  add(r, "V", ISV_FP32, s, 0);
  expect_message(r, "input 'V' has shape [], model 'arb' expects a batch dimension first");
  int64_t five[] = {5, 2};
  r = req(f, f->arb);
  add(r, "V", ISV_FP32, five, 2);
  expect_message(r, "input 'V' has batch size 5, model 'arb' max batch size is 4");
  r = req(f, f->arb);
  void *data;
  assert_int_equal(isv_request_alloc_output(r, "W", ISV_FP32, s, 0, &data), ISV_EINVAL);
  assert_int_equal(isv_request_alloc_output(r, "W", ISV_FP32, five, 2, &data), ISV_EINVAL);
  assert_int_equal(isv_request_alloc_output(r, "W", ISV_FP32, s, 3, &data), 0);
  isv_request_free(r);
}

static void unexpected_input(void **state) {
  fixture *f = *state;
  isv_request *r = req(f, f->m);
  add_bn(r, "A", 1, 16);
  add_bn(r, "B", 1, 16);
  add_bn(r, "C", 1, 16);
  expect_message(r, "unexpected input 'C': model 'm' has no such input");
  int64_t s[] = {1};
  r = req(f, f->none);
  add(r, "x", ISV_FP32, s, 1);
  expect_message(r, "unexpected input 'x': model 'none' has no such input");
  r = req(f, f->m); /* names are case-sensitive */
  add_bn(r, "a", 1, 16);
  add_bn(r, "B", 1, 16);
  expect_message(r, "unexpected input 'a': model 'm' has no such input");
}

static void duplicate_input(void **state) {
  fixture *f = *state;
  isv_request *r = req(f, f->m);
  add_bn(r, "A", 1, 16);
  add_bn(r, "B", 1, 16);
  add_bn(r, "A", 1, 16);
  expect_message(r, "duplicate input 'A'");
}

static void missing_input(void **state) {
  fixture *f = *state;
  isv_request *r = req(f, f->m);
  add_bn(r, "A", 1, 16);
  expect_message(r, "missing input 'B' for model 'm'");
  r = req(f, f->m);
  expect_message(r, "missing input 'A' for model 'm'"); /* the first declared one */
  r = req(f, f->nb);
  expect_message(r, "missing input 'X' for model 'nb'");
}

static void datatype_mismatch(void **state) {
  fixture *f = *state;
  isv_request *r = req(f, f->m);
  int64_t s[] = {1, 16};
  add(r, "A", ISV_FP32, s, 2);
  add_bn(r, "B", 1, 16);
  expect_message(r, "input 'A' has datatype FP32, model 'm' expects INT32");
  r = req(f, f->nb);
  int64_t x[] = {2, 3};
  add(r, "X", ISV_FP64, x, 2);
  expect_message(r, "input 'X' has datatype FP64, model 'nb' expects FP32");
  r = req(f, f->nb);
  add(r, "X", ISV_BYTES, x, 2);
  expect_message(r, "input 'X' has datatype BYTES, model 'nb' expects FP32");
}

static void rank_mismatch_with_and_without_a_batch_dimension(void **state) {
  fixture *f = *state;
  /* max_batch > 0: the batch dimension counts in the rank, and shows as -1 */
  isv_request *r = req(f, f->m);
  int64_t s16[] = {16};
  add(r, "A", ISV_INT32, s16, 1);
  add_bn(r, "B", 1, 16);
  expect_message(r, "input 'A' has shape [16], model 'm' expects [-1,16] (rank 2)");
  r = req(f, f->m);
  int64_t s3[] = {1, 1, 16};
  add(r, "A", ISV_INT32, s3, 3);
  expect_message(r, "input 'A' has shape [1,1,16], model 'm' expects [-1,16] (rank 2)");
  /* max_batch 0: the declared shape as it is */
  r = req(f, f->nb);
  int64_t s2[] = {2};
  add(r, "X", ISV_FP32, s2, 1);
  expect_message(r, "input 'X' has shape [2], model 'nb' expects [2,-1] (rank 2)");
  r = req(f, f->nb);
  add(r, "X", ISV_FP32, NULL, 0); /* a scalar */
  expect_message(r, "input 'X' has shape [], model 'nb' expects [2,-1] (rank 2)");
}

static void dimension_mismatch_with_and_without_a_batch_dimension(void **state) {
  fixture *f = *state;
  isv_request *r = req(f, f->m);
  add_bn(r, "A", 1, 8);
  add_bn(r, "B", 1, 16);
  expect_message(r, "input 'A' has shape [1,8], model 'm' expects [-1,16]");
  r = req(f, f->m);
  add_bn(r, "A", 2, 16);
  add_bn(r, "B", 2, 17);
  expect_message(r, "input 'B' has shape [2,17], model 'm' expects [-1,16]");
  r = req(f, f->nb);
  int64_t s[] = {3, 5};
  add(r, "X", ISV_FP32, s, 2);
  expect_message(r, "input 'X' has shape [3,5], model 'nb' expects [2,-1]");
}

static void batch_size_zero_or_above_the_max(void **state) {
  fixture *f = *state;
  isv_request *r = req(f, f->m);
  add_bn(r, "A", 0, 16);
  add_bn(r, "B", 0, 16);
  expect_message(r, "input 'A' has batch size 0, must be >= 1");
  r = req(f, f->m);
  add_bn(r, "A", 5, 16);
  add_bn(r, "B", 5, 16);
  expect_message(r, "input 'A' has batch size 5, model 'm' max batch size is 4");
  r = req(f, f->m);
  add_bn(r, "A", 1, 16);
  add_bn(r, "B", 50, 16);
  expect_message(r, "input 'B' has batch size 50, model 'm' max batch size is 4");
  /* a negative batch (a front end's tensor, not the in-process API, which refuses it) */
  r = req(f, f->m);
  add_bn(r, "A", 1, 16);
  add_bn(r, "B", 1, 16);
  r->inputs[0].shape[0] = -1;
  expect_message(r, "input 'A' has batch size -1, must be >= 1");
}

static void inputs_with_different_batch_sizes(void **state) {
  fixture *f = *state;
  isv_request *r = req(f, f->m);
  add_bn(r, "A", 1, 16);
  add_bn(r, "B", 2, 16);
  expect_message(r, "inputs 'A' and 'B' have different batch sizes (1, 2)");
  r = req(f, f->m); /* named in request order */
  add_bn(r, "B", 3, 16);
  add_bn(r, "A", 2, 16);
  expect_message(r, "inputs 'B' and 'A' have different batch sizes (3, 2)");
}

static void unknown_or_duplicate_requested_outputs(void **state) {
  fixture *f = *state;
  isv_request *r = req(f, f->m);
  add_bn(r, "A", 1, 16);
  add_bn(r, "B", 1, 16);
  isv_request_add_requested_output(r, "Y", 0);
  isv_request_add_requested_output(r, "W", 0);
  expect_message(r, "unknown output 'W': model 'm' has no such output");
  r = req(f, f->m);
  add_bn(r, "A", 1, 16);
  add_bn(r, "B", 1, 16);
  isv_request_add_requested_output(r, "A", 0); /* an input is not an output */
  expect_message(r, "unknown output 'A': model 'm' has no such output");
  r = req(f, f->m);
  add_bn(r, "A", 1, 16);
  add_bn(r, "B", 1, 16);
  isv_request_add_requested_output(r, "Y", 0);
  isv_request_add_requested_output(r, "Z", 0);
  isv_request_add_requested_output(r, "Y", 2); /* twice, even with a different classification */
  expect_message(r, "output 'Y' requested twice");
}

static void classification_of_bool_or_bytes_is_refused(void **state) {
  fixture *f = *state;
  isv_request *r = req(f, f->m);
  add_bn(r, "A", 1, 16);
  add_bn(r, "B", 1, 16);
  isv_request_add_requested_output(r, "S", 1);
  expect_message(r, "output 'S' has datatype BYTES, which cannot be classified");
  r = req(f, f->m);
  add_bn(r, "A", 1, 16);
  add_bn(r, "B", 1, 16);
  isv_request_add_requested_output(r, "F", 2);
  expect_message(r, "output 'F' has datatype BOOL, which cannot be classified");
  r = req(f, f->m); /* not classified: fine */
  add_bn(r, "A", 1, 16);
  add_bn(r, "B", 1, 16);
  isv_request_add_requested_output(r, "F", 0);
  isv_request_add_requested_output(r, "S", 0);
  expect_valid(r);
}

/* Inputs in request order first, then missing inputs, batch agreement, then outputs. */
static void the_first_problem_is_the_one_reported(void **state) {
  fixture *f = *state;
  isv_request *r = req(f, f->m);
  int64_t s[] = {1, 16};
  add(r, "A", ISV_FP32, s, 2); /* datatype */
  add_bn(r, "C", 1, 16);       /* unexpected */
  expect_message(r, "input 'A' has datatype FP32, model 'm' expects INT32");
  r = req(f, f->m);
  add_bn(r, "C", 1, 16);
  add(r, "A", ISV_FP32, s, 2);
  expect_message(r, "unexpected input 'C': model 'm' has no such input");
  r = req(f, f->m); /* a datatype problem before a shape problem in the same input */
  int64_t bad[] = {9, 9, 9};
  add(r, "A", ISV_FP32, bad, 3);
  expect_message(r, "input 'A' has datatype FP32, model 'm' expects INT32");
  r = req(f, f->m); /* rank before batch size */
  int64_t b0[] = {0};
  add(r, "A", ISV_INT32, b0, 1);
  expect_message(r, "input 'A' has shape [0], model 'm' expects [-1,16] (rank 2)");
  r = req(f, f->m); /* batch size before dimensions */
  add_bn(r, "A", 9, 3);
  expect_message(r, "input 'A' has batch size 9, model 'm' max batch size is 4");
  r = req(f, f->m); /* missing before different batch sizes and outputs */
  add_bn(r, "A", 1, 16);
  isv_request_add_requested_output(r, "W", 0);
  expect_message(r, "missing input 'B' for model 'm'");
  r = req(f, f->m); /* batch sizes before outputs */
  add_bn(r, "A", 1, 16);
  add_bn(r, "B", 2, 16);
  isv_request_add_requested_output(r, "W", 0);
  expect_message(r, "inputs 'A' and 'B' have different batch sizes (1, 2)");
  r = req(f, f->m); /* outputs in request order */
  add_bn(r, "A", 1, 16);
  add_bn(r, "B", 1, 16);
  isv_request_add_requested_output(r, "S", 1);
  isv_request_add_requested_output(r, "W", 0);
  expect_message(r, "output 'S' has datatype BYTES, which cannot be classified");
}

/* ---- post-processing -------------------------------------------------------------------- */

static const float pdata[] = {0.5f, 2.5f, 1.5f};
static const int64_t qdata[] = {7, 8, 9};

/* The backend's part for nb: produce P and/or Q in the order given ("PQ", "QP", "Q"...). */
static void produce(isv_request *r, const char *which) {
  int64_t n = 3;
  for (const char *c = which; *c; c++) {
    if (*c == 'P')
      assert_int_equal(isv_request_set_output(r, "P", ISV_FP32, &n, 1, pdata, sizeof pdata,
                                              ISV_STATIC),
                       0);
    else
      assert_int_equal(isv_request_set_output(r, "Q", ISV_INT64, &n, 1, qdata, sizeof qdata,
                                              ISV_STATIC),
                       0);
  }
}

static void expect_outputs(isv_request *r, const char *names) {
  assert_int_equal(isv__request_postprocess(r, 0), 0);
  assert_int_equal(r->status, 0);
  assert_int_equal(isv_request_output_count(r), strlen(names));
  for (size_t i = 0; names[i]; i++) {
    const isv_tensor *t = isv_request_output_at(r, i);
    char want[2] = {names[i], '\0'};
    assert_string_equal(isv_tensor_name(t), want);
    /* the tensor itself is kept: same data, datatype and shape */
    assert_ptr_equal(isv_tensor_data(t), names[i] == 'P' ? (const void *)pdata : qdata);
    assert_int_equal(isv_tensor_datatype(t), names[i] == 'P' ? ISV_FP32 : ISV_INT64);
    assert_int_equal(isv_tensor_element_count(t), 3);
  }
  isv_request_free(r);
}

static void without_requested_outputs_the_declaration_order(void **state) {
  fixture *f = *state;
  isv_request *r = req(f, f->nb);
  produce(r, "QP");
  expect_outputs(r, "PQ");
  r = req(f, f->nb);
  produce(r, "PQ");
  expect_outputs(r, "PQ");
  /* an output nobody named may be omitted */
  r = req(f, f->nb);
  produce(r, "Q");
  expect_outputs(r, "Q");
  r = req(f, f->nb);
  expect_outputs(r, "");
  r = req(f, f->none);
  expect_outputs(r, "");
}

static void requested_outputs_in_the_requested_order(void **state) {
  fixture *f = *state;
  isv_request *r = req(f, f->nb);
  isv_request_add_requested_output(r, "Q", 0);
  isv_request_add_requested_output(r, "P", 0);
  produce(r, "PQ");
  expect_outputs(r, "QP");
  /* outputs produced but not requested are dropped */
  r = req(f, f->nb);
  isv_request_add_requested_output(r, "Q", 0);
  produce(r, "PQ");
  expect_outputs(r, "Q");
  r = req(f, f->nb);
  isv_request_add_requested_output(r, "P", 0);
  produce(r, "QP");
  expect_outputs(r, "P");
}

static void a_requested_output_not_produced_is_the_backends_fault(void **state) {
  fixture *f = *state;
  isv_request *r = req(f, f->nb);
  isv_request_add_requested_output(r, "Q", 0);
  isv_request_add_requested_output(r, "P", 0);
  produce(r, "Q");
  assert_int_equal(isv__request_postprocess(r, 0), ISV_EBACKEND);
  assert_int_equal(r->status, ISV_EBACKEND);
  assert_string_equal(r->errmsg, "model 'nb' did not produce output 'P'");
  isv_request_free(r);
  r = req(f, f->nb);
  isv_request_add_requested_output(r, "P", 0);
  assert_int_equal(isv__request_postprocess(r, 0), ISV_EBACKEND);
  assert_string_equal(r->errmsg, "model 'nb' did not produce output 'P'");
  isv_request_free(r);
}

static void requested_flags_and_classification_are_applied(void **state) {
  fixture *f = *state;
  isv_request *r = req(f, f->nb);
  isv_request_add_requested_output(r, "Q", 0);
  isv_request_add_requested_output(r, "P", 2);
  r->req_outputs[0].flags = 0x5; /* a front end's private bits reach the output tensor */
  r->req_outputs[1].flags = 0x2;
  produce(r, "PQ");
  assert_int_equal(isv__request_postprocess(r, 0), 0);
  assert_int_equal(isv_request_output_count(r), 2);
  const isv_tensor *q = isv_request_output_at(r, 0), *p = isv_request_output_at(r, 1);
  assert_string_equal(isv_tensor_name(q), "Q");
  assert_int_equal(q->flags, 0x5);
  assert_int_equal(isv_tensor_datatype(q), ISV_INT64); /* not classified */
  assert_string_equal(isv_tensor_name(p), "P");
  assert_int_equal(p->flags, 0x2);
  assert_int_equal(isv_tensor_datatype(p), ISV_BYTES);
  size_t ndim;
  const int64_t *shape = isv_tensor_shape(p, &ndim);
  assert_int_equal(ndim, 1);
  assert_int_equal(shape[0], 2);
  const isv_bytes *b = isv_tensor_data(p);
  assert_int_equal(b[0].len, 5);
  assert_memory_equal(b[0].ptr, "2.5:1", 5);
  assert_memory_equal(b[1].ptr, "1.5:2", 5);
  isv_request_free(r);
}

/* isv__shape_count: the element count and bytes, or -1 for a negative dimension or a product
 * past SIZE_MAX / 4 (found by the multiplications, without a division per dimension). */
static void shape_counts_and_their_overflows(void **state) {
  (void)state;
  size_t count = 7, bytes = 7;
  const int64_t s35[] = {3, 5};
  assert_int_equal(isv__shape_count(s35, 2, 4, &count, &bytes), 0);
  assert_int_equal(count, 15);
  assert_int_equal(bytes, 60);
  assert_int_equal(isv__shape_count(NULL, 0, 8, &count, &bytes), 0); /* a scalar */
  assert_int_equal(count, 1);
  assert_int_equal(bytes, 8);
  const int64_t neg[] = {4, -1};
  assert_int_equal(isv__shape_count(neg, 2, 4, &count, &bytes), -1);
  const int64_t wraps[] = {INT64_C(1) << 33, INT64_C(1) << 33}; /* 2^66 */
  assert_int_equal(isv__shape_count(wraps, 2, 1, &count, &bytes), -1);
  const int64_t zero_first[] = {0, INT64_MAX, INT64_MAX}; /* 0 elements, however large the rest */
  assert_int_equal(isv__shape_count(zero_first, 3, 4, &count, &bytes), 0);
  assert_int_equal(count, 0);
  assert_int_equal(bytes, 0);
  const int64_t quarter[] = {(int64_t)(SIZE_MAX >> 2)};
  assert_int_equal(isv__shape_count(quarter, 1, 1, &count, NULL), 0);
  assert_int_equal(count, SIZE_MAX >> 2);
  assert_int_equal(isv__shape_count(quarter, 1, 2, &count, &bytes), -1); /* bytes past the cap */
  const int64_t past[] = {(int64_t)(SIZE_MAX >> 2) + 1};
  assert_int_equal(isv__shape_count(past, 1, 0, &count, &bytes), -1); /* elements past it */
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(shape_counts_and_their_overflows),
      cmocka_unit_test_setup_teardown(a_well_formed_request_passes, setup, teardown),
      cmocka_unit_test_setup_teardown(any_rank_inputs_and_outputs, setup, teardown),
      cmocka_unit_test_setup_teardown(unexpected_input, setup, teardown),
      cmocka_unit_test_setup_teardown(duplicate_input, setup, teardown),
      cmocka_unit_test_setup_teardown(missing_input, setup, teardown),
      cmocka_unit_test_setup_teardown(datatype_mismatch, setup, teardown),
      cmocka_unit_test_setup_teardown(rank_mismatch_with_and_without_a_batch_dimension, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(dimension_mismatch_with_and_without_a_batch_dimension,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(batch_size_zero_or_above_the_max, setup, teardown),
      cmocka_unit_test_setup_teardown(inputs_with_different_batch_sizes, setup, teardown),
      cmocka_unit_test_setup_teardown(unknown_or_duplicate_requested_outputs, setup, teardown),
      cmocka_unit_test_setup_teardown(classification_of_bool_or_bytes_is_refused, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(the_first_problem_is_the_one_reported, setup, teardown),
      cmocka_unit_test_setup_teardown(without_requested_outputs_the_declaration_order, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(requested_outputs_in_the_requested_order, setup, teardown),
      cmocka_unit_test_setup_teardown(a_requested_output_not_produced_is_the_backends_fault,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(requested_flags_and_classification_are_applied, setup,
                                      teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
