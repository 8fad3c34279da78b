/* protocol/grps_json.c: grps's GrpsMessage in protobuf's JSON mapping. Decoding: every example
 * of grps's documentation field by field (str_data, model, ndarray, gtensors with the
 * "flat_double" spelling, gmap with every map), lowerCamelCase names, enums by number, int64 and
 * uint32 as strings, NaN/Infinity bare and quoted, FP16 rounding, base64 variants, ndarray
 * shapes; every refusal with its message; the limits (tensors, map entries, depth). Encoding:
 * each kind against its exact text, the types and bytes it refuses, status messages that are
 * not UTF-8. Round trips: decode(encode(decode(x))) == decode(x) field by field. */
#include "cmocka_prelude.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/half.h"
#include "grps_same.h"
#include "protocol/grps_msg.h"

static const isv__grps_limits lim = {.max_tensors = 16, .max_depth = 64};

/* One decode: the body copied into the arena (the message points into it). */
typedef struct dec {
  isv__arena a;
  isv__grps_msg m;
  char err[512];
  int rc;
} dec;

static void decode_lim(dec *d, const char *json, const isv__grps_limits *l) {
  memset(d, 0, sizeof *d);
  size_t n = strlen(json);
  char *body = isv__arena_strndup(&d->a, json, n);
  assert_non_null(body);
  d->rc = isv__grps_json_decode(body, n, l, &d->a, &d->m, d->err, sizeof d->err);
}

static void decode(dec *d, const char *json) { decode_lim(d, json, &lim); }

/* json decodes; d must be released with isv__arena_free(&d->a). */
static void ok(dec *d, const char *json) {
  decode(d, json);
  if (d->rc != 0) fail_msg("%s\n  -> %d %s", json, d->rc, d->err);
}

/* json is refused with ISV_EBADREQ and a message containing want. */
static void refused_lim(const char *json, const char *want, const isv__grps_limits *l) {
  dec d;
  decode_lim(&d, json, l);
  if (d.rc != ISV_EBADREQ || strstr(d.err, want) == NULL)
    fail_msg("%s\n  -> %d '%s', wanted EBADREQ '%s'", json, d.rc, d.err, want);
  assert_int_equal(d.m.kind, ISV__GRPS_NONE); /* no half message */
  isv__arena_free(&d.a);
}

static void refused(const char *json, const char *want) { refused_lim(json, want, &lim); }

static void str_is(const char *p, size_t n, const char *want) {
  if (n != strlen(want) || (n && memcmp(p, want, n) != 0))
    fail_msg("'%.*s' != '%s'", (int)n, p ? p : "", want);
}

static void shape_is(const isv_tensor *t, size_t ndim, const int64_t *want) {
  assert_int_equal(t->ndim, ndim);
  for (size_t i = 0; i < ndim; i++) assert_int_equal(t->shape[i], want[i]);
}

static const isv__grps_entry *entry(const isv__grps_msg *m, isv__grps_map map, const char *key) {
  const isv__grps_entry *found = NULL;
  for (size_t i = 0; i < m->n_entries; i++)
    if (m->entries[i].map == map && strcmp(m->entries[i].key, key) == 0) found = &m->entries[i];
  assert_non_null(found);
  return found;
}

/* ---- grps's documentation -------------------------------------------------------------------- */

static void doc_str_data(void **state) {
  (void)state;
  dec d;
  ok(&d, "{\"str_data\": \"hello grps\"}");
  assert_int_equal(d.m.kind, ISV__GRPS_STR_DATA);
  str_is(d.m.data, d.m.data_len, "hello grps");
  assert_int_equal(d.m.model_len, 0);
  assert_int_equal(d.m.has_status, 0);
  assert_int_equal(d.m.n_tensors, 0);
  assert_int_equal(d.m.n_entries, 0);
  isv__arena_free(&d.a);
  ok(&d, "{\"model\": \"your_model-1.0.0\", \"str_data\": \"hello grps\"}");
  str_is(d.m.model, d.m.model_len, "your_model-1.0.0");
  str_is(d.m.data, d.m.data_len, "hello grps");
  isv__arena_free(&d.a);
  ok(&d, "{\"str_data\": \"tab\\tquote\\\" \\u00e9\"}"); /* unescaped in place */
  str_is(d.m.data, d.m.data_len, "tab\tquote\" \xC3\xA9");
  isv__arena_free(&d.a);
}

static void doc_ndarray(void **state) {
  (void)state;
  dec d;
  ok(&d, "{\"ndarray\": [[[1, 2, 3], [4, 5, 6]], [[7, 8, 9], [10, 11, 12]]]}");
  assert_int_equal(d.m.kind, ISV__GRPS_NDARRAY);
  assert_int_equal(d.m.n_tensors, 1);
  const isv_tensor *t = &d.m.tensors[0];
  assert_string_equal(t->name, "");
  assert_int_equal(t->dt, ISV_FP32);
  shape_is(t, 3, (const int64_t[]){2, 2, 3});
  assert_int_equal(t->count, 12);
  assert_int_equal(t->byte_size, 48);
  for (int i = 0; i < 12; i++) assert_true(((const float *)t->data)[i] == (float)(i + 1));
  isv__arena_free(&d.a);
}

static void doc_gtensors(void **state) {
  (void)state;
  dec d;
  ok(&d, "{\"gtensors\": {\"tensors\": [{\"name\": \"in1\", \"dtype\": \"DT_INT32\", \"shape\": "
         "[3, 2], \"flat_int32\": [1, 2, 3, 4, 5, 6]}, {\"name\": \"in2\", \"dtype\": "
         "\"DT_FLOAT64\", \"shape\": [3, 3], \"flat_double\": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, "
         "8.0, 9.0]}]}}");
  assert_int_equal(d.m.kind, ISV__GRPS_GTENSORS);
  assert_int_equal(d.m.n_tensors, 2);
  const isv_tensor *a = &d.m.tensors[0], *b = &d.m.tensors[1];
  assert_string_equal(a->name, "in1");
  assert_int_equal(a->dt, ISV_INT32);
  shape_is(a, 2, (const int64_t[]){3, 2});
  assert_int_equal(a->count, 6);
  assert_int_equal(a->byte_size, 24);
  for (int i = 0; i < 6; i++) assert_int_equal(((const int32_t *)a->data)[i], i + 1);
  assert_string_equal(b->name, "in2");
  assert_int_equal(b->dt, ISV_FP64);
  shape_is(b, 2, (const int64_t[]){3, 3});
  assert_int_equal(b->count, 9);
  assert_int_equal(b->byte_size, 72);
  for (int i = 0; i < 9; i++) assert_true(((const double *)b->data)[i] == i + 1.0);
  isv__arena_free(&d.a);
}

