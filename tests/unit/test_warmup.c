/* Model warmup (lib/core/warmup.c): the config's samples, a version LOADING while its samples
 * run on its own execution path (a worker thread here), READY after the last, UNAVAILABLE with
 * the reason (index and log) after a failure. */
#include "cmocka_prelude.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "core/group.h"
#include "core/registry.h"
#include "core/warmup.h"
#include "inferserve.h"

typedef struct world {
  uv_loop_t loop;
  isv_server *srv;
  atomic_int calls;
  atomic_int bad_rows;  /* a request whose shape or data was not the sample's */
  atomic_int all_zero;  /* requests whose x was all zeros */
  atomic_int in_range;  /* requests whose x was in [0, 1) and not all zero */
  atomic_int max_instance;
  int64_t want_rows;    /* the rows a request must have (-1: no batch dimension) */
  char log[1024];
} world;

static void on_log(void *user, isv_log_level level, const char *msg) {
  world *w = user;
  if (level == ISV_LOG_ERROR) snprintf(w->log, sizeof w->log, "%s", msg);
}

/* y = x; fails with "x[0] is 7" when it is; notes what it saw */
static int echo(isv_request *r, void *u) {
  world *w = u;
  atomic_fetch_add(&w->calls, 1);
  int inst = (int)isv_request_instance(r);
  if (inst > atomic_load(&w->max_instance)) atomic_store(&w->max_instance, inst);
  const isv_tensor *x = isv_request_input(r, "x");
  if (x == NULL) return isv_request_complete(r, ISV_EBADREQ, "no x");
  size_t nd;
  const int64_t *shape = isv_tensor_shape(x, &nd);
  if ((w->want_rows >= 0 && (nd != 2 || shape[0] != w->want_rows)) ||
      (w->want_rows < 0 && nd != 1))
    atomic_fetch_add(&w->bad_rows, 1);
  const float *v = isv_tensor_data(x);
  size_t n = isv_tensor_element_count(x);
  int zero = 1, range = 1;
  for (size_t i = 0; i < n; i++) {
    if (v[i] != 0) zero = 0;
    if (!(v[i] >= 0 && v[i] < 1)) range = 0;
  }
  if (zero) atomic_fetch_add(&w->all_zero, 1);
  else if (range) atomic_fetch_add(&w->in_range, 1);
  if (n && v[0] == 7) return isv_request_complete(r, ISV_EBACKEND, "x[0] is 7");
  /* a warmup that takes time: readiness must wait for it (x[0] ms when 10 to 1000) */
  uv_sleep(n && v[0] >= 10 && v[0] <= 1000 ? (unsigned)v[0] : 2);
  float *y;
  int rc = isv_request_alloc_output(r, "y", ISV_FP32, shape, nd, (void **)&y);
  if (rc) return rc;
  memcpy(y, v, n * sizeof *v);
  return isv_request_complete(r, 0, NULL);
}

static void open_world(world *w) {
  memset(w, 0, sizeof *w);
  w->want_rows = -1;
  assert_int_equal(uv_loop_init(&w->loop), 0);
  isv_options *o;
  assert_int_equal(isv_options_new(&o), 0);
  assert_int_equal(isv_options_set_log(o, on_log, w), 0);
  assert_int_equal(isv_options_set_worker_threads(o, 2), 0);
  assert_int_equal(isv_server_new(&w->loop, o, &w->srv), 0);
  isv_options_free(o);
}

static void close_world(world *w) {
  assert_int_equal(isv_server_close(w->srv, NULL, NULL), 0);
  uv_run(&w->loop, UV_RUN_DEFAULT);
  assert_int_equal(uv_loop_close(&w->loop), 0);
}

static isv_model_config *named(const char *name, uint32_t max_batch, uint32_t instances) {
  isv_model_config *c;
  int64_t four[1] = {4};
  assert_int_equal(isv_model_config_new(name, &c), 0);
  assert_int_equal(isv_model_config_add_input(c, "x", ISV_FP32, four, 1), 0);
  assert_int_equal(isv_model_config_add_output(c, "y", ISV_FP32, four, 1), 0);
  assert_int_equal(isv_model_config_set_max_batch(c, max_batch), 0);
  assert_int_equal(isv_model_config_set_exec_mode(c, ISV_EXEC_POOL), 0);
  assert_int_equal(isv_model_config_set_instances(c, instances), 0);
  return c;
}

static isv_model_config *config(uint32_t max_batch, uint32_t instances) {
  return named("warm", max_batch, instances);
}

static isv_model *add(world *w, isv_model_config *c, int *rc) {
  isv_backend be = {.struct_size = sizeof be, .infer = echo};
  isv_model *m = NULL;
  *rc = isv_server_add_model(w->srv, c, "1", &be, w, &m);
  isv_model_config_free(c);
  return m;
}

