/* JSON tensor codec benchmark: libinferserve's reader/writer side by side with yajl, jansson,
 * json-c and bare libc loops, in ONE run on the same generated data.
 *
 * Decode: 1,000,000 FP32 (uniform [0,1) printed with "%.7g"), 1,000,000 INT32 (uniform over
 * the full range), a 224x224x3 UINT8 image as a nested array. Every decoder produces the
 * typed array (yajl: number callback + strtof/strtol; jansson / json-c: parse the DOM, then
 * walk it into the array; bare loops: strtof/strtol over the text, separators skipped).
 * Encode: 1,000,000 FP32 with isv__json_write_tensor vs snprintf("%.9g") vs "%g, then %.9g
 * when %g does not read back".
 * Each figure is the best of REPEAT runs. Results are checked against each other. */
#define _GNU_SOURCE 1
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <yajl/yajl_parse.h>

#include "codec/json_reader.h"
#include "codec/json_writer.h"

#define REPEAT 7

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static uint64_t rng_s = 0x853C49E6748FEA9Bu;
static uint64_t rng(void) {
  rng_s ^= rng_s << 13;
  rng_s ^= rng_s >> 7;
  rng_s ^= rng_s << 17;
  return rng_s;
}

typedef struct text {
  char *p;
  size_t n;
} text;

static void report(const char *what, const char *impl, double secs, size_t bytes, size_t elems) {
  printf("  %-8s %-34s %9.2f ms %9.1f MB/s %8.1f M elem/s\n", what, impl, secs * 1e3, bytes / secs / 1e6,
         elems / secs / 1e6);
}

/* ---- data ---------------------------------------------------------------------------------- */
static text gen_fp32(size_t n) {
  text t;
  t.p = malloc(n * 16 + 2);
  char *p = t.p;
  *p++ = '[';
  for (size_t i = 0; i < n; i++) {
    if (i) *p++ = ',';
    float v = (float)(rng() >> 40) * 0x1p-24f;
    p += sprintf(p, "%.7g", (double)v);
  }
  *p++ = ']';
  t.n = (size_t)(p - t.p);
  return t;
}

static text gen_int32(size_t n) {
  text t;
  t.p = malloc(n * 13 + 2);
  char *p = t.p;
  *p++ = '[';
  for (size_t i = 0; i < n; i++) {
    if (i) *p++ = ',';
    p += sprintf(p, "%d", (int32_t)(uint32_t)rng());
  }
  *p++ = ']';
  t.n = (size_t)(p - t.p);
  return t;
}

static text gen_image(int h, int w, int c) {
  text t;
  t.p = malloc((size_t)h * w * (c * 4 + 4) + (size_t)h * 4 + 8);
  char *p = t.p;
  *p++ = '[';
  for (int y = 0; y < h; y++) {
    if (y) *p++ = ',';
    *p++ = '[';
    for (int x = 0; x < w; x++) {
      if (x) *p++ = ',';
      *p++ = '[';
      for (int k = 0; k < c; k++) {
        if (k) *p++ = ',';
        p += sprintf(p, "%u", (unsigned)(rng() & 255));
      }
      *p++ = ']';
    }
    *p++ = ']';
  }
  *p++ = ']';
  t.n = (size_t)(p - t.p);
  return t;
}

/* ---- decoders ------------------------------------------------------------------------------ */
enum kind { K_F32, K_I32, K_U8 };

static int isv_decode(const text *t, char *work, enum kind k, void *out, size_t n) {
  memcpy(work, t->p, t->n); /* the reader works on a mutable request body */
  isv__json_reader r;
  isv__json_reader_init(&r, work, t->n, 64);
  isv__json_token tok;
  if (isv__json_next(&r, &tok) != ISV__JSON_ARRAY_BEGIN) return -1;
  isv_datatype dt = k == K_F32 ? ISV_FP32 : k == K_I32 ? ISV_INT32 : ISV_UINT8;
  if (isv__json_read_tensor(&r, &tok, dt, out, n)) {
    fprintf(stderr, "isv: %s\n", isv__json_error(&r, NULL));
    return -1;
  }
  return isv__json_next(&r, &tok) == ISV__JSON_EOF ? 0 : -1;
}

typedef struct yctx {
  enum kind k;
  void *out;
  size_t i, n;
  int bad;
} yctx;

