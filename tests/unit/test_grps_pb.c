/* protocol/grps_pb.c: grps's GrpsMessage protobuf ⇄ isv__grps_msg. Covers every data kind and
 * every DataType both ways; packed and unpacked (and mixed) repeated fields; FP16 from floats;
 * int32 varints sign-extended to 10 bytes; range errors (int8, int16, uint8) by element index;
 * shape/count mismatches, data in the wrong flat field, DT_INVALID taking its one flat field's
 * type, dtype out of range, shape overflow, empty tensors; the max_tensors limit for tensors and
 * map entries; every map including s_t, entries missing their key or value; oneof replacement
 * and merging; truncation and malformed varints; invalid UTF-8; unknown fields of every wire
 * type; zero-copy FP32 / FP64 when aligned (copies when not); encoder refusals (types and
 * dimensions grps cannot carry, a failed buffer); decode(encode(decode(x))) == decode(x); and
 * byte-for-byte agreement with Python's protobuf on two messages.
 *
 * Messages are built with a tiny protobuf writer below, written from the wire-format rules
 * independently of the code under test. */
#include "cmocka_prelude.h"

#include <stdlib.h>
#include <string.h>

#include "codec/half.h"
#include "protocol/grps_msg.h"

/* ---- reference bytes from Python's protobuf --------------------------------------------------
 * Produced offline with protoc 3.21.12 and python3-protobuf 4.21.12:
 *   protoc -Iproto --python_out=/tmp/gpbpy proto/grps.proto
 * then in /tmp/gpbpy, with `import grps_pb2 as g`:
 *   py_gtensors: m = g.GrpsMessage(); m.status.code = 200; m.status.msg = "ok";
 *     m.status.status = g.Status.SUCCESS; m.model = "m-1"; then tensors added to m.gtensors:
 *     in1 DT_INT32 [3,2] flat_int32 [1,-2,3,-4,5,2147483647]; f DT_FLOAT32 [2] [1.5,-2.0];
 *     s DT_STRING [2] ["ab","héllo"]; h DT_FLOAT16 [1] [0.5]; u DT_UINT8 [3] [0,255,7];
 *     i64 DT_INT64 [2] [-1,2**40]; d DT_FLOAT64 [1,1] [-0.125]; i8 DT_INT8 [2] [-128,127]
 *   py_gmap: m.gmap.s_s["a"] = "b"; s_b["k"] = b"\x00\xff"; s_i32["n"] = -5;
 *     s_i64["big"] = -2**40; s_f["f"] = 0.25; s_d["d"] = -1.5;
 *     s_t["t"] = {name "t", DT_INT16, [2], flat_int16 [-3,300]}
 *   both m.SerializeToString(deterministic=True), printed as C arrays. */
static const uint8_t py_gtensors[211] = {
    0x0a, 0x09, 0x08, 0xc8, 0x01, 0x12, 0x02, 0x6f, 0x6b, 0x18, 0x01, 0x12, 0x03, 0x6d, 0x2d,
    0x31, 0x2a, 0xc0, 0x01, 0x0a, 0x29, 0x0a, 0x03, 0x69, 0x6e, 0x31, 0x10, 0x04, 0x1a, 0x02,
    0x03, 0x02, 0x3a, 0x1c, 0x01, 0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01,
    0x03, 0xfc, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0x05, 0xff, 0xff, 0xff,
    0xff, 0x07, 0x0a, 0x12, 0x0a, 0x01, 0x66, 0x10, 0x07, 0x1a, 0x01, 0x02, 0x52, 0x08, 0x00,
    0x00, 0xc0, 0x3f, 0x00, 0x00, 0x00, 0xc0, 0x0a, 0x14, 0x0a, 0x01, 0x73, 0x10, 0x09, 0x1a,
    0x01, 0x02, 0x62, 0x02, 0x61, 0x62, 0x62, 0x06, 0x68, 0xc3, 0xa9, 0x6c, 0x6c, 0x6f, 0x0a,
    0x0e, 0x0a, 0x01, 0x68, 0x10, 0x06, 0x1a, 0x01, 0x01, 0x4a, 0x04, 0x00, 0x00, 0x00, 0x3f,
    0x0a, 0x0e, 0x0a, 0x01, 0x75, 0x10, 0x01, 0x1a, 0x01, 0x03, 0x22, 0x04, 0x00, 0xff, 0x01,
    0x07, 0x0a, 0x1c, 0x0a, 0x03, 0x69, 0x36, 0x34, 0x10, 0x05, 0x1a, 0x01, 0x02, 0x42, 0x10,
    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0x80, 0x80, 0x80, 0x80, 0x80,
    0x20, 0x0a, 0x13, 0x0a, 0x01, 0x64, 0x10, 0x08, 0x1a, 0x02, 0x01, 0x01, 0x5a, 0x08, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0xc0, 0xbf, 0x0a, 0x16, 0x0a, 0x02, 0x69, 0x38, 0x10, 0x02,
    0x1a, 0x01, 0x02, 0x2a, 0x0b, 0x80, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01,
    0x7f};
static const uint8_t py_gmap[106] = {
    0x3a, 0x68, 0x0a, 0x06, 0x0a, 0x01, 0x61, 0x12, 0x01, 0x62, 0x12, 0x07, 0x0a, 0x01, 0x6b,
    0x12, 0x02, 0x00, 0xff, 0x1a, 0x0e, 0x0a, 0x01, 0x6e, 0x10, 0xfb, 0xff, 0xff, 0xff, 0xff,
    0xff, 0xff, 0xff, 0xff, 0x01, 0x22, 0x10, 0x0a, 0x03, 0x62, 0x69, 0x67, 0x10, 0x80, 0x80,
    0x80, 0x80, 0x80, 0xe0, 0xff, 0xff, 0xff, 0x01, 0x2a, 0x08, 0x0a, 0x01, 0x66, 0x15, 0x00,
    0x00, 0x80, 0x3e, 0x32, 0x0c, 0x0a, 0x01, 0x64, 0x11, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0xf8, 0xbf, 0x3a, 0x1b, 0x0a, 0x01, 0x74, 0x12, 0x16, 0x0a, 0x01, 0x74, 0x10, 0x03, 0x1a,
    0x01, 0x02, 0x32, 0x0c, 0xfd, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0xac,
    0x02};

/* ---- fixture: one arena and one error buffer, freed after every test -------------------- */

static isv__arena A = ISV__ARENA_INIT;
static char err[512];
static isv__grps_limits LIM = {64, 64};

static int reset(void **state) {
  (void)state;
  isv__arena_free(&A);
  return 0;
}

/* ---- protobuf writer ---------------------------------------------------------------------- */

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
static void w_f32(pbw *w, unsigned num, float f) {
  w_key(w, num, 5);
  w_put(w, &f, 4);
}
static void w_f64(pbw *w, unsigned num, double f) {
  w_key(w, num, 1);
  w_put(w, &f, 8);
}
static void w_free(pbw *w) {
  free(w->p);
  memset(w, 0, sizeof *w);
}
/* Field num holding sub's bytes; sub is emptied. */
static void w_sub(pbw *w, unsigned num, pbw *sub) {
  w_len(w, num, sub->p, sub->n);
  w_free(sub);
}
/* Packed varints (int64 values, negative ones sign-extended as protobuf writes int32/int64). */
static void w_packed(pbw *w, unsigned num, const int64_t *v, size_t n) {
  pbw p = {0};
  for (size_t i = 0; i < n; i++) w_varint(&p, (uint64_t)v[i]);
  w_len(w, num, p.p ? p.p : (const uint8_t *)"", p.n);
  w_free(&p);
}
/* A GenericTensor header: name (unless NULL), dtype (unless 0), packed shape (unless ndim 0). */
static void w_thead(pbw *t, const char *name, int dtype, const int64_t *shape, size_t ndim) {
  if (name) w_str(t, 1, name);
  if (dtype) w_vint(t, 2, (uint64_t)(int64_t)dtype);
  if (ndim) w_packed(t, 3, shape, ndim);
}
/* GrpsMessage { gtensors { tensors: each of t[0..n) } }; t are emptied. */
static void w_gtensors(pbw *msg, pbw *t, size_t n) {
  pbw g = {0};
  for (size_t i = 0; i < n; i++) w_sub(&g, 1, &t[i]);
  w_sub(msg, 5, &g);
}

/* ---- helpers ------------------------------------------------------------------------------ */

