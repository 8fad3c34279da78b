#include "core/registry.h"
#include "core/ensemble_cfg.h"

#include "codec/datatype.h"
#include "codec/compiler.h"
#include "codec/span.h"
#include "core/warmup_cfg.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- model config (public) --------------------------------------------------------------- */

static char *dupstr(const isv_mem *mem, const char *s) {
  size_t n = strlen(s) + 1;
  char *p = isv__malloc(mem, n);
  if (p) memcpy(p, s, n);
  return p;
}

static void io_free(isv__io *v, size_t n) {
  for (size_t i = 0; i < n; i++) {
    isv__free(v[i].name);
    isv__free(v[i].shape);
  }
  isv__free(v);
}

/* A config whose every piece comes from mem: libc's for the host's (no server yet), the
 * server's for the copy a registered model keeps. */
static int config_new(const char *name, const isv_mem *mem, isv_model_config **out) {
  if (out == NULL) return ISV_EINVAL;
  *out = NULL;
  if (name == NULL || name[0] == '\0') return ISV_EINVAL;
  isv_model_config *c = isv__calloc(mem, 1, sizeof *c);
  if (c == NULL) return ISV_ENOMEM;
  c->mem = mem;
  c->name = dupstr(mem, name);
  c->platform = dupstr(mem, "custom");
  c->instances = 1;
  if (c->name == NULL || c->platform == NULL) {
    isv_model_config_free(c);
    return ISV_ENOMEM;
  }
  *out = c;
  return 0;
}

ISV_EXTERN int isv_model_config_new(const char *name, isv_model_config **out) {
  return config_new(name, NULL, out);
}

static void strv_free(char **v, size_t n) {
  for (size_t i = 0; v && i < n; i++) isv__free(v[i]);
  isv__free(v);
}

static void sig_free(isv__signature *s) {
  isv__free(s->name);
  strv_free(s->in_names, s->n_in);
  strv_free(s->in_aliases, s->n_in);
  strv_free(s->out_names, s->n_out);
  strv_free(s->out_aliases, s->n_out);
}

ISV_EXTERN void isv_model_config_free(isv_model_config *c) {
  if (c == NULL) return;
  isv__warmups_free(c->warmups, c->n_warmups);
  for (size_t i = 0; i < c->n_sigs; i++) sig_free(&c->sigs[i]);
  isv__free(c->sigs);
  isv__free(c->name);
  isv__free(c->platform);
  io_free(c->inputs, c->n_inputs);
  io_free(c->outputs, c->n_outputs);
  for (size_t i = 0; i < c->n_labels; i++) isv__free(c->labels[i]);
  isv__free(c->labels);
  isv__free(c->preferred);
  isv__free(c->level_policies);
  isv__ens_cfg_free(c->ensemble);
  isv__free(c);
}

static int io_add(const isv_mem *mem, isv__io **v, size_t *n, const char *name, isv_datatype dt,
                  const int64_t *shape, size_t ndim) {
  if (name == NULL || name[0] == '\0' || isv__dt_size(dt) == 0) return ISV_EINVAL;
  static const int64_t one_free[1] = {-1};
  int any_rank = ndim == ISV_ANY_RANK;
  if (any_rank) {
    shape = one_free;
    ndim = 1;
  }
  if (ndim > ISV__MAX_NDIM || (ndim > 0 && shape == NULL)) return ISV_EINVAL;
  for (size_t i = 0; i < ndim; i++)
    if (shape[i] < -1) return ISV_EINVAL;
  for (size_t i = 0; i < *n; i++)
    if (strcmp((*v)[i].name, name) == 0) return ISV_EEXIST;
  isv__io *nv = isv__realloc(mem, *v, (*n + 1) * sizeof **v);
  if (nv == NULL) return ISV_ENOMEM;
  *v = nv;
  isv__io *io = &nv[*n];
  io->name = dupstr(mem, name);
  io->shape = isv__malloc(mem, (ndim ? ndim : 1) * sizeof(int64_t));
  if (io->name == NULL || io->shape == NULL) {
    isv__free(io->name);
    isv__free(io->shape);
    return ISV_ENOMEM;
  }
  if (ndim) memcpy(io->shape, shape, ndim * sizeof(int64_t));
  io->name_len = strlen(io->name);
  io->ndim = ndim;
  io->any_rank = any_rank;
  io->dt = dt;
  (*n)++;
  return 0;
}

