/* Exhaustive FP32 check of the writer and reader: for ALL 2^32 bit patterns,
 *   1. isv__fmt_f32 text -> isv__json_to_float gives the same bits (NaN -> NaN);
 *   2. the same text -> strtof gives the same bits (libc oracle; finite values);
 *   3. no shorter text reads back: every decimal with one significant digit less near the
 *      value (4 candidates around the truncated digits) reads to a different float.
 * Usage: check_all_f32 [threads [from to]] (from/to: bit-pattern range, hex; default all).
 * Prints counts; exit status 1 on any failure. */
#define _GNU_SOURCE 1
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "codec/json_reader.h"
#include "codec/json_writer.h"
#include "codec/numfmt.h"

typedef struct job {
  uint64_t from, to;
  uint64_t checked, failures, shorter_tested;
} job;

static int read_f32(const char *s, size_t n, float *out) {
  isv__json_token t = {ISV__JSON_NUMBER, s, n, 0};
  return isv__json_to_float(&t, out);
}

/* Split rendered text into its significant digits and the decimal exponent of the last one. */
static int digits_of(const char *s, size_t n, char *dig, int *exp10) {
  int nd = 0, after_point = 0, frac = 0, e = 0;
  size_t i = 0;
  if (s[0] == '-') i++;
  for (; i < n && s[i] != 'e'; i++) {
    if (s[i] == '.') {
      after_point = 1;
      continue;
    }
    if (after_point) frac++;
    if (nd == 0 && s[i] == '0') continue;
    dig[nd++] = s[i];
  }
  if (i < n) e = atoi(s + i + 1);
  /* value = 0.DIG... shifted: last digit has exponent e - frac */
  int last = e - frac;
  while (nd > 0 && dig[nd - 1] == '0') { /* trailing zeros (e.g. "100.0") */
    nd--;
    last++;
  }
  *exp10 = last;
  return nd;
}

static void *run(void *arg) {
  job *j = arg;
  char txt[40], cand[64];
  for (uint64_t b = j->from; b < j->to; b++) {
    uint32_t u = (uint32_t)b;
    float f, g;
    memcpy(&f, &u, 4);
    size_t n = isv__fmt_f32(txt, f);
    if (read_f32(txt, n, &g)) {
      j->failures++;
      continue;
    }
    j->checked++;
    if (isnan(f)) {
      if (!isnan(g)) j->failures++;
      continue;
    }
    uint32_t gu;
    memcpy(&gu, &g, 4);
    if (gu != u) {
      if (j->failures++ < 5) fprintf(stderr, "%08X -> %.*s -> %08X\n", u, (int)n, txt, gu);
      continue;
    }
    if (!isfinite(f)) continue;
    txt[n] = 0;
    float h = strtof(txt, NULL);
    if (memcmp(&h, &f, 4) != 0) {
      if (j->failures++ < 5) fprintf(stderr, "%08X -> %s: strtof disagrees\n", u, txt);
      continue;
    }
    char dig[32];
    int e10;
    int nd = digits_of(txt, n, dig, &e10);
    if (nd <= 1) continue;
    /* candidates with nd-1 digits: floor(D/10) + {-1, 0, 1, 2}, exponent e10 + 1 */
    uint64_t D = 0;
    for (int i = 0; i < nd - 1; i++) D = D * 10 + (uint64_t)(dig[i] - '0');
    for (int d = -1; d <= 2; d++) {
      if ((int64_t)D + d <= 0) continue;
      int l = snprintf(cand, sizeof cand, "%s%llue%d", f < 0 ? "-" : "", (unsigned long long)(D + (uint64_t)d),
                       e10 + 1);
      float c;
      j->shorter_tested++;
      if (read_f32(cand, (size_t)l, &c) == 0 && memcmp(&c, &f, 4) == 0) {
        if (j->failures++ < 5) fprintf(stderr, "%08X -> %s but %s is shorter\n", u, txt, cand);
      }
    }
  }
  return NULL;
}

int main(int argc, char **argv) {
  int nt = argc > 1 ? atoi(argv[1]) : 2;
  if (nt < 1) nt = 1;
  if (nt > 64) nt = 64;
  job jobs[64];
  pthread_t th[64];
  uint64_t lo = 0, hi = UINT64_C(1) << 32;
  if (argc > 3) {
    lo = strtoull(argv[2], NULL, 16);
    hi = strtoull(argv[3], NULL, 16);
  }
  const uint64_t total = hi - lo;
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (int i = 0; i < nt; i++) {
    jobs[i] = (job){lo + total * (uint64_t)i / (uint64_t)nt, lo + total * (uint64_t)(i + 1) / (uint64_t)nt, 0, 0, 0};
    pthread_create(&th[i], NULL, run, &jobs[i]);
  }
  uint64_t checked = 0, failures = 0, shorter = 0;
  for (int i = 0; i < nt; i++) {
    pthread_join(th[i], NULL);
    checked += jobs[i].checked;
    failures += jobs[i].failures;
    shorter += jobs[i].shorter_tested;
  }
  clock_gettime(CLOCK_MONOTONIC, &t1);
  printf("FP32 patterns [%llx, %llx): ", (unsigned long long)lo, (unsigned long long)hi);
  printf(" %llu read back, %llu shorter candidates refused, %llu failures, %.0f s on %d threads\n",
         (unsigned long long)checked, (unsigned long long)shorter, (unsigned long long)failures,
         (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9, nt);
  return failures != 0;
}
