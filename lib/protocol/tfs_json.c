/* TensorFlow Serving REST JSON (see tfs_json.h). */
#include "protocol/tfs_json.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "codec/base64.h"
#include "codec/datatype.h"
#include "codec/json_reader.h"
#include "codec/json_writer.h"
#include "codec/utf8.h"
#include "core/registry.h"

/* ---- decoding ---------------------------------------------------------------------------- */

/* One of the model's inputs while a body is decoded. */
typedef struct in_state {
  const isv__io *io;
  const char *alias;            /* the name it goes by in the body (the signature's) */
  size_t elsize;                /* bytes per element (an isv_bytes for BYTES) */
  int known;                    /* the shape of one instance's value is learned */
  int64_t inner[ISV__MAX_NDIM]; /* ... that shape (row format), or the tensor's (columnar) */
  size_t inner_ndim;
  size_t inner_count;
  char *data;     /* n instances x inner_count elements, once known */
  isv__buf first; /* the first value's elements while its shape is learned */
  int seen;       /* named in the instance being read */
} in_state;

static int bad(isv_request *r, const char *where, const char *fmt, const char *detail) {
  char msg[400];
  snprintf(msg, sizeof msg, fmt, detail);
  return isv__request_fail(r, ISV_EBADREQ, "%s: %s", where, msg);
}

static int json_bad(isv_request *r, const isv__json_reader *rd, const char *where) {
  const char *e = isv__json_error(rd, NULL);
  return isv__request_fail(r, ISV_EBADREQ, "%s: %s", where, e ? e : "malformed JSON");
}

/* What a top-level member other than the ones scan_body looks for becomes (Vertex: a
 * parameter); NULL: it is ignored. */
typedef int (*member_fn)(isv_request *r, isv__json_reader *rd, const isv__json_token *key,
                         const isv__json_token *v);

/* The body's top-level object: offs[i] the offset of the value of keys[i] (SIZE_MAX when
 * absent), *sig_name the "signature_name" string (type NUMBER... left ERROR when absent), every
 * other member handed to `other`. 0, or r failed. */
static int scan_body(isv_request *r, char *body, size_t len, unsigned depth,
                     const char *const *keys, size_t *offs, size_t n_keys, member_fn other,
                     isv__json_token *sig_name) {
  sig_name->type = ISV__JSON_ERROR;
  isv__json_reader rd;
  isv__json_token t;
  for (size_t i = 0; i < n_keys; i++) offs[i] = SIZE_MAX;
  isv__json_reader_init(&rd, body, len, depth);
  if (isv__json_next(&rd, &t) != ISV__JSON_OBJECT_BEGIN)
    return rd.failed ? json_bad(r, &rd, "body")
                     : isv__request_fail(r, ISV_EBADREQ, "the body must be a JSON object");
  for (;;) {
    isv__json_type ty = isv__json_next(&rd, &t);
    if (ty == ISV__JSON_OBJECT_END) break;
    isv__json_token v;
    if (ty != ISV__JSON_KEY || isv__json_next(&rd, &v) == ISV__JSON_ERROR)
      return json_bad(r, &rd, "body");
    if (ISV__TOKEN_IS(&t, "signature_name")) {
      if (v.type != ISV__JSON_STRING)
        return isv__request_fail(r, ISV_EBADREQ, "\"signature_name\" must be a string");
      *sig_name = v;
      continue;
    }
    size_t i = 0;
    while (i < n_keys && !isv__span_eq(t.ptr, t.len, keys[i])) i++;
    if (i < n_keys) offs[i] = v.offset;
    if (i == n_keys && other) {
      if (other(r, &rd, &t, &v)) return r->status;
    } else if (isv__json_skip(&rd, &v, NULL) != 0) {
      return json_bad(r, &rd, "body");
    }
  }
  return isv__json_next(&rd, &t) == ISV__JSON_EOF ? 0 : json_bad(r, &rd, "body");
}

/* *n: the elements of the list `what` at off, counted by skipping them (which leaves the buffer
 * as it is). 0, or r failed — also for an empty list. */
static int count_list(isv_request *r, char *body, size_t len, size_t off, unsigned depth,
                      const char *what, size_t *n) {
  isv__json_reader rd;
  isv__json_token t;
  isv__json_reader_init(&rd, body + off, len - off, depth);
  if (isv__json_next(&rd, &t) != ISV__JSON_ARRAY_BEGIN)
    return isv__request_fail(r, ISV_EBADREQ, "\"%s\" must be a list", what);
  *n = 0;
  for (;;) {
    isv__json_type ty = isv__json_next(&rd, &t);
    if (ty == ISV__JSON_ARRAY_END) break;
    if (ty == ISV__JSON_ERROR || isv__json_skip(&rd, &t, NULL) != 0) return json_bad(r, &rd, what);
    ++*n;
  }
  return *n ? 0 : isv__request_fail(r, ISV_EBADREQ, "\"%s\" is an empty list", what);
}

