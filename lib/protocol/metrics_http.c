#include "protocol/metrics_http.h"

#include "protocol/builtin.h"

#include "core/group.h"
#include "core/queries.h"
#include "core/rcache.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct render {
  isv__buf *b;
  int pass; /* which metric family this walk over the registry writes */
} render;

static void label_value(isv__buf *b, const char *s) {
  for (; *s; s++) {
    if (*s == '\\' || *s == '"') {
      isv__buf_putc(b, '\\');
      isv__buf_putc(b, *s);
    } else if (*s == '\n') {
      isv__buf_puts(b, "\\n");
    } else {
      isv__buf_putc(b, *s);
    }
  }
}

static void labels(isv__buf *b, const isv_model *m) {
  isv__buf_puts(b, "model=\"");
  label_value(b, m->cfg->name);
  isv__buf_puts(b, "\",version=\"");
  label_value(b, m->version);
  isv__buf_putc(b, '"');
}

static void num(isv__buf *b, const char *fmt, double v) {
  char t[64];
  int n = snprintf(t, sizeof t, fmt, v);
  isv__buf_append(b, t, (size_t)n);
}

static void u64(isv__buf *b, uint64_t v) {
  char t[32];
  int n = snprintf(t, sizeof t, "%llu", (unsigned long long)v);
  isv__buf_append(b, t, (size_t)n);
}

static void histogram(isv__buf *b, const char *name, const isv_model *m, const isv__hist_snap *h,
                      const double *bounds, unsigned n) {
  uint64_t cum = 0;
  for (unsigned i = 0; i <= n; i++) {
    cum += h->counts[i];
    isv__buf_puts(b, name);
    isv__buf_puts(b, "_bucket{");
    labels(b, m);
    isv__buf_puts(b, ",le=\"");
    if (i < n) num(b, "%g", bounds[i]);
    else isv__buf_puts(b, "+Inf");
    isv__buf_puts(b, "\"} ");
    u64(b, cum);
    isv__buf_putc(b, '\n');
  }
  isv__buf_puts(b, name);
  isv__buf_puts(b, "_sum{");
  labels(b, m);
  isv__buf_puts(b, "} ");
  num(b, "%.9g", h->sum);
  isv__buf_putc(b, '\n');
  isv__buf_puts(b, name);
  isv__buf_puts(b, "_count{");
  labels(b, m);
  isv__buf_puts(b, "} ");
  u64(b, h->count);
  isv__buf_putc(b, '\n');
}

static void model_value(isv__buf *b, const char *name, const isv_model *m, uint64_t v) {
  isv__buf_puts(b, name);
  isv__buf_putc(b, '{');
  labels(b, m);
  isv__buf_puts(b, "} ");
  u64(b, v);
  isv__buf_putc(b, '\n');
}

