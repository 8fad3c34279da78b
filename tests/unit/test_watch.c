/* core/watch.c: readiness watches — every watch is told, a watch may leave from inside its own
 * call, a nested notification is folded into the running one, and the core's own changes
 * (online / offline, a model's state through the group, the close) notify. */
#include "cmocka_prelude.h"

#include "core/group.h"
#include "core/lifecycle.h"
#include "core/queries.h"
#include "core/scheduler.h"
#include "core/watch.h"

static uv_loop_t loop;
static isv__core core;

typedef struct counted {
  isv__core_watch w; /* first */
  int calls;
  int leave;  /* remove itself at its next call */
  int nest;   /* notify again from inside */
} counted;

static void changed(isv__core_watch *w) {
  counted *c = (counted *)w;
  c->calls++;
  if (c->nest) isv__core_readiness_changed(&core); /* folded: no recursion */
  if (c->leave) isv__core_watch_remove(&core, w);
}

static int noop(isv_request *r, void *u) {
  (void)r;
  (void)u;
  return 0;
}

static int setup(void **state) {
  (void)state;
  uv_loop_init(&loop);
  isv_options o;
  isv__options_defaults(&o);
  assert_int_equal(isv__core_init(&core, &loop, &o), 0);
  return 0;
}

static int teardown(void **state) {
  (void)state;
  isv__core_close(&core, NULL);
  uv_run(&loop, UV_RUN_DEFAULT);
  return uv_loop_close(&loop);
}

static void every_watch_is_told_and_may_leave(void **state) {
  (void)state;
  counted a = {.w = {.changed = changed}}, b = a, c = a;
  isv__core_watch_add(&core, &a.w);
  isv__core_watch_add(&core, &b.w);
  isv__core_watch_add(&core, &c.w);
  b.leave = 1; /* the middle one leaves during the pass */
  a.nest = 1;
  isv__core_readiness_changed(&core);
  assert_int_equal(a.calls, 1);
  assert_int_equal(b.calls, 1);
  assert_int_equal(c.calls, 1);
  isv__core_readiness_changed(&core);
  assert_int_equal(a.calls, 2);
  assert_int_equal(b.calls, 1); /* gone */
  assert_int_equal(c.calls, 2);
  isv__core_watch_remove(&core, &a.w);
  isv__core_watch_remove(&core, &c.w);
  assert_null(core.watches);
  isv__core_readiness_changed(&core); /* nobody: nothing */
  assert_int_equal(a.calls, 2);
}

static void the_core_notifies_its_changes(void **state) {
  (void)state;
  counted a = {.w = {.changed = changed}};
  isv__core_watch_add(&core, &a.w);
  isv__core_set_online(&core, 0);
  assert_int_equal(a.calls, 1);
  isv__core_set_online(&core, 1);
  assert_int_equal(a.calls, 2);
  isv_model_config *cfg;
  isv_model_config_new("m", &cfg);
  isv_backend be = {.struct_size = sizeof be, .infer = noop};
  assert_int_equal(isv__group_add(&core, cfg, "1", &be, NULL, NULL), 0);
  isv_model_config_free(cfg);
  int after_add = a.calls;
  assert_true(after_add > 2);
  assert_int_equal(isv__group_set_state(&core, "m", "1", ISV_MODEL_LOADING), 0);
  assert_true(a.calls > after_add);
  int after_state = a.calls;
  assert_int_equal(isv__group_remove(&core, "m", "1"), 0);
  assert_true(a.calls > after_state);
  int before_close = a.calls;
  isv__core_begin_close(&core, 0);
  assert_true(a.calls > before_close);
  isv__core_watch_remove(&core, &a.w);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(every_watch_is_told_and_may_leave, setup, teardown),
      cmocka_unit_test_setup_teardown(the_core_notifies_its_changes, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
