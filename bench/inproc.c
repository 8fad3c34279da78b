/* inproc: what an isv_server_infer round trip costs in process, no sockets.
 *
 * A host like examples/embed: its own uv loop, an isv_server on it, three models computing
 * OUTPUT0 = INPUT0 on a fixed INT32 [16] tensor (the `simple` model's size):
 *   - `inline`: ISV_EXEC_INLINE, run on the loop thread inside isv_server_infer;
 *   - `pool`:   ISV_EXEC_POOL with `instances` executions at once (default 64: every request
 *               in flight goes straight to the worker pool), run on the server's worker threads
 *               and completed back to the loop;
 *   - `pool1`:  the same with one instance (a model's default): one execution at a time, so
 *               at 64 in flight each request still waits for the previous one's completion to
 *               reach the loop — a full hand-off round trip per request, queued.
 * A round trip is what a host does per request: isv_request_new, isv_request_add_input
 * (ISV_STATIC), isv_server_infer, the done callback reading OUTPUT0, isv_request_free.
 *
 * Cases: inline at 1 in flight (the callback runs before isv_server_infer returns), pool at
 * 1 in flight (the next request is submitted from the previous one's callback: a full loop ->
 * worker -> loop round trip each), pool at 64 in flight (64 kept submitted), pool1 at 64 in
 * flight. Per case, ROUNDS timed rounds of N requests after one warm-up round; the table
 * gives the median round (and the fastest): wall µs per request, the process's CPU µs per
 * request (every thread, getrusage) and the loop thread's (CLOCK_THREAD_CPUTIME_ID). On a
 * shared machine the CPU figures are the ones to quote. For pool at 1 in flight, each round
 * trip is timed too, and its percentiles over every timed round follow the table: on cores
 * shared with other work the mean is made by a few hand-offs that wait out a scheduler slice
 * (bench/contend.sh runs this with a busy loop on every CPU).
 *
 * Last, the idle check: the loop sits idle for 2 s (a timer) with the worker threads started;
 * the process's CPU time over it (getrusage, and utime + stime of /proc/self/stat) should be
 * ~0 — workers that spin must park.
 *
 *   build/bench/inproc [ROUNDS [N_INLINE [N_POOL [INSTANCES [WORKERS [CASES]]]]]]
 *   defaults: 5 rounds, 1,000,000 inline and 100,000 pool requests per round, 64 instances,
 *   worker threads as the library's default (the CPUs; 0: the default), every case
 *   ("inline,pool1,pool64,one64": a profile takes one). */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include <inferserve.h>
#include <uv.h>

#define DIM 16
#define MAX_ROUNDS 32

static uv_loop_t loop;
static isv_server *srv;
static const int32_t input[DIM] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
static const int64_t shape[1] = {DIM};

/* ---- the model ----------------------------------------------------------------------------- */

static int identity(isv_request *req, void *user) {
  (void)user;
  const isv_tensor *x = isv_request_input(req, "INPUT0");
  void *y;
  int rc = isv_request_alloc_output(req, "OUTPUT0", ISV_INT32, shape, 1, &y);
  if (rc < 0) return rc;
  memcpy(y, isv_tensor_data(x), sizeof input);
  return isv_request_complete(req, 0, NULL);
}

static int add_model(const char *name, isv_exec_mode mode, unsigned instances) {
  isv_model_config *c;
  int rc = isv_model_config_new(name, &c);
  if (rc < 0) return rc;
  if ((rc = isv_model_config_add_input(c, "INPUT0", ISV_INT32, shape, 1)) == 0 &&
      (rc = isv_model_config_add_output(c, "OUTPUT0", ISV_INT32, shape, 1)) == 0 &&
      (rc = isv_model_config_set_exec_mode(c, mode)) == 0 &&
      (rc = isv_model_config_set_instances(c, instances)) == 0) {
    isv_backend be = {.struct_size = sizeof be, .infer = identity};
    rc = isv_server_add_model(srv, c, "1", &be, NULL, NULL);
  }
  isv_model_config_free(c);
  return rc;
}

/* ---- the driver: keep `depth` requests in flight until `total` are done -------------------- */

static const char *model;
static size_t depth, total, issued, done, inflight, failures;
static int pumping; /* pump() is on the stack: a callback run inside isv_server_infer returns */

/* At one in flight on the pool, each round trip's own time too (two clock reads per request,
 * ~2% of it): a mean over a round hides whether every hand-off got slower or a few waited for
 * the scheduler. */
static uint32_t *lat;       /* ns, one per timed request of the case */
static size_t n_lat, lat_cap;
static uint64_t submitted; /* when the request in flight went in, when lat is on */
static uint64_t ts_ns(clockid_t id);

static void pump(void);

