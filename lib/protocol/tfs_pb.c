/* TF Serving's gRPC messages by hand (tfs_pb.h has the rules). */
#include "protocol/tfs_pb.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/datatype.h"
#include "codec/half.h"
#include "core/core.h"
#include "core/queries.h"
#include "core/resolve.h"
#include "core/scheduler.h"

/* An empty span's pointer: never NULL (a reader over NULL + 0 is undefined behaviour). */
static const uint8_t empty_bytes[1];
#define EMPTY empty_bytes

/* ---- ModelSpec ------------------------------------------------------------------------------ */

static int parse_spec(isv__pb_span s, isv__tfs_spec *spec) {
  isv__pb_reader rd = isv__pb_reader_of(s);
  isv__pb_field f;
  int rc;
  while ((rc = isv__pb_read_field(&rd, &f)) > 0) {
    if (f.num == 1 || f.num == 3 || f.num == 4 || f.num == 2) {
      if (f.wt != ISV__PB_LEN) return -1;
    } else {
      continue;
    }
    if (f.num == 1) spec->name = f.s;
    else if (f.num == 3) spec->signature = f.s;
    else if (f.num == 4) { /* oneof version_choice: the last one set wins */
      spec->label = f.s;
      spec->has_label = 1;
      spec->has_version = 0;
    } else { /* google.protobuf.Int64Value {int64 value = 1} */
      isv__pb_reader v = isv__pb_reader_of(f.s);
      isv__pb_field g;
      int vr;
      spec->version = 0;
      while ((vr = isv__pb_read_field(&v, &g)) > 0)
        if (g.num == 1) {
          if (g.wt != ISV__PB_VARINT) return -1;
          spec->version = (int64_t)g.v;
        }
      if (vr < 0) return -1;
      spec->has_version = 1;
      spec->has_label = 0;
    }
  }
  return rc < 0 ? -1 : 0;
}

int isv__tfs_pb_spec(const uint8_t *msg, size_t len, uint32_t num, isv__tfs_spec *spec) {
  memset(spec, 0, sizeof *spec);
  isv__pb_reader rd = isv__pb_reader_of((isv__pb_span){msg, len});
  isv__pb_field f;
  int rc, found = 0;
  while ((rc = isv__pb_read_field(&rd, &f)) > 0) {
    if (f.num != num) continue;
    if (f.wt != ISV__PB_LEN || parse_spec(f.s, spec) != 0) return -1;
    found = 1; /* a repeated message field is merged: its later fields win */
  }
  return rc < 0 ? -1 : found;
}

isv__model_spec isv__tfs_model_spec(const isv__tfs_spec *s, char *buf, size_t cap) {
  isv__model_spec spec = {(const char *)s->name.p, s->name.n, NULL, 0, NULL, 0};
  if (s->has_version) {
    snprintf(buf, cap, "%" PRId64, s->version);
    spec.version = buf;
    spec.version_len = strlen(buf);
  } else if (s->has_label) {
    spec.label = (const char *)s->label.p;
    spec.label_len = s->label.n;
  }
  return spec;
}

static const char *span_dup(isv_request *r, isv__pb_span s) {
  return isv__arena_strndup(&r->arena, (const char *)s.p, s.n);
}

static int oom(isv_request *r) { return isv__request_fail(r, ISV_ENOMEM, "out of memory"); }

int isv__tfs_pb_bind(isv_request *r, const uint8_t *msg, size_t len, int kind) {
  if (r->status) return r->status;
  isv__tfs_spec s;
  int rc = isv__tfs_pb_spec(msg, len, 1, &s);
  if (rc < 0) return isv__request_fail(r, ISV_EBADREQ, "malformed request message");
  if (rc == 0) return isv__request_fail(r, ISV_EBADREQ, "Missing ModelSpec");
  char version[24];
  isv__model_spec spec = isv__tfs_model_spec(&s, version, sizeof version);
  isv_model *m;
  isv__why why = isv__core_resolve(r->core, &spec, &m);
  if (why != ISV__FOUND) { /* r names no model: the core keeps this answer (isv__request_bind) */
    char msg_[512];
    int code = isv__why_say(why, ISV__WORDS_TFS, &spec, msg_, sizeof msg_);
    return isv__request_fail(r, code, "%s", msg_);
  }
  r->model_name = span_dup(r, s.name);
  if (r->model_name == NULL) return oom(r);
  if (spec.version && (r->version = isv__arena_strndup(&r->arena, version, strlen(version))) == NULL)
    return oom(r);
  if (spec.label && (r->label = span_dup(r, s.label)) == NULL) return oom(r);
  if (isv__request_bind(r) != 0) return r->status;
  isv__tfs_call *c = isv__arena_calloc(&r->arena, 1, sizeof *c);
  if (c == NULL) return oom(r);
  c->kind = kind;
  const isv_model_config *cfg = r->model->cfg;
  const char *want = s.signature.n ? (const char *)s.signature.p : NULL;
  if (!isv__tfs_signature(cfg, want, s.signature.n, &c->sig))
    return isv__request_fail(r, ISV_ESTATE, "Serving signature key \"%.*s\" not found.",
                             (int)(s.signature.n > 128 ? 128 : s.signature.n), want);
  c->sig_name = want ? span_dup(r, s.signature) : ISV__TFS_DEFAULT_SIGNATURE;
  if (c->sig_name == NULL) return oom(r);
  r->fe_data = c;
  return 0;
}

/* ---- TensorProto ---------------------------------------------------------------------------- */

/* How a typed field's values sit on the wire. */
enum { K_VARINT, K_I32, K_I64, K_LEN };

typedef struct typed {
  uint32_t num;
  const char *name;
  int kind;
} typed;

static const typed typed_fields[] = {
    {5, "float_val", K_I32},      {6, "double_val", K_I64},  {7, "int_val", K_VARINT},
    {8, "string_val", K_LEN},     {9, "scomplex_val", K_I32}, {10, "int64_val", K_VARINT},
    {11, "bool_val", K_VARINT},   {12, "dcomplex_val", K_I64}, {13, "half_val", K_VARINT},
    {14, "resource_handle_val", K_LEN}, {15, "variant_val", K_LEN}, {16, "uint32_val", K_VARINT},
    {17, "uint64_val", K_VARINT},
};

static const typed *typed_of(uint32_t num) {
  for (size_t i = 0; i < sizeof typed_fields / sizeof *typed_fields; i++)
    if (typed_fields[i].num == num) return &typed_fields[i];
  return NULL;
}

/* The typed field a dtype's values go in. */
static uint32_t field_of(isv_datatype dt) {
  switch (dt) {
  case ISV_FP32: return 5;
  case ISV_FP64: return 6;
  case ISV_INT8:
  case ISV_INT16:
  case ISV_INT32:
  case ISV_UINT8:
  case ISV_UINT16: return 7;
  case ISV_BYTES: return 8;
  case ISV_INT64: return 10;
  case ISV_BOOL: return 11;
  case ISV_FP16:
  case ISV_BF16: return 13;
  case ISV_UINT32: return 16;
  case ISV_UINT64: return 17;
  default: return 0;
  }
}

/* TF's names for the dtypes refused here (the served ones are in codec/datatype.h's table). */
static const char *tf_dtype_name(uint64_t n) {
  static const char *const names[] = {
      "DT_INVALID", "DT_FLOAT",  "DT_DOUBLE",    "DT_INT32",   "DT_UINT8",   "DT_INT16",
      "DT_INT8",    "DT_STRING", "DT_COMPLEX64", "DT_INT64",   "DT_BOOL",    "DT_QINT8",
      "DT_QUINT8",  "DT_QINT32", "DT_BFLOAT16",  "DT_QINT16",  "DT_QUINT16", "DT_UINT16",
      "DT_COMPLEX128", "DT_HALF", "DT_RESOURCE", "DT_VARIANT", "DT_UINT32",  "DT_UINT64"};
  return n < sizeof names / sizeof *names ? names[n] : NULL;
}

/* Element count of one occurrence of a typed field: -1 when malformed for its kind. */
static long long occurrence_count(const typed *ty, const isv__pb_field *f) {
  switch (ty->kind) {
  case K_LEN: return f->wt == ISV__PB_LEN ? 1 : -1;
  case K_I32:
    if (f->wt == ISV__PB_I32) return 1;
    return f->wt == ISV__PB_LEN && f->s.n % 4 == 0 ? (long long)(f->s.n / 4) : -1;
  case K_I64:
    if (f->wt == ISV__PB_I64) return 1;
    return f->wt == ISV__PB_LEN && f->s.n % 8 == 0 ? (long long)(f->s.n / 8) : -1;
  default: {
    if (f->wt == ISV__PB_VARINT) return 1;
    if (f->wt != ISV__PB_LEN) return -1;
    long long n = 0; /* a packed run: the bytes that end a varint */
    for (size_t i = 0; i < f->s.n; i++) n += !(f->s.p[i] & 0x80);
    if (f->s.n && (f->s.p[f->s.n - 1] & 0x80)) return -1;
    return n;
  }
  }
}

