/* codec/datatype: the one table of datatypes and their names in every protocol. */
#include "cmocka_prelude.h"

#include <string.h>

#include "codec/datatype.h"

static void every_type_round_trips_in_every_column(void **state) {
  (void)state;
  for (int dt = ISV_BOOL; dt <= ISV_BYTES; dt++) {
    assert_true(isv__dt_size((isv_datatype)dt) > 0);
    for (int col = 0; col < ISV__DTN_COUNT; col++) {
      const char *n = isv__dt_name((isv_datatype)dt, (isv__dt_naming)col);
      if (n == NULL) {
        assert_int_equal(col, ISV__DTN_GRPS); /* only grps lacks some types */
        continue;
      }
      assert_int_equal(isv__dt_from_name((isv__dt_naming)col, n, strlen(n)), dt);
    }
  }
}

static void names_as_each_protocol_spells_them(void **state) {
  (void)state;
  assert_string_equal(isv__dt_name(ISV_FP32, ISV__DTN_V2), "FP32");
  assert_string_equal(isv__dt_name(ISV_FP32, ISV__DTN_TF), "DT_FLOAT");
  assert_string_equal(isv__dt_name(ISV_FP32, ISV__DTN_GRPS), "DT_FLOAT32");
  assert_string_equal(isv__dt_name(ISV_FP32, ISV__DTN_TRITON), "TYPE_FP32");
  assert_string_equal(isv__dt_name(ISV_FP16, ISV__DTN_TF), "DT_HALF");
  assert_string_equal(isv__dt_name(ISV_BF16, ISV__DTN_TF), "DT_BFLOAT16");
  assert_string_equal(isv__dt_name(ISV_BYTES, ISV__DTN_TF), "DT_STRING");
  assert_string_equal(isv__dt_name(ISV_BYTES, ISV__DTN_TRITON), "TYPE_STRING");
  assert_string_equal(isv__dt_name(ISV_FP64, ISV__DTN_TF), "DT_DOUBLE");
  assert_null(isv__dt_name(ISV_BOOL, ISV__DTN_GRPS)); /* grps has no BOOL */
  assert_null(isv__dt_name(ISV_TYPE_INVALID, ISV__DTN_V2));
  assert_null(isv__dt_name((isv_datatype)99, ISV__DTN_V2));
  assert_null(isv__dt_name(ISV_FP32, ISV__DTN_COUNT));
  /* names are case-sensitive and length-exact */
  assert_int_equal(isv__dt_from_name(ISV__DTN_V2, "fp32", 4), ISV_TYPE_INVALID);
  assert_int_equal(isv__dt_from_name(ISV__DTN_V2, "FP32X", 4), ISV_FP32);
  assert_int_equal(isv__dt_from_name(ISV__DTN_V2, "FP3", 3), ISV_TYPE_INVALID);
  assert_int_equal(isv__dt_from_name(ISV__DTN_TF, "FP32", 4), ISV_TYPE_INVALID);
  assert_int_equal(isv__dt_from_name(ISV__DTN_V2, NULL, 0), ISV_TYPE_INVALID);
}

static void grps_numbers(void **state) {
  (void)state;
  static const struct {
    isv_datatype dt;
    int n;
  } want[] = {{ISV_UINT8, 1}, {ISV_INT8, 2},  {ISV_INT16, 3}, {ISV_INT32, 4}, {ISV_INT64, 5},
              {ISV_FP16, 6},  {ISV_FP32, 7}, {ISV_FP64, 8},  {ISV_BYTES, 9}};
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
    assert_int_equal(isv__dt_grps_number(want[i].dt), want[i].n);
    assert_int_equal(isv__dt_from_grps_number(want[i].n), want[i].dt);
  }
  assert_int_equal(isv__dt_grps_number(ISV_BOOL), 0);
  assert_int_equal(isv__dt_from_grps_number(0), ISV_TYPE_INVALID); /* DT_INVALID */
  assert_int_equal(isv__dt_from_grps_number(10), ISV_TYPE_INVALID);
  assert_int_equal(isv__dt_from_grps_number(-1), ISV_TYPE_INVALID);
}

/* model_config.proto's DataType: the V2 order up to INT64, then FP16 10, FP32 11, FP64 12,
 * STRING 13, BF16 14. */
static void triton_config_numbers(void **state) {
  (void)state;
  for (isv_datatype dt = ISV_BOOL; dt <= ISV_INT64; dt++)
    assert_int_equal(isv__dt_triton_number(dt), (int)dt);
  assert_int_equal(isv__dt_triton_number(ISV_FP16), 10);
  assert_int_equal(isv__dt_triton_number(ISV_FP32), 11);
  assert_int_equal(isv__dt_triton_number(ISV_FP64), 12);
  assert_int_equal(isv__dt_triton_number(ISV_BYTES), 13);
  assert_int_equal(isv__dt_triton_number(ISV_BF16), 14);
  assert_int_equal(isv__dt_triton_number(ISV_TYPE_INVALID), 0);
  assert_int_equal(isv__dt_triton_number((isv_datatype)99), 0);
}

/* The sizes, written out: the inline switch built from the table's size column. */
static void every_size_and_none_for_what_is_not_a_type(void **state) {
  (void)state;
  static const struct {
    isv_datatype dt;
    size_t size;
  } want[] = {{ISV_BOOL, 1}, {ISV_UINT8, 1}, {ISV_UINT16, 2}, {ISV_UINT32, 4}, {ISV_UINT64, 8},
              {ISV_INT8, 1}, {ISV_INT16, 2}, {ISV_INT32, 4}, {ISV_INT64, 8}, {ISV_FP16, 2},
              {ISV_BF16, 2}, {ISV_FP32, 4}, {ISV_FP64, 8}, {ISV_BYTES, sizeof(isv_bytes)}};
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
    assert_int_equal(isv__dt_size(want[i].dt), want[i].size);
    assert_int_equal(isv_datatype_size(want[i].dt), want[i].size);
  }
  assert_int_equal(isv__dt_size(ISV_TYPE_INVALID), 0);
  assert_int_equal(isv__dt_size((isv_datatype)(ISV_BYTES + 1)), 0);
  assert_int_equal(isv__dt_size((isv_datatype)-1), 0);
  assert_int_equal(isv_datatype_size((isv_datatype)1000), 0);
}

static void public_functions_are_the_v2_column(void **state) {
  (void)state;
  assert_int_equal(isv_datatype_size(ISV_BYTES), sizeof(isv_bytes));
  assert_int_equal(isv_datatype_size(ISV_BF16), 2);
  assert_int_equal(isv_datatype_size(ISV_TYPE_INVALID), 0);
  assert_string_equal(isv_datatype_name(ISV_UINT16), "UINT16");
  assert_int_equal(isv_datatype_from_name("INT64", 5), ISV_INT64);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(every_type_round_trips_in_every_column),
      cmocka_unit_test(names_as_each_protocol_spells_them),
      cmocka_unit_test(triton_config_numbers),
      cmocka_unit_test(grps_numbers),
      cmocka_unit_test(every_size_and_none_for_what_is_not_a_type),
      cmocka_unit_test(public_functions_are_the_v2_column),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
