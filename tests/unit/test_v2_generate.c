/* protocol/v2_generate.c: Triton's generate request → canonical request (inputs shaped from
 * the model's declaration, other keys as parameters, every refusal with its message) and the
 * response object (one element as a scalar, more as a flat array). */
#include "cmocka_prelude.h"

#include <string.h>

#include "core/request.h"
#include "protocol/v2_generate.h"
#include "core/lifecycle.h"

static uv_loop_t loop;
static isv__core core;

static int noop(isv_request *r, void *u) {
  (void)r;
  (void)u;
  return 0;
}

static void add(const char *name, uint32_t max_batch, const char *in, isv_datatype dt,
                const int64_t *shape, size_t ndim) {
  isv_model_config *c;
  assert_int_equal(isv_model_config_new(name, &c), 0);
  assert_int_equal(isv_model_config_set_max_batch(c, max_batch), 0);
  assert_int_equal(isv_model_config_add_input(c, in, dt, shape, ndim), 0);
  assert_int_equal(isv_model_config_add_output(c, "text_output", ISV_BYTES, shape, ndim), 0);
  isv_backend be = {.struct_size = sizeof be, .infer = noop};
  assert_int_equal(isv__registry_add(&core.reg, c, "1", &be, NULL, NULL), 0);
  isv_model_config_free(c);
}

static int setup(void **state) {
  (void)state;
  uv_loop_init(&loop);
  isv_options o;
  isv__options_defaults(&o);
  assert_int_equal(isv__core_init(&core, &loop, &o), 0);
  int64_t one[] = {1}, any[] = {-1}, grid[] = {2, -1}, two_free[] = {-1, -1};
  add("text", 0, "text_input", ISV_BYTES, one, 1);
  add("batched_text", 8, "text_input", ISV_BYTES, one, 1);
  add("vec", 0, "x", ISV_FP32, any, 1);
  add("grid", 0, "x", ISV_INT32, grid, 2);
  add("free2", 0, "x", ISV_INT32, two_free, 2);
  return 0;
}

static int teardown(void **state) {
  (void)state;
  isv__core_close(&core, NULL);
  uv_run(&loop, UV_RUN_DEFAULT);
  return uv_loop_close(&loop);
}

static char body[512];

/* A request for `model` decoded from `json`; *rc gets the decoder's result. */
static isv_request *decode(const char *model, const char *json, int *rc) {
  isv_request *r = isv__request_new(&core);
  r->model_name = model;
  assert_int_equal(isv__request_bind(r), 0);
  snprintf(body, sizeof body, "%s", json);
  *rc = isv__v2gen_decode_request(r, body, strlen(body), 64);
  return r;
}

static void shape_is(const isv_tensor *t, size_t ndim, int64_t a, int64_t b) {
  size_t nd;
  const int64_t *sh = isv_tensor_shape(t, &nd);
  assert_int_equal(nd, ndim);
  if (ndim > 0) assert_int_equal(sh[0], a);
  if (ndim > 1) assert_int_equal(sh[1], b);
}

static void text_and_parameters(void **state) {
  (void)state;
  int rc;
  isv_request *r = decode("text", "{\"text_input\":\"hi \\u00e9\",\"parameters\":{\"stream\":false,"
                                  "\"temperature\":0.5},\"max_tokens\":16,\"stop\":\"x\"}", &rc);
  assert_int_equal(rc, 0);
  const isv_tensor *t = isv_request_input(r, "text_input");
  assert_non_null(t);
  shape_is(t, 1, 1, 0);
  const isv_bytes *b = isv_tensor_data(t);
  assert_int_equal(b->len, 5);
  assert_memory_equal(b->ptr, "hi \xc3\xa9", 5);
  assert_int_equal(isv_request_param_count(r), 4);
  assert_int_equal(isv_request_param(r, "stream")->type, ISV_PARAM_BOOL);
  assert_true(isv_request_param(r, "temperature")->v.d == 0.5);
  assert_int_equal(isv_request_param(r, "max_tokens")->v.i64, 16);
  assert_int_equal(isv_request_param(r, "stop")->v.s.len, 1);
  isv_request_free(r);
  /* a batching model gets a batch dimension of one */
  r = decode("batched_text", "{\"text_input\":[\"a\"]}", &rc);
  assert_int_equal(rc, 0);
  shape_is(isv_request_input(r, "text_input"), 2, 1, 1);
  isv_request_free(r);
}