static int dec(const void *p, size_t n, isv__grps_msg *m) {
  err[0] = 'X'; /* must be overwritten on failure */
  err[1] = '\0';
  return isv__grps_pb_decode(p, n, &LIM, &A, m, err, sizeof err);
}

static int decw(const pbw *w, isv__grps_msg *m) { return dec(w->p, w->n, m); }

/* The decode fails with ISV_EBADREQ and a message containing `want`. */
static void expect_bad(const pbw *w, const char *want) {
  isv__grps_msg m;
  int rc = decw(w, &m);
  if (rc != ISV_EBADREQ || strstr(err, want) == NULL)
    fail_msg("expected ISV_EBADREQ with \"%s\", got %d \"%s\"", want, rc, err);
}

/* A message with one tensor (t emptied), decoded; returns the tensor. */
static const isv_tensor *one_tensor(pbw *t) {
  pbw msg = {0};
  w_gtensors(&msg, t, 1);
  static isv__grps_msg m;
  int rc = decw(&msg, &m);
  if (rc != 0) fail_msg("decode failed: %d %s", rc, err);
  w_free(&msg);
  assert_int_equal(m.kind, ISV__GRPS_GTENSORS);
  assert_int_equal(m.n_tensors, 1);
  return &m.tensors[0];
}

/* The one tensor t (emptied) must fail to decode with `want` in the message. */
static void tensor_bad(pbw *t, const char *want) {
  pbw msg = {0};
  w_gtensors(&msg, t, 1);
  expect_bad(&msg, want);
  w_free(&msg);
}

static void assert_bytes(const void *a, size_t an, const void *b, size_t bn) {
  assert_int_equal(an, bn);
  if (an) assert_memory_equal(a, b, an);
}

static void assert_tensor_eq(const isv_tensor *a, const isv_tensor *b) {
  assert_string_equal(a->name, b->name);
  assert_int_equal(a->dt, b->dt);
  assert_int_equal(a->ndim, b->ndim);
  for (size_t i = 0; i < a->ndim; i++) assert_int_equal(a->shape[i], b->shape[i]);
  assert_int_equal(a->count, b->count);
  assert_int_equal(a->byte_size, b->byte_size);
  if (a->dt != ISV_BYTES) {
    assert_bytes(a->data, a->byte_size, b->data, b->byte_size);
    return;
  }
  const isv_bytes *x = a->data, *y = b->data;
  for (size_t i = 0; i < a->count; i++) assert_bytes(x[i].ptr, x[i].len, y[i].ptr, y[i].len);
}

static void assert_entry_eq(const isv__grps_entry *a, const isv__grps_entry *b) {
  assert_int_equal(a->map, b->map);
  assert_bytes(a->key, a->key_len, b->key, b->key_len);
  switch (a->map) {
  case ISV__GRPS_S_S:
  case ISV__GRPS_S_B: assert_bytes(a->v.s.p, a->v.s.n, b->v.s.p, b->v.s.n); break;
  case ISV__GRPS_S_I32:
  case ISV__GRPS_S_I64: assert_int_equal(a->v.i, b->v.i); break;
  case ISV__GRPS_S_F: assert_memory_equal(&a->v.f, &b->v.f, 4); break;
  case ISV__GRPS_S_D: assert_memory_equal(&a->v.d, &b->v.d, 8); break;
  case ISV__GRPS_S_T: assert_tensor_eq(&a->t, &b->t); break;
  }
}

static void assert_msg_eq(const isv__grps_msg *a, const isv__grps_msg *b) {
  assert_int_equal(a->has_status, b->has_status);
  assert_int_equal(a->code, b->code);
  assert_bytes(a->msg, a->msg_len, b->msg, b->msg_len);
  assert_int_equal(a->flag, b->flag);
  assert_bytes(a->model, a->model_len, b->model, b->model_len);
  assert_int_equal(a->kind, b->kind);
  if (a->kind == ISV__GRPS_BIN_DATA || a->kind == ISV__GRPS_STR_DATA)
    assert_bytes(a->data, a->data_len, b->data, b->data_len);
  assert_int_equal(a->n_tensors, b->n_tensors);
  for (size_t i = 0; i < a->n_tensors; i++) assert_tensor_eq(&a->tensors[i], &b->tensors[i]);
  assert_int_equal(a->n_entries, b->n_entries);
  for (size_t i = 0; i < a->n_entries; i++) assert_entry_eq(&a->entries[i], &b->entries[i]);
}

/* The by-reference encoder's parts for m (ref_min as given), joined: they must be exactly
 * the copying encoder's bytes. Returns how many parts are at least ref_min bytes long. */
static size_t check_ref_encoding(const isv__grps_msg *m, const isv__buf *want, size_t ref_min) {
  isv__arena a = ISV__ARENA_INIT;
  uv_buf_t *v;
  size_t nv, total;
  int rc = isv__grps_pb_encode_ref(m, &a, ref_min, &v, &nv, &total, err, sizeof err);
  if (rc != 0) fail_msg("encode_ref failed: %d %s", rc, err);
  assert_int_equal(total, want->len);
  size_t off = 0, refs = 0;
  for (size_t i = 0; i < nv; i++) {
    assert_true(off + v[i].len <= want->len);
    assert_memory_equal(v[i].base, want->data + off, v[i].len);
    if (v[i].len >= ref_min && ref_min > 1) refs++;
    off += v[i].len;
  }
  assert_int_equal(off, want->len);
  isv__arena_free(&a);
  return refs;
}

/* Encode m into out (initialised here); asserts success — and that the by-reference encoder
 * gives the same bytes, referencing every payload it can (ref_min 1) or none (huge). */
static void enc(const isv__grps_msg *m, isv__buf *out) {
  isv__buf_init(out, NULL);
  int rc = isv__grps_pb_encode(m, out, err, sizeof err);
  if (rc != 0) fail_msg("encode failed: %d %s", rc, err);
  check_ref_encoding(m, out, 1);
  check_ref_encoding(m, out, SIZE_MAX);
}

/* decode(encode(decode(x))) == decode(x), and encoding is stable from there on. */
static void roundtrip(const void *p, size_t n) {
  isv__grps_msg m1, m2, m3;
  int rc = dec(p, n, &m1);
  if (rc != 0) fail_msg("decode failed: %d %s", rc, err);
  isv__buf b1, b2;
  enc(&m1, &b1);
  assert_int_equal(dec(b1.data, b1.len, &m2), 0);
  assert_msg_eq(&m1, &m2);
  enc(&m2, &b2);
  assert_bytes(b1.data, b1.len, b2.data, b2.len);
  assert_int_equal(dec(b2.data, b2.len, &m3), 0);
  assert_msg_eq(&m1, &m3);
  isv__buf_free(&b2);
  isv__arena_free(&A); /* m2 and m3 point into b1 and b2: free the arena before them */
  isv__buf_free(&b1);
}

static void roundtrip_w(pbw *w) {
  roundtrip(w->p, w->n);
  w_free(w);
}

/* ---- Python cross-checks -------------------------------------------------------------------- */

static void python_gtensors_decode_and_reencode_byte_for_byte(void **state) {
  (void)state;
  isv__grps_msg m;
  assert_int_equal(dec(py_gtensors, sizeof py_gtensors, &m), 0);
  assert_int_equal(m.has_status, 1);
  assert_int_equal(m.code, 200);
  assert_bytes(m.msg, m.msg_len, "ok", 2);
  assert_int_equal(m.flag, ISV__GRPS_SUCCESS);
  assert_bytes(m.model, m.model_len, "m-1", 3);
  assert_int_equal(m.kind, ISV__GRPS_GTENSORS);
  assert_int_equal(m.n_tensors, 8);
  const isv_tensor *t = &m.tensors[0];
  assert_string_equal(t->name, "in1");
  assert_int_equal(t->dt, ISV_INT32);
  assert_int_equal(t->ndim, 2);
  assert_int_equal(t->shape[0], 3);
  assert_int_equal(t->shape[1], 2);
  int32_t i32[] = {1, -2, 3, -4, 5, 2147483647};
  assert_bytes(t->data, t->byte_size, i32, sizeof i32);
  float f32[] = {1.5f, -2.0f};
  assert_int_equal(m.tensors[1].dt, ISV_FP32);
  assert_bytes(m.tensors[1].data, m.tensors[1].byte_size, f32, sizeof f32);
  const isv_bytes *s = m.tensors[2].data;
  assert_int_equal(m.tensors[2].dt, ISV_BYTES);
  assert_int_equal(m.tensors[2].count, 2);
  assert_bytes(s[0].ptr, s[0].len, "ab", 2);
  assert_bytes(s[1].ptr, s[1].len, "h\xc3\xa9llo", 6);
  assert_int_equal(m.tensors[2].byte_size, 8);
  uint16_t h = 0x3800; /* 0.5 */
  assert_int_equal(m.tensors[3].dt, ISV_FP16);
  assert_bytes(m.tensors[3].data, m.tensors[3].byte_size, &h, 2);
  uint8_t u8[] = {0, 255, 7};
  assert_int_equal(m.tensors[4].dt, ISV_UINT8);
  assert_bytes(m.tensors[4].data, m.tensors[4].byte_size, u8, 3);
  int64_t i64[] = {-1, (int64_t)1 << 40};
  assert_int_equal(m.tensors[5].dt, ISV_INT64);
  assert_bytes(m.tensors[5].data, m.tensors[5].byte_size, i64, sizeof i64);
  double f64 = -0.125;
  assert_int_equal(m.tensors[6].dt, ISV_FP64);
  assert_int_equal(m.tensors[6].ndim, 2);
  assert_bytes(m.tensors[6].data, m.tensors[6].byte_size, &f64, 8);
  int8_t i8[] = {-128, 127};
  assert_int_equal(m.tensors[7].dt, ISV_INT8);
  assert_bytes(m.tensors[7].data, m.tensors[7].byte_size, i8, 2);
  isv__buf b;
  enc(&m, &b);
  assert_bytes(b.data, b.len, py_gtensors, sizeof py_gtensors);
  isv__buf_free(&b);
  roundtrip(py_gtensors, sizeof py_gtensors);
}

