/* The demo model zoo (see zoo.h). Every backend validates what it relies on — datatype, shape,
 * element count, byte size — and completes odd requests (0 elements, mismatched shapes, bad
 * text) with ISV_EBADREQ instead of trusting them. Tensor data is read and written through
 * memcpy, so no alignment is assumed anywhere. */
#include "zoo.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
#define MAX_NDIM 16

/* ---- helpers shared by the backends -------------------------------------------------------- */

int demo_fail(isv_request *req, int code, const char *fmt, ...) {
  char msg[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return isv_request_complete(req, code, msg);
}

/* One waiter per blocked send: the loop's writable callback wakes the worker thread. */
typedef struct send_wait {
  uv_mutex_t mu;
  uv_cond_t cv;
  int ready;
} send_wait;

static void on_writable(isv_request *req, void *user) {
  (void)req;
  send_wait *w = user;
  uv_mutex_lock(&w->mu);
  w->ready = 1;
  uv_cond_signal(&w->cv);
  uv_mutex_unlock(&w->mu);
}

int demo_send_response(isv_request *req) {
  int rc = isv_request_send_response(req);
  if (rc != ISV_EAGAIN) return rc;
  send_wait w = {.ready = 0};
  if (uv_mutex_init(&w.mu) != 0) return ISV_ENOMEM;
  if (uv_cond_init(&w.cv) != 0) {
    uv_mutex_destroy(&w.mu);
    return ISV_ENOMEM;
  }
  while (rc == ISV_EAGAIN) {
    w.ready = 0;
    if ((rc = isv_request_on_writable(req, on_writable, &w)) != 0) break;
    uv_mutex_lock(&w.mu);
    while (!w.ready) uv_cond_wait(&w.cv, &w.mu);
    uv_mutex_unlock(&w.mu);
    rc = isv_request_is_cancelled(req) ? ISV_ECANCELED : isv_request_send_response(req);
  }
  uv_cond_destroy(&w.cv);
  uv_mutex_destroy(&w.mu);
  return rc;
}

/* Input `name` of datatype dt whose buffer really holds element_count elements; NULL (and the
 * request completed with ISV_EBADREQ) otherwise. */
static const isv_tensor *input_or_fail(isv_request *req, const char *name, isv_datatype dt) {
  const isv_tensor *t = isv_request_input(req, name);
  if (t == NULL) {
    demo_fail(req, ISV_EBADREQ, "missing input %s", name);
    return NULL;
  }
  if (isv_tensor_datatype(t) != dt) {
    const char *got = isv_datatype_name(isv_tensor_datatype(t));
    demo_fail(req, ISV_EBADREQ, "input %s must be %s, got %s", name, isv_datatype_name(dt),
         got ? got : "an invalid datatype");
    return NULL;
  }
  size_t n = isv_tensor_element_count(t);
  if (n > 0) {
    int ok = isv_tensor_data(t) != NULL;
    if (ok && dt != ISV_BYTES) {
      size_t esz = isv_datatype_size(dt);
      ok = n <= SIZE_MAX / esz && isv_tensor_byte_size(t) >= n * esz;
    }
    if (!ok) {
      demo_fail(req, ISV_EBADREQ, "input %s holds fewer bytes than its shape needs", name);
      return NULL;
    }
  }
  return t;
}

/* Allocate output `name`. 1 = allocated (*data set), 0 = skipped because the client did not ask
 * for it, -1 = failed (the request has been completed). */
static int make_output(isv_request *req, const char *name, isv_datatype dt,
                       const int64_t *shape, size_t ndim, void **data) {
  *data = NULL;
  if (!isv_request_is_output_requested(req, name))
    return 0;
  int rc = isv_request_alloc_output(req, name, dt, shape, ndim, data);
  if (rc < 0) {
    demo_fail(req, rc, "cannot allocate output %s: %s", name, isv_strerror(rc));
    return -1;
  }
  return 1;
}

static int same_shape(const isv_tensor *a, const isv_tensor *b) {
  size_t na, nb;
  const int64_t *sa = isv_tensor_shape(a, &na), *sb = isv_tensor_shape(b, &nb);
  if (na != nb)
    return 0;
  return na == 0 || memcmp(sa, sb, na * sizeof *sa) == 0;
}

static uint32_t load_u32(const void *base, size_t i) {
  uint32_t v;
  memcpy(&v, (const char *)base + i * sizeof v, sizeof v);
  return v;
}
static void store_u32(void *base, size_t i, uint32_t v) {
  memcpy((char *)base + i * sizeof v, &v, sizeof v);
}
static float load_f32(const void *base, size_t i) {
  float v;
  memcpy(&v, (const char *)base + i * sizeof v, sizeof v);
  return v;
}
static void store_f32(void *base, size_t i, float v) {
  memcpy((char *)base + i * sizeof v, &v, sizeof v);
}

/* uint32 -> int32 without implementation-defined conversion. */
static int32_t as_i32(uint32_t u) {
  int32_t v;
  memcpy(&v, &u, sizeof v);
  return v;
}

/* ---- simple: OUTPUT0 = INPUT0 + INPUT1, OUTPUT1 = INPUT0 - INPUT1 (wrapping int32) ---------- */

static int simple_infer(isv_request *req, void *user) {
  (void)user;
  const isv_tensor *a = input_or_fail(req, "INPUT0", ISV_INT32), *b;
  if (a == NULL || (b = input_or_fail(req, "INPUT1", ISV_INT32)) == NULL)
    return 0;
  if (!same_shape(a, b) || isv_tensor_element_count(a) != isv_tensor_element_count(b))
    return isv_request_complete(req, ISV_EBADREQ, "INPUT0 and INPUT1 must have the same shape");

  size_t ndim, n = isv_tensor_element_count(a);
  const int64_t *shape = isv_tensor_shape(a, &ndim);
  void *sum, *diff;
  int k0 = make_output(req, "OUTPUT0", ISV_INT32, shape, ndim, &sum);
  if (k0 < 0)
    return 0;
  int k1 = make_output(req, "OUTPUT1", ISV_INT32, shape, ndim, &diff);
  if (k1 < 0)
    return 0;
  const void *pa = isv_tensor_data(a), *pb = isv_tensor_data(b);
  for (size_t i = 0; i < n; i++) {
    uint32_t x = load_u32(pa, i), y = load_u32(pb, i);
    if (k0 > 0)
      store_u32(sum, i, x + y);
    if (k1 > 0)
      store_u32(diff, i, x - y);
  }
  return isv_request_complete(req, 0, NULL);
}

/* ---- simple_int8: the same on INT8 (Triton's example model: wrapping int8) ----------------- */

static int simple_int8_infer(isv_request *req, void *user) {
  (void)user;
  const isv_tensor *a = input_or_fail(req, "INPUT0", ISV_INT8), *b;
  if (a == NULL || (b = input_or_fail(req, "INPUT1", ISV_INT8)) == NULL)
    return 0;
  if (!same_shape(a, b))
    return isv_request_complete(req, ISV_EBADREQ, "INPUT0 and INPUT1 must have the same shape");
  size_t ndim, n = isv_tensor_element_count(a);
  const int64_t *shape = isv_tensor_shape(a, &ndim);
  void *sum, *diff;
  int k0 = make_output(req, "OUTPUT0", ISV_INT8, shape, ndim, &sum);
  if (k0 < 0)
    return 0;
  int k1 = make_output(req, "OUTPUT1", ISV_INT8, shape, ndim, &diff);
  if (k1 < 0)
    return 0;
  const uint8_t *pa = isv_tensor_data(a), *pb = isv_tensor_data(b);
  for (size_t i = 0; i < n; i++) { /* unsigned arithmetic: the wrap is defined */
    if (k0 > 0)
      ((uint8_t *)sum)[i] = (uint8_t)(pa[i] + pb[i]);
    if (k1 > 0)
      ((uint8_t *)diff)[i] = (uint8_t)(pa[i] - pb[i]);
  }
  return isv_request_complete(req, 0, NULL);
}

/* ---- simple_string: the same on decimal text ------------------------------------------------ */

/* Parse an optionally signed decimal int32 occupying the whole element. */
static int parse_i32(const isv_bytes *e, int32_t *out) {
  const char *p = e->ptr, *end = e->ptr + e->len;
  if (p == NULL || e->len == 0)
    return -1;
  int neg = 0;
  if (*p == '+' || *p == '-')
    neg = *p++ == '-';
  if (p == end)
    return -1;
  int64_t v = 0;
  for (; p < end; p++) {
    if (*p < '0' || *p > '9')
      return -1;
    v = v * 10 + (*p - '0');
    if (v > (int64_t)INT32_MAX + 1)
      return -1;
  }
  if (neg)
    v = -v;
  if (v > INT32_MAX || v < INT32_MIN)
    return -1;
  *out = (int32_t)v;
  return 0;
}

/* Quote at most 32 bytes of untrusted text for an error message. */
static void quote(const isv_bytes *e, char *dst, size_t cap) {
  size_t n = e->ptr ? e->len : 0, j = 0;
  for (size_t i = 0; i < n && i < 32 && j + 4 < cap; i++) {
    unsigned char c = (unsigned char)e->ptr[i];
    dst[j++] = (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') ? (char)c : '?';
  }
  if (n > 32 && j + 4 < cap) {
    memcpy(dst + j, "...", 3);
    j += 3;
  }
  dst[j] = '\0';
}

#define I32_TEXT_MAX 12 /* "-2147483648" + NUL */

static int simple_string_infer(isv_request *req, void *user) {
  (void)user;
  const isv_tensor *a = input_or_fail(req, "INPUT0", ISV_BYTES), *b;
  if (a == NULL || (b = input_or_fail(req, "INPUT1", ISV_BYTES)) == NULL)
    return 0;
  if (!same_shape(a, b) || isv_tensor_element_count(a) != isv_tensor_element_count(b))
    return isv_request_complete(req, ISV_EBADREQ, "INPUT0 and INPUT1 must have the same shape");

  size_t ndim, n = isv_tensor_element_count(a);
  const int64_t *shape = isv_tensor_shape(a, &ndim);
  const isv_bytes *ea = isv_tensor_data(a), *eb = isv_tensor_data(b);
  /* Validate every element before producing anything. */
  for (size_t i = 0; i < n; i++) {
    int32_t x;
    const isv_bytes *bad = NULL;
    if (parse_i32(&ea[i], &x) < 0)
      bad = &ea[i];
    else if (parse_i32(&eb[i], &x) < 0)
      bad = &eb[i];
    if (bad != NULL) {
      char q[48];
      quote(bad, q, sizeof q);
      return demo_fail(req, ISV_EBADREQ, "%s[%zu] is not a decimal int32: \"%s\"",
                  bad == &ea[i] ? "INPUT0" : "INPUT1", i, q);
    }
  }

  void *sum, *diff;
  int k0 = make_output(req, "OUTPUT0", ISV_BYTES, shape, ndim, &sum);
  if (k0 < 0)
    return 0;
  int k1 = make_output(req, "OUTPUT1", ISV_BYTES, shape, ndim, &diff);
  if (k1 < 0)
    return 0;
  char *text = NULL;
  if (n > 0) {
    if (n <= SIZE_MAX / (2 * I32_TEXT_MAX))
      text = isv_request_alloc(req, n * 2 * I32_TEXT_MAX);
    if (text == NULL)
      return isv_request_complete(req, ISV_ENOMEM, "out of memory");
  }
  isv_bytes *os = sum, *od = diff;
  for (size_t i = 0; i < n; i++) {
    int32_t x = 0, y = 0;
    parse_i32(&ea[i], &x);
    parse_i32(&eb[i], &y);
    uint32_t ux = (uint32_t)x, uy = (uint32_t)y; /* int32 -> uint32 is well defined */
    char *s = text + i * 2 * I32_TEXT_MAX, *d = s + I32_TEXT_MAX;
    if (k0 > 0) {
      int len = snprintf(s, I32_TEXT_MAX, "%" PRId32, as_i32(ux + uy));
      os[i].ptr = s;
      os[i].len = (size_t)len;
    }
    if (k1 > 0) {
      int len = snprintf(d, I32_TEXT_MAX, "%" PRId32, as_i32(ux - uy));
      od[i].ptr = d;
      od[i].len = (size_t)len;
    }
  }
  return isv_request_complete(req, 0, NULL);
}

/* ---- identity_<t> --------------------------------------------------------------------------- */

static const struct {
  const char *model;
  isv_datatype dt;
} identity_types[] = {
    {"identity_bool", ISV_BOOL},   {"identity_uint8", ISV_UINT8}, {"identity_uint16", ISV_UINT16},
    {"identity_uint32", ISV_UINT32}, {"identity_uint64", ISV_UINT64}, {"identity_int8", ISV_INT8},
    {"identity_int16", ISV_INT16}, {"identity_int32", ISV_INT32}, {"identity_int64", ISV_INT64},
    {"identity_fp16", ISV_FP16},   {"identity_bf16", ISV_BF16},   {"identity_fp32", ISV_FP32},
    {"identity_fp64", ISV_FP64},   {"identity_bytes", ISV_BYTES},
};

/* user points at the model's datatype. The output IS the input (isv_request_set_output with
 * ISV_STATIC: an input lives as long as its request), so a 16 MiB tensor is not copied. */
static int identity_infer(isv_request *req, void *user) {
  isv_datatype dt = *(const isv_datatype *)user;
  const isv_tensor *in = input_or_fail(req, "INPUT0", dt);
  if (in == NULL)
    return 0;
  if (!isv_request_is_output_requested(req, "OUTPUT0"))
    return isv_request_complete(req, 0, NULL);
  size_t ndim;
  const int64_t *shape = isv_tensor_shape(in, &ndim);
  int rc = isv_request_set_output(req, "OUTPUT0", dt, shape, ndim, isv_tensor_data(in),
                                  isv_tensor_byte_size(in), ISV_STATIC);
  if (rc < 0)
    return demo_fail(req, rc, "cannot set output OUTPUT0: %s", isv_strerror(rc));
  return isv_request_complete(req, 0, NULL);
}

/* ---- multi_version: OUTPUT0 = INPUT0 + version ---------------------------------------------- */

static const int32_t version_numbers[] = {1, 2, 3};

/* Copy INPUT0 (INT32, any shape) to OUTPUT0, adding *add when add != NULL. */
static int add_const_i32(isv_request *req, const int32_t *add) {
  const isv_tensor *in = input_or_fail(req, "INPUT0", ISV_INT32);
  if (in == NULL)
    return 0;
  size_t ndim, n = isv_tensor_element_count(in);
  const int64_t *shape = isv_tensor_shape(in, &ndim);
  void *out;
  int k = make_output(req, "OUTPUT0", ISV_INT32, shape, ndim, &out);
  if (k < 0)
    return 0;
  uint32_t delta = add ? (uint32_t)*add : 0;
  const void *src = isv_tensor_data(in);
  for (size_t i = 0; k > 0 && i < n; i++)
    store_u32(out, i, load_u32(src, i) + delta);
  return isv_request_complete(req, 0, NULL);
}

static int multi_version_infer(isv_request *req, void *user) {
  return add_const_i32(req, (const int32_t *)user);
}

/* ---- classifier: softmax(W x + b) on iris-like measurements -------------------------------- */

/* A multinomial logistic regression fitted on Fisher's iris data (sepal length, sepal width,
 * petal length, petal width in cm). [5.1,3.5,1.4,0.2] -> setosa 0.98; [5.9,2.8,4.3,1.3] ->
 * versicolor 0.92; [6.7,3.0,5.2,2.3] -> virginica 0.92. */
static const float classifier_w[3][4] = {
    {-0.42f, 0.97f, -2.52f, -1.08f},
    {0.53f, -0.32f, -0.21f, -0.94f},
    {-0.11f, -0.65f, 2.73f, 2.02f},
};
static const float classifier_b[3] = {9.85f, 2.24f, -12.09f};
static const char *const classifier_labels[3] = {"setosa", "versicolor", "virginica"};

static int classifier_infer(isv_request *req, void *user) {
  (void)user;
  const isv_tensor *in = input_or_fail(req, "INPUT0", ISV_FP32);
  if (in == NULL)
    return 0;
  size_t ndim, n = isv_tensor_element_count(in);
  const int64_t *shape = isv_tensor_shape(in, &ndim);
  if (ndim == 0 || ndim > MAX_NDIM || shape[ndim - 1] != 4)
    return isv_request_complete(req, ISV_EBADREQ, "INPUT0 must have shape [batch, 4]");
  size_t rows = n / 4;
  int64_t oshape[MAX_NDIM];
  memcpy(oshape, shape, ndim * sizeof *shape);
  oshape[ndim - 1] = 3;
  void *out;
  int k = make_output(req, "OUTPUT0", ISV_FP32, oshape, ndim, &out);
  if (k < 0)
    return 0;
  const void *x = isv_tensor_data(in);
  for (size_t r = 0; k > 0 && r < rows; r++) {
    float s[3], m = -INFINITY, total = 0.0f;
    for (int c = 0; c < 3; c++) {
      s[c] = classifier_b[c];
      for (int j = 0; j < 4; j++)
        s[c] += classifier_w[c][j] * load_f32(x, r * 4 + (size_t)j);
      m = s[c] > m ? s[c] : m;
    }
    for (int c = 0; c < 3; c++)
      total += (s[c] = expf(s[c] - m)); /* stable softmax; NaN in -> NaN out, never a crash */
    for (int c = 0; c < 3; c++)
      store_f32(out, r * 3 + (size_t)c, s[c] / total);
  }
  return isv_request_complete(req, 0, NULL);
}

/* ---- tf_multi: TF Serving's multi-input examples (seed 000) -----------------------------------
 * Batched (max 8): tag BYTES, signal FP32 [5], sensor INT32 [2,2] per row ->
 * tag_len INT32 (the tag's byte length), signal_sum FP32, sensor_bytes BYTES (the tag echoed:
 * an output named *_bytes, which TF Serving's JSON writes as {"b64": ...}). */

static int tf_multi_infer(isv_request *req, void *user) {
  (void)user;
  const isv_tensor *tag = input_or_fail(req, "tag", ISV_BYTES);
  const isv_tensor *sig = tag ? input_or_fail(req, "signal", ISV_FP32) : NULL;
  const isv_tensor *sen = sig ? input_or_fail(req, "sensor", ISV_INT32) : NULL;
  if (sen == NULL)
    return 0;
  size_t nd, n = isv_tensor_element_count(tag);
  const int64_t *shape = isv_tensor_shape(tag, &nd); /* [batch] */
  if (isv_tensor_element_count(sig) != n * 5 || isv_tensor_element_count(sen) != n * 4)
    return demo_fail(req, ISV_EBADREQ, "tag, signal and sensor must have the same batch size");
  void *len_out, *sum_out, *echo_out;
  int k0 = make_output(req, "tag_len", ISV_INT32, shape, nd, &len_out);
  int k1 = k0 < 0 ? -1 : make_output(req, "signal_sum", ISV_FP32, shape, nd, &sum_out);
  int k2 = k1 < 0 ? -1 : make_output(req, "sensor_bytes", ISV_BYTES, shape, nd, &echo_out);
  if (k2 < 0)
    return 0;
  const isv_bytes *tags = isv_tensor_data(tag);
  const void *signal = isv_tensor_data(sig);
  for (size_t i = 0; i < n; i++) {
    if (k0 > 0)
      ((int32_t *)len_out)[i] = (int32_t)tags[i].len;
    if (k1 > 0) {
      float s = 0;
      for (size_t j = 0; j < 5; j++)
        s += load_f32(signal, i * 5 + j);
      store_f32(sum_out, i, s);
    }
    if (k2 > 0)
      ((isv_bytes *)echo_out)[i] = tags[i]; /* the request's bytes: it outlives the answer */
  }
  return isv_request_complete(req, 0, NULL);
}

/* ---- half_plus_three: y = 0.5 x + 3 ---------------------------------------------------------- */

static int half_plus_three_infer(isv_request *req, void *user) {
  (void)user;
  const isv_tensor *in = input_or_fail(req, "x", ISV_FP32);
  if (in == NULL)
    return 0;
  size_t ndim, n = isv_tensor_element_count(in);
  const int64_t *shape = isv_tensor_shape(in, &ndim);
  void *out;
  int k = make_output(req, "y", ISV_FP32, shape, ndim, &out);
  if (k < 0)
    return 0;
  const void *x = isv_tensor_data(in);
  for (size_t i = 0; k > 0 && i < n; i++)
    store_f32(out, i, 0.5f * load_f32(x, i) + 3.0f);
  return isv_request_complete(req, 0, NULL);
}

/* ---- slow: sleep INPUT0 ms on the thread pool ------------------------------------------------ */

#define SLOW_MAX_MS 60000

int demo_slow_infer(isv_request *req, void *user) {
  (void)user;
  const isv_tensor *in = input_or_fail(req, "INPUT0", ISV_INT32);
  if (in == NULL)
    return 0;
  if (isv_tensor_element_count(in) != 1)
    return isv_request_complete(req, ISV_EBADREQ, "INPUT0 must hold exactly one element");
  int32_t ms = as_i32(load_u32(isv_tensor_data(in), 0));
  if (ms < 0)
    return demo_fail(req, ISV_EBADREQ, "INPUT0 must be >= 0 milliseconds, got %" PRId32, ms);
  /* Pool mode: blocks a worker only. Sleeps in short steps so that a request whose client went
   * away (or whose deadline passed) gives its worker back early. */
  for (int32_t left = ms > SLOW_MAX_MS ? SLOW_MAX_MS : ms; left > 0; left -= 10) {
    if (isv_request_is_cancelled(req))
      return isv_request_complete(req, ISV_ECANCELED, "cancelled by the client");
    uv_sleep(left < 10 ? (unsigned)left : 10);
  }
  return add_const_i32(req, NULL);
}

/* stubborn: as slow, but deaf to cancellation — a backend the server's close must abandon
 * (isv_options_set_drain_timeout_ms), still reading its input and writing its output after. */
static int stubborn_infer(isv_request *req, void *user) {
  (void)user;
  const isv_tensor *in = input_or_fail(req, "INPUT0", ISV_INT32);
  if (in == NULL)
    return 0;
  int32_t ms = as_i32(load_u32(isv_tensor_data(in), 0));
  uv_sleep(ms < 0 ? 0 : ms > SLOW_MAX_MS ? SLOW_MAX_MS : (unsigned)ms);
  return add_const_i32(req, NULL);
}

/* ---- failing, loading ------------------------------------------------------------------------ */

static int failing_infer(isv_request *req, void *user) {
  (void)user;
  return isv_request_complete(req, ISV_EBACKEND, "intentional failure");
}

static int copy_infer(isv_request *req, void *user) {
  (void)user;
  return add_const_i32(req, NULL);
}

/* ---- params_echo: OUTPUT0 = INPUT0, and every request parameter back as a response one ---- */

/* The W3C trace context the request came with, as response parameters "trace_id" and
 * "parent_id" (hex), "trace_flags" and "tracestate" — what a backend hands its runtime. */
void demo_hex(char *out, const uint8_t *b, size_t n) {
  static const char d[] = "0123456789abcdef";
  for (size_t i = 0; i < n; i++)
    out[2 * i] = d[b[i] >> 4], out[2 * i + 1] = d[b[i] & 15];
  out[2 * n] = '\0';
}

static int echo_trace(isv_request *req) {
  isv_trace_context t;
  if (isv_request_trace_context(req, &t) != 0)
    return 0;
  char tid[33], pid[17];
  demo_hex(tid, t.trace_id, 16);
  demo_hex(pid, t.parent_id, 8);
  isv_param v = {.type = ISV_PARAM_STRING, .v.s = {tid, 32}};
  int rc = isv_request_set_response_param(req, "trace_id", &v);
  v.v.s.ptr = pid;
  v.v.s.len = 16;
  if (rc >= 0)
    rc = isv_request_set_response_param(req, "parent_id", &v);
  isv_param f = {.type = ISV_PARAM_INT64, .v.i64 = t.flags};
  if (rc >= 0)
    rc = isv_request_set_response_param(req, "trace_flags", &f);
  if (rc >= 0 && t.tracestate != NULL) {
    v.v.s.ptr = t.tracestate;
    v.v.s.len = strlen(t.tracestate);
    rc = isv_request_set_response_param(req, "tracestate", &v);
  }
  return rc;
}

static int params_echo_infer(isv_request *req, void *user) {
  for (size_t i = 0; i < isv_request_param_count(req); i++) {
    const isv_param *v;
    const char *key = isv_request_param_at(req, i, &v);
    int rc = isv_request_set_response_param(req, key, v);
    if (rc < 0)
      return isv_request_complete(req, rc, "could not set a response parameter");
  }
  if (echo_trace(req) < 0)
    return isv_request_complete(req, ISV_ENOMEM, "could not set a response parameter");
  return copy_infer(req, user);
}

/* ---- registration ---------------------------------------------------------------------------- */

/* demo_zoo_register_picked's pick while it runs (NULL: every model). */
static const demo_zoo_pick *zoo_pick;

/* Whether model `name` is registered now; the pick's `seen` hears of every name. */
static int picked(const char *name) {
  if (zoo_pick == NULL)
    return 1;
  if (zoo_pick->seen)
    zoo_pick->seen(zoo_pick->user, name);
  return zoo_pick->name && strcmp(zoo_pick->name, name) == 0;
}

/* The same, for a call on a model registered above (a label, a state): no `seen`. */
static int registered_now(const char *name) {
  return zoo_pick == NULL || (zoo_pick->name && strcmp(zoo_pick->name, name) == 0);
}

typedef struct {
  const char *name;
  isv_datatype dt;
  int64_t shape[2];
  size_t ndim;
} io_spec;

/* A config with the given inputs and outputs; NULL when out of memory or invalid. */
static isv_model_config *make_config(const char *name, uint32_t max_batch, const io_spec *in,
                                     size_t nin, const io_spec *out, size_t nout) {
  isv_model_config *c;
  if (isv_model_config_new(name, &c) != 0)
    return NULL;
  if (zoo_pick && zoo_pick->max_batch >= 0) /* a config override (repo.c) */
    max_batch = (uint32_t)zoo_pick->max_batch;
  int rc = isv_model_config_set_max_batch(c, max_batch);
  if (rc == 0 && zoo_pick && zoo_pick->response_cache >= 0) /* an override, too */
    rc = isv_model_config_set_response_cache(c, zoo_pick->response_cache);
  for (size_t i = 0; rc == 0 && i < nin; i++)
    rc = isv_model_config_add_input(c, in[i].name, in[i].dt, in[i].shape, in[i].ndim);
  for (size_t i = 0; rc == 0 && i < nout; i++)
    rc = isv_model_config_add_output(c, out[i].name, out[i].dt, out[i].shape, out[i].ndim);
  if (rc < 0) {
    isv_model_config_free(c);
    return NULL;
  }
  return c;
}

static int add_version(isv_server *srv, const isv_model_config *c, const char *version,
                       int (*infer)(isv_request *, void *), const void *user) {
  isv_backend be;
  memset(&be, 0, sizeof be);
  be.struct_size = sizeof be;
  be.infer = infer;
  /* user data is static and read-only: no destroy callback */
  return isv_server_add_model(srv, c, version, &be, (void *)(uintptr_t)user, NULL);
}

/* Register a one-version model whose config is built from the specs. */
static int add_simple_model_n(isv_server *srv, const char *name, const char *version,
                              uint32_t max_batch, const io_spec *in, size_t nin,
                              const io_spec *out, size_t nout, isv_exec_mode mode,
                              uint32_t instances, int (*infer)(isv_request *, void *),
                              const void *user) {
  if (!picked(name))
    return 0;
  isv_model_config *c = make_config(name, max_batch, in, nin, out, nout);
  if (c == NULL)
    return ISV_ENOMEM;
  int rc = isv_model_config_set_exec_mode(c, mode);
  if (rc == 0)
    rc = isv_model_config_set_instances(c, instances);
  if (rc == 0)
    rc = add_version(srv, c, version, infer, user);
  isv_model_config_free(c);
  return rc;
}

static int add_simple_model(isv_server *srv, const char *name, const char *version,
                            uint32_t max_batch, const io_spec *in, size_t nin, const io_spec *out,
                            size_t nout, isv_exec_mode mode,
                            int (*infer)(isv_request *, void *), const void *user) {
  return add_simple_model_n(srv, name, version, max_batch, in, nin, out, nout, mode, 1, infer,
                            user);
}

#define TRY(expr)                                                                                \
  do {                                                                                           \
    int try_rc_ = (expr);                                                                        \
    if (try_rc_ < 0)                                                                             \
      return try_rc_;                                                                            \
  } while (0)

static int register_multi_version(isv_server *srv) {
  static const io_spec in[] = {{"INPUT0", ISV_INT32, {-1}, 1}};
  static const io_spec out[] = {{"OUTPUT0", ISV_INT32, {-1}, 1}};
  static const char *const names[] = {"1", "2", "3"};
  if (!picked("multi_version"))
    return 0;
  isv_model_config *c = make_config("multi_version", 0, in, 1, out, 1);
  if (c == NULL)
    return ISV_ENOMEM;
  int rc = 0;
  for (size_t i = 0; rc == 0 && i < ARRAY_LEN(names); i++)
    rc = add_version(srv, c, names[i], multi_version_infer, &version_numbers[i]);
  isv_model_config_free(c);
  TRY(rc);
  TRY(isv_server_set_label(srv, "multi_version", "stable", "2"));
  TRY(isv_server_set_label(srv, "multi_version", "canary", "3"));
  return isv_server_set_default_version(srv, "multi_version", "3");
}

static int register_classifier(isv_server *srv) {
  static const io_spec in[] = {{"INPUT0", ISV_FP32, {4}, 1}};
  static const io_spec out[] = {{"OUTPUT0", ISV_FP32, {3}, 1}};
  if (!picked("classifier"))
    return 0;
  isv_model_config *c = make_config("classifier", 8, in, 1, out, 1);
  if (c == NULL)
    return ISV_ENOMEM;
  int rc = isv_model_config_set_labels(c, classifier_labels, ARRAY_LEN(classifier_labels));
  if (rc == 0)
    rc = add_version(srv, c, "1", classifier_infer, NULL);
  isv_model_config_free(c);
  return rc;
}

/* half_plus_three as TF Serving's test model: three signatures, the seed's names. */
static int register_half_plus_three(isv_server *srv, const char *name) {
  static const io_spec in[] = {{"x", ISV_FP32, {-1}, 1}};
  static const io_spec out[] = {{"y", ISV_FP32, {-1}, 1}};
  static const char *const x[] = {"x"}, *const y[] = {"y"}, *const outputs[] = {"outputs"},
                           *const scores[] = {"scores"};
  if (!picked(name))
    return 0;
  isv_model_config *c = make_config(name, 0, in, 1, out, 1);
  if (c == NULL)
    return ISV_ENOMEM;
  int rc = isv_model_config_add_signature(c, "serving_default", ISV_SIGNATURE_PREDICT, x, NULL,
                                          1, y, NULL, 1);
  if (rc == 0)
    rc = isv_model_config_add_signature(c, "tensorflow/serving/regress", ISV_SIGNATURE_REGRESS,
                                        x, NULL, 1, y, outputs, 1);
  if (rc == 0)
    rc = isv_model_config_add_signature(c, "tensorflow/serving/classify", ISV_SIGNATURE_CLASSIFY,
                                        x, NULL, 1, y, scores, 1);
  if (rc == 0)
    rc = add_version(srv, c, "123", half_plus_three_infer, NULL);
  isv_model_config_free(c);
  return rc;
}

/* zoo.c's own models: every one, or zoo_pick's. */
static int register_own(isv_server *srv) {
  static const io_spec simple_in[] = {{"INPUT0", ISV_INT32, {16}, 1}, {"INPUT1", ISV_INT32, {16}, 1}};
  static const io_spec simple_out[] = {{"OUTPUT0", ISV_INT32, {16}, 1},
                                       {"OUTPUT1", ISV_INT32, {16}, 1}};
  static const io_spec string_in[] = {{"INPUT0", ISV_BYTES, {16}, 1}, {"INPUT1", ISV_BYTES, {16}, 1}};
  static const io_spec string_out[] = {{"OUTPUT0", ISV_BYTES, {16}, 1},
                                       {"OUTPUT1", ISV_BYTES, {16}, 1}};
  static const io_spec i32_in[] = {{"INPUT0", ISV_INT32, {-1}, 1}};
  static const io_spec i32_out[] = {{"OUTPUT0", ISV_INT32, {-1}, 1}};
  static const io_spec slow_in[] = {{"INPUT0", ISV_INT32, {1}, 1}};
  static const io_spec slow_out[] = {{"OUTPUT0", ISV_INT32, {1}, 1}};

  TRY(add_simple_model(srv, "simple", "1", 8, simple_in, 2, simple_out, 2, ISV_EXEC_INLINE,
                       simple_infer, NULL));
  TRY(add_simple_model(srv, "simple_string", "1", 8, string_in, 2, string_out, 2,
                       ISV_EXEC_INLINE, simple_string_infer, NULL));
  /* Triton's example models of the same names (its client examples call them) */
  static const io_spec int8_in[] = {{"INPUT0", ISV_INT8, {16}, 1}, {"INPUT1", ISV_INT8, {16}, 1}};
  static const io_spec int8_out[] = {{"OUTPUT0", ISV_INT8, {16}, 1},
                                     {"OUTPUT1", ISV_INT8, {16}, 1}};
  TRY(add_simple_model(srv, "simple_int8", "1", 8, int8_in, 2, int8_out, 2, ISV_EXEC_INLINE,
                       simple_int8_infer, NULL));
  static const isv_datatype bytes_dt = ISV_BYTES;
  static const io_spec sid_in[] = {{"INPUT0", ISV_BYTES, {-1}, 1}};
  static const io_spec sid_out[] = {{"OUTPUT0", ISV_BYTES, {-1}, 1}};
  TRY(add_simple_model(srv, "simple_identity", "1", 8, sid_in, 1, sid_out, 1, ISV_EXEC_INLINE,
                       identity_infer, &bytes_dt));

  for (size_t i = 0; i < ARRAY_LEN(identity_types); i++) {
    io_spec in = {"INPUT0", identity_types[i].dt, {-1, -1}, 2};
    io_spec out = {"OUTPUT0", identity_types[i].dt, {-1, -1}, 2};
    TRY(add_simple_model(srv, identity_types[i].model, "1", 0, &in, 1, &out, 1, ISV_EXEC_INLINE,
                         identity_infer, &identity_types[i].dt));
  }

  TRY(register_multi_version(srv));
  TRY(register_classifier(srv));

  TRY(register_half_plus_three(srv, "half_plus_three"));
  if (registered_now("half_plus_three"))
    TRY(isv_server_set_label(srv, "half_plus_three", "stable", "123"));
  static const io_spec tfm_in[] = {{"tag", ISV_BYTES, {0}, 0},
                                   {"signal", ISV_FP32, {5}, 1},
                                   {"sensor", ISV_INT32, {2, 2}, 2}};
  static const io_spec tfm_out[] = {{"tag_len", ISV_INT32, {0}, 0},
                                    {"signal_sum", ISV_FP32, {0}, 0},
                                    {"sensor_bytes", ISV_BYTES, {0}, 0}};
  TRY(add_simple_model(srv, "tf_multi", "1", 8, tfm_in, 3, tfm_out, 3, ISV_EXEC_INLINE,
                       tf_multi_infer, NULL));
  /* the name the TF Serving seed's curl lines use */
  TRY(register_half_plus_three(srv, "saved_model_half_plus_three"));

  /* eight instances: slow requests run side by side (on the demo's 8 worker threads) */
  TRY(add_simple_model_n(srv, "slow", "1", 0, slow_in, 1, slow_out, 1, ISV_EXEC_POOL, 8,
                         demo_slow_infer, NULL));
  TRY(add_simple_model(srv, "stubborn", "1", 0, slow_in, 1, slow_out, 1, ISV_EXEC_POOL,
                       stubborn_infer, NULL));
  TRY(add_simple_model(srv, "failing", "1", 0, i32_in, 1, i32_out, 1, ISV_EXEC_INLINE,
                       failing_infer, NULL));
  TRY(add_simple_model(srv, "params_echo", "1", 0, i32_in, 1, i32_out, 1, ISV_EXEC_INLINE,
                       params_echo_infer, NULL));
  TRY(add_simple_model(srv, "loading", "1", 0, i32_in, 1, i32_out, 1, ISV_EXEC_INLINE,
                       copy_infer, NULL));
  if (registered_now("loading"))
    TRY(isv_server_set_model_state(srv, "loading", "1", ISV_MODEL_LOADING));
  return demo_zoo_register_cache(srv, zoo_pick); /* zoo_cache.c's, reloadable as these */
}

int demo_zoo_register_picked(isv_server *srv, const demo_zoo_pick *pick) {
  zoo_pick = pick;
  int rc = register_own(srv);
  zoo_pick = NULL;
  return rc;
}

int demo_zoo_attach(isv_server *srv, unsigned loop) {
  TRY(demo_routes_register(srv, loop));
  return isv_server_set_default_model(srv, DEMO_DEFAULT_MODEL);
}

int demo_zoo_register(isv_server *srv) {
  TRY(register_own(srv));
  TRY(demo_zoo_register_triton(srv));
  TRY(demo_zoo_register_grps(srv));
  TRY(demo_zoo_register_openai(srv));
  TRY(demo_zoo_register_ensembles(srv));
  TRY(demo_routes_register(srv, 0));
  return demo_zoo_register_scheduling(srv);
}
