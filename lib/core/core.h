/* The protocol-agnostic server core: options, registry, readiness, and the path every request
 * takes (resolve → validate → run the backend inline or on the pool → post-process → done).
 * Loop thread only, except isv_request_complete() which may come from any thread and returns
 * to the loop through one uv_async_t. */
#ifndef ISV_CORE_CORE_H
#define ISV_CORE_CORE_H

#include "core/layer.h"

#include <uv.h>

#include "codec/bigbuf.h"
#include "core/options.h"
#include "core/registry.h"

typedef struct isv__core isv__core;

struct isv__core {
  uv_loop_t *loop;
  uv_thread_t loop_thread;
  isv_options opts;
  isv__registry reg;
  isv__bigbuf_cache bufs; /* large blocks reused across requests (bodies, messages, tensors) */
  uv_async_t async;
  uv_mutex_t mu; /* guards the done queue and every request's completion flags */
  isv_request *done_head;
  isv_request *done_tail;
  size_t inflight;
  int online;
  int closing;
  void (*on_idle)(isv__core *core); /* called when closing and the last request finished */
};

int isv__core_init(isv__core *c, uv_loop_t *loop, const isv_options *opts);
/* Closes the async handle; close_cb gets the handle when it is closed. */
void isv__core_close(isv__core *c, uv_close_cb close_cb);
int isv__core_ready(const isv__core *c);

/* Submit a request already filled by a frontend (or the in-process API). `done` runs on the
 * loop thread exactly once — possibly before this returns. Returns 0; never fails otherwise:
 * every request-level error reaches `done`. */
void isv__core_submit(isv__core *c, isv_request *r, isv_infer_cb done, void *data);

int isv__on_loop_thread(const isv__core *c);

#endif
