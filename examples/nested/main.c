/* examples/nested: models calling models (Triton's business logic scripting) and an ensemble,
 * in process — no sockets — on the host's own loop.
 *
 * Two plain models:
 *   to_kelvin  INLINE  x (FP32 [-1], degrees Celsius) -> y = x + 273.15
 *   mean       POOL    x (FP32 [-1]) -> y (FP32 [1]) = the mean of x
 * and four ways to chain them, each answering mean(to_kelvin(x)):
 *   kelvin_mean_pool      POOL backend: two blocking nested calls (isv_request_run); the second
 *                         reads the first's output in place, and the answer is the second's
 *                         output by reference (no copy anywhere)
 *   kelvin_mean_inline    INLINE backend: nested calls with callbacks (isv_request_submit) — the
 *                         inline model answers before submit returns, the pool model later, and
 *                         its callback (on the loop) completes the request
 *   kelvin_mean_async     ASYNC backend: a thread of its own blocks in nested calls
 *   kelvin_mean_ensemble  an ensemble (platform "ensemble"): to_kelvin -> mean, no code at all
 *
 * Usage: nested-example [--workers N] [--requests N]
 * Sends N requests (default 16) of the same input to each and checks every answer; with
 * --workers 1 every POOL backend blocks the only worker thread in its nested calls, and still
 * nothing deadlocks: the nested POOL model runs on the waiting thread, and a blocked worker
 * does not count as one (the pool starts another for queued work). Exit 0 when every answer
 * is right. */
#include <inferserve.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the plain models --------------------------------------------------------------------- */

static int to_kelvin(isv_request *r, void *user) {
  (void)user;
  const isv_tensor *x = isv_request_input(r, "x");
  size_t nd;
  const int64_t *shape = isv_tensor_shape(x, &nd);
  float *y;
  int rc = isv_request_alloc_output(r, "y", ISV_FP32, shape, nd, (void **)&y);
  if (rc) return rc;
  const float *v = isv_tensor_data(x);
  for (size_t i = 0; i < isv_tensor_element_count(x); i++) y[i] = v[i] + 273.15f;
  return isv_request_complete(r, 0, NULL);
}

static int mean(isv_request *r, void *user) {
  (void)user;
  const isv_tensor *x = isv_request_input(r, "x");
  size_t n = isv_tensor_element_count(x);
  if (n == 0) return isv_request_complete(r, ISV_EBADREQ, "mean of nothing");
  float *y;
  int64_t one = 1;
  int rc = isv_request_alloc_output(r, "y", ISV_FP32, &one, 1, (void **)&y);
  if (rc) return rc;
  double s = 0;
  const float *v = isv_tensor_data(x);
  for (size_t i = 0; i < n; i++) s += v[i];
  *y = (float)(s / (double)n);
  return isv_request_complete(r, 0, NULL);
}

/* ---- helpers for calling models ----------------------------------------------------------- */

/* A nested request of r to `model` whose x is tensor t — r's input or an earlier nested
 * request's output: both live as long as r, so ISV_STATIC (no copy) is right. */
static isv_request *nested(isv_request *r, const char *model, const isv_tensor *t) {
  isv_request *s;
  if (isv_request_new_nested(r, model, NULL, &s) != 0) return NULL;
  size_t nd;
  const int64_t *shape = isv_tensor_shape(t, &nd);
  if (isv_request_add_input(s, "x", ISV_FP32, shape, nd, isv_tensor_data(t),
                            isv_tensor_byte_size(t), ISV_STATIC) != 0)
    return NULL; /* s is freed with r */
  return s;
}

/* r answers with s's output y, by reference (s is freed with r, after r's answer went out). */
static int answer(isv_request *r, isv_request *s, int status) {
  if (status != 0) return isv_request_complete(r, status, isv_request_error_message(s));
  const isv_tensor *y = isv_request_output(s, "y");
  size_t nd;
  const int64_t *shape = isv_tensor_shape(y, &nd);
  int rc = isv_request_set_output(r, "y", ISV_FP32, shape, nd, isv_tensor_data(y),
                                  isv_tensor_byte_size(y), ISV_STATIC);
  return isv_request_complete(r, rc, NULL);
}

