/* V2 JSON request decoding and response encoding, without sockets. */
#include "cmocka_prelude.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/datatype.h"
#include "core/request.h"
#include "protocol/v2_json.h"
#include "core/lifecycle.h"
#include "v2_json_same.h"

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

/* What a server keeps of what its clients repeat (isv__v2_memo): every decoding and encoding
 * here goes through it, as a server's do, but the references of the memo's own tests. */
static isv__v2_memo memo;

/* decode a copy of text; returns the request (caller frees) */
static isv_request *decode(const char *text, int want) {
  static char body[4096];
  size_t n = strlen(text);
  memcpy(body, text, n);
  isv_request *r = isv__request_new(&core);
  int rc = isv__v2_decode_request(r, body, n, n, 64, &memo);
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

/* At most ISV__MAX_NDIM = 32 dimensions: the same limit as gRPC and the in-process API. */
static void shapes_of_32_dimensions_and_no_more(void **state) {
  (void)state;
  char text[512];
  const char *ones = "1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1";
  snprintf(text, sizeof text, "{\"inputs\":[{\"name\":\"A\",\"datatype\":\"INT8\",\"shape\":[%s],"
           "\"data\":[5]}]}", ones);
  isv_request *r = decode(text, 0);
  assert_int_equal(r->inputs[0].ndim, 32);
  isv_request_free(r);
  snprintf(text, sizeof text, "{\"inputs\":[{\"name\":\"A\",\"datatype\":\"INT8\",\"shape\":[%s,1],"
           "\"data\":[5]}]}", ones);
  expect_error(text, ISV_EBADREQ, "input 'A' has more than 32 dimensions");
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
               ISV_EBADREQ, "input 'A' has both 'data' and a binary_data_size parameter");
  expect_error("{\"inputs\":[],\"outputs\":[{\"parameters\":{\"classification\":-1},\"name\":\"Y\"}]}",
               ISV_EBADREQ, "non-negative integer");
  expect_error("{\"inputs\":[],\"parameters\":{\"p\":[1]}}", ISV_EBADREQ,
               "must be a bool, a number or a string");
  expect_error("{\"inputs\":[]} x", ISV_EBADREQ, "offset");
}

/* "data" after "datatype" and "shape" (the usual order) is read where it stands, in one pass;
 * whatever the order and however it fails, the outcome is the one of reading it last. */
static void data_after_its_datatype_and_shape_reads_as_in_any_order(void **state) {
  (void)state;
  isv_request *r = decode("{\"inputs\":[{\"name\":\"A\",\"shape\":[2,2],\"datatype\":\"INT32\","
                          "\"data\":[[1,2],[3,-4]]}]}", 0);
  const int32_t *a = isv_tensor_data(isv_request_input(r, "A"));
  assert_int_equal(a[0], 1);
  assert_int_equal(a[3], -4);
  isv_request_free(r);
  /* a second "data" counts, as does a datatype that changes after it */
  r = decode("{\"inputs\":[{\"name\":\"A\",\"shape\":[2],\"datatype\":\"INT32\",\"data\":[1,2],"
             "\"data\":[3,4]}]}", 0);
  a = isv_tensor_data(isv_request_input(r, "A"));
  assert_int_equal(a[0], 3);
  assert_int_equal(a[1], 4);
  isv_request_free(r);
  r = decode("{\"inputs\":[{\"name\":\"A\",\"shape\":[2],\"datatype\":\"INT32\",\"data\":[5,6],"
             "\"datatype\":\"INT64\"}]}", 0);
  const int64_t *b = isv_tensor_data(isv_request_input(r, "A"));
  assert_int_equal(isv_tensor_datatype(isv_request_input(r, "A")), ISV_INT64);
  assert_int_equal(b[1], 6);
  isv_request_free(r);
  /* a shape after "data" counts too: its element count is the tensor's, whatever the data's */
  r = decode("{\"inputs\":[{\"name\":\"A\",\"shape\":[2],\"datatype\":\"INT32\",\"data\":[7,8],"
             "\"shape\":[1,2]}]}", 0);
  size_t ndim = 0;
  const int64_t *sh = isv_tensor_shape(isv_request_input(r, "A"), &ndim);
  assert_int_equal(ndim, 2);
  assert_int_equal(sh[1], 2);
  assert_int_equal(((const int32_t *)isv_tensor_data(isv_request_input(r, "A")))[1], 8);
  isv_request_free(r);
  expect_error("{\"inputs\":[{\"name\":\"A\",\"shape\":[2],\"datatype\":\"INT32\",\"data\":[7,8],"
               "\"shape\":[3]}]}", ISV_EBADREQ, "expected 3 elements, got 2");
  /* bad data: the same message either way (a string is left as it was by the failed try) */
  static const char *bad[] = {"[\"a\\n\",2]", "[1,2,3]", "[1]", "[1,true]", "[1,\"\\u00e9\"]"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char last[256], first[256];
    snprintf(last, sizeof last, "{\"inputs\":[{\"name\":\"A\",\"shape\":[2],\"datatype\":\"INT32\","
             "\"data\":%s}]}", bad[i]);
    snprintf(first, sizeof first, "{\"inputs\":[{\"data\":%s,\"name\":\"A\",\"shape\":[2],"
             "\"datatype\":\"INT32\"}]}", bad[i]);
    isv_request *x = decode(last, ISV_EBADREQ), *y = decode(first, ISV_EBADREQ);
    /* the offsets differ by where "data" is; the message up to them is the same */
    const char *ox = strstr(x->errmsg, "offset"), *oy = strstr(y->errmsg, "offset");
    assert_non_null(ox);
    assert_non_null(oy);
    assert_int_equal(ox - x->errmsg, oy - y->errmsg);
    assert_memory_equal(x->errmsg, y->errmsg, (size_t)(ox - x->errmsg));
    isv_request_free(x);
    isv_request_free(y);
  }
}

