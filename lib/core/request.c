/* The request object: construction (frontends and the in-process API), accessors for
 * backends, and output allocation. */
#include "core/request.h"
#include "codec/compiler.h"

#include "codec/datatype.h"
#include "core/offload.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

isv_request *isv__request_new(isv__core *c) {
  /* the struct of one that left the quarantine (bury) when there is one: no free and calloc per
   * request — it was as dead as freed memory, which malloc would hand out again as soon */
  isv_request *r = atomic_exchange_explicit(&c->q_spare, NULL, memory_order_acquire);
  if (r != NULL) memset(r, 0, sizeof *r);
  else if ((r = isv__calloc(c->mem, 1, sizeof *r)) == NULL) return NULL;
  r->core = c;
  r->arena.bufs = &c->bufs;
  r->out_arena.bufs = &c->bufs;
  r->arena.spare = &c->arena_spare; /* its first chunk, the one a request before let go */
  r->id = "";
  r->errmsg = "";
  return r;
}

int isv__request_fail(isv_request *r, int status, const char *fmt, ...) {
  char tmp[512];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  if (n < 0) n = 0;
  if ((size_t)n >= sizeof tmp) n = sizeof tmp - 1;
  const char *m = isv__arena_strndup(&r->arena, tmp, (size_t)n);
  r->errmsg = m ? m : isv_strerror(status);
  r->status = status;
  return status;
}

void isv__request_backend_failed(isv_request *r, int code, const char *message) {
  if (isv__err_known(code) && code != ISV_EINVAL && code != ISV_EEXIST) {
    const char *m = message && message[0] ? isv__arena_strndup(&r->arena, message, strlen(message))
                                          : NULL;
    r->status = code;
    r->errmsg = m ? m : isv_strerror(code);
    return;
  }
  /* A bug of the backend's, not the client's fault: 500, and a line in the host's log. */
  r->backend_fault = 1;
  if (code == ISV_EINVAL || code == ISV_EEXIST) { /* a library call's rule was broken */
    if (message && message[0])
      isv__request_fail(r, ISV_EBACKEND, "%s (%s)", message, isv_err_name(code));
    else if (r->misuse)
      isv__request_fail(r, ISV_EBACKEND, "%s", r->misuse);
    else
      isv__request_fail(r, ISV_EBACKEND, "the backend failed with %s (%s)", isv_err_name(code),
                        isv_strerror(code));
  } else if (message && message[0]) {
    isv__request_fail(r, ISV_EBACKEND, "%s (backend code %d, not an ISV_E* code)", message, code);
  } else {
    isv__request_fail(r, ISV_EBACKEND, "backend failed with code %d, which is not an ISV_E* code",
                      code);
  }
}

static void *grow_in(isv__arena *a, void **arr, size_t *n, size_t *cap, size_t elsize) {
  if (*n == *cap) {
    size_t ncap = *cap ? *cap * 2 : 4;
    void *na = isv__arena_alloc(a, ncap * elsize);
    if (na == NULL) return NULL;
    if (*n) memcpy(na, *arr, *n * elsize);
    *arr = na;
    *cap = ncap;
  }
  void *e = (char *)*arr + (*n)++ * elsize;
  memset(e, 0, elsize);
  return e;
}

static void *grow(isv_request *r, void **arr, size_t *n, size_t *cap, size_t elsize) {
  return grow_in(&r->arena, arr, n, cap, elsize);
}

int isv__request_within_limit(isv_request *r, size_t count, const char *what) {
  unsigned max = r->core->opts.max_tensors;
  if (count <= max) return 0;
  return isv__request_fail(r, ISV_EBADREQ, "more than %u %s in one request (the server's limit)",
                           max, what);
}

static int room_for(isv_request *r, size_t n, const char *what) {
  return isv__request_within_limit(r, n + 1, what) == 0;
}

static void *pushed(isv_request *r, void *e) {
  if (e == NULL) isv__request_fail(r, ISV_ENOMEM, "out of memory");
  return e;
}

isv_tensor *isv__request_push_input(isv_request *r) {
  if (!room_for(r, r->n_inputs, "inputs")) return NULL;
  return pushed(r, grow(r, (void **)&r->inputs, &r->n_inputs, &r->cap_inputs, sizeof(isv_tensor)));
}

isv__req_output *isv__request_push_output(isv_request *r) {
  if (!room_for(r, r->n_req_outputs, "requested outputs")) return NULL;
  return pushed(r, grow(r, (void **)&r->req_outputs, &r->n_req_outputs, &r->cap_req_outputs,
                        sizeof(isv__req_output)));
}