static void python_gmap_decode_and_reencode_byte_for_byte(void **state) {
  (void)state;
  isv__grps_msg m;
  assert_int_equal(dec(py_gmap, sizeof py_gmap, &m), 0);
  assert_int_equal(m.has_status, 0);
  assert_int_equal(m.model_len, 0);
  assert_int_equal(m.kind, ISV__GRPS_GMAP);
  assert_int_equal(m.n_entries, 7);
  const isv__grps_entry *e = m.entries;
  assert_int_equal(e[0].map, ISV__GRPS_S_S);
  assert_string_equal(e[0].key, "a");
  assert_bytes(e[0].v.s.p, e[0].v.s.n, "b", 1);
  assert_int_equal(e[1].map, ISV__GRPS_S_B);
  assert_bytes(e[1].v.s.p, e[1].v.s.n, "\x00\xff", 2);
  assert_int_equal(e[2].map, ISV__GRPS_S_I32);
  assert_int_equal(e[2].v.i, -5);
  assert_int_equal(e[3].map, ISV__GRPS_S_I64);
  assert_string_equal(e[3].key, "big");
  assert_int_equal(e[3].v.i, -((int64_t)1 << 40));
  assert_int_equal(e[4].map, ISV__GRPS_S_F);
  assert_true(e[4].v.f == 0.25f);
  assert_int_equal(e[5].map, ISV__GRPS_S_D);
  assert_true(e[5].v.d == -1.5);
  assert_int_equal(e[6].map, ISV__GRPS_S_T);
  assert_string_equal(e[6].key, "t");
  assert_string_equal(e[6].t.name, "t");
  assert_int_equal(e[6].t.dt, ISV_INT16);
  int16_t i16[] = {-3, 300};
  assert_bytes(e[6].t.data, e[6].t.byte_size, i16, sizeof i16);
  isv__buf b;
  enc(&m, &b);
  assert_bytes(b.data, b.len, py_gmap, sizeof py_gmap);
  isv__buf_free(&b);
  roundtrip(py_gmap, sizeof py_gmap);
}

/* ---- kinds ---------------------------------------------------------------------------------- */

static void every_kind_decodes_and_round_trips(void **state) {
  (void)state;
  isv__grps_msg m;
  assert_int_equal(dec(NULL, 0, &m), 0); /* the empty message: health checks */
  assert_int_equal(m.kind, ISV__GRPS_NONE);
  assert_int_equal(m.has_status, 0);
  roundtrip("", 0);

  pbw w = {0};
  w_str(&w, 2, "model-2");
  w_len(&w, 3, "\x00\x01\xfe", 3);
  assert_int_equal(decw(&w, &m), 0);
  assert_int_equal(m.kind, ISV__GRPS_BIN_DATA);
  assert_bytes(m.data, m.data_len, "\x00\x01\xfe", 3);
  assert_true(m.data == (const char *)w.p + w.n - 3); /* in place */
  assert_bytes(m.model, m.model_len, "model-2", 7);
  roundtrip_w(&w);

  w_str(&w, 4, "hello");
  assert_int_equal(decw(&w, &m), 0);
  assert_int_equal(m.kind, ISV__GRPS_STR_DATA);
  assert_bytes(m.data, m.data_len, "hello", 5);
  roundtrip_w(&w);

  w_len(&w, 4, "", 0); /* an empty str_data is still the member set */
  assert_int_equal(decw(&w, &m), 0);
  assert_int_equal(m.kind, ISV__GRPS_STR_DATA);
  assert_int_equal(m.data_len, 0);
  isv__buf b;
  enc(&m, &b);
  assert_bytes(b.data, b.len, "\x22\x00", 2); /* as Python writes it */
  isv__buf_free(&b);
  roundtrip_w(&w);

  w_len(&w, 6, "", 0); /* ndarray: an empty message over protobuf */
  assert_int_equal(decw(&w, &m), 0);
  assert_int_equal(m.kind, ISV__GRPS_NDARRAY);
  assert_int_equal(m.n_tensors, 0);
  enc(&m, &b);
  assert_bytes(b.data, b.len, "\x32\x00", 2);
  isv__buf_free(&b);
  roundtrip_w(&w);

  w_len(&w, 5, "", 0); /* an empty gtensors */
  assert_int_equal(decw(&w, &m), 0);
  assert_int_equal(m.kind, ISV__GRPS_GTENSORS);
  assert_int_equal(m.n_tensors, 0);
  roundtrip_w(&w);

  w_len(&w, 7, "", 0); /* an empty gmap */
  assert_int_equal(decw(&w, &m), 0);
  assert_int_equal(m.kind, ISV__GRPS_GMAP);
  assert_int_equal(m.n_entries, 0);
  roundtrip_w(&w);

  w_len(&w, 1, "", 0); /* an empty status is present */
  assert_int_equal(decw(&w, &m), 0);
  assert_int_equal(m.has_status, 1);
  enc(&m, &b);
  assert_bytes(b.data, b.len, "\x0a\x00", 2);
  isv__buf_free(&b);
  roundtrip_w(&w);
}

static void ndarray_with_a_tensor_is_written_as_gtensors(void **state) {
  (void)state;
  int64_t shape[] = {2};
  float v[] = {1, 2};
  isv_tensor t = {.name = "x", .dt = ISV_FP32, .shape = shape, .ndim = 1, .data = v,
                  .count = 2, .byte_size = 8};
  isv__grps_msg m = {.kind = ISV__GRPS_NDARRAY, .tensors = &t, .n_tensors = 1};
  isv__buf b;
  enc(&m, &b);
  isv__grps_msg d;
  assert_int_equal(dec(b.data, b.len, &d), 0);
  assert_int_equal(d.kind, ISV__GRPS_GTENSORS);
  assert_int_equal(d.n_tensors, 1);
  assert_tensor_eq(&t, &d.tensors[0]);
  isv__arena_free(&A);
  isv__buf_free(&b);
}

static void status_fields_and_flag_out_of_range(void **state) {
  (void)state;
  pbw s = {0}, w = {0};
  w_vint(&s, 1, (uint64_t)(int64_t)-7); /* negative int32: 10-byte varint */
  w_str(&s, 2, "bad");
  w_vint(&s, 3, 9); /* not a StatusFlag: kept as UNKNOWN */
  w_sub(&w, 1, &s);
  isv__grps_msg m;
  assert_int_equal(decw(&w, &m), 0);
  assert_int_equal(m.code, -7);
  assert_bytes(m.msg, m.msg_len, "bad", 3);
  assert_int_equal(m.flag, ISV__GRPS_UNKNOWN);
  w_free(&w);
  w_vint(&s, 3, 2);
  w_sub(&w, 1, &s);
  w_vint(&s, 1, 503); /* a second status merges into the first */
  w_sub(&w, 1, &s);
  assert_int_equal(decw(&w, &m), 0);
  assert_int_equal(m.code, 503);
  assert_int_equal(m.flag, ISV__GRPS_FAILURE);
  roundtrip_w(&w);
}

