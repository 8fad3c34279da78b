/* grpc.health.v1.Health/Check (protocol/health_grpc.c), called through its method table. */
#include "cmocka_prelude.h"

#include <string.h>

#include "protocol/builtin.h"
#include "core/lifecycle.h"

static uv_loop_t loop;
static isv__core core;
static isv__grpc_services services;

static int noop(isv_request *r, void *u) {
  (void)r;
  (void)u;
  return 0;
}

static int setup(void **state) {
  (void)state;
  uv_loop_init(&loop);
  isv_options o;
  isv__options_defaults(&o);
  assert_int_equal(isv__core_init(&core, &loop, &o), 0);
  isv__grpc_services_init(&services, &core);
  for (const isv__grpc_method *m = isv__v2_frontend.methods; m->path; m++)
    assert_int_equal(isv__grpc_services_add(&services, m, "v2_grpc"), 0);
  isv_model_config *c;
  isv_model_config_new("m", &c);
  isv_backend be = {.struct_size = sizeof be, .infer = noop};
  assert_int_equal(isv__registry_add(&core.reg, c, "1", &be, NULL, NULL), 0);
  isv_model_config_free(c);
  return 0;
}

static int teardown(void **state) {
  (void)state;
  isv__grpc_services_free(&services);
  isv__core_close(&core, NULL);
  uv_run(&loop, UV_RUN_DEFAULT);
  return uv_loop_close(&loop);
}

/* Run Check on a request message; returns the answer code, the response in out. */
static int check(const char *msg, size_t len, isv__buf *out, char *err) {
  const isv__grpc_method *m = isv__grpc_health_frontend.methods;
  assert_string_equal(m->path, "/grpc.health.v1.Health/Check");
  isv__grpc_unary u = {&core, &services, (const uint8_t *)msg, len, out, "", NULL};
  int rc = m->answer(&u);
  strcpy(err, u.err);
  return rc;
}

static void expect_status(const char *msg, size_t len, int serving) {
  isv__buf b;
  isv__buf_init(&b, NULL);
  char err[256];
  assert_int_equal(check(msg, len, &b, err), 0);
  assert_int_equal(b.len, 2);
  assert_memory_equal(b.data, serving ? "\x08\x01" : "\x08\x02", 2); /* SERVING / NOT_SERVING */
  isv__buf_free(&b);
}

static void server_service_and_models(void **state) {
  (void)state;
  expect_status("", 0, 1);                                            /* the server */
  expect_status("\x0a\x1e" "inference.GRPCInferenceService", 32, 1); /* a served service */
  expect_status("\x0a\x01m", 3, 1);                                   /* a model */
  assert_int_equal(isv__registry_entry(&core.reg, "m", 1)->versions->state, ISV_MODEL_READY);
  isv__registry_entry(&core.reg, "m", 1)->versions->state = ISV_MODEL_LOADING;
  expect_status("\x0a\x01m", 3, 0);
  expect_status("", 0, 1); /* the server stays ready (not strict) */
  isv__core_set_online(&core, 0);         /* offline: everything drains */
  expect_status("", 0, 0);
  expect_status("\x0a\x1e" "inference.GRPCInferenceService", 32, 0);
  isv__core_set_online(&core, 1);
}

static void unknown_and_malformed(void **state) {
  (void)state;
  isv__buf b;
  isv__buf_init(&b, NULL);
  char err[256];
  assert_int_equal(check("\x0a\x04nope", 6, &b, err), ISV_ENOTFOUND);
  assert_string_equal(err, "unknown service or model 'nope'");
  assert_int_equal(check("\x0a\x09" "abc", 5, &b, err), ISV_EBADREQ); /* truncated */
  assert_string_equal(err, "malformed HealthCheckRequest");
  char big[300] = "\x0a\xa0\x02";                                      /* a 288-byte name */
  memset(big + 3, 'x', 288);
  assert_int_equal(check(big, 291, &b, err), ISV_EBADREQ);
  isv__buf_free(&b);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(server_service_and_models, setup, teardown),
      cmocka_unit_test_setup_teardown(unknown_and_malformed, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
