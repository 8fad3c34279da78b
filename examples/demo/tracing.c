/* --trace-file FILE [--trace-rate N]: the demo's answer to isv_options_set_trace — every
 * traced request as one line of JSON in FILE, with Triton's trace fields and TIMESTAMPS names
 * ({"id", "model_name", "model_version", "timestamps": [{"name", "ns"}...]}) plus the W3C trace
 * and parent ids, the protocol, the status and the batch size. A host would send spans to
 * OpenTelemetry from the same callback. */
#include <inttypes.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <inferserve.h>

#include "zoo.h"

static FILE *trace_out;
static _Atomic uint64_t trace_ids; /* --threads: every loop's server writes here */

static void on_trace(void *user, const isv_trace_timeline *t) {
  (void)user;
  char tid[33], pid[17];
  demo_hex(tid, t->trace_id, 16);
  demo_hex(pid, t->parent_id, 8);
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
  flockfile(trace_out);
  fprintf(trace_out,
          "{\"id\":%" PRIu64 ",\"model_name\":\"%s\",\"model_version\":\"%s\",\"protocol\":\"%s\","
          "\"status\":%d,\"batch_size\":%zu,\"trace_id\":\"%s\",\"parent_id\":\"%s\","
          "\"timestamps\":[",
          atomic_fetch_add(&trace_ids, 1) + 1, t->model, t->version, t->protocol, t->status, t->batch_size, tid,
          t->has_parent ? pid : "");
  int first = 1;
  for (size_t i = 0; i < sizeof stamps / sizeof stamps[0]; i++) {
    uint64_t ns;
    memcpy(&ns, (const char *)t + stamps[i].off, sizeof ns);
    if (ns == 0) continue; /* a point it never reached */
    fprintf(trace_out, "%s{\"name\":\"%s\",\"ns\":%" PRIu64 "}", first ? "" : ",", stamps[i].name,
            ns);
    first = 0;
  }
  fputs("]}\n", trace_out);
  fflush(trace_out);
  funlockfile(trace_out);
}

int demo_tracing_setup(isv_options *opts, const char *file, unsigned rate) {
  if ((trace_out = fopen(file, "a")) == NULL) {
    fprintf(stderr, "inferserve-demo: cannot open trace file '%s'\n", file);
    return -1;
  }
  return isv_options_set_trace(opts, on_trace, NULL, rate ? rate : 1);
}
