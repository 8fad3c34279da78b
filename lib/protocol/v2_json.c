#include "protocol/v2_json.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "codec/datatype.h"
#include "codec/json_next.h"
#include "codec/json_reader.h"
#include "codec/raw_bytes.h"
#include "codec/json_writer.h"
#include "codec/numfmt.h"
#include "core/shm_tensor.h"


/* "#<index>" for an element that has no name (yet); no snprintf on the path of every request. */
static void index_label(char out[22], size_t index) {
  out[0] = '#';
  out[1 + isv__fmt_u64(out + 1, index)] = '\0';
}

/* The reader's syntax error, or the semantic one just recorded with isv__json_fail. */
static int reader_fail(isv_request *r, isv__json_reader *rd, const char *what) {
  size_t off = 0;
  const char *m = isv__json_error(rd, &off);
  if (m == NULL) m = "invalid JSON";
  if (strstr(m, "offset") != NULL) /* the reader's messages already say where */
    return isv__request_fail(r, ISV_EBADREQ, "%s%s%s", what ? what : "", what ? ": " : "", m);
  return isv__request_fail(r, ISV_EBADREQ, "%s%s%s (at byte offset %zu)", what ? what : "",
                           what ? ": " : "", m, off);
}

/* The token just read (`got`, into t) must be of `type`: 0, or the request failed with `what`
 * (r->status). */
ISV_INLINE int expected(isv_request *r, isv__json_reader *rd, const isv__json_token *t,
                        isv__json_type got, isv__json_type type, const char *what) {
  if (got == ISV__JSON_ERROR) return reader_fail(r, rd, NULL);
  if (got != type) {
    isv__json_fail(rd, t->offset, "%s", what);
    return reader_fail(r, rd, NULL);
  }
  return 0;
}
/* The next token must be of `type`. expect_inline reads it with the reader's fast path inline,
 * at the members every input has (its object, name, datatype and shape, and the inputs' array);
 * expect, out of line, everywhere else. */
ISV_INLINE int expect_inline(isv_request *r, isv__json_reader *rd, isv__json_token *t,
                             isv__json_type type, const char *what) {
  return expected(r, rd, t, isv__json_next_inline(rd, t), type, what);
}
static int expect(isv_request *r, isv__json_reader *rd, isv__json_token *t, isv__json_type type,
                  const char *what) {
  return expected(r, rd, t, isv__json_next(rd, t), type, what);
}

/* A parameter value: bool, integer (int64, or uint64 beyond), float, or string. */
static int parse_param_value(isv_request *r, isv__json_reader *rd, const isv__json_token *key,
                             isv_param *out) {
  isv__json_token v;
  isv__json_type t = isv__json_next(rd, &v);
  switch (t) {
  case ISV__JSON_TRUE:
  case ISV__JSON_FALSE:
    out->type = ISV_PARAM_BOOL;
    out->v.b = t == ISV__JSON_TRUE;
    return 0;
  case ISV__JSON_STRING:
    out->type = ISV_PARAM_STRING;
    out->v.s.ptr = v.ptr;
    out->v.s.len = v.len;
    return 0;
  case ISV__JSON_NUMBER:
    if (isv__json_to_int64(&v, &out->v.i64) == 0) {
      out->type = ISV_PARAM_INT64;
      return 0;
    }
    if (isv__json_to_uint64(&v, &out->v.u64) == 0) {
      out->type = ISV_PARAM_UINT64;
      return 0;
    }
    if (isv__json_to_double(&v, &out->v.d) == 0) {
      out->type = ISV_PARAM_DOUBLE;
      return 0;
    }
    isv__json_fail(rd, v.offset, "parameter '%.*s' is not a valid number", (int)key->len, key->ptr);
    return reader_fail(r, rd, NULL);
  case ISV__JSON_ERROR: return reader_fail(r, rd, NULL);
  default:
    isv__json_fail(rd, v.offset, "parameter '%.*s' must be a bool, a number or a string",
                   (int)key->len, key->ptr);
    return reader_fail(r, rd, NULL);
  }
}

/* "parameters": {...}. `each` gets every (key, value); NULL stores them as request params. */
typedef int (*param_fn)(isv_request *r, isv__json_reader *rd, const isv__json_token *key,
                        const isv_param *v, void *data);

static int parse_params(isv_request *r, isv__json_reader *rd, param_fn each, void *data) {
  isv__json_token t;
  if (expect(r, rd, &t, ISV__JSON_OBJECT_BEGIN, "'parameters' must be an object")) return r->status;
  for (;;) {
    isv__json_type ty = isv__json_next(rd, &t);
    if (ty == ISV__JSON_OBJECT_END) return 0;
    if (ty != ISV__JSON_KEY) return reader_fail(r, rd, NULL);
    isv__json_token key = t;
    isv_param v;
    memset(&v, 0, sizeof v);
    if (parse_param_value(r, rd, &key, &v)) return r->status;
    if (each) {
      if (each(r, rd, &key, &v, data)) return r->status;
    } else {
      isv__param_entry *e = isv__request_push_param(r, key.ptr, key.len);
      if (e == NULL) return r->status;
      e->val = v;
    }
  }
}

