/* codec/nanopb_glue: encoding a nanopb message into an isv__buf, and the C-string field
 * callbacks (written from a C string, read into a caller's array), with grpc.health.v1's
 * generated messages (proto/health.proto). */
#include "cmocka_prelude.h"

#include <string.h>

#include "codec/nanopb_glue.h"
#include "health.pb.h"
#include "inferserve.h"

typedef grpc_health_v1_HealthCheckRequest request;
typedef grpc_health_v1_HealthCheckResponse response;

static void encodes_at_the_end_of_the_buffer(void **state) {
  (void)state;
  isv__buf b;
  isv__buf_init(&b, NULL);
  isv__buf_append(&b, "xy", 2); /* whatever is there already stays */
  response r = grpc_health_v1_HealthCheckResponse_init_zero;
  r.status = grpc_health_v1_HealthCheckResponse_ServingStatus_SERVING;
  assert_int_equal(isv__nanopb_encode(grpc_health_v1_HealthCheckResponse_fields, &r, &b), 0);
  assert_int_equal(b.len, 4);
  assert_memory_equal(b.data, "xy\x08\x01", 4); /* field 1, varint, 1 */
  r.status = grpc_health_v1_HealthCheckResponse_ServingStatus_SERVICE_UNKNOWN;
  assert_int_equal(isv__nanopb_encode(grpc_health_v1_HealthCheckResponse_fields, &r, &b), 0);
  assert_int_equal(b.len, 6);
  assert_memory_equal(b.data, "xy\x08\x01\x08\x03", 6);
  assert_false(b.failed);
  isv__buf_free(&b);
}

static void default_values_encode_to_nothing(void **state) {
  (void)state;
  isv__buf b;
  isv__buf_init(&b, NULL);
  response r = grpc_health_v1_HealthCheckResponse_init_zero; /* UNKNOWN = 0 */
  assert_int_equal(isv__nanopb_encode(grpc_health_v1_HealthCheckResponse_fields, &r, &b), 0);
  assert_int_equal(b.len, 0);
  assert_false(b.failed);
  isv__buf_free(&b);
}

static void a_failed_buffer_gives_enomem(void **state) {
  (void)state;
  isv__buf b;
  isv__buf_init(&b, NULL);
  isv__buf_append(&b, "ab", 2);
  b.failed = 1;
  response r = grpc_health_v1_HealthCheckResponse_init_zero;
  r.status = grpc_health_v1_HealthCheckResponse_ServingStatus_NOT_SERVING;
  assert_int_equal(isv__nanopb_encode(grpc_health_v1_HealthCheckResponse_fields, &r, &b),
                   ISV_ENOMEM);
  assert_int_equal(b.len, 2);
  /* even a message that writes no byte reports the earlier failure */
  r.status = grpc_health_v1_HealthCheckResponse_ServingStatus_UNKNOWN;
  assert_int_equal(isv__nanopb_encode(grpc_health_v1_HealthCheckResponse_fields, &r, &b),
                   ISV_ENOMEM);
  isv__buf_free(&b);
}

static void a_write_the_buffer_refuses_gives_enomem(void **state) {
  (void)state;
  /* A buffer that claims to be half the address space: its next append cannot be reserved,
   * so the failure happens inside nanopb's write, not before it. */
  isv__buf b;
  isv__buf_init(&b, NULL);
  b.len = SIZE_MAX / 2;
  response r = grpc_health_v1_HealthCheckResponse_init_zero;
  r.status = grpc_health_v1_HealthCheckResponse_ServingStatus_SERVING;
  assert_int_equal(isv__nanopb_encode(grpc_health_v1_HealthCheckResponse_fields, &r, &b),
                   ISV_ENOMEM);
  assert_int_equal(b.failed, 1);
  assert_null(b.data);
  isv__buf_free(&b);
}

/* The bytes isv__nanopb_encode writes for a HealthCheckRequest whose service is s. */
static size_t encode_request(const char *s, isv__buf *b) {
  request q = grpc_health_v1_HealthCheckRequest_init_zero;
  isv__nanopb_cstr(&q.service, s);
  isv__buf_init(b, NULL);
  assert_int_equal(isv__nanopb_encode(grpc_health_v1_HealthCheckRequest_fields, &q, b), 0);
  assert_false(b->failed);
  return b->len;
}