ISV_EXTERN int isv_model_config_add_input(isv_model_config *c, const char *name, isv_datatype dt,
                                          const int64_t *shape, size_t ndim) {
  if (c == NULL) return ISV_EINVAL;
  if (isv__config_output(c, name, name ? strlen(name) : 0) != NULL) return ISV_EEXIST;
  return io_add(c->mem, &c->inputs, &c->n_inputs, name, dt, shape, ndim);
}

ISV_EXTERN int isv_model_config_add_output(isv_model_config *c, const char *name, isv_datatype dt,
                                           const int64_t *shape, size_t ndim) {
  if (c == NULL) return ISV_EINVAL;
  if (isv__config_input(c, name, name ? strlen(name) : 0) != NULL) return ISV_EEXIST;
  return io_add(c->mem, &c->outputs, &c->n_outputs, name, dt, shape, ndim);
}

ISV_EXTERN int isv_model_config_set_max_batch(isv_model_config *c, uint32_t max_batch) {
  if (c == NULL) return ISV_EINVAL;
  c->max_batch = max_batch;
  return 0;
}

ISV_EXTERN int isv_model_config_set_platform(isv_model_config *c, const char *platform) {
  if (c == NULL || platform == NULL) return ISV_EINVAL;
  char *p = dupstr(c->mem, platform);
  if (p == NULL) return ISV_ENOMEM;
  isv__free(c->platform);
  c->platform = p;
  return 0;
}

/* A copy of names[0..n) (aliases: NULL names means use `fallback`'s); NULL when out of memory. */
static char **strv_dup(const isv_mem *mem, const char *const *names, const char *const *fallback,
                       size_t n, int *bad) {
  char **v = isv__calloc(mem, n ? n : 1, sizeof *v);
  if (v == NULL) return NULL;
  for (size_t i = 0; i < n; i++) {
    const char *s = names ? names[i] : fallback[i];
    if (s == NULL || s[0] == '\0') *bad = 1;
    if ((v[i] = dupstr(mem, s ? s : "")) == NULL) {
      strv_free(v, i);
      return NULL;
    }
  }
  return v;
}

static int has_dup(char *const *v, size_t n) {
  for (size_t i = 0; i < n; i++)
    for (size_t j = i + 1; j < n; j++)
      if (strcmp(v[i], v[j]) == 0) return 1;
  return 0;
}

ISV_EXTERN int isv_model_config_add_signature(isv_model_config *c, const char *name,
                                              isv_signature_method method,
                                              const char *const *inputs,
                                              const char *const *input_aliases, size_t n_inputs,
                                              const char *const *outputs,
                                              const char *const *output_aliases, size_t n_outputs) {
  if (c == NULL || name == NULL || name[0] == '\0' || (int)method < 0 ||
      method > ISV_SIGNATURE_REGRESS ||
      (n_inputs && inputs == NULL) || (n_outputs && outputs == NULL))
    return ISV_EINVAL;
  for (size_t i = 0; i < c->n_sigs; i++)
    if (strcmp(c->sigs[i].name, name) == 0) return ISV_EEXIST;
  isv__signature s = {.method = method, .n_in = n_inputs, .n_out = n_outputs};
  int bad = 0;
  s.name = dupstr(c->mem, name);
  s.in_names = strv_dup(c->mem, inputs, inputs, n_inputs, &bad);
  s.in_aliases = strv_dup(c->mem, input_aliases, inputs, n_inputs, &bad);
  s.out_names = strv_dup(c->mem, outputs, outputs, n_outputs, &bad);
  s.out_aliases = strv_dup(c->mem, output_aliases, outputs, n_outputs, &bad);
  isv__signature *v = NULL;
  int rc = ISV_ENOMEM;
  if (s.name && s.in_names && s.in_aliases && s.out_names && s.out_aliases) {
    rc = bad || has_dup(s.in_aliases, s.n_in) || has_dup(s.out_aliases, s.n_out) ? ISV_EINVAL : 0;
    if (rc == 0 && (v = isv__realloc(c->mem, c->sigs, (c->n_sigs + 1) * sizeof *v)) == NULL)
      rc = ISV_ENOMEM;
  }
  if (rc != 0) {
    sig_free(&s);
    return rc;
  }
  c->sigs = v;
  c->sigs[c->n_sigs++] = s;
  return 0;
}

