/* The core's life (init, close) and the queries every front end asks it: is the server ready,
 * is this model ready, which model version does (name, version or label) mean. Written once
 * here so that no protocol keeps a copy of a rule (they drifted when they did). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/group.h"
#include "core/repository.h"
#include "core/request.h"
#include "core/resolve.h"

int isv__core_init(isv__core *c, uv_loop_t *loop, const isv_options *opts) {
  memset(c, 0, sizeof *c);
  c->loop = loop;
  c->loop_thread = uv_thread_self();
  c->opts = *opts;
  c->mem = &c->opts.mem;
  c->opts.group = NULL; /* the options' reference is theirs: the core holds its own */
  c->protocols[0] = "inprocess";
  c->n_protocols = 1;
  atomic_init(&c->refs, 1);
  int rc = isv__registry_init(&c->reg, c, c->mem);
  if (rc) return rc;
  isv__timeheap_init(&c->timers, c->mem);
  if (uv_mutex_init(&c->mu) != 0) goto fail_reg;
  /* the options' group, or a group of one: c->shm and c->clients are the group's */
  if ((rc = isv__group_enter(c, opts->group, opts->shared_memory,
                             opts->shared_memory_in_place)) != 0)
    goto fail_mu;
  if (isv__bigbuf_cache_init(&c->bufs, opts->buffer_cache_bytes, c->mem) != 0) goto fail_group;
  if (isv__pool_init(&c->pool, opts->worker_threads, c->mem) != 0) goto fail_bufs;
  if (uv_async_init(loop, &c->async, isv__core_drain_completions) != 0) goto fail_pool;
  c->async.data = c;
  uv_unref((uv_handle_t *)&c->async); /* referenced only while requests are in flight */
  uv_timer_init(loop, &c->timer);
  c->timer.data = c;
  uv_unref((uv_handle_t *)&c->timer); /* deadlines never keep the host's loop alive */
  isv__group_join(c); /* the group's models arrive */
  return 0;
fail_pool:
  isv__pool_destroy(&c->pool);
fail_bufs:
  isv__bigbuf_cache_destroy(&c->bufs);
fail_group:
  isv__group_exit(c);
fail_mu:
  uv_mutex_destroy(&c->mu);
fail_reg:
  isv__registry_clear(&c->reg);
  return rc ? rc : ISV_ENOMEM;
}

/* The timer is closed first, then the async handle; then the caller's close callback runs
 * and the owner's reference is dropped (the memory may outlive it: isv__core_unref). */
static void on_async_closed(uv_handle_t *h) {
  isv__core *c = h->data;
  if (c->close_cb) c->close_cb(h);
  isv__core_unref(c);
}

static void on_timer_closed(uv_handle_t *h) {
  isv__core *c = h->data;
  c->async.data = c;
  uv_close((uv_handle_t *)&c->async, on_async_closed);
}

static void pool_gone(void *data) { isv__core_unref(data); }

void isv__core_close(isv__core *c, uv_close_cb close_cb) {
  /* the pool's reference, kept while threads let go may still run an abandoned backend */
  uv_mutex_lock(&c->mu);
  int may_hang = c->stuck > 0; /* else the jobs still running are finishing: join them */
  uv_mutex_unlock(&c->mu);
  atomic_fetch_add(&c->refs, 1);
  if (isv__pool_stop(&c->pool, may_hang, pool_gone, c) == 0) atomic_fetch_sub(&c->refs, 1);
  isv__registry_clear(&c->reg); /* a version an abandoned execution holds stays until then */
  /* left the group at the close's start (isv__core_begin_close); now its reference goes — a
   * group of one's table, shared memory and client counts with it (a region a request still
   * uses stays mapped until then) */
  isv__group_exit(c);
  uv_mutex_lock(&c->mu);
  c->closed = 1; /* from now on abandoned executions are freed by whoever completes them */
  isv_request *q = c->done_head; /* abandoned ones completed, not yet freed by the loop */
  c->done_head = c->done_tail = NULL;
  for (size_t i = 0; i < c->q_len; i++) isv__free(c->quarantine[i]);
  c->q_len = 0;
  uv_mutex_unlock(&c->mu);
  while (q) {
    isv_request *next = q->qnext;
    isv__abandoned_release(q);
    q = next;
  }
  isv__timeheap_free(&c->timers);
  c->close_cb = close_cb;
  uv_close((uv_handle_t *)&c->timer, on_timer_closed);
}

