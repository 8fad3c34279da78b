/* Prometheus rendering of the core's counters: names, labels, cumulative buckets. */
#include "cmocka_prelude.h"

#include <string.h>

#include "core/request.h"
#include "protocol/metrics_http.h"
#include "core/lifecycle.h"

static int noop(isv_request *r, void *u) {
  (void)r;
  (void)u;
  return 0;
}

static void renders_counters_and_cumulative_histograms(void **state) {
  (void)state;
  uv_loop_t loop;
  uv_loop_init(&loop);
  isv_options o;
  isv__options_defaults(&o);
  isv__core core;
  assert_int_equal(isv__core_init(&core, &loop, &o), 0);
  isv_model_config *c;
  isv_model_config_new("m\"q", &c);
  isv_backend be = {.struct_size = sizeof be, .infer = noop};
  isv_model *m;
  assert_int_equal(isv__registry_add(&core.reg, c, "7", &be, NULL, &m), 0);
  isv_model_config_free(c);
  m->stats.success[isv__core_protocol(&core, "v2_http")] = 3;
  m->stats.failure[isv__core_protocol(&core, "v2_grpc")] = 1;
  assert_int_equal(isv__core_protocol(&core, "v2_http"), 1); /* found again, not added twice */
  isv__hist_add(&m->stats.latency, isv__lat_bounds, ISV__LAT_BUCKETS, 0.0002);
  isv__hist_add(&m->stats.latency, isv__lat_bounds, ISV__LAT_BUCKETS, 2.0);
  m->stats.exec_count = 5;
  m->stats.inference_count = 9;
  m->stats.compute_infer_ns = 1500000000;
  m->stats.queued = 4;
  m->stats.batch_execs[1] = 5;
  isv__buf b;
  isv__buf_init(&b, NULL);
  isv__metrics_render(&core, &b);
  isv__buf_putc(&b, '\0');
  const char *t = b.data;
  assert_non_null(strstr(t, "isv_requests_total{model=\"m\\\"q\",version=\"7\",protocol=\"v2_http\","
                            "outcome=\"success\"} 3\n"));
  assert_non_null(strstr(t, "protocol=\"v2_grpc\",outcome=\"failure\"} 1\n"));
  assert_null(strstr(t, "protocol=\"inprocess\"")); /* zero counters are not written */
  /* cumulative: 0 below 0.0002, 1 from 0.00025 on, 2 only at +Inf */
  assert_non_null(strstr(t, "isv_request_duration_seconds_bucket{model=\"m\\\"q\",version=\"7\",le=\"0.0001\"} 0\n"));
  assert_non_null(strstr(t, "isv_request_duration_seconds_bucket{model=\"m\\\"q\",version=\"7\",le=\"0.00025\"} 1\n"));
  assert_non_null(strstr(t, "isv_request_duration_seconds_bucket{model=\"m\\\"q\",version=\"7\",le=\"1\"} 1\n"));
  assert_non_null(strstr(t, "isv_request_duration_seconds_bucket{model=\"m\\\"q\",version=\"7\",le=\"+Inf\"} 2\n"));
  assert_non_null(strstr(t, "isv_request_duration_seconds_count{model=\"m\\\"q\",version=\"7\"} 2\n"));
  assert_non_null(strstr(t, "# TYPE isv_batch_size histogram\n"));
  assert_non_null(strstr(t, "isv_server_ready 1\n"));
  /* the scheduler's numbers */
  assert_non_null(strstr(t, "isv_queued_requests{model=\"m\\\"q\",version=\"7\"} 4\n"));
  assert_non_null(strstr(t, "isv_executions_total{model=\"m\\\"q\",version=\"7\"} 5\n"));
  assert_non_null(strstr(t, "isv_inferences_total{model=\"m\\\"q\",version=\"7\"} 9\n"));
  assert_non_null(strstr(t, "isv_stage_duration_seconds_total{model=\"m\\\"q\",version=\"7\","
                            "stage=\"compute_infer\"} 1.5\n"));
  assert_non_null(strstr(t, "stage=\"queue\"} 0\n"));
  assert_non_null(strstr(t, "isv_batch_executions_total{model=\"m\\\"q\",version=\"7\","
                            "batch_size=\"1\"} 5\n"));
  assert_non_null(strstr(t, "# TYPE isv_executions_total counter\n"));
  m->stats.queued = 0; /* nothing really waits: the core must close */
  isv__buf_free(&b);
  isv__core_close(&core, NULL);
  uv_run(&loop, UV_RUN_DEFAULT);
  assert_int_equal(uv_loop_close(&loop), 0);
}

