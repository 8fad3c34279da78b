/* The demo's ensembles and models calling models (issue 29): Triton's `simple` wrapped in an
 * ensemble with a preprocessing chain, a fan-out/fan-in ensemble, and a backend that infers
 * other models itself (Triton's business logic scripting). All INT32/FP32 [-1,16], max batch 8
 * (the batch dimension passes through every step).
 *
 *   cast_fp32        IN INT32 -> OUT FP32 (the same values)
 *   scale            IN FP32 -> OUT = 2 x IN (on the worker threads)
 *   round_int32      IN FP32 -> OUT INT32 (rounded to nearest)
 *   square           IN FP32 -> OUT = IN * IN (on the worker threads)
 *   add_fp32         A, B FP32 -> SUM = A + B
 *   simple_ensemble  platform "ensemble": INPUT0, INPUT1 INT32 -> OUTPUT0, OUTPUT1 INT32:
 *                    INPUT0 -> cast_fp32 -> scale -> round_int32 -> simple's INPUT0, INPUT1 as
 *                    it is: OUTPUT0 = 2 INPUT0 + INPUT1, OUTPUT1 = 2 INPUT0 - INPUT1
 *   fan_ensemble     platform "ensemble": INPUT FP32 -> OUTPUT FP32 = 2 x + x^2: scale and
 *                    square both read INPUT (fan-out, at the same time), add_fp32 reads both
 *                    (fan-in)
 *   failing_ensemble INPUT0 INT32 [-1] -> `failing` -> `failing` -> OUTPUT0: its first step
 *                    fails, the error names it, the second never runs
 *   slow_fan_ensemble  INPUT0 INT32 [1] -> two `slow` steps at once (each sleeps INPUT0 ms) ->
 *                    OUTPUT0, OUTPUT1: a deadline or a cancel reaches both
 *   bls_simple       a POOL backend calling `simple` (blocking, isv_request_run), then
 *                    cast_fp32 on its OUTPUT0: INPUT0, INPUT1 INT32 -> SUM INT32 (simple's
 *                    OUTPUT0, by reference) and SUM_FP32 FP32 (cast_fp32's OUT, by reference) */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "zoo.h"

#define TRY(x)                                                                                     \
  do {                                                                                             \
    int rc_ = (x);                                                                                 \
    if (rc_ < 0) return rc_;                                                                       \
  } while (0)

static const int64_t DIMS[] = {16};

/* Output `out` shaped like input `in`, dt; its buffer in *data. */
static int out_like(isv_request *r, const char *in, const char *out, isv_datatype dt,
                    const isv_tensor **t, void **data) {
  *t = isv_request_input(r, in);
  size_t nd;
  const int64_t *shape = isv_tensor_shape(*t, &nd);
  return isv_request_alloc_output(r, out, dt, shape, nd, data);
}

static int cast_fp32_infer(isv_request *r, void *user) {
  (void)user;
  const isv_tensor *t;
  float *y;
  int rc = out_like(r, "IN", "OUT", ISV_FP32, &t, (void **)&y);
  if (rc) return rc;
  const int32_t *x = isv_tensor_data(t);
  for (size_t i = 0; i < isv_tensor_element_count(t); i++) y[i] = (float)x[i];
  return isv_request_complete(r, 0, NULL);
}

/* An FP32 function applied to every element: scale (2x) and square share this backend. */
typedef struct fp32_map {
  float (*f)(float);
} fp32_map;

static float twice_f(float x) { return 2 * x; }
static float square_f(float x) { return x * x; }
static const fp32_map scale_map = {twice_f}, square_map = {square_f};

static int map_fp32_infer(isv_request *r, void *user) {
  const fp32_map *m = user;
  const isv_tensor *t;
  float *y;
  int rc = out_like(r, "IN", "OUT", ISV_FP32, &t, (void **)&y);
  if (rc) return rc;
  const float *x = isv_tensor_data(t);
  for (size_t i = 0; i < isv_tensor_element_count(t); i++) y[i] = m->f(x[i]);
  return isv_request_complete(r, 0, NULL);
}

