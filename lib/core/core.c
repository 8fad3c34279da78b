/* The core's state itself: its last reference, its log, its thread (core.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"

void isv__core_unref(isv__core *c) {
  if (atomic_fetch_sub(&c->refs, 1) != 1) return;
  isv__pool_free(&c->pool);
  uv_mutex_destroy(&c->mu);
  isv__bigbuf_cache_destroy(&c->bufs);
  isv__recycler_destroy(&c->recycler); /* last: everything above frees through it */
  if (c->free_owner) c->free_owner(c);
}

void isv__core_log(const isv__core *c, isv_log_level level, const char *fmt, ...) {
  if (c->opts.log == NULL || !isv__logset_allows(c->logset, level)) return;
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  c->opts.log(c->opts.log_user, level, msg);
}

int isv__on_loop_thread(const isv__core *c) {
  uv_thread_t self = uv_thread_self();
  return uv_thread_equal(&self, &c->loop_thread);
}
