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

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(renders_counters_and_cumulative_histograms)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
