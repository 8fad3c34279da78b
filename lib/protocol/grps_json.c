/* grps's GrpsMessage in protobuf's JSON mapping (see grps_msg.h): the decoder walks the mutable
 * body once with the pull reader and builds everything in the arena (no second pass over a
 * value except to count "tensors" before allocating them); the encoder checks the whole message
 * first, so a message it refuses leaves the output buffer as it was.
 *
 * Choices the header leaves open:
 *  - keys match a field's proto name or its lowerCamelCase form, compared ignoring '_' and ASCII
 *    case; "flat_float" and "flat_double" (in grps's documentation) are aliases of flat_float32
 *    and flat_float64; a field given twice in one object is refused;
 *  - a tensor that gives no shape (or "shape": []) is [count]; one with no dtype takes the type
 *    of its one non-empty flat_* field, and with neither is refused;
 *  - "ndarray" must be an array: [] is an FP32 tensor of shape [0]; an empty list inside one,
 *    ragged lists or anything but numbers are refused;
 *  - the encoder always writes a tensor's "name" (also ""); it writes an NDARRAY tensor of
 *    shape [] as [v] and one of no elements as [] (the decoder reads them back as [1], [0]);
 *    NDARRAY takes any numeric type grps has; status messages, model and tensor names that are
 *    not UTF-8 are written with U+FFFD for the bad bytes, while data that is not UTF-8 (str_data,
 *    map keys and strings, BYTES elements) is refused: a proto string cannot carry it. */
#include "protocol/grps_msg.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "codec/base64.h"
#include "codec/datatype.h"
#include "codec/json_reader.h"
#include "codec/json_writer.h"
#include "codec/utf8.h"

/* ---- decoding: helpers ----------------------------------------------------------------------- */

typedef struct dec {
  isv__json_reader rd;
  char *body;
  size_t len;
  const isv__grps_limits *lim;
  isv__arena *a;
  char *err;
  size_t errcap;
  isv__grps_entry *entries; /* GMAP's, across all its maps */
  size_t n_entries, cap_entries;
} dec;

static int fail(dec *d, int code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

static int fail(dec *d, int code, const char *fmt, ...) {
  if (d->errcap) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(d->err, d->errcap, fmt, ap);
    va_end(ap);
  }
  return code;
}

#define BAD(d, ...) fail((d), ISV_EBADREQ, __VA_ARGS__)

static int oom(dec *d) { return fail(d, ISV_ENOMEM, "out of memory decoding a grps JSON message"); }

/* The reader's message (it says where) after `where`. */
static int json_bad(dec *d, const isv__json_reader *rd, const char *where) {
  const char *m = isv__json_error(rd, NULL);
  return BAD(d, "%s: %s", where, m ? m : "invalid JSON");
}

/* At most 64 bytes of a client's text for a message, cut on a UTF-8 character boundary. */
static int clip(const char *p, size_t n) {
  if (n <= 64) return (int)n;
  size_t m = 64;
  while (m > 0 && ((unsigned char)p[m] & 0xC0) == 0x80) m--;
  return (int)m;
}

static const char *kind_of(const isv__json_token *t) {
  switch (t->type) {
  case ISV__JSON_OBJECT_BEGIN: return "an object";
  case ISV__JSON_ARRAY_BEGIN: return "an array";
  case ISV__JSON_STRING: return "a string";
  case ISV__JSON_NUMBER: return "a number";
  case ISV__JSON_TRUE:
  case ISV__JSON_FALSE: return "a boolean";
  case ISV__JSON_NULL: return "null";
  default: return "no value";
  }
}

/* The value after a key: 0, or the reader's error. */
static int next_value(dec *d, isv__json_token *v, const char *where) {
  return isv__json_next(&d->rd, v) == ISV__JSON_ERROR ? json_bad(d, &d->rd, where) : 0;
}

/* The next key of the object being read into *k; 1 at its end, 0 for a key, <0 an error. */
static int next_key(dec *d, isv__json_token *k, const char *where) {
  isv__json_type ty = isv__json_next(&d->rd, k);
  if (ty == ISV__JSON_OBJECT_END) return 1;
  return ty == ISV__JSON_KEY ? 0 : json_bad(d, &d->rd, where);
}

/* ---- field names ----------------------------------------------------------------------------- */

typedef struct field {
  const char *name; /* lower case, as in the proto */
  int id;
} field;

/* Key k names `name` ignoring '_' and ASCII case: "str_data", "strData", "STR_DATA". */
static int name_eq(const char *k, size_t n, const char *name) {
  size_t i = 0;
  for (;;) {
    while (i < n && k[i] == '_') i++;
    while (*name == '_') name++;
    if (i == n || *name == '\0') return i == n && *name == '\0';
    char c = k[i] >= 'A' && k[i] <= 'Z' ? (char)(k[i] + ('a' - 'A')) : k[i];
    if (c != *name) return 0;
    i++;
    name++;
  }
}

static int lookup(const isv__json_token *k, const field *f, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (name_eq(k->ptr, k->len, f[i].name)) return f[i].id;
  return -1;
}

/* A message being read: its fields, its name, where it is ("" at the top), those seen. */
typedef struct obj {
  const field *f;
  size_t nf;
  const char *msg;  /* "GrpsMessage", "GenericTensor", ... */
  const char *path; /* "gtensors.tensors[1]"; "" when the name says it */
  unsigned seen;
} obj;

/* The next member of o: 1 at its end; 0 with its field in *id and its value's first token in
 * *v; <0 an error. An unknown field, or one given twice, is refused. */
static int next_member(dec *d, obj *o, int *id, isv__json_token *v) {
  isv__json_token k;
  const char *where = o->path[0] ? o->path : o->msg;
  int rc = next_key(d, &k, where);
  if (rc) return rc;
  const char *sep = o->path[0] ? " at " : "";
  *id = lookup(&k, o->f, o->nf);
  if (*id < 0)
    return BAD(d, "unknown field '%.*s' in %s%s%s", clip(k.ptr, k.len), k.ptr, o->msg, sep,
               o->path);
  if (o->seen & (1u << *id))
    return BAD(d, "field '%.*s' given twice in %s%s%s", clip(k.ptr, k.len), k.ptr, o->msg, sep,
               o->path);
  o->seen |= 1u << *id;
  return next_value(d, v, where);
}

/* ---- scalars --------------------------------------------------------------------------------- */

/* proto3 JSON lets integer and floating fields be quoted ("9007199254740993", "NaN"): a string
 * or number token as a NUMBER token. -1 for anything else. */
