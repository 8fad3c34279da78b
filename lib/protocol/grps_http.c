/* grps over HTTP (PROTOCOLS.md §5): /grps/v1/health/{online,offline,live,ready},
 * /grps/v1/metadata/{server,model}, /grps/v1/infer/predict (JSON, or the raw bytes of
 * bin_data as application/octet-stream; ?streaming=true answers each response as one chunk),
 * and the metrics at / and /grps/v1/monitor/metrics. Every answer is a GrpsMessage with its
 * status, and the HTTP status equals status.code (a DECISION: grps's Python server does so,
 * and probes read it). */
#include "protocol/edge.h"
#include "protocol/trace.h"
#include "protocol/grps.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "core/offload.h"
#include "protocol/grps_conv.h"
#include "protocol/grps_meta.h"
#include "protocol/http_reply.h"
#include "protocol/metrics_http.h"
#include "core/responses.h"
#include "core/scheduler.h"

/* ---- answers ------------------------------------------------------------------------------ */

static void reply_msg(isv__core *c, isv__exchange *ex, const isv__grps_msg *m,
                      const isv__header *extra, size_t n_extra);

static void reply_failure(isv__core *c, isv__exchange *ex, int err, const char *msg) {
  isv__grps_msg m;
  isv__grps_error_reply(err, msg, &m);
  reply_msg(c, ex, &m, NULL, 0);
}

/* Send b, m encoded as JSON by an encoder that returned rc (err its message), with m's code as
 * the HTTP status; takes b. Large bodies are freed off the loop (c NULL: at once). */
static void reply_encoded(isv__core *c, isv__exchange *ex, const isv__grps_msg *m, int rc,
                          isv__buf *b, const char *err, const isv__header *extra,
                          size_t n_extra) {
  if (rc != 0 && rc != ISV_ENOMEM) { /* an answer grps cannot carry: the backend's */
    isv__buf_free(b);
    reply_failure(c, ex, ISV_EBACKEND, err);
    return;
  }
  int status = m->has_status ? m->code : 200;
  if (status < 200 || status > 599) status = 500;
  if (c == NULL || n_extra) isv__reply_json_headers(ex, status, b, extra, n_extra);
  else isv__reply_json_large(c, ex, status, b);
}

/* m as JSON, its HTTP status its code. */
static void reply_msg(isv__core *c, isv__exchange *ex, const isv__grps_msg *m,
                      const isv__header *extra, size_t n_extra) {
  isv__buf b;
  char err[256];
  isv__buf_init(&b, ex->mem);
  int rc = isv__grps_json_encode(m, &b, err, sizeof err);
  reply_encoded(c, ex, m, rc, &b, err, extra, n_extra);
}

static void reply_ok(isv__core *c, isv__exchange *ex) {
  isv__grps_msg m = {.has_status = 1, .code = 200, .msg = "OK", .msg_len = 2,
                     .flag = ISV__GRPS_SUCCESS};
  reply_msg(c, ex, &m, NULL, 0);
}

/* An error found before a handler ran, or by the router, in grps's shape. */
static void http_error(isv__exchange *ex, int status, const char *msg, const isv__header *extra,
                       size_t n_extra) {
  isv__grps_msg m = {.has_status = 1, .code = status, .msg = msg, .msg_len = strlen(msg),
                     .flag = ISV__GRPS_FAILURE};
  reply_msg(NULL, ex, &m, extra, n_extra);
}

/* ---- health, metadata, metrics ------------------------------------------------------------- */

static void online(isv__http_req *q) {
  isv__core_set_online(q->core, 1);
  reply_ok(q->core, q->ex);
}

static void offline(isv__http_req *q) {
  isv__core_set_online(q->core, 0); /* readiness on every protocol: load balancers drain this replica */
  reply_ok(q->core, q->ex);
}

static void live(isv__http_req *q) { reply_ok(q->core, q->ex); }

static void ready(isv__http_req *q) {
  if (isv__core_ready(q->core)) reply_ok(q->core, q->ex);
  else reply_failure(q->core, q->ex, ISV_EUNAVAIL, isv__core_online(q->core) ? "the server is not ready"
                                                                   : "the server is offline");
}

/* YAML text in str_data. */
static void reply_yaml(isv__core *c, isv__exchange *ex, isv__buf *yaml) {
  if (yaml->failed) {
    isv__buf_free(yaml);
    reply_failure(c, ex, ISV_ENOMEM, "out of memory");
    return;
  }
  isv__grps_msg m = {.has_status = 1, .code = 200, .msg = "OK", .msg_len = 2,
                     .flag = ISV__GRPS_SUCCESS, .kind = ISV__GRPS_STR_DATA,
                     .data = yaml->data, .data_len = yaml->len};
  reply_msg(c, ex, &m, NULL, 0);
  isv__buf_free(yaml);
}

