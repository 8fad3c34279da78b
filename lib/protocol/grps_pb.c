/* grps's GrpsMessage protobuf wire form ⇄ isv__grps_msg (see grps_msg.h for the contract).
 *
 * By hand over codec/pbwire.h rather than generated code, for the reasons v2_pb.c gives: a
 * tensor does not fit nanopb's 16-bit sizes, and a hand reader hands out LEN fields in place.
 * Decoding reads each message twice: once to check its framing and count what it holds (so a
 * limit is enforced and every array allocated at its exact size before anything is stored),
 * once to fill what was allocated. Strings and bytes, flat_string elements and (when aligned)
 * packed flat_float32 / flat_float64 point into the message; converted elements live in the
 * arena.
 *
 * protobuf's merge rules are followed where a sender can rely on them: a message field given
 * several times is merged (its repeated fields concatenated), which for data_oneof means every
 * gtensors (or gmap) since the last other member; a map entry's value message too. The fields
 * of a oneof member that a later member replaced are checked for framing only. A known field
 * with the wrong wire type is refused (protobuf's encoders never write one), naming it.
 *
 * Encoding sizes the whole message first (tensor-sized fields in one pass each, so it stays
 * linear), reserves it in the buffer once and writes straight into it. */
#include "protocol/grps_msg.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "codec/datatype.h"
#include "codec/half.h"
#include "codec/pbwire.h"
#include "codec/utf8.h"

/* GenericTensor's flat_* fields are 4..12, one per DataType: field = DataType number + 3. */
enum { FLAT_FIRST = 4, FLAT_LAST = 12, FLAT_N = 13 };

static const char *const flat_names[FLAT_N] = {
    [4] = "flat_uint8",   [5] = "flat_int8",     [6] = "flat_int16",
    [7] = "flat_int32",   [8] = "flat_int64",    [9] = "flat_float16",
    [10] = "flat_float32", [11] = "flat_float64", [12] = "flat_string"};

static const char *const map_names[8] = {"", "s_s", "s_b", "s_i32", "s_i64", "s_f", "s_d", "s_t"};

#if defined(__GNUC__)
#define ISV__PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define ISV__PRINTF(f, a)
#endif

ISV__PRINTF(4, 5)
static int say(char *err, size_t cap, int code, const char *fmt, ...) {
  if (err != NULL && cap > 0) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, cap, fmt, ap);
    va_end(ap);
  }
  return code;
}

/* At most 64 bytes of valid UTF-8 (s, n) for an error message, cut on a character boundary so
 * the message stays UTF-8 (it may travel in JSON or grpc-message). */
static const char *clip(char *buf, size_t cap, const char *s, size_t n) {
  size_t k = n < 64 ? n : 64;
  if (k > cap - 1) k = cap - 1;
  while (k < n && k > 0 && ((unsigned char)s[k] & 0xC0) == 0x80) k--;
  if (k) memcpy(buf, s, k);
  buf[k] = '\0';
  return buf;
}

/* ============================================================================================
 * Decoding
 * ========================================================================================== */

typedef struct dec {
  isv__arena *a;
  size_t max; /* lim->max_tensors: tensors per gtensors, entries per gmap */
  char *err;
  size_t errcap;
} dec;

#define BAD(d, ...) say((d)->err, (d)->errcap, ISV_EBADREQ, __VA_ARGS__)

static int nomem(dec *d) { return say(d->err, d->errcap, ISV_ENOMEM, "out of memory"); }

static int malformed(dec *d, const char *where) {
  return BAD(d, "malformed protobuf: %s is truncated or not a valid encoding", where);
}

static int want_wt(dec *d, const isv__pb_field *f, int wt, const char *what) {
  if (f->wt == wt) return 0;
  return BAD(d, "malformed protobuf: %s (field %u) has wire type %d, expected %d", what, f->num,
             f->wt, wt);
}

static int utf8_ok(isv__pb_span s) { return isv__utf8_valid((const char *)s.p, s.n); }

/* The fields of one message given as one span, or as every LEN field `num` of an outer span
 * (a message field repeated on the wire: protobuf merges the occurrences, which for the
 * messages here means reading their fields one after the other). */
typedef struct fsrc {
  isv__pb_reader outer, cur;
  uint32_t num; /* 0: cur is the only span */
} fsrc;

static fsrc fsrc_one(isv__pb_span s) {
  fsrc r = {{NULL, NULL}, isv__pb_reader_of(s), 0};
  return r;
}

static fsrc fsrc_merged(isv__pb_span outer, uint32_t num) {
  fsrc r = {isv__pb_reader_of(outer), {NULL, NULL}, num};
  return r;
}

/* 1 a field, 0 the end, -1 malformed. */
static int fsrc_next(fsrc *s, isv__pb_field *f) {
  for (;;) {
    int k = isv__pb_read_field(&s->cur, f);
    if (k != 0 || s->num == 0) return k;
    isv__pb_field o;
    do {
      k = isv__pb_read_field(&s->outer, &o);
      if (k <= 0) return k;
    } while (o.num != s->num || o.wt != ISV__PB_LEN);
    s->cur = isv__pb_reader_of(o.s);
  }
}

/* ---- GenericTensor, pass 1: framing and counts --------------------------------------------- */

typedef struct tscan {
  const char *where; /* "gtensors: tensor #2" until the name is known */
  isv__pb_span name;
  int64_t dtype; /* as sent */
  size_t ndim;
  size_t n[FLAT_N];        /* elements per flat field */
  unsigned occ[FLAT_N];    /* occurrences per flat field */
  isv__pb_span last[FLAT_N]; /* the last occurrence (used in place when it is the only one) */
  int last_packed[FLAT_N];
} tscan;

/* Elements of a varint field: one unpacked, or the varints of a packed span. */
static int count_varints(dec *d, const isv__pb_field *f, const char *field, const char *where,
                         size_t *n) {
  if (f->wt == ISV__PB_VARINT) {
    (*n)++;
    return 0;
  }
  if (f->wt != ISV__PB_LEN)
    return BAD(d, "malformed protobuf: %s of %s has wire type %d, expected 0 or 2", field, where,
               f->wt);
  if (f->s.n && (f->s.p[f->s.n - 1] & 0x80))
    return BAD(d, "malformed protobuf: packed %s of %s ends inside a varint", field, where);
  for (size_t i = 0; i < f->s.n; i++) *n += !(f->s.p[i] & 0x80);
  return 0;
}

