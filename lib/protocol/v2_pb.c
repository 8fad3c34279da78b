/* KServe V2 gRPC messages ⇄ the canonical request/response (see v2_pb.h).
 *
 * ModelInferRequest is parsed by hand from the wire format: nanopb's 16-bit pb_size_t (Debian)
 * cannot hold a tensor, and the hand parser gives zero-copy for free — raw_input_contents and
 * bytes_contents are referenced in the message buffer, never copied. ModelInferResponse is
 * written by hand too: every non-tensor byte goes into one arena block and each
 * raw_output_contents entry is a separate part referencing the output tensor. The small
 * messages (model ref, metadata, bool, health, stream error) go through the nanopb code
 * generated from proto/ — all of their variable-size fields are callbacks.
 *
 * Alignment: a raw tensor is used in place only when its address suits its element size;
 * otherwise it is copied once into the request arena, because backends read the data through
 * typed pointers (float *, int64_t *) and a misaligned one is undefined behaviour.
 *
 * Accepted like protobuf does: fields in any order, unknown fields (skipped), repeated scalars
 * packed or unpacked (even mixed), a repeated string/message's entries anywhere in the message,
 * a submessage given several times (its fields merge). Rejected: groups and reserved wire
 * types, truncation, varints over 10 bytes, strings that are not UTF-8. */
#include "protocol/v2_pb.h"

#include "core/ensemble_cfg.h"
#include "core/group.h"

#include <limits.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "codec/datatype.h"
#include "codec/nanopb_glue.h"
#include "codec/pbwire.h"
#include "codec/span.h"
#include "codec/raw_bytes.h"
#include "codec/utf8.h"
#include "core/registry.h"
#include "core/shm_tensor.h"
#include "core/warmup_cfg.h"
#include "grpc_predict_v2.pb.h"


/* ============================================================================================
 * Infer request
 * ========================================================================================== */

static int malformed(isv_request *r, const char *where) {
  return isv__request_fail(r, ISV_EBADREQ, "malformed protobuf: %s is truncated or not a valid "
                           "ModelInferRequest encoding", where);
}

static int wire_type(isv_request *r, const isv__pb_field *f, int want, const char *what) {
  if (f->wt == want) return 0;
  return isv__request_fail(r, ISV_EBADREQ, "malformed protobuf: %s has wire type %d, expected %d",
                           what, f->wt, want);
}

static int text_ok(isv__pb_span s) { return isv__utf8_text((const char *)s.p, s.n); }

/* A string field copied NUL-terminated into the arena (names and ids must be C strings). */
static int get_string(isv_request *r, const isv__pb_field *f, const char *what, const char **out) {
  if (wire_type(r, f, ISV__PB_LEN, what)) return r->status;
  if (!text_ok(f->s))
    return isv__request_fail(r, ISV_EBADREQ, "%s is not valid UTF-8 text (or holds a NUL byte)",
                             what);
  char *s = isv__arena_strndup(&r->arena, (const char *)f->s.p, f->s.n);
  if (s == NULL) return isv__request_fail(r, ISV_ENOMEM, "out of memory");
  *out = s;
  return 0;
}

/* Printable copy of untrusted bytes for an error message. */
static const char *printable(char *buf, size_t cap, isv__pb_span s) {
  size_t n = s.n < cap - 1 ? s.n : cap - 1;
  for (size_t i = 0; i < n; i++) buf[i] = s.p[i] >= 0x20 && s.p[i] < 0x7f ? (char)s.p[i] : '?';
  buf[n] = '\0';
  return buf;
}

/* InferParameter (oneof parameter_choice). type 0 = nothing set. String values reference the
 * message buffer. */
static int parse_infer_parameter(isv_request *r, isv__pb_span s, const char *key, isv_param *out) {
  memset(out, 0, sizeof *out);
  isv__pb_reader rr = isv__pb_reader_of(s);
  isv__pb_field f;
  int k;
  while ((k = isv__pb_read_field(&rr, &f)) > 0) {
    int want = f.num == 3 ? ISV__PB_LEN : f.num == 4 ? ISV__PB_I64 : ISV__PB_VARINT;
    if (f.num < 1 || f.num > 5) continue;
    if (f.wt != want)
      return isv__request_fail(r, ISV_EBADREQ, "malformed protobuf: parameter '%s' has field %u "
                               "with wire type %d", key, f.num, f.wt);
    switch (f.num) {
    case 1:
      out->type = ISV_PARAM_BOOL;
      out->v.b = f.v != 0;
      break;
    case 2:
      out->type = ISV_PARAM_INT64;
      out->v.i64 = (int64_t)f.v;
      break;
    case 3:
      if (!isv__utf8_valid((const char *)f.s.p, f.s.n))
        return isv__request_fail(r, ISV_EBADREQ, "parameter '%s': string_param is not valid UTF-8",
                                 key);
      out->type = ISV_PARAM_STRING;
      out->v.s.ptr = (const char *)f.s.p;
      out->v.s.len = f.s.n;
      break;
    case 4: {
      double d;
      memcpy(&d, &f.v, sizeof d);
      out->type = ISV_PARAM_DOUBLE;
      out->v.d = d;
      break;
    }
    case 5:
      out->type = ISV_PARAM_UINT64;
      out->v.u64 = f.v;
      break;
    }
  }
  if (k < 0) return isv__request_fail(r, ISV_EBADREQ, "malformed protobuf: parameter '%s'", key);
  return 0;
}

/* A map<string, InferParameter> entry {key 1, value 2}. */
static int parse_param_entry(isv_request *r, isv__pb_span s, const char *where, isv__pb_span *key,
                             isv_param *val) {
  isv__pb_reader rr = isv__pb_reader_of(s);
  isv__pb_field f;
  int k;
  isv__pb_span value = {NULL, 0};
  int have_value = 0;
  key->p = (const uint8_t *)"";
  key->n = 0;
  while ((k = isv__pb_read_field(&rr, &f)) > 0) {
    if (f.num == 1) {
      if (wire_type(r, &f, ISV__PB_LEN, "a parameter name")) return r->status;
      *key = f.s;
    } else if (f.num == 2) {
      if (wire_type(r, &f, ISV__PB_LEN, "a parameter value")) return r->status;
      value = f.s; /* the last one wins, as protobuf's map parsing does */
      have_value = 1;
    }
  }
  if (k < 0) return isv__request_fail(r, ISV_EBADREQ, "malformed protobuf: a parameter of %s",
                                      where);
  if (!text_ok(*key))
    return isv__request_fail(r, ISV_EBADREQ, "a parameter name of %s is not valid UTF-8 text",
                             where);
  char kb[128];
  printable(kb, sizeof kb, *key);
  memset(val, 0, sizeof *val);
  if (have_value) return parse_infer_parameter(r, value, kb, val);
  return 0;
}

/* ---- typed contents ------------------------------------------------------------------------ */

static const char *const contents_names[9] = {
    "", "bool_contents", "int_contents", "int64_contents", "uint_contents",
    "uint64_contents", "fp32_contents", "fp64_contents", "bytes_contents"};

/* The InferTensorContents field that carries dt; 0 for FP16/BF16 (none does). */
static uint32_t contents_field(isv_datatype dt) {
  switch (dt) {
  case ISV_BOOL: return 1;
  case ISV_INT8:
  case ISV_INT16:
  case ISV_INT32: return 2;
  case ISV_INT64: return 3;
  case ISV_UINT8:
  case ISV_UINT16:
  case ISV_UINT32: return 4;
  case ISV_UINT64: return 5;
  case ISV_FP32: return 6;
  case ISV_FP64: return 7;
  case ISV_BYTES: return 8;
  default: return 0;
  }
}

typedef struct input_ctx {
  isv_request *r;
  const char *name;
  isv_datatype dt;
  const int64_t *shape;
  size_t ndim;
  size_t count;
  uint32_t want;    /* contents field number */
  size_t seen;      /* elements counted / written */
  uint8_t *out;     /* NULL while counting */
  char shape_txt[96]; /* made by shape_text() when an error needs it */
} input_ctx;

