/* grps ⇄ the canonical request: grps_conv.h has the rules. */
#include "protocol/grps_conv.h"

#include <stdio.h>
#include <string.h>

#include "codec/utf8.h"
#include "core/scheduler.h"

static const char *const kind_names[] = {"", "bin_data", "str_data", "gtensors", "ndarray",
                                         "gmap"};
static const char *const map_names[] = {"", "s_s", "s_b", "s_i32", "s_i64", "s_f", "s_d", "s_t"};

const char *isv__grps_kind_name(isv__grps_kind k) {
  return (unsigned)k < sizeof kind_names / sizeof *kind_names ? kind_names[k] : "";
}

/* ---- the model ------------------------------------------------------------------------------ */

static int resolves(isv__core *c, const isv__model_spec *spec) {
  isv_model *m;
  return isv__core_resolve(c, spec, &m) == ISV__FOUND;
}

int isv__grps_select_model(isv_request *r, const char *s, size_t n) {
  if (n == 0) {
    s = r->core->default_model;
    n = strlen(s);
    if (n == 0)
      return isv__request_fail(r, ISV_ENOTFOUND, "the request names no model (\"model\" or "
                               "?model=name-version) and the server has no default model");
  }
  isv__model_spec spec = {s, n, NULL, 0, NULL, 0};
  if (!resolves(r->core, &spec)) { /* "name-version": split at the last '-' */
    size_t dash = n;
    while (dash > 0 && s[dash - 1] != '-') dash--;
    isv__model_spec split = {s, dash - 1, s + dash, n - dash, NULL, 0};
    if (dash > 1 && dash < n && resolves(r->core, &(isv__model_spec){s, dash - 1, NULL, 0, NULL, 0}))
      spec = split; /* the name exists: an unknown version is reported as such */
  }
  r->model_name = isv__arena_strndup(&r->arena, spec.name, spec.name_len);
  r->version = spec.version ? isv__arena_strndup(&r->arena, spec.version, spec.version_len) : NULL;
  if (r->model_name == NULL || (spec.version && r->version == NULL))
    return isv__request_fail(r, ISV_ENOMEM, "out of memory");
  return isv__request_bind(r);
}

/* ---- into the request ----------------------------------------------------------------------- */

static int oom(isv_request *r) { return isv__request_fail(r, ISV_ENOMEM, "out of memory"); }

/* Append an input; shape copied (ndim 0: a [1] shape is made). */
static int add_input(isv_request *r, const char *name, isv_datatype dt, const int64_t *shape,
                     size_t ndim, const void *data, size_t count, size_t bytes) {
  for (size_t i = 0; i < r->n_inputs; i++)
    if (strcmp(r->inputs[i].name, name) == 0)
      return isv__request_fail(r, ISV_EBADREQ, "tensor '%.100s' is given twice", name);
  int64_t one = 1;
  if (shape == NULL) {
    shape = &one;
    ndim = 1;
  }
  int64_t *sh = isv__arena_alloc(&r->arena, ndim * sizeof *sh);
  if (sh == NULL) return oom(r);
  memcpy(sh, shape, ndim * sizeof *sh);
  isv_tensor *t = isv__request_push_input(r);
  if (t == NULL) return r->status;
  t->name = name;
  t->dt = dt;
  t->shape = sh;
  t->ndim = ndim;
  t->data = (void *)(uintptr_t)data;
  t->count = count;
  t->byte_size = bytes;
  return 0;
}

/* One BYTES [1] input holding (p, n). */
static int add_bytes(isv_request *r, const char *name, const char *p, size_t n) {
  isv_bytes *b = isv__arena_alloc(&r->arena, sizeof *b);
  if (b == NULL) return oom(r);
  b->ptr = p;
  b->len = n;
  return add_input(r, name, ISV_BYTES, NULL, 0, b, 1, n);
}

