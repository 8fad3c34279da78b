/* OpenAI's REST API under /openai/v1 (openai.h for the bodies, inferserve.h for the mapping
 * onto a host's models): models, chat/completions, completions and embeddings, streamed as
 * Server-Sent Events the way OpenAI's clients parse them. Text requests always carry a response
 * stream (isv__request_stream), so a decoupled model serves both the streaming and the whole
 * answer — the latter is its pieces joined. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/offload.h"
#include "core/queries.h"
#include "core/registry.h"
#include "core/request.h"
#include "core/resolve.h"
#include "core/responses.h"
#include "core/scheduler.h"
#include "protocol/builtin.h"
#include "protocol/edge.h"
#include "protocol/http_reply.h"
#include "protocol/openai.h"
#include "protocol/trace.h"

/* ---- errors ------------------------------------------------------------------------------------ */

static void reply_error(isv__exchange *ex, int http_status, const char *msg, const char *param,
                        const char *code, const isv__header *extra, size_t n_extra) {
  isv__buf b;
  isv__buf_init(&b, ex->mem);
  isv__oai_write_error(&b, http_status, msg, param, code);
  isv__reply_json_headers(ex, http_status, &b, extra, n_extra);
}

/* An error found before a handler ran (authentication, limits, an unknown path): OpenAI's shape. */
static void http_error(isv__exchange *ex, int status, const char *msg, const isv__header *extra,
                       size_t n_extra) {
  reply_error(ex, status, msg, NULL, NULL, extra, n_extra);
}

/* A failed request's answer: its status and message (with the core's Retry-After estimate,
 * when it has one); an unknown model is model_not_found. */
static void reply_failed(isv__exchange *ex, const isv_request *r, int status, const char *param) {
  const char *msg = r->errmsg && r->errmsg[0] ? r->errmsg : isv_strerror(status);
  isv__header h;
  char v[16];
  size_t nh = isv__retry_after(r, &h, v, sizeof v);
  reply_error(ex, isv_err_http_status(status), msg, param,
              status == ISV_ENOTFOUND ? "model_not_found" : NULL, nh ? &h : NULL, nh);
}

/* ---- models ------------------------------------------------------------------------------------ */

typedef struct listed {
  const char *name;
  uint64_t created; /* its default version's registration */
} listed;

typedef struct names {
  listed *v;
  size_t n, cap;
  int failed;
} names;

static void collect(isv__model_entry *e, void *data) {
  names *ns = data;
  if (ns->n == ns->cap) {
    size_t cap = ns->cap ? 2 * ns->cap : 16;
    listed *v = realloc(ns->v, cap * sizeof *v);
    if (v == NULL) {
      ns->failed = 1;
      return;
    }
    ns->v = v;
    ns->cap = cap;
  }
  const isv_model *m = isv__entry_default(e);
  ns->v[ns->n].name = e->name;
  ns->v[ns->n++].created = m ? m->registered_s : 0;
}

static int by_name(const void *a, const void *b) {
  return strcmp(((const listed *)a)->name, ((const listed *)b)->name);
}

/* GET .../models: every registered model, by name (a listing, as the V2 repository index:
 * the model stage judges what a client then asks of one). */
static void list_models(isv__http_req *q) {
  names ns = {0};
  isv__registry_foreach(isv__core_models(q->core), collect, &ns);
  if (ns.failed) {
    free(ns.v);
    http_error(q->ex, 500, "out of memory", NULL, 0);
    return;
  }
  if (ns.n) qsort(ns.v, ns.n, sizeof *ns.v, by_name);
  isv__buf b;
  isv__buf_init(&b, q->ex->mem);
  isv__buf_puts(&b, "{\"object\":\"list\",\"data\":[");
  for (size_t i = 0; i < ns.n; i++) {
    if (i) isv__buf_putc(&b, ',');
    isv__oai_write_model(&b, ns.v[i].name, ns.v[i].created, q->core->opts.server_name);
  }
  isv__buf_puts(&b, "]}");
  free(ns.v);
  isv__reply_json(q->ex, 200, &b);
}