/* Elements of a fixed-width field (w 4 or 8): one unpacked, or a packed span of them. */
static int count_fixed(dec *d, const isv__pb_field *f, size_t w, const char *field,
                       const char *where, size_t *n) {
  if (f->wt == (w == 4 ? ISV__PB_I32 : ISV__PB_I64)) {
    (*n)++;
    return 0;
  }
  if (f->wt != ISV__PB_LEN)
    return BAD(d, "malformed protobuf: %s of %s has wire type %d, expected %d or 2", field, where,
               f->wt, w == 4 ? ISV__PB_I32 : ISV__PB_I64);
  if (f->s.n % w)
    return BAD(d, "malformed protobuf: packed %s of %s has %zu bytes, not a multiple of %zu",
               field, where, f->s.n, w);
  *n += f->s.n / w;
  return 0;
}

static int scan_flat(dec *d, tscan *ts, const isv__pb_field *f) {
  uint32_t k = f->num;
  const char *name = flat_names[k];
  int rc;
  if (k <= 8) {
    rc = count_varints(d, f, name, ts->where, &ts->n[k]);
  } else if (k <= 11) {
    rc = count_fixed(d, f, k == 11 ? 8 : 4, name, ts->where, &ts->n[k]);
  } else {
    char what[96];
    snprintf(what, sizeof what, "%s of %s", name, ts->where);
    rc = want_wt(d, f, ISV__PB_LEN, what);
    ts->n[k]++;
  }
  if (rc) return rc;
  ts->occ[k]++;
  ts->last[k] = f->s;
  ts->last_packed[k] = f->wt == ISV__PB_LEN;
  return 0;
}

static int scan_field(dec *d, tscan *ts, const isv__pb_field *f) {
  char what[96];
  switch (f->num) {
  case 1:
    snprintf(what, sizeof what, "the name of %s", ts->where);
    if (want_wt(d, f, ISV__PB_LEN, what)) return ISV_EBADREQ;
    ts->name = f->s;
    return 0;
  case 2:
    snprintf(what, sizeof what, "the dtype of %s", ts->where);
    if (want_wt(d, f, ISV__PB_VARINT, what)) return ISV_EBADREQ;
    ts->dtype = (int32_t)(uint32_t)f->v; /* an enum is an int32 on the wire */
    return 0;
  case 3: return count_varints(d, f, "shape", ts->where, &ts->ndim);
  default:
    if (f->num >= FLAT_FIRST && f->num <= FLAT_LAST) return scan_flat(d, ts, f);
    return 0; /* unknown: skipped */
  }
}

/* ---- GenericTensor, pass 2: the tensor ------------------------------------------------------ */

typedef struct tctx {
  dec *d;
  char where[160]; /* "gtensors: tensor 'in1'" */
  isv_datatype dt;
  uint32_t field; /* the flat field of dt */
  size_t count;
  uint8_t *out;
  size_t i; /* elements stored */
} tctx;

/* The flat field and isv_datatype of the tensor, from its dtype or (DT_INVALID) its data. */
static int resolve_dtype(dec *d, const tscan *ts, tctx *c) {
  if (ts->dtype < 0 || ts->dtype > 9)
    return BAD(d, "%s has dtype %lld, not a grps DataType (0..9)", c->where,
               (long long)ts->dtype);
  uint32_t want = ts->dtype ? (uint32_t)ts->dtype + 3 : 0;
  for (uint32_t k = FLAT_FIRST; k <= FLAT_LAST; k++) {
    if (ts->n[k] == 0 || k == want) continue;
    if (ts->dtype == 0 && want == 0) {
      want = k; /* DT_INVALID: the one flat field with data says the type */
      continue;
    }
    if (ts->dtype == 0)
      return BAD(d, "%s has no dtype and data in both %s and %s", c->where, flat_names[want],
                 flat_names[k]);
    const char *dn = isv__dt_name(isv__dt_from_grps_number((int)ts->dtype), ISV__DTN_GRPS);
    return BAD(d, "%s is %s but has data in %s (%s takes %s)", c->where, dn, flat_names[k], dn,
               flat_names[want]);
  }
  if (want == 0) return BAD(d, "%s has no dtype", c->where);
  c->field = want;
  c->dt = isv__dt_from_grps_number((int)want - 3);
  return 0;
}

/* Dimensions: the shape field's, or [count] when it gives none. */
static int read_shape(dec *d, fsrc src, const tscan *ts, tctx *c, isv_tensor *t) {
  size_t ndim = ts->ndim ? ts->ndim : 1;
  if (ndim > ISV__MAX_NDIM)
    return BAD(d, "%s has %zu dimensions, at most %d allowed", c->where, ndim, ISV__MAX_NDIM);
  int64_t *shape = isv__arena_alloc(d->a, ndim * sizeof *shape);
  if (shape == NULL) return nomem(d);
  shape[0] = (int64_t)ts->n[c->field];
  size_t k = 0;
  isv__pb_field f;
  while (ts->ndim && fsrc_next(&src, &f) > 0) { /* framing checked in pass 1 */
    if (f.num != 3) continue;
    if (f.wt == ISV__PB_VARINT) {
      /* uint32 on the wire: protobuf keeps the low 32 bits */
      if (k < ndim) shape[k++] = (uint32_t)f.v;
      continue;
    }
    isv__pb_reader rs = isv__pb_reader_of(f.s);
    uint64_t v;
    while (k < ndim && rs.p < rs.end) {
      if (isv__pb_read_varint(&rs, &v) != 0)
        return BAD(d, "malformed protobuf: the shape of %s holds an invalid varint", c->where);
      shape[k++] = (uint32_t)v;
    }
  }
  t->shape = shape;
  t->ndim = ndim;
  return 0;
}

static int check_count(dec *d, const tscan *ts, tctx *c, const isv_tensor *t) {
  char st[96];
  isv__shape_text(st, sizeof st, t->shape, t->ndim, 0);
  const char *dn = isv__dt_name(c->dt, ISV__DTN_GRPS);
  if (isv__shape_count(t->shape, t->ndim, isv__dt_size(c->dt), &c->count, NULL) != 0)
    return BAD(d, "%s is %s with shape %s, whose size overflows", c->where, dn, st);
  if (c->count != ts->n[c->field])
    return BAD(d, "%s is %s with shape %s (%zu elements) but %s has %zu", c->where, dn, st,
               c->count, flat_names[c->field], ts->n[c->field]);
  return 0;
}

