/* Models calling models (lib/core/nested.c) through the public API, in process: a nested
 * request from an INLINE backend (callback, completing inline or later), from a POOL backend
 * (blocking: the nested model runs on the waiting thread; a pool of one thread whose backends
 * all block in nested calls, or wait for an instance a queued job holds — no deadlock),
 * from an ASYNC backend (callback on the loop, blocking on its own thread); outputs passed on
 * by reference; the loop refusing to block; cycles refused; an unknown model; cancellation and
 * the deadline of the parent reaching the nested request. */
#include "cmocka_prelude.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "inferserve.h"
#include "server_fixture.h"

typedef sf_world world;

static atomic_int saw_cancel; /* "slow" noticed its request was cancelled */
static atomic_int bls_rc;     /* what a nested call returned inside a backend */

/* ---- the composing models: FP32 x [-1] -> y ----------------------------------------------- */

static int scale_to(isv_request *r, const char *in, float mul, float add) {
  const isv_tensor *x = isv_request_input(r, in);
  size_t nd;
  const int64_t *shape = isv_tensor_shape(x, &nd);
  float *y;
  int rc = isv_request_alloc_output(r, "y", ISV_FP32, shape, nd, (void **)&y);
  if (rc) return rc;
  const float *v = isv_tensor_data(x);
  for (size_t i = 0; i < isv_tensor_element_count(x); i++) y[i] = v[i] * mul + add;
  return isv_request_complete(r, 0, NULL);
}

static int twice(isv_request *r, void *u) { /* INLINE */
  (void)u;
  return scale_to(r, "x", 2, 0);
}
static int plus1(isv_request *r, void *u) { /* POOL */
  (void)u;
  return scale_to(r, "x", 1, 1);
}
/* POOL: waits (at most 5 s) until cancelled, then completes ECANCELED */
static int slow(isv_request *r, void *u) {
  (void)u;
  for (int i = 0; i < 500 && !isv_request_is_cancelled(r); i++) uv_sleep(10);
  if (isv_request_is_cancelled(r)) {
    atomic_fetch_add(&saw_cancel, 1);
    return isv_request_complete(r, ISV_ECANCELED, NULL);
  }
  return scale_to(r, "x", 1, 0);
}

/* POOL, one instance: y = x after 30 ms; notes the thread it ran on */
static uv_thread_t one_thread;
static int one(isv_request *r, void *u) {
  (void)u;
  one_thread = uv_thread_self();
  uv_sleep(30);
  return scale_to(r, "x", 1, 0);
}

/* ---- the calling models ------------------------------------------------------------------- */

/* A nested request to `model` with the parent's x as its x, by reference. */
static isv_request *sub(isv_request *r, const char *model, const isv_tensor *x) {
  isv_request *s = NULL;
  size_t nd;
  const int64_t *shape = isv_tensor_shape(x, &nd);
  if (isv_request_new_nested(r, model, NULL, &s) != 0) return NULL;
  if (isv_request_add_input(s, "x", ISV_FP32, shape, nd, isv_tensor_data(x),
                            isv_tensor_byte_size(x), ISV_STATIC) != 0)
    return NULL; /* left to the parent */
  return s;
}

/* The nested request's y as the parent's y, by reference, and complete. */
static int answer_with(isv_request *r, isv_request *s, int status) {
  if (status != 0) return isv_request_complete(r, status, isv_request_error_message(s));
  const isv_tensor *y = isv_request_output(s, "y");
  size_t nd;
  const int64_t *shape = isv_tensor_shape(y, &nd);
  int rc = isv_request_set_output(r, "y", ISV_FP32, shape, nd, isv_tensor_data(y),
                                  isv_tensor_byte_size(y), ISV_STATIC);
  return isv_request_complete(r, rc, NULL);
}

static void answer_cb(isv_request *s, int status, void *data) { answer_with(data, s, status); }