/* GET .../models/{model} */
static void get_model(isv__http_req *q) {
  isv__model_spec spec = {0};
  spec.name = isv__http_capture(q, "model", &spec.name_len);
  isv_model *m;
  isv__why why = isv__core_resolve(q->core, &spec, &m);
  if (why != ISV__FOUND) {
    char msg[512];
    int code = isv__why_say(why, ISV__WORDS_KSERVE, &spec, msg, sizeof msg);
    reply_error(q->ex, isv_err_http_status(code), msg, "model",
                code == ISV_ENOTFOUND ? "model_not_found" : NULL, NULL, 0);
    return;
  }
  if (!isv__edge_http_model(q, m->cfg->name, m->version)) return;
  isv__buf b;
  isv__buf_init(&b, q->ex->mem);
  isv__oai_write_model(&b, m->cfg->name, m->registered_s, q->core->opts.server_name);
  isv__reply_json(q->ex, 200, &b);
}

/* ---- completions and embeddings --------------------------------------------------------------- */

/* A request being answered; in its request's arena. */
typedef struct call {
  isv__offload off; /* a large body is parsed, a large embeddings answer written, on a worker */
  isv__oai_kind kind;
  int rc;           /* the parser's */
  char err[512];    /* ... and why */
  isv__buf out;     /* an embeddings answer written off the loop */
  isv__exchange *ex;
  isv_request *r;
  isv__oai_req q;
  isv__oai_meta meta;
  char id[48];
  int begun;        /* the stream's head went out */
  size_t pieces;    /* responses that carried text */
  isv__oai_piece piece;
  isv__buf text;    /* the whole answer's text (not streaming) */
  const char *param; /* the field a refusal names (isv__oai_to_request's), or NULL */
} call;

/* Backpressure as generate_stream's: a full queue holds the backend's responses back. */
static void check_flow(call *c) {
  if (!isv__exchange_writable(c->ex)) isv__request_flow_block(c->r);
}

static void on_writable(isv__exchange *ex) { isv__request_flow_resume(ex->app); }

static void client_gone(isv__exchange *ex) { isv__core_cancel(ex->app); }

/* Send an event's text (b taken): the 200 and its head go out with the first. */
static void send_event(call *c, isv__buf *b) { isv__sse_send(c->ex, &c->begun, b); }

/* The chunk with the role (chat) that opens a stream, before its first content. */
static void begin(call *c, isv__buf *b) {
  if (!c->begun && c->meta.kind == ISV__OAI_CHAT)
    isv__oai_write_chunk(b, &c->meta, "assistant", "", 0, NULL, NULL, c->q.include_usage);
}

/* A response's text, to the stream or the whole answer. */
static void take(call *c, const isv_request *resp) {
  isv__buf piece;
  isv__buf_init(&piece, c->ex->mem);
  isv__oai_take(resp, c->q.stream ? &piece : &c->text, &c->piece);
  if (!c->q.stream) return;
  if (piece.len) {
    isv__buf b;
    isv__buf_init(&b, c->ex->mem);
    begin(c, &b);
    isv__oai_write_chunk(&b, &c->meta, NULL, piece.data, piece.len, NULL, NULL,
                         c->q.include_usage);
    send_event(c, &b);
    c->pieces++;
  }
  isv__buf_free(&piece);
}

static void on_response(isv_request *resp, int status, void *data) {
  call *c = data;
  size_t before = c->text.len;
  if (status == 0) take(c, resp);
  if (!c->q.stream && c->text.len > before) c->pieces++;
  isv_request_free(resp);
  if (c->q.stream) check_flow(c);
}

static isv__oai_usage usage_of(const call *c) {
  isv__oai_usage u = {
      .prompt_tokens = c->piece.has_prompt_tokens ? c->piece.prompt_tokens : 0,
      .completion_tokens = c->piece.has_completion_tokens ? c->piece.completion_tokens
                                                          : (int64_t)c->pieces};
  return u;
}