static void server_metadata(isv__http_req *q) {
  isv__buf y;
  isv__buf_init(&y, q->ex->mem);
  isv__grps_server_yaml(q->core, &y);
  reply_yaml(q->core, q->ex, &y);
}

static void grps_limits_of(const isv__core *c, isv__grps_limits *lim) {
  lim->max_tensors = c->opts.max_tensors;
  lim->max_depth = c->opts.max_json_depth;
}

/* The model named by str_data (or ?model=, or the default model). */
static void model_metadata(isv__http_req *q) {
  isv__exchange *ex = q->ex;
  isv_request *r = isv__request_new(q->core);
  if (r == NULL) {
    reply_failure(q->core, ex, ISV_ENOMEM, "out of memory");
    return;
  }
  isv__trace_from_headers(r, ex->headers, ex->n_headers);
  isv__grps_msg m;
  isv__grps_limits lim;
  char err[256], qm[256];
  size_t qn = 0;
  memset(&m, 0, sizeof m);
  grps_limits_of(q->core, &lim);
  const char *allowed_version;
  const char *allowed = isv__edge_http_allowed(q, &allowed_version);
  int rc = ex->body_len && !allowed ? isv__grps_json_decode(ex->body, ex->body_len, &lim,
                                                            &r->arena, &m, err, sizeof err)
                                    : 0;
  if (allowed) { /* again, after the host allowed it: the body was decoded the first time */
    r->model_name = allowed;
    r->version = allowed_version;
    isv__request_bind(r);
  } else if (rc != 0) {
    isv__request_fail(r, rc, "%s", err);
  } else if (m.kind != ISV__GRPS_NONE && m.kind != ISV__GRPS_STR_DATA) {
    isv__request_fail(r, ISV_EBADREQ, "metadata/model takes the model's name in str_data");
  } else if (m.kind == ISV__GRPS_STR_DATA) {
    isv__grps_select_model(r, m.data, m.data_len);
  } else if (isv__http_query(ex, "model", qm, sizeof qm, &qn) < 0) {
    isv__request_fail(r, ISV_EBADREQ, "query parameter 'model' is too long or badly escaped");
  } else {
    isv__grps_select_model(r, qm, qn);
  }
  if (r->status != 0) {
    reply_failure(q->core, ex, r->status, r->errmsg);
  } else if (isv__edge_http_model(q, r->model->cfg->name, r->model->version)) {
    isv__buf y;
    isv__buf_init(&y, ex->mem);
    isv__grps_model_yaml(q->core, r->model, &y);
    reply_yaml(q->core, ex, &y);
  }
  isv_request_free(r);
}

/* ---- predict ------------------------------------------------------------------------------- */

/* A predict being answered; in its request's arena. */
typedef struct predict_state {
  isv__offload off; /* a large JSON body is decoded on the worker pool */
  isv_request *r;
  isv__exchange *ex;
  isv__grps_msg m;
  isv__grps_limits lim;
  int rc; /* the decoder's */
  char err[256];
  char model_q[256]; /* ?model= */
  size_t model_q_len;
  int streaming;
  int begun; /* streaming: the head went out */
  isv__grps_msg reply; /* a large answer, encoded on the worker pool into json */
  isv__buf json;
  int enc_rc;
} predict_state;

static void client_gone(isv__exchange *ex) { isv__core_cancel(ex->app); }

static void release_request(void *p) { isv_request_free(p); }

static void encode_work(isv__offload *o) {
  predict_state *st = (predict_state *)o;
  isv__buf_init(&st->json, st->ex->mem);
  st->enc_rc = isv__grps_json_encode(&st->reply, &st->json, st->err, sizeof st->err);
}

static void encode_after(isv__offload *o) {
  predict_state *st = (predict_state *)o;
  isv_request *r = st->r;
  reply_encoded(r->core, st->ex, &st->reply, st->enc_rc, &st->json, st->err, NULL, 0);
  isv_request_free(r); /* st goes with it; the JSON holds copies */
}

/* Bytes of output tensors: what encoding the answer costs grows with. */
static size_t output_bytes(const isv_request *r) {
  size_t n = 0;
  for (size_t i = 0; i < r->n_outputs; i++) n += r->outputs[i].byte_size;
  return n;
}

/* The reply of a finished request: bin_data as the raw body, the rest as JSON — encoded on
 * the worker pool when it is large (the loop is the host's). */
