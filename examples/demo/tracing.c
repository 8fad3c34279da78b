/* The demo's answer to isv_options_set_trace and Triton's trace extension: every traced request
 * goes to the trace_file its settings name (the global ones, or its model's: POST
 * /v2[/models/M]/trace/setting, gRPC TraceSetting), with Triton's trace fields and TIMESTAMPS
 * names ({"id", "model_name", "model_version", "request_id", "timestamps": [{"name", "ns"}...]})
 * plus the W3C trace and parent ids, the protocol, the status and the batch size; and, with
 * --otlp-endpoint, to an OpenTelemetry collector (otlp.c).
 *   log_frequency 0: one JSON object a line, appended as traces come (Triton writes its file
 *                    at shutdown; a demo may be killed, so it writes within FLUSH_MS).
 *   log_frequency N: Triton's files: FILE.0 holds the first N traces as a JSON array, FILE.1
 *                    the next N...; the traces gathered so far are written when the count runs
 *                    out, when the settings change, and at exit.
 * A trace whose settings name no file is written nowhere (the collector may still get it). */
#include <inttypes.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include <inferserve.h>

#include "zoo.h"

/* What the demo keeps for one trace file: Triton's index, and the traces gathered for it. */
typedef struct out_file {
  struct out_file *next;
  char *path;
  unsigned idx;     /* the next FILE.idx */
  char *buf;        /* gathered traces, comma-separated JSON objects */
  size_t len, cap;
  unsigned n;       /* traces in buf */
  FILE *lines;      /* log_frequency 0: the file, open for appending */
} out_file;

static uv_mutex_t mu; /* --threads: every loop's server traces here */
static out_file *outs;
/* JSON lines go through stdio's buffer; a thread flushes it FLUSH_MS after the first line
 * since the last flush, so a line is readable soon after its request without a write(2) per
 * request — and a server with nothing to write never wakes that thread. */
#define FLUSH_MS 50
static uv_thread_t flusher;
static uv_cond_t flush_cond;
static int flusher_on, flusher_stop;
static int lines_pending; /* a line was buffered since the last flush (under mu) */
static _Atomic uint64_t trace_ids;
static int otlp_on;

static out_file *out_of(const char *path) {
  for (out_file *o = outs; o; o = o->next)
    if (strcmp(o->path, path) == 0) return o;
  out_file *o = calloc(1, sizeof *o);
  if (o == NULL || (o->path = strdup(path)) == NULL) {
    free(o);
    return NULL;
  }
  o->next = outs;
  outs = o;
  return o;
}

static int append(out_file *o, const char *s, size_t n) {
  if (o->len + n + 1 > o->cap) {
    size_t cap = (o->len + n + 1) * 2;
    char *b = realloc(o->buf, cap);
    if (b == NULL) return -1;
    o->buf = b;
    o->cap = cap;
  }
  memcpy(o->buf + o->len, s, n);
  o->len += n;
  o->buf[o->len] = '\0';
  return 0;
}

/* The traces gathered for o as FILE.idx (Triton's JSON array). Under mu. */
static void flush(out_file *o) {
  if (o->n == 0) return;
  char name[1100];
  snprintf(name, sizeof name, "%s.%u", o->path, o->idx++);
  FILE *f = fopen(name, "w");
  if (f == NULL) {
    fprintf(stderr, "inferserve-demo: cannot write trace file '%s'\n", name);
  } else {
    fprintf(f, "[%s]\n", o->buf);
    fclose(f);
  }
  o->len = 0;
  o->n = 0;
}

static void flush_all(void) {
  uv_mutex_lock(&mu);
  for (out_file *o = outs; o; o = o->next) {
    flush(o);
    if (o->lines) fflush(o->lines);
  }
  uv_mutex_unlock(&mu);
}

static void flush_lines(void *arg) {
  (void)arg;
  uv_mutex_lock(&mu);
  while (!flusher_stop) {
    if (!lines_pending) {
      uv_cond_wait(&flush_cond, &mu); /* until on_trace buffers a line, or the exit */
      continue;
    }
    uv_cond_timedwait(&flush_cond, &mu, FLUSH_MS * 1000000ull); /* the exit may cut it short */
    lines_pending = 0;
    for (out_file *o = outs; o; o = o->next)
      if (o->lines) fflush(o->lines);
  }
  uv_mutex_unlock(&mu);
}

static void at_exit(void) {
  if (flusher_on) {
    uv_mutex_lock(&mu);
    flusher_stop = 1;
    uv_cond_signal(&flush_cond);
    uv_mutex_unlock(&mu);
    uv_thread_join(&flusher);
  }
  flush_all();
}

/* s as a JSON string's contents (a client's request id may hold anything). */
static void put_escaped(char *out, size_t cap, const char *s) {
  size_t k = 0;
  for (; *s && k + 7 < cap; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\') k += (size_t)snprintf(out + k, cap - k, "\\%c", c);
    else if (c < 0x20) k += (size_t)snprintf(out + k, cap - k, "\\u%04x", c);
    else out[k++] = (char)c;
  }
  out[k] = '\0';
}