static void run_until_not_loading(world *w, isv_model *m) {
  uint64_t end = uv_hrtime() + 10000000000ull;
  while (m->state == ISV_MODEL_LOADING && uv_hrtime() < end) uv_run(&w->loop, UV_RUN_ONCE);
}

typedef struct got {
  int done, status;
} got;
static void on_done(isv_request *r, int status, void *data) {
  got *g = data;
  g->done = 1;
  g->status = status;
  isv_request_free(r);
}

static int client_infer(world *w) {
  isv_request *r;
  assert_int_equal(isv_request_new(w->srv, "warm", NULL, &r), 0);
  float x[4] = {1, 2, 3, 4};
  int64_t shape[1] = {4};
  assert_int_equal(isv_request_add_input(r, "x", ISV_FP32, shape, 1, x, sizeof x, ISV_TRANSIENT), 0);
  got g = {0};
  assert_int_equal(isv_server_infer(w->srv, r, on_done, &g), 0);
  while (!g.done) uv_run(&w->loop, UV_RUN_ONCE);
  return g.status;
}

static void success(void **state) {
  (void)state;
  world w;
  open_world(&w);
  isv_model_config *c = config(0, 2);
  int64_t four[1] = {4};
  assert_int_equal(isv_model_config_add_warmup(c, "zeros", 1, 3), 0);
  assert_int_equal(isv_model_config_add_warmup_input(c, "zeros", "x", ISV_FP32, four, 1,
                                                     ISV_WARMUP_ZERO, NULL, 0), 0);
  assert_int_equal(isv_model_config_add_warmup(c, "noise", 1, 0), 0); /* count 0: once */
  assert_int_equal(isv_model_config_add_warmup_input(c, "noise", "x", ISV_FP32, four, 1,
                                                     ISV_WARMUP_RANDOM, NULL, 0), 0);
  int rc;
  isv_model *m = add(&w, c, &rc);
  assert_int_equal(rc, 0);
  assert_int_equal(m->state, ISV_MODEL_LOADING); /* the samples run on worker threads */
  isv_model_state st;
  char said[64] = "x";
  assert_int_equal(isv_server_get_model_state(w.srv, "warm", "1", &st, said, sizeof said), 0);
  assert_int_equal(st, ISV_MODEL_LOADING); /* what a host polls before it says "loaded" */
  assert_int_equal(client_infer(&w), ISV_EUNAVAIL); /* not served meanwhile */
  run_until_not_loading(&w, m);
  assert_int_equal(m->state, ISV_MODEL_READY);
  assert_int_equal(isv_server_get_model_state(w.srv, "warm", NULL, &st, said, sizeof said), 0);
  assert_int_equal(st, ISV_MODEL_READY);
  assert_string_equal(said, "");
  assert_int_equal(isv_server_get_model_state(w.srv, "warm", "9", &st, NULL, 0), ISV_ENOTFOUND);
  assert_int_equal(isv_server_get_model_state(w.srv, "warm", "1", NULL, NULL, 0), ISV_EINVAL);
  /* each round once per instance: zeros 3 rounds, noise 1 */
  assert_int_equal(atomic_load(&w.calls), 2 * 3 + 2 * 1);
  assert_int_equal(atomic_load(&w.all_zero), 6);
  assert_int_equal(atomic_load(&w.in_range), 2);
  assert_int_equal(atomic_load(&w.bad_rows), 0);
  assert_int_equal(atomic_load(&w.max_instance), 1); /* both instances ran it */
  assert_string_equal(w.log, "");
  char why[64];
  assert_int_equal(isv__model_reason(m, why, sizeof why), 0);
  assert_int_equal(client_infer(&w), 0);
  close_world(&w);
}

static void batched_and_given_data(void **state) {
  (void)state;
  world w;
  open_world(&w);
  w.want_rows = 3;
  isv_model_config *c = config(4, 1);
  int64_t four[1] = {4};
  float data[4] = {0.5f, 0.25f, 0.125f, 0};
  assert_int_equal(isv_model_config_add_warmup(c, "given", 3, 2), 0);
  assert_int_equal(isv_model_config_add_warmup_input(c, "given", "x", ISV_FP32, four, 1,
                                                     ISV_WARMUP_DATA, data, sizeof data), 0);
  int rc;
  isv_model *m = add(&w, c, &rc);
  assert_int_equal(rc, 0);
  run_until_not_loading(&w, m);
  assert_int_equal(m->state, ISV_MODEL_READY);
  assert_int_equal(atomic_load(&w.calls), 2);
  assert_int_equal(atomic_load(&w.bad_rows), 0); /* [3, 4]: the row repeated */
  assert_int_equal(atomic_load(&w.in_range), 2);
  /* batch_size above max_batch: refused at registration */
  c = named("other", 2, 1);
  assert_int_equal(isv_model_config_add_warmup(c, "big", 3, 1), 0);
  add(&w, c, &rc);
  assert_int_equal(rc, ISV_EINVAL);
  assert_non_null(strstr(isv_server_last_error(w.srv), "batch_size 3"));
  close_world(&w);
}

