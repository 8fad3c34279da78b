/* protocol/grps_conv.c: which model a GrpsMessage is for ("name-version", a whole name with a
 * '-', the default model), each data kind as the request's inputs (open I/O, a declared single
 * input, positional names, gmap's "<map>/<key>" names, a native model's message), and a
 * finished request's outputs as the reply's kind (the request's when they fit, else gtensors;
 * the backend's grps_data; return-ndarray; gmap by prefix and by type). */
#include "cmocka_prelude.h"

#include <string.h>

#include "core_fixture.h"
#include "protocol/grps_conv.h"

static int noop(isv_request *r, void *u) {
  (void)r;
  (void)u;
  return 0;
}

static void reg(cf_world *w, const char *name, const char *version, int open, int native,
                const char *input, isv_datatype dt) {
  isv_model_config *c;
  assert_int_equal(isv_model_config_new(name, &c), 0);
  if (open) assert_int_equal(isv_model_config_set_open_io(c, 1), 0);
  if (native) assert_int_equal(isv_model_config_set_native(c, 1), 0);
  int64_t any = -1;
  if (input) assert_int_equal(isv_model_config_add_input(c, input, dt, &any, 1), 0);
  isv_backend be = {.struct_size = sizeof be, .infer = noop};
  assert_int_equal(isv__registry_add(&w->core.reg, c, version, &be, NULL, NULL), 0);
  isv_model_config_free(c);
}

static int setup(void **state) {
  cf_world *w = cf_world_new(NULL);
  reg(w, "echo", "1.0.0", 1, 0, NULL, ISV_BYTES);
  reg(w, "my-model", "2", 1, 0, NULL, ISV_BYTES);
  reg(w, "text", "1", 0, 0, "prompt", ISV_BYTES);
  reg(w, "native", "1", 0, 1, NULL, ISV_BYTES);
  *state = w;
  return 0;
}

static int teardown(void **state) {
  cf_world_free(*state);
  return 0;
}

static isv_request *req(cf_world *w) {
  isv_request *r = isv__request_new(&w->core);
  assert_non_null(r);
  return r;
}

static void selects(cf_world *w, const char *s, const char *name, const char *version) {
  isv_request *r = req(w);
  assert_int_equal(isv__grps_select_model(r, s, strlen(s)), 0);
  assert_string_equal(r->model->cfg->name, name);
  assert_string_equal(isv_request_model_version(r), version);
  isv_request_free(r);
}

static void select_model(void **state) {
  cf_world *w = *state;
  selects(w, "echo-1.0.0", "echo", "1.0.0");
  selects(w, "echo", "echo", "1.0.0");
  selects(w, "my-model", "my-model", "2"); /* the whole name wins over a split */
  selects(w, "my-model-2", "my-model", "2");
  isv_request *r = req(w);
  assert_int_equal(isv__grps_select_model(r, "echo-9", 6), ISV_ENOTFOUND);
  assert_non_null(strstr(r->errmsg, "Request for unknown model: 'echo' version 9 is not found"));
  isv_request_free(r);
  r = req(w);
  assert_int_equal(isv__grps_select_model(r, "", 0), ISV_ENOTFOUND);
  assert_non_null(strstr(r->errmsg, "no default model"));
  isv_request_free(r);
  strcpy(w->core.default_model, "echo");
  selects(w, "", "echo", "1.0.0");
  w->core.default_model[0] = '\0';
}

static isv_request *bound(cf_world *w, const char *model, const isv__grps_msg *m) {
  isv_request *r = req(w);
  assert_int_equal(isv__grps_select_model(r, model, strlen(model)), 0);
  assert_int_equal(isv__grps_to_request(r, m, NULL, 0), 0);
  return r;
}

static void kind_param(const isv_request *r, const char *kind) {
  const isv_param *p = isv_request_param(r, "grps_data");
  assert_non_null(p);
  assert_int_equal(p->type, ISV_PARAM_STRING);
  assert_int_equal(p->v.s.len, strlen(kind));
  assert_memory_equal(p->v.s.ptr, kind, p->v.s.len);
}

static void str_data_inputs(void **state) {
  cf_world *w = *state;
  isv__grps_msg m = {.kind = ISV__GRPS_STR_DATA, .data = "hi", .data_len = 2};
  isv_request *r = bound(w, "echo", &m);
  assert_int_equal(r->n_inputs, 1);
  assert_string_equal(r->inputs[0].name, "str_data");
  assert_int_equal(r->inputs[0].dt, ISV_BYTES);
  assert_int_equal(r->inputs[0].ndim, 1);
  assert_int_equal(r->inputs[0].shape[0], 1);
  kind_param(r, "str_data");
  isv_request_free(r);
  r = bound(w, "text", &m); /* a declared single input takes it */
  assert_string_equal(r->inputs[0].name, "prompt");
  assert_int_equal(isv__request_validate(r), 0);
  isv_request_free(r);
}

