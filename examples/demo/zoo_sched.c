/* The zoo's models that show the scheduler (see zoo.h): dynamic batching, a stateful model
 * with sequence batching, decoupled models that stream, and a model with a short queue. Like
 * the rest of the zoo, every backend checks what it relies on and reads tensors through memcpy.
 */
#include "zoo.h"

#include <inttypes.h>
#include <stdatomic.h>
#include <sys/prctl.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- batched: y = 2x, and the size of the batch that served the request ------------------ */

static int batched_infer(isv_request *req, void *user) {
  (void)user;
  const isv_tensor *x = isv_request_input(req, "INPUT0");
  size_t nd;
  const int64_t *shape = isv_tensor_shape(x, &nd);
  if (x == NULL || isv_tensor_datatype(x) != ISV_FP32 || nd != 2)
    return demo_fail(req, ISV_EBADREQ, "INPUT0 must be FP32 [-1,4]");
  int64_t rows = shape[0];
  float *y;
  int32_t *bs;
  int64_t bshape[2] = {rows, 1};
  int rc = isv_request_alloc_output(req, "OUTPUT0", ISV_FP32, shape, nd, (void **)&y);
  if (rc == 0) rc = isv_request_alloc_output(req, "OUTPUT1", ISV_INT32, bshape, 2, (void **)&bs);
  if (rc != 0) return rc;
  const unsigned char *in = isv_tensor_data(x);
  for (size_t i = 0; i < isv_tensor_element_count(x); i++) {
    float v;
    memcpy(&v, in + i * sizeof v, sizeof v);
    y[i] = 2 * v;
  }
  for (int64_t i = 0; i < rows; i++) bs[i] = (int32_t)rows; /* the execution's rows */
  return isv_request_complete(req, 0, NULL);
}

/* ---- cost / cost_batched: a fixed price per call, for bench/batching.sh -------------------- */

/* 200 µs per call + 1 µs per row, waited like a GPU call is (the worker sleeps, the cores stay
 * free for the server and the load generator); then OUTPUT0 = INPUT0. */
int demo_cost_infer(isv_request *req, void *user) {
  (void)user;
  const isv_tensor *x = isv_request_input(req, "INPUT0");
  size_t nd;
  const int64_t *shape = isv_tensor_shape(x, &nd);
  if (x == NULL || isv_tensor_datatype(x) != ISV_FP32 || nd != 2)
    return demo_fail(req, ISV_EBADREQ, "INPUT0 must be FP32 [-1,4]");
  prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0); /* µs waits: no 50 µs of default slack */
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  long ns = t.tv_nsec + (200 + (long)shape[0]) * 1000;
  t.tv_sec += ns / 1000000000;
  t.tv_nsec = ns % 1000000000;
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, NULL) != 0) {
  }
  int rc = isv_request_set_output(req, "OUTPUT0", ISV_FP32, shape, nd, isv_tensor_data(x),
                                  isv_tensor_byte_size(x), ISV_STATIC);
  return rc ? rc : isv_request_complete(req, 0, NULL);
}

/* ---- prio: priorities and queue policies, observable ----------------------------------------
 * One instance; each call sleeps INPUT0 ms (as `slow`) and answers OUTPUT0 = its place in the
 * order the model's calls ran (1, 2, ...): a client sees which of its requests ran first. */
static atomic_int prio_calls;

static int prio_infer(isv_request *req, void *user) {
  (void)user;
  const isv_tensor *x = isv_request_input(req, "INPUT0");
  if (x == NULL || isv_tensor_datatype(x) != ISV_INT32 || isv_tensor_element_count(x) != 1)
    return demo_fail(req, ISV_EBADREQ, "INPUT0 must hold one INT32 (milliseconds)");
  int32_t ms;
  memcpy(&ms, isv_tensor_data(x), sizeof ms);
  int32_t *out;
  int64_t one = 1;
  int rc = isv_request_alloc_output(req, "OUTPUT0", ISV_INT32, &one, 1, (void **)&out);
  if (rc != 0) return rc;
  *out = atomic_fetch_add(&prio_calls, 1) + 1;
  for (int32_t left = ms > 10000 ? 10000 : ms; left > 0; left -= 10) {
    if (isv_request_is_cancelled(req))
      return isv_request_complete(req, ISV_ECANCELED, "cancelled by the client");
    uv_sleep(left < 10 ? (unsigned)left : 10);
  }
  return isv_request_complete(req, 0, NULL);
}

/* ---- accumulate: the running sum of a sequence -------------------------------------------- */

