#include "protocol/v2_generate.h"
#include "codec/datatype.h"

#include <string.h>

#include "codec/json_reader.h"
#include "codec/json_writer.h"
#include "protocol/v2_json.h"

static int reader_failed(isv_request *r, isv__json_reader *rd) {
  size_t off = 0;
  const char *m = isv__json_error(rd, &off);
  if (m == NULL) m = "invalid JSON";
  if (strstr(m, "offset")) return isv__request_fail(r, ISV_EBADREQ, "malformed JSON: %s", m);
  return isv__request_fail(r, ISV_EBADREQ, "%s (at byte offset %zu)", m, off);
}

/* The elements of the value starting with `first`: 1 for a scalar, n for a flat array; -1
 * (r failed) for nested arrays, null, and objects — but a BYTES element may be {"b64": ...}.
 * The reader is left where it was. */
static long long count_elems(isv_request *r, const isv__json_reader *rd,
                             const isv__json_token *first, const char *key, int bytes) {
  if (first->type == ISV__JSON_STRING || first->type == ISV__JSON_NUMBER ||
      first->type == ISV__JSON_TRUE || first->type == ISV__JSON_FALSE ||
      (bytes && first->type == ISV__JSON_OBJECT_BEGIN))
    return 1;
  if (first->type == ISV__JSON_ARRAY_BEGIN) {
    isv__json_reader peek = *rd;
    isv__json_token t;
    long long n = 0;
    for (;;) {
      isv__json_type ty = isv__json_next(&peek, &t);
      if (ty == ISV__JSON_ARRAY_END) return n;
      if (ty == ISV__JSON_ERROR) return reader_failed(r, &peek), -1;
      if (ty == ISV__JSON_OBJECT_BEGIN && bytes && isv__json_skip(&peek, &t, NULL) != 0)
        return reader_failed(r, &peek), -1;
      else if (ty == ISV__JSON_ARRAY_BEGIN || ty == ISV__JSON_NULL ||
               (ty == ISV__JSON_OBJECT_BEGIN && !bytes))
        break;
      n++;
    }
  }
  isv__request_fail(r, ISV_EBADREQ, "'%s' must be a string, a number, a bool or a flat array of "
                    "them", key);
  return -1;
}

/* Input io of the bound model from the value starting with `first`. */
static int decode_input(isv_request *r, isv__json_reader *rd, const isv__json_token *first,
                        const isv__io *io) {
  const isv_model_config *c = r->model->cfg;
  long long n = count_elems(r, rd, first, io->name, io->dt == ISV_BYTES);
  if (n < 0) return r->status;
  /* the declared shape with its one free dimension (if any) taking what is left */
  size_t off = c->max_batch > 0, ndim = io->ndim + off, free_dim = SIZE_MAX;
  int64_t *shape = isv__arena_alloc(&r->arena, (ndim ? ndim : 1) * sizeof *shape);
  if (shape == NULL) return isv__request_fail(r, ISV_ENOMEM, "out of memory");
  long long fixed = 1;
  if (off) shape[0] = 1;
  for (size_t d = 0; d < io->ndim; d++) {
    shape[d + off] = io->shape[d];
    if (io->shape[d] >= 0) fixed *= io->shape[d];
    else if (free_dim == SIZE_MAX) free_dim = d + off;
    else fixed = -1; /* two free dimensions: no single way to shape it */
  }
  if (free_dim != SIZE_MAX && fixed > 0 && n % fixed == 0) {
    shape[free_dim] = n / fixed;
    for (size_t d = 0; d < ndim; d++)
      if (shape[d] < 0) shape[d] = 1;
  } else if (free_dim != SIZE_MAX || fixed != n) {
    char want[160];
    isv__shape_text(want, sizeof want, io->shape, io->ndim, (int)off);
    return isv__request_fail(r, ISV_EBADREQ, "'%s' has %lld elements, which do not fill input "
                             "'%s' of model '%s' (%s)", io->name, n, io->name, c->name, want);
  }
  size_t elsize = isv__dt_size(io->dt);
  void *data = isv__arena_alloc(&r->arena, (size_t)n * elsize);
  isv_tensor *t = data ? isv__request_push_input(r) : NULL;
  if (t == NULL) return r->status ? r->status : isv__request_fail(r, ISV_ENOMEM, "out of memory");
  if (isv__json_read_tensor(rd, first, io->dt, data, (size_t)n) != 0)
    return reader_failed(r, rd);
  t->name = io->name;
  t->dt = io->dt;
  t->shape = shape;
  t->ndim = ndim;
  t->data = data;
  t->count = (size_t)n;
  t->byte_size = io->dt == ISV_BYTES ? isv__bytes_total(data, (size_t)n) : (size_t)n * elsize;
  return 0;
}