ISV_EXTERN int isv_model_config_set_labels(isv_model_config *c, const char *const *labels,
                                           size_t n) {
  if (c == NULL || (n > 0 && labels == NULL)) return ISV_EINVAL;
  char **v = n ? isv__calloc(c->mem, n, sizeof *v) : NULL;
  if (n && v == NULL) return ISV_ENOMEM;
  for (size_t i = 0; i < n; i++) {
    if (labels[i] == NULL || (v[i] = dupstr(c->mem, labels[i])) == NULL) {
      for (size_t j = 0; j < i; j++) isv__free(v[j]);
      isv__free(v);
      return labels[i] == NULL ? ISV_EINVAL : ISV_ENOMEM;
    }
  }
  for (size_t i = 0; i < c->n_labels; i++) isv__free(c->labels[i]);
  isv__free(c->labels);
  c->labels = v;
  c->n_labels = n;
  return 0;
}

ISV_EXTERN int isv_model_config_set_exec_mode(isv_model_config *c, isv_exec_mode mode) {
  if (c == NULL || (mode != ISV_EXEC_INLINE && mode != ISV_EXEC_POOL && mode != ISV_EXEC_ASYNC))
    return ISV_EINVAL;
  c->exec_mode = mode;
  return 0;
}

/* Instances, queue and sequence bounds: far beyond any real need, low enough that the
 * per-instance arrays stay small. */
#define MAX_INSTANCES 4096u

ISV_EXTERN int isv_model_config_set_instances(isv_model_config *c, uint32_t n) {
  if (c == NULL || n == 0 || n > MAX_INSTANCES) return ISV_EINVAL;
  c->instances = n;
  return 0;
}

ISV_EXTERN int isv_model_config_set_max_queue(isv_model_config *c, uint32_t n) {
  if (c == NULL) return ISV_EINVAL;
  c->max_queue = n;
  return 0;
}

ISV_EXTERN int isv_model_config_set_default_timeout_us(isv_model_config *c, uint64_t us) {
  if (c == NULL || us > UINT64_MAX / 1000) return ISV_EINVAL;
  c->default_timeout_us = us;
  return 0;
}

ISV_EXTERN int isv_model_config_set_priority_levels(isv_model_config *c, uint32_t levels,
                                                    uint32_t default_level) {
  if (c == NULL || levels > ISV_MAX_PRIORITY_LEVELS ||
      (levels ? default_level == 0 || default_level > levels : default_level != 0))
    return ISV_EINVAL;
  c->priority_levels = levels;
  c->default_priority = default_level;
  c->queue_policies = 1;
  return 0;
}

ISV_EXTERN int isv_model_config_set_queue_policy(isv_model_config *c, uint32_t level,
                                                 const isv_queue_policy *p) {
  if (c == NULL || p == NULL || level > ISV_MAX_PRIORITY_LEVELS ||
      p->struct_size < offsetof(isv_queue_policy, max_queue_size) + sizeof p->max_queue_size)
    return ISV_EINVAL;
  isv_queue_policy q;
  memset(&q, 0, sizeof q);
  memcpy(&q, p, p->struct_size < sizeof q ? p->struct_size : sizeof q);
  q.struct_size = sizeof q;
  if ((q.timeout_action != ISV_TIMEOUT_REJECT && q.timeout_action != ISV_TIMEOUT_DELAY) ||
      q.default_timeout_us > UINT64_MAX / 1000)
    return ISV_EINVAL;
  q.allow_timeout_override = q.allow_timeout_override != 0;
  c->queue_policies = 1;
  if (level == 0) {
    c->default_policy = q;
    return 0;
  }
  for (size_t i = 0; i < c->n_level_policies; i++)
    if (c->level_policies[i].level == level) {
      c->level_policies[i].policy = q;
      return 0;
    }
  isv__level_policy *v =
      isv__realloc(c->mem, c->level_policies, (c->n_level_policies + 1) * sizeof *v);
  if (v == NULL) return ISV_ENOMEM;
  c->level_policies = v;
  v[c->n_level_policies++] = (isv__level_policy){level, q};
  return 0;
}

const isv_queue_policy *isv__config_level_policy(const isv_model_config *c, uint32_t level) {
  for (size_t i = 0; level && i < c->n_level_policies; i++)
    if (c->level_policies[i].level == level) return &c->level_policies[i].policy;
  return &c->default_policy;
}

static int cmp_u32(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return x < y ? -1 : x > y;
}

