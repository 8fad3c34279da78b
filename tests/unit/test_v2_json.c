/* V2 JSON request decoding and response encoding, without sockets. */
#include "cmocka_prelude.h"

#include <stdlib.h>
#include <string.h>

#include "core/request.h"
#include "protocol/v2_json.h"

static uv_loop_t loop;
static isv__core core;

static int setup(void **state) {
  (void)state;
  uv_loop_init(&loop);
  isv_options o;
  isv__options_defaults(&o);
  return isv__core_init(&core, &loop, &o);
}

static int teardown(void **state) {
  (void)state;
  isv__core_close(&core, NULL);
  uv_run(&loop, UV_RUN_DEFAULT);
  return uv_loop_close(&loop);
}

/* decode a copy of text; returns the request (caller frees) */
static isv_request *decode(const char *text, int want) {
  static char body[4096];
  size_t n = strlen(text);
  memcpy(body, text, n);
  isv_request *r = isv__request_new(&core);
  int rc = isv__v2_decode_request(r, body, n, 64);
  if (rc != want) fail_msg("decode(%s) = %d (%s), want %d", text, rc, r->errmsg, want);
  return r;
}

static void expect_error(const char *text, int code, const char *needle) {
  isv_request *r = decode(text, code);
  if (strstr(r->errmsg, needle) == NULL) fail_msg("'%s' lacks '%s'", r->errmsg, needle);
  isv_request_free(r);
}

static void decodes_everything_a_request_carries(void **state) {
  (void)state;
  isv_request *r = decode(
      "{\"data_first\":1,\"id\":\"req-1\",\"parameters\":{\"b\":true,\"i\":-3,\"u\":18446744073709551615,"
      "\"d\":0.5,\"s\":\"x\\ty\"},\"inputs\":[{\"data\":[[1,2],[3,4]],\"name\":\"A\",\"shape\":[2,2],"
      "\"datatype\":\"INT16\"},{\"name\":\"S\",\"datatype\":\"BYTES\",\"shape\":[2],\"data\":[\"\\u00e9\",\"\"]}],"
      "\"outputs\":[{\"name\":\"Y\",\"parameters\":{\"classification\":3}},{\"name\":\"Z\"}]}",
      0);
  assert_string_equal(r->id, "req-1");
  assert_true(r->has_id);
  assert_int_equal(isv_request_param_count(r), 5);
  assert_int_equal(isv_request_param(r, "b")->v.b, 1);
  assert_int_equal(isv_request_param(r, "i")->v.i64, -3);
  assert_int_equal(isv_request_param(r, "u")->type, ISV_PARAM_UINT64);
  assert_true(isv_request_param(r, "d")->v.d == 0.5);
  assert_memory_equal(isv_request_param(r, "s")->v.s.ptr, "x\ty", 3);
  const isv_tensor *a = isv_request_input(r, "A");
  assert_int_equal(isv_tensor_datatype(a), ISV_INT16);
  const int16_t *ad = isv_tensor_data(a);
  assert_int_equal(ad[3], 4);
  const isv_bytes *s = isv_tensor_data(isv_request_input(r, "S"));
  assert_int_equal(s[0].len, 2);
  assert_memory_equal(s[0].ptr, "\xc3\xa9", 2);
  assert_int_equal(s[1].len, 0);
  assert_int_equal(r->n_req_outputs, 2);
  assert_int_equal(r->req_outputs[0].classification, 3);
  isv_request_free(r);
}

static void every_error_names_the_problem(void **state) {
  (void)state;
  expect_error("", ISV_EBADREQ, "empty request body");
  expect_error("[1]", ISV_EBADREQ, "must be a JSON object");
  expect_error("{\"inputs\":[{\"name\":\"A\",", ISV_EBADREQ, "offset");
  expect_error("{}", ISV_EBADREQ, "no 'inputs'");
  expect_error("{\"inputs\":[{\"shape\":[1],\"datatype\":\"INT8\",\"data\":[1]}]}", ISV_EBADREQ,
               "has no 'name'");
  expect_error("{\"inputs\":[{\"name\":\"A\",\"shape\":[1],\"datatype\":\"INT9\",\"data\":[1]}]}",
               ISV_EBADREQ, "unknown datatype 'INT9'");
  expect_error("{\"inputs\":[{\"name\":\"A\",\"shape\":[-1],\"datatype\":\"INT8\",\"data\":[1]}]}",
               ISV_EBADREQ, "negative dimension");
  expect_error("{\"inputs\":[{\"name\":\"A\",\"shape\":[9223372036854775807,4],\"datatype\":\"INT8\","
               "\"data\":[1]}]}",
               ISV_EBADREQ, "overflows");
  expect_error("{\"inputs\":[{\"name\":\"A\",\"shape\":[1000000],\"datatype\":\"INT8\",\"data\":[1]}]}",
               ISV_EBADREQ, "holds fewer");
  expect_error("{\"inputs\":[{\"name\":\"A\",\"shape\":[3],\"datatype\":\"INT8\",\"data\":[1,2]}]}",
               ISV_EBADREQ, "input 'A'");
  expect_error("{\"inputs\":[{\"name\":\"A\",\"shape\":[1],\"datatype\":\"UINT8\",\"data\":[300]}]}",
               ISV_EBADREQ, "input 'A'");
  expect_error("{\"inputs\":[{\"name\":\"A\",\"shape\":[1],\"datatype\":\"INT8\"}]}", ISV_EBADREQ,
               "has no 'data'");
  expect_error("{\"inputs\":[{\"name\":\"A\",\"shape\":[1],\"datatype\":\"INT8\",\"data\":[1],"
               "\"parameters\":{\"binary_data_size\":1}}]}",
               ISV_EUNIMPL, "binary tensor data");
  expect_error("{\"inputs\":[],\"outputs\":[{\"parameters\":{\"classification\":-1},\"name\":\"Y\"}]}",
               ISV_EBADREQ, "non-negative integer");
  expect_error("{\"inputs\":[],\"parameters\":{\"p\":[1]}}", ISV_EBADREQ,
               "must be a bool, a number or a string");
  expect_error("{\"inputs\":[]} x", ISV_EBADREQ, "offset");
}

static void bytes_that_are_not_utf8_become_b64(void **state) {
  (void)state;
  isv_request *r = isv__request_new(&core);
  r->model_name = "m";
  r->version = "1";
  isv_bytes els[2] = {{"ok", 2}, {"\xff\xfe", 2}};
  int64_t shape[] = {2};
  isv_tensor t = {.name = "OUT", .dt = ISV_BYTES, .shape = shape, .ndim = 1, .data = els, .count = 2};
  r->outputs = &t;
  r->n_outputs = 1;
  isv__buf b;
  isv__buf_init(&b);
  isv__v2_encode_response(r, &b);
  isv__buf_putc(&b, '\0');
  assert_string_equal(b.data, "{\"model_name\":\"m\",\"model_version\":\"1\",\"outputs\":[{\"name\":"
                              "\"OUT\",\"datatype\":\"BYTES\",\"shape\":[2],\"data\":[\"ok\","
                              "{\"b64\":\"//4=\"}]}]}");
  isv__buf_free(&b);
  r->outputs = NULL;
  r->n_outputs = 0;
  isv_request_free(r);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(decodes_everything_a_request_carries),
      cmocka_unit_test(every_error_names_the_problem),
      cmocka_unit_test(bytes_that_are_not_utf8_become_b64),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