/* isv_options_set_metrics_style: Triton's names alone, or both; Triton's labels and units. */
static void triton_names_when_asked(void **state) {
  (void)state;
  for (unsigned style = ISV_METRICS_TRITON; style <= (ISV_METRICS_TRITON | ISV_METRICS_LIBINFERSERVE);
       style++) {
    uv_loop_t loop;
    uv_loop_init(&loop);
    isv_options o;
    isv__options_defaults(&o);
    assert_int_equal(isv_options_set_metrics_style(&o, style), 0);
    isv__core core;
    assert_int_equal(isv__core_init(&core, &loop, &o), 0);
    isv_model_config *c;
    isv_model_config_new("m", &c);
    isv_backend be = {.struct_size = sizeof be, .infer = noop};
    isv_model *m;
    assert_int_equal(isv__registry_add(&core.reg, c, "2", &be, NULL, &m), 0);
    isv_model_config_free(c);
    m->stats.success[isv__core_protocol(&core, "v2_http")] = 3;
    m->stats.success[isv__core_protocol(&core, "v2_grpc")] = 4;
    m->stats.failure_reason[ISV__FAIL_REJECTED] = 2;
    m->stats.failure_reason[ISV__FAIL_BACKEND] = 1;
    m->stats.inference_count = 9;
    m->stats.exec_count = 5;
    m->stats.success_ns = 7000999; /* 7000 µs, truncated */
    m->stats.queue_ns = 1000;
    m->stats.compute_infer_ns = 1500000000;
    m->stats.queued = 6;
    isv__buf b;
    isv__buf_init(&b, NULL);
    isv__metrics_render(&core, &b);
    isv__buf_putc(&b, '\0');
    const char *t = b.data;
    assert_non_null(strstr(t, "# TYPE nv_inference_request_success counter\n"
                              "nv_inference_request_success{model=\"m\",version=\"2\"} 7\n"));
    assert_non_null(strstr(t, "nv_inference_request_failure{model=\"m\",version=\"2\","
                              "reason=\"REJECTED\"} 2\n"));
    assert_non_null(strstr(t, "reason=\"CANCELED\"} 0\n"));
    assert_non_null(strstr(t, "reason=\"BACKEND\"} 1\n"));
    assert_non_null(strstr(t, "reason=\"OTHER\"} 0\n"));
    assert_non_null(strstr(t, "nv_inference_count{model=\"m\",version=\"2\"} 9\n"));
    assert_non_null(strstr(t, "nv_inference_exec_count{model=\"m\",version=\"2\"} 5\n"));
    assert_non_null(strstr(t, "nv_inference_request_duration_us{model=\"m\",version=\"2\"} 7000\n"));
    assert_non_null(strstr(t, "nv_inference_queue_duration_us{model=\"m\",version=\"2\"} 1\n"));
    assert_non_null(strstr(t, "nv_inference_compute_infer_duration_us{model=\"m\",version=\"2\"} "
                              "1500000\n"));
    assert_non_null(strstr(t, "# TYPE nv_inference_pending_request_count gauge\n"
                              "nv_inference_pending_request_count{model=\"m\",version=\"2\"} 6\n"));
    /* the library's own names only when asked too */
    if (style & ISV_METRICS_LIBINFERSERVE) assert_non_null(strstr(t, "isv_requests_total{"));
    else assert_null(strstr(t, "isv_"));
    m->stats.queued = 0;
    isv__buf_free(&b);
    isv__core_close(&core, NULL);
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&loop), 0);
  }
  isv_options o;
  isv__options_defaults(&o);
  assert_int_equal(isv_options_set_metrics_style(&o, 0), ISV_EINVAL);
  assert_int_equal(isv_options_set_metrics_style(&o, 4), ISV_EINVAL); /* Triton's extras alone */
  assert_int_equal(isv_options_set_metrics_style(&o, 16), ISV_EINVAL);
  assert_int_equal(o.metrics_style, ISV_METRICS_LIBINFERSERVE);
}

/* Triton's optional latency metrics: the first-response histogram for decoupled models only
 * (ms, Triton's buckets), the summaries' quantiles over the window, their count and sum. */