/* {"b64": "..."} after its OBJECT_BEGIN and its key were read: decoded in place. */
static int b64_leaf(isv_request *r, isv__json_reader *rd, const char *where, isv_bytes *out) {
  isv__json_token t;
  if (isv__json_next(rd, &t) != ISV__JSON_STRING)
    return rd->failed ? json_bad(r, rd, where) : bad(r, where, "%s", "\"b64\" must be a string");
  size_t n = isv__base64_decode(t.ptr, t.len, (unsigned char *)(uintptr_t)t.ptr);
  if (n == (size_t)-1) return bad(r, where, "%s", "invalid base64 in {\"b64\": ...}");
  out->ptr = t.ptr;
  out->len = n;
  if (isv__json_next(rd, &t) != ISV__JSON_OBJECT_END)
    return rd->failed ? json_bad(r, rd, where)
                      : bad(r, where, "%s", "a binary value is {\"b64\": \"...\"} and nothing else");
  return 0;
}

/* Convert the value whose first token `tok` was just read (b64_open: an OBJECT_BEGIN whose
 * "b64" key was read too) into s: instance `inst` of a known shape, or — while s is not
 * known — appended to s->first with its shape learned. Nested lists must be rectangular. */
static int walk_value(isv_request *r, isv__json_reader *rd, isv__json_token t, int b64_open,
                      in_state *s, size_t inst, const char *where) {
  const isv_datatype dt = s->io->dt;
  int64_t learned[ISV__MAX_NDIM];
  int64_t *dims = s->known ? s->inner : learned;
  size_t cnt[ISV__MAX_NDIM];
  int leaf_depth = s->known ? (int)s->inner_ndim : -1;
  size_t d = 0, e = 0;
  if (!s->known)
    for (size_t i = 0; i < ISV__MAX_NDIM; i++) learned[i] = -1;
  for (;;) {
    switch (t.type) {
    case ISV__JSON_ARRAY_BEGIN:
      if (leaf_depth >= 0 && (int)d >= leaf_depth)
        return bad(r, where, "%s", "ragged: a list where the first instance has a value");
      if (d == ISV__MAX_NDIM) return bad(r, where, "lists nested deeper than %s", "32");
      if (d > 0) cnt[d - 1]++;
      cnt[d++] = 0;
      break;
    case ISV__JSON_ARRAY_END: {
      size_t c = cnt[--d];
      if (dims[d] < 0) {
        dims[d] = (int64_t)c;
      } else if (dims[d] != (int64_t)c) {
        char det[96];
        snprintf(det, sizeof det, "a list of %zu where %lld were expected at depth %zu", c,
                 (long long)dims[d], d + 1);
        return bad(r, where, "ragged: %s", det);
      }
      if (c == 0 && leaf_depth < 0) leaf_depth = (int)d + 1;
      break;
    }
    case ISV__JSON_OBJECT_BEGIN:
    case ISV__JSON_STRING:
    case ISV__JSON_NUMBER:
    case ISV__JSON_TRUE:
    case ISV__JSON_FALSE:
    case ISV__JSON_NULL: {
      if (leaf_depth < 0) leaf_depth = (int)d;
      else if ((int)d != leaf_depth)
        return bad(r, where, "%s", "ragged: a value where the first instance has a list");
      if (d > 0) cnt[d - 1]++;
      char *base;
      if (s->known) {
        if (e >= s->inner_count) return bad(r, where, "%s", "ragged: more values than the first instance");
        base = s->data + inst * s->inner_count * s->elsize;
      } else {
        if (isv__buf_reserve(&s->first, s->elsize) == NULL)
          return isv__request_fail(r, ISV_ENOMEM, "out of memory");
        s->first.len += s->elsize;
        base = s->first.data;
      }
      if (t.type == ISV__JSON_OBJECT_BEGIN) {
        if (dt != ISV_BYTES) {
          char det[64];
          snprintf(det, sizeof det, "an object where a %s value was expected",
                   isv_datatype_name(dt));
          return bad(r, where, "%s", det);
        }
        isv__json_token k;
        if (!b64_open &&
            (isv__json_next(rd, &k) != ISV__JSON_KEY || k.len != 3 || memcmp(k.ptr, "b64", 3) != 0))
          return rd->failed ? json_bad(r, rd, where)
                            : bad(r, where, "%s", "an object value must be {\"b64\": \"...\"}");
        b64_open = 0;
        if (b64_leaf(r, rd, where, (isv_bytes *)(void *)base + e)) return r->status;
      } else if (isv__json_read_element(rd, &t, dt, base, e) != 0) {
        return json_bad(r, rd, where);
      }
      e++;
      break;
    }
    default:
      return rd->failed ? json_bad(r, rd, where) : bad(r, where, "%s", "expected a value");
    }
    if (d == 0) break; /* the value is complete */
    if (isv__json_next(rd, &t) == ISV__JSON_ERROR) return json_bad(r, rd, where);
  }
  if (s->known) {
    if (e != s->inner_count) return bad(r, where, "%s", "ragged: fewer values than the first instance");
    return 0;
  }
  s->inner_ndim = (size_t)leaf_depth;
  s->inner_count = 1;
  for (size_t i = 0; i < s->inner_ndim; i++) {
    s->inner[i] = learned[i];
    s->inner_count *= (size_t)learned[i];
  }
  return 0;
}