static void gtensors_names(void **state) {
  cf_world *w = *state;
  int32_t a[2] = {1, 2};
  int64_t sh[1] = {2};
  isv_tensor ts[2] = {{.name = "", .dt = ISV_INT32, .shape = sh, .ndim = 1, .data = a,
                       .count = 2, .byte_size = 8},
                      {.name = "", .dt = ISV_INT32, .shape = sh, .ndim = 1, .data = a,
                       .count = 2, .byte_size = 8}};
  isv__grps_msg m = {.kind = ISV__GRPS_GTENSORS, .tensors = ts, .n_tensors = 2};
  isv_request *r = bound(w, "echo", &m);
  assert_string_equal(r->inputs[0].name, "tensor_0");
  assert_string_equal(r->inputs[1].name, "tensor_1");
  assert_ptr_equal(r->inputs[0].data, a); /* referenced, not copied */
  isv_request_free(r);
  r = bound(w, "text", &m);
  assert_string_equal(r->inputs[0].name, "prompt"); /* the declared input's name */
  assert_string_equal(r->inputs[1].name, "tensor_1");
  isv_request_free(r);
  ts[0].name = ts[1].name = "same";
  r = req(w);
  assert_int_equal(isv__grps_select_model(r, "echo", 4), 0);
  assert_int_equal(isv__grps_to_request(r, &m, NULL, 0), ISV_EBADREQ);
  assert_non_null(strstr(r->errmsg, "'same' is given twice"));
  isv_request_free(r);
}

static void gmap_names(void **state) {
  cf_world *w = *state;
  isv__grps_entry es[3] = {{.map = ISV__GRPS_S_I32, .key = "n", .key_len = 1, .v.i = -7},
                           {.map = ISV__GRPS_S_S, .key = "q", .key_len = 1, .v.s = {"x", 1}},
                           {.map = ISV__GRPS_S_D, .key = "d", .key_len = 1, .v.d = 0.5}};
  isv__grps_msg m = {.kind = ISV__GRPS_GMAP, .entries = es, .n_entries = 3};
  isv_request *r = bound(w, "echo", &m);
  const isv_tensor *n = isv_request_input(r, "s_i32/n");
  assert_non_null(n);
  assert_int_equal(n->dt, ISV_INT32);
  assert_int_equal(*(const int32_t *)n->data, -7);
  assert_int_equal(isv_request_input(r, "s_s/q")->dt, ISV_BYTES);
  assert_true(*(const double *)isv_request_input(r, "s_d/d")->data == 0.5);
  kind_param(r, "gmap");
  isv_request_free(r);
}

static void native_takes_the_wire(void **state) {
  cf_world *w = *state;
  static const uint8_t wire[] = {0x22, 0x02, 'h', 'i'}; /* str_data "hi" */
  isv__grps_msg m = {.kind = ISV__GRPS_STR_DATA, .data = "hi", .data_len = 2};
  isv_request *r = req(w);
  assert_int_equal(isv__grps_select_model(r, "native", 6), 0);
  assert_int_equal(isv__grps_to_request(r, &m, wire, sizeof wire), 0);
  assert_int_equal(r->n_inputs, 1);
  assert_string_equal(r->inputs[0].name, "grps_message");
  const isv_bytes *b = r->inputs[0].data;
  assert_ptr_equal(b->ptr, wire);
  assert_int_equal(b->len, sizeof wire);
  isv_request_free(r);
}

/* r with its outputs set to out[0..n) (what the backend produced). */
static isv_request *answered(cf_world *w, const char *model, isv_tensor *out, size_t n) {
  isv_request *r = req(w);
  assert_int_equal(isv__grps_select_model(r, model, strlen(model)), 0);
  r->outputs = out;
  r->n_outputs = n;
  return r;
}

/* Free r without its outputs (the test's own memory). */
static void drop(isv_request *r) {
  r->outputs = NULL;
  r->n_outputs = 0;
  isv_request_free(r);
}

