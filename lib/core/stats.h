/* Per model-version counters and histograms, updated on the loop thread as requests finish.
 * The core keeps numbers only; protocol/metrics_http.c renders them.
 *
 * Each counter has one writer, its loop thread, and may be read from any thread: the servers
 * of a group (core/group.h) sum every loop's copy of a model when one of them answers a
 * statistics or metrics request. So the counters are atomics, written with a relaxed load and
 * store (one writer: no read-modify-write, no lock prefix on the hot path) and read relaxed;
 * a reader sees each counter whole, not the set of them at one instant — as Prometheus
 * expects of counters scraped while they move. */
#ifndef ISV_CORE_STATS_H
#define ISV_CORE_STATS_H

#include "core/layer.h"

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

/* Protocol labels a server counts requests under ("inprocess", "v2_http", ...): the front ends
 * name theirs when the server starts (isv__core_protocol). */
#define ISV__MAX_PROTOCOLS 16

/* Upper bounds, in seconds, of the latency and queue-time histogram buckets (+Inf implied). */
#define ISV__LAT_BUCKETS 12
extern const double isv__lat_bounds[ISV__LAT_BUCKETS];
#define ISV__BATCH_BUCKETS 8
extern const double isv__batch_bounds[ISV__BATCH_BUCKETS];

/* Why a request failed, in Triton's terms (its nv_inference_request_failure `reason` label):
 * refused before it ran (a full queue, an overload, a client's limit, its deadline while it
 * waited), cancelled, the backend's failure, anything else (a bad request the model saw). The
 * scheduler classifies (record() in scheduler.c). */
typedef enum {
  ISV__FAIL_REJECTED = 0,
  ISV__FAIL_CANCELED,
  ISV__FAIL_BACKEND,
  ISV__FAIL_OTHER,
  ISV__FAIL_REASONS
} isv__fail_reason;
extern const char *const isv__fail_reason_names[ISV__FAIL_REASONS]; /* "REJECTED", ... */

/* A counter with one writer (see above). */
typedef _Atomic uint64_t isv__counter;
static inline void isv__count(isv__counter *c, uint64_t n) {
  atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + n,
                        memory_order_relaxed);
}
static inline uint64_t isv__counter_get(const isv__counter *c) {
  return atomic_load_explicit((isv__counter *)c, memory_order_relaxed);
}

typedef struct isv__hist {
  isv__counter counts[ISV__LAT_BUCKETS + 1]; /* non-cumulative; last = over every bound */
  _Atomic double sum;
  isv__counter count;
} isv__hist;

/* Triton's optional latency metrics (isv_options_set_metrics_style):
 * nv_inference_first_response_histogram_ms — a decoupled request's time to its first response,
 * in milliseconds, in Triton's default buckets (+Inf implied) — and the summaries of a
 * successful request's times (nv_inference_{request,queue,compute_input,compute_infer,
 * compute_output}_summary_us): their quantiles over the last ISV__SUMMARY_WINDOW_MS, from the
 * latest ISV__SUMMARY_SAMPLES observations of each copy of the model version. */
#define ISV__FIRST_RESPONSE_BUCKETS 4
extern const double isv__first_response_bounds[ISV__FIRST_RESPONSE_BUCKETS];
typedef enum {
  ISV__SUM_REQUEST = 0,
  ISV__SUM_QUEUE,
  ISV__SUM_INPUT,
  ISV__SUM_INFER,
  ISV__SUM_OUTPUT,
  ISV__SUMMARIES
} isv__summary_kind;
#define ISV__SUMMARY_SAMPLES 512
#define ISV__SUMMARY_WINDOW_MS 60000
/* One summary's observations: a ring written by the loop thread (each slot's value and time
 * are atomics: a reader racing the writer may pair a slot's new value with its old time, one
 * sample of hundreds a moment off — never a torn number), and its count and sum for ever. */
typedef struct isv__window {
  _Atomic uint64_t value_us[ISV__SUMMARY_SAMPLES];
  _Atomic uint64_t at_ms[ISV__SUMMARY_SAMPLES]; /* uv_hrtime() in ms: one clock for all loops */
  isv__counter written;                          /* observations ever: the next slot */
  isv__counter sum_us;
} isv__window;
void isv__window_add(isv__window *w, uint64_t us, uint64_t now_ms);
/* The values of w observed at since_ms or later, appended to out[*n..cap). */
void isv__window_recent(const isv__window *w, uint64_t since_ms, uint64_t *out, size_t *n,
                        size_t cap);