static void doc_gmap(void **state) {
  (void)state;
  dec d;
  ok(&d, "{\"gmap\": {\"s_s\": {\"a\": \"x\"}, \"s_b\": {\"k\": \"aGVsbG8=\"}, \"s_i32\": "
         "{\"n\": 3}, \"s_i64\": {\"big\": \"9007199254740993\"}, \"s_f\": {\"f\": 1.5}, \"s_d\": "
         "{\"d\": 2.5}, \"s_t\": {\"t\": {\"dtype\": \"DT_FLOAT32\", \"shape\": [2], "
         "\"flat_float32\": [1, 2]}}}}");
  assert_int_equal(d.m.kind, ISV__GRPS_GMAP);
  assert_int_equal(d.m.n_entries, 7);
  const isv__grps_entry *e = entry(&d.m, ISV__GRPS_S_S, "a");
  assert_int_equal(e->key_len, 1);
  str_is(e->v.s.p, e->v.s.n, "x");
  e = entry(&d.m, ISV__GRPS_S_B, "k");
  str_is(e->v.s.p, e->v.s.n, "hello");
  assert_int_equal(entry(&d.m, ISV__GRPS_S_I32, "n")->v.i, 3);
  assert_int_equal(entry(&d.m, ISV__GRPS_S_I64, "big")->v.i, 9007199254740993LL);
  assert_true(entry(&d.m, ISV__GRPS_S_F, "f")->v.f == 1.5f);
  assert_true(entry(&d.m, ISV__GRPS_S_D, "d")->v.d == 2.5);
  e = entry(&d.m, ISV__GRPS_S_T, "t");
  assert_string_equal(e->t.name, "");
  assert_int_equal(e->t.dt, ISV_FP32);
  shape_is(&e->t, 1, (const int64_t[]){2});
  assert_int_equal(e->t.count, 2);
  assert_true(((const float *)e->t.data)[0] == 1.0f && ((const float *)e->t.data)[1] == 2.0f);
  /* wire order across the maps */
  assert_int_equal(d.m.entries[0].map, ISV__GRPS_S_S);
  assert_int_equal(d.m.entries[6].map, ISV__GRPS_S_T);
  isv__arena_free(&d.a);
}

static void doc_replies(void **state) {
  (void)state;
  dec d;
  ok(&d, "{\"status\": {\"code\": 200, \"msg\": \"OK\", \"status\": \"SUCCESS\"}, \"str_data\": "
         "\"hello grps\"}");
  assert_int_equal(d.m.has_status, 1);
  assert_int_equal(d.m.code, 200);
  str_is(d.m.msg, d.m.msg_len, "OK");
  assert_int_equal(d.m.flag, ISV__GRPS_SUCCESS);
  str_is(d.m.data, d.m.data_len, "hello grps");
  isv__arena_free(&d.a);
  ok(&d, "{\"status\": {\"code\": 200, \"msg\": \"OK\", \"status\": \"SUCCESS\"}, \"ndarray\": "
         "[[1.5]]}");
  assert_int_equal(d.m.kind, ISV__GRPS_NDARRAY);
  shape_is(&d.m.tensors[0], 2, (const int64_t[]){1, 1});
  isv__arena_free(&d.a);
  ok(&d, "{\"status\": {\"code\": 500, \"msg\": \"boom\", \"status\": \"FAILURE\"}}");
  assert_int_equal(d.m.code, 500);
  assert_int_equal(d.m.flag, ISV__GRPS_FAILURE);
  assert_int_equal(d.m.kind, ISV__GRPS_NONE);
  isv__arena_free(&d.a);
  ok(&d, "{\"status\": {}}"); /* present, every field default */
  assert_int_equal(d.m.has_status, 1);
  assert_int_equal(d.m.code, 0);
  assert_int_equal(d.m.flag, ISV__GRPS_UNKNOWN);
  isv__arena_free(&d.a);
  ok(&d, "{}");
  assert_int_equal(d.m.kind, ISV__GRPS_NONE);
  assert_int_equal(d.m.has_status, 0);
  isv__arena_free(&d.a);
}

/* ---- names, enums, numbers ------------------------------------------------------------------- */

static void camel_case(void **state) {
  (void)state;
  dec d;
  ok(&d, "{\"strData\": \"s\", \"MODEL\": \"m\"}");
  str_is(d.m.data, d.m.data_len, "s");
  str_is(d.m.model, d.m.model_len, "m");
  isv__arena_free(&d.a);
  ok(&d, "{\"gtensors\": {\"tensors\": [{\"name\": \"x\", \"dtype\": \"DT_INT8\", \"flatInt8\": "
         "[-128, 127]}, {\"flatFloat\": [0.5], \"Dtype\": \"DT_FLOAT32\"}]}}");
  assert_int_equal(d.m.tensors[0].dt, ISV_INT8);
  assert_int_equal(((const int8_t *)d.m.tensors[0].data)[0], -128);
  assert_int_equal(d.m.tensors[1].dt, ISV_FP32);
  isv__arena_free(&d.a);
  ok(&d, "{\"gmap\": {\"sI32\": {\"n\": -2147483648}, \"sT\": {\"x\": {\"flatString\": "
         "[\"a\"]}}}}");
  assert_int_equal(entry(&d.m, ISV__GRPS_S_I32, "n")->v.i, INT32_MIN);
  assert_int_equal(entry(&d.m, ISV__GRPS_S_T, "x")->t.dt, ISV_BYTES);
  isv__arena_free(&d.a);
  refused("{\"binData\": \"aGk=\"}", "application/octet-stream");
}

