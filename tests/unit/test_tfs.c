/* protocol/tfs.c: TF Serving's shared rules — which signature a name chooses (the implicit
 * serving_default of a model without signatures, a registered one by its exact name, none for
 * anything else), the tensors behind a signature's aliases, output aliases, method names and the
 * registry's states as TF Serving's names and numbers. */
#include "cmocka_prelude.h"

#include <string.h>

#include "protocol/tfs.h"

static isv_model_config *with_signatures(int sigs) {
  isv_model_config *c;
  assert_int_equal(isv_model_config_new("m", &c), 0);
  int64_t s[] = {-1};
  assert_int_equal(isv_model_config_add_input(c, "x", ISV_FP32, s, 1), 0);
  assert_int_equal(isv_model_config_add_input(c, "w", ISV_INT32, s, 1), 0);
  assert_int_equal(isv_model_config_add_output(c, "y", ISV_FP32, s, 1), 0);
  if (sigs) {
    static const char *const in[] = {"w"}, *const in_alias[] = {"weights"}, *const out[] = {"y"},
                             *const out_alias[] = {"scores"};
    assert_int_equal(isv_model_config_add_signature(c, "serving_default", ISV_SIGNATURE_PREDICT,
                                                    in, NULL, 1, out, NULL, 1), 0);
    assert_int_equal(isv_model_config_add_signature(c, "cls", ISV_SIGNATURE_CLASSIFY, in,
                                                    in_alias, 1, out, out_alias, 1), 0);
  }
  return c;
}

static void implicit_signature(void **state) {
  (void)state;
  isv_model_config *c = with_signatures(0);
  const isv__signature *sig = (const isv__signature *)1;
  assert_int_equal(isv__tfs_signature(c, NULL, 0, &sig), 1);
  assert_null(sig);
  assert_int_equal(isv__tfs_signature(c, "serving_default", 15, &sig), 1);
  assert_null(sig);
  assert_int_equal(isv__tfs_signature(c, "serving_defaul", 14, &sig), 0);
  assert_int_equal(isv__tfs_signature(c, "other", 5, &sig), 0);
  assert_int_equal(isv__tfs_sig_n_in(c, NULL), 2);
  assert_int_equal(isv__tfs_sig_n_out(c, NULL), 1);
  const char *alias;
  const isv__io *io = isv__tfs_sig_in(c, NULL, 1, &alias);
  assert_string_equal(io->name, "w");
  assert_string_equal(alias, "w");
  io = isv__tfs_sig_out(c, NULL, 0, &alias);
  assert_string_equal(alias, "y");
  assert_string_equal(isv__tfs_out_alias(NULL, "y"), "y");
  isv_model_config_free(c);
}

static void named_signatures(void **state) {
  (void)state;
  isv_model_config *c = with_signatures(1);
  const isv__signature *sig;
  assert_int_equal(isv__tfs_signature(c, NULL, 0, &sig), 1);
  assert_non_null(sig);
  assert_string_equal(sig->name, "serving_default");
  assert_int_equal(isv__tfs_signature(c, "cls", 3, &sig), 1);
  assert_string_equal(sig->name, "cls");
  assert_int_equal(isv__tfs_signature(c, "cl", 2, &sig), 0);
  assert_int_equal(isv__tfs_signature(c, "clsx", 4, &sig), 0);
  assert_int_equal(isv__tfs_signature(c, "cls", 3, &sig), 1);
  assert_int_equal(isv__tfs_sig_n_in(c, sig), 1);
  const char *alias;
  const isv__io *io = isv__tfs_sig_in(c, sig, 0, &alias);
  assert_string_equal(io->name, "w"); /* the model's tensor behind the alias */
  assert_int_equal(io->dt, ISV_INT32);
  assert_string_equal(alias, "weights");
  io = isv__tfs_sig_out(c, sig, 0, &alias);
  assert_string_equal(io->name, "y");
  assert_string_equal(alias, "scores");
  assert_string_equal(isv__tfs_out_alias(sig, "y"), "scores");
  assert_string_equal(isv__tfs_out_alias(sig, "z"), "z");
  assert_string_equal(isv__tfs_method_name(sig->method), "tensorflow/serving/classify");
  isv_model_config_free(c);
}

static void names_and_states(void **state) {
  (void)state;
  assert_string_equal(isv__tfs_method_name(ISV_SIGNATURE_PREDICT), "tensorflow/serving/predict");
  assert_string_equal(isv__tfs_method_name(ISV_SIGNATURE_REGRESS), "tensorflow/serving/regress");
  static const struct {
    isv_model_state st;
    const char *name;
    int number;
  } states[] = {{ISV_MODEL_UNKNOWN, "UNKNOWN", 0},       {ISV_MODEL_LOADING, "LOADING", 20},
                {ISV_MODEL_READY, "AVAILABLE", 30},      {ISV_MODEL_UNLOADING, "UNLOADING", 40},
                {ISV_MODEL_UNAVAILABLE, "END", 50}};
  for (size_t i = 0; i < sizeof states / sizeof states[0]; i++) {
    assert_string_equal(isv__tfs_state_name(states[i].st), states[i].name);
    assert_int_equal(isv__tfs_state_number(states[i].st), states[i].number);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(implicit_signature),
      cmocka_unit_test(named_signatures),
      cmocka_unit_test(names_and_states),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
