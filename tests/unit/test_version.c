/* version.c: the version of the library actually loaded is the one its header announces —
 * isv_version() is the ISV_VERSION_* macros as "MAJOR.MINOR.PATCH", isv_version_hex() is
 * ISV_VERSION_HEX, and the two agree with each other. */
#include "cmocka_prelude.h"

#include <stdio.h>
#include <string.h>

#include "inferserve.h"

static void version_text_is_the_header_macros(void **state) {
  (void)state;
  char want[64];
  snprintf(want, sizeof want, "%d.%d.%d", ISV_VERSION_MAJOR, ISV_VERSION_MINOR, ISV_VERSION_PATCH);
  assert_non_null(isv_version());
  assert_string_equal(isv_version(), want);
  assert_ptr_equal(isv_version(), isv_version()); /* a static string: no allocation */
}

static void version_hex_is_the_header_macro(void **state) {
  (void)state;
  assert_int_equal(isv_version_hex(), ISV_VERSION_HEX);
  assert_int_equal(ISV_VERSION_HEX,
                   (ISV_VERSION_MAJOR << 16) | (ISV_VERSION_MINOR << 8) | ISV_VERSION_PATCH);
}

static void text_and_hex_agree(void **state) {
  (void)state;
  unsigned major, minor, patch;
  char rest;
  /* exactly three decimal numbers separated by dots, nothing after */
  assert_int_equal(sscanf(isv_version(), "%u.%u.%u%c", &major, &minor, &patch, &rest), 3);
  assert_true(major < 256 && minor < 256 && patch < 256);
  assert_int_equal(isv_version_hex(), (major << 16) | (minor << 8) | patch);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(version_text_is_the_header_macros),
      cmocka_unit_test(version_hex_is_the_header_macro),
      cmocka_unit_test(text_and_hex_agree),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
