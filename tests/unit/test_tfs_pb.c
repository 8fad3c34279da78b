/* protocol/tfs_pb.c: TF Serving's gRPC messages without sockets. ModelSpec (name, the version
 * wrapper, a label, the oneof's last choice, merged repeats, malformed); TensorProto → tensor for
 * every dtype from its typed field (packed and unpacked) and from tensor_content (in place when
 * aligned, copied when not), TF's fill-out of a short typed field, and every refusal (complex,
 * resource, unknown dtype numbers, another dtype's field, too many / no values, out of range,
 * unknown rank, negative or too many dimensions, content of the wrong size or for strings,
 * content and values both, the limit on a filled-out tensor); binding (Missing ModelSpec, TF's
 * "Servable not found" texts, an unknown signature's FAILED_PRECONDITION); PredictRequest's
 * aliases, output_filter, a repeated map key (the last wins) and TF's input-size text; and the
 * encoders: PredictResponse (aliases, dtype, shape, small outputs copied, large ones referenced
 * where they are, model_spec), GetModelMetadataResponse (an Any of a SignatureDefMap) and
 * GetModelStatusResponse; tf.Example inputs of Classify / Regress (the signature's method, the
 * context, features no input has or missing, a list that cannot feed the input, no examples)
 * and the ClassificationResponse; MultiInference's tasks (one model, distinct signatures of
 * the task's method, a known method) and its InferenceResults. Messages are built and read with a tiny protobuf writer and parser
 * below, written from the wire-format rules, independent of the code under test. */
#include "cmocka_prelude.h"

#include <stdlib.h>
#include <string.h>

#include "core/lifecycle.h"
#include "core/request.h"
#include "protocol/tfs_pb.h"

static uv_loop_t loop;
static isv__core core;

static int noop(isv_request *r, void *u) {
  (void)r;
  (void)u;
  return 0;
}

/* Model "m", versions 1 and 2: inputs x (FP32 [-1]) and w (INT32 [-1]), output y (FP32 [-1]);
 * signatures serving_default (w → y) and cls (w as "weights", y as "scores"). */
static int setup(void **state) {
  (void)state;
  uv_loop_init(&loop);
  isv_options o;
  isv__options_defaults(&o);
  if (isv__core_init(&core, &loop, &o) != 0) return -1;
  isv_model_config *c;
  isv_model_config_new("m", &c);
  int64_t s[] = {-1};
  isv_model_config_add_input(c, "x", ISV_FP32, s, 1);
  isv_model_config_add_input(c, "w", ISV_INT32, s, 1);
  isv_model_config_add_output(c, "y", ISV_FP32, s, 1);
  static const char *const in[] = {"w"}, *const in_alias[] = {"weights"}, *const out[] = {"y"},
                           *const out_alias[] = {"scores"};
  isv_model_config_add_signature(c, "serving_default", ISV_SIGNATURE_PREDICT, in, NULL, 1, out,
                                 NULL, 1);
  isv_model_config_add_signature(c, "cls", ISV_SIGNATURE_CLASSIFY, in, in_alias, 1, out,
                                 out_alias, 1);
  isv_backend be = {.struct_size = sizeof be, .infer = noop};
  isv_model *m;
  int rc = isv__registry_add(&core.reg, c, "1", &be, NULL, &m) ||
           isv__registry_add(&core.reg, c, "2", &be, NULL, &m);
  isv_model_config_free(c);
  return rc;
}

static int teardown(void **state) {
  (void)state;
  isv__registry_remove(&core.reg, "m", NULL);
  isv__core_close(&core, NULL);
  uv_run(&loop, UV_RUN_DEFAULT);
  return uv_loop_close(&loop);
}

/* ---- protobuf writer ------------------------------------------------------------------------ */

typedef struct pbw {
  uint8_t *p;
  size_t n, cap;
} pbw;

static void w_put(pbw *w, const void *s, size_t n) {
  if (w->n + n + 1 > w->cap) {
    size_t cap = w->cap ? w->cap : 64;
    while (cap < w->n + n + 1) cap *= 2;
    w->p = realloc(w->p, cap);
    assert_non_null(w->p);
    w->cap = cap;
  }
  if (n) memcpy(w->p + w->n, s, n);
  w->n += n;
}

static void w_varint(pbw *w, uint64_t v) {
  do {
    uint8_t b = (uint8_t)(v & 0x7f);
    v >>= 7;
    if (v) b |= 0x80;
    w_put(w, &b, 1);
  } while (v);
}

static void w_key(pbw *w, unsigned num, unsigned wt) { w_varint(w, (uint64_t)num << 3 | wt); }
static void w_vint(pbw *w, unsigned num, uint64_t v) {
  w_key(w, num, 0);
  w_varint(w, v);
}
static void w_bytes(pbw *w, unsigned num, const void *s, size_t n) {
  w_key(w, num, 2);
  w_varint(w, n);
  w_put(w, s, n);
}
static void w_str(pbw *w, unsigned num, const char *s) { w_bytes(w, num, s, strlen(s)); }
static void w_msg(pbw *w, unsigned num, pbw *inner) {
  w_bytes(w, num, inner->p, inner->n);
  free(inner->p);
  memset(inner, 0, sizeof *inner);
}
static void w_free(pbw *w) {
  free(w->p);
  memset(w, 0, sizeof *w);
}

/* TensorShapeProto of dims into field 2 of w. */
static void w_shape(pbw *w, const int64_t *dims, size_t n) {
  pbw s = {0};
  for (size_t i = 0; i < n; i++) {
    pbw d = {0};
    w_vint(&d, 1, (uint64_t)dims[i]);
    w_msg(&s, 2, &d);
  }
  w_msg(w, 2, &s);
}

/* ModelSpec into field 1: version < 0: none. */
static void w_spec(pbw *w, const char *name, long long version, const char *label,
                   const char *sig) {
  pbw s = {0};
  if (name) w_str(&s, 1, name);
  if (version >= 0) {
    pbw v = {0};
    w_vint(&v, 1, (uint64_t)version);
    w_msg(&s, 2, &v);
  }
  if (label) w_str(&s, 4, label);
  if (sig) w_str(&s, 3, sig);
  w_msg(w, 1, &s);
}