/* A scalar of `size` bytes as a [1] input. */
static int add_scalar(isv_request *r, const char *name, isv_datatype dt, const void *v,
                      size_t size) {
  void *p = isv__arena_alloc(&r->arena, size);
  if (p == NULL) return oom(r);
  memcpy(p, v, size);
  return add_input(r, name, dt, NULL, 0, p, 1, size);
}

static int add_tensor(isv_request *r, const char *name, const isv_tensor *t) {
  return add_input(r, name, t->dt, t->shape, t->ndim, t->data, t->count, t->byte_size);
}

/* The name of a kind's single input: the model's only declared input, else the kind's. */
static const char *single_name(const isv_request *r, isv__grps_kind k) {
  const isv_model_config *c = r->model->cfg;
  return c->n_inputs == 1 ? c->inputs[0].name : kind_names[k];
}

static int gtensors_in(isv_request *r, const isv__grps_msg *m) {
  const isv_model_config *c = r->model->cfg;
  for (size_t i = 0; i < m->n_tensors; i++) {
    const isv_tensor *t = &m->tensors[i];
    const char *name = t->name;
    if (name == NULL || name[0] == '\0') {
      if (i < c->n_inputs) {
        name = c->inputs[i].name;
      } else {
        char buf[32];
        snprintf(buf, sizeof buf, "tensor_%zu", i);
        if ((name = isv__arena_strndup(&r->arena, buf, strlen(buf))) == NULL) return oom(r);
      }
    }
    if (add_tensor(r, name, t) != 0) return r->status;
  }
  return 0;
}

static int entry_in(isv_request *r, const isv__grps_entry *e) {
  size_t ml = strlen(map_names[e->map]);
  char *name = isv__arena_alloc(&r->arena, ml + 1 + e->key_len + 1);
  if (name == NULL) return oom(r);
  memcpy(name, map_names[e->map], ml);
  name[ml] = '/';
  memcpy(name + ml + 1, e->key, e->key_len);
  name[ml + 1 + e->key_len] = '\0';
  switch (e->map) {
  case ISV__GRPS_S_S:
  case ISV__GRPS_S_B: return add_bytes(r, name, e->v.s.p, e->v.s.n);
  case ISV__GRPS_S_I32: {
    int32_t v = (int32_t)e->v.i;
    return add_scalar(r, name, ISV_INT32, &v, sizeof v);
  }
  case ISV__GRPS_S_I64: return add_scalar(r, name, ISV_INT64, &e->v.i, sizeof e->v.i);
  case ISV__GRPS_S_F: return add_scalar(r, name, ISV_FP32, &e->v.f, sizeof e->v.f);
  case ISV__GRPS_S_D: return add_scalar(r, name, ISV_FP64, &e->v.d, sizeof e->v.d);
  case ISV__GRPS_S_T: return add_tensor(r, name, &e->t);
  }
  return isv__request_fail(r, ISV_EINTERNAL, "gmap entry of no known map");
}

/* A native model's one input: the message as it came, or serialized again. */
static int native_in(isv_request *r, const isv__grps_msg *m, const uint8_t *wire, size_t len) {
  if (wire == NULL) {
    isv__buf b;
    char err[200];
    isv__buf_init(&b, r->core->mem);
    int rc = isv__grps_pb_encode(m, &b, err, sizeof err);
    if (rc == 0 && b.failed) rc = ISV_ENOMEM;
    char *p = isv__buf_release(&b, &len);
    isv__buf_free(&b);
    if (rc != 0) {
      isv__free(p);
      return isv__request_fail(r, rc == ISV_ENOMEM ? rc : ISV_EBADREQ, "%s", err);
    }
    if (isv__request_keep(r, p, isv__free) != 0) {
      isv__free(p);
      return oom(r);
    }
    wire = (const uint8_t *)p;
  }
  return add_bytes(r, "grps_message", (const char *)wire, len);
}