static int parse_shape(isv_request *r, isv__json_reader *rd, int64_t *shape, size_t *ndim,
                       const char *input) {
  isv__json_token t;
  if (expect_inline(r, rd, &t, ISV__JSON_ARRAY_BEGIN, "'shape' must be an array of integers"))
    return r->status;
  int whole = isv__json_small_uints(rd, shape, ISV__MAX_NDIM); /* most shapes: "[1,16]" */
  if (whole >= 0) {
    *ndim = (size_t)whole;
    return 0;
  }
  size_t n = 0;
  for (;;) {
    isv__json_type ty = isv__json_next(rd, &t);
    if (ty == ISV__JSON_ARRAY_END) break;
    if (ty == ISV__JSON_ERROR) return reader_fail(r, rd, NULL);
    if (n == ISV__MAX_NDIM)
      return isv__request_fail(r, ISV_EBADREQ, "input '%s' has more than %d dimensions", input,
                               ISV__MAX_NDIM);
    if (ty != ISV__JSON_NUMBER || isv__json_to_int64(&t, &shape[n]) != 0) {
      isv__json_fail(rd, t.offset, "shape of input '%s' must hold integers", input);
      return reader_fail(r, rd, NULL);
    }
    if (shape[n] < 0)
      return isv__request_fail(r, ISV_EBADREQ, "input '%s' has a negative dimension %lld in its "
                               "shape", input, (long long)shape[n]);
    n++;
  }
  *ndim = n;
  return 0;
}

/* The binary part after the JSON (Triton's binary tensor data extension) and how much of it
 * the inputs parsed so far have claimed. */
typedef struct bin_tail {
  char *p;
  size_t n, used;
} bin_tail;

typedef struct input_info {
  const char *label; /* the name, or "#i" while the name is not known yet */
  int have_bin;
  uint64_t bin_size;
  isv__shm_ref shm; /* shared_memory_* parameters (system shared memory extension) */
} input_info;

/* A shared memory parameter (core/shm.h) of input or output `what` `name`: 1 taken, 0 not
 * one, or r failed. */
static int shm_param(isv_request *r, isv__shm_ref *ref, const isv__json_token *key,
                     const isv_param *v, const char *what, const char *name) {
  char err[96];
  int k = isv__shm_param(ref, key->ptr, key->len, v, err, sizeof err);
  if (k < 0) return isv__request_fail(r, ISV_EBADREQ, "%s '%s': %s", what, name, err), -1;
  return k;
}

static int input_param(isv_request *r, isv__json_reader *rd, const isv__json_token *key,
                       const isv_param *v, void *data) {
  input_info *in = data;
  (void)rd;
  if (ISV__TOKEN_IS(key, "binary_data_size")) {
    if (v->type == ISV_PARAM_INT64 && v->v.i64 >= 0) in->bin_size = (uint64_t)v->v.i64;
    else if (v->type == ISV_PARAM_UINT64) in->bin_size = v->v.u64;
    else return isv__request_fail(r, ISV_EBADREQ, "input '%s': binary_data_size must be a "
                                  "non-negative integer", in->label);
    in->have_bin = 1;
  } else if (shm_param(r, &in->shm, key, v, "input", in->label) < 0) {
    return r->status;
  }
  return 0; /* other input parameters are accepted and ignored */
}

/* Take the input's binary_data_size bytes from the binary part, in place when the bytes are
 * aligned for the datatype (the transports try to place them so), else copied. */
static int claim_binary(isv_request *r, bin_tail *tail, const char *name, isv_datatype dt,
                        const int64_t *shape, size_t ndim, size_t count, size_t bytes,
                        uint64_t size, isv_tensor *t) {
  size_t left = tail->n - tail->used;
  if (size > left)
    return isv__request_fail(r, ISV_EBADREQ, "input '%s': binary_data_size is %llu but only %zu "
                             "bytes of binary data are left after the JSON header (%zu in all)",
                             name, (unsigned long long)size, left, tail->n);
  char *p = tail->p + tail->used;
  tail->used += (size_t)size;
  if (dt == ISV_BYTES) {
    size_t n;
    isv__rawbytes_err e;
    if (isv__rawbytes_count(p, (size_t)size, &n, &e) != 0) {
      if (e.in_prefix)
        return isv__request_fail(r, ISV_EBADREQ, "input '%s': binary data ends inside the 4-byte "
                                 "length of BYTES element %zu", name, e.elem);
      return isv__request_fail(r, ISV_EBADREQ, "input '%s': BYTES element %zu of the binary data "
                               "has length %zu but only %zu bytes remain", name, e.elem, e.len,
                               e.left);
    }
    if (n != count)
      return isv__request_fail(r, ISV_EBADREQ, "input '%s': binary data holds %zu BYTES elements, "
                               "the shape needs %zu", name, n, count);
    isv_bytes *b = isv__arena_alloc(&r->arena, (n ? n : 1) * sizeof *b);
    if (b == NULL) return isv__request_fail(r, ISV_ENOMEM, "out of memory");
    isv__rawbytes_split(p, n, b);
    t->data = b;
    t->byte_size = isv__bytes_total(b, n);
    return 0;
  }
  if (size != bytes) {
    char sh[128];
    isv__shape_text(sh, sizeof sh, shape, ndim, 0);
    return isv__request_fail(r, ISV_EBADREQ, "input '%s': binary_data_size is %llu but shape %s "
                             "of %s needs %zu bytes", name, (unsigned long long)size, sh,
                             isv_datatype_name(dt), bytes);
  }
  size_t align = isv__dt_size(dt);
  if (align > 1 && (uintptr_t)p % align != 0) {
    void *d = isv__arena_alloc(&r->arena, bytes);
    if (d == NULL) return isv__request_fail(r, ISV_ENOMEM, "out of memory");
    memcpy(d, p, bytes);
    p = d;
  }
  t->data = p;
  t->byte_size = bytes;
  return 0;
}