static void failure(void **state) {
  (void)state;
  world w;
  open_world(&w);
  isv_model_config *c = config(0, 1);
  int64_t four[1] = {4};
  float ok[4] = {0.5f, 0, 0, 0}, seven[4] = {7, 0, 0, 0};
  assert_int_equal(isv_model_config_add_warmup(c, "fine", 1, 1), 0);
  assert_int_equal(isv_model_config_add_warmup_input(c, "fine", "x", ISV_FP32, four, 1,
                                                     ISV_WARMUP_DATA, ok, sizeof ok), 0);
  assert_int_equal(isv_model_config_add_warmup(c, "bad", 1, 5), 0);
  assert_int_equal(isv_model_config_add_warmup_input(c, "bad", "x", ISV_FP32, four, 1,
                                                     ISV_WARMUP_DATA, seven, sizeof seven), 0);
  assert_int_equal(isv_model_config_add_warmup(c, "never", 1, 1), 0);
  assert_int_equal(isv_model_config_add_warmup_input(c, "never", "x", ISV_FP32, four, 1,
                                                     ISV_WARMUP_ZERO, NULL, 0), 0);
  int rc;
  isv_model *m = add(&w, c, &rc);
  assert_int_equal(rc, 0);
  run_until_not_loading(&w, m);
  assert_int_equal(m->state, ISV_MODEL_UNAVAILABLE);
  assert_int_equal(atomic_load(&w.calls), 2); /* "fine", then the first of "bad": it stops */
  char why[512];
  isv__model_reason(m, why, sizeof why);
  assert_string_equal(why, "model warmup failed: sample 'bad': x[0] is 7");
  isv_model_state st;
  char said[512];
  assert_int_equal(isv_server_get_model_state(w.srv, "warm", "1", &st, said, sizeof said), 0);
  assert_int_equal(st, ISV_MODEL_UNAVAILABLE);
  assert_string_equal(said, why);
  assert_non_null(strstr(w.log, "model 'warm' version '1': model warmup failed: sample 'bad'"));
  assert_int_equal(client_infer(&w), ISV_EUNAVAIL);
  close_world(&w);

  /* a sample missing an input the model declares: validation's words are the reason */
  open_world(&w);
  c = config(0, 1);
  assert_int_equal(isv_model_config_add_warmup(c, "empty", 1, 1), 0);
  m = add(&w, c, &rc);
  assert_int_equal(rc, 0);
  run_until_not_loading(&w, m);
  assert_int_equal(m->state, ISV_MODEL_UNAVAILABLE);
  isv__model_reason(m, why, sizeof why);
  assert_non_null(strstr(why, "sample 'empty'"));
  assert_non_null(strstr(why, "'x'"));
  assert_int_equal(atomic_load(&w.calls), 0);
  close_world(&w);
}

/* decoupled: two responses (y = x each), then completes */
static int twice(isv_request *r, void *u) {
  world *w = u;
  atomic_fetch_add(&w->calls, 1);
  const isv_tensor *x = isv_request_input(r, "x");
  size_t nd;
  const int64_t *shape = isv_tensor_shape(x, &nd);
  for (int i = 0; i < 2; i++) {
    int rc = isv_request_set_output(r, "y", ISV_FP32, shape, nd, isv_tensor_data(x),
                                    isv_tensor_byte_size(x), ISV_TRANSIENT);
    if (rc == 0) rc = isv_request_send_response(r);
    if (rc != 0) return isv_request_complete(r, rc, "send failed");
  }
  return isv_request_complete(r, 0, NULL);
}

static void decoupled(void **state) {
  (void)state;
  world w;
  open_world(&w);
  isv_model_config *c = config(0, 1);
  int64_t four[1] = {4};
  assert_int_equal(isv_model_config_set_decoupled(c, 1), 0);
  assert_int_equal(isv_model_config_add_warmup(c, "z", 1, 2), 0);
  assert_int_equal(isv_model_config_add_warmup_input(c, "z", "x", ISV_FP32, four, 1,
                                                     ISV_WARMUP_ZERO, NULL, 0), 0);
  isv_backend be = {.struct_size = sizeof be, .infer = twice};
  isv_model *m = NULL;
  assert_int_equal(isv_server_add_model(w.srv, c, "1", &be, &w, &m), 0);
  isv_model_config_free(c);
  run_until_not_loading(&w, m);
  assert_int_equal(m->state, ISV_MODEL_READY); /* its responses taken, its completion judged */
  assert_int_equal(atomic_load(&w.calls), 2);
  close_world(&w);
}