static void one_entry(isv__model_entry *e, void *data) {
  render *rd = data;
  isv__buf *b = rd->b;
  for (const isv_model *m = e->versions; m; m = m->next) {
    isv__stats_snap snap; /* every member's numbers when the server is in a group */
    isv__model_stats(m, &snap);
    const isv__stats_snap *s = &snap;
    switch (rd->pass) {
    case 0:
      for (unsigned p = 0; p < s->n_protocols; p++)
        for (int ok = 1; ok >= 0; ok--) {
          uint64_t v = ok ? s->success[p] : s->failure[p];
          if (v == 0) continue;
          isv__buf_puts(b, "isv_requests_total{");
          labels(b, m);
          isv__buf_puts(b, ",protocol=\"");
          label_value(b, s->protocols[p]);
          isv__buf_puts(b, ok ? "\",outcome=\"success\"} " : "\",outcome=\"failure\"} ");
          u64(b, v);
          isv__buf_putc(b, '\n');
        }
      break;
    case 1:
      isv__buf_puts(b, "isv_inflight_requests{");
      labels(b, m);
      isv__buf_puts(b, "} ");
      num(b, "%.0f", (double)s->inflight);
      isv__buf_putc(b, '\n');
      break;
    case 2:
      histogram(b, "isv_request_duration_seconds", m, &s->latency, isv__lat_bounds, ISV__LAT_BUCKETS);
      break;
    case 3:
      histogram(b, "isv_queue_duration_seconds", m, &s->queue, isv__lat_bounds, ISV__LAT_BUCKETS);
      break;
    case 4:
      histogram(b, "isv_batch_size", m, &s->batch, isv__batch_bounds, ISV__BATCH_BUCKETS);
      break;
    case 5:
      isv__buf_puts(b, "isv_model_ready{");
      labels(b, m);
      isv__buf_puts(b, m->state == ISV_MODEL_READY ? "} 1\n" : "} 0\n");
      break;
    case 6:
      model_value(b, "isv_queued_requests", m, s->queued);
      break;
    case 7:
      model_value(b, "isv_executions_total", m, s->exec_count);
      break;
    case 8:
      model_value(b, "isv_inferences_total", m, s->inference_count);
      break;
    case 9: {
      static const char *const stage[4] = {"queue", "compute_input", "compute_infer",
                                           "compute_output"};
      const uint64_t ns[4] = {s->queue_ns, s->compute_input_ns, s->compute_infer_ns,
                              s->compute_output_ns};
      for (int i = 0; i < 4; i++) {
        isv__buf_puts(b, "isv_stage_duration_seconds_total{");
        labels(b, m);
        isv__buf_puts(b, ",stage=\"");
        isv__buf_puts(b, stage[i]);
        isv__buf_puts(b, "\"} ");
        num(b, "%.9g", (double)ns[i] / 1e9);
        isv__buf_putc(b, '\n');
      }
      break;
    }
    case 11:
    case 12: /* the response cache's, for the models that enable it */
      if (!m->cfg->response_cache) break;
      for (int hit = 1; hit >= 0; hit--) {
        isv__buf_puts(b, rd->pass == 11 ? "isv_cache_requests_total{" :
                                          "isv_cache_duration_seconds_total{");
        labels(b, m);
        isv__buf_puts(b, hit ? ",result=\"hit\"} " : ",result=\"miss\"} ");
        if (rd->pass == 11) u64(b, hit ? s->cache_hit : s->cache_miss);
        else num(b, "%.9g", (double)(hit ? s->cache_hit_ns : s->cache_miss_ns) / 1e9);
        isv__buf_putc(b, '\n');
      }
      break;
    case 10: {
      uint32_t max = m->cfg->max_batch ? m->cfg->max_batch : 1;
      for (uint32_t k = 0; k <= max; k++) {
        uint64_t n = isv__model_batch_execs(m, k);
        if (n == 0) continue;
        isv__buf_puts(b, "isv_batch_executions_total{");
        labels(b, m);
        isv__buf_puts(b, ",batch_size=\"");
        u64(b, k);
        isv__buf_puts(b, "\"} ");
        u64(b, n);
        isv__buf_putc(b, '\n');
      }
      break;
    }
    }
  }
}

/* A family's # HELP and # TYPE lines. */
static void family(isv__buf *b, const char *name, const char *help, const char *type) {
  isv__buf_puts(b, "# HELP ");
  isv__buf_puts(b, name);
  isv__buf_putc(b, ' ');
  isv__buf_puts(b, help);
  isv__buf_puts(b, "\n# TYPE ");
  isv__buf_puts(b, name);
  isv__buf_putc(b, ' ');
  isv__buf_puts(b, type);
  isv__buf_putc(b, '\n');
}

/* ---- Triton's names (isv_options_set_metrics_style) ----------------------------------------- */

typedef enum {
  TV_SUCCESS, TV_FAILURE, TV_INFERENCES, TV_EXECS, TV_REQUEST_US, TV_QUEUE_US, TV_INPUT_US,
  TV_INFER_US, TV_OUTPUT_US, TV_PENDING, TV_CACHE_HITS, TV_CACHE_HIT_US, TV_CACHE_MISSES,
  TV_CACHE_MISS_US
} triton_value;

typedef struct triton_family {
  const char *name, *help, *type;
  triton_value value;
} triton_family;

