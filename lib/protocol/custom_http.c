/* The host's own HTTP routes (isv_server_add_route; grps's customized HTTP). A route is served
 * by a hidden model version of its own ("@route POST /custom/sse": open I/O, decoupled) whose
 * backend calls the host's handler, so a custom request is scheduled, limited, timed out,
 * cancelled and counted like any other — its instances, its queue, the worker pool. The
 * handler's answer reaches the loop the way a decoupled model's responses do, from any thread
 * and in order: the head and each piece are a response (output "body", one BYTES element; the
 * head in the response parameters "status", "content_type" and "header:<name>"), the end is the
 * request's completion. On the loop they become the exchange's answer: whole, or streamed. */
#include "protocol/custom_http.h"
#include "protocol/trace.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "protocol/http_reply.h"
#include "core/responses.h"
#include "core/scheduler.h"

/* What the handler sees (the request's copy of the exchange) and what it has answered. Lives in
 * the request's arena; touched by the handler's thread only, after the loop filled it. */
struct isv_http_request {
  isv_request *r;
  const char *method, *path, *query;
  isv__header *headers;
  size_t n_headers;
  char *body;
  size_t body_len;
  isv__header *resp_headers; /* isv_http_add_header's, until the head goes */
  size_t n_resp, cap_resp;
  int begun; /* isv_http_begin called */
  int done;  /* respond or end called */
  /* A streamed answer's pieces and its backpressure: written by the handler's thread, taken by
   * the loop. isv_http_write copies each piece into `pend`; the first one after the loop took
   * the buffer rings the loop (`kick`: one decoupled response, empty, is on its way), which
   * then sends the whole buffer as one piece — a piece costs its bytes, not a response object
   * of its own. `blocked`: the exchange's queue is full (isv__exchange_writable said no) until
   * its on_writable. */
  uv_mutex_t mu; /* guards what follows */
  int mu_ready;
  const isv_mem *mem;
  size_t limit; /* the server's max_queued_stream */
  char *pend;
  size_t pend_len, pend_cap;
  int kick;
  int blocked;
  int gone;  /* the client left */
  int ended; /* isv_http_end was called: no callback any more */
  isv_http_writable_cb wcb;
  void *wuser;
};

/* The loop's side of one custom request. In the request's arena. */
typedef struct custom_state {
  isv__exchange *ex;
  isv_http_request *q;
  int begun; /* the head went out */
} custom_state;

/* ---- the handler's side (any thread) ------------------------------------------------------- */

ISV_EXTERN const char *isv_http_method(const isv_http_request *q) { return q ? q->method : NULL; }
ISV_EXTERN const char *isv_http_path(const isv_http_request *q) { return q ? q->path : NULL; }
ISV_EXTERN const char *isv_http_query(const isv_http_request *q) { return q ? q->query : NULL; }

ISV_EXTERN const char *isv_http_header(const isv_http_request *q, const char *name, size_t *len) {
  size_t n = name ? strlen(name) : 0;
  for (size_t i = 0; q && name && i < q->n_headers; i++)
    if (q->headers[i].name_len == n && strncasecmp(q->headers[i].name, name, n) == 0) {
      if (len) *len = q->headers[i].value_len;
      return q->headers[i].value;
    }
  if (len) *len = 0;
  return NULL;
}

ISV_EXTERN void *isv_http_body(isv_http_request *q, size_t *len) {
  if (len) *len = q ? q->body_len : 0;
  return q ? q->body : NULL;
}

ISV_EXTERN int isv_http_is_cancelled(const isv_http_request *q) {
  return q && q->r ? isv_request_is_cancelled(q->r) : 0;
}

static int header_allowed(const char *name) {
  static const char *const framing[] = {"content-length", "transfer-encoding", "connection",
                                        "content-type"};
  if (name == NULL || name[0] == '\0' || strpbrk(name, ":\r\n ") != NULL) return 0;
  for (size_t i = 0; i < sizeof framing / sizeof *framing; i++)
    if (strcasecmp(name, framing[i]) == 0) return 0;
  return 1;
}

