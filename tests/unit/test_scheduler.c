/* core/scheduler.c: the request path after submission — the backend run inline, on a worker
 * thread or asynchronously, its completion from whatever thread (at most once), the async
 * wake-up of the loop, the in-flight count that keeps the loop alive only while needed, the
 * closing hook, cancellation, and the statistics every finished request records; then (with
 * tests/unit/core_fixture.c) instances and their queue, the queue and in-flight limits,
 * deadlines and the drain deadline (decoupled responses: test_responses.c). Dynamic batching is in test_batch.c,
 * sequences in test_sequence.c. */
#include "cmocka_prelude.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/request.h"
#include "core_fixture.h"
#include "core/scheduler.h"

/* What the backends share with the tests. Backends never assert: they may run on other
 * threads, where cmocka cannot fail a test. */
static struct {
  uv_sem_t go;      /* a backend waits for the test's go-ahead */
  uv_sem_t started; /* a pool backend tells the test it runs */
  uv_thread_t thread;
  int thread_made;
  atomic_int infer_calls;
  int complete_rc[2];   /* what isv_request_complete returned to the backend */
  int cancelled_before; /* isv_request_is_cancelled() seen by a pool backend, before and after */
  int cancelled_after;
  isv_request *pending; /* a request whose backend returned without completing */
} ctl;

static int be_twice(isv_request *r, void *u) {
  (void)u;
  atomic_fetch_add(&ctl.infer_calls, 1);
  return cf_scale(r, 2);
}

/* Completes from a thread of its own once the test says go (after infer returned). */
static void later_main(void *arg) {
  uv_sem_wait(&ctl.go);
  ctl.complete_rc[0] = cf_scale(arg, 2);
}
static int be_other_thread(isv_request *r, void *u) {
  (void)u;
  atomic_fetch_add(&ctl.infer_calls, 1);
  if (uv_thread_create(&ctl.thread, later_main, r) != 0) return ISV_EINTERNAL;
  ctl.thread_made = 1;
  return 0;
}

/* A backend whose own thread completes, waits for the test's go-ahead (the response went out
 * and the request was freed), then does it all again: complete, set an output, allocate. */
static void after_free_main(void *arg) {
  isv_request *r = arg;
  ctl.complete_rc[0] = cf_scale(r, 2);
  uv_sem_wait(&ctl.go);
  ctl.complete_rc[1] = isv_request_complete(r, 0, NULL);
  int64_t shape[] = {3};
  void *p;
  ctl.cancelled_before = isv_request_alloc_output(r, "y", ISV_FP32, shape, 1, &p);
  ctl.cancelled_after = isv_request_alloc(r, 16) == NULL;
  uv_sem_post(&ctl.started);
}
static int be_complete_after_free(isv_request *r, void *u) {
  (void)u;
  if (uv_thread_create(&ctl.thread, after_free_main, r) != 0) return ISV_EINTERNAL;
  ctl.thread_made = 1;
  return 0;
}

/* Completes from another thread while infer is still running (it joins that thread). */
static void now_main(void *arg) { ctl.complete_rc[0] = cf_scale(arg, 2); }
static int be_other_thread_joined(isv_request *r, void *u) {
  (void)u;
  uv_thread_t t;
  if (uv_thread_create(&t, now_main, r) != 0) return ISV_EINTERNAL;
  uv_thread_join(&t);
  return 0;
}

/* Two completions at once during infer: an inline backend's own on the loop thread (the way
 * without the core's lock) and one from a thread of its own (under it), released together. */
static uv_barrier_t race_barrier;
static void race_main(void *arg) {
  uv_barrier_wait(&race_barrier);
  ctl.complete_rc[1] = isv_request_complete(arg, 0, NULL);
}
static int be_race(isv_request *r, void *u) {
  (void)u;
  int rc = cf_scale_outputs(r, 2);
  if (rc) return rc;
  uv_thread_t t;
  if (uv_thread_create(&t, race_main, r) != 0) return ISV_EINTERNAL;
  uv_barrier_wait(&race_barrier);
  ctl.complete_rc[0] = isv_request_complete(r, 0, NULL);
  uv_thread_join(&t);
  return 0;
}

static int be_complete_twice(isv_request *r, void *u) {
  (void)u;
  ctl.complete_rc[0] = cf_scale(r, 2);
  ctl.complete_rc[1] = isv_request_complete(r, ISV_EBACKEND, "second");
  return 0;
}

/* Returns *(int *)u without completing. */
static int be_return_code(isv_request *r, void *u) {
  (void)r;
  atomic_fetch_add(&ctl.infer_calls, 1);
  return *(const int *)u;
}

/* Completes, then returns an error: the return value is ignored. */
static int be_complete_then_error(isv_request *r, void *u) {
  (void)u;
  cf_scale(r, 2);
  return ISV_EINTERNAL;
}

/* Returns without completing; the test completes it later. */
static int be_deferred(isv_request *r, void *u) {
  (void)u;
  ctl.pending = r;
  return 0;
}

/* A pool backend that watches the cancellation flag around the test's go-ahead. */
static int be_watch_cancel(isv_request *r, void *u) {
  (void)u;
  atomic_fetch_add(&ctl.infer_calls, 1);
  ctl.cancelled_before = isv_request_is_cancelled(r);
  uv_sem_post(&ctl.started);
  uv_sem_wait(&ctl.go);
  ctl.cancelled_after = isv_request_is_cancelled(r);
  if (ctl.cancelled_after) return isv_request_complete(r, ISV_ECANCELED, "stopped early");
  return cf_scale(r, 2);
}

static const int code_unavail = ISV_EUNAVAIL;
static const int code_errno = -5;

typedef cf_world fixture;

static void add_model_n(fixture *f, const char *name, int (*infer)(isv_request *, void *),
                        const void *user, isv_exec_mode mode, uint32_t max_batch,
                        uint32_t instances) {
  cf_model m = {.name = name, .infer = infer, .user = user, .mode = mode, .max_batch = max_batch,
                .instances = instances};
  cf_add(f, &m);
}

static void add_model(fixture *f, const char *name, int (*infer)(isv_request *, void *),
                      const void *user, isv_exec_mode mode, uint32_t max_batch) {
  add_model_n(f, name, infer, user, mode, max_batch, 1);
}

static int setup(void **state) {
  memset(&ctl, 0, sizeof ctl);
  assert_int_equal(uv_sem_init(&ctl.go, 0), 0);
  assert_int_equal(uv_sem_init(&ctl.started, 0), 0);
  fixture *f = cf_world_new(NULL);
  add_model(f, "inline", be_twice, NULL, ISV_EXEC_INLINE, 0);
  add_model(f, "pool", be_twice, NULL, ISV_EXEC_POOL, 0);
  add_model(f, "thread", be_other_thread, NULL, ISV_EXEC_ASYNC, 0);
  add_model(f, "pool_thread", be_other_thread, NULL, ISV_EXEC_POOL, 0);
  add_model(f, "joined", be_other_thread_joined, NULL, ISV_EXEC_INLINE, 0);
  add_model(f, "twice_done", be_complete_twice, NULL, ISV_EXEC_INLINE, 0);
  add_model(f, "race", be_race, NULL, ISV_EXEC_INLINE, 0);
  add_model(f, "unavail", be_return_code, &code_unavail, ISV_EXEC_INLINE, 0);
  add_model(f, "unavail_pool", be_return_code, &code_unavail, ISV_EXEC_POOL, 0);
  add_model(f, "errno_pool", be_return_code, &code_errno, ISV_EXEC_POOL, 0);
  add_model(f, "done_then_error", be_complete_then_error, NULL, ISV_EXEC_INLINE, 0);
  add_model(f, "done_then_error_pool", be_complete_then_error, NULL, ISV_EXEC_POOL, 0);
  add_model_n(f, "deferred", be_deferred, NULL, ISV_EXEC_ASYNC, 0, 2);
  add_model(f, "watch", be_watch_cancel, NULL, ISV_EXEC_POOL, 0);
  add_model(f, "batched", be_twice, NULL, ISV_EXEC_INLINE, 8);
  add_model(f, "after_free", be_complete_after_free, NULL, ISV_EXEC_ASYNC, 0);
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fixture *f = *state;
  if (ctl.thread_made) uv_thread_join(&ctl.thread);
  cf_world_free(f);
  uv_sem_destroy(&ctl.go);
  uv_sem_destroy(&ctl.started);
  return 0;
}

