/* protocol/reflection.c over the generated descriptors (descriptors.h): the tables as the
 * generator promised them (sorted, each file's bytes a FileDescriptorProto of its name), and
 * what a server shows — only the files of the services it serves, symbols of every kind. */
#include "cmocka_prelude.h"

#include <string.h>

#include "codec/pbwire.h"
#include "core/lifecycle.h"
#include "protocol/builtin.h"
#include "protocol/reflection.h"

static uv_loop_t loop;
static isv__core core;
static isv__grpc_services services;

static int setup(void **state) {
  (void)state;
  uv_loop_init(&loop);
  isv_options o;
  isv__options_defaults(&o);
  assert_int_equal(isv__core_init(&core, &loop, &o), 0);
  isv__grpc_services_init(&services, &core);
  /* V2 and reflection only: grps and health are off */
  for (const isv__grpc_method *m = isv__v2_frontend.methods; m->path; m++)
    assert_int_equal(isv__grpc_services_add(&services, m, "v2_grpc"), 0);
  for (const isv__grpc_method *m = isv__grpc_reflection_frontend.methods; m->path; m++)
    assert_int_equal(isv__grpc_services_add(&services, m, "grpc_reflection"), 0);
  return 0;
}

static int teardown(void **state) {
  (void)state;
  isv__grpc_services_free(&services);
  isv__core_close(&core, NULL);
  uv_run(&loop, UV_RUN_DEFAULT);
  return uv_loop_close(&loop);
}

static int file_index(const char *name) {
  for (size_t f = 0; f < isv__pb_n_files; f++)
    if (strcmp(isv__pb_files[f].name, name) == 0) return (int)f;
  return -1;
}

static void the_generated_tables(void **state) {
  (void)state;
  assert_true(isv__pb_n_files >= 5 && isv__pb_n_files <= 64);
  for (size_t f = 0; f < isv__pb_n_files; f++) { /* FileDescriptorProto.name (1) is its name */
    isv__pb_reader r = isv__pb_reader_of((isv__pb_span){isv__pb_files[f].data,
                                                        isv__pb_files[f].len});
    isv__pb_field fld;
    int found = 0;
    while (isv__pb_read_field(&r, &fld) == 1)
      if (fld.num == 1 && fld.wt == ISV__PB_LEN) {
        assert_int_equal(fld.s.n, strlen(isv__pb_files[f].name));
        assert_memory_equal(fld.s.p, isv__pb_files[f].name, fld.s.n);
        found = 1;
      }
    assert_true(found);
    for (size_t k = 0; k < isv__pb_files[f].n_deps; k++)
      assert_true(isv__pb_files[f].deps[k] < isv__pb_n_files);
  }
  for (size_t i = 1; i < isv__pb_n_symbols; i++) /* sorted and unique: bsearch works */
    assert_true(strcmp(isv__pb_symbols[i - 1].name, isv__pb_symbols[i].name) < 0);
  for (size_t i = 0; i < isv__pb_n_symbols; i++) assert_true(isv__pb_symbols[i].file < isv__pb_n_files);
}

static void only_what_is_served_shows(void **state) {
  (void)state;
  uint64_t shown = isv__reflection_visible(&services);
  int v2 = file_index("grpc_predict_v2.proto"), health = file_index("health.proto");
  int grps = file_index("grps.proto"), r1 = file_index("reflection.proto");
  int r1a = file_index("reflection_v1alpha.proto");
  assert_true(v2 >= 0 && health >= 0 && grps >= 0 && r1 >= 0 && r1a >= 0);
  assert_true(shown >> v2 & 1);
  assert_true(shown >> r1 & 1);
  assert_true(shown >> r1a & 1);
  assert_false(shown >> health & 1);
  assert_false(shown >> grps & 1);
  assert_int_equal(isv__reflection_file(shown, "grpc_predict_v2.proto"), v2);
  assert_int_equal(isv__reflection_file(shown, "grps.proto"), -1); /* its front end is off */
  assert_int_equal(isv__reflection_file(shown, "nope.proto"), -1);
  const struct {
    const char *symbol;
    int file;
  } cases[] = {
      {"inference.GRPCInferenceService", v2},                      /* a service */
      {"inference.GRPCInferenceService.ModelInfer", v2},           /* a method */
      {"inference.ModelInferRequest", v2},                         /* a message */
      {"inference.ModelInferRequest.InferInputTensor", v2},        /* nested */
      {"inference.ModelInferRequest.model_name", v2},              /* a field */
      {"inference.InferParameter.parameter_choice", v2},           /* a oneof */
      {"grpc.reflection.v1alpha.ServerReflectionRequest", r1a},
      {"grpc.reflection.v1.ServerReflection.ServerReflectionInfo", r1},
      {"grpc.health.v1.Health", -1},              /* not served */
      {"grpc.health.v1.HealthCheckRequest", -1},  /* its file does not show */
      {"grps.protos.v1.GrpsService.Predict", -1},
      {"inference", -1},                          /* a package is no symbol */
      {"inference.GRPCInferenceService.Nope", -1},
      {"", -1},
      {"zzz", -1},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    int got = isv__reflection_symbol(&services, shown, cases[i].symbol, NULL);
    if (got != cases[i].file) fail_msg("%s: %d, not %d", cases[i].symbol, got, cases[i].file);
  }
  for (const isv__grpc_method *m = isv__grpc_health_frontend.methods; m->path; m++)
    assert_int_equal(isv__grpc_services_add(&services, m, "grpc_health"), 0);
  shown = isv__reflection_visible(&services); /* health turned on: its file shows */
  isv__pb_kind kind;
  assert_int_equal(
      isv__reflection_symbol(&services, shown, "grpc.health.v1.Health.Watch", &kind), health);
  assert_int_equal(kind, ISV__PB_METHOD);
  assert_int_equal(isv__reflection_symbol(&services, shown,
                                          "grpc.health.v1.HealthCheckResponse.ServingStatus", &kind),
                   health);
  assert_int_equal(kind, ISV__PB_ENUM);
  assert_int_equal(
      isv__reflection_symbol(&services, shown, "grpc.health.v1.HealthCheckResponse.SERVING", &kind),
      health);
  assert_int_equal(kind, ISV__PB_ENUM_VALUE);
  assert_int_equal(isv__reflection_symbol(&services, shown, "grpc.health.v1.Health", &kind), health);
  assert_int_equal(kind, ISV__PB_SERVICE);
  assert_int_equal(
      isv__reflection_symbol(&services, shown, "inference.ModelInferRequest.InferInputTensor", &kind),
      v2);
  assert_int_equal(kind, ISV__PB_MESSAGE);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(the_generated_tables, setup, teardown),
      cmocka_unit_test_setup_teardown(only_what_is_served_shows, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
