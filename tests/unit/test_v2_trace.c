/* protocol/v2_trace: Triton's trace extension's codecs — the JSON and protobuf changes read
 * whole or refused naming the problem (every setting's form and range, null / no values as a
 * clearing, the later of two mentions winning), TENSORS unimplemented, and the answers' shapes
 * (the protobuf answer read back with the request decoder: the same map). */
#include "cmocka_prelude.h"

#include <stdio.h>
#include <string.h>

#include "codec/mem.h"
#include "protocol/v2_trace.h"

static int json(isv__trace_change *ch, const char *text, char *err) {
  char body[2048];
  snprintf(body, sizeof body, "%s", text);
  return isv__v2trace_parse_json(ch, body, strlen(body), 64, err, 256);
}

static void json_changes_are_read_whole(void **state) {
  (void)state;
  char err[256];
  isv__trace_change ch;
  assert_int_equal(json(&ch, "{\"trace_level\":[\"TIMESTAMPS\"],\"trace_rate\":\"7\",\"trace_count\":"
                             "\"-1\",\"log_frequency\":\"50\",\"trace_file\":\"/tmp/t.json\"}", err), 0);
  assert_int_equal(ch.set, ISV__TS_LEVEL | ISV__TS_RATE | ISV__TS_COUNT | ISV__TS_LOG_FREQUENCY |
                               ISV__TS_FILE);
  assert_int_equal(ch.clear, 0);
  assert_int_equal(ch.v.timestamps, 1);
  assert_int_equal(ch.v.rate, 7);
  assert_int_equal(ch.v.count, -1);
  assert_int_equal(ch.v.log_frequency, 50);
  assert_string_equal(ch.v.file, "/tmp/t.json");
  /* numbers as numbers, a level as a lone string, OFF; null clears; the later mention wins */
  assert_int_equal(json(&ch, "{\"trace_rate\":3,\"trace_level\":\"OFF\",\"trace_count\":null,"
                             "\"trace_file\":\"x\",\"trace_file\":null}", err), 0);
  assert_int_equal(ch.set, ISV__TS_RATE | ISV__TS_LEVEL);
  assert_int_equal(ch.clear, ISV__TS_COUNT | ISV__TS_FILE);
  assert_int_equal(ch.v.timestamps, 0);
  assert_int_equal(ch.v.rate, 3);
  assert_int_equal(json(&ch, "{\"trace_level\":[\"OFF\",\"TIMESTAMPS\"]}", err), 0);
  assert_int_equal(ch.v.timestamps, 1);
  assert_int_equal(json(&ch, "{}", err), 0);
  assert_int_equal(ch.set | ch.clear, 0);
}

static void bad_json_is_refused_naming_the_problem(void **state) {
  (void)state;
  char err[256];
  isv__trace_change ch;
  static const struct {
    const char *body, *says;
    int code;
  } bad[] = {
      {"", "must be a JSON object", ISV_EBADREQ},
      {"[]", "must be a JSON object", ISV_EBADREQ},
      {"{\"trace_mode\":\"triton\"}", "unknown trace setting 'trace_mode'", ISV_EBADREQ},
      {"{\"trace_level\":[\"TENSORS\"]}", "'TENSORS' is unimplemented", ISV_EUNIMPL},
      {"{\"trace_level\":[\"LOUD\"]}", "unknown trace level 'LOUD'", ISV_EBADREQ},
      {"{\"trace_level\":[]}", "at least one level", ISV_EBADREQ},
      {"{\"trace_level\":[1]}", "must be an array of strings", ISV_EBADREQ},
      {"{\"trace_rate\":\"0\"}", "'trace_rate' must be an integer from 1", ISV_EBADREQ},
      {"{\"trace_rate\":\"4294967296\"}", "'trace_rate' must be", ISV_EBADREQ},
      {"{\"trace_rate\":\"1.5\"}", "'trace_rate' must be", ISV_EBADREQ},
      {"{\"trace_rate\":[\"1\",\"2\"]}", "exactly one value", ISV_EBADREQ},
      {"{\"trace_count\":\"-2\"}", "'trace_count' must be -1", ISV_EBADREQ},
      {"{\"log_frequency\":\"-1\"}", "'log_frequency' must be an integer", ISV_EBADREQ},
      {"{\"trace_file\":true}", "must be a string, an array of strings or null", ISV_EBADREQ},
      {"{\"trace_file\":3}", "'trace_file' must be a string", ISV_EBADREQ},
      {"{\"trace_level\":3}", "'trace_level' must be a string or an array", ISV_EBADREQ},
      {"{\"trace_rate\":\"1\"", "malformed trace settings", ISV_EBADREQ},
      {"{\"trace_rate\":\"1\"} x", "malformed trace settings", ISV_EBADREQ},
      {"{\"trace_level\":[\"A\",\"A\",\"A\",\"A\",\"A\",\"A\",\"A\",\"A\",\"A\"]}", "more than 8",
       ISV_EBADREQ},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    err[0] = '\0';
    assert_int_equal(json(&ch, bad[i].body, err), bad[i].code);
    if (strstr(err, bad[i].says) == NULL) fail_msg("'%s': '%s'", bad[i].body, err);
  }
  char big[1200] = "{\"trace_file\":\"";
  memset(big + strlen(big), 'a', 1100);
  strcpy(big + 15 + 1100, "\"}");
  assert_int_equal(json(&ch, big, err), ISV_EBADREQ);
  assert_non_null(strstr(err, "at most 1023 bytes"));
}

