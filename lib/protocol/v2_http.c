/* KServe V2 over HTTP/REST (PROTOCOLS.md section 1): the route table and its handlers. */
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <strings.h>

#include "codec/compiler.h"
#include "codec/datatype.h"
#include "codec/json_writer.h"
#include "codec/numfmt.h"
#include "codec/zcoding.h"
#include "core/ensemble_cfg.h"
#include "core/group.h"
#include "core/offload.h"
#include "core/request.h"
#include "core/resolve.h"
#include "core/warmup_cfg.h"
#include "protocol/edge.h"
#include "protocol/trace.h"
#include "protocol/http_reply.h"
#include "protocol/v2.h"
#include "protocol/v2_generate.h"
#include "protocol/v2_json.h"
#include "protocol/v2_logging.h"
#include "protocol/v2_trace.h"
#include "protocol/v2_shm.h"
#include "protocol/v2_repo.h"
#include "core/responses.h"
#include "core/scheduler.h"

static void write_str(isv__buf *b, const char *s) { isv__json_write_string(b, s, strlen(s)); }

static void reply_bool(isv__exchange *ex, const char *key, int v) {
  isv__buf b;
  isv__buf_init(&b, ex->mem);
  isv__buf_puts(&b, "{\"");
  isv__buf_puts(&b, key);
  isv__buf_puts(&b, v ? "\":true}" : "\":false}");
  isv__reply_json(ex, v ? 200 : 503, &b);
}

/* How a list of declared tensors is written: V2 metadata ({name, datatype, shape}, a batched
 * model's -1 first) or Triton's model configuration ({name, data_type TYPE_*, dims} as
 * registered, without the batch dimension). */
typedef struct io_style {
  const char *type_key, *shape_key;
  isv__dt_naming naming;
  int batch_first; /* write the batch dimension's -1 first */
} io_style;

static const io_style v2_metadata_style = {"datatype", "shape", ISV__DTN_V2, 1};
static const io_style triton_config_style = {"data_type", "dims", ISV__DTN_TRITON, 0};

static void write_io(isv__buf *b, const isv__io *io, size_t n, uint32_t max_batch,
                     const io_style *st) {
  isv__buf_putc(b, '[');
  for (size_t i = 0; i < n; i++) {
    if (i) isv__buf_putc(b, ',');
    isv__buf_puts(b, "{\"name\":");
    write_str(b, io[i].name);
    isv__buf_puts(b, ",\"");
    isv__buf_puts(b, st->type_key);
    isv__buf_puts(b, "\":");
    write_str(b, isv__dt_name(io[i].dt, st->naming));
    isv__buf_puts(b, ",\"");
    isv__buf_puts(b, st->shape_key);
    isv__buf_puts(b, "\":[");
    if (st->batch_first && max_batch > 0) isv__buf_puts(b, io[i].ndim ? "-1," : "-1");
    for (size_t d = 0; d < io[i].ndim; d++) {
      if (d) isv__buf_putc(b, ',');
      isv__json_write_i64(b, io[i].shape[d]);
    }
    isv__buf_puts(b, "]}");
  }
  isv__buf_putc(b, ']');
}

static void model_metadata(isv_model *m, isv__exchange *ex) {
  const isv_model_config *c = m->cfg;
  isv__buf b;
  isv__buf_init(&b, ex->mem);
  isv__buf_puts(&b, "{\"name\":");
  write_str(&b, c->name);
  isv__buf_puts(&b, ",\"versions\":[");
  int first = 1;
  for (isv_model *v = m->entry->versions; v; v = v->next) {
    if (!first) isv__buf_putc(&b, ',');
    first = 0;
    write_str(&b, v->version);
  }
  isv__buf_puts(&b, "],\"platform\":");
  write_str(&b, c->platform);
  isv__buf_puts(&b, ",\"inputs\":");
  write_io(&b, c->inputs, c->n_inputs, c->max_batch, &v2_metadata_style);
  isv__buf_puts(&b, ",\"outputs\":");
  write_io(&b, c->outputs, c->n_outputs, c->max_batch, &v2_metadata_style);
  isv__buf_putc(&b, '}');
  isv__reply_json(ex, 200, &b);
}

/* ---- infer ------------------------------------------------------------------------------- */

/* A response with binary outputs references them where they are: the request lives until the
 * transport has written the body. */
typedef struct binary_reply {
  isv_request *r;
  char *json;
} binary_reply;

static void release_binary(void *p) {
  binary_reply *br = p;
  isv_request_free(br->r);
  isv__free(br->json);
  isv__free(br);
}

/* A response encoded (JSON, and the binary parts it references); its reply is sent from the
 * loop thread. Lives in the request's arena when encoded off the loop. */
typedef struct encoded {
  isv__offload off;
  isv_request *r;
  isv__exchange *ex;
  int status;
  isv__buf b;
  isv__v2_binpart *bin;
  size_t n_bin;
  isv__coding coding; /* what the client accepts back (Accept-Encoding) */
  char *z;            /* the whole body encoded with `coding`, when it is not identity */
  size_t z_len, json_len;
  isv__v2_memo *memo; /* the server's (loop_memo), or NULL on a worker */
} encoded;

/* The server's V2 JSON memo — the front end's state (isv__v2_frontend.state_size), which infer
 * hands its request as r->fe_data: the loop thread's only. Elsewhere none — a broken rule in
 * debug builds. */