static int round_int32_infer(isv_request *r, void *user) {
  (void)user;
  const isv_tensor *t;
  int32_t *y;
  int rc = out_like(r, "IN", "OUT", ISV_INT32, &t, (void **)&y);
  if (rc) return rc;
  const float *x = isv_tensor_data(t);
  for (size_t i = 0; i < isv_tensor_element_count(t); i++) {
    if (!(fabsf(x[i]) < 2147483520.0f))
      return demo_fail(r, ISV_EBADREQ, "round_int32: element %zu (%g) does not fit INT32", i,
                       (double)x[i]);
    y[i] = (int32_t)lrintf(x[i]);
  }
  return isv_request_complete(r, 0, NULL);
}

static int add_fp32_infer(isv_request *r, void *user) {
  (void)user;
  const isv_tensor *a, *b = isv_request_input(r, "B");
  float *y;
  int rc = out_like(r, "A", "SUM", ISV_FP32, &a, (void **)&y);
  if (rc) return rc;
  if (isv_tensor_element_count(a) != isv_tensor_element_count(b))
    return demo_fail(r, ISV_EBADREQ, "add_fp32: A and B differ in size");
  const float *x = isv_tensor_data(a), *z = isv_tensor_data(b);
  for (size_t i = 0; i < isv_tensor_element_count(a); i++) y[i] = x[i] + z[i];
  return isv_request_complete(r, 0, NULL);
}

/* ---- bls_simple: a backend that runs other models ---------------------------------------- */

/* A nested request to `model` with one input `name` pointing at t (the parent's memory, or an
 * earlier nested request's: both outlive it). */
static int call(isv_request *r, const char *model, const char *name, const isv_tensor *t,
                const char *name2, const isv_tensor *t2, isv_request **out) {
  int rc = isv_request_new_nested(r, model, NULL, out);
  for (int k = 0; rc == 0 && k < 2; k++) {
    const isv_tensor *x = k ? t2 : t;
    if (x == NULL) continue;
    size_t nd;
    const int64_t *shape = isv_tensor_shape(x, &nd);
    rc = isv_request_add_input(*out, k ? name2 : name, isv_tensor_datatype(x), shape, nd,
                               isv_tensor_data(x), isv_tensor_byte_size(x), ISV_STATIC);
  }
  return rc == 0 ? isv_request_run(*out) : rc; /* this worker waits (a POOL model runs here) */
}

/* An output of r that is tensor t of a nested request, by reference (freed with r). */
static int pass(isv_request *r, const char *name, const isv_tensor *t) {
  size_t nd;
  const int64_t *shape = isv_tensor_shape(t, &nd);
  return isv_request_set_output(r, name, isv_tensor_datatype(t), shape, nd, isv_tensor_data(t),
                                isv_tensor_byte_size(t), ISV_STATIC);
}

static int bls_simple_infer(isv_request *r, void *user) {
  (void)user;
  isv_request *s = NULL, *c = NULL;
  int rc = call(r, "simple", "INPUT0", isv_request_input(r, "INPUT0"), "INPUT1",
                isv_request_input(r, "INPUT1"), &s);
  if (rc != 0)
    return demo_fail(r, rc, "bls_simple: model 'simple' failed: %s",
                     s ? isv_request_error_message(s) : isv_strerror(rc));
  const isv_tensor *sum = isv_request_output(s, "OUTPUT0");
  rc = call(r, "cast_fp32", "IN", sum, NULL, NULL, &c);
  if (rc != 0)
    return demo_fail(r, rc, "bls_simple: model 'cast_fp32' failed: %s",
                     c ? isv_request_error_message(c) : isv_strerror(rc));
  if ((rc = pass(r, "SUM", sum)) != 0 || (rc = pass(r, "SUM_FP32", isv_request_output(c, "OUT"))))
    return rc;
  return isv_request_complete(r, 0, NULL);
}