/* ---- kelvin_mean_pool: blocking, on a worker thread --------------------------------------- */

static int kelvin_mean_pool(isv_request *r, void *user) {
  (void)user;
  isv_request *k = nested(r, "to_kelvin", isv_request_input(r, "x"));
  int rc = k ? isv_request_run(k) : ISV_ENOMEM;
  if (rc != 0) return isv_request_complete(r, rc, k ? isv_request_error_message(k) : NULL);
  isv_request *m = nested(r, "mean", isv_request_output(k, "y"));
  return answer(r, m, m ? isv_request_run(m) : ISV_ENOMEM);
}

/* ---- kelvin_mean_inline: callbacks, on the loop ------------------------------------------- */

static void got_mean(isv_request *m, int status, void *data) { answer(data, m, status); }

static void got_kelvin(isv_request *k, int status, void *data) {
  isv_request *r = data;
  if (status != 0) {
    isv_request_complete(r, status, isv_request_error_message(k));
    return;
  }
  isv_request *m = nested(r, "mean", isv_request_output(k, "y"));
  int rc = m ? isv_request_submit(m, got_mean, r) : ISV_ENOMEM;
  if (rc != 0) isv_request_complete(r, rc, "could not call model 'mean'");
}

static int kelvin_mean_inline(isv_request *r, void *user) {
  (void)user;
  isv_request *k = nested(r, "to_kelvin", isv_request_input(r, "x"));
  /* to_kelvin is inline: got_kelvin runs before this returns; mean runs on the pool, and r
   * completes from got_mean — an inline backend with a nested request in flight may return
   * without completing */
  return k ? isv_request_submit(k, got_kelvin, r) : ISV_ENOMEM;
}

/* ---- kelvin_mean_async: a thread of its own ----------------------------------------------- */

static void async_work(void *arg) { kelvin_mean_pool(arg, NULL); }

typedef struct threads {
  uv_thread_t t[1024];
  int n;
} threads;

static int kelvin_mean_async(isv_request *r, void *user) {
  threads *th = user;
  if (th->n >= 1024) return ISV_EUNAVAIL;
  return uv_thread_create(&th->t[th->n++], async_work, r) == 0 ? 0 : ISV_EINTERNAL;
}

/* ---- the host ----------------------------------------------------------------------------- */

static int add(isv_server *srv, const char *name, int (*fn)(isv_request *, void *), void *user,
               isv_exec_mode mode) {
  isv_model_config *c;
  int64_t any = -1;
  int rc = isv_model_config_new(name, &c);
  if (rc) return rc;
  isv_model_config_add_input(c, "x", ISV_FP32, &any, 1);
  isv_model_config_add_output(c, "y", ISV_FP32, &any, 1);
  isv_model_config_set_exec_mode(c, mode);
  isv_model_config_set_instances(c, 64);
  isv_backend be = {.struct_size = sizeof be, .infer = fn};
  rc = isv_server_add_model(srv, c, "1", &be, user, NULL);
  isv_model_config_free(c);
  return rc;
}

static int add_ensemble(isv_server *srv) {
  isv_model_config *c;
  int64_t any = -1;
  int rc = isv_model_config_new("kelvin_mean_ensemble", &c);
  if (rc) return rc;
  isv_model_config_add_input(c, "x", ISV_FP32, &any, 1);
  isv_model_config_add_output(c, "y", ISV_FP32, &any, 1);
  const char *k_in[] = {"x", "x"}, *k_out[] = {"y", "kelvin"};
  const char *m_in[] = {"x", "kelvin"}, *m_out[] = {"y", "y"};
  rc = isv_model_config_add_ensemble_step(c, "to_kelvin", NULL, k_in, 1, k_out, 1);
  if (rc == 0) rc = isv_model_config_add_ensemble_step(c, "mean", NULL, m_in, 1, m_out, 1);
  if (rc == 0) rc = isv_server_add_ensemble(srv, c, "1", NULL);
  isv_model_config_free(c);
  return rc;
}