/* Instance 0 (or the one columnar value) has been read: room for all n, its elements first. */
/* Room in r's arena for n instances of s's (known) shape. */
static int room_for(isv_request *r, in_state *s, size_t n) {
  s->known = 1;
  if (s->inner_count && n > SIZE_MAX / s->inner_count / s->elsize)
    return isv__request_fail(r, ISV_EBADREQ, "input '%s' is too large", s->io->name);
  s->data = isv__arena_alloc(&r->arena, n * s->inner_count * s->elsize);
  return s->data ? 0 : isv__request_fail(r, ISV_ENOMEM, "out of memory");
}

static int settle_shape(isv_request *r, in_state *s, size_t n) {
  if (n == 1) { /* the learned buffer is the tensor: it goes with the request */
    isv__owned *o = isv__arena_alloc(&r->arena, sizeof *o);
    if (o == NULL) return isv__request_fail(r, ISV_ENOMEM, "out of memory");
    o->p = s->first.data; /* NULL for no elements: freeing it is a no-op */
    o->del = isv__free;
    o->next = r->owned;
    r->owned = o;
    s->known = 1;
    s->data = s->first.data;
    isv__buf_init(&s->first, s->first.mem);
    return 0;
  }
  if (room_for(r, s, n)) return r->status;
  if (s->first.len) memcpy(s->data, s->first.data, s->first.len);
  isv__buf_free(&s->first);
  return 0;
}

/* The decoded inputs join the request: shape [n] + inner (row) or inner (columnar). */
static int push_inputs(isv_request *r, in_state *st, size_t n_in, size_t n, int row) {
  for (size_t k = 0; k < n_in; k++) {
    in_state *s = &st[k];
    size_t ndim = s->inner_ndim + (row ? 1 : 0);
    if (ndim > ISV__MAX_NDIM)
      return isv__request_fail(r, ISV_EBADREQ, "input '%s' has more than %d dimensions",
                               s->io->name, ISV__MAX_NDIM);
    int64_t *shape = isv__arena_alloc(&r->arena, (ndim ? ndim : 1) * sizeof *shape);
    isv_tensor *in = shape ? isv__request_push_input(r) : NULL;
    if (in == NULL) return r->status ? r->status : isv__request_fail(r, ISV_ENOMEM, "out of memory");
    if (row) shape[0] = (int64_t)n;
    memcpy(shape + (row ? 1 : 0), s->inner, s->inner_ndim * sizeof *shape);
    in->name = s->io->name;
    in->dt = s->io->dt;
    in->shape = shape;
    in->ndim = ndim;
    in->data = s->data;
    in->count = (row ? n : 1) * s->inner_count;
    if (s->io->dt == ISV_BYTES) {
      in->byte_size = 0;
      for (size_t i = 0; i < in->count; i++) in->byte_size += ((isv_bytes *)(void *)s->data)[i].len;
    } else {
      in->byte_size = in->count * s->elsize;
    }
  }
  return 0;
}

static int find_input(const in_state *st, size_t n_in, const char *name, size_t len) {
  for (size_t k = 0; k < n_in; k++)
    if (strlen(st[k].alias) == len && memcmp(st[k].alias, name, len) == 0) return (int)k;
  return -1;
}

/* An object of the inputs by name (a row instance, or the columnar "inputs"), its OBJECT_BEGIN
 * read — and its first key too when key is not NULL. Every input exactly once. */