/* ---- registration ------------------------------------------------------------------------ */

typedef struct io {
  const char *name;
  isv_datatype dt;
} io;

static int add(isv_server *srv, const char *name, const io *in, size_t n_in, const io *out,
               size_t n_out, isv_exec_mode mode, int (*infer)(isv_request *, void *),
               const void *user) {
  isv_model_config *c;
  TRY(isv_model_config_new(name, &c));
  int rc = isv_model_config_set_max_batch(c, 8);
  for (size_t i = 0; rc == 0 && i < n_in; i++)
    rc = isv_model_config_add_input(c, in[i].name, in[i].dt, DIMS, 1);
  for (size_t i = 0; rc == 0 && i < n_out; i++)
    rc = isv_model_config_add_output(c, out[i].name, out[i].dt, DIMS, 1);
  if (rc == 0) rc = isv_model_config_set_exec_mode(c, mode);
  if (rc == 0) rc = isv_model_config_set_instances(c, mode == ISV_EXEC_POOL ? 4 : 1);
  isv_backend be = {.struct_size = sizeof be, .infer = infer};
  if (rc == 0) rc = isv_server_add_model(srv, c, "1", &be, (void *)user, NULL);
  isv_model_config_free(c);
  return rc;
}

/* One step: maps as {key, value} pairs, n of each. */
#define STEP(c, model, in, out)                                                                    \
  isv_model_config_add_ensemble_step(c, model, NULL, in, sizeof in / sizeof *in / 2, out,        \
                                     sizeof out / sizeof *out / 2)

static int simple_ensemble(isv_server *srv) {
  static const char *cast_in[] = {"IN", "INPUT0"}, *cast_out[] = {"OUT", "input0_fp32"};
  static const char *scale_in[] = {"IN", "input0_fp32"}, *scale_out[] = {"OUT", "input0_scaled"};
  static const char *round_in[] = {"IN", "input0_scaled"}, *round_out[] = {"OUT", "input0_pre"};
  static const char *simple_in[] = {"INPUT0", "input0_pre", "INPUT1", "INPUT1"};
  static const char *simple_out[] = {"OUTPUT0", "OUTPUT0", "OUTPUT1", "OUTPUT1"};
  isv_model_config *c;
  TRY(isv_model_config_new("simple_ensemble", &c));
  int rc = isv_model_config_set_max_batch(c, 8);
  if (rc == 0) rc = isv_model_config_add_input(c, "INPUT0", ISV_INT32, DIMS, 1);
  if (rc == 0) rc = isv_model_config_add_input(c, "INPUT1", ISV_INT32, DIMS, 1);
  if (rc == 0) rc = isv_model_config_add_output(c, "OUTPUT0", ISV_INT32, DIMS, 1);
  if (rc == 0) rc = isv_model_config_add_output(c, "OUTPUT1", ISV_INT32, DIMS, 1);
  if (rc == 0) rc = STEP(c, "cast_fp32", cast_in, cast_out);
  if (rc == 0) rc = STEP(c, "scale", scale_in, scale_out);
  if (rc == 0) rc = STEP(c, "round_int32", round_in, round_out);
  if (rc == 0) rc = STEP(c, "simple", simple_in, simple_out);
  if (rc == 0) rc = isv_server_add_ensemble(srv, c, "1", NULL);
  isv_model_config_free(c);
  return rc;
}

