/* xgb_direct: the XGBoost C API called in a loop on one row, without the library — the same
 * XGBoosterPredictFromDense call examples/xgboost makes per batch (NumPy's array interface over
 * the row, no copy). The native reference of bench/runtimes.sh.
 *
 *   xgb_direct MODEL.json ROW.f32 SECONDS    prints JSON: calls, seconds, rps, p50/p99/mean_ms
 *
 * ROW.f32: the row's little-endian float32 values (its feature count: the file's size / 4). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <xgboost/c_api.h>

static uint64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: xgb_direct MODEL.json ROW.f32 SECONDS\n");
    return 2;
  }
  float row[4096];
  FILE *f = fopen(argv[2], "rb");
  size_t n = f ? fread(row, sizeof *row, 4096, f) : 0;
  if (f) fclose(f);
  BoosterHandle b;
  if (n == 0 || XGBoosterCreate(NULL, 0, &b) != 0 || XGBoosterLoadModel(b, argv[1]) != 0 ||
      XGBoosterSetParam(b, "nthread", "1") != 0) {
    fprintf(stderr, "xgb_direct: %s\n", n ? XGBGetLastError() : "no row");
    return 1;
  }
  char values[256];
  snprintf(values, sizeof values,
           "{\"data\":[%" PRIuPTR ",true],\"shape\":[1,%zu],\"typestr\":\"<f4\",\"version\":3}",
           (uintptr_t)row, n);
  static const char config[] = "{\"type\":0,\"training\":false,\"cache_id\":0,\"iteration_begin\":0,"
                               "\"iteration_end\":0,\"strict_shape\":false,\"missing\":NaN}";
  const bst_ulong *shape;
  bst_ulong dim;
  const float *out;
  double secs = atof(argv[3]);
  for (uint64_t end = now_ns() + 1000000000u; now_ns() < end;) /* 1 s warm-up */
    if (XGBoosterPredictFromDense(b, values, config, NULL, &shape, &dim, &out) != 0) return 1;
  size_t cap = 1 << 20, calls = 0;
  uint64_t *lat = malloc(cap * sizeof *lat);
  uint64_t start = now_ns(), stop = start + (uint64_t)(secs * 1e9), t1;
  do {
    uint64_t t0 = now_ns();
    if (XGBoosterPredictFromDense(b, values, config, NULL, &shape, &dim, &out) != 0) return 1;
    t1 = now_ns();
    if (calls == cap) lat = realloc(lat, (cap *= 2) * sizeof *lat);
    lat[calls++] = t1 - t0;
  } while (t1 < stop);
  double elapsed = (double)(now_ns() - start) / 1e9;
  qsort(lat, calls, sizeof *lat, cmp_u64);
  double sum = 0;
  for (size_t i = 0; i < calls; i++) sum += (double)lat[i];
  printf("{\"calls\": %zu, \"seconds\": %.3f, \"rps\": %.1f, \"p50_ms\": %.6f, \"p99_ms\": %.6f, "
         "\"mean_ms\": %.6f}\n", calls, elapsed, (double)calls / elapsed,
         (double)lat[calls / 2] / 1e6, (double)lat[calls * 99 / 100] / 1e6, sum / (double)calls / 1e6);
  free(lat);
  XGBoosterFree(b);
  return 0;
}