static int named_inputs(isv_request *r, isv__json_reader *rd, in_state *st, size_t n_in,
                        size_t inst, size_t n, const char *what, const isv__json_token *key) {
  for (size_t k = 0; k < n_in; k++) st[k].seen = 0;
  char where[200];
  for (;;) {
    isv__json_token t;
    if (key) {
      t = *key;
      key = NULL;
    } else {
      isv__json_type ty = isv__json_next(rd, &t);
      if (ty == ISV__JSON_OBJECT_END) break;
      if (ty != ISV__JSON_KEY) return json_bad(r, rd, what);
    }
    int k = find_input(st, n_in, t.ptr, t.len);
    snprintf(where, sizeof where, "%s: input '%.*s'", what, (int)(t.len > 64 ? 64 : t.len), t.ptr);
    if (k < 0) return bad(r, where, "%s", "the model has no input of that name");
    if (st[k].seen) return bad(r, where, "%s", "given twice");
    st[k].seen = 1;
    if (isv__json_next(rd, &t) == ISV__JSON_ERROR) return json_bad(r, rd, where);
    if (walk_value(r, rd, t, 0, &st[k], inst, where)) return r->status;
    if (!st[k].known && settle_shape(r, &st[k], n)) return r->status;
  }
  for (size_t k = 0; k < n_in; k++)
    if (!st[k].seen) {
      snprintf(where, sizeof where, "%s: input '%s'", what, st[k].alias);
      return bad(r, where, "%s", "missing");
    }
  return 0;
}

/* The value of a one-input model, its first token read: given bare, or as {"<input>": value};
 * an object whose key is "b64" is a binary value. */
static int single_or_named(isv_request *r, isv__json_reader *rd, isv__json_token t, in_state *st,
                           size_t inst, size_t n, const char *what) {
  int b64_open = 0;
  if (t.type == ISV__JSON_OBJECT_BEGIN) {
    isv__json_token k;
    isv__json_type ty = isv__json_next(rd, &k);
    if (ty == ISV__JSON_OBJECT_END) return bad(r, what, "%s", "an empty object");
    if (ty != ISV__JSON_KEY) return json_bad(r, rd, what);
    b64_open = k.len == 3 && memcmp(k.ptr, "b64", 3) == 0 && strcmp(st[0].alias, "b64") != 0;
    if (!b64_open) return named_inputs(r, rd, st, 1, inst, n, what, &k);
  }
  if (walk_value(r, rd, t, b64_open, &st[0], inst, what)) return r->status;
  return st[0].known ? 0 : settle_shape(r, &st[0], n);
}

static size_t sig_inputs(const isv_model_config *cfg, const isv__signature *sig) {
  return isv__tfs_sig_n_in(cfg, sig);
}

static void states_init(isv_request *r, in_state *st, const isv_model_config *cfg,
                        const isv__signature *sig) {
  for (size_t k = 0; k < sig_inputs(cfg, sig); k++) {
    const isv__io *io = isv__tfs_sig_in(cfg, sig, k, &st[k].alias);
    st[k].io = io;
    st[k].elsize = io->dt == ISV_BYTES ? sizeof(isv_bytes) : isv__dt_size(io->dt);
    isv__buf_init(&st[k].first, r->core ? r->core->mem : NULL);
  }
}

/* The signature `name` (NULL: "serving_default") of r's model into *sig (NULL: the implicit
 * one), and the outputs it exposes requested. 0, or r failed with TF Serving's text. */
static int choose_signature(isv_request *r, const isv__json_token *name, const isv__signature **sig) {
  const isv_model_config *cfg = r->model->cfg;
  if (!isv__tfs_signature(cfg, name ? name->ptr : NULL, name ? name->len : 0, sig)) {
    const char *want = name ? name->ptr : ISV__TFS_DEFAULT_SIGNATURE;
    size_t wl = name ? name->len : strlen(ISV__TFS_DEFAULT_SIGNATURE);
    return isv__request_fail(r, ISV_EBADREQ,
                             "Serving signature name: \"%.*s\" not found in signature def",
                             (int)(wl > 128 ? 128 : wl), want);
  }
  if (*sig == NULL) return 0;
  for (size_t i = 0; i < (*sig)->n_out; i++)
    if (isv_request_add_requested_output(r, (*sig)->out_names[i], 0) != 0)
      return r->status ? r->status : isv__request_fail(r, ISV_ENOMEM, "out of memory");
  return 0;
}

static void states_free(in_state *st, size_t n) {
  for (size_t k = 0; k < n; k++) isv__buf_free(&st[k].first);
}

/* "instances": a list of n values (one input) or of n objects of the inputs by name. */
static int decode_rows(isv_request *r, char *body, size_t len, size_t off, unsigned depth,
                       in_state *st, size_t n_in) {
  isv__json_reader rd;
  isv__json_token t;
  size_t n;
  if (count_list(r, body, len, off, depth, "instances", &n)) return r->status;
  isv__json_reader_init(&rd, body + off, len - off, depth);
  (void)isv__json_next(&rd, &t);
  char what[48];
  for (size_t i = 0; i < n; i++) {
    snprintf(what, sizeof what, "instances[%zu]", i);
    if (isv__json_next(&rd, &t) == ISV__JSON_ERROR) return json_bad(r, &rd, what);
    if (n_in == 1) {
      if (single_or_named(r, &rd, t, st, i, n, what)) return r->status;
    } else if (t.type != ISV__JSON_OBJECT_BEGIN) {
      return isv__request_fail(r, ISV_EBADREQ, "%s: the model has %zu inputs: each instance is an "
                               "object of them by name", what, n_in);
    } else if (named_inputs(r, &rd, st, n_in, i, n, what, NULL)) {
      return r->status;
    }
  }
  return push_inputs(r, st, n_in, n, 1);
}

