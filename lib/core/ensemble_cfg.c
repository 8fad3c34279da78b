/* An ensemble's steps in a config (core/ensemble_cfg.h). */
#include "core/ensemble_cfg.h"

#include <string.h>

#include "inferserve.h"

static char *dup_str(const isv_mem *mem, const char *s) {
  size_t n = strlen(s) + 1;
  char *p = isv__malloc(mem, n);
  if (p) memcpy(p, s, n);
  return p;
}

static void strv_free(char **v, size_t n) {
  for (size_t i = 0; v && i < n; i++) isv__free(v[i]);
  isv__free(v);
}

static void step_free(isv__ens_step *s) {
  isv__free(s->model);
  isv__free(s->version);
  strv_free(s->in_keys, s->n_in);
  strv_free(s->in_vals, s->n_in);
  strv_free(s->out_keys, s->n_out);
  strv_free(s->out_vals, s->n_out);
  isv__free(s->in_idx);
  isv__free(s->out_idx);
}

void isv__ens_cfg_free(isv__ens_cfg *e) {
  if (e == NULL) return;
  for (size_t i = 0; i < e->n_steps; i++) step_free(&e->steps[i]);
  isv__free(e->steps);
  isv__free(e->out_idx);
  isv__free(e);
}

/* keys[i] = pairs[2i], vals[i] = pairs[2i + 1], copied. 0 or ISV_ENOMEM. */
static int split_map(const isv_mem *mem, const char *const *pairs, size_t n, char ***keys,
                     char ***vals) {
  *keys = n ? isv__calloc(mem, n, sizeof **keys) : NULL;
  *vals = n ? isv__calloc(mem, n, sizeof **vals) : NULL;
  if (n && (*keys == NULL || *vals == NULL)) return ISV_ENOMEM;
  for (size_t i = 0; i < n; i++)
    if (((*keys)[i] = dup_str(mem, pairs[2 * i])) == NULL ||
        ((*vals)[i] = dup_str(mem, pairs[2 * i + 1])) == NULL)
      return ISV_ENOMEM;
  return 0;
}

int isv__ens_cfg_add_step(isv__ens_cfg *e, const char *model, const char *version,
                          const char *const *in, size_t n_in, const char *const *out,
                          size_t n_out) {
  isv__ens_step *v = isv__malloc(e->mem, (e->n_steps + 1) * sizeof *v);
  if (v == NULL) return ISV_ENOMEM;
  if (e->n_steps) memcpy(v, e->steps, e->n_steps * sizeof *v);
  isv__free(e->steps);
  e->steps = v;
  isv__ens_step *s = &v[e->n_steps++];
  memset(s, 0, sizeof *s);
  s->n_in = n_in;
  s->n_out = n_out;
  if ((s->model = dup_str(e->mem, model)) == NULL ||
      (version && (s->version = dup_str(e->mem, version)) == NULL) ||
      split_map(e->mem, in, n_in, &s->in_keys, &s->in_vals) != 0 ||
      split_map(e->mem, out, n_out, &s->out_keys, &s->out_vals) != 0) {
    step_free(s);
    e->n_steps--;
    return ISV_ENOMEM;
  }
  return 0;
}

static unsigned *dup_idx(const isv_mem *mem, const unsigned *v, size_t n, int *ok) {
  if (v == NULL || n == 0) return NULL;
  unsigned *d = isv__malloc(mem, n * sizeof *d);
  if (d == NULL) *ok = 0;
  else memcpy(d, v, n * sizeof *d);
  return d;
}

/* The pairs of a step's map, for isv__ens_cfg_add_step (libc's memory: short-lived). */
static const char **pairs_of(char *const *keys, char *const *vals, size_t n) {
  const char **p = isv__malloc(NULL, (2 * n + 1) * sizeof *p);
  for (size_t i = 0; p && i < n; i++) {
    p[2 * i] = keys[i];
    p[2 * i + 1] = vals[i];
  }
  return p;
}

isv__ens_cfg *isv__ens_cfg_copy(const isv__ens_cfg *e, const isv_mem *mem, int *rc) {
  *rc = 0;
  if (e == NULL) return NULL;
  isv__ens_cfg *d = isv__calloc(mem, 1, sizeof *d);
  if (d == NULL) goto oom;
  d->mem = mem;
  int ok = 1;
  for (size_t i = 0; ok && i < e->n_steps; i++) {
    const isv__ens_step *s = &e->steps[i];
    const char **in = pairs_of(s->in_keys, s->in_vals, s->n_in);
    const char **out = pairs_of(s->out_keys, s->out_vals, s->n_out);
    ok = in && out && isv__ens_cfg_add_step(d, s->model, s->version, in, s->n_in, out,
                                            s->n_out) == 0;
    isv__free(in);
    isv__free(out);
    if (ok) {
      isv__ens_step *t = &d->steps[i];
      t->in_idx = dup_idx(mem, s->in_idx, s->n_in, &ok);
      t->out_idx = dup_idx(mem, s->out_idx, s->n_out, &ok);
    }
  }
  d->out_idx = dup_idx(mem, e->out_idx, e->n_out_idx, &ok);
  d->n_out_idx = e->n_out_idx;
  d->n_tensors = e->n_tensors;
  d->indexed = e->indexed;
  if (ok) return d;
oom:
  isv__ens_cfg_free(d);
  *rc = ISV_ENOMEM;
  return NULL;
}