static isv__v2_memo *loop_memo(const isv__core *c, void *memo) {
  int on_loop = isv__on_loop_thread(c);
  ISV_ASSERT(on_loop, "the V2 JSON memo is used on the server's loop thread only");
  return on_loop ? memo : NULL;
}

/* The body (JSON, then the binary parts) compressed into e->z; left NULL (the body goes out
 * plain) when compression fails. */
static void compress_body(encoded *e) {
  isv__zpiece one[8], *pieces = one;
  size_t n = e->n_bin + 1;
  if (n > sizeof one / sizeof one[0] &&
      (pieces = isv__arena_alloc(&e->r->arena, n * sizeof *pieces)) == NULL)
    return;
  pieces[0] = (isv__zpiece){e->b.data, e->b.len};
  for (size_t i = 0; i < e->n_bin; i++) pieces[i + 1] = (isv__zpiece){e->bin[i].ptr, e->bin[i].len};
  isv__buf z;
  isv__buf_init(&z, e->ex->mem);
  if (isv__deflate(e->coding, pieces, n, &z) != 0) {
    isv__buf_free(&z);
    return;
  }
  e->json_len = e->b.len;
  e->z = isv__buf_release(&z, &e->z_len);
}

static void encode(encoded *e) {
  isv__buf_init(&e->b, e->ex->mem);
  /* a small model's answer fits at once: one allocation, not 256 bytes then copies as it
   * grows — the JSON around two 16-element tensors is ~260 bytes, but the writer reserves 33
   * bytes per element of a tensor before it formats it (json_writer.c, write_flat) */
  isv__buf_reserve(&e->b, 1024);
  e->bin = NULL;
  e->n_bin = 0;
  if (e->status == 0 &&
      (e->status = isv__v2_encode_response(e->r, &e->b, &e->bin, &e->n_bin, e->memo))) {
    isv__buf_free(&e->b);
    isv__buf_init(&e->b, e->ex->mem);
  }
  if (e->status == 0 && !e->b.failed && e->coding != ISV__CODING_IDENTITY) compress_body(e);
}

static void release_z(void *p) { isv__free(p); }

/* A compressed answer: it holds copies of everything, so r is freed before the write. */
static void reply_compressed(encoded *e) {
  isv__exchange *ex = e->ex;
  size_t n_bin = e->n_bin, json_len = e->json_len, z_len = e->z_len;
  char *z = e->z;
  const char *coding = isv__coding_name(e->coding);
  isv__buf_free(&e->b);
  isv_request_free(e->r); /* e may live in r's arena: copied out above */
  char hlen[20];
  isv__header hs[3] = {{"Content-Encoding", 16, NULL, 0}, {"Vary", 4, "Accept-Encoding", 15},
                       {"Inference-Header-Content-Length", 31, hlen, 0}};
  hs[0].value = coding;
  hs[0].value_len = strlen(coding);
  hs[2].value_len = isv__fmt_u64(hlen, json_len);
  uv_buf_t part = uv_buf_init(z, (unsigned)z_len);
  isv__response resp = {.status = 200,
                        .content_type = n_bin ? "application/octet-stream" : "application/json",
                        .headers = hs,
                        .n_headers = n_bin ? 3 : 2,
                        .parts = &part,
                        .n_parts = 1,
                        .release = release_z,
                        .release_ctx = z};
  isv__exchange_respond(ex, &resp);
}

static void reply_encoded(encoded *e) {
  isv_request *r = e->r;
  isv__exchange *ex = e->ex;
  int status = e->status;
  if (status == 0 && e->z) {
    reply_compressed(e);
    return;
  }
  isv__buf b = e->b; /* e may live in r's arena: copy out what is needed after r is freed */
  if (status != 0) {
    isv__buf_free(&b);
    isv__buf_init(&b, ex->mem);
    isv__json_error_body(&b, r->errmsg[0] ? r->errmsg : isv_strerror(status));
  }
  if (status != 0) { /* with the core's Retry-After estimate, when it has one */
    isv__header h;
    char v[16];
    size_t nh = isv__retry_after(r, &h, v, sizeof v);
    isv_request_free(r);
    isv__reply_json_headers(ex, isv_err_http_status(status), &b, &h, nh);
    return;
  }
  if (e->n_bin == 0 || b.failed) {
    /* JSON copies every value out of the request, so it is freed before the write. */
    isv__core *c = r->core;
    isv_request_free(r);
    isv__reply_json_large(c, ex, 200, &b);
    return;
  }
  size_t json_len, n_bin = e->n_bin;
  const isv__v2_binpart *bin = e->bin;
  binary_reply *br = isv__malloc(ex->mem, sizeof *br);
  uv_buf_t *parts = isv__arena_alloc(&r->arena, (n_bin + 1) * sizeof *parts);
  if (br == NULL || parts == NULL) {
    isv__free(br);
    isv__buf_free(&b);
    isv_request_free(r);
    isv__reply_error(ex, ISV_ENOMEM, "out of memory");
    return;
  }
  br->r = r;
  br->json = isv__buf_release(&b, &json_len);
  parts[0] = uv_buf_init(br->json, (unsigned)json_len);
  for (size_t i = 0; i < n_bin; i++) {
    parts[i + 1].base = (char *)(uintptr_t)bin[i].ptr;
    parts[i + 1].len = bin[i].len;
  }
  char hlen[20];
  isv__header h = {"Inference-Header-Content-Length", 31, hlen, isv__fmt_u64(hlen, json_len)};
  isv__response resp = {.status = 200,
                        .content_type = "application/octet-stream",
                        .headers = &h,
                        .n_headers = 1,
                        .parts = parts,
                        .n_parts = n_bin + 1,
                        .release = release_binary,
                        .release_ctx = br};
  isv__exchange_respond(ex, &resp);
}

