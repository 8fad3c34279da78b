/* A request checked against its model before the backend sees it: every declared input
 * exactly once, datatypes, shapes (with the batch dimension), data sizes, requested outputs.
 * Every message names the model and the tensor. */
#include <stdio.h>
#include <string.h>

#include "codec/raw_bytes.h"
#include "core/shm_tensor.h"

/* The mismatch message, formatted only when there is one (it costs more than the check). */
static int shape_error(isv_request *r, const isv_model_config *c, const isv_tensor *t,
                       const isv__io *io, int with_rank) {
  char want[160], got[160];
  size_t off = c->max_batch > 0;
  isv__shape_text(want, sizeof want, io->shape, io->ndim, (int)off);
  isv__shape_text(got, sizeof got, t->shape, t->ndim, 0);
  if (io->any_rank) /* only a batched model's missing batch dimension fails it */
    return isv__request_fail(r, ISV_EBADREQ, "input '%s' has shape %s, model '%s' expects a "
                             "batch dimension first", t->name, got, c->name);
  if (with_rank)
    return isv__request_fail(r, ISV_EBADREQ,
                             "input '%s' has shape %s, model '%s' expects %s (rank %zu)", t->name,
                             got, c->name, want, io->ndim + off);
  return isv__request_fail(r, ISV_EBADREQ, "input '%s' has shape %s, model '%s' expects %s",
                           t->name, got, c->name, want);
}

static int check_input(isv_request *r, const isv_model_config *c, const isv_tensor *t,
                       const isv__io *io) {
  const char *mn = c->name;
  if (t->dt != io->dt)
    return isv__request_fail(r, ISV_EBADREQ, "input '%s' has datatype %s, model '%s' expects %s",
                             t->name, isv_datatype_name(t->dt), mn, isv_datatype_name(io->dt));
  size_t off = c->max_batch > 0;
  if (io->any_rank) {
    if (t->ndim < off) return shape_error(r, c, t, io, 1);
  } else if (t->ndim != io->ndim + off) {
    return shape_error(r, c, t, io, 1);
  }
  if (off) {
    if (t->shape[0] < 1)
      return isv__request_fail(r, ISV_EBADREQ, "input '%s' has batch size %lld, must be >= 1",
                               t->name, (long long)t->shape[0]);
    if ((uint64_t)t->shape[0] > c->max_batch)
      return isv__request_fail(r, ISV_EBADREQ,
                               "input '%s' has batch size %lld, model '%s' max batch size is %u",
                               t->name, (long long)t->shape[0], mn, c->max_batch);
  }
  if (io->any_rank) return 0;
  for (size_t i = 0; i < io->ndim; i++)
    if (io->shape[i] != -1 && io->shape[i] != t->shape[i + off]) return shape_error(r, c, t, io, 0);
  return 0;
}

int isv__request_validate(isv_request *r) {
  const isv_model_config *c = r->model->cfg;
  size_t declared = 0; /* inputs the model declares, each met once (duplicates are refused) */
  for (size_t i = 0; i < r->n_inputs; i++) {
    const isv_tensor *t = &r->inputs[i];
    const isv__io *io = isv__config_input(c, t->name, strlen(t->name));
    if (io == NULL && !c->open_io)
      return isv__request_fail(r, ISV_EBADREQ, "unexpected input '%s': model '%s' has no such input",
                               t->name, c->name);
    for (size_t j = 0; j < i; j++)
      if (strcmp(r->inputs[j].name, t->name) == 0)
        return isv__request_fail(r, ISV_EBADREQ, "duplicate input '%s'", t->name);
    if (io && check_input(r, c, t, io) != 0) return r->status;
    declared += io != NULL;
  }
  if (declared < c->n_inputs) /* one is missing: which */
    for (size_t k = 0; k < c->n_inputs; k++)
      if (isv_request_input(r, c->inputs[k].name) == NULL)
        return isv__request_fail(r, ISV_EBADREQ, "missing input '%s' for model '%s'",
                                 c->inputs[k].name, c->name);
  if (c->max_batch > 0) {
    for (size_t i = 1; i < r->n_inputs; i++)
      if (r->inputs[i].shape[0] != r->inputs[0].shape[0])
        return isv__request_fail(r, ISV_EBADREQ,
                                 "inputs '%s' and '%s' have different batch sizes (%lld, %lld)",
                                 r->inputs[0].name, r->inputs[i].name,
                                 (long long)r->inputs[0].shape[0], (long long)r->inputs[i].shape[0]);
  }
  for (size_t i = 0; i < r->n_req_outputs; i++) {
    const isv__req_output *o = &r->req_outputs[i];
    const isv__io *io = isv__config_output(c, o->name, strlen(o->name));
    if (io == NULL && c->open_io) { /* any name: the backend decides what it answers */
      for (size_t j = 0; j < i; j++)
        if (strcmp(r->req_outputs[j].name, o->name) == 0)
          return isv__request_fail(r, ISV_EBADREQ, "output '%s' requested twice", o->name);
      continue;
    }
    if (io == NULL)
      return isv__request_fail(r, ISV_EBADREQ, "unknown output '%s': model '%s' has no such output",
                               o->name, c->name);
    for (size_t j = 0; j < i; j++)
      if (strcmp(r->req_outputs[j].name, o->name) == 0)
        return isv__request_fail(r, ISV_EBADREQ, "output '%s' requested twice", o->name);
    if (o->classification && (io->dt == ISV_BOOL || io->dt == ISV_BYTES))
      return isv__request_fail(r, ISV_EBADREQ, "output '%s' has datatype %s, which cannot be "
                               "classified", o->name, isv_datatype_name(io->dt));
  }
  return 0;
}

