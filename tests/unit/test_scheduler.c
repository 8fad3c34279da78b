/* core/scheduler.c: the request path after submission — the backend run inline or on libuv's
 * pool, its completion from whatever thread (at most once), the async wake-up of the loop, the
 * in-flight count that keeps the loop alive only while needed, the closing hook, the
 * cancellation flag, and the statistics every finished request records. */
#include "cmocka_prelude.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/request.h"

/* What the backends share with the tests. Backends never assert: they may run on other
 * threads, where cmocka cannot fail a test. */
static struct {
  uv_sem_t go;      /* a backend waits for the test's go-ahead */
  uv_sem_t started; /* a pool backend tells the test it runs */
  uv_thread_t thread;
  int thread_made;
  atomic_int infer_calls;
  int complete_rc[2];   /* what isv_request_complete returned to the backend */
  int cancelled_before; /* isv_request_cancelled() seen by a pool backend, before and after */
  int cancelled_after;
  isv_request *pending; /* a request whose backend returned without completing */
} ctl;

/* y = 2x, then complete. */
static int twice(isv_request *r) {
  const isv_tensor *x = isv_request_input(r, "x");
  size_t nd;
  const int64_t *shape = isv_tensor_shape(x, &nd);
  float *y;
  int rc = isv_request_output(r, "y", ISV_FP32, shape, nd, (void **)&y);
  if (rc) return rc;
  const float *in = isv_tensor_data(x);
  for (size_t i = 0; i < isv_tensor_element_count(x); i++) y[i] = in[i] * 2;
  return isv_request_complete(r, 0, NULL);
}

static int be_twice(isv_request *r, void *u) {
  (void)u;
  atomic_fetch_add(&ctl.infer_calls, 1);
  return twice(r);
}

/* Completes from a thread of its own once the test says go (after infer returned). */
static void later_main(void *arg) {
  uv_sem_wait(&ctl.go);
  ctl.complete_rc[0] = twice(arg);
}
static int be_other_thread(isv_request *r, void *u) {
  (void)u;
  atomic_fetch_add(&ctl.infer_calls, 1);
  if (uv_thread_create(&ctl.thread, later_main, r) != 0) return ISV_EINTERNAL;
  ctl.thread_made = 1;
  return 0;
}

/* Completes from another thread while infer is still running (it joins that thread). */
static void now_main(void *arg) { ctl.complete_rc[0] = twice(arg); }
static int be_other_thread_joined(isv_request *r, void *u) {
  (void)u;
  uv_thread_t t;
  if (uv_thread_create(&t, now_main, r) != 0) return ISV_EINTERNAL;
  uv_thread_join(&t);
  return 0;
}

static int be_complete_twice(isv_request *r, void *u) {
  (void)u;
  ctl.complete_rc[0] = twice(r);
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
  twice(r);
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
  ctl.cancelled_before = isv_request_cancelled(r);
  uv_sem_post(&ctl.started);
  uv_sem_wait(&ctl.go);
  ctl.cancelled_after = isv_request_cancelled(r);
  if (ctl.cancelled_after) return isv_request_complete(r, ISV_ECANCELED, "stopped early");
  return twice(r);
}

static const int code_unavail = ISV_EUNAVAIL;
static const int code_errno = -5;

typedef struct fixture {
  uv_loop_t loop;
  isv__core core;
} fixture;

static isv_model *add_model(fixture *f, const char *name, int (*infer)(isv_request *, void *),
                            const void *user, isv_exec_mode mode, uint32_t max_batch) {
  isv_model_config *c;
  assert_int_equal(isv_model_config_new(name, &c), 0);
  int64_t any[] = {-1};
  assert_int_equal(isv_model_config_add_input(c, "x", ISV_FP32, any, 1), 0);
  assert_int_equal(isv_model_config_add_output(c, "y", ISV_FP32, any, 1), 0);
  assert_int_equal(isv_model_config_set_exec_mode(c, mode), 0);
  assert_int_equal(isv_model_config_set_max_batch(c, max_batch), 0);
  isv_backend be = {sizeof be, infer, NULL};
  isv_model *m;
  assert_int_equal(isv__registry_add(&f->core.reg, c, "1", &be, (void *)user, &m), 0);
  isv_model_config_free(c);
  return m;
}

static int setup(void **state) {
  fixture *f = calloc(1, sizeof *f);
  memset(&ctl, 0, sizeof ctl);
  assert_int_equal(uv_sem_init(&ctl.go, 0), 0);
  assert_int_equal(uv_sem_init(&ctl.started, 0), 0);
  assert_int_equal(uv_loop_init(&f->loop), 0);
  isv_options o;
  isv__options_defaults(&o);
  assert_int_equal(isv__core_init(&f->core, &f->loop, &o), 0);
  add_model(f, "inline", be_twice, NULL, ISV_EXEC_INLINE, 0);
  add_model(f, "pool", be_twice, NULL, ISV_EXEC_POOL, 0);
  add_model(f, "thread", be_other_thread, NULL, ISV_EXEC_INLINE, 0);
  add_model(f, "pool_thread", be_other_thread, NULL, ISV_EXEC_POOL, 0);
  add_model(f, "joined", be_other_thread_joined, NULL, ISV_EXEC_INLINE, 0);
  add_model(f, "twice_done", be_complete_twice, NULL, ISV_EXEC_INLINE, 0);
  add_model(f, "unavail", be_return_code, &code_unavail, ISV_EXEC_INLINE, 0);
  add_model(f, "unavail_pool", be_return_code, &code_unavail, ISV_EXEC_POOL, 0);
  add_model(f, "errno_pool", be_return_code, &code_errno, ISV_EXEC_POOL, 0);
  add_model(f, "done_then_error", be_complete_then_error, NULL, ISV_EXEC_INLINE, 0);
  add_model(f, "done_then_error_pool", be_complete_then_error, NULL, ISV_EXEC_POOL, 0);
  add_model(f, "deferred", be_deferred, NULL, ISV_EXEC_INLINE, 0);
  add_model(f, "watch", be_watch_cancel, NULL, ISV_EXEC_POOL, 0);
  add_model(f, "batched", be_twice, NULL, ISV_EXEC_INLINE, 8);
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fixture *f = *state;
  if (ctl.thread_made) uv_thread_join(&ctl.thread);
  assert_int_equal(f->core.inflight, 0);
  isv__core_close(&f->core, NULL);
  uv_run(&f->loop, UV_RUN_DEFAULT);
  assert_int_equal(uv_loop_close(&f->loop), 0);
  uv_sem_destroy(&ctl.go);
  uv_sem_destroy(&ctl.started);
  free(f);
  return 0;
}