ISV_EXTERN int isv_http_add_header(isv_http_request *q, const char *name, const char *value) {
  if (q == NULL || value == NULL || !header_allowed(name) || strpbrk(value, "\r\n") != NULL)
    return ISV_EINVAL;
  if (q->begun || q->done) return ISV_ESTATE;
  if (q->n_resp == q->cap_resp) {
    size_t cap = q->cap_resp ? 2 * q->cap_resp : 4;
    isv__header *h = isv_request_alloc(q->r, cap * sizeof *h);
    if (h == NULL) return ISV_ENOMEM;
    if (q->n_resp) memcpy(h, q->resp_headers, q->n_resp * sizeof *h);
    q->resp_headers = h;
    q->cap_resp = cap;
  }
  size_t nl = strlen(name), vl = strlen(value);
  char *copy = isv_request_alloc(q->r, nl + vl + 2);
  if (copy == NULL) return ISV_ENOMEM;
  memcpy(copy, name, nl + 1);
  memcpy(copy + nl + 1, value, vl + 1);
  q->resp_headers[q->n_resp++] = (isv__header){copy, nl, copy + nl + 1, vl};
  return 0;
}

/* The head as response parameters of the response being built. */
static int set_head(isv_http_request *q, int status, const char *content_type) {
  if (status < 200 || status > 599) return ISV_EINVAL;
  isv_param p = {.type = ISV_PARAM_INT64, .v.i64 = status};
  int rc = isv_request_set_response_param(q->r, "status", &p);
  if (rc == 0 && content_type) {
    p.type = ISV_PARAM_STRING;
    p.v.s.ptr = content_type;
    p.v.s.len = strlen(content_type);
    rc = isv_request_set_response_param(q->r, "content_type", &p);
  }
  for (size_t i = 0; rc == 0 && i < q->n_resp; i++) {
    char key[128];
    if (snprintf(key, sizeof key, "header:%s", q->resp_headers[i].name) >= (int)sizeof key)
      return ISV_EINVAL;
    p.type = ISV_PARAM_STRING;
    p.v.s.ptr = q->resp_headers[i].value;
    p.v.s.len = q->resp_headers[i].value_len;
    rc = isv_request_set_response_param(q->r, key, &p);
  }
  return rc;
}

/* The piece `data` as output "body" of the response being built (the buffer contract). */
static int set_body(isv_http_request *q, const void *data, size_t len, isv_destructor del) {
  int64_t one = 1;
  if (del == ISV_TRANSIENT) {
    isv_bytes b = {data, len};
    return isv_request_set_output(q->r, "body", ISV_BYTES, &one, 1, &b, 0, ISV_TRANSIENT);
  }
  isv_bytes *b = isv_request_alloc(q->r, sizeof *b); /* lives as long as the request */
  if (b == NULL) {
    if (del != ISV_STATIC) del((void *)(uintptr_t)data);
    return ISV_ENOMEM;
  }
  b->ptr = data;
  b->len = len;
  if (del != ISV_STATIC && isv__request_keep(q->r, (void *)(uintptr_t)data, del) != 0) {
    del((void *)(uintptr_t)data);
    return ISV_ENOMEM;
  }
  return isv_request_set_output(q->r, "body", ISV_BYTES, &one, 1, b, 0, ISV_STATIC);
}

ISV_EXTERN int isv_http_respond(isv_http_request *q, int status, const char *content_type,
                                const void *body, size_t len, isv_destructor del) {
  if (q == NULL || (len && body == NULL)) return ISV_EINVAL;
  if (q->begun || q->done) return ISV_ESTATE;
  int rc = set_head(q, status, content_type);
  if (rc == 0) rc = set_body(q, len ? body : "", len, len ? del : ISV_STATIC);
  else if (del != ISV_STATIC && del != ISV_TRANSIENT && body) del((void *)(uintptr_t)body);
  if (rc != 0) return rc;
  q->done = 1;
  return isv_request_complete(q->r, 0, NULL);
}

/* Ring the loop: one empty response, whose delivery takes the buffer (deliver). Called after
 * setting q->kick; clears it again when the response could not be sent. */
static int ring(isv_http_request *q) {
  int rc = isv_request_send_response(q->r);
  if (rc != 0) {
    uv_mutex_lock(&q->mu);
    q->kick = 0;
    uv_mutex_unlock(&q->mu);
  }
  return rc;
}

ISV_EXTERN int isv_http_begin(isv_http_request *q, int status, const char *content_type) {
  if (q == NULL) return ISV_EINVAL;
  if (q->begun || q->done) return ISV_ESTATE;
  int rc = set_head(q, status, content_type);
  if (rc != 0) return rc;
  uv_mutex_lock(&q->mu);
  q->kick = 1; /* the head's response takes what is written until it reaches the loop */
  uv_mutex_unlock(&q->mu);
  if ((rc = ring(q)) == 0) q->begun = 1;
  return rc;
}

static void destroy(void *data, isv_destructor del) {
  if (del != ISV_STATIC && del != ISV_TRANSIENT && data) del((void *)(uintptr_t)data);
}