ISV_EXTERN int isv_model_config_set_dynamic_batching(isv_model_config *c, uint64_t max_delay_us,
                                                     const uint32_t *preferred, size_t n) {
  if (c == NULL || (n && preferred == NULL) || n > 64 || max_delay_us > UINT64_MAX / 1000)
    return ISV_EINVAL;
  uint32_t *p = NULL;
  if (n) {
    if ((p = isv__malloc(c->mem, n * sizeof *p)) == NULL) return ISV_ENOMEM;
    memcpy(p, preferred, n * sizeof *p);
    qsort(p, n, sizeof *p, cmp_u32);
    for (size_t i = 0; i < n; i++)
      if (p[i] == 0 || (i && p[i] == p[i - 1])) {
        isv__free(p);
        return ISV_EINVAL;
      }
  }
  isv__free(c->preferred);
  c->preferred = p;
  c->n_preferred = n;
  c->batching = 1;
  c->batch_delay_us = max_delay_us;
  return 0;
}

ISV_EXTERN int isv_model_config_set_response_cache(isv_model_config *c, int on) {
  if (c == NULL) return ISV_EINVAL;
  c->response_cache = on != 0;
  return 0;
}

ISV_EXTERN int isv_model_config_set_decoupled(isv_model_config *c, int on) {
  if (c == NULL) return ISV_EINVAL;
  c->decoupled = on != 0;
  return 0;
}

ISV_EXTERN int isv_model_config_set_sequence_batching(isv_model_config *c,
                                                      uint64_t idle_timeout_us,
                                                      uint32_t max_sequences) {
  if (c == NULL || idle_timeout_us > UINT64_MAX / 1000) return ISV_EINVAL;
  c->sequences = 1;
  c->seq_idle_us = idle_timeout_us ? idle_timeout_us : 1000000;
  c->max_sequences = max_sequences ? max_sequences : 1024;
  return 0;
}

ISV_EXTERN int isv_model_config_set_open_io(isv_model_config *c, int on) {
  if (c == NULL) return ISV_EINVAL;
  c->open_io = on != 0;
  return 0;
}

ISV_EXTERN int isv_model_config_set_chat_template(isv_model_config *c, isv_chat_template_fn fn,
                                                  void *user) {
  if (c == NULL) return ISV_EINVAL;
  c->chat_template = fn;
  c->chat_template_user = fn ? user : NULL;
  return 0;
}

ISV_EXTERN int isv_model_config_set_native(isv_model_config *c, int on) {
  if (c == NULL) return ISV_EINVAL;
  c->native = on != 0;
  if (c->native) c->open_io = 1;
  return 0;
}

isv_model_config *isv__config_copy(const isv_model_config *c, const isv_mem *mem) {
  isv_model_config *d;
  if (config_new(c->name, mem, &d) != 0) return NULL;
  int rc = isv_model_config_set_platform(d, c->platform);
  for (size_t i = 0; rc == 0 && i < c->n_inputs; i++)
    rc = io_add(d->mem, &d->inputs, &d->n_inputs, c->inputs[i].name, c->inputs[i].dt, c->inputs[i].shape,
                c->inputs[i].any_rank ? ISV_ANY_RANK : c->inputs[i].ndim);
  for (size_t i = 0; rc == 0 && i < c->n_outputs; i++)
    rc = io_add(d->mem, &d->outputs, &d->n_outputs, c->outputs[i].name, c->outputs[i].dt,
                c->outputs[i].shape, c->outputs[i].any_rank ? ISV_ANY_RANK : c->outputs[i].ndim);
  if (rc == 0) rc = isv_model_config_set_labels(d, (const char *const *)c->labels, c->n_labels);
  if (rc != 0) {
    isv_model_config_free(d);
    return NULL;
  }
  if (c->n_preferred &&
      isv_model_config_set_dynamic_batching(d, c->batch_delay_us, c->preferred, c->n_preferred)) {
    isv_model_config_free(d);
    return NULL;
  }
  for (size_t i = 0; i < c->n_sigs; i++) {
    const isv__signature *s = &c->sigs[i];
    if (isv_model_config_add_signature(d, s->name, s->method, (const char *const *)s->in_names,
                                       (const char *const *)s->in_aliases, s->n_in,
                                       (const char *const *)s->out_names,
                                       (const char *const *)s->out_aliases, s->n_out) != 0) {
      isv_model_config_free(d);
      return NULL;
    }
  }
  d->max_batch = c->max_batch;
  d->exec_mode = c->exec_mode;
  d->instances = c->instances;
  d->max_queue = c->max_queue;
  d->default_timeout_us = c->default_timeout_us;
  d->batching = c->batching;
  d->batch_delay_us = c->batch_delay_us;
  d->decoupled = c->decoupled;
  d->sequences = c->sequences;
  d->seq_idle_us = c->seq_idle_us;
  d->max_sequences = c->max_sequences;
  d->open_io = c->open_io;
  d->native = c->native;
  d->chat_template = c->chat_template;
  d->chat_template_user = c->chat_template_user;
  d->response_cache = c->response_cache;
  if (isv__warmups_copy(d->mem, c->warmups, c->n_warmups, &d->warmups) != 0) {
    isv_model_config_free(d);
    return NULL;
  }
  d->n_warmups = c->n_warmups;
  d->queue_policies = c->queue_policies;
  d->priority_levels = c->priority_levels;
  d->default_priority = c->default_priority;
  d->default_policy = c->default_policy;
  for (size_t i = 0; i < c->n_level_policies; i++)
    if (isv_model_config_set_queue_policy(d, c->level_policies[i].level,
                                          &c->level_policies[i].policy) != 0) {
      isv_model_config_free(d);
      return NULL;
    }
  int rc2;
  d->ensemble = isv__ens_cfg_copy(c->ensemble, mem, &rc2);
  if (rc2 != 0) {
    isv_model_config_free(d);
    return NULL;
  }
  return d;
}