static int as_number(const isv__json_token *t, isv__json_token *n) {
  if (t->type != ISV__JSON_NUMBER && t->type != ISV__JSON_STRING) return -1;
  *n = *t;
  n->type = ISV__JSON_NUMBER;
  return 0;
}

/* An integer field (a number or a quoted one) within [lo, hi]. */
static int int_value(dec *d, const isv__json_token *t, int64_t lo, int64_t hi, int64_t *out,
                     const char *where) {
  isv__json_token n;
  if (as_number(t, &n) != 0) return BAD(d, "%s must be an integer, got %s", where, kind_of(t));
  if (isv__json_to_int64(&n, out) != 0 || *out < lo || *out > hi)
    return BAD(d, "%s: '%.*s' is not an integer in [%lld, %lld]", where, clip(t->ptr, t->len),
               t->ptr, (long long)lo, (long long)hi);
  return 0;
}

/* A float or double field: a number, a bare NaN/Infinity, or either quoted. */
static int real_value(dec *d, const isv__json_token *t, double *dv, float *fv, const char *where) {
  isv__json_token n;
  if (as_number(t, &n) != 0) return BAD(d, "%s must be a number, got %s", where, kind_of(t));
  if (dv ? isv__json_to_double(&n, dv) : isv__json_to_float(&n, fv))
    return BAD(d, "%s: '%.*s' is not a number", where, clip(t->ptr, t->len), t->ptr);
  return 0;
}

/* An enum by name or number: names[0..n) are the values 0..n-1. */
static int enum_value(dec *d, const isv__json_token *t, const char *const *names, int n, int *out,
                      const char *what, const char *where) {
  if (t->type == ISV__JSON_STRING) {
    for (int i = 0; i < n; i++)
      if (names[i] && strlen(names[i]) == t->len && memcmp(names[i], t->ptr, t->len) == 0) {
        *out = i;
        return 0;
      }
    return BAD(d, "%s: unknown %s '%.*s'", where, what, clip(t->ptr, t->len), t->ptr);
  }
  int64_t v;
  if (t->type != ISV__JSON_NUMBER)
    return BAD(d, "%s must be a %s name or number, got %s", where, what, kind_of(t));
  if (isv__json_to_int64(t, &v) != 0 || v < 0 || v >= n || names[v] == NULL)
    return BAD(d, "%s: unknown %s number %.*s", where, what, clip(t->ptr, t->len), t->ptr);
  *out = (int)v;
  return 0;
}

/* grps's DataType: ISV_TYPE_INVALID for DT_INVALID. */
static int dtype_value(dec *d, const isv__json_token *t, isv_datatype *dt, const char *where) {
  static const char *const names[] = {"DT_INVALID", "DT_UINT8",   "DT_INT8",
                                      "DT_INT16",   "DT_INT32",   "DT_INT64",
                                      "DT_FLOAT16", "DT_FLOAT32", "DT_FLOAT64",
                                      "DT_STRING"};
  int v = 0;
  if (enum_value(d, t, names, (int)(sizeof names / sizeof *names), &v, "DataType", where))
    return ISV_EBADREQ;
  *dt = v ? isv__dt_from_grps_number(v) : ISV_TYPE_INVALID;
  return 0;
}

/* ---- growing arrays in the arena ------------------------------------------------------------- */

/* Elements whose count is known only at the end: doubled in the arena as they come (the old
 * blocks stay in the arena: at most as much again). */
typedef struct vec {
  char *p;
  size_t n, cap, size;
} vec;

/* Room for element v->n. */
static int vec_room(dec *d, vec *v) {
  if (v->n < v->cap) return 0;
  size_t cap = v->cap ? v->cap * 2 : 8;
  if (cap > SIZE_MAX / v->size) return oom(d);
  char *p = isv__arena_alloc(d->a, cap * v->size);
  if (p == NULL) return oom(d);
  if (v->n) memcpy(p, v->p, v->n * v->size);
  v->p = p;
  v->cap = cap;
  return 0;
}

/* ---- tensors --------------------------------------------------------------------------------- */

/* GenericTensor's repeated fields, in field-number order, and the type each is parsed into
 * (the reader range-checks UINT8, INT8 and INT16 and rounds FP16 from the decimal text). */
static const struct {
  const char *name;
  isv_datatype dt;
} flats[] = {
    {"flat_uint8", ISV_UINT8},     {"flat_int8", ISV_INT8},       {"flat_int16", ISV_INT16},
    {"flat_int32", ISV_INT32},     {"flat_int64", ISV_INT64},     {"flat_float16", ISV_FP16},
    {"flat_float32", ISV_FP32},    {"flat_float64", ISV_FP64},    {"flat_string", ISV_BYTES},
};
#define N_FLAT (sizeof flats / sizeof *flats)

enum { T_NAME, T_DTYPE, T_SHAPE, T_FLAT };

static const field tensor_fields[] = {
    {"name", T_NAME},
    {"dtype", T_DTYPE},
    {"shape", T_SHAPE},
    {"flat_uint8", T_FLAT + 0},
    {"flat_int8", T_FLAT + 1},
    {"flat_int16", T_FLAT + 2},
    {"flat_int32", T_FLAT + 3},
    {"flat_int64", T_FLAT + 4},
    {"flat_float16", T_FLAT + 5},
    {"flat_float32", T_FLAT + 6},
    {"flat_float64", T_FLAT + 7},
    {"flat_string", T_FLAT + 8},
    {"flat_float", T_FLAT + 6},  /* grps's documentation spells them so */
    {"flat_double", T_FLAT + 7},
};

static const char *flat_name(isv_datatype dt) {
  for (size_t k = 0; k < N_FLAT; k++)
    if (flats[k].dt == dt) return flats[k].name;
  return "?";
}

/* A tensor while its object is read: its fields come in any order. */
typedef struct tstate {
  const char *path; /* "gtensors.tensors[2]", "gmap.s_t['k']" */
  const char *name;
  size_t name_len;
  isv_datatype dt; /* ISV_TYPE_INVALID: DT_INVALID or absent */
  int64_t shape[ISV__MAX_NDIM];
  size_t ndim;
  vec flat[N_FLAT];
} tstate;