/* "data" read where it stands, when "datatype" and "shape" came before it (the usual order):
 * the values go into the tensor in one pass, instead of being skipped (validated) and parsed
 * again by a second reader once all the keys are known. */
typedef struct early_data {
  void *data; /* in the request's arena; NULL: not tried */
  isv_datatype dt;
  size_t count, bytes;
  unsigned shapes; /* how many "shape" members had been read when it was */
  int done; /* read whole; else the reader was rewound and "data" is skipped as before */
} early_data;

/* 1: `first` (the value of "data") was read into e->data and rd is past it; 0: rd is where it
 * was (rewound on a failure: the usual path then reports the error as it always did). Numbers
 * only — strings (BYTES) would be unescaped in place, and a failed try must leave the bytes
 * as they were for the skip that follows (keep_bytes makes sure of it for stray strings). */
static int read_data_now(isv_request *r, isv__json_reader *rd, const isv__json_token *first,
                         int have_dt, isv_datatype dt, unsigned shapes, const int64_t *shape,
                         size_t ndim, early_data *e) {
  if (e->data != NULL) { /* "data" again: the last one counts, read as before */
    e->done = 0;
    return 0;
  }
  if (!have_dt || !shapes || dt == ISV_TYPE_INVALID || dt == ISV_BYTES ||
      first->type != ISV__JSON_ARRAY_BEGIN)
    return 0;
  size_t count, bytes;
  if (isv__shape_count(shape, ndim, isv__dt_size(dt), &count, &bytes) != 0) return 0;
  /* the same bound as below: every element takes at least a byte of what is left */
  if (count > rd->len - first->offset + 1) return 0;
  if ((e->data = isv__arena_alloc(&r->arena, bytes ? bytes : 1)) == NULL) return 0;
  e->dt = dt;
  e->count = count;
  e->bytes = bytes;
  e->shapes = shapes;
  isv__json_mark m = isv__json_mark_here(rd);
  rd->keep_bytes = 1;
  int rc = isv__json_read_tensor(rd, first, dt, e->data, count);
  rd->keep_bytes = 0;
  if (rc != 0) {
    isv__json_rewind(rd, &m);
    return 0;
  }
  e->done = 1;
  return 1;
}

/* An input's members (the reader's isv__json_key_in takes them at once when written compactly). */
enum { K_NAME, K_DATATYPE, K_SHAPE, K_DATA, K_PARAMETERS, INPUT_KEYS, K_OTHER = INPUT_KEYS };
static const isv__json_key_lit input_keys[INPUT_KEYS] = {
    [K_NAME] = ISV__JSON_KEY_LIT("name"),   [K_DATATYPE] = ISV__JSON_KEY_LIT("datatype"),
    [K_SHAPE] = ISV__JSON_KEY_LIT("shape"), [K_DATA] = ISV__JSON_KEY_LIT("data"),
    [K_PARAMETERS] = ISV__JSON_KEY_LIT("parameters")};

/* Which of them a key token read the long way is (an escape, a space around it). */
static int input_key(const isv__json_token *t) {
  for (int k = 0; k < INPUT_KEYS; k++)
    if (t->len + 3 == input_keys[k].len && memcmp(t->ptr, input_keys[k].text + 1, t->len) == 0)
      return k;
  return K_OTHER;
}

/* The input memo (isv__v2_memo's inputs): a client sends the same name, datatype and shape
 * request after request, and the same bytes before "data" read the same way again — checked
 * with one memcmp instead of ~900 instructions of tokens. Only members written without an escape
 * (the bytes are the text: nothing was unescaped in place), no "parameters" nor other keys, each
 * of the three once, a valid datatype and a shape of at most ISV__V2_MEMO_NDIM dimensions are
 * kept; the reader's depth and limit are part of the key. */
typedef isv__v2_input_memo input_memo;

/* Remembers the members just read, from `at` (after the '{') to rd->pos (after "data":). */
static void memo_keep(input_memo *m, const isv__json_reader *rd, size_t at, const char *name,
                      size_t name_len, isv_datatype dt, const int64_t *shape, size_t ndim) {
  size_t n = rd->pos - at;
  m->len = 0;
  if (n > sizeof m->bytes || ndim > ISV__V2_MEMO_NDIM || dt == ISV_TYPE_INVALID ||
      memchr(rd->buf + at, '\\', n) != NULL)
    return;
  memcpy(m->bytes, rd->buf + at, n);
  m->name_at = (uint32_t)(name - (rd->buf + at));
  m->name_len = (uint32_t)name_len;
  m->depth = rd->depth;
  m->max_depth = rd->max_depth;
  m->state = rd->state;
  m->dt = dt;
  m->ndim = (uint32_t)ndim;
  memcpy(m->shape, shape, ndim * sizeof *shape);
  m->len = (uint32_t)n;
}

/* Whether the bytes at rd->pos (after an input's '{') are m's: then rd is moved past them. */
static int memo_hit(const input_memo *m, isv__json_reader *rd) {
  if (m->len == 0 || m->len > rd->len - rd->pos || rd->depth != m->depth ||
      rd->max_depth != m->max_depth || memcmp(rd->buf + rd->pos, m->bytes, m->len) != 0)
    return 0;
  rd->pos += m->len;
  rd->state = m->state;
  return 1;
}

