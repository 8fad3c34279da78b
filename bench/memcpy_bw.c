/* memcpy bandwidth reference for the 16 MiB tensor benchmarks (bench/run.sh).
 *
 *   memcpy_bw [MiB] [seconds]     (defaults: 16 MiB, 1 s)
 *
 * Prints one JSON line with three figures (GB/s = 10^9 bytes copied per second, and the time of
 * one copy):
 *   gb_per_s / ms_per_copy             memcpy between two pre-faulted buffers (alternating
 *                                      direction): the ceiling
 *   fresh_gb_per_s / fresh_ms_per_copy the destination freshly mmap'ed (and munmap'ed) every
 *                                      time: what a server pays when each request mallocs a new
 *                                      tensor-sized buffer (glibc serves those with mmap, or with
 *                                      a heap grown by brk and trimmed again) — page faults
 *   fresh_thp_gb_per_s / ..._ms_...    the same, destination 2 MiB-aligned and
 *                                      madvise(MADV_HUGEPAGE): transparent huge pages fault 512
 *                                      times less often (THP "madvise" or "always") */
#ifndef _DEFAULT_SOURCE
#define _DEFAULT_SOURCE
#endif
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static unsigned sum; /* keeps the copies observable */

/* mmap a fresh destination (2 MiB-aligned + MADV_HUGEPAGE when thp), copy, unmap; per second. */
static double fresh_copies(const unsigned char *src, size_t n, double secs, int thp,
                           unsigned long *count) {
  size_t huge = (size_t)2 << 20, len = n + (thp ? huge : 0);
  unsigned long k = 0;
  double t0 = now(), t;
  do {
    unsigned char *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) {
      fprintf(stderr, "memcpy_bw: mmap failed\n");
      exit(1);
    }
    unsigned char *d = m;
    if (thp) {
      d = (unsigned char *)(((uintptr_t)m + huge - 1) & ~(uintptr_t)(huge - 1));
#ifdef MADV_HUGEPAGE
      madvise(d, n, MADV_HUGEPAGE);
#endif
    }
    memcpy(d, src, n);
    sum += d[(k * 4093) % n];
    munmap(m, len);
    k++;
    t = now();
  } while (t - t0 < secs);
  *count = k;
  return t - t0;
}

int main(int argc, char **argv) {
  size_t mib = argc > 1 ? strtoul(argv[1], NULL, 10) : 16;
  double secs = argc > 2 ? strtod(argv[2], NULL) : 1.0;
  if (mib == 0 || secs <= 0) {
    fprintf(stderr, "usage: memcpy_bw [MiB] [seconds]\n");
    return 2;
  }
  size_t n = mib << 20;
  unsigned char *a = malloc(n), *b = malloc(n);
  if (a == NULL || b == NULL) {
    fprintf(stderr, "memcpy_bw: out of memory\n");
    return 1;
  }
  for (size_t i = 0; i < n; i++) a[i] = (unsigned char)(i * 131u);
  memset(b, 0, n);
  memcpy(b, a, n); /* warm-up */
  unsigned long copies = 0;
  double t0 = now(), t;
  do {
    if (copies & 1) memcpy(a, b, n);
    else memcpy(b, a, n);
    copies++;
    t = now();
  } while (t - t0 < secs);
  double el = t - t0;
  for (size_t i = 0; i < n; i += 4093) sum += a[i] + b[i];
  unsigned long nf, nt;
  double fel = fresh_copies(a, n, secs / 2, 0, &nf);
  double tel = fresh_copies(a, n, secs / 2, 1, &nt);
  printf("{\"bytes_per_copy\": %zu, \"copies\": %lu, \"seconds\": %.3f, \"gb_per_s\": %.2f, "
         "\"ms_per_copy\": %.3f, \"fresh_gb_per_s\": %.2f, \"fresh_ms_per_copy\": %.3f, "
         "\"fresh_thp_gb_per_s\": %.2f, \"fresh_thp_ms_per_copy\": %.3f, \"checksum\": %u}\n",
         n, copies, el, (double)n * (double)copies / el / 1e9, el * 1e3 / (double)copies,
         (double)n * (double)nf / fel / 1e9, fel * 1e3 / (double)nf,
         (double)n * (double)nt / tel / 1e9, tel * 1e3 / (double)nt, sum);
  free(a);
  free(b);
  return 0;
}
