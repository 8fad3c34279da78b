/* TensorFlow Serving's REST API (PROTOCOLS.md §3, seed 000): model status, model metadata and
 * :predict under /v1/models/{m}[/versions/{v}|/labels/{l}], with TF Serving's JSON and error
 * texts; :classify and :regress on "examples" (+ "context"). The same front end serves TF
 * Serving's gRPC services (tfs_grpc.c).
 *
 * And AI Platform / Vertex AI online prediction (§4, seed 003), a second front end on the same
 * predict pipeline — its body is TF Serving's row format plus parameters:
 * /v1/projects/{p}/models/{m}[/versions/{v}]:predict and
 * /v1/projects/{p}/locations/{l}/endpoints/{e}:predict (the endpoint id names the model). */
#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/datatype.h"
#include "codec/json_writer.h"
#include "core/core.h"
#include "core/offload.h"
#include "core/registry.h"
#include "core/request.h"
#include "core/resolve.h"
#include "protocol/edge.h"
#include "protocol/trace.h"
#include "protocol/builtin.h"
#include "protocol/frontend.h"
#include "protocol/http_reply.h"
#include "protocol/tfs_json.h"
#include "protocol/tfs_pb.h"
#include "core/scheduler.h"

/* ---- which servable the path names ------------------------------------------------------- */

typedef struct servable {
  isv__model_spec spec;
  const char *name, *version, *label; /* captures, NUL-terminated (version: decimal) */
} servable;

/* The path's model, version and label; 0, or -1 answered (a version that is not a number). */
static int servable_of(isv__http_req *q, servable *s) {
  memset(s, 0, sizeof *s);
  s->name = isv__http_capture(q, "model", &s->spec.name_len);
  s->version = isv__http_capture(q, "version", &s->spec.version_len);
  s->label = isv__http_capture(q, "label", &s->spec.label_len);
  s->spec.name = s->name;
  s->spec.version = s->version;
  s->spec.label = s->label;
  if (s->version) {
    int digits = s->spec.version_len > 0 && s->spec.version_len <= 19;
    for (size_t i = 0; digits && i < s->spec.version_len; i++)
      digits = s->version[i] >= '0' && s->version[i] <= '9';
    if (!digits) {
      char msg[300];
      snprintf(msg, sizeof msg, "Malformed request: %.10s %.200s", q->ex->method_name, q->ex->path);
      isv__reply_error_msg(q->ex, 400, msg, NULL, 0);
      return -1;
    }
  }
  return 0;
}

/* The model version the path names, or NULL answered with TF Serving's words for why not
 * (core/resolve.h: an unknown model or version is 404 "Servable not found for request:
 * Latest(m)" / "Specific(m, v)"; an unknown label is 400). */
static isv_model *resolve(isv__http_req *q, const servable *s) {
  isv_model *m;
  isv__why why = isv__core_resolve(q->core, &s->spec, &m);
  if (why == ISV__FOUND) return m;
  char msg[512];
  isv__reply_error(q->ex, isv__why_say(why, ISV__WORDS_TFS, &s->spec, msg, sizeof msg), "%s", msg);
  return NULL;
}

/* ---- status and metadata ----------------------------------------------------------------- */

/* resolve(), then the edge's model stage (edge.h) on the version it resolved to — or on the
 * model with no version when the answer covers every version (`every`). NULL when answered or
 * waiting for the host (this handler then runs again). */
static isv_model *judged(isv__http_req *q, const servable *s, int every) {
  isv_model *m = resolve(q, s);
  if (m == NULL) return NULL;
  return isv__edge_http_model(q, m->cfg->name, every ? NULL : m->version) ? m : NULL;
}

static void put_key(isv__buf *b, const char *k) {
  isv__json_write_string(b, k, strlen(k));
  isv__buf_putc(b, ':');
}

