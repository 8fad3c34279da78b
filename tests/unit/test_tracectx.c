/* codec/tracectx: W3C traceparent parsing (the spec's valid and invalid forms) and the
 * tracestate bound; and the request API that keeps them (isv_request_set_trace_context /
 * isv_request_trace_context). */
#include "cmocka_prelude.h"

#include <string.h>

#include "codec/tracectx.h"
#include "core/lifecycle.h"
#include "core/request.h"

#define TP "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

static int parse(const char *s, isv__traceparent *t) { return isv__traceparent_parse(s, strlen(s), t); }

static void the_spec_example_parses(void **state) {
  (void)state;
  isv__traceparent t;
  assert_int_equal(parse(TP, &t), 0);
  assert_int_equal(t.version, 0);
  assert_int_equal(t.trace_id[0], 0x4b);
  assert_int_equal(t.trace_id[15], 0x36);
  assert_int_equal(t.parent_id[0], 0x00);
  assert_int_equal(t.parent_id[7], 0xb7);
  assert_int_equal(t.flags, 1);
  char hex[33];
  isv__trace_id_hex(t.trace_id, hex);
  assert_string_equal(hex, "4bf92f3577b34da6a3ce929d0e0e4736");
  assert_int_equal(parse("  " TP "\t", &t), 0); /* an HTTP field's OWS */
  /* a later version may carry more after its flags */
  assert_int_equal(parse("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00-what-ever", &t), 0);
  assert_int_equal(t.version, 1);
  assert_int_equal(t.flags, 0);
}

static void invalid_forms_are_refused(void **state) {
  (void)state;
  static const char *const bad[] = {
      "",
      "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0",        /* short */
      "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",       /* uppercase */
      "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",       /* version ff */
      "00-00000000000000000000000000000000-00f067aa0ba902b7-01",       /* zero trace id */
      "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",       /* zero parent id */
      "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra", /* 00 is exactly 55 */
      "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x",      /* more, without '-' */
      "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",       /* separator */
      "00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01",       /* not hex */
      "0-04bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
  };
  isv__traceparent t;
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    if (parse(bad[i], &t) == 0) fail_msg("accepted %s", bad[i]);
}

static int ok(const char *s) { return isv__tracestate_ok(s, strlen(s)); }

static void tracestate_is_bounded(void **state) {
  (void)state;
  assert_true(ok("rojo=00f067aa0ba902b7,congo=t61rcWkgMzE"));
  assert_true(ok("a=1, ,b=2")); /* empty members are allowed */
  assert_true(ok(""));
  assert_false(ok("novalue"));
  assert_false(ok("=1"));
  assert_false(ok("a="));
  assert_false(ok("a=1\x01"));
  char many[400] = "";
  for (int i = 0; i < 33; i++) strcat(many, i ? ",k=v" : "k=v");
  assert_false(ok(many)); /* 33 members */
  many[strlen(many) - 4] = '\0';
  assert_true(ok(many)); /* 32 */
  char big[600];
  memset(big, 'x', sizeof big);
  big[0] = 'k';
  big[1] = '=';
  assert_true(isv__tracestate_ok(big, ISV__TRACESTATE_MAX));
  assert_false(isv__tracestate_ok(big, ISV__TRACESTATE_MAX + 1));
}

static void a_request_keeps_what_it_was_given(void **state) {
  (void)state;
  uv_loop_t loop;
  uv_loop_init(&loop);
  isv_options o;
  isv__options_defaults(&o);
  isv__core core;
  assert_int_equal(isv__core_init(&core, &loop, &o), 0);
  isv_request *r = isv__request_new(&core);
  isv_trace_context t;
  assert_int_equal(isv_request_trace_context(r, &t), ISV_ENOTFOUND);
  assert_int_equal(isv_request_set_trace_context(r, "garbage", NULL), ISV_EINVAL);
  assert_int_equal(isv_request_set_trace_context(r, TP, "a"), ISV_EINVAL); /* no '=' */
  assert_int_equal(isv_request_trace_context(r, &t), ISV_ENOTFOUND);        /* nothing kept */
  assert_int_equal(isv_request_set_trace_context(r, TP, "vendor=x"), 0);
  assert_int_equal(isv_request_trace_context(r, &t), 0);
  assert_int_equal(t.trace_id[0], 0x4b);
  assert_int_equal(t.parent_id[7], 0xb7);
  assert_int_equal(t.flags, 1);
  assert_string_equal(t.tracestate, "vendor=x");
  assert_int_equal(isv_request_set_trace_context(r, TP, NULL), 0);
  assert_int_equal(isv_request_trace_context(r, &t), 0);
  assert_null(t.tracestate);
  isv_request_free(r);
  isv__core_close(&core, NULL);
  uv_run(&loop, UV_RUN_DEFAULT);
  assert_int_equal(uv_loop_close(&loop), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(the_spec_example_parses),
      cmocka_unit_test(invalid_forms_are_refused),
      cmocka_unit_test(tracestate_is_bounded),
      cmocka_unit_test(a_request_keeps_what_it_was_given),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