/* The same request, compact and as Python's json.dumps writes it by default (", " and ": ":
 * tritonclient's, requests' json=), or with other spaces: the same inputs, names, shapes and
 * values — the second form read on the reader's short paths, the rest the general way. */
static void a_request_reads_the_same_however_it_is_spaced(void **state) {
  (void)state;
  static const char *const forms[] = {
      "{\"inputs\":[{\"name\":\"A\",\"shape\":[2,8],\"datatype\":\"INT32\",\"data\":[1,2,3,4,5,6,7,8,"
      "9,10,-11,12,0,1,1,1]},{\"name\":\"B\",\"shape\":[16],\"datatype\":\"UINT8\",\"data\":[1,1,1,"
      "1,0,0,0,0,9,9,9,9,1,2,3,4]}],\"outputs\":[{\"name\":\"Y\"}]}",
      "{\"inputs\": [{\"name\": \"A\", \"shape\": [2, 8], \"datatype\": \"INT32\", \"data\": [1, 2, 3, "
      "4, 5, 6, 7, 8, 9, 10, -11, 12, 0, 1, 1, 1]}, {\"name\": \"B\", \"shape\": [16], \"datatype\": "
      "\"UINT8\", \"data\": [1, 1, 1, 1, 0, 0, 0, 0, 9, 9, 9, 9, 1, 2, 3, 4]}], \"outputs\": [{\"name\": "
      "\"Y\"}]}",
      "{ \"inputs\" : [ { \"name\" :  \"A\" ,\"shape\":[2 ,8],\n\"datatype\":\t\"INT32\", \"data\":[1,  2, "
      "3, 4,5, 6, 7,8, 9,10 ,-11,12, 0,1, 1,1 ] } ,{\"name\":\"B\",\"shape\":[ 16],\"datatype\":\"UINT8\","
      "\"data\":[1,1, 1, 1, 0, 0, 0,0, 9, 9, 9, 9, 1, 2, 3, 4 ]}],\"outputs\":[ {\"name\":\"Y\"} ] }"};
  static const int32_t want_a[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, -11, 12, 0, 1, 1, 1};
  static const uint8_t want_b[16] = {1, 1, 1, 1, 0, 0, 0, 0, 9, 9, 9, 9, 1, 2, 3, 4};
  for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) {
    isv_request *r = decode(forms[i], 0);
    assert_int_equal(r->n_inputs, 2);
    const isv_tensor *a = isv_request_input(r, "A"), *b = isv_request_input(r, "B");
    assert_non_null(a);
    assert_non_null(b);
    size_t ndim;
    const int64_t *sh = isv_tensor_shape(a, &ndim);
    assert_int_equal(ndim, 2);
    assert_true(sh[0] == 2 && sh[1] == 8);
    assert_int_equal(isv_tensor_datatype(b), ISV_UINT8);
    assert_memory_equal(isv_tensor_data(a), want_a, sizeof want_a);
    assert_memory_equal(isv_tensor_data(b), want_b, sizeof want_b);
    assert_int_equal(r->n_req_outputs, 1);
    assert_string_equal(r->req_outputs[0].name, "Y");
    isv_request_free(r);
  }
  /* errors after one space are the errors they are compact */
  expect_error("{\"inputs\": [{\"name\": \"A\", \"shape\": [2], \"datatype\": \"INT32\", "
               "\"data\": [1, ]}]}", ISV_EBADREQ, "trailing comma");
  expect_error("{\"inputs\": [{\"name\": \"A\", \"shape\": [2], \"datatype\": \"INT8\", "
               "\"data\": [1, 300]}]}", ISV_EBADREQ, "input 'A'");
  expect_error("{\"inputs\": [{\"name\": \"A\", \"shape\": [3], \"datatype\": \"INT32\", "
               "\"data\": [1, 1, 1, 1]}]}", ISV_EBADREQ, "expected 3 elements, got more than 3");
  expect_error("{\"inputs\": [{\"name\": \"A\", \"shape\": [1, -2], \"datatype\": \"INT32\", "
               "\"data\": [1]}]}", ISV_EBADREQ, "negative dimension");
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
  isv__buf_init(&b, NULL);
  isv__v2_binpart *parts;
  size_t n_parts;
  assert_int_equal(isv__v2_encode_response(r, &b, &parts, &n_parts, &memo), 0);
  assert_int_equal(n_parts, 0);
  isv__buf_putc(&b, '\0');
  assert_string_equal(b.data, "{\"model_name\":\"m\",\"model_version\":\"1\",\"outputs\":[{\"name\":"
                              "\"OUT\",\"datatype\":\"BYTES\",\"shape\":[2],\"data\":[\"ok\","
                              "{\"b64\":\"//4=\"}]}]}");
  isv__buf_free(&b);
  r->outputs = NULL;
  r->n_outputs = 0;
  isv_request_free(r);
}

