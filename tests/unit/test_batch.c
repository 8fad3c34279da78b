/* core/batch.c and dynamic batching through the core: which waiting requests join (inputs
 * alike beyond dimension 0, parameters equal but the core's), how many (max_batch, preferred
 * sizes, the delay), the concatenated inputs the backend sees, each request's own rows, shape,
 * requested outputs and errors back, no copy for a batch of one, and the statistics. */
#include "cmocka_prelude.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/batch.h"
#include "core_fixture.h"
#include "core/scheduler.h"

/* What the backends saw (loop thread or one worker at a time: one instance). */
static struct {
  int calls;
  uint64_t rows[32];        /* dimension 0 of x, per call */
  const isv_request *seen[32];
  int bad_rows;             /* answer with one row too many */
} be;

static int be_twice(isv_request *r, void *u) {
  (void)u;
  const isv_tensor *x = isv_request_input(r, "x");
  if (be.calls < 32) {
    be.rows[be.calls] = (uint64_t)isv_tensor_shape(x, NULL)[0];
    be.seen[be.calls] = r;
  }
  be.calls++;
  if (be.bad_rows) {
    size_t nd;
    const int64_t *sh = isv_tensor_shape(x, &nd);
    int64_t more[2] = {sh[0] > 0 ? sh[0] - 1 : 1, sh[1]};
    float *y;
    int rc = isv_request_alloc_output(r, "y", ISV_FP32, more, 2, (void **)&y);
    if (rc == 0) memset(y, 0, (size_t)(more[0] * more[1]) * sizeof(float));
    return rc ? rc : isv_request_complete(r, 0, NULL);
  }
  return cf_scale(r, 2);
}

static int setup(void **state) {
  memset(&be, 0, sizeof be);
  cf_world *w = cf_world_new(NULL);
  cf_model m = {.name = "b8", .infer = be_twice, .max_batch = 8, .batching = 1,
                .batch_delay_us = 10000000, .extra_output = 1};
  cf_add(w, &m);
  cf_model p = m;
  p.name = "pref";
  p.preferred[0] = 2;
  p.preferred[1] = 4;
  p.n_preferred = 2;
  cf_add(w, &p);
  cf_model fast = m;
  fast.name = "fast";
  fast.batch_delay_us = 2000;
  cf_add(w, &fast);
  cf_model pool = fast;
  pool.name = "pool";
  pool.mode = ISV_EXEC_POOL;
  cf_add(w, &pool);
  cf_model now = m;
  now.name = "nodelay";
  now.batch_delay_us = 0;
  cf_add(w, &now);
  *state = w;
  return 0;
}

static int teardown(void **state) {
  cf_world_free(*state);
  return 0;
}

/* ---- the pure parts ---------------------------------------------------------------------- */

static void joinable_means_alike_beyond_dimension_zero(void **state) {
  cf_world *w = *state;
  float x[6] = {0};
  isv_request *a = cf_request(w, "b8", x, 3, 1), *b = cf_request(w, "b8", x, 6, 2);
  isv_request *c = cf_request(w, "b8", x, 4, 2), *d = cf_request(w, "b8", x, 3, 0);
  assert_true(isv__batch_joinable(a, b));  /* [1,3] and [2,3] */
  assert_false(isv__batch_joinable(a, c)); /* [1,3] and [2,2] */
  assert_false(isv__batch_joinable(a, d)); /* [1,3] and [3] */
  assert_int_equal(isv__batch_rows(b), 2);
  /* parameters must be equal, but the ones the core reads itself */
  cf_param_i64(a, "temperature", 3);
  assert_false(isv__batch_joinable(a, b));
  assert_false(isv__batch_joinable(b, a));
  cf_param_i64(b, "temperature", 3);
  assert_true(isv__batch_joinable(a, b));
  cf_param_str(b, "temperature", "3");
  assert_false(isv__batch_joinable(a, b)); /* same text, another type */
  cf_param_i64(b, "temperature", 3);
  cf_param_i64(a, "timeout", 1000);
  cf_param_bool(b, "sequence_start", 1);
  assert_true(isv__batch_joinable(a, b));
  isv_request_free(a);
  isv_request_free(b);
  isv_request_free(c);
  isv_request_free(d);
}