static void reply_kinds(void **state) {
  cf_world *w = *state;
  int64_t one = 1;
  isv_bytes text = {"hey", 3}, raw = {"\xff\xfe", 2};
  int32_t i = 5;
  isv_tensor t_text = {.name = "o", .dt = ISV_BYTES, .shape = &one, .ndim = 1, .data = &text,
                       .count = 1, .byte_size = 3};
  isv_tensor t_raw = t_text, t_i32 = {.name = "s_i32/k", .dt = ISV_INT32, .shape = &one,
                                      .ndim = 1, .data = &i, .count = 1, .byte_size = 4};
  t_raw.data = &raw;
  isv__grps_msg m;
  isv_request *r = answered(w, "echo", &t_text, 1);
  assert_int_equal(isv__grps_reply_of(r, ISV__GRPS_STR_DATA, &m), 0);
  assert_int_equal(m.kind, ISV__GRPS_STR_DATA);
  assert_int_equal(m.code, 200);
  assert_memory_equal(m.data, "hey", 3);
  r->outputs = &t_raw; /* not UTF-8: str_data cannot carry it */
  assert_int_equal(isv__grps_reply_of(r, ISV__GRPS_STR_DATA, &m), 0);
  assert_int_equal(m.kind, ISV__GRPS_BIN_DATA);
  r->outputs = &t_i32; /* an INT32 answer to str_data: gtensors */
  assert_int_equal(isv__grps_reply_of(r, ISV__GRPS_STR_DATA, &m), 0);
  assert_int_equal(m.kind, ISV__GRPS_GTENSORS);
  assert_int_equal(m.n_tensors, 1);
  assert_int_equal(isv__grps_reply_of(r, ISV__GRPS_GMAP, &m), 0); /* "s_i32/" → s_i32 "k" */
  assert_int_equal(m.kind, ISV__GRPS_GMAP);
  assert_int_equal(m.entries[0].map, ISV__GRPS_S_I32);
  assert_string_equal(m.entries[0].key, "k");
  assert_int_equal(m.entries[0].v.i, 5);
  r->outputs = &t_raw; /* by type: non-UTF-8 BYTES [1] → s_b under its own name */
  assert_int_equal(isv__grps_reply_of(r, ISV__GRPS_GMAP, &m), 0);
  assert_int_equal(m.entries[0].map, ISV__GRPS_S_B);
  assert_string_equal(m.entries[0].key, "o");
  assert_int_equal(isv__grps_reply_of(r, ISV__GRPS_STR_DATA | ISV__GRPS_F_NDARRAY, &m),
                   ISV_EBADREQ);
  assert_non_null(strstr(r->errmsg, "one FP32 output"));
  drop(r);
}

static void backend_names_the_kind(void **state) {
  cf_world *w = *state;
  int64_t one = 1;
  int32_t i = 5;
  isv_tensor t = {.name = "x", .dt = ISV_INT32, .shape = &one, .ndim = 1, .data = &i,
                  .count = 1, .byte_size = 4};
  isv__grps_msg m;
  isv_request *r = answered(w, "echo", &t, 1);
  isv_param p = {.type = ISV_PARAM_STRING, .v.s = {"gmap", 4}};
  assert_int_equal(isv__request_add_resp_param(r, "grps_data", &p), 0);
  assert_int_equal(isv__grps_reply_of(r, ISV__GRPS_GTENSORS, &m), 0);
  assert_int_equal(m.kind, ISV__GRPS_GMAP);
  drop(r);
  r = answered(w, "echo", &t, 1);
  p.v.s.ptr = "str_data";
  p.v.s.len = 8;
  assert_int_equal(isv__request_add_resp_param(r, "grps_data", &p), 0);
  assert_int_equal(isv__grps_reply_of(r, ISV__GRPS_GTENSORS, &m), ISV_EBACKEND);
  assert_non_null(strstr(r->errmsg, "not one BYTES element"));
  drop(r);
}

static void error_reply(void **state) {
  (void)state;
  isv__grps_msg m;
  isv__grps_error_reply(ISV_ENOTFOUND, "gone", &m);
  assert_int_equal(m.code, 404);
  assert_int_equal(m.flag, ISV__GRPS_FAILURE);
  assert_int_equal(m.kind, ISV__GRPS_NONE);
  assert_memory_equal(m.msg, "gone", 4);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(select_model),        cmocka_unit_test(str_data_inputs),
      cmocka_unit_test(gtensors_names),      cmocka_unit_test(gmap_names),
      cmocka_unit_test(native_takes_the_wire), cmocka_unit_test(reply_kinds),
      cmocka_unit_test(backend_names_the_kind), cmocka_unit_test(error_reply),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
