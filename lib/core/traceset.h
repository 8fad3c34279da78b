/* Triton's trace extension's settings (/v2/trace/setting, gRPC TraceSetting): the global ones
 * and each model's own, which override the global ones setting by setting (a model's setting
 * it never named, or cleared with null, is the global one as it is now). They decide which
 * finished requests go to the host's trace hook (isv_options_set_trace): level OFF traces none;
 * trace_rate 1 in N of the requests counted under the rate's owner (and every one whose
 * traceparent says its caller sampled it); trace_count the traces still to take (-1: no
 * limit). trace_file and log_frequency are the host's to honour: each trace carries them. One
 * set per group of servers (core->traceset; a lone server's group of one has its own), read and
 * changed from any member's loop thread. */
#ifndef ISV_CORE_TRACESET_H
#define ISV_CORE_TRACESET_H

#include "core/layer.h"

#include <stdatomic.h>
#include <stdint.h>
#include <uv.h>

#include "inferserve.h"

#define ISV__TRACE_FILE_MAX 1024

/* The settings of one scope, as they apply. */
typedef struct isv__trace_view {
  int timestamps; /* trace_level TIMESTAMPS (0: OFF) */
  unsigned rate;  /* >= 1 */
  int64_t count;  /* traces still to take; -1: no limit */
  unsigned log_frequency;
  char file[ISV__TRACE_FILE_MAX];
} isv__trace_view;

/* The settings by bit, in a change and in what a model holds of its own. */
enum {
  ISV__TS_LEVEL = 1u << 0,
  ISV__TS_RATE = 1u << 1,
  ISV__TS_COUNT = 1u << 2,
  ISV__TS_LOG_FREQUENCY = 1u << 3,
  ISV__TS_FILE = 1u << 4,
};

/* A change a client asked for: the settings it gives values (set, in v) and the ones it clears
 * (clear: JSON null, a gRPC SettingValue without values). A front end validated it. */
typedef struct isv__trace_change {
  unsigned set, clear;
  isv__trace_view v;
} isv__trace_change;

typedef struct isv__trace_model isv__trace_model; /* a model's own settings (traceset.c) */

typedef struct isv__traceset {
  const isv_mem *mem;
  uv_mutex_t mu;
  int seeded;              /* the first member's options gave the initial settings; under mu */
  isv__trace_view global;  /* under mu */
  isv__trace_view initial; /* what clearing a global setting returns it to */
  uint64_t seen;           /* requests counted for the global rate; under mu */
  isv__trace_model *models; /* under mu */
  /* 0: nothing can be traced (global level OFF and no model with settings of its own), so a
   * finished request costs one relaxed load. */
  atomic_int maybe;
} isv__traceset;

/* Triton's defaults (OFF, rate 1000, count -1, log_frequency 0, no file) until seeded. 0, or
 * ISV_ENOMEM. */
int isv__traceset_init(isv__traceset *s, const isv_mem *mem);
void isv__traceset_destroy(isv__traceset *s);
/* The initial global settings, once (the group's first member): `init` (NULL: level
 * TIMESTAMPS at `rate` when `hook`, else Triton's defaults). */
void isv__traceset_seed(isv__traceset *s, const isv__trace_view *init, int hook, unsigned rate);

/* Whether a finished request of `model` is traced — `sampled`: its caller's traceparent says
 * so; counts it for the rate and takes one of the count. When 1, *out is the settings it was
 * traced under, out->count the traces left after it. Any member's loop thread. */
int isv__traceset_sample(isv__traceset *s, const char *model, int sampled, isv__trace_view *out);

/* The settings of `model` as they apply (NULL: the global ones). */
void isv__traceset_get(isv__traceset *s, const char *model, isv__trace_view *out);
/* Apply a change to `model`'s own settings (NULL: the global ones) whole; *out (may be NULL)
 * the settings as they now apply. 0, or ISV_ENOMEM (nothing changed). */
int isv__traceset_apply(isv__traceset *s, const char *model, const isv__trace_change *ch,
                        isv__trace_view *out);

#endif
