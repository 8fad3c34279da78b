/* KServe V2 gRPC protobuf codec (lib/protocol/v2_pb.c), without sockets. Messages are built with
 * a tiny protobuf writer below and responses are read back with a tiny parser, both written
 * from the wire-format rules, independent of the code under test. */
#include "cmocka_prelude.h"

#include <stdlib.h>
#include <string.h>

#include "core/request.h"
#include "protocol/v2_pb.h"
#include "core/lifecycle.h"

static uv_loop_t loop;
static isv__core core;

static int setup(void **state) {
  (void)state;
  uv_loop_init(&loop);
  isv_options o;
  isv__options_defaults(&o);
  return isv__core_init(&core, &loop, &o);
}

static int teardown(void **state) {
  (void)state;
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
  if (w->n + n > w->cap) {
    size_t cap = w->cap ? w->cap : 64;
    while (cap < w->n + n) cap *= 2;
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
static void w_len(pbw *w, unsigned num, const void *s, size_t n) {
  w_key(w, num, 2);
  w_varint(w, n);
  w_put(w, s, n);
}
static void w_str(pbw *w, unsigned num, const char *s) { w_len(w, num, s, strlen(s)); }
static void w_sub(pbw *w, unsigned num, pbw *sub) {
  w_len(w, num, sub->p, sub->n);
  free(sub->p);
  memset(sub, 0, sizeof *sub);
}
static void w_free(pbw *w) {
  free(w->p);
  memset(w, 0, sizeof *w);
}

/* InferInputTensor header: name, datatype, packed shape. */
static void w_input_hdr(pbw *in, const char *name, const char *dt, const int64_t *shape,
                        size_t nd) {
  if (name) w_str(in, 1, name);
  if (dt) w_str(in, 2, dt);
  if (nd) {
    pbw s = {0};
    for (size_t i = 0; i < nd; i++) w_varint(&s, (uint64_t)shape[i]);
    w_sub(in, 3, &s);
  }
}

/* A map<string, InferParameter> entry in field mapf: pfield 1 bool, 2 int64, 3 string,
 * 4 double (bits), 5 uint64. */
static void w_param(pbw *w, unsigned mapf, const char *key, unsigned pfield, uint64_t bits,
                    const char *str) {
  pbw p = {0}, e = {0};
  if (pfield == 3) {
    w_str(&p, 3, str);
  } else if (pfield == 4) {
    w_key(&p, 4, 1);
    uint8_t b[8];
    for (int i = 0; i < 8; i++) b[i] = (uint8_t)(bits >> (8 * i));
    w_put(&p, b, 8);
  } else {
    w_vint(&p, pfield, bits);
  }
  w_str(&e, 1, key);
  w_sub(&e, 2, &p);
  w_sub(w, mapf, &e);
}

/* ---- response parser ------------------------------------------------------------------------ */

typedef struct prd {
  const uint8_t *p, *end;
} prd;

static uint64_t p_varint(prd *r) {
  uint64_t v = 0;
  for (unsigned sh = 0;; sh += 7) {
    assert_true(r->p < r->end && sh < 64);
    uint8_t b = *r->p++;
    v |= (uint64_t)(b & 0x7f) << sh;
    if (!(b & 0x80)) return v;
  }
}

/* Next field: returns 0 at end. LEN payloads in (*s, *n); varints in *v. */
static int p_field(prd *r, unsigned *num, unsigned *wt, uint64_t *v, const uint8_t **s,
                   size_t *n) {
  if (r->p == r->end) return 0;
  uint64_t k = p_varint(r);
  *num = (unsigned)(k >> 3);
  *wt = (unsigned)(k & 7);
  if (*wt == 0) {
    *v = p_varint(r);
  } else if (*wt == 2) {
    *n = (size_t)p_varint(r);
    assert_true(*n <= (size_t)(r->end - r->p));
    *s = r->p;
    r->p += *n;
  } else {
    fail_msg("unexpected wire type %u", *wt);
  }
  return 1;
}

typedef struct out_t {
  char name[64], dt[16];
  int64_t shape[8];
  size_t ndim;
} out_t;

typedef struct resp_t {
  char model[64], version[32], id[64], error[128];
  out_t outs[8];
  size_t n_outs;
  const uint8_t *raw[8];
  size_t raw_n[8];
  size_t n_raw;
} resp_t;

static void copy_str(char *dst, size_t cap, const uint8_t *s, size_t n) {
  assert_true(n < cap);
  memcpy(dst, s, n);
  dst[n] = '\0';
}

static void parse_response(const uint8_t *p, size_t n, resp_t *o) {
  memset(o, 0, sizeof *o);
  prd r = {p, p + n};
  unsigned num, wt;
  uint64_t v;
  const uint8_t *s;
  size_t sn;
  while (p_field(&r, &num, &wt, &v, &s, &sn)) {
    assert_int_equal(wt, 2);
    if (num == 1) copy_str(o->model, sizeof o->model, s, sn);
    if (num == 2) copy_str(o->version, sizeof o->version, s, sn);
    if (num == 3) copy_str(o->id, sizeof o->id, s, sn);
    if (num == 5) {
      out_t *t = &o->outs[o->n_outs++];
      prd q = {s, s + sn};
      const uint8_t *s2;
      size_t n2;
      while (p_field(&q, &num, &wt, &v, &s2, &n2)) {
        if (num == 1) copy_str(t->name, sizeof t->name, s2, n2);
        if (num == 2) copy_str(t->dt, sizeof t->dt, s2, n2);
        if (num == 3) {
          assert_int_equal(wt, 2); /* packed */
          prd d = {s2, s2 + n2};
          while (d.p < d.end) t->shape[t->ndim++] = (int64_t)p_varint(&d);
        }
      }
    }
    if (num == 6) {
      o->raw[o->n_raw] = s;
      o->raw_n[o->n_raw++] = sn;
    }
  }
}

/* ---- decoding helpers ----------------------------------------------------------------------- */

static isv_request *decode_buf(const uint8_t *p, size_t n, int want) {
  isv_request *r = isv__request_new(&core);
  assert_non_null(r);
  int rc = isv__v2pb_decode_infer_request(r, p, n);
  if (rc != want) fail_msg("decode = %d (%s), want %d", rc, r->errmsg, want);
  if (rc) assert_int_equal(r->status, rc);
  return r;
}

static void expect_error(pbw *m, const char *needle) {
  isv_request *r = decode_buf(m->p, m->n, ISV_EBADREQ);
  if (strstr(r->errmsg, needle) == NULL) fail_msg("'%s' lacks '%s'", r->errmsg, needle);
  isv_request_free(r);
  w_free(m);
}

static int inside(const void *p, const void *buf, size_t n) {
  return (const uint8_t *)p >= (const uint8_t *)buf && (const uint8_t *)p < (const uint8_t *)buf + n;
}

/* ---- tests ---------------------------------------------------------------------------------- */

static void decodes_request_fields_and_parameters(void **state) {
  (void)state;
  pbw m = {0}, in = {0}, o = {0};
  w_str(&m, 1, "simple");
  w_str(&m, 2, "3");
  w_str(&m, 3, "req-7");
  w_param(&m, 4, "b", 1, 1, NULL);
  w_param(&m, 4, "i", 2, (uint64_t)(int64_t)-5, NULL);
  w_param(&m, 4, "s", 3, 0, "hello");
  double d = 0.25;
  uint64_t bits;
  memcpy(&bits, &d, 8);
  w_param(&m, 4, "d", 4, bits, NULL);
  w_param(&m, 4, "u", 5, UINT64_MAX, NULL);
  w_vint(&m, 99, 12345); /* an unknown field: skipped */
  int64_t sh[] = {1, 2};
  w_input_hdr(&in, "INPUT0", "INT32", sh, 2);
  w_sub(&m, 5, &in);
  w_str(&o, 1, "OUT_C");
  w_param(&o, 2, "classification", 2, 3, NULL);
  w_param(&o, 2, "binary_data", 1, 1, NULL);
  w_sub(&m, 6, &o);
  w_str(&o, 1, "OUT_P");
  w_sub(&m, 6, &o);
  int32_t raw[2] = {7, -8};
  w_len(&m, 7, raw, sizeof raw);
  isv_request *r = decode_buf(m.p, m.n, 0);
  assert_string_equal(r->model_name, "simple");
  assert_string_equal(r->version, "3");
  assert_string_equal(r->id, "req-7");
  assert_true(r->has_id);
  assert_int_equal(isv_request_param_count(r), 5);
  assert_int_equal(isv_request_param(r, "b")->type, ISV_PARAM_BOOL);
  assert_int_equal(isv_request_param(r, "b")->v.b, 1);
  assert_int_equal(isv_request_param(r, "i")->type, ISV_PARAM_INT64);
  assert_int_equal(isv_request_param(r, "i")->v.i64, -5);
  const isv_param *s = isv_request_param(r, "s");
  assert_int_equal(s->type, ISV_PARAM_STRING);
  assert_int_equal(s->v.s.len, 5);
  assert_memory_equal(s->v.s.ptr, "hello", 5);
  assert_true(inside(s->v.s.ptr, m.p, m.n)); /* references the message */
  assert_int_equal(isv_request_param(r, "d")->type, ISV_PARAM_DOUBLE);
  assert_true(isv_request_param(r, "d")->v.d == 0.25);
  assert_int_equal(isv_request_param(r, "u")->type, ISV_PARAM_UINT64);
  assert_true(isv_request_param(r, "u")->v.u64 == UINT64_MAX);
  assert_int_equal(r->n_req_outputs, 2);
  assert_string_equal(r->req_outputs[0].name, "OUT_C");
  assert_int_equal(r->req_outputs[0].classification, 3);
  assert_string_equal(r->req_outputs[1].name, "OUT_P");
  assert_int_equal(r->req_outputs[1].classification, 0);
  const isv_tensor *t = isv_request_input(r, "INPUT0");
  assert_non_null(t);
  assert_int_equal(t->count, 2);
  assert_int_equal(t->ndim, 2);
  assert_int_equal(t->shape[1], 2);
  int32_t got[2];
  memcpy(got, t->data, 8);
  assert_int_equal(got[0], 7);
  assert_int_equal(got[1], -8);
  isv_request_free(r);
  w_free(&m);

  /* no id, no version: version NULL, has_id 0 */
  w_str(&m, 1, "simple");
  w_input_hdr(&in, "A", "UINT8", sh, 1);
  w_sub(&m, 5, &in);
  w_len(&m, 7, "x", 1);
  r = decode_buf(m.p, m.n, 0);
  assert_null(r->version);
  assert_false(r->has_id);
  isv_request_free(r);
  w_free(&m);
}

static const struct {
  isv_datatype dt;
  const char *name;
} all_fixed[] = {{ISV_BOOL, "BOOL"},   {ISV_UINT8, "UINT8"},   {ISV_UINT16, "UINT16"},
                 {ISV_UINT32, "UINT32"}, {ISV_UINT64, "UINT64"}, {ISV_INT8, "INT8"},
                 {ISV_INT16, "INT16"},  {ISV_INT32, "INT32"},   {ISV_INT64, "INT64"},
                 {ISV_FP16, "FP16"},    {ISV_BF16, "BF16"},     {ISV_FP32, "FP32"},
                 {ISV_FP64, "FP64"}};

static void raw_contents_every_datatype(void **state) {
  (void)state;
  for (size_t k = 0; k < sizeof all_fixed / sizeof all_fixed[0]; k++) {
    size_t es = isv_datatype_size(all_fixed[k].dt);
    uint8_t data[6 * 8];
    for (size_t i = 0; i < sizeof data; i++) data[i] = (uint8_t)(i * 7 + k);
    if (all_fixed[k].dt == ISV_BOOL)
      for (size_t i = 0; i < 6; i++) data[i] &= 1;
    pbw m = {0}, in = {0};
    int64_t sh[] = {2, 3};
    w_input_hdr(&in, "X", all_fixed[k].name, sh, 2);
    w_sub(&m, 5, &in);
    w_len(&m, 7, data, 6 * es);
    const uint8_t *pos = m.p + m.n - 6 * es;
    isv_request *r = decode_buf(m.p, m.n, 0);
    const isv_tensor *t = &r->inputs[0];
    assert_int_equal(t->dt, all_fixed[k].dt);
    assert_int_equal(t->count, 6);
    assert_int_equal(t->byte_size, 6 * es);
    assert_memory_equal(t->data, data, 6 * es);
    if ((uintptr_t)pos % es == 0)
      assert_ptr_equal(t->data, pos); /* in place */
    else
      assert_true((uintptr_t)t->data % es == 0); /* copied to an aligned buffer */
    isv_request_free(r);
    w_free(&m);
  }
}

static void big_raw_tensor_is_zero_copy(void **state) {
  (void)state;
  const size_t n = 1 << 20; /* 1 MiB: far beyond nanopb's 16-bit pb_size_t */
  uint8_t *data = malloc(n);
  for (size_t i = 0; i < n; i++) data[i] = (uint8_t)(i * 31 + (i >> 11));
  pbw m = {0}, in = {0};
  int64_t sh[] = {1, (int64_t)(n / 4)};
  w_str(&m, 1, "big");
  w_input_hdr(&in, "INPUT0", "FP32", sh, 2);
  w_sub(&m, 5, &in);
  w_len(&m, 7, data, n);
  size_t dataoff = m.n - n;
  /* place the message so that the tensor is 4-byte aligned, then misaligned */
  uint8_t *buf = aligned_alloc(16, (m.n + 31) / 16 * 16);
  for (size_t shift = 0; shift < 2; shift++) {
    size_t o = (4 - dataoff % 4) % 4 + shift;
    memcpy(buf + o, m.p, m.n);
    isv_request *r = decode_buf(buf + o, m.n, 0);
    const isv_tensor *t = &r->inputs[0];
    assert_int_equal(t->byte_size, n);
    assert_int_equal(t->count, n / 4);
    if (shift == 0) {
      assert_true(inside(t->data, buf + o, m.n));
      assert_ptr_equal(t->data, buf + o + dataoff);
    } else {
      assert_false(inside(t->data, buf + o, m.n)); /* misaligned FP32: one aligned copy */
      assert_int_equal((uintptr_t)t->data % 4, 0);
    }
    assert_memory_equal(t->data, data, n);
    isv_request_free(r);
  }
  /* BYTES of 1 MiB in one element, raw and typed: referenced in place */
  w_free(&m);
  int64_t one[] = {1};
  uint8_t *ser = malloc(n + 4);
  ser[0] = 0, ser[1] = 0, ser[2] = 0x10, ser[3] = 0; /* 1 MiB LE */
  memcpy(ser + 4, data, n);
  w_input_hdr(&in, "S", "BYTES", one, 1);
  w_sub(&m, 5, &in);
  w_len(&m, 7, ser, n + 4);
  isv_request *r = decode_buf(m.p, m.n, 0);
  const isv_bytes *b = r->inputs[0].data;
  assert_int_equal(b[0].len, n);
  assert_ptr_equal(b[0].ptr, m.p + m.n - n);
  assert_int_equal(r->inputs[0].byte_size, n);
  isv_request_free(r);
  w_free(&m);
  pbw c = {0};
  w_input_hdr(&in, "S", "BYTES", one, 1);
  w_len(&c, 8, data, n);
  w_sub(&in, 5, &c);
  w_sub(&m, 5, &in);
  r = decode_buf(m.p, m.n, 0);
  b = r->inputs[0].data;
  assert_int_equal(b[0].len, n);
  assert_true(inside(b[0].ptr, m.p, m.n));
  assert_memory_equal(b[0].ptr, data, n);
  isv_request_free(r);
  w_free(&m);
  free(ser);
  free(buf);
  free(data);
}

/* Typed contents: one input of datatype `dt` with values written in field f, packed (varint
 * or fixed) and unpacked, contents split over two submessages (protobuf merges them). */
static isv_request *typed(const char *dt, unsigned f, const uint64_t *vals, size_t n, int packed,
                          int want, pbw *m) {
  pbw in = {0}, c1 = {0}, c2 = {0};
  int64_t sh[] = {(int64_t)n};
  w_input_hdr(&in, "T", dt, sh, 1);
  for (size_t i = 0; i < n; i++) {
    pbw *c = i < n / 2 ? &c1 : &c2;
    unsigned wt = f == 6 ? 5 : f == 7 ? 1 : 0;
    if (packed) {
      pbw pk = {0};
      if (wt == 0) w_varint(&pk, vals[i]);
      else w_put(&pk, &vals[i], wt == 5 ? 4 : 8); /* little-endian host */
      w_sub(c, f, &pk);
    } else {
      w_key(c, f, wt);
      if (wt == 0) w_varint(c, vals[i]);
      else w_put(c, &vals[i], wt == 5 ? 4 : 8);
    }
  }
  w_sub(&in, 5, &c1);
  w_sub(&in, 5, &c2);
  w_sub(m, 5, &in);
  return decode_buf(m->p, m->n, want);
}

static void typed_contents_every_datatype(void **state) {
  (void)state;
  for (int packed = 0; packed < 2; packed++) {
    pbw m = {0};
    uint64_t bools[] = {1, 0, 1, 1};
    isv_request *r = typed("BOOL", 1, bools, 4, packed, 0, &m);
    assert_memory_equal(r->inputs[0].data, "\1\0\1\1", 4);
    isv_request_free(r);
    w_free(&m);

    uint64_t i8[] = {(uint64_t)(int64_t)-128, 127, 0, 5};
    r = typed("INT8", 2, i8, 4, packed, 0, &m);
    const int8_t *p8 = r->inputs[0].data;
    assert_int_equal(p8[0], -128);
    assert_int_equal(p8[1], 127);
    assert_int_equal(p8[3], 5);
    isv_request_free(r);
    w_free(&m);

    uint64_t i16[] = {(uint64_t)(int64_t)-32768, 32767, 1};
    r = typed("INT16", 2, i16, 3, packed, 0, &m);
    int16_t v16[3];
    memcpy(v16, r->inputs[0].data, 6);
    assert_int_equal(v16[0], -32768);
    assert_int_equal(v16[1], 32767);
    isv_request_free(r);
    w_free(&m);

    uint64_t i32[] = {(uint64_t)(int64_t)INT32_MIN, INT32_MAX, (uint64_t)(int64_t)-1};
    r = typed("INT32", 2, i32, 3, packed, 0, &m);
    int32_t v32[3];
    memcpy(v32, r->inputs[0].data, 12);
    assert_int_equal(v32[0], INT32_MIN);
    assert_int_equal(v32[1], INT32_MAX);
    assert_int_equal(v32[2], -1);
    assert_int_equal(r->inputs[0].byte_size, 12);
    isv_request_free(r);
    w_free(&m);

    uint64_t i64[] = {(uint64_t)INT64_MIN, (uint64_t)INT64_MAX, (uint64_t)(int64_t)-1};
    r = typed("INT64", 3, i64, 3, packed, 0, &m);
    int64_t v64[3];
    memcpy(v64, r->inputs[0].data, 24);
    assert_true(v64[0] == INT64_MIN && v64[1] == INT64_MAX && v64[2] == -1);
    isv_request_free(r);
    w_free(&m);

    uint64_t u8[] = {0, 255, 9};
    r = typed("UINT8", 4, u8, 3, packed, 0, &m);
    assert_memory_equal(r->inputs[0].data, "\0\xff\x09", 3);
    isv_request_free(r);
    w_free(&m);

    uint64_t u16[] = {65535, 2};
    r = typed("UINT16", 4, u16, 2, packed, 0, &m);
    uint16_t w16[2];
    memcpy(w16, r->inputs[0].data, 4);
    assert_int_equal(w16[0], 65535);
    isv_request_free(r);
    w_free(&m);

    uint64_t u32[] = {UINT32_MAX, 0};
    r = typed("UINT32", 4, u32, 2, packed, 0, &m);
    uint32_t w32[2];
    memcpy(w32, r->inputs[0].data, 8);
    assert_true(w32[0] == UINT32_MAX);
    isv_request_free(r);
    w_free(&m);

    uint64_t u64[] = {UINT64_MAX, 1};
    r = typed("UINT64", 5, u64, 2, packed, 0, &m);
    uint64_t w64[2];
    memcpy(w64, r->inputs[0].data, 16);
    assert_true(w64[0] == UINT64_MAX && w64[1] == 1);
    isv_request_free(r);
    w_free(&m);

    float fl[3] = {1.5f, -0.0f, 3e38f};
    uint64_t f32[3] = {0};
    for (int i = 0; i < 3; i++) memcpy(&f32[i], &fl[i], 4);
    r = typed("FP32", 6, f32, 3, packed, 0, &m);
    assert_memory_equal(r->inputs[0].data, fl, 12);
    isv_request_free(r);
    w_free(&m);

    double db[2] = {2.5, -1e300};
    uint64_t f64[2];
    memcpy(f64, db, 16);
    r = typed("FP64", 7, f64, 2, packed, 0, &m);
    assert_memory_equal(r->inputs[0].data, db, 16);
    isv_request_free(r);
    w_free(&m);
  }
  /* BYTES typed: elements reference the message */
  pbw m = {0}, in = {0}, c = {0};
  int64_t sh[] = {3};
  w_input_hdr(&in, "S", "BYTES", sh, 1);
  w_str(&c, 8, "abc");
  w_len(&c, 8, "", 0);
  w_len(&c, 8, "\xff\x00z", 3); /* BYTES are bytes: not UTF-8 is fine */
  w_sub(&in, 5, &c);
  w_sub(&m, 5, &in);
  isv_request *r = decode_buf(m.p, m.n, 0);
  const isv_bytes *b = r->inputs[0].data;
  assert_int_equal(r->inputs[0].count, 3);
  assert_int_equal(r->inputs[0].byte_size, 6);
  assert_int_equal(b[0].len, 3);
  assert_memory_equal(b[0].ptr, "abc", 3);
  assert_true(inside(b[0].ptr, m.p, m.n));
  assert_int_equal(b[1].len, 0);
  assert_memory_equal(b[2].ptr, "\xff\x00z", 3);
  isv_request_free(r);
  w_free(&m);
  /* BYTES raw: u32 LE length + bytes */
  w_input_hdr(&in, "S", "BYTES", sh, 1);
  w_sub(&m, 5, &in);
  w_len(&m, 7, "\x02\0\0\0hi\0\0\0\0\x01\0\0\0!", 15);
  r = decode_buf(m.p, m.n, 0);
  b = r->inputs[0].data;
  assert_int_equal(b[0].len, 2);
  assert_memory_equal(b[0].ptr, "hi", 2);
  assert_int_equal(b[1].len, 0);
  assert_int_equal(b[2].len, 1);
  assert_memory_equal(b[2].ptr, "!", 1);
  assert_int_equal(r->inputs[0].byte_size, 3);
  isv_request_free(r);
  w_free(&m);
}

static void mixed_raw_and_typed_inputs_and_empty_tensor(void **state) {
  (void)state;
  /* raw_input_contents[0] → inputs[0]; inputs[1] typed; raw given before the inputs */
  pbw m = {0}, in = {0}, c = {0};
  int64_t two[] = {2}, zero[] = {0};
  w_len(&m, 7, "\x01\x02", 2);
  w_input_hdr(&in, "A", "UINT8", two, 1);
  w_sub(&m, 5, &in);
  w_input_hdr(&in, "B", "INT64", two, 1);
  w_vint(&c, 3, 40);
  w_vint(&c, 3, 2);
  w_sub(&in, 5, &c);
  w_sub(&m, 5, &in);
  w_input_hdr(&in, "E", "FP32", zero, 1); /* zero elements, no data at all */
  w_sub(&m, 5, &in);
  isv_request *r = decode_buf(m.p, m.n, 0);
  assert_int_equal(r->n_inputs, 3);
  assert_memory_equal(r->inputs[0].data, "\x01\x02", 2);
  int64_t bv[2];
  memcpy(bv, r->inputs[1].data, 16);
  assert_true(bv[0] == 40 && bv[1] == 2);
  assert_int_equal(r->inputs[2].count, 0);
  assert_int_equal(r->inputs[2].byte_size, 0);
  assert_non_null(r->inputs[2].data);
  isv_request_free(r);
  w_free(&m);
  /* a scalar (no shape) is one element */
  w_input_hdr(&in, "S", "INT32", NULL, 0);
  w_sub(&m, 5, &in);
  w_len(&m, 7, "\x05\0\0\0", 4);
  r = decode_buf(m.p, m.n, 0);
  assert_int_equal(r->inputs[0].ndim, 0);
  assert_int_equal(r->inputs[0].count, 1);
  isv_request_free(r);
  w_free(&m);
  /* unpacked shape entries */
  w_str(&in, 1, "U");
  w_str(&in, 2, "UINT8");
  w_vint(&in, 3, 1);
  w_vint(&in, 3, 3);
  w_sub(&m, 5, &in);
  w_len(&m, 7, "abc", 3);
  r = decode_buf(m.p, m.n, 0);
  assert_int_equal(r->inputs[0].ndim, 2);
  assert_int_equal(r->inputs[0].shape[1], 3);
  isv_request_free(r);
  w_free(&m);
}

static void every_error_names_the_problem(void **state) {
  (void)state;
  pbw m = {0}, in = {0}, c = {0}, o = {0};
  int64_t sh[] = {1, 16};
  uint8_t zeros[64] = {0};

  w_input_hdr(&in, "INPUT0", "INT32", sh, 2);
  w_sub(&m, 5, &in);
  w_len(&m, 7, zeros, 60);
  expect_error(&m, "input 'INPUT0': raw_input_contents has 60 bytes, shape [1,16] of INT32 "
                   "needs 64");

  w_input_hdr(&in, "INPUT0", "INT32", sh, 2);
  w_vint(&c, 2, 1);
  w_sub(&in, 5, &c);
  w_sub(&m, 5, &in);
  w_len(&m, 7, zeros, 64);
  expect_error(&m, "input 'INPUT0' has both contents and raw_input_contents");

  w_input_hdr(&in, "INPUT0", "INT32", sh, 2);
  w_sub(&m, 5, &in);
  w_len(&m, 7, zeros, 64);
  w_len(&m, 7, zeros, 64);
  expect_error(&m, "request has 2 raw_input_contents but only 1 inputs");

  w_input_hdr(&in, "INPUT0", NULL, sh, 2);
  w_sub(&m, 5, &in);
  expect_error(&m, "input 'INPUT0' has no datatype");

  w_input_hdr(&in, "INPUT0", "FLOAT\x01", sh, 2);
  w_sub(&m, 5, &in);
  expect_error(&m, "input 'INPUT0' has unknown datatype 'FLOAT?'");

  int64_t neg[] = {1, -3};
  w_input_hdr(&in, "INPUT0", "INT32", neg, 2);
  w_sub(&m, 5, &in);
  expect_error(&m, "input 'INPUT0' has a negative dimension -3");

  int64_t huge[] = {INT64_MAX, INT64_MAX};
  w_input_hdr(&in, "INPUT0", "INT32", huge, 2);
  w_sub(&m, 5, &in);
  expect_error(&m, "overflows");

  int64_t many[40];
  for (int i = 0; i < 40; i++) many[i] = 1;
  w_input_hdr(&in, "INPUT0", "INT32", many, 40);
  w_sub(&m, 5, &in);
  expect_error(&m, "has 40 dimensions");
  w_input_hdr(&in, "INPUT0", "INT32", many, 33);
  w_sub(&m, 5, &in);
  expect_error(&m, "has 33 dimensions, at most 32 allowed");
  {
    uint8_t one[4] = {7, 0, 0, 0}; /* 32 dimensions of 1: accepted, as on REST */
    w_input_hdr(&in, "INPUT0", "INT32", many, 32);
    w_sub(&m, 5, &in);
    w_len(&m, 7, one, 4);
    isv_request *r = decode_buf(m.p, m.n, 0);
    assert_int_equal(r->inputs[0].ndim, 32);
    isv_request_free(r);
    w_free(&m);
  }

  w_input_hdr(&in, NULL, "INT32", sh, 2);
  w_sub(&m, 5, &in);
  expect_error(&m, "input #0 has no name");

  w_input_hdr(&in, "INPUT0", "INT32", sh, 2);
  w_sub(&m, 5, &in);
  expect_error(&m, "input 'INPUT0' has no data");

  w_str(&m, 1, "model");
  expect_error(&m, "request has no inputs");

  /* typed: count mismatch, wrong field, range, FP16 */
  w_input_hdr(&in, "INPUT0", "INT32", sh, 2);
  w_vint(&c, 2, 1);
  w_sub(&in, 5, &c);
  w_sub(&m, 5, &in);
  expect_error(&m, "input 'INPUT0': int_contents has 1 elements, shape [1,16] needs 16");

  int64_t one[] = {1};
  w_input_hdr(&in, "X", "INT32", one, 1);
  w_key(&c, 6, 5);
  w_put(&c, "\0\0\0\0", 4);
  w_sub(&in, 5, &c);
  w_sub(&m, 5, &in);
  expect_error(&m, "input 'X': datatype INT32 takes int_contents, got fp32_contents");

  w_input_hdr(&in, "X", "INT8", one, 1);
  w_vint(&c, 2, 300);
  w_sub(&in, 5, &c);
  w_sub(&m, 5, &in);
  expect_error(&m, "input 'X': int_contents value 300 is out of range for INT8");

  w_input_hdr(&in, "X", "UINT16", one, 1);
  w_vint(&c, 4, 70000);
  w_sub(&in, 5, &c);
  w_sub(&m, 5, &in);
  expect_error(&m, "value 70000 is out of range for UINT16");

  w_input_hdr(&in, "H", "FP16", one, 1);
  w_key(&c, 6, 5);
  w_put(&c, "\0\0\0\0", 4);
  w_sub(&in, 5, &c);
  w_sub(&m, 5, &in);
  expect_error(&m, "input 'H': FP16 data must be sent in raw_input_contents");

  w_input_hdr(&in, "X", "FP32", one, 1);
  w_len(&c, 6, "\0\0\0", 3);
  w_sub(&in, 5, &c);
  w_sub(&m, 5, &in);
  expect_error(&m, "not a multiple of 4");

  /* BYTES raw: truncated element, wrong count */
  w_input_hdr(&in, "S", "BYTES", one, 1);
  w_sub(&m, 5, &in);
  w_len(&m, 7, "\x09\0\0\0abc", 7);
  expect_error(&m, "input 'S': BYTES element 0 in raw_input_contents has length 9 but only 3");
  w_input_hdr(&in, "S", "BYTES", one, 1);
  w_sub(&m, 5, &in);
  w_len(&m, 7, "\x01\0\0\0a\x01\0\0\0b", 10);
  expect_error(&m, "raw_input_contents holds 2 BYTES elements, shape [1] needs 1");
  w_input_hdr(&in, "S", "BYTES", one, 1);
  w_sub(&m, 5, &in);
  w_len(&m, 7, "\x01\0", 2);
  expect_error(&m, "ends inside the 4-byte length");

  /* requested outputs */
  w_input_hdr(&in, "X", "UINT8", one, 1);
  w_sub(&m, 5, &in);
  w_len(&m, 7, "a", 1);
  w_param(&o, 2, "classification", 2, 2, NULL);
  w_sub(&m, 6, &o);
  expect_error(&m, "requested output #0 has no name");
  w_input_hdr(&in, "X", "UINT8", one, 1);
  w_sub(&m, 5, &in);
  w_len(&m, 7, "a", 1);
  w_str(&o, 1, "Y");
  w_param(&o, 2, "classification", 3, 0, "two");
  w_sub(&m, 6, &o);
  expect_error(&m, "output 'Y': 'classification' must be a non-negative int64_param");

  /* malformed wire format */
  w_input_hdr(&in, "X", "UINT8", one, 1);
  w_sub(&m, 5, &in);
  m.n--; /* truncated */
  expect_error(&m, "malformed protobuf");
  w_key(&m, 5, 0); /* inputs as a varint */
  w_varint(&m, 1);
  expect_error(&m, "wire type 0");
  w_key(&m, 1, 3); /* a group */
  expect_error(&m, "malformed protobuf");
  w_put(&m, "\x0a\x02\xc3\x28", 4); /* model_name with invalid UTF-8 */
  expect_error(&m, "model_name is not valid UTF-8");
  w_put(&m, "\x0a\x05", 2); /* length past the end */
  w_put(&m, "ab", 2);
  expect_error(&m, "malformed protobuf");
  /* a varint of 11 bytes */
  w_put(&m, "\x08\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 12);
  expect_error(&m, "malformed protobuf");

  /* NULL / empty message */
  isv_request *r = decode_buf(NULL, 0, ISV_EBADREQ);
  isv_request_free(r);
}

/* A request whose outputs are set like a backend would, then encoded. */
static isv_request *request_with_outputs(void) {
  isv_request *r = isv__request_new(&core);
  r->model_name = "mdl";
  r->version = "2";
  r->id = "id-9";
  r->has_id = 1;
  r->outputs = isv__arena_calloc(&r->arena, 3, sizeof(isv_tensor));
  r->n_outputs = r->cap_outputs = 3;
  static int64_t sh0[] = {2, 2}, sh1[] = {3}, sh2[] = {-1, 0};
  float *f = isv__arena_alloc(&r->arena, 16);
  for (int i = 0; i < 4; i++) f[i] = (float)i + 0.5f;
  r->outputs[0] = (isv_tensor){.name = "OUT_F", .dt = ISV_FP32, .shape = sh0, .ndim = 2,
                               .data = f, .count = 4, .byte_size = 16};
  isv_bytes *b = isv__arena_alloc(&r->arena, 3 * sizeof *b);
  b[0] = (isv_bytes){"ab", 2};
  b[1] = (isv_bytes){NULL, 0};
  b[2] = (isv_bytes){"xyz", 3};
  r->outputs[1] = (isv_tensor){.name = "OUT_S", .dt = ISV_BYTES, .shape = sh1, .ndim = 1,
                               .data = b, .count = 3, .byte_size = 5};
  r->outputs[2] = (isv_tensor){.name = "EMPTY", .dt = ISV_INT64, .shape = sh2, .ndim = 2,
                               .data = f, .count = 0, .byte_size = 0};
  return r;
}

static uint8_t *flatten(const isv__parts *p) {
  uint8_t *buf = malloc(p->total + 1);
  size_t off = 0;
  for (size_t i = 0; i < p->n; i++) {
    memcpy(buf + off, p->v[i].base, p->v[i].len);
    off += p->v[i].len;
  }
  assert_int_equal(off, p->total);
  return buf;
}

static void response_encodes_and_references_tensors(void **state) {
  (void)state;
  isv_request *r = request_with_outputs();
  isv__parts parts;
  assert_int_equal(isv__v2pb_encode_infer_response(r, &parts), 0);
  /* the FP32 tensor goes out by reference */
  int referenced = 0;
  for (size_t i = 0; i < parts.n; i++)
    if (parts.v[i].base == (char *)r->outputs[0].data && parts.v[i].len == 16) referenced = 1;
  assert_true(referenced);
  uint8_t *flat = flatten(&parts);
  resp_t o;
  parse_response(flat, parts.total, &o);
  assert_string_equal(o.model, "mdl");
  assert_string_equal(o.version, "2");
  assert_string_equal(o.id, "id-9");
  assert_int_equal(o.n_outs, 3);
  assert_int_equal(o.n_raw, 3);
  assert_string_equal(o.outs[0].name, "OUT_F");
  assert_string_equal(o.outs[0].dt, "FP32");
  assert_int_equal(o.outs[0].ndim, 2);
  assert_int_equal(o.outs[0].shape[0], 2);
  assert_int_equal(o.raw_n[0], 16);
  assert_memory_equal(o.raw[0], r->outputs[0].data, 16);
  assert_string_equal(o.outs[1].dt, "BYTES");
  assert_int_equal(o.raw_n[1], 4 + 2 + 4 + 4 + 3);
  assert_memory_equal(o.raw[1], "\x02\0\0\0ab\0\0\0\0\x03\0\0\0xyz", 17);
  assert_string_equal(o.outs[2].name, "EMPTY");
  assert_int_equal(o.outs[2].shape[0], -1); /* negative int64 round-trips */
  assert_int_equal(o.outs[2].shape[1], 0);
  assert_int_equal(o.raw_n[2], 0);
  free(flat);

  /* streaming: ModelStreamInferResponse{infer_response 2: the same bytes} */
  isv__parts sp;
  assert_int_equal(isv__v2pb_encode_stream_response(r, &sp), 0);
  flat = flatten(&sp);
  prd q = {flat, flat + sp.total};
  unsigned num, wt;
  uint64_t v;
  const uint8_t *s = NULL;
  size_t sn = 0;
  assert_true(p_field(&q, &num, &wt, &v, &s, &sn));
  assert_int_equal(num, 2);
  assert_int_equal(sn, parts.total);
  parse_response(s, sn, &o);
  assert_string_equal(o.outs[1].name, "OUT_S");
  assert_memory_equal(o.raw[0], r->outputs[0].data, 16);
  assert_false(p_field(&q, &num, &wt, &v, &s, &sn));
  free(flat);
  isv_request_free(r);

  /* no id, no outputs: the request had no id → none echoed */
  r = isv__request_new(&core);
  r->model_name = "m";
  assert_int_equal(isv__v2pb_encode_infer_response(r, &parts), 0);
  flat = flatten(&parts);
  parse_response(flat, parts.total, &o);
  assert_string_equal(o.model, "m");
  assert_string_equal(o.id, "");
  assert_int_equal(o.n_outs, 0);
  free(flat);
  isv_request_free(r);
}

static void big_output_by_reference(void **state) {
  (void)state;
  isv_request *r = isv__request_new(&core);
  r->model_name = "m";
  size_t n = 1 << 20;
  uint8_t *d = isv__arena_alloc(&r->arena, n);
  for (size_t i = 0; i < n; i++) d[i] = (uint8_t)(i ^ (i >> 9));
  static int64_t sh[] = {1 << 20};
  r->outputs = isv__arena_calloc(&r->arena, 1, sizeof(isv_tensor));
  r->n_outputs = r->cap_outputs = 1;
  r->outputs[0] = (isv_tensor){.name = "O", .dt = ISV_UINT8, .shape = sh, .ndim = 1, .data = d,
                               .count = n, .byte_size = n};
  isv__parts parts;
  assert_int_equal(isv__v2pb_encode_infer_response(r, &parts), 0);
  assert_int_equal(parts.n, 2);
  assert_ptr_equal(parts.v[1].base, d);
  assert_int_equal(parts.v[1].len, n);
  uint8_t *flat = flatten(&parts);
  resp_t o;
  parse_response(flat, parts.total, &o);
  assert_int_equal(o.raw_n[0], n);
  assert_memory_equal(o.raw[0], d, n);
  /* and it decodes as a request's raw contents the same way (round trip through our decoder) */
  free(flat);
  isv_request_free(r);
}

static void small_messages(void **state) {
  (void)state;
  isv__buf b;
  isv__buf_init(&b, NULL);
  assert_int_equal(isv__v2pb_encode_bool1(1, &b), 0);
  assert_int_equal(b.len, 2);
  assert_memory_equal(b.data, "\x08\x01", 2);
  isv__buf_free(&b);
  assert_int_equal(isv__v2pb_encode_bool1(0, &b), 0);
  assert_int_equal(b.len, 0); /* proto3: false is the default, not written */
  isv__buf_free(&b);

  const char *ext[] = {"classification", "model_repository"};
  assert_int_equal(isv__v2pb_encode_server_metadata("srv", "0.1.0", ext, 2, &b), 0);
  const char want[] = "\x0a\x03srv\x12\x05" "0.1.0\x1a\x0e" "classification\x1a\x10model_repository";
  assert_int_equal(b.len, sizeof want - 1);
  assert_memory_equal(b.data, want, sizeof want - 1);
  isv__buf_free(&b);

  assert_int_equal(isv__v2pb_encode_stream_error(ISV_EBACKEND, "boom", &b), 0);
  assert_memory_equal(b.data, "\x0a\x04" "boom", 6);
  assert_int_equal(b.len, 6);
  isv__buf_free(&b);

  char name[16], ver[8];
  pbw m = {0};
  w_str(&m, 1, "simple");
  w_str(&m, 2, "7");
  w_vint(&m, 9, 1); /* unknown field */
  assert_int_equal(isv__v2pb_decode_model_ref(m.p, m.n, name, sizeof name, ver, sizeof ver), 0);
  assert_string_equal(name, "simple");
  assert_string_equal(ver, "7");
  w_free(&m);
  w_str(&m, 1, "only");
  assert_int_equal(isv__v2pb_decode_model_ref(m.p, m.n, name, sizeof name, ver, sizeof ver), 0);
  assert_string_equal(ver, "");
  assert_int_equal(isv__v2pb_decode_model_ref(m.p, m.n, name, 4, ver, sizeof ver), -1);
  assert_int_equal(isv__v2pb_decode_model_ref(m.p, m.n - 1, name, 16, ver, sizeof ver), -1);
  w_free(&m);
}

static int noop(isv_request *r, void *u) {
  (void)r;
  (void)u;
  return 0;
}

static void model_metadata(void **state) {
  (void)state;
  isv_model_config *c;
  isv_model_config_new("mm", &c);
  int64_t s_in[] = {16}, s_out[] = {-1, 4};
  isv_model_config_add_input(c, "IN", ISV_FP32, s_in, 1);
  isv_model_config_add_output(c, "OUT", ISV_BYTES, s_out, 2);
  isv_model_config_set_max_batch(c, 8);
  isv_model_config_set_platform(c, "plat");
  isv_backend be = {.struct_size = sizeof be, .infer = noop};
  isv_model *m1, *m2;
  assert_int_equal(isv__registry_add(&core.reg, c, "1", &be, NULL, &m1), 0);
  assert_int_equal(isv__registry_add(&core.reg, c, "2", &be, NULL, &m2), 0);
  isv_model_config_free(c);
  isv__buf b;
  isv__buf_init(&b, NULL);
  assert_int_equal(isv__v2pb_encode_model_metadata(m2, &b), 0);
  prd q = {(const uint8_t *)b.data, (const uint8_t *)b.data + b.len};
  unsigned num, wt;
  uint64_t v;
  const uint8_t *s;
  size_t sn;
  char versions[8] = {0};
  size_t nv = 0, nin = 0, nout = 0;
  while (p_field(&q, &num, &wt, &v, &s, &sn)) {
    if (num == 1) assert_memory_equal(s, "mm", 2);
    if (num == 2) versions[nv++] = (char)s[0];
    if (num == 3) assert_memory_equal(s, "plat", 4);
    if (num == 4 || num == 5) {
      out_t t;
      memset(&t, 0, sizeof t);
      prd q2 = {s, s + sn};
      const uint8_t *s2;
      size_t n2;
      while (p_field(&q2, &num, &wt, &v, &s2, &n2)) {
        if (num == 1) copy_str(t.name, sizeof t.name, s2, n2);
        if (num == 2) copy_str(t.dt, sizeof t.dt, s2, n2);
        if (num == 3) {
          prd d = {s2, s2 + n2};
          while (d.p < d.end) t.shape[t.ndim++] = (int64_t)p_varint(&d);
        }
      }
      if (strcmp(t.name, "IN") == 0) {
        nin++;
        assert_string_equal(t.dt, "FP32");
        assert_int_equal(t.ndim, 2);
        assert_int_equal(t.shape[0], -1); /* the batch dimension */
        assert_int_equal(t.shape[1], 16);
      } else {
        nout++;
        assert_string_equal(t.name, "OUT");
        assert_string_equal(t.dt, "BYTES");
        assert_int_equal(t.ndim, 3);
        assert_int_equal(t.shape[2], 4);
      }
    }
  }
  assert_int_equal(nv, 2);
  assert_memory_equal(versions, "12", 2);
  assert_int_equal(nin, 1);
  assert_int_equal(nout, 1);
  isv__buf_free(&b);
  isv__registry_remove(&core.reg, "mm", NULL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(decodes_request_fields_and_parameters),
      cmocka_unit_test(raw_contents_every_datatype),
      cmocka_unit_test(big_raw_tensor_is_zero_copy),
      cmocka_unit_test(typed_contents_every_datatype),
      cmocka_unit_test(mixed_raw_and_typed_inputs_and_empty_tensor),
      cmocka_unit_test(every_error_names_the_problem),
      cmocka_unit_test(response_encodes_and_references_tensors),
      cmocka_unit_test(big_output_by_reference),
      cmocka_unit_test(small_messages),
      cmocka_unit_test(model_metadata),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