static const char *shape_text(input_ctx *c) {
  if (c->shape_txt[0] == '\0')
    isv__shape_text(c->shape_txt, sizeof c->shape_txt, c->shape, c->ndim, 0);
  return c->shape_txt;
}

static int range_error(input_ctx *c, long long v, int is_unsigned) {
  if (is_unsigned)
    return isv__request_fail(c->r, ISV_EBADREQ, "input '%s': %s value %llu is out of range for %s",
                             c->name, contents_names[c->want], (unsigned long long)v,
                             isv_datatype_name(c->dt));
  return isv__request_fail(c->r, ISV_EBADREQ, "input '%s': %s value %lld is out of range for %s",
                           c->name, contents_names[c->want], v, isv_datatype_name(c->dt));
}

/* Store one varint element (already read) converted to c->dt. */
static int put_varint_elem(input_ctx *c, uint64_t v) {
  size_t i = c->seen++;
  uint8_t *o = c->out;
  switch (c->dt) {
  case ISV_BOOL: o[i] = v != 0; return 0;
  case ISV_INT8:
  case ISV_INT16:
  case ISV_INT32: {
    int64_t s = (int64_t)v; /* int32 on the wire: negative values are sign-extended */
    int64_t lo = c->dt == ISV_INT8 ? INT8_MIN : c->dt == ISV_INT16 ? INT16_MIN : INT32_MIN;
    int64_t hi = c->dt == ISV_INT8 ? INT8_MAX : c->dt == ISV_INT16 ? INT16_MAX : INT32_MAX;
    if (s < lo || s > hi) return range_error(c, (long long)s, 0);
    if (c->dt == ISV_INT8) {
      int8_t x = (int8_t)s;
      memcpy(o + i, &x, 1);
    } else if (c->dt == ISV_INT16) {
      int16_t x = (int16_t)s;
      memcpy(o + 2 * i, &x, 2);
    } else {
      int32_t x = (int32_t)s;
      memcpy(o + 4 * i, &x, 4);
    }
    return 0;
  }
  case ISV_INT64: {
    int64_t x = (int64_t)v;
    memcpy(o + 8 * i, &x, 8);
    return 0;
  }
  case ISV_UINT8:
  case ISV_UINT16:
  case ISV_UINT32: {
    uint64_t hi = c->dt == ISV_UINT8 ? UINT8_MAX : c->dt == ISV_UINT16 ? UINT16_MAX : UINT32_MAX;
    if (v > hi) return range_error(c, (long long)v, 1);
    if (c->dt == ISV_UINT8) {
      o[i] = (uint8_t)v;
    } else if (c->dt == ISV_UINT16) {
      uint16_t x = (uint16_t)v;
      memcpy(o + 2 * i, &x, 2);
    } else {
      uint32_t x = (uint32_t)v;
      memcpy(o + 4 * i, &x, 4);
    }
    return 0;
  }
  case ISV_UINT64: memcpy(o + 8 * i, &v, 8); return 0;
  default: return 0;
  }
}

/* A contents field of the wrong wire type: r failed (the text made only then — no snprintf on
 * the path of every request). */
static int contents_wire_type(input_ctx *c, const isv__pb_field *f) {
  char what[64];
  snprintf(what, sizeof what, "%s of input", contents_names[f->num]);
  return wire_type(c->r, f, ISV__PB_LEN, what);
}

/* One field of an InferTensorContents: count its elements (c->out == NULL) or store them. */
static int contents_field_elems(input_ctx *c, const isv__pb_field *f) {
  isv_request *r = c->r;
  if (f->num < 1 || f->num > 8) return 0; /* unknown: skipped */
  if (f->num != c->want)
    return isv__request_fail(r, ISV_EBADREQ, "input '%s': datatype %s takes %s, got %s", c->name,
                             isv_datatype_name(c->dt), contents_names[c->want],
                             contents_names[f->num]);
  if (f->num <= 5) { /* varints, packed or not */
    if (f->wt == ISV__PB_VARINT) {
      if (c->out == NULL) {
        c->seen++;
        return 0;
      }
      return put_varint_elem(c, f->v);
    }
    if (f->wt != ISV__PB_LEN) return contents_wire_type(c, f);
    if (c->out == NULL) {
      size_t n = 0;
      for (size_t i = 0; i < f->s.n; i++) n += !(f->s.p[i] & 0x80);
      if (f->s.n && (f->s.p[f->s.n - 1] & 0x80))
        return isv__request_fail(r, ISV_EBADREQ, "malformed protobuf: packed %s of input '%s' "
                                 "ends inside a varint", contents_names[f->num], c->name);
      c->seen += n;
      return 0;
    }
    isv__pb_reader rr = isv__pb_reader_of(f->s);
    while (rr.p < rr.end) {
      uint64_t v;
      if (isv__pb_read_varint(&rr, &v) != 0)
        return isv__request_fail(r, ISV_EBADREQ, "malformed protobuf: packed %s of input '%s' "
                                 "holds an invalid varint", contents_names[f->num], c->name);
      if (put_varint_elem(c, v)) return r->status;
    }
    return 0;
  }
  if (f->num == 6 || f->num == 7) { /* fixed32 float / fixed64 double, packed or not */
    size_t w = f->num == 6 ? 4 : 8;
    int single = f->wt == (f->num == 6 ? ISV__PB_I32 : ISV__PB_I64);
    if (!single) {
      if (f->wt != ISV__PB_LEN) return contents_wire_type(c, f);
      if (f->s.n % w)
        return isv__request_fail(r, ISV_EBADREQ, "malformed protobuf: packed %s of input '%s' has "
                                 "%zu bytes, not a multiple of %zu", contents_names[f->num],
                                 c->name, f->s.n, w);
    }
    size_t n = single ? 1 : f->s.n / w;
    if (c->out) memcpy(c->out + c->seen * w, f->s.p, n * w); /* little-endian host */
    c->seen += n;
    return 0;
  }
  /* 8: bytes_contents, one element per field, referenced in place */
  if (f->wt != ISV__PB_LEN) return contents_wire_type(c, f);
  if (c->out) {
    isv_bytes *b = (isv_bytes *)(void *)c->out;
    b[c->seen].ptr = (const char *)f->s.p;
    b[c->seen].len = f->s.n;
  }
  c->seen++;
  return 0;
}

/* Walk every InferTensorContents (field 5, possibly repeated: merged) of the input message. */
static int walk_contents(input_ctx *c, isv__pb_span input) {
  isv__pb_reader ri = isv__pb_reader_of(input);
  isv__pb_field f;
  while (isv__pb_read_field(&ri, &f) > 0) { /* framing already checked */
    if (f.num != 5) continue;
    isv__pb_reader rc = isv__pb_reader_of(f.s);
    isv__pb_field g = {0};
    int k;
    while ((k = isv__pb_read_field(&rc, &g)) > 0)
      if (contents_field_elems(c, &g)) return c->r->status;
    if (k < 0)
      return isv__request_fail(c->r, ISV_EBADREQ, "malformed protobuf: contents of input '%s'",
                               c->name);
  }
  return 0;
}

static int decode_typed(input_ctx *c, isv__pb_span input, isv_tensor *t) {
  isv_request *r = c->r;
  if (c->want == 0)
    return isv__request_fail(r, ISV_EBADREQ, "input '%s': %s data must be sent in "
                             "raw_input_contents (InferTensorContents has no %s field)", c->name,
                             isv_datatype_name(c->dt), isv_datatype_name(c->dt));
  c->out = NULL;
  c->seen = 0;
  if (walk_contents(c, input)) return r->status;
  if (c->seen != c->count)
    return isv__request_fail(r, ISV_EBADREQ, "input '%s': %s has %zu elements, shape %s needs %zu",
                             c->name, contents_names[c->want], c->seen, shape_text(c), c->count);
  size_t elsize = isv__dt_size(c->dt);
  c->out = isv__arena_alloc(&r->arena, c->count * elsize);
  if (c->out == NULL) return isv__request_fail(r, ISV_ENOMEM, "out of memory");
  c->seen = 0;
  if (walk_contents(c, input)) return r->status;
  t->data = c->out;
  t->byte_size = c->dt == ISV_BYTES ? isv__bytes_total(t->data, c->count) : c->count * elsize;
  return 0;
}