const isv__io *isv__config_input(const isv_model_config *c, const char *name, size_t len) {
  for (size_t i = 0; name && i < c->n_inputs; i++)
    if (c->inputs[i].name_len == len && isv__bytes_same(c->inputs[i].name, name, len))
      return &c->inputs[i];
  return NULL;
}

const isv__io *isv__config_output(const isv_model_config *c, const char *name, size_t len) {
  for (size_t i = 0; name && i < c->n_outputs; i++)
    if (c->outputs[i].name_len == len && isv__bytes_same(c->outputs[i].name, name, len))
      return &c->outputs[i];
  return NULL;
}

/* ---- versions ---------------------------------------------------------------------------- */

static int is_number(const char *s, unsigned long long *v) {
  if (*s == '\0' || strlen(s) > 19) return 0;
  unsigned long long x = 0;
  for (const char *p = s; *p; p++) {
    if (*p < '0' || *p > '9') return 0;
    x = x * 10 + (unsigned)(*p - '0');
  }
  *v = x;
  return 1;
}

int isv__version_cmp(const char *a, const char *b) {
  unsigned long long x, y;
  int na = is_number(a, &x), nb = is_number(b, &y);
  if (na && nb) return x < y ? -1 : x > y;
  if (na != nb) return na ? -1 : 1;
  return strcmp(a, b);
}

/* ---- refcounts --------------------------------------------------------------------------- */

static void model_free(isv_model *m) {
  /* A group's copy is summed by the other members' loops (isv__model_stats,
   * isv__model_batch_execs read its counters and its stats.batch_execs under the group's mutex,
   * walking the record's list of copies): it leaves that list, under that mutex, before any of
   * it is freed — else a reader on another thread sums freed memory (the end of live sequences
   * below runs host code: that window is as long as the host makes it). */
  if (m->gcopy_unlink) m->gcopy_unlink(m);
  if (m->sched_end) m->sched_end(m); /* ends its live sequences: before destroy */
  if (m->gcopy_gone) m->gcopy_gone(m); /* the record's destroy, once its last copy is gone */
  isv__free(m->stats.batch_execs); /* read by other members only while m was in the list */
  isv__free(m->stats.windows);
  if (m->backend.destroy) m->backend.destroy(m->user); /* NULL for the table's copies */
  isv_model_config_free(m->cfg);
  isv__free(m->version);
  isv__free(m);
}

void isv__model_ref(isv_model *m) {
  ISV_ASSERT(m->refs > 0, "a model version is referenced only while it lives");
  m->refs++;
}

void isv__model_unref(isv_model *m) {
  ISV_ASSERT(m->refs > 0, "a model version's references are dropped once each");
  if (--m->refs == 0) model_free(m);
}

/* ---- hash table -------------------------------------------------------------------------- */