static int range_error(tctx *c, long long v) {
  return BAD(c->d, "%s: %s[%zu] = %lld is out of range for %s", c->where, flat_names[c->field],
             c->i, v, isv__dt_name(c->dt, ISV__DTN_GRPS));
}

/* One element of a varint field, converted as protobuf reads its type and range-checked. */
static int put_varint_elem(tctx *c, uint64_t v) {
  uint8_t *o = c->out;
  size_t i = c->i;
  int32_t x32 = (int32_t)(uint32_t)v; /* int32 fields: protobuf keeps the low 32 bits */
  switch (c->dt) {
  case ISV_UINT8:
    if ((uint32_t)v > UINT8_MAX) return range_error(c, (long long)(uint32_t)v);
    o[i] = (uint8_t)v;
    break;
  case ISV_INT8: {
    if (x32 < INT8_MIN || x32 > INT8_MAX) return range_error(c, x32);
    int8_t x = (int8_t)x32;
    memcpy(o + i, &x, 1);
    break;
  }
  case ISV_INT16: {
    if (x32 < INT16_MIN || x32 > INT16_MAX) return range_error(c, x32);
    int16_t x = (int16_t)x32;
    memcpy(o + 2 * i, &x, 2);
    break;
  }
  case ISV_INT32: memcpy(o + 4 * i, &x32, 4); break;
  default: { /* ISV_INT64 */
    int64_t x = (int64_t)v;
    memcpy(o + 8 * i, &x, 8);
    break;
  }
  }
  c->i++;
  return 0;
}

static int fill_varints(tctx *c, const isv__pb_field *f) {
  if (f->wt == ISV__PB_VARINT) return put_varint_elem(c, f->v);
  isv__pb_reader rr = isv__pb_reader_of(f->s);
  while (rr.p < rr.end) {
    uint64_t v;
    if (isv__pb_read_varint(&rr, &v) != 0)
      return BAD(c->d, "malformed protobuf: packed %s of %s holds an invalid varint",
                 flat_names[c->field], c->where);
    if (put_varint_elem(c, v)) return ISV_EBADREQ;
  }
  return 0;
}

/* flat_float16 (floats made half), flat_float32, flat_float64: unpacked or packed, copied. */
static void fill_fixed(tctx *c, const isv__pb_field *f) {
  size_t w = c->field == 11 ? 8 : 4, n = f->s.n / w; /* f->s: the raw bytes, packed or not */
  if (c->dt != ISV_FP16) {
    memcpy(c->out + c->i * w, f->s.p, n * w); /* little-endian host, as everywhere here */
  } else {
    for (size_t j = 0; j < n; j++) {
      float v;
      memcpy(&v, f->s.p + 4 * j, 4);
      uint16_t h = isv__f32_to_f16(v);
      memcpy(c->out + 2 * (c->i + j), &h, 2);
    }
  }
  c->i += n;
}

static int fill_string(tctx *c, const isv__pb_field *f) {
  if (!utf8_ok(f->s))
    return BAD(c->d, "%s: flat_string[%zu] is not valid UTF-8", c->where, c->i);
  isv_bytes *b = (isv_bytes *)(void *)c->out;
  b[c->i].ptr = (const char *)f->s.p;
  b[c->i].len = f->s.n;
  c->i++;
  return 0;
}

/* Pass 2 over the tensor's flat field: the elements into c->out. */
static int fill_data(tctx *c, fsrc src) {
  isv__pb_field f;
  while (fsrc_next(&src, &f) > 0) {
    if (f.num != c->field) continue;
    int rc = 0;
    if (c->field <= 8) rc = fill_varints(c, &f);
    else if (c->field <= 11) fill_fixed(c, &f);
    else rc = fill_string(c, &f);
    if (rc) return rc;
  }
  return 0;
}

/* The data of the tensor: in place (one aligned packed FP32 / FP64 field), or in the arena. */
static int read_data(dec *d, fsrc src, const tscan *ts, tctx *c, isv_tensor *t) {
  size_t elsize = isv__dt_size(c->dt);
  isv__pb_span one = ts->last[c->field];
  if ((c->dt == ISV_FP32 || c->dt == ISV_FP64) && ts->occ[c->field] == 1 &&
      ts->last_packed[c->field] && c->count && (uintptr_t)one.p % elsize == 0) {
    t->data = (void *)(uintptr_t)one.p; /* the buffer outlives the message */
  } else {
    c->out = isv__arena_alloc(d->a, c->count * elsize);
    if (c->out == NULL) return nomem(d);
    if (fill_data(c, src)) return ISV_EBADREQ;
    if (c->i != c->count) return BAD(d, "%s: its elements could not be read", c->where);
    t->data = c->out;
  }
  t->count = c->count;
  t->byte_size = c->dt == ISV_BYTES ? isv__bytes_total(t->data, c->count) : c->count * elsize;
  return 0;
}

/* The name, NUL-terminated in the arena ("" when none); c->where names the tensor by it. */
static int read_name(dec *d, const tscan *ts, const char *ctx, size_t index, tctx *c,
                     isv_tensor *t) {
  if (!utf8_ok(ts->name) || (ts->name.n && memchr(ts->name.p, 0, ts->name.n) != NULL))
    return BAD(d, "%s: its name is not valid UTF-8 text (or holds a NUL byte)", c->where);
  char *name = isv__arena_strndup(d->a, ts->name.n ? (const char *)ts->name.p : "", ts->name.n);
  if (name == NULL) return nomem(d);
  t->name = name;
  if (name[0]) {
    char nb[80];
    snprintf(c->where, sizeof c->where, "%s '%s'", ctx, clip(nb, sizeof nb, name, ts->name.n));
  } else {
    snprintf(c->where, sizeof c->where, "%s #%zu", ctx, index);
  }
  return 0;
}