static isv_model *model(fixture *f, const char *name) { return cf_find(f, name); }

typedef cf_result result;

static const float x3[] = {1, 2.5f, -3};

/* Submit x (n elements, with a batch dimension of `batch` rows when batch > 0). */
static isv_request *submit_x(fixture *f, const char *name, const float *x, int64_t n,
                             int64_t batch, unsigned protocol, result *res) {
  isv_request *r = cf_request(f, name, x, batch > 0 ? batch * n : n, batch);
  r->protocol = (uint8_t)protocol;
  return cf_submit(f, r, res);
}

static isv_request *submit(fixture *f, const char *name, result *res) {
  return submit_x(f, name, x3, 3, 0, 0, res);
}

static void expect_twice_x3(const result *res) {
  assert_int_equal(res->calls, 1);
  if (res->status != 0) fail_msg("status %d: %s", res->status, res->msg);
  assert_string_equal(res->msg, "");
  assert_int_equal(res->n, 3);
  assert_true(res->y[0] == 2.0f && res->y[1] == 5.0f && res->y[2] == -6.0f);
}

static void inline_pool_and_other_thread_give_the_same_result(void **state) {
  fixture *f = *state;
  result a = {0}, b = {0}, c = {0}, d = {0};
  submit(f, "inline", &a);
  assert_int_equal(a.calls, 1); /* inline: done before submit returned */
  expect_twice_x3(&a);

  submit(f, "pool", &b);
  uv_run(&f->loop, UV_RUN_DEFAULT);
  expect_twice_x3(&b);

  submit(f, "thread", &c);
  assert_int_equal(c.calls, 0);
  uv_sem_post(&ctl.go);
  uv_run(&f->loop, UV_RUN_DEFAULT);
  uv_thread_join(&ctl.thread);
  ctl.thread_made = 0;
  expect_twice_x3(&c);
  assert_int_equal(ctl.complete_rc[0], 0);

  submit(f, "pool_thread", &d);
  uv_sem_post(&ctl.go);
  uv_run(&f->loop, UV_RUN_DEFAULT);
  uv_thread_join(&ctl.thread);
  ctl.thread_made = 0;
  expect_twice_x3(&d);
  assert_memory_equal(a.y, b.y, sizeof a.y);
  assert_memory_equal(a.y, c.y, sizeof a.y);
  assert_memory_equal(a.y, d.y, sizeof a.y);
  assert_int_equal(atomic_load(&ctl.infer_calls), 4);
}

/* Pool requests chained as a host does at one in flight: each submitted from the previous
 * one's done callback. The loop waits briefly for a fast worker's completion and takes the
 * next one in the same turn (wait_for_completion): every request is answered, in order, and
 * the counts of executions out on the pool come back to zero. */
#define CHAIN 300
static struct {
  fixture *f;
  result res[CHAIN];
  int next, order;
} chain;

static void chain_done(isv_request *r, int status, void *data);

static void chain_next(void) {
  int i = chain.next++;
  chain.res[i].order = &chain.order;
  isv_request *r = cf_request(chain.f, "pool", x3, 3, 0);
  isv__core_submit(&chain.f->core, r, chain_done, &chain.res[i]);
}

static void chain_done(isv_request *r, int status, void *data) {
  cf_on_done(r, status, data);
  if (chain.next < CHAIN) chain_next();
}

static void pool_requests_chained_from_callbacks(void **state) {
  fixture *f = *state;
  memset(&chain, 0, sizeof chain);
  chain.f = f;
  chain_next();
  cf_wait(f, &chain.res[CHAIN - 1], 1);
  for (int i = 0; i < CHAIN; i++) {
    expect_twice_x3(&chain.res[i]);
    assert_int_equal(chain.res[i].order_no, i + 1);
  }
  assert_int_equal(atomic_load(&ctl.infer_calls), CHAIN);
  assert_int_equal(f->core.inflight, 0);
  assert_int_equal(f->core.pool_execs, 0);
}

static void completion_from_another_thread_during_infer(void **state) {
  fixture *f = *state;
  result res = {0};
  submit(f, "joined", &res);
  /* infer returned after the other thread completed: its caller finished the request */
  assert_int_equal(ctl.complete_rc[0], 0);
  expect_twice_x3(&res);
  assert_int_equal(f->core.inflight, 0);
}

static void completing_twice_is_estate(void **state) {
  fixture *f = *state;
  result res = {0};
  submit(f, "twice_done", &res);
  assert_int_equal(ctl.complete_rc[0], 0);
  assert_int_equal(ctl.complete_rc[1], ISV_ESTATE);
  expect_twice_x3(&res); /* the first completion stands */

  /* not submitted yet, a positive status, no request */
  isv_request *r = isv__request_new(&f->core);
  assert_int_equal(isv_request_complete(r, 0, NULL), ISV_ESTATE);
  isv_request_free(r);
  assert_int_equal(isv_request_complete(NULL, 0, NULL), ISV_EINVAL);

  /* a completion on the loop thread after infer returned finishes at once; later ones fail */
  result d = {0};
  d.keep = 1;
  r = submit(f, "deferred", &d);
  assert_ptr_equal(ctl.pending, r);
  assert_int_equal(d.calls, 0);
  /* an HTTP-like status is the backend's failure: 500, its message passed through */
  assert_int_equal(isv_request_complete(r, 500, "model exploded"), 0);
  assert_int_equal(d.calls, 1);
  assert_int_equal(d.status, ISV_EBACKEND);
  assert_string_equal(d.msg, "model exploded (backend code 500, not an ISV_E* code)");
  assert_int_equal(isv_request_complete(r, 0, NULL), ISV_ESTATE);
  assert_int_equal(d.calls, 1);
  isv_request_free(r);

  /* from a worker thread, after the response went out and the request was freed (ASan would
   * report a use after free here if the library returned its memory at once) */
  result a = {0};
  submit(f, "after_free", &a);
  cf_wait(f, &a, 1); /* answered; the fixture's callback freed the request */
  assert_int_equal(a.status, 0);
  uv_sem_post(&ctl.go);
  uv_sem_wait(&ctl.started);
  assert_int_equal(ctl.complete_rc[0], 0);
  assert_int_equal(ctl.complete_rc[1], ISV_ESTATE);
  assert_int_equal(ctl.cancelled_before, ISV_ESTATE); /* an output after the end */
  assert_int_equal(ctl.cancelled_after, 1);           /* no memory from a dead request */
  cf_run_for(f, 20);
  assert_int_equal(a.calls, 1); /* nothing more reached the client */
}

/* The two completions of be_race: whichever wins, the other is refused and changes nothing,
 * and the request is answered once with its outputs (TSan in CI: the lock-free way races no
 * write of the other). */