/* INLINE, the nested model named by user: a callback, which completes it inline or later */
static int inline_calls(isv_request *r, void *u) {
  isv_request *s = sub(r, u, isv_request_input(r, "x"));
  if (s == NULL) return ISV_ENOMEM;
  return isv_request_submit(s, answer_cb, r);
}
/* INLINE trying to block: refused */
static int inline_blocks(isv_request *r, void *u) {
  (void)u;
  isv_request *s = sub(r, "twice", isv_request_input(r, "x"));
  int rc = isv_request_run(s);
  atomic_store(&bls_rc, rc);
  return isv_request_complete(r, rc, "isv_request_run on the loop");
}
/* POOL: y = 2 * (x + 1) through two blocking nested calls, the second on the first's output */
static int pool_chain(isv_request *r, void *u) {
  (void)u;
  isv_request *a = sub(r, "plus1", isv_request_input(r, "x"));
  int rc = a ? isv_request_run(a) : ISV_ENOMEM;
  if (rc != 0) return isv_request_complete(r, rc, a ? isv_request_error_message(a) : NULL);
  isv_request *b = sub(r, "twice", isv_request_output(a, "y"));
  rc = b ? isv_request_run(b) : ISV_ENOMEM;
  isv_request_free(a); /* off the loop: kept until r is released (b reads its memory) */
  return answer_with(r, b, rc);
}
/* POOL calling the model named by user, blocking */
static int pool_calls(isv_request *r, void *u) {
  isv_request *s = sub(r, u, isv_request_input(r, "x"));
  int rc = s ? isv_request_run(s) : ISV_ENOMEM;
  atomic_store(&bls_rc, rc);
  return answer_with(r, s, rc);
}
/* POOL calling "one" blocking; notes its own thread */
static uv_thread_t caller_thread;
static int pool_one(isv_request *r, void *u) {
  (void)u;
  caller_thread = uv_thread_self();
  isv_request *s = sub(r, "one", isv_request_input(r, "x"));
  return answer_with(r, s, s ? isv_request_run(s) : ISV_ENOMEM);
}
/* ASYNC: a callback from the loop (infer runs there) */
static int async_cb(isv_request *r, void *u) {
  (void)u;
  isv_request *s = sub(r, "plus1", isv_request_input(r, "x"));
  return isv_request_submit(s, answer_cb, r);
}
/* ASYNC: blocking on a thread of its own */
static uv_thread_t own_thread;
static void own_thread_run(void *arg) {
  isv_request *r = arg;
  isv_request *s = sub(r, "plus1", isv_request_input(r, "x"));
  answer_with(r, s, isv_request_run(s));
}
static int async_thread(isv_request *r, void *u) {
  (void)u;
  return uv_thread_create(&own_thread, own_thread_run, r) == 0 ? 0 : ISV_EINTERNAL;
}

static void add(world *w, const char *name, int (*fn)(isv_request *, void *), void *user,
                isv_exec_mode mode, uint32_t instances) {
  isv_model_config *c;
  isv_model_config_new(name, &c);
  int64_t any[] = {-1};
  isv_model_config_add_input(c, "x", ISV_FP32, any, 1);
  isv_model_config_add_output(c, "y", ISV_FP32, any, 1);
  isv_model_config_set_exec_mode(c, mode);
  if (instances) isv_model_config_set_instances(c, instances);
  isv_backend be = {.struct_size = sizeof be, .infer = fn};
  assert_int_equal(isv_server_add_model(w->srv, c, "1", &be, user, NULL), 0);
  isv_model_config_free(c);
}

static world *make(unsigned workers) {
  isv_options *o;
  isv_options_new(&o);
  isv_options_set_worker_threads(o, workers);
  world *w = sf_world_new(o);
  isv_options_free(o);
  add(w, "twice", twice, NULL, ISV_EXEC_INLINE, 0);
  add(w, "plus1", plus1, NULL, ISV_EXEC_POOL, 4);
  add(w, "slow", slow, NULL, ISV_EXEC_POOL, 4);
  add(w, "inline_twice", inline_calls, "twice", ISV_EXEC_INLINE, 0);
  add(w, "inline_plus1", inline_calls, "plus1", ISV_EXEC_INLINE, 0);
  add(w, "inline_missing", inline_calls, "missing", ISV_EXEC_INLINE, 0);
  add(w, "inline_blocks", inline_blocks, NULL, ISV_EXEC_INLINE, 0);
  add(w, "pool_chain", pool_chain, NULL, ISV_EXEC_POOL, 8);
  add(w, "pool_slow", pool_calls, "slow", ISV_EXEC_POOL, 4);
  add(w, "pool_self", pool_calls, "pool_self", ISV_EXEC_POOL, 4);
  add(w, "one", one, NULL, ISV_EXEC_POOL, 1);
  add(w, "pool_one", pool_one, NULL, ISV_EXEC_POOL, 1);
  add(w, "async_cb", async_cb, NULL, ISV_EXEC_ASYNC, 0);
  add(w, "async_thread", async_thread, NULL, ISV_EXEC_ASYNC, 0);
  atomic_store(&saw_cancel, 0);
  atomic_store(&bls_rc, 12345);
  return w;
}

static int setup(void **state) {
  *state = make(2);
  return 0;
}


typedef sf_result result;

static void on_done(isv_request *r, int status, void *data) { sf_record(r, status, data, "y"); }