static void version_status(isv__buf *b, const isv_model *m) {
  isv__buf_puts(b, "{\"version\":");
  isv__json_write_string(b, m->version, strlen(m->version));
  isv__buf_puts(b, ",\"state\":\"");
  isv__buf_puts(b, isv__tfs_state_name(m->state));
  isv__buf_puts(b, "\",\"status\":{\"error_code\":\"OK\",\"error_message\":\"\"}}");
}

/* GET /v1/models/{m}[/versions/{v}|/labels/{l}]: every version, or the one named. */
static void status(isv__http_req *q) {
  servable s;
  if (servable_of(q, &s)) return;
  isv_model *m = judged(q, &s, !(s.version || s.label));
  if (m == NULL) return;
  isv__buf b;
  isv__buf_init(&b, q->ex->mem);
  isv__buf_puts(&b, "{\"model_version_status\":[");
  if (s.version || s.label) {
    version_status(&b, m);
  } else {
    int first = 1;
    for (const isv_model *v = m->entry->versions; v; v = v->next) {
      if (!first) isv__buf_putc(&b, ',');
      first = 0;
      version_status(&b, v);
    }
  }
  isv__buf_puts(&b, "]}");
  isv__reply_json(q->ex, 200, &b);
}

/* {"dtype":"DT_FLOAT","tensor_shape":{"dim":[{"size":"-1","name":""}...],"unknown_rank":false},
 * "name":"<tensor>"}, the batch dimension first when the model batches. */
static void tensor_info(isv__buf *b, const isv__io *io, int batched) {
  isv__buf_puts(b, "{\"dtype\":\"");
  const char *dt = isv__dt_name(io->dt, ISV__DTN_TF);
  isv__buf_puts(b, dt ? dt : "DT_INVALID");
  isv__buf_puts(b, "\",\"tensor_shape\":{\"dim\":[");
  if (!io->any_rank) {
    int first = 1;
    char num[32];
    if (batched) {
      isv__buf_puts(b, "{\"size\":\"-1\",\"name\":\"\"}");
      first = 0;
    }
    for (size_t d = 0; d < io->ndim; d++) {
      if (!first) isv__buf_putc(b, ',');
      first = 0;
      snprintf(num, sizeof num, "%lld", (long long)io->shape[d]);
      isv__buf_puts(b, "{\"size\":\"");
      isv__buf_puts(b, num);
      isv__buf_puts(b, "\",\"name\":\"\"}");
    }
  }
  isv__buf_puts(b, "],\"unknown_rank\":");
  isv__buf_puts(b, io->any_rank ? "true" : "false");
  isv__buf_puts(b, "},\"name\":");
  isv__json_write_string(b, io->name, strlen(io->name));
  isv__buf_putc(b, '}');
}

/* Every tensor of io under its own name. */
static void tensor_infos(isv__buf *b, const isv__io *io, size_t n, int batched) {
  isv__buf_putc(b, '{');
  for (size_t i = 0; i < n; i++) {
    if (i) isv__buf_putc(b, ',');
    put_key(b, io[i].name);
    tensor_info(b, &io[i], batched);
  }
  isv__buf_putc(b, '}');
}

/* The aliases of one side of a signature, each with its tensor's info. */
static void sig_infos(isv__buf *b, const isv__io *io, size_t n_io, char *const *names,
                      char *const *aliases, size_t n, int batched) {
  isv__buf_putc(b, '{');
  for (size_t i = 0; i < n; i++) {
    size_t j = 0;
    while (j < n_io && strcmp(io[j].name, names[i]) != 0) j++;
    if (j == n_io) continue; /* registration checked every name */
    if (i) isv__buf_putc(b, ',');
    put_key(b, aliases[i]);
    tensor_info(b, &io[j], batched);
  }
  isv__buf_putc(b, '}');
}

/* GET .../metadata: the model spec and its signatures — the registered ones, or the implicit
 * "serving_default" made of the model's inputs and outputs. */
