/* inferserve-xgboost: an XGBoost model (the XGBoost C API) served by libinferserve — the backend
 * a host writes around a real runtime. One model, one input, one output:
 *
 *   features       FP32 [F]  per row (F: the booster's feature count; NaN = a missing value)
 *   probabilities  FP32 [C]  per row (C: what the booster predicts per row — the class
 *                            probabilities of multi:softprob, 1 for binary:logistic or a
 *                            regression)
 *
 * Batched: the scheduler's dynamic batcher gathers requests into [B, F] and the backend makes
 * ONE XGBoosterPredictFromDense call per batch, on the server's worker threads (prediction is
 * CPU work; the loop is the host's). With --labels the classification extension (V2
 * "classification" outputs, TF Serving :classify) names the classes.
 *
 *   inferserve-xgboost --model iris.json [--name iris] [--labels setosa,versicolor,virginica]
 *                      [--host 127.0.0.1] [--port 8000] [--max-batch 64] [--batch-delay-us 500]
 *                      [--instances 1]
 *
 * It prints "inferserve-xgboost serving NAME (F features, C outputs) on PORT" once listening
 * (--port 0: a free port, the one printed), and exits 0 on SIGINT or SIGTERM once drained. */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <inferserve.h>
#include <uv.h>
#include <xgboost/c_api.h>

#define MAX_LABELS 256

typedef struct model {
  BoosterHandle booster;
  size_t n_features, n_outputs;
} model;

static uv_loop_t loop;
static uv_signal_t sig_int, sig_term;
static isv_server *server;

/* One prediction over rows x [rows, n_features] (row-major FP32). 0 with *out (XGBoost's
 * thread-local buffer: valid until this thread's next call) and *per_row values per row, or -1
 * (XGBGetLastError says why). */
static int predict(const model *m, const float *x, size_t rows, const float **out,
                   size_t *per_row) {
  char values[256];
  /* the array interface (NumPy's, version 3): the request's own memory, not copied */
  snprintf(values, sizeof values,
           "{\"data\":[%" PRIuPTR ",true],\"shape\":[%zu,%zu],\"typestr\":\"<f4\",\"version\":3}",
           (uintptr_t)x, rows, m->n_features);
  static const char config[] = "{\"type\":0,\"training\":false,\"cache_id\":0,\"iteration_begin\":0,"
                               "\"iteration_end\":0,\"strict_shape\":false,\"missing\":NaN}";
  bst_ulong const *shape;
  bst_ulong dim;
  if (XGBoosterPredictFromDense(m->booster, values, config, NULL, &shape, &dim, out) != 0)
    return -1;
  size_t n = 1;
  for (bst_ulong d = 1; d < dim; d++) n *= (size_t)shape[d];
  if (dim == 0 || (size_t)shape[0] != rows) return -1;
  *per_row = n;
  return 0;
}

static int xgb_infer(isv_request *req, void *user) {
  const model *m = user;
  const isv_tensor *in = isv_request_input(req, "features");
  size_t ndim;
  const int64_t *shape = isv_tensor_shape(in, &ndim); /* [B, F]: checked by the library */
  size_t rows = (size_t)shape[0];
  const float *out;
  size_t per_row;
  if (predict(m, isv_tensor_data(in), rows, &out, &per_row) != 0)
    return isv_request_complete(req, ISV_EBACKEND, XGBGetLastError());
  if (per_row != m->n_outputs)
    return isv_request_complete(req, ISV_EBACKEND, "the booster's output changed shape");
  int64_t oshape[2] = {(int64_t)rows, (int64_t)m->n_outputs};
  float *y;
  int rc = isv_request_alloc_output(req, "probabilities", ISV_FP32, oshape, 2, (void **)&y);
  if (rc != 0) return isv_request_complete(req, rc, "cannot allocate the output");
  memcpy(y, out, rows * m->n_outputs * sizeof *y);
  return isv_request_complete(req, 0, NULL);
}

static int load(model *m, const char *path) {
  if (XGBoosterCreate(NULL, 0, &m->booster) != 0 || XGBoosterLoadModel(m->booster, path) != 0) {
    fprintf(stderr, "inferserve-xgboost: cannot load '%s': %s\n", path, XGBGetLastError());
    return -1;
  }
  bst_ulong nf;
  if (XGBoosterGetNumFeature(m->booster, &nf) != 0 || nf == 0) {
    fprintf(stderr, "inferserve-xgboost: '%s' has no features: %s\n", path, XGBGetLastError());
    return -1;
  }
  m->n_features = (size_t)nf;
  /* what one row gives: the output's width */
  float *row = calloc(m->n_features, sizeof *row);
  const float *out;
  int rc = row ? predict(m, row, 1, &out, &m->n_outputs) : -1;
  free(row);
  if (rc != 0) {
    fprintf(stderr, "inferserve-xgboost: a probe prediction failed: %s\n", XGBGetLastError());
    return -1;
  }
  return 0;
}

static size_t split_labels(char *list, const char **labels) {
  size_t n = 0;
  for (char *save = NULL, *t = strtok_r(list, ",", &save); t && n < MAX_LABELS;
       t = strtok_r(NULL, ",", &save))
    labels[n++] = t;
  return n;
}