/* An input's members: rd is past its '{'. */
static int parse_input(isv_request *r, isv__json_reader *rd, char *body, unsigned depth,
                       size_t index, bin_tail *tail, isv__v2_memo *memos) {
  isv__json_token t;
  const size_t members_at = rd->pos;
  input_memo *memo = memos && index < ISV__V2_MEMO_INPUTS ? &memos->inputs[index] : NULL;
  const char *name_text = NULL; /* the name's bytes in the body, for memo_keep */
  size_t name_text_len = 0;
  unsigned seen = 0; /* the members read: 1 << K_*, and 1 << K_OTHER for a repeat */
  const char *name = NULL;
  isv_datatype dt = ISV_TYPE_INVALID;
  const char *dtname = NULL;
  size_t dtlen = 0;
  int64_t shape[ISV__MAX_NDIM];
  size_t ndim = 0;
  unsigned shapes = 0; /* how many "shape" members were read (the last counts) */
  int have_dt = 0;
  isv__json_token data_tok;
  size_t data_end = 0;
  int have_data = 0;
  char label[32];
  index_label(label, index);
  input_info info = {.label = label};
  early_data early = {0};
  int k;
  if (memo && memo_hit(memo, rd)) {
    if ((name = isv__arena_strndup(&r->arena, memo->bytes + memo->name_at, memo->name_len)) == NULL)
      return isv__request_fail(r, ISV_ENOMEM, "out of memory");
    dt = memo->dt;
    have_dt = 1;
    ndim = memo->ndim;
    memcpy(shape, memo->shape, ndim * sizeof *shape);
    shapes = 1;
    memo = NULL; /* nothing new to remember */
    k = K_DATA;
    goto member;
  }
  for (;;) {
    k = isv__json_key_in(rd, input_keys, INPUT_KEYS); /* most keys: at once */
    if (k < 0) {
      isv__json_type ty = isv__json_next_inline(rd, &t);
      if (ty == ISV__JSON_OBJECT_END) break;
      if (ty != ISV__JSON_KEY) return reader_fail(r, rd, NULL);
      k = input_key(&t);
    }
    seen |= seen & (1u << k) ? 1u << K_OTHER : 1u << k;
  member:
    if (k == K_NAME) {
      if (expect_inline(r, rd, &t, ISV__JSON_STRING, "input 'name' must be a string"))
        return r->status;
      if ((name = isv__arena_strndup(&r->arena, t.ptr, t.len)) == NULL)
        return isv__request_fail(r, ISV_ENOMEM, "out of memory");
      name_text = t.ptr;
      name_text_len = t.len;
    } else if (k == K_DATATYPE) {
      if (expect_inline(r, rd, &t, ISV__JSON_STRING, "input 'datatype' must be a string"))
        return r->status;
      dt = isv_datatype_from_name(t.ptr, t.len);
      dtname = t.ptr;
      dtlen = t.len;
      have_dt = 1;
    } else if (k == K_SHAPE) {
      if (parse_shape(r, rd, shape, &ndim, name ? name : label)) return r->status;
      shapes++;
    } else if (k == K_PARAMETERS) {
      info.label = name ? name : label;
      if (parse_params(r, rd, input_param, &info)) return r->status;
    } else if (k == K_DATA) {
      if (memo && seen == ((1u << K_NAME) | (1u << K_DATATYPE) | (1u << K_SHAPE) | (1u << K_DATA)))
        memo_keep(memo, rd, members_at, name_text, name_text_len, dt, shape, ndim);
      if (isv__json_next_inline(rd, &data_tok) == ISV__JSON_ERROR) return reader_fail(r, rd, NULL);
      have_data = 1;
      if (read_data_now(r, rd, &data_tok, have_dt, dt, shapes, shape, ndim, &early)) {
        data_end = rd->pos;
        continue;
      }
      if (isv__json_skip(rd, &data_tok, &data_end) != 0) return reader_fail(r, rd, NULL);
    } else {
      isv__json_token v;
      if (isv__json_next(rd, &v) == ISV__JSON_ERROR || isv__json_skip(rd, &v, NULL) != 0)
        return reader_fail(r, rd, NULL);
    }
  }
  if (name == NULL) return isv__request_fail(r, ISV_EBADREQ, "input %s has no 'name'", label);
  if (!have_dt) return isv__request_fail(r, ISV_EBADREQ, "input '%s' has no 'datatype'", name);
  if (dt == ISV_TYPE_INVALID)
    return isv__request_fail(r, ISV_EBADREQ, "input '%s' has unknown datatype '%.*s'", name,
                             (int)(dtlen > 32 ? 32 : dtlen), dtname);
  if (!shapes) return isv__request_fail(r, ISV_EBADREQ, "input '%s' has no 'shape'", name);
  if (isv__shm_used(&info.shm) && (have_data || info.have_bin))
    return isv__request_fail(r, ISV_EBADREQ, "input '%s' has shared memory parameters and %s: "
                             "send one", name, have_data ? "'data'" : "binary_data_size");
  if (have_data && info.have_bin)
    return isv__request_fail(r, ISV_EBADREQ, "input '%s' has both 'data' and a binary_data_size "
                             "parameter: send one", name);
  if (!have_data && !info.have_bin && !isv__shm_used(&info.shm))
    return isv__request_fail(r, ISV_EBADREQ, "input '%s' has no 'data' (nor a binary_data_size "
                             "parameter)", name);
  size_t count, bytes;
  if (early.done && early.dt == dt && early.shapes == shapes) {
    count = early.count; /* the shape and datatype it was read with are the last ones */
    bytes = early.bytes;
  } else if (isv__shape_count(shape, ndim, isv__dt_size(dt), &count, &bytes) != 0) {
    return isv__request_fail(r, ISV_EBADREQ, "input '%s' has a shape whose element count "
                             "overflows", name);
  }
  int64_t *sh = isv__arena_alloc(&r->arena, (ndim ? ndim : 1) * sizeof *sh);
  if (sh == NULL) return isv__request_fail(r, ISV_ENOMEM, "out of memory");
  if (ndim) memcpy(sh, shape, ndim * sizeof *sh);
  isv_tensor ten = {0};
  if (isv__shm_used(&info.shm)) { /* copied from the region (in place when trusted: core/shm.h) */
    if (isv__shm_input(r, &info.shm, name, dt, count, bytes, &ten.data, &ten.byte_size))
      return r->status;
  } else if (info.have_bin) {
    if (claim_binary(r, tail, name, dt, shape, ndim, count, bytes, info.bin_size, &ten))
      return r->status;
  } else {
    /* Every JSON element takes at least one byte: a shape promising more elements than the
     * data has bytes is wrong, and must not make us allocate for it. */
    size_t data_bytes = data_end - data_tok.offset;
    if (count > data_bytes + 1)
      return isv__request_fail(r, ISV_EBADREQ, "input '%s': shape needs %zu elements but "
                               "'data' holds fewer", name, count);
    if (early.data && early.dt == dt && early.count == count && early.done) {
      ten.data = early.data; /* read as it came: datatype and shape were known before it */
      ten.byte_size = bytes;
      goto push;
    }
    if (early.data && early.bytes >= bytes) ten.data = early.data; /* its failed try's room */
    else if ((ten.data = isv__arena_alloc(&r->arena, bytes)) == NULL)
      return isv__request_fail(r, ISV_ENOMEM, "out of memory");
    /* Parse the data now that datatype and shape are known, whatever the key order was: a
     * second reader over exactly the data's bytes, positioned at its offset so errors carry
     * offsets into the whole body. */
    isv__json_reader sub;
    isv__json_reader_init(&sub, body, data_end, depth);
    sub.pos = data_tok.offset;
    isv__json_token first;
    if (isv__json_next(&sub, &first) == ISV__JSON_ERROR ||
        isv__json_read_tensor(&sub, &first, dt, ten.data, count) != 0) {
      char what[128];
      snprintf(what, sizeof what, "input '%s'", name);
      return reader_fail(r, &sub, what);
    }
    ten.byte_size = dt == ISV_BYTES ? isv__bytes_total(ten.data, count) : bytes;
  }
push:;
  isv_tensor *in = isv__request_push_input(r);
  if (in == NULL) return r->status;
  in->name = name;
  in->dt = dt;
  in->shape = sh;
  in->ndim = ndim;
  in->data = ten.data;
  in->count = count;
  in->byte_size = ten.byte_size;
  return 0;
}