static void encode_work(isv__offload *o) { encode((encoded *)o); }
static void encode_after(isv__offload *o) { reply_encoded((encoded *)o); }

/* Bytes of output tensors a response carries: what its encoding costs grows with. */
static size_t output_bytes(const isv_request *r) {
  size_t n = 0;
  for (size_t i = 0; i < r->n_outputs; i++)
    if (r->outputs[i].dest == NULL) n += r->outputs[i].byte_size; /* not one in shared memory:
                                                                    * it is not encoded */
  return n;
}

static void infer_done(isv_request *r, int status, void *data) {
  isv__exchange *ex = data;
  const isv__header *ae = isv__exchange_header(ex, "accept-encoding");
  encoded local = {.r = r, .ex = ex, .status = status,
                   .coding = ae ? isv__coding_accepted(ae->value, ae->value_len)
                                : ISV__CODING_IDENTITY},
          *e = &local;
  /* a large response is encoded on a worker thread: the loop is the host's */
  if (status == 0 && output_bytes(r) >= ISV__OFFLOAD_MIN_BYTES &&
      (e = isv__arena_calloc(&r->arena, 1, sizeof *e)) != NULL) {
    *e = local; /* no memo there */
    if (isv__offload_run(r->core, &e->off, encode_work, encode_after) == 0) return;
  }
  if (e == NULL) e = &local;
  e->memo = loop_memo(r->core, r->fe_data); /* encoded here, on the loop */
  encode(e);
  reply_encoded(e);
}

/* Where the JSON ends: the whole body, or Inference-Header-Content-Length bytes of it when the
 * binary tensor data extension is in use; *raw when that length is 0 (Triton's raw binary
 * request: no JSON, the body is the model's one input, whatever its Content-Type). Nonzero
 * with r failed on a bad header. */
static int json_part(isv_request *r, const isv__exchange *ex, size_t *json_len, int *raw) {
  const isv__header *ct = isv__exchange_header(ex, "content-type");
  const isv__header *ih = isv__exchange_header(ex, "inference-header-content-length");
  *json_len = ex->body_len;
  *raw = 0;
  if (ih) {
    uint64_t v = 0;
    size_t i = 0;
    for (; i < ih->value_len && ih->value[i] >= '0' && ih->value[i] <= '9' && v < (1ull << 60); i++)
      v = v * 10 + (uint64_t)(ih->value[i] - '0');
    if (i == 0 || i != ih->value_len)
      return isv__request_fail(r, ISV_EBADREQ, "Inference-Header-Content-Length '%.*s' is not a "
                               "byte count", (int)(ih->value_len > 32 ? 32 : ih->value_len),
                               ih->value);
    if (v > ex->body_len)
      return isv__request_fail(r, ISV_EBADREQ, "Inference-Header-Content-Length is %llu but the "
                               "body has only %zu bytes", (unsigned long long)v, ex->body_len);
    *json_len = (size_t)v;
    if (v == 0) {
      *raw = 1;
      return 0;
    }
  }
  if (ct == NULL || isv__media_is(ct, "application/json") || isv__media_is(ct, "text/plain") ||
      isv__media_is(ct, "application/x-www-form-urlencoded"))
    return 0;
  if (isv__media_is(ct, "application/octet-stream")) {
    if (ih == NULL)
      return isv__request_fail(r, ISV_EBADREQ, "an application/octet-stream body needs the "
                               "Inference-Header-Content-Length header (the JSON part's length)");
    return 0;
  }
  return isv__request_fail(r, ISV_EMEDIATYPE, "unsupported Content-Type '%.*s': send "
                           "application/json, or application/octet-stream with "
                           "Inference-Header-Content-Length",
                           (int)(ct->value_len > 64 ? 64 : ct->value_len), ct->value);
}

/* ---- handlers ----------------------------------------------------------------------------- */

static void server_metadata(isv__http_req *q) {
  isv__buf b;
  isv__buf_init(&b, q->ex->mem);
  isv__buf_puts(&b, "{\"name\":");
  write_str(&b, q->core->opts.server_name);
  isv__buf_puts(&b, ",\"version\":");
  write_str(&b, q->core->opts.server_version);
  isv__buf_puts(&b, ",\"extensions\":[");
  const char *ext[32];
  size_t n_ext = isv__v2_server_extensions(q->core, ext, 32);
  for (size_t i = 0; i < n_ext; i++) {
    if (i) isv__buf_putc(&b, ',');
    write_str(&b, ext[i]);
  }
  isv__buf_puts(&b, "]}");
  isv__reply_json(q->ex, 200, &b);
}

static void live(isv__http_req *q) { reply_bool(q->ex, "live", 1); }

static void ready(isv__http_req *q) { reply_bool(q->ex, "ready", isv__core_ready(q->core)); }

