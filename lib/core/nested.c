/* Models calling models (core/nested.h says how; include/inferserve.h the public rules). */
#include "core/nested.h"

#include <stdlib.h>
#include <string.h>

#include "core/pool.h"
#include "core/scheduler.h"

#define OWNER(ptr, type, member) ((type *)(void *)((char *)(ptr) - offsetof(type, member)))

/* isv_request_run's: the waiting thread sleeps on its own condition variable until its
 * nested request is done — or its nested request's execution is handed to it to run
 * (run_here): the model runs on the thread that waits for it. */
struct isv__nest_wait {
  uv_mutex_t mu;
  uv_cond_t cv;
  int done;             /* under mu */
  int status;           /* set before done */
  isv__pool_job *job;   /* an execution to run here; under mu */
};

static int nested_run_here(isv_request *x, isv__pool_job *job);
static unsigned nested_in_flight(const isv_request *x) { return x->nest->in_flight; }
const isv__nest_ops isv__nested_ops = {.cancel = isv__nested_cancel,
                                       .free = isv__nested_free,
                                       .run_here = nested_run_here,
                                       .in_flight = nested_in_flight};

/* r's nest, made on first use in r's arena (by the thread that owns r: its backend's). */
static isv__nest *nest_of(isv_request *r) {
  if (r->nest) return r->nest;
  isv__nest *n = isv__arena_alloc(&r->arena, sizeof *n);
  if (n == NULL) return NULL;
  memset(n, 0, sizeof *n);
  n->self = r;
  uv_mutex_lock(&r->core->mu); /* the loop reads it under mu (isv__nested_cancel) */
  r->nest = n;
  uv_mutex_unlock(&r->core->mu);
  return n;
}

/* Under mu: k leaves its parent's kids. */
static void unlink_kid(isv_request *k) {
  isv__nest *n = k->nest;
  isv__nest *pn = n->parent->nest;
  if (n->prev) n->prev->nest->next = n->next;
  else pn->kids = n->next;
  if (n->next) n->next->nest->prev = n->prev;
  n->prev = n->next = NULL;
}

ISV_EXTERN int isv_request_new_nested(isv_request *parent, const char *name, const char *version,
                                      isv_request **out) {
  if (out) *out = NULL;
  if (parent == NULL || name == NULL || name[0] == '\0' || out == NULL ||
      (version && version[0] == '\0'))
    return ISV_EINVAL;
  isv__core *c = parent->core;
  uv_mutex_lock(&c->mu);
  int ok = !isv__request_dead(parent) && parent->submitted && parent->is_exec &&
           !parent->completed && !parent->abandoned && !c->closed;
  uv_mutex_unlock(&c->mu);
  if (!ok) return ISV_ESTATE; /* only a running execution's backend makes them */
  unsigned depth = (parent->nest ? parent->nest->depth : 0) + 1;
  if (depth > ISV__NESTED_MAX_DEPTH) return ISV_EINVAL;
  isv__nest *pn = nest_of(parent);
  isv_request *r = pn ? isv__request_new(c) : NULL;
  if (r == NULL) return ISV_ENOMEM;
  isv__nest *n = isv__arena_alloc(&r->arena, sizeof *n);
  r->model_name = isv__arena_strndup(&r->arena, name, strlen(name));
  r->version = version ? isv__arena_strndup(&r->arena, version, strlen(version)) : NULL;
  if (n == NULL || r->model_name == NULL || (version && r->version == NULL)) {
    isv_request_free(r); /* no nest yet: an ordinary release */
    return ISV_ENOMEM;
  }
  memset(n, 0, sizeof *n);
  n->self = r;
  n->parent = parent;
  n->depth = depth;
  r->nest = n; /* nobody else sees r yet */
  r->trace = parent->trace; /* its tracestate is the parent's memory, which outlives r */
  uv_mutex_lock(&c->mu);
  n->next = pn->kids;
  if (pn->kids) pn->kids->nest->prev = r;
  pn->kids = r;
  uv_mutex_unlock(&c->mu);
  *out = r;
  return 0;
}

/* ---- done -------------------------------------------------------------------------------- */

static void wait_signal(isv__nest_wait *w, int status) {
  uv_mutex_lock(&w->mu);
  w->status = status;
  w->done = 1;
  uv_cond_signal(&w->cv);
  uv_mutex_unlock(&w->mu); /* w may be gone from here on */
}

/* The scheduler starts x's POOL execution (loop thread): its waiter runs it, when it has one.
 * n->wait is written before x reaches the loop and read here, on the loop, only. */
static int nested_run_here(isv_request *x, isv__pool_job *job) {
  isv__nest_wait *w = x->nest ? x->nest->wait : NULL;
  if (w == NULL) return 0;
  uv_mutex_lock(&w->mu);
  w->job = job;
  uv_cond_signal(&w->cv);
  uv_mutex_unlock(&w->mu);
  return 1;
}