static void racing_completions_one_wins(void **state) {
  fixture *f = *state;
  assert_int_equal(uv_barrier_init(&race_barrier, 2), 0);
  int loop_won = 0, thread_won = 0;
  for (int i = 0; i < 300; i++) {
    result res = {0};
    ctl.complete_rc[0] = ctl.complete_rc[1] = -1;
    submit(f, "race", &res);
    cf_wait(f, &res, 1);
    int a = ctl.complete_rc[0], b = ctl.complete_rc[1];
    if (!((a == 0 && b == ISV_ESTATE) || (a == ISV_ESTATE && b == 0)))
      fail_msg("round %d: the loop's completion %d, the thread's %d", i, a, b);
    loop_won += a == 0;
    thread_won += b == 0;
    expect_twice_x3(&res);
    assert_int_equal(res.calls, 1);
  }
  assert_int_equal(loop_won + thread_won, 300);
  assert_int_equal(f->core.inflight, 0);
  uv_barrier_destroy(&race_barrier);
}

/* A backend that breaks a rule of the library's calls is the backend's fault: 500 naming the
 * rule, and a line in the host's log — never the client's 400. */
static int be_misuse(isv_request *r, void *u) {
  const char *how = u;
  int64_t shape[] = {3};
  void *p;
  if (strcmp(how, "name") == 0) return isv_request_alloc_output(r, "nope", ISV_FP32, shape, 1, &p);
  if (strcmp(how, "type") == 0) return isv_request_alloc_output(r, "y", ISV_INT32, shape, 1, &p);
  if (strcmp(how, "rank") == 0) {
    int64_t two[] = {3, 1};
    return isv_request_alloc_output(r, "y", ISV_FP32, two, 2, &p);
  }
  if (strcmp(how, "twice") == 0) {
    isv_request_alloc_output(r, "y", ISV_FP32, shape, 1, &p);
    return isv_request_alloc_output(r, "y", ISV_FP32, shape, 1, &p);
  }
  if (strcmp(how, "bytes") == 0) {
    float y[3] = {0};
    return isv_request_set_output(r, "y", ISV_FP32, shape, 1, y, 8, ISV_TRANSIENT);
  }
  return 7; /* "positive": neither an error code nor a completion */
}

static char logged[512];
static int n_logged;
static void capture_log(void *user, isv_log_level level, const char *msg) {
  (void)user;
  if (level == ISV_LOG_WARN) snprintf(logged, sizeof logged, "%s", msg);
  n_logged++;
}

static void a_backends_mistake_is_a_500_naming_the_rule(void **state) {
  fixture *f = *state;
  static const struct {
    const char *how, *msg;
  } cases[] = {
      {"name", "model 'misuse_name' declares no output 'nope'"},
      {"type", "output 'y' of model 'misuse_type' is FP32, not INT32"},
      {"rank", "output 'y' of model 'misuse_rank' has shape [3,1], the model declares [-1]"},
      {"twice", "output 'y' of model 'misuse_twice' was already set"},
      {"bytes", "output 'y': 8 bytes given, its shape holds 12"},
      {"positive", "the backend returned a positive value without completing the request "
                   "(backend code 7, not an ISV_E* code)"},
  };
  f->core.opts.log = capture_log;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char name[32];
    snprintf(name, sizeof name, "misuse_%s", cases[i].how);
    add_model(f, name, be_misuse, cases[i].how, ISV_EXEC_INLINE, 0);
    result res = {0};
    n_logged = 0;
    submit(f, name, &res);
    assert_int_equal(res.calls, 1);
    assert_int_equal(res.status, ISV_EBACKEND);
    assert_string_equal(res.msg, cases[i].msg);
    assert_int_equal(n_logged, 1);
    char want[512];
    snprintf(want, sizeof want, "model '%s' version '1': %s", name, cases[i].msg);
    assert_string_equal(logged, want);
  }
  /* a backend's deliberate ISV_EBACKEND is its answer, not a bug: nothing logged */
  n_logged = 0;
  result d = {0};
  d.keep = 1;
  isv_request *r = submit(f, "deferred", &d);
  isv_request_complete(r, ISV_EBACKEND, "model exploded");
  assert_string_equal(d.msg, "model exploded");
  assert_int_equal(n_logged, 0);
  isv_request_free(r);
}

static void a_negative_return_without_completing_fails_the_request(void **state) {
  fixture *f = *state;
  result a = {0}, b = {0}, c = {0};
  submit(f, "unavail", &a);
  assert_int_equal(a.calls, 1);
  assert_int_equal(a.status, ISV_EUNAVAIL);
  assert_string_equal(a.msg, isv_strerror(ISV_EUNAVAIL));
  assert_int_equal(a.n, 0);
  submit(f, "unavail_pool", &b);
  uv_run(&f->loop, UV_RUN_DEFAULT);
  assert_int_equal(b.calls, 1);
  assert_int_equal(b.status, ISV_EUNAVAIL);
  assert_string_equal(b.msg, isv_strerror(ISV_EUNAVAIL));
  /* a code that is not an ISV_E* code is the backend's failure */
  submit(f, "errno_pool", &c);
  uv_run(&f->loop, UV_RUN_DEFAULT);
  assert_int_equal(c.calls, 1);
  assert_int_equal(c.status, ISV_EBACKEND);
  assert_string_equal(c.msg, "backend failed with code -5, which is not an ISV_E* code");
}

static void the_return_value_is_ignored_once_completed(void **state) {
  fixture *f = *state;
  result a = {0}, b = {0};
  submit(f, "done_then_error", &a);
  expect_twice_x3(&a);
  submit(f, "done_then_error_pool", &b);
  uv_run(&f->loop, UV_RUN_DEFAULT);
  expect_twice_x3(&b);
}

static void completion_from_another_thread_wakes_the_loop(void **state) {
  fixture *f = *state;
  isv_model *m = model(f, "thread");
  result res = {0};
  assert_false(uv_loop_alive(&f->loop));
  submit(f, "thread", &res);
  /* infer returned; the request waits for its thread: the async handle keeps the loop up */
  assert_int_equal(res.calls, 0);
  assert_int_equal(f->core.inflight, 1);
  assert_int_equal(m->stats.inflight, 1);
  assert_true(uv_loop_alive(&f->loop));
  uv_sem_post(&ctl.go);
  /* returns only once the completion was delivered through the async handle */
  assert_int_equal(uv_run(&f->loop, UV_RUN_DEFAULT), 0);
  uv_thread_join(&ctl.thread);
  ctl.thread_made = 0;
  expect_twice_x3(&res);
  assert_int_equal(ctl.complete_rc[0], 0);
  assert_int_equal(f->core.inflight, 0);
  assert_int_equal(m->stats.inflight, 0);
  assert_false(uv_loop_alive(&f->loop));
}

static void the_loop_is_not_kept_alive_without_requests(void **state) {
  fixture *f = *state;
  assert_false(uv_loop_alive(&f->loop));
  assert_int_equal(uv_run(&f->loop, UV_RUN_DEFAULT), 0); /* returns: nothing to wait for */
  result a = {0}, b = {0};
  submit(f, "inline", &a);
  expect_twice_x3(&a);
  assert_false(uv_loop_alive(&f->loop));
  submit(f, "pool", &b);
  uv_run(&f->loop, UV_RUN_DEFAULT);
  expect_twice_x3(&b);
  assert_false(uv_loop_alive(&f->loop));
  /* a request in flight keeps it alive until completed, on the loop thread here */
  result d = {0};
  isv_request *r = submit(f, "deferred", &d);
  assert_true(uv_loop_alive(&f->loop));
  assert_int_equal(isv_request_complete(r, 0, NULL), 0);
  assert_int_equal(d.calls, 1);
  assert_int_equal(d.status, 0);
  assert_false(uv_loop_alive(&f->loop));
  /* requests that fail before they are counted never reference the handle */
  result u = {0};
  submit(f, "no_such_model", &u);
  assert_int_equal(u.status, ISV_ENOTFOUND);
  assert_false(uv_loop_alive(&f->loop));
  assert_int_equal(uv_run(&f->loop, UV_RUN_DEFAULT), 0);
}