static int decode_param(isv_request *r, const isv__json_token *key, const isv__json_token *v) {
  isv_param p;
  if (isv__json_to_param(v, &p) != 0) {
    if (v->type == ISV__JSON_NUMBER)
      return isv__request_fail(r, ISV_EBADREQ, "parameter '%.*s' is not a valid number",
                               (int)key->len, key->ptr);
    return isv__request_fail(r, ISV_EBADREQ, "'%.*s' is neither an input of model '%s' nor a "
                             "parameter (a bool, a number or a string)",
                             (int)(key->len > 64 ? 64 : key->len), key->ptr, r->model->cfg->name);
  }
  isv__param_entry *e = isv__request_push_param(r, key->ptr, key->len);
  if (e == NULL) return r->status;
  e->val = p;
  return 0;
}

int isv__v2gen_decode_request(isv_request *r, char *body, size_t len, unsigned max_depth) {
  if (body == NULL || len == 0)
    return isv__request_fail(r, ISV_EBADREQ, "empty request body: expected a JSON object");
  isv__json_reader rd;
  isv__json_reader_init(&rd, body, len, max_depth);
  isv__json_token t, v;
  isv__json_type ty = isv__json_next(&rd, &t);
  if (ty == ISV__JSON_ERROR) return reader_failed(r, &rd);
  if (ty != ISV__JSON_OBJECT_BEGIN)
    return isv__request_fail(r, ISV_EBADREQ, "request body must be a JSON object");
  for (;;) {
    ty = isv__json_next(&rd, &t);
    if (ty == ISV__JSON_OBJECT_END) break;
    if (ty != ISV__JSON_KEY) return reader_failed(r, &rd);
    isv__json_token key = t;
    if (isv__json_next(&rd, &v) == ISV__JSON_ERROR) return reader_failed(r, &rd);
    if (key.len == 10 && memcmp(key.ptr, "parameters", 10) == 0) {
      if (v.type != ISV__JSON_OBJECT_BEGIN)
        return isv__request_fail(r, ISV_EBADREQ, "'parameters' must be an object");
      for (;;) {
        isv__json_token pk, pv;
        ty = isv__json_next(&rd, &pk);
        if (ty == ISV__JSON_OBJECT_END) break;
        if (ty != ISV__JSON_KEY || isv__json_next(&rd, &pv) == ISV__JSON_ERROR)
          return reader_failed(r, &rd);
        if (decode_param(r, &pk, &pv) != 0) return r->status;
      }
      continue;
    }
    const isv__io *io = isv__config_input(r->model->cfg, key.ptr, key.len);
    if (io && isv_request_input(r, io->name))
      return isv__request_fail(r, ISV_EBADREQ, "input '%s' given twice", io->name);
    if ((io ? decode_input(r, &rd, &v, io) : decode_param(r, &key, &v)) != 0)
      return r->status;
  }
  if (isv__json_next(&rd, &t) != ISV__JSON_EOF) return reader_failed(r, &rd);
  return 0;
}

int isv__v2gen_encode_response(const isv_request *r, isv__buf *b) {
  const char *mn = isv_request_model_name(r), *mv = isv_request_model_version(r);
  isv__buf_puts(b, "{\"model_name\":");
  isv__json_write_string(b, mn, strlen(mn));
  isv__buf_puts(b, ",\"model_version\":");
  isv__json_write_string(b, mv, strlen(mv));
  for (size_t i = 0; i < r->n_outputs; i++) {
    const isv_tensor *t = &r->outputs[i];
    isv__buf_putc(b, ',');
    isv__json_write_string(b, t->name, strlen(t->name));
    isv__buf_putc(b, ':');
    if (t->count == 1) /* one element: the value itself, not a one-element array */
      isv__json_write_tensor_nested(b, t->dt, t->data, NULL, 0);
    else
      isv__json_write_tensor(b, t->dt, t->data, t->count);
  }
  isv__buf_putc(b, '}');
  return 0;
}
