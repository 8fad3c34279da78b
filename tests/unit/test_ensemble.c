/* Ensembles (lib/core/ensemble.c) through the public API, in process: steps run in the order
 * their inputs exist — not the order they are declared — with independent steps at the same
 * time; outputs answered by reference; a failing step named in the error, the steps still
 * running cancelled first; a missing composing model; cancellation and the deadline reaching
 * every running step; registration's checks; statistics of the ensemble and its steps. */
#include "cmocka_prelude.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/registry.h"
#include "core/stats.h"
#include "inferserve.h"
#include "server_fixture.h"

typedef sf_world world;

static char ran[64]; /* the steps' models, in the order they ran: one letter each */
static isv_request *held;   /* "hold"'s request, completed by the test */
static const void *last_y;  /* where "add" wrote its output */
static atomic_int saw_cancel;

static void note(char c) {
  size_t n = strlen(ran);
  if (n + 1 < sizeof ran) ran[n] = c;
}

static int out_like(isv_request *r, const isv_tensor *x, float **y) {
  size_t nd;
  const int64_t *shape = isv_tensor_shape(x, &nd);
  return isv_request_alloc_output(r, "y", ISV_FP32, shape, nd, (void **)y);
}

static int twice(isv_request *r, void *u) { /* INLINE: y = 2x */
  (void)u;
  note('T');
  const isv_tensor *x = isv_request_input(r, "x");
  float *y;
  int rc = out_like(r, x, &y);
  if (rc) return rc;
  for (size_t i = 0; i < isv_tensor_element_count(x); i++)
    y[i] = 2 * ((const float *)isv_tensor_data(x))[i];
  return isv_request_complete(r, 0, NULL);
}
static int hold(isv_request *r, void *u) { /* ASYNC: y = x + 1 when the test says */
  (void)u;
  note('H');
  held = r;
  return 0;
}
static int release_held(void) {
  const isv_tensor *x = isv_request_input(held, "x");
  float *y;
  int rc = out_like(held, x, &y);
  if (rc) return rc;
  for (size_t i = 0; i < isv_tensor_element_count(x); i++)
    y[i] = ((const float *)isv_tensor_data(x))[i] + 1;
  isv_request *r = held;
  held = NULL;
  return isv_request_complete(r, 0, NULL);
}
static int add2(isv_request *r, void *u) { /* INLINE: y = a + b */
  (void)u;
  note('A');
  const isv_tensor *a = isv_request_input(r, "a"), *b = isv_request_input(r, "b");
  float *y;
  int rc = out_like(r, a, &y);
  if (rc) return rc;
  for (size_t i = 0; i < isv_tensor_element_count(a); i++)
    y[i] = ((const float *)isv_tensor_data(a))[i] + ((const float *)isv_tensor_data(b))[i];
  last_y = y;
  return isv_request_complete(r, 0, NULL);
}
static int fails(isv_request *r, void *u) {
  (void)u;
  note('F');
  return isv_request_complete(r, ISV_EBACKEND, "intentional failure");
}
static int slow(isv_request *r, void *u) { /* POOL: until cancelled (5 s at most) */
  (void)u;
  for (int i = 0; i < 500 && !isv_request_is_cancelled(r); i++) uv_sleep(10);
  if (isv_request_is_cancelled(r)) atomic_fetch_add(&saw_cancel, 1);
  return isv_request_complete(r, ISV_ECANCELED, NULL);
}

static int64_t ANY[] = {-1};

/* "seen" and "leveled" (INLINE: y = x) note the parameters their request came with. */
static char seen_tag[16], seen_timeout;
static int64_t seen_priority, leveled_priority; /* -1: none */

static int64_t priority_of(const isv_request *r) {
  const isv_param *p = isv_request_param(r, "priority");
  if (p == NULL) return -1;
  return p->type == ISV_PARAM_UINT64 ? (int64_t)p->v.u64 : p->v.i64;
}

static int copy_through(isv_request *r) {
  const isv_tensor *x = isv_request_input(r, "x");
  float *y;
  int rc = out_like(r, x, &y);
  if (rc) return rc;
  memcpy(y, isv_tensor_data(x), isv_tensor_byte_size(x));
  return isv_request_complete(r, 0, NULL);
}