typedef struct output_info {
  isv__req_output *o;
  isv__shm_ref shm;
} output_info;

static int output_param(isv_request *r, isv__json_reader *rd, const isv__json_token *key,
                        const isv_param *v, void *data) {
  isv__req_output *o = ((output_info *)data)->o;
  (void)rd;
  if (shm_param(r, &((output_info *)data)->shm, key, v, "output", o->name) < 0) return r->status;
  if (ISV__TOKEN_IS(key, "classification")) {
    if (v->type != ISV_PARAM_INT64 || v->v.i64 < 0 || v->v.i64 > UINT32_MAX)
      return isv__request_fail(r, ISV_EBADREQ, "output '%s': 'classification' must be a "
                               "non-negative integer", o->name);
    o->classification = (uint32_t)v->v.i64;
  } else if (ISV__TOKEN_IS(key, "binary_data")) {
    if (v->type != ISV_PARAM_BOOL)
      return isv__request_fail(r, ISV_EBADREQ, "output '%s': 'binary_data' must be true or false",
                               o->name);
    o->flags |= ISV__V2_OUT_BIN_SET | (v->v.b ? ISV__V2_OUT_BIN : 0);
  }
  return 0;
}

/* A requested output's members: rd is past its '{'. */
static int parse_output(isv_request *r, isv__json_reader *rd, size_t index) {
  isv__json_token t;
  isv__req_output *o = isv__request_push_output(r);
  if (o == NULL) return r->status;
  char label[32];
  index_label(label, index);
  o->name = NULL;
  output_info info = {.o = o};
  for (;;) {
    isv__json_type ty = isv__json_next(rd, &t);
    if (ty == ISV__JSON_OBJECT_END) break;
    if (ty != ISV__JSON_KEY) return reader_fail(r, rd, NULL);
    if (ISV__TOKEN_IS(&t, "name")) {
      if (expect(r, rd, &t, ISV__JSON_STRING, "output 'name' must be a string")) return r->status;
      if ((o->name = isv__arena_strndup(&r->arena, t.ptr, t.len)) == NULL)
        return isv__request_fail(r, ISV_ENOMEM, "out of memory");
    } else if (ISV__TOKEN_IS(&t, "parameters")) {
      if (!o->name) o->name = label;
      if (parse_params(r, rd, output_param, &info)) return r->status;
    } else {
      isv__json_token v;
      if (isv__json_next(rd, &v) == ISV__JSON_ERROR || isv__json_skip(rd, &v, NULL) != 0)
        return reader_fail(r, rd, NULL);
    }
  }
  if (o->name == NULL || o->name == label)
    return isv__request_fail(r, ISV_EBADREQ, "requested output %s has no 'name'", label);
  if (isv__shm_used(&info.shm) && isv__shm_output(r, &info.shm, o)) return r->status;
  return 0;
}