/* The model version a /v2/models/{model}[/versions/{version}] path names, judged at the edge's
 * model stage — NULL when answered (404, refused) or waiting for the host (edge.h: this
 * handler runs again). `every_version`: the answer is about all of the model's versions
 * (statistics without one), so the host is asked with no version. */
static isv_model *path_model(isv__http_req *q, int every_version) {
  isv__model_spec spec = {0};
  spec.name = isv__http_capture(q, "model", &spec.name_len);
  spec.version = isv__http_capture(q, "version", &spec.version_len);
  isv_model *m;
  isv__why why = isv__core_resolve(q->core, &spec, &m);
  if (why != ISV__FOUND) {
    char msg[512];
    int code = isv__why_say(why, ISV__WORDS_KSERVE, &spec, msg, sizeof msg);
    isv__reply_error(q->ex, code, "%s", msg);
    return NULL;
  }
  int all = every_version && spec.version == NULL && m->entry != NULL;
  return isv__edge_http_model(q, m->cfg->name, all ? NULL : m->version) ? m : NULL;
}

/* ---- statistics (Triton's extension) ----------------------------------------------------- */

static void write_duration(isv__buf *b, const char *key, isv__stat_duration d) {
  isv__buf_putc(b, '"');
  isv__buf_puts(b, key);
  isv__buf_puts(b, "\":{\"count\":");
  isv__json_write_u64(b, d.count);
  isv__buf_puts(b, ",\"ns\":");
  isv__json_write_u64(b, d.ns);
  isv__buf_putc(b, '}');
}

typedef struct stats_out {
  isv__buf *b;
  size_t n; /* model versions written */
} stats_out;

static void write_model_stats(stats_out *o, const isv_model *m) {
  isv__buf *b = o->b;
  isv__triton_stats t;
  isv__stats_snap snap; /* every member's numbers when the server is in a group */
  isv__model_stats(m, &snap);
  isv__stats_triton(&snap, &t);
  if (o->n++) isv__buf_putc(b, ',');
  isv__buf_puts(b, "{\"name\":");
  write_str(b, m->cfg->name);
  isv__buf_puts(b, ",\"version\":");
  write_str(b, m->version);
  isv__buf_puts(b, ",\"last_inference\":");
  isv__json_write_u64(b, t.last_inference_ms);
  isv__buf_puts(b, ",\"inference_count\":");
  isv__json_write_u64(b, t.inference_count);
  isv__buf_puts(b, ",\"execution_count\":");
  isv__json_write_u64(b, t.execution_count);
  const struct {
    const char *key;
    isv__stat_duration d;
  } stages[] = {{"success", t.success},        {"fail", t.fail},
                {"queue", t.queue},            {"compute_input", t.compute_input},
                {"compute_infer", t.compute_infer}, {"compute_output", t.compute_output},
                {"cache_hit", t.cache_hit},    {"cache_miss", t.cache_miss}};
  isv__buf_puts(b, ",\"inference_stats\":{");
  for (size_t i = 0; i < sizeof stages / sizeof stages[0]; i++) {
    if (i) isv__buf_putc(b, ',');
    write_duration(b, stages[i].key, stages[i].d);
  }
  isv__buf_puts(b, "},\"batch_stats\":[");
  /* executions per batch size; the time per size is not measured (0) */
  uint32_t max = m->cfg->max_batch ? m->cfg->max_batch : 1;
  size_t nb = 0;
  for (uint32_t k = 1; k <= max; k++) {
    uint64_t c = isv__model_batch_execs(m, k);
    if (c == 0) continue;
    if (nb++) isv__buf_putc(b, ',');
    isv__buf_puts(b, "{\"batch_size\":");
    isv__json_write_u64(b, k);
    for (size_t i = 3; i < 6; i++) { /* compute_input, _infer, _output: executions, time 0 */
      isv__buf_putc(b, ',');
      write_duration(b, stages[i].key, (isv__stat_duration){c, 0});
    }
    isv__buf_putc(b, '}');
  }
  isv__buf_puts(b, "],\"memory_usage\":[]}");
}

static void stats_of_entry(isv__model_entry *e, void *data) {
  for (const isv_model *m = e->versions; m; m = m->next) write_model_stats(data, m);
}

/* GET /v2/models/stats, /v2/models/{model}/stats (every version), .../versions/{v}/stats */
static void statistics(isv__http_req *q) {
  const isv_model *one = NULL;
  isv__model_entry *all_of = NULL;
  if (isv__http_capture(q, "model", NULL) != NULL) {
    isv_model *m = path_model(q, 1);
    if (m == NULL) return;
    if (isv__http_capture(q, "version", NULL) != NULL || m->entry == NULL) one = m;
    else all_of = m->entry;
  }
  isv__buf b;
  isv__buf_init(&b, q->ex->mem);
  stats_out o = {&b, 0};
  isv__buf_puts(&b, "{\"model_stats\":[");
  if (one) write_model_stats(&o, one);
  else if (all_of) stats_of_entry(all_of, &o);
  else isv__registry_foreach(isv__core_models(q->core), stats_of_entry, &o);
  isv__buf_puts(&b, "]}");
  isv__reply_json(q->ex, 200, &b);
}

/* ---- model configuration (Triton's model config JSON, built from the registration) -------- */