typedef struct fill {
  isv_request *r;
  const char *alias;
  isv_datatype dt;
  uint8_t *out; /* count elements of dt */
  size_t count, at;
} fill;

static int out_of_range(fill *c, long long v) {
  return isv__request_fail(c->r, ISV_EBADREQ, "input '%s': value %lld is out of range for %s",
                           c->alias, v, isv__dt_name(c->dt, ISV__DTN_TF));
}

/* Store one value (the raw varint / I32 / I64 bits, or a string span) as element c->at. */
static int store(fill *c, uint64_t v, isv__pb_span s) {
  size_t i = c->at++;
  int64_t sv = (int64_t)v;
  switch (c->dt) {
  case ISV_FP32: {
    uint32_t b = (uint32_t)v;
    memcpy(c->out + 4 * i, &b, 4);
    return 0;
  }
  case ISV_FP64: memcpy(c->out + 8 * i, &v, 8); return 0;
  case ISV_INT64:
  case ISV_UINT64: memcpy(c->out + 8 * i, &v, 8); return 0;
  case ISV_INT32: {
    if (sv < INT32_MIN || sv > INT32_MAX) return out_of_range(c, sv);
    int32_t x = (int32_t)sv;
    memcpy(c->out + 4 * i, &x, 4);
    return 0;
  }
  case ISV_UINT32: {
    if (v > UINT32_MAX) return out_of_range(c, sv);
    uint32_t x = (uint32_t)v;
    memcpy(c->out + 4 * i, &x, 4);
    return 0;
  }
  case ISV_INT16: {
    if (sv < INT16_MIN || sv > INT16_MAX) return out_of_range(c, sv);
    int16_t x = (int16_t)sv;
    memcpy(c->out + 2 * i, &x, 2);
    return 0;
  }
  case ISV_UINT16:
  case ISV_FP16:
  case ISV_BF16: { /* half_val: the 16 bits, as an unsigned or a sign-extended value */
    int lo = c->dt == ISV_UINT16 ? 0 : INT16_MIN;
    if (sv < lo || sv > UINT16_MAX) return out_of_range(c, sv);
    uint16_t x = (uint16_t)(sv & 0xffff);
    memcpy(c->out + 2 * i, &x, 2);
    return 0;
  }
  case ISV_INT8:
    if (sv < INT8_MIN || sv > INT8_MAX) return out_of_range(c, sv);
    c->out[i] = (uint8_t)(int8_t)sv;
    return 0;
  case ISV_UINT8:
    if (sv < 0 || sv > UINT8_MAX) return out_of_range(c, sv);
    c->out[i] = (uint8_t)sv;
    return 0;
  case ISV_BOOL: c->out[i] = v != 0; return 0;
  case ISV_BYTES: {
    isv_bytes b = {(const char *)s.p, s.n};
    memcpy(c->out + sizeof(isv_bytes) * i, &b, sizeof b);
    return 0;
  }
  default: return isv__request_fail(c->r, ISV_EINTERNAL, "unexpected datatype");
  }
}

/* Every value of one occurrence of the dtype's field, in order. */
static int fill_occurrence(fill *c, const typed *ty, const isv__pb_field *f) {
  isv__pb_span none = {EMPTY, 0};
  if (f->wt != ISV__PB_LEN || ty->kind == K_LEN) return store(c, f->v, f->wt == ISV__PB_LEN ? f->s : none);
  if (ty->kind == K_I32 || ty->kind == K_I64) {
    unsigned w = ty->kind == K_I32 ? 4 : 8;
    for (size_t off = 0; off < f->s.n; off += w)
      if (store(c, isv__pb_le_load(f->s.p + off, w), none)) return c->r->status;
    return 0;
  }
  isv__pb_reader rd = isv__pb_reader_of(f->s);
  uint64_t v;
  while (rd.p < rd.end) {
    if (isv__pb_read_varint(&rd, &v) != 0)
      return isv__request_fail(c->r, ISV_EBADREQ, "input '%s': malformed %s", c->alias, ty->name);
    if (store(c, v, none)) return c->r->status;
  }
  return 0;
}

static int bad_tensor(isv_request *r, const char *alias, const char *why) {
  return isv__request_fail(r, ISV_EBADREQ, "input '%s': %s", alias, why);
}

int isv__tfs_pb_decode_tensor(isv_request *r, isv__pb_span tp, const char *alias, isv_tensor *t) {
  uint64_t dtype = 0;
  isv__pb_span shape = {EMPTY, 0}, content = {EMPTY, 0};
  int has_shape = 0, has_content = 0;
  long long n_vals[18] = {0};
  isv__pb_reader rd = isv__pb_reader_of(tp);
  isv__pb_field f;
  int rc;
  char why[160];
  while ((rc = isv__pb_read_field(&rd, &f)) > 0) {
    if (f.num == 1) {
      if (f.wt != ISV__PB_VARINT) return bad_tensor(r, alias, "malformed dtype");
      dtype = f.v;
    } else if (f.num == 2) {
      if (f.wt != ISV__PB_LEN) return bad_tensor(r, alias, "malformed tensor_shape");
      shape = f.s; /* a message given twice would merge; TF's clients send one */
      has_shape = 1;
    } else if (f.num == 4) {
      if (f.wt != ISV__PB_LEN) return bad_tensor(r, alias, "malformed tensor_content");
      content = f.s;
      has_content = 1;
    } else if (f.num < 18 && typed_of(f.num)) {
      const typed *ty = typed_of(f.num);
      long long k = occurrence_count(ty, &f);
      if (k < 0) {
        snprintf(why, sizeof why, "malformed %s", ty->name);
        return bad_tensor(r, alias, why);
      }
      n_vals[f.num] += k;
    }
  }
  if (rc < 0) return bad_tensor(r, alias, "malformed TensorProto");
  isv_datatype dt = isv__dt_from_tf_number(dtype > 1000 ? 0 : (int)dtype);
  if (dt == ISV_TYPE_INVALID) {
    const char *dn = tf_dtype_name(dtype);
    if (dn) snprintf(why, sizeof why, "dtype %s is not supported", dn);
    else snprintf(why, sizeof why, "dtype %llu is not a TensorFlow DataType",
                  (unsigned long long)dtype);
    return isv__request_fail(r, ISV_EBADREQ, "input '%s': %s", alias, why);
  }
  uint32_t want = field_of(dt);
  for (uint32_t num = 5; num < 18; num++)
    if (num != want && n_vals[num] > 0) {
      snprintf(why, sizeof why, "%s given for dtype %s (its values go in %s)",
               typed_of(num)->name, isv__dt_name(dt, ISV__DTN_TF), typed_of(want)->name);
      return bad_tensor(r, alias, why);
    }
  /* the shape */
  size_t ndim = 0;
  int64_t dims[ISV__MAX_NDIM];
  if (has_shape) {
    isv__pb_reader sr = isv__pb_reader_of(shape);
    while ((rc = isv__pb_read_field(&sr, &f)) > 0) {
      if (f.num == 3 && f.wt == ISV__PB_VARINT && f.v)
        return bad_tensor(r, alias, "tensor_shape has unknown_rank: a request's shape must be known");
      if (f.num != 2) continue;
      if (f.wt != ISV__PB_LEN) return bad_tensor(r, alias, "malformed tensor_shape");
      if (ndim == ISV__MAX_NDIM) {
        snprintf(why, sizeof why, "tensor_shape has more than %d dimensions", ISV__MAX_NDIM);
        return bad_tensor(r, alias, why);
      }
      int64_t size = 0;
      isv__pb_reader dr = isv__pb_reader_of(f.s);
      isv__pb_field g;
      while ((rc = isv__pb_read_field(&dr, &g)) > 0)
        if (g.num == 1) {
          if (g.wt != ISV__PB_VARINT) return bad_tensor(r, alias, "malformed tensor_shape");
          size = (int64_t)g.v;
        }
      if (rc < 0) return bad_tensor(r, alias, "malformed tensor_shape");
      if (size < 0) {
        snprintf(why, sizeof why, "tensor_shape has dimension %zu of size %lld: a request's "
                 "shape must be known", ndim, (long long)size);
        return bad_tensor(r, alias, why);
      }
      dims[ndim++] = size;
    }
    if (rc < 0) return bad_tensor(r, alias, "malformed tensor_shape");
  }
  size_t elsize = isv__dt_size(dt), count, bytes;
  if (isv__shape_count(dims, ndim, elsize, &count, &bytes) != 0)
    return bad_tensor(r, alias, "tensor_shape's size overflows");
  int64_t *sh = isv__arena_alloc(&r->arena, (ndim ? ndim : 1) * sizeof *sh);
  if (sh == NULL) return oom(r);
  if (ndim) memcpy(sh, dims, ndim * sizeof *sh);
  memset(t, 0, sizeof *t);
  t->dt = dt;
  t->shape = sh;
  t->ndim = ndim;
  t->count = count;
  long long nv = n_vals[want];
  if (has_content && nv > 0)
    return bad_tensor(r, alias, "both tensor_content and typed values are set: send one");
  if (has_content) {
    if (dt == ISV_BYTES)
      return bad_tensor(r, alias, "DT_STRING values go in string_val, not tensor_content");
    if (content.n != bytes) {
      snprintf(why, sizeof why, "tensor_content has %zu bytes, the shape holds %zu of %zu "
               "bytes each", content.n, count, elsize);
      return bad_tensor(r, alias, why);
    }
    if ((uintptr_t)content.p % elsize == 0) {
      t->data = (void *)(uintptr_t)content.p; /* in place: the message outlives the request */
    } else { /* misaligned for typed access: copied once */
      t->data = isv__arena_alloc(&r->arena, bytes ? bytes : 1);
      if (t->data == NULL) return oom(r);
      if (bytes) memcpy(t->data, content.p, bytes);
    }
    t->byte_size = bytes;
    return 0;
  }
  if ((size_t)nv > count) {
    snprintf(why, sizeof why, "%s has %lld values, the shape holds %zu", typed_of(want)->name, nv,
             count);
    return bad_tensor(r, alias, why);
  }
  if (nv == 0 && count > 0) {
    snprintf(why, sizeof why, "no values: the shape holds %zu (set tensor_content or %s)", count,
             typed_of(want)->name);
    return bad_tensor(r, alias, why);
  }
  size_t limit = r->core ? r->core->opts.max_body_bytes : 0;
  if ((size_t)nv < count && limit && bytes > limit)
    return isv__request_fail(r, ISV_ETOOBIG, "input '%s': its %lld values filled out to the "
                             "shape's %zu elements exceed the server's limit of %zu bytes",
                             alias, nv, count, limit);
  fill c = {r, alias, dt, isv__arena_alloc(&r->arena, bytes ? bytes : 1), count, 0};
  if (c.out == NULL) return oom(r);
  rd = isv__pb_reader_of(tp);
  const typed *ty = typed_of(want);
  while (isv__pb_read_field(&rd, &f) > 0)
    if (f.num == want && fill_occurrence(&c, ty, &f)) return r->status;
  for (size_t i = c.at; i < count; i++) /* TF's rule: the last value repeated */
    memcpy(c.out + i * elsize, c.out + (c.at - 1) * elsize, elsize);
  t->data = c.out;
  t->byte_size = dt == ISV_BYTES ? isv__bytes_total(t->data, count) : bytes;
  return 0;
}