static int decode_raw(input_ctx *c, isv__pb_span raw, isv_tensor *t) {
  isv_request *r = c->r;
  size_t elsize = isv__dt_size(c->dt);
  if (c->dt != ISV_BYTES) {
    size_t bytes = c->count * elsize;
    if (raw.n != bytes)
      return isv__request_fail(r, ISV_EBADREQ, "input '%s': raw_input_contents has %zu bytes, "
                               "shape %s of %s needs %zu", c->name, raw.n, shape_text(c),
                               isv_datatype_name(c->dt), bytes);
    if (((uintptr_t)raw.p % elsize) == 0) {
      t->data = (void *)(uintptr_t)raw.p; /* in place: the buffer outlives the request */
    } else {
      void *d = isv__arena_alloc(&r->arena, bytes); /* misaligned for typed access: copy */
      if (d == NULL) return isv__request_fail(r, ISV_ENOMEM, "out of memory");
      if (bytes) memcpy(d, raw.p, bytes);
      t->data = d;
    }
    t->byte_size = bytes;
    return 0;
  }
  /* BYTES: u32-LE length + bytes per element; the elements reference the buffer. */
  size_t n;
  isv__rawbytes_err e;
  if (isv__rawbytes_count(raw.p, raw.n, &n, &e) != 0) {
    if (e.in_prefix)
      return isv__request_fail(r, ISV_EBADREQ, "input '%s': raw_input_contents ends inside the "
                               "4-byte length of BYTES element %zu", c->name, e.elem);
    return isv__request_fail(r, ISV_EBADREQ, "input '%s': BYTES element %zu in "
                             "raw_input_contents has length %zu but only %zu bytes remain",
                             c->name, e.elem, e.len, e.left);
  }
  if (n != c->count)
    return isv__request_fail(r, ISV_EBADREQ, "input '%s': raw_input_contents holds %zu BYTES "
                             "elements, shape %s needs %zu", c->name, n, shape_text(c), c->count);
  isv_bytes *b = isv__arena_alloc(&r->arena, (n ? n : 1) * sizeof *b);
  if (b == NULL) return isv__request_fail(r, ISV_ENOMEM, "out of memory");
  isv__rawbytes_split(raw.p, n, b);
  t->data = b;
  t->byte_size = isv__bytes_total(b, n);
  return 0;
}

/* The shared memory parameters (core/shm.h) among the parameter entries (field `num`) of an
 * input or requested output message; others are left to the caller. 0 or r failed. */
static int shm_params(isv_request *r, isv__pb_span msg, uint32_t num, const char *what,
                      const char *name, isv__shm_ref *ref) {
  char where[96] = ""; /* made when a parameter is there: not on the path of every request */
  isv__pb_reader rr = isv__pb_reader_of(msg);
  isv__pb_field f;
  while (isv__pb_read_field(&rr, &f) > 0) {
    if (f.num != num || f.wt != ISV__PB_LEN) continue;
    if (where[0] == '\0') snprintf(where, sizeof where, "%s '%.60s'", what, name);
    isv__pb_span key;
    isv_param v;
    if (parse_param_entry(r, f.s, where, &key, &v)) return r->status;
    char err[96];
    if (isv__shm_param(ref, (const char *)key.p, key.n, &v, err, sizeof err) < 0)
      return isv__request_fail(r, ISV_EBADREQ, "%s: %s", where, err);
  }
  return 0;
}

/* Whether an InferInputTensor names a shared memory region (a parameter entry, field 4, with
 * the key "shared_memory_region"); malformed ones are left to parse_input. */
static int input_in_shm(isv__pb_span in) {
  isv__pb_reader rr = isv__pb_reader_of(in);
  isv__pb_field f;
  while (isv__pb_read_field(&rr, &f) > 0) {
    if (f.num != 4 || f.wt != ISV__PB_LEN) continue;
    isv__pb_reader re = isv__pb_reader_of(f.s);
    isv__pb_field g;
    while (isv__pb_read_field(&re, &g) > 0)
      if (g.num == 1 && g.wt == ISV__PB_LEN && ISV__SPAN_IS(g.s.p, g.s.n, "shared_memory_region")) return 1;
  }
  return 0;
}

/* ModelInferRequest.InferInputTensor number `index`, with its raw data when given. */
static int parse_input(isv_request *r, isv__pb_span in, size_t index, const isv__pb_span *raw) {
  const char *name = NULL;
  isv__pb_span dtname = {NULL, 0};
  int have_dt = 0, have_contents = 0, have_params = 0;
  size_t ndim = 0, contents_bytes = 0;
  int64_t dims[ISV__MAX_NDIM]; /* the shape as it comes: one pass over the message */
  isv__pb_reader rr = isv__pb_reader_of(in);
  isv__pb_field f;
  int k;
  while ((k = isv__pb_read_field(&rr, &f)) > 0) {
    switch (f.num) {
    case 1:
      if (get_string(r, &f, "an input name", &name)) return r->status;
      break;
    case 2:
      if (wire_type(r, &f, ISV__PB_LEN, "an input datatype")) return r->status;
      dtname = f.s;
      have_dt = 1;
      break;
    case 3:
      if (f.wt == ISV__PB_VARINT) {
        if (ndim < ISV__MAX_NDIM) dims[ndim] = (int64_t)f.v;
        ndim++;
      } else {
        if (wire_type(r, &f, ISV__PB_LEN, "an input shape")) return r->status;
        isv__pb_reader rs = isv__pb_reader_of(f.s);
        uint64_t v;
        while (rs.p < rs.end) {
          if (isv__pb_read_varint(&rs, &v) != 0) return malformed(r, "an input shape");
          if (ndim < ISV__MAX_NDIM) dims[ndim] = (int64_t)v;
          ndim++;
        }
      }
      break;
    case 4: /* input parameters: shared memory ones are read below, others ignored
             * (binary_data_size is REST-only) */
      if (wire_type(r, &f, ISV__PB_LEN, "an input parameter")) return r->status;
      have_params = 1;
      break;
    case 5:
      if (wire_type(r, &f, ISV__PB_LEN, "input contents")) return r->status;
      have_contents = 1;
      contents_bytes += f.s.n;
      break;
    default: break;
    }
  }
  if (k < 0 || name == NULL) {
    char label[32];
    snprintf(label, sizeof label, "input #%zu", index);
    if (k < 0) return malformed(r, label);
    return isv__request_fail(r, ISV_EBADREQ, "%s has no name", label);
  }
  if (!have_dt || dtname.n == 0)
    return isv__request_fail(r, ISV_EBADREQ, "input '%s' has no datatype", name);
  isv_datatype dt = isv_datatype_from_name((const char *)dtname.p, dtname.n);
  if (dt == ISV_TYPE_INVALID) {
    char b[40];
    return isv__request_fail(r, ISV_EBADREQ, "input '%s' has unknown datatype '%s'", name,
                             printable(b, sizeof b, dtname));
  }
  if (ndim > ISV__MAX_NDIM)
    return isv__request_fail(r, ISV_EBADREQ, "input '%s' has %zu dimensions, at most %d allowed",
                             name, ndim, ISV__MAX_NDIM);
  int64_t *shape = isv__arena_alloc(&r->arena, (ndim ? ndim : 1) * sizeof *shape);
  if (shape == NULL) return isv__request_fail(r, ISV_ENOMEM, "out of memory");
  if (ndim) memcpy(shape, dims, ndim * sizeof *shape);
  for (size_t i = 0; i < ndim; i++)
    if (shape[i] < 0)
      return isv__request_fail(r, ISV_EBADREQ, "input '%s' has a negative dimension %lld in its "
                               "shape", name, (long long)shape[i]);
  input_ctx c;
  memset(&c, 0, sizeof c);
  c.r = r;
  c.name = name;
  c.dt = dt;
  c.shape = shape;
  c.ndim = ndim;
  c.want = contents_field(dt);
  if (isv__shape_count(shape, ndim, isv__dt_size(dt), &c.count, NULL) != 0)
    return isv__request_fail(r, ISV_EBADREQ, "input '%s' has a shape %s whose size overflows",
                             name, shape_text(&c));
  isv_tensor t;
  memset(&t, 0, sizeof t);
  isv__shm_ref shm = {0};
  if (have_params && shm_params(r, in, 4, "input", name, &shm)) return r->status;
  if (isv__shm_used(&shm)) { /* copied from the region (in place when trusted: core/shm.h) */
    if ((raw != NULL && raw->n > 0) || (have_contents && contents_bytes > 0))
      return isv__request_fail(r, ISV_EBADREQ, "input '%s' has shared memory parameters and %s: "
                               "send one", name, have_contents ? "contents" : "a raw_input_contents entry");
    size_t bytes;
    if (isv__shape_count(shape, ndim, isv__dt_size(dt), &c.count, &bytes) != 0)
      return isv__request_fail(r, ISV_EBADREQ, "input '%s' has a shape whose size overflows", name);
    if (isv__shm_input(r, &shm, name, dt, c.count, bytes, &t.data, &t.byte_size))
      return r->status;
  } else if (raw != NULL) {
    if (have_contents && contents_bytes > 0)
      return isv__request_fail(r, ISV_EBADREQ, "input '%s' has both contents and "
                               "raw_input_contents; send its data in exactly one of them", name);
    if (decode_raw(&c, *raw, &t)) return r->status;
  } else if (have_contents) {
    if (decode_typed(&c, in, &t)) return r->status;
  } else if (c.count == 0) {
    t.data = isv__arena_alloc(&r->arena, 0);
    if (t.data == NULL) return isv__request_fail(r, ISV_ENOMEM, "out of memory");
  } else {
    return isv__request_fail(r, ISV_EBADREQ, "input '%s' has no data: set its contents or its "
                             "raw_input_contents entry", name);
  }
  isv_tensor *in_t = isv__request_push_input(r);
  if (in_t == NULL) return r->status;
  in_t->name = name;
  in_t->dt = dt;
  in_t->shape = shape;
  in_t->ndim = ndim;
  in_t->data = t.data;
  in_t->count = c.count;
  in_t->byte_size = t.byte_size;
  in_t->del = ISV_STATIC;
  return 0;
}

