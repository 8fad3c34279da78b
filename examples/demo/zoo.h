/* The demo model zoo: small models with a stable contract that the integration tests and the
 * protocol conformance suites rely on.
 *
 *   simple              INPUT0, INPUT1 INT32 [-1,16] -> OUTPUT0 = a+b, OUTPUT1 = a-b
 *   simple_string       the same on decimal text (BYTES)
 *   simple_int8         the same on INT8 (wrapping); simple_identity: BYTES [-1,-1] identity
 *                       (max batch 8) — Triton's example models of those names
 *   identity_<t>        INPUT0 [-1,-1] -> OUTPUT0 identical, for every datatype t
 *   multi_version       v1..v3: OUTPUT0 = INPUT0 + version; stable -> 2, canary -> 3, default 3
 *   classifier          iris-like FP32 [-1,4] -> softmax FP32 [-1,3] with class labels
 *   half_plus_three     v123: y = 0.5 x + 3 (TensorFlow Serving's test model, renamed); also
 *                       registered as saved_model_half_plus_three, the seed's name
 *   tf_multi            batched (8): tag BYTES, signal FP32 [5], sensor INT32 [2,2] per row ->
 *                       tag_len INT32, signal_sum FP32, sensor_bytes BYTES (the tag echoed)
 *   slow                sleeps INPUT0 ms on the thread pool, echoes it
 *   stubborn            the same, deaf to cancellation (what the close's drain abandons)
 *   failing             always fails with ISV_EBACKEND
 *   loading             registered in state LOADING
 * The scheduler's (zoo_sched.c):
 *   batched             INPUT0 FP32 [-1,4] -> OUTPUT0 = 2 x INPUT0, OUTPUT1 INT32 [-1,1] = the
 *                       rows of the execution that served it (dynamic batching: max batch 32,
 *                       2 ms, worker threads)
 *   accumulate          stateful (sequence batching, 2 instances): INPUT0 INT32 [1] -> OUTPUT0
 *                       INT64 [1], the running sum of the sequence
 *   repeat              decoupled: IN INT32 [-1] -> one response per element (OUT = IN[i], IDX =
 *                       i), "delay_ms" parameter between them, then an empty completion
 *   repeat_int32        Triton's decoupled example: IN INT32 [-1], DELAY UINT32 [-1], WAIT
 *                       UINT32 [1] -> per element OUT = IN[i], IDX = i, DELAY[i] ms apart
 *   tokens              decoupled: text_input BYTES [1] -> one response per word (text_output);
 *                       the word FAIL fails the request there (an error after some responses)
 *   queue1              like slow, one instance, one waiting request at most (503 beyond)
 *   prio                priorities and queue policies: one instance, INPUT0 ms per call,
 *                       OUTPUT0 = the call's place in the order calls ran; 3 levels (2 by
 *                       default), level 1 at most 2 waiting, level 2 rejects at a request's
 *                       timeout, level 3 delays
 *   cost, cost_batched  INPUT0 FP32 [-1,4] -> OUTPUT0 = INPUT0 after 200 µs + 1 µs per row, one
 *                       instance; cost_batched with dynamic batching (max 32, 500 µs): the pair
 *                       bench/batching.sh compares
 * The response cache's and model warmup's (zoo_cache.c, reloadable like zoo.c's own):
 *   cost_cached         cost with the response cache: a repeated input is answered from it
 *   warm                INPUT0 FP32 [-1,4] -> OUTPUT0 = INPUT0 (sleeps INPUT0[0] ms); its
 *                       warmup keeps it LOADING for ~0.8 s after each load
 *   warm_broken         its warmup fails: UNAVAILABLE, the reason in the repository index
 *   stream_echo         decoupled: one response OUTPUT0 = INPUT0 (FP32 [-1,4]); a load that
 *                       turns its response cache on fails (Triton refuses it too)
 * Triton's example models for its client programs (zoo_triton.c; INT32, max batch 8):
 *   simple_sequence     sequence batching: INPUT [1] -> OUTPUT [1] = INPUT + START (Triton's
 *                       model: 1 on a start with 0, then the inputs as sent)
 *   simple_dyna_sequence           OUTPUT = INPUT + START + END * sequence_id (numeric ids)
 *   simple_string_dyna_sequence    an accumulator: START sets it to INPUT, others add INPUT,
 *                                  END adds the id read as a decimal int ("1002")
 *   custom_identity_int32          INPUT0 [-1] -> OUTPUT0, max batch 1024
 * Ensembles and models calling models (zoo_ensemble.c, its header says more; INT32/FP32
 * [-1,16], max batch 8):
 *   cast_fp32, scale, round_int32, square, add_fp32   the steps: INT32->FP32, x2, FP32->INT32,
 *                       x^2, A+B
 *   simple_ensemble     platform "ensemble": simple behind a preprocessing chain (INPUT0 cast to
 *                       FP32, scaled x2, rounded back): OUTPUT0 = 2 INPUT0 + INPUT1, OUTPUT1 =
 *                       2 INPUT0 - INPUT1
 *   fan_ensemble        platform "ensemble": INPUT -> scale and square at once -> add_fp32:
 *                       OUTPUT = 2 x + x^2
 *   bls_simple          a backend inferring simple, then cast_fp32, itself: SUM INT32, SUM_FP32
 * grps's (zoo_grps.c; open I/O, version "1.0.0"):
 *   echo                every input back as an output, in the data kind it came (the server's
 *                       default model: a grps request that names none)
 *   echo_native         native mode: the GrpsMessage as it came
 *   streamer            decoupled: str_data "N" or INT32 N -> N messages, str_data "0".."N-1";
 *                       N > 1000 -> 400; with gmap s_i32 n, fail_at (fail after that many) and
 *                       delay_ms (between messages)
 * The OpenAI-compatible endpoints' (zoo_openai.c: its header says more):
 *   tiny_lm             decoupled word bigram model: text_input, max_tokens, temperature, seed,
 *                       stop -> one text_output word per response (--lm-delay-ms apart), then
 *                       finish_reason, prompt_tokens, completion_tokens
 *   tiny_lm_once        the same, not decoupled: the whole text in one answer
 *   tiny_embed          text_input BYTES per row (max batch 2048) -> embedding FP32 [64]
 *   chat_echo           versions 1 (ChatML) and 2 (Llama 3): answers the prompt its own chat
 *                       template made of the messages
 */