/* ---- dtypes --------------------------------------------------------------------------------- */

/* Every type grps carries: canonical → encode → decode gives it back; and from the wire. */
static void every_dtype_round_trips_from_memory(void **state) {
  (void)state;
  uint8_t u8[] = {0, 1, 255};
  int8_t i8[] = {-128, 0, 127};
  int16_t i16[] = {-32768, 5, 32767};
  int32_t i32[] = {INT32_MIN, -1, INT32_MAX};
  int64_t i64[] = {INT64_MIN, -1, INT64_MAX};
  uint16_t f16[] = {0x3c00, 0xc100, 0x7bff};
  float f32[] = {1.5f, -0.0f, 3e38f};
  double f64[] = {1e300, -2.5, 0};
  isv_bytes by[] = {{"a", 1}, {"", 0}, {"\xe2\x82\xac", 3}};
  struct {
    isv_datatype dt;
    const void *data;
    size_t bytes;
  } c[] = {{ISV_UINT8, u8, 3},    {ISV_INT8, i8, 3},    {ISV_INT16, i16, 6},
           {ISV_INT32, i32, 12},  {ISV_INT64, i64, 24}, {ISV_FP16, f16, 6},
           {ISV_FP32, f32, 12},   {ISV_FP64, f64, 24},  {ISV_BYTES, by, 4}};
  int64_t shape[] = {1, 3};
  for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
    isv_tensor t = {.name = "t", .dt = c[i].dt, .shape = shape, .ndim = 2,
                    .data = (void *)(uintptr_t)c[i].data, .count = 3, .byte_size = c[i].bytes};
    isv__grps_msg m = {.kind = ISV__GRPS_GTENSORS, .tensors = &t, .n_tensors = 1};
    isv__buf b;
    enc(&m, &b);
    isv__grps_msg d;
    assert_int_equal(dec(b.data, b.len, &d), 0);
    assert_tensor_eq(&t, &d.tensors[0]);
    roundtrip(b.data, b.len);
    isv__buf_free(&b);
  }
}

static void every_dtype_decodes_from_the_wire(void **state) {
  (void)state;
  int64_t three[] = {3};
  int64_t iv[] = {1, -1, 100};
  for (int dt = 1; dt <= 5; dt++) { /* the varint types, dtype 1..5 in flat field dt + 3 */
    pbw t = {0};
    w_thead(&t, "v", dt, three, 1);
    int64_t uv[] = {1, 255, 100};
    w_packed(&t, (unsigned)dt + 3, dt == 1 ? uv : iv, 3);
    const isv_tensor *x = one_tensor(&t);
    static const isv_datatype want[] = {0, ISV_UINT8, ISV_INT8, ISV_INT16, ISV_INT32, ISV_INT64};
    assert_int_equal(x->dt, want[dt]);
    assert_int_equal(x->count, 3);
    assert_int_equal(x->byte_size, 3 * isv_datatype_size(want[dt]));
  }
  pbw t = {0};
  w_thead(&t, "h", 6, three, 1);
  w_f32(&t, 9, 1.0f);
  w_f32(&t, 9, -2.5f);
  w_f32(&t, 9, 65504.0f);
  const isv_tensor *x = one_tensor(&t);
  uint16_t f16[] = {0x3c00, 0xc100, 0x7bff};
  assert_int_equal(x->dt, ISV_FP16);
  assert_bytes(x->data, x->byte_size, f16, sizeof f16);
  w_thead(&t, "d", 8, NULL, 0); /* no shape: [count] */
  w_f64(&t, 11, 0.5);
  x = one_tensor(&t);
  assert_int_equal(x->dt, ISV_FP64);
  assert_int_equal(x->ndim, 1);
  assert_int_equal(x->shape[0], 1);
  w_thead(&t, "s", 9, NULL, 0);
  w_str(&t, 12, "x");
  w_str(&t, 12, "");
  x = one_tensor(&t);
  assert_int_equal(x->dt, ISV_BYTES);
  assert_int_equal(x->count, 2);
  assert_int_equal(x->byte_size, 1);
}

static void fp16_is_floats_on_the_wire(void **state) {
  (void)state;
  uint16_t h[] = {0x3c00, 0x8000, 0x7c00, 0x0001}; /* 1, -0, +inf, smallest subnormal */
  int64_t shape[] = {4};
  isv_tensor t = {.name = "h", .dt = ISV_FP16, .shape = shape, .ndim = 1, .data = h,
                  .count = 4, .byte_size = 8};
  isv__grps_msg m = {.kind = ISV__GRPS_GTENSORS, .tensors = &t, .n_tensors = 1};
  isv__buf b;
  enc(&m, &b);
  /* ... 4a 10 then four little-endian floats */
  const uint8_t *p = (const uint8_t *)b.data + b.len - 16;
  assert_int_equal(p[-2], 0x4a);
  assert_int_equal(p[-1], 16);
  for (int i = 0; i < 4; i++) {
    float f;
    memcpy(&f, p + 4 * i, 4);
    assert_int_equal(isv__f32_to_f16(f), h[i]);
    assert_memory_equal(&(float){isv__f16_to_f32(h[i])}, &f, 4);
  }
  roundtrip(b.data, b.len);
  isv__buf_free(&b);
}

static void negative_int32_is_a_ten_byte_varint(void **state) {
  (void)state;
  int32_t v = -1;
  int64_t shape[] = {1};
  isv_tensor t = {.name = "", .dt = ISV_INT32, .shape = shape, .ndim = 1, .data = &v,
                  .count = 1, .byte_size = 4};
  isv__grps_msg m = {.kind = ISV__GRPS_GTENSORS, .tensors = &t, .n_tensors = 1};
  isv__buf b;
  enc(&m, &b);
  /* 2a 13 | 0a 11 | 10 04 | 1a 01 01 | 3a 0a ff*9 01 — no name field for an empty name */
  static const uint8_t want[] = {0x2a, 0x13, 0x0a, 0x11, 0x10, 0x04, 0x1a, 0x01, 0x01, 0x3a,
                                 0x0a, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
                                 0x01};
  assert_bytes(b.data, b.len, want, sizeof want);
  isv__buf_free(&b);
  /* and a 5-byte (truncated) form and a 64-bit value are both read as protobuf does */
  pbw w = {0};
  w_thead(&w, "i", 4, NULL, 0);
  w_vint(&w, 7, 0xffffffffu);                /* -1 in 32 bits */
  w_vint(&w, 7, ((uint64_t)1 << 32) | 5u);   /* low 32 bits: 5 */
  const isv_tensor *x = one_tensor(&w);
  int32_t got[] = {-1, 5};
  assert_bytes(x->data, x->byte_size, got, sizeof got);
}

/* ---- repeated fields ------------------------------------------------------------------------ */

static void packed_and_unpacked_fields_concatenate(void **state) {
  (void)state;
  pbw t = {0};
  int64_t s1[] = {2}, s2[] = {3};
  w_str(&t, 1, "mix");
  w_vint(&t, 2, 4);
  w_packed(&t, 3, s1, 1); /* shape [2, 3]: packed then unpacked */
  w_vint(&t, 3, (uint64_t)s2[0]);
  int64_t a[] = {1, 2};
  w_packed(&t, 7, a, 2);
  w_vint(&t, 7, 3);
  w_packed(&t, 7, NULL, 0); /* an empty packed run */
  int64_t b[] = {4, 5, -6};
  w_packed(&t, 7, b, 3);
  const isv_tensor *x = one_tensor(&t);
  assert_int_equal(x->ndim, 2);
  assert_int_equal(x->shape[0], 2);
  assert_int_equal(x->shape[1], 3);
  int32_t want[] = {1, 2, 3, 4, 5, -6};
  assert_bytes(x->data, x->byte_size, want, sizeof want);

  w_thead(&t, "f", 7, NULL, 0);
  w_f32(&t, 10, 1.0f);
  float two[] = {2.0f, 3.0f};
  w_len(&t, 10, two, sizeof two);
  w_f32(&t, 10, 4.0f);
  x = one_tensor(&t);
  float fw[] = {1, 2, 3, 4};
  assert_bytes(x->data, x->byte_size, fw, sizeof fw);
  assert_int_equal((uintptr_t)x->data % 4, 0);

  w_thead(&t, "d", 8, NULL, 0);
  double dd[] = {1, 2};
  w_len(&t, 11, dd, sizeof dd);
  w_f64(&t, 11, 3);
  x = one_tensor(&t);
  double dw[] = {1, 2, 3};
  assert_bytes(x->data, x->byte_size, dw, sizeof dw);
}