/* ---- protobuf parser ------------------------------------------------------------------------ */

typedef struct prd {
  const uint8_t *p, *end;
} prd;

static uint64_t p_varint(prd *r) {
  uint64_t v = 0;
  for (int shift = 0; r->p < r->end; shift += 7) {
    uint8_t b = *r->p++;
    v |= (uint64_t)(b & 0x7f) << shift;
    if (!(b & 0x80)) break;
  }
  return v;
}

static int p_field(prd *r, unsigned *num, uint64_t *v, const uint8_t **s, size_t *n) {
  if (r->p >= r->end) return 0;
  uint64_t k = p_varint(r);
  *num = (unsigned)(k >> 3);
  switch (k & 7) {
  case 0: *v = p_varint(r); return 1;
  case 2:
    *n = (size_t)p_varint(r);
    *s = r->p;
    r->p += *n;
    return 1;
  case 5: *s = r->p; *n = 4; r->p += 4; return 1;
  case 1: *s = r->p; *n = 8; r->p += 8; return 1;
  default: fail(); return 0;
  }
}

/* The first field num of (s, n): its span (LEN) or value. */
static int p_find(const uint8_t *s, size_t n, unsigned want, const uint8_t **fs, size_t *fn,
                  uint64_t *fv) {
  if (fs) *fs = NULL;
  if (fn) *fn = 0;
  if (fv) *fv = 0;
  prd r = {s, s + n};
  unsigned num;
  uint64_t v = 0;
  const uint8_t *x = NULL;
  size_t xn = 0;
  while (p_field(&r, &num, &v, &x, &xn))
    if (num == want) {
      if (fs) *fs = x;
      if (fn) *fn = xn;
      if (fv) *fv = v;
      return 1;
    }
  return 0;
}

/* ---- ModelSpec ------------------------------------------------------------------------------ */

static void model_spec(void **state) {
  (void)state;
  isv__tfs_spec s;
  pbw w = {0};
  w_spec(&w, "half", 123, NULL, "sig");
  assert_int_equal(isv__tfs_pb_spec(w.p, w.n, 1, &s), 1);
  assert_int_equal(s.name.n, 4);
  assert_memory_equal(s.name.p, "half", 4);
  assert_true(s.has_version && !s.has_label);
  assert_int_equal(s.version, 123);
  assert_memory_equal(s.signature.p, "sig", 3);
  /* the oneof: a label after the version replaces it, and a repeated spec merges */
  w_spec(&w, NULL, -1, "stable", NULL);
  assert_int_equal(isv__tfs_pb_spec(w.p, w.n, 1, &s), 1);
  assert_true(s.has_label && !s.has_version);
  assert_memory_equal(s.label.p, "stable", 6);
  assert_memory_equal(s.name.p, "half", 4); /* kept from the first */
  w_free(&w);
  /* an empty Int64Value is version 0; no spec; malformed */
  pbw v = {0}, e = {0};
  w_bytes(&w, 1, "\x12\x00", 2);
  assert_int_equal(isv__tfs_pb_spec(w.p, w.n, 1, &s), 1);
  assert_true(s.has_version);
  assert_int_equal(s.version, 0);
  w_free(&w);
  w_str(&w, 3, "filter");
  assert_int_equal(isv__tfs_pb_spec(w.p, w.n, 1, &s), 0);
  w_free(&w);
  w_vint(&w, 1, 5); /* model_spec as a varint */
  assert_int_equal(isv__tfs_pb_spec(w.p, w.n, 1, &s), -1);
  w_free(&w);
  w_bytes(&w, 1, "\x0a\x05" "ab", 4); /* a name past the end */
  assert_int_equal(isv__tfs_pb_spec(w.p, w.n, 1, &s), -1);
  w_free(&w);
  w_free(&v);
  w_free(&e);
}

/* ---- TensorProto ---------------------------------------------------------------------------- */

/* Decode (p, n) as one TensorProto into *t; returns the request (to free) with its status. */
static isv_request *decode(const pbw *w, isv_tensor *t) {
  isv_request *r = isv__request_new(&core);
  assert_non_null(r);
  memset(t, 0, sizeof *t);
  isv__tfs_pb_decode_tensor(r, (isv__pb_span){w->p, w->n}, "in", t);
  return r;
}

static void expect_error(const pbw *w, int code, const char *needle) {
  isv_tensor t;
  isv_request *r = decode(w, &t);
  if (r->status != code || strstr(r->errmsg, needle) == NULL)
    fail_msg("expected %d '%s', got %d '%s'", code, needle, r->status, r->errmsg);
  isv_request_free(r);
}

typedef struct dt_case {
  int tf;            /* DataType number */
  isv_datatype dt;
  unsigned field;    /* its typed field */
  int kind;          /* 0 varint, 4 fixed32, 8 fixed64 */
  uint64_t vals[3];  /* wire values */
  uint8_t want[24];  /* little-endian elements */
  size_t want_n;
} dt_case;