static void enums_by_number(void **state) {
  (void)state;
  dec d;
  ok(&d, "{\"status\": {\"code\": \"404\", \"status\": 2}, \"gtensors\": {\"tensors\": "
         "[{\"dtype\": 4, \"flat_int32\": [7]}, {\"dtype\": 0, \"flat_uint8\": [255]}, "
         "{\"dtype\": \"DT_INVALID\", \"flat_string\": [\"s\", \"\"]}, {\"dtype\": 6, "
         "\"flat_float16\": [1]}]}}");
  assert_int_equal(d.m.code, 404);
  assert_int_equal(d.m.flag, ISV__GRPS_FAILURE);
  assert_int_equal(d.m.tensors[0].dt, ISV_INT32);
  assert_int_equal(d.m.tensors[1].dt, ISV_UINT8); /* DT_INVALID: the data's field says it */
  assert_int_equal(((const uint8_t *)d.m.tensors[1].data)[0], 255);
  const isv_tensor *s = &d.m.tensors[2];
  assert_int_equal(s->dt, ISV_BYTES);
  assert_int_equal(s->count, 2);
  assert_int_equal(s->byte_size, 1);
  str_is(((const isv_bytes *)s->data)[0].ptr, ((const isv_bytes *)s->data)[0].len, "s");
  assert_int_equal(d.m.tensors[3].dt, ISV_FP16);
  assert_int_equal(((const uint16_t *)d.m.tensors[3].data)[0], 0x3C00);
  isv__arena_free(&d.a);
  refused("{\"gtensors\": {\"tensors\": [{\"dtype\": 10, \"flat_int32\": [1]}]}}",
          "gtensors.tensors[0].dtype: unknown DataType number 10");
  refused("{\"gtensors\": {\"tensors\": [{\"dtype\": \"DT_BOOL\", \"flat_int32\": [1]}]}}",
          "unknown DataType 'DT_BOOL'");
  refused("{\"gtensors\": {\"tensors\": [{\"dtype\": \"7\", \"flat_int32\": [1]}]}}",
          "unknown DataType '7'");
  refused("{\"gtensors\": {\"tensors\": [{\"dtype\": 4.5}]}}", "unknown DataType number 4.5");
  refused("{\"gtensors\": {\"tensors\": [{\"dtype\": true}]}}",
          "dtype must be a DataType name or number, got a boolean");
  refused("{\"status\": {\"status\": \"OK\"}}", "status.status: unknown StatusFlag 'OK'");
  refused("{\"status\": {\"status\": 3}}", "status.status: unknown StatusFlag number 3");
  refused("{\"status\": {\"code\": 2147483648}}", "status.code: '2147483648' is not an integer");
}

static void int64_values(void **state) {
  (void)state;
  dec d;
  ok(&d, "{\"gtensors\": {\"tensors\": [{\"dtype\": \"DT_INT64\", \"shape\": [\"4\"], "
         "\"flat_int64\": [\"9007199254740993\", -9223372036854775808, \"-1\", 0]}]}, "
         "\"model\": null}");
  const int64_t *v = d.m.tensors[0].data;
  assert_int_equal(v[0], 9007199254740993LL);
  assert_true(v[1] == INT64_MIN);
  assert_int_equal(v[2], -1);
  assert_int_equal(v[3], 0);
  shape_is(&d.m.tensors[0], 1, (const int64_t[]){4});
  isv__arena_free(&d.a);
  ok(&d, "{\"gmap\": {\"s_i64\": {\"a\": -5, \"b\": \"9223372036854775807\"}}}");
  assert_int_equal(entry(&d.m, ISV__GRPS_S_I64, "a")->v.i, -5);
  assert_true(entry(&d.m, ISV__GRPS_S_I64, "b")->v.i == INT64_MAX);
  isv__arena_free(&d.a);
  refused("{\"gtensors\": {\"tensors\": [{\"flat_int64\": [\"9223372036854775808\"]}]}}",
          "out of range for INT64");
  refused("{\"gtensors\": {\"tensors\": [{\"flat_int64\": [\"12abc\"]}]}}",
          "gtensors.tensors[0].flat_int64: element 0: \"12abc\" is not a number");
  refused("{\"gtensors\": {\"tensors\": [{\"flat_int64\": [1.5]}]}}", "is not an integer");
  refused("{\"gmap\": {\"s_i64\": {\"k\": \"1e3\"}}}", "gmap.s_i64['k']: '1e3' is not an integer");
  refused("{\"gmap\": {\"s_i32\": {\"k\": 2147483648}}}", "gmap.s_i32['k']: '2147483648'");
  refused("{\"gmap\": {\"s_i32\": {\"k\": [1]}}}",
          "gmap.s_i32['k'] must be an integer, got an array");
}

static void float_values(void **state) {
  (void)state;
  dec d;
  ok(&d, "{\"gtensors\": {\"tensors\": [{\"flat_float32\": [NaN, \"NaN\", Infinity, \"-Infinity\","
         " 0.1, -0]}, {\"flat_float64\": [\"Infinity\", 1e400, 5e-324]}, {\"flat_float16\": [0.1, "
         "65520, -0, \"NaN\", 6e-8]}]}}");
  const float *f = d.m.tensors[0].data;
  assert_true(isnan(f[0]) && isnan(f[1]));
  assert_true(isinf(f[2]) && f[2] > 0 && isinf(f[3]) && f[3] < 0);
  assert_true(f[4] == 0.1f);
  assert_true(f[5] == 0 && signbit(f[5]));
  const double *g = d.m.tensors[1].data;
  assert_true(isinf(g[0]) && isinf(g[1]) && g[2] == 5e-324);
  const uint16_t *h = d.m.tensors[2].data;
  assert_int_equal(h[0], 0x2E66); /* 0.1 rounded to nearest even */
  assert_int_equal(h[1], 0x7C00); /* 65520: halfway to the next, rounds to infinity */
  assert_int_equal(h[2], 0x8000);
  assert_true(isnan(isv__f16_to_f32(h[3])));
  assert_int_equal(h[4], 0x0001); /* the smallest subnormal */
  assert_int_equal(d.m.tensors[2].dt, ISV_FP16);
  assert_int_equal(d.m.tensors[2].byte_size, 10);
  isv__arena_free(&d.a);
  ok(&d, "{\"gmap\": {\"s_f\": {\"n\": \"NaN\", \"i\": -Infinity}, \"s_d\": {\"x\": \"1.25\"}}}");
  assert_true(isnan(entry(&d.m, ISV__GRPS_S_F, "n")->v.f));
  assert_true(isinf(entry(&d.m, ISV__GRPS_S_F, "i")->v.f));
  assert_true(entry(&d.m, ISV__GRPS_S_D, "x")->v.d == 1.25);
  isv__arena_free(&d.a);
  refused("{\"gmap\": {\"s_f\": {\"n\": \"nan\"}}}", "gmap.s_f['n']: 'nan' is not a number");
  refused("{\"gmap\": {\"s_d\": {\"n\": true}}}", "gmap.s_d['n'] must be a number, got a boolean");
  refused("{\"gtensors\": {\"tensors\": [{\"flat_float32\": [1, \"x\"]}]}}",
          "flat_float32: element 1: \"x\" is not a number");
  refused("{\"gtensors\": {\"tensors\": [{\"flat_float32\": [1, null]}]}}",
          "flat_float32: element 1: expected a number, got null");
  refused("{\"gtensors\": {\"tensors\": [{\"flat_float32\": [[1]]}]}}",
          "element 0: expected a number, got an array");
  refused("{\"gtensors\": {\"tensors\": [{\"flat_float32\": 1}]}}",
          "gtensors.tensors[0].flat_float32 must be an array, got a number");
}

