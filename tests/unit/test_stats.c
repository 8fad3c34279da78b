/* core/stats.c: the histogram buckets — a value goes to the first bucket whose upper bound it
 * does not exceed (Prometheus' "le"), past every bound to the +Inf bucket; sum and count. */
#include "cmocka_prelude.h"

#include <math.h>
#include <string.h>

#include "core/stats.h"

/* The one bucket of a fresh histogram that v lands in. */
static unsigned bucket_of(const double *bounds, unsigned n, double v) {
  isv__hist h;
  memset(&h, 0, sizeof h);
  isv__hist_add(&h, bounds, n, v);
  assert_int_equal(h.count, 1);
  unsigned found = ISV__LAT_BUCKETS + 1, hits = 0;
  for (unsigned i = 0; i <= ISV__LAT_BUCKETS; i++)
    if (h.counts[i]) {
      assert_int_equal(h.counts[i], 1);
      found = i;
      hits++;
    }
  assert_int_equal(hits, 1);
  return found;
}

static void bounds_are_strictly_increasing(void **state) {
  (void)state;
  for (unsigned i = 1; i < ISV__LAT_BUCKETS; i++)
    assert_true(isv__lat_bounds[i - 1] < isv__lat_bounds[i]);
  for (unsigned i = 1; i < ISV__BATCH_BUCKETS; i++)
    assert_true(isv__batch_bounds[i - 1] < isv__batch_bounds[i]);
  /* the metrics render these numbers as the "le" labels */
  assert_true(isv__lat_bounds[0] == 0.0001);
  assert_true(isv__lat_bounds[ISV__LAT_BUCKETS - 1] == 1.0);
  assert_true(isv__batch_bounds[0] == 1);
  assert_true(isv__batch_bounds[ISV__BATCH_BUCKETS - 1] == 128);
}

static void a_value_at_a_bound_goes_to_that_bound(void **state) {
  (void)state;
  for (unsigned i = 0; i < ISV__LAT_BUCKETS; i++)
    assert_int_equal(bucket_of(isv__lat_bounds, ISV__LAT_BUCKETS, isv__lat_bounds[i]), i);
  for (unsigned i = 0; i < ISV__BATCH_BUCKETS; i++)
    assert_int_equal(bucket_of(isv__batch_bounds, ISV__BATCH_BUCKETS, isv__batch_bounds[i]), i);
}

static void just_above_a_bound_goes_to_the_next_bucket(void **state) {
  (void)state;
  for (unsigned i = 0; i < ISV__LAT_BUCKETS; i++) {
    double b = isv__lat_bounds[i];
    assert_int_equal(bucket_of(isv__lat_bounds, ISV__LAT_BUCKETS, nextafter(b, INFINITY)), i + 1);
    assert_int_equal(bucket_of(isv__lat_bounds, ISV__LAT_BUCKETS, nextafter(b, 0)), i);
  }
  for (unsigned i = 0; i < ISV__BATCH_BUCKETS; i++) {
    double b = isv__batch_bounds[i];
    assert_int_equal(bucket_of(isv__batch_bounds, ISV__BATCH_BUCKETS, b + 1), i + 1);
    assert_int_equal(bucket_of(isv__batch_bounds, ISV__BATCH_BUCKETS, b - 0.5), i);
  }
}

static void between_bounds_and_below_the_first(void **state) {
  (void)state;
  assert_int_equal(bucket_of(isv__lat_bounds, ISV__LAT_BUCKETS, 0), 0);
  assert_int_equal(bucket_of(isv__lat_bounds, ISV__LAT_BUCKETS, 0.00005), 0);
  assert_int_equal(bucket_of(isv__lat_bounds, ISV__LAT_BUCKETS, 0.0002), 1);
  assert_int_equal(bucket_of(isv__lat_bounds, ISV__LAT_BUCKETS, 0.003), 5);
  assert_int_equal(bucket_of(isv__lat_bounds, ISV__LAT_BUCKETS, 0.07), 9);
  assert_int_equal(bucket_of(isv__lat_bounds, ISV__LAT_BUCKETS, 0.75), 11);
  assert_int_equal(bucket_of(isv__batch_bounds, ISV__BATCH_BUCKETS, 3), 2);
  assert_int_equal(bucket_of(isv__batch_bounds, ISV__BATCH_BUCKETS, 100), 7);
}

static void past_every_bound_is_the_inf_bucket(void **state) {
  (void)state;
  assert_int_equal(bucket_of(isv__lat_bounds, ISV__LAT_BUCKETS, 1.5), ISV__LAT_BUCKETS);
  assert_int_equal(bucket_of(isv__lat_bounds, ISV__LAT_BUCKETS, 3600), ISV__LAT_BUCKETS);
  assert_int_equal(bucket_of(isv__lat_bounds, ISV__LAT_BUCKETS, INFINITY), ISV__LAT_BUCKETS);
  /* the batch histogram uses only its first ISV__BATCH_BUCKETS bounds: +Inf is counts[8] */
  assert_int_equal(bucket_of(isv__batch_bounds, ISV__BATCH_BUCKETS, 129), ISV__BATCH_BUCKETS);
  assert_int_equal(bucket_of(isv__batch_bounds, ISV__BATCH_BUCKETS, 1e9), ISV__BATCH_BUCKETS);
}