/* ---- binary tensor data extension ------------------------------------------------------- */

static _Alignas(64) char bin_body[8192];

/* JSON then `bin` (binlen bytes), placed so the binary part starts at bin_body+4096+shift. */
static isv_request *decode_bin(const char *json, const void *bin, size_t binlen, size_t shift,
                               int want, char **bin_at) {
  size_t jl = strlen(json);
  assert_true(jl <= 4096 && binlen + shift <= sizeof bin_body - 4096);
  char *start = bin_body + 4096 + shift - jl;
  memcpy(start, json, jl);
  memcpy(start + jl, bin, binlen);
  *bin_at = start + jl;
  isv_request *r = isv__request_new(&core);
  int rc = isv__v2_decode_request(r, start, jl + binlen, jl, 64, &memo);
  if (rc != want) fail_msg("decode(%s) = %d (%s), want %d", json, rc, r->errmsg, want);
  return r;
}

static void expect_bin_error(const char *json, const void *bin, size_t binlen, const char *needle) {
  char *at;
  isv_request *r = decode_bin(json, bin, binlen, 0, ISV_EBADREQ, &at);
  if (strstr(r->errmsg, needle) == NULL) fail_msg("'%s' lacks '%s'", r->errmsg, needle);
  isv_request_free(r);
}

static void binary_inputs_are_taken_in_order_and_in_place(void **state) {
  (void)state;
  /* A: INT32 [2] (8 bytes), then S: BYTES [2] {"hi", ""} (4+2 + 4+0 = 10 bytes), then J: JSON. */
  unsigned char bin[18] = {1, 0, 0, 0, 0xfe, 0xff, 0xff, 0xff, 2, 0, 0, 0, 'h', 'i', 0, 0, 0, 0};
  const char *json =
      "{\"inputs\":[{\"name\":\"A\",\"datatype\":\"INT32\",\"shape\":[2],\"parameters\":"
      "{\"binary_data_size\":8}},{\"parameters\":{\"binary_data_size\":10},\"name\":\"S\","
      "\"datatype\":\"BYTES\",\"shape\":[2]},{\"name\":\"J\",\"datatype\":\"INT8\",\"shape\":[1],"
      "\"data\":[7]}]}";
  char *at;
  isv_request *r = decode_bin(json, bin, sizeof bin, 0, 0, &at);
  assert_int_equal(r->n_inputs, 3);
  assert_ptr_equal(r->inputs[0].data, at); /* aligned: referenced, not copied */
  assert_int_equal(((int32_t *)r->inputs[0].data)[1], -2);
  const isv_bytes *s = r->inputs[1].data;
  assert_int_equal(r->inputs[1].count, 2);
  assert_int_equal(s[0].len, 2);
  assert_memory_equal(s[0].ptr, "hi", 2);
  assert_int_equal(s[1].len, 0);
  assert_int_equal(r->inputs[1].byte_size, 2);
  assert_int_equal(((int8_t *)r->inputs[2].data)[0], 7);
  isv_request_free(r);
  /* Misaligned binary data is copied to an aligned place, same values. */
  r = decode_bin(json, bin, sizeof bin, 1, 0, &at);
  assert_ptr_not_equal(r->inputs[0].data, at);
  assert_int_equal((uintptr_t)r->inputs[0].data % 4, 0);
  assert_int_equal(((int32_t *)r->inputs[0].data)[0], 1);
  isv_request_free(r);
}

