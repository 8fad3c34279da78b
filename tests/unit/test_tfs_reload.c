/* protocol/tfs_reload.c: a ReloadConfigRequest's model names, and its refusals in TF Serving's
 * words (the reload's steps against a repository are tests/integration/test_grpc_tfserving.py's:
 * they need the host's callbacks and a gRPC call). */
#include "cmocka_prelude.h"

#include <string.h>

#include "protocol/tfs_pb.h"

static int reload_names(const char *msg, size_t len, const char ***names, size_t *n, char *err,
                        isv__arena *a) {
  return isv__tfs_reload_decode((const uint8_t *)msg, len, a, names, n, err, 256);
}

static void reload_config_request(void **state) {
  (void)state;
  isv__arena a = ISV__ARENA_INIT;
  const char **names;
  size_t n;
  char err[256];
  /* config { model_config_list { config { name: "a" base_path: "/m" } config { name: "bc" } } } */
  static const char two[] = "\x0a\x11\x0a\x0f\x0a\x07\x0a\x01" "a" "\x12\x02/m"
                            "\x0a\x04\x0a\x02" "bc";
  assert_int_equal(reload_names(two, sizeof two - 1, &names, &n, err, &a), 0);
  assert_int_equal(n, 2);
  assert_string_equal(names[0], "a");
  assert_string_equal(names[1], "bc");
  /* an empty list: a valid config that serves nothing */
  assert_int_equal(reload_names("\x0a\x02\x0a\x00", 4, &names, &n, err, &a), 0);
  assert_int_equal(n, 0);
  /* no config, or a custom one: TF Serving's words */
  assert_int_equal(reload_names("", 0, &names, &n, err, &a), ISV_EBADREQ);
  assert_non_null(strstr(err, "Only ModelConfigList is currently supported"));
  assert_int_equal(reload_names("\x0a\x02\x12\x00", 4, &names, &n, err, &a), ISV_EBADREQ);
  assert_non_null(strstr(err, "ServerModelConfig type not supported"));
  /* the names come back sorted (the plan looks them up by binary search) */
  static const char ba[] = "\x0a\x0c\x0a\x0a\x0a\x03\x0a\x01" "b" "\x0a\x03\x0a\x01" "a";
  assert_int_equal(reload_names(ba, sizeof ba - 1, &names, &n, err, &a), 0);
  assert_int_equal(n, 2);
  assert_string_equal(names[0], "a");
  assert_string_equal(names[1], "b");
  /* twice the same name */
  static const char dup[] = "\x0a\x0c\x0a\x0a\x0a\x03\x0a\x01" "a" "\x0a\x03\x0a\x01" "a";
  assert_int_equal(reload_names(dup, sizeof dup - 1, &names, &n, err, &a), ISV_EBADREQ);
  assert_string_equal(err, "Illegal to list model a multiple times in config list");
  /* version_labels (field 8): not applied, so refused */
  static const char lab[] = "\x0a\x0b\x0a\x09\x0a\x07\x0a\x01" "a" "\x42\x02\x10\x01";
  assert_int_equal(reload_names(lab, sizeof lab - 1, &names, &n, err, &a), ISV_EUNIMPL);
  assert_non_null(strstr(err, "version_labels"));
  /* no name; a name that is not UTF-8; truncated */
  assert_int_equal(reload_names("\x0a\x04\x0a\x02\x0a\x00", 6, &names, &n, err, &a), ISV_EBADREQ);
  assert_non_null(strstr(err, "has no name"));
  static const char bad[] = "\x0a\x08\x0a\x06\x0a\x04\x0a\x02\xc3\x28";
  assert_int_equal(reload_names(bad, sizeof bad - 1, &names, &n, err, &a), ISV_EBADREQ);
  assert_non_null(strstr(err, "not valid UTF-8"));
  assert_int_equal(reload_names(two, 7, &names, &n, err, &a), ISV_EBADREQ);
  assert_non_null(strstr(err, "malformed protobuf"));
  isv__arena_free(&a);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(reload_config_request),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