ISV_EXTERN int isv_http_write(isv_http_request *q, const void *data, size_t len,
                              isv_destructor del) {
  if (q == NULL || (len && data == NULL)) return ISV_EINVAL;
  if (!q->begun || q->done || len == 0) {
    destroy((void *)(uintptr_t)data, del);
    return len == 0 && q->begun && !q->done ? 0 : ISV_ESTATE;
  }
  uv_mutex_lock(&q->mu);
  if (q->gone) { /* dropped, as the carrier would */
    uv_mutex_unlock(&q->mu);
    destroy((void *)(uintptr_t)data, del);
    return 0;
  }
  if (q->blocked || (q->pend_len && len > q->limit - (q->pend_len < q->limit ? q->pend_len
                                                                              : q->limit))) {
    uv_mutex_unlock(&q->mu);
    return ISV_EAGAIN; /* nothing taken: the caller keeps data */
  }
  if (q->pend_len + len > q->pend_cap) {
    size_t cap = q->pend_cap ? 2 * q->pend_cap : 4096;
    while (cap < q->pend_len + len) cap *= 2;
    char *p = isv__realloc(q->mem, q->pend, cap);
    if (p == NULL) {
      uv_mutex_unlock(&q->mu);
      destroy((void *)(uintptr_t)data, del);
      return ISV_ENOMEM;
    }
    q->pend = p;
    q->pend_cap = cap;
  }
  memcpy(q->pend + q->pend_len, data, len);
  q->pend_len += len;
  int first = !q->kick;
  q->kick = 1;
  uv_mutex_unlock(&q->mu);
  destroy((void *)(uintptr_t)data, del);
  return first ? ring(q) : 0;
}

ISV_EXTERN int isv_http_on_writable(isv_http_request *q, isv_http_writable_cb cb, void *user) {
  if (q == NULL || cb == NULL) return ISV_EINVAL;
  if (!q->begun || q->done) return ISV_ESTATE;
  uv_mutex_lock(&q->mu);
  q->wcb = cb;
  q->wuser = user;
  int first = !q->kick && !q->blocked; /* else the loop looks at it anyway: a delivery to
                                        * come, or the exchange's on_writable */
  if (first) q->kick = 1;
  uv_mutex_unlock(&q->mu);
  return first ? ring(q) : 0;
}

ISV_EXTERN int isv_http_end(isv_http_request *q) {
  if (q == NULL) return ISV_EINVAL;
  if (!q->begun || q->done) return ISV_ESTATE;
  uv_mutex_lock(&q->mu);
  q->ended = 1;
  q->wcb = NULL;
  uv_mutex_unlock(&q->mu);
  q->done = 1;
  return isv_request_complete(q->r, 0, NULL);
}

/* The hidden model's backend: the host's handler. */
int isv__custom_infer(isv_request *r, void *user) {
  const isv__custom_route *cr = user;
  isv_http_request *q = r->fe_data;
  q->r = r;
  return cr->handler(q, cr->user);
}

/* ---- the loop's side ------------------------------------------------------------------------ */

static void release_request(void *p) { isv_request_free(p); }

static const isv_param *resp_param(const isv_request *r, const char *key) {
  for (size_t i = 0; i < r->n_resp_params; i++)
    if (strcmp(r->resp_params[i].key, key) == 0) return &r->resp_params[i].val;
  return NULL;
}

/* The handler's writable callback, when the stream can take more (or the client left). */
static void fire_writable(isv_http_request *q) {
  uv_mutex_lock(&q->mu);
  isv_http_writable_cb cb = NULL;
  void *user = q->wuser;
  if (q->wcb && !q->ended &&
      (q->gone || (!q->blocked && q->pend_len < q->limit / 2 + 1))) {
    cb = q->wcb;
    q->wcb = NULL;
  }
  uv_mutex_unlock(&q->mu);
  if (cb) cb(q, user);
}

/* The pieces written so far, taken from the handler: the loop will ring-free them. */
static char *take_pending(isv_http_request *q, size_t *len) {
  uv_mutex_lock(&q->mu);
  char *p = q->pend;
  *len = q->pend_len;
  q->pend = NULL;
  q->pend_len = q->pend_cap = 0;
  q->kick = 0;
  uv_mutex_unlock(&q->mu);
  if (p && *len == 0) {
    isv__free(p);
    p = NULL;
  }
  return p;
}

/* After a piece went to the exchange: a full queue blocks the handler's writes until the
 * exchange's on_writable; otherwise its callback may run now. */
