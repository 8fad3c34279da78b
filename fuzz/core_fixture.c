/* See core_fixture.h. */
#include "core_fixture.h"
#include "core/lifecycle.h"

static uv_loop_t loop;
static isv__core core;
static isv_model *model, *model_one;

static int noop(isv_request *r, void *u) {
  (void)r;
  (void)u;
  return 0;
}

static void init(void) {
  uv_loop_init(&loop);
  isv_options o;
  isv__options_defaults(&o);
  isv__core_init(&core, &loop, &o);
  isv_model_config *c;
  isv_model_config_new("m", &c);
  int64_t any[] = {-1, -1};
  isv_model_config_add_input(c, "INPUT0", ISV_INT32, any, 2);
  isv_model_config_add_input(c, "INPUT1", ISV_BYTES, any, 1);
  isv_model_config_add_output(c, "OUTPUT0", ISV_FP32, any, 2);
  isv_backend be = {.struct_size = sizeof be, .infer = noop};
  isv__registry_add(&core.reg, c, "1", &be, NULL, &model);
  isv_model_config_free(c);
  isv_model_config_new("one", &c);
  isv_model_config_add_input(c, "x", ISV_BYTES, NULL, ISV_ANY_RANK);
  isv_model_config_add_output(c, "y", ISV_FP32, NULL, ISV_ANY_RANK);
  const char *x[] = {"x"}, *y[] = {"y"}, *in[] = {"in"}, *scores[] = {"scores"};
  isv_model_config_add_signature(c, "serving_default", ISV_SIGNATURE_PREDICT, x, NULL, 1, y, NULL,
                                 1);
  isv_model_config_add_signature(c, "c", ISV_SIGNATURE_CLASSIFY, x, in, 1, y, scores, 1);
  isv__registry_add(&core.reg, c, "1", &be, NULL, &model_one);
  isv_model_config_free(c);
}

static void ready(void) {
  static int done;
  if (!done) {
    init();
    done = 1;
  }
}

static isv_request *bound(isv_model **m) {
  ready();
  isv_request *r = isv__request_new(&core);
  isv__model_ref(*m);
  r->model = *m;
  return r;
}

isv_request *isv_fuzz_request_unbound(void) {
  ready();
  return isv__request_new(&core);
}

struct isv__core *isv_fuzz_core(void) {
  ready();
  return &core;
}

isv_request *isv_fuzz_request(void) { return bound(&model); }
isv_request *isv_fuzz_request_one(void) { return bound(&model_one); }
