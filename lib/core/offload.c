#include "core/offload.h"

#include <stddef.h>
#include <stdlib.h>

#include "inferserve.h"

#define OWNER(ptr, type, member) ((type *)(void *)((char *)(ptr) - offsetof(type, member)))

void isv__offload_finish(isv__offload *o) {
  isv__core *c = o->core;
  uv_mutex_lock(&c->mu);
  o->next = NULL;
  if (c->off_tail) c->off_tail->next = o;
  else c->off_head = o;
  c->off_tail = o;
  uv_async_send(&c->async); /* under mu: the close cannot be closing the handle meanwhile */
  uv_mutex_unlock(&c->mu);
}

int isv__offload_post(isv__core *c, isv__offload *o, void (*after)(isv__offload *)) {
  o->core = c;
  o->work = NULL;
  o->after = after;
  o->posted = 1;
  o->next = NULL;
  uv_mutex_lock(&c->mu);
  if (c->closed) { /* the async handle is gone */
    uv_mutex_unlock(&c->mu);
    return ISV_ESTATE;
  }
  if (c->off_tail) c->off_tail->next = o;
  else c->off_head = o;
  c->off_tail = o;
  uv_async_send(&c->async); /* under mu: the close cannot be closing the handle meanwhile */
  uv_mutex_unlock(&c->mu);
  return 0;
}

static void run_job(isv__pool_job *job) {
  isv__offload *o = OWNER(job, isv__offload, job);
  o->work(o);
  isv__offload_finish(o);
}

void isv__offload_begin(isv__core *c, isv__offload *o, void (*after)(isv__offload *)) {
  o->core = c;
  o->work = NULL;
  o->after = after;
  o->posted = 0;
  c->offloads++;
  isv__core_hold_loop(c);
}

int isv__offload_run(isv__core *c, isv__offload *o, void (*work)(isv__offload *),
                     void (*after)(isv__offload *)) {
  o->core = c;
  o->work = work;
  o->after = after;
  o->posted = 0;
  o->job.run = run_job;
  c->offloads++;
  isv__core_hold_loop(c);
  if (isv__pool_submit(&c->pool, &o->job) != 0) {
    c->offloads--;
    isv__core_hold_loop(c);
    return ISV_ENOMEM;
  }
  return 0;
}

void isv__offload_end_now(isv__offload *o) {
  isv__core *c = o->core;
  c->offloads--;
  isv__core_hold_loop(c);
  if (isv__core_idle(c) && c->closing && c->on_idle) c->on_idle(c);
}

typedef struct free_later {
  isv__offload off;
  void *p;
} free_later;

static void free_work(isv__offload *o) { isv__free(((free_later *)o)->p); }
static void free_after(isv__offload *o) { isv__free(o); }

void isv__offload_free(isv__core *c, void *p) {
  free_later *f = isv__malloc(c->mem, sizeof *f);
  if (f) f->p = p;
  if (f == NULL || isv__offload_run(c, &f->off, free_work, free_after) != 0) {
    isv__free(f);
    isv__free(p);
  }
}

void isv__offload_drain(isv__core *c) {
  uv_mutex_lock(&c->mu);
  isv__offload *o = c->off_head;
  c->off_head = c->off_tail = NULL;
  uv_mutex_unlock(&c->mu);
  while (o) {
    isv__offload *next = o->next;
    int posted = o->posted; /* o may be gone after `after` */
    o->after(o); /* may submit a request: counted before this one stops counting */
    if (posted) {
      o = next;
      continue;
    }
    c->offloads--;
    isv__core_hold_loop(c);
    if (isv__core_idle(c) && c->closing && c->on_idle) c->on_idle(c);
    o = next;
  }
}

static void inflate_work(isv__offload *o) {
  isv__offload_inflate *j = (isv__offload_inflate *)o;
  j->rc = isv__inflater_run(j->f, SIZE_MAX);
}
static void inflate_after(isv__offload *o) {
  isv__offload_inflate *j = (isv__offload_inflate *)o;
  j->done(j);
}

void isv__offload_inflate_run(isv__core *c, isv__offload_inflate *j,
                              void (*done)(isv__offload_inflate *j)) {
  j->done = done;
  j->rc = isv__inflater_run(j->f, ISV__INFLATE_LOOP_SLICE);
  if (j->rc == ISV__INFLATE_MORE) {
    if (isv__offload_run(c, &j->off, inflate_work, inflate_after) == 0) return;
    j->rc = isv__inflater_run(j->f, SIZE_MAX); /* no worker thread: here, then */
  }
  done(j);
}