static isv_request *submit(world *w, const char *model, const float *x, int64_t n, result *res) {
  memset(res, 0, sizeof *res);
  isv_request *r;
  assert_int_equal(isv_request_new(w->srv, model, NULL, &r), 0);
  assert_int_equal(isv_request_add_input(r, "x", ISV_FP32, &n, 1, x, (size_t)n * 4,
                                         ISV_TRANSIENT), 0);
  assert_int_equal(isv_server_infer(w->srv, r, on_done, res), 0);
  return r;
}

static result run(world *w, const char *model, const float *x, int64_t n) {
  result res;
  submit(w, model, x, n, &res);
  uv_run(&w->loop, UV_RUN_DEFAULT);
  assert_int_equal(res.calls, 1);
  return res;
}

static const float X[3] = {1, 2.5f, -3};

static void from_inline_with_an_inline_model_completes_before_infer_returns(void **state) {
  result r = run(*state, "inline_twice", X, 3);
  assert_int_equal(r.status, 0);
  assert_int_equal(r.n, 3);
  assert_true(r.y[0] == 2 && r.y[1] == 5 && r.y[2] == -6);
}

static void from_inline_with_a_pool_model_completes_from_the_callback(void **state) {
  result r = run(*state, "inline_plus1", X, 3);
  assert_int_equal(r.status, 0);
  assert_true(r.y[0] == 2 && r.y[1] == 3.5f && r.y[2] == -2);
}

static void the_loop_may_not_block(void **state) {
  result r = run(*state, "inline_blocks", X, 3);
  assert_int_equal(atomic_load(&bls_rc), ISV_ETHREAD);
  assert_int_equal(r.status, ISV_ETHREAD);
}

static void from_pool_blocking_chained_on_a_nested_output(void **state) {
  result r = run(*state, "pool_chain", X, 3);
  assert_int_equal(r.status, 0);
  assert_true(r.y[0] == 4 && r.y[1] == 7 && r.y[2] == -4);
}

/* One worker thread, eight POOL requests whose backends all block in nested calls to a POOL
 * model: the blocked worker runs what it waits for itself. */
static void a_pool_of_one_thread_blocked_in_nested_calls_does_not_deadlock(void **state) {
  world *w = *state;
  sf_teardown(state);
  w = make(1);
  *state = w;
  result res[8];
  float x[8][1];
  for (int i = 0; i < 8; i++) {
    x[i][0] = (float)i;
    submit(w, "pool_chain", x[i], 1, &res[i]);
  }
  uv_run(&w->loop, UV_RUN_DEFAULT);
  for (int i = 0; i < 8; i++) {
    assert_int_equal(res[i].calls, 1);
    assert_int_equal(res[i].status, 0);
    assert_true(res[i].y[0] == 2 * (i + 1));
  }
}

/* The nested POOL model runs on the worker that waits for it, not a hop away. */
static void a_blocking_call_runs_its_pool_model_on_the_waiting_thread(void **state) {
  result r = run(*state, "pool_one", X, 1);
  assert_int_equal(r.status, 0);
  assert_true(uv_thread_equal(&one_thread, &caller_thread));
}

/* One worker thread: the caller takes it and blocks; "one"'s only instance is taken by a
 * client's request whose job waits in the pool's queue behind it; the nested request waits for
 * that instance. The blocked worker does not count: the pool starts a thread for the queued
 * job, the instance frees, the nested request runs. */
static void a_blocked_worker_does_not_starve_the_job_it_waits_for(void **state) {
  world *w = *state;
  sf_teardown(state);
  w = make(1);
  *state = w;
  result caller, direct;
  submit(w, "pool_one", X, 1, &caller);
  submit(w, "one", X, 1, &direct);
  uv_run(&w->loop, UV_RUN_DEFAULT);
  assert_int_equal(caller.calls, 1);
  assert_int_equal(caller.status, 0);
  assert_int_equal(direct.status, 0);
  assert_true(caller.y[0] == 1 && direct.y[0] == 1);
}

static void from_async_on_the_loop_and_on_its_own_thread(void **state) {
  result a = run(*state, "async_cb", X, 3);
  assert_int_equal(a.status, 0);
  assert_true(a.y[0] == 2 && a.y[2] == -2);
  result b = run(*state, "async_thread", X, 3);
  uv_thread_join(&own_thread);
  assert_int_equal(b.status, 0);
  assert_true(b.y[0] == 2 && b.y[1] == 3.5f);
}

static void a_model_calling_itself_is_refused_naming_it(void **state) {
  result r = run(*state, "pool_self", X, 1);
  assert_int_equal(atomic_load(&bls_rc), ISV_EINVAL);
  assert_int_equal(r.status, ISV_EBACKEND); /* the backend's fault, not the client's */
  assert_non_null(strstr(r.msg, "'pool_self'"));
  assert_non_null(strstr(r.msg, "call chain"));
}