static void metadata(isv__http_req *q) {
  servable s;
  if (servable_of(q, &s)) return;
  isv_model *m = judged(q, &s, 0);
  if (m == NULL) return;
  const isv_model_config *c = m->cfg;
  isv__buf b;
  isv__buf_init(&b, q->ex->mem);
  isv__buf_puts(&b, "{\"model_spec\":{\"name\":");
  isv__json_write_string(&b, c->name, strlen(c->name));
  isv__buf_puts(&b, ",\"signature_name\":\"\",\"version\":");
  isv__json_write_string(&b, m->version, strlen(m->version));
  isv__buf_puts(&b, "},\"metadata\":{\"signature_def\":{\"signature_def\":{");
  if (c->n_sigs == 0) {
    isv__buf_puts(&b, "\"" ISV__TFS_DEFAULT_SIGNATURE "\":{\"inputs\":");
    tensor_infos(&b, c->inputs, c->n_inputs, c->max_batch > 0);
    isv__buf_puts(&b, ",\"outputs\":");
    tensor_infos(&b, c->outputs, c->n_outputs, c->max_batch > 0);
    isv__buf_puts(&b, ",\"method_name\":\"tensorflow/serving/predict\"}");
  }
  for (size_t i = 0; i < c->n_sigs; i++) {
    const isv__signature *sg = &c->sigs[i];
    if (i) isv__buf_putc(&b, ',');
    put_key(&b, sg->name);
    isv__buf_puts(&b, "{\"inputs\":");
    sig_infos(&b, c->inputs, c->n_inputs, sg->in_names, sg->in_aliases, sg->n_in, c->max_batch > 0);
    isv__buf_puts(&b, ",\"outputs\":");
    sig_infos(&b, c->outputs, c->n_outputs, sg->out_names, sg->out_aliases, sg->n_out,
              c->max_batch > 0);
    isv__buf_puts(&b, ",\"method_name\":\"");
    isv__buf_puts(&b, isv__tfs_method_name(sg->method));
    isv__buf_puts(&b, "\"}");
  }
  isv__buf_puts(&b, "}}}}");
  isv__reply_json(q->ex, 200, &b);
}

/* ---- predict ----------------------------------------------------------------------------- */

enum { PREDICT, CLASSIFY, REGRESS };

/* A predict (classify, regress) in flight: in the request's arena. */
typedef struct predict {
  isv__offload off; /* a large body is decoded, a large answer encoded, on the worker pool */
  isv_request *r;
  isv__exchange *ex;
  int row;
  int kind;                /* PREDICT, CLASSIFY or REGRESS */
  unsigned flags;          /* isv__tfs_decode_predict's */
  const char *deployed_id; /* Vertex's "deployedModelId" (in r's arena), or NULL */
  const isv__signature *sig; /* the one the body chose (NULL: the implicit serving_default) */
  int status; /* the request's, then the encoder's */
  isv__buf b;
  char msg[256];
} predict;

static void client_gone(isv__exchange *ex) { isv__core_cancel(ex->app); }

static size_t output_bytes(const isv_request *r) {
  size_t n = 0;
  for (size_t i = 0; i < r->n_outputs; i++) n += r->outputs[i].byte_size;
  return n;
}

static void encode(predict *p) {
  if (p->status != 0) return;
  int rc = p->kind == CLASSIFY
               ? isv__tfs_encode_classify(p->r, p->sig, &p->b, p->msg, sizeof p->msg)
           : p->kind == REGRESS
               ? isv__tfs_encode_regress(p->r, p->sig, &p->b, p->msg, sizeof p->msg)
               : isv__tfs_encode_predict(p->r, p->sig, p->row, p->deployed_id, &p->b, p->msg,
                                         sizeof p->msg);
  if (rc != 0) p->status = ISV_EBADREQ;
}

static void decode(predict *p) {
  isv_request *r = p->r;
  unsigned depth = r->core->opts.max_json_depth;
  if (p->kind == PREDICT)
    isv__tfs_decode_predict(r, p->ex->body, p->ex->body_len, depth, p->flags, &p->row, &p->sig);
  else
    isv__tfs_decode_examples(r, p->ex->body, p->ex->body_len, depth,
                             p->kind == CLASSIFY ? ISV_SIGNATURE_CLASSIFY : ISV_SIGNATURE_REGRESS,
                             &p->sig);
}