static void text_done(isv_request *r, int status, void *data) {
  call *c = data;
  isv__exchange *ex = c->ex;
  if (status == 0 && r->n_outputs > 0) { /* its last outputs */
    size_t before = c->text.len;
    take(c, r);
    if (!c->q.stream && c->text.len > before) c->pieces++;
  }
  const char *finish = c->piece.finish_reason[0] ? c->piece.finish_reason : "stop";
  isv__buf b;
  isv__buf_init(&b, ex->mem);
  if (status != 0 && !(c->q.stream && c->begun)) { /* nothing sent yet: an ordinary answer */
    isv__buf_free(&c->text);
    reply_failed(ex, r, status, c->param);
    isv_request_free(r);
    return;
  }
  if (!c->q.stream) {
    isv__oai_usage u = usage_of(c);
    isv__oai_write_completion(&b, &c->meta, c->text.data, c->text.len, finish, &u);
    isv__buf_free(&c->text);
    isv_request_free(r); /* c goes with it */
    isv__reply_json(ex, 200, &b);
    return;
  }
  if (status != 0) { /* after some chunks: the error ends the stream (OpenAI's clients raise it) */
    const char *msg = r->errmsg && r->errmsg[0] ? r->errmsg : isv_strerror(status);
    isv__buf_puts(&b, "data: ");
    isv__oai_write_error(&b, isv_err_http_status(status), msg, NULL, NULL);
    isv__buf_puts(&b, "\n\n");
  } else {
    isv__oai_usage u = usage_of(c);
    begin(c, &b);
    isv__oai_write_chunk(&b, &c->meta, NULL, NULL, 0, finish, NULL, c->q.include_usage);
    if (c->q.include_usage) isv__oai_write_chunk(&b, &c->meta, NULL, NULL, 0, NULL, &u, 1);
    isv__buf_puts(&b, "data: [DONE]\n\n");
  }
  send_event(c, &b);
  isv__buf_free(&c->text);
  isv_request_free(r);
  isv__exchange_end(ex);
}

/* The request's first output named "prompt_tokens", for the embeddings' usage. */
static int64_t prompt_tokens(const isv_request *r) {
  isv__oai_piece p;
  isv__buf none;
  memset(&p, 0, sizeof p);
  isv__buf_init(&none, NULL);
  isv__oai_take(r, &none, &p);
  isv__buf_free(&none);
  return p.has_prompt_tokens ? p.prompt_tokens : 0;
}

/* The embeddings answer, into c->out (a worker thread's work when it is large). */
static void write_embeddings(call *c, const float *v, size_t dim) {
  isv__buf_init(&c->out, c->ex->mem);
  isv__oai_write_embeddings(&c->out, c->meta.model, v, c->q.n_inputs, dim, c->q.base64,
                            prompt_tokens(c->r));
}

static void embed_work(isv__offload *o) {
  call *c = (call *)o;
  size_t dim = 0;
  char why[8];
  const float *v = isv__oai_embeddings(c->r, c->q.n_inputs, &dim, why, sizeof why);
  write_embeddings(c, v, dim); /* embed_done found them there */
}

static void embed_reply(isv__offload *o) {
  call *c = (call *)o;
  isv_request *r = c->r;
  isv__exchange *ex = c->ex;
  isv__buf b = c->out; /* c goes with r */
  isv__core *core = r->core;
  isv_request_free(r); /* the JSON holds copies */
  isv__reply_json_large(core, ex, 200, &b);
}

static void embed_done(isv_request *r, int status, void *data) {
  call *c = data;
  isv__exchange *ex = c->ex;
  char why[256];
  size_t dim = 0;
  const float *v = status == 0 ? isv__oai_embeddings(r, c->q.n_inputs, &dim, why, sizeof why)
                               : NULL;
  if (status != 0 || v == NULL) {
    if (status == 0) reply_error(ex, 500, why, NULL, NULL, NULL, 0);
    else reply_failed(ex, r, status, NULL);
    isv_request_free(r);
    return;
  }
  /* a large answer is written on a worker thread: the loop is the host's */
  if (c->q.n_inputs * dim * 4 >= ISV__OFFLOAD_MIN_BYTES &&
      isv__offload_run(r->core, &c->off, embed_work, embed_reply) == 0)
    return;
  write_embeddings(c, v, dim);
  embed_reply(&c->off);
}

static void parse_work(isv__offload *o) {
  call *c = (call *)o;
  c->rc = isv__oai_parse(&c->q, c->kind, c->ex->body, c->ex->body_len,
                         c->r->core->opts.max_json_depth, &c->r->arena, c->err, sizeof c->err);
}