static int idle_calls, idle_seq, idle_inflight;
static int *idle_sequence;
static void on_idle(isv__core *c) {
  idle_calls++;
  idle_inflight = (int)c->inflight;
  if (idle_sequence) idle_seq = ++*idle_sequence;
}

static void inflight_count_and_the_idle_hook_when_closing(void **state) {
  fixture *f = *state;
  idle_calls = idle_seq = 0;
  int sequence = 0;
  idle_sequence = &sequence;
  f->core.on_idle = on_idle;
  /* not closing: no hook */
  result a = {0};
  submit(f, "inline", &a);
  expect_twice_x3(&a);
  assert_int_equal(idle_calls, 0);

  result r1 = {0}, r2 = {0};
  r1.order = r2.order = &sequence;
  isv_request *q1 = submit(f, "deferred", &r1);
  isv_request *q2 = submit(f, "deferred", &r2);
  assert_int_equal(f->core.inflight, 2);
  assert_int_equal(model(f, "deferred")->stats.inflight, 2);
  f->core.closing = 1;
  assert_int_equal(isv_request_complete(q2, 0, NULL), 0);
  assert_int_equal(r2.calls, 1);
  assert_int_equal(f->core.inflight, 1);
  assert_int_equal(idle_calls, 0); /* one still in flight */
  assert_true(uv_loop_alive(&f->loop));
  assert_int_equal(isv_request_complete(q1, 0, NULL), 0);
  assert_int_equal(r1.calls, 1);
  assert_int_equal(f->core.inflight, 0);
  assert_int_equal(idle_calls, 1);
  assert_int_equal(idle_inflight, 0);
  assert_true(r2.order_no < r1.order_no && r1.order_no < idle_seq); /* after the last callback */
  assert_false(uv_loop_alive(&f->loop));
  idle_sequence = NULL;
  f->core.on_idle = NULL;
  f->core.closing = 0;
}

static void the_idle_hook_after_a_completion_from_another_thread(void **state) {
  fixture *f = *state;
  idle_calls = 0;
  idle_sequence = NULL;
  f->core.on_idle = on_idle;
  result res = {0};
  submit(f, "pool_thread", &res);
  f->core.closing = 1;
  uv_sem_post(&ctl.go);
  uv_run(&f->loop, UV_RUN_DEFAULT);
  expect_twice_x3(&res);
  assert_int_equal(idle_calls, 1);
  assert_int_equal(idle_inflight, 0);
  f->core.on_idle = NULL;
  f->core.closing = 0;
}

static void the_cancellation_flag_reaches_a_pool_backend(void **state) {
  fixture *f = *state;
  assert_int_equal(isv_request_is_cancelled(NULL), 0);
  result res = {0};
  isv_request *r = submit(f, "watch", &res);
  uv_sem_wait(&ctl.started); /* the backend runs on the pool and has looked once */
  assert_int_equal(ctl.cancelled_before, 0);
  assert_int_equal(isv_request_is_cancelled(r), 0);
  /* what a front end does on the loop thread when the client goes away */
  isv__core_cancel(r);
  assert_int_equal(isv_request_is_cancelled(r), 1);
  uv_sem_post(&ctl.go);
  uv_run(&f->loop, UV_RUN_DEFAULT);
  assert_int_equal(ctl.cancelled_after, 1);
  assert_int_equal(res.calls, 1);
  assert_int_equal(res.status, ISV_ECANCELED);
  assert_string_equal(res.msg, "stopped early");
  assert_int_equal(res.n, 0);

  /* not cancelled: the same backend answers normally */
  result ok = {0};
  submit(f, "watch", &ok);
  uv_sem_wait(&ctl.started);
  uv_sem_post(&ctl.go);
  uv_run(&f->loop, UV_RUN_DEFAULT);
  assert_int_equal(ctl.cancelled_before, 0);
  assert_int_equal(ctl.cancelled_after, 0);
  expect_twice_x3(&ok);
}

/* "watch" has one instance: a second request waits in its queue behind the running one; once
 * cancelled it leaves the queue and fails at once, without its backend running. */
static void a_queued_request_cancelled_never_runs(void **state) {
  fixture *f = *state;
  isv_model *m = model(f, "watch");
  result first = {0}, second = {0};
  submit(f, "watch", &first);
  uv_sem_wait(&ctl.started); /* the only instance is busy */
  isv_request *r2 = submit(f, "watch", &second);
  second.keep = 1;
  assert_int_equal(m->stats.queued, 1);
  assert_int_equal(isv_request_cancel(r2), 0);
  assert_int_equal(second.calls, 1); /* at once */
  assert_int_equal(m->stats.queued, 0);
  assert_int_equal(isv_request_cancel(r2), ISV_ESTATE); /* finished */
  isv_request_free(r2);
  uv_sem_post(&ctl.go);
  uv_run(&f->loop, UV_RUN_DEFAULT);
  expect_twice_x3(&first);
  assert_int_equal(second.calls, 1);
  assert_int_equal(second.status, ISV_ECANCELED);
  assert_string_equal(second.msg, "request cancelled before it ran");
  assert_int_equal(atomic_load(&ctl.infer_calls), 1);
  assert_int_equal(f->core.inflight, 0);
  assert_int_equal(m->stats.success[0], 1);
  assert_int_equal(m->stats.failure[0], 1);
  assert_int_equal(m->stats.latency.count, 2);
  assert_int_equal(m->stats.queue.count, 1); /* it never ran */
  assert_int_equal(m->stats.inflight, 0);
}

static uint64_t hist_total(const isv__hist *h) {
  uint64_t t = 0;
  for (unsigned i = 0; i <= ISV__LAT_BUCKETS; i++) t += h->counts[i];
  return t;
}