/* "inputs": the one input's tensor, or an object of the tensors by name. */
static int decode_columns(isv_request *r, char *body, size_t len, size_t off, unsigned depth,
                          in_state *st, size_t n_in) {
  isv__json_reader rd;
  isv__json_token t;
  isv__json_reader_init(&rd, body + off, len - off, depth);
  if (isv__json_next(&rd, &t) == ISV__JSON_ERROR) return json_bad(r, &rd, "inputs");
  if (n_in == 1) {
    if (single_or_named(r, &rd, t, st, 0, 1, "inputs")) return r->status;
  } else if (t.type != ISV__JSON_OBJECT_BEGIN) {
    return isv__request_fail(r, ISV_EBADREQ, "inputs: the model has %zu inputs: \"inputs\" is an "
                             "object of them by name", n_in);
  } else if (named_inputs(r, &rd, st, n_in, 0, 1, "inputs", NULL)) {
    return r->status;
  }
  return push_inputs(r, st, n_in, 1, 0);
}


/* A Vertex parameter: the value whose first token v was just read, under key. */
static int vertex_param(isv_request *r, isv__json_reader *rd, const isv__json_token *key,
                        const isv__json_token *v) {
  isv_param p;
  if (v->type == ISV__JSON_NULL) return 0; /* no value: no parameter */
  if (v->type == ISV__JSON_OBJECT_BEGIN || v->type == ISV__JSON_ARRAY_BEGIN) {
    /* its text, as written (skipping leaves the body as it is) */
    size_t end;
    if (isv__json_skip(rd, v, &end) != 0) return json_bad(r, rd, "parameters");
    memset(&p, 0, sizeof p);
    p.type = ISV_PARAM_STRING;
    p.v.s.ptr = v->ptr;
    p.v.s.len = end - v->offset;
  } else if (isv__json_to_param(v, &p) != 0) {
    return isv__request_fail(r, ISV_EBADREQ, "parameter '%.*s' is not a valid number",
                             (int)(key->len > 64 ? 64 : key->len), key->ptr);
  }
  isv__param_entry *e = isv__request_push_param(r, key->ptr, key->len);
  if (e == NULL) return r->status;
  e->val = p;
  return 0;
}

/* Vertex's "parameters": {...}, its first token read. */
static int vertex_params(isv_request *r, isv__json_reader *rd, const isv__json_token *v) {
  if (v->type != ISV__JSON_OBJECT_BEGIN)
    return isv__request_fail(r, ISV_EBADREQ, "\"parameters\" must be an object");
  for (;;) {
    isv__json_token k, x;
    isv__json_type ty = isv__json_next(rd, &k);
    if (ty == ISV__JSON_OBJECT_END) return 0;
    if (ty != ISV__JSON_KEY || isv__json_next(rd, &x) == ISV__JSON_ERROR)
      return json_bad(r, rd, "parameters");
    if (vertex_param(r, rd, &k, &x)) return r->status;
  }
}

/* Vertex: "parameters" spread into request parameters, any other member one itself. */
static int vertex_member(isv_request *r, isv__json_reader *rd, const isv__json_token *key,
                         const isv__json_token *v) {
  return ISV__TOKEN_IS(key, "parameters") ? vertex_params(r, rd, v) : vertex_param(r, rd, key, v);
}

int isv__tfs_decode_predict(isv_request *r, char *body, size_t len, unsigned max_depth,
                            unsigned flags, int *row, const isv__signature **sig) {
  const int vertex = (flags & ISV__TFS_VERTEX) != 0;
  const isv_model_config *cfg = r->model->cfg;
  static const char *const keys[] = {"instances", "inputs"};
  size_t offs[2];
  isv__json_token sn;
  *sig = NULL;
  if (scan_body(r, body, len, max_depth, keys, offs, 2, vertex ? vertex_member : NULL, &sn) ||
      choose_signature(r, sn.type == ISV__JSON_STRING ? &sn : NULL, sig))
    return r->status;
  size_t inst = offs[0], cols = offs[1];
  if (vertex && cols != SIZE_MAX)
    return isv__request_fail(r, ISV_EBADREQ, "\"inputs\" is TF Serving's columnar format: a "
                             "Vertex AI / AI Platform prediction takes \"instances\"");
  if (inst != SIZE_MAX && cols != SIZE_MAX)
    return isv__request_fail(r, ISV_EBADREQ, "the body has both \"instances\" and \"inputs\": "
                             "one format at a time (row or columnar)");
  if (inst == SIZE_MAX && cols == SIZE_MAX) /* TF Serving's own words, which its clients see */
    return isv__request_fail(r, ISV_EBADREQ, vertex ? "the body has no \"instances\""
                                                    : "Missing 'inputs' or 'instances' key");
  size_t n_in = sig_inputs(cfg, *sig);
  if (n_in == 0) return isv__request_fail(r, ISV_EBADREQ, "the signature takes no inputs");
  in_state *st = isv__arena_calloc(&r->arena, n_in, sizeof *st);
  if (st == NULL) return isv__request_fail(r, ISV_ENOMEM, "out of memory");
  states_init(r, st, cfg, *sig);
  *row = inst != SIZE_MAX;
  int rc = *row ? decode_rows(r, body, len, inst, max_depth, st, n_in)
                : decode_columns(r, body, len, cols, max_depth, st, n_in);
  states_free(st, n_in);
  return rc;
}