/* The entry for key in a parameter list (found and cleared, or appended). */
static isv__param_entry *param_slot(isv__arena *a, isv__param_entry **arr, size_t *n,
                                    size_t *cap, const char *key, size_t klen) {
  for (size_t i = 0; i < *n; i++)
    if (strlen((*arr)[i].key) == klen && memcmp((*arr)[i].key, key, klen) == 0) {
      memset(&(*arr)[i].val, 0, sizeof(*arr)[i].val);
      return &(*arr)[i];
    }
  char *k = isv__arena_strndup(a, key, klen);
  if (k == NULL) return NULL;
  isv__param_entry *p = grow_in(a, (void **)arr, n, cap, sizeof(isv__param_entry));
  if (p) p->key = k;
  return p;
}

isv__param_entry *isv__request_push_param(isv_request *r, const char *key, size_t klen) {
  if (!room_for(r, r->n_params, "parameters")) return NULL;
  return pushed(r, param_slot(&r->arena, &r->params, &r->n_params, &r->cap_params, key, klen));
}

/* A push failed for a request the host is building: the call fails, the request does not. */
static int call_failed(isv_request *r) {
  int rc = r->status ? r->status : ISV_ENOMEM;
  r->status = 0;
  r->errmsg = "";
  return rc;
}

int isv__shape_count(const int64_t *shape, size_t ndim, size_t elsize, size_t *count,
                     size_t *bytes) {
  /* overflow checked by the multiplications themselves: a division per dimension (this runs
   * for every input and output of every request) costs 20-40 cycles each */
  uint64_t n = 1, b;
  for (size_t i = 0; i < ndim; i++)
    if (shape[i] < 0 || __builtin_mul_overflow(n, (uint64_t)shape[i], &n)) return -1;
  /* A tensor can never exceed what a body can carry; keep products well inside ptrdiff_t. */
  if (__builtin_mul_overflow(n, (uint64_t)(elsize ? elsize : 1), &b) || b > (SIZE_MAX >> 2))
    return -1;
  *count = (size_t)n;
  if (bytes) *bytes = (size_t)n * elsize;
  return 0;
}

void isv__shape_text(char *out, size_t cap, const int64_t *shape, size_t ndim, int batch) {
  size_t k = 0, n = ndim + (batch != 0);
  out[k++] = '[';
  for (size_t i = 0; i < n; i++) {
    if (k + 21 + 6 > cap) { /* room for one more number, or for ",...]" */
      k += (size_t)snprintf(out + k, cap - k, "%s...", i ? "," : "");
      break;
    }
    long long v = batch ? (i ? (long long)shape[i - 1] : -1) : (long long)shape[i];
    k += (size_t)snprintf(out + k, cap - k, "%s%lld", i ? "," : "", v);
  }
  out[k++] = ']';
  out[k] = '\0';
}

size_t isv__bytes_total(const isv_bytes *b, size_t n) {
  size_t t = 0;
  for (size_t i = 0; i < n; i++) t += b[i].len;
  return t;
}

/* ---- tensors ----------------------------------------------------------------------------- */

ISV_EXTERN const char *isv_tensor_name(const isv_tensor *t) { return t ? t->name : NULL; }
ISV_EXTERN isv_datatype isv_tensor_datatype(const isv_tensor *t) {
  return t ? t->dt : ISV_TYPE_INVALID;
}
ISV_EXTERN const int64_t *isv_tensor_shape(const isv_tensor *t, size_t *ndim) {
  if (ndim) *ndim = t ? t->ndim : 0;
  return t ? t->shape : NULL;
}
ISV_EXTERN size_t isv_tensor_element_count(const isv_tensor *t) { return t ? t->count : 0; }
ISV_EXTERN const void *isv_tensor_data(const isv_tensor *t) { return t ? t->data : NULL; }
ISV_EXTERN size_t isv_tensor_byte_size(const isv_tensor *t) { return t ? t->byte_size : 0; }

/* ---- backend side ------------------------------------------------------------------------ */

/* Whether a reader may look at r: a request the host (or the core) freed is in the quarantine,
 * its buffers gone — a backend reading it after completing (a bug the library survives) sees
 * an empty request, never freed memory. */
static inline int live(const isv_request *r) { return r != NULL && !isv__request_dead(r); }