static size_t hash(const char *s, size_t n) {
  size_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
  return h;
}

int isv__registry_init(isv__registry *r, struct isv__core *core, const isv_mem *mem) {
  r->core = core;
  r->mem = mem;
  r->n_buckets = 64;
  r->n_entries = 0;
  r->buckets = isv__calloc(mem, r->n_buckets, sizeof *r->buckets);
  return r->buckets ? 0 : ISV_ENOMEM;
}

isv__model_entry *isv__registry_entry(const isv__registry *r, const char *name, size_t len) {
  if (r->buckets == NULL) return NULL;
  isv__model_entry *e = r->buckets[hash(name, len) & (r->n_buckets - 1)];
  for (; e; e = e->hnext)
    if (strlen(e->name) == len && memcmp(e->name, name, len) == 0) return e;
  return NULL;
}

static void grow(isv__registry *r) {
  size_t nb = r->n_buckets * 2;
  isv__model_entry **b = isv__calloc(r->mem, nb, sizeof *b);
  if (b == NULL) return; /* keep the old table: slower, still correct */
  for (size_t i = 0; i < r->n_buckets; i++) {
    isv__model_entry *e = r->buckets[i];
    while (e) {
      isv__model_entry *next = e->hnext;
      size_t h = hash(e->name, strlen(e->name)) & (nb - 1);
      e->hnext = b[h];
      b[h] = e;
      e = next;
    }
  }
  isv__free(r->buckets);
  r->buckets = b;
  r->n_buckets = nb;
}

static void entry_unlink_free(isv__registry *r, isv__model_entry *e) {
  isv__model_entry **pp = &r->buckets[hash(e->name, strlen(e->name)) & (r->n_buckets - 1)];
  while (*pp != e) pp = &(*pp)->hnext;
  *pp = e->hnext;
  r->n_entries--;
  isv__labels_free(e->labels, e->n_labels);
  isv__free(e->default_version);
  isv__free(e->name);
  isv__free(e);
}

static void each(const isv__registry *r, void (*fn)(isv__model_entry *, void *), void *data,
                 int all) {
  for (size_t i = 0; i < r->n_buckets; i++)
    for (isv__model_entry *e = r->buckets[i], *next; e; e = next) {
      next = e->hnext;
      if (all || !isv__entry_hidden(e)) fn(e, data);
    }
}

void isv__registry_foreach(const isv__registry *r, void (*fn)(isv__model_entry *, void *),
                           void *data) {
  each(r, fn, data, 0);
}

void isv__registry_foreach_all(const isv__registry *r, void (*fn)(isv__model_entry *, void *),
                               void *data) {
  each(r, fn, data, 1);
}

isv__model_entry *isv__registry_visible(const isv__registry *r, const char *name, size_t len) {
  isv__model_entry *e = isv__registry_entry(r, name, len);
  return e && !isv__entry_hidden(e) ? e : NULL;
}

static int invalid(char *why, size_t cap, const char *msg) {
  if (why && cap) snprintf(why, cap, "%s", msg);
  return ISV_EINVAL;
}