/* Triton's ModelQueuePolicy in its JSON (numbers as numbers, as Triton's REST config shows). */
static void write_queue_policy(isv__buf *b, const isv_queue_policy *p) {
  isv__buf_puts(b, p->timeout_action == ISV_TIMEOUT_DELAY ? "{\"timeout_action\":\"DELAY\""
                                                          : "{\"timeout_action\":\"REJECT\"");
  isv__buf_puts(b, ",\"default_timeout_microseconds\":");
  isv__json_write_u64(b, p->default_timeout_us);
  isv__buf_puts(b, p->allow_timeout_override ? ",\"allow_timeout_override\":true"
                                             : ",\"allow_timeout_override\":false");
  isv__buf_puts(b, ",\"max_queue_size\":");
  isv__json_write_u64(b, p->max_queue_size);
  isv__buf_putc(b, '}');
}

/* dynamic_batching's priority fields; priority_queue_policy's keys are strings (JSON's only
 * keys, as Triton's), in level order. */
static void write_priorities(isv__buf *b, const isv_model_config *c) {
  isv__buf_puts(b, ",\"preserve_ordering\":false,\"priority_levels\":");
  isv__json_write_u64(b, c->priority_levels);
  isv__buf_puts(b, ",\"default_priority_level\":");
  isv__json_write_u64(b, c->default_priority);
  isv__buf_puts(b, ",\"default_queue_policy\":");
  write_queue_policy(b, &c->default_policy);
  isv__buf_puts(b, ",\"priority_queue_policy\":{");
  int first = 1;
  for (uint32_t level = 1; level <= c->priority_levels; level++) {
    const isv_queue_policy *p = isv__config_level_policy(c, level);
    if (p == &c->default_policy) continue; /* no policy of its own */
    if (!first) isv__buf_putc(b, ',');
    first = 0;
    char key[16];
    snprintf(key, sizeof key, "\"%u\":", (unsigned)level);
    isv__buf_puts(b, key);
    write_queue_policy(b, p);
  }
  isv__buf_putc(b, '}');
}

/* ensemble_scheduling {"step": [{model_name, model_version (-1: the latest), input_map,
 * output_map}]} as Triton's REST config shows it. */
static void write_str_map(isv__buf *b, char *const *keys, char *const *vals, size_t n) {
  isv__buf_putc(b, '{');
  for (size_t i = 0; i < n; i++) {
    if (i) isv__buf_putc(b, ',');
    write_str(b, keys[i]);
    isv__buf_putc(b, ':');
    write_str(b, vals[i]);
  }
  isv__buf_putc(b, '}');
}

static void write_ensemble(isv__buf *b, const struct isv__ens_cfg *e) {
  isv__buf_puts(b, ",\"ensemble_scheduling\":{\"step\":[");
  for (size_t i = 0; i < e->n_steps; i++) {
    const isv__ens_step *s = &e->steps[i];
    isv__buf_puts(b, i ? ",{\"model_name\":" : "{\"model_name\":");
    write_str(b, s->model);
    isv__buf_puts(b, ",\"model_version\":");
    isv__buf_puts(b, s->version ? s->version : "-1"); /* digits only (ensemble.c) */
    isv__buf_puts(b, ",\"input_map\":");
    write_str_map(b, s->in_keys, s->in_vals, s->n_in);
    isv__buf_puts(b, ",\"output_map\":");
    write_str_map(b, s->out_keys, s->out_vals, s->n_out);
    isv__buf_putc(b, '}');
  }
  isv__buf_puts(b, "]}");
}

/* Triton's model_warmup (ModelWarmup: its inputs a map by input name) and response_cache.
 * DECISION: a sample's given data (ISV_WARMUP_DATA) came from the host, not from a file; its
 * input_data_file shows the input's name, the file name a Triton repository would use. */
static void write_warmup_cache(isv__buf *b, const isv_model_config *c) {
  static const char *const fill[] = {",\"zero_data\":true", ",\"random_data\":true",
                                     ",\"input_data_file\":"};
  isv__buf_puts(b, ",\"model_warmup\":[");
  for (size_t i = 0; i < c->n_warmups; i++) {
    const isv__warmup *w = &c->warmups[i];
    if (i) isv__buf_putc(b, ',');
    isv__buf_puts(b, "{\"name\":");
    write_str(b, w->name);
    isv__buf_puts(b, ",\"batch_size\":");
    isv__json_write_u64(b, w->batch_size);
    isv__buf_puts(b, ",\"inputs\":{");
    for (size_t k = 0; k < w->n_inputs; k++) {
      const isv__warmup_input *in = &w->inputs[k];
      if (k) isv__buf_putc(b, ',');
      write_str(b, in->name);
      isv__buf_puts(b, ":{\"data_type\":");
      write_str(b, isv__dt_name(in->dt, ISV__DTN_TRITON));
      isv__buf_puts(b, ",\"dims\":[");
      for (size_t d = 0; d < in->ndim; d++) {
        if (d) isv__buf_putc(b, ',');
        isv__json_write_i64(b, in->dims[d]);
      }
      isv__buf_putc(b, ']');
      isv__buf_puts(b, fill[in->fill]);
      if (in->fill == ISV_WARMUP_DATA) write_str(b, in->name);
      isv__buf_putc(b, '}');
    }
    isv__buf_puts(b, "},\"count\":");
    isv__json_write_u64(b, w->count);
    isv__buf_putc(b, '}');
  }
  isv__buf_puts(b, c->response_cache ? "],\"response_cache\":{\"enable\":true}"
                                     : "],\"response_cache\":{\"enable\":false}");
}