/* Element i of a flat_* field into v as dt: flat_string takes strings, the others numbers. */
static int flat_elem(dec *d, const isv__json_token *e, isv_datatype dt, vec *v,
                     const char *where) {
  size_t i = v->n;
  if (dt == ISV_BYTES) {
    if (e->type != ISV__JSON_STRING)
      return BAD(d, "%s: element %zu: expected a string, got %s", where, i, kind_of(e));
    ((isv_bytes *)(void *)v->p)[i] = (isv_bytes){e->ptr, e->len};
    return 0;
  }
  isv__json_token n;
  double x;
  if (as_number(e, &n) != 0)
    return BAD(d, "%s: element %zu: expected a number, got %s", where, i, kind_of(e));
  /* a quoted element must be a whole number literal before the reader parses its text */
  if (e->type == ISV__JSON_STRING && isv__json_to_double(&n, &x) != 0)
    return BAD(d, "%s: element %zu: \"%.*s\" is not a number", where, i, clip(e->ptr, e->len),
               e->ptr);
  return isv__json_read_element(&d->rd, &n, dt, v->p, i) ? json_bad(d, &d->rd, where) : 0;
}

/* A flat_* field's value, its first token t read: an array (or null) of elements into v. */
static int read_flat(dec *d, const isv__json_token *t, isv_datatype dt, vec *v,
                     const char *where) {
  if (t->type == ISV__JSON_NULL) return 0;
  if (t->type != ISV__JSON_ARRAY_BEGIN)
    return BAD(d, "%s must be an array, got %s", where, kind_of(t));
  for (;;) {
    isv__json_token e;
    isv__json_type ty = isv__json_next(&d->rd, &e);
    if (ty == ISV__JSON_ARRAY_END) return 0;
    if (ty == ISV__JSON_ERROR) return json_bad(d, &d->rd, where);
    int rc = vec_room(d, v);
    if (rc == 0) rc = flat_elem(d, &e, dt, v, where);
    if (rc) return rc;
    v->n++;
  }
}

/* "shape": uint32 dimensions, as numbers or quoted. */
static int read_shape(dec *d, const isv__json_token *t, tstate *s, const char *where) {
  if (t->type == ISV__JSON_NULL) return 0;
  if (t->type != ISV__JSON_ARRAY_BEGIN)
    return BAD(d, "%s must be an array of dimensions, got %s", where, kind_of(t));
  char at[280];
  for (s->ndim = 0;; s->ndim++) {
    isv__json_token e;
    isv__json_type ty = isv__json_next(&d->rd, &e);
    if (ty == ISV__JSON_ARRAY_END) return 0;
    if (ty == ISV__JSON_ERROR) return json_bad(d, &d->rd, where);
    if (s->ndim == ISV__MAX_NDIM)
      return BAD(d, "%s has more than %d dimensions", where, ISV__MAX_NDIM);
    snprintf(at, sizeof at, "%s[%zu]", where, s->ndim);
    if (int_value(d, &e, 0, UINT32_MAX, &s->shape[s->ndim], at)) return ISV_EBADREQ;
  }
}

/* The product of the shape (core/request.h's rule), or SIZE_MAX when it is negative or
 * overflows. */
static size_t shape_count(const int64_t *shape, size_t ndim) {
  size_t n;
  return isv__shape_count(shape, ndim, 0, &n, NULL) == 0 ? n : SIZE_MAX;
}

/* The tensor s read into t: one flat_* field of its dtype, as many elements as its shape. */
static int finish_tensor(dec *d, const tstate *s, isv_tensor *t) {
  char label[300];
  if (s->name_len)
    snprintf(label, sizeof label, "tensor '%.*s' (%s)", clip(s->name, s->name_len), s->name,
             s->path);
  else
    snprintf(label, sizeof label, "%s", s->path);
  int which = -1; /* proto3: an empty repeated field is no field */
  for (int k = 0; k < (int)N_FLAT; k++) {
    if (s->flat[k].n == 0) continue;
    if (which >= 0)
      return BAD(d, "%s has data in both %s and %s", label, flats[which].name, flats[k].name);
    which = k;
  }
  isv_datatype dt = s->dt;
  if (dt == ISV_TYPE_INVALID && which < 0)
    return BAD(d, "%s has no dtype and no data", label);
  if (dt == ISV_TYPE_INVALID) dt = flats[which].dt;
  if (which >= 0 && flats[which].dt != dt)
    return BAD(d, "%s: dtype %s takes its data in %s, not in %s", label,
               isv__dt_name(dt, ISV__DTN_GRPS), flat_name(dt), flats[which].name);
  size_t count = which >= 0 ? s->flat[which].n : 0, ndim = s->ndim ? s->ndim : 1;
  if (s->ndim && shape_count(s->shape, s->ndim) != count) {
    char sh[120];
    isv__shape_text(sh, sizeof sh, s->shape, s->ndim, 0);
    return BAD(d, "%s: shape %s does not match the %zu elements of %s", label, sh, count,
               flat_name(dt));
  }
  int64_t *shape = isv__arena_alloc(d->a, ndim * sizeof *shape);
  char *name = isv__arena_strndup(d->a, s->name, s->name_len);
  void *data = which >= 0 ? s->flat[which].p : isv__arena_alloc(d->a, 0);
  if (shape == NULL || name == NULL || data == NULL) return oom(d);
  if (s->ndim) memcpy(shape, s->shape, ndim * sizeof *shape);
  else shape[0] = (int64_t)count;
  memset(t, 0, sizeof *t);
  t->name = name;
  t->dt = dt;
  t->shape = shape;
  t->ndim = ndim;
  t->data = data;
  t->count = count;
  t->byte_size = count * isv__dt_size(dt);
  if (dt == ISV_BYTES) {
    t->byte_size = 0;
    for (size_t i = 0; i < count; i++) t->byte_size += ((isv_bytes *)data)[i].len;
  }
  return 0;
}

/* One member of a GenericTensor object. */
static int tensor_member(dec *d, tstate *s, int id, const isv__json_token *v) {
  char where[240];
  switch (id) {
  case T_NAME:
    snprintf(where, sizeof where, "%s.name", s->path);
    if (v->type == ISV__JSON_NULL) return 0;
    if (v->type != ISV__JSON_STRING)
      return BAD(d, "%s must be a string, got %s", where, kind_of(v));
    s->name = v->ptr;
    s->name_len = v->len;
    return 0;
  case T_DTYPE:
    snprintf(where, sizeof where, "%s.dtype", s->path);
    return v->type == ISV__JSON_NULL ? 0 : dtype_value(d, v, &s->dt, where);
  case T_SHAPE:
    snprintf(where, sizeof where, "%s.shape", s->path);
    return read_shape(d, v, s, where);
  default:
    snprintf(where, sizeof where, "%s.%s", s->path, flats[id - T_FLAT].name);
    return read_flat(d, v, flats[id - T_FLAT].dt, &s->flat[id - T_FLAT], where);
  }
}

