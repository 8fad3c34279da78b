/* Ensembles (core/ensemble.h): their steps in a model config, the checks at registration, and
 * the library's backend that runs them as a DAG of nested requests. */
#include "core/ensemble.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/nested.h"
#include "core/request.h"
#include "core/scheduler.h"

#define MAX_STEPS 256u
#define MAX_MAP 1024u

/* ---- the steps in a config --------------------------------------------------------------- */

/* Whether pairs is a map with n distinct, non-empty keys and non-empty values (and, with
 * distinct_vals, distinct values: one output map may not produce a tensor twice). */
static int map_ok(const char *const *pairs, size_t n, int distinct_vals) {
  if (n && pairs == NULL) return 0;
  if (n > MAX_MAP) return 0;
  for (size_t i = 0; i < n; i++) {
    const char *k = pairs[2 * i], *v = pairs[2 * i + 1];
    if (k == NULL || v == NULL || k[0] == '\0' || v[0] == '\0') return 0;
    for (size_t j = 0; j < i; j++)
      if (strcmp(pairs[2 * j], k) == 0 || (distinct_vals && strcmp(pairs[2 * j + 1], v) == 0))
        return 0;
  }
  return 1;
}

/* Triton's model_version: a decimal number (NULL: -1, the latest). */
static int version_ok(const char *v) {
  if (v == NULL) return 1;
  size_t n = strlen(v);
  if (n == 0 || n > 18) return 0;
  for (size_t i = 0; i < n; i++)
    if (v[i] < '0' || v[i] > '9') return 0;
  return 1;
}

ISV_EXTERN int isv_model_config_add_ensemble_step(isv_model_config *c, const char *model_name,
                                                  const char *model_version,
                                                  const char *const *input_map,
                                                  size_t n_input_map,
                                                  const char *const *output_map,
                                                  size_t n_output_map) {
  if (c == NULL || model_name == NULL || model_name[0] == '\0' || !version_ok(model_version) ||
      !map_ok(input_map, n_input_map, 0) || !map_ok(output_map, n_output_map, 1))
    return ISV_EINVAL;
  if (c->ensemble && c->ensemble->n_steps >= MAX_STEPS) return ISV_EINVAL;
  if (c->ensemble == NULL) {
    if ((c->ensemble = isv__calloc(c->mem, 1, sizeof *c->ensemble)) == NULL) return ISV_ENOMEM;
    c->ensemble->mem = c->mem;
  }
  return isv__ens_cfg_add_step(c->ensemble, model_name, model_version, input_map, n_input_map,
                               output_map, n_output_map);
}

/* ---- checks and indexing ----------------------------------------------------------------- */

/* The step producing tensor `name` (its index), or -1. */
static long producer(const isv__ens_cfg *e, const char *name) {
  for (size_t i = 0; i < e->n_steps; i++)
    for (size_t j = 0; j < e->steps[i].n_out; j++)
      if (strcmp(e->steps[i].out_vals[j], name) == 0) return (long)i;
  return -1;
}

static int is_input(const isv_model_config *c, const char *name) {
  return isv__config_input(c, name, strlen(name)) != NULL;
}

static int bad(char *why, size_t cap, const char *fmt, const char *a, const char *b) {
  if (why && cap) snprintf(why, cap, fmt, a, b);
  return ISV_EINVAL;
}

