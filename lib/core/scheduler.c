/* The request path in the core: bind, validate, run the backend (inline or on libuv's pool),
 * collect the completion from whatever thread it comes, post-process, call back.
 *
 * Completion protocol (all flags under core->mu):
 *  - whoever is running infer sets in_infer; a completion that arrives meanwhile only sets
 *    `completed`, and the code that called infer finishes the request once infer returned
 *    (inline: right after the call; pool: in after_work_cb, so the uv_work_t is never freed
 *    while libuv still owns it);
 *  - a completion after that point is queued and the loop is woken with uv_async_send, unless
 *    it already runs on the loop thread, where the request finishes at once. */
#include <stdlib.h>
#include <string.h>

#include "core/request.h"

int isv__on_loop_thread(const isv__core *c) {
  uv_thread_t self = uv_thread_self();
  return uv_thread_equal(&self, &c->loop_thread);
}

static void record(isv_request *r) {
  isv__stats *s = &r->model->stats;
  s->inflight--;
  if (r->status == 0) s->success[r->protocol]++;
  else s->failure[r->protocol]++;
  uint64_t now = uv_hrtime();
  isv__hist_add(&s->latency, isv__lat_bounds, ISV__LAT_BUCKETS, (double)(now - r->start_ns) / 1e9);
  if (r->run_ns)
    isv__hist_add(&s->queue, isv__lat_bounds, ISV__LAT_BUCKETS,
                  (double)(r->run_ns - r->start_ns) / 1e9);
  double rows = 1;
  if (r->model->cfg->max_batch > 0 && r->n_inputs > 0 && r->inputs[0].ndim > 0)
    rows = (double)r->inputs[0].shape[0];
  isv__hist_add(&s->batch, isv__batch_bounds, ISV__BATCH_BUCKETS, rows);
}

static void finish(isv_request *r) {
  isv__core *c = r->core;
  if (r->status == 0 && isv__request_postprocess(r) != 0 && r->errmsg[0] == '\0')
    r->errmsg = isv_strerror(r->status);
  if (r->status != 0) r->n_outputs = 0; /* a failed request shows no partial outputs */
  if (r->counted) record(r);
  if (r->counted && --c->inflight == 0) uv_unref((uv_handle_t *)&c->async);
  r->finished = 1;
  r->done(r, r->status, r->done_data); /* may free r */
  if (c->closing && c->inflight == 0 && c->on_idle) c->on_idle(c);
}

void isv__core_drain_completions(uv_async_t *h) {
  isv__core *c = h->data;
  uv_mutex_lock(&c->mu);
  isv_request *q = c->done_head;
  c->done_head = c->done_tail = NULL;
  uv_mutex_unlock(&c->mu);
  while (q) {
    isv_request *next = q->qnext;
    finish(q);
    q = next;
  }
}

ISV_EXTERN int isv_request_complete(isv_request *r, int status, const char *message) {
  if (r == NULL || status > 0) return ISV_EINVAL;
  isv__core *c = r->core;
  uv_mutex_lock(&c->mu);
  if (r->completed || !r->submitted) {
    uv_mutex_unlock(&c->mu);
    return ISV_ESTATE;
  }
  if (status != 0) isv__request_backend_failed(r, status, message);
  r->completed = 1;
  if (r->in_infer) { /* the caller of infer finishes it */
    uv_mutex_unlock(&c->mu);
    return 0;
  }
  int on_loop = isv__on_loop_thread(c);
  if (!on_loop) {
    r->qnext = NULL;
    if (c->done_tail) c->done_tail->qnext = r;
    else c->done_head = r;
    c->done_tail = r;
  }
  uv_mutex_unlock(&c->mu);
  if (on_loop) finish(r);
  else uv_async_send(&c->async);
  return 0;
}

/* After infer returned: finish now if it completed, or fail it if it returned an error. */
static void after_infer(isv_request *r, int rc) {
  isv__core *c = r->core;
  uv_mutex_lock(&c->mu);
  r->in_infer = 0;
  int done = r->completed;
  if (!done && rc < 0) {
    isv__request_backend_failed(r, rc, NULL);
    r->completed = done = 1;
  }
  uv_mutex_unlock(&c->mu);
  if (done) finish(r);
}

static void pool_work(uv_work_t *w) {
  isv_request *r = w->data;
  r->run_ns = uv_hrtime();
  int rc = r->model->backend.infer(r, r->model->user);
  uv_mutex_lock(&r->core->mu);
  if (!r->completed && rc < 0) {
    isv__request_backend_failed(r, rc, NULL);
    r->completed = 1;
  }
  uv_mutex_unlock(&r->core->mu);
}

static void pool_after(uv_work_t *w, int status) {
  isv_request *r = w->data;
  if (status == UV_ECANCELED) {
    isv__request_fail(r, ISV_ECANCELED, "request cancelled before it ran");
    uv_mutex_lock(&r->core->mu);
    r->completed = 1;
    uv_mutex_unlock(&r->core->mu);
  }
  after_infer(r, 0);
}

void isv__core_submit(isv__core *c, isv_request *r, isv_infer_cb done, void *data) {
  r->core = c;
  r->done = done;
  r->done_data = data;
  r->submitted = 1;
  r->start_ns = uv_hrtime();
  /* The one order of errors for every protocol: an unknown model or version (404), then the
   * front end's decode error (400...), then a model that is not ready (503), then validation. */
  if (isv__request_bind(r) != 0 || r->status != 0) {
    finish(r);
    return;
  }
  /* While requests run, the async handle keeps the loop alive for their completions. */
  if (c->inflight++ == 0) uv_ref((uv_handle_t *)&c->async);
  r->counted = 1;
  isv_model *m = r->model;
  m->stats.inflight++;
  if (m->removed || m->state != ISV_MODEL_READY) {
    isv__request_fail(r, ISV_EUNAVAIL, "model '%s' version '%s' is not ready", m->cfg->name,
                      m->version);
    finish(r);
    return;
  }
  if (isv__request_validate(r) != 0) {
    finish(r);
    return;
  }
  r->in_infer = 1;
  if (m->cfg->exec_mode == ISV_EXEC_POOL) {
    r->work.data = r;
    if (uv_queue_work(c->loop, &r->work, pool_work, pool_after) != 0) {
      r->in_infer = 0;
      isv__request_fail(r, ISV_EINTERNAL, "could not queue the request on the thread pool");
      finish(r);
    }
    return;
  }
  r->run_ns = uv_hrtime();
  int rc = m->backend.infer(r, m->user);
  after_infer(r, rc);
}