static void cstr_field_is_written_as_a_string(void **state) {
  (void)state;
  isv__buf b;
  assert_int_equal(encode_request("grpc.health", &b), 2 + 11);
  assert_memory_equal(b.data, "\x0a\x0bgrpc.health", 13); /* field 1, LEN, 11 bytes */
  isv__buf_free(&b);
  /* a long string: its length takes a two-byte varint */
  char longs[301];
  for (int i = 0; i < 300; i++) longs[i] = (char)('a' + i % 26);
  longs[300] = '\0';
  assert_int_equal(encode_request(longs, &b), 3 + 300);
  assert_memory_equal(b.data, "\x0a\xac\x02", 3); /* 300 = 0x12C */
  assert_memory_equal(b.data + 3, longs, 300);
  isv__buf_free(&b);
}

static void cstr_null_or_empty_is_not_written(void **state) {
  (void)state;
  isv__buf b;
  assert_int_equal(encode_request(NULL, &b), 0);
  isv__buf_free(&b);
  assert_int_equal(encode_request("", &b), 0);
  isv__buf_free(&b);
}

/* Decode a HealthCheckRequest from p[0..n) with its service read into dst (cap bytes). */
static bool decode_request(const void *p, size_t n, char *dst, size_t cap) {
  request q = grpc_health_v1_HealthCheckRequest_init_zero;
  isv__nanopb_cstr_dst d = {dst, cap};
  isv__nanopb_read_cstr(&q.service, &d);
  pb_istream_t s = pb_istream_from_buffer((const pb_byte_t *)p, n);
  return pb_decode(&s, grpc_health_v1_HealthCheckRequest_fields, &q);
}

static void read_cstr_round_trips(void **state) {
  (void)state;
  static const char *const names[] = {"x", "grpc.health.v1.Health", "model/with spaces",
                                      "\xc3\xa9t\xc3\xa9"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    isv__buf b;
    encode_request(names[i], &b);
    char out[64];
    memset(out, 'Z', sizeof out);
    assert_true(decode_request(b.data, b.len, out, sizeof out));
    assert_string_equal(out, names[i]);
    isv__buf_free(&b);
  }
}

static void read_cstr_of_an_absent_field_is_empty(void **state) {
  (void)state;
  char out[8];
  memset(out, 'Z', sizeof out);
  assert_true(decode_request("", 0, out, sizeof out));
  assert_string_equal(out, "");
  /* an empty string on the wire is empty too */
  memset(out, 'Z', sizeof out);
  assert_true(decode_request("\x0a\x00", 2, out, sizeof out));
  assert_string_equal(out, "");
}

static void read_cstr_refuses_what_does_not_fit(void **state) {
  (void)state;
  static const char wire[] = "\x0a\x05" "abcde";
  char out[8];
  /* 5 bytes need 6 with the NUL */
  assert_false(decode_request(wire, sizeof wire - 1, out, 5));
  assert_false(decode_request(wire, sizeof wire - 1, out, 1));
  memset(out, 'Z', sizeof out);
  assert_true(decode_request(wire, sizeof wire - 1, out, 6));
  assert_string_equal(out, "abcde");
}

static void read_cstr_refuses_an_embedded_nul(void **state) {
  (void)state;
  char out[16];
  assert_false(decode_request("\x0a\x03" "a\0b", 5, out, sizeof out));
  assert_false(decode_request("\x0a\x01" "\0", 3, out, sizeof out));
  assert_false(decode_request("\x0a\x02" "a\0", 4, out, sizeof out)); /* the NUL last */
  assert_true(decode_request("\x0a\x02" "ab", 4, out, sizeof out)); /* no NUL: fine */
  assert_string_equal(out, "ab");
}

static void read_cstr_keeps_the_last_occurrence(void **state) {
  (void)state;
  /* proto3: a field repeated on the wire takes its last value */
  static const char wire[] = "\x0a\x05" "first" "\x0a\x02" "hi";
  char out[16];
  memset(out, 'Z', sizeof out);
  assert_true(decode_request(wire, sizeof wire - 1, out, sizeof out));
  assert_string_equal(out, "hi");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(encodes_at_the_end_of_the_buffer),
      cmocka_unit_test(default_values_encode_to_nothing),
      cmocka_unit_test(a_failed_buffer_gives_enomem),
      cmocka_unit_test(a_write_the_buffer_refuses_gives_enomem),
      cmocka_unit_test(cstr_field_is_written_as_a_string),
      cmocka_unit_test(cstr_null_or_empty_is_not_written),
      cmocka_unit_test(read_cstr_round_trips),
      cmocka_unit_test(read_cstr_of_an_absent_field_is_empty),
      cmocka_unit_test(read_cstr_refuses_what_does_not_fit),
      cmocka_unit_test(read_cstr_refuses_an_embedded_nul),
      cmocka_unit_test(read_cstr_keeps_the_last_occurrence),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