static void an_unknown_model_fails_the_nested_request(void **state) {
  result r = run(*state, "inline_missing", X, 1);
  assert_int_equal(r.status, ISV_ENOTFOUND);
  assert_non_null(strstr(r.msg, "missing"));
}

static void timer_cancel(uv_timer_t *t) { isv_request_cancel(t->data); }

static void cancelling_the_parent_cancels_the_nested_request(void **state) {
  world *w = *state;
  result res;
  isv_request *r = submit(w, "pool_slow", X, 1, &res);
  uv_timer_t t;
  uv_timer_init(&w->loop, &t);
  t.data = r;
  uv_timer_start(&t, timer_cancel, 50, 0);
  uv_run(&w->loop, UV_RUN_DEFAULT);
  uv_close((uv_handle_t *)&t, NULL);
  uv_run(&w->loop, UV_RUN_DEFAULT);
  assert_int_equal(res.calls, 1);
  assert_int_equal(atomic_load(&saw_cancel), 1); /* the nested one heard it */
  assert_int_equal(atomic_load(&bls_rc), ISV_ECANCELED);
  assert_int_equal(res.status, ISV_ECANCELED);
}

static void the_parents_deadline_reaches_the_nested_request(void **state) {
  world *w = *state;
  result res;
  memset(&res, 0, sizeof res);
  isv_request *r;
  int64_t n = 1;
  assert_int_equal(isv_request_new(w->srv, "pool_slow", NULL, &r), 0);
  assert_int_equal(isv_request_add_input(r, "x", ISV_FP32, &n, 1, X, 4, ISV_TRANSIENT), 0);
  assert_int_equal(isv_request_set_timeout_us(r, 50000), 0);
  uint64_t t0 = uv_hrtime();
  assert_int_equal(isv_server_infer(w->srv, r, on_done, &res), 0);
  uv_run(&w->loop, UV_RUN_DEFAULT);
  assert_int_equal(res.calls, 1);
  assert_int_equal(res.status, ISV_EDEADLINE);
  assert_int_equal(atomic_load(&saw_cancel), 1);
  assert_true(uv_hrtime() - t0 < 3000000000ull); /* not slow's 5 s */
}

static void only_a_running_backend_makes_nested_requests(void **state) {
  world *w = *state;
  isv_request *r, *s = (isv_request *)1;
  assert_int_equal(isv_request_new(w->srv, "twice", NULL, &r), 0);
  assert_int_equal(isv_request_new_nested(r, "twice", NULL, &s), ISV_ESTATE);
  assert_null(s);
  assert_int_equal(isv_request_new_nested(NULL, "twice", NULL, &s), ISV_EINVAL);
  assert_int_equal(isv_request_submit(r, answer_cb, NULL), ISV_EINVAL); /* not nested */
  assert_int_equal(isv_request_run(r), ISV_EINVAL);
  isv_request_free(r);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(from_inline_with_an_inline_model_completes_before_infer_returns, setup, sf_teardown),
      cmocka_unit_test_setup_teardown(from_inline_with_a_pool_model_completes_from_the_callback, setup, sf_teardown),
      cmocka_unit_test_setup_teardown(the_loop_may_not_block, setup, sf_teardown),
      cmocka_unit_test_setup_teardown(from_pool_blocking_chained_on_a_nested_output, setup, sf_teardown),
      cmocka_unit_test_setup_teardown(a_pool_of_one_thread_blocked_in_nested_calls_does_not_deadlock, setup, sf_teardown),
      cmocka_unit_test_setup_teardown(a_blocking_call_runs_its_pool_model_on_the_waiting_thread, setup, sf_teardown),
      cmocka_unit_test_setup_teardown(a_blocked_worker_does_not_starve_the_job_it_waits_for, setup, sf_teardown),
      cmocka_unit_test_setup_teardown(from_async_on_the_loop_and_on_its_own_thread, setup, sf_teardown),
      cmocka_unit_test_setup_teardown(a_model_calling_itself_is_refused_naming_it, setup, sf_teardown),
      cmocka_unit_test_setup_teardown(an_unknown_model_fails_the_nested_request, setup, sf_teardown),
      cmocka_unit_test_setup_teardown(cancelling_the_parent_cancels_the_nested_request, setup, sf_teardown),
      cmocka_unit_test_setup_teardown(the_parents_deadline_reaches_the_nested_request, setup, sf_teardown),
      cmocka_unit_test_setup_teardown(only_a_running_backend_makes_nested_requests, setup, sf_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