static void statistics_per_protocol_label(void **state) {
  fixture *f = *state;
  unsigned http = isv__core_protocol(&f->core, "v2_http");
  unsigned grpc = isv__core_protocol(&f->core, "v2_grpc");
  assert_int_equal(http, 1);
  assert_int_equal(grpc, 2);
  isv_model *m = model(f, "inline");

  result a = {0};
  submit_x(f, "inline", x3, 3, 0, http, &a);
  expect_twice_x3(&a);
  assert_int_equal(m->stats.success[http], 1);
  for (unsigned i = 0; i < ISV__MAX_PROTOCOLS; i++) {
    if (i != http) assert_int_equal(m->stats.success[i], 0);
    assert_int_equal(m->stats.failure[i], 0);
  }
  assert_int_equal(m->stats.latency.count, 1);
  assert_int_equal(hist_total(&m->stats.latency), 1);
  assert_int_equal(m->stats.queue.count, 1);
  assert_int_equal(hist_total(&m->stats.queue), 1);
  assert_true(m->stats.queue.sum >= 0);
  assert_true(m->stats.latency.sum >= m->stats.queue.sum); /* submit→done spans submit→run */
  assert_int_equal(m->stats.batch.count, 1);
  assert_int_equal(m->stats.batch.counts[0], 1); /* no batch dimension: one row */
  assert_int_equal(m->stats.inflight, 0);

  /* a failure found by validation: counted under its label; it never reached the queue */
  isv_request *r = isv__request_new(&f->core);
  r->model_name = "inline";
  r->protocol = (uint8_t)grpc;
  result b = {0};
  isv__core_submit(&f->core, r, cf_on_done, &b);
  assert_int_equal(b.status, ISV_EBADREQ);
  assert_int_equal(m->stats.failure[grpc], 1);
  assert_int_equal(m->stats.success[grpc], 0);
  assert_int_equal(m->stats.latency.count, 2);
  assert_int_equal(m->stats.queue.count, 1);

  /* not ready: a failure, no queue time */
  m->state = ISV_MODEL_LOADING;
  result c = {0};
  submit_x(f, "inline", x3, 3, 0, http, &c);
  m->state = ISV_MODEL_READY;
  assert_int_equal(c.status, ISV_EUNAVAIL);
  assert_int_equal(m->stats.failure[http], 1);
  assert_int_equal(m->stats.latency.count, 3);
  assert_int_equal(m->stats.queue.count, 1);

  /* a backend failure ran: queue time counted */
  isv_model *u = model(f, "unavail");
  result d = {0};
  submit_x(f, "unavail", x3, 3, 0, grpc, &d);
  assert_int_equal(d.status, ISV_EUNAVAIL);
  assert_int_equal(u->stats.failure[grpc], 1);
  assert_int_equal(u->stats.queue.count, 1);
  assert_int_equal(u->stats.latency.count, 1);

  /* pool requests count the same way */
  isv_model *p = model(f, "pool");
  result e = {0};
  submit_x(f, "pool", x3, 3, 0, grpc, &e);
  uv_run(&f->loop, UV_RUN_DEFAULT);
  expect_twice_x3(&e);
  assert_int_equal(p->stats.success[grpc], 1);
  assert_int_equal(p->stats.queue.count, 1);
  assert_int_equal(p->stats.latency.count, 1);

  /* an unknown model records nothing anywhere */
  result g = {0};
  submit_x(f, "nope", x3, 3, 0, http, &g);
  assert_int_equal(g.status, ISV_ENOTFOUND);
  assert_int_equal(m->stats.latency.count, 3);
  assert_int_equal(m->stats.success[http] + m->stats.failure[http], 2);
}

static void the_batch_histogram_counts_rows(void **state) {
  fixture *f = *state;
  isv_model *m = model(f, "batched");
  static const float x[8 * 2] = {1, 2, 3, 4, 5, 6};
  result a = {0}, b = {0}, c = {0};
  submit_x(f, "batched", x, 2, 3, 0, &a); /* 3 rows: le 4 */
  assert_int_equal(a.status, 0);
  assert_int_equal(a.n, 6);
  submit_x(f, "batched", x, 2, 1, 0, &b); /* 1 row: le 1 */
  assert_int_equal(b.status, 0);
  submit_x(f, "batched", x, 2, 8, 0, &c); /* 8 rows: le 8 */
  assert_int_equal(c.status, 0);
  assert_int_equal(m->stats.batch.count, 3);
  assert_int_equal(m->stats.batch.counts[0], 1);
  assert_int_equal(m->stats.batch.counts[2], 1);
  assert_int_equal(m->stats.batch.counts[3], 1);
  assert_true(m->stats.batch.sum == 12);
  assert_int_equal(m->stats.success[0], 3);
}


/* ---- instances, queue, limits ------------------------------------------------------------ */

/* Blocks on its own semaphore until the test lets it go, noting its instance. */
static struct {
  uv_sem_t go, started;
  atomic_int running, max_running, calls;
  unsigned instance[16];
  isv_request *held[16];
  atomic_int n_held;
} gate;

static int be_gated(isv_request *r, void *u) {
  (void)u;
  int now = atomic_fetch_add(&gate.running, 1) + 1;
  int max = atomic_load(&gate.max_running);
  while (now > max && !atomic_compare_exchange_weak(&gate.max_running, &max, now)) {
  }
  int k = atomic_fetch_add(&gate.calls, 1);
  if (k < 16) gate.instance[k] = isv_request_instance(r);
  uv_sem_post(&gate.started);
  uv_sem_wait(&gate.go);
  atomic_fetch_sub(&gate.running, 1);
  return cf_scale(r, 2);
}

/* Holds the request for the test to complete (loop thread, ASYNC mode). */
static int be_hold(isv_request *r, void *u) {
  (void)u;
  int k = atomic_fetch_add(&gate.n_held, 1);
  if (k < 16) gate.held[k] = r;
  gate.instance[k & 15] = isv_request_instance(r);
  return 0;
}

static int setup2(void **state) {
  memset(&gate, 0, sizeof gate);
  uv_sem_init(&gate.go, 0);
  uv_sem_init(&gate.started, 0);
  isv_options o;
  isv__options_defaults(&o);
  o.max_inflight = 4;
  o.worker_threads = 2; /* "two" runs twice at once: not on the default of one CPU's one thread */
  cf_world *w = cf_world_new(&o);
  cf_model two = {.name = "two", .infer = be_gated, .mode = ISV_EXEC_POOL, .instances = 2};
  cf_add(w, &two);
  cf_model hold = {.name = "hold", .infer = be_hold, .mode = ISV_EXEC_ASYNC, .max_queue = 2};
  cf_add(w, &hold);
  cf_model dl = {.name = "deadline", .infer = be_hold, .mode = ISV_EXEC_ASYNC,
                 .default_timeout_us = 3000};
  cf_add(w, &dl);
  *state = w;
  return 0;
}

static int teardown2(void **state) {
  cf_world_free(*state);
  uv_sem_destroy(&gate.go);
  uv_sem_destroy(&gate.started);
  return 0;
}

static void two_instances_run_two_at_once_the_third_waits(void **state) {
  cf_world *w = *state;
  isv_model *m = cf_find(w, "two");
  float x = 1;
  cf_result r[3] = {{0}};
  for (int i = 0; i < 3; i++) cf_submit(w, cf_request(w, "two", &x, 1, 0), &r[i]);
  uv_sem_wait(&gate.started);
  uv_sem_wait(&gate.started);
  assert_int_equal(isv__sched_busy(m), 2);
  assert_int_equal(m->stats.queued, 1);
  assert_int_not_equal(gate.instance[0], gate.instance[1]);
  for (int i = 0; i < 3; i++) uv_sem_post(&gate.go);
  for (int i = 0; i < 3; i++) cf_wait(w, &r[i], 1);
  for (int i = 0; i < 3; i++) assert_true(r[i].status == 0 && r[i].y[0] == 2);
  assert_int_equal(atomic_load(&gate.max_running), 2); /* never three */
  assert_int_equal(gate.calls, 3);
  assert_true(gate.instance[2] < 2);
  assert_int_equal(m->stats.exec_count, 3);
}

static void one_instance_runs_its_queue_in_order(void **state) {
  cf_world *w = *state;
  isv_model *m = cf_find(w, "hold");
  float x[3] = {1, 2, 3};
  cf_result r[3] = {{0}};
  int order = 0;
  for (int i = 0; i < 3; i++) {
    r[i].order = &order;
    cf_submit(w, cf_request(w, "hold", &x[i], 1, 0), &r[i]);
  }
  for (int i = 0; i < 3; i++) {
    assert_int_equal(gate.n_held, i + 1); /* the next starts only when the last completed */
    assert_int_equal(m->stats.queued, (size_t)(2 - i));
    assert_int_equal(cf_scale(gate.held[i], 1), 0);
    assert_int_equal(r[i].order_no, i + 1);
    assert_true(r[i].y[0] == x[i]);
  }
}