ISV_EXTERN const char *isv_request_model_name(const isv_request *r) {
  if (!live(r)) return NULL;
  return r->model ? r->model->cfg->name : r->model_name;
}
ISV_EXTERN const char *isv_request_model_version(const isv_request *r) {
  if (!live(r)) return NULL;
  return r->model ? r->model->version : r->version;
}
ISV_EXTERN const char *isv_request_id(const isv_request *r) { return live(r) ? r->id : ""; }
ISV_EXTERN size_t isv_request_input_count(const isv_request *r) {
  return live(r) ? r->n_inputs : 0;
}
ISV_EXTERN const isv_tensor *isv_request_input_at(const isv_request *r, size_t i) {
  return live(r) && i < r->n_inputs ? &r->inputs[i] : NULL;
}
ISV_EXTERN const isv_tensor *isv_request_input(const isv_request *r, const char *name) {
  for (size_t i = 0; live(r) && name && i < r->n_inputs; i++)
    if (strcmp(r->inputs[i].name, name) == 0) return &r->inputs[i];
  return NULL;
}
ISV_EXTERN const isv_param *isv_request_param(const isv_request *r, const char *key) {
  for (size_t i = 0; live(r) && key && i < r->n_params; i++)
    if (strcmp(r->params[i].key, key) == 0) return &r->params[i].val;
  return NULL;
}
ISV_EXTERN size_t isv_request_param_count(const isv_request *r) {
  return live(r) ? r->n_params : 0;
}
ISV_EXTERN const char *isv_request_param_at(const isv_request *r, size_t i, const isv_param **v) {
  if (!live(r) || i >= r->n_params) return NULL;
  if (v) *v = &r->params[i].val;
  return r->params[i].key;
}

ISV_EXTERN int isv_request_is_output_requested(const isv_request *r, const char *name) {
  if (name == NULL || !live(r)) return 0;
  if (r->n_req_outputs == 0)
    return r->model && (r->model->cfg->open_io ||
                        isv__config_output(r->model->cfg, name, strlen(name)) != NULL);
  for (size_t i = 0; i < r->n_req_outputs; i++)
    if (strcmp(r->req_outputs[i].name, name) == 0) return 1;
  return 0;
}

ISV_EXTERN int isv_request_is_cancelled(const isv_request *r) {
  return r ? atomic_load_explicit(&((isv_request *)r)->cancelled, memory_order_relaxed) : 0;
}

ISV_EXTERN void *isv_request_alloc(isv_request *r, size_t n) {
  return r && !isv__request_dead(r) ? isv__arena_alloc(&r->arena, n) : NULL;
}

/* Does `shape` fit the declared io (with the model's batch dimension)? */
static int shape_fits(const isv_model_config *c, const isv__io *io, const int64_t *shape,
                      size_t ndim) {
  size_t off = c->max_batch > 0;
  if (io->any_rank ? ndim < off : ndim != io->ndim + off) return 0;
  if (off && (shape[0] < 0 || (uint64_t)shape[0] > c->max_batch)) return 0;
  if (io->any_rank) return 1; /* negative sizes: isv__shape_count refuses them */
  for (size_t i = 0; i < io->ndim; i++)
    if (io->shape[i] != -1 && io->shape[i] != shape[i + off]) return 0;
  return 1;
}

/* A backend's call on r broke a rule: why, kept for the request's error should the backend
 * fail it with this code (isv__request_backend_failed), and returned. */
