/* Triton's logging extension's settings (/v2/logging, gRPC LogSettings): which levels of the
 * server's messages reach the host's log callback, and what the host makes of a log file, a
 * format and a verbose level (the library writes no file and has no verbose messages: it
 * keeps those values, reports them, and tells the host when they change). One set per group of
 * servers (core->logset: a lone server's group of one has its own), read from any thread. */
#ifndef ISV_CORE_LOGSET_H
#define ISV_CORE_LOGSET_H

#include "core/layer.h"

#include <stdatomic.h>
#include <uv.h>

#include "inferserve.h"

#define ISV__LOG_FILE_MAX 1024

typedef struct isv__logset {
  atomic_uint levels;  /* bit (1 << isv_log_level) set: that level reaches the host */
  atomic_uint verbose; /* log_verbose_level */
  uv_mutex_t mu;       /* file and format */
  char file[ISV__LOG_FILE_MAX];
  char format[16]; /* "default" or "ISO8601" */
} isv__logset;

/* Every level on, no file, verbose 0, "default" — Triton's defaults. 0, or ISV_ENOMEM. */
int isv__logset_init(isv__logset *s);
void isv__logset_destroy(isv__logset *s);

/* Whether a message of this level goes to the host now. Any thread. */
static inline int isv__logset_allows(const isv__logset *s, isv_log_level level) {
  return s == NULL ||
         (atomic_load_explicit((atomic_uint *)&s->levels, memory_order_relaxed) >> level) & 1;
}

/* The settings now (file and format copied into out's own storage). Any thread. */
typedef struct isv__log_view {
  int info, warning, error;
  unsigned verbose;
  char file[ISV__LOG_FILE_MAX];
  char format[16];
} isv__log_view;
void isv__logset_get(isv__logset *s, isv__log_view *out);
/* Apply a whole view (a front end validated it: format is "default" or "ISO8601", file fits). */
void isv__logset_set(isv__logset *s, const isv__log_view *v);

#endif