static void a_full_queue_refuses_with_503(void **state) {
  cf_world *w = *state;
  float x = 1;
  cf_result r[4] = {{0}};
  for (int i = 0; i < 4; i++) cf_submit(w, cf_request(w, "hold", &x, 1, 0), &r[i]);
  /* one runs, two wait (max_queue 2), the fourth is refused */
  assert_int_equal(r[3].calls, 1);
  assert_int_equal(r[3].status, ISV_EUNAVAIL);
  assert_string_equal(r[3].msg, "model 'hold' version '1' has 2 requests waiting, its queue "
                                "limit: retry later");
  for (int i = 0; i < 3; i++) {
    assert_int_equal(r[i].calls, 0);
    cf_scale(gate.held[i], 1);
    assert_int_equal(r[i].status, 0);
  }
}

static void the_in_flight_limit_refuses_with_503(void **state) {
  cf_world *w = *state;
  float x = 1;
  cf_result r[4] = {{0}}, over = {0};
  for (int i = 0; i < 3; i++) cf_submit(w, cf_request(w, "hold", &x, 1, 0), &r[i]);
  cf_submit(w, cf_request(w, "two", &x, 1, 0), &r[3]);
  assert_int_equal(w->core.inflight, 4); /* the limit (setup2) */
  cf_submit(w, cf_request(w, "two", &x, 1, 0), &over);
  assert_int_equal(over.calls, 1);
  assert_int_equal(over.status, ISV_EUNAVAIL);
  assert_string_equal(over.msg, "the server has 4 requests in flight, its limit: retry later");
  assert_int_equal(cf_find(w, "two")->stats.failure[0], 1); /* counted against its model */
  uv_sem_wait(&gate.started);
  uv_sem_post(&gate.go);
  cf_wait(w, &r[3], 1);
  for (int i = 0; i < 3; i++) cf_scale(gate.held[i], 1);
  for (int i = 0; i < 4; i++) assert_int_equal(r[i].status, 0);
}

/* ---- deadlines --------------------------------------------------------------------------- */

static void a_request_past_its_deadline_in_the_queue_never_runs(void **state) {
  cf_world *w = *state;
  float x = 1;
  cf_result first = {0}, late = {0};
  cf_submit(w, cf_request(w, "hold", &x, 1, 0), &first); /* takes the one instance */
  isv_request *r = cf_request(w, "hold", &x, 1, 0);
  cf_param_i64(r, "timeout", 2000); /* µs */
  cf_submit(w, r, &late);
  cf_wait(w, &late, 1);
  assert_int_equal(late.status, ISV_EDEADLINE);
  assert_string_equal(late.msg, "request to model 'hold' passed its deadline while it waited");
  assert_int_equal(gate.n_held, 1); /* it never ran */
  assert_int_equal(cf_find(w, "hold")->stats.queued, 0);
  cf_scale(gate.held[0], 1);
  assert_int_equal(first.status, 0);
}

static void a_running_request_past_its_deadline_is_cancelled_then_504(void **state) {
  cf_world *w = *state;
  float x = 1;
  cf_result res = {0};
  cf_submit(w, cf_request(w, "deadline", &x, 1, 0), &res); /* the model's 3 ms default */
  isv_request *r = gate.held[0];
  assert_false(isv_request_is_cancelled(r));
  for (int i = 0; i < 1000 && !isv_request_is_cancelled(r); i++) cf_run_for(w, 1);
  assert_true(isv_request_is_cancelled(r));
  assert_int_equal(res.calls, 0); /* it waits for its backend */
  assert_int_equal(cf_scale(r, 1), 0); /* a success, too late */
  assert_int_equal(res.status, ISV_EDEADLINE);
  assert_string_equal(res.msg, "request to model 'deadline' passed its deadline while it ran");
  assert_int_equal(res.n, 0);
}

static void the_earliest_deadline_wins_and_bad_timeouts_are_400(void **state) {
  cf_world *w = *state;
  float x = 1;
  cf_result a = {0}, b = {0}, c = {0};
  /* a front end's deadline (gRPC's) earlier than the model's default */
  isv_request *r = cf_request(w, "hold", &x, 1, 0);
  r->timeout_us = 1000;
  cf_submit(w, r, &a);
  for (int i = 0; i < 1000 && !isv_request_is_cancelled(gate.held[0]); i++) cf_run_for(w, 1);
  assert_true(isv_request_is_cancelled(gate.held[0]));
  cf_scale(gate.held[0], 1);
  assert_int_equal(a.status, ISV_EDEADLINE);
  r = cf_request(w, "hold", &x, 1, 0);
  cf_param_i64(r, "timeout", -5);
  cf_submit(w, r, &b);
  assert_int_equal(b.status, ISV_EBADREQ);
  assert_string_equal(b.msg, "parameter 'timeout' must be a non-negative integer (microseconds)");
  r = cf_request(w, "hold", &x, 1, 0);
  cf_param_str(r, "timeout", "100");
  cf_submit(w, r, &c);
  assert_int_equal(c.status, ISV_EBADREQ);
  assert_int_equal(gate.n_held, 1);
}

/* ---- cancellation and the drain ---------------------------------------------------------- */

static void cancelling_a_running_request_marks_it_only(void **state) {
  cf_world *w = *state;
  float x = 1;
  cf_result res = {0};
  res.keep = 1;
  isv_request *r = cf_submit(w, cf_request(w, "hold", &x, 1, 0), &res);
  assert_int_equal(isv_request_cancel(r), 0);
  assert_true(isv_request_is_cancelled(gate.held[0]));
  assert_int_equal(res.calls, 0);
  assert_int_equal(isv_request_complete(r, ISV_ECANCELED, "stopped"), 0);
  assert_int_equal(res.status, ISV_ECANCELED);
  assert_int_equal(isv_request_cancel(r), ISV_ESTATE);
  isv_request_free(r);
  isv_request *fresh = isv__request_new(&w->core);
  assert_int_equal(isv_request_cancel(fresh), ISV_ESTATE); /* never submitted */
  assert_int_equal(isv_request_cancel(NULL), ISV_EINVAL);
  isv_request_free(fresh);
}

static int idle_hits;
static void count_idle(isv__core *c) {
  (void)c;
  idle_hits++;
}

static void the_drain_deadline_answers_the_queue_and_cancels_the_running(void **state) {
  cf_world *w = *state;
  float x = 1;
  cf_result run = {0}, q1 = {0}, q2 = {0};
  cf_submit(w, cf_request(w, "hold", &x, 1, 0), &run);
  cf_submit(w, cf_request(w, "hold", &x, 1, 0), &q1);
  cf_submit(w, cf_request(w, "hold", &x, 1, 0), &q2);
  idle_hits = 0;
  w->core.on_idle = count_idle;
  isv__core_begin_close(&w->core, 2);
  assert_true(w->core.closing);
  cf_wait(w, &q2, 1);
  assert_int_equal(q1.status, ISV_EUNAVAIL);
  assert_string_equal(q1.msg, "the server closed before the request ran");
  assert_int_equal(q2.status, ISV_EUNAVAIL);
  assert_true(isv_request_is_cancelled(gate.held[0]));
  assert_int_equal(gate.n_held, 1); /* nothing new started */
  assert_int_equal(idle_hits, 0);
  cf_scale(gate.held[0], 1); /* the running one still answers */
  assert_int_equal(run.status, 0);
  assert_int_equal(idle_hits, 1);
  w->core.on_idle = NULL;
}

static void queued_work_runs_during_the_drain(void **state) {
  cf_world *w = *state;
  float x = 1;
  cf_result a = {0}, b = {0};
  cf_submit(w, cf_request(w, "hold", &x, 1, 0), &a);
  cf_submit(w, cf_request(w, "hold", &x, 1, 0), &b);
  isv__core_begin_close(&w->core, 0); /* no deadline */
  cf_scale(gate.held[0], 1);
  assert_int_equal(gate.n_held, 2); /* the queued one still starts */
  cf_scale(gate.held[1], 1);
  assert_true(a.status == 0 && b.status == 0);
}