/* The body's "model" as r's model: a registered name as it is, else "<name>/<version>" split at
 * its last '/' when the part before it is a model's name (inferserve.h: a Hugging Face style
 * "org/model" is matched whole first). */
static void name_model(isv_request *r, const char *model) {
  r->model_name = model;
  const char *slash = strrchr(model, '/');
  if (slash == NULL || slash == model || slash[1] == '\0') return;
  isv__model_spec whole = {.name = model, .name_len = strlen(model)},
                  name_only = {.name = model, .name_len = (size_t)(slash - model)};
  isv_model *m;
  if (isv__core_resolve(r->core, &whole, &m) != ISV__NO_MODEL ||
      isv__core_resolve(r->core, &name_only, &m) == ISV__NO_MODEL)
    return; /* a name, or no name at all: the 404 names what the client sent */
  const char *name = isv__arena_strndup(&r->arena, model, (size_t)(slash - model));
  if (name == NULL) return; /* the whole string then: 404 naming it */
  r->model_name = name;
  r->version = slash + 1;
}

/* The body parsed: the request goes to its model. */
static void parsed(isv__offload *o) {
  call *c = (call *)o;
  isv_request *r = c->r;
  isv__exchange *ex = c->ex;
  if (c->rc != 0) {
    ex->on_cancel = NULL;
    ex->app = NULL;
    reply_error(ex, isv_err_http_status(c->rc), c->err, c->q.err_param, NULL, NULL, 0);
    isv_request_free(r);
    return;
  }
  /* an id unique enough for a client to tell its answers apart: time and the request's address */
  uint64_t x = uv_hrtime() ^ ((uint64_t)(uintptr_t)r * 0x9E3779B97F4A7C15ull);
  snprintf(c->id, sizeof c->id, "%s%016llx", c->kind == ISV__OAI_CHAT ? "chatcmpl-" : "cmpl-",
           (unsigned long long)x);
  c->meta = (isv__oai_meta){.kind = c->kind, .id = c->id, .created = (uint64_t)time(NULL),
                            .model = c->q.model};
  name_model(r, c->q.model);
  isv__request_bind(r); /* an unknown model: the core answers it (404) */
  if (r->model) isv__oai_to_request(r, &c->q, &c->param);
  isv__http_queue_headers(r, ex); /* Inference-Priority, Inference-Timeout-Us */
  isv__http_give_body(r, ex);
  if (c->kind == ISV__OAI_EMBEDDING) {
    isv__core_submit(r->core, r, embed_done, c);
    return;
  }
  if (c->q.stream) ex->on_writable = on_writable;
  if (isv__request_stream(r, on_response, c) != 0 && r->status == 0)
    isv__request_fail(r, ISV_ENOMEM, "out of memory");
  isv__core_submit(r->core, r, text_done, c);
}

/* POST .../chat/completions, .../completions, .../embeddings (q->data: the kind). */
static void create(isv__http_req *q) {
  isv__exchange *ex = q->ex;
  isv_request *r = isv__request_new(q->core);
  call *c = r ? isv__arena_calloc(&r->arena, 1, sizeof *c) : NULL;
  if (c == NULL) {
    isv_request_free(r);
    http_error(ex, 500, "out of memory", NULL, 0);
    return;
  }
  isv__trace_from_headers(r, ex->headers, ex->n_headers);
  r->protocol = (uint8_t)q->protocol;
  r->caller = isv__edge_caller(ex); /* the model stage judges the model the body names */
  c->kind = (isv__oai_kind)(uintptr_t)q->data;
  c->ex = ex;
  c->r = r;
  isv__buf_init(&c->text, ex->mem);
  ex->app = r; /* the client may go while the body is parsed */
  ex->on_cancel = client_gone;
  /* a large body is parsed on a worker thread: the loop is the host's */
  if (ex->body_len >= ISV__OFFLOAD_MIN_BYTES &&
      isv__offload_run(q->core, &c->off, parse_work, parsed) == 0)
    return;
  parse_work(&c->off);
  parsed(&c->off);
}

/* ---- the front end ------------------------------------------------------------------------------ */