static void build_concatenates_and_split_hands_back_rows(void **state) {
  cf_world *w = *state;
  isv_model *m = cf_find(w, "b8");
  float xa[3] = {1, 2, 3}, xb[6] = {4, 5, 6, 7, 8, 9};
  isv_request *mem[2] = {cf_request(w, "b8", xa, 3, 1), cf_request(w, "b8", xb, 6, 2)};
  assert_int_equal(isv_request_add_requested_output(mem[0], "z", 0), 0);
  for (int i = 0; i < 2; i++) {
    mem[i]->model = m;
    isv__model_ref(m);
  }
  isv_request *b = isv__request_new(&w->core);
  b->model = m;
  isv__model_ref(m);
  isv__batch *batch = isv__batch_build(b, mem, 2);
  assert_non_null(batch);
  assert_ptr_equal(batch->req, b);
  assert_int_equal(batch->n_members, 2);
  assert_int_equal(batch->refs, 1); /* the caller's */
  const isv_tensor *x = isv_request_input(b, "x");
  size_t nd;
  const int64_t *sh = isv_tensor_shape(x, &nd);
  assert_int_equal(nd, 2);
  assert_int_equal(sh[0], 3);
  assert_int_equal(sh[1], 3);
  const float want[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  assert_memory_equal(isv_tensor_data(x), want, sizeof want);
  assert_int_equal(isv_tensor_byte_size(x), sizeof want);
  /* one member named z, the other none: the batch asks for every output */
  assert_int_equal(b->n_req_outputs, 0);

  /* the backend's answer, then the split (what the scheduler does around it) */
  b->submitted = b->finished = 1;
  b->is_exec = 1;
  float *y;
  assert_int_equal(isv_request_alloc_output(b, "y", ISV_FP32, sh, 2, (void **)&y), 0);
  for (int i = 0; i < 9; i++) y[i] = want[i] * 10;
  isv__batch_split(batch);
  assert_int_equal(batch->refs, 3); /* each member keeps b alive */
  const isv_tensor *ya = isv_request_output(mem[0], "y");
  const isv_tensor *yb = isv_request_output(mem[1], "y");
  assert_non_null(ya);
  assert_non_null(yb);
  assert_int_equal(isv_tensor_shape(ya, NULL)[0], 1);
  assert_int_equal(isv_tensor_shape(yb, NULL)[0], 2);
  assert_int_equal(isv_tensor_element_count(yb), 6);
  assert_true(((const float *)isv_tensor_data(ya))[2] == 30);
  assert_true(((const float *)isv_tensor_data(yb))[0] == 40);
  assert_true(((const float *)isv_tensor_data(yb))[5] == 90);
  assert_ptr_equal(isv_tensor_data(yb), y + 3); /* rows of b: no copy */
  isv__batch_release(batch);
  mem[0]->finished = mem[1]->finished = 1;
  isv_request_free(mem[0]);
  assert_int_equal(batch->refs, 1);
  isv_request_free(mem[1]); /* the last reference frees b (LeakSanitizer checks) */
}

static void an_output_with_the_wrong_rows_fails_every_member(void **state) {
  cf_world *w = *state;
  be.bad_rows = 1;
  float x[3] = {1, 2, 3};
  cf_result a = {0}, b = {0};
  cf_submit(w, cf_request(w, "nodelay", x, 3, 1), &a); /* runs alone at once */
  assert_int_equal(a.calls, 1);
  assert_int_equal(a.status, 0); /* alone, it is its own request: no split to check */
  /* two at once: queue them behind nothing by submitting before the loop runs */
  cf_result c = {0};
  cf_submit(w, cf_request(w, "b8", x, 3, 1), &b);
  float x7[21] = {0};
  cf_submit(w, cf_request(w, "b8", x7, 21, 7), &c); /* 1 + 7 = 8 rows: full */
  assert_int_equal(b.calls, 1);
  assert_int_equal(c.calls, 1);
  assert_int_equal(b.status, ISV_EBACKEND);
  assert_int_equal(c.status, ISV_EBACKEND);
  assert_string_equal(b.msg, "model 'b8' returned output 'y' with 7 rows for a batch of 8");
  assert_string_equal(c.msg, b.msg);
}

/* ---- batching through the core ----------------------------------------------------------- */

static void a_full_batch_runs_at_once_and_each_gets_its_rows(void **state) {
  cf_world *w = *state;
  isv_model *m = cf_find(w, "b8");
  float x1[3] = {1, 2, 3}, x2[6] = {4, 5, 6, 7, 8, 9}, x5[15];
  for (int i = 0; i < 15; i++) x5[i] = (float)(100 + i);
  cf_result a = {0}, b = {0}, c = {0};
  isv_request *ra = cf_request(w, "b8", x1, 3, 1);
  assert_int_equal(isv_request_add_requested_output(ra, "y", 0), 0); /* a asks for y only */
  cf_submit(w, ra, &a);
  cf_submit(w, cf_request(w, "b8", x2, 6, 2), &b);
  assert_int_equal(be.calls, 0); /* 3 rows of 8, 10 s of delay: they wait */
  assert_int_equal(m->stats.queued, 2);
  cf_submit(w, cf_request(w, "b8", x5, 15, 5), &c); /* 8 rows: full */
  assert_int_equal(be.calls, 1);
  assert_int_equal(be.rows[0], 8);
  assert_int_equal(m->stats.queued, 0);
  assert_int_equal(a.status, 0);
  assert_int_equal(a.y_rows, 1);
  assert_int_equal(a.n, 3);
  assert_true(a.y[0] == 2 && a.y[2] == 6);
  assert_false(a.has_z); /* its own requested outputs */
  assert_int_equal(b.y_rows, 2);
  assert_true(b.y[0] == 8 && b.y[5] == 18);
  assert_true(b.has_z);
  assert_int_equal(c.y_rows, 5);
  assert_true(c.y[0] == 200 && c.y[14] == 228);
  /* statistics: one execution of 8 rows, three requests */
  assert_int_equal(m->stats.exec_count, 1);
  assert_int_equal(m->stats.inference_count, 8);
  assert_int_equal(m->stats.batch_execs[8], 1);
  assert_int_equal(m->stats.success[0], 3);
}

static void a_short_batch_goes_when_the_delay_runs_out(void **state) {
  cf_world *w = *state;
  float x[3] = {1, 2, 3};
  cf_result a = {0}, b = {0};
  cf_submit(w, cf_request(w, "fast", x, 3, 1), &a);
  cf_submit(w, cf_request(w, "fast", x, 3, 1), &b);
  assert_int_equal(be.calls, 0);
  cf_wait(w, &b, 1); /* 2 ms */
  assert_int_equal(a.calls, 1);
  assert_int_equal(be.calls, 1);
  assert_int_equal(be.rows[0], 2);
  assert_int_equal(a.status, 0);
  assert_int_equal(b.status, 0);
}

static void a_preferred_size_goes_at_once(void **state) {
  cf_world *w = *state;
  isv_model *m = cf_find(w, "pref");
  float x[9] = {0};
  cf_result r[4] = {{0}};
  cf_submit(w, cf_request(w, "pref", x, 3, 1), &r[0]);
  assert_int_equal(be.calls, 0);
  cf_submit(w, cf_request(w, "pref", x, 3, 1), &r[1]); /* 2 rows: preferred */
  assert_int_equal(be.calls, 1);
  assert_int_equal(be.rows[0], 2);
  /* 3 rows is not preferred: it waits */
  cf_submit(w, cf_request(w, "pref", x, 9, 3), &r[2]);
  assert_int_equal(be.calls, 1);
  cf_submit(w, cf_request(w, "pref", x, 3, 1), &r[3]); /* 4 rows: preferred */
  assert_int_equal(be.calls, 2);
  assert_int_equal(be.rows[1], 4);
  assert_int_equal(m->stats.queued, 0);
  for (int i = 0; i < 4; i++) assert_int_equal(r[i].status, 0);
}

static void unlike_requests_wait_for_a_later_batch_in_order(void **state) {
  cf_world *w = *state;
  float x[8] = {0};
  cf_result a = {0}, b = {0}, c = {0};
  cf_submit(w, cf_request(w, "fast", x, 3, 1), &a);    /* [1,3] */
  cf_submit(w, cf_request(w, "fast", x, 2, 1), &b);    /* [1,2]: cannot join a */
  isv_request *rc = cf_request(w, "fast", x, 3, 1);    /* [1,3]: joins a */
  cf_param_i64(rc, "timeout", 5000000);                /* a core parameter: still joins */
  cf_submit(w, rc, &c);
  cf_wait(w, &b, 1);
  assert_int_equal(be.calls, 2);
  assert_int_equal(be.rows[0], 2); /* a and c */
  assert_int_equal(be.rows[1], 1); /* then b */
  assert_true(a.status == 0 && b.status == 0 && c.status == 0);
}

static void a_batch_of_one_is_the_request_itself(void **state) {
  cf_world *w = *state;
  float x[3] = {1, 2, 3};
  cf_result a = {0};
  isv_request *r = cf_request(w, "nodelay", x, 3, 1);
  a.keep = 1;
  cf_submit(w, r, &a);
  assert_int_equal(be.calls, 1);
  assert_ptr_equal(be.seen[0], r); /* no batch request, no copy */
  assert_true(a.y[1] == 4);
  isv_request_free(r);
}

static void batches_run_on_worker_threads_too(void **state) {
  cf_world *w = *state;
  float x[6] = {1, 2, 3, 4, 5, 6};
  cf_result a = {0}, b = {0};
  cf_submit(w, cf_request(w, "pool", x, 3, 1), &a);
  cf_submit(w, cf_request(w, "pool", x + 3, 3, 1), &b);
  cf_wait(w, &b, 1);
  cf_wait(w, &a, 1);
  assert_int_equal(be.calls, 1);
  assert_int_equal(be.rows[0], 2);
  assert_true(a.y[0] == 2 && b.y[2] == 12);
}

static void a_cancelled_request_leaves_the_batch_it_waited_for(void **state) {
  cf_world *w = *state;
  float x[3] = {1, 2, 3};
  cf_result a = {0}, b = {0};
  isv_request *ra = cf_request(w, "fast", x, 3, 1);
  cf_submit(w, ra, &a);
  cf_submit(w, cf_request(w, "fast", x, 3, 1), &b);
  isv__core_cancel(ra);
  assert_int_equal(a.calls, 1);
  assert_int_equal(a.status, ISV_ECANCELED);
  cf_wait(w, &b, 1);
  assert_int_equal(be.calls, 1);
  assert_int_equal(be.rows[0], 1);
  assert_int_equal(b.status, 0);
}

int main(void) {
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
  const struct CMUnitTest tests[] = {
      T(joinable_means_alike_beyond_dimension_zero),
      T(build_concatenates_and_split_hands_back_rows),
      T(an_output_with_the_wrong_rows_fails_every_member),
      T(a_full_batch_runs_at_once_and_each_gets_its_rows),
      T(a_short_batch_goes_when_the_delay_runs_out),
      T(a_preferred_size_goes_at_once),
      T(unlike_requests_wait_for_a_later_batch_in_order),
      T(a_batch_of_one_is_the_request_itself),
      T(batches_run_on_worker_threads_too),
      T(a_cancelled_request_leaves_the_batch_it_waited_for),
  };
#undef T
  return cmocka_run_group_tests(tests, NULL, NULL);
}