static void reply(predict *p) {
  isv_request *r = p->r;
  isv__exchange *ex = p->ex;
  isv__core *c = r->core;
  if (p->status != 0) {
    isv__buf_free(&p->b);
    char msg[512];
    snprintf(msg, sizeof msg, "%s", p->msg[0] ? p->msg
                                             : r->errmsg && r->errmsg[0] ? r->errmsg
                                                                          : isv_strerror(p->status));
    int st = isv_err_http_status(p->status);
    isv__header h;
    char v[16];
    size_t nh = isv__retry_after(r, &h, v, sizeof v);
    isv_request_free(r);
    isv__reply_error_msg(ex, st, msg, &h, nh);
    return;
  }
  isv__buf b = p->b; /* p lives in r's arena */
  isv_request_free(r);
  isv__reply_json_large(c, ex, 200, &b);
}

static void encode_work(isv__offload *o) { encode((predict *)o); }
static void encode_after(isv__offload *o) { reply((predict *)o); }

static void predict_done(isv_request *r, int status, void *data) {
  predict *p = data;
  p->status = status;
  if (status == 0 && output_bytes(r) >= ISV__OFFLOAD_MIN_BYTES &&
      isv__offload_run(r->core, &p->off, encode_work, encode_after) == 0)
    return;
  encode(p);
  reply(p);
}

static void decode_work(isv__offload *o) { decode((predict *)o); }

static void submit(predict *p) {
  isv__http_queue_headers(p->r, p->ex); /* Inference-Priority, Inference-Timeout-Us */
  isv__http_give_body(p->r, p->ex);
  isv__core_submit(p->r->core, p->r, predict_done, p);
}

static void decode_after(isv__offload *o) { submit((predict *)o); }

/* Run what the body asks of s's model (resolved already); answered later. */
static void run_predict(isv__http_req *q, const servable *s, int kind, unsigned flags, int vertex) {
  isv__exchange *ex = q->ex;
  isv_request *r = isv__request_new(q->core);
  if (r) isv__trace_from_headers(r, q->ex->headers, q->ex->n_headers);
  predict *p = r ? isv__arena_calloc(&r->arena, 1, sizeof *p) : NULL;
  if (p) r->model_name = isv__arena_strndup(&r->arena, s->name, s->spec.name_len);
  if (p == NULL || r->model_name == NULL ||
      (s->version &&
       (r->version = isv__arena_strndup(&r->arena, s->version, s->spec.version_len)) == NULL) ||
      (s->label && (r->label = isv__arena_strndup(&r->arena, s->label, s->spec.label_len)) == NULL)) {
    isv_request_free(r);
    isv__reply_error(ex, ISV_ENOMEM, "out of memory");
    return;
  }
  r->protocol = (uint8_t)q->protocol;
  r->caller = isv__edge_caller(q->ex); /* the model stage judges the model it resolves to */
  p->r = r;
  p->ex = ex;
  p->kind = kind;
  p->flags = flags;
  isv__buf_init(&p->b, ex->mem);
  ex->app = r;
  ex->on_cancel = client_gone;
  if (isv__request_bind(r) != 0) { /* gone since resolve: the core reports it */
    submit(p);
    return;
  }
  /* DECISION: Vertex's deployedModelId is the model version that answered. */
  if (vertex) p->deployed_id = r->model->version;
  if (ex->body == NULL || ex->body_len == 0) {
    isv__request_fail(r, ISV_EBADREQ, "the body is empty: a JSON object with %s is expected",
                      kind == PREDICT ? "\"instances\" or \"inputs\"" : "\"examples\"");
    submit(p);
    return;
  }
  if (ex->body_len >= ISV__OFFLOAD_MIN_BYTES &&
      isv__offload_run(q->core, &p->off, decode_work, decode_after) == 0)
    return;
  decode(p);
  submit(p);
}

