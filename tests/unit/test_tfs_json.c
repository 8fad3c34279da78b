/* protocol/tfs_json.c: TF Serving's predict body in both formats (row "instances", columnar
 * "inputs") into the canonical request — shapes from nested lists, named and bare instances,
 * {"b64"} strings, NaN — every refusal with its message; and the answers in both formats
 * (one output bare, several by name, "_bytes" outputs as {"b64"}). */
#include "cmocka_prelude.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/request.h"
#include "protocol/tfs_json.h"
#include "core/lifecycle.h"

static int noop(isv_request *r, void *u) {
  (void)r;
  (void)u;
  return 0;
}

typedef struct fixture {
  uv_loop_t loop;
  isv__core core;
  isv_model *one;  /* x FP32 [-1] (max_batch 0): any list */
  isv_model *two;  /* max_batch 8: a INT32 [2], s BYTES [-1] */
  isv_model *text; /* t BYTES [-1] */
  isv_model *sigs; /* hp3: x FP32 [-1] -> y FP32 [-1]; signatures "serving_default" (x -> y),
                    * "reg" (regress: x -> outputs=y), "cls" (classify: in=x -> scores=y) */
} fixture;

static isv_model *reg(fixture *f, isv_model_config *c) {
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
  isv_model_config *c;
  int64_t any[] = {-1}, two[] = {2};
  isv_model_config_new("one", &c);
  isv_model_config_add_input(c, "x", ISV_FP32, NULL, ISV_ANY_RANK);
  isv_model_config_add_output(c, "y", ISV_FP32, NULL, ISV_ANY_RANK);
  f->one = reg(f, c);
  isv_model_config_new("two", &c);
  isv_model_config_set_max_batch(c, 8);
  isv_model_config_add_input(c, "a", ISV_INT32, two, 1);
  isv_model_config_add_input(c, "s", ISV_BYTES, any, 1);
  isv_model_config_add_output(c, "o", ISV_INT32, two, 1);
  f->two = reg(f, c);
  isv_model_config_new("text", &c);
  isv_model_config_add_input(c, "t", ISV_BYTES, any, 1);
  isv_model_config_add_output(c, "u", ISV_BYTES, any, 1);
  f->text = reg(f, c);
  isv_model_config_new("hp3", &c);
  isv_model_config_add_input(c, "x", ISV_FP32, any, 1);
  isv_model_config_add_output(c, "y", ISV_FP32, any, 1);
  const char *x[] = {"x"}, *y[] = {"y"}, *in[] = {"in"}, *outputs[] = {"outputs"},
             *scores[] = {"scores"};
  assert_int_equal(isv_model_config_add_signature(c, "serving_default", ISV_SIGNATURE_PREDICT, x,
                                                  NULL, 1, y, NULL, 1), 0);
  assert_int_equal(isv_model_config_add_signature(c, "reg", ISV_SIGNATURE_REGRESS, x, NULL, 1, y,
                                                  outputs, 1), 0);
  assert_int_equal(isv_model_config_add_signature(c, "cls", ISV_SIGNATURE_CLASSIFY, x, in, 1, y,
                                                  scores, 1), 0);
  assert_int_equal(isv_model_config_add_signature(c, "cls", ISV_SIGNATURE_CLASSIFY, x, in, 1, y,
                                                  scores, 1), ISV_EEXIST);
  f->sigs = reg(f, c);
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

/* Decode text for model m (flags: isv__tfs_decode_predict's, or EXAMPLES for a classify or
 * regress body); the body copy is given to the request (strings point into it). */
#define EXAMPLES 0x100u
#define REGRESS 0x200u /* with EXAMPLES: a regress body (else classify) */
static const isv__signature *last_sig; /* what the last decode chose */
static isv_request *decode_as(fixture *f, isv_model *m, const char *text, unsigned flags, int *row) {
  isv_request *r = isv__request_new(&f->core);
  isv__model_ref(m);
  r->model = m;
  size_t n = strlen(text);
  char *body = isv__malloc(NULL, n + 1);
  memcpy(body, text, n + 1);
  r->body = body;
  r->body_len = n;
  r->body_free = isv__free;
  int rr = -1;
  const isv__signature *sig;
  if (flags & EXAMPLES)
    isv__tfs_decode_examples(r, body, n, 64, flags & REGRESS ? ISV_SIGNATURE_REGRESS
                                                             : ISV_SIGNATURE_CLASSIFY, &sig);
  else isv__tfs_decode_predict(r, body, n, 64, flags, &rr, &sig);
  if (row) *row = rr;
  last_sig = sig;
  return r;
}

static isv_request *decode(fixture *f, isv_model *m, const char *text, int *row) {
  return decode_as(f, m, text, 0, row);
}

static void expect_error(fixture *f, isv_model *m, const char *text, const char *needle) {
  isv_request *r = decode(f, m, text, NULL);
  assert_int_equal(r->status, ISV_EBADREQ);
  if (strstr(r->errmsg, needle) == NULL) fail_msg("'%s' does not say '%s'", r->errmsg, needle);
  isv_request_free(r);
}

static void rows_of_one_input_stack_on_dimension_0(void **state) {
  fixture *f = *state;
  int row;
  isv_request *r = decode(f, f->one, "{\"instances\": [[1, 2.5], [3, NaN], [-Infinity, 6]]}", &row);
  assert_int_equal(r->status, 0);
  assert_int_equal(row, 1);
  assert_int_equal(r->n_inputs, 1);
  const isv_tensor *x = &r->inputs[0];
  assert_string_equal(x->name, "x");
  assert_int_equal(x->ndim, 2);
  assert_int_equal(x->shape[0], 3);
  assert_int_equal(x->shape[1], 2);
  const float *v = x->data;
  assert_true(v[0] == 1 && v[1] == 2.5f && v[2] == 3 && isnan(v[3]) && isinf(v[4]) && v[4] < 0 &&
              v[5] == 6);
  isv_request_free(r);
  /* scalars per instance: shape [n] */
  r = decode(f, f->one, "{\"signature_name\": \"serving_default\", \"instances\": [7, 8]}", &row);
  assert_int_equal(r->status, 0);
  assert_int_equal(r->inputs[0].ndim, 1);
  assert_int_equal(r->inputs[0].shape[0], 2);
  isv_request_free(r);
  /* {"x": value} is the same instance by name */
  r = decode(f, f->one, "{\"instances\": [{\"x\": [1, 2]}, {\"x\": [3, 4]}]}", &row);
  assert_int_equal(r->status, 0);
  assert_int_equal(r->inputs[0].shape[0], 2);
  assert_int_equal(r->inputs[0].shape[1], 2);
  isv_request_free(r);
}

static void named_instances_fill_every_input(void **state) {
  fixture *f = *state;
  int row;
  isv_request *r = decode(f, f->two,
                          "{\"instances\": [{\"s\": [\"p\\u00e9\", {\"b64\": \"AAE=\"}], \"a\": [1, 2]},"
                          " {\"a\": [3, 4], \"s\": [\"\", \"q\"]}]}",
                          &row);
  assert_int_equal(r->status, 0);
  assert_int_equal(r->n_inputs, 2);
  const isv_tensor *a = &r->inputs[0], *s = &r->inputs[1];
  assert_string_equal(a->name, "a");
  assert_int_equal(a->shape[0], 2);
  assert_int_equal(a->shape[1], 2);
  const int32_t *av = a->data;
  assert_true(av[0] == 1 && av[1] == 2 && av[2] == 3 && av[3] == 4);
  assert_int_equal(s->dt, ISV_BYTES);
  assert_int_equal(s->count, 4);
  const isv_bytes *sv = s->data;
  assert_int_equal(sv[0].len, 3);
  assert_memory_equal(sv[0].ptr, "p\xc3\xa9", 3);
  assert_int_equal(sv[1].len, 2);
  assert_memory_equal(sv[1].ptr, "\x00\x01", 2);
  assert_int_equal(sv[2].len, 0);
  assert_int_equal(s->byte_size, 3 + 2 + 0 + 1);
  isv_request_free(r);
}

static void columnar_inputs_keep_their_own_shape(void **state) {
  fixture *f = *state;
  int row;
  isv_request *r = decode(f, f->one, "{\"inputs\": [[[1], [2]], [[3], [4]]]}", &row);
  assert_int_equal(r->status, 0);
  assert_int_equal(row, 0);
  assert_int_equal(r->inputs[0].ndim, 3);
  assert_int_equal(r->inputs[0].count, 4);
  isv_request_free(r);
  r = decode(f, f->two, "{\"inputs\": {\"a\": [[5, 6]], \"s\": [\"z\"]}}", &row);
  assert_int_equal(r->status, 0);
  assert_int_equal(r->inputs[0].shape[0], 1);
  assert_int_equal(r->inputs[1].ndim, 1);
  isv_request_free(r);
  /* a bare binary value for a one-input BYTES model */
  r = decode(f, f->text, "{\"inputs\": {\"b64\": \"aGk=\"}}", &row);
  assert_int_equal(r->status, 0);
  assert_int_equal(r->inputs[0].ndim, 0);
  assert_int_equal(((const isv_bytes *)r->inputs[0].data)[0].len, 2);
  isv_request_free(r);
}

static void every_refusal_names_its_problem(void **state) {
  fixture *f = *state;
  expect_error(f, f->one, "[1]", "JSON object");
  expect_error(f, f->one, "{}", "Missing 'inputs' or 'instances' key"); /* TF Serving's text */
  expect_error(f, f->one, "{\"instances\": [1], \"inputs\": [1]}", "both");
  expect_error(f, f->one, "{\"instances\": []}", "empty list");
  expect_error(f, f->one, "{\"instances\": {\"x\": 1}}", "must be a list");
  expect_error(f, f->one, "{\"instances\": [[1, 2], [3]]}", "instances[1]: ragged");
  expect_error(f, f->one, "{\"instances\": [[1, 2], [3, [4]]]}", "instances[1]: ragged");
  expect_error(f, f->one, "{\"instances\": [[[1]], [[1, 2]]]}", "instances[1]: ragged");
  expect_error(f, f->one, "{\"instances\": [1, \"a\"]}", "instances[1]");
  expect_error(f, f->one, "{\"instances\": [1], \"signature_name\": \"other\"}",
               "Serving signature name: \"other\" not found");
  expect_error(f, f->two, "{\"instances\": [[1, 2]]}", "each instance is an object");
  expect_error(f, f->two, "{\"instances\": [{\"a\": [1, 2]}]}", "input 's': missing");
  expect_error(f, f->two, "{\"instances\": [{\"a\": [1, 2], \"s\": [\"\"], \"z\": 1}]}",
               "input 'z': the model has no input");
  expect_error(f, f->two, "{\"instances\": [{\"a\": [1, 2], \"a\": [1, 2], \"s\": []}]}",
               "given twice");
  expect_error(f, f->two, "{\"instances\": [{\"a\": [1, 2.5], \"s\": [\"\"]}]}", "instances[0]");
  expect_error(f, f->text, "{\"instances\": [{\"b64\": \"!!\"}]}", "invalid base64");
  expect_error(f, f->one, "{\"instances\": [{\"b64\": \"AA==\"}]}", "an object where a FP32");
  expect_error(f, f->one, "{\"instances\": [1,]}", "trailing comma");
}

/* Vertex AI: instances as TF's row format; "parameters" members and other keys become request
 * parameters (objects and arrays as their JSON text); "inputs" is refused. */
static void vertex_bodies_carry_parameters(void **state) {
  fixture *f = *state;
  int row;
  isv_request *r = decode_as(f, f->one,
                             "{\"parameters\": {\"top_k\": 3, \"t\": 0.5, \"on\": true, \"none\": "
                             "null}, \"instances\": [[1, NaN]], \"extra\": {\"a\": [1, 2]}, "
                             "\"tag\": \"x\"}",
                             ISV__TFS_VERTEX, &row);
  assert_int_equal(r->status, 0);
  assert_int_equal(row, 1);
  assert_int_equal(r->inputs[0].shape[0], 1);
  const isv_param *p = isv_request_param(r, "top_k");
  assert_non_null(p);
  assert_int_equal(p->type, ISV_PARAM_INT64);
  assert_int_equal(p->v.i64, 3);
  p = isv_request_param(r, "t");
  assert_true(p && p->type == ISV_PARAM_DOUBLE && p->v.d == 0.5);
  p = isv_request_param(r, "on");
  assert_true(p && p->type == ISV_PARAM_BOOL && p->v.b);
  assert_null(isv_request_param(r, "none"));
  p = isv_request_param(r, "extra");
  assert_true(p && p->type == ISV_PARAM_STRING);
  assert_int_equal(p->v.s.len, strlen("{\"a\": [1, 2]}"));
  assert_memory_equal(p->v.s.ptr, "{\"a\": [1, 2]}", p->v.s.len);
  p = isv_request_param(r, "tag");
  assert_true(p && p->type == ISV_PARAM_STRING && p->v.s.len == 1);
  isv_request_free(r);
  r = decode_as(f, f->one, "{\"inputs\": [1]}", ISV__TFS_VERTEX, &row);
  assert_int_equal(r->status, ISV_EBADREQ);
  assert_non_null(strstr(r->errmsg, "takes \"instances\""));
  isv_request_free(r);
  r = decode_as(f, f->one, "{\"parameters\": [1], \"instances\": [1]}", ISV__TFS_VERTEX, &row);
  assert_int_equal(r->status, ISV_EBADREQ);
  assert_non_null(strstr(r->errmsg, "\"parameters\" must be an object"));
  isv_request_free(r);
  r = decode_as(f, f->one, "{\"parameters\": {}}", ISV__TFS_VERTEX, &row);
  assert_int_equal(r->status, ISV_EBADREQ);
  assert_non_null(strstr(r->errmsg, "no \"instances\""));
  isv_request_free(r);
}

/* Classify and regress bodies: examples of features by input name, the context merged in. */
static isv_request *decode_examples(fixture *f, isv_model *m, const char *text) {
  return decode_as(f, m, text, EXAMPLES, NULL);
}

static void examples_stack_features_with_the_context_merged(void **state) {
  fixture *f = *state;
  isv_request *r = decode_examples(f, f->two,
                                   "{\"context\": {\"s\": [\"c\"]}, \"examples\": [{\"a\": [1, 2]}, "
                                   "{\"s\": [\"own\"], \"a\": [3, 4]}, {\"a\": [5, 6]}]}");
  assert_int_equal(r->status, 0);
  const isv_tensor *a = &r->inputs[0], *s = &r->inputs[1];
  assert_int_equal(a->shape[0], 3);
  assert_int_equal(a->shape[1], 2);
  assert_int_equal(((const int32_t *)a->data)[5], 6);
  assert_int_equal(s->shape[0], 3);
  assert_int_equal(s->shape[1], 1);
  const isv_bytes *sv = s->data;
  assert_true(sv[0].len == 1 && sv[0].ptr[0] == 'c');          /* from the context */
  assert_true(sv[1].len == 3 && memcmp(sv[1].ptr, "own", 3) == 0); /* its own wins */
  assert_true(sv[2].len == 1 && sv[2].ptr[0] == 'c');
  isv_request_free(r);
  static const struct {
    const char *body, *needle;
  } bad[] = {
      {"{\"examples\": [{\"a\": [1, 2]}]}", "examples[0]: feature 's': missing"},
      {"{\"instances\": [1]}", "no \"examples\""},
      {"{\"examples\": []}", "empty list"},
      {"{\"examples\": [1]}", "examples[0] must be an object"},
      {"{\"examples\": [{\"a\": [1, 2], \"s\": [], \"q\": 1}]}", "feature 'q': not an input"},
      {"{\"context\": {\"a\": [1, 2, 3]}, \"examples\": [{\"a\": [1, 2], \"s\": []}]}",
       "examples[0]: feature 'a': ragged"},
      {"{\"context\": [1], \"examples\": [{}]}", "\"context\" must be an object"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    r = decode_examples(f, f->two, bad[i].body);
    assert_int_equal(r->status, ISV_EBADREQ);
    if (strstr(r->errmsg, bad[i].needle) == NULL)
      fail_msg("'%s' does not say '%s'", r->errmsg, bad[i].needle);
    isv_request_free(r);
  }
}

static void classify_and_regress_answers(void **state) {
  fixture *f = *state;
  isv_request *r = decode_examples(f, f->one, "{\"examples\": [{\"x\": 1}]}");
  static float sc[] = {0.25f, 0.75f, 1, 0};
  static int64_t sc_shape[] = {2, 2}, one_shape[] = {2};
  static isv_bytes cl[] = {{"a", 1}, {"b", 1}, {"c", 1}, {"d", 1}};
  isv_tensor t[2] = {{.name = "scores", .dt = ISV_FP32, .shape = sc_shape, .ndim = 2, .data = sc,
                      .count = 4, .byte_size = 16},
                     {.name = "classes", .dt = ISV_BYTES, .shape = sc_shape, .ndim = 2, .data = cl,
                      .count = 4, .byte_size = 4}};
  char msg[200];
  isv__buf b;
  r->outputs = t;
  r->n_outputs = 2;
  isv__buf_init(&b, NULL);
  assert_int_equal(isv__tfs_encode_classify(r, NULL, &b, msg, sizeof msg), 0);
  isv__buf_putc(&b, '\0');
  assert_string_equal(b.data, "{\"results\":[[[\"a\",0.25],[\"b\",0.75]],[[\"c\",1.0],[\"d\",0.0]]]}");
  isv__buf_free(&b);
  r->n_outputs = 1; /* no classes: the class index */
  assert_int_equal(isv__tfs_encode_classify(r, NULL, &b, msg, sizeof msg), 0);
  isv__buf_putc(&b, '\0');
  assert_string_equal(b.data, "{\"results\":[[[\"0\",0.25],[\"1\",0.75]],[[\"0\",1.0],[\"1\",0.0]]]}");
  isv__buf_free(&b);
  /* regress: one value per example */
  t[0] = (isv_tensor){.name = "outputs", .dt = ISV_FP32, .shape = one_shape, .ndim = 1, .data = sc,
                      .count = 2, .byte_size = 8};
  assert_int_equal(isv__tfs_encode_regress(r, NULL, &b, msg, sizeof msg), 0);
  isv__buf_putc(&b, '\0');
  assert_string_equal(b.data, "{\"results\":[0.25,0.75]}");
  isv__buf_free(&b);
  t[0].shape = sc_shape; /* two values per example: not a regression */
  t[0].ndim = 2;
  t[0].count = 4;
  assert_int_equal(isv__tfs_encode_regress(r, NULL, &b, msg, sizeof msg), ISV_EINVAL);
  assert_non_null(strstr(msg, "one FP32 or FP64 value per example"));
  isv__buf_free(&b);
  t[0].dt = ISV_INT32;
  assert_int_equal(isv__tfs_encode_classify(r, NULL, &b, msg, sizeof msg), ISV_EINVAL);
  isv__buf_free(&b);
  r->outputs = NULL;
  r->n_outputs = 0;
  isv_request_free(r);
}

/* Named signatures: aliases name the inputs in the body, the chosen signature's outputs are
 * the ones requested, and a classify or regress body needs a signature of its method. */
static void signatures_choose_and_rename(void **state) {
  fixture *f = *state;
  isv_request *r = decode_as(f, f->sigs, "{\"instances\": [1, 2]}", 0, NULL);
  assert_int_equal(r->status, 0);
  assert_non_null(last_sig);
  assert_string_equal(last_sig->name, "serving_default");
  isv_request_free(r);
  r = decode_as(f, f->sigs, "{\"signature_name\": \"cls\", \"examples\": [{\"in\": 5}]}", EXAMPLES,
                NULL);
  assert_int_equal(r->status, 0);
  assert_string_equal(last_sig->name, "cls");
  assert_string_equal(r->inputs[0].name, "x"); /* the tensor's own name */
  assert_int_equal(isv_request_is_output_requested(r, "y"), 1);
  isv_request_free(r);
  r = decode_as(f, f->sigs, "{\"signature_name\": \"cls\", \"examples\": [{\"x\": 5}]}", EXAMPLES,
                NULL);
  assert_int_equal(r->status, ISV_EBADREQ);
  assert_non_null(strstr(r->errmsg, "feature 'x': not an input")); /* it goes by "in" there */
  isv_request_free(r);
  r = decode_as(f, f->sigs, "{\"signature_name\": \"reg\", \"examples\": [{\"x\": 5}]}", EXAMPLES,
                NULL);
  assert_int_equal(r->status, ISV_EBADREQ);
  assert_non_null(strstr(r->errmsg, "Expected classification signature method_name to be "
                                    "tensorflow/serving/classify. Was: tensorflow/serving/regress"));
  isv_request_free(r);
  r = decode_as(f, f->sigs, "{\"signature_name\": \"nope\", \"instances\": [1]}", 0, NULL);
  assert_non_null(strstr(r->errmsg, "Serving signature name: \"nope\" not found"));
  isv_request_free(r);
  /* regress through "reg": the answer finds y by its alias "outputs" */
  r = decode_as(f, f->sigs, "{\"signature_name\": \"reg\", \"examples\": [{\"x\": 1}]}",
                EXAMPLES | REGRESS, NULL);
  assert_int_equal(r->status, 0);
  const isv__signature *reg_sig = last_sig;
  static float yv[] = {3.5f, 9};
  static int64_t ys[] = {2};
  isv_tensor t[2] = {{.name = "y", .dt = ISV_FP32, .shape = ys, .ndim = 1, .data = yv, .count = 2,
                      .byte_size = 8},
                     {.name = "z", .dt = ISV_FP32, .shape = ys, .ndim = 1, .data = yv, .count = 2,
                      .byte_size = 8}};
  r->outputs = t;
  r->n_outputs = 2; /* "outputs" is found by alias among several */
  isv__buf b;
  char msg[200];
  isv__buf_init(&b, NULL);
  assert_int_equal(isv__tfs_encode_regress(r, reg_sig, &b, msg, sizeof msg), 0);
  isv__buf_putc(&b, '\0');
  assert_string_equal(b.data, "{\"results\":[3.5,9.0]}");
  isv__buf_free(&b);
  assert_int_equal(isv__tfs_encode_predict(r, reg_sig, 0, NULL, &b, msg, sizeof msg), 0);
  isv__buf_putc(&b, '\0');
  assert_string_equal(b.data, "{\"outputs\":{\"outputs\":[3.5,9.0],\"z\":[3.5,9.0]}}");
  isv__buf_free(&b);
  r->outputs = NULL;
  r->n_outputs = 0;
  isv_request_free(r);
}

/* The answer's text for outputs t[0..n) in the row or columnar format (ISV_EINVAL: msg). */
static int answer(fixture *f, isv_tensor *t, size_t n, int row, char *out, size_t cap, char *msg) {
  isv_request *r = decode(f, f->one, "{\"instances\": [1]}", NULL);
  r->outputs = t; /* as the backend left them (the encoder reads nothing else) */
  r->n_outputs = n;
  isv__buf b;
  isv__buf_init(&b, NULL);
  int rc = isv__tfs_encode_predict(r, NULL, row & 1, row & 2 ? "7" : NULL, &b, msg, 200);
  isv__buf_putc(&b, '\0');
  snprintf(out, cap, "%s", b.data ? b.data : "");
  isv__buf_free(&b);
  r->outputs = NULL;
  r->n_outputs = 0;
  isv_request_free(r);
  return rc;
}

static void answers_take_the_format_asked(void **state) {
  fixture *f = *state;
  static float y[] = {1, 2, 3, 4};
  static int64_t y_shape[] = {2, 2};
  static isv_bytes u[] = {{"ok", 2}, {"\xff", 1}};
  static int64_t u_shape[] = {2};
  isv_tensor t[2] = {{.name = "y", .dt = ISV_FP32, .shape = y_shape, .ndim = 2, .data = y,
                      .count = 4, .byte_size = sizeof y},
                     {.name = "u_bytes", .dt = ISV_BYTES, .shape = u_shape, .ndim = 1, .data = u,
                      .count = 2, .byte_size = 3}};
  char out[400], msg[200] = "";
  assert_int_equal(answer(f, t, 1, 1, out, sizeof out, msg), 0);
  assert_string_equal(out, "{\"predictions\":[[1.0,2.0],[3.0,4.0]]}");
  assert_int_equal(answer(f, t, 1, 0, out, sizeof out, msg), 0);
  assert_string_equal(out, "{\"outputs\":[[1.0,2.0],[3.0,4.0]]}");
  assert_int_equal(answer(f, t, 2, 1, out, sizeof out, msg), 0);
  assert_string_equal(out, "{\"predictions\":[{\"y\":[1.0,2.0],\"u_bytes\":{\"b64\":\"b2s=\"}},"
                           "{\"y\":[3.0,4.0],\"u_bytes\":{\"b64\":\"/w==\"}}]}");
  assert_int_equal(answer(f, t, 2, 0, out, sizeof out, msg), 0);
  assert_string_equal(out, "{\"outputs\":{\"y\":[[1.0,2.0],[3.0,4.0]],\"u_bytes\":[{\"b64\":"
                           "\"b2s=\"},{\"b64\":\"/w==\"}]}}");
  /* the same BYTES output not named *_bytes: strings where they are UTF-8 */
  t[1].name = "u";
  assert_int_equal(answer(f, t + 1, 1, 0, out, sizeof out, msg), 0);
  assert_string_equal(out, "{\"outputs\":[\"ok\",{\"b64\":\"/w==\"}]}");
  /* no elements (an empty list decoded: no data at all) */
  static int64_t zero[] = {0};
  isv_tensor empty = {.name = "e", .dt = ISV_FP32, .shape = zero, .ndim = 1, .data = NULL};
  assert_int_equal(answer(f, &empty, 1, 0, out, sizeof out, msg), 0);
  assert_string_equal(out, "{\"outputs\":[]}");
  /* the row format needs a dimension 0 that every output shares */
  static int64_t s3[] = {3};
  t[1] = (isv_tensor){.name = "q", .dt = ISV_FP32, .shape = s3, .ndim = 1, .data = y, .count = 3,
                      .byte_size = 12};
  assert_int_equal(answer(f, t, 2, 1, out, sizeof out, msg), ISV_EINVAL);
  assert_non_null(strstr(msg, "output 'q'"));
  assert_int_equal(answer(f, t, 2, 0, out, sizeof out, msg), 0); /* columnar takes them */
  /* Vertex: the predictions, then the model version that answered */
  assert_int_equal(answer(f, t, 1, 1 | 2, out, sizeof out, msg), 0);
  assert_string_equal(out, "{\"predictions\":[[1.0,2.0],[3.0,4.0]],\"deployedModelId\":\"7\"}");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(rows_of_one_input_stack_on_dimension_0, setup, teardown),
      cmocka_unit_test_setup_teardown(named_instances_fill_every_input, setup, teardown),
      cmocka_unit_test_setup_teardown(columnar_inputs_keep_their_own_shape, setup, teardown),
      cmocka_unit_test_setup_teardown(every_refusal_names_its_problem, setup, teardown),
      cmocka_unit_test_setup_teardown(vertex_bodies_carry_parameters, setup, teardown),
      cmocka_unit_test_setup_teardown(answers_take_the_format_asked, setup, teardown),
      cmocka_unit_test_setup_teardown(examples_stack_features_with_the_context_merged, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(classify_and_regress_answers, setup, teardown),
      cmocka_unit_test_setup_teardown(signatures_choose_and_rename, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