typedef struct tally {
  int done, wrong;
  float expect;
} tally;

static void on_done(isv_request *r, int status, void *data) {
  tally *t = data;
  const isv_tensor *y = isv_request_output(r, "y");
  float v = y ? *(const float *)isv_tensor_data(y) : NAN;
  t->done++;
  if (status != 0 || fabsf(v - t->expect) > 1e-3f) {
    t->wrong++;
    fprintf(stderr, "%s: status %d (%s), y %g\n", isv_request_model_name(r), status,
            isv_request_error_message(r), (double)v);
  }
  isv_request_free(r);
}

int main(int argc, char **argv) {
  unsigned workers = 2;
  int requests = 16;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "--workers") == 0) workers = (unsigned)atoi(argv[i + 1]);
    else if (strcmp(argv[i], "--requests") == 0) requests = atoi(argv[i + 1]);
  }
  if (requests < 1 || requests > 1000 || workers < 1) {
    fprintf(stderr, "usage: nested-example [--workers N] [--requests 1..1000]\n");
    return 2;
  }
  uv_loop_t loop;
  uv_loop_init(&loop);
  isv_options *o;
  isv_options_new(&o);
  isv_options_set_worker_threads(o, workers);
  isv_server *srv;
  if (isv_server_new(&loop, o, &srv) != 0) return 1;
  isv_options_free(o);
  static threads th;
  int rc = add(srv, "to_kelvin", to_kelvin, NULL, ISV_EXEC_INLINE);
  if (rc == 0) rc = add(srv, "mean", mean, NULL, ISV_EXEC_POOL);
  if (rc == 0) rc = add(srv, "kelvin_mean_pool", kelvin_mean_pool, NULL, ISV_EXEC_POOL);
  if (rc == 0) rc = add(srv, "kelvin_mean_inline", kelvin_mean_inline, NULL, ISV_EXEC_INLINE);
  if (rc == 0) rc = add(srv, "kelvin_mean_async", kelvin_mean_async, &th, ISV_EXEC_ASYNC);
  if (rc == 0) rc = add_ensemble(srv);
  if (rc != 0) {
    fprintf(stderr, "registering: %s\n", isv_server_last_error(srv));
    return 1;
  }
  static const float celsius[4] = {-10, 0, 20, 30}; /* mean 10 C = 283.15 K */
  const char *models[] = {"kelvin_mean_pool", "kelvin_mean_inline", "kelvin_mean_async",
                          "kelvin_mean_ensemble"};
  tally t[4];
  for (int m = 0; m < 4; m++) {
    t[m] = (tally){0, 0, 283.15f};
    for (int i = 0; i < requests; i++) {
      isv_request *r;
      int64_t n = 4;
      if (isv_request_new(srv, models[m], NULL, &r) != 0 ||
          isv_request_add_input(r, "x", ISV_FP32, &n, 1, celsius, sizeof celsius, ISV_STATIC) ||
          isv_server_infer(srv, r, on_done, &t[m]) != 0) {
        fprintf(stderr, "submitting: %s\n", isv_server_last_error(srv));
        return 1;
      }
    }
  }
  uv_run(&loop, UV_RUN_DEFAULT); /* until every request is answered */
  for (int i = 0; i < th.n; i++) uv_thread_join(&th.t[i]);
  int wrong = 0;
  for (int m = 0; m < 4; m++) {
    printf("%-22s %d answered, %d wrong (mean of %g..%g C = %.2f K)\n", models[m], t[m].done,
           t[m].wrong, (double)celsius[0], (double)celsius[3], (double)t[m].expect);
    wrong += t[m].wrong + (requests - t[m].done);
  }
  isv_server_close(srv, NULL, NULL);
  uv_run(&loop, UV_RUN_DEFAULT);
  uv_loop_close(&loop);
  return wrong ? 1 : 0;
}