int isv__registry_check(const isv_model_config *c, const char *version, const isv_backend *be,
                        char *why, size_t cap) {
  if (c == NULL) return invalid(why, cap, "no model config");
  if (version == NULL || version[0] == '\0') return invalid(why, cap, "no version");
  if (strchr(version, '/') != NULL) return invalid(why, cap, "a version may not contain '/'");
  if (be == NULL) return invalid(why, cap, "no backend");
  if (be->struct_size < offsetof(isv_backend, destroy) + sizeof be->destroy)
    return invalid(why, cap, "the backend's struct_size is too small (set it to "
                             "sizeof(isv_backend))");
  if (be->infer == NULL) return invalid(why, cap, "the backend has no infer callback");
  for (size_t i = 0; i < c->n_sigs; i++) {
    const isv__signature *s = &c->sigs[i];
    for (size_t k = 0; k < s->n_in + s->n_out; k++) {
      int in = k < s->n_in;
      const char *t = in ? s->in_names[k] : s->out_names[k - s->n_in];
      const isv__io *io = in ? c->inputs : c->outputs;
      size_t n = in ? c->n_inputs : c->n_outputs, j = 0;
      while (j < n && strcmp(io[j].name, t) != 0) j++;
      if (j == n) {
        if (why) snprintf(why, cap, "signature '%s' names %s '%s', which the model does not have",
                          s->name, in ? "input" : "output", t);
        return ISV_EINVAL;
      }
    }
  }
  /* combinations the scheduler does not run */
  if (c->batching && c->max_batch == 0)
    return invalid(why, cap, "dynamic batching needs max_batch > 0");
  if (c->batching && (c->decoupled || c->sequences))
    return invalid(why, cap, "dynamic batching does not combine with a decoupled model or "
                             "sequence batching");
  if (c->batching && c->open_io)
    return invalid(why, cap, "dynamic batching needs declared inputs: not with open I/O");
  if (c->queue_policies && c->sequences)
    return invalid(why, cap, "priority levels and queue policies do not combine with sequence "
                             "batching (a sequence's requests run in their order)");
  if (c->response_cache && (c->decoupled || c->sequences))
    return invalid(why, cap, "the response cache does not combine with a decoupled model or "
                             "sequence batching (their answers depend on more than one request)");
  if (isv__warmups_check(c->warmups, c->n_warmups, c->max_batch, c->sequences, why, cap) != 0)
    return ISV_EINVAL;
  for (size_t i = 0; i < c->n_level_policies; i++)
    if (c->level_policies[i].level > c->priority_levels) {
      if (why) snprintf(why, cap, "priority queue policy must have priority level in range "
                        "[1, %u] for %s", (unsigned)c->priority_levels, c->name);
      return ISV_EINVAL;
    }
  return 0;
}

int isv__registry_add(isv__registry *r, const isv_model_config *c, const char *version,
                      const isv_backend *be, void *user, isv_model **out) {
  int rc = isv__registry_check(c, version, be, NULL, 0);
  if (rc != 0) return rc;
  isv__model_entry *e = isv__registry_entry(r, c->name, strlen(c->name));
  if (e && isv__entry_version(e, version, strlen(version))) return ISV_EEXIST;

  isv_model *m = isv__calloc(r->mem, 1, sizeof *m);
  if (m == NULL) return ISV_ENOMEM;
  m->version = dupstr(r->mem, version);
  m->cfg = isv__config_copy(c, r->mem);
  if (m->version == NULL || m->cfg == NULL) goto oom;
  memcpy(&m->backend, be, sizeof m->backend < be->struct_size ? sizeof m->backend : be->struct_size);
  m->backend.struct_size = sizeof m->backend;
  m->user = user;
  m->state = ISV_MODEL_READY;
  m->registered_s = (uint64_t)time(NULL);
  m->refs = 1;
  m->core = r->core;
  m->stats.batch_execs = isv__calloc(r->mem, (size_t)(m->cfg->max_batch ? m->cfg->max_batch : 1) + 1,
                                     sizeof *m->stats.batch_execs);
  if (m->stats.batch_execs == NULL) goto oom;
  if (r->summaries &&
      (m->stats.windows = isv__calloc(r->mem, ISV__SUMMARIES, sizeof *m->stats.windows)) == NULL)
    goto oom;

  if (e == NULL) {
    e = isv__calloc(r->mem, 1, sizeof *e);
    if (e) e->mem = r->mem;
    if (e == NULL || (e->name = dupstr(r->mem, c->name)) == NULL) {
      isv__free(e);
      goto oom;
    }
    if (r->n_entries >= r->n_buckets) grow(r);
    size_t h = hash(e->name, strlen(e->name)) & (r->n_buckets - 1);
    e->hnext = r->buckets[h];
    r->buckets[h] = e;
    r->n_entries++;
  }
  m->entry = e;
  isv_model **pp = &e->versions;
  while (*pp) pp = &(*pp)->next;
  *pp = m;
  if (out) *out = m;
  return 0;
oom:
  isv__free(m->stats.batch_execs);
  isv__free(m->stats.windows);
  isv_model_config_free(m->cfg);
  isv__free(m->version);
  isv__free(m);
  return ISV_ENOMEM;
}

static void version_remove(isv__registry *r, isv__model_entry *e, isv_model *m) {
  isv_model **pp = &e->versions;
  while (*pp != m) pp = &(*pp)->next;
  *pp = m->next;
  m->next = NULL;
  m->removed = 1;
  m->entry = NULL; /* in-flight requests keep m alive but no longer reach the entry */
  if (e->versions == NULL) entry_unlink_free(r, e);
  isv__model_unref(m);
}