#ifndef INFERSERVE_DEMO_ZOO_H
#define INFERSERVE_DEMO_ZOO_H

#include <inferserve.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The most loops --threads takes. */
#define DEMO_MAX_THREADS 64
/* grps's default model (isv_server_set_default_model: a server's own, not its group's). */
#define DEMO_DEFAULT_MODEL "echo"

/* Register every model of the zoo on srv, and its routes. 0, or the negative ISV_E* code of
 * the first failure (isv_server_last_error(srv) says more). */
int demo_zoo_register(isv_server *srv);
/* n bytes as 2n lowercase hex digits and a NUL (trace and span ids). */
void demo_hex(char *out, const uint8_t *b, size_t n);
/* The demo's log and its answer to Triton's logging extension (logging.c): 0 or -1. */
int demo_logging_setup(isv_options *opts);
/* The demo's tracing (tracing.c): the hook always (the trace extension's settings decide; at
 * level TIMESTAMPS from the start when --trace-file, --trace-rate or --otlp-endpoint is given),
 * none with --no-tracing. 0 or -1. */
typedef struct demo_tracing {
  const char *file;          /* --trace-file: the global trace_file at the start */
  unsigned rate;             /* --trace-rate (default 1) */
  int rate_given;
  const char *otlp_endpoint; /* --otlp-endpoint URL (otlp.c) */
  int off;                   /* --no-tracing */
} demo_tracing;
int demo_tracing_setup(isv_options *opts, const demo_tracing *cfg);
/* OpenTelemetry export (otlp.c): spans to an OTLP/HTTP JSON endpoint from a thread of their own;
 * demo_otlp_span never blocks (a full queue drops the span, counted). 0 or -1. */
int demo_otlp_start(const char *url);
void demo_otlp_span(const isv_trace_timeline *t);
/* What each server of a group needs beside the group's models (threads.c): the routes (loop:
 * its number, 1..) and the default model. 0 or the code of the first failure. */
int demo_zoo_attach(isv_server *srv, unsigned loop);
/* zoo.c's own models, one at a time — the demo's model repository (repo.c) reloads them:
 * pick->name alone is registered (nothing when NULL), its max batch pick->max_batch when >= 0,
 * its response cache pick->response_cache when >= 0;
 * pick->seen (may be NULL) hears every name zoo.c has (a listing: name NULL). 0 or the code of
 * the first failure. */
typedef struct demo_zoo_pick {
  const char *name;
  int64_t max_batch;
  void (*seen)(void *user, const char *name);
  void *user;
  int response_cache; /* a config override's response_cache.enable (1 or 0); -1: the zoo's */
} demo_zoo_pick;
int demo_zoo_register_picked(isv_server *srv, const demo_zoo_pick *pick);
/* The demo's model repository (repo.c): zoo.c's models can be unloaded and loaded again (with
 * a config override of "max_batch_size"); loads complete after load_delay_ms on the loop. */
int demo_repo_setup(isv_server *srv, uv_loop_t *loop, uint64_t load_delay_ms);
/* The demo's authorizer (auth.c): a bearer token read from token_file (NULL: none asked), a
 * model refused 403 (NULL: none), the one TLS client subject let in (NULL: any), decisions made on a thread delay_ms later (0: at once). 0 or
 * -1 (said on stderr). demo_auth_stop joins the deciding thread, once the server closed. */
int demo_auth_setup(isv_server *srv, const char *token_file, const char *forbid_model,
                    const char *identity, uint64_t delay_ms);