/* One GenericTensor from src. ctx names where it sits ("gtensors: tensor"), index its place. */
static int parse_tensor(dec *d, fsrc src, const char *ctx, size_t index, isv_tensor *t) {
  tscan ts;
  memset(&ts, 0, sizeof ts);
  tctx c;
  memset(&c, 0, sizeof c);
  c.d = d;
  snprintf(c.where, sizeof c.where, "%s #%zu", ctx, index);
  ts.where = c.where;
  fsrc it = src;
  isv__pb_field f;
  int k;
  while ((k = fsrc_next(&it, &f)) > 0)
    if (scan_field(d, &ts, &f)) return ISV_EBADREQ;
  if (k < 0) return malformed(d, c.where);
  memset(t, 0, sizeof *t);
  int rc = read_name(d, &ts, ctx, index, &c, t);
  if (rc == 0) rc = resolve_dtype(d, &ts, &c);
  if (rc == 0) rc = read_shape(d, src, &ts, &c, t);
  if (rc == 0) rc = check_count(d, &ts, &c, t);
  if (rc == 0) rc = read_data(d, src, &ts, &c, t);
  if (rc) return rc;
  t->dt = c.dt;
  t->del = ISV_STATIC;
  return 0;
}

/* ---- GenericTensorData ----------------------------------------------------------------------- */

static int decode_gtensors(dec *d, isv__pb_span run, isv__grps_msg *out) {
  fsrc it = fsrc_merged(run, 5);
  isv__pb_field f;
  size_t n = 0;
  int k;
  while ((k = fsrc_next(&it, &f)) > 0) {
    if (f.num != 1) continue;
    if (want_wt(d, &f, ISV__PB_LEN, "gtensors: a tensor")) return ISV_EBADREQ;
    n++;
  }
  if (k < 0) return malformed(d, "gtensors");
  if (n > d->max) return BAD(d, "gtensors: %zu tensors, at most %zu allowed", n, d->max);
  out->tensors = isv__arena_calloc(d->a, n ? n : 1, sizeof *out->tensors);
  if (out->tensors == NULL) return nomem(d);
  it = fsrc_merged(run, 5);
  size_t i = 0;
  while (fsrc_next(&it, &f) > 0) {
    if (f.num != 1) continue;
    int rc = parse_tensor(d, fsrc_one(f.s), "gtensors: tensor", i, &out->tensors[i]);
    if (rc) return rc;
    out->n_tensors = ++i;
  }
  return 0;
}

/* ---- GenericMapData ------------------------------------------------------------------------ */

static int entry_value(dec *d, isv__grps_entry *e, const isv__pb_field *f) {
  static const int wts[8] = {0, ISV__PB_LEN, ISV__PB_LEN, ISV__PB_VARINT, ISV__PB_VARINT,
                             ISV__PB_I32, ISV__PB_I64, ISV__PB_LEN};
  char what[48];
  snprintf(what, sizeof what, "gmap: a value of %s", map_names[e->map]);
  if (want_wt(d, f, wts[e->map], what)) return ISV_EBADREQ;
  switch (e->map) {
  case ISV__GRPS_S_S:
  case ISV__GRPS_S_B:
    e->v.s.p = (const char *)f->s.p;
    e->v.s.n = f->s.n;
    break;
  case ISV__GRPS_S_I32: e->v.i = (int32_t)(uint32_t)f->v; break;
  case ISV__GRPS_S_I64: e->v.i = (int64_t)f->v; break;
  case ISV__GRPS_S_F: {
    uint32_t bits = (uint32_t)f->v;
    memcpy(&e->v.f, &bits, 4);
    break;
  }
  case ISV__GRPS_S_D: memcpy(&e->v.d, &f->v, 8); break;
  default: break; /* S_T: its value messages are read together below */
  }
  return 0;
}

/* One map entry {key 1, value 2} of map `map`; a missing key or value is the default. */
static int parse_entry(dec *d, uint32_t map, isv__pb_span s, size_t index, isv__grps_entry *e) {
  e->map = (isv__grps_map)map;
  if (map == ISV__GRPS_S_S || map == ISV__GRPS_S_B) e->v.s.p = ""; /* the default value */
  isv__pb_span key = {(const uint8_t *)"", 0};
  char what[48];
  snprintf(what, sizeof what, "gmap: a key of %s", map_names[map]);
  isv__pb_reader rr = isv__pb_reader_of(s);
  isv__pb_field f;
  int k;
  while ((k = isv__pb_read_field(&rr, &f)) > 0) {
    if (f.num == 1) {
      if (want_wt(d, &f, ISV__PB_LEN, what)) return ISV_EBADREQ;
      key = f.s; /* the last one wins */
    } else if (f.num == 2) {
      if (entry_value(d, e, &f)) return ISV_EBADREQ;
    }
  }
  snprintf(what, sizeof what, "gmap: an entry of %s", map_names[map]);
  if (k < 0) return malformed(d, what);
  if (!utf8_ok(key)) return BAD(d, "gmap: a key of %s is not valid UTF-8", map_names[map]);
  if (key.n && memchr(key.p, 0, key.n)) /* a key is a name (a C string) further on: refused
                                         * rather than cut at its NUL */
    return BAD(d, "gmap: a key of %s holds a NUL character", map_names[map]);
  char *kc = isv__arena_strndup(d->a, (const char *)key.p, key.n);
  if (kc == NULL) return nomem(d);
  e->key = kc;
  e->key_len = key.n;
  char kb[80], ctx[120];
  clip(kb, sizeof kb, kc, key.n);
  if (map == ISV__GRPS_S_S && !utf8_ok((isv__pb_span){(const uint8_t *)e->v.s.p, e->v.s.n}))
    return BAD(d, "gmap: the value of s_s['%s'] is not valid UTF-8", kb);
  if (map != ISV__GRPS_S_T) return 0;
  snprintf(ctx, sizeof ctx, "gmap: s_t['%s']: tensor", kb);
  return parse_tensor(d, fsrc_merged(s, 2), ctx, index, &e->t);
}

static int decode_gmap(dec *d, isv__pb_span run, isv__grps_msg *out) {
  fsrc it = fsrc_merged(run, 7);
  isv__pb_field f;
  size_t n = 0;
  int k;
  while ((k = fsrc_next(&it, &f)) > 0) {
    if (f.num < 1 || f.num > 7) continue;
    char what[48];
    snprintf(what, sizeof what, "gmap: an entry of %s", map_names[f.num]);
    if (want_wt(d, &f, ISV__PB_LEN, what)) return ISV_EBADREQ;
    n++;
  }
  if (k < 0) return malformed(d, "gmap");
  if (n > d->max) return BAD(d, "gmap: %zu map entries, at most %zu allowed", n, d->max);
  out->entries = isv__arena_calloc(d->a, n ? n : 1, sizeof *out->entries);
  if (out->entries == NULL) return nomem(d);
  it = fsrc_merged(run, 7);
  size_t i = 0;
  while (fsrc_next(&it, &f) > 0) {
    if (f.num < 1 || f.num > 7) continue;
    int rc = parse_entry(d, f.num, f.s, i, &out->entries[i]);
    if (rc) return rc;
    out->n_entries = ++i;
  }
  return 0;
}