/* Output t goes where its requester asked (a buffer of its own, a shared memory region): in
 * place when the backend wrote it there (isv_request_alloc_output), else copied once (into a region
 * not mapped, through its fd: core/shm.h); an output
 * larger than the space given fails the request (the client's mistake: 400). */
static int into_dest(isv_request *r, isv_tensor *t, isv__out_dest *d) {
  size_t need = t->dt == ISV_BYTES ? isv__rawbytes_size(t->data, t->count) : t->byte_size;
  if (need == SIZE_MAX)
    return isv__request_fail(r, ISV_EBACKEND, "output '%s' has a BYTES element longer than the "
                             "4-byte length allows", t->name);
  if (need > d->cap) {
    if (d->region)
      return isv__request_fail(r, ISV_EBADREQ, "shared memory size specified with the request "
                               "for output '%s' (%zu bytes) should be at least %zu bytes to hold "
                               "the results (region '%s')", t->name, d->cap, need, d->region);
    return isv__request_fail(r, ISV_EBADREQ, "the buffer given for output '%s' holds %zu bytes, "
                             "the output needs %zu", t->name, d->cap, need);
  }
  if (d->shm) { /* a region not mapped: copied with pwrite, which a shrunk object cannot fault */
    if (isv__shm_write_output(r, d, t, need) != 0) return r->status;
  } else if (t->dt == ISV_BYTES) {
    isv__rawbytes_write(d->p, t->data, t->count);
  } else {
    if (need && t->data != d->p) memmove(d->p, t->data, need);
    t->data = d->p;
  }
  d->used = need;
  t->dest = d;
  return 0;
}

/* Output selection and order: requested order when outputs were named, else declaration
 * order; a requested output the backend did not produce is the backend's fault. */
int isv__request_postprocess(isv_request *r, int partial) {
  const isv_model_config *c = r->model->cfg;
  /* open I/O and nothing named: every output, in the order the backend set them */
  int all_set = c->open_io && r->n_req_outputs == 0;
  size_t n_want = r->n_req_outputs ? r->n_req_outputs : all_set ? r->n_outputs : c->n_outputs;
  isv_tensor *sel = isv__arena_alloc(&r->arena, (n_want ? n_want : 1) * sizeof *sel);
  if (sel == NULL) return isv__request_fail(r, ISV_ENOMEM, "out of memory");
  size_t n = 0;
  for (size_t i = 0; i < n_want; i++) {
    if (all_set) {
      sel[n++] = r->outputs[i];
      continue;
    }
    const char *name = r->n_req_outputs ? r->req_outputs[i].name : c->outputs[i].name;
    isv_tensor *t = NULL;
    /* a declared output's name is the config's own string (output_slot): the same pointer for
     * the usual match, strcmp for the rest; names are unique (the slots refuse a second one) */
    for (size_t j = 0; j < r->n_outputs && t == NULL; j++)
      if (r->outputs[j].name == name || strcmp(r->outputs[j].name, name) == 0) t = &r->outputs[j];
    if (t == NULL) {
      /* a backend may omit outputs nobody named, and a decoupled model's response any */
      if (r->n_req_outputs == 0 || partial) continue;
      return isv__request_fail(r, ISV_EBACKEND, "model '%s' did not produce output '%s'", c->name,
                               name);
    }
    sel[n] = *t;
    if (r->n_req_outputs) sel[n].flags = r->req_outputs[i].flags;
    if (r->n_req_outputs && r->req_outputs[i].classification &&
        isv__classify(r, &sel[n], r->req_outputs[i].classification) != 0)
      return r->status;
    if (r->n_req_outputs && r->req_outputs[i].dest &&
        into_dest(r, &sel[n], r->req_outputs[i].dest) != 0)
      return r->status;
    n++;
  }
  r->outputs = sel;
  r->n_outputs = r->cap_outputs = n;
  return 0;
}
