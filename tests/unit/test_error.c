#include "cmocka_prelude.h"

#include <string.h>

#include "inferserve.h"

static void every_code_has_a_name_message_and_status(void **state) {
  (void)state;
#define XX(name, val, http, grpc, msg)                                                             \
  assert_string_equal(isv_err_name(ISV_##name), #name);                                           \
  assert_string_equal(isv_strerror(ISV_##name), msg);                                             \
  assert_int_equal(isv_err_http_status(ISV_##name), http);                                        \
  assert_int_equal(isv_err_grpc_status(ISV_##name), grpc);                                        \
  assert_true(ISV_##name < 0);
  ISV_ERRNO_MAP(XX)
#undef XX
}

static void codes_are_stable(void **state) {
  (void)state;
  /* Codes are never renumbered: these values are part of the ABI. They live in a range of
   * their own, away from -errno (libuv's UV_E* on Unix) and from libuv's Windows codes
   * (-4095..-3000), so that a host never takes one for the other. */
  assert_int_equal(ISV_EINVAL, -1001);
  assert_int_equal(ISV_ENOTFOUND, -1004);
  assert_int_equal(ISV_EBACKEND, -1010);
  assert_int_equal(ISV_EREQTIMEOUT, -1019);
  assert_int_equal(ISV_EUNAUTH, -1020);
  assert_int_equal(ISV_EFORBIDDEN, -1021);
  assert_int_equal(ISV_ETOOMANY, -1022);
#define XX(name, val, http, grpc, msg) assert_true(val <= -1001 && val > -2000);
  ISV_ERRNO_MAP(XX)
#undef XX
  assert_string_equal(isv_strerror(UV_ENOENT), "unknown error"); /* not "out of memory" */
  assert_string_equal(isv_strerror(-5), "unknown error");       /* -EIO is not ISV_EMETHOD */
}

static void mapping_table_matches_protocols(void **state) {
  (void)state;
  assert_int_equal(isv_err_http_status(0), 200);
  assert_int_equal(isv_err_http_status(ISV_EBADREQ), 400);
  assert_int_equal(isv_err_http_status(ISV_ENOTFOUND), 404);
  assert_int_equal(isv_err_http_status(ISV_EUNAVAIL), 503);
  /* the edge's (protocol/gate.c): 401 UNAUTHENTICATED, 403 PERMISSION_DENIED, 429
   * RESOURCE_EXHAUSTED */
  assert_int_equal(isv_err_http_status(ISV_EUNAUTH), 401);
  assert_int_equal(isv_err_grpc_status(ISV_EUNAUTH), 16);
  assert_int_equal(isv_err_http_status(ISV_EFORBIDDEN), 403);
  assert_int_equal(isv_err_grpc_status(ISV_EFORBIDDEN), 7);
  assert_int_equal(isv_err_http_status(ISV_ETOOMANY), 429);
  assert_int_equal(isv_err_grpc_status(ISV_ETOOMANY), 8);
  assert_int_equal(isv_err_grpc_status(ISV_ENOTFOUND), 5);  /* NOT_FOUND */
  assert_int_equal(isv_err_grpc_status(ISV_EBADREQ), 3);    /* INVALID_ARGUMENT */
  assert_int_equal(isv_err_grpc_status(ISV_EUNAVAIL), 14);  /* UNAVAILABLE */
  assert_string_equal(isv_err_name(12345), "UNKNOWN");
  assert_string_equal(isv_strerror(-9999), "unknown error");
  assert_int_equal(isv_err_http_status(-9999), 500);
}

static void datatypes_round_trip_names(void **state) {
  (void)state;
  for (int dt = ISV_BOOL; dt <= ISV_BYTES; dt++) {
    const char *n = isv_datatype_name((isv_datatype)dt);
    assert_non_null(n);
    assert_int_equal(isv_datatype_from_name(n, strlen(n)), dt);
    assert_true(isv_datatype_size((isv_datatype)dt) > 0);
  }
  assert_int_equal(isv_datatype_size(ISV_FP16), 2);
  assert_int_equal(isv_datatype_size(ISV_UINT64), 8);
  assert_int_equal(isv_datatype_from_name("fp32", 4), ISV_TYPE_INVALID);
  assert_int_equal(isv_datatype_from_name("FP3", 3), ISV_TYPE_INVALID);
  assert_null(isv_datatype_name((isv_datatype)99));
  assert_int_equal(isv_datatype_size((isv_datatype)99), 0);
}

static void version_matches_macros(void **state) {
  (void)state;
  assert_string_equal(isv_version(), "0.1.0");
  assert_int_equal(isv_version_hex(), ISV_VERSION_HEX);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(every_code_has_a_name_message_and_status),
      cmocka_unit_test(codes_are_stable),
      cmocka_unit_test(mapping_table_matches_protocols),
      cmocka_unit_test(datatypes_round_trip_names),
      cmocka_unit_test(version_matches_macros),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
