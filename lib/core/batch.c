#include "core/batch.h"
#include "codec/datatype.h"

#include <string.h>

uint64_t isv__batch_rows(const isv_request *r) {
  return r->n_inputs && r->inputs[0].ndim ? (uint64_t)r->inputs[0].shape[0] : 0;
}

static int core_param(const char *key) {
  return strcmp(key, "timeout") == 0 || strcmp(key, "sequence_id") == 0 ||
         strcmp(key, "sequence_start") == 0 || strcmp(key, "sequence_end") == 0 ||
         strcmp(key, "priority") == 0;
}

static int param_equal(const isv_param *a, const isv_param *b) {
  if (a->type != b->type) return 0;
  switch (a->type) {
  case ISV_PARAM_BOOL: return (a->v.b != 0) == (b->v.b != 0);
  case ISV_PARAM_INT64: return a->v.i64 == b->v.i64;
  case ISV_PARAM_UINT64: return a->v.u64 == b->v.u64;
  case ISV_PARAM_DOUBLE: return memcmp(&a->v.d, &b->v.d, sizeof a->v.d) == 0;
  case ISV_PARAM_STRING:
    return a->v.s.len == b->v.s.len && memcmp(a->v.s.ptr, b->v.s.ptr, a->v.s.len) == 0;
  }
  return 0;
}

/* Every parameter of a (but the core's) is in b with the same value. */
static int params_within(const isv_request *a, const isv_request *b) {
  for (size_t i = 0; i < a->n_params; i++) {
    if (core_param(a->params[i].key)) continue;
    const isv_param *v = isv_request_param(b, a->params[i].key);
    if (v == NULL || !param_equal(&a->params[i].val, v)) return 0;
  }
  return 1;
}

int isv__batch_joinable(const isv_request *a, const isv_request *b) {
  if (a->n_inputs != b->n_inputs) return 0;
  for (size_t i = 0; i < a->n_inputs; i++) {
    const isv_tensor *x = &a->inputs[i], *y = isv_request_input(b, x->name);
    if (y == NULL || y->dt != x->dt || y->ndim != x->ndim || x->ndim == 0) return 0;
    if (memcmp(x->shape + 1, y->shape + 1, (x->ndim - 1) * sizeof *x->shape) != 0) return 0;
  }
  return params_within(a, b) && params_within(b, a);
}

size_t isv__batch_pick(isv_request *head, isv_request *(*next)(const isv_request *),
                       uint64_t max_rows, isv_request **out, size_t max_n, uint64_t *rows) {
  size_t n = 0;
  uint64_t total = 0;
  for (isv_request *r = head; r && n < max_n && total < max_rows; r = next(r)) {
    uint64_t k = isv__batch_rows(r);
    if (total + k > max_rows || (r != head && !isv__batch_joinable(head, r))) continue;
    out[n++] = r;
    total += k;
  }
  *rows = total;
  return n;
}

int isv__batch_preferred(const isv_model_config *c, uint64_t rows) {
  for (size_t i = 0; i < c->n_preferred; i++)
    if (c->preferred[i] == rows) return 1;
  return 0;
}

/* Input `name` of each member, concatenated into t (b's input with the head's layout). */
static int concat_input(isv_request *b, isv_tensor *t, isv_request **members, size_t n) {
  const isv_tensor *first = isv_request_input(members[0], t->name);
  size_t elsize = isv__dt_size(first->dt);
  uint64_t rows = 0;
  size_t count = 0, bytes = 0;
  for (size_t i = 0; i < n; i++) {
    const isv_tensor *x = isv_request_input(members[i], t->name);
    rows += (uint64_t)x->shape[0];
    count += x->count;
    bytes += x->byte_size;
  }
  int64_t *shape = isv__arena_alloc(&b->arena, first->ndim * sizeof *shape);
  void *data = isv__arena_alloc(&b->arena, count * elsize);
  if (shape == NULL || data == NULL) return ISV_ENOMEM;
  memcpy(shape, first->shape, first->ndim * sizeof *shape);
  shape[0] = (int64_t)rows;
  char *p = data;
  for (size_t i = 0; i < n; i++) { /* BYTES: the element descriptors; elements stay in place */
    const isv_tensor *x = isv_request_input(members[i], t->name);
    size_t k = x->count * elsize;
    if (k) memcpy(p, x->data, k);
    p += k;
  }
  t->name = first->name;
  t->dt = first->dt;
  t->shape = shape;
  t->ndim = first->ndim;
  t->data = data;
  t->count = count;
  t->byte_size = bytes;
  return 0;
}