static const triton_family triton_families[] = {
    {"nv_inference_request_success", "Number of successful inference requests, all batch sizes",
     "counter", TV_SUCCESS},
    {"nv_inference_request_failure", "Number of failed inference requests, all batch sizes",
     "counter", TV_FAILURE},
    {"nv_inference_count", "Number of inferences performed (does not include cached requests)",
     "counter", TV_INFERENCES},
    {"nv_inference_exec_count", "Number of model executions performed (does not include cached "
     "requests)", "counter", TV_EXECS},
    {"nv_inference_request_duration_us", "Cumulative inference request duration in "
     "microseconds (includes cached requests)", "counter", TV_REQUEST_US},
    {"nv_inference_queue_duration_us", "Cumulative inference queuing duration in microseconds "
     "(includes cached requests)", "counter", TV_QUEUE_US},
    {"nv_inference_compute_input_duration_us", "Cumulative compute input duration in "
     "microseconds (does not include cached requests)", "counter", TV_INPUT_US},
    {"nv_inference_compute_infer_duration_us", "Cumulative compute inference duration in "
     "microseconds (does not include cached requests)", "counter", TV_INFER_US},
    {"nv_inference_compute_output_duration_us", "Cumulative inference compute output duration "
     "in microseconds (does not include cached requests)", "counter", TV_OUTPUT_US},
    {"nv_inference_pending_request_count", "Instantaneous number of pending requests awaiting "
     "execution per-model.", "gauge", TV_PENDING},
    /* the response cache's, for the models that enable it (Triton's per-model cache metrics) */
    {"nv_cache_num_hits_per_model", "Number of cache hits per model", "counter", TV_CACHE_HITS},
    {"nv_cache_hit_duration_per_model", "Total cache hit duration per model, in microseconds",
     "counter", TV_CACHE_HIT_US},
    {"nv_cache_num_misses_per_model", "Number of cache misses per model", "counter",
     TV_CACHE_MISSES},
    {"nv_cache_miss_duration_per_model", "Total cache miss (insert+lookup) duration per model, "
     "in microseconds", "counter", TV_CACHE_MISS_US},
};

typedef struct triton_render {
  isv__buf *b;
  const triton_family *f;
} triton_render;

static void triton_entry(isv__model_entry *e, void *data) {
  triton_render *rd = data;
  isv__buf *b = rd->b;
  for (const isv_model *m = e->versions; m; m = m->next) {
    isv__stats_snap s;
    isv__model_stats(m, &s);
    uint64_t ok = 0;
    for (unsigned p = 0; p < s.n_protocols && p < ISV__MAX_PROTOCOLS; p++) ok += s.success[p];
    uint64_t v = 0;
    switch (rd->f->value) {
    case TV_FAILURE:
      for (unsigned k = 0; k < ISV__FAIL_REASONS; k++) {
        isv__buf_puts(b, rd->f->name);
        isv__buf_putc(b, '{');
        labels(b, m);
        isv__buf_puts(b, ",reason=\"");
        isv__buf_puts(b, isv__fail_reason_names[k]);
        isv__buf_puts(b, "\"} ");
        u64(b, s.failure_reason[k]);
        isv__buf_putc(b, '\n');
      }
      continue;
    case TV_SUCCESS: v = ok; break;
    case TV_INFERENCES: v = s.inference_count; break;
    case TV_EXECS: v = s.exec_count; break;
    case TV_REQUEST_US: v = s.success_ns / 1000; break;
    case TV_QUEUE_US: v = s.queue_ns / 1000; break;
    case TV_INPUT_US: v = s.compute_input_ns / 1000; break;
    case TV_INFER_US: v = s.compute_infer_ns / 1000; break;
    case TV_OUTPUT_US: v = s.compute_output_ns / 1000; break;
    case TV_PENDING: v = s.queued; break;
    case TV_CACHE_HITS: v = s.cache_hit; break;
    case TV_CACHE_HIT_US: v = s.cache_hit_ns / 1000; break;
    case TV_CACHE_MISSES: v = s.cache_miss; break;
    case TV_CACHE_MISS_US: v = s.cache_miss_ns / 1000; break;
    }
    if (rd->f->value >= TV_CACHE_HITS && !m->cfg->response_cache) continue;
    model_value(b, rd->f->name, m, v);
  }
}

