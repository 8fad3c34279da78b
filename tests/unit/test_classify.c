/* core/classify.c: Triton's classification extension — an output tensor becomes the BYTES
 * "value:index[:label]" of its k highest values (per batch row for a batched model); ties keep
 * the lower index first, NaN sorts last; the value is written exactly in its own datatype. */
#include "cmocka_prelude.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/half.h"
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
  isv_model *flat;    /* max_batch 0: one output per datatype, labels "cat" "dog" "eel" */
  isv_model *batched; /* max_batch 8: "p" FP32 [-1], the same labels */
  isv_model *nolabel; /* max_batch 0: "p" FP32 [-1], no labels */
} fixture;

static const isv_datatype numeric[] = {ISV_UINT8, ISV_UINT16, ISV_UINT32, ISV_UINT64,
                                       ISV_INT8,  ISV_INT16,  ISV_INT32,  ISV_INT64,
                                       ISV_FP16,  ISV_BF16,   ISV_FP32,   ISV_FP64};
#define N_NUMERIC (sizeof numeric / sizeof numeric[0])

static isv_model *add_model(fixture *f, const char *name, int all_types, uint32_t max_batch,
                            size_t n_labels) {
  isv_model_config *c;
  assert_int_equal(isv_model_config_new(name, &c), 0);
  int64_t any[] = {-1};
  assert_int_equal(isv_model_config_add_input(c, "x", ISV_FP32, any, 1), 0);
  if (all_types) {
    for (size_t i = 0; i < N_NUMERIC; i++)
      assert_int_equal(
          isv_model_config_add_output(c, isv_datatype_name(numeric[i]), numeric[i], any, 1), 0);
    int64_t two[] = {-1, -1};
    assert_int_equal(isv_model_config_add_output(c, "grid", ISV_FP32, two, 2), 0);
  } else {
    assert_int_equal(isv_model_config_add_output(c, "p", ISV_FP32, any, 1), 0);
  }
  const char *labels[] = {"cat", "dog", "eel"};
  assert_int_equal(isv_model_config_set_labels(c, labels, n_labels), 0);
  assert_int_equal(isv_model_config_set_max_batch(c, max_batch), 0);
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
  f->flat = add_model(f, "flat", 1, 0, 3);
  f->batched = add_model(f, "batched", 0, 8, 3);
  f->nolabel = add_model(f, "nolabel", 0, 0, 0);
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

/* The classification of one output, as text. */
typedef struct result {
  int rc;
  size_t n;
  char s[16][64];
  size_t ndim;
  int64_t shape[2];
  size_t byte_size;
} result;

static result classify(fixture *f, isv_model *m, const char *name, isv_datatype dt,
                       const int64_t *shape, size_t ndim, const void *data, size_t bytes,
                       uint32_t k) {
  isv_request *r = isv__request_new(&f->core);
  isv__model_ref(m);
  r->model = m;
  assert_int_equal(isv_request_set_output(r, name, dt, shape, ndim, data, bytes, ISV_TRANSIENT),
                   0);
  result res;
  memset(&res, 0, sizeof res);
  isv_tensor *t = &r->outputs[0];
  res.rc = isv__classify(r, t, k);
  assert_int_equal(t->dt, ISV_BYTES);
  res.n = t->count;
  res.ndim = t->ndim;
  assert_true(t->ndim <= 2);
  for (size_t i = 0; i < t->ndim; i++) res.shape[i] = t->shape[i];
  res.byte_size = t->byte_size;
  const isv_bytes *b = t->data;
  size_t total = 0;
  assert_true(res.n <= 16);
  for (size_t i = 0; i < res.n; i++) {
    assert_true(b[i].len < sizeof res.s[i]);
    memcpy(res.s[i], b[i].ptr, b[i].len);
    total += b[i].len;
  }
  assert_int_equal(res.byte_size, total);
  isv_request_free(r);
  return res;
}

static result classify_fp32(fixture *f, isv_model *m, const float *v, int64_t n, uint32_t k) {
  return classify(f, m, m == f->flat ? "FP32" : "p", ISV_FP32, &n, 1, v, (size_t)n * 4, k);
}

static void top_k_in_descending_order_with_labels(void **state) {
  fixture *f = *state;
  const float v[] = {0.25f, 0.5f, 0.125f};
  result r = classify_fp32(f, f->flat, v, 3, 2);
  assert_int_equal(r.rc, 0);
  assert_int_equal(r.n, 2);
  assert_int_equal(r.ndim, 1);
  assert_int_equal(r.shape[0], 2);
  assert_string_equal(r.s[0], "0.5:1:dog");
  assert_string_equal(r.s[1], "0.25:0:cat");
  r = classify_fp32(f, f->flat, v, 3, 1);
  assert_int_equal(r.n, 1);
  assert_int_equal(r.shape[0], 1);
  assert_string_equal(r.s[0], "0.5:1:dog");
  assert_int_equal(r.byte_size, strlen("0.5:1:dog"));
}

static void k_is_capped_at_the_number_of_classes(void **state) {
  fixture *f = *state;
  const float v[] = {0.25f, 0.5f, 0.125f};
  result r = classify_fp32(f, f->flat, v, 3, 1000);
  assert_int_equal(r.n, 3);
  assert_int_equal(r.shape[0], 3);
  assert_string_equal(r.s[0], "0.5:1:dog");
  assert_string_equal(r.s[1], "0.25:0:cat");
  assert_string_equal(r.s[2], "0.125:2:eel");
  r = classify_fp32(f, f->flat, v, 3, 3);
  assert_int_equal(r.n, 3);
  /* no class at all: an empty result, not a failure */
  r = classify_fp32(f, f->flat, v, 0, 5);
  assert_int_equal(r.rc, 0);
  assert_int_equal(r.n, 0);
  assert_int_equal(r.ndim, 1);
  assert_int_equal(r.shape[0], 0);
}

static void ties_keep_the_lower_index_first(void **state) {
  fixture *f = *state;
  const float v[] = {1, 2, 2, 1, 2, 0};
  result r = classify_fp32(f, f->nolabel, v, 6, 6);
  assert_string_equal(r.s[0], "2.0:1");
  assert_string_equal(r.s[1], "2.0:2");
  assert_string_equal(r.s[2], "2.0:4");
  assert_string_equal(r.s[3], "1.0:0");
  assert_string_equal(r.s[4], "1.0:3");
  assert_string_equal(r.s[5], "0.0:5");
  /* -0.0 and 0.0 compare equal: a tie, in index order, each written as it is */
  const float z[] = {-0.0f, 0.0f};
  r = classify_fp32(f, f->nolabel, z, 2, 2);
  assert_string_equal(r.s[0], "-0.0:0");
  assert_string_equal(r.s[1], "0.0:1");
  /* every value equal: the first k indices */
  const float same[] = {3, 3, 3, 3};
  r = classify_fp32(f, f->nolabel, same, 4, 2);
  assert_string_equal(r.s[0], "3.0:0");
  assert_string_equal(r.s[1], "3.0:1");
}

static void labels_only_for_indices_that_have_one(void **state) {
  fixture *f = *state;
  const float v[] = {1, 2, 3, 4, 5};
  result r = classify_fp32(f, f->flat, v, 5, 5); /* 3 labels for 5 classes */
  assert_string_equal(r.s[0], "5.0:4");
  assert_string_equal(r.s[1], "4.0:3");
  assert_string_equal(r.s[2], "3.0:2:eel");
  assert_string_equal(r.s[3], "2.0:1:dog");
  assert_string_equal(r.s[4], "1.0:0:cat");
  r = classify_fp32(f, f->nolabel, v, 3, 3); /* no labels at all: "value:index" */
  assert_string_equal(r.s[0], "3.0:2");
  assert_string_equal(r.s[1], "2.0:1");
  assert_string_equal(r.s[2], "1.0:0");
}

static void batched_outputs_classify_each_row(void **state) {
  fixture *f = *state;
  const float v[] = {0.1f, 0.7f, 0.2f, /* row 0 */
                     0.6f, 0.3f, 0.6f /* row 1: a tie */};
  int64_t shape[] = {2, 3};
  result r = classify(f, f->batched, "p", ISV_FP32, shape, 2, v, sizeof v, 2);
  assert_int_equal(r.rc, 0);
  assert_int_equal(r.ndim, 2);
  assert_int_equal(r.shape[0], 2);
  assert_int_equal(r.shape[1], 2);
  assert_int_equal(r.n, 4);
  assert_string_equal(r.s[0], "0.7:1:dog");
  assert_string_equal(r.s[1], "0.2:2:eel");
  assert_string_equal(r.s[2], "0.6:0:cat"); /* indices restart at 0 in every row */
  assert_string_equal(r.s[3], "0.6:2:eel");
  /* k capped per row: [2, 3] */
  r = classify(f, f->batched, "p", ISV_FP32, shape, 2, v, sizeof v, 9);
  assert_int_equal(r.shape[0], 2);
  assert_int_equal(r.shape[1], 3);
  assert_int_equal(r.n, 6);
  assert_string_equal(r.s[2], "0.1:0:cat");
  assert_string_equal(r.s[3], "0.6:0:cat");
  assert_string_equal(r.s[5], "0.3:1:dog");
  /* a batch of one row keeps its batch dimension */
  int64_t one[] = {1, 3};
  r = classify(f, f->batched, "p", ISV_FP32, one, 2, v, 12, 1);
  assert_int_equal(r.ndim, 2);
  assert_int_equal(r.shape[0], 1);
  assert_int_equal(r.shape[1], 1);
  assert_string_equal(r.s[0], "0.7:1:dog");
}

static void unbatched_rank_2_outputs_rank_all_elements(void **state) {
  fixture *f = *state;
  const float v[] = {1, 6, 2, 5, 3, 4};
  int64_t shape[] = {2, 3};
  result r = classify(f, f->flat, "grid", ISV_FP32, shape, 2, v, sizeof v, 3);
  assert_int_equal(r.ndim, 1);
  assert_int_equal(r.shape[0], 3);
  assert_string_equal(r.s[0], "6.0:1:dog"); /* flat indices over the whole tensor */
  assert_string_equal(r.s[1], "5.0:3");
  assert_string_equal(r.s[2], "4.0:5");
}

/* Top-1 and top-2 of a 2-class output of type dt, values given as raw elements. */
static void expect_pair(fixture *f, isv_datatype dt, const void *data, const char *first,
                        const char *second) {
  int64_t n = 2;
  result r = classify(f, f->flat, isv_datatype_name(dt), dt, &n, 1, data,
                      2 * isv_datatype_size(dt), 2);
  assert_int_equal(r.rc, 0);
  assert_int_equal(r.n, 2);
  assert_string_equal(r.s[0], first);
  assert_string_equal(r.s[1], second);
}

static void integer_values_are_written_exactly(void **state) {
  fixture *f = *state;
  const uint8_t u8[] = {0, 255};
  expect_pair(f, ISV_UINT8, u8, "255:1:dog", "0:0:cat");
  const uint16_t u16[] = {65535, 1};
  expect_pair(f, ISV_UINT16, u16, "65535:0:cat", "1:1:dog");
  const uint32_t u32[] = {7, UINT32_MAX};
  expect_pair(f, ISV_UINT32, u32, "4294967295:1:dog", "7:0:cat");
  const uint64_t u64[] = {UINT64_MAX, 0};
  expect_pair(f, ISV_UINT64, u64, "18446744073709551615:0:cat", "0:1:dog");
  const int8_t i8[] = {-128, 127};
  expect_pair(f, ISV_INT8, i8, "127:1:dog", "-128:0:cat");
  const int16_t i16[] = {-32768, -1};
  expect_pair(f, ISV_INT16, i16, "-1:1:dog", "-32768:0:cat");
  const int32_t i32[] = {INT32_MIN, INT32_MAX};
  expect_pair(f, ISV_INT32, i32, "2147483647:1:dog", "-2147483648:0:cat");
  const int64_t i64[] = {INT64_MIN, INT64_MAX};
  expect_pair(f, ISV_INT64, i64, "9223372036854775807:1:dog", "-9223372036854775808:0:cat");
  const int64_t big[] = {-9007199254740993, 9007199254740993}; /* 2^53 + 1: not a double */
  expect_pair(f, ISV_INT64, big, "9007199254740993:1:dog", "-9007199254740993:0:cat");
  const uint64_t ubig[] = {1, (1ull << 63) + 1};
  expect_pair(f, ISV_UINT64, ubig, "9223372036854775809:1:dog", "1:0:cat");
}

/* 64-bit integers are ranked exactly: as doubles, 2^53 and 2^53 + 1 (or UINT64_MAX - 1 and
 * UINT64_MAX) are equal, and the lower index won with the wrong class. */
static void sixty_four_bit_integers_rank_exactly(void **state) {
  fixture *f = *state;
  const int64_t i53[] = {9007199254740992, 9007199254740993};
  expect_pair(f, ISV_INT64, i53, "9007199254740993:1:dog", "9007199254740992:0:cat");
  const uint64_t umax[] = {UINT64_MAX - 1, UINT64_MAX};
  expect_pair(f, ISV_UINT64, umax, "18446744073709551615:1:dog", "18446744073709551614:0:cat");
  const int64_t imax[] = {INT64_MAX - 1, INT64_MAX};
  expect_pair(f, ISV_INT64, imax, "9223372036854775807:1:dog", "9223372036854775806:0:cat");
  const int64_t neg[] = {-2, -1}; /* signed order, not the bits' */
  expect_pair(f, ISV_INT64, neg, "-1:1:dog", "-2:0:cat");
  const int64_t tie[] = {5, 5};
  expect_pair(f, ISV_INT64, tie, "5:0:cat", "5:1:dog");
}

static void float_values_are_the_shortest_text_of_their_type(void **state) {
  fixture *f = *state;
  /* FP16 3.140625 (0x4248) reads back from "3.14", 65504 (the largest) from "65500.0" */
  const uint16_t h[] = {0x4248, 0x7BFF};
  expect_pair(f, ISV_FP16, h, "65500.0:1:dog", "3.14:0:cat");
  const uint16_t h2[] = {isv__f32_to_f16(0.1f), isv__f32_to_f16(-2.5f)};
  expect_pair(f, ISV_FP16, h2, "0.1:0:cat", "-2.5:1:dog");
  /* BF16 3.140625 (0x4049) also reads back from "3.14"; 0x3DCD is BF16's nearest to 0.1 */
  const uint16_t bf[] = {0x3DCD, 0x4049};
  expect_pair(f, ISV_BF16, bf, "3.14:1:dog", "0.1:0:cat");
  const float s[] = {0.1f, 3.3f};
  expect_pair(f, ISV_FP32, s, "3.3:1:dog", "0.1:0:cat");
  const float s2[] = {1e-7f, -1e20f};
  expect_pair(f, ISV_FP32, s2, "1e-07:0:cat", "-1e+20:1:dog");
  const double d[] = {0.1, 0.30000000000000004};
  expect_pair(f, ISV_FP64, d, "0.30000000000000004:1:dog", "0.1:0:cat");
  const double d2[] = {1e300, 5e-324};
  expect_pair(f, ISV_FP64, d2, "1e+300:0:cat", "5e-324:1:dog");
  /* FP32 0.1f is not FP64 0.1: written in its own type, not through a double */
  const float third[] = {1.0f / 3, 0};
  expect_pair(f, ISV_FP32, third, "0.33333334:0:cat", "0.0:1:dog");
}

static void infinities_rank_as_values(void **state) {
  fixture *f = *state;
  const float v[] = {-INFINITY, 1, INFINITY};
  result r = classify_fp32(f, f->nolabel, v, 3, 3);
  assert_string_equal(r.s[0], "Infinity:2");
  assert_string_equal(r.s[1], "1.0:1");
  assert_string_equal(r.s[2], "-Infinity:0");
}

/* NaN is not a value: it sorts after every number (-Infinity included), NaNs among themselves
 * in index order, so top-k never picks a NaN while a number is left. */
static void nan_sorts_last(void **state) {
  fixture *f = *state;
  const float v[] = {NAN, -INFINITY, 2, NAN, -1};
  result r = classify_fp32(f, f->nolabel, v, 5, 5);
  assert_string_equal(r.s[0], "2.0:2");
  assert_string_equal(r.s[1], "-1.0:4");
  assert_string_equal(r.s[2], "-Infinity:1");
  assert_string_equal(r.s[3], "NaN:0");
  assert_string_equal(r.s[4], "NaN:3");
  r = classify_fp32(f, f->nolabel, v, 5, 1);
  assert_string_equal(r.s[0], "2.0:2");
  /* all NaN: index order */
  const float all[] = {NAN, NAN, NAN};
  r = classify_fp32(f, f->nolabel, all, 3, 2);
  assert_string_equal(r.s[0], "NaN:0");
  assert_string_equal(r.s[1], "NaN:1");
  /* the half types and FP64 too */
  const uint16_t h[] = {0x7E00, 0x3C00}; /* FP16 NaN, 1.0 */
  expect_pair(f, ISV_FP16, h, "1.0:1:dog", "NaN:0:cat");
  const uint16_t bf[] = {0x7FC0, 0xBF80}; /* BF16 NaN, -1.0 */
  expect_pair(f, ISV_BF16, bf, "-1.0:1:dog", "NaN:0:cat");
  const double d[] = {NAN, -1e308};
  expect_pair(f, ISV_FP64, d, "-1e+308:1:dog", "NaN:0:cat");
  const float negnan[] = {-NAN, 0}; /* the sign of a NaN changes nothing */
  expect_pair(f, ISV_FP32, negnan, "0.0:1:dog", "NaN:0:cat");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(top_k_in_descending_order_with_labels, setup, teardown),
      cmocka_unit_test_setup_teardown(k_is_capped_at_the_number_of_classes, setup, teardown),
      cmocka_unit_test_setup_teardown(ties_keep_the_lower_index_first, setup, teardown),
      cmocka_unit_test_setup_teardown(labels_only_for_indices_that_have_one, setup, teardown),
      cmocka_unit_test_setup_teardown(batched_outputs_classify_each_row, setup, teardown),
      cmocka_unit_test_setup_teardown(unbatched_rank_2_outputs_rank_all_elements, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(integer_values_are_written_exactly, setup, teardown),
      cmocka_unit_test_setup_teardown(sixty_four_bit_integers_rank_exactly, setup, teardown),
      cmocka_unit_test_setup_teardown(float_values_are_the_shortest_text_of_their_type, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(infinities_rank_as_values, setup, teardown),
      cmocka_unit_test_setup_teardown(nan_sorts_last, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