/* A GenericTensor object, its '{' read, into t. */
static int tensor_obj(dec *d, const char *path, isv_tensor *t) {
  tstate s;
  memset(&s, 0, sizeof s);
  s.path = path;
  s.name = "";
  for (size_t k = 0; k < N_FLAT; k++) s.flat[k].size = isv__dt_size(flats[k].dt);
  obj o = {tensor_fields, sizeof tensor_fields / sizeof *tensor_fields, "GenericTensor", path, 0};
  for (;;) {
    isv__json_token v;
    int id, rc = next_member(d, &o, &id, &v);
    if (rc > 0) break;
    if (rc == 0) rc = tensor_member(d, &s, id, &v);
    if (rc) return rc;
  }
  return finish_tensor(d, &s, t);
}

/* The GenericTensor objects of "tensors" (the array whose '[' is t), counted first with a
 * second reader that only skips (it leaves the buffer as it is), so a message over the limit is
 * refused before anything is allocated for it. */
static int count_tensors(dec *d, const isv__json_token *t, size_t *n) {
  isv__json_reader sub;
  isv__json_token e;
  isv__json_reader_init(&sub, d->body, d->len, d->lim->max_depth);
  sub.pos = t->offset;
  (void)isv__json_next(&sub, &e); /* '[' again */
  for (*n = 0;; ++*n) {
    isv__json_type ty = isv__json_next(&sub, &e);
    if (ty == ISV__JSON_ARRAY_END) return 0;
    if (ty == ISV__JSON_ERROR) return json_bad(d, &sub, "gtensors.tensors");
    if (ty != ISV__JSON_OBJECT_BEGIN)
      return BAD(d, "gtensors.tensors[%zu] must be a GenericTensor object, got %s", *n,
                 kind_of(&e));
    if (*n == d->lim->max_tensors)
      return BAD(d, "gtensors.tensors holds more than %u tensors (the server's limit)",
                 d->lim->max_tensors);
    if (isv__json_skip(&sub, &e, NULL) != 0) return json_bad(d, &sub, "gtensors.tensors");
  }
}

static int read_tensors(dec *d, const isv__json_token *t, isv__grps_msg *out) {
  if (t->type == ISV__JSON_NULL) return 0;
  if (t->type != ISV__JSON_ARRAY_BEGIN)
    return BAD(d, "gtensors.tensors must be an array of GenericTensor objects, got %s",
               kind_of(t));
  size_t n;
  int rc = count_tensors(d, t, &n);
  if (rc) return rc;
  out->tensors = isv__arena_calloc(d->a, n ? n : 1, sizeof *out->tensors);
  if (out->tensors == NULL) return oom(d);
  char path[48];
  for (size_t i = 0; i < n; i++) {
    isv__json_token e;
    snprintf(path, sizeof path, "gtensors.tensors[%zu]", i);
    if (isv__json_next(&d->rd, &e) != ISV__JSON_OBJECT_BEGIN) return json_bad(d, &d->rd, path);
    if ((rc = tensor_obj(d, path, &out->tensors[i])) != 0) return rc;
    out->n_tensors = i + 1;
  }
  isv__json_token e;
  if (isv__json_next(&d->rd, &e) != ISV__JSON_ARRAY_END)
    return json_bad(d, &d->rd, "gtensors.tensors");
  return 0;
}

/* "gtensors": GenericTensorData {"tensors": [...]}. */
static int read_gtensors(dec *d, const isv__json_token *t, isv__grps_msg *out) {
  static const field fields[] = {{"tensors", 0}};
  if (t->type != ISV__JSON_OBJECT_BEGIN)
    return BAD(d, "gtensors must be a GenericTensorData object ({\"tensors\": [...]}), got %s",
               kind_of(t));
  obj o = {fields, 1, "GenericTensorData", "", 0};
  for (;;) {
    isv__json_token v;
    int id, rc = next_member(d, &o, &id, &v);
    if (rc > 0) return 0;
    if (rc == 0) rc = read_tensors(d, &v, out);
    if (rc) return rc;
  }
}

/* ---- ndarray --------------------------------------------------------------------------------- */

/* "ndarray[1][0]": the position of the value at depth n (cnt[i] values seen at depth i). */
static void nd_path(char *buf, size_t cap, const size_t *cnt, size_t n) {
  size_t w = (size_t)snprintf(buf, cap, "ndarray");
  for (size_t i = 0; i < n && w + 24 < cap; i++)
    w += (size_t)snprintf(buf + w, cap - w, "[%zu]", cnt[i] - 1);
}

/* Nested lists of numbers, the first '[' in t: one FP32 tensor of their (rectangular) shape. */
typedef struct ndwalk {
  int64_t dims[ISV__MAX_NDIM]; /* -1 until the first list of that depth closes */
  size_t cnt[ISV__MAX_NDIM];   /* values seen in the open list of each depth */
  size_t depth;
  size_t leaf; /* the depth of the numbers; 0 until the first one */
  vec v;
} ndwalk;

static int nd_token(dec *d, ndwalk *w, const isv__json_token *t) {
  char at[220];
  switch (t->type) {
  case ISV__JSON_ARRAY_BEGIN:
    if (w->depth) w->cnt[w->depth - 1]++;
    nd_path(at, sizeof at, w->cnt, w->depth);
    if (w->leaf && w->depth >= w->leaf)
      return BAD(d, "%s: ragged: a list where the others have a number", at);
    if (w->depth == ISV__MAX_NDIM)
      return BAD(d, "%s: lists nested deeper than %d dimensions", at, ISV__MAX_NDIM);
    w->cnt[w->depth++] = 0;
    return 0;
  case ISV__JSON_ARRAY_END: {
    size_t c = w->cnt[--w->depth];
    nd_path(at, sizeof at, w->cnt, w->depth);
    if (c == 0 && w->depth > 0) return BAD(d, "%s: an empty list inside an ndarray", at);
    if (w->dims[w->depth] < 0) w->dims[w->depth] = (int64_t)c;
    else if (w->dims[w->depth] != (int64_t)c)
      return BAD(d, "%s: ragged: a list of %zu where the others have %lld", at, c,
                 (long long)w->dims[w->depth]);
    return 0;
  }
  case ISV__JSON_NUMBER:
    w->cnt[w->depth - 1]++;
    nd_path(at, sizeof at, w->cnt, w->depth);
    if (w->leaf == 0) w->leaf = w->depth;
    if (w->depth != w->leaf) return BAD(d, "%s: ragged: a number where the others have a list", at);
    if (vec_room(d, &w->v)) return ISV_ENOMEM;
    if (isv__json_read_element(&d->rd, t, ISV_FP32, w->v.p, w->v.n) != 0)
      return json_bad(d, &d->rd, at);
    w->v.n++;
    return 0;
  default:
    w->cnt[w->depth - 1]++;
    nd_path(at, sizeof at, w->cnt, w->depth);
    return BAD(d, "%s: expected a number or a list, got %s", at, kind_of(t));
  }
}

