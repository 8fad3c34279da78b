/* Readiness watches: who hears that what isv__core_ready or isv__core_model_ready answer may
 * have changed (grpc.health.v1's Watch). The core calls them after online or offline (on any
 * member of the group: the others hear it at their wake), a model version's state, a model
 * added or removed, and the close's start; a call may come when nothing changed, so the
 * watcher asks the queries again and compares. The core calls out through the function
 * pointer and knows nothing of who watches (protocol front ends, tests). Loop thread. */
#ifndef ISV_CORE_WATCH_H
#define ISV_CORE_WATCH_H

#include "core/layer.h"

#include "core/core.h"

typedef struct isv__core_watch {
  void (*changed)(struct isv__core_watch *w);
  struct isv__core_watch *prev, *next;
} isv__core_watch;

/* The watch stays the caller's memory: remove it before it goes. A watch may remove itself
 * from inside its own `changed` (no other). */
void isv__core_watch_add(isv__core *c, isv__core_watch *w);
void isv__core_watch_remove(isv__core *c, isv__core_watch *w);

/* Tell every watch (the core, at the places above). A call made while one runs (a watcher's
 * question syncs the group, which may land here again) is folded into the running one: that
 * one already tells everyone what is true now. */
void isv__core_readiness_changed(isv__core *c);

#endif