static void arrays_take_the_declared_shape(void **state) {
  (void)state;
  int rc;
  isv_request *r = decode("vec", "{\"x\":[1,2.5,-3]}", &rc);
  assert_int_equal(rc, 0);
  const isv_tensor *x = isv_request_input(r, "x");
  shape_is(x, 1, 3, 0);
  assert_true(((const float *)isv_tensor_data(x))[1] == 2.5f);
  isv_request_free(r);
  r = decode("grid", "{\"x\":[1,2,3,4,5,6]}", &rc); /* [2,-1]: 6 elements are [2,3] */
  assert_int_equal(rc, 0);
  shape_is(isv_request_input(r, "x"), 2, 2, 3);
  isv_request_free(r);
  r = decode("grid", "{\"x\":[1,2,3]}", &rc);
  assert_int_equal(rc, ISV_EBADREQ);
  assert_string_equal(isv_request_error_message(r), "'x' has 3 elements, which do not fill input "
                                                    "'x' of model 'grid' ([2,-1])");
  isv_request_free(r);
  r = decode("free2", "{\"x\":[1,2]}", &rc);
  assert_int_equal(rc, ISV_EBADREQ);
  assert_string_equal(isv_request_error_message(r), "'x' has 2 elements, which do not fill input "
                                                    "'x' of model 'free2' ([-1,-1])");
  isv_request_free(r);
}

static void refusals_name_the_problem(void **state) {
  (void)state;
  static const struct {
    const char *model, *json, *msg;
  } cases[] = {
      {"vec", "{\"x\":[[1],[2]]}", "'x' must be a string, a number, a bool or a flat array of them"},
      {"vec", "{\"x\":{\"b64\":\"aGk=\"}}", "'x' must be a string, a number, a bool or a flat "
                                             "array of them"},
      {"vec", "{\"x\":[1,\"a\"]}", NULL},
      {"vec", "{\"x\":[1],\"x\":[2]}", "input 'x' given twice"},
      {"vec", "{\"x\":[1],\"opts\":[1,2]}", "'opts' is neither an input of model 'vec' nor a "
                                             "parameter (a bool, a number or a string)"},
      {"vec", "{\"parameters\":[]}", "'parameters' must be an object"},
      {"vec", "[1]", "request body must be a JSON object"},
      {"vec", "", "empty request body: expected a JSON object"},
      {"vec", "{\"x\":[1]", NULL},
      {"text", "{\"text_input\":null}", "'text_input' must be a string, a number, a bool or a "
                                        "flat array of them"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    int rc;
    isv_request *r = decode(cases[i].model, cases[i].json, &rc);
    if (rc != ISV_EBADREQ) fail_msg("case %zu (%s): rc %d", i, cases[i].json, rc);
    if (cases[i].msg) assert_string_equal(isv_request_error_message(r), cases[i].msg);
    else assert_true(strlen(isv_request_error_message(r)) > 10);
    isv_request_free(r);
  }
  /* a BYTES element may be {"b64": ...} */
  int rc;
  isv_request *r = decode("text", "{\"text_input\":{\"b64\":\"aGk=\"}}", &rc);
  assert_int_equal(rc, 0);
  const isv_bytes *b = isv_tensor_data(isv_request_input(r, "text_input"));
  assert_int_equal(b->len, 2);
  assert_memory_equal(b->ptr, "hi", 2);
  isv_request_free(r);
}

static void the_response_object(void **state) {
  (void)state;
  int rc;
  isv_request *r = decode("text", "{\"text_input\":\"a\"}", &rc);
  int64_t one = 1, three = 3;
  isv_bytes word = {"out \"put\"", 9};
  assert_int_equal(isv_request_set_output(r, "text_output", ISV_BYTES, &one, 1, &word, 0,
                                          ISV_TRANSIENT),
                   0);
  isv__buf b;
  isv__buf_init(&b, NULL);
  assert_int_equal(isv__v2gen_encode_response(r, &b), 0);
  isv__buf_putc(&b, '\0');
  assert_string_equal(b.data, "{\"model_name\":\"text\",\"model_version\":\"1\","
                              "\"text_output\":\"out \\\"put\\\"\"}");
  isv__buf_free(&b);
  isv_request_free(r);
  r = decode("vec", "{\"x\":[1,2,3]}", &rc);
  isv_bytes words[3] = {{"a", 1}, {"b", 1}, {"c", 1}};
  assert_int_equal(isv_request_set_output(r, "text_output", ISV_BYTES, &three, 1, words, 0,
                                          ISV_TRANSIENT),
                   0);
  isv__buf_init(&b, NULL);
  isv__v2gen_encode_response(r, &b);
  isv__buf_putc(&b, '\0');
  assert_non_null(strstr(b.data, "\"text_output\":[\"a\",\"b\",\"c\"]}"));
  isv__buf_free(&b);
  isv_request_free(r);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(text_and_parameters, setup, teardown),
      cmocka_unit_test_setup_teardown(arrays_take_the_declared_shape, setup, teardown),
      cmocka_unit_test_setup_teardown(refusals_name_the_problem, setup, teardown),
      cmocka_unit_test_setup_teardown(the_response_object, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