static void small_int_ranges(void **state) {
  (void)state;
  refused("{\"gtensors\": {\"tensors\": [{\"name\": \"q\", \"flat_int8\": [1, 128]}]}}",
          "gtensors.tensors[0].flat_int8: element 1: 128 is out of range for INT8");
  refused("{\"gtensors\": {\"tensors\": [{\"flat_int16\": [-32769]}]}}", "out of range for INT16");
  refused("{\"gtensors\": {\"tensors\": [{\"flat_uint8\": [256]}]}}", "out of range for UINT8");
  refused("{\"gtensors\": {\"tensors\": [{\"flat_uint8\": [-1]}]}}", "out of range for UINT8");
  refused("{\"gtensors\": {\"tensors\": [{\"flat_int32\": [true]}]}}",
          "element 0: expected a number, got a boolean");
  refused("{\"gtensors\": {\"tensors\": [{\"flat_string\": [\"a\", 1]}]}}",
          "flat_string: element 1: expected a string, got a number");
  refused("{\"gtensors\": {\"tensors\": [{\"flat_string\": [{\"b64\": \"aGk=\"}]}]}}",
          "flat_string: element 0: expected a string, got an object");
}

/* ---- gmap ------------------------------------------------------------------------------------ */

static void gmap_base64(void **state) {
  (void)state;
  dec d;
  ok(&d, "{\"gmap\": {\"s_b\": {\"std\": \"+/8=\", \"url\": \"-_8\", \"nopad\": \"aGVsbG8\", "
         "\"two\": \"aGk\", \"empty\": \"\", \"dup\": \"YQ==\", \"dup\": \"Yg==\"}}}");
  str_is(entry(&d.m, ISV__GRPS_S_B, "std")->v.s.p, 2, "\xFB\xFF");
  const isv__grps_entry *e = entry(&d.m, ISV__GRPS_S_B, "url");
  str_is(e->v.s.p, e->v.s.n, "\xFB\xFF");
  e = entry(&d.m, ISV__GRPS_S_B, "nopad");
  str_is(e->v.s.p, e->v.s.n, "hello");
  e = entry(&d.m, ISV__GRPS_S_B, "two");
  str_is(e->v.s.p, e->v.s.n, "hi");
  assert_int_equal(entry(&d.m, ISV__GRPS_S_B, "empty")->v.s.n, 0);
  /* a repeated key stays: the last one wins for whoever reads the map */
  assert_int_equal(d.m.n_entries, 7);
  e = entry(&d.m, ISV__GRPS_S_B, "dup");
  str_is(e->v.s.p, e->v.s.n, "b");
  isv__arena_free(&d.a);
  refused("{\"gmap\": {\"s_b\": {\"img\": \"a\"}}}", "gmap.s_b['img'] is not valid base64");
  refused("{\"gmap\": {\"s_b\": {\"img\": \"aG!s\"}}}", "gmap.s_b['img'] is not valid base64");
  refused("{\"gmap\": {\"s_b\": {\"img\": \"a=Gs\"}}}", "gmap.s_b['img'] is not valid base64");
  refused("{\"gmap\": {\"s_b\": {\"img\": 5}}}", "gmap.s_b['img'] must be a base64 string");
}

static void gmap_refusals(void **state) {
  (void)state;
  dec d;
  ok(&d, "{\"gmap\": {\"s_s\": null, \"s_d\": {}}}");
  assert_int_equal(d.m.kind, ISV__GRPS_GMAP);
  assert_int_equal(d.m.n_entries, 0);
  isv__arena_free(&d.a);
  refused("{\"gmap\": {\"s_x\": {}}}", "unknown field 's_x' in GenericMapData");
  refused("{\"gmap\": {\"s_s\": {\"k\": null}}}", "gmap.s_s['k']: a map value cannot be null");
  refused("{\"gmap\": {\"s_s\": {\"k\": 1}}}", "gmap.s_s['k'] must be a string, got a number");
  refused("{\"gmap\": {\"s_s\": []}}", "gmap.s_s must be an object (a map), got an array");
  refused("{\"gmap\": {\"s_s\": {}, \"sS\": {}}}", "field 'sS' given twice in GenericMapData");
  refused("{\"gmap\": []}", "gmap must be a GenericMapData object, got an array");
  refused("{\"gmap\": {\"s_t\": {\"t\": [1]}}}", "gmap.s_t['t'] must be a GenericTensor object");
  refused("{\"gmap\": {\"s_t\": {\"t\": {\"dtype\": \"DT_INT32\", \"flat_float32\": [1]}}}}",
          "gmap.s_t['t']: dtype DT_INT32 takes its data in flat_int32, not in flat_float32");
  refused("{\"gmap\": {\"s_t\": {\"t\": {\"bogus\": 1}}}}",
          "unknown field 'bogus' in GenericTensor at gmap.s_t['t']");
}

/* ---- ndarray --------------------------------------------------------------------------------- */

static void ndarray_shapes(void **state) {
  (void)state;
  dec d;
  ok(&d, "{\"ndarray\": [1, 2.5, -3]}");
  shape_is(&d.m.tensors[0], 1, (const int64_t[]){3});
  assert_true(((const float *)d.m.tensors[0].data)[1] == 2.5f);
  isv__arena_free(&d.a);
  ok(&d, "{\"ndarray\": [[1], [2]]}");
  shape_is(&d.m.tensors[0], 2, (const int64_t[]){2, 1});
  isv__arena_free(&d.a);
  ok(&d, "{\"ndarray\": [[[[NaN]]]]}");
  shape_is(&d.m.tensors[0], 4, (const int64_t[]){1, 1, 1, 1});
  assert_true(isnan(((const float *)d.m.tensors[0].data)[0]));
  isv__arena_free(&d.a);
  ok(&d, "{\"ndarray\": []}");
  shape_is(&d.m.tensors[0], 1, (const int64_t[]){0});
  assert_int_equal(d.m.tensors[0].count, 0);
  isv__arena_free(&d.a);
  /* 32 dimensions: the most */
  char deep[200];
  snprintf(deep, sizeof deep, "{\"ndarray\": %.*s1%.*s}", 32,
           "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[", 32,
           "]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]");
  ok(&d, deep);
  assert_int_equal(d.m.tensors[0].ndim, 32);
  isv__arena_free(&d.a);
  snprintf(deep, sizeof deep, "{\"ndarray\": %.*s1%.*s}", 33,
           "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[", 33,
           "]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]");
  refused(deep, "lists nested deeper than 32 dimensions");
}