static void config(isv__http_req *q) {
  isv_model *m = path_model(q, 0);
  if (m == NULL) return;
  const isv_model_config *c = m->cfg;
  isv__buf b;
  isv__buf_init(&b, q->ex->mem);
  isv__buf_puts(&b, "{\"name\":");
  write_str(&b, c->name);
  isv__buf_puts(&b, ",\"platform\":");
  write_str(&b, c->platform);
  isv__buf_puts(&b, ",\"backend\":\"\",\"max_batch_size\":");
  isv__json_write_u64(&b, c->max_batch);
  isv__buf_puts(&b, ",\"input\":");
  write_io(&b, c->inputs, c->n_inputs, c->max_batch, &triton_config_style);
  isv__buf_puts(&b, ",\"output\":");
  write_io(&b, c->outputs, c->n_outputs, c->max_batch, &triton_config_style);
  if (c->ensemble) { /* Triton's ensembles have no instances: their steps' models do */
    write_ensemble(&b, c->ensemble);
  } else {
    isv__buf_puts(&b, ",\"instance_group\":[{\"name\":");
    write_str(&b, c->name);
    isv__buf_puts(&b, ",\"kind\":\"KIND_CPU\",\"count\":");
    isv__json_write_u64(&b, c->instances);
    isv__buf_puts(&b, "}]");
  }
  if (c->batching || c->queue_policies) { /* Triton's only place for priorities: here */
    isv__buf_puts(&b, ",\"dynamic_batching\":{\"preferred_batch_size\":[");
    for (size_t i = 0; i < c->n_preferred; i++) {
      if (i) isv__buf_putc(&b, ',');
      isv__json_write_u64(&b, c->preferred[i]);
    }
    isv__buf_puts(&b, "],\"max_queue_delay_microseconds\":");
    isv__json_write_u64(&b, c->batch_delay_us);
    if (c->queue_policies) write_priorities(&b, c);
    isv__buf_putc(&b, '}');
  }
  if (c->sequences) {
    isv__buf_puts(&b, ",\"sequence_batching\":{\"max_sequence_idle_microseconds\":");
    isv__json_write_u64(&b, c->seq_idle_us);
    isv__buf_puts(&b, ",\"direct\":{\"max_queue_delay_microseconds\":0}}");
  }
  isv__buf_puts(&b, ",\"model_transaction_policy\":{\"decoupled\":");
  isv__buf_puts(&b, c->decoupled ? "true" : "false");
  isv__buf_putc(&b, '}');
  write_warmup_cache(&b, c);
  isv__buf_putc(&b, '}');
  isv__reply_json(q->ex, 200, &b);
}

static void metadata(isv__http_req *q) {
  isv_model *m = path_model(q, 0);
  if (m) model_metadata(m, q->ex);
}

static void model_ready(isv__http_req *q) {
  isv_model *m = path_model(q, 0);
  if (m) reply_bool(q->ex, "ready", isv__core_model_ready(q->core, m));
}

/* The client of a request still being answered is gone (disconnect, half-close, RST_STREAM):
 * a request still waiting never runs, a running one is flagged for its backend. */
static void client_gone(isv__exchange *ex) { isv__core_cancel(ex->app); }

/* A request for the model the path names, bound to it when it exists; NULL (answered 500)
 * when out of memory. Its exchange tells the core when the client goes away. */
static isv_request *path_request(isv__http_req *q) {
  isv_request *r = isv__request_new(q->core);
  if (r == NULL) {
    isv__reply_error(q->ex, ISV_ENOMEM, "out of memory");
    return NULL;
  }
  isv__trace_from_headers(r, q->ex->headers, q->ex->n_headers);
  r->protocol = (uint8_t)q->protocol;
  r->caller = isv__edge_caller(q->ex); /* the model stage judges the model it resolves to */
  size_t nl, vl;
  const char *name = isv__http_capture(q, "model", &nl);
  const char *version = isv__http_capture(q, "version", &vl);
  r->model_name = isv__arena_strndup(&r->arena, name, nl);
  r->version = version ? isv__arena_strndup(&r->arena, version, vl) : NULL;
  if (r->model_name == NULL || (version && r->version == NULL)) {
    isv_request_free(r);
    isv__reply_error(q->ex, ISV_ENOMEM, "out of memory");
    return NULL;
  }
  isv__request_bind(r); /* an unknown model: the core reports it first, the body is not read */
  q->ex->app = r;
  q->ex->on_cancel = client_gone;
  return r;
}


/* A request decoded off the loop: its JSON part is large (ISV__OFFLOAD_MIN_BYTES). In the
 * request's arena. */
typedef struct decoding {
  isv__offload off;
  isv_request *r;
  isv__exchange *ex;
  size_t json_len;
  unsigned max_depth;
} decoding;

static void decode_work(isv__offload *o) {
  decoding *d = (decoding *)o;
  isv__v2_decode_request(d->r, d->ex->body, d->ex->body_len, d->json_len, d->max_depth, NULL);
}

