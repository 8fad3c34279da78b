/* loop_stall: how long one large request holds the HOST's loop.
 *
 * A host program, like examples/embed/main.c, that attaches an isv_server to its own libuv loop
 * and runs a 1 ms probe timer on that same loop. Each tick records its lateness: the time from
 * when it was due (the previous tick + 1 ms) to when it ran, measured with uv_hrtime(). While a
 * request is parsed, validated or encoded on the loop, the timer cannot run: the lateness is
 * the stall the host sees (its own timers, its own sockets wait that long).
 *
 *   loop_stall [PORT]         (default 0: a free port; prints "listening on PORT")
 *
 *   SIGUSR1        prints "stall max_ms=X p99_ms=Y p999_ms=Z ticks=N turn_cpu_max_ms=T turns=U
 *                  turns_over_2ms=V turns_over_1ms=W model_copy_max_ms=M" (T: the longest loop
 *                  iteration in the loop thread's CPU time; U: iterations; V, W: of them, those
 *                  over 2 ms and over 1 ms of CPU; M: identity_inline's longest copy) for the
 *                  ticks since the last SIGUSR1 (or the start), then starts over
 *   SIGTERM/INT    closes the server and every handle, exits 0
 *
 *   STALL_TRACE_MS=T  print "turn cpu_ms=C end_mono_s=S" to stderr for every loop turn longer
 *                     than T ms of loop-thread CPU (S: CLOCK_MONOTONIC at its end), to find the
 *                     turn in a `perf record -k CLOCK_MONOTONIC` profile
 *
 * Two models, INPUT0 FP32 [-1] -> OUTPUT0 FP32 [-1], a copy. identity_fp32 runs ISV_EXEC_POOL,
 * on the server's worker threads, so that the copy is not on the loop: what the probe sees is
 * the library's own work (HTTP, JSON or binary decoding, encoding, writing). identity_inline
 * runs ISV_EXEC_INLINE, on the loop: its copy is the model's own work and is timed apart
 * (model_copy_max_ms), so that what the library adds to it — an output in memory never touched
 * before — shows. Max body 256 MiB. STALL_PREFAULT=N (MiB) calls isv_options_set_buffer_prefault
 * with N MiB. Used by bench/loop_stall.sh.
 */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <string.h>

#include <inferserve.h>
#include <uv.h>

#define PROBE_MS 1 /* the probe's period */

static uv_loop_t loop;
static uv_timer_t probe;
static uv_signal_t sig_usr1, sig_int, sig_term;
static isv_server *srv;

/* ---- the probe ------------------------------------------------------------------------------ */

static uint64_t last_tick_ns; /* uv_hrtime() of the previous tick; 0: none since the reset */
static uint64_t max_late_ns;
static uint64_t *samples; /* every tick's lateness (ns) since the last report */
static size_t n_samples, cap_samples;
static int samples_oom;   /* a sample could not be stored (the max is still exact) */

/* The longest loop turn in the loop thread's own CPU time (CLOCK_THREAD_CPUTIME_ID between two
 * prepare callbacks, i.e. one whole iteration: timers, I/O callbacks, the async handle...). The
 * stall above also counts the time the thread waited for a CPU — on a small machine the pool's
 * workers and the client compete with it; this counts only what the loop itself ran. */
static uv_prepare_t turns;
static uint64_t last_turn_cpu_ns, max_turn_cpu_ns;
static uint64_t trace_turn_ns; /* STALL_TRACE_MS; 0: off */
static size_t n_turns, n_turns_over, n_turns_over1; /* turns since the reset; of them, over
                                                    * TURN_OVER_NS and over 1 ms */
#define TURN_OVER_NS (2u * 1000000u)
static uint64_t max_copy_ns; /* the inline model's longest write of its output (its own work) */

static uint64_t thread_cpu_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void on_turn(uv_prepare_t *h) {
  (void)h;
  uint64_t now = thread_cpu_ns();
  if (last_turn_cpu_ns && now - last_turn_cpu_ns > max_turn_cpu_ns)
    max_turn_cpu_ns = now - last_turn_cpu_ns;
  if (last_turn_cpu_ns) {
    n_turns++;
    if (now - last_turn_cpu_ns > TURN_OVER_NS) n_turns_over++;
    if (now - last_turn_cpu_ns > 1000000u) n_turns_over1++;
  }
  if (trace_turn_ns && last_turn_cpu_ns && now - last_turn_cpu_ns > trace_turn_ns) {
    struct timespec mono;
    clock_gettime(CLOCK_MONOTONIC, &mono);
    fprintf(stderr, "turn cpu_ms=%.3f end_mono_s=%lld.%09ld\n", (double)(now - last_turn_cpu_ns) / 1e6,
            (long long)mono.tv_sec, (long)mono.tv_nsec);
  }
  last_turn_cpu_ns = now;
}