/* ModelInferRequest.InferRequestedOutputTensor. */
static int parse_output(isv_request *r, isv__pb_span s, size_t index) {
  const char *name = NULL;
  isv__pb_reader rr = isv__pb_reader_of(s);
  isv__pb_field f;
  int k;
  while ((k = isv__pb_read_field(&rr, &f)) > 0) {
    if (f.num == 1) {
      if (get_string(r, &f, "a requested output name", &name)) return r->status;
    } else if (f.num == 2) {
      if (wire_type(r, &f, ISV__PB_LEN, "a requested output parameter")) return r->status;
    }
  }
  if (k < 0 || name == NULL) {
    char label[48];
    snprintf(label, sizeof label, "requested output #%zu", index);
    if (k < 0) return malformed(r, label);
    return isv__request_fail(r, ISV_EBADREQ, "%s has no name", label);
  }
  isv__req_output *o = isv__request_push_output(r);
  if (o == NULL) return r->status;
  o->name = name;
  char where[96] = ""; /* made when a parameter is there */
  rr = isv__pb_reader_of(s);
  while (isv__pb_read_field(&rr, &f) > 0) {
    if (f.num != 2) continue;
    if (where[0] == '\0') snprintf(where, sizeof where, "output '%.60s'", name);
    isv__pb_span key;
    isv_param v;
    if (parse_param_entry(r, f.s, where, &key, &v)) return r->status;
    if (!ISV__SPAN_IS(key.p, key.n, "classification")) continue; /* binary_data etc.: ignored */
    uint64_t kk;
    if (v.type == ISV_PARAM_INT64 && v.v.i64 >= 0) {
      kk = (uint64_t)v.v.i64;
    } else if (v.type == ISV_PARAM_UINT64) {
      kk = v.v.u64;
    } else {
      return isv__request_fail(r, ISV_EBADREQ, "output '%s': 'classification' must be a "
                               "non-negative int64_param", name);
    }
    if (kk > UINT32_MAX)
      return isv__request_fail(r, ISV_EBADREQ, "output '%s': 'classification' %llu is too large",
                               name, (unsigned long long)kk);
    o->classification = (uint32_t)kk;
  }
  isv__shm_ref shm = {0};
  if (shm_params(r, s, 2, "output", name, &shm)) return r->status;
  if (isv__shm_used(&shm) && isv__shm_output(r, &shm, o)) return r->status;
  return 0;
}

int isv__v2pb_decode_infer_request(isv_request *r, const uint8_t *msg, size_t len) {
  static const uint8_t empty[1] = {0};
  if (msg == NULL) {
    msg = empty;
    len = 0;
  }
  isv__pb_span whole = {msg, len};
  isv__pb_reader rr = isv__pb_reader_of(whole);
  isv__pb_field f;
  int k;
  size_t n_in = 0, n_out = 0, n_raw = 0;
  const char *model_name = "", *version = NULL;
  isv__pb_span first_raw[8]; /* the raw contents as pass 1 meets them, when that few */
  /* Pass 1: framing, the scalar fields, request parameters, and the counts. */
  while ((k = isv__pb_read_field(&rr, &f)) > 0) {
    switch (f.num) {
    case 1:
      if (get_string(r, &f, "model_name", &model_name)) return r->status;
      break;
    case 2:
      if (get_string(r, &f, "model_version", &version)) return r->status;
      if (version[0] == '\0') version = NULL;
      break;
    case 3: {
      const char *id;
      if (get_string(r, &f, "id", &id)) return r->status;
      r->id = id;
      r->has_id = id[0] != '\0';
      break;
    }
    case 4: {
      if (wire_type(r, &f, ISV__PB_LEN, "a request parameter")) return r->status;
      isv__pb_span key;
      isv_param v;
      if (parse_param_entry(r, f.s, "the request", &key, &v)) return r->status;
      if (v.type == 0) break; /* a parameter without a value: nothing to pass on */
      isv__param_entry *e = isv__request_push_param(r, (const char *)key.p, key.n);
      if (e == NULL) return r->status;
      e->val = v;
      break;
    }
    case 5:
    case 6:
    case 7: {
      static const char *const what[] = {"an input", "a requested output", "raw_input_contents"};
      if (wire_type(r, &f, ISV__PB_LEN, what[f.num - 5])) return r->status;
      if (f.num == 5) n_in++;
      else if (f.num == 6) n_out++;
      else {
        if (n_raw < sizeof first_raw / sizeof first_raw[0]) first_raw[n_raw] = f.s;
        n_raw++;
      }
      break;
    }
    default: break;
    }
  }
  if (k < 0) return malformed(r, "the message");
  r->model_name = model_name;
  r->version = version;
  if (n_in == 0) return isv__request_fail(r, ISV_EBADREQ, "request has no inputs");
  if (isv__request_within_limit(r, n_in, "inputs") ||
      isv__request_within_limit(r, n_out, "requested outputs"))
    return r->status;
  if (n_raw > n_in)
    return isv__request_fail(r, ISV_EBADREQ, "request has %zu raw_input_contents but only %zu "
                             "inputs (raw_input_contents[i] holds the data of inputs[i])",
                             n_raw, n_in);
  isv__pb_span *raw = first_raw;
  if (n_raw > sizeof first_raw / sizeof first_raw[0]) {
    raw = isv__arena_alloc(&r->arena, n_raw * sizeof *raw);
    if (raw == NULL) return isv__request_fail(r, ISV_ENOMEM, "out of memory");
    /* Pass 2, for that many: the raw contents, in order. */
    size_t i = 0;
    rr = isv__pb_reader_of(whole);
    while (isv__pb_read_field(&rr, &f) > 0)
      if (f.num == 7) raw[i++] = f.s;
  }
  /* Pass 3: inputs and requested outputs. Inputs in shared memory take no raw entry when the
   * entries are fewer than the inputs (Triton's clients send none for them). */
  size_t ii = 0, oi = 0, ri = 0;
  rr = isv__pb_reader_of(whole);
  while (isv__pb_read_field(&rr, &f) > 0) {
    if (f.num == 5) {
      int skip = n_raw < n_in && input_in_shm(f.s);
      size_t at = n_raw < n_in ? ri : ii;
      if (parse_input(r, f.s, ii, !skip && at < n_raw ? &raw[at] : NULL)) return r->status;
      ii++;
      ri += !skip;
    } else if (f.num == 6) {
      if (parse_output(r, f.s, oi++)) return r->status;
    }
  }
  return 0;
}