static int read_ndarray(dec *d, const isv__json_token *t, isv__grps_msg *out) {
  if (t->type != ISV__JSON_ARRAY_BEGIN)
    return BAD(d, "ndarray must be an array (nested lists of numbers), got %s", kind_of(t));
  ndwalk w;
  memset(&w, 0, sizeof w);
  for (size_t i = 0; i < ISV__MAX_NDIM; i++) w.dims[i] = -1;
  w.v.size = sizeof(float);
  isv__json_token tok = *t;
  for (;;) {
    int rc = nd_token(d, &w, &tok);
    if (rc) return rc;
    if (w.depth == 0) break;
    if (isv__json_next(&d->rd, &tok) == ISV__JSON_ERROR) return json_bad(d, &d->rd, "ndarray");
  }
  size_t ndim = w.leaf ? w.leaf : 1; /* [] is shape [0] */
  isv_tensor *ten = isv__arena_calloc(d->a, 1, sizeof *ten);
  int64_t *shape = isv__arena_alloc(d->a, ndim * sizeof *shape);
  void *data = w.v.n ? (void *)w.v.p : isv__arena_alloc(d->a, 0);
  if (ten == NULL || shape == NULL || data == NULL) return oom(d);
  for (size_t i = 0; i < ndim; i++) shape[i] = w.dims[i] < 0 ? 0 : w.dims[i];
  ten->name = "";
  ten->dt = ISV_FP32;
  ten->shape = shape;
  ten->ndim = ndim;
  ten->data = data;
  ten->count = w.v.n;
  ten->byte_size = w.v.n * sizeof(float);
  out->tensors = ten;
  out->n_tensors = 1;
  return 0;
}

/* ---- gmap ------------------------------------------------------------------------------------ */

static const char *const map_names[] = {NULL, "s_s", "s_b", "s_i32", "s_i64", "s_f", "s_d", "s_t"};

static const field map_fields[] = {
    {"s_s", ISV__GRPS_S_S},     {"s_b", ISV__GRPS_S_B}, {"s_i32", ISV__GRPS_S_I32},
    {"s_i64", ISV__GRPS_S_I64}, {"s_f", ISV__GRPS_S_F}, {"s_d", ISV__GRPS_S_D},
    {"s_t", ISV__GRPS_S_T},
};

/* An s_b value: standard or URL-safe base64, padding optional (what protobuf's JSON parsers
 * accept), normalised to the strict form in the arena and decoded there in place. */
static int b64_value(dec *d, const isv__json_token *t, isv__grps_entry *e, const char *where) {
  if (t->type != ISV__JSON_STRING)
    return BAD(d, "%s must be a base64 string, got %s", where, kind_of(t));
  size_t n = t->len, padded = n + (4 - n % 4) % 4;
  char *q = n % 4 == 1 ? NULL : isv__arena_alloc(d->a, padded);
  if (n % 4 != 1 && q == NULL) return oom(d);
  size_t got = (size_t)-1;
  if (q) {
    for (size_t i = 0; i < n; i++)
      q[i] = t->ptr[i] == '-' ? '+' : t->ptr[i] == '_' ? '/' : t->ptr[i];
    for (size_t i = n; i < padded; i++) q[i] = '=';
    got = isv__base64_decode(q, padded, (unsigned char *)q);
  }
  if (got == (size_t)-1) return BAD(d, "%s is not valid base64", where);
  e->v.s.p = q;
  e->v.s.n = got;
  return 0;
}

/* The value of entry e of its map, its first token t read. */
static int map_value(dec *d, const isv__json_token *t, isv__grps_entry *e, const char *where) {
  switch (e->map) {
  case ISV__GRPS_S_S:
    if (t->type != ISV__JSON_STRING)
      return BAD(d, "%s must be a string, got %s", where, kind_of(t));
    e->v.s.p = t->ptr;
    e->v.s.n = t->len;
    return 0;
  case ISV__GRPS_S_B: return b64_value(d, t, e, where);
  case ISV__GRPS_S_I32: return int_value(d, t, INT32_MIN, INT32_MAX, &e->v.i, where);
  case ISV__GRPS_S_I64: return int_value(d, t, INT64_MIN, INT64_MAX, &e->v.i, where);
  case ISV__GRPS_S_F: return real_value(d, t, NULL, &e->v.f, where);
  case ISV__GRPS_S_D: return real_value(d, t, &e->v.d, NULL, where);
  default:
    if (t->type != ISV__JSON_OBJECT_BEGIN)
      return BAD(d, "%s must be a GenericTensor object, got %s", where, kind_of(t));
    return tensor_obj(d, where, &e->t);
  }
}

/* A new entry of map m, keyed k: at most max_tensors in all the maps, refused before they are
 * allocated. */
static int push_entry(dec *d, isv__grps_map m, const isv__json_token *k, isv__grps_entry **out) {
  if (d->n_entries == d->lim->max_tensors)
    return BAD(d, "gmap holds more than %u entries (the server's limit)", d->lim->max_tensors);
  if (d->n_entries == d->cap_entries) {
    vec v = {(char *)d->entries, d->n_entries, d->cap_entries, sizeof *d->entries};
    if (vec_room(d, &v)) return ISV_ENOMEM;
    d->entries = (isv__grps_entry *)(void *)v.p;
    d->cap_entries = v.cap;
  }
  if (k->len && memchr(k->ptr, 0, k->len)) /* "\u0000": a key is a name (a C string) further
                                             * on — refused rather than cut at its NUL */
    return BAD(d, "gmap.%s: a key holds a NUL character (\\u0000)", map_names[m]);
  isv__grps_entry *e = &d->entries[d->n_entries];
  memset(e, 0, sizeof *e);
  e->map = m;
  e->key = isv__arena_strndup(d->a, k->ptr, k->len);
  e->key_len = k->len;
  if (e->key == NULL) return oom(d);
  d->n_entries++;
  *out = e;
  return 0;
}

