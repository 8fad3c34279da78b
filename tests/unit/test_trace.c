/* protocol/trace: a request's trace context from its headers or gRPC metadata — names in any
 * case, one traceparent (two: neither), tracestate lines joined, a tracestate that cannot be
 * kept dropped while the traceparent stays, nothing for a bad traceparent. */
#include "cmocka_prelude.h"

#include <stdio.h>
#include <string.h>

#include "core/lifecycle.h"
#include "protocol/trace.h"

#define TP "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

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

static isv__header H(const char *n, const char *v) {
  return (isv__header){n, strlen(n), v, strlen(v)};
}

/* The context headers[0..n) give a fresh request: 0 with *t, or ISV_ENOTFOUND. */
static int context_of(const isv__header *h, size_t n, isv_trace_context *t, char *state, size_t cap) {
  isv_request *r = isv__request_new(&core);
  isv__trace_from_headers(r, h, n);
  int rc = isv_request_trace_context(r, t);
  state[0] = '\0';
  if (rc == 0 && t->tracestate) snprintf(state, cap, "%s", t->tracestate);
  isv_request_free(r);
  return rc;
}

static void headers_to_context(void **st) {
  (void)st;
  isv_trace_context t;
  char state[600];
  isv__header a[] = {H("Content-Type", "application/json"), H("TraceParent", TP),
                     H("tracestate", "a=1"), H("TRACESTATE", "b=2")};
  assert_int_equal(context_of(a, 4, &t, state, sizeof state), 0);
  assert_int_equal(t.trace_id[0], 0x4b);
  assert_int_equal(t.flags, 1);
  assert_string_equal(state, "a=1,b=2");
  isv__header two[] = {H("traceparent", TP), H("traceparent", TP)};
  assert_int_equal(context_of(two, 2, &t, state, sizeof state), ISV_ENOTFOUND);
  isv__header bad_state[] = {H("traceparent", TP), H("tracestate", "nokey")};
  assert_int_equal(context_of(bad_state, 2, &t, state, sizeof state), 0);
  assert_string_equal(state, ""); /* dropped: the traceparent stays */
  char big[600];
  memset(big, 'x', sizeof big - 1);
  big[0] = 'k', big[1] = '=', big[sizeof big - 1] = '\0';
  isv__header long_state[] = {H("traceparent", TP), H("tracestate", big)};
  assert_int_equal(context_of(long_state, 2, &t, state, sizeof state), 0);
  assert_string_equal(state, "");
  isv__header bad[] = {H("traceparent", "00-zz"), H("tracestate", "a=1")};
  assert_int_equal(context_of(bad, 2, &t, state, sizeof state), ISV_ENOTFOUND);
  assert_int_equal(context_of(NULL, 0, &t, state, sizeof state), ISV_ENOTFOUND);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(headers_to_context, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