/* ---- GrpsMessage ----------------------------------------------------------------------------- */

/* Status (merged field by field when given more than once, as protobuf does). */
static int parse_status(dec *d, isv__pb_span s, isv__grps_msg *out) {
  isv__pb_reader rr = isv__pb_reader_of(s);
  isv__pb_field f;
  int k;
  out->has_status = 1;
  while ((k = isv__pb_read_field(&rr, &f)) > 0) {
    if (f.num == 1) {
      if (want_wt(d, &f, ISV__PB_VARINT, "status.code")) return ISV_EBADREQ;
      out->code = (int32_t)(uint32_t)f.v;
    } else if (f.num == 2) {
      if (want_wt(d, &f, ISV__PB_LEN, "status.msg")) return ISV_EBADREQ;
      if (!utf8_ok(f.s)) return BAD(d, "status.msg is not valid UTF-8");
      out->msg = (const char *)f.s.p;
      out->msg_len = f.s.n;
    } else if (f.num == 3) {
      if (want_wt(d, &f, ISV__PB_VARINT, "status.status")) return ISV_EBADREQ;
      int32_t v = (int32_t)(uint32_t)f.v;
      out->flag = v >= 0 && v <= 2 ? (isv__grps_flag)v : ISV__GRPS_UNKNOWN;
    }
  }
  return k < 0 ? malformed(d, "status") : 0;
}

/* A member of data_oneof: the latest replaces any other; *run is where a message member's
 * merged occurrences begin. */
static int oneof_member(dec *d, const isv__pb_field *f, const uint8_t *at, isv__grps_msg *out,
                        const uint8_t **run) {
  static const isv__grps_kind kinds[8] = {0, 0, 0, ISV__GRPS_BIN_DATA, ISV__GRPS_STR_DATA,
                                          ISV__GRPS_GTENSORS, ISV__GRPS_NDARRAY, ISV__GRPS_GMAP};
  static const char *const names[8] = {"", "", "", "bin_data", "str_data", "gtensors", "ndarray",
                                       "gmap"};
  if (want_wt(d, f, ISV__PB_LEN, names[f->num])) return ISV_EBADREQ;
  isv__grps_kind kind = kinds[f->num];
  if (kind == ISV__GRPS_STR_DATA && !utf8_ok(f->s)) return BAD(d, "str_data is not valid UTF-8");
  if (kind != out->kind) *run = at;
  out->kind = kind;
  out->data = NULL;
  out->data_len = 0;
  if (kind == ISV__GRPS_BIN_DATA || kind == ISV__GRPS_STR_DATA) {
    out->data = (const char *)f->s.p;
    out->data_len = f->s.n;
  } else if (kind != ISV__GRPS_GTENSORS && kind != ISV__GRPS_GMAP) { /* ndarray: framing only */
    isv__pb_reader rr = isv__pb_reader_of(f->s);
    isv__pb_field g;
    int k;
    while ((k = isv__pb_read_field(&rr, &g)) > 0) {}
    if (k < 0) return malformed(d, "ndarray");
  }
  return 0;
}

static int top_field(dec *d, const isv__pb_field *f, const uint8_t *at, isv__grps_msg *out,
                     const uint8_t **run) {
  switch (f->num) {
  case 1:
    if (want_wt(d, f, ISV__PB_LEN, "status")) return ISV_EBADREQ;
    return parse_status(d, f->s, out);
  case 2:
    if (want_wt(d, f, ISV__PB_LEN, "model")) return ISV_EBADREQ;
    if (!utf8_ok(f->s)) return BAD(d, "model is not valid UTF-8");
    out->model = (const char *)f->s.p;
    out->model_len = f->s.n;
    return 0;
  case 3:
  case 4:
  case 5:
  case 6:
  case 7: return oneof_member(d, f, at, out, run);
  default: return 0; /* unknown: skipped */
  }
}

int isv__grps_pb_decode(const uint8_t *msg, size_t len, const isv__grps_limits *lim,
                        isv__arena *a, isv__grps_msg *out, char *err, size_t errcap) {
  static const uint8_t empty[1] = {0};
  if (err != NULL && errcap > 0) err[0] = '\0';
  memset(out, 0, sizeof *out);
  dec d = {a, lim ? lim->max_tensors : SIZE_MAX, err, errcap};
  if (msg == NULL) {
    msg = empty;
    len = 0;
  }
  isv__pb_reader rr = {msg, msg + len};
  const uint8_t *run = msg;
  isv__pb_field f;
  int k;
  for (;;) {
    const uint8_t *at = rr.p;
    if ((k = isv__pb_read_field(&rr, &f)) <= 0) break;
    int rc = top_field(&d, &f, at, out, &run);
    if (rc) return rc;
  }
  if (k < 0) return malformed(&d, "the GrpsMessage");
  isv__pb_span tail = {run, (size_t)(msg + len - run)};
  if (out->kind == ISV__GRPS_GTENSORS) return decode_gtensors(&d, tail, out);
  if (out->kind == ISV__GRPS_GMAP) return decode_gmap(&d, tail, out);
  return 0;
}

/* ============================================================================================
 * Encoding
 * ========================================================================================== */

#define EINVAL_(err, cap, ...) say(err, cap, ISV_EINVAL, __VA_ARGS__)

/* "tensor 'x'" or "tensor #i", for an encoder error. */
static const char *tensor_label(char *buf, size_t cap, const isv_tensor *t, size_t index) {
  char nb[80];
  if (t->name && t->name[0])
    snprintf(buf, cap, "tensor '%s'", clip(nb, sizeof nb, t->name, strlen(t->name)));
  else
    snprintf(buf, cap, "tensor #%zu", index);
  return buf;
}