/* Triton's optional latency metrics (ISV_METRICS_TRITON_HISTOGRAMS / _SUMMARIES). */
static const char first_response_name[] = "nv_inference_first_response_histogram_ms";
static const struct {
  const char *name, *help;
} summaries[ISV__SUMMARIES] = {
    [ISV__SUM_REQUEST] = {"nv_inference_request_summary_us", "Summary of inference request "
                          "duration in microseconds (includes cached requests)"},
    [ISV__SUM_QUEUE] = {"nv_inference_queue_summary_us", "Summary of inference queuing duration "
                        "in microseconds (includes cached requests)"},
    [ISV__SUM_INPUT] = {"nv_inference_compute_input_summary_us", "Summary of compute input "
                        "duration in microseconds (does not include cached requests)"},
    [ISV__SUM_INFER] = {"nv_inference_compute_infer_summary_us", "Summary of compute inference "
                        "duration in microseconds (does not include cached requests)"},
    [ISV__SUM_OUTPUT] = {"nv_inference_compute_output_summary_us", "Summary of compute output "
                         "duration in microseconds (does not include cached requests)"},
};
static const double quantiles[] = {0.5, 0.9, 0.95, 0.99, 0.999}; /* Triton's defaults */

typedef struct optional_render {
  isv__buf *b;
  int kind; /* -1: the first-response histogram; else an isv__summary_kind */
  uint64_t since_ms;
  uint64_t *samples; /* room for every copy's window (cap) */
  size_t cap;
} optional_render;

static void optional_entry(isv__model_entry *e, void *data) {
  optional_render *rd = data;
  isv__buf *b = rd->b;
  for (const isv_model *m = e->versions; m; m = m->next) {
    isv__stats_snap s;
    if (rd->kind < 0) { /* decoupled models only, as Triton */
      if (!m->cfg->decoupled) continue;
      isv__model_stats(m, &s);
      histogram(b, first_response_name, m, &s.first_response, isv__first_response_bounds,
                ISV__FIRST_RESPONSE_BUCKETS);
      continue;
    }
    isv__model_stats(m, &s);
    const char *name = summaries[rd->kind].name;
    size_t n = rd->samples ? isv__model_summary(m, (isv__summary_kind)rd->kind, rd->since_ms,
                                                rd->samples, rd->cap) : 0;
    for (size_t q = 0; q < sizeof quantiles / sizeof quantiles[0]; q++) {
      isv__buf_puts(b, name);
      isv__buf_putc(b, '{');
      labels(b, m);
      num(b, ",quantile=\"%g\"} ", quantiles[q]);
      double v = isv__quantile(rd->samples, n, quantiles[q]); /* sorts: the next is quicker */
      if (v != v) isv__buf_puts(b, "NaN");
      else num(b, "%.17g", v);
      isv__buf_putc(b, '\n');
    }
    isv__buf_puts(b, name);
    isv__buf_puts(b, "_sum{");
    labels(b, m);
    isv__buf_puts(b, "} ");
    u64(b, s.summary_sum_us[rd->kind]);
    isv__buf_putc(b, '\n');
    isv__buf_puts(b, name);
    isv__buf_puts(b, "_count{");
    labels(b, m);
    isv__buf_puts(b, "} ");
    u64(b, s.summary_count[rd->kind]);
    isv__buf_putc(b, '\n');
  }
}