/* ---- PredictRequest ------------------------------------------------------------------------- */

typedef struct alias_list {
  const char *v[64];
  size_t n;
  int more;
} alias_list;

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* "{a,b,c}" of the sorted list (TF Serving's std::set order) into buf. */
static void put_set(char *buf, size_t cap, alias_list *l) {
  qsort(l->v, l->n, sizeof *l->v, cmp_str);
  size_t len = strlen(buf);
  snprintf(buf + len, cap - len, "{");
  for (size_t i = 0; i < l->n; i++) {
    len = strlen(buf);
    snprintf(buf + len, cap - len, "%s%.64s", i ? "," : "", l->v[i]);
  }
  len = strlen(buf);
  snprintf(buf + len, cap - len, "%s}", l->more ? ",..." : "");
}

static void list_add(alias_list *l, const char *s) {
  if (l->n < sizeof l->v / sizeof *l->v) l->v[l->n++] = s;
  else l->more = 1;
}

int isv__tfs_pb_decode_predict(isv_request *r, const uint8_t *msg, size_t len) {
  if (r->status) return r->status;
  isv__tfs_call *call = r->fe_data;
  if (r->model == NULL || call == NULL) return isv__request_fail(r, ISV_EINTERNAL, "not bound");
  const isv_model_config *cfg = r->model->cfg;
  const isv__signature *sig = call->sig;
  size_t n_in = isv__tfs_sig_n_in(cfg, sig), n_out = isv__tfs_sig_n_out(cfg, sig);
  isv__pb_span *value = isv__arena_calloc(&r->arena, n_in + 1, sizeof *value);
  char *given = isv__arena_calloc(&r->arena, n_in + 1, 1);
  char *wanted = isv__arena_calloc(&r->arena, n_out + 1, 1);
  if (value == NULL || given == NULL || wanted == NULL) return oom(r);
  alias_list extra = {.n = 0};
  size_t n_given = 0, n_extra = 0, n_filter = 0;
  isv__pb_reader rd = isv__pb_reader_of((isv__pb_span){msg, len});
  isv__pb_field f;
  int rc;
  const char *alias;
  while ((rc = isv__pb_read_field(&rd, &f)) > 0) {
    if (f.num == 2) { /* map<string, TensorProto> inputs: the last entry of a key wins */
      if (f.wt != ISV__PB_LEN) return isv__request_fail(r, ISV_EBADREQ, "malformed inputs");
      isv__pb_span key = {(const uint8_t *)"", 0}, val = {EMPTY, 0};
      isv__pb_reader er = isv__pb_reader_of(f.s);
      isv__pb_field g;
      int er_rc;
      while ((er_rc = isv__pb_read_field(&er, &g)) > 0) {
        if ((g.num == 1 || g.num == 2) && g.wt != ISV__PB_LEN)
          return isv__request_fail(r, ISV_EBADREQ, "malformed inputs entry");
        if (g.num == 1) key = g.s;
        else if (g.num == 2) val = g.s;
      }
      if (er_rc < 0) return isv__request_fail(r, ISV_EBADREQ, "malformed inputs entry");
      size_t k = 0;
      for (; k < n_in; k++) {
        isv__tfs_sig_in(cfg, sig, k, &alias);
        if (strlen(alias) == key.n && memcmp(alias, key.p, key.n) == 0) break;
      }
      if (k == n_in) {
        const char *name = span_dup(r, key);
        if (name == NULL) return oom(r);
        int seen = 0;
        for (size_t i = 0; i < extra.n; i++) seen |= strcmp(extra.v[i], name) == 0;
        if (!seen) {
          list_add(&extra, name);
          n_extra++;
        }
        continue;
      }
      if (!given[k]) n_given++;
      given[k] = 1;
      value[k] = val;
    } else if (f.num == 3) { /* output_filter */
      if (f.wt != ISV__PB_LEN) return isv__request_fail(r, ISV_EBADREQ, "malformed output_filter");
      size_t k = 0;
      for (; k < n_out; k++) {
        isv__tfs_sig_out(cfg, sig, k, &alias);
        if (strlen(alias) == f.s.n && memcmp(alias, f.s.p, f.s.n) == 0) break;
      }
      if (k == n_out) {
        alias_list outs = {.n = 0};
        char set[600] = "";
        for (size_t i = 0; i < n_out; i++) {
          isv__tfs_sig_out(cfg, sig, i, &alias);
          list_add(&outs, alias);
        }
        put_set(set, sizeof set, &outs);
        return isv__request_fail(r, ISV_EBADREQ, "output tensor alias not found in signature: "
                                 "%.*s Outputs expected to be in the set %s.",
                                 (int)(f.s.n > 128 ? 128 : f.s.n), f.s.p, set);
      }
      if (wanted[k])
        return isv__request_fail(r, ISV_EBADREQ, "duplicate output tensor alias: %s", alias);
      wanted[k] = 1;
      n_filter++;
    }
  }
  if (rc < 0) return isv__request_fail(r, ISV_EBADREQ, "malformed request message");
  if (n_extra || n_given != n_in) { /* TF Serving's text (predict_util.cc) */
    alias_list req = {.n = 0}, want = {.n = 0}, missing = {.n = 0};
    for (size_t k = 0; k < n_in; k++) {
      isv__tfs_sig_in(cfg, sig, k, &alias);
      list_add(&want, alias);
      if (given[k]) list_add(&req, alias);
      else list_add(&missing, alias);
    }
    for (size_t i = 0; i < extra.n; i++) list_add(&req, extra.v[i]);
    char text[1400];
    snprintf(text, sizeof text, "input size does not match signature: %zu!=%zu len(",
             n_given + n_extra, n_in);
    put_set(text, sizeof text, &req);
    size_t l = strlen(text);
    snprintf(text + l, sizeof text - l, ") != len(");
    put_set(text, sizeof text, &want);
    l = strlen(text);
    snprintf(text + l, sizeof text - l, "). Sent extra: ");
    put_set(text, sizeof text, &extra);
    l = strlen(text);
    snprintf(text + l, sizeof text - l, ". Missing but required: ");
    put_set(text, sizeof text, &missing);
    l = strlen(text);
    snprintf(text + l, sizeof text - l, ".");
    return isv__request_fail(r, ISV_EBADREQ, "%s", text);
  }
  for (size_t k = 0; k < n_in; k++) {
    const isv__io *io = isv__tfs_sig_in(cfg, sig, k, &alias);
    isv_tensor t;
    if (isv__tfs_pb_decode_tensor(r, value[k], alias, &t)) return r->status;
    isv_tensor *in = isv__request_push_input(r);
    if (in == NULL) return r->status;
    t.name = io->name;
    *in = t;
  }
  /* the outputs: the filter's, else the signature's (a model without signatures: all) */
  for (size_t k = 0; k < n_out; k++) {
    if (n_filter ? !wanted[k] : sig == NULL) continue;
    const isv__io *io = isv__tfs_sig_out(cfg, sig, k, &alias);
    if (isv_request_add_requested_output(r, io->name, 0) != 0)
      return r->status ? r->status : oom(r);
  }
  return 0;
}

/* ---- writing -------------------------------------------------------------------------------- */

static void put_varint_field(isv__buf *b, uint32_t num, uint64_t v) {
  uint8_t tmp[24];
  uint8_t *p = isv__pb_put_key(tmp, num, ISV__PB_VARINT);
  p = isv__pb_put_varint(p, v);
  isv__buf_append(b, tmp, (size_t)(p - tmp));
}

static void put_len_head(isv__buf *b, uint32_t num, size_t n) {
  uint8_t tmp[24];
  uint8_t *p = isv__pb_put_key(tmp, num, ISV__PB_LEN);
  p = isv__pb_put_varint(p, n);
  isv__buf_append(b, tmp, (size_t)(p - tmp));
}

static void put_bytes(isv__buf *b, uint32_t num, const void *s, size_t n) {
  put_len_head(b, num, n);
  isv__buf_append(b, s, n);
}

static void put_str(isv__buf *b, uint32_t num, const char *s) { put_bytes(b, num, s, strlen(s)); }

/* inner as field num of b; inner freed. */
static void put_msg(isv__buf *b, uint32_t num, isv__buf *inner) {
  if (inner->failed) b->failed = 1;
  put_bytes(b, num, inner->data, inner->len);
  isv__buf_free(inner);
}

/* A TensorShapeProto: each dimension a Dim {size}. */
static void put_shape(isv__buf *b, uint32_t num, const int64_t *shape, size_t ndim, int batch,
                      int unknown_rank) {
  isv__buf s;
  isv__buf_init(&s, b->mem);
  if (batch) {
    isv__buf d;
    isv__buf_init(&d, b->mem);
    put_varint_field(&d, 1, (uint64_t)(int64_t)-1);
    put_msg(&s, 2, &d);
  }
  for (size_t i = 0; i < ndim; i++) {
    isv__buf d;
    isv__buf_init(&d, b->mem);
    if (shape[i]) put_varint_field(&d, 1, (uint64_t)shape[i]);
    put_msg(&s, 2, &d);
  }
  if (unknown_rank) put_varint_field(&s, 3, 1);
  put_msg(b, num, &s);
}

void isv__tfs_pb_put_tensor(isv__buf *b, const isv_tensor *t) {
  put_varint_field(b, 1, (uint64_t)isv__dt_tf_number(t->dt));
  put_shape(b, 2, t->shape, t->ndim, 0, 0);
  if (t->dt == ISV_BYTES) {
    const isv_bytes *e = t->data;
    for (size_t i = 0; i < t->count; i++) put_bytes(b, 8, e[i].ptr, e[i].len);
  } else if (t->byte_size) {
    put_bytes(b, 4, t->data, t->byte_size);
  }
}

/* "123" → 123 into *v: 1, or 0 when the version is not a decimal int64. */
static int numeric_version(const char *s, int64_t *v) {
  if (s == NULL || *s == '\0' || strlen(s) > 18) return 0;
  for (const char *p = s; *p; p++)
    if (*p < '0' || *p > '9') return 0;
  *v = strtoll(s, NULL, 10);
  return 1;
}

/* ModelSpec {name, version (when numeric), signature_name}. */
static void put_spec(isv__buf *b, uint32_t num, const isv_model *m, const char *sig_name) {
  isv__buf s;
  isv__buf_init(&s, b->mem);
  put_str(&s, 1, m->cfg->name);
  int64_t v;
  if (numeric_version(m->version, &v)) {
    isv__buf w;
    isv__buf_init(&w, b->mem);
    if (v) put_varint_field(&w, 1, (uint64_t)v);
    put_msg(&s, 2, &w);
  }
  if (sig_name && sig_name[0]) put_str(&s, 3, sig_name);
  put_msg(b, num, &s);
}

/* Outputs at least this large are referenced in the answer rather than copied into it. */
#define ISV__TFS_REF_MIN 1024

int isv__tfs_pb_encode_predict(isv_request *r, isv__parts *out) {
  const isv__tfs_call *call = r->fe_data;
  const isv__signature *sig = call ? call->sig : NULL;
  size_t n = r->n_outputs;
  isv__buf h; /* every byte but the referenced contents; copied into the arena at the end */
  isv__buf_init(&h, r->core ? r->core->mem : NULL);
  size_t *at = isv__arena_calloc(&r->arena, n + 1, sizeof *at); /* where content i goes in h */
  if (at == NULL) return ISV_ENOMEM;
  size_t nref = 0;
  for (size_t i = 0; i < n; i++) {
    const isv_tensor *t = &r->outputs[i];
    if (isv__dt_tf_number(t->dt) == 0) {
      isv__buf_free(&h);
      return ISV_EBACKEND;
    }
    const char *alias = isv__tfs_out_alias(sig, t->name);
    int ref = t->dt != ISV_BYTES && t->byte_size >= ISV__TFS_REF_MIN;
    isv__buf tp;
    isv__buf_init(&tp, h.mem);
    if (ref) { /* all but the content's bytes */
      put_varint_field(&tp, 1, (uint64_t)isv__dt_tf_number(t->dt));
      put_shape(&tp, 2, t->shape, t->ndim, 0, 0);
      put_len_head(&tp, 4, t->byte_size);
    } else {
      isv__tfs_pb_put_tensor(&tp, t);
    }
    size_t tp_len = tp.len + (ref ? t->byte_size : 0);
    size_t entry = isv__pb_len_field_size(strlen(alias)) + 1 + isv__pb_varint_len(tp_len) + tp_len;
    put_len_head(&h, 1, entry); /* outputs: map entry {key 1, value 2} */
    put_str(&h, 1, alias);
    put_len_head(&h, 2, tp_len);
    if (tp.failed) h.failed = 1;
    isv__buf_append(&h, tp.data, tp.len);
    isv__buf_free(&tp);
    at[i] = ref ? h.len : SIZE_MAX;
    nref += ref;
  }
  if (r->model) put_spec(&h, 2, r->model, call ? call->sig_name : NULL);
  if (h.failed) {
    isv__buf_free(&h);
    return ISV_ENOMEM;
  }
  uint8_t *hb = isv__arena_alloc(&r->arena, h.len ? h.len : 1);
  uv_buf_t *v = isv__arena_alloc(&r->arena, (2 * nref + 1) * sizeof *v);
  if (hb == NULL || v == NULL) {
    isv__buf_free(&h);
    return ISV_ENOMEM;
  }
  if (h.len) memcpy(hb, h.data, h.len);
  size_t nv = 0, from = 0, total = h.len;
  for (size_t i = 0; i < n; i++) {
    if (at[i] == SIZE_MAX) continue;
    v[nv++] = uv_buf_init((char *)hb + from, (unsigned)(at[i] - from));
    v[nv] = uv_buf_init((char *)r->outputs[i].data, 0);
    v[nv++].len = r->outputs[i].byte_size; /* size_t on Unix: no 4 GiB cut */
    total += r->outputs[i].byte_size;
    from = at[i];
  }
  if (h.len > from) v[nv++] = uv_buf_init((char *)hb + from, (unsigned)(h.len - from));
  isv__buf_free(&h);
  out->v = v;
  out->n = nv;
  out->total = total;
  return 0;
}

/* ---- GetModelMetadata and GetModelStatus ---------------------------------------------------- */

/* TensorInfo {name, dtype, tensor_shape} of a model tensor (the batch dimension first when the
 * model batches), as the REST metadata shows it. */
static void put_tensor_info(isv__buf *b, uint32_t num, const char *alias, const isv__io *io,
                            int batched) {
  isv__buf e, ti;
  isv__buf_init(&e, b->mem);
  isv__buf_init(&ti, b->mem);
  put_str(&ti, 1, io->name);
  put_varint_field(&ti, 2, (uint64_t)isv__dt_tf_number(io->dt));
  put_shape(&ti, 3, io->shape, io->any_rank ? 0 : io->ndim, batched && !io->any_rank,
            io->any_rank);
  put_str(&e, 1, alias);
  put_msg(&e, 2, &ti);
  put_msg(b, num, &e);
}

static void put_signature(isv__buf *b, const char *name, const isv_model_config *cfg,
                          const isv__signature *sig) {
  isv__buf e, sd;
  isv__buf_init(&e, b->mem);
  isv__buf_init(&sd, b->mem);
  const char *alias;
  int batched = cfg->max_batch > 0;
  for (size_t k = 0; k < isv__tfs_sig_n_in(cfg, sig); k++) {
    const isv__io *io = isv__tfs_sig_in(cfg, sig, k, &alias);
    if (io) put_tensor_info(&sd, 1, alias, io, batched);
  }
  for (size_t k = 0; k < isv__tfs_sig_n_out(cfg, sig); k++) {
    const isv__io *io = isv__tfs_sig_out(cfg, sig, k, &alias);
    if (io) put_tensor_info(&sd, 2, alias, io, batched);
  }
  put_str(&sd, 3, isv__tfs_method_name(sig ? sig->method : ISV_SIGNATURE_PREDICT));
  put_str(&e, 1, name);
  put_msg(&e, 2, &sd);
  put_msg(b, 1, &e);
}

int isv__tfs_pb_encode_metadata(const isv_model *m, isv__buf *out) {
  const isv_model_config *cfg = m->cfg;
  isv__buf map, any, entry;
  isv__buf_init(&map, out->mem);
  isv__buf_init(&any, out->mem);
  isv__buf_init(&entry, out->mem);
  if (cfg->n_sigs == 0) put_signature(&map, ISV__TFS_DEFAULT_SIGNATURE, cfg, NULL);
  for (size_t i = 0; i < cfg->n_sigs; i++) put_signature(&map, cfg->sigs[i].name, cfg, &cfg->sigs[i]);
  put_str(&any, 1, "type.googleapis.com/tensorflow.serving.SignatureDefMap");
  put_msg(&any, 2, &map);
  put_str(&entry, 1, "signature_def");
  put_msg(&entry, 2, &any);
  put_spec(out, 1, m, NULL);
  put_msg(out, 2, &entry);
  return out->failed ? ISV_ENOMEM : 0;
}

int isv__tfs_pb_encode_status(const isv_model *const *v, size_t n, isv__buf *out) {
  for (size_t i = 0; i < n; i++) {
    isv__buf s, st;
    isv__buf_init(&s, out->mem);
    isv__buf_init(&st, out->mem);
    int64_t ver = 0;
    if (numeric_version(v[i]->version, &ver) && ver) put_varint_field(&s, 1, (uint64_t)ver);
    int state = isv__tfs_state_number(v[i]->state);
    if (state) put_varint_field(&s, 2, (uint64_t)state);
    put_msg(&s, 3, &st); /* StatusProto: error_code OK, no message */
    put_msg(out, 1, &s);
  }
  return out->failed ? ISV_ENOMEM : 0;
}

/* ---- Classify and Regress: tf.Example inputs ------------------------------------------------ */

/* A feature's values: which list, and its span (the list message). */
typedef struct feature {
  int kind;       /* 0 none, 1 bytes_list, 2 float_list, 3 int64_list */
  isv__pb_span list;
} feature;

static const char *const list_names[] = {"", "bytes_list", "float_list", "int64_list"};

/* The feature named (alias) in an Example (features 1 → map feature 1 → {key 1, Feature 2});
 * the last entry of a key wins. 1 found, 0 not, -1 malformed. */
static int find_feature(isv__pb_span example, const char *alias, feature *out) {
  isv__pb_reader er = isv__pb_reader_of(example);
  isv__pb_field f, g, h;
  int found = 0, rc;
  size_t alen = strlen(alias);
  while ((rc = isv__pb_read_field(&er, &f)) > 0) {
    if (f.num != 1) continue;
    if (f.wt != ISV__PB_LEN) return -1;
    isv__pb_reader fr = isv__pb_reader_of(f.s);
    while ((rc = isv__pb_read_field(&fr, &g)) > 0) {
      if (g.num != 1) continue;
      if (g.wt != ISV__PB_LEN) return -1;
      isv__pb_span key = {EMPTY, 0}, val = {EMPTY, 0};
      isv__pb_reader mr = isv__pb_reader_of(g.s);
      while ((rc = isv__pb_read_field(&mr, &h)) > 0) {
        if ((h.num == 1 || h.num == 2) && h.wt != ISV__PB_LEN) return -1;
        if (h.num == 1) key = h.s;
        else if (h.num == 2) val = h.s;
      }
      if (rc < 0) return -1;
      if (key.n != alen || (alen && memcmp(key.p, alias, alen) != 0)) continue;
      feature ft = {0, {EMPTY, 0}};
      isv__pb_reader vr = isv__pb_reader_of(val);
      while ((rc = isv__pb_read_field(&vr, &h)) > 0) { /* oneof kind: the last one set */
        if (h.num < 1 || h.num > 3) continue;
        if (h.wt != ISV__PB_LEN) return -1;
        ft.kind = (int)h.num;
        ft.list = h.s;
      }
      if (rc < 0) return -1;
      *out = ft;
      found = 1;
    }
    if (rc < 0) return -1;
  }
  return rc < 0 ? -1 : found;
}

/* Every feature name of an Example is one of the signature's input aliases: 0, or the index
 * of the first that is not (and its name). -1 malformed. */
static int unknown_feature(isv__pb_span example, const isv_model_config *cfg,
                           const isv__signature *sig, isv__pb_span *name) {
  isv__pb_reader er = isv__pb_reader_of(example);
  isv__pb_field f, g, h;
  int rc;
  while ((rc = isv__pb_read_field(&er, &f)) > 0) {
    if (f.num != 1 || f.wt != ISV__PB_LEN) continue;
    isv__pb_reader fr = isv__pb_reader_of(f.s);
    while ((rc = isv__pb_read_field(&fr, &g)) > 0) {
      if (g.num != 1 || g.wt != ISV__PB_LEN) continue;
      isv__pb_span key = {(const uint8_t *)"", 0};
      isv__pb_reader mr = isv__pb_reader_of(g.s);
      while (isv__pb_read_field(&mr, &h) > 0)
        if (h.num == 1 && h.wt == ISV__PB_LEN) key = h.s;
      int known = 0;
      const char *alias;
      for (size_t k = 0; !known && k < isv__tfs_sig_n_in(cfg, sig); k++) {
        isv__tfs_sig_in(cfg, sig, k, &alias);
        known = strlen(alias) == key.n && memcmp(alias, key.p, key.n) == 0;
      }
      if (!known) {
        *name = key;
        return 1;
      }
    }
  }
  return 0;
}

/* Values in a list: bytes_list 1 element per occurrence; float_list packed fixed32 or
 * unpacked; int64_list varints. -1 malformed. */
static long long list_count(const feature *ft) {
  isv__pb_reader rd = isv__pb_reader_of(ft->list);
  isv__pb_field f;
  long long n = 0;
  int rc;
  static const typed kinds[] = {{1, "value", K_LEN}, {1, "value", K_I32}, {1, "value", K_VARINT}};
  while ((rc = isv__pb_read_field(&rd, &f)) > 0) {
    if (f.num != 1) continue;
    long long k = occurrence_count(&kinds[ft->kind - 1], &f);
    if (k < 0) return -1;
    n += k;
  }
  return rc < 0 ? -1 : n;
}

typedef struct conv {
  isv_request *r;
  const char *where; /* "examples[3]: feature 'x'" */
  isv_datatype dt;
  uint8_t *out;
  size_t at;
} conv;

/* One value into element c->at of the input's type: float_list into a floating type, int64_list
 * into an integer or floating type, bytes_list into BYTES. */
static int conv_one(conv *c, int kind, uint64_t v, isv__pb_span s) {
  size_t i = c->at++;
  if (kind == 1) {
    isv_bytes b = {(const char *)s.p, s.n};
    memcpy(c->out + i * sizeof b, &b, sizeof b);
    return 0;
  }
  double d;
  int64_t iv = (int64_t)v;
  if (kind == 2) {
    uint32_t bits = (uint32_t)v;
    float f;
    memcpy(&f, &bits, 4);
    d = f;
  } else {
    d = (double)iv;
  }
  switch (c->dt) {
  case ISV_FP32: {
    float f = (float)d;
    memcpy(c->out + 4 * i, &f, 4);
    return 0;
  }
  case ISV_FP64: memcpy(c->out + 8 * i, &d, 8); return 0;
  case ISV_FP16: {
    uint16_t h = isv__f32_to_f16((float)d);
    memcpy(c->out + 2 * i, &h, 2);
    return 0;
  }
  case ISV_BF16: {
    uint16_t h = isv__f32_to_bf16((float)d);
    memcpy(c->out + 2 * i, &h, 2);
    return 0;
  }
  default: break;
  }
  fill f = {c->r, c->where, c->dt, c->out, 0, i}; /* the integers: TensorProto's range rules */
  if (c->dt == ISV_UINT64 && iv < 0) return out_of_range(&f, iv);
  isv__pb_span none = {EMPTY, 0};
  return store(&f, v, none);
}

static int conv_list(conv *c, const feature *ft) {
  isv__pb_reader rd = isv__pb_reader_of(ft->list);
  isv__pb_field f;
  isv__pb_span none = {EMPTY, 0};
  while (isv__pb_read_field(&rd, &f) > 0) {
    if (f.num != 1) continue;
    if (ft->kind == 1 || f.wt != ISV__PB_LEN) {
      if (conv_one(c, ft->kind, f.v, f.wt == ISV__PB_LEN ? f.s : none)) return c->r->status;
    } else if (ft->kind == 2) {
      for (size_t off = 0; off + 4 <= f.s.n; off += 4)
        if (conv_one(c, 2, isv__pb_le_load(f.s.p + off, 4), none)) return c->r->status;
    } else {
      isv__pb_reader vr = isv__pb_reader_of(f.s);
      uint64_t v;
      while (vr.p < vr.end && isv__pb_read_varint(&vr, &v) == 0)
        if (conv_one(c, 3, v, none)) return c->r->status;
    }
  }
  return 0;
}

/* Whether a list of that kind fits an input of type dt. */
static int kind_fits(int kind, isv_datatype dt) {
  if (kind == 1) return dt == ISV_BYTES;
  if (kind == 2) return dt == ISV_FP32 || dt == ISV_FP64 || dt == ISV_FP16 || dt == ISV_BF16;
  return dt != ISV_BYTES && dt != ISV_BOOL;
}

/* A named signature must be of the task's method (the implicit serving_default of a model
 * without signatures serves every method, as REST's :classify and :regress do). */
static int method_check(isv_request *r, const isv__signature *sig, int kind) {
  isv_signature_method want =
      kind == ISV__TFS_CLASSIFY ? ISV_SIGNATURE_CLASSIFY : ISV_SIGNATURE_REGRESS;
  isv_signature_method have = sig ? sig->method : want;
  if (have != want) /* TF Serving's text (classifier.cc, regressor.cc) */
    return isv__request_fail(r, ISV_EBADREQ, "Expected %s signature method_name to be %s. Was: %s",
                             want == ISV_SIGNATURE_CLASSIFY ? "classification" : "regression",
                             isv__tfs_method_name(want), isv__tfs_method_name(have));
  return 0;
}

static int request_outputs(isv_request *r, const isv__signature *sig);
static int examples_input(isv_request *r, const uint8_t *msg, size_t len);

int isv__tfs_pb_decode_examples(isv_request *r, const uint8_t *msg, size_t len) {
  if (r->status) return r->status;
  isv__tfs_call *call = r->fe_data;
  if (r->model == NULL || call == NULL) return isv__request_fail(r, ISV_EINTERNAL, "not bound");
  if (method_check(r, call->sig, call->kind) || examples_input(r, msg, len) ||
      request_outputs(r, call->sig))
    return r->status;
  return 0;
}

/* sig's outputs requested (none: every output of a model without signatures), each once. */
static int request_outputs(isv_request *r, const isv__signature *sig) {
  for (size_t k = 0; sig && k < sig->n_out; k++) {
    int have = 0;
    for (size_t i = 0; i < r->n_req_outputs; i++)
      have |= strcmp(r->req_outputs[i].name, sig->out_names[k]) == 0;
    if (!have && isv_request_add_requested_output(r, sig->out_names[k], 0) != 0)
      return r->status ? r->status : oom(r);
  }
  return 0;
}

/* The Input (field 2) into r's inputs through the call's signature. */
static int examples_input(isv_request *r, const uint8_t *msg, size_t len) {
  isv__tfs_call *call = r->fe_data;
  const isv_model_config *cfg = r->model->cfg;
  const isv__signature *sig = call->sig;
  /* input (2): Input {example_list 1 {examples 1} | example_list_with_context 2 {examples 1,
   * context 2}} — the oneof's last choice */
  isv__pb_span list = {EMPTY, 0};
  int with_context = 0, rc;
  isv__pb_reader rd = isv__pb_reader_of((isv__pb_span){msg, len});
  isv__pb_field f, g;
  while ((rc = isv__pb_read_field(&rd, &f)) > 0) {
    if (f.num != 2) continue;
    if (f.wt != ISV__PB_LEN) return isv__request_fail(r, ISV_EBADREQ, "malformed input");
    isv__pb_reader ir = isv__pb_reader_of(f.s);
    while ((rc = isv__pb_read_field(&ir, &g)) > 0) {
      if (g.num != 1 && g.num != 2) continue;
      if (g.wt != ISV__PB_LEN) return isv__request_fail(r, ISV_EBADREQ, "malformed input");
      list = g.s;
      with_context = g.num == 2;
    }
    if (rc < 0) return isv__request_fail(r, ISV_EBADREQ, "malformed input");
  }
  if (rc < 0) return isv__request_fail(r, ISV_EBADREQ, "malformed request message");
  size_t n = 0;
  isv__pb_span context = {EMPTY, 0};
  int has_context = 0;
  rd = isv__pb_reader_of(list);
  while ((rc = isv__pb_read_field(&rd, &f)) > 0) {
    if (f.num != 1 && !(with_context && f.num == 2)) continue;
    if (f.wt != ISV__PB_LEN) return isv__request_fail(r, ISV_EBADREQ, "malformed input");
    if (f.num == 1) n++;
    else context = f.s, has_context = 1;
  }
  if (rc < 0) return isv__request_fail(r, ISV_EBADREQ, "malformed input");
  if (n == 0) return isv__request_fail(r, ISV_EBADREQ, "Input is empty");
  isv__pb_span *ex = isv__arena_alloc(&r->arena, n * sizeof *ex);
  if (ex == NULL) return oom(r);
  size_t i = 0;
  rd = isv__pb_reader_of(list);
  while (isv__pb_read_field(&rd, &f) > 0)
    if (f.num == 1) ex[i++] = f.s;
  char where[200];
  isv__pb_span name;
  for (i = 0; i < n; i++) {
    int u = unknown_feature(ex[i], cfg, sig, &name);
    if (u) {
      snprintf(where, sizeof where, "examples[%zu]: feature '%.*s'", i,
               (int)(name.n > 64 ? 64 : name.n), (const char *)name.p);
      return isv__request_fail(r, ISV_EBADREQ, "%s: not an input of the model", where);
    }
  }
  if (has_context && unknown_feature(context, cfg, sig, &name))
    return isv__request_fail(r, ISV_EBADREQ, "context: feature '%.*s': not an input of the model",
                             (int)(name.n > 64 ? 64 : name.n), (const char *)name.p);
  for (size_t k = 0; k < isv__tfs_sig_n_in(cfg, sig); k++) {
    const char *alias;
    const isv__io *io = isv__tfs_sig_in(cfg, sig, k, &alias);
    feature ctx_ft = {0, {EMPTY, 0}};
    int in_ctx = has_context ? find_feature(context, alias, &ctx_ft) : 0;
    if (in_ctx < 0) return isv__request_fail(r, ISV_EBADREQ, "context: malformed");
    long long per = -1;
    feature *fts = isv__arena_alloc(&r->arena, n * sizeof *fts);
    if (fts == NULL) return oom(r);
    for (i = 0; i < n; i++) { /* an example's own value wins over the context's */
      int got = find_feature(ex[i], alias, &fts[i]);
      snprintf(where, sizeof where, "examples[%zu]: feature '%s'", i, alias);
      if (got < 0) return isv__request_fail(r, ISV_EBADREQ, "%s: malformed", where);
      if (!got && !in_ctx)
        return isv__request_fail(r, ISV_EBADREQ, "%s: missing (and not in the context)", where);
      if (!got) fts[i] = ctx_ft;
      if (fts[i].kind == 0)
        return isv__request_fail(r, ISV_EBADREQ, "%s: has no values", where);
      if (!kind_fits(fts[i].kind, io->dt))
        return isv__request_fail(r, ISV_EBADREQ, "%s: a %s cannot feed input '%s' of %s", where,
                                 list_names[fts[i].kind], io->name, isv_datatype_name(io->dt));
      long long cnt = list_count(&fts[i]);
      if (cnt < 0) return isv__request_fail(r, ISV_EBADREQ, "%s: malformed", where);
      if (per >= 0 && cnt != per)
        return isv__request_fail(r, ISV_EBADREQ, "%s: %lld values, example 0 has %lld", where,
                                 cnt, per);
      per = cnt;
    }
    /* DECISION: the model's input says what an example's k values are — one value each for an
     * input of rank 1 (the examples' dimension only: [n]), a vector for rank 2 ([n, k]), the
     * input's own inner shape for a higher rank (its dimensions fixed, k their product); an
     * input of any rank takes one value as [n], k as [n, k] */
    int64_t shape[ISV__MAX_NDIM];
    size_t ndim;
    size_t inner = io->any_rank ? (per == 1 ? 0 : 1)
                   : cfg->max_batch > 0 ? io->ndim
                                        : (io->ndim ? io->ndim - 1 : 0);
    const int64_t *dims = io->any_rank ? NULL : io->shape + (cfg->max_batch > 0 ? 0 : 1);
    shape[0] = (int64_t)n;
    if (inner == 0) {
      if (per != 1)
        return isv__request_fail(r, ISV_EBADREQ, "examples[0]: feature '%s': %lld values, input "
                                 "'%s' takes one per example", alias, per, io->name);
      ndim = 1;
    } else if (inner == 1) {
      shape[1] = per;
      ndim = 2;
    } else {
      long long prod = 1;
      for (size_t d = 0; d < inner && prod >= 0; d++) prod = dims[d] < 0 ? -1 : prod * dims[d];
      if (prod != per || inner + 1 > ISV__MAX_NDIM)
        return isv__request_fail(r, ISV_EBADREQ, "examples[0]: feature '%s': %lld values do not "
                                 "fill input '%s' of rank %zu", alias, per, io->name, inner + 1);
      for (size_t d = 0; d < inner; d++) shape[1 + d] = dims[d];
      ndim = inner + 1;
    }
    size_t elsize = isv__dt_size(io->dt), count, bytes;
    if (isv__shape_count(shape, ndim, elsize, &count, &bytes) != 0)
      return isv__request_fail(r, ISV_EBADREQ, "feature '%s': too many values", alias);
    int64_t *sh = isv__arena_alloc(&r->arena, ndim * sizeof *sh);
    conv c = {r, where, io->dt, isv__arena_alloc(&r->arena, bytes ? bytes : 1), 0};
    if (sh == NULL || c.out == NULL) return oom(r);
    memcpy(sh, shape, ndim * sizeof *sh);
    for (i = 0; i < n; i++) {
      snprintf(where, sizeof where, "examples[%zu]: feature '%s'", i, alias);
      if (conv_list(&c, &fts[i])) return r->status;
    }
    isv_tensor *t = isv__request_push_input(r);
    if (t == NULL) return r->status;
    memset(t, 0, sizeof *t);
    t->name = io->name;
    t->dt = io->dt;
    t->shape = sh;
    t->ndim = ndim;
    t->data = c.out;
    t->count = count;
    t->byte_size = io->dt == ISV_BYTES ? isv__bytes_total(t->data, count) : bytes;
  }
  return 0;
}

static void put_float_field(isv__buf *b, uint32_t num, float v) {
  uint8_t tmp[8];
  uint8_t *p = isv__pb_put_key(tmp, num, ISV__PB_I32);
  uint32_t bits;
  memcpy(&bits, &v, 4);
  for (int i = 0; i < 4; i++) *p++ = (uint8_t)(bits >> (8 * i));
  isv__buf_append(b, tmp, (size_t)(p - tmp));
}

/* The answer in r's arena as one part. */
static int as_parts(isv_request *r, isv__buf *b, isv__parts *out) {
  if (b->failed) {
    isv__buf_free(b);
    return ISV_ENOMEM;
  }
  char *p = isv__arena_alloc(&r->arena, b->len ? b->len : 1);
  uv_buf_t *v = isv__arena_alloc(&r->arena, sizeof *v);
  if (p == NULL || v == NULL) {
    isv__buf_free(b);
    return ISV_ENOMEM;
  }
  if (b->len) memcpy(p, b->data, b->len);
  v[0] = uv_buf_init(p, (unsigned)b->len);
  out->v = v;
  out->n = 1;
  out->total = b->len;
  isv__buf_free(b);
  return 0;
}

/* A ClassificationResult or RegressionResult of r's outputs through sig, into res. 0, or
 * ISV_EBADREQ with r failed (TF Serving: INVALID_ARGUMENT). */
static int put_result(isv_request *r, const isv__signature *sig, int kind, isv__buf *res) {
  char msg[256];
  if (kind == ISV__TFS_CLASSIFY) {
    isv__tfs_classes c;
    if (isv__tfs_classes_of(r, sig, &c, msg, sizeof msg) != 0)
      return isv__request_fail(r, ISV_EBADREQ, "%s", msg);
    for (size_t i = 0; i < c.n; i++) { /* Classifications {classes: Class {label, score}} */
      isv__buf cl;
      isv__buf_init(&cl, res->mem);
      for (size_t j = 0; j < c.k; j++) {
        isv__buf one;
        isv__buf_init(&one, res->mem);
        const char *p;
        size_t n;
        char idx[24];
        float score = (float)isv__tfs_class(&c, i, j, &p, &n, idx, sizeof idx);
        if (n) put_bytes(&one, 1, p, n);
        put_float_field(&one, 2, score);
        put_msg(&cl, 1, &one);
      }
      put_msg(res, 1, &cl);
    }
    return 0;
  }
  const isv_tensor *t = isv__tfs_regression_of(r, sig, msg, sizeof msg);
  if (t == NULL) return isv__request_fail(r, ISV_EBADREQ, "%s", msg);
  for (size_t i = 0; i < t->count; i++) { /* Regression {value} */
    isv__buf one;
    isv__buf_init(&one, res->mem);
    put_float_field(&one, 1, (float)isv__tfs_real(t, i));
    put_msg(res, 1, &one);
  }
  return 0;
}

int isv__tfs_pb_encode_examples(isv_request *r, isv__parts *out) {
  const isv__tfs_call *call = r->fe_data;
  isv__buf b, res;
  isv__buf_init(&b, r->core ? r->core->mem : NULL);
  isv__buf_init(&res, b.mem);
  if (put_result(r, call ? call->sig : NULL, call ? call->kind : ISV__TFS_REGRESS, &res)) {
    isv__buf_free(&b);
    isv__buf_free(&res);
    return r->status;
  }
  put_msg(&b, 1, &res);
  if (r->model) put_spec(&b, 2, r->model, call ? call->sig_name : NULL);
  return as_parts(r, &b, out);
}

/* ---- MultiInference ------------------------------------------------------------------------- */

/* Whether two signatures of cfg take the same inputs under the same aliases. */
static int same_inputs(const isv_model_config *cfg, const isv__signature *a,
                       const isv__signature *b) {
  size_t n = isv__tfs_sig_n_in(cfg, a);
  if (n != isv__tfs_sig_n_in(cfg, b)) return 0;
  for (size_t i = 0; i < n; i++) {
    const char *aa, *ba;
    const isv__io *ai = isv__tfs_sig_in(cfg, a, i, &aa);
    int found = 0;
    for (size_t j = 0; j < n && !found; j++) {
      const isv__io *bi = isv__tfs_sig_in(cfg, b, j, &ba);
      found = ai == bi && strcmp(aa, ba) == 0;
    }
    if (!found) return 0;
  }
  return 1;
}

/* (name, len) of a task's signature, "serving_default" when it names none. */
static isv__pb_span sig_or_default(isv__pb_span s) {
  if (s.n) return s;
  isv__pb_span d = {(const uint8_t *)ISV__TFS_DEFAULT_SIGNATURE,
                    strlen(ISV__TFS_DEFAULT_SIGNATURE)};
  return d;
}

int isv__tfs_pb_bind_multi(isv_request *r, const uint8_t *msg, size_t len) {
  if (r->status) return r->status;
  size_t n = 0;
  isv__pb_reader rd = isv__pb_reader_of((isv__pb_span){msg, len});
  isv__pb_field f, g;
  int rc;
  while ((rc = isv__pb_read_field(&rd, &f)) > 0) {
    if (f.num != 1) continue;
    if (f.wt != ISV__PB_LEN) return isv__request_fail(r, ISV_EBADREQ, "malformed tasks");
    n++;
  }
  if (rc < 0) return isv__request_fail(r, ISV_EBADREQ, "malformed request message");
  if (n == 0) return isv__request_fail(r, ISV_EBADREQ, "MultiInferenceRequest has no tasks");
  isv__tfs_spec *specs = isv__arena_calloc(&r->arena, n, sizeof *specs);
  isv__pb_span *methods = isv__arena_calloc(&r->arena, n, sizeof *methods);
  isv__tfs_task *tasks = isv__arena_calloc(&r->arena, n, sizeof *tasks);
  isv__tfs_call *c = isv__arena_calloc(&r->arena, 1, sizeof *c);
  if (specs == NULL || methods == NULL || tasks == NULL || c == NULL) return oom(r);
  size_t i = 0;
  rd = isv__pb_reader_of((isv__pb_span){msg, len});
  while (isv__pb_read_field(&rd, &f) > 0) {
    if (f.num != 1) continue;
    methods[i] = (isv__pb_span){EMPTY, 0};
    isv__pb_reader tr = isv__pb_reader_of(f.s);
    while ((rc = isv__pb_read_field(&tr, &g)) > 0) { /* InferenceTask {model_spec 1, method 2} */
      if ((g.num == 1 || g.num == 2) && g.wt != ISV__PB_LEN)
        return isv__request_fail(r, ISV_EBADREQ, "malformed tasks");
      if (g.num == 1 && parse_spec(g.s, &specs[i]) != 0)
        return isv__request_fail(r, ISV_EBADREQ, "malformed tasks");
      if (g.num == 2) methods[i] = g.s;
    }
    if (rc < 0) return isv__request_fail(r, ISV_EBADREQ, "malformed tasks");
    if (specs[i].name.n == 0) /* TF Serving's texts (multi_inference.cc) */
      return isv__request_fail(r, ISV_EBADREQ, "Found ModelSpec with an empty model name.");
    if (specs[i].name.n != specs[0].name.n ||
        memcmp(specs[i].name.p, specs[0].name.p, specs[0].name.n) != 0)
      return isv__request_fail(r, ISV_EBADREQ, "All ModelSpecs in a MultiInferenceRequest must "
                                               "access the same model name.");
    i++;
  }
  /* the model: the first task's spec (its version or label), as TF Serving resolves it */
  char version[24];
  const isv__tfs_spec *s0 = &specs[0];
  isv__model_spec spec = isv__tfs_model_spec(s0, version, sizeof version);
  isv_model *m;
  isv__why why = isv__core_resolve(r->core, &spec, &m);
  if (why != ISV__FOUND) { /* r names no model: the core keeps this answer */
    char text[512];
    int code = isv__why_say(why, ISV__WORDS_TFS, &spec, text, sizeof text);
    return isv__request_fail(r, code, "%s", text);
  }
  r->model_name = span_dup(r, s0->name);
  if (r->model_name == NULL) return oom(r);
  if (spec.version && (r->version = isv__arena_strndup(&r->arena, version, strlen(version))) == NULL)
    return oom(r);
  if (spec.label && (r->label = span_dup(r, s0->label)) == NULL) return oom(r);
  if (isv__request_bind(r) != 0) return r->status;
  const isv_model_config *cfg = r->model->cfg;
  const char *cls = isv__tfs_method_name(ISV_SIGNATURE_CLASSIFY),
             *reg = isv__tfs_method_name(ISV_SIGNATURE_REGRESS);
  for (i = 0; i < n; i++) {
    isv__pb_span sn = sig_or_default(specs[i].signature);
    int w = (int)(sn.n > 128 ? 128 : sn.n);
    for (size_t j = 0; j < i; j++) {
      isv__pb_span sj = sig_or_default(specs[j].signature);
      if (sj.n == sn.n && memcmp(sj.p, sn.p, sn.n) == 0)
        return isv__request_fail(r, ISV_EBADREQ, "Duplicate evaluation of signature: %.*s", w,
                                 (const char *)sn.p);
    }
    if (!isv__tfs_signature(cfg, (const char *)sn.p, sn.n, &tasks[i].sig))
      return isv__request_fail(r, ISV_EBADREQ, "Requested signature not found in model graph: "
                               "%.*s", w, (const char *)sn.p);
    const isv__pb_span mn = methods[i];
    if (mn.n == strlen(cls) && memcmp(mn.p, cls, mn.n) == 0) tasks[i].kind = ISV__TFS_CLASSIFY;
    else if (mn.n == strlen(reg) && memcmp(mn.p, reg, mn.n) == 0) tasks[i].kind = ISV__TFS_REGRESS;
    else
      return isv__request_fail(r, ISV_EUNIMPL, "Unsupported signature method_name: %.*s",
                               (int)(mn.n > 128 ? 128 : mn.n), (const char *)mn.p);
    if (method_check(r, tasks[i].sig, tasks[i].kind)) return r->status;
    if (!same_inputs(cfg, tasks[i].sig, tasks[0].sig)) {
      isv__pb_span s0n = sig_or_default(specs[0].signature);
      return isv__request_fail(r, ISV_EBADREQ, "the signatures of a MultiInferenceRequest must "
                               "take the same inputs: %.*s and %.*s do not", w,
                               (const char *)sn.p, (int)(s0n.n > 128 ? 128 : s0n.n),
                               (const char *)s0n.p);
    }
    tasks[i].sig_name = specs[i].signature.n ? span_dup(r, specs[i].signature) : "";
    if (tasks[i].sig_name == NULL) return oom(r);
  }
  c->kind = ISV__TFS_MULTI;
  c->sig = tasks[0].sig;
  c->sig_name = tasks[0].sig_name;
  c->tasks = tasks;
  c->n_tasks = n;
  r->fe_data = c;
  return 0;
}

int isv__tfs_pb_decode_multi(isv_request *r, const uint8_t *msg, size_t len) {
  if (r->status) return r->status;
  isv__tfs_call *call = r->fe_data;
  if (r->model == NULL || call == NULL || call->kind != ISV__TFS_MULTI)
    return isv__request_fail(r, ISV_EINTERNAL, "not bound");
  if (examples_input(r, msg, len)) return r->status;
  for (size_t i = 0; i < call->n_tasks; i++)
    if (request_outputs(r, call->tasks[i].sig)) return r->status;
  return 0;
}

int isv__tfs_pb_encode_multi(isv_request *r, isv__parts *out) {
  const isv__tfs_call *call = r->fe_data;
  isv__buf b;
  isv__buf_init(&b, r->core ? r->core->mem : NULL);
  for (size_t i = 0; call && i < call->n_tasks; i++) {
    const isv__tfs_task *t = &call->tasks[i];
    isv__buf ir, res; /* InferenceResult {model_spec 1, classification 2 | regression 3} */
    isv__buf_init(&ir, b.mem);
    isv__buf_init(&res, b.mem);
    if (put_result(r, t->sig, t->kind, &res)) {
      isv__buf_free(&ir);
      isv__buf_free(&res);
      isv__buf_free(&b);
      return r->status;
    }
    if (r->model) put_spec(&ir, 1, r->model, t->sig_name);
    put_msg(&ir, t->kind == ISV__TFS_CLASSIFY ? 2 : 3, &res);
    put_msg(&b, 1, &ir);
  }
  return as_parts(r, &b, out);
}
