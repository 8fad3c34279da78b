/* core/core.c: the queries every front end asks — readiness, resolution by name, version or
 * label, binding a request with the one order of errors — and the protocol labels. */
#include "cmocka_prelude.h"

#include <string.h>

#include "core/request.h"
#include "core/resolve.h"
#include "core/lifecycle.h"

static uv_loop_t loop;
static isv__core core;
static isv_model *v1, *v2, *v10;

static int noop(isv_request *r, void *u) {
  (void)u;
  return isv_request_complete(r, 0, NULL);
}

static int setup(void **state) {
  (void)state;
  uv_loop_init(&loop);
  isv_options o;
  isv__options_defaults(&o);
  assert_int_equal(isv__core_init(&core, &loop, &o), 0);
  isv_model_config *c;
  isv_model_config_new("mv", &c);
  isv_backend be = {.struct_size = sizeof be, .infer = noop};
  assert_int_equal(isv__registry_add(&core.reg, c, "1", &be, NULL, &v1), 0);
  assert_int_equal(isv__registry_add(&core.reg, c, "2", &be, NULL, &v2), 0);
  assert_int_equal(isv__registry_add(&core.reg, c, "10", &be, NULL, &v10), 0);
  isv_model_config_free(c);
  assert_int_equal(isv__entry_set_label(isv__registry_entry(&core.reg, "mv", 2), "stable", "2"), 0);
  return 0;
}

static int teardown(void **state) {
  (void)state;
  isv__core_close(&core, NULL);
  uv_run(&loop, UV_RUN_DEFAULT);
  return uv_loop_close(&loop);
}

/* Resolve (name, version, label): ISV_E* code 0, or the code and KServe's words for why not. */
static int resolve(const char *name, const char *version, const char *label, isv_model **m,
                   char *msg) {
  isv__model_spec s = {name, strlen(name), version, version ? strlen(version) : 0, label,
                       label ? strlen(label) : 0};
  isv__why why = isv__core_resolve(&core, &s, m);
  return why == ISV__FOUND ? 0 : isv__why_say(why, ISV__WORDS_KSERVE, &s, msg, 256);
}

static void resolves_by_version_label_or_default(void **state) {
  (void)state;
  isv_model *m;
  char msg[256];
  assert_int_equal(resolve("mv", NULL, NULL, &m, msg), 0);
  assert_ptr_equal(m, v10); /* numeric order */
  assert_int_equal(resolve("mv", "1", NULL, &m, msg), 0);
  assert_ptr_equal(m, v1);
  assert_int_equal(resolve("mv", NULL, "stable", &m, msg), 0);
  assert_ptr_equal(m, v2);
  /* the name is length-delimited (it may point into a path) */
  isv__model_spec s = {"mvX", 2, "10/infer", 2, NULL, 0};
  assert_int_equal(isv__core_resolve(&core, &s, &m), ISV__FOUND);
  assert_ptr_equal(m, v10);
}

static void every_miss_is_named(void **state) {
  (void)state;
  isv_model *m;
  char msg[256];
  assert_int_equal(resolve("nope", NULL, NULL, &m, msg), ISV_ENOTFOUND);
  assert_string_equal(msg, "Request for unknown model: 'nope' is not found");
  assert_int_equal(resolve("mv", "7", NULL, &m, msg), ISV_ENOTFOUND);
  assert_string_equal(msg, "Request for unknown model: 'mv' version 7 is not found");
  assert_int_equal(resolve("mv", NULL, "canary", &m, msg), ISV_ENOTFOUND);
  assert_string_equal(msg, "unknown label 'canary' of model 'mv'");
}

static void readiness_rules(void **state) {
  (void)state;
  assert_true(isv__core_ready(&core));
  assert_true(isv__core_model_ready(&core, v1));
  v1->state = ISV_MODEL_LOADING;
  assert_false(isv__core_model_ready(&core, v1));
  assert_true(isv__core_ready(&core)); /* not strict: the server stays ready */
  core.opts.strict_readiness = 1;
  assert_false(isv__core_ready(&core));
  core.opts.strict_readiness = 0;
  v1->state = ISV_MODEL_READY;
  isv__core_set_online(&core, 0); /* offline drains: nothing is reported ready */
  assert_false(isv__core_ready(&core));
  assert_false(isv__core_model_ready(&core, v2));
  isv__core_set_online(&core, 1);
  core.closing = 1;
  assert_false(isv__core_ready(&core));
  assert_false(isv__core_model_ready(&core, v2));
  core.closing = 0;
}

static int done_status;
static char done_msg[256];
static void on_done(isv_request *r, int status, void *data) {
  (void)data;
  done_status = status;
  strcpy(done_msg, isv_request_error_message(r));
}

/* Submit a request for (name, version) that already carries decode error `err` (0: none). */
static void submit(const char *name, const char *version, int err, int ready) {
  isv_request *r = isv__request_new(&core);
  r->model_name = name;
  r->version = version;
  if (err) isv__request_fail(r, err, "the body is broken");
  v10->state = ready ? ISV_MODEL_READY : ISV_MODEL_LOADING;
  done_status = 1;
  isv__core_submit(&core, r, on_done, NULL);
  assert_int_not_equal(done_status, 1); /* inline: done already */
  isv_request_free(r);
  v10->state = ISV_MODEL_READY;
}

/* One order for every protocol: unknown model, then the decode error, then not ready. */
static void errors_come_in_one_order(void **state) {
  (void)state;
  submit("nope", NULL, ISV_EBADREQ, 0);
  assert_int_equal(done_status, ISV_ENOTFOUND);
  assert_string_equal(done_msg, "Request for unknown model: 'nope' is not found");
  submit("mv", "99", ISV_EBADREQ, 1);
  assert_int_equal(done_status, ISV_ENOTFOUND);
  submit("mv", "10", ISV_EBADREQ, 0);
  assert_int_equal(done_status, ISV_EBADREQ);
  assert_string_equal(done_msg, "the body is broken");
  submit("mv", "10", 0, 0);
  assert_int_equal(done_status, ISV_EUNAVAIL);
  assert_non_null(strstr(done_msg, "is not ready"));
  submit("", NULL, 0, 1);
  assert_int_equal(done_status, ISV_EBADREQ);
  assert_string_equal(done_msg, "the request names no model");
  submit("", NULL, ISV_EMEDIATYPE, 1); /* nothing to resolve: the decode error stands */
  assert_int_equal(done_status, ISV_EMEDIATYPE);
}

static void protocol_labels(void **state) {
  (void)state;
  assert_string_equal(core.protocols[0], "inprocess");
  unsigned a = isv__core_protocol(&core, "a"), b = isv__core_protocol(&core, "b");
  assert_true(a >= 1 && b == a + 1);
  assert_int_equal(isv__core_protocol(&core, "a"), a);
  static char names[ISV__MAX_PROTOCOLS][8];
  for (int i = 0; i < ISV__MAX_PROTOCOLS; i++) {
    names[i][0] = 'p';
    names[i][1] = (char)('a' + i);
    isv__core_protocol(&core, names[i]);
  }
  assert_int_equal(core.n_protocols, ISV__MAX_PROTOCOLS);
  assert_int_equal(isv__core_protocol(&core, "one-too-many"), 0); /* counted as inprocess */
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(resolves_by_version_label_or_default, setup, teardown),
      cmocka_unit_test_setup_teardown(every_miss_is_named, setup, teardown),
      cmocka_unit_test_setup_teardown(readiness_rules, setup, teardown),
      cmocka_unit_test_setup_teardown(errors_come_in_one_order, setup, teardown),
      cmocka_unit_test_setup_teardown(protocol_labels, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