static int accumulate_infer(isv_request *req, void *user) {
  (void)user;
  void **slot = isv_request_sequence_state(req);
  const isv_tensor *x = isv_request_input(req, "INPUT0");
  if (slot == NULL) return demo_fail(req, ISV_EINTERNAL, "no sequence");
  if (x == NULL || isv_tensor_datatype(x) != ISV_INT32 || isv_tensor_element_count(x) != 1)
    return demo_fail(req, ISV_EBADREQ, "INPUT0 must hold one INT32");
  if (*slot == NULL && (*slot = calloc(1, sizeof(int64_t))) == NULL) return ISV_ENOMEM;
  int32_t v;
  memcpy(&v, isv_tensor_data(x), sizeof v);
  int64_t *sum = *slot;
  *sum += v;
  int64_t one = 1;
  int64_t *out;
  int rc = isv_request_alloc_output(req, "OUTPUT0", ISV_INT64, &one, 1, (void **)&out);
  if (rc != 0) return rc;
  *out = *sum;
  return isv_request_complete(req, 0, NULL);
}

static void accumulate_end(void *user, uint64_t id, const char *id_str, void *state,
                           isv_sequence_end_reason reason) {
  (void)user;
  (void)id;
  (void)id_str;
  (void)reason;
  free(state);
}

/* ---- repeat: one response per element of IN, then an empty completion --------------------- */

/* A pause between responses, from the request parameter "delay_ms" (0..1000). */
static unsigned delay_of(const isv_request *req) {
  const isv_param *p = isv_request_param(req, "delay_ms");
  if (p == NULL || p->type != ISV_PARAM_INT64 || p->v.i64 < 0) return 0;
  return p->v.i64 > 1000 ? 1000 : (unsigned)p->v.i64;
}

/* The responses of repeat and repeat_int32: OUT = IN[i], IDX = i for each of the n elements
 * at `in`, each after a pause — DELAY[i] ms when `delays` (UINT32 elements) is given, else
 * `delay` ms — then the completion. */
static int send_repeats(isv_request *req, const unsigned char *in, size_t n,
                        const unsigned char *delays, unsigned delay) {
  int64_t one = 1;
  for (size_t i = 0; i < n; i++) {
    if (isv_request_is_cancelled(req)) return isv_request_complete(req, ISV_ECANCELED, "cancelled");
    uint32_t ms = delay;
    if (delays) memcpy(&ms, delays + i * sizeof ms, sizeof ms);
    if (ms) uv_sleep(ms > 10000 ? 10000 : ms);
    int32_t *out;
    uint32_t *idx;
    int rc = isv_request_alloc_output(req, "OUT", ISV_INT32, &one, 1, (void **)&out);
    if (rc == 0) rc = isv_request_alloc_output(req, "IDX", ISV_UINT32, &one, 1, (void **)&idx);
    if (rc != 0) return rc;
    memcpy(out, in + i * sizeof *out, sizeof *out);
    *idx = (uint32_t)i;
    if ((rc = demo_send_response(req)) != 0)
      return rc == ISV_ECANCELED ? isv_request_complete(req, rc, "cancelled") : rc;
  }
  return isv_request_complete(req, 0, NULL);
}

static int repeat_infer(isv_request *req, void *user) {
  (void)user;
  const isv_tensor *x = isv_request_input(req, "IN");
  if (x == NULL || isv_tensor_datatype(x) != ISV_INT32)
    return demo_fail(req, ISV_EBADREQ, "IN must be INT32");
  return send_repeats(req, isv_tensor_data(x), isv_tensor_element_count(x), NULL, delay_of(req));
}

/* ---- repeat_int32: Triton's decoupled example (its "repeat" backend) ------------------------
 * IN INT32 [-1], DELAY UINT32 [-1] (same shape), WAIT UINT32 [1] -> one response per element of
 * IN: OUT = IN[i], IDX = i, sent DELAY[i] ms after the previous one. WAIT (when Triton's backend
 * releases the request) has nothing to release here: the instance stays taken to the end, and
 * four instances let requests overlap. */
static int repeat_int32_infer(isv_request *req, void *user) {
  (void)user;
  const isv_tensor *x = isv_request_input(req, "IN"), *d = isv_request_input(req, "DELAY");
  if (isv_tensor_element_count(x) != isv_tensor_element_count(d))
    return demo_fail(req, ISV_EBADREQ, "expected IN and DELAY shape to match, got %zu and %zu "
                     "elements", isv_tensor_element_count(x), isv_tensor_element_count(d));
  return send_repeats(req, isv_tensor_data(x), isv_tensor_element_count(x), isv_tensor_data(d),
                      0);
}

/* ---- tokens: text_input streamed back one word per response (for generate_stream) ---------- */