static void after_piece(custom_state *cs) {
  isv_http_request *q = cs->q;
  if (!isv__exchange_writable(cs->ex)) {
    uv_mutex_lock(&q->mu);
    if (!q->gone) q->blocked = 1;
    uv_mutex_unlock(&q->mu);
    return;
  }
  fire_writable(q);
}

static void on_writable(isv__exchange *ex) {
  isv_http_request *q = ((isv_request *)ex->app)->fe_data;
  uv_mutex_lock(&q->mu);
  q->blocked = 0;
  uv_mutex_unlock(&q->mu);
  fire_writable(q);
}

/* The head a response carries (status, Content-Type, headers), with the pieces written so far
 * (`last`: its "body" output, the whole answer — nothing follows); or, once the head went out,
 * those pieces alone. Takes resp. */
static void deliver(custom_state *cs, isv_request *resp, int last) {
  uv_buf_t part = uv_buf_init(NULL, 0);
  void (*release)(void *) = release_request;
  void *release_ctx = resp;
  char *pend = NULL;
  if (last) {
    for (size_t i = 0; i < resp->n_outputs; i++)
      if (strcmp(resp->outputs[i].name, "body") == 0 && resp->outputs[i].count == 1) {
        const isv_bytes *b = resp->outputs[i].data;
        part = uv_buf_init((char *)(uintptr_t)b->ptr, (unsigned)b->len);
      }
  } else {
    size_t len;
    pend = take_pending(cs->q, &len);
    part = uv_buf_init(pend, (unsigned)len);
    release = isv__free;
    release_ctx = pend;
  }
  if (cs->begun) {
    isv_request_free(resp);
    if (pend) isv__exchange_write(cs->ex, &part, 1, isv__free, pend);
    after_piece(cs);
    return;
  }
  const isv_param *st = resp_param(resp, "status"), *ct = resp_param(resp, "content_type");
  char ctype[256] = "";
  if (ct && ct->type == ISV_PARAM_STRING)
    snprintf(ctype, sizeof ctype, "%.*s", (int)ct->v.s.len, ct->v.s.ptr);
  /* the head is copied out of resp: the carrier may release resp (a piece it drops, a HEAD
   * request's body) before it has copied the headers */
  isv__header hs[32];
  char text[4096];
  size_t nh = 0, used = 0;
  for (size_t i = 0; i < resp->n_resp_params && nh < 32; i++) {
    const isv__param_entry *e = &resp->resp_params[i];
    if (strncmp(e->key, "header:", 7) != 0 || e->val.type != ISV_PARAM_STRING) continue;
    size_t kl = strlen(e->key + 7), vl = e->val.v.s.len;
    if (used + kl + vl > sizeof text) break;
    memcpy(text + used, e->key + 7, kl);
    memcpy(text + used + kl, e->val.v.s.ptr, vl);
    hs[nh++] = (isv__header){text + used, kl, text + used + kl, vl};
    used += kl + vl;
  }
  isv__response out = {.status = st && st->type == ISV_PARAM_INT64 ? (int)st->v.i64 : 200,
                       .content_type = ct ? ctype : NULL,
                       .headers = hs,
                       .n_headers = nh,
                       .parts = &part,
                       .n_parts = part.len ? 1 : 0,
                       .release = part.len || last ? release : NULL,
                       .release_ctx = release_ctx,
                       .more = !last};
  cs->begun = 1;
  isv__exchange_respond(cs->ex, &out); /* copies the head */
  if (last) return;
  isv_request_free(resp);
  after_piece(cs);
}

static void on_response(isv_request *resp, int status, void *data) {
  if (status != 0) {
    isv_request_free(resp);
    return;
  }
  deliver(data, resp, 0);
}

static void q_destroy(isv_http_request *q) {
  if (!q->mu_ready) return;
  isv__free(q->pend);
  q->pend = NULL;
  uv_mutex_destroy(&q->mu);
  q->mu_ready = 0;
}

static void on_done(isv_request *r, int status, void *data) {
  custom_state *cs = data;
  isv__exchange *ex = cs->ex;
  isv_http_request *q = cs->q;
  if (!cs->begun) {
    q_destroy(q); /* nothing streamed: nothing else looks at it */
    if (status != 0) { /* nothing went out: an ordinary error answer */
      isv__reply_error(ex, status, "%s", r->errmsg && r->errmsg[0] ? r->errmsg
                                                                   : isv_strerror(status));
      isv_request_free(r);
    } else {
      deliver(cs, r, 1); /* the whole answer: r's outputs are isv_http_respond's */
    }
    return;
  }
  /* the end of a stream (cut short when status != 0: the client sees the chunked body end
   * early): what was written last goes first */
  size_t len;
  char *pend = take_pending(q, &len);
  if (pend) {
    uv_buf_t part = uv_buf_init(pend, (unsigned)len);
    isv__exchange_write(ex, &part, 1, isv__free, pend);
  }
  isv__exchange_end(ex); /* cs lives in r's arena: ex first, then r */
  q_destroy(q);
  isv_request_free(r);
}