static void a_repeated_gtensors_merges_and_other_members_replace(void **state) {
  (void)state;
  pbw w = {0}, t[2] = {{0}};
  w_thead(&t[0], "a", 7, NULL, 0);
  w_f32(&t[0], 10, 1);
  w_gtensors(&w, t, 1);
  w_str(&w, 2, "m"); /* a non-oneof field in between does not interrupt the merge */
  w_thead(&t[1], "b", 7, NULL, 0);
  w_f32(&t[1], 10, 2);
  w_gtensors(&w, &t[1], 1);
  isv__grps_msg m;
  assert_int_equal(decw(&w, &m), 0);
  assert_int_equal(m.kind, ISV__GRPS_GTENSORS);
  assert_int_equal(m.n_tensors, 2);
  assert_string_equal(m.tensors[0].name, "a");
  assert_string_equal(m.tensors[1].name, "b");
  roundtrip(w.p, w.n);

  w_str(&w, 4, "text"); /* a later member replaces gtensors */
  assert_int_equal(decw(&w, &m), 0);
  assert_int_equal(m.kind, ISV__GRPS_STR_DATA);
  assert_int_equal(m.n_tensors, 0);
  assert_bytes(m.data, m.data_len, "text", 4);

  w_thead(&t[0], "c", 7, NULL, 0); /* and gtensors after it starts afresh */
  w_f32(&t[0], 10, 3);
  w_gtensors(&w, t, 1);
  assert_int_equal(decw(&w, &m), 0);
  assert_int_equal(m.kind, ISV__GRPS_GTENSORS);
  assert_int_equal(m.n_tensors, 1);
  assert_string_equal(m.tensors[0].name, "c");
  roundtrip_w(&w);

  pbw e = {0}, g = {0};
  w_str(&e, 1, "k");
  w_str(&e, 2, "v");
  w_sub(&g, 1, &e);
  w_sub(&w, 7, &g);
  w_len(&w, 3, "bin", 3);
  w_str(&e, 1, "k2");
  w_vint(&e, 2, 5);
  w_sub(&g, 3, &e);
  w_sub(&w, 7, &g); /* gmap, bin_data, gmap: only the last gmap counts */
  assert_int_equal(decw(&w, &m), 0);
  assert_int_equal(m.kind, ISV__GRPS_GMAP);
  assert_int_equal(m.n_entries, 1);
  assert_string_equal(m.entries[0].key, "k2");
  assert_int_equal(m.entries[0].v.i, 5);
  roundtrip_w(&w);
}

/* ---- tensor rules --------------------------------------------------------------------------- */

static void range_errors_name_the_element(void **state) {
  (void)state;
  pbw t = {0};
  int64_t v[] = {1, 200};
  w_thead(&t, "q", 2, NULL, 0);
  w_packed(&t, 5, v, 2);
  tensor_bad(&t, "gtensors: tensor 'q': flat_int8[1] = 200 is out of range for DT_INT8");
  int64_t n[] = {-129};
  w_thead(&t, "q", 2, NULL, 0);
  w_packed(&t, 5, n, 1);
  tensor_bad(&t, "flat_int8[0] = -129 is out of range");
  int64_t s[] = {0, 0, 40000};
  w_thead(&t, "w", 3, NULL, 0);
  w_packed(&t, 6, s, 3);
  tensor_bad(&t, "tensor 'w': flat_int16[2] = 40000 is out of range for DT_INT16");
  int64_t u[] = {256};
  w_thead(&t, "u", 1, NULL, 0);
  w_packed(&t, 4, u, 1);
  tensor_bad(&t, "tensor 'u': flat_uint8[0] = 256 is out of range for DT_UINT8");
}

static void shape_and_count_must_agree(void **state) {
  (void)state;
  pbw t = {0};
  int64_t shape[] = {3, 2}, v[] = {1, 2, 3, 4, 5};
  w_thead(&t, "in1", 4, shape, 2);
  w_packed(&t, 7, v, 5);
  tensor_bad(&t, "gtensors: tensor 'in1' is DT_INT32 with shape [3,2] (6 elements) but "
                 "flat_int32 has 5");
  int64_t big[] = {4294967295LL, 4294967295LL, 4294967295LL};
  w_thead(&t, "o", 7, big, 3);
  tensor_bad(&t, "tensor 'o' is DT_FLOAT32 with shape [4294967295,4294967295,4294967295], "
                 "whose size overflows");
  int64_t many[33];
  for (int i = 0; i < 33; i++) many[i] = 1;
  w_thead(&t, "n", 7, many, 33);
  w_f32(&t, 10, 1);
  tensor_bad(&t, "has 33 dimensions, at most 32 allowed");
  int64_t empty[] = {0, 3}; /* an empty tensor is fine */
  w_thead(&t, "e", 7, empty, 2);
  const isv_tensor *x = one_tensor(&t);
  assert_int_equal(x->count, 0);
  assert_int_equal(x->byte_size, 0);
  assert_non_null(x->data);
  assert_int_equal(x->ndim, 2);
  w_thead(&t, "z", 9, NULL, 0); /* a dtype and no data, no shape: shape [0] */
  x = one_tensor(&t);
  assert_int_equal(x->dt, ISV_BYTES);
  assert_int_equal(x->ndim, 1);
  assert_int_equal(x->shape[0], 0);
  int64_t huge[] = {(int64_t)1 << 33}; /* a uint32 dimension keeps its low 32 bits */
  w_thead(&t, "t", 7, NULL, 0);
  w_packed(&t, 3, huge, 1);
  x = one_tensor(&t);
  assert_int_equal(x->ndim, 1);
  assert_int_equal(x->shape[0], 0);
}

static void data_in_the_wrong_flat_field(void **state) {
  (void)state;
  pbw t = {0};
  w_thead(&t, "in1", 4, NULL, 0);
  w_f32(&t, 10, 1);
  tensor_bad(&t, "gtensors: tensor 'in1' is DT_INT32 but has data in flat_float32 "
                 "(DT_INT32 takes flat_int32)");
  w_thead(&t, NULL, 9, NULL, 0);
  w_str(&t, 12, "a");
  w_vint(&t, 4, 1);
  tensor_bad(&t, "gtensors: tensor #0 is DT_STRING but has data in flat_uint8");
  /* an empty packed field of another type is no data */
  w_thead(&t, "ok", 4, NULL, 0);
  w_vint(&t, 7, 1);
  w_len(&t, 10, "", 0);
  const isv_tensor *x = one_tensor(&t);
  assert_int_equal(x->dt, ISV_INT32);
}

static void dt_invalid_takes_the_type_of_its_data(void **state) {
  (void)state;
  pbw t = {0};
  w_str(&t, 1, "f");
  w_f32(&t, 10, 2.5f);
  const isv_tensor *x = one_tensor(&t);
  assert_int_equal(x->dt, ISV_FP32);
  assert_int_equal(x->count, 1);
  w_str(&t, 1, "s");
  w_str(&t, 12, "x");
  x = one_tensor(&t);
  assert_int_equal(x->dt, ISV_BYTES);
  w_str(&t, 1, "none");
  tensor_bad(&t, "gtensors: tensor 'none' has no dtype");
  w_vint(&t, 2, 0); /* explicitly DT_INVALID, data in two fields */
  w_vint(&t, 4, 1);
  w_f64(&t, 11, 1);
  tensor_bad(&t, "tensor #0 has no dtype and data in both flat_uint8 and flat_float64");
  w_vint(&t, 2, 10);
  tensor_bad(&t, "tensor #0 has dtype 10, not a grps DataType (0..9)");
  w_vint(&t, 2, (uint64_t)(int64_t)-1);
  tensor_bad(&t, "has dtype -1, not a grps DataType");
}

static void names_must_be_text(void **state) {
  (void)state;
  pbw t = {0};
  w_len(&t, 1, "a\xff", 2);
  w_vint(&t, 2, 7);
  tensor_bad(&t, "tensor #0: its name is not valid UTF-8");
  w_len(&t, 1, "a\0b", 3);
  w_vint(&t, 2, 7);
  tensor_bad(&t, "holds a NUL byte");
  char longname[200];
  memset(longname, 'n', sizeof longname - 3);
  memcpy(longname + 63, "\xc3\xa9", 2); /* a character across the 64-byte cut */
  longname[sizeof longname - 3] = '\0';
  w_str(&t, 1, longname);
  w_vint(&t, 2, 4);
  w_f32(&t, 10, 1);
  pbw msg = {0};
  w_gtensors(&msg, &t, 1);
  isv__grps_msg m;
  assert_int_equal(decw(&msg, &m), ISV_EBADREQ);
  assert_non_null(strstr(err, "nnn' is DT_INT32 but has data in flat_float32"));
  assert_null(strstr(err, "\xc3'")); /* cut before the two-byte character */
  w_free(&msg);
}