int isv__ensemble_check(const isv_model_config *c, char *why, size_t cap) {
  const isv__ens_cfg *e = c ? c->ensemble : NULL;
  if (c == NULL) return bad(why, cap, "no model config%s%s", "", "");
  if (e == NULL || e->n_steps == 0)
    return bad(why, cap, "ensemble '%s' has no step (isv_model_config_add_ensemble_step)%s",
               c->name, "");
  if (c->decoupled || c->batching || c->sequences || c->open_io || c->native)
    return bad(why, cap, "ensemble '%s': an ensemble takes no dynamic or sequence batching, "
               "decoupled, open I/O or native mode (its steps' models may)%s", c->name, "");
  for (size_t i = 0; i < e->n_steps; i++) {
    const isv__ens_step *s = &e->steps[i];
    if (strcmp(s->model, c->name) == 0)
      return bad(why, cap, "ensemble '%s' has a step running itself%s", c->name, "");
    for (size_t j = 0; j < s->n_out; j++) {
      const char *t = s->out_vals[j];
      if (is_input(c, t))
        return bad(why, cap, "ensemble tensor '%s' is an input of the ensemble and the output "
                   "of step model '%s'", t, s->model);
      if (producer(e, t) != (long)i)
        return bad(why, cap, "ensemble tensor '%s' is produced by more than one step (model "
                   "'%s' among them)", t, s->model);
    }
    for (size_t j = 0; j < s->n_in; j++)
      if (!is_input(c, s->in_vals[j]) && producer(e, s->in_vals[j]) < 0)
        return bad(why, cap, "ensemble tensor '%s' (an input of step model '%s') is neither an "
                   "ensemble input nor a step's output", s->in_vals[j], s->model);
  }
  for (size_t j = 0; j < c->n_outputs; j++)
    if (producer(e, c->outputs[j].name) < 0)
      return bad(why, cap, "ensemble output '%s' is produced by no step of ensemble '%s'",
                 c->outputs[j].name, c->name);
  /* a DAG: steps become ready in some order (Kahn's walk), or some wait for each other */
  size_t n = e->n_steps, left = n;
  unsigned char *ready = calloc(n, 1);
  if (ready == NULL) return ISV_ENOMEM;
  for (int moved = 1; moved && left;) {
    moved = 0;
    for (size_t i = 0; i < n; i++) {
      if (ready[i]) continue;
      const isv__ens_step *s = &e->steps[i];
      size_t j = 0;
      for (; j < s->n_in; j++) {
        long p = is_input(c, s->in_vals[j]) ? -2 : producer(e, s->in_vals[j]);
        if (p >= 0 && !ready[p]) break;
      }
      if (j == s->n_in) {
        ready[i] = 1;
        left--;
        moved = 1;
      }
    }
  }
  size_t stuck = 0;
  while (left && ready[stuck]) stuck++;
  free(ready);
  if (left)
    return bad(why, cap, "the steps of ensemble '%s' form a cycle: step model '%s' waits for a "
               "tensor that only its own outputs lead to", c->name, e->steps[stuck].model);
  return 0;
}

/* The slot of tensor `name` in an indexed config: an ensemble input's index, or the next one
 * after the inputs for each step output, in order. -1 when unknown. */
static long slot_of(const isv_model_config *c, const isv__ens_cfg *e, const char *name) {
  for (size_t i = 0; i < c->n_inputs; i++)
    if (strcmp(c->inputs[i].name, name) == 0) return (long)i;
  long k = (long)c->n_inputs;
  for (size_t i = 0; i < e->n_steps; i++)
    for (size_t j = 0; j < e->steps[i].n_out; j++, k++)
      if (strcmp(e->steps[i].out_vals[j], name) == 0) return k;
  return -1;
}

/* Fill the slots of c's steps and outputs (a config that passed isv__ensemble_check). */
static void index_all(isv_model_config *c) {
  isv__ens_cfg *e = c->ensemble;
  size_t total = c->n_inputs;
  for (size_t i = 0; i < e->n_steps; i++) total += e->steps[i].n_out;
  for (size_t i = 0; i < e->n_steps; i++) {
    isv__ens_step *s = &e->steps[i];
    if (s->n_in && (s->in_idx = isv__calloc(e->mem, s->n_in, sizeof *s->in_idx)) == NULL) return;
    if (s->n_out && (s->out_idx = isv__calloc(e->mem, s->n_out, sizeof *s->out_idx)) == NULL)
      return;
    for (size_t j = 0; j < s->n_in; j++) {
      long k = slot_of(c, e, s->in_vals[j]);
      if (k < 0) return; /* not a runnable ensemble: isv__ensemble_check says why */
      s->in_idx[j] = (unsigned)k;
    }
    for (size_t j = 0; j < s->n_out; j++) s->out_idx[j] = (unsigned)slot_of(c, e, s->out_vals[j]);
  }
  if (c->n_outputs && (e->out_idx = isv__calloc(e->mem, c->n_outputs, sizeof *e->out_idx)) == NULL)
    return;
  e->n_out_idx = c->n_outputs;
  for (size_t j = 0; j < c->n_outputs; j++) {
    long k = slot_of(c, e, c->outputs[j].name);
    if (k < 0) return;
    e->out_idx[j] = (unsigned)k;
  }
  e->n_tensors = (unsigned)total;
  e->indexed = 1;
}

/* ---- registration ------------------------------------------------------------------------ */

static int ensemble_infer(isv_request *r, void *user);

isv_backend isv__ensemble_backend(void) {
  isv_backend be = {.struct_size = sizeof be, .infer = ensemble_infer};
  return be;
}

isv_model_config *isv__ensemble_prepare(const isv_model_config *c) {
  isv_model_config *d = isv__config_copy(c, NULL);
  if (d == NULL) return NULL;
  if (isv_model_config_set_platform(d, "ensemble") != 0) {
    isv_model_config_free(d);
    return NULL;
  }
  d->exec_mode = ISV_EXEC_ASYNC; /* infer starts the steps on the loop; they complete it */
  d->instances = ISV__ENSEMBLE_INSTANCES;
  index_all(d); /* the registry's copies keep the slots */
  return d;
}