/* POST ...:predict, :classify (q->data CLASSIFY), :regress */
static void predict_route(isv__http_req *q) {
  servable s;
  if (servable_of(q, &s)) return;
  if (resolve(q, &s) == NULL) return;
  run_predict(q, &s, (int)(intptr_t)q->data, 0, 0);
}

static void malformed_answer(isv__exchange *ex) {
  char m[300];
  snprintf(m, sizeof m, "Malformed request: %.10s %.200s", ex->method_name ? ex->method_name : "",
           ex->path ? ex->path : "");
  isv__reply_error_msg(ex, 400, m, NULL, 0);
}

/* POST to a model with no verb, or one TF Serving does not have (routes above take the rest). */
static void malformed(isv__http_req *q) { malformed_answer(q->ex); }

/* TF Serving answers a path it does not know under /v1 with 400 "Malformed request: METHOD
 * path"; every other error keeps its status, in {"error": message}. */
static void tfs_error(isv__exchange *ex, int status, const char *msg, const isv__header *extra,
                      size_t n_extra) {
  if (status == 404 && strncmp(msg, "unknown path", 12) == 0) {
    malformed_answer(ex);
    return;
  }
  isv__reply_error_msg(ex, status, msg, extra, n_extra);
}

#define M "/v1/models/{model}"
static const isv__http_route routes[] = {
    {ISV__ROUTE_GET, M, status, NULL},
    {ISV__ROUTE_GET, M "/versions/{version}", status, NULL},
    {ISV__ROUTE_GET, M "/labels/{label}", status, NULL},
    {ISV__ROUTE_GET, M "/metadata", metadata, NULL},
    {ISV__ROUTE_GET, M "/versions/{version}/metadata", metadata, NULL},
    {ISV__ROUTE_GET, M "/labels/{label}/metadata", metadata, NULL},
    {ISV__ROUTE_POST, "/v1/models/{model}:predict", predict_route, (void *)(intptr_t)PREDICT},
    {ISV__ROUTE_POST, M "/versions/{version}:predict", predict_route, (void *)(intptr_t)PREDICT},
    {ISV__ROUTE_POST, M "/labels/{label}:predict", predict_route, (void *)(intptr_t)PREDICT},
    {ISV__ROUTE_POST, "/v1/models/{model}:classify", predict_route, (void *)(intptr_t)CLASSIFY},
    {ISV__ROUTE_POST, M "/versions/{version}:classify", predict_route, (void *)(intptr_t)CLASSIFY},
    {ISV__ROUTE_POST, M "/labels/{label}:classify", predict_route, (void *)(intptr_t)CLASSIFY},
    {ISV__ROUTE_POST, "/v1/models/{model}:regress", predict_route, (void *)(intptr_t)REGRESS},
    {ISV__ROUTE_POST, M "/versions/{version}:regress", predict_route, (void *)(intptr_t)REGRESS},
    {ISV__ROUTE_POST, M "/labels/{label}:regress", predict_route, (void *)(intptr_t)REGRESS},
    {ISV__ROUTE_POST, M, malformed, NULL},
    {ISV__ROUTE_POST, M "/versions/{version}", malformed, NULL},
    {ISV__ROUTE_POST, M "/labels/{label}", malformed, NULL},
    {0},
};
#undef M

const isv__frontend isv__tfs_frontend = {
    .name = "tfserving",
    .enabled_by_default = 1,
    .path_prefix = "/v1",
    .routes = routes,
    .methods = isv__tfs_methods, /* TF Serving's gRPC API (tfs_grpc.c): one switch for both */
    .http_error = tfs_error,
    .http_label = "tfserving",
    .grpc_label = "tfserving_grpc",
};

/* ---- AI Platform / Vertex AI ------------------------------------------------------------- */

/* The longest endpoint id a host may map (Vertex's are 19 digits, or a name). */
#define ISV__VERTEX_ID_MAX 128

/* POST /v1/projects/{p}/models/{m}[/versions/{v}]:predict, or .../endpoints/{e}:predict: the
 * model (its version a name here, as AI Platform's), resolved with V2's texts: 404 "unknown
 * model 'x'". */