static int tokens_infer(isv_request *req, void *user) {
  (void)user;
  const isv_tensor *t = isv_request_input(req, "text_input");
  if (t == NULL || isv_tensor_datatype(t) != ISV_BYTES || isv_tensor_element_count(t) != 1)
    return demo_fail(req, ISV_EBADREQ, "text_input must be one BYTES element");
  const isv_bytes *text = isv_tensor_data(t);
  unsigned delay = delay_of(req);
  int64_t one = 1;
  size_t i = 0, n = text->len;
  while (i < n) {
    while (i < n && text->ptr[i] == ' ') i++;
    size_t start = i;
    while (i < n && text->ptr[i] != ' ') i++;
    if (i == start) break;
    if (isv_request_is_cancelled(req)) return isv_request_complete(req, ISV_ECANCELED, "cancelled");
    if (delay) uv_sleep(delay);
    isv_bytes word = {text->ptr + start, i - start}; /* the input lives as long as the request */
    if (word.len == 4 && memcmp(word.ptr, "FAIL", 4) == 0) /* for the tests: an error mid-stream */
      return demo_fail(req, ISV_EBACKEND, "asked to fail at byte %zu", start);
    int rc = isv_request_set_output(req, "text_output", ISV_BYTES, &one, 1, &word, 0,
                                    ISV_TRANSIENT);
    if (rc == 0) rc = demo_send_response(req);
    if (rc == ISV_ECANCELED) return isv_request_complete(req, rc, "cancelled");
    if (rc != 0) return rc;
  }
  return isv_request_complete(req, 0, NULL);
}

/* ---- registration ------------------------------------------------------------------------- */

typedef struct spec {
  const char *name;
  isv_datatype dt;
  int64_t shape[2];
  size_t ndim;
} spec;

static isv_model_config *config(const char *name, uint32_t max_batch, const spec *in, size_t nin,
                                const spec *out, size_t nout, isv_exec_mode mode,
                                uint32_t instances) {
  isv_model_config *c;
  if (isv_model_config_new(name, &c) != 0) return NULL;
  int rc = isv_model_config_set_max_batch(c, max_batch);
  for (size_t i = 0; rc == 0 && i < nin; i++)
    rc = isv_model_config_add_input(c, in[i].name, in[i].dt, in[i].shape, in[i].ndim);
  for (size_t i = 0; rc == 0 && i < nout; i++)
    rc = isv_model_config_add_output(c, out[i].name, out[i].dt, out[i].shape, out[i].ndim);
  if (rc == 0) rc = isv_model_config_set_exec_mode(c, mode);
  if (rc == 0) rc = isv_model_config_set_instances(c, instances);
  if (rc != 0) {
    isv_model_config_free(c);
    return NULL;
  }
  return c;
}

static int add(isv_server *srv, isv_model_config *c, int (*infer)(isv_request *, void *),
               void (*sequence_end)(void *, uint64_t, const char *, void *,
                                    isv_sequence_end_reason)) {
  isv_backend be;
  memset(&be, 0, sizeof be);
  be.struct_size = sizeof be;
  be.infer = infer;
  be.sequence_end = sequence_end;
  int rc = isv_server_add_model(srv, c, "1", &be, NULL, NULL);
  isv_model_config_free(c);
  return rc;
}

/* A setter on c failed before add() took it. */
static int dropped(isv_model_config *c, int rc) {
  isv_model_config_free(c);
  return rc;
}