static void ndarray_refusals(void **state) {
  (void)state;
  refused("{\"ndarray\": [[1, 2], [3]]}",
          "ndarray[1]: ragged: a list of 1 where the others have 2");
  refused("{\"ndarray\": [[1], [[2]]]}", "ndarray[1][0]: ragged: a list where the others have a "
                                          "number");
  refused("{\"ndarray\": [[[1]], [2]]}", "ndarray[1][0]: ragged: a number where the others have "
                                          "a list");
  refused("{\"ndarray\": [1, [2]]}", "ndarray[1]: ragged: a list");
  refused("{\"ndarray\": [[]]}", "ndarray[0]: an empty list inside an ndarray");
  refused("{\"ndarray\": [[1], []]}", "ndarray[1]: an empty list");
  refused("{\"ndarray\": [[1, \"2\"]]}",
          "ndarray[0][1]: expected a number or a list, got a string");
  refused("{\"ndarray\": [1, {}]}", "ndarray[1]: expected a number or a list, got an object");
  refused("{\"ndarray\": 5}", "ndarray must be an array (nested lists of numbers), got a number");
  refused("{\"ndarray\": {}}", "ndarray must be an array");
}

/* ---- tensors --------------------------------------------------------------------------------- */

static void tensor_rules(void **state) {
  (void)state;
  dec d;
  /* data before dtype and shape; an empty field of another type is no data */
  ok(&d, "{\"gtensors\": {\"tensors\": [{\"flat_int16\": [1, -2, 3, 4], \"flat_float32\": [], "
         "\"shape\": [2, 2], \"name\": \"late\", \"dtype\": \"DT_INT16\"}]}}");
  const isv_tensor *t = &d.m.tensors[0];
  assert_string_equal(t->name, "late");
  assert_int_equal(t->dt, ISV_INT16);
  shape_is(t, 2, (const int64_t[]){2, 2});
  assert_int_equal(((const int16_t *)t->data)[1], -2);
  isv__arena_free(&d.a);
  /* a dtype and no data: shape [0] or a zero dimension */
  ok(&d, "{\"gtensors\": {\"tensors\": [{\"dtype\": \"DT_STRING\"}, {\"dtype\": \"DT_FLOAT32\", "
         "\"shape\": [3, 0]}, {\"dtype\": \"DT_INT32\", \"shape\": [], \"flat_int32\": [5]}]}}");
  shape_is(&d.m.tensors[0], 1, (const int64_t[]){0});
  assert_int_equal(d.m.tensors[0].dt, ISV_BYTES);
  shape_is(&d.m.tensors[1], 2, (const int64_t[]){3, 0});
  shape_is(&d.m.tensors[2], 1, (const int64_t[]){1}); /* "shape": [] is no shape */
  isv__arena_free(&d.a);
  ok(&d, "{\"gtensors\": {\"tensors\": []}}");
  assert_int_equal(d.m.kind, ISV__GRPS_GTENSORS);
  assert_int_equal(d.m.n_tensors, 0);
  isv__arena_free(&d.a);
  ok(&d, "{\"gtensors\": {\"tensors\": null}}");
  assert_int_equal(d.m.kind, ISV__GRPS_GTENSORS);
  isv__arena_free(&d.a);
  refused("{\"gtensors\": {\"tensors\": [{\"name\": \"x\", \"dtype\": \"DT_FLOAT64\", "
          "\"flat_float32\": [1]}]}}",
          "tensor 'x' (gtensors.tensors[0]): dtype DT_FLOAT64 takes its data in flat_float64, not "
          "in flat_float32");
  refused("{\"gtensors\": {\"tensors\": [{\"flat_int32\": [1], \"flat_float32\": [1]}]}}",
          "gtensors.tensors[0] has data in both flat_int32 and flat_float32");
  refused("{\"gtensors\": {\"tensors\": [{\"name\": \"x\", \"shape\": [2, 2], \"flat_int32\": [1, "
          "2, 3]}]}}", "tensor 'x' (gtensors.tensors[0]): shape [2,2] does not match the 3 "
          "elements of flat_int32");
  refused("{\"gtensors\": {\"tensors\": [{\"shape\": [4294967295, 4294967295, 4294967295], "
          "\"flat_int32\": [1]}]}}", "does not match the 1 elements");
  refused("{\"gtensors\": {\"tensors\": [{\"name\": \"e\"}]}}",
          "tensor 'e' (gtensors.tensors[0]) has no dtype and no data");
  refused("{\"gtensors\": {\"tensors\": [{\"shape\": [-1], \"flat_int32\": [1]}]}}",
          "gtensors.tensors[0].shape[0]: '-1' is not an integer in [0, 4294967295]");
  refused("{\"gtensors\": {\"tensors\": [{\"shape\": [4294967296]}]}}", "shape[0]: '4294967296'");
  refused("{\"gtensors\": {\"tensors\": [{\"shape\": 3}]}}",
          "gtensors.tensors[0].shape must be an array of dimensions, got a number");
  refused("{\"gtensors\": {\"tensors\": [{\"shape\": [1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,"
          "1,1,1,1,1,1,1,1,1,1,1]}]}}", "gtensors.tensors[0].shape has more than 32 dimensions");
  refused("{\"gtensors\": {\"tensors\": [{\"name\": 1}]}}",
          "gtensors.tensors[0].name must be a string, got a number");
  refused("{\"gtensors\": {\"tensors\": [{\"flat_float\": [1], \"flat_float32\": [1]}]}}",
          "field 'flat_float32' given twice in GenericTensor at gtensors.tensors[0]");
  refused("{\"gtensors\": {\"tensors\": [{\"flat_bool\": [true]}]}}",
          "unknown field 'flat_bool' in GenericTensor at gtensors.tensors[0]");
  refused("{\"gtensors\": {\"tensors\": [{\"flat_int32\": [1]}, 5]}}",
          "gtensors.tensors[1] must be a GenericTensor object, got a number");
  refused("{\"gtensors\": {\"tensors\": {}}}",
          "gtensors.tensors must be an array of GenericTensor objects, got an object");
  refused("{\"gtensors\": {\"tensor\": []}}", "unknown field 'tensor' in GenericTensorData");
  refused("{\"gtensors\": []}", "gtensors must be a GenericTensorData object");
}

/* ---- refusals of the message ----------------------------------------------------------------- */

