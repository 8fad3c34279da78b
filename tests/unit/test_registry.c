#include "cmocka_prelude.h"

#include <stdio.h>
#include <string.h>

#include "core/registry.h"

static int destroyed;
static int noop_infer(isv_request *r, void *u) {
  (void)r;
  (void)u;
  return 0;
}
static void on_destroy(void *u) { destroyed += u == (void *)0x1 ? 1 : 100; }

static const isv_backend be = {.struct_size = sizeof(isv_backend), .infer = noop_infer, .destroy = on_destroy};

static isv_model_config *cfg(const char *name) {
  isv_model_config *c;
  isv_model_config_new(name, &c);
  int64_t s[] = {-1};
  assert_int_equal(isv_model_config_add_input(c, "x", ISV_FP32, s, 1), 0);
  assert_int_equal(isv_model_config_add_output(c, "y", ISV_FP32, s, 1), 0);
  return c;
}

static void config_rejects_bad_declarations(void **state) {
  (void)state;
  isv_model_config *c = cfg("m");
  int64_t bad[] = {-2};
  assert_int_equal(isv_model_config_add_input(c, "z", ISV_FP32, bad, 1), ISV_EINVAL);
  assert_int_equal(isv_model_config_add_input(c, "x", ISV_FP32, NULL, 0), ISV_EEXIST);
  assert_int_equal(isv_model_config_add_output(c, "x", ISV_FP32, NULL, 0), ISV_EEXIST);
  assert_int_equal(isv_model_config_add_input(c, "q", ISV_TYPE_INVALID, NULL, 0), ISV_EINVAL);
  assert_int_equal(isv_model_config_add_input(c, "", ISV_FP32, NULL, 0), ISV_EINVAL);
  isv_model_config *none = (isv_model_config *)1;
  assert_int_equal(isv_model_config_new("", &none), ISV_EINVAL);
  assert_null(none);
  assert_int_equal(isv_model_config_new(NULL, &none), ISV_EINVAL);
  assert_int_equal(isv_model_config_new("x", NULL), ISV_EINVAL);
  assert_int_equal(isv_model_config_set_exec_mode(c, (isv_exec_mode)7), ISV_EINVAL);
  int64_t dims[33];
  for (int i = 0; i < 33; i++) dims[i] = 1;
  assert_int_equal(isv_model_config_add_input(c, "d33", ISV_FP32, dims, 33), ISV_EINVAL);
  assert_int_equal(isv_model_config_add_input(c, "d32", ISV_FP32, dims, 32), 0); /* ISV__MAX_NDIM */
  isv_model_config_free(c);
}

static void versions_labels_default_and_removal(void **state) {
  (void)state;
  isv__registry r;
  assert_int_equal(isv__registry_init(&r, NULL, NULL), 0);
  isv_model_config *c = cfg("mv");
  isv_model *m1, *m2, *m10;
  assert_int_equal(isv__registry_add(&r, c, "1", &be, (void *)0x1, &m1), 0);
  assert_int_equal(isv__registry_add(&r, c, "10", &be, (void *)0x1, &m10), 0);
  assert_int_equal(isv__registry_add(&r, c, "2", &be, (void *)0x1, &m2), 0);
  assert_int_equal(isv__registry_add(&r, c, "2", &be, (void *)0x1, NULL), ISV_EEXIST);
  isv_model_config_free(c); /* the registry holds its own copy */

  isv__model_entry *e = isv__registry_entry(&r, "mv", 2);
  assert_non_null(e);
  /* numeric versions compare as numbers: 10 > 2 */
  assert_ptr_equal(isv__entry_default(e), m10);
  m10->state = ISV_MODEL_LOADING; /* the highest READY one wins */
  assert_ptr_equal(isv__entry_default(e), m2);
  assert_int_equal(isv__entry_set_default(e, "1"), 0);
  assert_ptr_equal(isv__entry_default(e), m1);

  assert_int_equal(isv__entry_set_label(e, "stable", "2"), 0);
  assert_ptr_equal(isv__entry_label(e, "stable", 6), m2);
  assert_int_equal(isv__entry_set_label(e, "stable", "1"), 0);
  assert_ptr_equal(isv__entry_label(e, "stable", 6), m1);
  assert_int_equal(isv__entry_set_label(e, "stable", NULL), 0);
  assert_null(isv__entry_label(e, "stable", 6));

  /* a version in use survives removal until its last reference goes */
  destroyed = 0;
  isv__model_ref(m2);
  assert_int_equal(isv__registry_remove(&r, "mv", "2"), 0);
  assert_int_equal(destroyed, 0);
  assert_true(m2->removed);
  isv__model_unref(m2);
  assert_int_equal(destroyed, 1);
  assert_int_equal(isv__registry_remove(&r, "mv", "2"), ISV_ENOTFOUND);
  assert_int_equal(isv__registry_remove(&r, "mv", NULL), 0);
  assert_int_equal(destroyed, 3);
  assert_null(isv__registry_entry(&r, "mv", 2));
  isv__registry_clear(&r);
}