/* ============================================================================================
 * Infer response (by hand: header bytes in the arena, tensors by reference)
 * ========================================================================================== */

static size_t packed_shape_size(const int64_t *shape, size_t ndim) {
  size_t n = 0;
  for (size_t i = 0; i < ndim; i++) n += isv__pb_varint_len((uint64_t)shape[i]);
  return n;
}

/* An output written into a shared memory region: its parameters (map field 4) say where,
 * it has no contents and an empty raw_output_contents entry (indices stay aligned). */
static int output_in_shm(const isv_tensor *t) { return t->dest && t->dest->region; }

/* Its parameters as entries: region, byte_size, and offset when not 0. */
static size_t shm_entries(const isv_tensor *t, isv__param_entry e[3]) {
  const isv__out_dest *d = t->dest;
  e[0] = (isv__param_entry){"shared_memory_region",
                            {.type = ISV_PARAM_STRING, .v.s = {d->region, strlen(d->region)}}};
  e[1] = (isv__param_entry){"shared_memory_byte_size",
                            {.type = ISV_PARAM_INT64, .v.i64 = (int64_t)d->used}};
  e[2] = (isv__param_entry){"shared_memory_offset",
                            {.type = ISV_PARAM_INT64, .v.i64 = (int64_t)d->offset}};
  return d->offset ? 3 : 2;
}

static size_t param_entry_size(const isv__param_entry *e);

/* An InferOutputTensor's size; its name's and its datatype name's lengths, which the write
 * needs again, go to *name_len and *dt_len. */
static size_t output_msg_size(const isv_tensor *t, size_t *name_len, size_t *dt_len) {
  const char *dn = isv_datatype_name(t->dt);
  *name_len = strlen(t->name);
  *dt_len = dn ? strlen(dn) : 0;
  size_t n = isv__pb_len_field_size(*name_len) + isv__pb_len_field_size(*dt_len);
  if (t->ndim) n += isv__pb_len_field_size(packed_shape_size(t->shape, t->ndim));
  if (output_in_shm(t)) {
    isv__param_entry e[3];
    size_t k = shm_entries(t, e);
    for (size_t i = 0; i < k; i++) n += isv__pb_len_field_size(param_entry_size(&e[i]));
  }
  return n;
}

/* The bytes of raw_output_contents[i]: the tensor itself, or BYTES serialised into the arena. */
static int output_raw(isv_request *r, const isv_tensor *t, const void **p, size_t *n) {
  if (output_in_shm(t)) {
    *p = NULL;
    *n = 0;
    return 0;
  }
  if (t->dt != ISV_BYTES) {
    *p = t->data;
    *n = t->data ? t->byte_size : 0;
    return 0;
  }
  size_t total = isv__rawbytes_size(t->data, t->count);
  if (total == SIZE_MAX) return ISV_EINTERNAL;
  void *out = isv__arena_alloc(&r->arena, total);
  if (out == NULL) return ISV_ENOMEM;
  isv__rawbytes_write(out, t->data, t->count);
  *p = out;
  *n = total;
  return 0;
}

/* InferParameter message body (oneof parameter_choice) */
static size_t infer_param_size(const isv_param *v) {
  switch (v->type) {
  case ISV_PARAM_BOOL: return 2;
  case ISV_PARAM_INT64: return 1 + isv__pb_varint_len((uint64_t)v->v.i64);
  case ISV_PARAM_UINT64: return 1 + isv__pb_varint_len(v->v.u64);
  case ISV_PARAM_DOUBLE: return 9;
  case ISV_PARAM_STRING: return isv__pb_len_field_size(v->v.s.len);
  }
  return 0;
}

/* map<string, InferParameter> entry body: key 1, value 2 */
static size_t param_entry_size(const isv__param_entry *e) {
  return isv__pb_len_field_size(strlen(e->key)) + isv__pb_len_field_size(infer_param_size(&e->val));
}

static uint8_t *put_param_entry(uint8_t *p, uint32_t num, const isv__param_entry *e) {
  const isv_param *v = &e->val;
  p = isv__pb_put_key(p, num, ISV__PB_LEN);
  p = isv__pb_put_varint(p, param_entry_size(e));
  p = isv__pb_put_bytes(p, 1, e->key, strlen(e->key));
  p = isv__pb_put_key(p, 2, ISV__PB_LEN);
  p = isv__pb_put_varint(p, infer_param_size(v));
  switch (v->type) {
  case ISV_PARAM_BOOL:
    p = isv__pb_put_key(p, 1, ISV__PB_VARINT);
    p = isv__pb_put_varint(p, v->v.b ? 1 : 0);
    break;
  case ISV_PARAM_INT64:
    p = isv__pb_put_key(p, 2, ISV__PB_VARINT);
    p = isv__pb_put_varint(p, (uint64_t)v->v.i64);
    break;
  case ISV_PARAM_STRING: p = isv__pb_put_bytes(p, 3, v->v.s.ptr, v->v.s.len); break;
  case ISV_PARAM_DOUBLE: {
    uint64_t bits;
    memcpy(&bits, &v->v.d, 8);
    p = isv__pb_put_key(p, 4, ISV__PB_I64);
    for (int i = 0; i < 8; i++) *p++ = (uint8_t)(bits >> (8 * i));
    break;
  }
  case ISV_PARAM_UINT64:
    p = isv__pb_put_key(p, 5, ISV__PB_VARINT);
    p = isv__pb_put_varint(p, v->v.u64);
    break;
  }
  return p;
}