/* One trace as Triton's JSON object (with the demo's additions) into out: its length. */
static int trace_json(char *out, size_t cap, const isv_trace_timeline *t) {
  char tid[33], pid[17], rid[400], model[300], version[100];
  demo_hex(tid, t->trace_id, 16);
  demo_hex(pid, t->parent_id, 8);
  put_escaped(rid, sizeof rid, t->request_id);
  put_escaped(model, sizeof model, t->model);
  put_escaped(version, sizeof version, t->version);
  static const struct {
    const char *name;
    size_t off;
  } stamps[] = {
      {"REQUEST_START", offsetof(isv_trace_timeline, request_start_ns)},
      {"QUEUE_START", offsetof(isv_trace_timeline, queue_start_ns)},
      {"COMPUTE_START", offsetof(isv_trace_timeline, compute_start_ns)},
      {"COMPUTE_INPUT_END", offsetof(isv_trace_timeline, compute_input_end_ns)},
      {"COMPUTE_OUTPUT_START", offsetof(isv_trace_timeline, compute_output_start_ns)},
      {"COMPUTE_END", offsetof(isv_trace_timeline, compute_end_ns)},
      {"REQUEST_END", offsetof(isv_trace_timeline, request_end_ns)},
  };
  int k = snprintf(out, cap,
                   "{\"id\":%" PRIu64 ",\"model_name\":\"%s\",\"model_version\":\"%s\","
                   "\"request_id\":\"%s\",\"protocol\":\"%s\",\"status\":%d,\"batch_size\":%zu,"
                   "\"trace_id\":\"%s\",\"parent_id\":\"%s\",\"timestamps\":[",
                   atomic_fetch_add(&trace_ids, 1) + 1, model, version, rid, t->protocol,
                   t->status, t->batch_size, tid, t->has_parent ? pid : "");
  int first = 1;
  for (size_t i = 0; i < sizeof stamps / sizeof stamps[0] && k > 0 && (size_t)k < cap; i++) {
    uint64_t ns;
    memcpy(&ns, (const char *)t + stamps[i].off, sizeof ns);
    if (ns == 0) continue; /* a point it never reached */
    k += snprintf(out + k, cap - (size_t)k, "%s{\"name\":\"%s\",\"ns\":%" PRIu64 "}",
                  first ? "" : ",", stamps[i].name, ns);
    first = 0;
  }
  if (k > 0 && (size_t)k < cap) k += snprintf(out + k, cap - (size_t)k, "]}");
  return k > 0 && (size_t)k < cap ? k : -1;
}

static void on_trace(void *user, const isv_trace_timeline *t) {
  (void)user;
  if (otlp_on) demo_otlp_span(t);
  if (t->trace_file == NULL || t->trace_file[0] == '\0') return;
  char line[2048];
  int n = trace_json(line, sizeof line, t);
  if (n < 0) return;
  uv_mutex_lock(&mu);
  out_file *o = out_of(t->trace_file);
  if (o && t->log_frequency == 0) {
    if (o->lines == NULL) {
      if ((o->lines = fopen(o->path, "a")) == NULL)
        fprintf(stderr, "inferserve-demo: cannot open trace file '%s'\n", o->path);
      else
        setvbuf(o->lines, NULL, _IOFBF, 1 << 16); /* a write(2) per 64 KiB, or per FLUSH_MS */
    }
    if (o->lines) {
      fprintf(o->lines, "%s\n", line); /* flushed by the flusher, woken by the first */
      if (!lines_pending) {
        lines_pending = 1;
        uv_cond_signal(&flush_cond);
      }
    }
  } else {
    if (o && (o->n == 0 || append(o, ",", 1) == 0) && append(o, line, (size_t)n) == 0) o->n++;
    if (o && (o->n >= t->log_frequency || t->traces_left == 0)) flush(o);
  }
  uv_mutex_unlock(&mu);
}

/* Settings changed: what was gathered goes out under the settings it was gathered with. */
static void on_settings(void *user, const isv_trace_settings *s) {
  (void)user;
  (void)s;
  flush_all();
}

int demo_tracing_setup(isv_options *opts, const demo_tracing *cfg) {
  if (uv_mutex_init(&mu) != 0) return -1;
  if (cfg->otlp_endpoint) {
    if (demo_otlp_start(cfg->otlp_endpoint) != 0) return -1;
    otlp_on = 1;
  }
  if (cfg->file) { /* a file that cannot be written is said at the start */
    FILE *f = fopen(cfg->file, "a");
    if (f == NULL) {
      fprintf(stderr, "inferserve-demo: cannot open trace file '%s'\n", cfg->file);
      return -1;
    }
    fclose(f);
  }
  if (cfg->off) return 0; /* --no-tracing: no hook at all (the trace extension answers 501) */
  int on = cfg->file != NULL || cfg->rate_given || cfg->otlp_endpoint != NULL;
  isv_trace_settings s = {.struct_size = sizeof s,
                          .level = on ? ISV_TRACE_TIMESTAMPS : ISV_TRACE_OFF,
                          .rate = on ? cfg->rate : 1000, /* Triton's default rate when off */
                          .count = -1,
                          .log_frequency = 0,
                          .file = cfg->file ? cfg->file : ""};
  if (isv_options_set_trace(opts, on_trace, NULL, s.rate) != 0 ||
      isv_options_set_trace_settings(opts, &s) != 0 ||
      isv_options_set_trace_settings_cb(opts, on_settings, NULL) != 0)
    return -1;
  if (uv_cond_init(&flush_cond) != 0 || uv_thread_create(&flusher, flush_lines, NULL) != 0)
    return -1;
  flusher_on = 1;
  atexit(at_exit);
  return 0;
}