isv__batch *isv__batch_build(isv_request *b, isv_request **members, size_t n) {
  isv_request *head = members[0];
  isv__batch *batch = isv__arena_alloc(&b->arena, sizeof *batch);
  isv_request **copy = isv__arena_alloc(&b->arena, n * sizeof *copy);
  b->inputs = isv__arena_alloc(&b->arena, head->n_inputs * sizeof *b->inputs);
  if (batch == NULL || copy == NULL || b->inputs == NULL) return NULL;
  memcpy(copy, members, n * sizeof *members);
  *batch = (isv__batch){.req = b, .members = copy, .n_members = n, .refs = 1};
  memset(b->inputs, 0, head->n_inputs * sizeof *b->inputs);
  b->n_inputs = b->cap_inputs = head->n_inputs;
  for (size_t i = 0; i < head->n_inputs; i++) {
    b->inputs[i].name = head->inputs[i].name;
    if (concat_input(b, &b->inputs[i], members, n) != 0) return NULL;
  }
  /* the outputs any member asked for; all of them when one asked for none */
  int all = 0;
  size_t total = 0;
  for (size_t i = 0; i < n; i++) {
    if (members[i]->n_req_outputs == 0) all = 1;
    total += members[i]->n_req_outputs;
  }
  if (!all && total) {
    b->req_outputs = isv__arena_alloc(&b->arena, total * sizeof *b->req_outputs);
    if (b->req_outputs == NULL) return NULL;
    for (size_t i = 0; i < n; i++)
      for (size_t j = 0; j < members[i]->n_req_outputs; j++) {
        const char *name = members[i]->req_outputs[j].name;
        size_t k = 0;
        while (k < b->n_req_outputs && strcmp(b->req_outputs[k].name, name) != 0) k++;
        if (k == b->n_req_outputs)
          b->req_outputs[b->n_req_outputs++] = (isv__req_output){.name = name};
      }
    b->cap_req_outputs = total;
  }
  b->params = head->params; /* equal in every member (isv__batch_joinable) */
  b->n_params = b->cap_params = head->n_params;
  return batch;
}

void isv__batch_release(void *p) {
  isv__batch *b = p;
  if (--b->refs == 0) isv_request_free(b->req); /* b lives in its arena */
}

/* Member m's rows [off, off + rows) of t, appended to m's outputs. */
static int slice(isv_request *m, const isv_tensor *t, uint64_t off, uint64_t rows,
                 uint64_t total) {
  size_t per_row = total ? t->count / (size_t)total : 0;
  size_t elsize = isv__dt_size(t->dt);
  int64_t *shape = isv__arena_alloc(&m->arena, t->ndim * sizeof *shape);
  isv_tensor *o = isv__request_push_output_slot(m);
  if (shape == NULL || o == NULL) return ISV_ENOMEM;
  memcpy(shape, t->shape, t->ndim * sizeof *shape);
  shape[0] = (int64_t)rows;
  o->name = t->name;
  o->dt = t->dt;
  o->shape = shape;
  o->ndim = t->ndim;
  o->count = per_row * (size_t)rows;
  o->data = (char *)t->data + per_row * (size_t)off * elsize;
  o->byte_size = t->dt == ISV_BYTES ? isv__bytes_total(o->data, o->count) : o->count * elsize;
  return 0;
}

void isv__batch_split(isv__batch *batch) {
  const isv_request *b = batch->req;
  isv_request *const *members = batch->members;
  size_t n = batch->n_members;
  uint64_t total = 0;
  for (size_t i = 0; i < n; i++) total += isv__batch_rows(members[i]);
  if (b->status != 0) {
    for (size_t i = 0; i < n; i++) isv__request_fail(members[i], b->status, "%s", b->errmsg);
    return;
  }
  for (size_t j = 0; j < b->n_outputs; j++) {
    const isv_tensor *t = &b->outputs[j];
    if (t->ndim == 0 || (uint64_t)t->shape[0] != total) {
      for (size_t i = 0; i < n; i++)
        isv__request_fail(members[i], ISV_EBACKEND,
                          "model '%s' returned output '%s' with %lld rows for a batch of %llu",
                          b->model->cfg->name, t->name, t->ndim ? (long long)t->shape[0] : 0,
                          (unsigned long long)total);
      return;
    }
  }
  uint64_t off = 0;
  for (size_t i = 0; i < n; i++) {
    isv_request *m = members[i];
    uint64_t rows = isv__batch_rows(m);
    int rc = 0;
    for (size_t j = 0; rc == 0 && j < b->n_outputs; j++)
      rc = slice(m, &b->outputs[j], off, rows, total);
    for (size_t j = 0; rc == 0 && j < b->n_resp_params; j++)
      rc = isv__request_add_resp_param(m, b->resp_params[j].key, &b->resp_params[j].val);
    if (rc == 0 && b->n_outputs) rc = isv__request_keep(m, batch, isv__batch_release);
    if (rc == 0 && b->n_outputs) batch->refs++;
    if (rc != 0) isv__request_fail(m, ISV_ENOMEM, "out of memory while splitting a batch");
    off += rows;
  }
}