static void render_triton(isv__core *core, isv__buf *b) {
  for (size_t i = 0; i < sizeof triton_families / sizeof triton_families[0]; i++) {
    const triton_family *f = &triton_families[i];
    family(b, f->name, f->help, f->type);
    triton_render rd = {b, f};
    isv__registry_foreach_all(isv__core_models(core), triton_entry, &rd);
  }
  unsigned style = core->opts.metrics_style;
  if (style & ISV_METRICS_TRITON_HISTOGRAMS) {
    family(b, first_response_name, "Duration from request to first response in "
                "milliseconds", "histogram");
    optional_render rd = {b, -1, 0, NULL, 0};
    isv__registry_foreach_all(isv__core_models(core), optional_entry, &rd);
  }
  if (style & ISV_METRICS_TRITON_SUMMARIES) {
    /* every copy's window of a version at once: one per loop of a group (at most 64 here) */
    size_t cap = (size_t)ISV__SUMMARY_SAMPLES * 64;
    uint64_t *samples = isv__malloc(core->mem, cap * sizeof *samples);
    uint64_t now_ms = uv_hrtime() / 1000000;
    for (int k = 0; k < ISV__SUMMARIES; k++) {
      family(b, summaries[k].name, summaries[k].help, "summary");
      optional_render rd = {b, k, now_ms > ISV__SUMMARY_WINDOW_MS ? now_ms - ISV__SUMMARY_WINDOW_MS : 0,
                            samples, samples ? cap : 0};
      isv__registry_foreach_all(isv__core_models(core), optional_entry, &rd);
    }
    isv__free(samples);
  }
  isv__rcache *rc = isv__group_rcache(core);
  if (rc == NULL) return;
  isv__rcache_stats st;
  isv__rcache_stats_get(rc, &st);
  /* the server-wide cache, as Triton's local cache reports it (gauges, as Triton types them) */
  const struct {
    const char *name, *help;
    double v;
  } g[] = {
      {"nv_cache_num_entries", "Number of responses stored in response cache", (double)st.entries},
      {"nv_cache_num_lookups", "Number of cache lookups in response cache", (double)st.lookups},
      {"nv_cache_num_hits", "Number of cache hits in response cache", (double)st.hits},
      {"nv_cache_num_misses", "Number of cache misses in response cache", (double)st.misses},
      {"nv_cache_num_evictions", "Number of cache evictions in response cache",
       (double)st.evictions},
      {"nv_cache_lookup_duration", "Total cache lookup duration (hit and miss), in microseconds",
       (double)(st.lookup_ns / 1000)},
      {"nv_cache_insertion_duration", "Total cache insertion duration, in microseconds",
       (double)(st.insert_ns / 1000)},
      {"nv_cache_util", "Cache utilization [0.0 - 1.0]", (double)st.bytes / (double)st.max_bytes},
  };
  for (size_t i = 0; i < sizeof g / sizeof g[0]; i++) {
    family(b, g[i].name, g[i].help, "gauge");
    isv__buf_puts(b, g[i].name);
    isv__buf_putc(b, ' ');
    num(b, "%.17g", g[i].v);
    isv__buf_putc(b, '\n');
  }
}

/* ---- the library's own names ------------------------------------------------------------- */