static int serve(model *m, const char *name, char *labels_arg, const char *host, int port,
                 uint32_t max_batch, uint64_t delay_us, uint32_t instances) {
  int64_t f = (int64_t)m->n_features, c = (int64_t)m->n_outputs;
  isv_model_config *cfg;
  int rc = isv_model_config_new(name, &cfg);
  if (rc == 0) rc = isv_model_config_add_input(cfg, "features", ISV_FP32, &f, 1);
  if (rc == 0) rc = isv_model_config_add_output(cfg, "probabilities", ISV_FP32, &c, 1);
  if (rc == 0) rc = isv_model_config_set_platform(cfg, "xgboost");
  if (rc == 0) rc = isv_model_config_set_max_batch(cfg, max_batch);
  if (rc == 0) rc = isv_model_config_set_exec_mode(cfg, ISV_EXEC_POOL);
  if (rc == 0) rc = isv_model_config_set_instances(cfg, instances);
  if (rc == 0) rc = isv_model_config_set_dynamic_batching(cfg, delay_us, NULL, 0);
  if (rc == 0 && labels_arg) {
    const char *labels[MAX_LABELS];
    size_t n = split_labels(labels_arg, labels);
    if (n != m->n_outputs) {
      fprintf(stderr, "inferserve-xgboost: %zu labels for %zu outputs\n", n, m->n_outputs);
      isv_model_config_free(cfg);
      return -1;
    }
    rc = isv_model_config_set_labels(cfg, labels, n);
  }
  isv_backend be = {.struct_size = sizeof be, .infer = xgb_infer};
  if (rc == 0) rc = isv_server_add_model(server, cfg, "1", &be, m, NULL);
  isv_model_config_free(cfg);
  /* Vertex AI's custom-container contract: its routes, as AIP_* name them */
  const char *pr = getenv("AIP_PREDICT_ROUTE"), *hr = getenv("AIP_HEALTH_ROUTE");
  if (rc == 0)
    rc = isv_server_set_vertex_routes(server, name, pr && *pr ? pr : "/predict",
                                      hr && *hr ? hr : "/health");
  if (rc == 0) rc = isv_server_listen(server, host, port);
  if (rc != 0) {
    fprintf(stderr, "inferserve-xgboost: %s (%s)\n", isv_strerror(rc),
            isv_server_last_error(server));
    return -1;
  }
  printf("inferserve-xgboost serving %s (%zu features, %zu outputs) on %d\n", name,
         m->n_features, m->n_outputs, isv_server_bound_port(server, 0));
  fflush(stdout);
  return 0;
}

static void on_closed(isv_server *srv, void *data) {
  (void)srv;
  (void)data;
  uv_close((uv_handle_t *)&sig_int, NULL);
  uv_close((uv_handle_t *)&sig_term, NULL);
}

static void on_signal(uv_signal_t *s, int signum) {
  (void)s;
  (void)signum;
  uv_signal_stop(&sig_int);
  uv_signal_stop(&sig_term);
  isv_server_close(server, on_closed, NULL);
}

static int usage(void) {
  fprintf(stderr, "usage: inferserve-xgboost --model FILE [--name NAME] [--labels A,B,...] "
                  "[--host H] [--port N] [--max-batch N] [--batch-delay-us N] "
                  "[--instances N]\n");
  return 2;
}

static int number(const char *s, unsigned long long max, unsigned long long *out) {
  char *end;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno || end == s || *end || v > max) return -1;
  *out = v;
  return 0;
}

int main(int argc, char **argv) {
  const char *path = NULL, *name = "iris", *host = "127.0.0.1";
  char *labels = NULL;
  unsigned long long port = 8000, max_batch = 64, delay_us = 500, instances = 1;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (v == NULL) return usage();
    i++;
    if (strcmp(a, "--model") == 0) path = v;
    else if (strcmp(a, "--name") == 0) name = v;
    else if (strcmp(a, "--labels") == 0) labels = argv[i];
    else if (strcmp(a, "--host") == 0) host = v;
    else if ((strcmp(a, "--port") == 0 && number(v, 65535, &port) == 0) ||
             (strcmp(a, "--max-batch") == 0 && number(v, 1u << 20, &max_batch) == 0) ||
             (strcmp(a, "--batch-delay-us") == 0 && number(v, 10000000, &delay_us) == 0) ||
             (strcmp(a, "--instances") == 0 && number(v, 64, &instances) == 0 && instances > 0))
      continue;
    else return usage();
  }
  if (path == NULL) return usage();
  signal(SIGPIPE, SIG_IGN); /* a client that leaves mid-answer must not end the process */
  model m = {0};
  if (load(&m, path) != 0) return 1;
  uv_loop_init(&loop);
  if (isv_server_new(&loop, NULL, &server) != 0) return 1;
  if (serve(&m, name, labels, host, (int)port, (uint32_t)max_batch, delay_us,
            (uint32_t)instances) != 0)
    return 1;
  uv_signal_init(&loop, &sig_int);
  uv_signal_init(&loop, &sig_term);
  uv_signal_start(&sig_int, on_signal, SIGINT);
  uv_signal_start(&sig_term, on_signal, SIGTERM);
  uv_run(&loop, UV_RUN_DEFAULT);
  int rc = uv_loop_close(&loop) == 0 ? 0 : 1;
  XGBoosterFree(m.booster);
  return rc;
}