static void binary_input_errors_name_the_problem(void **state) {
  (void)state;
  unsigned char z[16] = {0};
  expect_bin_error("{\"inputs\":[{\"name\":\"A\",\"datatype\":\"INT32\",\"shape\":[2],\"data\":[1,2],"
                   "\"parameters\":{\"binary_data_size\":8}}]}", z, 8, "both 'data' and a binary_data_size");
  expect_bin_error("{\"inputs\":[{\"name\":\"A\",\"datatype\":\"INT32\",\"shape\":[2]}]}", z, 0,
                   "has no 'data' (nor a binary_data_size");
  expect_bin_error("{\"inputs\":[{\"name\":\"A\",\"datatype\":\"INT32\",\"shape\":[2],\"parameters\":"
                   "{\"binary_data_size\":4}}]}", z, 4, "binary_data_size is 4 but shape [2] of INT32 needs 8");
  expect_bin_error("{\"inputs\":[{\"name\":\"A\",\"datatype\":\"INT32\",\"shape\":[2],\"parameters\":"
                   "{\"binary_data_size\":8}}]}", z, 7, "only 7 bytes of binary data are left");
  expect_bin_error("{\"inputs\":[{\"name\":\"A\",\"datatype\":\"INT32\",\"shape\":[2],\"parameters\":"
                   "{\"binary_data_size\":8}}]}", z, 9, "9 bytes of binary data follow the JSON header but the inputs' binary_data_size parameters claim 8");
  expect_bin_error("{\"inputs\":[{\"name\":\"A\",\"datatype\":\"INT32\",\"shape\":[2],\"parameters\":"
                   "{\"binary_data_size\":-8}}]}", z, 8, "'A': binary_data_size must be a non-negative");
  expect_bin_error("{\"inputs\":[{\"parameters\":{\"binary_data_size\":\"8\"},\"name\":\"A\"}]}", z, 8,
                   "'#0': binary_data_size must be");
  expect_bin_error("{\"inputs\":[{\"name\":\"A\",\"datatype\":\"INT32\",\"shape\":[2],\"data\":[1,2]}]}", z,
                   3, "3 bytes of binary data follow the JSON header but the inputs' "
                   "binary_data_size parameters claim 0");
  unsigned char cut[6] = {5, 0, 0, 0, 'a', 'b'};
  expect_bin_error("{\"inputs\":[{\"name\":\"S\",\"datatype\":\"BYTES\",\"shape\":[1],\"parameters\":"
                   "{\"binary_data_size\":6}}]}", cut, 6, "element 0 of the binary data has length 5 "
                   "but only 2 bytes remain");
  expect_bin_error("{\"inputs\":[{\"name\":\"S\",\"datatype\":\"BYTES\",\"shape\":[1],\"parameters\":"
                   "{\"binary_data_size\":2}}]}", cut, 2, "ends inside the 4-byte length of BYTES element 0");
  unsigned char two[8] = {0};
  expect_bin_error("{\"inputs\":[{\"name\":\"S\",\"datatype\":\"BYTES\",\"shape\":[1],\"parameters\":"
                   "{\"binary_data_size\":8}}]}", two, 8, "holds 2 BYTES elements, the shape needs 1");
  expect_bin_error("{\"inputs\":[],\"outputs\":[{\"name\":\"Y\",\"parameters\":{\"binary_data\":1}}]}", z,
                   0, "output 'Y': 'binary_data' must be true or false");
  expect_bin_error("{\"parameters\":{\"binary_data_output\":\"yes\"},\"inputs\":[]}", z, 0,
                   "'binary_data_output' must be true or false");
}