static int seen(isv_request *r, void *u) {
  (void)u;
  const isv_param *t = isv_request_param(r, "tag");
  snprintf(seen_tag, sizeof seen_tag, "%.*s", t ? (int)t->v.s.len : 0, t ? t->v.s.ptr : "");
  seen_timeout = isv_request_param(r, "timeout") != NULL;
  seen_priority = priority_of(r);
  return copy_through(r);
}

static int leveled(isv_request *r, void *u) {
  (void)u;
  leveled_priority = priority_of(r);
  return copy_through(r);
}

static void add_model(world *w, const char *name, int (*fn)(isv_request *, void *),
                      isv_exec_mode mode, int two_inputs) {
  isv_model_config *c;
  isv_model_config_new(name, &c);
  if (two_inputs) {
    isv_model_config_add_input(c, "a", ISV_FP32, ANY, 1);
    isv_model_config_add_input(c, "b", ISV_FP32, ANY, 1);
  } else {
    isv_model_config_add_input(c, "x", ISV_FP32, ANY, 1);
  }
  isv_model_config_add_output(c, "y", ISV_FP32, ANY, 1);
  isv_model_config_set_exec_mode(c, mode);
  isv_model_config_set_instances(c, 4);
  isv_backend be = {.struct_size = sizeof be, .infer = fn};
  assert_int_equal(isv_server_add_model(w->srv, c, "1", &be, NULL, NULL), 0);
  isv_model_config_free(c);
}

/* An ensemble's config: input X, output Y (FP32 [-1]). */
static isv_model_config *ens_config(const char *name) {
  isv_model_config *c;
  isv_model_config_new(name, &c);
  isv_model_config_add_input(c, "X", ISV_FP32, ANY, 1);
  isv_model_config_add_output(c, "Y", ISV_FP32, ANY, 1);
  return c;
}

static void step(isv_model_config *c, const char *model, const char *in_key, const char *in_val,
                 const char *in_key2, const char *in_val2, const char *out_val) {
  const char *in[] = {in_key, in_val, in_key2, in_val2};
  const char *out[] = {"y", out_val};
  assert_int_equal(isv_model_config_add_ensemble_step(c, model, NULL, in, in_key2 ? 2 : 1, out, 1),
                   0);
}

static isv_model *dag_model;