static int request_param(isv_request *r, isv__json_reader *rd, const isv__json_token *key,
                         const isv_param *v, void *data) {
  (void)rd;
  (void)data;
  if (ISV__TOKEN_IS(key, "binary_data_output")) { /* the extension's own switch, not the model's */
    if (v->type != ISV_PARAM_BOOL)
      return isv__request_fail(r, ISV_EBADREQ, "'binary_data_output' must be true or false");
    if (v->v.b) r->proto_flags |= ISV__V2_REQ_BIN;
    else r->proto_flags &= ~ISV__V2_REQ_BIN;
    return 0;
  }
  isv__param_entry *e = isv__request_push_param(r, key->ptr, key->len);
  if (e == NULL) return r->status;
  e->val = *v;
  return 0;
}

int isv__v2_decode_request(isv_request *r, char *body, size_t len, size_t json_len,
                           unsigned max_depth, isv__v2_memo *memo) {
  if (json_len == 0 || body == NULL)
    return isv__request_fail(r, ISV_EBADREQ, "empty request body: expected a JSON object");
  if (json_len > len) json_len = len;
  bin_tail tail = {body + json_len, len - json_len, 0};
  len = json_len;
  isv__json_reader rd;
  isv__json_reader_init(&rd, body, len, max_depth);
  isv__json_token t;
  isv__json_type ty = isv__json_next(&rd, &t);
  if (ty == ISV__JSON_ERROR) return reader_fail(r, &rd, "malformed JSON");
  if (ty != ISV__JSON_OBJECT_BEGIN)
    return isv__request_fail(r, ISV_EBADREQ, "request body must be a JSON object");
  int have_inputs = 0;
  for (;;) {
    ty = isv__json_next_inline(&rd, &t);
    if (ty == ISV__JSON_OBJECT_END) break;
    if (ty != ISV__JSON_KEY) return reader_fail(r, &rd, "malformed JSON");
    if (ISV__TOKEN_IS(&t, "id")) {
      if (expect(r, &rd, &t, ISV__JSON_STRING, "'id' must be a string")) return r->status;
      if ((r->id = isv__arena_strndup(&r->arena, t.ptr, t.len)) == NULL)
        return isv__request_fail(r, ISV_ENOMEM, "out of memory");
      r->has_id = 1;
    } else if (ISV__TOKEN_IS(&t, "parameters")) {
      if (parse_params(r, &rd, request_param, NULL)) return r->status;
    } else if (ISV__TOKEN_IS(&t, "inputs") || ISV__TOKEN_IS(&t, "outputs")) {
      int inputs = ISV__TOKEN_IS(&t, "inputs");
      if (expect_inline(r, &rd, &t, ISV__JSON_ARRAY_BEGIN,
                 inputs ? "'inputs' must be an array" : "'outputs' must be an array"))
        return r->status;
      for (size_t i = 0;; i++) { /* an element's '{' or the end of the array */
        ty = isv__json_next_inline(&rd, &t);
        if (ty == ISV__JSON_ARRAY_END) break;
        if (ty == ISV__JSON_ERROR) return reader_fail(r, &rd, "malformed JSON");
        if (expected(r, &rd, &t, ty, ISV__JSON_OBJECT_BEGIN,
                     inputs ? "each element of 'inputs' must be an object"
                            : "each element of 'outputs' must be an object"))
          return r->status;
        if (inputs ? parse_input(r, &rd, body, max_depth, i, &tail, memo)
                   : parse_output(r, &rd, i))
          return r->status;
      }
      if (inputs) have_inputs = 1;
    } else {
      isv__json_token v;
      if (isv__json_next(&rd, &v) == ISV__JSON_ERROR || isv__json_skip(&rd, &v, NULL) != 0)
        return reader_fail(r, &rd, "malformed JSON");
    }
  }
  if (isv__json_next(&rd, &t) != ISV__JSON_EOF) return reader_fail(r, &rd, "malformed JSON");
  if (!have_inputs) return isv__request_fail(r, ISV_EBADREQ, "request has no 'inputs'");
  if (tail.used != tail.n)
    return isv__request_fail(r, ISV_EBADREQ, "%zu bytes of binary data follow the JSON header but "
                             "the inputs' binary_data_size parameters claim %zu", tail.n,
                             tail.used);
  return 0;
}