int isv__grps_to_request(isv_request *r, const isv__grps_msg *m, const uint8_t *wire,
                         size_t wire_len) {
  r->proto_flags = (r->proto_flags & ~ISV__GRPS_F_KIND) | (unsigned)m->kind;
  if (m->kind != ISV__GRPS_NONE) {
    const char *k = kind_names[m->kind];
    isv__param_entry *p = isv__request_push_param(r, "grps_data", 9);
    if (p == NULL) return r->status;
    p->val.type = ISV_PARAM_STRING;
    p->val.v.s.ptr = k;
    p->val.v.s.len = strlen(k);
  }
  if (r->model->cfg->native) return native_in(r, m, wire, wire_len);
  switch (m->kind) {
  case ISV__GRPS_NONE: return 0;
  case ISV__GRPS_STR_DATA:
  case ISV__GRPS_BIN_DATA: return add_bytes(r, single_name(r, m->kind), m->data, m->data_len);
  case ISV__GRPS_NDARRAY:
    if (m->n_tensors != 1)
      return isv__request_fail(r, ISV_EBADREQ, "ndarray carries data only in HTTP JSON (nested "
                               "lists of numbers): send gtensors over gRPC");
    return add_tensor(r, single_name(r, m->kind), &m->tensors[0]);
  case ISV__GRPS_GTENSORS: return gtensors_in(r, m);
  case ISV__GRPS_GMAP:
    for (size_t i = 0; i < m->n_entries; i++)
      if (entry_in(r, &m->entries[i]) != 0) return r->status;
    return 0;
  }
  return isv__request_fail(r, ISV_EINTERNAL, "unknown data kind");
}

/* ---- out of the request --------------------------------------------------------------------- */

static const isv_tensor *single_bytes(const isv_request *r) {
  return r->n_outputs == 1 && r->outputs[0].dt == ISV_BYTES && r->outputs[0].count == 1
             ? &r->outputs[0] : NULL;
}

static isv__grps_kind kind_by_name(const char *s, size_t n) {
  for (unsigned k = 1; k < sizeof kind_names / sizeof *kind_names; k++)
    if (strlen(kind_names[k]) == n && memcmp(kind_names[k], s, n) == 0) return (isv__grps_kind)k;
  return ISV__GRPS_NONE;
}

/* The map an output goes to in gmap, and its key. */
static isv__grps_map map_of(const isv_tensor *t, const char **key) {
  const char *slash = strchr(t->name, '/');
  if (slash) {
    for (unsigned k = 1; k < sizeof map_names / sizeof *map_names; k++)
      if ((size_t)(slash - t->name) == strlen(map_names[k]) &&
          memcmp(t->name, map_names[k], (size_t)(slash - t->name)) == 0) {
        *key = slash + 1;
        return (isv__grps_map)k;
      }
  }
  *key = t->name;
  if (t->count != 1 || t->ndim > 1) return ISV__GRPS_S_T;
  switch (t->dt) {
  case ISV_BYTES: {
    const isv_bytes *b = t->data;
    return isv__utf8_valid(b->ptr, b->len) ? ISV__GRPS_S_S : ISV__GRPS_S_B;
  }
  case ISV_INT32: return ISV__GRPS_S_I32;
  case ISV_INT64: return ISV__GRPS_S_I64;
  case ISV_FP32: return ISV__GRPS_S_F;
  case ISV_FP64: return ISV__GRPS_S_D;
  default: return ISV__GRPS_S_T;
  }
}

/* Whether t has the one element of dt a scalar map holds. */
static int scalar_of(const isv_tensor *t, isv_datatype dt) { return t->dt == dt && t->count == 1; }