/* ---- tracing (isv_options_set_trace) ------------------------------------------------------ */

static isv_trace_timeline traced[16];
static char traced_id[16][16]; /* the strings are valid during the call only */
static char traced_file[16][32];
static int n_traced;
static void on_trace(void *user, const isv_trace_timeline *t) {
  (void)user;
  if (n_traced < 16) {
    traced[n_traced] = *t;
    snprintf(traced_id[n_traced], sizeof traced_id[0], "%s", t->request_id);
    snprintf(traced_file[n_traced], sizeof traced_file[0], "%s", t->trace_file);
  }
  n_traced++;
}

/* The global (model NULL) or a model's trace settings: the `set` bits given these values. */
static void set_trace(fixture *f, const char *model, unsigned set, int timestamps, unsigned rate,
                      int64_t count, unsigned log_frequency) {
  isv__trace_change ch = {.set = set,
                          .v = {.timestamps = timestamps, .rate = rate, .count = count,
                                .log_frequency = log_frequency}};
  assert_int_equal(isv__traceset_apply(f->core.traceset, model, &ch, NULL), 0);
}

static void timeline_in_order(const isv_trace_timeline *t) {
  assert_true(t->request_start_ns > 0);
  assert_true(t->queue_start_ns >= t->request_start_ns);
  assert_true(t->compute_start_ns >= t->queue_start_ns);
  assert_true(t->compute_input_end_ns >= t->compute_start_ns);
  assert_true(t->compute_output_start_ns >= t->compute_input_end_ns);
  assert_true(t->compute_end_ns >= t->compute_output_start_ns);
  assert_true(t->request_end_ns >= t->compute_end_ns);
}

/* A decoupled backend: two responses (y = 2x each), then the completion. */
static int be_two_responses(isv_request *r, void *u) {
  (void)u;
  for (int i = 0; i < 2; i++) {
    int rc = cf_scale(r, 2);
    if (rc == 0) rc = isv_request_send_response(r);
    if (rc != 0) return rc;
  }
  return isv_request_complete(r, 0, NULL);
}
static void drop_response(isv_request *resp, int status, void *data) {
  (void)status;
  (void)data;
  isv_request_free(resp);
}

/* The timeline of an ASYNC request completed later, of one cancelled while its backend held it,
 * and of a decoupled request: in order, the cancelled one ending ECANCELED. */
static void traced_timelines_async_cancelled_decoupled(void **state) {
  (void)state;
  fixture *f = cf_world_new(NULL);
  f->core.opts.trace = on_trace;
  set_trace(f, NULL, ISV__TS_LEVEL | ISV__TS_RATE, 1, 1, 0, 0);
  add_model(f, "async", be_deferred, NULL, ISV_EXEC_ASYNC, 0);
  cf_model d = {.name = "dec", .infer = be_two_responses, .decoupled = 1};
  cf_add(f, &d);
  float x[2] = {1, 2};
  n_traced = 0;
  cf_result r1 = {0}, r2 = {0}, r3 = {0};
  ctl.pending = NULL;
  cf_submit(f, cf_request(f, "async", x, 2, 0), &r1);
  assert_non_null(ctl.pending);
  assert_int_equal(n_traced, 0); /* not done yet */
  assert_int_equal(cf_scale(ctl.pending, 2), 0);
  cf_wait(f, &r1, 1);
  ctl.pending = NULL;
  isv_request *c = cf_request(f, "async", x, 2, 0);
  cf_submit(f, c, &r2);
  assert_non_null(ctl.pending);
  isv__core_cancel(c); /* the client went away while the backend holds it */
  assert_int_equal(isv_request_complete(ctl.pending, ISV_ECANCELED, "gone"), 0);
  cf_wait(f, &r2, 1);
  isv_request *q = cf_request(f, "dec", x, 2, 0);
  assert_int_equal(isv_request_set_response_cb(q, drop_response, NULL), 0);
  cf_submit(f, q, &r3);
  cf_wait(f, &r3, 1);
  assert_int_equal(n_traced, 3);
  for (int i = 0; i < 3; i++) timeline_in_order(&traced[i]);
  assert_string_equal(traced[0].model, "async");
  assert_int_equal(traced[0].status, 0);
  assert_int_equal(traced[1].status, ISV_ECANCELED);
  assert_string_equal(traced[2].model, "dec");
  assert_int_equal(traced[2].status, 0);
  cf_world_free(f);
}

static void traced_requests_carry_their_timeline(void **state) {
  (void)state;
  fixture *f = cf_world_new(NULL);
  f->core.opts.trace = on_trace; /* set after the core began: its trace settings say so */
  set_trace(f, NULL, ISV__TS_LEVEL | ISV__TS_RATE, 1, 1, 0, 0);
  add_model(f, "inline", be_twice, NULL, ISV_EXEC_INLINE, 0);
  add_model(f, "pool", be_twice, NULL, ISV_EXEC_POOL, 0);
  add_model(f, "unavail", be_return_code, &code_unavail, ISV_EXEC_INLINE, 0);
  cf_model b = {.name = "b4", .infer = be_twice, .max_batch = 4, .batching = 1,
                .batch_delay_us = 10000000};
  cf_add(f, &b);
  n_traced = 0;
  float x[4] = {1, 2, 3, 4};
  cf_result r1 = {0}, r2 = {0}, r3 = {0}, r4 = {0}, r5 = {0};
  isv_request *q = cf_request(f, "inline", x, 2, 0);
  assert_int_equal(isv_request_set_id(q, "abc"), 0);
  cf_submit(f, q, &r1);
  cf_submit(f, cf_request(f, "pool", x, 2, 0), &r2);
  cf_wait(f, &r2, 1);
  cf_submit(f, cf_request(f, "b4", x, 4, 2), &r3); /* 2 + 2 rows: a full batch of two requests */
  cf_submit(f, cf_request(f, "b4", x, 4, 2), &r4);
  cf_submit(f, cf_request(f, "unavail", x, 2, 0), &r5);
  assert_int_equal(n_traced, 5);
  assert_string_equal(traced[0].model, "inline");
  assert_string_equal(traced_id[0], "abc");
  assert_string_equal(traced[0].protocol, "inprocess");
  assert_int_equal(traced[0].status, 0);
  assert_int_equal(traced[0].batch_size, 1);
  assert_int_equal(traced[0].has_parent, 0);
  assert_int_equal(traced[0].flags, 1);
  for (int i = 0; i < 4; i++) timeline_in_order(&traced[i]);
  assert_memory_not_equal(traced[0].trace_id, traced[1].trace_id, 16); /* fresh ids */
  assert_string_equal(traced[1].model, "pool");
  assert_int_equal(traced[2].batch_size, 2); /* batched: the batch's compute times */
  assert_int_equal(traced[3].batch_size, 2);
  assert_true(traced[2].compute_start_ns == traced[3].compute_start_ns ||
              traced[2].compute_input_end_ns == traced[3].compute_input_end_ns);
  assert_int_equal(traced[4].status, ISV_EUNAVAIL);
  /* every other request at rate 2 — and always one its caller sampled */
  set_trace(f, NULL, ISV__TS_RATE, 1, 2, 0, 0); /* a new rate counts from its first request */
  n_traced = 0;
  for (int i = 0; i < 4; i++) {
    cf_result r = {0};
    cf_submit(f, cf_request(f, "inline", x, 2, 0), &r);
  }
  assert_int_equal(n_traced, 2);
  n_traced = 0;
  set_trace(f, NULL, ISV__TS_RATE, 1, 2, 0, 0);
  q = cf_request(f, "inline", x, 2, 0);
  assert_int_equal(isv_request_set_trace_context(
                       q, "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", NULL), 0);
  cf_submit(f, q, &r1); /* the first: not the rate's, but sampled by its caller */
  q = cf_request(f, "inline", x, 2, 0);
  assert_int_equal(isv_request_set_trace_context(
                       q, "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00", NULL), 0);
  cf_submit(f, q, &r1); /* not sampled: the rate's second, traced as such, its ids kept */
  assert_int_equal(n_traced, 2);
  assert_int_equal(traced[0].has_parent, 1);
  assert_int_equal(traced[0].trace_id[0], 0x4b);
  assert_int_equal(traced[0].parent_id[7], 0xb7);
  assert_int_equal(traced[0].flags, 1);
  assert_int_equal(traced[1].flags, 0);
  assert_int_equal(traced[1].traces_left, -1);
  cf_world_free(f);
}