static void binary_outputs_are_listed_after_the_json(void **state) {
  (void)state;
  char *at;
  isv_request *r = decode_bin("{\"parameters\":{\"binary_data_output\":true,\"keep\":1},\"inputs\":[],"
                              "\"outputs\":[{\"name\":\"X\"},{\"name\":\"S\"},{\"name\":\"J\","
                              "\"parameters\":{\"binary_data\":false}}]}", "", 0, 0, 0, &at);
  /* binary_data_output is the extension's switch, not a parameter for the model */
  assert_int_equal(isv_request_param_count(r), 1);
  r->model_name = "m";
  r->version = "1";
  int32_t x[2] = {1, -1};
  isv_bytes els[2] = {{"ab", 2}, {NULL, 0}};
  int8_t j = 5;
  int64_t shape[] = {2}, one[] = {1};
  isv_tensor t[3] = {
      {.name = "X", .dt = ISV_INT32, .shape = shape, .ndim = 1, .data = x, .count = 2, .byte_size = 8},
      {.name = "S", .dt = ISV_BYTES, .shape = shape, .ndim = 1, .data = els, .count = 2, .byte_size = 2},
      {.name = "J", .dt = ISV_INT8, .shape = one, .ndim = 1, .data = &j, .count = 1, .byte_size = 1}};
  for (int i = 0; i < 3; i++) t[i].flags = r->req_outputs[i].flags;
  r->outputs = t;
  r->n_outputs = 3;
  isv__buf b;
  isv__buf_init(&b, NULL);
  isv__v2_binpart *parts;
  size_t n;
  assert_int_equal(isv__v2_encode_response(r, &b, &parts, &n, &memo), 0);
  isv__buf_putc(&b, '\0');
  assert_string_equal(b.data, "{\"model_name\":\"m\",\"model_version\":\"1\",\"outputs\":[{\"name\":"
                              "\"X\",\"datatype\":\"INT32\",\"shape\":[2],\"parameters\":{"
                              "\"binary_data_size\":8}},{\"name\":\"S\",\"datatype\":\"BYTES\","
                              "\"shape\":[2],\"parameters\":{\"binary_data_size\":10}},{\"name\":"
                              "\"J\",\"datatype\":\"INT8\",\"shape\":[1],\"data\":[5]}]}");
  assert_int_equal(n, 2);
  assert_ptr_equal(parts[0].ptr, x); /* referenced, not copied */
  assert_int_equal(parts[0].len, 8);
  assert_int_equal(parts[1].len, 10);
  assert_memory_equal(parts[1].ptr, "\2\0\0\0ab\0\0\0\0", 10);
  isv__buf_free(&b);
  r->outputs = NULL;
  r->n_outputs = 0;
  isv_request_free(r);
}

/* ---- the memo's members before "data" (isv__v2_memo's inputs) ------------------------------ */

/* One body decoded without a memo: the reference the same body decoded through one, after any
 * other, must equal. */
typedef struct fresh {
  const char *text;
  unsigned max_depth;
  char *body; /* the copy its inputs may point into */
  isv_request *r;
  int rc;
} fresh;

static void decode_fresh(fresh *f) {
  size_t n = strlen(f->text);
  f->body = malloc(n + 1);
  memcpy(f->body, f->text, n + 1);
  f->rc = isv__v2_decode_request(f->r, f->body, n, n, f->max_depth, NULL);
}

/* Whether x and y decoded to the same thing: status, message, every input in full
 * (fuzz/v2_json_same.c, fuzz_v2_json_request's comparison). */
static void assert_same_decoding(const isv_request *x, int xrc, const isv_request *y, int yrc,
                                 const char *what) {
  char why[512];
  if (!isv_v2_json_same(x, xrc, y, yrc, why, sizeof why)) fail_msg("%s: %s", what, why);
}

/* Every body of a set read through a memo right after every other (so after whatever the other
 * left in it) gives what it gives read without one: bodies that share their members
 * before "data" byte for byte and then differ (values, a wrong count, the end of the text right
 * after "data":), members that look alike but read otherwise (an escape, a repeated key,
 * "parameters", another order, a space, a deeper shape, an unknown datatype), and the same
 * members under a depth limit they exceed. */