static void message_refusals(void **state) {
  (void)state;
  refused("", "empty body");
  refused(" \r\n\t", "empty body");
  refused("[]", "a GrpsMessage must be a JSON object, got an array");
  refused("\"x\"", "a GrpsMessage must be a JSON object, got a string");
  refused("{\"str_data\": \"a\"} x", "GrpsMessage: ");
  refused("{\"str_data\": \"a\"", "GrpsMessage: ");
  refused("{\"str_data\": \"\\ud800\"}", "lone surrogate");
  refused("{\"str_data\": \"\xC3\x28\"}", "invalid UTF-8");
  refused("{\"foo\": 1}", "unknown field 'foo' in GrpsMessage");
  refused("{\"status\": {\"details\": 1}}", "unknown field 'details' in Status");
  refused("{\"str_data\": \"a\", \"gtensors\": {}}",
          "GrpsMessage has both 'str_data' and 'gtensors'");
  refused("{\"ndarray\": [1], \"gmap\": {}}", "GrpsMessage has both 'ndarray' and 'gmap'");
  refused("{\"bin_data\": \"aGk=\"}", "'bin_data' cannot be sent in JSON: send the bytes "
                                      "themselves as the request body with Content-Type: "
                                      "application/octet-stream");
  refused("{\"model\": \"a\", \"model\": \"b\"}", "field 'model' given twice in GrpsMessage");
  refused("{\"model\": 1}", "model must be a string, got a number");
  refused("{\"str_data\": 1}", "str_data must be a string, got a number");
  refused("{\"status\": 200}", "status must be a Status object, got a number");
  refused("{\"status\": {\"msg\": 1}}", "status.msg must be a string");
  /* a long unknown key is cut on a character boundary */
  refused("{\"\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3"
          "\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3"
          "\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9"
          "\xC3\xA9\xC3\xA9\xC3\xA9\": 1}", "' in GrpsMessage");
  dec d;
  /* null is absence: also for a data member, so another one may follow */
  ok(&d, "{\"str_data\": null, \"gtensors\": null, \"gmap\": {}, \"status\": null, \"bin_data\": "
         "null}");
  assert_int_equal(d.m.kind, ISV__GRPS_GMAP);
  assert_int_equal(d.m.has_status, 0);
  isv__arena_free(&d.a);
}

static void limits(void **state) {
  (void)state;
  isv__grps_limits two = {.max_tensors = 2, .max_depth = 64};
  dec d;
  decode_lim(&d, "{\"gtensors\": {\"tensors\": [{\"flat_int32\": [1]}, {\"flat_int32\": [2]}]}}",
             &two);
  assert_int_equal(d.rc, 0);
  isv__arena_free(&d.a);
  refused_lim("{\"gtensors\": {\"tensors\": [{}, {}, {}]}}",
              "gtensors.tensors holds more than 2 tensors (the server's limit)", &two);
  decode_lim(&d, "{\"gmap\": {\"s_s\": {\"a\": \"\"}, \"s_i32\": {\"b\": 1}}}", &two);
  assert_int_equal(d.rc, 0);
  isv__arena_free(&d.a);
  refused_lim("{\"gmap\": {\"s_s\": {\"a\": \"\"}, \"s_i32\": {\"b\": 1}, \"s_d\": {\"c\": 1}}}",
              "gmap holds more than 2 entries (the server's limit)", &two);
  isv__grps_limits shallow = {.max_tensors = 8, .max_depth = 3};
  decode_lim(&d, "{\"ndarray\": [[1]]}", &shallow);
  assert_int_equal(d.rc, 0);
  isv__arena_free(&d.a);
  refused_lim("{\"ndarray\": [[[1]]]}", "ndarray: ", &shallow);
  refused_lim("{\"gtensors\": {\"tensors\": [{\"flat_int32\": [1]}]}}", "gtensors.tensors",
              &shallow);
  /* many elements: the arrays grow in the arena */
  size_t n = 20000;
  char *big = malloc(n * 4 + 64);
  size_t w = (size_t)sprintf(big, "{\"ndarray\": [");
  for (size_t i = 0; i < n; i++) w += (size_t)sprintf(big + w, "%s%zu", i ? "," : "", i % 10);
  strcpy(big + w, "]}");
  ok(&d, big);
  assert_int_equal(d.m.tensors[0].count, n);
  assert_true(((const float *)d.m.tensors[0].data)[n - 1] == (float)((n - 1) % 10));
  isv__arena_free(&d.a);
  free(big);
}

/* ---- encoding -------------------------------------------------------------------------------- */

static char *encode_ok(const isv__grps_msg *m, isv__buf *b) {
  char err[256];
  isv__buf_init(b, NULL);
  int rc = isv__grps_json_encode(m, b, err, sizeof err);
  if (rc != 0) fail_msg("encode: %d %s", rc, err);
  isv__buf_putc(b, '\0');
  return b->data;
}

static void encodes_to(const isv__grps_msg *m, const char *want) {
  isv__buf b;
  const char *got = encode_ok(m, &b);
  if (strcmp(got, want) != 0) fail_msg("got  %s\nwant %s", got, want);
  isv__buf_free(&b);
}

static void encode_refused(const isv__grps_msg *m, const char *want) {
  char err[256];
  isv__buf b;
  isv__buf_init(&b, NULL);
  int rc = isv__grps_json_encode(m, &b, err, sizeof err);
  if (rc != ISV_EINVAL || strstr(err, want) == NULL)
    fail_msg("encode -> %d '%s', wanted EINVAL '%s'", rc, err, want);
  assert_int_equal(b.len, 0); /* checked before anything is written */
  isv__buf_free(&b);
}

static void encode_simple(void **state) {
  (void)state;
  isv__grps_msg m = {0};
  encodes_to(&m, "{}");
  m.has_status = 1;
  m.code = 200;
  m.msg = "OK";
  m.msg_len = 2;
  m.flag = ISV__GRPS_SUCCESS;
  m.kind = ISV__GRPS_STR_DATA;
  m.data = "hello grps";
  m.data_len = 10;
  encodes_to(&m, "{\"status\":{\"code\":200,\"msg\":\"OK\",\"status\":\"SUCCESS\"},\"str_data\":"
                 "\"hello grps\"}");
  m.model = "m-1";
  m.model_len = 3;
  m.flag = ISV__GRPS_FAILURE;
  m.code = -1;
  m.msg = "bad \xFF\"x\"\xE2\x82";
  m.msg_len = 10;
  m.data = "a\nb";
  m.data_len = 3;
  encodes_to(&m, "{\"status\":{\"code\":-1,\"msg\":\"bad \xEF\xBF\xBD\\\"x\\\"\xEF\xBF\xBD\xEF\xBF"
                 "\xBD\",\"status\":\"FAILURE\"},\"model\":\"m-1\",\"str_data\":\"a\\nb\"}");
  memset(&m, 0, sizeof m);
  m.has_status = 1;
  m.kind = ISV__GRPS_BIN_DATA;
  m.data = "\x00\xFFhi";
  m.data_len = 4;
  encodes_to(&m, "{\"status\":{\"code\":0,\"msg\":\"\",\"status\":\"UNKNOWN\"},\"bin_data\":"
                 "\"AP9oaQ==\"}");
  m.has_status = 0;
  m.kind = ISV__GRPS_STR_DATA;
  m.data = "\xC3";
  m.data_len = 1;
  encode_refused(&m, "str_data is not valid UTF-8");
}