int isv__v2_decode_raw(isv_request *r, char *body, size_t len) {
  const isv_model_config *c = r->model->cfg;
  if (c->n_inputs != 1)
    return isv__request_fail(r, ISV_EBADREQ, "a raw binary request (Inference-Header-Content-"
                             "Length: 0) needs a model with exactly one input; model '%s' has "
                             "%zu", c->name, c->n_inputs);
  const isv__io *io = &c->inputs[0];
  if (io->any_rank)
    return isv__request_fail(r, ISV_EBADREQ, "the shape of raw input '%s' cannot be deduced: the "
                             "model accepts any rank", io->name);
  size_t ndim = io->ndim + (c->max_batch > 0), wild = SIZE_MAX, count = 1;
  int64_t *sh = isv__arena_alloc(&r->arena, (ndim ? ndim : 1) * sizeof *sh);
  if (sh == NULL) return isv__request_fail(r, ISV_ENOMEM, "out of memory");
  if (body == NULL && (body = isv__arena_alloc(&r->arena, 1)) == NULL) /* no body at all */
    return isv__request_fail(r, ISV_ENOMEM, "out of memory");
  size_t k = 0;
  if (c->max_batch > 0) sh[k++] = 1; /* one sample */
  for (size_t d = 0; d < io->ndim; d++, k++) {
    sh[k] = io->shape[d];
    if (sh[k] >= 0) {
      if (sh[k] > 0 && count > SIZE_MAX / (size_t)sh[k])
        return isv__request_fail(r, ISV_EBADREQ, "raw input '%s': the model's shape overflows",
                                 io->name);
      count *= (size_t)sh[k];
    } else if (wild != SIZE_MAX) {
      return isv__request_fail(r, ISV_EBADREQ, "the shape of raw input '%s' cannot be deduced: "
                               "it has more than one variable-size dimension", io->name);
    } else wild = k;
  }
  isv_tensor *in = isv__request_push_input(r);
  if (in == NULL) return r->status;
  in->name = io->name;
  in->dt = io->dt;
  in->shape = sh;
  in->ndim = ndim;
  if (io->dt == ISV_BYTES) { /* the whole body is the one element */
    if (wild != SIZE_MAX || count != 1)
      return isv__request_fail(r, ISV_EBADREQ, "raw BYTES input '%s' needs a model input of "
                               "shape [1]", io->name);
    isv_bytes *b = isv__arena_alloc(&r->arena, sizeof *b);
    if (b == NULL) return isv__request_fail(r, ISV_ENOMEM, "out of memory");
    b->ptr = body;
    b->len = len;
    in->data = b;
    in->count = 1;
    in->byte_size = len;
    return 0;
  }
  size_t esize = isv__dt_size(io->dt);
  if (wild != SIZE_MAX) {
    size_t per = count * esize; /* bytes per step of the variable dimension */
    if (per == 0 || len % per != 0)
      return isv__request_fail(r, ISV_EBADREQ, "raw input '%s': %zu bytes are not a whole "
                               "number of %zu-byte rows of %s", io->name, len, per,
                               isv_datatype_name(io->dt));
    sh[wild] = (int64_t)(len / per);
    count *= len / per;
  } else if (count > SIZE_MAX / esize || count * esize != len) {
    char text[128];
    isv__shape_text(text, sizeof text, sh, ndim, 0);
    return isv__request_fail(r, ISV_EBADREQ, "raw input '%s': the body has %zu bytes but shape "
                             "%s of %s needs %zu", io->name, len, text,
                             isv_datatype_name(io->dt), count * esize);
  }
  void *p = body;
  if (esize > 1 && (uintptr_t)p % esize != 0) {
    if ((p = isv__arena_alloc(&r->arena, len ? len : 1)) == NULL)
      return isv__request_fail(r, ISV_ENOMEM, "out of memory");
    if (len) memcpy(p, body, len);
  }
  in->data = p;
  in->count = count;
  in->byte_size = len;
  return 0;
}

static void write_shape(isv__buf *b, const int64_t *shape, size_t ndim) {
  isv__buf_putc(b, '[');
  for (size_t i = 0; i < ndim; i++) {
    if (i) isv__buf_putc(b, ',');
    isv__json_write_i64(b, shape[i]);
  }
  isv__buf_putc(b, ']');
}

static void write_params(isv__buf *b, const isv__param_entry *ps, size_t n) {
  isv__buf_putc(b, '{');
  for (size_t i = 0; i < n; i++) {
    const isv_param *v = &ps[i].val;
    if (i) isv__buf_putc(b, ',');
    isv__json_write_string(b, ps[i].key, strlen(ps[i].key));
    isv__buf_putc(b, ':');
    switch (v->type) {
    case ISV_PARAM_BOOL: isv__buf_puts(b, v->v.b ? "true" : "false"); break;
    case ISV_PARAM_INT64: isv__json_write_i64(b, v->v.i64); break;
    case ISV_PARAM_UINT64: isv__json_write_u64(b, v->v.u64); break;
    case ISV_PARAM_DOUBLE: isv__json_write_f64(b, v->v.d); break;
    case ISV_PARAM_STRING: isv__json_write_bytes_element(b, v->v.s.ptr, v->v.s.len); break;
    }
  }
  isv__buf_putc(b, '}');
}

/* An output written into a shared memory region: its name, datatype and shape only — no data
 * and no parameters, as Triton answers (its C++ client reads "parameters" on an output as the
 * binary extension's and requires binary_data_size there). */
static int output_in_shm(const isv_tensor *t) { return t->dest && t->dest->region; }

static int output_is_binary(const isv_request *r, const isv_tensor *t) {
  if (output_in_shm(t)) return 0;
  if (t->flags & ISV__V2_OUT_BIN_SET) return (t->flags & ISV__V2_OUT_BIN) != 0;
  return (r->proto_flags & ISV__V2_REQ_BIN) != 0;
}

/* The answer memo (isv__v2_memo's model and outputs): a model answers with the same name,
 * version, output names, datatypes and shapes answer after answer, and the same text is then
 * appended instead of written again (strings checked for escapes, integers formatted). Compared
 * by content, not by pointer (a model's strings may be freed and their memory reused). */
typedef isv__v2_model_text model_text;
typedef isv__v2_output_text output_text;