static void an_input_read_through_a_memo_reads_as_without(void **state) {
  (void)state;
#define IN0 "{\"inputs\":[{\"name\":\"INPUT0\",\"shape\":[1,4],\"datatype\":\"INT32\",\"data\":"
#define IN1 "{\"name\":\"INPUT1\",\"shape\":[1,4],\"datatype\":\"INT32\",\"data\":"
  static const struct {
    const char *text;
    unsigned max_depth;
  } bodies[] = {
      {IN0 "[1,2,3,4]}," IN1 "[5,6,7,8]}]}", 64},
      {IN0 "[9,8,7,6]}," IN1 "[-1,0,1,2]}]}", 64},
      {IN0 "[9,8,7,6]}," IN1 "[-1,0,1,2]}]}", 3}, /* the shape is deeper than 3 */
      {IN0 "[1,2,3]}," IN1 "[5,6,7,8]}]}", 64},  /* one element short */
      {IN0 "[1,2,3,4]," IN1 "[5,6,7,8]}]}", 64}, /* the first input not closed */
      {IN0, 64},                                  /* the text ends after "data": */
      {IN0 "\"x\"}]}", 64},
      {IN0 "[1,2,3,4],\"parameters\":{\"p\":1}}," IN1 "[5,6,7,8]}]}", 64},
      {IN0 "[1,2,3,4],\"name\":\"OTHER\"}," IN1 "[5,6,7,8]}]}", 64}, /* renamed after "data" */
      {"{\"inputs\":[" IN1 "[5,6,7,8]},{\"name\":\"INPUT0\",\"shape\":[1,4],\"datatype\":"
       "\"INT32\",\"data\":[1,2,3,4]}]}", 64}, /* the two inputs swapped */
      {"{\"inputs\":[{\"name\":\"INPUT\\u0030\",\"shape\":[1,4],\"datatype\":\"INT32\",\"data\":"
       "[1,2,3,4]}]}", 64},
      {"{\"inputs\":[{\"name\":\"INPUTX\",\"shape\":[1,4],\"datatype\":\"INT32\",\"data\":"
       "[1,2,3,4]}]}", 64},
      {"{\"inputs\":[{\"name\":\"A\",\"name\":\"INPUT0\",\"shape\":[1,4],\"datatype\":"
       "\"INT32\",\"data\":[1,2,3,4]}]}", 64},
      {"{\"inputs\":[{\"name\":\"INPUT0\",\"shape\":[1,4],\"shape\":[2,2],\"datatype\":"
       "\"INT32\",\"data\":[1,2,3,4]}]}", 64},
      {"{\"inputs\":[{\"name\":\"INPUT0\",\"parameters\":{},\"shape\":[1,4],\"datatype\":"
       "\"INT32\",\"data\":[1,2,3,4]}]}", 64},
      {"{\"inputs\":[{\"name\":\"INPUT0\",\"data\":[1,2,3,4],\"shape\":[1,4],\"datatype\":"
       "\"INT32\"}]}", 64},
      {"{\"inputs\":[{\"name\":\"INPUT0\",\"shape\":[1,4],\"datatype\":\"INT33\",\"data\":"
       "[1,2,3,4]}]}", 64},
      {"{\"inputs\":[{\"name\":\"INPUT0\",\"shape\":[1,4],\"datatype\":\"FP32\",\"data\":"
       "[1,2.5,3,4]}]}", 64},
      {"{\"inputs\":[{\"name\":\"INPUT0\",\"shape\":[1,1,1,1,1,1,1,1,4],\"datatype\":"
       "\"INT32\",\"data\":[1,2,3,4]}]}", 64}, /* more dimensions than are remembered */
      {"{\"inputs\":[{\"name\":\"INPUT0\",\"shape\":[2],\"datatype\":\"BYTES\",\"data\":"
       "[\"a\",\"b\\u00e9\"]}]}", 64},
      {"{\"inputs\": [{\"name\": \"INPUT0\", \"shape\": [1, 4], \"datatype\": \"INT32\", "
       "\"data\": [1, 2, 3, 4]}, {\"name\": \"INPUT1\", \"shape\": [1, 4], \"datatype\": "
       "\"INT32\", \"data\": [5, 6, 7, 8]}]}", 64},
      {"{\"outputs\":[{\"name\":\"Y\"}],\"inputs\":[{\"name\":\"INPUT0\",\"shape\":[1,4],"
       "\"datatype\":\"INT32\",\"data\":[4,3,2,1]}]}", 64},
  };
#undef IN0
#undef IN1
  enum { N = sizeof bodies / sizeof bodies[0] };
  fresh ref[N];
  for (size_t i = 0; i < N; i++) {
    ref[i] = (fresh){.text = bodies[i].text, .max_depth = bodies[i].max_depth,
                     .r = isv__request_new(&core)};
    decode_fresh(&ref[i]);
  }
  isv__v2_memo m = {0};
  assert_int_equal(ref[0].rc, 0); /* the set holds what it means to: a body that reads */
  assert_int_not_equal(ref[2].rc, 0); /* and the same one refused under a depth of 3 */
  static char before[1024], body[1024];
  for (size_t i = 0; i < N; i++)
    for (size_t j = 0; j < N; j++) {
      for (int twice = 0; twice < 2; twice++) { /* i then j; i, j then j again */
        size_t n = strlen(bodies[i].text);
        memcpy(before, bodies[i].text, n);
        isv_request *a = isv__request_new(&core);
        isv__v2_decode_request(a, before, n, n, bodies[i].max_depth, &m);
        isv_request_free(a);
        for (int k = 0; k <= twice; k++) {
          n = strlen(bodies[j].text);
          memcpy(body, bodies[j].text, n);
          isv_request *b = isv__request_new(&core);
          int rc = isv__v2_decode_request(b, body, n, n, bodies[j].max_depth, &m);
          char what[64];
          snprintf(what, sizeof what, "body %zu after body %zu", j, i);
          assert_same_decoding(b, rc, ref[j].r, ref[j].rc, what);
          isv_request_free(b);
        }
      }
    }
  for (size_t i = 0; i < N; i++) {
    isv_request_free(ref[i].r);
    free(ref[i].body);
  }
}