/* The trace extension's settings decide: level OFF traces none (a caller's sampled one
 * neither), trace_count runs out, a model's own settings override the global ones and fall
 * back to them when cleared. */
static void trace_settings_drive_the_sampling(void **state) {
  (void)state;
  fixture *f = cf_world_new(NULL);
  f->core.opts.trace = on_trace;
  add_model(f, "a", be_twice, NULL, ISV_EXEC_INLINE, 0);
  add_model(f, "b", be_twice, NULL, ISV_EXEC_INLINE, 0);
  float x[4] = {1, 2, 3, 4};
  cf_result r = {0};
  n_traced = 0;
  for (int i = 0; i < 3; i++) cf_submit(f, cf_request(f, "a", x, 2, 0), &r);
  isv_request *q = cf_request(f, "a", x, 2, 0);
  assert_int_equal(isv_request_set_trace_context(
                       q, "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", NULL), 0);
  cf_submit(f, q, &r);
  assert_int_equal(n_traced, 0); /* level OFF (no hook at the start): nothing, sampled or not */
  set_trace(f, NULL, ISV__TS_LEVEL | ISV__TS_RATE | ISV__TS_COUNT, 1, 1, 3, 0);
  for (int i = 0; i < 5; i++) cf_submit(f, cf_request(f, "a", x, 2, 0), &r);
  assert_int_equal(n_traced, 3); /* the count ran out */
  assert_int_equal(traced[0].traces_left, 2);
  assert_int_equal(traced[2].traces_left, 0);
  /* b's own count and file; a keeps the global ones (count 0: none) */
  isv__trace_change ch = {.set = ISV__TS_COUNT | ISV__TS_FILE, .v = {.count = 1}};
  strcpy(ch.v.file, "/tmp/b.json");
  assert_int_equal(isv__traceset_apply(f->core.traceset, "b", &ch, NULL), 0);
  n_traced = 0;
  cf_submit(f, cf_request(f, "a", x, 2, 0), &r);
  cf_submit(f, cf_request(f, "b", x, 2, 0), &r);
  cf_submit(f, cf_request(f, "b", x, 2, 0), &r);
  assert_int_equal(n_traced, 1);
  assert_string_equal(traced[0].model, "b");
  assert_int_equal(traced[0].log_frequency, 0);
  isv__trace_view v;
  isv__traceset_get(f->core.traceset, "b", &v);
  assert_string_equal(v.file, "/tmp/b.json");
  assert_int_equal(v.count, 0);
  assert_int_equal(v.timestamps, 1); /* the global level */
  /* b's count cleared: the global one again (0), and its file stays its own */
  ch = (isv__trace_change){.clear = ISV__TS_COUNT};
  assert_int_equal(isv__traceset_apply(f->core.traceset, "b", &ch, &v), 0);
  assert_string_equal(v.file, "/tmp/b.json");
  set_trace(f, NULL, ISV__TS_COUNT, 1, 1, -1, 0);
  n_traced = 0;
  cf_submit(f, cf_request(f, "b", x, 2, 0), &r);
  assert_int_equal(n_traced, 1);
  assert_string_equal(traced_file[0], "/tmp/b.json");
  /* b's level OFF: b not traced, a still */
  ch = (isv__trace_change){.set = ISV__TS_LEVEL, .v = {.timestamps = 0}};
  assert_int_equal(isv__traceset_apply(f->core.traceset, "b", &ch, NULL), 0);
  n_traced = 0;
  cf_submit(f, cf_request(f, "b", x, 2, 0), &r);
  cf_submit(f, cf_request(f, "a", x, 2, 0), &r);
  assert_int_equal(n_traced, 1);
  assert_string_equal(traced[0].model, "a");
  /* clearing the global level: back to what the server started with (OFF) */
  ch = (isv__trace_change){.clear = ISV__TS_LEVEL};
  assert_int_equal(isv__traceset_apply(f->core.traceset, NULL, &ch, &v), 0);
  assert_int_equal(v.timestamps, 0);
  n_traced = 0;
  cf_submit(f, cf_request(f, "a", x, 2, 0), &r);
  assert_int_equal(n_traced, 0);
  cf_world_free(f);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(traced_requests_carry_their_timeline),
      cmocka_unit_test(traced_timelines_async_cancelled_decoupled),
      cmocka_unit_test(trace_settings_drive_the_sampling),
      cmocka_unit_test_setup_teardown(inline_pool_and_other_thread_give_the_same_result, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(pool_requests_chained_from_callbacks, setup, teardown),
      cmocka_unit_test_setup_teardown(completion_from_another_thread_during_infer, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(completing_twice_is_estate, setup, teardown),
      cmocka_unit_test_setup_teardown(racing_completions_one_wins, setup, teardown),
      cmocka_unit_test_setup_teardown(a_backends_mistake_is_a_500_naming_the_rule, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(a_negative_return_without_completing_fails_the_request,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(the_return_value_is_ignored_once_completed, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(completion_from_another_thread_wakes_the_loop, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(the_loop_is_not_kept_alive_without_requests, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(inflight_count_and_the_idle_hook_when_closing, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(the_idle_hook_after_a_completion_from_another_thread,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(the_cancellation_flag_reaches_a_pool_backend, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(a_queued_request_cancelled_never_runs, setup, teardown),
      cmocka_unit_test_setup_teardown(statistics_per_protocol_label, setup, teardown),
      cmocka_unit_test_setup_teardown(the_batch_histogram_counts_rows, setup, teardown),
      cmocka_unit_test_setup_teardown(two_instances_run_two_at_once_the_third_waits, setup2,
                                      teardown2),
      cmocka_unit_test_setup_teardown(one_instance_runs_its_queue_in_order, setup2, teardown2),
      cmocka_unit_test_setup_teardown(a_full_queue_refuses_with_503, setup2, teardown2),
      cmocka_unit_test_setup_teardown(the_in_flight_limit_refuses_with_503, setup2, teardown2),
      cmocka_unit_test_setup_teardown(a_request_past_its_deadline_in_the_queue_never_runs, setup2,
                                      teardown2),
      cmocka_unit_test_setup_teardown(a_running_request_past_its_deadline_is_cancelled_then_504,
                                      setup2, teardown2),
      cmocka_unit_test_setup_teardown(the_earliest_deadline_wins_and_bad_timeouts_are_400,
                                      setup2, teardown2),
      cmocka_unit_test_setup_teardown(cancelling_a_running_request_marks_it_only, setup2,
                                      teardown2),
      cmocka_unit_test_setup_teardown(the_drain_deadline_answers_the_queue_and_cancels_the_running,
                                      setup2, teardown2),
      cmocka_unit_test_setup_teardown(queued_work_runs_during_the_drain, setup2, teardown2),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