void demo_auth_stop(void);
/* The same authorizer on another server (--threads: one per loop). */
int demo_auth_attach(isv_server *srv);
/* --threads (threads.c): n more servers on n loops in n threads, in the first server's group
 * (opts carry it: the zoo's models are the group's), each with the routes, the authorizer
 * (with_auth), the repository (repo_delay_ms >= 0) and the Vertex routes (vertex_model not
 * NULL), listening on the first server's addresses (hosts[i], the bound ports[i]) with
 * SO_REUSEPORT. cfg is read before the call returns. 0, or -1 (said on stderr).
 * demo_threads_stop asks them to close (any thread); demo_threads_join waits for them. */
typedef struct demo_threads_cfg {
  const isv_options *opts;
  const char *const *hosts;
  const int *ports;
  size_t n_listen;
  int with_auth;
  int64_t repo_delay_ms;
  const char *vertex_model, *predict_route, *health_route;
  const char *openai_prefix; /* NULL: none (isv_server_set_openai_prefix) */
  const char *const *vertex_endpoints; /* --vertex-endpoint specs (demo_vertex_endpoints) */
  size_t n_vertex_endpoints;
  const isv_tls *tls; /* NULL: none; else listen with it on tls_host:tls_port after the rest */
  const char *tls_host;
  int tls_port;
} demo_threads_cfg;
int demo_threads_start(unsigned n, const demo_threads_cfg *cfg);
/* --vertex-endpoint ID=MODEL[:VERSION], each mapped on srv (isv_server_set_vertex_endpoint).
 * 0, or -1 (said on stderr). main.c. */
int demo_vertex_endpoints(isv_server *srv, const char *const *specs, size_t n);
/* A TLS reload (tls.c's SIGHUP): every other loop gives its listener number `index` a
 * configuration make() returns (one each; NULL: that loop keeps its own), on its own loop. */
void demo_threads_set_tls(isv_tls *(*make)(void), unsigned index);
void demo_threads_stop(void);
void demo_threads_join(void);
/* The demo's TLS listener (tls.c): listen with the certificate and key files (and client CAs),
 * as listener number `index`; SIGHUP reloads them. 0 or -1 (said on stderr). demo_tls_closed
 * lets go of the SIGHUP handle once the server closed. */
int demo_tls_listen(isv_server *srv, uv_loop_t *loop, const char *host, int port,
                    const char *cert, const char *key, const char *client_ca, int require,
                    unsigned index);
void demo_tls_closed(void);
/* The configuration demo_tls_listen listened with, for the other loops (--threads) to listen
 * with too; demo_tls_shared_done lets go of it once they did. */
const isv_tls *demo_tls_shared(void);
void demo_tls_shared_done(void);
/* srv's close callback ran: its loads still waiting complete without touching it (the last
 * server's close frees the catalogue). */
void demo_repo_closed(isv_server *srv);
/* The scheduler's models (called by demo_zoo_register). */
int demo_zoo_register_scheduling(isv_server *srv);
/* The demo's custom HTTP routes (routes.c): POST /custom/echo (the body uppercased),
 * POST /custom/sse?n=N[&delay_ms=D] (Server-Sent Events) and GET /custom/loop (`loop`, the
 * number of the loop that serves them). Called by demo_zoo_register (loop 0) and
 * demo_zoo_attach. */
int demo_routes_register(isv_server *srv, unsigned loop);
/* Triton's sequence and identity example models (zoo_triton.c; called by demo_zoo_register). */
int demo_zoo_register_triton(isv_server *srv);
/* The OpenAI-compatible endpoints' models (zoo_openai.c; called by demo_zoo_register), and
 * the pause tiny_lm makes before each word (--lm-delay-ms; default 0). */
int demo_zoo_register_openai(isv_server *srv);
void demo_openai_set_delay_ms(unsigned ms);
/* The ensembles and the model that calls models (zoo_ensemble.c; called by
 * demo_zoo_register, after the models they use). */
int demo_zoo_register_ensembles(isv_server *srv);
/* The grps models (called by demo_zoo_register). */
int demo_zoo_register_grps(isv_server *srv);
/* Complete req with an error whose message is printf-formatted; what isv_request_complete
 * returned (the backends' common way out). */
int demo_fail(isv_request *req, int code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
/* isv_request_send_response for a decoupled backend on a worker thread, waiting while the
 * client has not taken what was sent (ISV_EAGAIN: the library's backpressure) until
 * isv_request_on_writable says it can — or the request was cancelled (ISV_ECANCELED: complete
 * it). Never call it on the loop thread (an inline backend): that wait would stall the loop. */
int demo_send_response(isv_request *req);
/* slow's backend (zoo.c): sleeps INPUT0 ms on a worker thread, stops early when cancelled. */
int demo_slow_infer(isv_request *req, void *user);
/* cost's backend (zoo_sched.c): 200 µs + 1 µs per row, then OUTPUT0 = INPUT0 (FP32 [-1,4]). */
int demo_cost_infer(isv_request *req, void *user);
/* The response cache's and warmup's models (zoo_cache.c), with zoo.c's own (reloadable):
 * every one, or pick's (pick->seen hears each name). 0 or the code of the first failure. */
int demo_zoo_register_cache(isv_server *srv, const demo_zoo_pick *pick);

#ifdef __cplusplus
}
#endif

#endif