static int setup(void **state) {
  world *w = sf_world_new(NULL);
  add_model(w, "twice", twice, ISV_EXEC_INLINE, 0);
  add_model(w, "hold", hold, ISV_EXEC_ASYNC, 0);
  add_model(w, "add", add2, ISV_EXEC_INLINE, 1);
  add_model(w, "fails", fails, ISV_EXEC_INLINE, 0);
  add_model(w, "slow", slow, ISV_EXEC_POOL, 0);
  /* dag: Y = add(twice(X), hold(X)) — declared fan-in first, to show the order is the data's */
  isv_model_config *c = ens_config("dag");
  step(c, "add", "a", "doubled", "b", "plus_one", "Y");
  step(c, "twice", "x", "X", NULL, NULL, "doubled");
  step(c, "hold", "x", "X", NULL, NULL, "plus_one");
  assert_int_equal(isv_server_add_ensemble(w->srv, c, "1", &dag_model), 0);
  isv_model_config_free(c);
  /* broken: twice, then fails, then twice */
  c = ens_config("broken");
  step(c, "twice", "x", "X", NULL, NULL, "t1");
  step(c, "fails", "x", "t1", NULL, NULL, "t2");
  step(c, "twice", "x", "t2", NULL, NULL, "Y");
  assert_int_equal(isv_server_add_ensemble(w->srv, c, "1", NULL), 0);
  isv_model_config_free(c);
  /* fanout: two slow steps at once, and a third that fails (after the first two started) */
  c = ens_config("fanout");
  step(c, "slow", "x", "X", NULL, NULL, "s1");
  step(c, "slow", "x", "X", NULL, NULL, "s2");
  step(c, "add", "a", "s1", "b", "s2", "Y");
  assert_int_equal(isv_server_add_ensemble(w->srv, c, "1", NULL), 0);
  isv_model_config_free(c);
  c = ens_config("fanout_fails");
  step(c, "slow", "x", "X", NULL, NULL, "s1");
  step(c, "fails", "x", "X", NULL, NULL, "s2");
  step(c, "add", "a", "s1", "b", "s2", "Y");
  assert_int_equal(isv_server_add_ensemble(w->srv, c, "1", NULL), 0);
  isv_model_config_free(c);
  /* params: seen, then leveled (2 priority levels) */
  add_model(w, "seen", seen, ISV_EXEC_INLINE, 0);
  isv_model_config *lc;
  isv_model_config_new("leveled", &lc);
  isv_model_config_add_input(lc, "x", ISV_FP32, ANY, 1);
  isv_model_config_add_output(lc, "y", ISV_FP32, ANY, 1);
  assert_int_equal(isv_model_config_set_priority_levels(lc, 2, 2), 0);
  isv_backend lbe = {.struct_size = sizeof lbe, .infer = leveled};
  assert_int_equal(isv_server_add_model(w->srv, lc, "1", &lbe, NULL, NULL), 0);
  isv_model_config_free(lc);
  c = ens_config("params");
  step(c, "seen", "x", "X", NULL, NULL, "s");
  step(c, "leveled", "x", "s", NULL, NULL, "Y");
  assert_int_equal(isv_server_add_ensemble(w->srv, c, "1", NULL), 0);
  isv_model_config_free(c);
  c = ens_config("missing");
  step(c, "no_such_model", "x", "X", NULL, NULL, "Y");
  assert_int_equal(isv_server_add_ensemble(w->srv, c, "1", NULL), 0);
  isv_model_config_free(c);
  memset(ran, 0, sizeof ran);
  held = NULL;
  last_y = NULL;
  atomic_store(&saw_cancel, 0);
  *state = w;
  return 0;
}


typedef sf_result result;

static void on_done(isv_request *r, int status, void *data) { sf_record(r, status, data, "Y"); }

static const float X[3] = {1, 2, -3};

static isv_request *submit(world *w, const char *model, uint64_t timeout_us, result *res) {
  memset(res, 0, sizeof *res);
  isv_request *r;
  int64_t n = 3;
  assert_int_equal(isv_request_new(w->srv, model, NULL, &r), 0);
  assert_int_equal(isv_request_add_input(r, "X", ISV_FP32, &n, 1, X, sizeof X, ISV_STATIC), 0);
  if (timeout_us) assert_int_equal(isv_request_set_timeout_us(r, timeout_us), 0);
  assert_int_equal(isv_server_infer(w->srv, r, on_done, res), 0);
  return r;
}

static void steps_run_as_their_inputs_exist_not_in_declared_order(void **state) {
  world *w = *state;
  result res;
  submit(w, "dag", 0, &res);
  uv_run(&w->loop, UV_RUN_NOWAIT);
  /* twice and hold started (both read X only); add waits for hold */
  assert_string_equal(ran, "TH");
  assert_non_null(held);
  assert_int_equal(res.calls, 0);
  assert_int_equal(release_held(), 0);
  uv_run(&w->loop, UV_RUN_DEFAULT);
  assert_string_equal(ran, "THA");
  assert_int_equal(res.calls, 1);
  assert_int_equal(res.status, 0);
  assert_int_equal(res.n, 3);
  assert_true(res.y[0] == 4 && res.y[1] == 7 && res.y[2] == -8); /* 2x + (x + 1) */
  assert_ptr_equal(res.y_at, last_y); /* the last step's memory, not a copy */
  /* statistics: the ensemble and each composing model counted one success */
  uint64_t ok = 0;
  for (unsigned p = 0; p < ISV__MAX_PROTOCOLS; p++) ok += isv__counter_get(&dag_model->stats.success[p]);
  assert_int_equal(ok, 1);
}

