#include "core/stats.h"

#include <math.h>
#include <stdlib.h>

const double isv__lat_bounds[ISV__LAT_BUCKETS] = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
                                                  0.01,   0.025,   0.05,   0.1,   0.5,    1.0};
const double isv__first_response_bounds[ISV__FIRST_RESPONSE_BUCKETS] = {100, 500, 2000, 5000};
const double isv__batch_bounds[ISV__BATCH_BUCKETS] = {1, 2, 4, 8, 16, 32, 64, 128};
const char *const isv__fail_reason_names[ISV__FAIL_REASONS] = {
    [ISV__FAIL_REJECTED] = "REJECTED",
    [ISV__FAIL_CANCELED] = "CANCELED",
    [ISV__FAIL_BACKEND] = "BACKEND",
    [ISV__FAIL_OTHER] = "OTHER",
};

void isv__stats_triton(const isv__stats_snap *s, isv__triton_stats *out) {
  uint64_t ok = 0, failed = 0;
  for (unsigned p = 0; p < s->n_protocols && p < ISV__MAX_PROTOCOLS; p++) {
    ok += s->success[p];
    failed += s->failure[p];
  }
  uint64_t ran = ok > s->cache_hit ? ok - s->cache_hit : 0; /* hits never reach the backend */
  *out = (isv__triton_stats){
      .last_inference_ms = s->last_inference_ms,
      .inference_count = s->inference_count,
      .execution_count = s->exec_count,
      .success = {ok, s->success_ns},
      .fail = {failed, s->failure_ns},
      .queue = {ok, s->queue_ns},
      .compute_input = {ran, s->compute_input_ns},
      .compute_infer = {ran, s->compute_infer_ns},
      .compute_output = {ran, s->compute_output_ns},
      .cache_hit = {s->cache_hit, s->cache_hit_ns},
      .cache_miss = {s->cache_miss, s->cache_miss_ns},
  };
}

void isv__hist_add(isv__hist *h, const double *bounds, unsigned n_bounds, double v) {
  unsigned i = 0;
  while (i < n_bounds && v > bounds[i]) i++;
  isv__count(&h->counts[i], 1);
  atomic_store_explicit(&h->sum, atomic_load_explicit(&h->sum, memory_order_relaxed) + v,
                        memory_order_relaxed);
  isv__count(&h->count, 1);
}

static void hist_add_to(isv__hist_snap *out, const isv__hist *h) {
  for (unsigned i = 0; i <= ISV__LAT_BUCKETS; i++) out->counts[i] += isv__counter_get(&h->counts[i]);
  out->sum += atomic_load_explicit((_Atomic double *)&h->sum, memory_order_relaxed);
  out->count += isv__counter_get(&h->count);
}

void isv__stats_add_to(isv__stats_snap *out, const isv__stats *s) {
  for (unsigned p = 0; p < ISV__MAX_PROTOCOLS; p++) {
    out->success[p] += isv__counter_get(&s->success[p]);
    out->failure[p] += isv__counter_get(&s->failure[p]);
  }
  hist_add_to(&out->latency, &s->latency);
  hist_add_to(&out->queue, &s->queue);
  hist_add_to(&out->batch, &s->batch);
  out->inflight += atomic_load_explicit((_Atomic int64_t *)&s->inflight, memory_order_relaxed);
  out->exec_count += isv__counter_get(&s->exec_count);
  out->inference_count += isv__counter_get(&s->inference_count);
  out->queue_ns += isv__counter_get(&s->queue_ns);
  out->compute_input_ns += isv__counter_get(&s->compute_input_ns);
  out->compute_infer_ns += isv__counter_get(&s->compute_infer_ns);
  out->compute_output_ns += isv__counter_get(&s->compute_output_ns);
  out->success_ns += isv__counter_get(&s->success_ns);
  out->failure_ns += isv__counter_get(&s->failure_ns);
  for (unsigned i = 0; i < ISV__FAIL_REASONS; i++)
    out->failure_reason[i] += isv__counter_get(&s->failure_reason[i]);
  out->cache_hit += isv__counter_get(&s->cache_hit);
  out->cache_hit_ns += isv__counter_get(&s->cache_hit_ns);
  out->cache_miss += isv__counter_get(&s->cache_miss);
  out->cache_miss_ns += isv__counter_get(&s->cache_miss_ns);
  uint64_t last = isv__counter_get(&s->last_inference_ms);
  if (last > out->last_inference_ms) out->last_inference_ms = last;
  hist_add_to(&out->first_response, &s->first_response);
  for (unsigned k = 0; s->windows && k < ISV__SUMMARIES; k++) {
    out->summary_count[k] += isv__counter_get(&s->windows[k].written);
    out->summary_sum_us[k] += isv__counter_get(&s->windows[k].sum_us);
  }
}

void isv__window_add(isv__window *w, uint64_t us, uint64_t now_ms) {
  uint64_t i = isv__counter_get(&w->written) % ISV__SUMMARY_SAMPLES;
  atomic_store_explicit(&w->value_us[i], us, memory_order_relaxed);
  atomic_store_explicit(&w->at_ms[i], now_ms, memory_order_relaxed);
  isv__count(&w->sum_us, us);
  isv__count(&w->written, 1); /* after the slot: a reader counts only slots written */
}

void isv__window_recent(const isv__window *w, uint64_t since_ms, uint64_t *out, size_t *n,
                        size_t cap) {
  uint64_t written = isv__counter_get(&w->written);
  uint64_t k = written < ISV__SUMMARY_SAMPLES ? written : ISV__SUMMARY_SAMPLES;
  for (uint64_t i = 0; i < k && *n < cap; i++) {
    if (atomic_load_explicit((_Atomic uint64_t *)&w->at_ms[i], memory_order_relaxed) < since_ms)
      continue; /* older than the window */
    out[(*n)++] = atomic_load_explicit((_Atomic uint64_t *)&w->value_us[i], memory_order_relaxed);
  }
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

double isv__quantile(uint64_t *v, size_t n, double q) {
  if (n == 0) return NAN;
  qsort(v, n, sizeof *v, cmp_u64);
  size_t rank = (size_t)ceil(q * (double)n); /* nearest rank: the smallest value with at least
                                               * q of the values at or below it */
  return (double)v[rank ? rank - 1 : 0];
}