static void client_gone(isv__exchange *ex) {
  isv_request *r = ex->app;
  isv_http_request *q = r->fe_data;
  isv__core_cancel(r);
  uv_mutex_lock(&q->mu);
  q->gone = 1;
  q->blocked = 0;
  uv_mutex_unlock(&q->mu);
  fire_writable(q); /* a handler waiting for room hears it */
}

/* The exchange's method, path, query and headers, copied: the handler may run on another
 * thread after the client left and the carrier let go of ex. */
static int copy_request(isv_request *r, const isv__exchange *ex, isv_http_request *q) {
  isv__arena *a = &r->arena;
  q->method = isv__arena_strndup(a, ex->method_name ? ex->method_name : "", ex->method_name
                                                                             ? strlen(ex->method_name)
                                                                             : 0);
  q->path = isv__arena_strndup(a, ex->path, ex->path_len);
  q->query = isv__arena_strndup(a, ex->query, ex->query_len);
  q->headers = isv__arena_alloc(a, (ex->n_headers ? ex->n_headers : 1) * sizeof *q->headers);
  if (!q->method || !q->path || !q->query || !q->headers) return ISV_ENOMEM;
  for (size_t i = 0; i < ex->n_headers; i++) {
    const isv__header *h = &ex->headers[i];
    char *n = isv__arena_strndup(a, h->name, h->name_len);
    char *v = isv__arena_strndup(a, h->value, h->value_len);
    if (!n || !v) return ISV_ENOMEM;
    q->headers[i] = (isv__header){n, h->name_len, v, h->value_len};
  }
  q->n_headers = ex->n_headers;
  q->body = ex->body;
  q->body_len = ex->body_len;
  return 0;
}

static void route(isv__http_req *qq) {
  const isv__custom_route *cr = qq->data;
  isv__exchange *ex = qq->ex;
  isv_request *r = isv__request_new(qq->core);
  if (r) isv__trace_from_headers(r, ex->headers, ex->n_headers);
  isv_http_request *q = r ? isv__arena_calloc(&r->arena, 1, sizeof *q) : NULL;
  custom_state *cs = q ? isv__arena_calloc(&r->arena, 1, sizeof *cs) : NULL;
  if (cs == NULL || copy_request(r, ex, q) != 0) {
    isv_request_free(r);
    isv__reply_error(ex, ISV_ENOMEM, "out of memory");
    return;
  }
  if (uv_mutex_init(&q->mu) != 0) {
    isv_request_free(r);
    isv__reply_error(ex, ISV_ENOMEM, "out of memory");
    return;
  }
  q->mu_ready = 1;
  q->mem = ex->mem;
  q->limit = qq->core->opts.max_queued_stream;
  cs->q = q;
  r->protocol = (uint8_t)qq->protocol;
  isv__model_ref(cr->model);
  r->model = cr->model;
  r->fe_data = q;
  isv__http_give_body(r, ex); /* q->body points into it */
  cs->ex = ex;
  if (isv__request_stream(r, on_response, cs) != 0 && r->status == 0)
    isv__request_fail(r, ISV_ENOMEM, "out of memory");
  ex->app = r;
  ex->on_cancel = client_gone;
  ex->on_writable = on_writable;
  isv__core_submit(qq->core, r, on_done, cs);
}

const isv__frontend isv__custom_frontend = {
    .name = "custom",
    .http_label = "custom",
};

int isv__custom_add_routes(isv__router *router, const isv__custom_route *cr) {
  int o = isv__router_overlaps(router, cr->methods, cr->path);
  if (o != 0) return o < 0 ? ISV_EINVAL : ISV_EEXIST;
  char rest[sizeof cr->path + 8];
  snprintf(rest, sizeof rest, "%s/{*rest}", cr->path);
  size_t n_routes = router->n_routes, n_prefixes = router->n_prefixes;
  isv__http_route exact = {cr->methods, cr->path, route, (void *)cr};
  isv__http_route under = {cr->methods, rest, route, (void *)cr};
  int rc = isv__router_add(router, &isv__custom_frontend, &exact);
  if (rc == 0) rc = isv__router_add(router, &isv__custom_frontend, &under);
  if (rc != 0) isv__router_truncate(router, n_routes, n_prefixes);
  return rc;
}