/* The q-quantile (0 < q <= 1) of v[0..n) by nearest rank, v sorted in place; NaN when n is 0. */
double isv__quantile(uint64_t *v, size_t n, double q);

typedef struct isv__stats {
  isv__counter success[ISV__MAX_PROTOCOLS]; /* by protocol label index */
  isv__counter failure[ISV__MAX_PROTOCOLS];
  isv__hist latency; /* submit → done, seconds */
  isv__hist queue;   /* submit → backend starts, seconds */
  isv__hist batch;   /* rows per request (uses the first ISV__BATCH_BUCKETS bounds) */
  _Atomic int64_t inflight; /* submitted, not yet done: queued or running */
  /* Triton's statistics extension: executions of the backend and the rows they ran, and the
   * time successful requests spent in each stage, summed (ns): waiting in the queue, having
   * their inputs prepared (a batch's concatenation), in the backend, and having their outputs
   * handed back (a batch's split, output selection, classification). */
  isv__counter exec_count;
  isv__counter inference_count;
  isv__counter queue_ns, compute_input_ns, compute_infer_ns, compute_output_ns;
  isv__counter success_ns, failure_ns; /* submit → done, summed over successes / failures */
  isv__counter failure_reason[ISV__FAIL_REASONS]; /* failures by isv__fail_reason */
  isv__counter last_inference_ms;      /* when the last request finished, ms since the epoch */
  /* the response cache (core/rcache.h): hits (answered from it: lookup and copy time) and
   * misses (lookup time, plus the insertion's when the answer was stored) */
  isv__counter cache_hit, cache_hit_ns, cache_miss, cache_miss_ns;
  _Atomic size_t queued;     /* requests waiting for an instance now (the scheduler's) */
  isv__counter *batch_execs; /* executions per batch size, [1..max(max_batch, 1)] (the
                              * registry allocates them with the version) */
  isv__hist first_response;  /* a decoupled request's first response, ms (first ones' bounds) */
  isv__window *windows;      /* [ISV__SUMMARIES] with Triton's summaries on (the registry
                              * allocates them with the version), else NULL */
} isv__stats;

/* What a reader gets: the same numbers, plain, summed over every copy of the model version
 * (one per server of a group; one alone otherwise) — isv__model_stats (core/group.h). */
typedef struct isv__hist_snap {
  uint64_t counts[ISV__LAT_BUCKETS + 1];
  double sum;
  uint64_t count;
} isv__hist_snap;

typedef struct isv__stats_snap {
  const char *protocols[ISV__MAX_PROTOCOLS]; /* the labels success[] and failure[] count by */
  unsigned n_protocols;
  uint64_t success[ISV__MAX_PROTOCOLS];
  uint64_t failure[ISV__MAX_PROTOCOLS];
  isv__hist_snap latency, queue, batch;
  int64_t inflight;
  uint64_t queued; /* waiting for an instance now (the scheduler's) */
  uint64_t exec_count, inference_count;
  uint64_t queue_ns, compute_input_ns, compute_infer_ns, compute_output_ns;
  uint64_t success_ns, failure_ns;
  uint64_t failure_reason[ISV__FAIL_REASONS];
  uint64_t last_inference_ms; /* the latest of the copies' */
  uint64_t cache_hit, cache_hit_ns, cache_miss, cache_miss_ns;
  isv__hist_snap first_response;
  uint64_t summary_count[ISV__SUMMARIES], summary_sum_us[ISV__SUMMARIES];
} isv__stats_snap;

/* Add one copy's numbers into a snapshot (its protocols[] already say which labels). */
void isv__stats_add_to(isv__stats_snap *out, const isv__stats *s);

/* Triton's statistics extension: one model version's numbers in its terms, as both of its
 * protocols (REST JSON, gRPC ModelStatistics) report them. Every stage counts the successful
 * requests that ran (Triton's convention: a cache hit is in success and queue, not in the
 * compute stages); what is not measured — the time per batch size — is reported as 0. */
typedef struct isv__stat_duration {
  uint64_t count, ns;
} isv__stat_duration;
typedef struct isv__triton_stats {
  uint64_t last_inference_ms, inference_count, execution_count;
  isv__stat_duration success, fail, queue, compute_input, compute_infer, compute_output;
  isv__stat_duration cache_hit, cache_miss;
} isv__triton_stats;
void isv__stats_triton(const isv__stats_snap *s, isv__triton_stats *out);

void isv__hist_add(isv__hist *h, const double *bounds, unsigned n_bounds, double v);

#endif