/* What grps can carry: its DataTypes, uint32 dimensions, data that fills the shape. */
static int check_tensor(const isv_tensor *t, const char *ctx, size_t index, char *err,
                        size_t cap) {
  char lb[120];
  tensor_label(lb, sizeof lb, t, index);
  if (isv__dt_grps_number(t->dt) == 0) {
    const char *tn = isv_datatype_name(t->dt);
    return EINVAL_(err, cap, "%s: %s is %s, which grps's DataType cannot carry", ctx, lb,
                   tn ? tn : "an invalid type");
  }
  if (t->ndim > 0 && t->shape == NULL) return EINVAL_(err, cap, "%s: %s has no shape", ctx, lb);
  for (size_t i = 0; i < t->ndim; i++)
    if (t->shape[i] < 0 || t->shape[i] > (int64_t)UINT32_MAX)
      return EINVAL_(err, cap, "%s: %s has dimension %lld, grps's shape is uint32", ctx, lb,
                     (long long)t->shape[i]);
  size_t n = t->count;
  if (t->ndim > 0 && (isv__shape_count(t->shape, t->ndim, 0, &n, NULL) != 0 || n != t->count)) {
    char st[96];
    isv__shape_text(st, sizeof st, t->shape, t->ndim, 0);
    return EINVAL_(err, cap, "%s: %s has %zu elements but shape %s", ctx, lb, t->count, st);
  }
  if (t->count > 0 && t->data == NULL) return EINVAL_(err, cap, "%s: %s has no data", ctx, lb);
  if (t->dt == ISV_BYTES) { /* flat_string is a proto3 string: clients refuse other bytes */
    const isv_bytes *b = t->data;
    for (size_t i = 0; i < t->count; i++)
      if (!isv__utf8_valid(b[i].ptr, b[i].len))
        return EINVAL_(err, cap, "%s: %s element %zu is not UTF-8, which grps's flat_string "
                       "cannot carry", ctx, lb, i);
  }
  return 0;
}

/* Element i of an integer tensor as its flat field's varint (int32s sign-extended to 64 bits,
 * as protobuf writes them). */
static uint64_t int_elem(const isv_tensor *t, size_t i) {
  const uint8_t *p = t->data;
  switch (t->dt) {
  case ISV_UINT8: return p[i];
  case ISV_INT8: return (uint64_t)(int64_t)(int8_t)p[i];
  case ISV_INT16: {
    int16_t x;
    memcpy(&x, p + 2 * i, 2);
    return (uint64_t)(int64_t)x;
  }
  case ISV_INT32: {
    int32_t x;
    memcpy(&x, p + 4 * i, 4);
    return (uint64_t)(int64_t)x;
  }
  default: {
    uint64_t x;
    memcpy(&x, p + 8 * i, 8);
    return x;
  }
  }
}

/* Bytes of the packed flat field's payload; for BYTES, of all its flat_string fields. */
static size_t flat_size(const isv_tensor *t) {
  size_t n = 0;
  switch (t->dt) {
  case ISV_FP16:
  case ISV_FP32: return 4 * t->count;
  case ISV_FP64: return 8 * t->count;
  case ISV_BYTES: {
    const isv_bytes *b = t->data;
    for (size_t i = 0; i < t->count; i++) n += isv__pb_len_field_size(b[i].len);
    return n;
  }
  default:
    for (size_t i = 0; i < t->count; i++) n += isv__pb_varint_len(int_elem(t, i));
    return n;
  }
}

static size_t shape_size(const isv_tensor *t) {
  size_t n = 0;
  for (size_t i = 0; i < t->ndim; i++) n += isv__pb_varint_len((uint64_t)t->shape[i]);
  return n;
}

/* A GenericTensor's body, given its flat payload size. */
static size_t tensor_size(const isv_tensor *t, size_t flat) {
  size_t n = 2; /* dtype: never 0 for a tensor that passed check_tensor */
  if (t->name && t->name[0]) n += isv__pb_len_field_size(strlen(t->name));
  if (t->ndim) n += isv__pb_len_field_size(shape_size(t));
  if (t->count) n += t->dt == ISV_BYTES ? flat : isv__pb_len_field_size(flat);
  return n;
}

/* Where the by-reference encoder (isv__grps_pb_encode_ref) cuts the message: bytes written so
 * far since `seg` are one part, a referenced payload the next. NULL everywhere: copy. */
typedef struct refs {
  uv_buf_t *v;
  size_t n;
  uint8_t *seg; /* the start of the bytes written since the last cut */
  size_t min;   /* payloads this large are referenced */
} refs;

/* len bytes of data at p: referenced (p stays) or copied (p moves past them). */
static uint8_t *put_payload(uint8_t *p, refs *r, const void *data, size_t len) {
  if (r == NULL || len < r->min) {
    if (len) memcpy(p, data, len);
    return p + len;
  }
  if (p > r->seg) r->v[r->n++] = uv_buf_init((char *)r->seg, (unsigned)(p - r->seg));
  r->v[r->n] = uv_buf_init((char *)(uintptr_t)data, 0);
  r->v[r->n++].len = len; /* size_t on Unix: no 4 GiB cut */
  r->seg = p;
  return p;
}

static uint8_t *put_flat(uint8_t *p, const isv_tensor *t, size_t flat, refs *r) {
  if (t->dt == ISV_BYTES) {
    const isv_bytes *b = t->data;
    for (size_t i = 0; i < t->count; i++) p = isv__pb_put_bytes(p, 12, b[i].ptr, b[i].len);
    return p;
  }
  p = isv__pb_put_key(p, (uint32_t)isv__dt_grps_number(t->dt) + 3, ISV__PB_LEN);
  p = isv__pb_put_varint(p, flat);
  if (t->dt == ISV_FP32 || t->dt == ISV_FP64) return put_payload(p, r, t->data, flat); /* LE host */
  if (t->dt == ISV_FP16) {
    const uint8_t *h = t->data;
    for (size_t i = 0; i < t->count; i++, p += 4) {
      uint16_t x;
      memcpy(&x, h + 2 * i, 2);
      float v = isv__f16_to_f32(x);
      memcpy(p, &v, 4);
    }
    return p;
  }
  for (size_t i = 0; i < t->count; i++) p = isv__pb_put_varint(p, int_elem(t, i));
  return p;
}

