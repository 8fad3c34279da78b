/* The model repository extension over REST (v2_repo.h): index answered at once, load and
 * unload as requests of the repository's hidden model (core/repository.h), answered when the
 * host completes them. */
#include <string.h>

#include "core/request.h"
#include "protocol/edge.h"
#include "protocol/http_reply.h"
#include "protocol/v2_repo.h"
#include "core/scheduler.h"

void isv__v2repo_http_index(isv__http_req *q) {
  isv__exchange *ex = q->ex;
  char err[512];
  int ready;
  int rc = isv__v2repo_json_index(ex->body, ex->body_len, q->core->opts.max_json_depth, &ready,
                                  err, sizeof err);
  if (rc != 0) {
    isv__reply_error(ex, rc, "%s", err);
    return;
  }
  isv_repository_list ix;
  if (isv__repo_index(q->core, ready, &ix) != 0) {
    isv__reply_error(ex, ISV_ENOMEM, "out of memory");
    return;
  }
  isv__buf b;
  isv__buf_init(&b, ex->mem);
  isv__v2repo_json_index_response(&ix, &b);
  isv__repo_index_free(&ix);
  isv__reply_json(ex, 200, &b);
}

/* The host completed the operation (or it failed before reaching it): Triton answers 200 with
 * an empty body. The answer goes first, then the request: the exchange's on_cancel may run
 * inside the answer and must find the request alive. */
static void op_done(isv_request *r, int status, void *data) {
  isv__exchange *ex = data;
  if (status != 0) {
    isv__reply_error(ex, status, "%s", r->errmsg && r->errmsg[0] ? r->errmsg
                                                                 : isv_strerror(status));
  } else {
    isv__response resp = {.status = 200, .content_type = "application/json"};
    isv__exchange_respond(ex, &resp);
  }
  isv_request_free(r);
}

/* The client is gone: an operation still queued never reaches the host; a running one is
 * only flagged (the host completes it; its answer goes nowhere). */
static void client_gone(isv__exchange *ex) { isv__core_cancel(ex->app); }

static void control(isv__http_req *q, isv__repo_action action) {
  isv__exchange *ex = q->ex;
  isv_request *r = isv__request_new(q->core);
  if (r == NULL) {
    isv__reply_error(ex, ISV_ENOMEM, "out of memory");
    return;
  }
  r->protocol = (uint8_t)q->protocol;
  r->caller = isv__edge_caller(q->ex); /* the model stage judges the model it resolves to */
  size_t nl = 0;
  const char *name = isv__http_capture(q, "model", &nl);
  unsigned depth = q->core->opts.max_json_depth;
  if (action == ISV__REPO_LOAD) isv__v2repo_json_load(r, name, nl, ex->body, ex->body_len, depth);
  else isv__v2repo_json_unload(r, name, nl, ex->body, ex->body_len, depth);
  isv__http_give_body(r, ex); /* the op's strings are copies; the body goes with r */
  ex->app = r;
  ex->on_cancel = client_gone;
  /* a server without a repository answers that first (isv__repo_bind), whatever the body */
  isv__core_submit(q->core, r, op_done, ex);
}

void isv__v2repo_http_load(isv__http_req *q) { control(q, ISV__REPO_LOAD); }
void isv__v2repo_http_unload(isv__http_req *q) { control(q, ISV__REPO_UNLOAD); }

void isv__v2repo_http_named(isv__http_req *q) {
  isv__reply_error(q->ex, ISV_EUNIMPL, "%s", ISV__REPO_NAMED_UNSUPPORTED);
}