/* ---- classify and regress: examples ------------------------------------------------------ */

/* "context": features shared by every example, each learned with its own shape. */
static int decode_context(isv_request *r, isv__json_reader *rd, in_state *ctx, size_t n_in) {
  isv__json_token t;
  if (isv__json_next(rd, &t) != ISV__JSON_OBJECT_BEGIN)
    return rd->failed ? json_bad(r, rd, "context")
                      : isv__request_fail(r, ISV_EBADREQ, "\"context\" must be an object of features");
  char where[200];
  for (;;) {
    isv__json_type ty = isv__json_next(rd, &t);
    if (ty == ISV__JSON_OBJECT_END) return 0;
    if (ty != ISV__JSON_KEY) return json_bad(r, rd, "context");
    int k = find_input(ctx, n_in, t.ptr, t.len);
    snprintf(where, sizeof where, "context: feature '%.*s'", (int)(t.len > 64 ? 64 : t.len), t.ptr);
    if (k < 0) return bad(r, where, "%s", "not an input of the model");
    if (ctx[k].seen) return bad(r, where, "%s", "given twice");
    ctx[k].seen = 1;
    if (isv__json_next(rd, &t) == ISV__JSON_ERROR) return json_bad(r, rd, where);
    if (walk_value(r, rd, t, 0, &ctx[k], 0, where) || settle_shape(r, &ctx[k], 1)) return r->status;
  }
}

/* Example i, its OBJECT_BEGIN read: its features, then the context's for those it lacks. */
static int decode_example(isv_request *r, isv__json_reader *rd, in_state *st, const in_state *ctx,
                          size_t n_in, size_t i, size_t n) {
  char where[200];
  for (size_t k = 0; k < n_in; k++) st[k].seen = 0;
  for (;;) {
    isv__json_token t;
    isv__json_type ty = isv__json_next(rd, &t);
    if (ty == ISV__JSON_OBJECT_END) break;
    if (ty != ISV__JSON_KEY) return json_bad(r, rd, "examples");
    int k = find_input(st, n_in, t.ptr, t.len);
    snprintf(where, sizeof where, "examples[%zu]: feature '%.*s'", i, (int)(t.len > 64 ? 64 : t.len),
             t.ptr);
    if (k < 0) return bad(r, where, "%s", "not an input of the model");
    if (st[k].seen) return bad(r, where, "%s", "given twice");
    st[k].seen = 1;
    if (isv__json_next(rd, &t) == ISV__JSON_ERROR) return json_bad(r, rd, where);
    if (walk_value(r, rd, t, 0, &st[k], i, where)) return r->status;
    if (!st[k].known && settle_shape(r, &st[k], n)) return r->status;
  }
  for (size_t k = 0; k < n_in; k++) {
    if (st[k].seen) continue;
    if (!ctx[k].seen || !st[k].known) {
      snprintf(where, sizeof where, "examples[%zu]: feature '%s'", i, st[k].alias);
      return bad(r, where, "%s", "missing (and not in the context)");
    }
    if (st[k].inner_count)
      memcpy(st[k].data + i * st[k].inner_count * st[k].elsize, ctx[k].data,
             st[k].inner_count * st[k].elsize);
  }
  return 0;
}

