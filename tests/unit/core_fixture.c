#include "cmocka_prelude.h"

#include "core_fixture.h"
#include "core/lifecycle.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

cf_world *cf_world_new(const isv_options *opts) {
  cf_world *w = calloc(1, sizeof *w);
  assert_non_null(w);
  assert_int_equal(uv_loop_init(&w->loop), 0);
  isv_options o;
  isv__options_defaults(&o);
  assert_int_equal(isv__core_init(&w->core, &w->loop, opts ? opts : &o), 0);
  return w;
}

void cf_world_free(cf_world *w) {
  assert_int_equal(w->core.inflight, 0);
  isv__core_close(&w->core, NULL);
  uv_run(&w->loop, UV_RUN_DEFAULT);
  assert_int_equal(uv_loop_close(&w->loop), 0);
  free(w);
}

isv_model *cf_add(cf_world *w, const cf_model *s) {
  isv_model_config *c;
  assert_int_equal(isv_model_config_new(s->name, &c), 0);
  int64_t any[] = {-1};
  assert_int_equal(isv_model_config_add_input(c, "x", ISV_FP32, any, 1), 0);
  assert_int_equal(isv_model_config_add_output(c, "y", ISV_FP32, any, 1), 0);
  if (s->extra_output) assert_int_equal(isv_model_config_add_output(c, "z", ISV_FP32, any, 1), 0);
  assert_int_equal(isv_model_config_set_exec_mode(c, s->mode), 0);
  assert_int_equal(isv_model_config_set_max_batch(c, s->max_batch), 0);
  assert_int_equal(isv_model_config_set_instances(c, s->instances ? s->instances : 1), 0);
  assert_int_equal(isv_model_config_set_max_queue(c, s->max_queue), 0);
  assert_int_equal(isv_model_config_set_default_timeout_us(c, s->default_timeout_us), 0);
  if (s->batching)
    assert_int_equal(isv_model_config_set_dynamic_batching(c, s->batch_delay_us, s->preferred,
                                                           s->n_preferred),
                     0);
  assert_int_equal(isv_model_config_set_decoupled(c, s->decoupled), 0);
  if (s->sequences)
    assert_int_equal(isv_model_config_set_sequence_batching(c, s->seq_idle_us, s->max_sequences),
                     0);
  if (s->priority_levels || s->default_priority)
    assert_int_equal(isv_model_config_set_priority_levels(c, s->priority_levels,
                                                          s->default_priority),
                     0);
  for (uint32_t k = 0; k < 5; k++)
    if (s->policy[k]) assert_int_equal(isv_model_config_set_queue_policy(c, k, s->policy[k]), 0);
  isv_backend be = {.struct_size = sizeof be, .infer = s->infer, .sequence_end = s->sequence_end};
  isv_model *m;
  assert_int_equal(isv__registry_add(&w->core.reg, c, "1", &be, (void *)s->user, &m), 0);
  isv_model_config_free(c);
  return m;
}

isv_model *cf_find(cf_world *w, const char *name) {
  isv__model_entry *e = isv__registry_entry(&w->core.reg, name, strlen(name));
  assert_non_null(e);
  return e->versions;
}

void cf_on_done(isv_request *r, int status, void *data) {
  cf_result *res = data;
  res->calls++;
  res->status = status;
  if (res->order) res->order_no = ++*res->order;
  snprintf(res->msg, sizeof res->msg, "%s", isv_request_error_message(r));
  const isv_tensor *y = isv_request_output(r, "y");
  res->y_rows = -1;
  res->n = 0;
  if (y) {
    size_t nd;
    const int64_t *sh = isv_tensor_shape(y, &nd);
    res->y_rows = nd ? sh[0] : -1;
    res->n = isv_tensor_element_count(y);
    if (res->n <= 64) memcpy(res->y, isv_tensor_data(y), res->n * sizeof(float));
  }
  res->has_z = isv_request_output(r, "z") != NULL;
  if (!res->keep) isv_request_free(r);
}

isv_request *cf_request(cf_world *w, const char *model, const float *x, int64_t n, int64_t rows) {
  isv_request *r = isv__request_new(&w->core);
  assert_non_null(r);
  r->model_name = model;
  int64_t shape[2] = {rows, rows > 0 ? n / rows : n};
  if (rows > 0)
    assert_int_equal(isv_request_add_input(r, "x", ISV_FP32, shape, 2, x,
                                           (size_t)n * sizeof(float), ISV_TRANSIENT),
                     0);
  else
    assert_int_equal(isv_request_add_input(r, "x", ISV_FP32, &n, 1, x, (size_t)n * sizeof(float),
                                           ISV_TRANSIENT),
                     0);
  return r;
}

void cf_param_i64(isv_request *r, const char *key, int64_t v) {
  isv_param p = {.type = ISV_PARAM_INT64, .v.i64 = v};
  assert_int_equal(isv_request_set_param(r, key, &p), 0);
}
void cf_param_bool(isv_request *r, const char *key, int v) {
  isv_param p = {.type = ISV_PARAM_BOOL, .v.b = v};
  assert_int_equal(isv_request_set_param(r, key, &p), 0);
}
void cf_param_str(isv_request *r, const char *key, const char *v) {
  isv_param p = {.type = ISV_PARAM_STRING, .v.s = {v, strlen(v)}};
  assert_int_equal(isv_request_set_param(r, key, &p), 0);
}

isv_request *cf_submit(cf_world *w, isv_request *r, cf_result *res) {
  isv__core_submit(&w->core, r, cf_on_done, res);
  return r;
}

static void on_guard(uv_timer_t *t) { *(int *)t->data = 1; }

void cf_wait(cf_world *w, const cf_result *res, int n) {
  uv_timer_t guard;
  int fired = 0;
  uv_timer_init(&w->loop, &guard);
  guard.data = &fired;
  uv_timer_start(&guard, on_guard, 10000, 0);
  while (res->calls < n && !fired) uv_run(&w->loop, UV_RUN_ONCE);
  uv_close((uv_handle_t *)&guard, NULL);
  uv_run(&w->loop, UV_RUN_NOWAIT);
  if (res->calls < n) fail_msg("%d of %d callbacks within 10 s", res->calls, n);
}

void cf_run_for(cf_world *w, uint64_t ms) {
  uv_timer_t t;
  int fired = 0;
  uv_timer_init(&w->loop, &t);
  t.data = &fired;
  uv_timer_start(&t, on_guard, ms, 0);
  while (!fired) uv_run(&w->loop, UV_RUN_ONCE);
  uv_close((uv_handle_t *)&t, NULL);
  uv_run(&w->loop, UV_RUN_NOWAIT);
}

int cf_scale(isv_request *r, float factor) {
  int rc = cf_scale_outputs(r, factor);
  return rc ? rc : isv_request_complete(r, 0, NULL);
}

int cf_scale_outputs(isv_request *r, float factor) {
  const isv_tensor *x = isv_request_input(r, "x");
  size_t nd;
  const int64_t *shape = isv_tensor_shape(x, &nd);
  float *y, *z = NULL;
  int rc = isv_request_alloc_output(r, "y", ISV_FP32, shape, nd, (void **)&y);
  if (rc == 0 && isv_request_is_output_requested(r, "z"))
    rc = isv_request_alloc_output(r, "z", ISV_FP32, shape, nd, (void **)&z);
  if (rc) return rc;
  const float *in = isv_tensor_data(x);
  for (size_t i = 0; i < isv_tensor_element_count(x); i++) {
    y[i] = in[i] * factor;
    if (z) z[i] = -y[i];
  }
  return 0;
}