static void counts_are_per_bucket_with_sum_and_count(void **state) {
  (void)state;
  isv__hist h;
  memset(&h, 0, sizeof h);
  const double v[] = {0.0001, 0.0001, 0.0003, 0.5, 2.0, 0.0};
  double sum = 0;
  for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
    isv__hist_add(&h, isv__lat_bounds, ISV__LAT_BUCKETS, v[i]);
    sum += v[i];
  }
  assert_int_equal(h.count, 6);
  assert_true(h.sum == sum);
  /* non-cumulative: each value counted once, in its own bucket */
  assert_int_equal(h.counts[0], 3); /* 0.0001 twice and 0 */
  assert_int_equal(h.counts[2], 1); /* 0.0003 <= 0.0005 */
  assert_int_equal(h.counts[10], 1); /* 0.5 */
  assert_int_equal(h.counts[ISV__LAT_BUCKETS], 1); /* 2.0 */
  uint64_t total = 0;
  for (unsigned i = 0; i <= ISV__LAT_BUCKETS; i++) total += h.counts[i];
  assert_int_equal(total, h.count);
  /* adding keeps accumulating: sum and count never reset */
  isv__hist_add(&h, isv__lat_bounds, ISV__LAT_BUCKETS, 0.25);
  assert_int_equal(h.count, 7);
  assert_true(h.sum == sum + 0.25);
  assert_int_equal(h.counts[10], 2);
}

static void a_shorter_bound_list_uses_only_its_buckets(void **state) {
  (void)state;
  isv__hist h;
  memset(&h, 0, sizeof h);
  const double bounds[] = {10, 20};
  isv__hist_add(&h, bounds, 2, 5);
  isv__hist_add(&h, bounds, 2, 20);
  isv__hist_add(&h, bounds, 2, 21);
  isv__hist_add(&h, bounds, 2, 0.2); /* 0.2 is above lat bound 0, but only {10,20} count */
  assert_int_equal(h.counts[0], 2);
  assert_int_equal(h.counts[1], 1);
  assert_int_equal(h.counts[2], 1);
  for (unsigned i = 3; i <= ISV__LAT_BUCKETS; i++) assert_int_equal(h.counts[i], 0);
  assert_int_equal(h.count, 4);
  assert_true(h.sum == 5 + 20 + 21 + 0.2);
}

/* Triton's summaries: a window keeps the latest ISV__SUMMARY_SAMPLES observations with their
 * times; readers take those at or after a time; quantiles by nearest rank; count and sum for
 * ever. */
static void a_window_keeps_the_latest_and_reads_by_time(void **state) {
  (void)state;
  static isv__window w; /* large: not on the stack */
  memset(&w, 0, sizeof w);
  static uint64_t got[ISV__SUMMARY_SAMPLES];
  size_t n = 0;
  isv__window_recent(&w, 0, got, &n, ISV__SUMMARY_SAMPLES);
  assert_int_equal(n, 0);
  for (uint64_t i = 1; i <= 10; i++) isv__window_add(&w, i * 10, 1000 + i);
  isv__window_recent(&w, 1006, got, &n, ISV__SUMMARY_SAMPLES); /* the last five */
  assert_int_equal(n, 5);
  assert_true(isv__quantile(got, n, 0.5) == 80);
  assert_true(isv__quantile(got, n, 0.999) == 100);
  assert_true(isv__quantile(got, n, 0.1) == 60);
  assert_int_equal(isv__counter_get(&w.written), 10);
  assert_int_equal(isv__counter_get(&w.sum_us), 550);
  /* past the ring's size the oldest go, the count and sum stay whole */
  for (uint64_t i = 0; i < ISV__SUMMARY_SAMPLES; i++) isv__window_add(&w, 7, 5000);
  n = 0;
  isv__window_recent(&w, 0, got, &n, ISV__SUMMARY_SAMPLES);
  assert_int_equal(n, ISV__SUMMARY_SAMPLES);
  assert_true(isv__quantile(got, n, 0.999) == 7);
  assert_int_equal(isv__counter_get(&w.written), 10 + ISV__SUMMARY_SAMPLES);
  /* a reader's room bounds what it takes */
  n = 0;
  isv__window_recent(&w, 0, got, &n, 3);
  assert_int_equal(n, 3);
  assert_true(isnan(isv__quantile(got, 0, 0.5)));
}

static void first_response_bounds_are_tritons(void **state) {
  (void)state;
  static const double want[] = {100, 500, 2000, 5000};
  for (unsigned i = 0; i < ISV__FIRST_RESPONSE_BUCKETS; i++)
    assert_true(isv__first_response_bounds[i] == want[i]);
  assert_int_equal(bucket_of(isv__first_response_bounds, ISV__FIRST_RESPONSE_BUCKETS, 150), 1);
  assert_int_equal(bucket_of(isv__first_response_bounds, ISV__FIRST_RESPONSE_BUCKETS, 9000), 4);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(bounds_are_strictly_increasing),
      cmocka_unit_test(a_value_at_a_bound_goes_to_that_bound),
      cmocka_unit_test(just_above_a_bound_goes_to_the_next_bucket),
      cmocka_unit_test(between_bounds_and_below_the_first),
      cmocka_unit_test(past_every_bound_is_the_inf_bucket),
      cmocka_unit_test(counts_are_per_bucket_with_sum_and_count),
      cmocka_unit_test(a_shorter_bound_list_uses_only_its_buckets),
      cmocka_unit_test(a_window_keeps_the_latest_and_reads_by_time),
      cmocka_unit_test(first_response_bounds_are_tritons),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