int isv__registry_remove(isv__registry *r, const char *name, const char *version) {
  if (name == NULL) return ISV_EINVAL;
  isv__model_entry *e = isv__registry_entry(r, name, strlen(name));
  if (e == NULL) return ISV_ENOTFOUND;
  if (version != NULL) {
    isv_model *m = isv__entry_version(e, version, strlen(version));
    if (m == NULL) return ISV_ENOTFOUND;
    version_remove(r, e, m);
    return 0;
  }
  while (e->versions->next) version_remove(r, e, e->versions);
  version_remove(r, e, e->versions); /* frees e */
  return 0;
}

static void clear_one(isv__model_entry *e, void *data) {
  isv__registry_remove(data, e->name, NULL);
}

void isv__registry_clear(isv__registry *r) {
  if (r->buckets == NULL) return;
  isv__registry_foreach_all(r, clear_one, r);
  isv__free(r->buckets);
  r->buckets = NULL;
  r->n_buckets = 0;
}

/* ---- lookups ----------------------------------------------------------------------------- */

isv_model *isv__entry_version(const isv__model_entry *e, const char *version, size_t len) {
  for (isv_model *m = e->versions; m; m = m->next)
    if (strlen(m->version) == len && memcmp(m->version, version, len) == 0) return m;
  return NULL;
}

isv_model *isv__entry_label(const isv__model_entry *e, const char *label, size_t len) {
  for (size_t i = 0; i < e->n_labels; i++)
    if (strlen(e->labels[i].label) == len && memcmp(e->labels[i].label, label, len) == 0)
      return isv__entry_version(e, e->labels[i].version, strlen(e->labels[i].version));
  return NULL;
}

isv_model *isv__entry_default(const isv__model_entry *e) {
  if (e->default_version) {
    isv_model *m = isv__entry_version(e, e->default_version, strlen(e->default_version));
    if (m) return m;
  }
  isv_model *best_ready = NULL, *best = NULL;
  for (isv_model *m = e->versions; m; m = m->next) {
    if (best == NULL || isv__version_cmp(m->version, best->version) > 0) best = m;
    if (m->state == ISV_MODEL_READY &&
        (best_ready == NULL || isv__version_cmp(m->version, best_ready->version) > 0))
      best_ready = m;
  }
  return best_ready ? best_ready : best;
}

void isv__labels_free(isv__label *v, size_t n) {
  for (size_t i = 0; i < n; i++) {
    isv__free(v[i].label);
    isv__free(v[i].version);
  }
  isv__free(v);
}

int isv__labels_set(const isv_mem *mem, isv__label **v, size_t *n, const char *label,
                    const char *version) {
  size_t i;
  for (i = 0; i < *n; i++)
    if (strcmp((*v)[i].label, label) == 0) break;
  if (version == NULL) {
    if (i == *n) return ISV_ENOTFOUND;
    isv__free((*v)[i].label);
    isv__free((*v)[i].version);
    (*v)[i] = (*v)[--*n];
    return 0;
  }
  char *ver = dupstr(mem, version);
  if (ver == NULL) return ISV_ENOMEM;
  if (i < *n) {
    isv__free((*v)[i].version);
    (*v)[i].version = ver;
    return 0;
  }
  isv__label *nl = isv__realloc(mem, *v, (*n + 1) * sizeof *nl);
  char *l = dupstr(mem, label);
  if (nl) *v = nl;
  if (nl == NULL || l == NULL) {
    isv__free(ver);
    isv__free(l);
    return ISV_ENOMEM;
  }
  (*v)[*n].label = l;
  (*v)[*n].version = ver;
  (*n)++;
  return 0;
}

int isv__entry_set_label(isv__model_entry *e, const char *label, const char *version) {
  return isv__labels_set(e->mem, &e->labels, &e->n_labels, label, version);
}

int isv__entry_set_default(isv__model_entry *e, const char *version) {
  char *v = NULL;
  if (version && (v = dupstr(e->mem, version)) == NULL) return ISV_ENOMEM;
  isv__free(e->default_version);
  e->default_version = v;
  return 0;
}

const char *isv__model_state_name(isv_model_state s) {
  switch (s) {
  case ISV_MODEL_LOADING: return "LOADING";
  case ISV_MODEL_READY: return "READY";
  case ISV_MODEL_UNLOADING: return "UNLOADING";
  case ISV_MODEL_UNAVAILABLE: return "UNAVAILABLE";
  default: return "UNKNOWN";
  }
}