static void on_done(isv_request *r, int status, void *data) {
  (void)data;
  const isv_tensor *y = status == 0 ? isv_request_output(r, "OUTPUT0") : NULL;
  if (y == NULL || isv_tensor_byte_size(y) != sizeof input ||
      memcmp(isv_tensor_data(y), input, sizeof input) != 0) {
    if (failures++ == 0)
      fprintf(stderr, "inproc: request failed (%d): %s\n", status, isv_request_error_message(r));
  }
  isv_request_free(r);
  if (lat && n_lat < lat_cap) {
    uint64_t d = ts_ns(CLOCK_MONOTONIC) - submitted;
    lat[n_lat++] = d > UINT32_MAX ? UINT32_MAX : (uint32_t)d;
  }
  inflight--;
  done++;
  pump();
}

static void pump(void) {
  if (pumping) return; /* the outer pump() goes on */
  pumping = 1;
  while (inflight < depth && issued < total) {
    isv_request *r;
    int rc = isv_request_new(srv, model, NULL, &r);
    if (rc == 0)
      rc = isv_request_add_input(r, "INPUT0", ISV_INT32, shape, 1, input, sizeof input,
                                 ISV_STATIC);
    if (rc != 0) {
      fprintf(stderr, "inproc: request: %s\n", isv_strerror(rc));
      exit(1);
    }
    issued++;
    inflight++;
    if (lat) submitted = ts_ns(CLOCK_MONOTONIC);
    if ((rc = isv_server_infer(srv, r, on_done, NULL)) != 0) {
      fprintf(stderr, "inproc: isv_server_infer: %s\n", isv_strerror(rc));
      exit(1);
    }
  }
  pumping = 0;
}

/* ---- clocks ------------------------------------------------------------------------------- */