static void render_own(isv__core *core, isv__buf *b) {
  static const char *const head[] = {
      "# HELP isv_requests_total Inference requests finished, by protocol and outcome.\n"
      "# TYPE isv_requests_total counter\n",
      "# HELP isv_inflight_requests Inference requests in flight now: waiting or running.\n"
      "# TYPE isv_inflight_requests gauge\n",
      "# HELP isv_request_duration_seconds Time from a request's arrival to its result.\n"
      "# TYPE isv_request_duration_seconds histogram\n",
      "# HELP isv_queue_duration_seconds Time a request waited before its backend started.\n"
      "# TYPE isv_queue_duration_seconds histogram\n",
      "# HELP isv_batch_size Rows (batch dimension) per request.\n"
      "# TYPE isv_batch_size histogram\n",
      "# HELP isv_model_ready 1 when the model version is READY.\n"
      "# TYPE isv_model_ready gauge\n",
      "# HELP isv_queued_requests Inference requests waiting for an instance of the model.\n"
      "# TYPE isv_queued_requests gauge\n",
      "# HELP isv_executions_total Backend calls (a dynamic batch is one).\n"
      "# TYPE isv_executions_total counter\n",
      "# HELP isv_inferences_total Rows the backend calls ran (the batch sizes summed).\n"
      "# TYPE isv_inferences_total counter\n",
      "# HELP isv_stage_duration_seconds_total Time successful requests spent in each stage: "
      "waiting, inputs prepared, in the backend, outputs handed back.\n"
      "# TYPE isv_stage_duration_seconds_total counter\n",
      "# HELP isv_batch_executions_total Backend calls by batch size (rows).\n"
      "# TYPE isv_batch_executions_total counter\n",
      "# HELP isv_cache_requests_total Requests of models with the response cache, by result: "
      "hit (answered from it) or miss (run).\n"
      "# TYPE isv_cache_requests_total counter\n",
      "# HELP isv_cache_duration_seconds_total Time spent in the response cache, by result: a "
      "hit's lookup and copy, a miss's lookup and insertion.\n"
      "# TYPE isv_cache_duration_seconds_total counter\n",
  };
  isv__buf_puts(b, "# HELP isv_server_ready 1 when the server is ready (online).\n"
                   "# TYPE isv_server_ready gauge\nisv_server_ready ");
  isv__buf_puts(b, isv__core_ready(core) ? "1\n" : "0\n");
  for (int pass = 0; pass < (int)(sizeof head / sizeof head[0]); pass++) {
    render rd = {b, pass};
    isv__buf_puts(b, head[pass]);
    isv__registry_foreach_all(isv__core_models(core), one_entry, &rd);
  }
  isv__rcache *rc = isv__group_rcache(core);
  if (rc == NULL) return;
  isv__rcache_stats st;
  isv__rcache_stats_get(rc, &st);
  const struct {
    const char *name, *help, *type;
    uint64_t v;
  } c[] = {
      {"isv_response_cache_entries", "Answers held in the response cache.", "gauge", st.entries},
      {"isv_response_cache_bytes", "Bytes the response cache's answers take.", "gauge", st.bytes},
      {"isv_response_cache_capacity_bytes", "The response cache's size "
       "(isv_options_set_response_cache_bytes).", "gauge", st.max_bytes},
      {"isv_response_cache_evictions_total", "Answers evicted from the response cache to make "
       "room (least recently used first).", "counter", st.evictions},
  };
  for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
    family(b, c[i].name, c[i].help, c[i].type);
    isv__buf_puts(b, c[i].name);
    isv__buf_putc(b, ' ');
    u64(b, c[i].v);
    isv__buf_putc(b, '\n');
  }
}

void isv__metrics_render(isv__core *core, isv__buf *b) {
  if (core->opts.metrics_style & ISV_METRICS_LIBINFERSERVE) render_own(core, b);
  if (core->opts.metrics_style & ISV_METRICS_TRITON) render_triton(core, b);
}

static void release(void *p) { isv__free(p); }

void isv__metrics_handler(isv__http_req *q) {
  isv__core *core = q->core;
  isv__exchange *ex = q->ex;
  isv__buf b;
  isv__buf_init(&b, ex->mem);
  isv__metrics_render(core, &b);
  if (b.failed) {
    isv__buf_free(&b);
    static const char oom[] = "out of memory\n";
    uv_buf_t part = uv_buf_init((char *)oom, sizeof oom - 1);
    isv__response r = {.status = 500, .content_type = "text/plain", .parts = &part, .n_parts = 1};
    isv__exchange_respond(ex, &r);
    return;
  }
  size_t len;
  char *data = isv__buf_release(&b, &len);
  uv_buf_t part = uv_buf_init(data, (unsigned)len);
  isv__response r = {.status = 200,
                     .content_type = "text/plain; version=0.0.4; charset=utf-8",
                     .parts = &part,
                     .n_parts = 1,
                     .release = release,
                     .release_ctx = data};
  isv__exchange_respond(ex, &r);
}

static const isv__http_route routes[] = {
    {ISV__ROUTE_GET, "/metrics", isv__metrics_handler, NULL},
    {0},
};

const isv__frontend isv__metrics_frontend = {
    .name = "metrics",
    .enabled_by_default = 1,
    .routes = routes,
};