static int y_number(void *ctx, const char *s, size_t len) {
  yctx *c = ctx;
  char tmp[64];
  if (len >= sizeof tmp || c->i >= c->n) {
    c->bad = 1;
    return 0;
  }
  memcpy(tmp, s, len);
  tmp[len] = 0;
  if (c->k == K_F32) {
    ((float *)c->out)[c->i++] = strtof(tmp, NULL);
  } else {
    long v = strtol(tmp, NULL, 10);
    if (c->k == K_I32)
      ((int32_t *)c->out)[c->i++] = (int32_t)v;
    else {
      if (v < 0 || v > 255) {
        c->bad = 1;
        return 0;
      }
      ((uint8_t *)c->out)[c->i++] = (uint8_t)v;
    }
  }
  return 1;
}
static int y_start_array(void *ctx) { (void)ctx; return 1; }
static int y_end_array(void *ctx) { (void)ctx; return 1; }

static int yajl_decode(const text *t, enum kind k, void *out, size_t n) {
  static const yajl_callbacks cb = {.yajl_number = y_number, .yajl_start_array = y_start_array,
                                    .yajl_end_array = y_end_array};
  yctx c = {k, out, 0, n, 0};
  yajl_handle h = yajl_alloc(&cb, NULL, &c);
  yajl_status s = yajl_parse(h, (const unsigned char *)t->p, t->n);
  if (s == yajl_status_ok) s = yajl_complete_parse(h);
  yajl_free(h);
  return (s == yajl_status_ok && !c.bad && c.i == n) ? 0 : -1;
}

static void jansson_walk(json_t *j, enum kind k, void *out, size_t *i) {
  if (json_is_array(j)) {
    size_t m = json_array_size(j);
    for (size_t x = 0; x < m; x++) jansson_walk(json_array_get(j, x), k, out, i);
    return;
  }
  if (k == K_F32)
    ((float *)out)[(*i)++] = (float)json_number_value(j);
  else if (k == K_I32)
    ((int32_t *)out)[(*i)++] = (int32_t)json_integer_value(j);
  else
    ((uint8_t *)out)[(*i)++] = (uint8_t)json_integer_value(j);
}

static int jansson_decode(const text *t, enum kind k, void *out, size_t n) {
  json_error_t e;
  json_t *j = json_loadb(t->p, t->n, 0, &e);
  if (!j) return -1;
  size_t i = 0;
  jansson_walk(j, k, out, &i);
  json_decref(j);
  return i == n ? 0 : -1;
}

/* bench_jsonc.c (json-c is dlopen'ed: its symbols clash with jansson's) */
int jsonc_load(void);
int jsonc_decode(const char *p, size_t n, int kind, void *out, size_t count);

/* strtof/strtol over the text; needs a NUL after the text (the copy has one). */
static int bare_decode(const text *t, enum kind k, void *out, size_t n) {
  const char *p = t->p, *end = t->p + t->n;
  size_t i = 0;
  while (p < end && i < n) {
    while (p < end && (*p == '[' || *p == ']' || *p == ',' || *p == ' ')) p++;
    if (p >= end) break;
    char *e;
    if (k == K_F32) {
      ((float *)out)[i++] = strtof(p, &e);
    } else {
      long v = strtol(p, &e, 10);
      if (k == K_I32)
        ((int32_t *)out)[i++] = (int32_t)v;
      else
        ((uint8_t *)out)[i++] = (uint8_t)v;
    }
    p = e;
  }
  return i == n ? 0 : -1;
}

static void bench_decode(const char *name, const text *t, enum kind k, size_t n) {
  size_t es = k == K_F32 ? 4 : k == K_I32 ? 4 : 1;
  void *ref = malloc(n * es), *out = malloc(n * es);
  char *work = malloc(t->n + 1);
  text tz = {malloc(t->n + 1), t->n};
  memcpy(tz.p, t->p, t->n);
  tz.p[t->n] = 0;
  printf("%s: %zu elements, %.2f MB of JSON\n", name, n, t->n / 1e6);
  struct {
    const char *label;
    int which;
  } impls[] = {{"libinferserve isv__json_read_tensor", 0}, {"yajl 2.1 (number cb + strto*)", 1},
               {"jansson 2.14 (DOM + walk)", 2},          {"json-c 0.16 (DOM + walk)", 3},
               {"bare strtof/strtol loop", 4}};
  if (bare_decode(&tz, k, ref, n)) {
    fprintf(stderr, "bare decode failed\n");
    exit(1);
  }
  for (size_t m = 0; m < sizeof impls / sizeof impls[0]; m++) {
    double best = 1e9;
    for (int rep = 0; rep < REPEAT; rep++) {
      memset(out, 0, n * es);
      double t0 = now();
      int rc;
      switch (impls[m].which) {
        case 0: rc = isv_decode(&tz, work, k, out, n); break;
        case 1: rc = yajl_decode(&tz, k, out, n); break;
        case 2: rc = jansson_decode(&tz, k, out, n); break;
        case 3: rc = jsonc_decode(tz.p, tz.n, (int)k, out, n); break;
        default: rc = bare_decode(&tz, k, out, n); break;
      }
      double dt = now() - t0;
      if (rc) {
        fprintf(stderr, "%s failed\n", impls[m].label);
        exit(1);
      }
      if (memcmp(out, ref, n * es) != 0 && impls[m].which != 3) {
        /* json-c parses doubles then narrows: may differ from strtof by double rounding */
        fprintf(stderr, "%s: result differs from strtof/strtol\n", impls[m].label);
        exit(1);
      }
      if (dt < best) best = dt;
    }
    report("decode", impls[m].label, best, t->n, n);
  }
  free(ref);
  free(out);
  free(work);
  free(tz.p);
}