/* A nested request's done callback in the core (loop thread). */
static void nested_done(isv_request *r, int status, void *data) {
  (void)data;
  isv__nest *n = r->nest;
  isv__core *c = r->core;
  uv_mutex_lock(&c->mu);
  n->state = ISV__NEST_DONE;
  n->parent->nest->in_flight--; /* the parent lives while its kids do */
  int orphan = n->orphan;
  isv__nest_wait *w = n->wait;
  uv_mutex_unlock(&c->mu);
  if (orphan) { /* nobody wants it any more: its parent was freed */
    isv_request_free(r);
    return;
  }
  if (w) {
    wait_signal(w, status);
    return;
  }
  n->cb(r, status, n->cb_data); /* may free r, complete the parent */
}

/* ---- submission (loop thread) ------------------------------------------------------------ */

/* Whether m runs one of r's ancestors: a cycle, which could wait for its own instance. */
static int on_chain(const isv_request *p, const isv_model *m) {
  for (; p; p = p->nest ? p->nest->parent : NULL)
    if (p->model == m) return 1;
  return 0;
}

static void start(isv_request *r) {
  isv__nest *n = r->nest;
  isv_request *p = n->parent;
  isv__core *c = r->core;
  uv_mutex_lock(&c->mu);
  n->state = ISV__NEST_RUNNING;
  uv_mutex_unlock(&c->mu);
  uint64_t dl = isv__request_deadline_ns(p);
  if (dl) { /* the parent's deadline is the nested request's too */
    uint64_t now = uv_hrtime();
    uint64_t us = dl > now ? (dl - now + 999) / 1000 : 1;
    if (r->timeout_us == 0 || us < r->timeout_us) r->timeout_us = us;
  }
  if (atomic_load_explicit(&p->cancelled, memory_order_relaxed) ||
      atomic_load_explicit(&r->cancelled, memory_order_relaxed)) { /* or freed: an orphan */
    isv__request_fail(r, ISV_ECANCELED, "the request of model '%s' that made this nested "
                      "request was cancelled", p->model->cfg->name);
  } else if (isv__request_bind(r) == 0 && on_chain(p, r->model)) {
    isv__request_fail(r, ISV_EINVAL, "model '%s' version '%s' is already on this request's "
                      "call chain: a model calling itself, directly or through others, could "
                      "wait for its own instance forever", r->model->cfg->name,
                      r->model->version);
  }
  isv__core_submit(c, r, nested_done, NULL);
}

static void posted(isv__offload *o) { start(OWNER(o, isv__nest, post)->self); }

/* Submit r (a nested request made by isv_request_new_nested) with cb, or for a waiter w. */
static int submit(isv_request *r, isv_infer_cb cb, void *data, isv__nest_wait *w) {
  isv__nest *n = r->nest;
  if (n == NULL || n->parent == NULL) return ISV_EINVAL; /* not nested: isv_server_infer */
  isv__core *c = r->core;
  isv_request *p = n->parent;
  uv_mutex_lock(&c->mu);
  int rc = 0;
  if (isv__request_dead(r) || n->state != ISV__NEST_NEW || r->submitted || n->dropped)
    rc = ISV_ESTATE;
  else if (p->completed || p->abandoned || c->closed)
    rc = ISV_ESTATE; /* its parent was answered: nobody would use the result */
  if (rc == 0) {
    n->state = ISV__NEST_POSTED;
    n->cb = cb;
    n->cb_data = data;
    n->wait = w;
    p->nest->in_flight++; /* before the parent's backend can return (an INLINE one waits) */
  }
  uv_mutex_unlock(&c->mu);
  if (rc != 0) return rc;
  if (isv__on_loop_thread(c)) {
    start(r); /* the callback may run before this returns (an inline model) */
    return 0;
  }
  if ((rc = isv__offload_post(c, &n->post, posted)) != 0) {
    uv_mutex_lock(&c->mu);
    n->state = ISV__NEST_NEW;
    p->nest->in_flight--;
    uv_mutex_unlock(&c->mu);
  }
  return rc;
}

ISV_EXTERN int isv_request_submit(isv_request *r, isv_infer_cb cb, void *data) {
  if (r == NULL || cb == NULL) return ISV_EINVAL;
  return submit(r, cb, data, NULL);
}

