/* See traceset.h. */
#include "core/traceset.h"

#include <stdio.h>
#include <string.h>

#include "codec/mem.h"

struct isv__trace_model {
  isv__trace_model *next;
  unsigned own;     /* ISV__TS_* bits it holds values of */
  isv__trace_view v; /* those values */
  uint64_t seen;    /* requests counted for its own rate (ISV__TS_RATE) */
  char name[];
};

static void defaults(isv__trace_view *v) {
  memset(v, 0, sizeof *v);
  v->rate = 1000;
  v->count = -1;
}

int isv__traceset_init(isv__traceset *s, const isv_mem *mem) {
  memset(s, 0, sizeof *s);
  s->mem = mem;
  defaults(&s->global);
  s->initial = s->global;
  atomic_init(&s->maybe, 0);
  return uv_mutex_init(&s->mu) == 0 ? 0 : ISV_ENOMEM;
}

void isv__traceset_destroy(isv__traceset *s) {
  while (s->models) {
    isv__trace_model *next = s->models->next;
    isv__free(s->models);
    s->models = next;
  }
  uv_mutex_destroy(&s->mu);
}

static void refresh(isv__traceset *s) { /* under mu */
  atomic_store_explicit(&s->maybe, s->global.timestamps || s->models != NULL,
                        memory_order_relaxed);
}

void isv__traceset_seed(isv__traceset *s, const isv__trace_view *init, int hook, unsigned rate) {
  uv_mutex_lock(&s->mu);
  if (!s->seeded) {
    s->seeded = 1;
    if (init) {
      s->global = *init;
    } else if (hook) {
      s->global.timestamps = 1;
      s->global.rate = rate ? rate : 1;
    }
    s->initial = s->global;
    refresh(s);
  }
  uv_mutex_unlock(&s->mu);
}

static isv__trace_model *find(isv__traceset *s, const char *model) {
  for (isv__trace_model *m = s->models; m; m = m->next)
    if (strcmp(m->name, model) == 0) return m;
  return NULL;
}

/* The settings as they apply to m (NULL: the global ones). Under mu. */
static void view_of(const isv__traceset *s, const isv__trace_model *m, isv__trace_view *out) {
  *out = s->global;
  if (m == NULL) return;
  if (m->own & ISV__TS_LEVEL) out->timestamps = m->v.timestamps;
  if (m->own & ISV__TS_RATE) out->rate = m->v.rate;
  if (m->own & ISV__TS_COUNT) out->count = m->v.count;
  if (m->own & ISV__TS_LOG_FREQUENCY) out->log_frequency = m->v.log_frequency;
  if (m->own & ISV__TS_FILE) memcpy(out->file, m->v.file, sizeof out->file);
}

int isv__traceset_sample(isv__traceset *s, const char *model, int sampled, isv__trace_view *out) {
  if (!atomic_load_explicit(&s->maybe, memory_order_relaxed)) return 0;
  uv_mutex_lock(&s->mu);
  isv__trace_model *m = s->models ? find(s, model) : NULL;
  int level = m && (m->own & ISV__TS_LEVEL) ? m->v.timestamps : s->global.timestamps;
  int traced = 0;
  if (level) {
    int own_rate = m && (m->own & ISV__TS_RATE);
    uint64_t *seen = own_rate ? &m->seen : &s->seen;
    unsigned rate = own_rate ? m->v.rate : s->global.rate;
    int by_rate = ++*seen % rate == 0; /* every request counts for the rate */
    int64_t *count = m && (m->own & ISV__TS_COUNT) ? &m->v.count : &s->global.count;
    if ((sampled || by_rate) && *count != 0) {
      if (*count > 0) --*count;
      traced = 1;
      view_of(s, m, out);
    }
  }
  uv_mutex_unlock(&s->mu);
  return traced;
}

void isv__traceset_get(isv__traceset *s, const char *model, isv__trace_view *out) {
  uv_mutex_lock(&s->mu);
  view_of(s, model ? find(s, model) : NULL, out);
  uv_mutex_unlock(&s->mu);
}

/* The values ch sets into v. */
static void put(isv__trace_view *v, const isv__trace_change *ch) {
  if (ch->set & ISV__TS_LEVEL) v->timestamps = ch->v.timestamps;
  if (ch->set & ISV__TS_RATE) v->rate = ch->v.rate;
  if (ch->set & ISV__TS_COUNT) v->count = ch->v.count;
  if (ch->set & ISV__TS_LOG_FREQUENCY) v->log_frequency = ch->v.log_frequency;
  if (ch->set & ISV__TS_FILE) memcpy(v->file, ch->v.file, sizeof v->file);
}

int isv__traceset_apply(isv__traceset *s, const char *model, const isv__trace_change *ch,
                        isv__trace_view *out) {
  uv_mutex_lock(&s->mu);
  isv__trace_model *m = NULL;
  if (model == NULL) {
    /* a cleared global setting is the one the server started with */
    isv__trace_change back = {.set = ch->clear, .v = s->initial};
    put(&s->global, &back);
    put(&s->global, ch);
    if (ch->set & ISV__TS_RATE) s->seen = 0; /* a new rate counts from its first request */
  } else {
    m = find(s, model);
    if (m == NULL && (ch->set & ~ch->clear)) {
      size_t n = strlen(model);
      m = isv__calloc(s->mem, 1, sizeof *m + n + 1);
      if (m == NULL) {
        uv_mutex_unlock(&s->mu);
        return ISV_ENOMEM;
      }
      memcpy(m->name, model, n + 1);
      m->next = s->models;
      s->models = m;
    }
    if (m) {
      m->own &= ~ch->clear;
      m->own |= ch->set;
      put(&m->v, ch);
      if (ch->set & ISV__TS_RATE) m->seen = 0;
      if (m->own == 0) { /* nothing of its own left: the global settings again */
        isv__trace_model **p = &s->models;
        while (*p != m) p = &(*p)->next;
        *p = m->next;
        isv__free(m);
        m = NULL;
      }
    }
  }
  refresh(s);
  if (out) view_of(s, m, out);
  uv_mutex_unlock(&s->mu);
  return 0;
}