static void answers_have_tritons_shape(void **state) {
  (void)state;
  isv__trace_view v = {.timestamps = 0, .rate = 1000, .count = -1, .log_frequency = 0};
  isv__buf b;
  isv__buf_init(&b, NULL);
  isv__v2trace_write_json(&v, &b);
  isv__buf_putc(&b, '\0');
  assert_string_equal(b.data, "{\"trace_level\":[\"OFF\"],\"trace_rate\":\"1000\",\"trace_count\":"
                              "\"-1\",\"log_frequency\":\"0\",\"trace_file\":\"\"}");
  isv__buf_free(&b);
  /* the protobuf answer has the request's map: read back, every setting as written */
  v = (isv__trace_view){.timestamps = 1, .rate = 5, .count = 12, .log_frequency = 3};
  strcpy(v.file, "/tmp/f");
  isv__buf_init(&b, NULL);
  isv__v2trace_write_pb(&v, &b);
  isv__trace_change ch;
  char err[256], model[64];
  assert_int_equal(isv__v2trace_parse_pb(&ch, model, sizeof model, (const uint8_t *)b.data, b.len,
                                         err, sizeof err), 0);
  assert_int_equal(ch.set, ISV__TS_LEVEL | ISV__TS_RATE | ISV__TS_COUNT | ISV__TS_LOG_FREQUENCY |
                               ISV__TS_FILE);
  assert_int_equal(ch.v.timestamps, 1);
  assert_int_equal(ch.v.rate, 5);
  assert_int_equal(ch.v.count, 12);
  assert_int_equal(ch.v.log_frequency, 3);
  assert_string_equal(ch.v.file, "/tmp/f");
  assert_string_equal(model, "");
  isv__buf_free(&b);
}

static void protobuf_requests(void **state) {
  (void)state;
  char err[256], model[8];
  isv__trace_change ch;
  /* settings {key "trace_rate" value {}} model_name "simple": cleared, the model named */
  static const uint8_t clear[] = {0x0a, 0x0e, 0x0a, 0x0a, 't', 'r', 'a', 'c', 'e', '_', 'r', 'a',
                                  't', 'e', 0x12, 0x00, 0x12, 0x06, 's', 'i', 'm', 'p', 'l', 'e'};
  assert_int_equal(isv__v2trace_parse_pb(&ch, model, sizeof model, clear, sizeof clear, err,
                                         sizeof err), 0);
  assert_int_equal(ch.clear, ISV__TS_RATE);
  assert_int_equal(ch.set, 0);
  assert_string_equal(model, "simple");
  /* a model name too long for the buffer */
  assert_int_equal(isv__v2trace_parse_pb(&ch, model, 4, clear, sizeof clear, err, sizeof err),
                   ISV_EBADREQ);
  assert_non_null(strstr(err, "model_name"));
  /* an entry without a key: no setting by that name */
  static const uint8_t nokey[] = {0x0a, 0x02, 0x12, 0x00};
  assert_int_equal(isv__v2trace_parse_pb(&ch, NULL, 0, nokey, sizeof nokey, err, sizeof err),
                   ISV_EBADREQ);
  assert_non_null(strstr(err, "unknown trace setting ''"));
  /* truncated, and a map entry of the wrong wire type */
  assert_int_equal(isv__v2trace_parse_pb(&ch, NULL, 0, clear, 5, err, sizeof err), ISV_EBADREQ);
  assert_non_null(strstr(err, "malformed TraceSettingRequest"));
  static const uint8_t wrong[] = {0x08, 0x01};
  assert_int_equal(isv__v2trace_parse_pb(&ch, NULL, 0, wrong, sizeof wrong, err, sizeof err),
                   ISV_EBADREQ);
  /* an empty request names nothing */
  assert_int_equal(isv__v2trace_parse_pb(&ch, model, sizeof model, NULL, 0, err, sizeof err), 0);
  assert_int_equal(ch.set | ch.clear, 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(json_changes_are_read_whole),
      cmocka_unit_test(bad_json_is_refused_naming_the_problem),
      cmocka_unit_test(answers_have_tritons_shape),
      cmocka_unit_test(protobuf_requests),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