/* ---- running one request ----------------------------------------------------------------- */

enum { STEP_WAITING = 0, STEP_RUNNING, STEP_DONE };

/* One ensemble request's run, in its arena (the loop thread only: infer, and the steps'
 * callbacks). */
typedef struct ens_run {
  isv_request *r;
  const isv_model_config *cfg;
  const isv__ens_cfg *e;
  const isv_tensor **slot; /* e->n_tensors: NULL until produced */
  isv_request **kid;       /* per step: its nested request */
  unsigned char *st;       /* per step: STEP_* */
  size_t running;
  int status;       /* the first failure's */
  const char *msg;  /* its message, in r's arena */
  int driving, again;
} ens_run;

static void fail_step(ens_run *run, size_t i, int status, const char *fmt, const char *a,
                      const char *b) {
  if (run->status != 0) return; /* the first failure is the request's */
  const isv__ens_step *s = &run->e->steps[i];
  char detail[400], msg[600];
  snprintf(detail, sizeof detail, fmt, a, b);
  int n = snprintf(msg, sizeof msg, "ensemble '%s' step %zu of %zu (model '%s'%s%s%s): %s",
                   run->cfg->name, i + 1, run->e->n_steps, s->model,
                   s->version ? " version '" : "", s->version ? s->version : "",
                   s->version ? "'" : "", detail);
  if (n < 0) n = 0;
  if ((size_t)n >= sizeof msg) n = sizeof msg - 1;
  char *m = isv_request_alloc(run->r, (size_t)n + 1);
  if (m) {
    memcpy(m, msg, (size_t)n);
    m[n] = '\0';
  }
  run->msg = m;
  /* a composing model that is not there is the server's problem, not a 404 of the ensemble */
  run->status = status == ISV_ENOTFOUND ? ISV_EUNAVAIL : status;
  isv__nested_cancel(run->r); /* the steps still running: nothing will read their outputs */
}

static void step_done(isv_request *k, int status, void *data);

/* Whether the ensemble request's priority parameter v names a level k's model has (a model
 * without levels ignores it). k is bound to its model here, before its submission would. */
static int level_fits(isv_request *k, const isv_param *v) {
  if (isv__request_bind(k) != 0) return 0; /* an unknown model: its submission says so */
  uint32_t levels = k->model->cfg->priority_levels;
  if (levels == 0) return 1;
  if (v->type == ISV_PARAM_UINT64) return v->v.u64 <= levels;
  return v->type == ISV_PARAM_INT64 && v->v.i64 >= 0 && (uint64_t)v->v.i64 <= levels;
}

/* The ensemble request's parameters reach each step, as Triton hands them to its composing
 * models — but "timeout" (the step inherits the remaining deadline already) and a "priority"
 * its model has no level for (its default then: Triton normalises such a level the same way). */
static int pass_params(ens_run *run, isv_request *k) {
  for (size_t j = 0; j < isv_request_param_count(run->r); j++) {
    const isv_param *v;
    const char *key = isv_request_param_at(run->r, j, &v);
    if (strcmp(key, "timeout") == 0) continue;
    if (strcmp(key, "priority") == 0 && !level_fits(k, v)) continue;
    int rc = isv_request_set_param(k, key, v);
    if (rc) return rc;
  }
  return 0;
}

static void start_step(ens_run *run, size_t i) {
  const isv__ens_step *s = &run->e->steps[i];
  isv_request *k = NULL;
  int rc = isv_request_new_nested(run->r, s->model, s->version, &k);
  if (rc == 0) rc = pass_params(run, k);
  for (size_t j = 0; rc == 0 && j < s->n_in; j++) {
    const isv_tensor *t = run->slot[s->in_idx[j]];
    rc = isv_request_add_input(k, s->in_keys[j], t->dt, t->shape, t->ndim, t->data,
                               t->byte_size, ISV_STATIC); /* by reference: it outlives k */
  }
  for (size_t j = 0; rc == 0 && j < s->n_out; j++)
    rc = isv_request_add_requested_output(k, s->out_keys[j], 0);
  run->st[i] = STEP_RUNNING;
  run->kid[i] = k;
  run->running++;
  if (rc == 0) rc = isv_request_submit(k, step_done, run); /* may call back at once */
  if (rc != 0) { /* it never ran */
    run->st[i] = STEP_DONE;
    run->running--;
    fail_step(run, i, rc == ISV_ENOMEM ? ISV_ENOMEM : ISV_EINTERNAL, "its request could not be "
              "made: %s%s", isv_strerror(rc), "");
  }
}