static int fan_ensemble(isv_server *srv) {
  static const char *scale_in[] = {"IN", "INPUT"}, *scale_out[] = {"OUT", "doubled"};
  static const char *square_in[] = {"IN", "INPUT"}, *square_out[] = {"OUT", "squared"};
  static const char *add_in[] = {"A", "doubled", "B", "squared"}, *add_out[] = {"SUM", "OUTPUT"};
  isv_model_config *c;
  TRY(isv_model_config_new("fan_ensemble", &c));
  int rc = isv_model_config_set_max_batch(c, 8);
  if (rc == 0) rc = isv_model_config_add_input(c, "INPUT", ISV_FP32, DIMS, 1);
  if (rc == 0) rc = isv_model_config_add_output(c, "OUTPUT", ISV_FP32, DIMS, 1);
  if (rc == 0) rc = STEP(c, "add_fp32", add_in, add_out); /* declared first: runs last */
  if (rc == 0) rc = STEP(c, "scale", scale_in, scale_out);
  if (rc == 0) rc = STEP(c, "square", square_in, square_out);
  if (rc == 0) rc = isv_server_add_ensemble(srv, c, "1", NULL);
  isv_model_config_free(c);
  return rc;
}

/* One-input ensembles over the zoo's INT32 models (INPUT0 -> ... -> OUTPUT0 [, OUTPUT1]). */
static int int32_ensemble(isv_server *srv, const char *name, int64_t dim, const char *model,
                          int fan) {
  static const char *first_in[] = {"INPUT0", "INPUT0"}, *first_out[] = {"OUTPUT0", "mid"};
  static const char *second_in[] = {"INPUT0", "mid"}, *second_out[] = {"OUTPUT0", "OUTPUT0"};
  static const char *a_out[] = {"OUTPUT0", "OUTPUT0"}, *b_out[] = {"OUTPUT0", "OUTPUT1"};
  isv_model_config *c;
  TRY(isv_model_config_new(name, &c));
  int rc = isv_model_config_add_input(c, "INPUT0", ISV_INT32, &dim, 1);
  if (rc == 0) rc = isv_model_config_add_output(c, "OUTPUT0", ISV_INT32, &dim, 1);
  if (rc == 0 && fan) rc = isv_model_config_add_output(c, "OUTPUT1", ISV_INT32, &dim, 1);
  if (rc == 0) rc = fan ? STEP(c, model, first_in, a_out) : STEP(c, model, first_in, first_out);
  if (rc == 0) rc = fan ? STEP(c, model, first_in, b_out) : STEP(c, model, second_in, second_out);
  if (rc == 0) rc = isv_server_add_ensemble(srv, c, "1", NULL);
  isv_model_config_free(c);
  return rc;
}

int demo_zoo_register_ensembles(isv_server *srv) {
  static const io in_i[] = {{"IN", ISV_INT32}}, in_f[] = {{"IN", ISV_FP32}};
  static const io out_i[] = {{"OUT", ISV_INT32}}, out_f[] = {{"OUT", ISV_FP32}};
  static const io ab[] = {{"A", ISV_FP32}, {"B", ISV_FP32}}, sum[] = {{"SUM", ISV_FP32}};
  static const io pair[] = {{"INPUT0", ISV_INT32}, {"INPUT1", ISV_INT32}};
  static const io bls_out[] = {{"SUM", ISV_INT32}, {"SUM_FP32", ISV_FP32}};
  TRY(add(srv, "cast_fp32", in_i, 1, out_f, 1, ISV_EXEC_INLINE, cast_fp32_infer, NULL));
  TRY(add(srv, "scale", in_f, 1, out_f, 1, ISV_EXEC_POOL, map_fp32_infer, &scale_map));
  TRY(add(srv, "round_int32", in_f, 1, out_i, 1, ISV_EXEC_INLINE, round_int32_infer, NULL));
  TRY(add(srv, "square", in_f, 1, out_f, 1, ISV_EXEC_POOL, map_fp32_infer, &square_map));
  TRY(add(srv, "add_fp32", ab, 2, sum, 1, ISV_EXEC_INLINE, add_fp32_infer, NULL));
  TRY(add(srv, "bls_simple", pair, 2, bls_out, 2, ISV_EXEC_POOL, bls_simple_infer, NULL));
  TRY(simple_ensemble(srv));
  TRY(int32_ensemble(srv, "failing_ensemble", -1, "failing", 0));
  TRY(int32_ensemble(srv, "slow_fan_ensemble", 1, "slow", 1));
  return fan_ensemble(srv);
}