static int encode_response(isv_request *r, isv__parts *out, int stream) {
  const char *mn = isv_request_model_name(r), *mv = isv_request_model_version(r);
  if (mn == NULL) mn = "";
  if (mv == NULL) mv = "";
  const char *id = r->has_id && r->id ? r->id : "";
  const size_t mn_len = strlen(mn), mv_len = strlen(mv), id_len = strlen(id);
  size_t n = r->n_outputs;
  const void **data = isv__arena_alloc(&r->arena, (n ? n : 1) * sizeof *data);
  size_t *dlen = isv__arena_alloc(&r->arena, 4 * (n ? n : 1) * sizeof *dlen);
  /* each InferOutputTensor's size, its name's and its datatype name's lengths: for both passes */
  size_t *msz = dlen + (n ? n : 1), *nlen = msz + (n ? n : 1), *dtlen = nlen + (n ? n : 1);
  uv_buf_t *v = isv__arena_alloc(&r->arena, (2 + 2 * n) * sizeof *v);
  if (data == NULL || dlen == NULL || v == NULL) return ISV_ENOMEM;
  /* Sizes: header = fields 1..5 + the key and length of every raw_output_contents entry. */
  size_t head = 0, total;
  if (mn_len) head += isv__pb_len_field_size(mn_len);
  if (mv_len) head += isv__pb_len_field_size(mv_len);
  if (id_len) head += isv__pb_len_field_size(id_len);
  for (size_t i = 0; i < r->n_resp_params; i++)
    head += isv__pb_len_field_size(param_entry_size(&r->resp_params[i]));
  for (size_t i = 0; i < n; i++) {
    msz[i] = output_msg_size(&r->outputs[i], &nlen[i], &dtlen[i]);
    head += isv__pb_len_field_size(msz[i]);
    int rc = output_raw(r, &r->outputs[i], &data[i], &dlen[i]);
    if (rc) return rc;
    head += 1 + isv__pb_varint_len(dlen[i]);
  }
  total = head;
  for (size_t i = 0; i < n; i++) total += dlen[i];
  size_t prefix = stream ? 1 + isv__pb_varint_len(total) : 0;
  uint8_t *h = isv__arena_alloc(&r->arena, prefix + head);
  if (h == NULL) return ISV_ENOMEM;
  uint8_t *p = h;
  if (stream) { /* ModelStreamInferResponse.infer_response (2) */
    p = isv__pb_put_key(p, 2, ISV__PB_LEN);
    p = isv__pb_put_varint(p, total);
  }
  if (mn_len) p = isv__pb_put_bytes(p, 1, mn, mn_len);
  if (mv_len) p = isv__pb_put_bytes(p, 2, mv, mv_len);
  if (id_len) p = isv__pb_put_bytes(p, 3, id, id_len);
  for (size_t i = 0; i < r->n_resp_params; i++) p = put_param_entry(p, 4, &r->resp_params[i]);
  for (size_t i = 0; i < n; i++) {
    const isv_tensor *t = &r->outputs[i];
    const char *dn = isv_datatype_name(t->dt);
    p = isv__pb_put_key(p, 5, ISV__PB_LEN);
    p = isv__pb_put_varint(p, msz[i]);
    p = isv__pb_put_bytes(p, 1, t->name, nlen[i]);
    p = isv__pb_put_bytes(p, 2, dn ? dn : "", dtlen[i]);
    if (t->ndim) {
      p = isv__pb_put_key(p, 3, ISV__PB_LEN);
      p = isv__pb_put_varint(p, packed_shape_size(t->shape, t->ndim));
      for (size_t d = 0; d < t->ndim; d++) p = isv__pb_put_varint(p, (uint64_t)t->shape[d]);
    }
    if (output_in_shm(t)) {
      isv__param_entry e[3];
      size_t k = shm_entries(t, e);
      for (size_t j = 0; j < k; j++) p = put_param_entry(p, 4, &e[j]);
    }
  }
  size_t nv = 0;
  uint8_t *seg = h;
  for (size_t i = 0; i < n; i++) {
    p = isv__pb_put_key(p, 6, ISV__PB_LEN);
    p = isv__pb_put_varint(p, dlen[i]);
    if (dlen[i] == 0) continue;
    v[nv++] = uv_buf_init((char *)seg, (unsigned)(p - seg));
    v[nv++] = uv_buf_init((char *)(uintptr_t)data[i], 0);
    v[nv - 1].len = dlen[i]; /* uv_buf_t.len is size_t on Unix: no 4 GiB cut */
    seg = p;
  }
  if (p > seg) v[nv++] = uv_buf_init((char *)seg, (unsigned)(p - seg));
  out->v = v;
  out->n = nv;
  out->total = prefix + total;
  return 0;
}

int isv__v2pb_encode_infer_response(isv_request *r, isv__parts *out) {
  return encode_response(r, out, 0);
}

/* ModelStreamInfer, Triton's decoupled semantics: a decoupled model's responses as they come;
 * its completion is a last response only when it carries outputs, or when the client asked
 * for an empty final one ("triton_enable_empty_final_response"), which also marks every
 * response with "triton_final_response". */
int isv__v2pb_encode_stream_response(isv_request *r, isv__parts *out) {
  const isv_request *req = r->parent ? r->parent : r;
  const isv_param *p = isv_request_param(req, "triton_enable_empty_final_response");
  int flag = p && p->type == ISV_PARAM_BOOL && p->v.b;
  if (!flag && r->parent == NULL && r->n_outputs == 0 && r->model && r->model->cfg->decoupled) {
    out->n = out->total = 0;
    return 0;
  }
  if (flag) {
    isv_param fin = {.type = ISV_PARAM_BOOL, .v.b = r->parent == NULL};
    int rc = isv__request_add_resp_param(r, "triton_final_response", &fin);
    if (rc) return rc;
  }
  return encode_response(r, out, 1);
}

/* ============================================================================================
 * Small messages through nanopb
 * ========================================================================================== */

int isv__v2pb_encode_stream_error(int status, const char *message, isv__buf *out) {
  (void)status; /* ModelStreamInferResponse has only the message */
  inference_ModelStreamInferResponse m = inference_ModelStreamInferResponse_init_zero;
  isv__nanopb_cstr(&m.error_message, message);
  return isv__nanopb_encode(inference_ModelStreamInferResponse_fields, &m, out);
}

int isv__v2pb_encode_bool1(int v, isv__buf *out) {
  inference_ServerLiveResponse m = inference_ServerLiveResponse_init_zero;
  m.live = v != 0;
  return isv__nanopb_encode(inference_ServerLiveResponse_fields, &m, out);
}

typedef struct strlist {
  const char *const *v;
  size_t n;
} strlist;

static bool enc_strlist(pb_ostream_t *s, const pb_field_t *f, void *const *arg) {
  const strlist *l = *arg;
  for (size_t i = 0; i < l->n; i++) {
    const char *str = l->v[i] ? l->v[i] : "";
    if (!pb_encode_tag_for_field(s, f) ||
        !pb_encode_string(s, (const pb_byte_t *)str, strlen(str)))
      return false;
  }
  return true;
}

int isv__v2pb_encode_server_metadata(const char *name, const char *version,
                                     const char *const *extensions, size_t n, isv__buf *out) {
  inference_ServerMetadataResponse m = inference_ServerMetadataResponse_init_zero;
  strlist l = {extensions, extensions ? n : 0};
  isv__nanopb_cstr(&m.name, name);
  isv__nanopb_cstr(&m.version, version);
  m.extensions.funcs.encode = enc_strlist;
  m.extensions.arg = &l;
  return isv__nanopb_encode(inference_ServerMetadataResponse_fields, &m, out);
}

/* ModelMetadataResponse */

typedef struct io_list {
  const isv__io *io;
  size_t n;
  int batch; /* max_batch > 0: a leading -1 */
} io_list;

typedef struct shape_arg {
  const isv__io *io;
  int batch;
} shape_arg;

static bool enc_shape(pb_ostream_t *s, const pb_field_t *f, void *const *arg) {
  const shape_arg *a = *arg;
  size_t ndim = a->io->ndim + (a->batch ? 1 : 0);
  if (ndim == 0) return true;
  size_t sz = 0;
  for (size_t i = 0; i < ndim; i++) {
    int64_t d = a->batch ? (i == 0 ? -1 : a->io->shape[i - 1]) : a->io->shape[i];
    sz += isv__pb_varint_len((uint64_t)d);
  }
  if (!pb_encode_tag(s, PB_WT_STRING, f->tag) || !pb_encode_varint(s, sz)) return false;
  for (size_t i = 0; i < ndim; i++) {
    int64_t d = a->batch ? (i == 0 ? -1 : a->io->shape[i - 1]) : a->io->shape[i];
    if (!pb_encode_varint(s, (uint64_t)d)) return false;
  }
  return true;
}

