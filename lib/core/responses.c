/* A decoupled request's responses (core/responses.h): sent from any thread, delivered on the
 * loop thread in order, with backpressure. */
#include "core/responses.h"

#include "codec/compiler.h"

#include <string.h>

int isv__request_stream(isv_request *r, isv_infer_cb cb, void *data) {
  if (r->submitted || cb == NULL) return ISV_EINVAL;
  isv__stream *st = r->stream;
  if (st == NULL && (st = isv__arena_alloc(&r->arena, sizeof *st)) == NULL) return ISV_ENOMEM;
  memset(st, 0, sizeof *st);
  st->cb = cb;
  st->data = data;
  r->stream = st;
  return 0;
}

ISV_EXTERN int isv_request_set_response_cb(isv_request *r, isv_infer_cb cb, void *data) {
  if (r == NULL || cb == NULL || r->submitted) return ISV_EINVAL;
  return isv__request_stream(r, cb, data);
}

/* The backend's isv_request_on_writable callback, when r's stream can take more or r was
 * cancelled — never after r was completed. Loop thread. */
static void flow_fire(isv_request *r) {
  isv__core *c = r->core;
  uv_mutex_lock(&c->mu);
  void (*cb)(isv_request *, void *) = NULL;
  isv__stream *st = r->stream;
  void *user = st->writable_user;
  int cancelled = atomic_load_explicit(&r->cancelled, memory_order_relaxed);
  if (st->writable && !r->completed && !r->abandoned &&
      (cancelled || (!st->blocked && st->pending < c->opts.max_queued_stream / 2 + 1))) {
    cb = st->writable;
    st->writable = NULL;
  }
  uv_mutex_unlock(&c->mu);
  if (cb) cb(r, user);
}

void isv__request_flow_block(isv_request *r) {
  uv_mutex_lock(&r->core->mu);
  r->stream->blocked = 1;
  uv_mutex_unlock(&r->core->mu);
}

void isv__request_flow_resume(isv_request *r) {
  uv_mutex_lock(&r->core->mu);
  r->stream->blocked = 0;
  uv_mutex_unlock(&r->core->mu);
  flow_fire(r);
}

void isv__responses_deliver(isv_request *r) {
  isv__core *c = r->core;
  isv__stream *st = r->stream;
  uv_mutex_lock(&c->mu);
  isv_request *q = st->head;
  st->head = st->tail = NULL;
  if (st->listed) { /* it is done with the core's list: unlink it */
    isv_request **pp = &c->resp_head, *prev = NULL;
    while (*pp != r) {
      prev = *pp;
      pp = &(*pp)->stream->listed_next;
    }
    *pp = st->listed_next;
    if (c->resp_tail == r) c->resp_tail = prev;
    st->listed = 0;
    st->listed_next = NULL;
  }
  for (isv_request *x = q; x; x = x->resp_next) {
    ISV_ASSERT(st->pending >= x->resp_cost, "a stream's pending bytes count its responses");
    st->pending -= x->resp_cost;
  }
  uv_mutex_unlock(&c->mu);
  if (q && !st->answered) { /* the request's first response: its time to it, ms (loop thread) */
    st->answered = 1;
    isv__hist_add(&r->model->stats.first_response, isv__first_response_bounds,
                  ISV__FIRST_RESPONSE_BUCKETS, (double)(uv_hrtime() - r->start_ns) / 1e6);
  }
  while (q) {
    isv_request *next = q->resp_next;
    q->resp_next = NULL;
    if (isv__request_postprocess(q, 1) != 0) q->n_outputs = 0;
    st->cb(q, q->status, st->data); /* the callee frees q */
    q = next;
  }
  flow_fire(r); /* may have room again: the front end blocked it or not while delivering */
}


/* Under c->mu: r goes into the core's list of requests the loop looks at (responses to
 * deliver, a writable callback to fire), once. */