/* Field `num` holding the tensor (key, length, body). */
static uint8_t *put_tensor(uint8_t *p, uint32_t num, const isv_tensor *t, refs *r) {
  size_t flat = t->count ? flat_size(t) : 0;
  p = isv__pb_put_key(p, num, ISV__PB_LEN);
  p = isv__pb_put_varint(p, tensor_size(t, flat));
  if (t->name && t->name[0]) p = isv__pb_put_bytes(p, 1, t->name, strlen(t->name));
  p = isv__pb_put_key(p, 2, ISV__PB_VARINT);
  p = isv__pb_put_varint(p, (uint64_t)isv__dt_grps_number(t->dt));
  if (t->ndim) {
    p = isv__pb_put_key(p, 3, ISV__PB_LEN);
    p = isv__pb_put_varint(p, shape_size(t));
    for (size_t i = 0; i < t->ndim; i++) p = isv__pb_put_varint(p, (uint64_t)t->shape[i]);
  }
  return t->count ? put_flat(p, t, flat, r) : p;
}

static size_t tensor_field_size(const isv_tensor *t) {
  return isv__pb_len_field_size(tensor_size(t, t->count ? flat_size(t) : 0));
}

/* A map entry's value field (2), without the tensor of S_T. */
static size_t entry_size(const isv__grps_entry *e) {
  size_t n = isv__pb_len_field_size(e->key_len);
  switch (e->map) {
  case ISV__GRPS_S_S:
  case ISV__GRPS_S_B: return n + isv__pb_len_field_size(e->v.s.n);
  case ISV__GRPS_S_I32: return n + 1 + isv__pb_varint_len((uint64_t)(int64_t)(int32_t)e->v.i);
  case ISV__GRPS_S_I64: return n + 1 + isv__pb_varint_len((uint64_t)e->v.i);
  case ISV__GRPS_S_F: return n + 5;
  case ISV__GRPS_S_D: return n + 9;
  default: return n + tensor_field_size(&e->t);
  }
}

static uint8_t *put_entry(uint8_t *p, const isv__grps_entry *e, refs *r) {
  p = isv__pb_put_key(p, (uint32_t)e->map, ISV__PB_LEN);
  p = isv__pb_put_varint(p, entry_size(e));
  p = isv__pb_put_bytes(p, 1, e->key_len ? e->key : "", e->key_len);
  switch (e->map) {
  case ISV__GRPS_S_S:
  case ISV__GRPS_S_B: return isv__pb_put_bytes(p, 2, e->v.s.n ? e->v.s.p : "", e->v.s.n);
  case ISV__GRPS_S_I32:
    p = isv__pb_put_key(p, 2, ISV__PB_VARINT);
    return isv__pb_put_varint(p, (uint64_t)(int64_t)(int32_t)e->v.i);
  case ISV__GRPS_S_I64:
    p = isv__pb_put_key(p, 2, ISV__PB_VARINT);
    return isv__pb_put_varint(p, (uint64_t)e->v.i);
  case ISV__GRPS_S_F:
    p = isv__pb_put_key(p, 2, ISV__PB_I32);
    memcpy(p, &e->v.f, 4);
    return p + 4;
  case ISV__GRPS_S_D:
    p = isv__pb_put_key(p, 2, ISV__PB_I64);
    memcpy(p, &e->v.d, 8);
    return p + 8;
  default: return put_tensor(p, 2, &e->t, r);
  }
}

static int ndarray_empty(const isv__grps_msg *m) {
  return m->kind == ISV__GRPS_NDARRAY && m->n_tensors == 0;
}

/* Bytes (p, n) that cannot be read: a caller's bug, refused rather than followed. */
static int no_bytes(const void *p, size_t n) { return n > 0 && p == NULL; }

static int check_entry(const isv__grps_entry *e, size_t i, char *err, size_t cap) {
  if (e->map < ISV__GRPS_S_S || e->map > ISV__GRPS_S_T)
    return EINVAL_(err, cap, "gmap: entry #%zu is in no map (%d)", i, (int)e->map);
  if (no_bytes(e->key, e->key_len) ||
      ((e->map == ISV__GRPS_S_S || e->map == ISV__GRPS_S_B) && no_bytes(e->v.s.p, e->v.s.n)))
    return EINVAL_(err, cap, "gmap: entry #%zu of %s has a length but no bytes", i,
                   map_names[e->map]);
  if (e->map == ISV__GRPS_S_T) return check_tensor(&e->t, "gmap: s_t", i, err, cap);
  return 0;
}

static int check_msg(const isv__grps_msg *m, char *err, size_t cap) {
  if ((unsigned)m->kind > ISV__GRPS_GMAP)
    return EINVAL_(err, cap, "the message has an unknown data kind %d", (int)m->kind);
  if (no_bytes(m->msg, m->msg_len) || no_bytes(m->model, m->model_len) ||
      ((m->kind == ISV__GRPS_BIN_DATA || m->kind == ISV__GRPS_STR_DATA) &&
       no_bytes(m->data, m->data_len)))
    return EINVAL_(err, cap, "the message has a length but no bytes (status.msg, model or data)");
  if (m->kind == ISV__GRPS_GTENSORS || m->kind == ISV__GRPS_NDARRAY) {
    const char *ctx = m->kind == ISV__GRPS_NDARRAY ? "ndarray" : "gtensors";
    for (size_t i = 0; i < m->n_tensors; i++)
      if (check_tensor(&m->tensors[i], ctx, i, err, cap)) return ISV_EINVAL;
  }
  for (size_t i = 0; m->kind == ISV__GRPS_GMAP && i < m->n_entries; i++)
    if (check_entry(&m->entries[i], i, err, cap)) return ISV_EINVAL;
  return 0;
}

static size_t status_size(const isv__grps_msg *m) {
  size_t n = m->msg_len ? isv__pb_len_field_size(m->msg_len) : 0;
  if (m->code) n += 1 + isv__pb_varint_len((uint64_t)(int64_t)m->code);
  if (m->flag) n += 1 + isv__pb_varint_len((uint64_t)(int64_t)m->flag);
  return n;
}