static bool enc_io_list(pb_ostream_t *s, const pb_field_t *f, void *const *arg) {
  const io_list *l = *arg;
  for (size_t i = 0; i < l->n; i++) {
    inference_ModelMetadataResponse_TensorMetadata tm =
        inference_ModelMetadataResponse_TensorMetadata_init_zero;
    shape_arg sa = {&l->io[i], l->batch};
    isv__nanopb_cstr(&tm.name, l->io[i].name);
    isv__nanopb_cstr(&tm.datatype, isv_datatype_name(l->io[i].dt));
    tm.shape.funcs.encode = enc_shape;
    tm.shape.arg = &sa;
    if (!pb_encode_tag_for_field(s, f) ||
        !pb_encode_submessage(s, inference_ModelMetadataResponse_TensorMetadata_fields, &tm))
      return false;
  }
  return true;
}

static bool enc_versions(pb_ostream_t *s, const pb_field_t *f, void *const *arg) {
  const isv_model *m = *arg;
  for (const isv_model *v = m->entry ? m->entry->versions : m; v; v = v->next) {
    if (!pb_encode_tag_for_field(s, f) ||
        !pb_encode_string(s, (const pb_byte_t *)v->version, strlen(v->version)))
      return false;
    if (m->entry == NULL) break;
  }
  return true;
}

int isv__v2pb_encode_model_metadata(const isv_model *m, isv__buf *out) {
  const isv_model_config *c = m->cfg;
  inference_ModelMetadataResponse msg = inference_ModelMetadataResponse_init_zero;
  io_list in = {c->inputs, c->n_inputs, c->max_batch > 0};
  io_list outs = {c->outputs, c->n_outputs, c->max_batch > 0};
  isv__nanopb_cstr(&msg.name, c->name);
  isv__nanopb_cstr(&msg.platform, c->platform);
  msg.versions.funcs.encode = enc_versions;
  msg.versions.arg = (void *)(uintptr_t)m;
  msg.inputs.funcs.encode = enc_io_list;
  msg.inputs.arg = &in;
  msg.outputs.funcs.encode = enc_io_list;
  msg.outputs.arg = &outs;
  return isv__nanopb_encode(inference_ModelMetadataResponse_fields, &msg, out);
}

/* ModelStatisticsResponse: written field by field (no nanopb struct: nested messages of
 * numbers, each built in a scratch buffer and appended with its length). */

static void put_u64(isv__buf *b, uint32_t num, uint64_t v) {
  if (v == 0) return; /* proto3: the default is not sent */
  uint8_t tmp[16];
  uint8_t *p = isv__pb_put_key(tmp, num, ISV__PB_VARINT);
  p = isv__pb_put_varint(p, v);
  isv__buf_append(b, tmp, (size_t)(p - tmp));
}

static void put_len(isv__buf *b, uint32_t num, const void *data, size_t n) {
  uint8_t tmp[16];
  uint8_t *p = isv__pb_put_key(tmp, num, ISV__PB_LEN);
  p = isv__pb_put_varint(p, n);
  isv__buf_append(b, tmp, (size_t)(p - tmp));
  isv__buf_append(b, data, n);
}

static void put_duration(isv__buf *b, uint32_t num, isv__stat_duration d) {
  isv__buf m;
  isv__buf_init(&m, b->mem);
  put_u64(&m, 1, d.count);
  put_u64(&m, 2, d.ns);
  put_len(b, num, m.data, m.len);
  if (m.failed) b->failed = 1;
  isv__buf_free(&m);
}

static void put_model_statistics(isv__buf *b, const isv_model *m) {
  isv__triton_stats t;
  isv__stats_snap snap; /* every member's numbers when the server is in a group */
  isv__model_stats(m, &snap);
  isv__stats_triton(&snap, &t);
  isv__buf s, is, bs;
  isv__buf_init(&s, b->mem);
  isv__buf_init(&is, b->mem);
  put_len(&s, 1, m->cfg->name, strlen(m->cfg->name));
  put_len(&s, 2, m->version, strlen(m->version));
  put_u64(&s, 3, t.last_inference_ms);
  put_u64(&s, 4, t.inference_count);
  put_u64(&s, 5, t.execution_count);
  put_duration(&is, 1, t.success);
  put_duration(&is, 2, t.fail);
  put_duration(&is, 3, t.queue);
  put_duration(&is, 4, t.compute_input);
  put_duration(&is, 5, t.compute_infer);
  put_duration(&is, 6, t.compute_output);
  put_duration(&is, 7, t.cache_hit);
  put_duration(&is, 8, t.cache_miss);
  put_len(&s, 6, is.data, is.len);
  uint32_t max = m->cfg->max_batch ? m->cfg->max_batch : 1;
  for (uint32_t k = 1; k <= max; k++) {
    uint64_t c = isv__model_batch_execs(m, k);
    if (c == 0) continue;
    isv__buf_init(&bs, b->mem);
    put_u64(&bs, 1, k);
    put_duration(&bs, 2, (isv__stat_duration){c, 0});
    put_duration(&bs, 3, (isv__stat_duration){c, 0});
    put_duration(&bs, 4, (isv__stat_duration){c, 0});
    put_len(&s, 7, bs.data, bs.len);
    if (bs.failed) s.failed = 1;
    isv__buf_free(&bs);
  }
  put_len(b, 1, s.data, s.len);
  if (s.failed || is.failed) b->failed = 1;
  isv__buf_free(&s);
  isv__buf_free(&is);
}

/* A packed repeated int64 field (empty: nothing). */
static void put_packed(isv__buf *b, uint32_t num, const int64_t *v, size_t n) {
  if (n == 0) return;
  isv__buf p;
  isv__buf_init(&p, b->mem);
  for (size_t i = 0; i < n; i++) {
    uint8_t tmp[10];
    uint8_t *e = isv__pb_put_varint(tmp, (uint64_t)v[i]);
    isv__buf_append(&p, tmp, (size_t)(e - tmp));
  }
  put_len(b, num, p.data, p.len);
  if (p.failed) b->failed = 1;
  isv__buf_free(&p);
}

/* ModelInput {name 1, data_type 2, dims 4} / ModelOutput {name 1, data_type 2, dims 3}. */
static void put_config_io(isv__buf *b, uint32_t num, const isv__io *io, size_t n, int input) {
  for (size_t i = 0; i < n; i++) {
    isv__buf t;
    isv__buf_init(&t, b->mem);
    put_len(&t, 1, io[i].name, strlen(io[i].name));
    put_u64(&t, 2, (uint64_t)isv__dt_triton_number(io[i].dt));
    put_packed(&t, input ? 4 : 3, io[i].shape, io[i].ndim);
    put_len(b, num, t.data, t.len);
    if (t.failed) b->failed = 1;
    isv__buf_free(&t);
  }
}

/* ModelQueuePolicy {timeout_action 1, default_timeout_microseconds 2, allow_timeout_override 3,
 * max_queue_size 4} as field `num` of b (zeros left out, proto3's way). */
static void put_queue_policy(isv__buf *b, uint32_t num, const isv_queue_policy *p) {
  isv__buf t;
  isv__buf_init(&t, b->mem);
  if (p->timeout_action) put_u64(&t, 1, (uint64_t)p->timeout_action);
  if (p->default_timeout_us) put_u64(&t, 2, p->default_timeout_us);
  if (p->allow_timeout_override) put_u64(&t, 3, 1);
  if (p->max_queue_size) put_u64(&t, 4, p->max_queue_size);
  put_len(b, num, t.data, t.len);
  if (t.failed) b->failed = 1;
  isv__buf_free(&t);
}

/* ModelDynamicBatching's priority_levels 4, default_priority_level 5, default_queue_policy 6
 * and priority_queue_policy 7 (map<uint64, ModelQueuePolicy>: entries {key 1, value 2}). */
static void put_priorities(isv__buf *x, const isv_model_config *c) {
  if (c->priority_levels) put_u64(x, 4, c->priority_levels);
  if (c->default_priority) put_u64(x, 5, c->default_priority);
  put_queue_policy(x, 6, &c->default_policy);
  for (uint32_t level = 1; level <= c->priority_levels; level++) {
    const isv_queue_policy *p = isv__config_level_policy(c, level);
    if (p == &c->default_policy) continue;
    isv__buf e;
    isv__buf_init(&e, x->mem);
    put_u64(&e, 1, level);
    put_queue_policy(&e, 2, p);
    put_len(x, 7, e.data, e.len);
    if (e.failed) x->failed = 1;
    isv__buf_free(&e);
  }
}