static void decode_after(isv__offload *o) {
  decoding *d = (decoding *)o;
  isv__http_queue_headers(d->r, d->ex); /* Inference-Priority, Inference-Timeout-Us */
  isv__http_give_body(d->r, d->ex);
  isv__core_submit(d->r->core, d->r, infer_done, d->ex);
}

static void infer(isv__http_req *q) {
  isv__exchange *ex = q->ex;
  isv_request *r = path_request(q);
  if (r == NULL) return;
  r->fe_data = q->state; /* the memo, for infer_done's encoding */
  size_t json_len;
  int raw;
  if (r->model && json_part(r, ex, &json_len, &raw) == 0) {
    if (raw) {
      isv__v2_decode_raw(r, ex->body, ex->body_len);
    } else {
      decoding *d = json_len >= ISV__OFFLOAD_MIN_BYTES
                        ? isv__arena_calloc(&r->arena, 1, sizeof *d) : NULL;
      if (d) { /* a large JSON body is decoded on a worker thread: the loop is the host's */
        *d = (decoding){.r = r, .ex = ex, .json_len = json_len,
                        .max_depth = q->core->opts.max_json_depth};
        if (isv__offload_run(q->core, &d->off, decode_work, decode_after) == 0) return;
      }
      isv__v2_decode_request(r, ex->body, ex->body_len, json_len, q->core->opts.max_json_depth,
                             loop_memo(q->core, q->state));
    }
  }
  isv__http_queue_headers(r, ex); /* Inference-Priority, Inference-Timeout-Us */
  isv__http_give_body(r, ex);
  isv__core_submit(q->core, r, infer_done, ex);
}

/* ---- generate (Triton's generate extension: v2_generate.h) ------------------------------- */

static void generate_done(isv_request *r, int status, void *data) {
  isv__exchange *ex = data;
  isv__buf b;
  isv__buf_init(&b, ex->mem);
  if (status == 0) isv__v2gen_encode_response(r, &b);
  else isv__json_error_body(&b, r->errmsg[0] ? r->errmsg : isv_strerror(status));
  isv__header h;
  char v[16];
  size_t nh = status ? isv__retry_after(r, &h, v, sizeof v) : 0;
  isv_request_free(r); /* the JSON holds copies */
  isv__reply_json_headers(ex, status == 0 ? 200 : isv_err_http_status(status), &b, &h, nh);
}

static void generate(isv__http_req *q) {
  isv_request *r = path_request(q);
  if (r == NULL) return;
  if (r->model)
    isv__v2gen_decode_request(r, q->ex->body, q->ex->body_len, q->core->opts.max_json_depth);
  isv__http_queue_headers(r, q->ex);
  isv__http_give_body(r, q->ex);
  isv__core_submit(q->core, r, generate_done, q->ex);
}

/* generate_stream: Server-Sent Events, one "data:" event per response. The 200 and its headers
 * go out with the first response; a request that fails before any is answered as /generate
 * would be (a JSON error with its status), one that fails after ends the stream with an error
 * event (Triton's rule: check every event for "error"). */

/* A stream being answered: its exchange, and whether its head went out. Lives in the
 * request's arena (allocated before the backend can run). */
typedef struct sse {
  isv__exchange *ex;
  isv_request *r;
  int begun;
} sse;

/* Backpressure: a full queue (isv__exchange_writable) holds the backend's responses back
 * (ISV_EAGAIN) until the exchange drained. */
static void sse_check(sse *st) {
  if (!isv__exchange_writable(st->ex)) isv__request_flow_block(st->r);
}

static void sse_writable(isv__exchange *ex) { isv__request_flow_resume(ex->app); }

/* Send an event's text (b taken; empty: nothing but the head when the stream has not begun). */
static void send_event(sse *st, isv__buf *b) { isv__sse_send(st->ex, &st->begun, b); }

/* "data: {...}\n\n" of a response (status 0) or of an error. */
static void event_of(const isv_request *r, int status, isv__buf *b) {
  isv__buf_puts(b, "data: ");
  if (status == 0) isv__v2gen_encode_response(r, b);
  else isv__json_error_body(b, r->errmsg && r->errmsg[0] ? r->errmsg : isv_strerror(status));
  isv__buf_puts(b, "\n\n");
}

static void stream_response(isv_request *resp, int status, void *data) {
  isv__buf b;
  isv__buf_init(&b, ((sse *)data)->ex->mem);
  event_of(resp, status, &b);
  isv_request_free(resp);
  send_event(data, &b);
  sse_check(data);
}

static void stream_done(isv_request *r, int status, void *data) {
  sse *st = data;
  if (!st->begun && status != 0) { /* nothing sent yet: an ordinary error answer */
    generate_done(r, status, st->ex);
    return;
  }
  isv__buf b;
  isv__buf_init(&b, st->ex->mem);
  if (status != 0 || r->n_outputs > 0) event_of(r, status, &b); /* a last response, or the
                                                                  * error that ended the stream */
  isv__exchange *ex = st->ex;
  send_event(st, &b); /* with nothing to say and nothing said: the head alone */
  isv_request_free(r); /* st goes with it */
  isv__exchange_end(ex);
}