static const dt_case dt_cases[] = {
    {1, ISV_FP32, 5, 4, {0x3fc00000, 0xc0100000, 0}, {0, 0, 0xc0, 0x3f, 0, 0, 0x10, 0xc0, 0, 0, 0, 0}, 12},
    {2, ISV_FP64, 6, 8, {0x3ff8000000000000ull, 1, 0},
     {0, 0, 0, 0, 0, 0, 0xf8, 0x3f, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, 24},
    {3, ISV_INT32, 7, 0, {(uint64_t)-2, 0x7fffffff, 5}, {0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, 5, 0, 0, 0}, 12},
    {4, ISV_UINT8, 7, 0, {0, 255, 7}, {0, 255, 7}, 3},
    {5, ISV_INT16, 7, 0, {(uint64_t)-32768, 32767, 1}, {0, 0x80, 0xff, 0x7f, 1, 0}, 6},
    {6, ISV_INT8, 7, 0, {(uint64_t)-128, 127, 0}, {0x80, 0x7f, 0}, 3},
    {9, ISV_INT64, 10, 0, {(uint64_t)-1, 1ull << 40, 0},
     {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, 24},
    {10, ISV_BOOL, 11, 0, {1, 0, 1}, {1, 0, 1}, 3},
    {14, ISV_BF16, 13, 0, {0x3f80, 0xc000, 0}, {0x80, 0x3f, 0, 0xc0, 0, 0}, 6},
    {17, ISV_UINT16, 7, 0, {65535, 0, 1}, {0xff, 0xff, 0, 0, 1, 0}, 6},
    {19, ISV_FP16, 13, 0, {0x3c00, (uint64_t)-16384 /* 0xc000 sign-extended */, 1},
     {0, 0x3c, 0, 0xc0, 1, 0}, 6},
    {22, ISV_UINT32, 16, 0, {0xffffffffu, 0, 2}, {0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, 2, 0, 0, 0}, 12},
    {23, ISV_UINT64, 17, 0, {~0ull, 0, 3},
     {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0}, 24},
};

/* dtype, shape [3], the three values packed (or each in a field of its own). */
static void w_typed(pbw *w, const dt_case *c, int packed) {
  int64_t dims[] = {3};
  w_vint(w, 1, (uint64_t)c->tf);
  w_shape(w, dims, 1);
  pbw v = {0};
  for (int i = 0; i < 3; i++) {
    if (c->kind == 0) {
      if (packed) w_varint(&v, c->vals[i]);
      else w_vint(w, c->field, c->vals[i]);
    } else {
      uint8_t b[8];
      for (int k = 0; k < c->kind; k++) b[k] = (uint8_t)(c->vals[i] >> (8 * k));
      if (packed) {
        w_put(&v, b, (size_t)c->kind);
      } else {
        w_key(w, c->field, c->kind == 4 ? 5 : 1);
        w_put(w, b, (size_t)c->kind);
      }
    }
  }
  if (packed) w_msg(w, c->field, &v);
  else w_free(&v);
}

static void every_dtype(void **state) {
  (void)state;
  for (size_t i = 0; i < sizeof dt_cases / sizeof dt_cases[0]; i++) {
    const dt_case *c = &dt_cases[i];
    for (int packed = 0; packed < 2; packed++) {
      pbw w = {0};
      w_typed(&w, c, packed);
      isv_tensor t;
      isv_request *r = decode(&w, &t);
      if (r->status) fail_msg("dtype %d: %s", c->tf, r->errmsg);
      assert_int_equal(t.dt, c->dt);
      assert_int_equal(t.ndim, 1);
      assert_int_equal(t.shape[0], 3);
      assert_int_equal(t.count, 3);
      assert_int_equal(t.byte_size, c->want_n);
      assert_memory_equal(t.data, c->want, c->want_n);
      isv_request_free(r);
      w_free(&w);
    }
    /* the same bytes as tensor_content */
    pbw w = {0};
    int64_t dims[] = {3};
    w_vint(&w, 1, (uint64_t)c->tf);
    w_shape(&w, dims, 1);
    w_bytes(&w, 4, c->want, c->want_n);
    isv_tensor t;
    isv_request *r = decode(&w, &t);
    assert_int_equal(r->status, 0);
    assert_memory_equal(t.data, c->want, c->want_n);
    isv_request_free(r);
    w_free(&w);
  }
}

static void strings_point_into_the_message(void **state) {
  (void)state;
  pbw w = {0};
  int64_t dims[] = {1, 3};
  w_vint(&w, 1, 7);
  w_shape(&w, dims, 2);
  w_str(&w, 8, "ab");
  w_bytes(&w, 8, "", 0);
  w_bytes(&w, 8, "\0z", 2);
  isv_tensor t;
  isv_request *r = decode(&w, &t);
  assert_int_equal(r->status, 0);
  assert_int_equal(t.dt, ISV_BYTES);
  const isv_bytes *b = t.data;
  assert_int_equal(t.count, 3);
  assert_int_equal(b[0].len, 2);
  assert_memory_equal(b[0].ptr, "ab", 2);
  assert_true((const uint8_t *)b[0].ptr > w.p && (const uint8_t *)b[0].ptr < w.p + w.n);
  assert_int_equal(b[1].len, 0);
  assert_int_equal(b[2].len, 2);
  assert_int_equal(t.byte_size, 4);
  isv_request_free(r);
  w_free(&w);
}

static void content_in_place_when_aligned(void **state) {
  (void)state;
  float vals[4] = {1, 2, 3, 4};
  for (int pad = 0; pad < 2; pad++) {
    pbw w = {0};
    /* content first: its bytes start at offset 2 (misaligned for FP32); after a two-byte
     * version_number field, at 4 (aligned: the buffer is malloc's) */
    if (pad) w_vint(&w, 3, 0);
    w_bytes(&w, 4, vals, sizeof vals);
    w_vint(&w, 1, 1);
    int64_t dims[] = {4};
    w_shape(&w, dims, 1);
    isv_tensor t;
    isv_request *r = decode(&w, &t);
    assert_int_equal(r->status, 0);
    assert_memory_equal(t.data, vals, sizeof vals);
    const uint8_t *at = w.p + (pad ? 4 : 2);
    if (pad) assert_ptr_equal(t.data, at); /* used in place */
    else assert_ptr_not_equal(t.data, at); /* copied once */
    isv_request_free(r);
    w_free(&w);
  }
}

static void short_typed_field_is_filled(void **state) {
  (void)state;
  pbw w = {0};
  int64_t dims[] = {2, 3};
  w_vint(&w, 1, 3);
  w_shape(&w, dims, 2);
  w_vint(&w, 7, 7);
  w_vint(&w, 7, 9);
  isv_tensor t;
  isv_request *r = decode(&w, &t);
  assert_int_equal(r->status, 0);
  static const int32_t want[] = {7, 9, 9, 9, 9, 9};
  assert_memory_equal(t.data, want, sizeof want);
  isv_request_free(r);
  w_free(&w);
  /* a scalar (no shape): one element; an empty shape [0] takes no values */
  w_vint(&w, 1, 1);
  w_bytes(&w, 5, "\x00\x00\x80\x3f", 4);
  r = decode(&w, &t);
  assert_int_equal(r->status, 0);
  assert_int_equal(t.ndim, 0);
  assert_int_equal(t.count, 1);
  isv_request_free(r);
  w_free(&w);
  int64_t zero[] = {0};
  w_vint(&w, 1, 1);
  w_shape(&w, zero, 1);
  r = decode(&w, &t);
  assert_int_equal(r->status, 0);
  assert_int_equal(t.count, 0);
  isv_request_free(r);
  w_free(&w);
  /* the filled-out size counts against max_body_bytes */
  size_t keep = core.opts.max_body_bytes;
  core.opts.max_body_bytes = 1000;
  int64_t big[] = {1000};
  w_vint(&w, 1, 1);
  w_shape(&w, big, 1);
  w_bytes(&w, 5, "\x00\x00\x80\x3f", 4);
  expect_error(&w, ISV_ETOOBIG, "exceed the server's limit of 1000 bytes");
  core.opts.max_body_bytes = keep;
  w_free(&w);
}

static void refusals(void **state) {
  (void)state;
  static const int64_t one[] = {1}, two[] = {2}, neg[] = {-1};
  static const struct {
    int dtype;
    unsigned field;
    int kind; /* 0 varint value, 2 bytes */
    const char *bytes;
    size_t n;
    uint64_t v;
    const int64_t *dims;
    const char *needle;
  } cases[] = {
      {8, 9, 2, "\0\0\0\0\0\0\0\0", 8, 0, one, "dtype DT_COMPLEX64 is not supported"},
      {18, 12, 2, "", 0, 0, one, "dtype DT_COMPLEX128 is not supported"},
      {20, 0, 0, NULL, 0, 0, one, "dtype DT_RESOURCE is not supported"},
      {21, 0, 0, NULL, 0, 0, one, "dtype DT_VARIANT is not supported"},
      {11, 0, 0, NULL, 0, 0, one, "dtype DT_QINT8 is not supported"},
      {0, 0, 0, NULL, 0, 0, one, "dtype DT_INVALID is not supported"},
      {99, 0, 0, NULL, 0, 0, one, "dtype 99 is not a TensorFlow DataType"},
      {1, 7, 0, NULL, 0, 1, one, "int_val given for dtype DT_FLOAT (its values go in float_val)"},
      {3, 10, 0, NULL, 0, 1, one, "int64_val given for dtype DT_INT32"},
      {1, 0, 0, NULL, 0, 0, one, "no values: the shape holds 1"},
      {1, 5, 2, "\0\0\0\0\0\0\0\0\0\0\0\0", 12, 0, two, "float_val has 3 values, the shape holds 2"},
      {6, 7, 0, NULL, 0, 128, one, "value 128 is out of range for DT_INT8"},
      {4, 7, 0, NULL, 0, (uint64_t)-1, one, "value -1 is out of range for DT_UINT8"},
      {3, 7, 0, NULL, 0, 1ull << 32, one, "value 4294967296 is out of range for DT_INT32"},
      {22, 16, 0, NULL, 0, 1ull << 32, one, "out of range for DT_UINT32"},
      {19, 13, 0, NULL, 0, 65536, one, "value 65536 is out of range for DT_HALF"},
      {1, 4, 2, "abc", 3, 0, one, "tensor_content has 3 bytes, the shape holds 1 of 4 bytes each"},
      {7, 4, 2, "abcd", 4, 0, one, "DT_STRING values go in string_val, not tensor_content"},
      {1, 5, 2, "abc", 3, 0, one, "malformed float_val"},
      {1, 6, 0, NULL, 0, 1, one, "malformed double_val"},
      {1, 0, 0, NULL, 0, 0, neg, "dimension 0 of size -1"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    pbw w = {0};
    w_vint(&w, 1, (uint64_t)cases[i].dtype);
    w_shape(&w, cases[i].dims, 1);
    if (cases[i].field && cases[i].kind == 2) w_bytes(&w, cases[i].field, cases[i].bytes, cases[i].n);
    else if (cases[i].field) w_vint(&w, cases[i].field, cases[i].v);
    expect_error(&w, ISV_EBADREQ, cases[i].needle);
    w_free(&w);
  }
  pbw w = {0};
  w_vint(&w, 1, 1);
  w_bytes(&w, 4, "\0\0\0\0", 4);
  w_bytes(&w, 5, "\0\0\0\0", 4);
  expect_error(&w, ISV_EBADREQ, "both tensor_content and typed values are set");
  w_free(&w);
  w_vint(&w, 1, 1);
  w_bytes(&w, 2, "\x18\x01", 2);
  expect_error(&w, ISV_EBADREQ, "unknown_rank");
  w_free(&w);
  int64_t dims[40];
  for (int i = 0; i < 40; i++) dims[i] = 1;
  w_vint(&w, 1, 1);
  w_shape(&w, dims, 40);
  expect_error(&w, ISV_EBADREQ, "more than 32 dimensions");
  w_free(&w);
  int64_t huge[] = {1ll << 40, 1ll << 40};
  w_vint(&w, 1, 1);
  w_shape(&w, huge, 2);
  expect_error(&w, ISV_EBADREQ, "overflows");
  w_free(&w);
  w_bytes(&w, 1, "x", 1); /* dtype as bytes */
  expect_error(&w, ISV_EBADREQ, "malformed dtype");
  w_free(&w);
  w_put(&w, "\x0a\x05", 2); /* truncated */
  expect_error(&w, ISV_EBADREQ, "malformed TensorProto");
  w_free(&w);
}

/* ---- binding and PredictRequest ------------------------------------------------------------- */

static isv_request *bind_spec(const pbw *w, int expect_status, const char *needle) {
  isv_request *r = isv__request_new(&core);
  assert_non_null(r);
  isv__tfs_pb_bind(r, w->p, w->n, ISV__TFS_PREDICT);
  if (r->status != expect_status || (needle && strstr(r->errmsg, needle) == NULL))
    fail_msg("expected %d '%s', got %d '%s'", expect_status, needle ? needle : "", r->status,
             r->errmsg);
  return r;
}

static void binding(void **state) {
  (void)state;
  pbw w = {0};
  isv_request_free(bind_spec(&w, ISV_EBADREQ, "Missing ModelSpec"));
  w_spec(&w, "zz", -1, NULL, NULL);
  isv_request *r = bind_spec(&w, ISV_ENOTFOUND, "Servable not found for request: Latest(zz)");
  assert_null(r->model_name); /* the core keeps this answer: no model named */
  assert_int_equal(isv__request_bind(r), ISV_ENOTFOUND);
  assert_string_equal(r->errmsg, "Servable not found for request: Latest(zz)");
  isv_request_free(r);
  w_free(&w);
  w_spec(&w, "m", 5, NULL, NULL);
  isv_request_free(bind_spec(&w, ISV_ENOTFOUND, "Servable not found for request: Specific(m, 5)"));
  w_free(&w);
  w_spec(&w, "m", -1, "nolabel", NULL);
  isv_request_free(bind_spec(&w, ISV_EBADREQ, "Unrecognized servable version label: nolabel"));
  w_free(&w);
  w_spec(&w, "m", 1, NULL, "nope");
  isv_request_free(bind_spec(&w, ISV_ESTATE, "Serving signature key \"nope\" not found."));
  w_free(&w);
  w_spec(&w, "m", 1, NULL, "cls");
  r = bind_spec(&w, 0, NULL);
  assert_string_equal(r->model->version, "1");
  const isv__tfs_call *c = r->fe_data;
  assert_string_equal(c->sig_name, "cls");
  assert_string_equal(c->sig->name, "cls");
  isv_request_free(r);
  w_free(&w);
  w_spec(&w, "m", -1, NULL, NULL);
  r = bind_spec(&w, 0, NULL);
  assert_string_equal(r->model->version, "2"); /* the default version */
  assert_string_equal(((const isv__tfs_call *)r->fe_data)->sig_name, "serving_default");
  isv_request_free(r);
  w_free(&w);
}

/* An inputs entry: alias → INT32 [1] int_val v. */
static void w_input(pbw *w, const char *alias, int v) {
  pbw e = {0}, t = {0};
  int64_t one[] = {1};
  w_vint(&t, 1, 3);
  w_shape(&t, one, 1);
  w_vint(&t, 7, (uint64_t)v);
  w_str(&e, 1, alias);
  w_msg(&e, 2, &t);
  w_msg(w, 2, &e);
}

static isv_request *predict(const pbw *w) {
  isv_request *r = bind_spec(w, 0, NULL);
  isv__tfs_pb_decode_predict(r, w->p, w->n);
  return r;
}

static void predict_request(void **state) {
  (void)state;
  pbw w = {0};
  w_spec(&w, "m", 1, NULL, "cls");
  w_input(&w, "weights", 1);
  w_input(&w, "weights", 2); /* a map key repeated: the last entry wins */
  w_str(&w, 3, "scores");
  isv_request *r = predict(&w);
  assert_int_equal(r->status, 0);
  assert_int_equal(r->n_inputs, 1);
  assert_string_equal(r->inputs[0].name, "w"); /* the model's name behind the alias */
  assert_int_equal(*(const int32_t *)r->inputs[0].data, 2);
  assert_int_equal(r->n_req_outputs, 1);
  assert_string_equal(r->req_outputs[0].name, "y");
  isv_request_free(r);
  w_free(&w);
  /* TF Serving's texts: extra and missing inputs, unknown and duplicate output aliases */
  w_spec(&w, "m", 1, NULL, "cls");
  w_input(&w, "x", 1);
  w_input(&w, "b", 1);
  r = predict(&w);
  assert_int_equal(r->status, ISV_EBADREQ);
  assert_string_equal(r->errmsg, "input size does not match signature: 2!=1 len({b,x}) != "
                                 "len({weights}). Sent extra: {b,x}. Missing but required: "
                                 "{weights}.");
  isv_request_free(r);
  w_free(&w);
  w_spec(&w, "m", 1, NULL, "cls");
  w_input(&w, "weights", 1);
  w_str(&w, 3, "y");
  r = predict(&w);
  assert_string_equal(r->errmsg, "output tensor alias not found in signature: y Outputs expected "
                                 "to be in the set {scores}.");
  isv_request_free(r);
  w_free(&w);
  w_spec(&w, "m", 1, NULL, "cls");
  w_input(&w, "weights", 1);
  w_str(&w, 3, "scores");
  w_str(&w, 3, "scores");
  r = predict(&w);
  assert_string_equal(r->errmsg, "duplicate output tensor alias: scores");
  isv_request_free(r);
  w_free(&w);
  /* a bad tensor is named by its alias; a failed bind is left as it is */
  w_spec(&w, "m", 1, NULL, "cls");
  pbw e = {0};
  w_str(&e, 1, "weights");
  w_bytes(&e, 2, "\x08\x08", 2);
  w_msg(&w, 2, &e);
  r = predict(&w);
  assert_string_equal(r->errmsg, "input 'weights': dtype DT_COMPLEX64 is not supported");
  isv_request_free(r);
  w_free(&w);
  w_spec(&w, "m", 1, NULL, "nope");
  r = bind_spec(&w, ISV_ESTATE, NULL);
  assert_int_equal(isv__tfs_pb_decode_predict(r, w.p, w.n), ISV_ESTATE);
  assert_string_equal(r->errmsg, "Serving signature key \"nope\" not found.");
  isv_request_free(r);
  w_free(&w);
}

/* ---- encoders ------------------------------------------------------------------------------- */

static void predict_response(void **state) {
  (void)state;
  pbw w = {0};
  w_spec(&w, "m", 1, NULL, "cls");
  isv_request *r = bind_spec(&w, 0, NULL);
  w_free(&w);
  static float small[2] = {1.5f, -2.0f}, large[1000];
  for (int i = 0; i < 1000; i++) large[i] = (float)i;
  static int64_t s2[] = {2}, s1000[] = {1, 1000};
  static isv_bytes strs[2] = {{"ab", 2}, {"", 0}};
  isv_tensor *o = isv__arena_calloc(&r->arena, 3, sizeof *o);
  o[0] = (isv_tensor){.name = "y", .dt = ISV_FP32, .shape = s2, .ndim = 1, .data = small,
                      .count = 2, .byte_size = 8};
  o[1] = (isv_tensor){.name = "big", .dt = ISV_FP32, .shape = s1000, .ndim = 2, .data = large,
                      .count = 1000, .byte_size = 4000};
  o[2] = (isv_tensor){.name = "s", .dt = ISV_BYTES, .shape = s2, .ndim = 1, .data = strs,
                      .count = 2, .byte_size = 2};
  r->outputs = o;
  r->n_outputs = 3;
  isv__parts parts;
  assert_int_equal(isv__tfs_pb_encode_predict(r, &parts), 0);
  /* the large output is referenced where it is; the rest is in the arena */
  int referenced = 0;
  size_t total = 0;
  for (size_t i = 0; i < parts.n; i++) {
    referenced += parts.v[i].base == (char *)large && parts.v[i].len == 4000;
    total += parts.v[i].len;
  }
  assert_int_equal(referenced, 1);
  assert_int_equal(total, parts.total);
  uint8_t *msg = malloc(total);
  size_t at = 0;
  for (size_t i = 0; i < parts.n; i++) {
    memcpy(msg + at, parts.v[i].base, parts.v[i].len);
    at += parts.v[i].len;
  }
  prd q = {msg, msg + total};
  unsigned num;
  uint64_t v;
  const uint8_t *s;
  size_t n;
  int seen = 0;
  while (p_field(&q, &num, &v, &s, &n)) {
    if (num == 2) { /* model_spec */
      const uint8_t *x;
      size_t xn;
      uint64_t ver;
      assert_true(p_find(s, n, 1, &x, &xn, NULL));
      assert_int_equal(xn, 1);
      assert_memory_equal(x, "m", 1);
      assert_true(p_find(s, n, 2, &x, &xn, NULL));
      assert_true(p_find(x, xn, 1, NULL, NULL, &ver));
      assert_int_equal(ver, 1);
      assert_true(p_find(s, n, 3, &x, &xn, NULL));
      assert_memory_equal(x, "cls", 3);
      seen |= 1;
      continue;
    }
    assert_int_equal(num, 1);
    const uint8_t *k, *tp, *c;
    size_t kn, tn, cn;
    uint64_t dt;
    assert_true(p_find(s, n, 1, &k, &kn, NULL));
    assert_true(p_find(s, n, 2, &tp, &tn, NULL));
    assert_true(p_find(tp, tn, 1, NULL, NULL, &dt));
    if (kn == 6 && memcmp(k, "scores", 6) == 0) { /* "y" by its alias */
      assert_int_equal(dt, 1);
      assert_true(p_find(tp, tn, 4, &c, &cn, NULL));
      assert_int_equal(cn, 8);
      assert_memory_equal(c, small, 8);
      const uint8_t *sh, *dim;
      size_t shn, dimn;
      uint64_t size;
      assert_true(p_find(tp, tn, 2, &sh, &shn, NULL));
      assert_true(p_find(sh, shn, 2, &dim, &dimn, NULL));
      assert_true(p_find(dim, dimn, 1, NULL, NULL, &size));
      assert_int_equal(size, 2);
      seen |= 2;
    } else if (kn == 3 && memcmp(k, "big", 3) == 0) {
      assert_true(p_find(tp, tn, 4, &c, &cn, NULL));
      assert_int_equal(cn, 4000);
      assert_memory_equal(c, large, 4000);
      seen |= 4;
    } else {
      assert_int_equal(kn, 1);
      assert_int_equal(dt, 7);
      assert_false(p_find(tp, tn, 4, NULL, NULL, NULL)); /* strings: string_val */
      assert_true(p_find(tp, tn, 8, &c, &cn, NULL));
      assert_int_equal(cn, 2);
      assert_memory_equal(c, "ab", 2);
      seen |= 8;
    }
  }
  assert_int_equal(seen, 15);
  free(msg);
  isv_request_free(r);
}

/* An Example {features {feature {key: Feature {list: value (v, n)}}}} as field num of w: list
 * 1 bytes_list (one value), 2 float_list, 3 int64_list (v packed). */
static void w_example(pbw *w, unsigned num, const char *key, int list, const void *v, size_t n) {
  pbw fl = {0}, ft = {0}, entry = {0}, feats = {0}, ex = {0};
  w_bytes(&fl, 1, v, n);
  w_msg(&ft, (unsigned)list, &fl);
  w_str(&entry, 1, key);
  w_msg(&entry, 2, &ft);
  w_msg(&feats, 1, &entry);
  w_msg(&ex, 1, &feats);
  w_msg(w, num, &ex);
}

static isv_request *examples(int kind, const char *sig, pbw *list, int with_context) {
  pbw w = {0}, input = {0};
  w_spec(&w, "m", 1, NULL, sig);
  w_msg(&input, with_context ? 2 : 1, list);
  w_msg(&w, 2, &input);
  isv_request *r = isv__request_new(&core);
  isv__tfs_pb_bind(r, w.p, w.n, kind);
  assert_int_equal(r->status, 0);
  isv__tfs_pb_decode_examples(r, w.p, w.n);
  r->body = w.p; /* the inputs point into it: freed with the request */
  r->body_len = w.n;
  r->body_free = free;
  return r;
}

static void classify_and_regress(void **state) {
  (void)state;
  /* two examples of "weights" (int64_list), the context's ignored where an example has it */
  pbw list = {0};
  w_example(&list, 1, "weights", 3, "\x03", 1);
  w_example(&list, 1, "weights", 3, "\x7c", 1); /* 124 */
  w_example(&list, 2, "weights", 3, "\x09", 1);
  isv_request *r = examples(ISV__TFS_CLASSIFY, "cls", &list, 1);
  if (r->status) fail_msg("%s", r->errmsg);
  assert_int_equal(r->n_inputs, 1);
  assert_string_equal(r->inputs[0].name, "w");
  assert_int_equal(r->inputs[0].ndim, 1); /* w is [-1]: one value per example */
  assert_int_equal(r->inputs[0].shape[0], 2);
  static const int32_t want[] = {3, 124};
  assert_memory_equal(r->inputs[0].data, want, sizeof want);
  assert_int_equal(r->n_req_outputs, 1);
  /* the answer: y as "scores", one class per example, labelled by its index */
  static float y[2] = {0.25f, 2.0f};
  static int64_t s2[] = {2};
  isv_tensor *o = isv__arena_calloc(&r->arena, 1, sizeof *o);
  *o = (isv_tensor){.name = "y", .dt = ISV_FP32, .shape = s2, .ndim = 1, .data = y, .count = 2,
                    .byte_size = 8};
  r->outputs = o;
  r->n_outputs = 1;
  isv__parts parts;
  assert_int_equal(isv__tfs_pb_encode_examples(r, &parts), 0);
  assert_int_equal(parts.n, 1);
  const uint8_t *res, *cl, *one, *lab, *sc;
  size_t resn, cln, onen, labn, scn;
  const uint8_t *msg = (const uint8_t *)parts.v[0].base;
  assert_true(p_find(msg, parts.total, 1, &res, &resn, NULL));
  prd q = {res, res + resn};
  unsigned num;
  uint64_t v;
  int k = 0;
  while (p_field(&q, &num, &v, &cl, &cln)) {
    assert_true(p_find(cl, cln, 1, &one, &onen, NULL));
    assert_true(p_find(one, onen, 1, &lab, &labn, NULL));
    assert_int_equal(labn, 1);
    assert_int_equal(lab[0], '0');
    assert_true(p_find(one, onen, 2, &sc, &scn, NULL));
    float f;
    memcpy(&f, sc, 4);
    assert_true(f == y[k]);
    k++;
  }
  assert_int_equal(k, 2);
  isv_request_free(r);
  /* regress needs a regress signature; a feature no input has; one missing; a wrong list */
  static const struct {
    int kind;
    const char *key;
    int list;
    const char *needle;
  } bad[] = {
      {ISV__TFS_REGRESS, "weights", 3, "Expected regression signature method_name to be "
                                       "tensorflow/serving/regress. Was: tensorflow/serving/classify"},
      {ISV__TFS_CLASSIFY, "other", 3, "examples[0]: feature 'other': not an input of the model"},
      {ISV__TFS_CLASSIFY, "weights", 2, "examples[0]: feature 'weights': a float_list cannot feed "
                                        "input 'w' of INT32"},
      {ISV__TFS_CLASSIFY, "weights", 1, "a bytes_list cannot feed"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    w_example(&list, 1, bad[i].key, bad[i].list, "\x01\x00\x00\x00", bad[i].list == 3 ? 1 : 4);
    r = examples(bad[i].kind, "cls", &list, 0);
    if (r->status != ISV_EBADREQ || strstr(r->errmsg, bad[i].needle) == NULL)
      fail_msg("case %zu: %d '%s'", i, r->status, r->errmsg);
    isv_request_free(r);
  }
  r = examples(ISV__TFS_CLASSIFY, "cls", &list, 0); /* no examples */
  assert_string_equal(r->errmsg, "Input is empty");
  isv_request_free(r);
  pbw w = {0}; /* no input at all (no span to read: the fuzzer's UBSan finding) */
  w_spec(&w, "m", 1, NULL, "cls");
  r = isv__request_new(&core);
  assert_int_equal(isv__tfs_pb_bind(r, w.p, w.n, ISV__TFS_CLASSIFY), 0);
  assert_int_equal(isv__tfs_pb_decode_examples(r, w.p, w.n), ISV_EBADREQ);
  assert_string_equal(r->errmsg, "Input is empty");
  isv_request_free(r);
  w_free(&w);
  w_example(&list, 1, "weights", 3, "\x01", 1);
  w_bytes(&list, 1, "", 0); /* an empty example, and no context */
  r = examples(ISV__TFS_CLASSIFY, "cls", &list, 1);
  assert_string_equal(r->errmsg, "examples[1]: feature 'weights': missing (and not in the context)");
  isv_request_free(r);
}

/* An InferenceTask {model_spec {name, signature_name}, method_name} as field 1 of w. */
static void w_task(pbw *w, const char *name, const char *sig, const char *method) {
  pbw t = {0};
  w_spec(&t, name, -1, NULL, sig);
  w_str(&t, 2, method);
  w_msg(w, 1, &t);
}

static void multi_inference(void **state) {
  (void)state;
  static const char *const CLS = "tensorflow/serving/classify",
                           *const REG = "tensorflow/serving/regress";
  static const struct {
    const char *names[2], *sigs[2], *methods[2];
    int status;
    const char *needle;
  } bad[] = {
      {{"m", "x"}, {"cls", "cls"}, {CLS, CLS}, ISV_EBADREQ, "must access the same model name."},
      {{"m", "m"}, {"cls", "cls"}, {CLS, CLS}, ISV_EBADREQ, "Duplicate evaluation of signature: cls"},
      {{"m", NULL}, {"zz", NULL}, {CLS, NULL}, ISV_EBADREQ, "not found in model graph: zz"},
      {{"m", NULL}, {"cls", NULL}, {"other", NULL}, ISV_EUNIMPL, "Unsupported signature "
                                                                 "method_name: other"},
      {{"m", NULL}, {"cls", NULL}, {REG, NULL}, ISV_EBADREQ, "Expected regression signature"},
      {{"m", NULL}, {NULL, NULL}, {CLS, NULL}, ISV_EBADREQ, "Was: tensorflow/serving/predict"},
      {{"", NULL}, {"cls", NULL}, {CLS, NULL}, ISV_EBADREQ, "Found ModelSpec with an empty "
                                                            "model name."},
      {{"zz", NULL}, {"cls", NULL}, {CLS, NULL}, ISV_ENOTFOUND, "Latest(zz)"},
      {{NULL, NULL}, {NULL, NULL}, {NULL, NULL}, ISV_EBADREQ, "MultiInferenceRequest has no tasks"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    pbw w = {0};
    for (int k = 0; k < 2 && bad[i].names[k]; k++)
      w_task(&w, bad[i].names[k], bad[i].sigs[k], bad[i].methods[k]);
    w_put(&w, "", 0);
    isv_request *r = isv__request_new(&core);
    isv__tfs_pb_bind_multi(r, w.p, w.n);
    if (r->status != bad[i].status || strstr(r->errmsg, bad[i].needle) == NULL)
      fail_msg("case %zu: %d '%s'", i, r->status, r->errmsg);
    isv_request_free(r);
    w_free(&w);
  }
  /* one task: its input decoded through its signature, its result in InferenceResult 2 */
  pbw w = {0}, list = {0}, input = {0};
  w_task(&w, "m", "cls", CLS);
  w_example(&list, 1, "weights", 3, "\x05", 1);
  w_msg(&input, 1, &list);
  w_msg(&w, 2, &input);
  isv_request *r = isv__request_new(&core);
  assert_int_equal(isv__tfs_pb_bind_multi(r, w.p, w.n), 0);
  assert_int_equal(isv__tfs_pb_decode_multi(r, w.p, w.n), 0);
  assert_int_equal(r->n_inputs, 1);
  assert_int_equal(*(const int32_t *)r->inputs[0].data, 5);
  assert_int_equal(r->n_req_outputs, 1);
  static float y[1] = {0.5f};
  static int64_t s1[] = {1};
  isv_tensor *o = isv__arena_calloc(&r->arena, 1, sizeof *o);
  *o = (isv_tensor){.name = "y", .dt = ISV_FP32, .shape = s1, .ndim = 1, .data = y, .count = 1,
                    .byte_size = 4};
  r->outputs = o;
  r->n_outputs = 1;
  isv__parts parts;
  assert_int_equal(isv__tfs_pb_encode_multi(r, &parts), 0);
  const uint8_t *res, *x, *spec;
  size_t resn, xn, specn;
  const uint8_t *msg = (const uint8_t *)parts.v[0].base;
  assert_true(p_find(msg, parts.total, 1, &res, &resn, NULL));
  assert_true(p_find(res, resn, 1, &spec, &specn, NULL));
  assert_true(p_find(spec, specn, 3, &x, &xn, NULL));
  assert_memory_equal(x, "cls", 3);
  assert_true(p_find(res, resn, 2, &x, &xn, NULL)); /* classification_result */
  assert_false(p_find(res, resn, 3, NULL, NULL, NULL));
  isv_request_free(r);
  w_free(&w);
}

static void metadata_and_status(void **state) {
  (void)state;
  isv_model *m;
  isv__model_spec spec = {"m", 1, "1", 1, NULL, 0};
  assert_int_equal(isv__core_resolve(&core, &spec, &m), ISV__FOUND);
  isv__buf b;
  isv__buf_init(&b, NULL);
  assert_int_equal(isv__tfs_pb_encode_metadata(m, &b), 0);
  const uint8_t *e, *any, *x, *map;
  size_t en, anyn, xn, mapn;
  const uint8_t *msg = (const uint8_t *)b.data;
  assert_true(p_find(msg, b.len, 2, &e, &en, NULL));
  assert_true(p_find(e, en, 1, &x, &xn, NULL));
  assert_int_equal(xn, 13);
  assert_memory_equal(x, "signature_def", 13);
  assert_true(p_find(e, en, 2, &any, &anyn, NULL));
  assert_true(p_find(any, anyn, 1, &x, &xn, NULL));
  const char url[] = "type.googleapis.com/tensorflow.serving.SignatureDefMap";
  assert_int_equal(xn, sizeof url - 1);
  assert_memory_equal(x, url, xn);
  assert_true(p_find(any, anyn, 2, &map, &mapn, NULL));
  prd q = {map, map + mapn};
  unsigned num;
  uint64_t v;
  const uint8_t *s;
  size_t n;
  int sigs = 0;
  while (p_field(&q, &num, &v, &s, &n)) {
    const uint8_t *name, *sd, *in, *ti;
    size_t namen, sdn, inn, tin;
    uint64_t dt;
    assert_true(p_find(s, n, 1, &name, &namen, NULL));
    assert_true(p_find(s, n, 2, &sd, &sdn, NULL));
    if (namen != 3) continue;
    assert_memory_equal(name, "cls", 3);
    assert_true(p_find(sd, sdn, 1, &in, &inn, NULL));
    assert_true(p_find(in, inn, 1, &x, &xn, NULL));
    assert_memory_equal(x, "weights", 7);
    assert_true(p_find(in, inn, 2, &ti, &tin, NULL));
    assert_true(p_find(ti, tin, 1, &x, &xn, NULL));
    assert_memory_equal(x, "w", 1);
    assert_true(p_find(ti, tin, 2, NULL, NULL, &dt));
    assert_int_equal(dt, 3);
    assert_true(p_find(sd, sdn, 3, &x, &xn, NULL));
    assert_int_equal(xn, strlen("tensorflow/serving/classify"));
    sigs++;
  }
  assert_int_equal(sigs, 1);
  isv__buf_free(&b);
  /* status: one ModelVersionStatus per version given, AVAILABLE (30), an OK StatusProto */
  isv_model *m2;
  isv__model_spec spec2 = {"m", 1, "2", 1, NULL, 0};
  assert_int_equal(isv__core_resolve(&core, &spec2, &m2), ISV__FOUND);
  m->state = ISV_MODEL_READY;
  m2->state = ISV_MODEL_LOADING;
  const isv_model *both[] = {m, m2};
  isv__buf_init(&b, NULL);
  assert_int_equal(isv__tfs_pb_encode_status(both, 2, &b), 0);
  q = (prd){(const uint8_t *)b.data, (const uint8_t *)b.data + b.len};
  uint64_t want[2][2] = {{1, 30}, {2, 20}};
  int k = 0;
  while (p_field(&q, &num, &v, &s, &n)) {
    uint64_t ver, st;
    assert_int_equal(num, 1);
    assert_true(p_find(s, n, 1, NULL, NULL, &ver));
    assert_true(p_find(s, n, 2, NULL, NULL, &st));
    assert_true(p_find(s, n, 3, &x, &xn, NULL));
    assert_int_equal(xn, 0);
    assert_int_equal(ver, want[k][0]);
    assert_int_equal(st, want[k][1]);
    k++;
  }
  assert_int_equal(k, 2);
  isv__buf_free(&b);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(model_spec),
      cmocka_unit_test(every_dtype),
      cmocka_unit_test(strings_point_into_the_message),
      cmocka_unit_test(content_in_place_when_aligned),
      cmocka_unit_test(short_typed_field_is_filled),
      cmocka_unit_test(refusals),
      cmocka_unit_test(binding),
      cmocka_unit_test(predict_request),
      cmocka_unit_test(predict_response),
      cmocka_unit_test(classify_and_regress),
      cmocka_unit_test(multi_inference),
      cmocka_unit_test(metadata_and_status),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