/* ---- the memo's beginnings of an answer (isv__v2_memo's model and outputs) ------------------- */

typedef struct answer_spec {
  const char *model, *version, *id;
  size_t n;
  struct {
    const char *name;
    isv_datatype dt;
    size_t ndim;
    int64_t shape[10];
  } out[5];
} answer_spec;

static const int64_t zeros[64];

/* a's answer as JSON, encoded through m (NULL: none; malloc'd, NUL-terminated) */
static char *encode_answer(const answer_spec *a, isv__v2_memo *m) {
  isv_request *r = isv__request_new(&core);
  r->model_name = (char *)a->model;
  r->version = (char *)a->version;
  if (a->id) {
    r->id = (char *)a->id;
    r->has_id = 1;
  }
  isv_tensor t[5];
  memset(t, 0, sizeof t);
  for (size_t i = 0; i < a->n; i++) {
    size_t count = 1;
    for (size_t d = 0; d < a->out[i].ndim; d++) count *= (size_t)a->out[i].shape[d];
    t[i] = (isv_tensor){.name = a->out[i].name, .dt = a->out[i].dt,
                        .shape = (int64_t *)a->out[i].shape, .ndim = a->out[i].ndim,
                        .data = (void *)zeros, .count = count,
                        .byte_size = count * isv__dt_size(a->out[i].dt)};
  }
  r->outputs = t;
  r->n_outputs = a->n;
  isv__buf b;
  isv__buf_init(&b, NULL);
  isv__v2_binpart *parts;
  size_t n_parts;
  if (isv__v2_encode_response(r, &b, &parts, &n_parts, m) != 0) fail_msg("encode: %s", r->errmsg);
  char *text = malloc(b.len + 1);
  memcpy(text, b.data, b.len);
  text[b.len] = '\0';
  isv__buf_free(&b);
  r->outputs = NULL;
  r->n_outputs = 0;
  r->model_name = r->version = r->id = NULL;
  isv_request_free(r);
  return text;
}

/* Every answer of a set written through a memo right after every other gives the text it gives
 * written without one: answers whose model, version, output names, datatypes or shapes differ from
 * the one before in one thing (a name that is a prefix of the other, a shape of the same numbers
 * in another rank or a rank fewer, another order of the outputs), names to escape, names and
 * ranks too long to be remembered, an id, a fifth output. */