static void generate_stream(isv__http_req *q) {
  isv_request *r = path_request(q);
  if (r == NULL) return;
  sse *st = isv__arena_calloc(&r->arena, 1, sizeof *st);
  if (st == NULL) {
    isv_request_free(r);
    isv__reply_error(q->ex, ISV_ENOMEM, "out of memory");
    return;
  }
  st->ex = q->ex;
  st->r = r;
  q->ex->on_writable = sse_writable;
  if (isv__request_stream(r, stream_response, st) != 0 && r->status == 0)
    isv__request_fail(r, ISV_ENOMEM, "out of memory");
  if (r->model)
    isv__v2gen_decode_request(r, q->ex->body, q->ex->body_len, q->core->opts.max_json_depth);
  isv__http_queue_headers(r, q->ex);
  isv__http_give_body(r, q->ex);
  isv__core_submit(q->core, r, stream_done, st);
}

/* ---- routes ------------------------------------------------------------------------------ */

const isv__http_route isv__v2_routes[] = {
    {ISV__ROUTE_GET, "/v2", server_metadata, NULL},
    {ISV__ROUTE_GET, "/v2/health/live", live, NULL},
    {ISV__ROUTE_GET, "/v2/health/ready", ready, NULL},
    /* system shared memory (v2_shm.h); CUDA shared memory: not supported, said so */
    {ISV__ROUTE_GET | ISV__ROUTE_POST, "/v2/logging", isv__v2log_http, NULL},
    {ISV__ROUTE_GET | ISV__ROUTE_POST, "/v2/trace/setting", isv__v2trace_http, NULL},
    {ISV__ROUTE_GET, "/v2/systemsharedmemory/status", isv__v2shm_http_status, NULL},
    {ISV__ROUTE_GET, "/v2/systemsharedmemory/region/{region}/status", isv__v2shm_http_status, NULL},
    {ISV__ROUTE_POST, "/v2/systemsharedmemory/region/{region}/register", isv__v2shm_http_register,
     NULL},
    {ISV__ROUTE_POST, "/v2/systemsharedmemory/unregister", isv__v2shm_http_unregister, NULL},
    {ISV__ROUTE_POST, "/v2/systemsharedmemory/region/{region}/unregister",
     isv__v2shm_http_unregister, NULL},
    {ISV__ROUTE_GET, "/v2/cudasharedmemory/status", isv__v2shm_http_cuda, "status"},
    {ISV__ROUTE_GET, "/v2/cudasharedmemory/region/{region}/status", isv__v2shm_http_cuda, "status"},
    {ISV__ROUTE_POST, "/v2/cudasharedmemory/region/{region}/register", isv__v2shm_http_cuda,
     "register"},
    {ISV__ROUTE_POST, "/v2/cudasharedmemory/unregister", isv__v2shm_http_cuda, "unregister"},
    {ISV__ROUTE_POST, "/v2/cudasharedmemory/region/{region}/unregister", isv__v2shm_http_cuda,
     "unregister"},
    /* Triton's model repository extension (v2_repo_http.c) */
    {ISV__ROUTE_POST, "/v2/repository/index", isv__v2repo_http_index, NULL},
    {ISV__ROUTE_POST, "/v2/repository/models/{model}/load", isv__v2repo_http_load, NULL},
    {ISV__ROUTE_POST, "/v2/repository/models/{model}/unload", isv__v2repo_http_unload, NULL},
    {ISV__ROUTE_POST, "/v2/repository/{repository}/index", isv__v2repo_http_named, NULL},
    {ISV__ROUTE_POST, "/v2/repository/{repository}/models/{model}/load", isv__v2repo_http_named,
     NULL},
    {ISV__ROUTE_POST, "/v2/repository/{repository}/models/{model}/unload", isv__v2repo_http_named,
     NULL},
    {ISV__ROUTE_GET, "/v2/models/stats", statistics, NULL}, /* before {model}: first wins */
    {ISV__ROUTE_GET, "/v2/models/{model}/stats", statistics, NULL},
    {ISV__ROUTE_GET | ISV__ROUTE_POST, "/v2/models/{model}/trace/setting", isv__v2trace_http,
     NULL},
    {ISV__ROUTE_GET, "/v2/models/{model}/config", config, NULL},
    {ISV__ROUTE_GET, "/v2/models/{model}/versions/{version}/config", config, NULL},
    {ISV__ROUTE_GET, "/v2/models/{model}/versions/{version}/stats", statistics, NULL},
    {ISV__ROUTE_GET, "/v2/models/{model}", metadata, NULL},
    {ISV__ROUTE_GET, "/v2/models/{model}/versions/{version}", metadata, NULL},
    {ISV__ROUTE_GET, "/v2/models/{model}/ready", model_ready, NULL},
    {ISV__ROUTE_GET, "/v2/models/{model}/versions/{version}/ready", model_ready, NULL},
    {ISV__ROUTE_POST, "/v2/models/{model}/infer", infer, NULL},
    {ISV__ROUTE_POST, "/v2/models/{model}/versions/{version}/infer", infer, NULL},
    {ISV__ROUTE_POST, "/v2/models/{model}/generate", generate, NULL},
    {ISV__ROUTE_POST, "/v2/models/{model}/versions/{version}/generate", generate, NULL},
    {ISV__ROUTE_POST, "/v2/models/{model}/generate_stream", generate_stream, NULL},
    {ISV__ROUTE_POST, "/v2/models/{model}/versions/{version}/generate_stream", generate_stream,
     NULL},
    {0},
};