/* Appends text (len bytes, 0: nothing kept) when `same`: 1; else 0 and nothing appended. */
static int text_again(isv__buf *b, int same, const char *text, uint32_t len) {
  if (!same || len == 0) return 0;
  isv__buf_append(b, text, len);
  return 1;
}

/* Keeps what b holds from `from` in text (cap bytes) when it fits and b has not failed: its
 * length, else 0. */
static uint32_t text_keep(const isv__buf *b, size_t from, char *text, size_t cap) {
  size_t n = b->len - from;
  if (b->failed || n > cap) return 0;
  memcpy(text, b->data + from, n);
  return (uint32_t)n;
}

/* A copy of s in out (cap bytes) when it fits: 1, else 0. */
static int name_keep(char *out, size_t cap, const char *s) {
  size_t n = strlen(s);
  if (n >= cap) return 0;
  memcpy(out, s, n + 1);
  return 1;
}

static void write_model_head(isv__buf *b, model_text *m, const char *mn, const char *mv) {
  if (m && text_again(b, strcmp(m->name, mn) == 0 && strcmp(m->version, mv) == 0, m->text,
                      m->len))
    return;
  size_t from = b->len;
  isv__buf_puts(b, "{\"model_name\":");
  isv__json_write_string(b, mn, strlen(mn));
  isv__buf_puts(b, ",\"model_version\":");
  isv__json_write_string(b, mv, strlen(mv));
  if (m == NULL) return;
  m->len = 0;
  if (name_keep(m->name, sizeof m->name, mn) && name_keep(m->version, sizeof m->version, mv))
    m->len = text_keep(b, from, m->text, sizeof m->text);
}

static void write_output_head(isv__buf *b, output_text *m, const isv_tensor *t) {
  if (m && text_again(b, m->dt == t->dt && m->ndim == t->ndim && strcmp(m->name, t->name) == 0 &&
                             memcmp(m->shape, t->shape, t->ndim * sizeof *t->shape) == 0,
                      m->text, m->len))
    return;
  size_t from = b->len;
  isv__buf_puts(b, "{\"name\":");
  isv__json_write_string(b, t->name, strlen(t->name));
  isv__buf_puts(b, ",\"datatype\":\"");
  isv__buf_puts(b, isv_datatype_name(t->dt));
  isv__buf_puts(b, "\",\"shape\":");
  write_shape(b, t->shape, t->ndim);
  if (m == NULL) return;
  m->len = 0;
  if (t->ndim <= ISV__V2_MEMO_NDIM && name_keep(m->name, sizeof m->name, t->name)) {
    m->dt = t->dt;
    m->ndim = (uint32_t)t->ndim;
    memcpy(m->shape, t->shape, t->ndim * sizeof *t->shape);
    m->len = text_keep(b, from, m->text, sizeof m->text);
  }
}

int isv__v2_encode_response(isv_request *r, isv__buf *b, isv__v2_binpart **parts,
                            size_t *n_parts, isv__v2_memo *memo) {
  *parts = NULL;
  *n_parts = 0;
  size_t n_bin = 0;
  for (size_t i = 0; i < r->n_outputs; i++) n_bin += output_is_binary(r, &r->outputs[i]);
  if (n_bin) {
    *parts = isv__arena_alloc(&r->arena, n_bin * sizeof **parts);
    if (*parts == NULL) return isv__request_fail(r, ISV_ENOMEM, "out of memory");
  }
  write_model_head(b, memo ? &memo->model : NULL, isv_request_model_name(r),
                   isv_request_model_version(r));
  if (r->has_id) {
    isv__buf_puts(b, ",\"id\":");
    isv__json_write_bytes_element(b, r->id, strlen(r->id));
  }
  if (r->n_resp_params) {
    isv__buf_puts(b, ",\"parameters\":");
    write_params(b, r->resp_params, r->n_resp_params);
  }
  isv__buf_puts(b, ",\"outputs\":[");
  for (size_t i = 0; i < r->n_outputs; i++) {
    const isv_tensor *t = &r->outputs[i];
    if (i) isv__buf_putc(b, ',');
    write_output_head(b, memo && i < ISV__V2_MEMO_OUTPUTS ? &memo->outputs[i] : NULL, t);
    if (output_in_shm(t)) {
      isv__buf_putc(b, '}');
      continue;
    }
    if (output_is_binary(r, t)) {
      isv__v2_binpart *p = &(*parts)[(*n_parts)++];
      if (t->dt == ISV_BYTES) {
        size_t n = isv__rawbytes_size(t->data, t->count);
        if (n == SIZE_MAX)
          return isv__request_fail(r, ISV_EINTERNAL, "output '%s' has a BYTES element longer "
                                   "than the binary form's 4-byte length allows", t->name);
        void *d = isv__arena_alloc(&r->arena, n);
        if (d == NULL) return isv__request_fail(r, ISV_ENOMEM, "out of memory");
        isv__rawbytes_write(d, t->data, t->count);
        *p = (isv__v2_binpart){d, n};
      } else {
        *p = (isv__v2_binpart){t->data, t->data ? t->byte_size : 0};
      }
      isv__buf_puts(b, ",\"parameters\":{\"binary_data_size\":");
      isv__json_write_u64(b, p->len);
      isv__buf_puts(b, "}}");
      continue;
    }
    isv__buf_puts(b, ",\"data\":");
    isv__json_write_tensor(b, t->dt, t->data, t->count);
    isv__buf_putc(b, '}');
  }
  isv__buf_puts(b, "]}");
  return 0;
}