static void a_failing_step_is_named_and_later_steps_never_run(void **state) {
  result res;
  submit(*state, "broken", 0, &res);
  uv_run(&((world *)*state)->loop, UV_RUN_DEFAULT);
  assert_int_equal(res.calls, 1);
  assert_int_equal(res.status, ISV_EBACKEND);
  assert_non_null(strstr(res.msg, "ensemble 'broken' step 2 of 3 (model 'fails')"));
  assert_non_null(strstr(res.msg, "intentional failure"));
  assert_string_equal(ran, "TF");
  assert_int_equal(res.n, 0);
}

static void a_failure_cancels_the_steps_still_running_and_waits_for_them(void **state) {
  result res;
  submit(*state, "fanout_fails", 0, &res);
  uv_run(&((world *)*state)->loop, UV_RUN_DEFAULT);
  assert_int_equal(res.calls, 1);
  assert_int_equal(res.status, ISV_EBACKEND);
  assert_non_null(strstr(res.msg, "step 2 of 3 (model 'fails')"));
  assert_int_equal(atomic_load(&saw_cancel), 1); /* slow heard it before the answer */
}

static void a_missing_composing_model_is_unavailable_naming_it(void **state) {
  result res;
  submit(*state, "missing", 0, &res);
  uv_run(&((world *)*state)->loop, UV_RUN_DEFAULT);
  assert_int_equal(res.status, ISV_EUNAVAIL);
  assert_non_null(strstr(res.msg, "model 'no_such_model'"));
}

static void timer_cancel(uv_timer_t *t) { isv_request_cancel(t->data); }

static void cancellation_reaches_every_running_step(void **state) {
  world *w = *state;
  result res;
  isv_request *r = submit(w, "fanout", 0, &res);
  uv_timer_t t;
  uv_timer_init(&w->loop, &t);
  t.data = r;
  uv_timer_start(&t, timer_cancel, 50, 0);
  uv_run(&w->loop, UV_RUN_DEFAULT);
  uv_close((uv_handle_t *)&t, NULL);
  uv_run(&w->loop, UV_RUN_DEFAULT);
  assert_int_equal(res.calls, 1);
  assert_int_equal(res.status, ISV_ECANCELED);
  assert_int_equal(atomic_load(&saw_cancel), 2);
}

static void the_deadline_reaches_every_running_step(void **state) {
  world *w = *state;
  result res;
  uint64_t t0 = uv_hrtime();
  submit(w, "fanout", 50000, &res);
  uv_run(&w->loop, UV_RUN_DEFAULT);
  assert_int_equal(res.status, ISV_EDEADLINE);
  assert_int_equal(atomic_load(&saw_cancel), 2);
  assert_true(uv_hrtime() - t0 < 3000000000ull);
}

/* Registration refuses what cannot run, saying why. */
/* The ensemble request's parameters reach its steps: but "timeout" (the deadline is inherited
 * instead) and a priority level a step's model does not have (its default then). */
static void the_requests_parameters_reach_the_steps(void **state) {
  world *w = *state;
  for (uint64_t level = 2; level <= 3; level++) {
    result res;
    memset(&res, 0, sizeof res);
    isv_request *r;
    int64_t n = 3;
    assert_int_equal(isv_request_new(w->srv, "params", NULL, &r), 0);
    assert_int_equal(isv_request_add_input(r, "X", ISV_FP32, &n, 1, X, sizeof X, ISV_STATIC), 0);
    isv_param tag = {.type = ISV_PARAM_STRING, .v.s = {"abc", 3}};
    assert_int_equal(isv_request_set_param(r, "tag", &tag), 0);
    assert_int_equal(isv_request_set_priority(r, level), 0);
    assert_int_equal(isv_request_set_timeout_us(r, 5000000), 0);
    seen_tag[0] = '\0';
    seen_priority = leveled_priority = -1;
    assert_int_equal(isv_server_infer(w->srv, r, on_done, &res), 0);
    uv_run(&w->loop, UV_RUN_DEFAULT);
    assert_int_equal(res.status, 0);
    assert_string_equal(seen_tag, "abc");
    assert_false(seen_timeout);
    assert_int_equal(seen_priority, (int64_t)level); /* a model without levels: passed, unused */
    assert_int_equal(leveled_priority, level == 2 ? 2 : -1); /* 3 is not one of its 2 levels */
  }
}