static void predict_done(isv_request *r, int status, void *data) {
  predict_state *st = data;
  isv__exchange *ex = st->ex;
  isv__core *c = r->core;
  isv__grps_msg m;
  if (status == 0) status = isv__grps_reply_of(r, r->proto_flags, &m);
  if (status != 0) {
    isv__grps_error_reply(status, r->errmsg, &m);
    isv__header h;
    char v[16];
    reply_msg(c, ex, &m, &h, isv__retry_after(r, &h, v, sizeof v));
    isv_request_free(r);
    return;
  }
  if (m.kind == ISV__GRPS_BIN_DATA) { /* by reference: the request lives until it is written */
    uv_buf_t part = uv_buf_init((char *)(uintptr_t)m.data, (unsigned)m.data_len);
    isv__response resp = {.status = 200, .content_type = "application/octet-stream",
                          .parts = &part, .n_parts = 1, .release = release_request,
                          .release_ctx = r};
    isv__exchange_respond(ex, &resp);
    return;
  }
  if (output_bytes(r) >= ISV__OFFLOAD_MIN_BYTES) {
    st->reply = m; /* st->off is free again: the decode's offload finished before the submit */
    if (isv__offload_run(c, &st->off, encode_work, encode_after) == 0) return;
  }
  reply_msg(c, ex, &m, NULL, 0); /* JSON copies what it needs */
  isv_request_free(r);
}

/* One chunk of a streamed answer (b taken; NULL: the head alone). */
static void send_chunk(predict_state *st, char *text, size_t len, void (*release)(void *),
                       void *ctx) {
  uv_buf_t part = uv_buf_init(text, (unsigned)len);
  if (st->begun) {
    if (text) isv__exchange_write(st->ex, &part, 1, release, ctx);
    else if (release) release(ctx);
    return;
  }
  isv__response resp = {.status = 200, .content_type = "application/octet-stream",
                        .parts = &part, .n_parts = text ? 1 : 0, .release = release,
                        .release_ctx = ctx, .more = 1};
  isv__exchange_respond(st->ex, &resp);
  st->begun = 1;
}

/* m as one JSON chunk. */
static void send_json_chunk(predict_state *st, const isv__grps_msg *m) {
  isv__buf b;
  char err[256];
  isv__buf_init(&b, st->ex->mem);
  if (isv__grps_json_encode(m, &b, err, sizeof err) != 0 && !b.failed) {
    isv__grps_msg e;
    isv__buf_free(&b);
    isv__buf_init(&b, st->ex->mem);
    isv__grps_error_reply(ISV_EBACKEND, err, &e);
    isv__grps_json_encode(&e, &b, err, sizeof err);
  }
  if (b.failed) {
    isv__buf_free(&b);
    return; /* nothing to say that fits: the stream ends without this message */
  }
  size_t len;
  char *text = isv__buf_release(&b, &len);
  send_chunk(st, text, len, isv__free, text);
}

/* One message of the stream: a response (status 0) or the error that ends it. Takes resp
 * when it is not the request itself. */
static void stream_message(predict_state *st, isv_request *resp, int status, int own) {
  isv__grps_msg m;
  isv_request *req = resp->parent ? resp->parent : resp;
  if (status == 0) status = isv__grps_reply_of(resp, req->proto_flags, &m);
  if (status != 0) {
    isv__grps_error_reply(status, resp->errmsg, &m);
  } else if (m.kind == ISV__GRPS_BIN_DATA && own) { /* raw, by reference */
    send_chunk(st, (char *)(uintptr_t)m.data, m.data_len, release_request, resp);
    return;
  } else if (m.kind == ISV__GRPS_BIN_DATA) { /* raw, copied: the request ends the stream */
    char *copy = isv__malloc(st->ex->mem, m.data_len ? m.data_len : 1);
    if (copy) {
      if (m.data_len) memcpy(copy, m.data, m.data_len);
      send_chunk(st, copy, m.data_len, isv__free, copy);
    }
    return;
  }
  send_json_chunk(st, &m);
  if (own) isv_request_free(resp);
}

static void stream_response(isv_request *resp, int status, void *data) {
  predict_state *st = data;
  stream_message(st, resp, status, 1);
  /* backpressure: a full queue holds the backend's responses back until it drained */
  if (!isv__exchange_writable(st->ex)) isv__request_flow_block(st->r);
}

static void stream_writable(isv__exchange *ex) { isv__request_flow_resume(ex->app); }

static void stream_done(isv_request *r, int status, void *data) {
  predict_state *st = data;
  if (!st->begun && status != 0) { /* nothing sent yet: an ordinary error answer */
    predict_done(r, status, st);
    return;
  }
  isv__exchange *ex = st->ex;
  if (status != 0 || r->n_outputs > 0) stream_message(st, r, status, 0);
  if (!st->begun) send_chunk(st, NULL, 0, NULL, NULL);
  isv_request_free(r); /* st goes with it */
  isv__exchange_end(ex);
}

