/* Per model-version counters and histograms, updated on the loop thread as requests finish.
 * The core keeps numbers only; protocol/metrics_http.c renders them. */
#ifndef ISV_CORE_STATS_H
#define ISV_CORE_STATS_H

#include "core/layer.h"

#include <stdint.h>

/* Protocol labels a server counts requests under ("inprocess", "v2_http", ...): the front ends
 * name theirs when the server starts (isv__core_protocol). */
#define ISV__MAX_PROTOCOLS 16

/* Upper bounds, in seconds, of the latency and queue-time histogram buckets (+Inf implied). */
#define ISV__LAT_BUCKETS 12
extern const double isv__lat_bounds[ISV__LAT_BUCKETS];
#define ISV__BATCH_BUCKETS 8
extern const double isv__batch_bounds[ISV__BATCH_BUCKETS];

typedef struct isv__hist {
  uint64_t counts[ISV__LAT_BUCKETS + 1]; /* non-cumulative; last = over every bound */
  double sum;
  uint64_t count;
} isv__hist;

typedef struct isv__stats {
  uint64_t success[ISV__MAX_PROTOCOLS]; /* by protocol label index */
  uint64_t failure[ISV__MAX_PROTOCOLS];
  isv__hist latency; /* submit → done, seconds */
  isv__hist queue;   /* submit → backend starts, seconds */
  isv__hist batch;   /* rows per request (uses the first ISV__BATCH_BUCKETS bounds) */
  int64_t inflight;  /* submitted, not yet done: queued or running */
  /* Triton's statistics extension: executions of the backend and the rows they ran, and the
   * time successful requests spent in each stage, summed (ns): waiting in the queue, having
   * their inputs prepared (a batch's concatenation), in the backend, and having their outputs
   * handed back (a batch's split, output selection, classification). */
  uint64_t exec_count;
  uint64_t inference_count;
  uint64_t queue_ns, compute_input_ns, compute_infer_ns, compute_output_ns;
  uint64_t success_ns, failure_ns; /* submit → done, summed over successes / failures */
  uint64_t last_inference_ms;      /* when the last request finished, ms since the epoch */
} isv__stats;

/* Triton's statistics extension: one model version's numbers in its terms, as both of its
 * protocols (REST JSON, gRPC ModelStatistics) report them. Every stage counts the successful
 * requests (Triton's convention); what is not measured — cache hits and misses, the time per
 * batch size — is reported as 0. */
typedef struct isv__stat_duration {
  uint64_t count, ns;
} isv__stat_duration;
typedef struct isv__triton_stats {
  uint64_t last_inference_ms, inference_count, execution_count;
  isv__stat_duration success, fail, queue, compute_input, compute_infer, compute_output;
} isv__triton_stats;
void isv__stats_triton(const isv__stats *s, unsigned n_protocols, isv__triton_stats *out);

void isv__hist_add(isv__hist *h, const double *bounds, unsigned n_bounds, double v);

#endif
