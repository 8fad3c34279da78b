/* yajl_decode FILE COUNT ITERS: how long yajl (number callback + strtof, as bench_json's yajl
 * row) takes to decode FILE, a V2 JSON request body whose numbers are COUNT FP32 values (the
 * shape's numbers are skipped: they come before "data"). Prints "yajl_ms MEDIAN MIN" over ITERS
 * runs. The reference of bench/json_rt.sh: a round trip through the server against yajl merely
 * decoding the same body. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <yajl/yajl_parse.h>

typedef struct {
  float *out;
  size_t i, n;
  int in_data; /* after the "data" key */
  int bad;
} ctx;

static int on_key(void *p, const unsigned char *k, size_t len) {
  ctx *c = p;
  c->in_data = len == 4 && memcmp(k, "data", 4) == 0;
  return 1;
}

static int on_number(void *p, const char *s, size_t len) {
  ctx *c = p;
  char tmp[64];
  if (!c->in_data) return 1;
  if (len >= sizeof tmp || c->i >= c->n) {
    c->bad = 1;
    return 0;
  }
  memcpy(tmp, s, len);
  tmp[len] = 0;
  c->out[c->i++] = strtof(tmp, NULL);
  return 1;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: yajl_decode FILE COUNT ITERS\n");
    return 2;
  }
  FILE *f = fopen(argv[1], "rb");
  if (f == NULL) return 1;
  fseek(f, 0, SEEK_END);
  long size = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *body = malloc((size_t)size);
  if (body == NULL || fread(body, 1, (size_t)size, f) != (size_t)size) return 1;
  fclose(f);
  size_t n = strtoul(argv[2], NULL, 10);
  int iters = atoi(argv[3]);
  if (iters < 1 || iters > 1000) return 2;
  float *out = malloc(n * sizeof *out);
  double *ms = malloc((size_t)iters * sizeof *ms);
  static const yajl_callbacks cb = {.yajl_number = on_number, .yajl_map_key = on_key};
  for (int r = 0; r < iters; r++) {
    ctx c = {out, 0, n, 0, 0};
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    yajl_handle h = yajl_alloc(&cb, NULL, &c);
    yajl_status s = yajl_parse(h, (const unsigned char *)body, (size_t)size);
    if (s == yajl_status_ok) s = yajl_complete_parse(h);
    yajl_free(h);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (s != yajl_status_ok || c.bad || c.i != n) {
      fprintf(stderr, "yajl_decode: %s is not %zu FP32 values (%zu read)\n", argv[1], n, c.i);
      return 1;
    }
    ms[r] = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
  }
  qsort(ms, (size_t)iters, sizeof *ms, cmp);
  printf("yajl_ms %.2f %.2f\n", ms[iters / 2], ms[0]);
  free(ms);
  free(out);
  free(body);
  return 0;
}