static int entry_out(isv_request *r, const isv_tensor *t, isv__grps_entry *e) {
  const char *key;
  e->map = map_of(t, &key);
  e->key = key;
  e->key_len = strlen(key);
  int ok = 1;
  switch (e->map) {
  case ISV__GRPS_S_S:
  case ISV__GRPS_S_B:
    if ((ok = scalar_of(t, ISV_BYTES))) {
      const isv_bytes *b = t->data;
      e->v.s.p = b->ptr;
      e->v.s.n = b->len;
      ok = e->map == ISV__GRPS_S_B || isv__utf8_valid(b->ptr, b->len);
    }
    break;
  case ISV__GRPS_S_I32:
    if ((ok = scalar_of(t, ISV_INT32))) e->v.i = *(const int32_t *)t->data;
    break;
  case ISV__GRPS_S_I64:
    if ((ok = scalar_of(t, ISV_INT64))) e->v.i = *(const int64_t *)t->data;
    break;
  case ISV__GRPS_S_F:
    if ((ok = scalar_of(t, ISV_FP32))) e->v.f = *(const float *)t->data;
    break;
  case ISV__GRPS_S_D:
    if ((ok = scalar_of(t, ISV_FP64))) e->v.d = *(const double *)t->data;
    break;
  case ISV__GRPS_S_T:
    e->t = *t;
    e->t.name = key; /* its entry's key, not the "s_t/" output name */
    break;
  }
  if (!ok)
    return isv__request_fail(r, ISV_EBACKEND, "output '%s' (%s, %zu elements) does not fit gmap's "
                             "%s", t->name, isv_datatype_name(t->dt), t->count,
                             map_names[e->map]);
  return 0;
}

static int gmap_out(isv_request *r, isv__grps_msg *out) {
  out->entries = isv__arena_calloc(&r->arena, r->n_outputs ? r->n_outputs : 1, sizeof *out->entries);
  if (out->entries == NULL) return oom(r);
  for (size_t i = 0; i < r->n_outputs; i++)
    if (entry_out(r, &r->outputs[i], &out->entries[i]) != 0) return r->status;
  out->n_entries = r->n_outputs;
  return 0;
}

/* The kind the reply carries (see grps_conv.h), or NONE with r failed. */
static isv__grps_kind reply_kind(isv_request *r, unsigned flags) {
  const isv_param *p = NULL;
  for (size_t i = 0; i < r->n_resp_params; i++)
    if (strcmp(r->resp_params[i].key, "grps_data") == 0) p = &r->resp_params[i].val;
  const char *mn = r->model->cfg->name;
  if (flags & ISV__GRPS_F_NDARRAY) p = NULL; /* the client's ask wins over the backend's kind */
  if (p) {
    isv__grps_kind k = p->type == ISV_PARAM_STRING ? kind_by_name(p->v.s.ptr, p->v.s.len)
                                                   : ISV__GRPS_NONE;
    if (k == ISV__GRPS_NONE)
      return isv__request_fail(r, ISV_EBACKEND, "model '%s' set response parameter grps_data to "
                               "something other than str_data, bin_data, gtensors, ndarray or "
                               "gmap", mn), ISV__GRPS_NONE;
    if ((k == ISV__GRPS_STR_DATA || k == ISV__GRPS_BIN_DATA) && single_bytes(r) == NULL)
      return isv__request_fail(r, ISV_EBACKEND, "model '%s' answers %s but its outputs are not "
                               "one BYTES element", mn, kind_names[k]), ISV__GRPS_NONE;
    if (k != ISV__GRPS_NDARRAY) return k;
  }
  if ((p || (flags & ISV__GRPS_F_NDARRAY)) &&
      (r->n_outputs != 1 || r->outputs[0].dt != ISV_FP32))
    return isv__request_fail(r, p ? ISV_EBACKEND : ISV_EBADREQ, "an ndarray answer needs exactly "
                             "one FP32 output; model '%s' answered %zu output%s%s%s", mn,
                             r->n_outputs, r->n_outputs == 1 ? " of type " : "s",
                             r->n_outputs == 1 ? isv_datatype_name(r->outputs[0].dt) : "",
                             p ? "" : " (asked with return-ndarray=true)"), ISV__GRPS_NONE;
  if (p || (flags & ISV__GRPS_F_NDARRAY)) return ISV__GRPS_NDARRAY;
  isv__grps_kind asked = (isv__grps_kind)(flags & ISV__GRPS_F_KIND);
  if ((asked == ISV__GRPS_STR_DATA || asked == ISV__GRPS_BIN_DATA) && single_bytes(r)) {
    if (asked == ISV__GRPS_STR_DATA) {
      const isv_bytes *b = r->outputs[0].data;
      if (!isv__utf8_valid(b->ptr, b->len)) return ISV__GRPS_BIN_DATA; /* str_data is UTF-8 */
    }
    return asked;
  }
  if (asked == ISV__GRPS_GMAP) return ISV__GRPS_GMAP;
  return ISV__GRPS_GTENSORS;
}