static void list_for_delivery(isv__core *c, isv_request *r) {
  isv__stream *st = r->stream;
  if (st->listed) return;
  st->listed = 1;
  st->listed_next = NULL;
  if (c->resp_tail) c->resp_tail->stream->listed_next = r;
  else c->resp_head = r;
  c->resp_tail = r;
}

ISV_EXTERN int isv_request_send_response(isv_request *r) {
  if (r == NULL || !r->submitted || r->parent || !r->is_exec) return ISV_EINVAL;
  if (isv__request_dead(r) || !r->model->cfg->decoupled || r->stream == NULL) return ISV_ESTATE;
  isv__core *c = r->core;
  isv__stream *st = r->stream;
  /* what the response costs its stream: the response object, the arena it takes (8 KiB at the
   * least: a stream of one-word responses is mostly arenas) and its outputs' bytes */
  size_t cost = ISV__RESP_COST + isv__arena_capacity(&r->out_arena);
  for (size_t i = 0; i < r->n_outputs; i++) cost += r->outputs[i].byte_size;
  uv_mutex_lock(&c->mu);
  int full = st->blocked || (st->pending && st->pending + cost > c->opts.max_queued_stream);
  uv_mutex_unlock(&c->mu);
  if (full) return ISV_EAGAIN; /* nothing taken: the backend retries after on_writable */
  isv_request *q = isv__request_new(c);
  if (q == NULL) return ISV_ENOMEM;
  /* the response takes what the backend set since the last one; the request starts empty */
  q->parent = r;
  q->model = r->model; /* borrowed, like id and requested outputs: r outlives q */
  q->id = r->id;
  q->has_id = r->has_id;
  q->protocol = r->protocol;
  q->proto_flags = r->proto_flags;
  q->req_outputs = r->req_outputs;
  q->n_req_outputs = r->n_req_outputs;
  q->submitted = q->finished = 1;
  q->completed = 1;
  q->outputs = r->outputs;
  q->n_outputs = r->n_outputs;
  q->cap_outputs = r->cap_outputs;
  q->resp_params = r->resp_params;
  q->n_resp_params = r->n_resp_params;
  q->cap_resp_params = r->cap_resp_params;
  q->owned = r->owned;
  q->arena = r->out_arena;
  uv_mutex_lock(&c->mu);
  if (r->completed || r->abandoned) {
    uv_mutex_unlock(&c->mu);
    isv__free(q); /* took nothing yet */
    return ISV_ESTATE;
  }
  r->outputs = NULL;
  r->n_outputs = r->cap_outputs = 0;
  r->resp_params = NULL;
  r->n_resp_params = r->cap_resp_params = 0;
  r->owned = NULL;
  r->out_arena = (isv__arena){.bufs = &c->bufs};
  r->children++;
  q->resp_cost = cost;
  st->pending += cost;
  if (st->tail) st->tail->resp_next = q;
  else st->head = q;
  st->tail = q;
  list_for_delivery(c, r);
  uv_mutex_unlock(&c->mu);
  uv_async_send(&c->async); /* delivered from the loop, even when sent on it: in order */
  return 0;
}

ISV_EXTERN int isv_request_on_writable(isv_request *r, isv_writable_cb cb, void *user) {
  if (r == NULL || cb == NULL || !r->submitted || r->parent || !r->is_exec) return ISV_EINVAL;
  if (isv__request_dead(r) || !r->model->cfg->decoupled || r->stream == NULL) return ISV_ESTATE;
  isv__core *c = r->core;
  uv_mutex_lock(&c->mu);
  if (r->completed || r->abandoned) {
    uv_mutex_unlock(&c->mu);
    return ISV_ESTATE;
  }
  r->stream->writable = cb;
  r->stream->writable_user = user;
  /* the loop looks at it (isv__responses_deliver, then flow_fire) — it may have room already */
  list_for_delivery(c, r);
  uv_mutex_unlock(&c->mu);
  uv_async_send(&c->async);
  return 0;
}

void isv__responses_cancelled(isv_request *r) { flow_fire(r); }