/* One map of GenericMapData, its '{' read. */
static int read_map(dec *d, isv__grps_map m) {
  char where[120];
  for (;;) {
    isv__json_token k, v;
    isv__grps_entry *e = NULL;
    snprintf(where, sizeof where, "gmap.%s", map_names[m]);
    int rc = next_key(d, &k, where);
    if (rc > 0) return 0;
    if (rc == 0) rc = push_entry(d, m, &k, &e);
    if (rc) return rc;
    snprintf(where, sizeof where, "gmap.%s['%.*s']", map_names[m], clip(k.ptr, k.len), k.ptr);
    if ((rc = next_value(d, &v, where)) != 0) return rc;
    if (v.type == ISV__JSON_NULL) return BAD(d, "%s: a map value cannot be null", where);
    if ((rc = map_value(d, &v, e, where)) != 0) return rc;
  }
}

/* "gmap": GenericMapData. */
static int read_gmap(dec *d, const isv__json_token *t, isv__grps_msg *out) {
  if (t->type != ISV__JSON_OBJECT_BEGIN)
    return BAD(d, "gmap must be a GenericMapData object, got %s", kind_of(t));
  obj o = {map_fields, sizeof map_fields / sizeof *map_fields, "GenericMapData", "", 0};
  for (;;) {
    isv__json_token v;
    int id, rc = next_member(d, &o, &id, &v);
    if (rc > 0) break;
    if (rc) return rc;
    if (v.type == ISV__JSON_NULL) continue;
    if (v.type != ISV__JSON_OBJECT_BEGIN)
      return BAD(d, "gmap.%s must be an object (a map), got %s", map_names[id], kind_of(&v));
    if ((rc = read_map(d, (isv__grps_map)id)) != 0) return rc;
  }
  out->entries = d->entries;
  out->n_entries = d->n_entries;
  return 0;
}

/* ---- GrpsMessage ----------------------------------------------------------------------------- */

static int read_status(dec *d, const isv__json_token *t, isv__grps_msg *out) {
  static const field fields[] = {{"code", 0}, {"msg", 1}, {"status", 2}};
  static const char *const flags[] = {"UNKNOWN", "SUCCESS", "FAILURE"};
  if (t->type != ISV__JSON_OBJECT_BEGIN)
    return BAD(d, "status must be a Status object, got %s", kind_of(t));
  out->has_status = 1;
  obj o = {fields, 3, "Status", "", 0};
  for (;;) {
    isv__json_token v;
    int64_t code;
    int id, flag = 0, rc = next_member(d, &o, &id, &v);
    if (rc > 0) return 0;
    if (rc) return rc;
    if (v.type == ISV__JSON_NULL) continue;
    if (id == 0) {
      if (int_value(d, &v, INT32_MIN, INT32_MAX, &code, "status.code")) return ISV_EBADREQ;
      out->code = (int32_t)code;
    } else if (id == 1) {
      if (v.type != ISV__JSON_STRING)
        return BAD(d, "status.msg must be a string, got %s", kind_of(&v));
      out->msg = v.ptr;
      out->msg_len = v.len;
    } else {
      if (enum_value(d, &v, flags, 3, &flag, "StatusFlag", "status.status")) return ISV_EBADREQ;
      out->flag = (isv__grps_flag)flag;
    }
  }
}

enum { F_STATUS, F_MODEL, F_BIN, F_STR, F_GTENSORS, F_NDARRAY, F_GMAP };

static const field msg_fields[] = {
    {"status", F_STATUS},     {"model", F_MODEL},     {"bin_data", F_BIN}, {"str_data", F_STR},
    {"gtensors", F_GTENSORS}, {"ndarray", F_NDARRAY}, {"gmap", F_GMAP},
};

static const char *kind_name(isv__grps_kind k) {
  static const char *const names[] = {"", "bin_data", "str_data", "gtensors", "ndarray", "gmap"};
  return (unsigned)k < 6 ? names[k] : "?";
}

/* A member of data_oneof (field id), its first token v read and not null. */
static int data_member(dec *d, int id, const isv__json_token *v, isv__grps_msg *out) {
  isv__grps_kind kind = (isv__grps_kind)(ISV__GRPS_BIN_DATA + (id - F_BIN));
  if (out->kind != ISV__GRPS_NONE)
    return BAD(d, "GrpsMessage has both '%s' and '%s': data_oneof takes one of them",
               kind_name(out->kind), kind_name(kind));
  out->kind = kind;
  switch (id) {
  case F_BIN:
    return BAD(d, "'bin_data' cannot be sent in JSON: send the bytes themselves as the request "
                  "body with Content-Type: application/octet-stream");
  case F_STR:
    if (v->type != ISV__JSON_STRING)
      return BAD(d, "str_data must be a string, got %s", kind_of(v));
    out->data = v->ptr;
    out->data_len = v->len;
    return 0;
  case F_GTENSORS: return read_gtensors(d, v, out);
  case F_NDARRAY: return read_ndarray(d, v, out);
  default: return read_gmap(d, v, out);
  }
}

static int read_message(dec *d, isv__grps_msg *out) {
  isv__json_token t;
  isv__json_type ty = isv__json_next(&d->rd, &t);
  if (ty == ISV__JSON_ERROR) return json_bad(d, &d->rd, "GrpsMessage");
  if (ty != ISV__JSON_OBJECT_BEGIN)
    return BAD(d, "a GrpsMessage must be a JSON object, got %s", kind_of(&t));
  obj o = {msg_fields, sizeof msg_fields / sizeof *msg_fields, "GrpsMessage", "", 0};
  for (;;) {
    isv__json_token v;
    int id, rc = next_member(d, &o, &id, &v);
    if (rc > 0) break;
    if (rc) return rc;
    if (v.type == ISV__JSON_NULL) continue; /* proto3 JSON: null is the field's absence */
    if (id == F_STATUS) {
      rc = read_status(d, &v, out);
    } else if (id == F_MODEL) {
      if (v.type != ISV__JSON_STRING) return BAD(d, "model must be a string, got %s", kind_of(&v));
      out->model = v.ptr;
      out->model_len = v.len;
    } else {
      rc = data_member(d, id, &v, out);
    }
    if (rc) return rc;
  }
  return isv__json_next(&d->rd, &t) == ISV__JSON_EOF ? 0 : json_bad(d, &d->rd, "GrpsMessage");
}