/* ---- limits --------------------------------------------------------------------------------- */

static void max_tensors_bounds_tensors_and_map_entries(void **state) {
  (void)state;
  isv__grps_limits small = {2, 8};
  pbw w = {0}, t[3] = {{0}};
  for (int i = 0; i < 3; i++) {
    w_vint(&t[i], 2, 7);
    w_f32(&t[i], 10, 1);
  }
  w_gtensors(&w, t, 3);
  isv__grps_msg m;
  assert_int_equal(isv__grps_pb_decode(w.p, w.n, &small, &A, &m, err, sizeof err), ISV_EBADREQ);
  assert_string_equal(err, "gtensors: 3 tensors, at most 2 allowed");
  w_free(&w);
  pbw g = {0}, e = {0};
  for (unsigned map = 1; map <= 3; map++) { /* all maps together */
    w_str(&e, 1, "k");
    w_sub(&g, map, &e);
  }
  w_sub(&w, 7, &g);
  assert_int_equal(isv__grps_pb_decode(w.p, w.n, &small, &A, &m, err, sizeof err), ISV_EBADREQ);
  assert_string_equal(err, "gmap: 3 map entries, at most 2 allowed");
  small.max_tensors = 3;
  assert_int_equal(isv__grps_pb_decode(w.p, w.n, &small, &A, &m, err, sizeof err), 0);
  assert_int_equal(m.n_entries, 3);
  w_free(&w);
}

/* ---- maps ----------------------------------------------------------------------------------- */

static void map_entries_missing_key_or_value_take_defaults(void **state) {
  (void)state;
  pbw w = {0}, g = {0}, e = {0};
  w_str(&e, 2, "only value");
  w_sub(&g, 1, &e); /* s_s without key */
  w_str(&e, 1, "n");
  w_sub(&g, 3, &e); /* s_i32 without value */
  w_sub(&g, 5, &e); /* s_f: an empty entry */
  w_str(&e, 1, "b");
  w_sub(&g, 2, &e); /* s_b without value */
  w_str(&e, 1, "d");
  w_f64(&e, 2, 1.0);
  w_f64(&e, 2, 2.0); /* a repeated value: the last wins */
  w_str(&e, 1, "dd"); /* and a repeated key too */
  w_sub(&g, 6, &e);
  w_str(&e, 1, "i");
  w_vint(&e, 2, (uint64_t)-3LL);
  w_sub(&g, 3, &e);
  w_str(&e, 1, "big");
  w_vint(&e, 2, ((uint64_t)1 << 32) + 7); /* int32: the low 32 bits */
  w_sub(&g, 3, &e);
  w_sub(&w, 7, &g);
  isv__grps_msg m;
  assert_int_equal(decw(&w, &m), 0);
  assert_int_equal(m.n_entries, 7);
  const isv__grps_entry *x = m.entries;
  assert_int_equal(x[0].map, ISV__GRPS_S_S);
  assert_string_equal(x[0].key, "");
  assert_int_equal(x[0].key_len, 0);
  assert_bytes(x[0].v.s.p, x[0].v.s.n, "only value", 10);
  assert_int_equal(x[1].map, ISV__GRPS_S_I32);
  assert_int_equal(x[1].v.i, 0);
  assert_int_equal(x[2].map, ISV__GRPS_S_F);
  assert_true(x[2].v.f == 0.0f);
  assert_int_equal(x[3].v.s.n, 0);
  assert_non_null(x[3].v.s.p);
  assert_string_equal(x[4].key, "dd");
  assert_true(x[4].v.d == 2.0);
  assert_int_equal(x[5].v.i, -3);
  assert_int_equal(x[6].v.i, 7);
  roundtrip_w(&w);
}

static void s_t_holds_tensors(void **state) {
  (void)state;
  pbw w = {0}, g = {0}, e = {0}, t = {0};
  int64_t shape[] = {2};
  w_thead(&t, NULL, 7, shape, 1);
  w_f32(&t, 10, 1);
  w_str(&e, 1, "x");
  w_sub(&e, 2, &t);
  w_f32(&t, 10, 2); /* a second value message merges into the first */
  w_sub(&e, 2, &t);
  w_sub(&g, 7, &e);
  w_sub(&w, 7, &g);
  isv__grps_msg m;
  assert_int_equal(decw(&w, &m), 0);
  assert_int_equal(m.n_entries, 1);
  const isv_tensor *x = &m.entries[0].t;
  assert_string_equal(m.entries[0].key, "x");
  assert_string_equal(x->name, "");
  assert_int_equal(x->dt, ISV_FP32);
  float want[] = {1, 2};
  assert_bytes(x->data, x->byte_size, want, sizeof want);
  roundtrip_w(&w);

  w_str(&e, 1, "y"); /* no value: a default GenericTensor, which has no dtype */
  w_sub(&g, 7, &e);
  w_sub(&w, 7, &g);
  expect_bad(&w, "gmap: s_t['y']: tensor #0 has no dtype");
  w_free(&w);
  w_str(&t, 1, "in");
  w_vint(&t, 2, 3);
  w_vint(&t, 6, 70000);
  w_str(&e, 1, "z");
  w_sub(&e, 2, &t);
  w_sub(&g, 7, &e);
  w_sub(&w, 7, &g);
  expect_bad(&w, "gmap: s_t['z']: tensor 'in': flat_int16[0] = 70000 is out of range");
  w_free(&w);
}

/* ---- malformed input ------------------------------------------------------------------------ */

static void truncation_never_reads_past_the_end(void **state) {
  (void)state;
  /* Every prefix, in an exact-size heap copy so ASan sees any overread: either a message (cut
   * on a top-level field boundary) or ISV_EBADREQ with a message. */
  for (size_t n = 0; n < sizeof py_gtensors; n++) {
    uint8_t *p = malloc(n ? n : 1);
    memcpy(p, py_gtensors, n);
    isv__grps_msg m;
    int rc = dec(p, n, &m);
    int boundary = n == 0 || n == 11 || n == 16;
    if (boundary) {
      assert_int_equal(rc, 0);
    } else {
      assert_int_equal(rc, ISV_EBADREQ);
      assert_non_null(strstr(err, "malformed protobuf"));
    }
    free(p);
    isv__arena_free(&A);
  }
  for (size_t n = 0; n < sizeof py_gmap; n++) {
    isv__grps_msg m;
    uint8_t *p = malloc(n ? n : 1);
    memcpy(p, py_gmap, n);
    assert_int_equal(dec(p, n, &m), n == 0 ? 0 : ISV_EBADREQ);
    free(p);
  }
}

static void malformed_varints_and_wire_types(void **state) {
  (void)state;
  pbw w = {0};
  static const uint8_t long_key[] = {0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
                                     0x80, 0x80, 0x80, 0x80, 0x01};
  w_put(&w, long_key, sizeof long_key);
  expect_bad(&w, "malformed protobuf: the GrpsMessage");
  w_free(&w);
  w_put(&w, "\x00\x01", 2); /* field number 0 */
  expect_bad(&w, "malformed protobuf");
  w_free(&w);
  w_put(&w, "\x0b", 1); /* a group */
  expect_bad(&w, "malformed protobuf");
  w_free(&w);
  pbw t = {0};
  w_vint(&t, 2, 4);
  w_len(&t, 7, "\x01\x81", 2); /* packed ending inside a varint */
  tensor_bad(&t, "packed flat_int32 of gtensors: tensor #0 ends inside a varint");
  w_vint(&t, 2, 5);
  static const uint8_t eleven[] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
                                   0xff, 0xff, 0xff, 0xff, 0x01};
  w_len(&t, 8, eleven, sizeof eleven); /* a varint over 10 bytes */
  tensor_bad(&t, "packed flat_int64 of gtensors: tensor #0 holds an invalid varint");
  w_vint(&t, 2, 7);
  w_len(&t, 10, "\x00\x00\x80", 3);
  tensor_bad(&t, "packed flat_float32 of gtensors: tensor #0 has 3 bytes, not a multiple of 4");
  w_vint(&t, 2, 7);
  w_vint(&t, 10, 1); /* a float as a varint */
  tensor_bad(&t, "flat_float32 of gtensors: tensor #0 has wire type 0, expected 5 or 2");
  w_vint(&t, 1, 1); /* a name as a varint */
  tensor_bad(&t, "the name of gtensors: tensor #0 (field 1) has wire type 0, expected 2");
  w_vint(&t, 2, 7);
  w_len(&t, 3, "\x81", 1);
  tensor_bad(&t, "packed shape of gtensors: tensor #0 ends inside a varint");
  w_vint(&w, 5, 1);
  expect_bad(&w, "gtensors (field 5) has wire type 0, expected 2");
  w_free(&w);
  w_len(&w, 6, "\x0a\x05", 2); /* ndarray's contents are framed too */
  expect_bad(&w, "malformed protobuf: ndarray");
  w_free(&w);
  pbw g = {0}, e = {0};
  w_str(&e, 1, "f");
  w_vint(&e, 2, 1);
  w_sub(&g, 5, &e);
  w_sub(&w, 7, &g);
  expect_bad(&w, "gmap: a value of s_f (field 2) has wire type 0, expected 5");
  w_free(&w);
  w_len(&g, 1, "\x0a\x09", 2);
  w_sub(&w, 7, &g);
  expect_bad(&w, "malformed protobuf: gmap: an entry of s_s");
  w_free(&w);
}