static int step_ready(const ens_run *run, size_t i) {
  const isv__ens_step *s = &run->e->steps[i];
  for (size_t j = 0; j < s->n_in; j++)
    if (run->slot[s->in_idx[j]] == NULL) return 0;
  return 1;
}

/* Every step ended (or none may start): answer. The last thing done with run and r. */
static void finish(ens_run *run) {
  isv_request *r = run->r;
  const isv_model_config *c = run->cfg;
  if (run->status != 0) {
    isv_request_complete(r, run->status, run->msg);
    return;
  }
  if (isv_request_is_cancelled(r)) {
    isv_request_complete(r, ISV_ECANCELED, "the ensemble's request was cancelled");
    return;
  }
  for (size_t j = 0; j < c->n_outputs; j++) {
    const char *name = c->outputs[j].name;
    if (!isv_request_is_output_requested(r, name)) continue;
    const isv_tensor *t = run->slot[run->e->out_idx[j]];
    int rc = t ? isv_request_set_output(r, name, t->dt, t->shape, t->ndim, t->data, t->byte_size,
                                        ISV_STATIC) /* the step's memory, kept with r */
               : ISV_EINTERNAL;
    if (rc != 0) {
      isv_request_complete(r, rc, NULL); /* the rule the output broke (r's misuse) */
      return;
    }
  }
  isv_request_complete(r, 0, NULL);
}

/* Start every step whose inputs exist, until none more can; answer once nothing runs. */
static void drive(ens_run *run) {
  if (run->driving) { /* a step finished inside a submission: the outer loop goes round */
    run->again = 1;
    return;
  }
  run->driving = 1;
  do {
    run->again = 0;
    for (size_t i = 0; i < run->e->n_steps; i++) {
      if (run->status != 0 || isv_request_is_cancelled(run->r)) break;
      if (run->st[i] == STEP_WAITING && step_ready(run, i)) start_step(run, i);
    }
  } while (run->again);
  run->driving = 0;
  if (run->running == 0) finish(run); /* r may be gone after it */
}

static void step_done(isv_request *k, int status, void *data) {
  ens_run *run = data;
  size_t i = 0;
  while (i < run->e->n_steps && run->kid[i] != k) i++;
  if (i == run->e->n_steps) return; /* not ours: cannot be */
  int outer = !run->driving;
  run->driving = 1; /* what this sets off (cancelled steps ending) only records */
  run->st[i] = STEP_DONE;
  run->running--;
  const isv__ens_step *s = &run->e->steps[i];
  if (status != 0) {
    fail_step(run, i, status, "%s%s", isv_request_error_message(k), "");
  } else {
    for (size_t j = 0; j < s->n_out; j++) {
      const isv_tensor *t = isv_request_output(k, s->out_keys[j]);
      if (t == NULL) {
        fail_step(run, i, ISV_EBACKEND, "its model did not produce output '%s'%s",
                  s->out_keys[j], "");
        break;
      }
      run->slot[s->out_idx[j]] = t;
    }
  }
  if (!outer) {
    run->again = 1;
    return;
  }
  run->driving = 0;
  drive(run);
}

static int ensemble_infer(isv_request *r, void *user) {
  (void)user;
  const isv_model_config *c = r->model->cfg;
  const isv__ens_cfg *e = c->ensemble;
  if (e == NULL || !e->indexed)
    return isv_request_complete(r, ISV_EINTERNAL, "the ensemble's steps are not indexed");
  ens_run *run = isv_request_alloc(r, sizeof *run);
  const isv_tensor **slot = isv_request_alloc(r, (e->n_tensors + 1) * sizeof *slot);
  isv_request **kid = isv_request_alloc(r, e->n_steps * sizeof *kid);
  unsigned char *st = isv_request_alloc(r, e->n_steps);
  if (run == NULL || slot == NULL || kid == NULL || st == NULL)
    return isv_request_complete(r, ISV_ENOMEM, "out of memory");
  memset(run, 0, sizeof *run);
  memset(slot, 0, (e->n_tensors + 1) * sizeof *slot);
  memset(kid, 0, e->n_steps * sizeof *kid);
  memset(st, 0, e->n_steps);
  run->r = r;
  run->cfg = c;
  run->e = e;
  run->slot = slot;
  run->kid = kid;
  run->st = st;
  for (size_t i = 0; i < c->n_inputs; i++) slot[i] = isv_request_input(r, c->inputs[i].name);
  drive(run);
  return 0;
}
