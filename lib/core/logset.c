/* See logset.h. */
#include "core/logset.h"

#include <stdio.h>
#include <string.h>

int isv__logset_init(isv__logset *s) {
  atomic_init(&s->levels, (1u << ISV_LOG_ERROR) | (1u << ISV_LOG_WARN) | (1u << ISV_LOG_INFO));
  atomic_init(&s->verbose, 0u);
  s->file[0] = '\0';
  strcpy(s->format, "default");
  return uv_mutex_init(&s->mu) == 0 ? 0 : ISV_ENOMEM;
}

void isv__logset_destroy(isv__logset *s) { uv_mutex_destroy(&s->mu); }

void isv__logset_get(isv__logset *s, isv__log_view *out) {
  unsigned lv = atomic_load_explicit(&s->levels, memory_order_relaxed);
  out->info = (lv >> ISV_LOG_INFO) & 1;
  out->warning = (lv >> ISV_LOG_WARN) & 1;
  out->error = (lv >> ISV_LOG_ERROR) & 1;
  out->verbose = atomic_load_explicit(&s->verbose, memory_order_relaxed);
  uv_mutex_lock(&s->mu);
  memcpy(out->file, s->file, sizeof out->file);
  memcpy(out->format, s->format, sizeof out->format);
  uv_mutex_unlock(&s->mu);
}

void isv__logset_set(isv__logset *s, const isv__log_view *v) {
  unsigned lv = (v->info ? 1u << ISV_LOG_INFO : 0) | (v->warning ? 1u << ISV_LOG_WARN : 0) |
                (v->error ? 1u << ISV_LOG_ERROR : 0);
  uv_mutex_lock(&s->mu);
  atomic_store_explicit(&s->levels, lv, memory_order_relaxed);
  atomic_store_explicit(&s->verbose, v->verbose, memory_order_relaxed);
  snprintf(s->file, sizeof s->file, "%s", v->file);
  snprintf(s->format, sizeof s->format, "%s", v->format);
  uv_mutex_unlock(&s->mu);
}