int demo_zoo_register_scheduling(isv_server *srv) {
  static const spec b_in[] = {{"INPUT0", ISV_FP32, {4}, 1}};
  static const spec b_out[] = {{"OUTPUT0", ISV_FP32, {4}, 1}, {"OUTPUT1", ISV_INT32, {1}, 1}};
  static const spec a_in[] = {{"INPUT0", ISV_INT32, {1}, 1}};
  static const spec a_out[] = {{"OUTPUT0", ISV_INT64, {1}, 1}};
  static const spec r_in[] = {{"IN", ISV_INT32, {-1}, 1}};
  static const spec r_out[] = {{"OUT", ISV_INT32, {1}, 1}, {"IDX", ISV_UINT32, {1}, 1}};
  static const spec t_in[] = {{"text_input", ISV_BYTES, {1}, 1}};
  static const spec t_out[] = {{"text_output", ISV_BYTES, {1}, 1}};
  static const spec q_in[] = {{"INPUT0", ISV_INT32, {1}, 1}};
  static const spec q_out[] = {{"OUTPUT0", ISV_INT32, {1}, 1}};
  int rc;

  isv_model_config *c = config("batched", 32, b_in, 1, b_out, 2, ISV_EXEC_POOL, 1);
  if (c == NULL) return ISV_ENOMEM;
  if ((rc = isv_model_config_set_dynamic_batching(c, 2000, NULL, 0)) != 0) return dropped(c, rc);
  if ((rc = add(srv, c, batched_infer, NULL)) != 0) return rc;

  if ((c = config("accumulate", 0, a_in, 1, a_out, 1, ISV_EXEC_INLINE, 2)) == NULL)
    return ISV_ENOMEM;
  if ((rc = isv_model_config_set_sequence_batching(c, 10000000, 256)) != 0) return dropped(c, rc);
  if ((rc = add(srv, c, accumulate_infer, accumulate_end)) != 0) return rc;

  if ((c = config("repeat", 0, r_in, 1, r_out, 2, ISV_EXEC_POOL, 4)) == NULL) return ISV_ENOMEM;
  if ((rc = isv_model_config_set_decoupled(c, 1)) != 0) return dropped(c, rc);
  if ((rc = add(srv, c, repeat_infer, NULL)) != 0) return rc;

  static const spec ri_in[] = {{"IN", ISV_INT32, {-1}, 1}, {"DELAY", ISV_UINT32, {-1}, 1},
                               {"WAIT", ISV_UINT32, {1}, 1}};
  if ((c = config("repeat_int32", 0, ri_in, 3, r_out, 2, ISV_EXEC_POOL, 4)) == NULL)
    return ISV_ENOMEM;
  if ((rc = isv_model_config_set_decoupled(c, 1)) != 0) return dropped(c, rc);
  if ((rc = add(srv, c, repeat_int32_infer, NULL)) != 0) return rc;

  if ((c = config("tokens", 0, t_in, 1, t_out, 1, ISV_EXEC_POOL, 4)) == NULL) return ISV_ENOMEM;
  if ((rc = isv_model_config_set_decoupled(c, 1)) != 0) return dropped(c, rc);
  if ((rc = add(srv, c, tokens_infer, NULL)) != 0) return rc;

  /* the same fixed cost per call, one instance, without and with dynamic batching */
  static const spec c_out[] = {{"OUTPUT0", ISV_FP32, {4}, 1}};
  if ((c = config("cost", 32, b_in, 1, c_out, 1, ISV_EXEC_POOL, 1)) == NULL) return ISV_ENOMEM;
  if ((rc = add(srv, c, demo_cost_infer, NULL)) != 0) return rc;
  if ((c = config("cost_batched", 32, b_in, 1, c_out, 1, ISV_EXEC_POOL, 1)) == NULL)
    return ISV_ENOMEM;
  if ((rc = isv_model_config_set_dynamic_batching(c, 500, NULL, 0)) != 0) return dropped(c, rc);
  if ((rc = add(srv, c, demo_cost_infer, NULL)) != 0) return rc;

  /* three priority levels (2 by default): level 1 holds 2 waiting requests at most and ignores
   * a request's "timeout"; level 2 (the default policy) rejects a request at its "timeout";
   * level 3 delays it behind the others */
  if ((c = config("prio", 0, q_in, 1, q_out, 1, ISV_EXEC_POOL, 1)) == NULL) return ISV_ENOMEM;
  static const isv_queue_policy by_default = {.struct_size = sizeof(isv_queue_policy),
                                              .allow_timeout_override = 1};
  static const isv_queue_policy level1 = {.struct_size = sizeof(isv_queue_policy),
                                          .max_queue_size = 2};
  static const isv_queue_policy level3 = {.struct_size = sizeof(isv_queue_policy),
                                          .timeout_action = ISV_TIMEOUT_DELAY,
                                          .allow_timeout_override = 1};
  if ((rc = isv_model_config_set_priority_levels(c, 3, 2)) != 0 ||
      (rc = isv_model_config_set_queue_policy(c, 0, &by_default)) != 0 ||
      (rc = isv_model_config_set_queue_policy(c, 1, &level1)) != 0 ||
      (rc = isv_model_config_set_queue_policy(c, 3, &level3)) != 0)
    return dropped(c, rc);
  if ((rc = add(srv, c, prio_infer, NULL)) != 0) return rc;

  /* one instance and room for one waiting request: the third at once is refused */
  if ((c = config("queue1", 0, q_in, 1, q_out, 1, ISV_EXEC_POOL, 1)) == NULL) return ISV_ENOMEM;
  if ((rc = isv_model_config_set_max_queue(c, 1)) != 0) return dropped(c, rc);
  return add(srv, c, demo_slow_infer, NULL);
}