/* a server closing while the warmup runs: its drain is not held by new runs */
static void close_during_warmup(void **state) {
  (void)state;
  world w;
  open_world(&w);
  isv_model_config *c = config(0, 1);
  int64_t four[1] = {4};
  float cold[4] = {50, 0, 0, 0}; /* 50 ms a run, 100 runs */
  assert_int_equal(isv_model_config_add_warmup(c, "long", 1, 100), 0);
  assert_int_equal(isv_model_config_add_warmup_input(c, "long", "x", ISV_FP32, four, 1,
                                                     ISV_WARMUP_DATA, cold, sizeof cold), 0);
  int rc;
  isv_model *m = add(&w, c, &rc);
  assert_int_equal(rc, 0);
  (void)m;
  uint64_t t0 = uv_hrtime();
  close_world(&w);
  assert_true(uv_hrtime() - t0 < 2000000000ull); /* not the 5 s the warmup would take */
  assert_true(atomic_load(&w.calls) < 10);
}

static void config_rules(void **state) {
  (void)state;
  isv_model_config *c;
  assert_int_equal(isv_model_config_new("m", &c), 0);
  int64_t two[1] = {2}, neg[1] = {-1};
  float f2[2] = {1, 2};
  uint8_t raw[] = {1, 0, 0, 0, 'a', 0, 0, 0, 0}; /* "a", "" */
  assert_int_equal(isv_model_config_add_warmup(c, "s", 0, 1), ISV_EINVAL);
  assert_int_equal(isv_model_config_add_warmup(c, "", 1, 1), ISV_EINVAL);
  assert_int_equal(isv_model_config_add_warmup(c, "s", 1, 1), 0);
  assert_int_equal(isv_model_config_add_warmup(c, "s", 1, 1), ISV_EEXIST);
  assert_int_equal(isv_model_config_add_warmup_input(c, "t", "x", ISV_FP32, two, 1,
                                                     ISV_WARMUP_ZERO, NULL, 0), ISV_ENOTFOUND);
  assert_int_equal(isv_model_config_add_warmup_input(c, "s", "x", ISV_FP32, neg, 1,
                                                     ISV_WARMUP_ZERO, NULL, 0), ISV_EINVAL);
  assert_int_equal(isv_model_config_add_warmup_input(c, "s", "x", ISV_FP32, two, 1,
                                                     ISV_WARMUP_DATA, f2, 4), ISV_EINVAL);
  assert_int_equal(isv_model_config_add_warmup_input(c, "s", "x", ISV_FP32, two, 1,
                                                     ISV_WARMUP_ZERO, f2, 8), ISV_EINVAL);
  assert_int_equal(isv_model_config_add_warmup_input(c, "s", "x", ISV_FP32, two, 1,
                                                     (isv_warmup_fill)9, NULL, 0), ISV_EINVAL);
  assert_int_equal(isv_model_config_add_warmup_input(c, "s", "x", ISV_FP32, two, 1,
                                                     ISV_WARMUP_DATA, f2, 8), 0);
  assert_int_equal(isv_model_config_add_warmup_input(c, "s", "x", ISV_FP32, two, 1,
                                                     ISV_WARMUP_ZERO, NULL, 0), ISV_EEXIST);
  assert_int_equal(isv_model_config_add_warmup_input(c, "s", "t", ISV_BYTES, two, 1,
                                                     ISV_WARMUP_DATA, raw, sizeof raw - 1),
                   ISV_EINVAL); /* a truncated element */
  assert_int_equal(isv_model_config_add_warmup_input(c, "s", "t", ISV_BYTES, two, 1,
                                                     ISV_WARMUP_DATA, raw, sizeof raw), 0);
  /* a copy carries them (registration copies the config) */
  isv_model_config *d = isv__config_copy(c, NULL);
  assert_non_null(d);
  assert_int_equal(d->n_warmups, 1);
  assert_int_equal(d->warmups[0].n_inputs, 2);
  assert_memory_equal(d->warmups[0].inputs[0].data, f2, 8);
  assert_int_equal(d->warmups[0].inputs[1].byte_size, sizeof raw);
  isv_model_config_free(d);
  /* with sequence batching: refused */
  assert_int_equal(isv_model_config_set_sequence_batching(c, 0, 0), 0);
  char why[256];
  assert_int_equal(isv__registry_check(c, "1", &(isv_backend){.struct_size = sizeof(isv_backend),
                                                              .infer = echo}, why, sizeof why),
                   ISV_EINVAL);
  assert_non_null(strstr(why, "warmup"));
  isv_model_config_free(c);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(success),
      cmocka_unit_test(batched_and_given_data),
      cmocka_unit_test(failure),
      cmocka_unit_test(config_rules),
      cmocka_unit_test(decoupled),
      cmocka_unit_test(close_during_warmup),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