/* s's model answered with Vertex's body and answer, or 404 with V2's text. */
static void vertex_run(isv__http_req *q, servable *s) {
  s->spec.name = s->name;
  s->spec.version = s->version;
  isv_model *m;
  isv__why why = isv__core_resolve(q->core, &s->spec, &m);
  if (why != ISV__FOUND) {
    char msg[512];
    isv__reply_error(q->ex, isv__why_say(why, ISV__WORDS_KSERVE, &s->spec, msg, sizeof msg), "%s",
                     msg);
    return;
  }
  run_predict(q, s, PREDICT, ISV__TFS_VERTEX, 1);
}

/* The name an endpoint id is kept under on the router (isv__router_set_named_value). */
static void endpoint_key(char *key, size_t cap, const char *id, size_t len) {
  snprintf(key, cap, "endpoint:%.*s", (int)len, id);
}

static void vertex_predict(isv__http_req *q) {
  servable s;
  memset(&s, 0, sizeof s);
  s.name = isv__http_capture(q, "model", &s.spec.name_len);
  s.version = isv__http_capture(q, "version", &s.spec.version_len);
  size_t id_len;
  const char *id = s.name ? NULL : isv__http_capture(q, "endpoint", &id_len);
  if (id) { /* the model the host mapped the endpoint to (isv_server_set_vertex_endpoint), else
             * the model of that name */
    char key[160];
    const char *mapped = NULL;
    if (id_len <= ISV__VERTEX_ID_MAX) {
      endpoint_key(key, sizeof key, id, id_len);
      mapped = isv__router_named_value(q->router, &isv__vertex_frontend, key);
    }
    if (mapped) {
      const char *version = mapped + strlen(mapped) + 1;
      s.name = mapped;
      s.spec.name_len = strlen(mapped);
      s.version = version[0] ? version : NULL;
      s.spec.version_len = strlen(version);
    } else {
      s.name = id;
      s.spec.name_len = id_len;
    }
  }
  vertex_run(q, &s);
}

/* isv_server_set_vertex_endpoint: args are the endpoint id, the model (NULL: forget the id)
 * and the version (NULL: the default). */
static int vertex_endpoint(isv__router *r, const char *const *args, size_t n, char *why,
                           size_t cap) {
  const char *id = n > 0 ? args[0] : NULL, *model = n > 1 ? args[1] : NULL,
             *version = n > 2 ? args[2] : NULL;
  size_t id_len = id ? strlen(id) : 0;
  int id_ok = id_len > 0 && id_len <= ISV__VERTEX_ID_MAX;
  for (size_t i = 0; id_ok && i < id_len; i++)
    id_ok = isalnum((unsigned char)id[i]) || id[i] == '-' || id[i] == '_' || id[i] == '.';
  if (!id_ok) {
    snprintf(why, cap, "vertex endpoint: the id must be 1 to %d letters, digits, '-', '_' or "
             "'.'", ISV__VERTEX_ID_MAX);
    return ISV_EINVAL;
  }
  if (model && (model[0] == '\0' || strlen(model) >= 128 ||
                (version && (version[0] == '\0' || strlen(version) >= 64)))) {
    snprintf(why, cap, "vertex endpoint: %s", model[0] == '\0' ? "an empty model name"
             : strlen(model) >= 128 ? "the model name is too long" : "a bad version");
    return ISV_EINVAL;
  }
  char key[160], value[200];
  endpoint_key(key, sizeof key, id, id_len);
  if (model == NULL) {
    if (isv__router_named_value(r, &isv__vertex_frontend, key) == NULL) {
      snprintf(why, cap, "vertex endpoint: '%s' is not mapped", id);
      return ISV_ENOTFOUND;
    }
    return isv__router_set_named_value(r, &isv__vertex_frontend, key, NULL, 0);
  }
  int len = snprintf(value, sizeof value, "%s%c%s", model, '\0', version ? version : "");
  int rc = isv__router_set_named_value(r, &isv__vertex_frontend, key, value, (size_t)len);
  if (rc) snprintf(why, cap, "vertex endpoint: %s", isv_strerror(rc));
  return rc;
}