static isv_model *model(fixture *f, const char *name) {
  isv__model_entry *e = isv__registry_entry(&f->core.reg, name, strlen(name));
  assert_non_null(e);
  return e->versions;
}

typedef struct result {
  int calls;
  int status;
  char msg[128];
  float y[8];
  size_t n;
  int keep;        /* do not free the request in the callback */
  int *sequence;   /* where to note the order of events, may be NULL */
  int seq_no;      /* this callback's place in that order */
} result;

static void on_done(isv_request *r, int status, void *data) {
  result *res = data;
  res->calls++;
  res->status = status;
  if (res->sequence) res->seq_no = ++*res->sequence;
  snprintf(res->msg, sizeof res->msg, "%s", isv_request_error_message(r));
  const isv_tensor *y = isv_request_output_tensor(r, "y");
  if (y) {
    res->n = isv_tensor_element_count(y);
    if (res->n <= 8) memcpy(res->y, isv_tensor_data(y), res->n * sizeof(float));
  }
  if (!res->keep) isv_request_free(r);
}

static const float x3[] = {1, 2.5f, -3};

/* Submit x (n elements, with a batch dimension of `batch` rows when batch > 0). */
static isv_request *submit_x(fixture *f, const char *name, const float *x, int64_t n,
                             int64_t batch, unsigned protocol, result *res) {
  isv_request *r = isv__request_new(&f->core);
  assert_non_null(r);
  r->model_name = name;
  r->protocol = (uint8_t)protocol;
  int64_t shape[] = {batch, n};
  if (batch > 0)
    assert_int_equal(isv_request_add_input(r, "x", ISV_FP32, shape, 2, x,
                                           (size_t)(batch * n) * sizeof(float), ISV_TRANSIENT),
                     0);
  else
    assert_int_equal(isv_request_add_input(r, "x", ISV_FP32, &n, 1, x, (size_t)n * sizeof(float),
                                           ISV_TRANSIENT),
                     0);
  isv__core_submit(&f->core, r, on_done, res);
  return r;
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
  assert_int_equal(isv_request_complete(r, 1, NULL), ISV_EINVAL);
  assert_int_equal(d.calls, 0);
  assert_int_equal(isv_request_complete(r, ISV_EBACKEND, "model exploded"), 0);
  assert_int_equal(d.calls, 1);
  assert_int_equal(d.status, ISV_EBACKEND);
  assert_string_equal(d.msg, "model exploded");
  assert_int_equal(isv_request_complete(r, 0, NULL), ISV_ESTATE);
  assert_int_equal(d.calls, 1);
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
  r1.sequence = r2.sequence = &sequence;
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
  assert_true(r2.seq_no < r1.seq_no && r1.seq_no < idle_seq); /* after the last callback */
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
  assert_int_equal(isv_request_cancelled(NULL), 0);
  result res = {0};
  isv_request *r = submit(f, "watch", &res);
  uv_sem_wait(&ctl.started); /* the backend runs on the pool and has looked once */
  assert_int_equal(ctl.cancelled_before, 0);
  assert_int_equal(isv_request_cancelled(r), 0);
  /* what a front end does on the loop thread when the client goes away */
  atomic_store_explicit(&r->cancelled, 1, memory_order_relaxed);
  assert_int_equal(isv_request_cancelled(r), 1);
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

/* UV_THREADPOOL_SIZE is 1 in this binary (main): a pool request queued behind a running one
 * can still be taken off the queue, and then fails without its backend running. */
static void a_pool_request_cancelled_before_it_ran(void **state) {
  fixture *f = *state;
  isv_model *m = model(f, "watch");
  result first = {0}, second = {0};
  submit(f, "watch", &first);
  uv_sem_wait(&ctl.started); /* the only pool thread is busy */
  isv_request *r2 = submit(f, "watch", &second);
  assert_int_equal(uv_cancel((uv_req_t *)&r2->work), 0);
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
  isv__core_submit(&f->core, r, on_done, &b);
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

int main(void) {
  /* one pool thread: a_pool_request_cancelled_before_it_ran needs a request left queued */
  setenv("UV_THREADPOOL_SIZE", "1", 1);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(inline_pool_and_other_thread_give_the_same_result, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(completion_from_another_thread_during_infer, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(completing_twice_is_estate, setup, teardown),
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
      cmocka_unit_test_setup_teardown(a_pool_request_cancelled_before_it_ran, setup, teardown),
      cmocka_unit_test_setup_teardown(statistics_per_protocol_label, setup, teardown),
      cmocka_unit_test_setup_teardown(the_batch_histogram_counts_rows, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
