/* A decoupled request's responses: what a backend sends before it completes
 * (isv_request_send_response), in order, to the front end's response callback, with
 * backpressure on the way (isv_request_on_writable).
 *
 * A request streams when its front end (or the host) gave it a response callback before
 * submission; r->stream is then this object, made in r's arena, and every response is a
 * request of its own (r->parent set) that borrows r's model, id and requested outputs and takes
 * the outputs and response parameters the backend set since the previous one. Responses may
 * be sent from any thread; they are delivered on the loop thread, after the loop is woken
 * (even when sent on it: in order). The stream's fields are under core->mu. */
#ifndef ISV_CORE_RESPONSES_H
#define ISV_CORE_RESPONSES_H

#include "core/layer.h"

#include "core/request.h"

typedef struct isv__stream {
  isv_infer_cb cb; /* the front end's, for each response (the callee frees it) */
  void *data;
  isv_request *head, *tail;  /* sent, not yet delivered (linked by resp_next) */
  isv_request *listed_next;  /* in the core's list of requests with something to deliver */
  int listed;                /* in that list */
  /* backpressure: pending: bytes of responses sent and not yet delivered (each counted as its
   * arena, its outputs' bytes and ISV__RESP_COST: a response's resp_cost); blocked: the front
   * end found the stream's queue full (isv__request_flow_block) and has not resumed it yet;
   * cb, user: the backend's isv_request_on_writable, once. */
  size_t pending;
  int blocked;
  void (*writable)(isv_request *r, void *user);
  void *writable_user;
  int answered; /* its first response was delivered (Triton's first-response histogram) */
} isv__stream;

/* What a decoupled response counts against its stream's bound besides its outputs' bytes: the
 * response object and its bookkeeping. */
#define ISV__RESP_COST 512
/* Backpressure on a decoupled request's responses, for front ends (loop thread): the stream's
 * queue is full — isv_request_send_response answers ISV_EAGAIN until resumed — or has room
 * again (the backend's isv_request_on_writable callback runs, on this thread). r is the
 * request, not a response (a response's parent). */
void isv__request_flow_block(isv_request *r);
void isv__request_flow_resume(isv_request *r);

/* Give r (not yet submitted) a stream whose responses go to cb(response, status, data) on the
 * loop thread. 0, or ISV_ENOMEM; ISV_EINVAL when r was submitted already. */
int isv__request_stream(isv_request *r, isv_infer_cb cb, void *data);

/* The responses r sent so far, to its callback, in order; then the backend's writable
 * callback when its stream has room again (loop thread; scheduler.c calls it when r finishes,
 * and for each request the core's list names when the loop wakes up). */
void isv__responses_deliver(isv_request *r);
/* r was cancelled (its client went, its deadline passed): a backend waiting for room in its
 * stream hears it through its writable callback. Loop thread. */
void isv__responses_cancelled(isv_request *r);

#endif