/* The custom-container contract's predict route: the model is the route's (q->data). */
static void vertex_custom_predict(isv__http_req *q) {
  servable s;
  memset(&s, 0, sizeof s);
  s.name = q->data;
  s.spec.name_len = strlen(s.name);
  vertex_run(q, &s);
}

/* ... and its health route: what Vertex polls before it sends traffic. */
static void vertex_health(isv__http_req *q) {
  int ready = isv__core_ready(q->core);
  isv__buf b;
  isv__buf_init(&b, q->ex->mem);
  isv__buf_puts(&b, ready ? "{}" : "{\"error\":\"the server is not ready\"}");
  isv__reply_json(q->ex, ready ? 200 : 503, &b);
}

/* The configure hook: Vertex AI's custom-container contract (isv_server_set_vertex_routes;
 * the demo reads AIP_PREDICT_ROUTE and AIP_HEALTH_ROUTE): args are "routes", the model, the
 * predict route (NULL: none) and the health route (NULL: none); or "endpoint" and
 * vertex_endpoint's (isv_server_set_vertex_endpoint). Once per server: the model is kept on the
 * router, where the predict route finds it. */
static int vertex_configure(isv__router *r, const char *const *args, size_t n, char *why,
                            size_t cap) {
  const isv__frontend *fe = &isv__vertex_frontend;
  if (n > 0 && args[0] && strcmp(args[0], "endpoint") == 0)
    return vertex_endpoint(r, args + 1, n - 1, why, cap);
  if (n > 0 && args[0] && strcmp(args[0], "routes") == 0) { /* the verb, then its args */
    args++;
    n--;
  }
  const char *model = n > 0 ? args[0] : NULL, *predict = n > 1 ? args[1] : NULL,
             *health = n > 2 ? args[2] : NULL;
  if (model == NULL || model[0] == '\0' || strlen(model) >= 128) {
    snprintf(why, cap, "vertex routes: %s", model && model[0] ? "model name too long" : "no model");
    return ISV_EINVAL;
  }
  const char *set = isv__router_value(r, fe);
  if (set) {
    snprintf(why, cap, "vertex routes: already set (for model '%s')", set);
    return ISV_ESTATE;
  }
  int rc = isv__router_set_value(r, fe, model);
  size_t n_routes = r->n_routes, n_prefixes = r->n_prefixes;
  if (rc == 0 && predict) {
    isv__http_route p = {ISV__ROUTE_POST, predict, vertex_custom_predict,
                         (void *)isv__router_value(r, fe)};
    rc = isv__router_add(r, fe, &p);
  }
  if (rc == 0 && health) {
    isv__http_route h = {ISV__ROUTE_GET, health, vertex_health, NULL};
    rc = isv__router_add(r, fe, &h);
  }
  if (rc != 0) {
    isv__router_truncate(r, n_routes, n_prefixes);
    isv__router_set_value(r, fe, NULL);
    snprintf(why, cap, "vertex routes: %s",
             rc == ISV_EEXIST   ? "a route is already served (by a built-in front end?)"
             : rc == ISV_EINVAL ? "a route is not a valid path"
                                : isv_strerror(rc));
  }
  return rc;
}

#define P "/v1/projects/{project}"
static const isv__http_route vertex_routes[] = {
    {ISV__ROUTE_POST, P "/models/{model}:predict", vertex_predict, NULL},
    {ISV__ROUTE_POST, P "/models/{model}/versions/{version}:predict", vertex_predict, NULL},
    {ISV__ROUTE_POST, P "/locations/{location}/endpoints/{endpoint}:predict", vertex_predict, NULL},
    {0},
};
#undef P

const isv__frontend isv__vertex_frontend = {
    .name = "vertex",
    .enabled_by_default = 1,
    .path_prefix = "/v1/projects",
    .routes = vertex_routes,
    .http_label = "vertex",
    .configure = vertex_configure,
};