static int misuse(isv_request *r, int code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
static int misuse(isv_request *r, int code, const char *fmt, ...) {
  char msg[300];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  const char *m = isv__arena_strndup(&r->arena, msg, strlen(msg));
  if (m) r->misuse = m;
  return code;
}

/* Whether r's backend completed it already (isv_request_complete, or infer's error): from then
 * on the loop owns its outputs — it may be encoding them — so a late output or parameter is
 * refused (ISV_ESTATE) and changes nothing of r, not even its misuse text. */
static int completed_already(isv_request *r) {
  /* no lock: the answer is as stale the moment the lock is let go (an acquire load, so that a
   * completion on another thread is seen with what it wrote before) */
  return r->core != NULL && atomic_load_explicit(&r->completed, memory_order_acquire);
}

/* Appends output tensor `name` (copied) with its shape copied; data is left for the caller. */
static int append_slot(isv_request *r, const char *name, isv_datatype dt, const int64_t *shape,
                       size_t ndim, size_t count, size_t bytes, isv_tensor **out) {
  isv__arena *a = isv__out_arena(r);
  int64_t *sh = isv__arena_alloc(a, (ndim ? ndim : 1) * sizeof *sh);
  isv_tensor *t = sh ? grow_in(a, (void **)&r->outputs, &r->n_outputs, &r->cap_outputs, sizeof *t)
                     : NULL;
  if (t == NULL) return ISV_ENOMEM;
  if (ndim) memcpy(sh, shape, ndim * sizeof *sh);
  t->name = name;
  t->dt = dt;
  t->shape = sh;
  t->ndim = ndim;
  t->count = count;
  t->byte_size = bytes;
  *out = t;
  return 0;
}

/* An output an open-I/O model does not declare: any valid datatype and shape, a new name. */
static int open_slot(isv_request *r, const char *name, isv_datatype dt, const int64_t *shape,
                     size_t ndim, isv_tensor **out) {
  const char *mn = r->model->cfg->name;
  if (isv__dt_size(dt) == 0)
    return misuse(r, ISV_EINVAL, "output '%.100s' of model '%s': not a valid datatype", name, mn);
  if (ndim > ISV__MAX_NDIM)
    return misuse(r, ISV_EINVAL, "output '%.100s' of model '%s' has %zu dimensions, more than %d",
                  name, mn, ndim, ISV__MAX_NDIM);
  for (size_t i = 0; i < r->n_outputs; i++)
    if (strcmp(r->outputs[i].name, name) == 0)
      return misuse(r, ISV_EEXIST, "output '%.100s' of model '%s' was already set", name, mn);
  size_t count, bytes;
  if (isv__shape_count(shape, ndim, isv__dt_size(dt), &count, &bytes) != 0)
    return misuse(r, ISV_EINVAL, "output '%.100s' of model '%s': its shape is negative or "
                  "overflows", name, mn);
  const char *copy = isv__arena_strndup(isv__out_arena(r), name, strlen(name));
  if (copy == NULL) return ISV_ENOMEM;
  return append_slot(r, copy, dt, shape, ndim, count, bytes, out);
}

/* Checks name, datatype and shape against the model and appends the output's tensor with its
 * shape copied; data is left for the caller. */
static int output_slot(isv_request *r, const char *name, isv_datatype dt, const int64_t *shape,
                       size_t ndim, isv_tensor **out) {
  if (r == NULL) return ISV_EINVAL;
  if (isv__request_dead(r)) return ISV_ESTATE; /* completed and freed: no outputs any more */
  if (completed_already(r)) return ISV_ESTATE;
  if (name == NULL || r->model == NULL || (ndim && !shape))
    return misuse(r, ISV_EINVAL, "an output needs a name%s", ndim && !shape ? " and a shape" : "");
  const isv_model_config *c = r->model->cfg;
  const isv__io *io = isv__config_output(c, name, strlen(name));
  if (io == NULL && c->open_io) return open_slot(r, name, dt, shape, ndim, out);
  if (io == NULL)
    return misuse(r, ISV_EINVAL, "model '%s' declares no output '%.100s'", c->name, name);
  if (io->dt != dt)
    return misuse(r, ISV_EINVAL, "output '%s' of model '%s' is %s, not %s", io->name, c->name,
                  isv_datatype_name(io->dt), isv_datatype_name(dt) ? isv_datatype_name(dt)
                                                                   : "a valid datatype");
  if (!shape_fits(c, io, shape, ndim)) {
    char want[160], got[160];
    isv__shape_text(want, sizeof want, io->shape, io->ndim, c->max_batch > 0);
    isv__shape_text(got, sizeof got, shape, ndim, 0);
    return misuse(r, ISV_EINVAL, "output '%s' of model '%s' has shape %s, the model declares %s%s",
                  io->name, c->name, got, want,
                  c->max_batch ? " (the first dimension at most max_batch)" : "");
  }
  for (size_t i = 0; i < r->n_outputs; i++)
    if (r->outputs[i].name == io->name)
      return misuse(r, ISV_EEXIST, "output '%s' of model '%s' was already set", io->name, c->name);
  size_t count, bytes;
  if (isv__shape_count(shape, ndim, isv__dt_size(dt), &count, &bytes) != 0)
    return misuse(r, ISV_EINVAL, "output '%s' of model '%s': its shape overflows", io->name,
                  c->name);
  /* io->name: the config outlives the request (it holds a model reference) */
  return append_slot(r, io->name, dt, shape, ndim, count, bytes, out);
}

/* The destination buffer the request gives for its output `name`, if any. */
static const isv__out_dest *requested_dest(const isv_request *r, const char *name) {
  for (size_t i = 0; i < r->n_req_outputs; i++)
    if (r->req_outputs[i].dest && strcmp(r->req_outputs[i].name, name) == 0)
      return r->req_outputs[i].dest;
  return NULL;
}

ISV_EXTERN int isv_request_alloc_output(isv_request *r, const char *name, isv_datatype dt,
                                  const int64_t *shape, size_t ndim, void **data) {
  if (data == NULL) return ISV_EINVAL;
  *data = NULL;
  isv_tensor *t;
  int rc = output_slot(r, name, dt, shape, ndim, &t);
  if (rc != 0) return rc;
  /* the requester's buffer when it named one and the output fits there, aligned as promised
   * (else library memory, copied there or refused after the backend: postprocess) */
  const isv__out_dest *d = r->stream ? NULL : requested_dest(r, t->name);
  void *buf = d && d->p && dt != ISV_BYTES && t->byte_size <= d->cap && (uintptr_t)d->p % 16 == 0
                  ? d->p
                  : isv__arena_alloc(isv__out_arena(r), t->byte_size);
  if (buf == NULL) {
    r->n_outputs--;
    return ISV_ENOMEM;
  }
  if (dt == ISV_BYTES) memset(buf, 0, t->byte_size);
  t->data = buf;
  *data = buf;
  return 0;
}

/* A copy of a tensor's data in the arena; for BYTES the element array and every element's
 * memory in one block. NULL when out of memory. */
static void *copy_data(isv__arena *a, isv_datatype dt, const void *data, size_t count,
                       size_t bytes) {
  size_t extra = dt == ISV_BYTES ? isv__bytes_total(data, count) : 0;
  void *d = isv__arena_alloc(a, bytes + extra);
  if (d == NULL) return NULL;
  if (bytes) memcpy(d, data, bytes);
  if (dt == ISV_BYTES) {
    isv_bytes *b = d;
    char *p = (char *)d + bytes;
    for (size_t i = 0; i < count; i++) {
      if (b[i].len) memcpy(p, b[i].ptr, b[i].len);
      b[i].ptr = p;
      p += b[i].len;
    }
  }
  return d;
}

static int bytes_valid(const isv_bytes *b, size_t count) {
  for (size_t i = 0; i < count; i++)
    if (b[i].len && b[i].ptr == NULL) return 0;
  return 1;
}

ISV_EXTERN int isv_request_set_output(isv_request *r, const char *name, isv_datatype dt,
                                      const int64_t *shape, size_t ndim, const void *data,
                                      size_t byte_size, isv_destructor del) {
  int owned = del != ISV_STATIC && del != ISV_TRANSIENT && data != NULL;
  isv_tensor *t = NULL;
  int rc = output_slot(r, name, dt, shape, ndim, &t);
  if (rc != 0) goto fail;
  rc = ISV_EINVAL;
  if (t->byte_size && data == NULL) {
    misuse(r, rc, "output '%s': no data for %zu bytes", t->name, t->byte_size);
    goto fail_slot;
  }
  if (dt != ISV_BYTES && byte_size != t->byte_size) {
    misuse(r, rc, "output '%s': %zu bytes given, its shape holds %zu", t->name, byte_size,
           t->byte_size);
    goto fail_slot;
  }
  if (dt == ISV_BYTES && !bytes_valid(data, t->count)) {
    misuse(r, rc, "output '%s': a BYTES element with a length and no pointer", t->name);
    goto fail_slot;
  }
  rc = ISV_ENOMEM;
  isv__owned *o = NULL;
  if (owned && (o = isv__arena_alloc(isv__out_arena(r), sizeof *o)) == NULL) goto fail_slot;
  size_t align = dt == ISV_BYTES ? _Alignof(isv_bytes) : isv__dt_size(dt);
  void *d = (void *)data;
  /* misaligned memory is copied: backends and encoders read elements in place */
  if (data && (del == ISV_TRANSIENT || (uintptr_t)data % align != 0) &&
      (d = copy_data(isv__out_arena(r), dt, data, t->count, t->byte_size)) == NULL)
    goto fail_slot;
  if (o) {
    o->p = (void *)data;
    o->del = del;
    o->next = r->owned;
    r->owned = o;
  }
  t->data = d;
  if (dt == ISV_BYTES) t->byte_size = isv__bytes_total(d, t->count);
  return 0;
fail_slot:
  r->n_outputs--;
fail:
  if (owned) del((void *)data);
  return rc;
}

/* ---- client side (in process) ------------------------------------------------------------ */

ISV_EXTERN int isv_request_new(isv_server *srv, const char *name, const char *version,
                               isv_request **out);
/* isv_request_new is defined in server.c: it needs the server's core. */

/* A freed request's struct is not returned at once: it stays, dead, in the core's quarantine
 * while the next ISV__QUARANTINE requests are freed, so that a backend that completes (or
 * sets an output of) a request twice — the second time after the response went out, from a
 * worker thread — gets ISV_ESTATE instead of writing into freed memory. Its buffers are
 * released at once; only the struct waits. */
static void bury(isv_request *r, isv__arena_chunk *chunk) {
  isv__core *c = r->core;
  if (c == NULL || c->closed) {
    isv__arena_chunk_free(chunk);
    isv__free(r);
    return;
  }
  uv_mutex_lock(&c->mu);
  /* its arena's shared chunk for the next request's, when none is kept: under mu, as the close
   * that frees the one kept (a release on a backend's thread may race the close) */
  isv__arena_chunk *no_chunk = NULL;
  if (chunk != NULL && !c->closed &&
      atomic_compare_exchange_strong_explicit(&c->arena_spare, &no_chunk, chunk,
                                              memory_order_release, memory_order_relaxed))
    chunk = NULL;
  ISV_ASSERT(!isv__request_dead(r), "a request is freed once");
  atomic_store_explicit(&r->dead, 1, memory_order_relaxed);
  isv_request *old = c->q_len == ISV__QUARANTINE ? c->quarantine[c->q_next] : NULL;
  c->quarantine[c->q_next] = r;
  c->q_next = (c->q_next + 1) % ISV__QUARANTINE;
  if (c->q_len < ISV__QUARANTINE) c->q_len++;
  isv_request *none = NULL; /* out of quarantine: the next request's struct, if none is kept */
  if (old != NULL && atomic_compare_exchange_strong_explicit(&c->q_spare, &none, old,
                                                             memory_order_release,
                                                             memory_order_relaxed))
    old = NULL;
  uv_mutex_unlock(&c->mu);
  isv__arena_chunk_free(chunk);
  isv__free(old);
}

/* A request's own buffers (its wire bytes and its arenas), freed on the worker pool when they
 * are large and this is the loop thread: unmapping a 64 MiB body took ~0.5 ms of the host's loop
 * (bench/RESULTS.md, loop stall). The host's destructors still run here, on the thread they
 * were promised. */
typedef struct late_buffers {
  isv__offload off;
  void *body;
  void (*body_free)(void *);
  isv__arena arena, out_arena;
} late_buffers;

static void free_buffers(void *body, void (*body_free)(void *), isv__arena *a, isv__arena *out) {
  if (body) body_free(body);
  isv__arena_free(out);
  isv__arena_free(a);
}

static void late_work(isv__offload *o) {
  late_buffers *l = (late_buffers *)o;
  free_buffers(l->body, l->body_free, &l->arena, &l->out_arena);
}
static void late_after(isv__offload *o) { isv__free(o); }

/* 1: r's buffers went to the pool (r no longer holds them). */
static int free_buffers_later(isv_request *r) {
  isv__core *c = r->core;
  if (c == NULL || c->closed || !isv__on_loop_thread(c)) return 0;
  size_t bytes = r->body ? r->body_len : 0;
  bytes += isv__arena_capacity(&r->arena) + isv__arena_capacity(&r->out_arena);
  if (bytes < ISV__FREE_LATER_MIN_BYTES) return 0;
  late_buffers *l = isv__malloc(c->mem, sizeof *l);
  if (l == NULL) return 0;
  *l = (late_buffers){.body = r->body, .body_free = r->body_free, .arena = r->arena,
                      .out_arena = r->out_arena};
  if (isv__offload_run(c, &l->off, late_work, late_after) != 0) {
    isv__free(l);
    return 0;
  }
  r->body = NULL;
  r->arena.head = r->out_arena.head = NULL;
  return 1;
}

void isv__request_release(isv_request *r) {
  for (size_t i = 0; i < r->n_inputs; i++) {
    isv_destructor d = r->inputs[i].del;
    if (d != ISV_STATIC && d != ISV_TRANSIENT) d(r->inputs[i].data);
  }
  for (isv__owned *o = r->owned; o; o = o->next) o->del(o->p);
  for (isv__owned *o = r->refs; o; o = o->next) o->del(o->p);
  if (r->model && r->parent == NULL) isv__model_unref(r->model); /* a response borrows it */
  /* the body after the inputs pointing into it */
  isv__arena_chunk *chunk = NULL; /* kept for the next request (bury) */
  if (!free_buffers_later(r)) {
    chunk = isv__arena_detach(&r->arena);
    free_buffers(r->body, r->body_free, &r->arena, &r->out_arena);
  }
  bury(r, chunk);
}

int isv__request_trace(isv_request *r, const char *tp, size_t tp_len, const char *ts,
                       size_t ts_len) {
  isv__traceparent t;
  if (tp == NULL || isv__traceparent_parse(tp, tp_len, &t) != 0) return ISV_EINVAL;
  if (ts != NULL && !isv__tracestate_ok(ts, ts_len)) return ISV_EINVAL;
  const char *copy = ts ? isv__arena_strndup(&r->arena, ts, ts_len) : NULL;
  if (ts != NULL && copy == NULL) return ISV_ENOMEM;
  r->trace = (isv__req_trace){.has = 1, .tp = t, .state = copy};
  return 0;
}

ISV_EXTERN int isv_request_set_trace_context(isv_request *r, const char *traceparent,
                                             const char *tracestate) {
  if (r == NULL || traceparent == NULL || r->submitted) return ISV_EINVAL;
  return isv__request_trace(r, traceparent, strlen(traceparent), tracestate,
                            tracestate ? strlen(tracestate) : 0);
}

ISV_EXTERN int isv_request_trace_context(const isv_request *r, isv_trace_context *out) {
  if (r == NULL || out == NULL) return ISV_EINVAL;
  if (isv__request_dead(r)) return ISV_ESTATE;
  if (!r->trace.has) return ISV_ENOTFOUND;
  memcpy(out->trace_id, r->trace.tp.trace_id, 16);
  memcpy(out->parent_id, r->trace.tp.parent_id, 8);
  out->flags = r->trace.tp.flags;
  out->tracestate = r->trace.state;
  return 0;
}

ISV_EXTERN int isv_request_set_id(isv_request *r, const char *id) {
  if (r == NULL || id == NULL || r->submitted) return ISV_EINVAL;
  const char *p = isv__arena_strndup(&r->arena, id, strlen(id));
  if (p == NULL) return ISV_ENOMEM;
  r->id = p;
  r->has_id = 1;
  return 0;
}

ISV_EXTERN int isv_request_add_input(isv_request *r, const char *name, isv_datatype dt,
                                     const int64_t *shape, size_t ndim, const void *data,
                                     size_t byte_size, isv_destructor del) {
  int rc = ISV_EINVAL;
  size_t count, bytes;
  isv_tensor *t = NULL;
  if (r == NULL || r->submitted || name == NULL || isv__dt_size(dt) == 0 ||
      (ndim && shape == NULL) || ndim > ISV__MAX_NDIM ||
      isv__shape_count(shape, ndim, isv__dt_size(dt), &count, &bytes) != 0 ||
      (bytes && data == NULL))
    goto fail;
  if (dt != ISV_BYTES && byte_size != bytes) goto fail;
  if (dt == ISV_BYTES && !bytes_valid(data, count)) goto fail;
  rc = ISV_ENOMEM;
  const char *nm = isv__arena_strndup(&r->arena, name, strlen(name));
  int64_t *sh = isv__arena_alloc(&r->arena, (ndim ? ndim : 1) * sizeof *sh);
  if (nm == NULL || sh == NULL) goto fail;
  if ((t = isv__request_push_input(r)) == NULL) {
    rc = call_failed(r);
    goto fail;
  }
  if (ndim) memcpy(sh, shape, ndim * sizeof *sh);
  void *d = (void *)data;
  if (del == ISV_TRANSIENT && (d = copy_data(&r->arena, dt, data, count, bytes)) == NULL) {
    r->n_inputs--;
    goto fail;
  }
  t->name = nm;
  t->dt = dt;
  t->shape = sh;
  t->ndim = ndim;
  t->data = d;
  t->count = count;
  t->byte_size = dt == ISV_BYTES ? isv__bytes_total(d, count) : bytes;
  t->del = del;
  return 0;
fail:
  if (del != ISV_STATIC && del != ISV_TRANSIENT && data != NULL) del((void *)data);
  return rc;
}

ISV_EXTERN int isv_request_add_requested_output(isv_request *r, const char *name,
                                                uint32_t classification) {
  if (r == NULL || r->submitted || name == NULL) return ISV_EINVAL;
  const char *nm = isv__arena_strndup(&r->arena, name, strlen(name));
  if (nm == NULL) return ISV_ENOMEM;
  isv__req_output *o = isv__request_push_output(r);
  if (o == NULL) return call_failed(r);
  o->name = nm;
  o->classification = classification;
  return 0;
}

ISV_EXTERN int isv_request_add_requested_output_buffer(isv_request *r, const char *name, void *buf,
                                             size_t size) {
  if (r == NULL || r->submitted || name == NULL || (buf == NULL && size > 0)) return ISV_EINVAL;
  const char *nm = isv__arena_strndup(&r->arena, name, strlen(name));
  isv__out_dest *d = isv__arena_calloc(&r->arena, 1, sizeof *d);
  if (nm == NULL || d == NULL) return ISV_ENOMEM;
  isv__req_output *o = isv__request_push_output(r);
  if (o == NULL) return call_failed(r);
  d->p = buf;
  d->cap = size;
  o->name = nm;
  o->dest = d;
  return 0;
}

/* Copy (key, value) into a parameter list of r. */
static int set_param(isv__arena *a, isv__param_entry **arr, size_t *n, size_t *cap,
                     const char *key, const isv_param *value) {
  if (key == NULL || value == NULL || value->type < ISV_PARAM_BOOL ||
      value->type > ISV_PARAM_STRING)
    return ISV_EINVAL;
  isv_param v = *value;
  if (v.type == ISV_PARAM_STRING) {
    if (v.v.s.len && v.v.s.ptr == NULL) return ISV_EINVAL;
    char *s = isv__arena_strndup(a, v.v.s.ptr ? v.v.s.ptr : "", v.v.s.len);
    if (s == NULL) return ISV_ENOMEM;
    v.v.s.ptr = s;
  }
  isv__param_entry *p = param_slot(a, arr, n, cap, key, strlen(key));
  if (p == NULL) return ISV_ENOMEM;
  p->val = v;
  return 0;
}

ISV_EXTERN int isv_request_set_param(isv_request *r, const char *key, const isv_param *value) {
  if (r == NULL || r->submitted) return ISV_EINVAL;
  return set_param(&r->arena, &r->params, &r->n_params, &r->cap_params, key, value);
}

ISV_EXTERN int isv_request_set_priority(isv_request *r, uint64_t level) {
  isv_param v = {.type = ISV_PARAM_UINT64, .v.u64 = level};
  return isv_request_set_param(r, "priority", &v);
}

ISV_EXTERN int isv_request_set_timeout_us(isv_request *r, uint64_t us) {
  isv_param v = {.type = ISV_PARAM_UINT64, .v.u64 = us};
  return isv_request_set_param(r, "timeout", &v);
}

ISV_EXTERN int isv_request_set_response_param(isv_request *r, const char *key,
                                              const isv_param *value) {
  if (r == NULL || !r->submitted) return ISV_EINVAL;
  if (isv__request_dead(r) || completed_already(r)) return ISV_ESTATE;
  return isv__request_add_resp_param(r, key, value);
}

int isv__request_add_resp_param(isv_request *r, const char *key, const isv_param *value) {
  return set_param(isv__out_arena(r), &r->resp_params, &r->n_resp_params, &r->cap_resp_params,
                   key, value);
}

isv_tensor *isv__request_push_output_slot(isv_request *r) {
  return grow_in(isv__out_arena(r), (void **)&r->outputs, &r->n_outputs, &r->cap_outputs,
                 sizeof(isv_tensor));
}

int isv__request_keep(isv_request *r, void *p, isv_destructor del) {
  isv__owned *o = isv__arena_alloc(isv__out_arena(r), sizeof *o);
  if (o == NULL) return ISV_ENOMEM;
  o->p = p;
  o->del = del;
  o->next = r->owned;
  r->owned = o;
  return 0;
}

int isv__request_keep_ref(isv_request *r, void *p, isv_destructor del) {
  isv__owned *o = isv__arena_alloc(&r->arena, sizeof *o);
  if (o == NULL) return ISV_ENOMEM;
  o->p = p;
  o->del = del;
  o->next = r->refs;
  r->refs = o;
  return 0;
}

/* The result readers below show nothing of a request the close abandoned: its backend may
 * still be writing its outputs and parameters (scheduler.c). */
ISV_EXTERN size_t isv_request_response_param_count(const isv_request *r) {
  return live(r) && !r->abandoned ? r->n_resp_params : 0;
}

ISV_EXTERN const char *isv_request_response_param_at(const isv_request *r, size_t i,
                                                     const isv_param **v) {
  if (!live(r) || r->abandoned || i >= r->n_resp_params) return NULL;
  if (v) *v = &r->resp_params[i].val;
  return r->resp_params[i].key;
}

ISV_EXTERN const char *isv_request_error_message(const isv_request *r) {
  return live(r) && r->errmsg ? r->errmsg : "";
}
ISV_EXTERN size_t isv_request_output_count(const isv_request *r) {
  return live(r) && !r->abandoned ? r->n_outputs : 0;
}
ISV_EXTERN const isv_tensor *isv_request_output_at(const isv_request *r, size_t i) {
  return live(r) && !r->abandoned && i < r->n_outputs ? &r->outputs[i] : NULL;
}
ISV_EXTERN const isv_tensor *isv_request_output(const isv_request *r, const char *name) {
  for (size_t i = 0; live(r) && !r->abandoned && name && i < r->n_outputs; i++)
    if (strcmp(r->outputs[i].name, name) == 0) return &r->outputs[i];
  return NULL;
}
