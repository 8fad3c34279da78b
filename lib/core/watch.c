/* Readiness watches (watch.h): an intrusive list on the core. */
#include "core/watch.h"

void isv__core_watch_add(isv__core *c, isv__core_watch *w) {
  w->prev = NULL;
  w->next = c->watches;
  if (c->watches) c->watches->prev = w;
  c->watches = w;
}

void isv__core_watch_remove(isv__core *c, isv__core_watch *w) {
  if (w->prev) w->prev->next = w->next;
  else if (c->watches == w) c->watches = w->next;
  if (w->next) w->next->prev = w->prev;
  w->prev = w->next = NULL;
}

void isv__core_readiness_changed(isv__core *c) {
  if (c->notifying || c->watches == NULL) return;
  c->notifying = 1;
  for (isv__core_watch *w = c->watches, *next; w; w = next) {
    next = w->next; /* w may remove itself */
    w->changed(w);
  }
  c->notifying = 0;
}