static void invalid_utf8_is_refused_naming_the_field(void **state) {
  (void)state;
  pbw w = {0};
  w_len(&w, 4, "ok\xc0\xaf", 4); /* an overlong '/' */
  expect_bad(&w, "str_data is not valid UTF-8");
  w_free(&w);
  w_len(&w, 2, "\xed\xa0\x80", 3); /* a surrogate */
  expect_bad(&w, "model is not valid UTF-8");
  w_free(&w);
  pbw s = {0};
  w_len(&s, 2, "\xff", 1);
  w_sub(&w, 1, &s);
  expect_bad(&w, "status.msg is not valid UTF-8");
  w_free(&w);
  pbw t = {0};
  w_str(&t, 1, "s");
  w_vint(&t, 2, 9);
  w_str(&t, 12, "fine");
  w_len(&t, 12, "\xf5", 1);
  tensor_bad(&t, "gtensors: tensor 's': flat_string[1] is not valid UTF-8");
  pbw g = {0}, e = {0};
  w_str(&e, 1, "k");
  w_len(&e, 2, "\x80", 1);
  w_sub(&g, 1, &e);
  w_sub(&w, 7, &g);
  expect_bad(&w, "gmap: the value of s_s['k'] is not valid UTF-8");
  w_free(&w);
  w_len(&e, 1, "\x80", 1);
  w_sub(&g, 4, &e);
  w_sub(&w, 7, &g);
  expect_bad(&w, "gmap: a key of s_i64 is not valid UTF-8");
  w_free(&w);
  w_str(&e, 1, "k"); /* s_b is bytes: anything goes */
  w_len(&e, 2, "\x80", 1);
  w_sub(&g, 2, &e);
  w_sub(&w, 7, &g);
  isv__grps_msg m;
  assert_int_equal(decw(&w, &m), 0);
  w_len(&w, 3, "\xff\xfe", 2); /* and so is bin_data */
  assert_int_equal(decw(&w, &m), 0);
  assert_int_equal(m.kind, ISV__GRPS_BIN_DATA);
  w_free(&w);
}

/* Fields 15..18 of every wire type, in every message. */
static void w_unknowns(pbw *w) {
  w_vint(w, 15, 123456789);
  w_f64(w, 16, 1.0);
  w_str(w, 17, "junk");
  w_f32(w, 18, 2.0f);
  w_vint(w, 1000000, 1); /* a multi-byte key */
}

static void unknown_fields_are_skipped(void **state) {
  (void)state;
  pbw w = {0}, s = {0}, t = {0}, g = {0}, e = {0}, gm = {0};
  w_unknowns(&w);
  w_vint(&s, 1, 200);
  w_unknowns(&s);
  w_sub(&w, 1, &s);
  w_str(&t, 1, "x");
  w_unknowns(&t);
  w_vint(&t, 2, 4);
  w_vint(&t, 7, 9);
  w_unknowns(&t);
  w_unknowns(&g);
  w_sub(&g, 1, &t);
  w_unknowns(&g);
  w_sub(&w, 5, &g);
  w_unknowns(&w);
  isv__grps_msg m;
  assert_int_equal(decw(&w, &m), 0);
  assert_int_equal(m.code, 200);
  assert_int_equal(m.n_tensors, 1);
  assert_int_equal(*(const int32_t *)m.tensors[0].data, 9);
  roundtrip_w(&w);
  w_str(&e, 1, "k");
  w_unknowns(&e);
  w_vint(&e, 2, 42);
  w_sub(&gm, 4, &e);
  w_unknowns(&gm);
  w_sub(&w, 7, &gm);
  assert_int_equal(decw(&w, &m), 0);
  assert_int_equal(m.n_entries, 1);
  assert_int_equal(m.entries[0].v.i, 42);
  roundtrip_w(&w);
}

/* ---- zero copy ------------------------------------------------------------------------------ */

/* A message whose FP32 (or FP64) payload of n elements starts `off` bytes into a 16-aligned
 * buffer (the name's length shifts it). */
static uint8_t *placed(int fp64, size_t n, size_t off, size_t *len, size_t *data_at) {
  size_t w = fp64 ? 8 : 4;
  for (size_t pad = 0; pad < 64; pad++) {
    pbw t = {0}, msg = {0};
    char name[80];
    memset(name, 'p', pad + 1);
    name[pad + 1] = '\0';
    w_thead(&t, name, fp64 ? 8 : 7, NULL, 0);
    w_key(&t, fp64 ? 11 : 10, 2);
    w_varint(&t, n * w);
    uint8_t *zero = calloc(n, w);
    for (size_t i = 0; i < n; i++) {
      if (fp64) ((double *)(void *)zero)[i] = (double)i;
      else ((float *)(void *)zero)[i] = (float)i;
    }
    w_put(&t, zero, n * w);
    free(zero);
    w_gtensors(&msg, &t, 1);
    size_t at = msg.n - n * w;
    if (at % 16 == off) {
      uint8_t *p = aligned_alloc(16, (msg.n + 15) / 16 * 16);
      memcpy(p, msg.p, msg.n);
      *len = msg.n;
      *data_at = at;
      w_free(&msg);
      return p;
    }
    w_free(&msg);
  }
  fail_msg("no padding places the data");
  return NULL;
}

static void aligned_fp32_and_fp64_are_used_in_place(void **state) {
  (void)state;
  for (int fp64 = 0; fp64 < 2; fp64++) {
    size_t n = 100000, len = 0, at = 0;
    uint8_t *p = placed(fp64, n, 0, &len, &at);
    isv__grps_msg m;
    assert_int_equal(dec(p, len, &m), 0);
    assert_ptr_equal(m.tensors[0].data, p + at); /* zero-copy */
    assert_int_equal(m.tensors[0].count, n);
    roundtrip(p, len);
    free(p);
    p = placed(fp64, n, 2, &len, &at); /* misaligned: copied, aligned */
    assert_int_equal(dec(p, len, &m), 0);
    assert_true(m.tensors[0].data != (void *)(p + at));
    assert_int_equal((uintptr_t)m.tensors[0].data % (fp64 ? 8 : 4), 0);
    assert_memory_equal(m.tensors[0].data, p + at, n * (fp64 ? 8 : 4));
    isv__arena_free(&A);
    free(p);
  }
}

/* ---- encoder -------------------------------------------------------------------------------- */