static void an_answer_written_through_a_memo_is_as_without(void **state) {
  (void)state;
  static const char long_name[] = "a_name_of_seventy_bytes_that_is_longer_than_what_is_kept_for_it_xx";
#define I32(nm, ...) {nm, ISV_INT32, sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t), {__VA_ARGS__}}
  static const answer_spec answers[] = {
      {"simple", "1", NULL, 2, {I32("OUTPUT0", 1, 4), I32("OUTPUT1", 1, 4)}},
      {"simple", "1", NULL, 2, {I32("OUTPUT0", 1, 3), I32("OUTPUT1", 1, 4)}},
      {"simple", "1", NULL, 2, {I32("OUTPUT0", 4), I32("OUTPUT1", 1, 4)}},
      {"simple", "1", NULL, 2, {I32("OUTPUT0", 1), I32("OUTPUT1", 1, 4)}},
      {"simple", "1", NULL, 2, {{"OUTPUT0", ISV_INT64, 2, {1, 4}}, I32("OUTPUT1", 1, 4)}},
      {"simple", "1", NULL, 2, {I32("OUTPUT1", 1, 4), I32("OUTPUT0", 1, 4)}},
      {"simple", "1", NULL, 2, {I32("OUTPUT", 1, 4), I32("OUTPUT10", 1, 4)}},
      {"simple2", "1", NULL, 2, {I32("OUTPUT0", 1, 4), I32("OUTPUT1", 1, 4)}},
      {"simple", "2", NULL, 2, {I32("OUTPUT0", 1, 4), I32("OUTPUT1", 1, 4)}},
      {"simple", "1", "req-7", 2, {I32("OUTPUT0", 1, 4), I32("OUTPUT1", 1, 4)}},
      {"s\"q\\", "1", NULL, 1, {I32("OUT\"PUT\xc3\xa9\n", 1, 4)}},
      {long_name, "1", NULL, 1, {I32(long_name, 2)}},
      {"simple", long_name, NULL, 1, {I32("OUTPUT0", 1, 1, 1, 1, 1, 1, 1, 1, 2)}},
      {"simple", "1", NULL, 5, {I32("A", 1), I32("B", 1), I32("C", 1), I32("D", 1), I32("E", 2)}},
      {"simple", "1", NULL, 5, {I32("A", 1), I32("B", 1), I32("C", 1), I32("D", 1), I32("F", 2)}},
      {"simple", "1", NULL, 0, {{0}}},
  };
#undef I32
  enum { N = sizeof answers / sizeof answers[0] };
  char *ref[N];
  for (size_t i = 0; i < N; i++) ref[i] = encode_answer(&answers[i], NULL);
  assert_string_equal(ref[0], "{\"model_name\":\"simple\",\"model_version\":\"1\",\"outputs\":["
                                   "{\"name\":\"OUTPUT0\",\"datatype\":\"INT32\",\"shape\":[1,4],"
                                   "\"data\":[0,0,0,0]},{\"name\":\"OUTPUT1\",\"datatype\":\"INT32\","
                                   "\"shape\":[1,4],\"data\":[0,0,0,0]}]}");
  isv__v2_memo m = {0};
  for (size_t i = 0; i < N; i++)
    for (size_t j = 0; j < N; j++)
      for (int twice = 0; twice < 2; twice++) { /* i then j; i, j then j again */
        free(encode_answer(&answers[i], &m));
        for (int k = 0; k <= twice; k++) {
          char *text = encode_answer(&answers[j], &m);
          if (strcmp(text, ref[j]) != 0)
            fail_msg("answer %zu after answer %zu:\n%s\nagainst\n%s", j, i, text, ref[j]);
          free(text);
        }
      }
  for (size_t i = 0; i < N; i++) free(ref[i]);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(decodes_everything_a_request_carries),
      cmocka_unit_test(every_error_names_the_problem),
      cmocka_unit_test(data_after_its_datatype_and_shape_reads_as_in_any_order),
      cmocka_unit_test(shapes_of_32_dimensions_and_no_more),
      cmocka_unit_test(a_request_reads_the_same_however_it_is_spaced),
      cmocka_unit_test(bytes_that_are_not_utf8_become_b64),
      cmocka_unit_test(binary_inputs_are_taken_in_order_and_in_place),
      cmocka_unit_test(binary_input_errors_name_the_problem),
      cmocka_unit_test(binary_outputs_are_listed_after_the_json),
      cmocka_unit_test(an_input_read_through_a_memo_reads_as_without),
      cmocka_unit_test(an_answer_written_through_a_memo_is_as_without),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