static void many_models_grow_the_table(void **state) {
  (void)state;
  isv__registry r;
  isv__registry_init(&r, NULL, NULL);
  destroyed = 0;
  for (int i = 0; i < 500; i++) {
    char name[32];
    snprintf(name, sizeof name, "model_%d", i);
    isv_model_config *c = cfg(name);
    assert_int_equal(isv__registry_add(&r, c, "1", &be, (void *)0x1, NULL), 0);
    isv_model_config_free(c);
  }
  for (int i = 0; i < 500; i++) {
    char name[32];
    snprintf(name, sizeof name, "model_%d", i);
    assert_non_null(isv__registry_entry(&r, name, strlen(name)));
  }
  isv__registry_clear(&r);
  assert_int_equal(destroyed, 500);
}

static void backend_table_is_checked(void **state) {
  (void)state;
  isv__registry r;
  isv__registry_init(&r, NULL, NULL);
  isv_model_config *c = cfg("b");
  isv_backend small = {.struct_size = 4, .infer = noop_infer};
  isv_backend noinfer = {.struct_size = sizeof(isv_backend)};
  assert_int_equal(isv__registry_add(&r, c, "1", &small, NULL, NULL), ISV_EINVAL);
  assert_int_equal(isv__registry_add(&r, c, "1", &noinfer, NULL, NULL), ISV_EINVAL);
  assert_int_equal(isv__registry_add(&r, c, "a/b", &be, NULL, NULL), ISV_EINVAL);
  assert_int_equal(isv__registry_add(&r, c, "", &be, NULL, NULL), ISV_EINVAL);
  isv_model_config_free(c);
  isv__registry_clear(&r);
}

/* A signature may only name the model's own tensors (checked at registration, with the
 * reason), and the registered copy keeps it. */
static void signatures_are_checked_and_copied(void **state) {
  (void)state;
  isv__registry r;
  isv__registry_init(&r, NULL, NULL);
  isv_model_config *c = cfg("s");
  const char *bad[] = {"nope"}, *dup[] = {"a", "a"};
  assert_int_equal(isv_model_config_add_signature(c, "", ISV_SIGNATURE_PREDICT, NULL, NULL, 0,
                                                  NULL, NULL, 0), ISV_EINVAL);
  assert_int_equal(isv_model_config_add_signature(c, "d", ISV_SIGNATURE_PREDICT, dup, dup, 2, NULL,
                                                  NULL, 0), ISV_EINVAL); /* a duplicate alias */
  assert_int_equal(isv_model_config_add_signature(c, "bad", ISV_SIGNATURE_REGRESS, bad, NULL, 1,
                                                  NULL, NULL, 0), 0);
  char why[200] = "";
  assert_int_equal(isv__registry_check(c, "1", &be, why, sizeof why), ISV_EINVAL);
  assert_non_null(strstr(why, "signature 'bad' names input 'nope'"));
  isv_model_config_free(c);
  c = cfg("s");
  const char *in[] = {c->inputs[0].name}, *alias[] = {"renamed"};
  assert_int_equal(isv_model_config_add_signature(c, "ok", ISV_SIGNATURE_CLASSIFY, in, alias, 1,
                                                  NULL, NULL, 0), 0);
  isv_model *m;
  assert_int_equal(isv__registry_add(&r, c, "1", &be, NULL, &m), 0);
  isv_model_config_free(c);
  assert_int_equal(m->cfg->n_sigs, 1);
  assert_string_equal(m->cfg->sigs[0].name, "ok");
  assert_int_equal(m->cfg->sigs[0].method, ISV_SIGNATURE_CLASSIFY);
  assert_string_equal(m->cfg->sigs[0].in_aliases[0], "renamed");
  isv__registry_clear(&r);
}

static void version_order(void **state) {
  (void)state;
  assert_true(isv__version_cmp("2", "10") < 0);
  assert_true(isv__version_cmp("10", "10") == 0);
  assert_true(isv__version_cmp("9", "beta") < 0);
  assert_true(isv__version_cmp("alpha", "beta") < 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(config_rejects_bad_declarations),
      cmocka_unit_test(versions_labels_default_and_removal),
      cmocka_unit_test(many_models_grow_the_table),
      cmocka_unit_test(backend_table_is_checked),
      cmocka_unit_test(signatures_are_checked_and_copied),
      cmocka_unit_test(version_order),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