#define P_OPENAI "/openai/v1"
static const isv__http_route routes[] = {
    {ISV__ROUTE_GET, P_OPENAI "/models", list_models, NULL},
    {ISV__ROUTE_GET, P_OPENAI "/models/{model}", get_model, NULL},
    {ISV__ROUTE_POST, P_OPENAI "/chat/completions", create, (void *)(uintptr_t)ISV__OAI_CHAT},
    {ISV__ROUTE_POST, P_OPENAI "/completions", create, (void *)(uintptr_t)ISV__OAI_COMPLETION},
    {ISV__ROUTE_POST, P_OPENAI "/embeddings", create, (void *)(uintptr_t)ISV__OAI_EMBEDDING},
    {0},
};

/* The configure hook (isv_server_set_openai_prefix): the same routes again under args[0]
 * ("/v1": what OpenAI's clients append their paths to when a base URL has no path of its
 * own). Refused, changing nothing, when a route already served could take one of those paths —
 * TF Serving's /v1/models/{model} under "/v1": a host that wants OpenAI's API there turns
 * "tfserving" off. Once per server. */
static int prefix_configure(isv__router *r, const char *const *args, size_t n, char *why,
                            size_t cap) {
  const isv__frontend *fe = &isv__openai_frontend;
  const char *prefix = n > 0 ? args[0] : NULL;
  size_t plen = prefix ? strlen(prefix) : 0;
  int plain = plen >= 2 && plen <= 64 && prefix[0] == '/' && prefix[plen - 1] != '/';
  for (size_t i = 0; plain && i < plen; i++)
    plain = prefix[i] != '{' && prefix[i] != '}' && prefix[i] != ':' && prefix[i] != '?' &&
            prefix[i] != '%' && !(prefix[i] == '/' && prefix[i + 1] == '/');
  if (!plain) {
    snprintf(why, cap, "openai prefix: '%.80s' is not a plain path like \"/v1\" (at most 64 "
             "bytes, no trailing '/')", prefix ? prefix : "(null)");
    return ISV_EINVAL;
  }
  if (isv__router_value(r, fe)) {
    snprintf(why, cap, "openai prefix: already set ('%s')", isv__router_value(r, fe));
    return ISV_ESTATE;
  }
  if (isv__router_overlaps(r, ISV__ROUTE_ANY, P_OPENAI "/models") != 1) {
    snprintf(why, cap, "openai prefix: the \"openai\" protocol is off (isv_options_set_protocol)");
    return ISV_ESTATE;
  }
  static const char *const paths[] = {"/models", "/chat/completions", "/completions",
                                      "/embeddings"};
  char path[128];
  for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++) {
    snprintf(path, sizeof path, "%s%s", prefix, paths[i]);
    if (isv__router_overlaps(r, ISV__ROUTE_ANY, path) != 0) {
      snprintf(why, cap, "openai prefix: %s is already served by another route%s", path,
               strcmp(prefix, "/v1") == 0 && i == 0
                   ? " (TF Serving's /v1/models/{model}: turn the \"tfserving\" protocol off "
                     "with isv_options_set_protocol to serve OpenAI's API under /v1)"
                   : "");
      return ISV_EEXIST;
    }
  }
  size_t n_routes = r->n_routes, n_prefixes = r->n_prefixes;
  int rc = isv__router_set_value(r, fe, prefix);
  for (const isv__http_route *rt = routes; rc == 0 && rt->pattern; rt++) {
    isv__http_route copy = *rt;
    snprintf(path, sizeof path, "%s%s", prefix, rt->pattern + strlen(P_OPENAI));
    copy.pattern = path;
    rc = isv__router_add(r, fe, &copy);
  }
  if (rc != 0) {
    isv__router_truncate(r, n_routes, n_prefixes);
    isv__router_set_value(r, fe, NULL);
    snprintf(why, cap, "openai prefix: %s", isv_strerror(rc));
  }
  return rc;
}

const isv__frontend isv__openai_frontend = {
    .name = "openai",
    .enabled_by_default = 1,
    .path_prefix = "/openai",
    .routes = routes,
    .http_error = http_error,
    .http_label = "openai",
    .configure = prefix_configure,
};