/* The body of the data_oneof member written (GenericTensorData, GenericMapData, or bytes). */
static size_t data_size(const isv__grps_msg *m) {
  size_t n = 0;
  switch (m->kind) {
  case ISV__GRPS_BIN_DATA:
  case ISV__GRPS_STR_DATA: return m->data_len;
  case ISV__GRPS_GTENSORS:
  case ISV__GRPS_NDARRAY:
    for (size_t i = 0; !ndarray_empty(m) && i < m->n_tensors; i++)
      n += tensor_field_size(&m->tensors[i]);
    return n;
  case ISV__GRPS_GMAP:
    for (size_t i = 0; i < m->n_entries; i++)
      n += isv__pb_len_field_size(entry_size(&m->entries[i]));
    return n;
  default: return 0;
  }
}

static uint32_t data_field(const isv__grps_msg *m) {
  static const uint32_t nums[] = {0, 3, 4, 5, 5, 7};
  return ndarray_empty(m) ? 6 : nums[m->kind];
}

static uint8_t *put_status(uint8_t *p, const isv__grps_msg *m) {
  p = isv__pb_put_key(p, 1, ISV__PB_LEN);
  p = isv__pb_put_varint(p, status_size(m));
  if (m->code) {
    p = isv__pb_put_key(p, 1, ISV__PB_VARINT);
    p = isv__pb_put_varint(p, (uint64_t)(int64_t)m->code);
  }
  if (m->msg_len) p = isv__pb_put_bytes(p, 2, m->msg, m->msg_len);
  if (m->flag) {
    p = isv__pb_put_key(p, 3, ISV__PB_VARINT);
    p = isv__pb_put_varint(p, (uint64_t)(int64_t)m->flag);
  }
  return p;
}

static uint8_t *put_data(uint8_t *p, const isv__grps_msg *m, size_t body, refs *r) {
  p = isv__pb_put_key(p, data_field(m), ISV__PB_LEN);
  p = isv__pb_put_varint(p, body);
  if (m->kind == ISV__GRPS_BIN_DATA || m->kind == ISV__GRPS_STR_DATA)
    return put_payload(p, r, m->data, body);
  for (size_t i = 0; m->kind == ISV__GRPS_GMAP && i < m->n_entries; i++)
    p = put_entry(p, &m->entries[i], r);
  for (size_t i = 0; m->kind != ISV__GRPS_GMAP && !ndarray_empty(m) && i < m->n_tensors; i++)
    p = put_tensor(p, 1, &m->tensors[i], r);
  return p;
}

/* The message's size on the wire (after check_msg). */
static size_t msg_size(const isv__grps_msg *m, size_t body) {
  size_t total = 0;
  if (m->has_status) total += isv__pb_len_field_size(status_size(m));
  if (m->model_len) total += isv__pb_len_field_size(m->model_len);
  if (m->kind != ISV__GRPS_NONE) total += isv__pb_len_field_size(body);
  return total;
}

/* Bytes of m's payloads the by-reference encoder does not copy, and how many there are. */
static size_t ref_bytes(const isv__grps_msg *m, size_t min, size_t *count) {
  size_t n = 0, k = 0;
  if (m->kind == ISV__GRPS_BIN_DATA || m->kind == ISV__GRPS_STR_DATA) {
    if (m->data_len >= min) n += m->data_len, k++;
  } else if (m->kind == ISV__GRPS_GMAP) {
    for (size_t i = 0; i < m->n_entries; i++) {
      const isv_tensor *t = &m->entries[i].t;
      if (m->entries[i].map == ISV__GRPS_S_T && t->count && (t->dt == ISV_FP32 || t->dt == ISV_FP64) &&
          flat_size(t) >= min)
        n += flat_size(t), k++;
    }
  } else if (!ndarray_empty(m)) {
    for (size_t i = 0; i < m->n_tensors; i++) {
      const isv_tensor *t = &m->tensors[i];
      if (t->count && (t->dt == ISV_FP32 || t->dt == ISV_FP64) && flat_size(t) >= min)
        n += flat_size(t), k++;
    }
  }
  *count = k;
  return n;
}

static uint8_t *put_msg(uint8_t *p, const isv__grps_msg *m, size_t body, refs *r) {
  if (m->has_status) p = put_status(p, m);
  if (m->model_len) p = isv__pb_put_bytes(p, 2, m->model, m->model_len);
  if (m->kind != ISV__GRPS_NONE) p = put_data(p, m, body, r);
  return p;
}

static int sizing_bug(char *err, size_t errcap, size_t wrote, size_t sized) {
  return say(err, errcap, ISV_EINTERNAL, "grps encoder wrote %zu bytes, sized %zu", wrote, sized);
}

int isv__grps_pb_encode(const isv__grps_msg *m, isv__buf *out, char *err, size_t errcap) {
  if (err != NULL && errcap > 0) err[0] = '\0';
  int rc = check_msg(m, err, errcap);
  if (rc) return rc;
  size_t body = data_size(m), total = msg_size(m, body);
  uint8_t *start = (uint8_t *)isv__buf_reserve(out, total);
  if (start == NULL || out->failed) return say(err, errcap, ISV_ENOMEM, "out of memory");
  uint8_t *p = put_msg(start, m, body, NULL);
  if ((size_t)(p - start) != total) /* never expected, never hidden */
    return sizing_bug(err, errcap, (size_t)(p - start), total);
  out->len += total;
  return 0;
}

int isv__grps_pb_encode_ref(const isv__grps_msg *m, isv__arena *a, size_t ref_min, uv_buf_t **v,
                            size_t *nv, size_t *total, char *err, size_t errcap) {
  if (err != NULL && errcap > 0) err[0] = '\0';
  int rc = check_msg(m, err, errcap);
  if (rc) return rc;
  if (ref_min == 0) ref_min = 1;
  size_t body = data_size(m), all = msg_size(m, body), k;
  size_t referenced = ref_bytes(m, ref_min, &k), written = all - referenced;
  uint8_t *start = isv__arena_alloc(a, written ? written : 1);
  refs r = {isv__arena_alloc(a, (2 * k + 1) * sizeof(uv_buf_t)), 0, start, ref_min};
  if (start == NULL || r.v == NULL) return say(err, errcap, ISV_ENOMEM, "out of memory");
  uint8_t *p = put_msg(start, m, body, &r);
  if ((size_t)(p - start) != written) return sizing_bug(err, errcap, (size_t)(p - start), written);
  if (p > r.seg) r.v[r.n++] = uv_buf_init((char *)r.seg, (unsigned)(p - r.seg));
  *v = r.v;
  *nv = r.n;
  *total = all;
  return 0;
}