static int native_out(isv_request *r, isv__grps_msg *out) {
  const isv_tensor *t = NULL;
  for (size_t i = 0; i < r->n_outputs; i++)
    if (strcmp(r->outputs[i].name, "grps_message") == 0) t = &r->outputs[i];
  if (t == NULL || t->dt != ISV_BYTES || t->count != 1)
    return isv__request_fail(r, ISV_EBACKEND, "native model '%s' did not set output "
                             "'grps_message' (BYTES, one element)", r->model->cfg->name);
  const isv_bytes *b = t->data;
  isv__grps_limits lim = {r->core->opts.max_tensors, r->core->opts.max_json_depth};
  char err[256];
  int rc = isv__grps_pb_decode((const uint8_t *)b->ptr, b->len, &lim, &r->arena, out, err,
                               sizeof err);
  if (rc != 0)
    return isv__request_fail(r, rc == ISV_ENOMEM ? rc : ISV_EBACKEND, "native model '%s' "
                             "answered a GrpsMessage that does not decode: %s",
                             r->model->cfg->name, err);
  return 0;
}

int isv__grps_reply_of(isv_request *r, unsigned flags, isv__grps_msg *out) {
  memset(out, 0, sizeof *out);
  out->has_status = 1;
  out->code = 200;
  out->msg = "OK";
  out->msg_len = 2;
  out->flag = ISV__GRPS_SUCCESS;
  if (r->model->cfg->native) {
    int rc = native_out(r, out);
    out->has_status = 1; /* the library's, whatever the backend wrote */
    out->code = 200;
    out->msg = "OK";
    out->msg_len = 2;
    out->flag = ISV__GRPS_SUCCESS;
    return rc;
  }
  isv__grps_kind k = r->n_outputs == 0 ? ISV__GRPS_NONE : reply_kind(r, flags);
  if (r->status != 0) return r->status;
  out->kind = k;
  switch (k) {
  case ISV__GRPS_NONE: break;
  case ISV__GRPS_STR_DATA:
  case ISV__GRPS_BIN_DATA: {
    const isv_bytes *b = r->outputs[0].data;
    out->data = b->ptr;
    out->data_len = b->len;
    break;
  }
  case ISV__GRPS_NDARRAY:
  case ISV__GRPS_GTENSORS:
    out->tensors = r->outputs;
    out->n_tensors = k == ISV__GRPS_NDARRAY ? 1 : r->n_outputs;
    break;
  case ISV__GRPS_GMAP: return gmap_out(r, out);
  }
  return 0;
}

void isv__grps_error_reply(int err, const char *msg, isv__grps_msg *out) {
  static _Thread_local char fixed[512];
  memset(out, 0, sizeof *out);
  out->has_status = 1;
  out->code = isv_err_http_status(err);
  if (msg == NULL || msg[0] == '\0') msg = isv_strerror(err);
  size_t n = strlen(msg);
  if (!isv__utf8_valid(msg, n)) { /* a client's bytes in it: status.msg is a proto3 string */
    if (n >= sizeof fixed) n = sizeof fixed - 1;
    for (size_t i = 0; i < n; i++) fixed[i] = (unsigned char)msg[i] < 0x80 ? msg[i] : '?';
    fixed[n] = '\0';
    msg = fixed;
  }
  out->msg = msg;
  out->msg_len = strlen(msg);
  out->flag = ISV__GRPS_FAILURE;
}