int isv__tfs_decode_examples(isv_request *r, char *body, size_t len, unsigned max_depth,
                             isv_signature_method method, const isv__signature **sig) {
  const isv_model_config *cfg = r->model->cfg;
  static const char *const keys[] = {"examples", "context"};
  size_t offs[2];
  isv__json_token sn;
  *sig = NULL;
  if (scan_body(r, body, len, max_depth, keys, offs, 2, NULL, &sn) ||
      choose_signature(r, sn.type == ISV__JSON_STRING ? &sn : NULL, sig))
    return r->status;
  if (*sig && (*sig)->method != method) /* TF Serving's text */
    return isv__request_fail(r, ISV_EBADREQ, "Expected %s signature method_name to be %s. Was: %s",
                             method == ISV_SIGNATURE_CLASSIFY ? "classification" : "regression",
                             isv__tfs_method_name(method), isv__tfs_method_name((*sig)->method));
  size_t ex = offs[0], cx = offs[1];
  if (ex == SIZE_MAX) return isv__request_fail(r, ISV_EBADREQ, "the body has no \"examples\"");
  isv__json_reader rd;
  isv__json_token t;
  size_t n_in = sig_inputs(cfg, *sig);
  if (n_in == 0) return isv__request_fail(r, ISV_EBADREQ, "the signature takes no inputs");
  in_state *st = isv__arena_calloc(&r->arena, 2 * n_in, sizeof *st), *ctx = st + n_in;
  if (st == NULL) return isv__request_fail(r, ISV_ENOMEM, "out of memory");
  states_init(r, st, cfg, *sig);
  states_init(r, ctx, cfg, *sig);
  int rc = 0;
  if (cx != SIZE_MAX) {
    isv__json_reader_init(&rd, body + cx, len - cx, max_depth);
    rc = decode_context(r, &rd, ctx, n_in);
  }
  size_t n = 0;
  if (rc == 0) rc = count_list(r, body, len, ex, max_depth, "examples", &n);
  /* a feature of the context fixes the shape every example's own value of it must have */
  for (size_t k = 0; rc == 0 && k < n_in; k++) {
    if (!ctx[k].seen) continue;
    st[k].inner_ndim = ctx[k].inner_ndim;
    memcpy(st[k].inner, ctx[k].inner, sizeof st[k].inner);
    st[k].inner_count = ctx[k].inner_count;
    if (room_for(r, &st[k], n)) rc = r->status;
  }
  if (rc == 0) {
    isv__json_reader_init(&rd, body + ex, len - ex, max_depth);
    (void)isv__json_next(&rd, &t);
    char what[48];
    for (size_t i = 0; rc == 0 && i < n; i++) {
      snprintf(what, sizeof what, "examples[%zu]", i);
      if (isv__json_next(&rd, &t) != ISV__JSON_OBJECT_BEGIN)
        rc = rd.failed ? json_bad(r, &rd, what)
                       : isv__request_fail(r, ISV_EBADREQ, "%s must be an object of features", what);
      else
        rc = decode_example(r, &rd, st, ctx, n_in, i, n);
    }
  }
  if (rc == 0) rc = push_inputs(r, st, n_in, n, 1);
  states_free(st, 2 * n_in);
  return rc ? r->status : 0;
}

/* ---- encoding ---------------------------------------------------------------------------- */

static int ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), k = strlen(suffix);
  return n >= k && memcmp(s + n - k, suffix, k) == 0;
}

/* Elements [*at, ...) of t nested by shape; BYTES as {"b64": ...} when forced. */
static void write_nested(isv__buf *b, const isv_tensor *t, const int64_t *shape, size_t ndim,
                         size_t *at, int b64) {
  if (ndim == 0) {
    size_t i = (*at)++;
    if (t->dt != ISV_BYTES) {
      size_t sz = isv__dt_size(t->dt);
      isv__json_write_tensor_nested(b, t->dt, (const char *)t->data + i * sz, NULL, 0);
      return;
    }
    const isv_bytes *e = (const isv_bytes *)t->data + i;
    if (!b64) {
      isv__json_write_bytes_element(b, e->ptr, e->len);
      return;
    }
    isv__buf_puts(b, "{\"b64\":\"");
    isv__base64_encode(b, e->ptr, e->len);
    isv__buf_puts(b, "\"}");
    return;
  }
  if (!b64 && t->dt != ISV_BYTES) { /* the writer's own loop for the rest */
    size_t n = 1;
    for (size_t i = 0; i < ndim; i++) n *= (size_t)shape[i];
    size_t sz = isv__dt_size(t->dt);
    /* no elements: data may be NULL (an empty list decoded), and NULL + 0 is not C */
    const char *at_data = n ? (const char *)t->data + *at * sz : t->data;
    isv__json_write_tensor_nested(b, t->dt, at_data, shape, ndim);
    *at += n;
    return;
  }
  isv__buf_putc(b, '[');
  for (int64_t i = 0; i < shape[0]; i++) {
    if (i) isv__buf_putc(b, ',');
    write_nested(b, t, shape + 1, ndim - 1, at, b64);
  }
  isv__buf_putc(b, ']');
}

/* The name output t goes by in the answer: its alias in the signature, else its own. */
static const char *out_alias(const isv__signature *sig, const isv_tensor *t) {
  return isv__tfs_out_alias(sig, t->name);
}

static void write_key(isv__buf *b, const char *k) {
  isv__json_write_string(b, k, strlen(k));
  isv__buf_putc(b, ':');
}