/* The body is decoded (or failed): select the model, fill the request, submit it. */
static void decoded(predict_state *st) {
  isv_request *r = st->r;
  if (st->rc != 0) {
    isv__request_fail(r, st->rc, "%s", st->err);
    isv__grps_select_model(r, st->model_q, st->model_q_len); /* an unknown model first */
  } else if (isv__grps_select_model(r, st->m.model_len ? st->m.model : st->model_q,
                                    st->m.model_len ? st->m.model_len : st->model_q_len) == 0) {
    isv__grps_to_request(r, &st->m, NULL, 0);
  }
  isv__http_queue_headers(r, st->ex); /* Inference-Priority, Inference-Timeout-Us */
  isv__http_give_body(r, st->ex); /* the message points into it */
  if (st->streaming) {
    if (isv__request_stream(r, stream_response, st) != 0 && r->status == 0)
      isv__request_fail(r, ISV_ENOMEM, "out of memory");
    st->ex->on_writable = stream_writable;
  }
  isv__core_submit(r->core, r, st->streaming ? stream_done : predict_done, st);
}

static void decode_work(isv__offload *o) {
  predict_state *st = (predict_state *)o;
  st->rc = isv__grps_json_decode(st->ex->body, st->ex->body_len, &st->lim, &st->r->arena, &st->m,
                                 st->err, sizeof st->err);
}

static void decode_after(isv__offload *o) { decoded((predict_state *)o); }

static void predict(isv__http_req *q) {
  isv__exchange *ex = q->ex;
  isv_request *r = isv__request_new(q->core);
  if (r) isv__trace_from_headers(r, ex->headers, ex->n_headers);
  predict_state *st = r ? isv__arena_calloc(&r->arena, 1, sizeof *st) : NULL;
  if (st == NULL) {
    isv_request_free(r);
    reply_failure(q->core, ex, ISV_ENOMEM, "out of memory");
    return;
  }
  r->protocol = (uint8_t)q->protocol;
  r->caller = isv__edge_caller(q->ex); /* the model stage judges the model it resolves to */
  st->r = r;
  st->ex = ex;
  ex->app = r;
  ex->on_cancel = client_gone;
  grps_limits_of(q->core, &st->lim);
  st->streaming = isv__http_query_flag(ex, "streaming");
  if (isv__http_query_flag(ex, "return-ndarray")) r->proto_flags |= ISV__GRPS_F_NDARRAY;
  int qrc = isv__http_query(ex, "model", st->model_q, sizeof st->model_q, &st->model_q_len);
  const isv__header *ct = isv__exchange_header(ex, "content-type");
  if (qrc < 0) {
    st->model_q_len = 0;
    st->rc = ISV_EBADREQ;
    snprintf(st->err, sizeof st->err, "query parameter 'model' is too long or badly escaped");
  } else if (ct && isv__media_is(ct, "application/octet-stream")) {
    st->m.kind = ISV__GRPS_BIN_DATA; /* the body is bin_data, used in place */
    st->m.data = ex->body;
    st->m.data_len = ex->body_len;
  } else if (ct && !isv__media_is(ct, "application/json")) {
    st->rc = ISV_EBADREQ;
    snprintf(st->err, sizeof st->err, "Content type is not supported: '%.*s' (send "
             "application/json, or application/octet-stream for bin_data)",
             (int)(ct->value_len > 64 ? 64 : ct->value_len), ct->value);
  } else if (ex->body_len >= ISV__OFFLOAD_MIN_BYTES &&
             isv__offload_run(q->core, &st->off, decode_work, decode_after) == 0) {
    return; /* a large body is decoded on a worker thread: the loop is the host's */
  } else {
    decode_work(&st->off);
  }
  decoded(st);
}

/* ---- the front end ------------------------------------------------------------------------- */

#define P "/grps/v1"
const isv__http_route isv__grps_routes[] = {
    {ISV__ROUTE_GET, P "/health/online", online, NULL},
    {ISV__ROUTE_GET, P "/health/offline", offline, NULL},
    {ISV__ROUTE_GET, P "/health/live", live, NULL},
    {ISV__ROUTE_GET, P "/health/ready", ready, NULL},
    {ISV__ROUTE_GET, P "/metadata/server", server_metadata, NULL},
    {ISV__ROUTE_POST | ISV__ROUTE_GET, P "/metadata/model", model_metadata, NULL},
    {ISV__ROUTE_POST, P "/infer/predict", predict, NULL},
    {ISV__ROUTE_GET, P "/monitor/metrics", isv__metrics_handler, NULL},
    {ISV__ROUTE_GET, "/", isv__metrics_handler, NULL},
    {0},
};
#undef P

const isv__frontend isv__grps_frontend = {
    .name = "grps",
    .enabled_by_default = 1,
    .path_prefix = "/grps",
    .routes = isv__grps_routes,
    .methods = isv__grps_methods,
    .http_error = http_error,
    .http_label = "grps_http",
    .grpc_label = "grps_grpc",
};