ISV_EXTERN int isv_request_run(isv_request *r) {
  if (r == NULL || r->nest == NULL || r->nest->parent == NULL) return ISV_EINVAL;
  isv__core *c = r->core;
  if (isv__on_loop_thread(c)) return ISV_ETHREAD; /* the loop would wait for itself */
  isv__nest_wait w;
  memset(&w, 0, sizeof w);
  if (uv_mutex_init(&w.mu) != 0) return ISV_ENOMEM;
  if (uv_cond_init(&w.cv) != 0) {
    uv_mutex_destroy(&w.mu);
    return ISV_ENOMEM;
  }
  int rc = submit(r, NULL, NULL, &w);
  if (rc == 0) {
    /* a worker that waits is not one: its pool may start another for the jobs that wait */
    isv__pool *pool = isv__pool_current();
    if (pool) isv__pool_block(pool);
    uv_mutex_lock(&w.mu);
    while (!w.done) {
      if (w.job) { /* its own nested request's execution, handed to this thread */
        isv__pool_job *j = w.job;
        w.job = NULL;
        uv_mutex_unlock(&w.mu);
        j->run(j);
        uv_mutex_lock(&w.mu);
        continue;
      }
      uv_cond_wait(&w.cv, &w.mu);
    }
    rc = w.status;
    uv_mutex_unlock(&w.mu);
    if (pool) isv__pool_unblock(pool);
  }
  uv_cond_destroy(&w.cv);
  uv_mutex_destroy(&w.mu);
  return rc;
}

/* ---- cancellation (loop thread) ---------------------------------------------------------- */

void isv__nested_cancel(isv_request *x) {
  isv__core *c = x->core;
  uv_mutex_lock(&c->mu);
  isv__nest *n = x->nest;
  if (n == NULL || n->in_flight == 0) {
    uv_mutex_unlock(&c->mu);
    return;
  }
  n->busy++; /* x stays while its kids are walked: a callback may free it */
  for (;;) {
    isv_request *k = n->kids;
    while (k && (k->nest->cancel_sent || k->nest->state != ISV__NEST_RUNNING)) k = k->nest->next;
    if (k == NULL) break;
    k->nest->cancel_sent = 1;
    uv_mutex_unlock(&c->mu);
    isv__core_cancel(k); /* k may finish (and go) here; its own kids are cancelled in turn */
    uv_mutex_lock(&c->mu);
  }
  int freed = --n->busy == 0 && n->free_pending;
  if (freed) n->free_pending = 0;
  uv_mutex_unlock(&c->mu);
  if (freed) isv_request_free(x); /* its owner freed it meanwhile */
}

/* ---- release ----------------------------------------------------------------------------- */

int isv__nested_free(isv_request *r, isv_request **then) {
  isv__nest *n = r->nest;
  isv__core *c = r->core;
  *then = NULL;
  if (!isv__on_loop_thread(c)) {
    /* a backend letting go of a nested request off the loop: models are counted on the loop,
     * so it is released with its parent (isv__nested_free of the parent) */
    uv_mutex_lock(&c->mu);
    int nested = n->parent != NULL;
    if (nested) n->dropped = 1;
    uv_mutex_unlock(&c->mu);
    if (nested) return 1;
    /* a parent freed off the loop (a closed core's abandoned request): kids are not
     * released here; they go with the core */
    return 0;
  }
  /* as a parent: release the kids that are done (or never submitted), orphan the running */
  uv_mutex_lock(&c->mu);
  if (n->parent && (n->state == ISV__NEST_POSTED || n->state == ISV__NEST_RUNNING)) {
    uv_mutex_unlock(&c->mu); /* misuse: freed in flight (on its way to the loop); it is */
    return 1;                /* released with its parent instead — never a crash */
  }
  if (n->busy) { /* isv__nested_cancel walks its kids: it frees r after */
    n->free_pending = 1;
    uv_mutex_unlock(&c->mu);
    return 1;
  }
  for (;;) {
    isv_request *k = n->kids;
    while (k && k->nest->orphan) k = k->nest->next;
    if (k == NULL) break;
    isv__nest *kn = k->nest;
    if (kn->state == ISV__NEST_NEW || kn->state == ISV__NEST_DONE) {
      unlink_kid(k);
      kn->parent = NULL;
      uv_mutex_unlock(&c->mu);
      isv_request_free(k); /* and its own kids */
      uv_mutex_lock(&c->mu);
      continue;
    }
    kn->orphan = 1; /* in flight: freed when done */
    int running = kn->state == ISV__NEST_RUNNING;
    uv_mutex_unlock(&c->mu);
    if (running) isv__core_cancel(k);
    else atomic_store_explicit(&k->cancelled, 1, memory_order_relaxed); /* on its way */
    uv_mutex_lock(&c->mu);
  }
  if (n->kids) { /* orphans still run: the last one frees r */
    n->free_pending = 1;
    uv_mutex_unlock(&c->mu);
    return 1;
  }
  /* as a nested request: it leaves its parent, whose free may have waited for it */
  isv_request *p = n->parent;
  if (p) {
    unlink_kid(r);
    n->parent = NULL;
    isv__nest *pn = p->nest;
    if (pn->free_pending && pn->kids == NULL && pn->busy == 0) {
      pn->free_pending = 0;
      *then = p;
    }
  }
  uv_mutex_unlock(&c->mu);
  return 0;
}
