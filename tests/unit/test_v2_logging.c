/* protocol/v2_logging: Triton's logging extension — the JSON and protobuf changes applied whole
 * or not at all, every setting's type and range, the answers' shapes (the protobuf answer read
 * back with the request decoder: the same map), and the levels gating the host's log callback
 * (core/logset.h through isv__core_log). */
#include "cmocka_prelude.h"

#include <stdio.h>
#include <string.h>

#include "core/lifecycle.h"
#include "protocol/v2_logging.h"

static isv__log_view defaults(void) {
  isv__logset s;
  assert_int_equal(isv__logset_init(&s), 0);
  isv__log_view v;
  isv__logset_get(&s, &v);
  isv__logset_destroy(&s);
  return v;
}

static int json(isv__log_view *v, const char *text, char *err) {
  char body[512];
  snprintf(body, sizeof body, "%s", text);
  return isv__v2log_apply_json(v, body, strlen(body), 64, err, 256);
}

static void json_changes_apply_whole_or_not_at_all(void **state) {
  (void)state;
  char err[256];
  isv__log_view v = defaults();
  assert_true(v.info && v.warning && v.error);
  assert_int_equal(v.verbose, 0);
  assert_string_equal(v.file, "");
  assert_string_equal(v.format, "default");
  assert_int_equal(json(&v, "{\"log_info\":false,\"log_verbose_level\":3,\"log_format\":\"ISO8601\","
                            "\"log_file\":\"/tmp/x.log\"}", err), 0);
  assert_false(v.info);
  assert_true(v.warning);
  assert_int_equal(v.verbose, 3);
  assert_string_equal(v.format, "ISO8601");
  assert_string_equal(v.file, "/tmp/x.log");
  isv__log_view before = v;
  static const struct {
    const char *body, *names;
  } bad[] = {
      {"{\"log_error\":false,\"nope\":1}", "unknown log setting 'nope'"},
      {"{\"log_info\":1}", "'log_info' must be a boolean"},
      {"{\"log_verbose_level\":-1}", "'log_verbose_level' has a value of no setting's type"},
      {"{\"log_verbose_level\":4294967296}", "fit in 32 bits"},
      {"{\"log_format\":\"json\"}", "\"default\" or \"ISO8601\""},
      {"{\"log_file\":true}", "'log_file' must be a string"},
      {"[1]", "must be a JSON object"},
      {"{\"log_info\":true", "malformed log settings"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    assert_int_equal(json(&v, bad[i].body, err), -1);
    if (strstr(err, bad[i].names) == NULL) fail_msg("%s: %s", bad[i].body, err);
    assert_memory_equal(&v, &before, sizeof v); /* the first member was not applied either */
  }
  isv__buf b;
  isv__buf_init(&b, NULL);
  isv__v2log_write_json(&v, &b);
  isv__buf_putc(&b, '\0');
  assert_string_equal(b.data, "{\"log_file\":\"/tmp/x.log\",\"log_info\":false,\"log_warning\":true,"
                              "\"log_error\":true,\"log_verbose_level\":3,\"log_format\":\"ISO8601\"}");
  isv__buf_free(&b);
}

static void protobuf_changes_and_answers(void **state) {
  (void)state;
  char err[256];
  isv__log_view v = defaults(), w = defaults();
  w.error = 0;
  w.verbose = 7;
  snprintf(w.file, sizeof w.file, "server.log");
  isv__buf b;
  isv__buf_init(&b, NULL);
  isv__v2log_write_pb(&w, &b); /* a LogSettingsResponse has the request's shape */
  assert_int_equal(isv__v2log_apply_pb(&v, (const uint8_t *)b.data, b.len, err, sizeof err), 0);
  assert_memory_equal(&v, &w, sizeof v);
  isv__buf_free(&b);
  /* settings = {"log_info": SettingValue{uint32_param: 1}}: the wrong type */
  static const uint8_t wrong[] = {0x0a, 0x0e, 0x0a, 0x08, 'l', 'o', 'g', '_', 'i', 'n', 'f', 'o',
                                  0x12, 0x02, 0x10, 0x01};
  assert_int_equal(isv__v2log_apply_pb(&v, wrong, sizeof wrong, err, sizeof err), -1);
  assert_non_null(strstr(err, "'log_info' must be a boolean"));
  static const uint8_t truncated[] = {0x0a, 0x0e, 0x0a, 0x08, 'l', 'o'};
  assert_int_equal(isv__v2log_apply_pb(&v, truncated, sizeof truncated, err, sizeof err), -1);
  assert_non_null(strstr(err, "malformed LogSettingsRequest"));
  static const uint8_t no_value[] = {0x0a, 0x0a, 0x0a, 0x08, 'l', 'o', 'g', '_', 'i', 'n', 'f', 'o'};
  assert_int_equal(isv__v2log_apply_pb(&v, no_value, sizeof no_value, err, sizeof err), -1);
  assert_non_null(strstr(err, "has no value"));
  assert_memory_equal(&v, &w, sizeof v);
}

static int logged[4];
static void count_log(void *user, isv_log_level level, const char *msg) {
  (void)user;
  (void)msg;
  logged[level]++;
}

static void the_levels_gate_the_host_s_log(void **state) {
  (void)state;
  uv_loop_t loop;
  uv_loop_init(&loop);
  isv_options o;
  isv__options_defaults(&o);
  isv_options_set_log(&o, count_log, NULL);
  isv__core core;
  assert_int_equal(isv__core_init(&core, &loop, &o), 0);
  memset(logged, 0, sizeof logged);
  isv__core_log(&core, ISV_LOG_INFO, "i");
  isv__core_log(&core, ISV_LOG_WARN, "w");
  isv__log_view v;
  isv__logset_get(core.logset, &v);
  v.info = 0;
  v.error = 0;
  isv__logset_set(core.logset, &v);
  isv__core_log(&core, ISV_LOG_INFO, "i");
  isv__core_log(&core, ISV_LOG_WARN, "w");
  isv__core_log(&core, ISV_LOG_ERROR, "e");
  assert_int_equal(logged[ISV_LOG_INFO], 1);
  assert_int_equal(logged[ISV_LOG_WARN], 2);
  assert_int_equal(logged[ISV_LOG_ERROR], 0);
  isv__core_close(&core, NULL);
  uv_run(&loop, UV_RUN_DEFAULT);
  assert_int_equal(uv_loop_close(&loop), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(json_changes_apply_whole_or_not_at_all),
      cmocka_unit_test(protobuf_changes_and_answers),
      cmocka_unit_test(the_levels_gate_the_host_s_log),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