/* ---- encoders ------------------------------------------------------------------------------ */
static size_t enc_snprintf9(char *buf, const float *v, size_t n) {
  char *p = buf;
  *p++ = '[';
  for (size_t i = 0; i < n; i++) {
    if (i) *p++ = ',';
    p += snprintf(p, 32, "%.9g", (double)v[i]);
  }
  *p++ = ']';
  return (size_t)(p - buf);
}

static size_t enc_g_then_9g(char *buf, const float *v, size_t n) {
  char *p = buf;
  *p++ = '[';
  for (size_t i = 0; i < n; i++) {
    if (i) *p++ = ',';
    int l = snprintf(p, 32, "%g", (double)v[i]);
    if (strtof(p, NULL) != v[i]) l = snprintf(p, 32, "%.9g", (double)v[i]);
    p += l;
  }
  *p++ = ']';
  return (size_t)(p - buf);
}

static void bench_encode(const char *name, const float *v, size_t n) {
  char *buf = malloc(n * 34 + 2);
  printf("%s: %zu elements\n", name, n);
  double best = 1e9;
  size_t len = 0;
  isv__buf b;
  for (int rep = 0; rep < REPEAT; rep++) {
    isv__buf_init(&b, NULL);
    isv__buf_reserve(&b, n * 12); /* as an encoder reusing a sized buffer would */
    double t0 = now();
    isv__json_write_tensor(&b, ISV_FP32, v, n);
    double dt = now() - t0;
    len = b.len;
    if (dt < best) best = dt;
    if (rep < REPEAT - 1) isv__buf_free(&b);
  }
  report("encode", "libinferserve isv__json_write_tensor", best, len, n);
  /* check: every element reads back */
  {
    isv__json_reader r;
    isv__json_reader_init(&r, b.data, b.len, 4);
    isv__json_token t;
    float *back = malloc(n * 4);
    isv__json_next(&r, &t);
    if (isv__json_read_tensor(&r, &t, ISV_FP32, back, n) || memcmp(back, v, n * 4)) {
      fprintf(stderr, "encode check failed\n");
      exit(1);
    }
    free(back);
    isv__buf_free(&b);
  }
  best = 1e9;
  for (int rep = 0; rep < REPEAT; rep++) {
    double t0 = now();
    len = enc_snprintf9(buf, v, n);
    double dt = now() - t0;
    if (dt < best) best = dt;
  }
  report("encode", "snprintf(\"%.9g\")", best, len, n);
  best = 1e9;
  for (int rep = 0; rep < REPEAT; rep++) {
    double t0 = now();
    len = enc_g_then_9g(buf, v, n);
    double dt = now() - t0;
    if (dt < best) best = dt;
  }
  report("encode", "\"%g\", \"%.9g\" if no round trip", best, len, n);
  free(buf);
}

int main(void) {
  const size_t N = 1000000;
  printf("libinferserve JSON codec benchmark (best of %d runs)\n", REPEAT);
  if (jsonc_load()) return 1;
  text f = gen_fp32(N);
  text i = gen_int32(N);
  text img = gen_image(224, 224, 3);
  bench_decode("FP32 [1M], %.7g of uniform [0,1)", &f, K_F32, N);
  bench_decode("INT32 [1M], uniform int32", &i, K_I32, N);
  bench_decode("UINT8 [224][224][3] nested", &img, K_U8, (size_t)224 * 224 * 3);

  float *v = malloc(N * 4);
  for (size_t k = 0; k < N; k++) v[k] = (float)(rng() >> 40) * 0x1p-24f;
  bench_encode("FP32 [1M] uniform [0,1) (full 24-bit precision)", v, N);
  for (size_t k = 0; k < N; k++) {
    uint32_t u;
    do u = (uint32_t)rng();
    while ((u & 0x7F800000u) == 0x7F800000u);
    memcpy(&v[k], &u, 4);
  }
  bench_encode("FP32 [1M] random finite bit patterns", v, N);
  free(v);
  free(f.p);
  free(i.p);
  free(img.p);
  return 0;
}