static void tritons_histograms_and_summaries_when_asked(void **state) {
  (void)state;
  uv_loop_t loop;
  uv_loop_init(&loop);
  isv_options o;
  isv__options_defaults(&o);
  assert_int_equal(isv_options_set_metrics_style(&o, ISV_METRICS_TRITON |
                                                         ISV_METRICS_TRITON_HISTOGRAMS |
                                                         ISV_METRICS_TRITON_SUMMARIES), 0);
  isv__core core;
  assert_int_equal(isv__core_init(&core, &loop, &o), 0);
  isv_backend be = {.struct_size = sizeof be, .infer = noop};
  isv_model_config *c;
  isv_model *plain, *streaming;
  isv_model_config_new("plain", &c);
  assert_int_equal(isv__registry_add(&core.reg, c, "1", &be, NULL, &plain), 0);
  isv_model_config_free(c);
  isv_model_config_new("streaming", &c);
  isv_model_config_set_decoupled(c, 1);
  assert_int_equal(isv__registry_add(&core.reg, c, "1", &be, NULL, &streaming), 0);
  isv_model_config_free(c);
  assert_non_null(plain->stats.windows); /* the registry made them: summaries are on */
  isv__hist_add(&streaming->stats.first_response, isv__first_response_bounds,
                ISV__FIRST_RESPONSE_BUCKETS, 150);
  isv__hist_add(&streaming->stats.first_response, isv__first_response_bounds,
                ISV__FIRST_RESPONSE_BUCKETS, 7000);
  uint64_t now_ms = uv_hrtime() / 1000000;
  for (uint64_t v = 1; v <= 100; v++)
    isv__window_add(&plain->stats.windows[ISV__SUM_QUEUE], v, now_ms);
  isv__window_add(&plain->stats.windows[ISV__SUM_QUEUE], 1000000, now_ms - 120000); /* too old */
  isv__buf b;
  isv__buf_init(&b, NULL);
  isv__metrics_render(&core, &b);
  isv__buf_putc(&b, '\0');
  const char *t = b.data;
  assert_non_null(strstr(t, "# TYPE nv_inference_first_response_histogram_ms histogram\n"));
  const char *fr = "nv_inference_first_response_histogram_ms_bucket{model=\"streaming\",version=\"1\",";
  char want[256];
  static const struct {
    const char *le;
    int n;
  } buckets[] = {{"100", 0}, {"500", 1}, {"2000", 1}, {"5000", 1}, {"+Inf", 2}};
  for (size_t i = 0; i < 5; i++) {
    snprintf(want, sizeof want, "%sle=\"%s\"} %d\n", fr, buckets[i].le, buckets[i].n);
    assert_non_null(strstr(t, want));
  }
  assert_non_null(strstr(t, "nv_inference_first_response_histogram_ms_sum{model=\"streaming\","
                            "version=\"1\"} 7150\n"));
  assert_null(strstr(t, "nv_inference_first_response_histogram_ms_bucket{model=\"plain\""));
  assert_non_null(strstr(t, "# TYPE nv_inference_queue_summary_us summary\n"));
  assert_non_null(strstr(t, "nv_inference_queue_summary_us{model=\"plain\",version=\"1\","
                            "quantile=\"0.5\"} 50\n"));
  assert_non_null(strstr(t, "quantile=\"0.99\"} 99\n"));
  assert_non_null(strstr(t, "quantile=\"0.999\"} 100\n")); /* the old one is out of the window */
  assert_non_null(strstr(t, "nv_inference_queue_summary_us_count{model=\"plain\",version=\"1\"} "
                            "101\n")); /* count and sum since the start */
  assert_non_null(strstr(t, "nv_inference_queue_summary_us_sum{model=\"plain\",version=\"1\"} "
                            "1005050\n"));
  assert_non_null(strstr(t, "nv_inference_request_summary_us{model=\"plain\",version=\"1\","
                            "quantile=\"0.5\"} NaN\n"));
  isv__buf_free(&b);
  isv__core_close(&core, NULL);
  uv_run(&loop, UV_RUN_DEFAULT);
  assert_int_equal(uv_loop_close(&loop), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(renders_counters_and_cumulative_histograms),
                                     cmocka_unit_test(triton_names_when_asked),
                                     cmocka_unit_test(tritons_histograms_and_summaries_when_asked)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