static void encode_gtensors(void **state) {
  (void)state;
  int64_t s2[] = {2}, s3[] = {3}, s21[] = {2, 1};
  int64_t i64[] = {1, -9007199254740993LL};
  float f32[] = {1.5f, NAN, 0.1f};
  uint16_t f16[] = {0x3C00, 0x7C00};
  isv_bytes strs[] = {{"a\"b", 3}, {"", 0}};
  int8_t i8[] = {-128, 127};
  double f64[] = {-INFINITY, 1e-300};
  isv_tensor t[] = {
      {.name = "out", .dt = ISV_INT64, .shape = s2, .ndim = 1, .data = i64, .count = 2},
      {.name = "", .dt = ISV_FP32, .shape = s3, .ndim = 1, .data = f32, .count = 3},
      {.name = "h", .dt = ISV_FP16, .shape = s21, .ndim = 2, .data = f16, .count = 2},
      {.name = "s", .dt = ISV_BYTES, .shape = s2, .ndim = 1, .data = strs, .count = 2},
      {.name = "q", .dt = ISV_INT8, .shape = s2, .ndim = 1, .data = i8, .count = 2},
      {.name = NULL, .dt = ISV_FP64, .shape = s2, .ndim = 1, .data = f64, .count = 2},
  };
  isv__grps_msg m = {.kind = ISV__GRPS_GTENSORS, .tensors = t, .n_tensors = 6};
  encodes_to(&m, "{\"gtensors\":{\"tensors\":["
                 "{\"name\":\"out\",\"dtype\":\"DT_INT64\",\"shape\":[2],\"flat_int64\":[\"1\","
                 "\"-9007199254740993\"]},"
                 "{\"name\":\"\",\"dtype\":\"DT_FLOAT32\",\"shape\":[3],\"flat_float32\":[1.5,NaN,"
                 "0.1]},"
                 "{\"name\":\"h\",\"dtype\":\"DT_FLOAT16\",\"shape\":[2,1],\"flat_float16\":[1.0,"
                 "Infinity]},"
                 "{\"name\":\"s\",\"dtype\":\"DT_STRING\",\"shape\":[2],\"flat_string\":["
                 "\"a\\\"b\",\"\"]},"
                 "{\"name\":\"q\",\"dtype\":\"DT_INT8\",\"shape\":[2],\"flat_int8\":[-128,127]},"
                 "{\"name\":\"\",\"dtype\":\"DT_FLOAT64\",\"shape\":[2],\"flat_float64\":["
                 "-Infinity,1e-300]}]}}");
  m.n_tensors = 0;
  encodes_to(&m, "{\"gtensors\":{\"tensors\":[]}}");
  /* what grps cannot carry */
  uint8_t b[2] = {1, 0};
  isv_tensor bad = {.name = "flag", .dt = ISV_BOOL, .shape = s2, .ndim = 1, .data = b, .count = 2};
  m.tensors = &bad;
  m.n_tensors = 1;
  encode_refused(&m, "tensor 'flag': grps has no DataType for BOOL");
  bad.dt = ISV_UINT16;
  bad.count = 1;
  bad.shape = NULL;
  bad.ndim = 0;
  encode_refused(&m, "tensor 'flag': grps has no DataType for UINT16");
  bad.dt = ISV_BF16;
  encode_refused(&m, "grps has no DataType for BF16");
  isv_bytes raw[] = {{"ok", 2}, {"\xFF", 1}};
  isv_tensor nb = {.name = "img", .dt = ISV_BYTES, .shape = s2, .ndim = 1, .data = raw, .count = 2};
  m.tensors = &nb;
  encode_refused(&m, "tensor 'img': BYTES element 1 is not valid UTF-8");
  nb.count = 3;
  encode_refused(&m, "tensor 'img': its shape does not hold its 3 elements");
  int64_t huge[] = {INT64_C(1) << 32};
  isv_tensor big = {.name = "z", .dt = ISV_FP32, .shape = huge, .ndim = 1, .data = f32, .count = 3};
  m.tensors = &big;
  encode_refused(&m, "tensor 'z': dimension 0 (4294967296) does not fit grps's uint32");
}

static void encode_ndarray(void **state) {
  (void)state;
  float v[] = {1, 2, 3, 4, 5, 6.5f};
  int64_t s23[] = {2, 3}, s0[] = {0};
  isv_tensor t = {.name = "", .dt = ISV_FP32, .shape = s23, .ndim = 2, .data = v, .count = 6};
  isv__grps_msg m = {.kind = ISV__GRPS_NDARRAY, .tensors = &t, .n_tensors = 1};
  encodes_to(&m, "{\"ndarray\":[[1.0,2.0,3.0],[4.0,5.0,6.5]]}");
  t.ndim = 0; /* a scalar: one list of one, which decodes back */
  t.count = 1;
  encodes_to(&m, "{\"ndarray\":[1.0]}");
  t.shape = s0;
  t.ndim = 1;
  t.count = 0;
  encodes_to(&m, "{\"ndarray\":[]}");
  m.n_tensors = 0;
  encodes_to(&m, "{\"ndarray\":[]}");
  int64_t iv[] = {-5, 7};
  int64_t s2[] = {2};
  isv_tensor it = {.name = "", .dt = ISV_INT64, .shape = s2, .ndim = 1, .data = iv, .count = 2};
  m.tensors = &it;
  m.n_tensors = 1;
  encodes_to(&m, "{\"ndarray\":[-5,7]}"); /* plain numbers in an ndarray */
  isv_bytes e[] = {{"a", 1}, {"b", 1}};
  isv_tensor bt = {.name = "s", .dt = ISV_BYTES, .shape = s2, .ndim = 1, .data = e, .count = 2};
  m.tensors = &bt;
  encode_refused(&m, "tensor 's': an ndarray holds numbers, not BYTES");
}