/* A map<string, string> field `num`: entries {key 1, value 2}. */
static void put_str_map(isv__buf *b, uint32_t num, char *const *keys, char *const *vals,
                        size_t n) {
  for (size_t i = 0; i < n; i++) {
    isv__buf e;
    isv__buf_init(&e, b->mem);
    put_len(&e, 1, keys[i], strlen(keys[i]));
    put_len(&e, 2, vals[i], strlen(vals[i]));
    put_len(b, num, e.data, e.len);
    if (e.failed) b->failed = 1;
    isv__buf_free(&e);
  }
}

/* ModelConfig.ensemble_scheduling 15: ModelEnsembling {step 1: Step {model_name 1,
 * model_version 2 (int64; -1 the latest), input_map 3, output_map 4}}. */
static void put_ensemble(isv__buf *k, const struct isv__ens_cfg *e) {
  isv__buf x;
  isv__buf_init(&x, k->mem);
  for (size_t i = 0; i < e->n_steps; i++) {
    const isv__ens_step *s = &e->steps[i];
    isv__buf t;
    isv__buf_init(&t, k->mem);
    put_len(&t, 1, s->model, strlen(s->model));
    put_u64(&t, 2, s->version ? strtoull(s->version, NULL, 10) : (uint64_t)-1); /* int64 -1 */
    put_str_map(&t, 3, s->in_keys, s->in_vals, s->n_in);
    put_str_map(&t, 4, s->out_keys, s->out_vals, s->n_out);
    put_len(&x, 1, t.data, t.len);
    if (t.failed) x.failed = 1;
    isv__buf_free(&t);
  }
  put_len(k, 15, x.data, x.len);
  if (x.failed) k->failed = 1;
  isv__buf_free(&x);
}

/* ModelWarmup {name 1, batch_size 2, inputs 3 (map<string, Input>: entries {key 1, value 2}),
 * count 4}; Input {data_type 1, dims 2, zero_data 3 | random_data 4 | input_data_file 5} (a
 * oneof: its member is sent even when false; the file: the input's name, as REST shows it). */
static void put_warmups(isv__buf *k, const isv_model_config *c) {
  for (size_t i = 0; i < c->n_warmups; i++) {
    const isv__warmup *w = &c->warmups[i];
    isv__buf s;
    isv__buf_init(&s, k->mem);
    put_len(&s, 1, w->name, strlen(w->name));
    put_u64(&s, 2, w->batch_size);
    for (size_t j = 0; j < w->n_inputs; j++) {
      const isv__warmup_input *in = &w->inputs[j];
      isv__buf e, v;
      isv__buf_init(&e, k->mem);
      isv__buf_init(&v, k->mem);
      put_u64(&v, 1, (uint64_t)isv__dt_triton_number(in->dt));
      put_packed(&v, 2, in->dims, in->ndim);
      if (in->fill == ISV_WARMUP_DATA) {
        put_len(&v, 5, in->name, strlen(in->name));
      } else {
        uint8_t tmp[4];
        uint8_t *p = isv__pb_put_key(tmp, in->fill == ISV_WARMUP_ZERO ? 3 : 4, ISV__PB_VARINT);
        *p++ = 1;
        isv__buf_append(&v, tmp, (size_t)(p - tmp));
      }
      put_len(&e, 1, in->name, strlen(in->name));
      put_len(&e, 2, v.data, v.len);
      put_len(&s, 3, e.data, e.len);
      if (e.failed || v.failed) s.failed = 1;
      isv__buf_free(&e);
      isv__buf_free(&v);
    }
    put_u64(&s, 4, w->count);
    put_len(k, 16, s.data, s.len);
    if (s.failed) k->failed = 1;
    isv__buf_free(&s);
  }
}

int isv__v2pb_encode_model_config(const isv_model *m, isv__buf *out) {
  const isv_model_config *c = m->cfg;
  isv__buf k, x;
  isv__buf_init(&k, out->mem);
  put_len(&k, 1, c->name, strlen(c->name));
  put_len(&k, 2, c->platform, strlen(c->platform));
  put_u64(&k, 4, c->max_batch);
  put_config_io(&k, 5, c->inputs, c->n_inputs, 1);
  put_config_io(&k, 6, c->outputs, c->n_outputs, 0);
  isv__buf_init(&x, out->mem); /* instance_group {name 1, count 2, kind 4 = KIND_CPU} */
  if (c->ensemble == NULL) { /* an ensemble has none (Triton's): its steps' models do */
    put_len(&x, 1, c->name, strlen(c->name));
    put_u64(&x, 2, c->instances);
    put_u64(&x, 4, 2);
    put_len(&k, 7, x.data, x.len);
    x.len = 0;
  }
  if (c->ensemble) {
    put_ensemble(&k, c->ensemble);
  } else if (c->batching || c->queue_policies) { /* dynamic_batching {preferred_batch_size 1,
                                          * max_queue_delay 2, priorities 3-7} */
    isv__buf p;
    isv__buf_init(&p, out->mem);
    for (size_t i = 0; i < c->n_preferred; i++) {
      uint8_t tmp[10];
      uint8_t *e = isv__pb_put_varint(tmp, c->preferred[i]);
      isv__buf_append(&p, tmp, (size_t)(e - tmp));
    }
    if (p.len) put_len(&x, 1, p.data, p.len);
    if (p.failed) x.failed = 1;
    isv__buf_free(&p);
    put_u64(&x, 2, c->batch_delay_us);
    if (c->queue_policies) put_priorities(&x, c);
    put_len(&k, 11, x.data, x.len);
  } else if (c->sequences) { /* sequence_batching {max_sequence_idle 1, direct 3 {}} */
    put_u64(&x, 1, c->seq_idle_us);
    put_len(&x, 3, "", 0);
    put_len(&k, 13, x.data, x.len);
  }
  x.len = 0;
  put_u64(&x, 1, c->decoupled != 0); /* model_transaction_policy {decoupled 1} */
  put_len(&k, 19, x.data, x.len);
  put_warmups(&k, c);
  x.len = 0;
  put_u64(&x, 1, c->response_cache != 0); /* response_cache {enable 1} */
  put_len(&k, 24, x.data, x.len);
  put_len(out, 1, k.data, k.len); /* ModelConfigResponse {config 1} */
  if (k.failed || x.failed) out->failed = 1;
  isv__buf_free(&k);
  isv__buf_free(&x);
  return out->failed ? ISV_ENOMEM : 0;
}

int isv__v2pb_encode_model_statistics(const isv_model *const *models, size_t n, isv__buf *out) {
  for (size_t i = 0; i < n; i++) put_model_statistics(out, models[i]);
  return out->failed ? ISV_ENOMEM : 0;
}

/* Decoding small messages: string callbacks copy into the caller's arrays. */

int isv__v2pb_decode_model_ref(const uint8_t *msg, size_t len, char *name, size_t name_cap,
                               char *version, size_t version_cap) {
  if (name == NULL || version == NULL || name_cap == 0 || version_cap == 0) return -1;
  name[0] = '\0';
  version[0] = '\0';
  /* ModelReadyRequest and ModelMetadataRequest have the same fields */
  inference_ModelReadyRequest m = inference_ModelReadyRequest_init_zero;
  isv__nanopb_cstr_dst dn = {name, name_cap}, dv = {version, version_cap};
  isv__nanopb_read_cstr(&m.name, &dn);
  isv__nanopb_read_cstr(&m.version, &dv);
  pb_istream_t s = pb_istream_from_buffer(msg ? msg : (const pb_byte_t *)"", msg ? len : 0);
  return pb_decode(&s, inference_ModelReadyRequest_fields, &m) ? 0 : -1;
}