int isv__grps_json_decode(char *body, size_t len, const isv__grps_limits *lim, isv__arena *a,
                          isv__grps_msg *out, char *err, size_t errcap) {
  dec d;
  memset(&d, 0, sizeof d);
  memset(out, 0, sizeof *out);
  d.body = body;
  d.len = len;
  d.lim = lim;
  d.a = a;
  d.err = err;
  d.errcap = errcap;
  if (errcap) err[0] = '\0';
  size_t i = 0;
  while (i < len && (body[i] == ' ' || body[i] == '\t' || body[i] == '\n' || body[i] == '\r')) i++;
  if (i == len) return BAD(&d, "empty body: expected a GrpsMessage JSON object");
  isv__json_reader_init(&d.rd, body, len, lim->max_depth);
  int rc = read_message(&d, out);
  if (rc) memset(out, 0, sizeof *out); /* no half message */
  return rc;
}

/* ---- encoding -------------------------------------------------------------------------------- */

static int einval(char *err, size_t cap, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

static int einval(char *err, size_t cap, const char *fmt, ...) {
  if (cap) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, cap, fmt, ap);
    va_end(ap);
  }
  return ISV_EINVAL;
}

static int utf8_ok(const char *s, size_t n) { return n == 0 || isv__utf8_valid(s, n); }

static const char *tname(const isv_tensor *t) { return t->name ? t->name : ""; }

/* What the encoder refuses in a tensor: a type grps has no name for, a shape grps's uint32 dims
 * cannot carry or that does not hold count elements, a BYTES element a proto string cannot
 * carry. */
static int check_tensor(const isv_tensor *t, char *err, size_t cap) {
  if (isv__dt_grps_number(t->dt) == 0) {
    const char *n = isv_datatype_name(t->dt);
    return einval(err, cap, "tensor '%s': grps has no DataType for %s", tname(t), n ? n : "it");
  }
  if (t->ndim > ISV__MAX_NDIM)
    return einval(err, cap, "tensor '%s' has more than %d dimensions", tname(t), ISV__MAX_NDIM);
  for (size_t i = 0; i < t->ndim; i++)
    if (t->shape[i] < 0 || t->shape[i] > (int64_t)UINT32_MAX)
      return einval(err, cap, "tensor '%s': dimension %zu (%lld) does not fit grps's uint32",
                    tname(t), i, (long long)t->shape[i]);
  if (shape_count(t->shape, t->ndim) != t->count || (t->count && t->data == NULL))
    return einval(err, cap, "tensor '%s': its shape does not hold its %zu elements", tname(t),
                  t->count);
  if (t->dt != ISV_BYTES) return 0;
  const isv_bytes *e = t->data;
  for (size_t i = 0; i < t->count; i++)
    if (!utf8_ok(e[i].ptr, e[i].len))
      return einval(err, cap, "tensor '%s': BYTES element %zu is not valid UTF-8, which a grps "
                    "flat_string cannot carry in JSON", tname(t), i);
  return 0;
}

static int check_entries(const isv__grps_msg *m, char *err, size_t cap) {
  for (size_t i = 0; i < m->n_entries; i++) {
    const isv__grps_entry *e = &m->entries[i];
    if ((unsigned)e->map < ISV__GRPS_S_S || (unsigned)e->map > ISV__GRPS_S_T)
      return einval(err, cap, "gmap entry %zu belongs to no map", i);
    if (!utf8_ok(e->key, e->key_len))
      return einval(err, cap, "gmap.%s: key %zu is not valid UTF-8", map_names[e->map], i);
    if (e->map == ISV__GRPS_S_S && !utf8_ok(e->v.s.p, e->v.s.n))
      return einval(err, cap, "gmap.s_s['%s']: the value is not valid UTF-8", e->key);
    if (e->map == ISV__GRPS_S_T) {
      int rc = check_tensor(&e->t, err, cap);
      if (rc) return rc;
    }
  }
  return 0;
}

/* Everything the encoder would refuse, before it writes anything. */
static int check_msg(const isv__grps_msg *m, char *err, size_t cap) {
  switch (m->kind) {
  case ISV__GRPS_NONE:
  case ISV__GRPS_BIN_DATA: return 0;
  case ISV__GRPS_STR_DATA:
    return utf8_ok(m->data, m->data_len) ? 0 : einval(err, cap, "str_data is not valid UTF-8");
  case ISV__GRPS_GTENSORS:
    for (size_t i = 0; i < m->n_tensors; i++) {
      int rc = check_tensor(&m->tensors[i], err, cap);
      if (rc) return rc;
    }
    return 0;
  case ISV__GRPS_NDARRAY:
    if (m->n_tensors == 0) return 0;
    if (m->tensors[0].dt == ISV_BYTES)
      return einval(err, cap, "tensor '%s': an ndarray holds numbers, not BYTES",
                    tname(&m->tensors[0]));
    return check_tensor(&m->tensors[0], err, cap);
  case ISV__GRPS_GMAP: return check_entries(m, err, cap);
  default: return einval(err, cap, "unknown GrpsMessage data kind %d", (int)m->kind);
  }
}

/* The longest valid UTF-8 character at s (n > 0 bytes), or 0 when s[0] starts none. */
static size_t utf8_char(const char *s, size_t n) {
  if ((unsigned char)s[0] < 0x80) return 1;
  for (size_t l = 2; l <= 4 && l <= n; l++)
    if (isv__utf8_valid(s, l)) return l;
  return 0;
}

/* Text that should be UTF-8 but may come from anywhere (a status message, a model or tensor
 * name): each invalid byte is written as U+FFFD, so the answer stays JSON and says what it can. */
static void write_text(isv__buf *b, const char *s, size_t n) {
  if (utf8_ok(s, n)) {
    isv__json_write_string(b, n ? s : "", n);
    return;
  }
  char *q = n <= SIZE_MAX / 3 ? isv__malloc(b->mem, 3 * n) : NULL;
  if (q == NULL) {
    b->failed = 1; /* the buffer's own sticky out-of-memory mark */
    return;
  }
  size_t w = 0;
  for (size_t i = 0; i < n;) {
    size_t l = utf8_char(s + i, n - i);
    memcpy(q + w, l ? s + i : "\xEF\xBF\xBD", l ? l : 3);
    w += l ? l : 3;
    i += l ? l : 1;
  }
  isv__json_write_string(b, q, w);
  isv__free(q);
}

static void write_key(isv__buf *b, const char *k) {
  isv__json_write_string(b, k, strlen(k));
  isv__buf_putc(b, ':');
}

static void write_quoted_i64(isv__buf *b, int64_t v) {
  isv__buf_putc(b, '"');
  isv__json_write_i64(b, v);
  isv__buf_putc(b, '"');
}

/* A tensor's elements as its flat_* field's array: int64 quoted (proto3 JSON), BYTES as
 * strings (checked UTF-8), the rest as the writer's numbers. */