static void on_probe(uv_timer_t *t) {
  (void)t;
  uint64_t now = uv_hrtime();
  if (last_tick_ns != 0) {
    uint64_t due = last_tick_ns + (uint64_t)PROBE_MS * 1000000u;
    uint64_t late = now > due ? now - due : 0;
    if (late > max_late_ns)
      max_late_ns = late;
    if (n_samples == cap_samples) {
      size_t cap = cap_samples ? 2 * cap_samples : 4096; /* main() reserves 2^18 up front */
      uint64_t *p = realloc(samples, cap * sizeof *p);
      if (p != NULL) {
        samples = p;
        cap_samples = cap;
      }
    }
    if (n_samples < cap_samples)
      samples[n_samples++] = late;
    else
      samples_oom = 1;
  }
  last_tick_ns = now;
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

/* nearest-rank percentile q (0 < q <= 1) of the sorted samples */
static double pct_ms(double q) {
  if (n_samples == 0)
    return 0.0;
  size_t rank = (size_t)(q * (double)n_samples + 0.999999);
  if (rank < 1)
    rank = 1;
  if (rank > n_samples)
    rank = n_samples;
  return (double)samples[rank - 1] / 1e6;
}

static void report_and_reset(void) {
  qsort(samples, n_samples, sizeof *samples, cmp_u64);
  printf("stall max_ms=%.3f p99_ms=%.3f p999_ms=%.3f ticks=%zu turn_cpu_max_ms=%.3f turns=%zu "
         "turns_over_2ms=%zu turns_over_1ms=%zu model_copy_max_ms=%.3f%s\n",
         (double)max_late_ns / 1e6, pct_ms(0.99), pct_ms(0.999), n_samples,
         (double)max_turn_cpu_ns / 1e6, n_turns, n_turns_over, n_turns_over1,
         (double)max_copy_ns / 1e6,
         samples_oom ? " (samples dropped: no memory)" : "");
  fflush(stdout);
  n_samples = 0;
  max_late_ns = 0;
  samples_oom = 0;
  last_tick_ns = 0; /* the report itself is not a stall */
  max_turn_cpu_ns = 0;
  last_turn_cpu_ns = 0;
  n_turns = n_turns_over = n_turns_over1 = 0;
  max_copy_ns = 0;
}

/* ---- the model: OUTPUT0 = INPUT0, on a worker thread ------------------------------------ */

/* user: NULL on a worker thread (identity_fp32); non-NULL on the loop (identity_inline), where
 * the copy's time is recorded: it is the model's own work, and the first touch of the output's
 * pages is in it — what isv_options_set_buffer_prefault is for. */
static int identity(isv_request *req, void *user) {
  const isv_tensor *x = isv_request_input(req, "INPUT0");
  if (x == NULL || isv_tensor_datatype(x) != ISV_FP32)
    return isv_request_complete(req, ISV_EBADREQ, "INPUT0 must be an FP32 tensor");
  size_t ndim;
  const int64_t *shape = isv_tensor_shape(x, &ndim);
  void *y;
  int rc = isv_request_alloc_output(req, "OUTPUT0", ISV_FP32, shape, ndim, &y);
  if (rc < 0)
    return rc;
  uint64_t t0 = user ? uv_hrtime() : 0;
  memcpy(y, isv_tensor_data(x), isv_tensor_byte_size(x));
  if (user && uv_hrtime() - t0 > max_copy_ns) max_copy_ns = uv_hrtime() - t0;
  return isv_request_complete(req, 0, NULL);
}

static int start_server(int port) {
  isv_options *o;
  int rc = isv_options_new(&o);
  if (rc < 0)
    return rc;
  rc = isv_options_set_max_body_bytes(o, (size_t)256 << 20);
  const char *warm = getenv("STALL_PREFAULT"); /* MiB: two blocks, an input's and an output's */
  if (rc == 0 && warm != NULL && atoi(warm) > 0)
    rc = isv_options_set_buffer_prefault(o, (size_t)atoi(warm) << 20, 2);
  if (rc == 0)
    rc = isv_server_new(&loop, o, &srv);
  isv_options_free(o);
  if (rc < 0)
    return rc;

  static const struct {
    const char *name;
    isv_exec_mode mode;
  } models[] = {{"identity_fp32", ISV_EXEC_POOL}, {"identity_inline", ISV_EXEC_INLINE}};
  for (size_t i = 0; i < sizeof models / sizeof models[0] && rc == 0; i++) {
    isv_model_config *c;
    if ((rc = isv_model_config_new(models[i].name, &c)) < 0)
      return rc;
    const int64_t any[1] = {-1};
    if ((rc = isv_model_config_add_input(c, "INPUT0", ISV_FP32, any, 1)) == 0 &&
        (rc = isv_model_config_add_output(c, "OUTPUT0", ISV_FP32, any, 1)) == 0 &&
        (rc = isv_model_config_set_exec_mode(c, models[i].mode)) == 0) {
      isv_backend be = {.struct_size = sizeof be, .infer = identity};
      rc = isv_server_add_model(srv, c, "1", &be,
                                models[i].mode == ISV_EXEC_INLINE ? (void *)&max_copy_ns : NULL, NULL);
    }
    isv_model_config_free(c);
  }
  if (rc == 0)
    rc = isv_server_listen(srv, "127.0.0.1", port);
  /* STALL_TLS_CERT / STALL_TLS_KEY: a TLS listener too, on a port of the kernel's choosing */
  const char *cert = getenv("STALL_TLS_CERT"), *key = getenv("STALL_TLS_KEY");
  if (rc == 0 && cert != NULL && key != NULL) {
    isv_tls *tls;
    if ((rc = isv_tls_new(&tls)) < 0)
      return rc;
    if ((rc = isv_tls_set_cert_files(tls, cert, key)) < 0)
      fprintf(stderr, "loop_stall: %s\n", isv_tls_last_error(tls));
    if (rc == 0)
      rc = isv_server_listen_tls(srv, "127.0.0.1", 0, tls);
    isv_tls_free(tls);
  }
  return rc;
}

/* ---- signals and shutdown ------------------------------------------------------------------ */

static void on_server_closed(isv_server *s, void *data) {
  (void)s;
  (void)data;
  srv = NULL;
}

static void on_usr1(uv_signal_t *h, int signum) {
  (void)h;
  (void)signum;
  report_and_reset();
}

static void on_stop(uv_signal_t *h, int signum) {
  (void)h;
  (void)signum;
  uv_close((uv_handle_t *)&probe, NULL);
  uv_close((uv_handle_t *)&turns, NULL);
  uv_close((uv_handle_t *)&sig_usr1, NULL);
  uv_close((uv_handle_t *)&sig_int, NULL);
  uv_close((uv_handle_t *)&sig_term, NULL);
  if (srv != NULL)
    isv_server_close(srv, on_server_closed, NULL);
}

static int parse_port(const char *s) {
  char *end;
  long v = strtol(s, &end, 10);
  return (*s == '\0' || *end != '\0' || v < 0 || v > 65535) ? -1 : (int)v;
}

int main(int argc, char **argv) {
  int port = 0;
  if (argc > 2 || (argc == 2 && (port = parse_port(argv[1])) < 0)) {
    fprintf(stderr, "usage: loop_stall [PORT]\n");
    return 2;
  }
  signal(SIGPIPE, SIG_IGN);
  if (uv_loop_init(&loop) != 0)
    return 1;

  int rc = start_server(port);
  if (rc < 0) {
    fprintf(stderr, "loop_stall: %s (%s)\n", isv_strerror(rc),
            srv ? isv_server_last_error(srv) : "");
    return 1;
  }

  /* room for ~4 min of ticks between reports: the probe does not realloc while it measures */
  samples = malloc(((size_t)1 << 18) * sizeof *samples);
  cap_samples = samples ? (size_t)1 << 18 : 0;

  uv_timer_init(&loop, &probe);
  uv_timer_start(&probe, on_probe, PROBE_MS, PROBE_MS);
  const char *trace = getenv("STALL_TRACE_MS");
  if (trace != NULL) trace_turn_ns = (uint64_t)(strtod(trace, NULL) * 1e6);
  uv_prepare_init(&loop, &turns);
  uv_prepare_start(&turns, on_turn);
  uv_unref((uv_handle_t *)&turns);
  uv_signal_init(&loop, &sig_usr1);
  uv_signal_init(&loop, &sig_int);
  uv_signal_init(&loop, &sig_term);
  uv_signal_start(&sig_usr1, on_usr1, SIGUSR1);
  uv_signal_start(&sig_int, on_stop, SIGINT);
  uv_signal_start(&sig_term, on_stop, SIGTERM);

  printf("listening on %d\n", isv_server_bound_port(srv, 0));
  if (getenv("STALL_TLS_CERT") != NULL)
    printf("tls listening on %d\n", isv_server_bound_port(srv, 1));
  fflush(stdout);

  uv_run(&loop, UV_RUN_DEFAULT);
  free(samples);
  return uv_loop_close(&loop) == 0 ? 0 : 1;
}