void isv__core_unref(isv__core *c) {
  if (atomic_fetch_sub(&c->refs, 1) != 1) return;
  isv__pool_free(&c->pool);
  uv_mutex_destroy(&c->mu);
  isv__bigbuf_cache_destroy(&c->bufs);
  if (c->free_owner) c->free_owner(c);
}

static void ready_one(isv__model_entry *e, void *data) {
  for (isv_model *m = e->versions; m; m = m->next)
    if (m->state != ISV_MODEL_READY) *(int *)data = 0;
}

int isv__core_online(const isv__core *c) { return isv__group_online(c); }

void isv__core_set_online(isv__core *c, int online) { isv__group_set_online(c, online); }

int isv__core_ready(isv__core *c) {
  if (!isv__core_online(c) || c->closing) return 0;
  if (!c->opts.strict_readiness) return 1;
  int ok = 1;
  isv__registry_foreach(isv__core_models(c), ready_one, &ok);
  return ok;
}

void isv__core_log(const isv__core *c, isv_log_level level, const char *fmt, ...) {
  if (c->opts.log == NULL) return;
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  c->opts.log(c->opts.log_user, level, msg);
}

unsigned isv__core_protocol(isv__core *c, const char *label) {
  return isv__group_protocol(c, label); /* one index for every member's statistics */
}

int isv__core_model_ready(const isv__core *c, const isv_model *m) {
  return m->state == ISV_MODEL_READY && !m->removed && isv__core_online(c) && !c->closing;
}

isv__registry *isv__core_models(isv__core *c) {
  isv__group_sync(c);
  return &c->reg;
}

isv__why isv__core_resolve(isv__core *c, const isv__model_spec *ref, isv_model **out) {
  *out = NULL;
  const isv__model_entry *e = isv__registry_visible(isv__core_models(c), ref->name, ref->name_len);
  if (e == NULL) return ISV__NO_MODEL;
  if (ref->label) *out = isv__entry_label(e, ref->label, ref->label_len);
  else if (ref->version) *out = isv__entry_version(e, ref->version, ref->version_len);
  else *out = isv__entry_default(e); /* an entry has a version: it goes with its last one */
  if (*out) return ISV__FOUND;
  return ref->label ? ISV__NO_LABEL : ISV__NO_VERSION;
}

int isv__core_fail_why(isv_request *r, isv__why why, const isv__model_spec *spec) {
  char msg[512];
  int code = isv__why_say(why, ISV__WORDS_KSERVE, spec, msg, sizeof msg);
  return isv__request_fail(r, code, "%s", msg);
}

int isv__request_bind(isv_request *r) {
  if (r->model) return 0;
  if (r->repo_op) return isv__repo_bind(r); /* the repository's own model (repository.c) */
  if (r->model_name == NULL || r->model_name[0] == '\0') {
    if (r->status == 0) isv__request_fail(r, ISV_EBADREQ, "the request names no model");
    return r->status;
  }
  isv__model_spec ref = {r->model_name, strlen(r->model_name), r->version,
                        r->version ? strlen(r->version) : 0, r->label, r->label ? strlen(r->label) : 0};
  isv_model *m;
  isv__why why = isv__core_resolve(r->core, &ref, &m);
  if (why != ISV__FOUND) return isv__core_fail_why(r, why, &ref); /* replaces a decode error */
  isv__model_ref(m);
  r->model = m;
  return 0;
}