static void encode_gmap(void **state) {
  (void)state;
  int64_t s2[] = {2};
  int32_t iv[] = {1, 2};
  isv__grps_entry e[8];
  memset(e, 0, sizeof e);
  e[0] = (isv__grps_entry){.map = ISV__GRPS_S_I64, .key = "big", .key_len = 3,
                           .v.i = 9007199254740993LL};
  e[1] = (isv__grps_entry){.map = ISV__GRPS_S_S, .key = "a", .key_len = 1, .v.s = {"x\ty", 3}};
  e[2] = (isv__grps_entry){.map = ISV__GRPS_S_B, .key = "k", .key_len = 1, .v.s = {"hello", 5}};
  e[3] = (isv__grps_entry){.map = ISV__GRPS_S_I32, .key = "n", .key_len = 1, .v.i = -3};
  e[4] = (isv__grps_entry){.map = ISV__GRPS_S_F, .key = "f", .key_len = 1, .v.f = 0.1f};
  e[5] = (isv__grps_entry){.map = ISV__GRPS_S_D, .key = "d", .key_len = 1, .v.d = 0.1};
  e[6] = (isv__grps_entry){.map = ISV__GRPS_S_T, .key = "t", .key_len = 1,
                           .t = {.name = "", .dt = ISV_INT32, .shape = s2, .ndim = 1, .data = iv,
                                 .count = 2}};
  e[7] = (isv__grps_entry){.map = ISV__GRPS_S_S, .key = "b", .key_len = 1, .v.s = {"", 0}};
  isv__grps_msg m = {.kind = ISV__GRPS_GMAP, .entries = e, .n_entries = 8};
  encodes_to(&m, "{\"gmap\":{\"s_s\":{\"a\":\"x\\ty\",\"b\":\"\"},\"s_b\":{\"k\":\"aGVsbG8=\"},"
                 "\"s_i32\":{\"n\":-3},\"s_i64\":{\"big\":\"9007199254740993\"},"
                 "\"s_f\":{\"f\":0.1},\"s_d\":{\"d\":0.1},\"s_t\":{\"t\":{\"name\":\"\","
                 "\"dtype\":\"DT_INT32\",\"shape\":[2],\"flat_int32\":[1,2]}}}}");
  m.n_entries = 0;
  encodes_to(&m, "{\"gmap\":{}}");
  m.n_entries = 2;
  e[1].v.s.p = "\xC0\xAF";
  e[1].v.s.n = 2;
  encode_refused(&m, "gmap.s_s['a']: the value is not valid UTF-8");
  e[1].key = "\xFF";
  encode_refused(&m, "gmap.s_s: key 1 is not valid UTF-8");
  e[6].t.dt = ISV_UINT32;
  m.entries = &e[6];
  m.n_entries = 1;
  encode_refused(&m, "grps has no DataType for UINT32");
}

/* ---- round trips ----------------------------------------------------------------------------- */

static void round_trip(const char *json) {
  dec d1, d2;
  ok(&d1, json);
  isv__buf b;
  encode_ok(&d1.m, &b);
  ok(&d2, b.data);
  int same = isv_grps_same(&d1.m, &d2.m, 0); /* NaN as NaN; each map's order */
  if (!same) fail_msg("round trip differs:\n  %s\n  %s", json, b.data);
  isv__buf_free(&b);
  isv__arena_free(&d1.a);
  isv__arena_free(&d2.a);
}

static void round_trips(void **state) {
  (void)state;
  static const char *const bodies[] = {
      "{}",
      "{\"str_data\": \"hello grps\"}",
      "{\"model\": \"your_model-1.0.0\", \"str_data\": \"h\\u00e9\\n\\u0000\"}",
      "{\"status\": {\"code\": 200, \"msg\": \"OK\", \"status\": \"SUCCESS\"}, "
      "\"str_data\": \"x\"}",
      "{\"ndarray\": [[[1, 2, 3], [4, 5, 6]], [[7, 8, 9], [10, 11, 12]]]}",
      "{\"ndarray\": [NaN, -Infinity, -0, 1e-45, 3.4028235e38, 0.1]}",
      "{\"ndarray\": []}",
      "{\"gtensors\": {\"tensors\": [{\"name\": \"in1\", \"dtype\": \"DT_INT32\", \"shape\": [3, "
      "2], \"flat_int32\": [1, 2, 3, 4, 5, 6]}, {\"name\": \"in2\", \"dtype\": \"DT_FLOAT64\", "
      "\"shape\": [3, 3], \"flat_double\": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0]}]}}",
      "{\"gtensors\": {\"tensors\": [{\"flat_uint8\": [0, 255]}, {\"flat_int8\": [-128]}, "
      "{\"flat_int16\": [-32768, 32767]}, {\"flat_int64\": [\"-9223372036854775808\"]}, "
      "{\"flat_float16\": [0.1, NaN, -0, 65504, 6e-8]}, {\"flat_float32\": [\"NaN\", 0.1]}, "
      "{\"flat_float64\": [5e-324, 0.1]}, {\"flat_string\": [\"\", \"\\\"\\u001f\"]}, "
      "{\"dtype\": \"DT_INT32\", \"shape\": [2, 0]}]}}",
      "{\"gtensors\": {\"tensors\": []}}",
      "{\"gmap\": {\"s_s\": {\"a\": \"x\"}, \"s_b\": {\"k\": \"aGVsbG8=\"}, \"s_i32\": {\"n\": 3}, "
      "\"s_i64\": {\"big\": \"9007199254740993\"}, \"s_f\": {\"f\": 1.5}, \"s_d\": {\"d\": 2.5}, "
      "\"s_t\": {\"t\": {\"dtype\": \"DT_FLOAT32\", \"shape\": [2], \"flat_float32\": [1, 2]}}}}",
      ("{\"gmap\": {\"s_t\": {\"a\": {\"flat_int32\": [1]}}, \"s_s\": {\"z\": \"\", \"z\": \"y\"}, "
       "\"s_f\": {\"n\": NaN, \"m\": -0}, \"s_b\": {\"u\": \"-_8\"}}}"),
      "{\"gmap\": {}}",
  };
  for (size_t i = 0; i < sizeof bodies / sizeof *bodies; i++) round_trip(bodies[i]);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(doc_str_data),     cmocka_unit_test(doc_ndarray),
      cmocka_unit_test(doc_gtensors),     cmocka_unit_test(doc_gmap),
      cmocka_unit_test(doc_replies),      cmocka_unit_test(camel_case),
      cmocka_unit_test(enums_by_number),  cmocka_unit_test(int64_values),
      cmocka_unit_test(float_values),     cmocka_unit_test(small_int_ranges),
      cmocka_unit_test(gmap_base64),      cmocka_unit_test(gmap_refusals),
      cmocka_unit_test(ndarray_shapes),   cmocka_unit_test(ndarray_refusals),
      cmocka_unit_test(tensor_rules),     cmocka_unit_test(message_refusals),
      cmocka_unit_test(limits),           cmocka_unit_test(encode_simple),
      cmocka_unit_test(encode_gtensors),  cmocka_unit_test(encode_ndarray),
      cmocka_unit_test(encode_gmap),      cmocka_unit_test(round_trips),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
