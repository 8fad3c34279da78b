/* The response cache's and model warmup's demo models (called from zoo.c's own models, so that
 * the repository can unload and load them again: a load re-runs the warmup).
 *
 *   cost_cached   cost (zoo_sched.c: INPUT0 FP32 [-1,4] -> OUTPUT0 = INPUT0 after 200 µs + 1 µs
 *                 per row, one instance) with the response cache (the demo's cache:
 *                 --response-cache-bytes): an input it answered before is answered from the
 *                 cache. bench/cache.sh compares hit, miss and cost (no cache)
 *   warm          INPUT0 FP32 [-1,4] -> OUTPUT0 = INPUT0, sleeping INPUT0[0] ms when that is in
 *                 [1, 5000] (max batch 8, worker threads, two instances); its warmup — "cold"
 *                 (the given row [400,0,0,0], twice: 0.8 s LOADING), "zeros" (batch 4) and
 *                 "noise" (random) — makes it LOADING for most of a second after each load
 *   warm_broken   the same backend, failing on a negative INPUT0[0]; its warmup's sample
 *                 "negative" ([-1,0,0,0]) fails, so it stays UNAVAILABLE with the reason in the
 *                 repository index
 *   stream_echo   decoupled: INPUT0 FP32 [-1,4] -> one response OUTPUT0 = INPUT0, then an empty
 *                 completion; a load with the config override {"response_cache": {"enable":
 *                 true}} fails, as Triton refuses the cache for a decoupled model */
#include "zoo.h"

#include <string.h>

static int warm_infer(isv_request *req, void *user) {
  (void)user;
  const isv_tensor *x = isv_request_input(req, "INPUT0");
  size_t nd;
  const int64_t *shape = isv_tensor_shape(x, &nd);
  if (x == NULL || isv_tensor_datatype(x) != ISV_FP32 || nd != 2 || shape[0] < 1)
    return demo_fail(req, ISV_EBADREQ, "INPUT0 must be FP32 [-1,4]");
  const float *v = isv_tensor_data(x);
  if (v[0] < 0)
    return demo_fail(req, ISV_EBACKEND, "INPUT0[0] is negative (%g): this model cannot start",
                     (double)v[0]);
  if (v[0] >= 1 && v[0] <= 5000) uv_sleep((unsigned)v[0]);
  int rc = isv_request_set_output(req, "OUTPUT0", ISV_FP32, shape, nd, v, isv_tensor_byte_size(x),
                                  ISV_STATIC);
  return rc ? rc : isv_request_complete(req, 0, NULL);
}

static int stream_echo_infer(isv_request *req, void *user) {
  (void)user;
  const isv_tensor *x = isv_request_input(req, "INPUT0");
  size_t nd;
  const int64_t *shape = isv_tensor_shape(x, &nd);
  int rc = isv_request_set_output(req, "OUTPUT0", ISV_FP32, shape, nd, isv_tensor_data(x),
                                  isv_tensor_byte_size(x), ISV_STATIC);
  if (rc == 0) rc = demo_send_response(req);
  return isv_request_complete(req, rc, rc ? "the response could not be sent" : NULL);
}

/* Whether `name` is registered now (the repository's pick, or every model). */
static int wanted(const demo_zoo_pick *pick, const char *name) {
  if (pick == NULL) return 1;
  if (pick->seen) pick->seen(pick->user, name);
  return pick->name && strcmp(pick->name, name) == 0;
}

static isv_model_config *config(const char *name, uint32_t max_batch, isv_exec_mode mode,
                                uint32_t instances, const demo_zoo_pick *pick) {
  static const int64_t four[1] = {4};
  isv_model_config *c;
  if (isv_model_config_new(name, &c) != 0) return NULL;
  if (pick && pick->max_batch >= 0) max_batch = (uint32_t)pick->max_batch; /* an override */
  int rc = isv_model_config_set_max_batch(c, max_batch);
  if (rc == 0 && pick && pick->response_cache >= 0) /* an override, too */
    rc = isv_model_config_set_response_cache(c, pick->response_cache);
  if (rc == 0) rc = isv_model_config_add_input(c, "INPUT0", ISV_FP32, four, 1);
  if (rc == 0) rc = isv_model_config_add_output(c, "OUTPUT0", ISV_FP32, four, 1);
  if (rc == 0) rc = isv_model_config_set_exec_mode(c, mode);
  if (rc == 0) rc = isv_model_config_set_instances(c, instances);
  if (rc != 0) {
    isv_model_config_free(c);
    return NULL;
  }
  return c;
}

static int add(isv_server *srv, isv_model_config *c, int rc,
               int (*infer)(isv_request *, void *)) {
  if (rc == 0) {
    isv_backend be;
    memset(&be, 0, sizeof be);
    be.struct_size = sizeof be;
    be.infer = infer;
    rc = isv_server_add_model(srv, c, "1", &be, NULL, NULL);
  }
  isv_model_config_free(c);
  return rc;
}

/* A warmup sample of one INPUT0 row (Triton's model_warmup entry). */
static int sample(isv_model_config *c, const char *name, uint32_t batch, uint32_t count,
                  isv_warmup_fill fill, const float *row) {
  static const int64_t four[1] = {4};
  int rc = isv_model_config_add_warmup(c, name, batch, count);
  return rc ? rc : isv_model_config_add_warmup_input(c, name, "INPUT0", ISV_FP32, four, 1, fill,
                                                     row, row ? 4 * sizeof *row : 0);
}

int demo_zoo_register_cache(isv_server *srv, const demo_zoo_pick *pick) {
  static const float cold[4] = {400, 0, 0, 0}, negative[4] = {-1, 0, 0, 0};
  isv_model_config *c;
  int rc;
  if (wanted(pick, "cost_cached")) {
    if ((c = config("cost_cached", 32, ISV_EXEC_POOL, 1, pick)) == NULL) return ISV_ENOMEM;
    rc = pick && pick->response_cache >= 0 ? 0 : isv_model_config_set_response_cache(c, 1);
    if ((rc = add(srv, c, rc, demo_cost_infer)) != 0) return rc;
  }
  if (wanted(pick, "warm")) {
    if ((c = config("warm", 8, ISV_EXEC_POOL, 2, pick)) == NULL) return ISV_ENOMEM;
    rc = sample(c, "cold", 1, 2, ISV_WARMUP_DATA, cold);
    if (rc == 0) rc = sample(c, "zeros", 4, 1, ISV_WARMUP_ZERO, NULL);
    if (rc == 0) rc = sample(c, "noise", 1, 0, ISV_WARMUP_RANDOM, NULL);
    if ((rc = add(srv, c, rc, warm_infer)) != 0) return rc;
  }
  if (wanted(pick, "warm_broken")) {
    if ((c = config("warm_broken", 8, ISV_EXEC_POOL, 1, pick)) == NULL) return ISV_ENOMEM;
    rc = sample(c, "negative", 1, 1, ISV_WARMUP_DATA, negative);
    if ((rc = add(srv, c, rc, warm_infer)) != 0) return rc;
  }
  if (wanted(pick, "stream_echo")) {
    if ((c = config("stream_echo", 8, ISV_EXEC_POOL, 2, pick)) == NULL) return ISV_ENOMEM;
    rc = isv_model_config_set_decoupled(c, 1);
    if ((rc = add(srv, c, rc, stream_echo_infer)) != 0) return rc;
  }
  return 0;
}