static void expect_refused(world *w, isv_model_config *c, const char *why) {
  assert_int_equal(isv_server_add_ensemble(w->srv, c, "1", NULL), ISV_EINVAL);
  const char *e = isv_server_last_error(w->srv);
  if (strstr(e, why) == NULL) fail_msg("'%s' does not say '%s'", e, why);
  isv_model_config_free(c);
}

static void registration_checks_the_graph(void **state) {
  world *w = *state;
  expect_refused(w, ens_config("e"), "has no step");
  isv_model_config *c = ens_config("e");
  step(c, "twice", "x", "X", NULL, NULL, "Y");
  step(c, "twice", "x", "X", NULL, NULL, "Y");
  expect_refused(w, c, "produced by more than one step");
  c = ens_config("e");
  step(c, "twice", "x", "nowhere", NULL, NULL, "Y");
  expect_refused(w, c, "'nowhere'");
  c = ens_config("e");
  step(c, "twice", "x", "X", NULL, NULL, "t");
  expect_refused(w, c, "ensemble output 'Y' is produced by no step");
  c = ens_config("e");
  step(c, "twice", "x", "b", NULL, NULL, "a");
  step(c, "twice", "x", "a", NULL, NULL, "b");
  step(c, "twice", "x", "X", NULL, NULL, "Y");
  expect_refused(w, c, "form a cycle");
  c = ens_config("e");
  step(c, "e", "x", "X", NULL, NULL, "Y");
  expect_refused(w, c, "running itself");
  c = ens_config("e");
  step(c, "twice", "x", "X", NULL, NULL, "X");
  expect_refused(w, c, "is an input of the ensemble");
  /* isv_server_add_model does not take steps */
  c = ens_config("e");
  step(c, "twice", "x", "X", NULL, NULL, "Y");
  isv_backend be = {.struct_size = sizeof be, .infer = twice};
  assert_int_equal(isv_server_add_model(w->srv, c, "1", &be, NULL, NULL), ISV_EINVAL);
  assert_non_null(strstr(isv_server_last_error(w->srv), "isv_server_add_ensemble"));
  isv_model_config_free(c);
  /* a step's own arguments */
  isv_model_config_new("e", &c);
  const char *dup[] = {"x", "X", "x", "X"}, *ok[] = {"y", "Y"}, *empty[] = {"x", ""};
  assert_int_equal(isv_model_config_add_ensemble_step(c, "twice", NULL, dup, 2, ok, 1), ISV_EINVAL);
  assert_int_equal(isv_model_config_add_ensemble_step(c, "twice", NULL, empty, 1, ok, 1), ISV_EINVAL);
  assert_int_equal(isv_model_config_add_ensemble_step(c, "twice", "v2", ok, 1, ok, 1), ISV_EINVAL);
  assert_int_equal(isv_model_config_add_ensemble_step(c, "", NULL, ok, 1, ok, 1), ISV_EINVAL);
  assert_int_equal(isv_model_config_add_ensemble_step(c, "twice", "3", ok, 1, ok, 1), 0);
  isv_model_config_free(c);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(steps_run_as_their_inputs_exist_not_in_declared_order, setup, sf_teardown),
      cmocka_unit_test_setup_teardown(a_failing_step_is_named_and_later_steps_never_run, setup, sf_teardown),
      cmocka_unit_test_setup_teardown(a_failure_cancels_the_steps_still_running_and_waits_for_them, setup, sf_teardown),
      cmocka_unit_test_setup_teardown(a_missing_composing_model_is_unavailable_naming_it, setup, sf_teardown),
      cmocka_unit_test_setup_teardown(cancellation_reaches_every_running_step, setup, sf_teardown),
      cmocka_unit_test_setup_teardown(the_deadline_reaches_every_running_step, setup, sf_teardown),
      cmocka_unit_test_setup_teardown(registration_checks_the_graph, setup, sf_teardown),
      cmocka_unit_test_setup_teardown(the_requests_parameters_reach_the_steps, setup, sf_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