static void write_flat(isv__buf *b, const isv_tensor *t) {
  if (t->count == 0) {
    isv__buf_puts(b, "[]");
  } else if (t->dt == ISV_INT64 || t->dt == ISV_BYTES) {
    isv__buf_putc(b, '[');
    for (size_t i = 0; i < t->count; i++) {
      if (i) isv__buf_putc(b, ',');
      if (t->dt == ISV_INT64) {
        write_quoted_i64(b, ((const int64_t *)t->data)[i]);
      } else {
        const isv_bytes *e = (const isv_bytes *)t->data + i;
        isv__json_write_string(b, e->len ? e->ptr : "", e->len);
      }
    }
    isv__buf_putc(b, ']');
  } else {
    isv__json_write_tensor(b, t->dt, t->data, t->count);
  }
}

static void write_tensor(isv__buf *b, const isv_tensor *t) {
  isv__buf_puts(b, "{\"name\":");
  write_text(b, tname(t), strlen(tname(t)));
  isv__buf_puts(b, ",\"dtype\":");
  const char *dn = isv__dt_name(t->dt, ISV__DTN_GRPS);
  isv__json_write_string(b, dn, strlen(dn));
  isv__buf_puts(b, ",\"shape\":[");
  for (size_t i = 0; i < t->ndim; i++) {
    if (i) isv__buf_putc(b, ',');
    isv__json_write_i64(b, t->shape[i]);
  }
  isv__buf_puts(b, "],");
  write_key(b, flat_name(t->dt));
  write_flat(b, t);
  isv__buf_putc(b, '}');
}

/* NDARRAY: tensors[0] as nested lists of numbers ([v] for a scalar, [] when empty). */
static void write_ndarray(isv__buf *b, const isv__grps_msg *m) {
  const isv_tensor *t = m->n_tensors ? &m->tensors[0] : NULL;
  if (t == NULL || t->count == 0) {
    isv__buf_puts(b, "[]");
  } else if (t->ndim == 0) {
    isv__buf_putc(b, '[');
    isv__json_write_tensor_nested(b, t->dt, t->data, NULL, 0);
    isv__buf_putc(b, ']');
  } else {
    isv__json_write_tensor_nested(b, t->dt, t->data, t->shape, t->ndim);
  }
}

static void write_entry_value(isv__buf *b, const isv__grps_entry *e) {
  switch (e->map) {
  case ISV__GRPS_S_S: isv__json_write_string(b, e->v.s.n ? e->v.s.p : "", e->v.s.n); break;
  case ISV__GRPS_S_B:
    isv__buf_putc(b, '"');
    isv__base64_encode(b, e->v.s.n ? e->v.s.p : "", e->v.s.n);
    isv__buf_putc(b, '"');
    break;
  case ISV__GRPS_S_I32: isv__json_write_i64(b, e->v.i); break;
  case ISV__GRPS_S_I64: write_quoted_i64(b, e->v.i); break;
  case ISV__GRPS_S_F: isv__json_write_f32(b, e->v.f); break;
  case ISV__GRPS_S_D: isv__json_write_f64(b, e->v.d); break;
  default: write_tensor(b, &e->t); break;
  }
}

/* GMAP: each map that has entries, its entries in the message's order. */
static void write_gmap(isv__buf *b, const isv__grps_msg *m) {
  int any = 0;
  isv__buf_putc(b, '{');
  for (int map = ISV__GRPS_S_S; map <= ISV__GRPS_S_T; map++) {
    int first = 1;
    for (size_t i = 0; i < m->n_entries; i++) {
      const isv__grps_entry *e = &m->entries[i];
      if ((int)e->map != map) continue;
      if (first) {
        if (any) isv__buf_putc(b, ',');
        write_key(b, map_names[map]);
        isv__buf_putc(b, '{');
      } else {
        isv__buf_putc(b, ',');
      }
      first = 0;
      any = 1;
      isv__json_write_string(b, e->key_len ? e->key : "", e->key_len);
      isv__buf_putc(b, ':');
      write_entry_value(b, e);
    }
    if (!first) isv__buf_putc(b, '}');
  }
  isv__buf_putc(b, '}');
}

static void write_status(isv__buf *b, const isv__grps_msg *m) {
  static const char *const flags[] = {"UNKNOWN", "SUCCESS", "FAILURE"};
  isv__buf_puts(b, "\"status\":{\"code\":");
  isv__json_write_i64(b, m->code);
  isv__buf_puts(b, ",\"msg\":");
  write_text(b, m->msg, m->msg_len);
  isv__buf_puts(b, ",\"status\":\"");
  isv__buf_puts(b, (unsigned)m->flag <= ISV__GRPS_FAILURE ? flags[m->flag] : "UNKNOWN");
  isv__buf_puts(b, "\"}");
}

static void write_data(isv__buf *b, const isv__grps_msg *m) {
  write_key(b, kind_name(m->kind));
  switch (m->kind) {
  case ISV__GRPS_BIN_DATA:
    isv__buf_putc(b, '"');
    isv__base64_encode(b, m->data_len ? m->data : "", m->data_len);
    isv__buf_putc(b, '"');
    break;
  case ISV__GRPS_STR_DATA:
    isv__json_write_string(b, m->data_len ? m->data : "", m->data_len);
    break;
  case ISV__GRPS_GTENSORS:
    isv__buf_puts(b, "{\"tensors\":[");
    for (size_t i = 0; i < m->n_tensors; i++) {
      if (i) isv__buf_putc(b, ',');
      write_tensor(b, &m->tensors[i]);
    }
    isv__buf_puts(b, "]}");
    break;
  case ISV__GRPS_NDARRAY: write_ndarray(b, m); break;
  default: write_gmap(b, m); break;
  }
}

int isv__grps_json_encode(const isv__grps_msg *m, isv__buf *out, char *err, size_t errcap) {
  if (errcap) err[0] = '\0';
  int rc = check_msg(m, err, errcap);
  if (rc) return rc;
  int sep = 0;
  isv__buf_putc(out, '{');
  if (m->has_status) {
    write_status(out, m);
    sep = 1;
  }
  if (m->model_len) {
    if (sep) isv__buf_putc(out, ',');
    write_key(out, "model");
    write_text(out, m->model, m->model_len);
    sep = 1;
  }
  if (m->kind != ISV__GRPS_NONE) {
    if (sep) isv__buf_putc(out, ',');
    write_data(out, m);
  }
  isv__buf_putc(out, '}');
  if (out->failed) {
    if (errcap) snprintf(err, errcap, "out of memory encoding a grps JSON message");
    return ISV_ENOMEM;
  }
  return 0;
}