static uint64_t ts_ns(clockid_t id) {
  struct timespec ts;
  clock_gettime(id, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t proc_cpu_ns(void) { /* every thread of the process: user + system */
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ((uint64_t)ru.ru_utime.tv_sec + (uint64_t)ru.ru_stime.tv_sec) * 1000000000u +
         ((uint64_t)ru.ru_utime.tv_usec + (uint64_t)ru.ru_stime.tv_usec) * 1000u;
}

/* utime + stime of /proc/self/stat, in clock ticks (0 when it cannot be read) */
static unsigned long long stat_ticks(void) {
  FILE *f = fopen("/proc/self/stat", "r");
  if (f == NULL) return 0;
  char buf[1024];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  const char *p = strrchr(buf, ')'); /* the command name may hold spaces */
  unsigned long long ut = 0, st = 0;
  if (p == NULL || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu",
                          &ut, &st) != 2)
    return 0;
  return ut + st;
}

typedef struct round_fig {
  double wall_us, cpu_us, loop_us; /* per request */
} round_fig;

static int cmp_wall(const void *a, const void *b) {
  double x = ((const round_fig *)a)->wall_us, y = ((const round_fig *)b)->wall_us;
  return (x > y) - (x < y);
}

static round_fig run_round(const char *name, size_t in_flight, size_t n) {
  model = name;
  depth = in_flight;
  total = n;
  issued = done = inflight = 0;
  uint64_t w0 = ts_ns(CLOCK_MONOTONIC), c0 = proc_cpu_ns(), l0 = ts_ns(CLOCK_THREAD_CPUTIME_ID);
  pump();
  while (done < total) uv_run(&loop, UV_RUN_ONCE);
  uint64_t w1 = ts_ns(CLOCK_MONOTONIC), c1 = proc_cpu_ns(), l1 = ts_ns(CLOCK_THREAD_CPUTIME_ID);
  round_fig f = {(double)(w1 - w0) / 1e3 / (double)n, (double)(c1 - c0) / 1e3 / (double)n,
                 (double)(l1 - l0) / 1e3 / (double)n};
  return f;
}

static int cmp_u32(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return (x > y) - (x < y);
}

static char spread[256]; /* the round trips' percentiles, printed after the table */

static void run_case(const char *label, const char *name, size_t in_flight, size_t n,
                     unsigned rounds) {
  round_fig f[MAX_ROUNDS];
  run_round(name, in_flight, n / 4 ? n / 4 : 1); /* warm-up: threads, caches, allocator */
  int timed = in_flight == 1 && strcmp(name, "inline") != 0;
  if (timed && (lat = malloc((size_t)rounds * n * sizeof *lat)) != NULL) {
    lat_cap = (size_t)rounds * n;
    n_lat = 0;
  }
  for (unsigned i = 0; i < rounds; i++) f[i] = run_round(name, in_flight, n);
  if (lat && n_lat > 0) {
    qsort(lat, n_lat, sizeof *lat, cmp_u32);
    size_t over = 0;
    while (over < n_lat && lat[n_lat - 1 - over] > 10000) over++;
#define PCT(q) ((double)lat[(size_t)((double)(n_lat - 1) * (q))] / 1e3)
    snprintf(spread, sizeof spread, "%s, each round trip of every round (µs): p50 %.2f, p90 "
             "%.2f, p99 %.2f, p99.9 %.1f, max %.1f; over 10 µs: %zu of %zu (%.2f%%)\n", label,
             PCT(0.5), PCT(0.9), PCT(0.99), PCT(0.999), PCT(1.0), over, n_lat,
             n_lat ? 100.0 * (double)over / (double)n_lat : 0.0);
#undef PCT
  }
  free(lat);
  lat = NULL;
  qsort(f, rounds, sizeof f[0], cmp_wall);
  const round_fig *med = &f[rounds / 2], *best = &f[0];
  printf("| %-22s | %9zu | %8.3f | %8.3f | %8.3f | %8.3f | %10.0f |\n", label, n, med->wall_us,
         best->wall_us, med->cpu_us, med->loop_us, 1e6 / med->wall_us);
  fflush(stdout);
}

static int idle_over;
static void on_idle_timer(uv_timer_t *t) {
  (void)t;
  idle_over = 1;
}

static void on_closed(isv_server *s, void *data) {
  (void)s;
  (void)data;
}

int main(int argc, char **argv) {
  unsigned rounds = argc > 1 ? (unsigned)strtoul(argv[1], NULL, 10) : 5;
  size_t n_inline = argc > 2 ? strtoull(argv[2], NULL, 10) : 1000000;
  size_t n_pool = argc > 3 ? strtoull(argv[3], NULL, 10) : 100000;
  unsigned instances = argc > 4 ? (unsigned)strtoul(argv[4], NULL, 10) : 64;
  unsigned workers = argc > 5 ? (unsigned)strtoul(argv[5], NULL, 10) : 0;
  const char *cases = argc > 6 ? argv[6] : "inline,pool1,pool64,one64";
  if (rounds < 1) rounds = 1;
  if (rounds > MAX_ROUNDS) rounds = MAX_ROUNDS;
  if (instances < 1) instances = 1;

  uv_loop_init(&loop);
  isv_options *o;
  int rc = isv_options_new(&o);
  if (rc == 0 && workers) rc = isv_options_set_worker_threads(o, workers);
  if (rc == 0) rc = isv_server_new(&loop, o, &srv);
  isv_options_free(o);
  if (rc == 0) rc = add_model("inline", ISV_EXEC_INLINE, 1);
  if (rc == 0) rc = add_model("pool", ISV_EXEC_POOL, instances);
  if (rc == 0) rc = add_model("pool1", ISV_EXEC_POOL, 1);
  if (rc != 0) {
    fprintf(stderr, "inproc: setup: %s\n", isv_strerror(rc));
    return 1;
  }

  printf("inproc: INT32 [%d] identity, %u rounds (median / fastest by wall), pool model "
         "instances %u, worker threads %s%u\n\n", DIM, rounds, instances,
         workers ? "" : "default ", workers ? workers : (unsigned)uv_available_parallelism());
  /* literal: printf pads by bytes and "µ" takes two */
  printf("| case                   |  requests |  wall µs |  best µs "
         "|   CPU µs |  loop µs |      req/s |\n");
  printf("|%s|%s|%s|%s|%s|%s|%s|\n", "------------------------", "----------:", "---------:",
         "---------:", "---------:", "---------:", "-----------:");
  if (strstr(cases, "inline")) run_case("inline, 1 in flight", "inline", 1, n_inline, rounds);
  if (strstr(cases, "pool1")) run_case("pool, 1 in flight", "pool", 1, n_pool, rounds);
  if (strstr(cases, "pool64")) run_case("pool, 64 in flight", "pool", 64, n_pool, rounds);
  if (strstr(cases, "one64")) run_case("pool1, 64 in flight", "pool1", 64, n_pool, rounds);

  if (spread[0]) printf("\n%s", spread);

  /* idle: nothing in flight, the worker threads started; the loop waits on a 2 s timer */
  uv_timer_t idle;
  uv_timer_init(&loop, &idle);
  uv_timer_start(&idle, on_idle_timer, 2000, 0);
  uint64_t w0 = ts_ns(CLOCK_MONOTONIC), c0 = proc_cpu_ns();
  unsigned long long t0 = stat_ticks();
  while (!idle_over) uv_run(&loop, UV_RUN_ONCE); /* a last completion's wake-up may come */
  uint64_t w1 = ts_ns(CLOCK_MONOTONIC), c1 = proc_cpu_ns();
  unsigned long long t1 = stat_ticks();
  printf("\nidle %.2f s with the workers started: process CPU %.3f ms (getrusage), %llu clock "
         "ticks (/proc/self/stat utime+stime)\n", (double)(w1 - w0) / 1e9,
         (double)(c1 - c0) / 1e6, t1 - t0);
  uv_close((uv_handle_t *)&idle, NULL);

  isv_server_close(srv, on_closed, NULL);
  uv_run(&loop, UV_RUN_DEFAULT);
  uv_loop_close(&loop);
  if (failures) fprintf(stderr, "inproc: %zu requests failed\n", failures);
  return failures ? 1 : 0;
}
