#include "core/stats.h"

const double isv__lat_bounds[ISV__LAT_BUCKETS] = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
                                                  0.01,   0.025,   0.05,   0.1,   0.5,    1.0};
const double isv__batch_bounds[ISV__BATCH_BUCKETS] = {1, 2, 4, 8, 16, 32, 64, 128};

void isv__stats_triton(const isv__stats *s, unsigned n_protocols, isv__triton_stats *out) {
  uint64_t ok = 0, failed = 0;
  for (unsigned p = 0; p < n_protocols && p < ISV__MAX_PROTOCOLS; p++) {
    ok += s->success[p];
    failed += s->failure[p];
  }
  *out = (isv__triton_stats){
      .last_inference_ms = s->last_inference_ms,
      .inference_count = s->inference_count,
      .execution_count = s->exec_count,
      .success = {ok, s->success_ns},
      .fail = {failed, s->failure_ns},
      .queue = {ok, s->queue_ns},
      .compute_input = {ok, s->compute_input_ns},
      .compute_infer = {ok, s->compute_infer_ns},
      .compute_output = {ok, s->compute_output_ns},
  };
}

void isv__hist_add(isv__hist *h, const double *bounds, unsigned n_bounds, double v) {
  unsigned i = 0;
  while (i < n_bounds && v > bounds[i]) i++;
  h->counts[i]++;
  h->sum += v;
  h->count++;
}