static void types_grps_cannot_carry_are_refused(void **state) {
  (void)state;
  uint64_t v[2] = {0};
  int64_t shape[] = {2};
  isv_datatype bad[] = {ISV_BOOL, ISV_UINT16, ISV_UINT32, ISV_UINT64, ISV_BF16};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    isv_tensor t = {.name = "out", .dt = bad[i], .shape = shape, .ndim = 1, .data = v,
                    .count = 2, .byte_size = 2 * isv_datatype_size(bad[i])};
    isv__grps_msg m = {.kind = ISV__GRPS_GTENSORS, .tensors = &t, .n_tensors = 1};
    isv__buf b;
    isv__buf_init(&b, NULL);
    assert_int_equal(isv__grps_pb_encode(&m, &b, err, sizeof err), ISV_EINVAL);
    char want[128];
    snprintf(want, sizeof want, "gtensors: tensor 'out' is %s, which grps's DataType cannot carry",
             isv_datatype_name(bad[i]));
    assert_string_equal(err, want);
    assert_int_equal(b.len, 0);
    isv__buf_free(&b);
  }
  float f[2] = {0};
  int64_t neg[] = {-1}, wide[] = {(int64_t)UINT32_MAX + 1, 1}, three[] = {3};
  isv_tensor t = {.name = "o", .dt = ISV_FP32, .shape = neg, .ndim = 1, .data = f, .count = 0};
  isv__grps_entry e = {.map = ISV__GRPS_S_T, .key = "k", .key_len = 1, .t = t};
  isv__grps_msg m = {.kind = ISV__GRPS_GMAP, .entries = &e, .n_entries = 1};
  isv__buf b;
  isv__buf_init(&b, NULL);
  assert_int_equal(isv__grps_pb_encode(&m, &b, err, sizeof err), ISV_EINVAL);
  assert_string_equal(err, "gmap: s_t: tensor 'o' has dimension -1, grps's shape is uint32");
  e.t.shape = wide;
  e.t.ndim = 2;
  assert_int_equal(isv__grps_pb_encode(&m, &b, err, sizeof err), ISV_EINVAL);
  assert_non_null(strstr(err, "has dimension 4294967296"));
  e.t.shape = three;
  e.t.ndim = 1;
  e.t.count = 2;
  assert_int_equal(isv__grps_pb_encode(&m, &b, err, sizeof err), ISV_EINVAL);
  assert_string_equal(err, "gmap: s_t: tensor 'o' has 2 elements but shape [3]");
  e.map = 0;
  assert_int_equal(isv__grps_pb_encode(&m, &b, err, sizeof err), ISV_EINVAL);
  assert_non_null(strstr(err, "entry #0 is in no map"));
  assert_int_equal(b.len, 0);
  isv__buf_free(&b);
}

static void a_failed_buffer_is_enomem(void **state) {
  (void)state;
  isv__grps_msg m = {.kind = ISV__GRPS_STR_DATA, .data = "x", .data_len = 1};
  isv__buf b;
  isv__buf_init(&b, NULL);
  b.failed = 1;
  assert_int_equal(isv__grps_pb_encode(&m, &b, err, sizeof err), ISV_ENOMEM);
  assert_string_equal(err, "out of memory");
}

/* A large tensor: multi-byte lengths, the encoder appends after what the buffer holds. */
static void a_large_tensor_appends_with_long_lengths(void **state) {
  (void)state;
  size_t n = (size_t)3 << 20; /* 12 MiB of FP32, 24 MiB of INT64 varints at most */
  int64_t *v = malloc(n * sizeof *v);
  for (size_t i = 0; i < n; i++) v[i] = (int64_t)(i * 2654435761u) - (int64_t)(1u << 31);
  int64_t shape[] = {(int64_t)n / 3, 3};
  isv_tensor t = {.name = "big", .dt = ISV_INT64, .shape = shape, .ndim = 2, .data = v,
                  .count = n, .byte_size = n * 8};
  isv__grps_msg m = {.kind = ISV__GRPS_GTENSORS, .tensors = &t, .n_tensors = 1,
                     .model = "m", .model_len = 1};
  isv__buf b;
  isv__buf_init(&b, NULL);
  isv__buf_append(&b, "PREFIX", 6);
  assert_int_equal(isv__grps_pb_encode(&m, &b, err, sizeof err), 0);
  assert_memory_equal(b.data, "PREFIX", 6);
  isv__grps_msg d;
  assert_int_equal(dec(b.data + 6, b.len - 6, &d), 0);
  assert_tensor_eq(&t, &d.tensors[0]);
  isv__arena_free(&A);
  isv__buf_free(&b);
  free(v);
}

/* Large FP32 / FP64 tensors and str_data / bin_data are referenced in place (V2's answers do the
 * same); small ones and tensors that must be converted (INT32 varints, FP16 as floats) are
 * written. */
static void large_payloads_are_referenced_not_copied(void **state) {
  (void)state;
  size_t n = 4096;
  float *f = malloc(n * sizeof *f);
  double *d = malloc(n * sizeof *d);
  int32_t *i32 = malloc(n * sizeof *i32);
  for (size_t i = 0; i < n; i++) f[i] = (float)i * 0.5f, d[i] = -(double)i, i32[i] = (int32_t)i;
  int64_t shape[] = {(int64_t)n};
  float small[2] = {1, 2};
  int64_t two[] = {2}, hundred[] = {100}; /* the INT32 tensor's varints stay under 1 KiB: any
                                             * part that large is then a referenced payload */
  isv_tensor t[4] = {
      {.name = "f", .dt = ISV_FP32, .shape = shape, .ndim = 1, .data = f, .count = n, .byte_size = 4 * n},
      {.name = "i", .dt = ISV_INT32, .shape = hundred, .ndim = 1, .data = i32, .count = 100, .byte_size = 400},
      {.name = "s", .dt = ISV_FP32, .shape = two, .ndim = 1, .data = small, .count = 2, .byte_size = 8},
      {.name = "d", .dt = ISV_FP64, .shape = shape, .ndim = 1, .data = d, .count = n, .byte_size = 8 * n}};
  isv__grps_msg m = {.kind = ISV__GRPS_GTENSORS, .tensors = t, .n_tensors = 4, .has_status = 1,
                     .code = 200, .msg = "OK", .msg_len = 2, .flag = ISV__GRPS_SUCCESS};
  isv__buf b;
  enc(&m, &b);
  isv__arena a = ISV__ARENA_INIT;
  uv_buf_t *v;
  size_t nv, total;
  assert_int_equal(isv__grps_pb_encode_ref(&m, &a, 1024, &v, &nv, &total, err, sizeof err), 0);
  int saw_f = 0, saw_d = 0;
  for (size_t i = 0; i < nv; i++) {
    assert_ptr_not_equal(v[i].base, (char *)i32); /* converted: written */
    assert_ptr_not_equal(v[i].base, (char *)small); /* under ref_min: written */
    saw_f += v[i].base == (char *)f && v[i].len == 4 * n;
    saw_d += v[i].base == (char *)d && v[i].len == 8 * n;
  }
  assert_int_equal(saw_f, 1);
  assert_int_equal(saw_d, 1);
  assert_int_equal(check_ref_encoding(&m, &b, 1024), 2);
  isv__arena_free(&a);
  isv__buf_free(&b);
  /* str_data as large: referenced; as small: written */
  char *text = malloc(5000);
  memset(text, 'x', 5000);
  isv__grps_msg s = {.kind = ISV__GRPS_STR_DATA, .data = text, .data_len = 5000};
  enc(&s, &b);
  assert_int_equal(check_ref_encoding(&s, &b, 1024), 1);
  assert_int_equal(check_ref_encoding(&s, &b, 8192), 0);
  isv__buf_free(&b);
  free(text);
  free(f);
  free(d);
  free(i32);
}

int main(void) {
#define T(f) cmocka_unit_test_teardown(f, reset)
  const struct CMUnitTest tests[] = {
      T(python_gtensors_decode_and_reencode_byte_for_byte),
      T(large_payloads_are_referenced_not_copied),
      T(python_gmap_decode_and_reencode_byte_for_byte),
      T(every_kind_decodes_and_round_trips),
      T(ndarray_with_a_tensor_is_written_as_gtensors),
      T(status_fields_and_flag_out_of_range),
      T(every_dtype_round_trips_from_memory),
      T(every_dtype_decodes_from_the_wire),
      T(fp16_is_floats_on_the_wire),
      T(negative_int32_is_a_ten_byte_varint),
      T(packed_and_unpacked_fields_concatenate),
      T(a_repeated_gtensors_merges_and_other_members_replace),
      T(range_errors_name_the_element),
      T(shape_and_count_must_agree),
      T(data_in_the_wrong_flat_field),
      T(dt_invalid_takes_the_type_of_its_data),
      T(names_must_be_text),
      T(max_tensors_bounds_tensors_and_map_entries),
      T(map_entries_missing_key_or_value_take_defaults),
      T(s_t_holds_tensors),
      T(truncation_never_reads_past_the_end),
      T(malformed_varints_and_wire_types),
      T(invalid_utf8_is_refused_naming_the_field),
      T(unknown_fields_are_skipped),
      T(aligned_fp32_and_fp64_are_used_in_place),
      T(types_grps_cannot_carry_are_refused),
      T(a_failed_buffer_is_enomem),
      T(a_large_tensor_appends_with_long_lengths),
  };
#undef T
  return cmocka_run_group_tests(tests, NULL, NULL);
}