static void write_tensor(isv__buf *b, const isv_tensor *t, const isv__signature *sig) {
  size_t at = 0;
  write_nested(b, t, t->shape, t->ndim, &at, ends_with(out_alias(sig, t), "_bytes"));
}

int isv__tfs_encode_predict(const isv_request *r, const isv__signature *sig, int row,
                            const char *deployed_id, isv__buf *b, char *msg, size_t cap) {
  size_t n = r->n_outputs;
  if (!row) {
    isv__buf_puts(b, "{\"outputs\":");
    if (n == 1) {
      write_tensor(b, &r->outputs[0], sig);
    } else {
      isv__buf_putc(b, '{');
      for (size_t k = 0; k < n; k++) {
        if (k) isv__buf_putc(b, ',');
        write_key(b, out_alias(sig, &r->outputs[k]));
        write_tensor(b, &r->outputs[k], sig);
      }
      isv__buf_putc(b, '}');
    }
    isv__buf_putc(b, '}');
    return 0;
  }
  /* Row format: every output is a list over the instances (dimension 0). */
  int64_t batch = -1;
  for (size_t k = 0; k < n; k++) {
    const isv_tensor *t = &r->outputs[k];
    if (t->ndim == 0 || (batch >= 0 && t->shape[0] != batch)) {
      snprintf(msg, cap, "output '%s' has no batch dimension shared with the other outputs: the "
                         "row format (\"instances\") needs one; use \"inputs\"", t->name);
      return ISV_EINVAL;
    }
    batch = t->shape[0];
  }
  isv__buf_puts(b, "{\"predictions\":");
  if (n == 1) {
    write_tensor(b, &r->outputs[0], sig);
  } else {
    size_t at[64] = {0};
    if (n > 64) {
      snprintf(msg, cap, "more than 64 outputs in the row format");
      return ISV_EINVAL;
    }
    isv__buf_putc(b, '[');
    for (int64_t i = 0; i < batch; i++) {
      if (i) isv__buf_putc(b, ',');
      isv__buf_putc(b, '{');
      for (size_t k = 0; k < n; k++) {
        const isv_tensor *t = &r->outputs[k];
        if (k) isv__buf_putc(b, ',');
        write_key(b, out_alias(sig, t));
        write_nested(b, t, t->shape + 1, t->ndim - 1, &at[k], ends_with(out_alias(sig, t), "_bytes"));
      }
      isv__buf_putc(b, '}');
    }
    isv__buf_putc(b, ']');
  }
  if (deployed_id) {
    isv__buf_puts(b, ",\"deployedModelId\":");
    isv__json_write_string(b, deployed_id, strlen(deployed_id));
  }
  isv__buf_putc(b, '}');
  return 0;
}

/* Element i of an FP32 or FP64 tensor, in its own precision's shortest form. */
static void write_real(isv__buf *b, const isv_tensor *t, size_t i) {
  if (t->dt == ISV_FP64) isv__json_write_f64(b, ((const double *)t->data)[i]);
  else isv__json_write_f32(b, ((const float *)t->data)[i]);
}

int isv__tfs_encode_classify(const isv_request *r, const isv__signature *sig, isv__buf *b,
                             char *msg, size_t cap) {
  isv__tfs_classes c;
  if (isv__tfs_classes_of(r, sig, &c, msg, cap) != 0) return ISV_EINVAL;
  isv__buf_puts(b, "{\"results\":[");
  for (size_t i = 0; i < c.n; i++) {
    if (i) isv__buf_putc(b, ',');
    isv__buf_putc(b, '[');
    for (size_t j = 0; j < c.k; j++) {
      if (j) isv__buf_putc(b, ',');
      isv__buf_putc(b, '[');
      const char *p;
      size_t n;
      char idx[24];
      isv__tfs_class(&c, i, j, &p, &n, idx, sizeof idx);
      if (c.classes) isv__json_write_bytes_element(b, p, n);
      else isv__json_write_string(b, p, n);
      isv__buf_putc(b, ',');
      write_real(b, c.scores, i * c.k + j);
      isv__buf_putc(b, ']');
    }
    isv__buf_putc(b, ']');
  }
  isv__buf_puts(b, "]}");
  return 0;
}

int isv__tfs_encode_regress(const isv_request *r, const isv__signature *sig, isv__buf *b,
                            char *msg, size_t cap) {
  const isv_tensor *t = isv__tfs_regression_of(r, sig, msg, cap);
  if (t == NULL) return ISV_EINVAL;
  isv__buf_puts(b, "{\"results\":[");
  for (size_t i = 0; i < t->count; i++) {
    if (i) isv__buf_putc(b, ',');
    write_real(b, t, i);
  }
  isv__buf_puts(b, "]}");
  return 0;
}
