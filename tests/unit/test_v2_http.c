/* protocol/v2_http.c: KServe V2 over REST, through a router holding every route of the V2 front
 * end's descriptor, on a core with a few models — server metadata and its extensions, health,
 * model metadata and readiness (with and without a version), inference with a JSON body and
 * with the binary tensor data extension, Content-Type checks, and the order of errors (an
 * unknown model before a broken body). Exchanges are built by hand; their respond function
 * records the answer and releases its body (ASan checks that nothing leaks). */
#include "cmocka_prelude.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/buf.h"
#include "codec/zcoding.h"
#include "core/request.h"
#include "protocol/edge.h"
#include "protocol/v2.h"
#include "core/lifecycle.h"

static uv_loop_t loop;
static isv__core core;
static isv__router router;

/* ---- a fake exchange --------------------------------------------------------------------- */

typedef struct answer {
  int calls;
  int status;
  char type[64];
  char ihcl[32]; /* Inference-Header-Content-Length, "" when absent */
  char allow[64];
  char coding[32]; /* Content-Encoding, "" when absent */
  char *body; /* every part, then a NUL */
  size_t len;
} answer;

static answer got;

static int fake_respond(isv__exchange *ex, const isv__response *r) {
  (void)ex;
  got.calls++;
  got.status = r->status;
  snprintf(got.type, sizeof got.type, "%s", r->content_type ? r->content_type : "");
  for (size_t i = 0; i < r->n_headers; i++) {
    const isv__header *h = &r->headers[i];
    char *dst = h->name_len == 31 && memcmp(h->name, "Inference-Header-Content-Length", 31) == 0
                    ? got.ihcl
                    : h->name_len == 5 && memcmp(h->name, "Allow", 5) == 0 ? got.allow
                    : h->name_len == 16 && memcmp(h->name, "Content-Encoding", 16) == 0
                        ? got.coding
                        : NULL;
    if (dst) snprintf(dst, 32, "%.*s", (int)h->value_len, h->value);
  }
  size_t n = 0;
  for (size_t i = 0; i < r->n_parts; i++) n += r->parts[i].len;
  free(got.body);
  got.body = malloc(n + 1);
  assert_non_null(got.body);
  got.len = 0;
  for (size_t i = 0; i < r->n_parts; i++) {
    if (r->parts[i].len) memcpy(got.body + got.len, r->parts[i].base, r->parts[i].len);
    got.len += r->parts[i].len;
  }
  got.body[got.len] = '\0';
  if (r->release) r->release(r->release_ctx); /* the body was "written" */
  return 0;
}

/* One request: method, path, optional Content-Type and Inference-Header-Content-Length, and a
 * body of len bytes (copied: decoders unescape in place; an inference request takes it). Runs
 * the loop until it is answered. */
static int answered_inline; /* the last call was answered before dispatch returned */
static isv__header extra[2]; /* more request headers for the next calls */
static size_t n_extra;

static void call(isv__method method, const char *path, const char *ctype, const char *ihcl,
                 const char *body, size_t len) {
  static const char *names[] = {"OTHER", "GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS"};
  char path_copy[512];
  snprintf(path_copy, sizeof path_copy, "%s", path);
  isv__header headers[4];
  size_t nh = 0;
  for (size_t i = 0; i < n_extra; i++) headers[nh++] = extra[i];
  if (ctype) headers[nh++] = (isv__header){"content-type", 12, ctype, strlen(ctype)};
  if (ihcl)
    headers[nh++] = (isv__header){"Inference-Header-Content-Length", 31, ihcl, strlen(ihcl)};
  char *copy = len ? isv__malloc(NULL, len) : NULL; /* the request takes it: isv__free */
  if (len) memcpy(copy, body, len);
  isv__exchange ex = {0};
  ex.method = method;
  ex.method_name = names[method];
  ex.path = path_copy;
  ex.path_len = strlen(path_copy);
  ex.query = path_copy + ex.path_len;
  ex.headers = headers;
  ex.n_headers = nh;
  ex.body = copy;
  ex.body_len = len;
  ex.respond = fake_respond;
  free(got.body);
  memset(&got, 0, sizeof got);
  isv__edge_http(&router, &ex);
  answered_inline = got.calls;
  /* inline backends answer before dispatch returns; a pool backend needs the loop */
  for (int i = 0; got.calls == 0 && i < 1000; i++) uv_run(&loop, UV_RUN_ONCE);
  assert_int_equal(got.calls, 1); /* exactly once */
  isv__free(ex.body); /* the exchange's part of isv__exchange_free: NULL when a request took it */
}

static void get(const char *path) { call(ISV__M_GET, path, NULL, NULL, NULL, 0); }

static void post(const char *path, const char *ctype, const char *json) {
  call(ISV__M_POST, path, ctype, NULL, json, strlen(json));
}

static void expect(int status, const char *body) {
  if (got.status != status || strcmp(got.body, body) != 0)
    fail_msg("answered %d %s\n  want %d %s", got.status, got.body, status, body);
  assert_string_equal(got.type, "application/json");
}

/* ---- models ------------------------------------------------------------------------------ */

/* "add" (versions 1 and 2, batched): Y = A + version. "plain" (unbatched, on the pool):
 * y = 2x. "fails": a backend error. */
static int add_one(isv_request *r, void *u) {
  (void)u;
  const isv_tensor *a = isv_request_input(r, "A");
  size_t nd;
  const int64_t *shape = isv_tensor_shape(a, &nd);
  float *y;
  int rc = isv_request_alloc_output(r, "Y", ISV_FP32, shape, nd, (void **)&y);
  if (rc) return rc;
  const float *x = isv_tensor_data(a);
  float plus = (float)atoi(isv_request_model_version(r));
  for (size_t i = 0; i < isv_tensor_element_count(a); i++) y[i] = x[i] + plus;
  return isv_request_complete(r, 0, NULL);
}

static int twice(isv_request *r, void *u) {
  (void)u;
  const isv_tensor *x = isv_request_input(r, "x");
  int64_t shape[] = {3};
  int32_t *y;
  int rc = isv_request_alloc_output(r, "y", ISV_INT32, shape, 1, (void **)&y);
  if (rc) return rc;
  for (int i = 0; i < 3; i++) y[i] = 2 * ((const int32_t *)isv_tensor_data(x))[i];
  return isv_request_complete(r, 0, NULL);
}

/* "big" (inline): y = x + 1, any length */
static int plus_one(isv_request *r, void *u) {
  (void)u;
  const isv_tensor *x = isv_request_input(r, "x");
  size_t nd;
  const int64_t *shape = isv_tensor_shape(x, &nd);
  float *y;
  int rc = isv_request_alloc_output(r, "y", ISV_FP32, shape, nd, (void **)&y);
  if (rc) return rc;
  const float *in = isv_tensor_data(x);
  for (size_t i = 0; i < isv_tensor_element_count(x); i++) y[i] = in[i] + 1;
  return isv_request_complete(r, 0, NULL);
}

static int fails(isv_request *r, void *u) {
  (void)u;
  return isv_request_complete(r, ISV_EBACKEND, "the model \"fails\" failed");
}

static isv_model *add_v1, *add_v2;

static int setup(void **state) {
  (void)state;
  uv_loop_init(&loop);
  isv_options o;
  isv__options_defaults(&o);
  assert_int_equal(isv__core_init(&core, &loop, &o), 0);
  isv__router_init(&router, &core);
  size_t n = 0;
  for (const isv__http_route *r = isv__v2_frontend.routes; r->pattern; r++, n++)
    assert_int_equal(isv__router_add(&router, &isv__v2_frontend, r), 0);
  assert_true(n >= 9);

  int64_t four[] = {4}, three[] = {3};
  isv_model_config *c;
  isv_model_config_new("add", &c);
  isv_model_config_add_input(c, "A", ISV_FP32, four, 1);
  isv_model_config_add_output(c, "Y", ISV_FP32, four, 1);
  isv_model_config_add_output(c, "N", ISV_INT64, NULL, 0); /* a scalar per batch entry */
  isv_model_config_set_max_batch(c, 8);
  isv_model_config_set_platform(c, "onnxruntime_onnx");
  isv_backend be = {.struct_size = sizeof be, .infer = add_one};
  assert_int_equal(isv__registry_add(&core.reg, c, "1", &be, NULL, &add_v1), 0);
  assert_int_equal(isv__registry_add(&core.reg, c, "2", &be, NULL, &add_v2), 0);
  isv_model_config_free(c);

  isv_model_config_new("plain", &c);
  isv_model_config_add_input(c, "x", ISV_INT32, three, 1);
  isv_model_config_add_output(c, "y", ISV_INT32, three, 1);
  isv_model_config_set_exec_mode(c, ISV_EXEC_POOL);
  be.infer = twice;
  assert_int_equal(isv__registry_add(&core.reg, c, "1", &be, NULL, NULL), 0);
  isv_model_config_free(c);

  int64_t any[] = {-1};
  isv_model_config_new("big", &c);
  isv_model_config_add_input(c, "x", ISV_FP32, any, 1);
  isv_model_config_add_output(c, "y", ISV_FP32, any, 1);
  be.infer = plus_one;
  assert_int_equal(isv__registry_add(&core.reg, c, "1", &be, NULL, NULL), 0);
  isv_model_config_free(c);

  isv_model_config_new("fails", &c);
  be.infer = fails;
  assert_int_equal(isv__registry_add(&core.reg, c, "1", &be, NULL, NULL), 0);
  isv_model_config_free(c);
  return 0;
}

static int teardown(void **state) {
  (void)state;
  n_extra = 0;
  free(got.body);
  memset(&got, 0, sizeof got);
  isv__router_free(&router);
  isv__core_close(&core, NULL);
  uv_run(&loop, UV_RUN_DEFAULT);
  return uv_loop_close(&loop);
}

/* ---- server ------------------------------------------------------------------------------ */

static void no_trace(void *user, const isv_trace_timeline *t) {
  (void)user;
  (void)t;
}

static void server_metadata_names_the_server_and_its_extensions(void **state) {
  (void)state;
  core.shm->enabled = 1; /* isv_options_set_shared_memory: listed only when on */
  core.opts.trace = no_trace; /* "trace": only with a trace hook (isv_options_set_trace) */
  get("/v2");
  char want[512];
  size_t k = (size_t)snprintf(want, sizeof want, "{\"name\":\"libinferserve\",\"version\":\"%s\","
                              "\"extensions\":[", isv_version());
  for (size_t i = 0; i < isv__v2_n_extensions; i++)
    k += (size_t)snprintf(want + k, sizeof want - k, "%s\"%s\"", i ? "," : "",
                          isv__v2_extensions[i]);
  snprintf(want + k, sizeof want - k, "]}");
  expect(200, want);
  /* only what is implemented */
  assert_int_equal(isv__v2_n_extensions, 7);
  assert_non_null(strstr(got.body, "\"logging\""));
  assert_non_null(strstr(got.body, "\"trace\""));
  assert_non_null(strstr(got.body, "\"system_shared_memory\""));
  core.shm->enabled = 0;
  core.opts.trace = NULL;
  get("/v2");
  assert_null(strstr(got.body, "shared_memory"));
  assert_null(strstr(got.body, "\"trace\""));
  assert_non_null(strstr(got.body, "\"model_configuration\""));
  assert_non_null(strstr(got.body, "\"statistics\""));
  assert_non_null(strstr(got.body, "\"classification\""));
  assert_non_null(strstr(got.body, "\"binary_tensor_data\""));
  /* the host's name and version, escaped */
  snprintf(core.opts.server_name, sizeof core.opts.server_name, "my \"srv\"");
  snprintf(core.opts.server_version, sizeof core.opts.server_version, "9.8");
  get("/v2/"); /* one trailing slash is the same path */
  assert_int_equal(got.status, 200);
  const char prefix[] = "{\"name\":\"my \\\"srv\\\"\",\"version\":\"9.8\",\"extensions\":[";
  assert_int_equal(strncmp(got.body, prefix, strlen(prefix)), 0);
}

static void health_live_and_ready_follow_online(void **state) {
  (void)state;
  get("/v2/health/live");
  expect(200, "{\"live\":true}");
  get("/v2/health/ready");
  expect(200, "{\"ready\":true}");
  isv__core_set_online(&core, 0); /* draining: not ready, still live */
  get("/v2/health/ready");
  expect(503, "{\"ready\":false}");
  get("/v2/health/live");
  expect(200, "{\"live\":true}");
  isv__core_set_online(&core, 1);
  get("/v2/health/ready");
  expect(200, "{\"ready\":true}");
  call(ISV__M_HEAD, "/v2/health/ready", NULL, NULL, NULL, 0); /* HEAD is GET */
  assert_int_equal(got.status, 200);
  call(ISV__M_POST, "/v2/health/ready", NULL, NULL, "", 0);
  assert_int_equal(got.status, 405);
  assert_string_equal(got.allow, "GET");
}

/* ---- models ------------------------------------------------------------------------------ */

static const char add_metadata[] =
    "{\"name\":\"add\",\"versions\":[\"1\",\"2\"],\"platform\":\"onnxruntime_onnx\","
    "\"inputs\":[{\"name\":\"A\",\"datatype\":\"FP32\",\"shape\":[-1,4]}],"
    "\"outputs\":[{\"name\":\"Y\",\"datatype\":\"FP32\",\"shape\":[-1,4]},"
    "{\"name\":\"N\",\"datatype\":\"INT64\",\"shape\":[-1]}]}";

static void model_metadata_with_and_without_a_version(void **state) {
  (void)state;
  get("/v2/models/add"); /* batched: the batch dimension shows as -1 first */
  expect(200, add_metadata);
  get("/v2/models/add/versions/1"); /* every version is listed, whichever is named */
  expect(200, add_metadata);
  get("/v2/models/add/versions/2");
  expect(200, add_metadata);
  get("/v2/models/plain"); /* unbatched: the shape as declared */
  expect(200, "{\"name\":\"plain\",\"versions\":[\"1\"],\"platform\":\"custom\","
              "\"inputs\":[{\"name\":\"x\",\"datatype\":\"INT32\",\"shape\":[3]}],"
              "\"outputs\":[{\"name\":\"y\",\"datatype\":\"INT32\",\"shape\":[3]}]}");
  get("/v2/models/fails"); /* no inputs, no outputs */
  expect(200, "{\"name\":\"fails\",\"versions\":[\"1\"],\"platform\":\"custom\",\"inputs\":[],"
              "\"outputs\":[]}");
}

static void unknown_models_and_versions_are_named_in_the_404(void **state) {
  (void)state;
  get("/v2/models/nope");
  expect(404, "{\"error\":\"Request for unknown model: 'nope' is not found\"}");
  get("/v2/models/add/versions/7");
  expect(404, "{\"error\":\"Request for unknown model: 'add' version 7 is not found\"}");
  get("/v2/models/nope/versions/7/ready");
  expect(404, "{\"error\":\"Request for unknown model: 'nope' is not found\"}");
  get("/v2/models/add/versions/3/ready");
  expect(404, "{\"error\":\"Request for unknown model: 'add' version 3 is not found\"}");
  get("/v2/models/no%20pe%22"); /* named as decoded, escaped in JSON */
  expect(404, "{\"error\":\"Request for unknown model: 'no pe\\\"' is not found\"}");
  get("/v2/models/%FFbad"); /* not UTF-8: replaced, never sent raw */
  expect(404, "{\"error\":\"Request for unknown model: '?bad' is not found\"}");
  get("/v2/models/add/nothing");
  expect(404, "{\"error\":\"unknown path '/v2/models/add/nothing'\"}");
}

static void model_ready_for_ready_and_loading_versions(void **state) {
  (void)state;
  get("/v2/models/add/ready");
  expect(200, "{\"ready\":true}");
  get("/v2/models/add/versions/1/ready");
  expect(200, "{\"ready\":true}");
  add_v2->state = ISV_MODEL_LOADING;
  get("/v2/models/add/versions/2/ready");
  expect(503, "{\"ready\":false}");
  get("/v2/models/add/versions/1/ready");
  expect(200, "{\"ready\":true}");
  get("/v2/models/add/ready"); /* the default is the highest READY version: 1 */
  expect(200, "{\"ready\":true}");
  add_v1->state = ISV_MODEL_LOADING; /* none READY: the highest version, not ready */
  get("/v2/models/add/ready");
  expect(503, "{\"ready\":false}");
  get("/v2/models/add/versions/2"); /* metadata is there while loading */
  expect(200, add_metadata);
  add_v1->state = add_v2->state = ISV_MODEL_READY;
  isv__core_set_online(&core, 0); /* offline: nothing is reported ready */
  get("/v2/models/add/versions/1/ready");
  expect(503, "{\"ready\":false}");
  isv__core_set_online(&core, 1);
}

/* ---- inference --------------------------------------------------------------------------- */

static const char add_request[] =
    "{\"id\":\"r-1\",\"inputs\":[{\"name\":\"A\",\"datatype\":\"FP32\",\"shape\":[1,4],"
    "\"data\":[1,2.5,-3,0]}],\"outputs\":[{\"name\":\"Y\"}]}";

static void infer_with_a_json_body(void **state) {
  (void)state;
  post("/v2/models/add/infer", "application/json", add_request);
  expect(200, "{\"model_name\":\"add\",\"model_version\":\"2\",\"id\":\"r-1\",\"outputs\":["
              "{\"name\":\"Y\",\"datatype\":\"FP32\",\"shape\":[1,4],"
              "\"data\":[3.0,4.5,-1.0,2.0]}]}");
  assert_string_equal(got.ihcl, "");
  post("/v2/models/add/versions/1/infer", "application/json; charset=utf-8", add_request);
  expect(200, "{\"model_name\":\"add\",\"model_version\":\"1\",\"id\":\"r-1\",\"outputs\":["
              "{\"name\":\"Y\",\"datatype\":\"FP32\",\"shape\":[1,4],"
              "\"data\":[2.0,3.5,-2.0,1.0]}]}");
  post("/v2/models/add/infer", NULL, add_request); /* no Content-Type: JSON */
  assert_int_equal(got.status, 200);
  /* a backend on the thread pool: answered on a later turn of the loop */
  post("/v2/models/plain/infer", "application/json",
       "{\"inputs\":[{\"name\":\"x\",\"datatype\":\"INT32\",\"shape\":[3],\"data\":[1,-2,3]}]}");
  expect(200, "{\"model_name\":\"plain\",\"model_version\":\"1\",\"outputs\":[{\"name\":\"y\","
              "\"datatype\":\"INT32\",\"shape\":[3],\"data\":[2,-4,6]}]}");
  post("/v2/models/fails/infer", "application/json", "{\"inputs\":[]}");
  expect(500, "{\"error\":\"the model \\\"fails\\\" failed\"}");
  call(ISV__M_GET, "/v2/models/add/infer", NULL, NULL, NULL, 0);
  assert_int_equal(got.status, 405);
  assert_string_equal(got.allow, "POST");
}

/* A large JSON body is decoded, and a large response encoded, on a worker thread (the loop is
 * the host's): the answer comes on a later turn of the loop, and it is the same answer. */
static void large_json_is_decoded_and_encoded_off_the_loop(void **state) {
  (void)state;
  enum { N = 40000 }; /* "0.5," x N: 160 KB of JSON, 160 KB of output */
  isv__buf req, want;
  isv__buf_init(&req, NULL);
  isv__buf_init(&want, NULL);
  isv__buf_puts(&req, "{\"inputs\":[{\"name\":\"x\",\"datatype\":\"FP32\",\"shape\":[40000],"
                      "\"data\":[");
  isv__buf_puts(&want, "{\"model_name\":\"big\",\"model_version\":\"1\",\"outputs\":[{\"name\":"
                       "\"y\",\"datatype\":\"FP32\",\"shape\":[40000],\"data\":[");
  for (int i = 0; i < N; i++) {
    isv__buf_puts(&req, i ? ",0.5" : "0.5");
    isv__buf_puts(&want, i ? ",1.5" : "1.5");
  }
  isv__buf_puts(&req, "]}]}");
  isv__buf_puts(&want, "]}]}");
  isv__buf_putc(&want, '\0');
  call(ISV__M_POST, "/v2/models/big/infer", "application/json", NULL, req.data, req.len);
  assert_false(answered_inline);
  expect(200, want.data);
  /* the same model with a small body: decoded, run and answered before dispatch returns */
  post("/v2/models/big/infer", "application/json",
       "{\"inputs\":[{\"name\":\"x\",\"datatype\":\"FP32\",\"shape\":[2],\"data\":[1,2]}]}");
  assert_true(answered_inline);
  expect(200, "{\"model_name\":\"big\",\"model_version\":\"1\",\"outputs\":[{\"name\":\"y\","
              "\"datatype\":\"FP32\",\"shape\":[2],\"data\":[2.0,3.0]}]}");
  /* a large body that fails to decode: the error comes back the same way */
  req.data[req.len - 3] = 'x'; /* ...0.5x}]} */
  call(ISV__M_POST, "/v2/models/big/infer", "application/json", NULL, req.data, req.len);
  assert_false(answered_inline);
  assert_int_equal(got.status, 400);
  isv__buf_free(&req);
  isv__buf_free(&want);
}

static void infer_with_binary_tensor_data(void **state) {
  (void)state;
  const char json[] = "{\"inputs\":[{\"name\":\"A\",\"datatype\":\"FP32\",\"shape\":[1,4],"
                      "\"parameters\":{\"binary_data_size\":16}}],"
                      "\"outputs\":[{\"name\":\"Y\",\"parameters\":{\"binary_data\":true}}]}";
  const float a[4] = {1, 2, 3, 4.5f};
  char body[512];
  size_t jl = strlen(json);
  memcpy(body, json, jl);
  memcpy(body + jl, a, sizeof a);
  char hl[16];
  snprintf(hl, sizeof hl, "%zu", jl);
  for (int with_ctype = 0; with_ctype < 2; with_ctype++) {
    call(ISV__M_POST, "/v2/models/add/infer", with_ctype ? "application/octet-stream" : NULL, hl,
         body, jl + sizeof a);
    assert_int_equal(got.status, 200);
    assert_string_equal(got.type, "application/octet-stream");
    const char want_json[] = "{\"model_name\":\"add\",\"model_version\":\"2\",\"outputs\":["
                             "{\"name\":\"Y\",\"datatype\":\"FP32\",\"shape\":[1,4],"
                             "\"parameters\":{\"binary_data_size\":16}}]}";
    char want_hl[16];
    snprintf(want_hl, sizeof want_hl, "%zu", strlen(want_json));
    assert_string_equal(got.ihcl, want_hl); /* the JSON part's length */
    assert_int_equal(got.len, strlen(want_json) + 16);
    assert_memory_equal(got.body, want_json, strlen(want_json));
    const float y[4] = {3, 4, 5, 6.5f};
    assert_memory_equal(got.body + strlen(want_json), y, 16);
  }
  /* the binary output extension without binary inputs: JSON in, binary out */
  post("/v2/models/add/infer", "application/json",
       "{\"parameters\":{\"binary_data_output\":true},\"inputs\":[{\"name\":\"A\",\"datatype\":"
       "\"FP32\",\"shape\":[1,4],\"data\":[0,0,0,1]}]}");
  assert_int_equal(got.status, 200);
  assert_string_equal(got.type, "application/octet-stream");
  size_t jlen = (size_t)atoi(got.ihcl);
  assert_true(jlen > 0 && jlen + 16 == got.len);
  const float y[4] = {2, 2, 2, 3};
  assert_memory_equal(got.body + jlen, y, 16);
}

static void binary_header_errors(void **state) {
  (void)state;
  const char json[] = "{\"inputs\":[{\"name\":\"A\",\"datatype\":\"FP32\",\"shape\":[1,4],"
                      "\"parameters\":{\"binary_data_size\":16}}]}";
  char body[256] = {0};
  size_t jl = strlen(json);
  memcpy(body, json, jl);
  call(ISV__M_POST, "/v2/models/add/infer", "application/octet-stream", NULL, body, jl + 16);
  assert_int_equal(got.status, 400);
  assert_non_null(strstr(got.body, "needs the Inference-Header-Content-Length header"));
  call(ISV__M_POST, "/v2/models/add/infer", "application/octet-stream", "12x", body, jl + 16);
  assert_int_equal(got.status, 400);
  assert_string_equal(got.body, "{\"error\":\"Inference-Header-Content-Length '12x' is not a "
                                "byte count\"}");
  call(ISV__M_POST, "/v2/models/add/infer", "application/octet-stream", "", body, jl + 16);
  assert_int_equal(got.status, 400);
  call(ISV__M_POST, "/v2/models/add/infer", "application/octet-stream", "999", body, jl + 16);
  assert_int_equal(got.status, 400);
  char want[160];
  snprintf(want, sizeof want, "{\"error\":\"Inference-Header-Content-Length is 999 but the body "
           "has only %zu bytes\"}", jl + 16);
  assert_string_equal(got.body, want);
  assert_string_equal(got.type, "application/json");
}

static void unsupported_content_type_is_415(void **state) {
  (void)state;
  post("/v2/models/add/infer", "text/xml", add_request);
  expect(415, "{\"error\":\"unsupported Content-Type 'text/xml': send application/json, or "
              "application/octet-stream with Inference-Header-Content-Length\"}");
  post("/v2/models/add/infer", "application/jsonx", add_request); /* a prefix is not the type */
  assert_int_equal(got.status, 415);
  post("/v2/models/add/infer", "APPLICATION/JSON", add_request); /* media types ignore case */
  assert_int_equal(got.status, 200);
  post("/v2/models/add/infer", "text/plain", add_request); /* curl's habits are accepted */
  assert_int_equal(got.status, 200);
  post("/v2/models/add/infer", "application/x-www-form-urlencoded", add_request);
  assert_int_equal(got.status, 200);
}

/* One order for every protocol: unknown model (or version), then the body, then readiness. */
/* Triton's statistics: the exact JSON of a version with known numbers (what is not measured
 * reads 0), every version of a model, every model; "stats" is not taken for a model name. */
static void statistics_in_tritons_shape(void **state) {
  (void)state;
  isv__stats *s = &add_v2->stats;
  s->success[0] = 2;
  s->success_ns = 3000;
  s->failure[0] = 1;
  s->failure_ns = 500;
  s->exec_count = 1;
  s->inference_count = 2;
  s->queue_ns = 100;
  s->compute_infer_ns = 2000;
  s->last_inference_ms = 1700000000123;
  add_v2->stats.batch_execs[2] = 1;
  get("/v2/models/add/versions/2/stats");
  expect(200, "{\"model_stats\":[{\"name\":\"add\",\"version\":\"2\",\"last_inference\":"
              "1700000000123,\"inference_count\":2,\"execution_count\":1,\"inference_stats\":{"
              "\"success\":{\"count\":2,\"ns\":3000},\"fail\":{\"count\":1,\"ns\":500},"
              "\"queue\":{\"count\":2,\"ns\":100},\"compute_input\":{\"count\":2,\"ns\":0},"
              "\"compute_infer\":{\"count\":2,\"ns\":2000},\"compute_output\":{\"count\":2,"
              "\"ns\":0},\"cache_hit\":{\"count\":0,\"ns\":0},\"cache_miss\":{\"count\":0,"
              "\"ns\":0}},\"batch_stats\":[{\"batch_size\":2,\"compute_input\":{\"count\":1,"
              "\"ns\":0},\"compute_infer\":{\"count\":1,\"ns\":0},\"compute_output\":{"
              "\"count\":1,\"ns\":0}}],\"memory_usage\":[]}]}");
  get("/v2/models/add/stats");
  assert_int_equal(got.status, 200);
  assert_non_null(strstr(got.body, "\"version\":\"1\""));
  assert_non_null(strstr(got.body, "\"version\":\"2\""));
  get("/v2/models/stats");
  assert_int_equal(got.status, 200);
  assert_non_null(strstr(got.body, "\"name\":\"plain\""));
  assert_non_null(strstr(got.body, "\"name\":\"fails\""));
  get("/v2/models/nope/stats");
  expect(404, "{\"error\":\"Request for unknown model: 'nope' is not found\"}");
}

static void model_config_of_the_registration(void **state) {
  (void)state;
  get("/v2/models/add/config");
  expect(200, "{\"name\":\"add\",\"platform\":\"onnxruntime_onnx\",\"backend\":\"\","
              "\"max_batch_size\":8,\"input\":[{\"name\":\"A\",\"data_type\":\"TYPE_FP32\","
              "\"dims\":[4]}],\"output\":[{\"name\":\"Y\",\"data_type\":\"TYPE_FP32\","
              "\"dims\":[4]},{\"name\":\"N\",\"data_type\":\"TYPE_INT64\",\"dims\":[]}],"
              "\"instance_group\":[{\"name\":\"add\",\"kind\":\"KIND_CPU\",\"count\":1}],"
              "\"model_transaction_policy\":{\"decoupled\":false},\"model_warmup\":[],"
              "\"response_cache\":{\"enable\":false}}");
  get("/v2/models/plain/versions/9/config");
  expect(404, "{\"error\":\"Request for unknown model: 'plain' version 9 is not found\"}");
}

static void an_unknown_model_is_reported_before_a_broken_body(void **state) {
  (void)state;
  post("/v2/models/nope/infer", "application/json", "{broken");
  expect(404, "{\"error\":\"Request for unknown model: 'nope' is not found\"}");
  post("/v2/models/nope/infer", "text/xml", "<x/>"); /* before the Content-Type too */
  expect(404, "{\"error\":\"Request for unknown model: 'nope' is not found\"}");
  post("/v2/models/add/versions/9/infer", "application/json", "{broken");
  expect(404, "{\"error\":\"Request for unknown model: 'add' version 9 is not found\"}");
  call(ISV__M_POST, "/v2/models/nope/infer", "application/octet-stream", "1000", "{}", 2);
  expect(404, "{\"error\":\"Request for unknown model: 'nope' is not found\"}");
  post("/v2/models/add/infer", "application/json", "{broken"); /* a known model: the body */
  assert_int_equal(got.status, 400);
  assert_non_null(strstr(got.body, "offset"));
  add_v2->state = ISV_MODEL_LOADING;
  post("/v2/models/add/versions/2/infer", "application/json", "{broken"); /* body, then ready */
  assert_int_equal(got.status, 400);
  post("/v2/models/add/versions/2/infer", "application/json", add_request);
  assert_int_equal(got.status, 503);
  assert_non_null(strstr(got.body, "not ready"));
  add_v2->state = ISV_MODEL_READY;
  post("/v2/models/add/infer", "application/json", "{\"inputs\":[{\"name\":\"B\",\"datatype\":"
       "\"FP32\",\"shape\":[1],\"data\":[1]}]}"); /* validated against the model */
  assert_int_equal(got.status, 400);
  assert_non_null(strstr(got.body, "'B'"));
}

/* ---- Triton's raw binary request, and coded bodies ---------------------------------------- */

/* "text": n = the byte length of the one BYTES element t */
static int text_length(isv_request *r, void *u) {
  (void)u;
  const isv_bytes *t = isv_tensor_data(isv_request_input(r, "t"));
  int64_t shape[] = {1}, *n;
  int rc = isv_request_alloc_output(r, "n", ISV_INT64, shape, 1, (void **)&n);
  if (rc) return rc;
  n[0] = (int64_t)t[0].len;
  return isv_request_complete(r, 0, NULL);
}

static void raw_binary_request_is_the_models_one_input(void **state) {
  (void)state;
  const float a[4] = {1, 2, 3, 4};
  /* batched [4] FP32: the shape [1,4] */
  call(ISV__M_POST, "/v2/models/add/infer", "application/octet-stream", "0", (const char *)a,
       sizeof a);
  expect(200, "{\"model_name\":\"add\",\"model_version\":\"2\",\"outputs\":[{\"name\":\"Y\","
              "\"datatype\":\"FP32\",\"shape\":[1,4],\"data\":[3.0,4.0,5.0,6.0]}]}");
  /* whatever the Content-Type says */
  call(ISV__M_POST, "/v2/models/add/infer", "image/png", "0", (const char *)a, sizeof a);
  assert_int_equal(got.status, 200);
  /* a variable-size dimension is deduced from the byte count */
  const float five[5] = {0, 1, 2, 3, 4};
  call(ISV__M_POST, "/v2/models/big/infer", NULL, "0", (const char *)five, sizeof five);
  expect(200, "{\"model_name\":\"big\",\"model_version\":\"1\",\"outputs\":[{\"name\":\"y\","
              "\"datatype\":\"FP32\",\"shape\":[5],\"data\":[1.0,2.0,3.0,4.0,5.0]}]}");
  /* the byte count does not fit the shape */
  call(ISV__M_POST, "/v2/models/add/infer", NULL, "0", (const char *)a, 12);
  expect(400, "{\"error\":\"raw input 'A': the body has 12 bytes but shape [1,4] of FP32 needs "
              "16\"}");
  call(ISV__M_POST, "/v2/models/big/infer", NULL, "0", (const char *)five, 6);
  expect(400, "{\"error\":\"raw input 'x': 6 bytes are not a whole number of 4-byte rows of "
              "FP32\"}");
  /* BYTES [1]: the whole body is the one element (its length prefix is not sent) */
  int64_t one[] = {1};
  isv_model_config *c;
  isv_model_config_new("text", &c);
  isv_model_config_add_input(c, "t", ISV_BYTES, one, 1);
  isv_model_config_add_output(c, "n", ISV_INT64, one, 1);
  isv_backend be = {.struct_size = sizeof be, .infer = text_length};
  assert_int_equal(isv__registry_add(&core.reg, c, "1", &be, NULL, NULL), 0);
  isv_model_config_free(c);
  call(ISV__M_POST, "/v2/models/text/infer", NULL, "0", "h\0llo", 6);
  expect(200, "{\"model_name\":\"text\",\"model_version\":\"1\",\"outputs\":[{\"name\":\"n\","
              "\"datatype\":\"INT64\",\"shape\":[1],\"data\":[6]}]}");
  call(ISV__M_POST, "/v2/models/text/infer", NULL, "0", NULL, 0);
  expect(200, "{\"model_name\":\"text\",\"model_version\":\"1\",\"outputs\":[{\"name\":\"n\","
              "\"datatype\":\"INT64\",\"shape\":[1],\"data\":[0]}]}");
  /* a model without exactly one input */
  call(ISV__M_POST, "/v2/models/fails/infer", NULL, "0", "x", 1);
  expect(400, "{\"error\":\"a raw binary request (Inference-Header-Content-Length: 0) needs a "
              "model with exactly one input; model 'fails' has 0\"}");
}

/* got.body decoded with `coding` */
static char *decoded(isv__coding coding, size_t *len) {
  char *out, err[128];
  assert_int_equal(isv__inflate(coding, got.body, got.len, 1 << 20, NULL, &out, len, err,
                                sizeof err), 0);
  return out;
}

static void coded(isv__coding coding, const char *plain, size_t n, isv__buf *out) {
  isv__zpiece p = {plain, n};
  isv__buf_init(out, NULL);
  assert_int_equal(isv__deflate(coding, &p, 1, out), 0);
}

static void coded_request_and_response_bodies(void **state) {
  (void)state;
  const char json[] = "{\"inputs\":[{\"name\":\"A\",\"datatype\":\"FP32\",\"shape\":[1,4],"
                      "\"data\":[1,2,3,4]}]}";
  const char want[] = "{\"model_name\":\"add\",\"model_version\":\"2\",\"outputs\":[{\"name\":"
                      "\"Y\",\"datatype\":\"FP32\",\"shape\":[1,4],\"data\":[3.0,4.0,5.0,6.0]}]}";
  static const char *const names[] = {"gzip", "deflate"};
  for (int k = 0; k < 2; k++) {
    isv__coding c = k ? ISV__CODING_DEFLATE : ISV__CODING_GZIP;
    isv__buf z;
    coded(c, json, strlen(json), &z);
    extra[0] = (isv__header){"Content-Encoding", 16, names[k], strlen(names[k])};
    n_extra = 1;
    call(ISV__M_POST, "/v2/models/add/infer", "application/json", NULL, z.data, z.len);
    expect(200, want); /* decoded before the route saw it; the answer plain */
    assert_string_equal(got.coding, "");
    /* and the answer coded when the client accepts it */
    extra[1] = (isv__header){"Accept-Encoding", 15, names[k], strlen(names[k])};
    n_extra = 2;
    call(ISV__M_POST, "/v2/models/add/infer", "application/json", NULL, z.data, z.len);
    assert_int_equal(got.status, 200);
    assert_string_equal(got.coding, names[k]);
    size_t n;
    char *plain = decoded(c, &n);
    assert_int_equal(n, strlen(want));
    assert_memory_equal(plain, want, n);
    isv__free(plain);
    isv__buf_free(&z);
  }
  /* a small coded body that decodes past the loop's slice (ISV__INFLATE_LOOP_SLICE) is
   * decoded there on, on a worker thread: judged by what comes out, not by its coded size */
  size_t jn = strlen(json), pad = (size_t)1 << 20;
  char *padded = malloc(jn + pad);
  memcpy(padded, json, jn);
  memset(padded + jn, ' ', pad);
  isv__buf zb;
  coded(ISV__CODING_GZIP, padded, jn + pad, &zb);
  free(padded);
  assert_true(zb.len < 16384);
  extra[0] = (isv__header){"Content-Encoding", 16, "gzip", 4};
  n_extra = 1;
  call(ISV__M_POST, "/v2/models/add/infer", "application/json", NULL, zb.data, zb.len);
  expect(200, want);
  assert_int_equal(answered_inline, 0);
  isv__buf_free(&zb);
  /* binary outputs: the JSON and the tensors coded as one body; the header length is the
   * decoded JSON part's */
  extra[0] = (isv__header){"Accept-Encoding", 15, "br;q=1, gzip;q=0.5", 18};
  n_extra = 1;
  post("/v2/models/add/infer", "application/json",
       "{\"parameters\":{\"binary_data_output\":true},\"inputs\":[{\"name\":\"A\",\"datatype\":"
       "\"FP32\",\"shape\":[1,4],\"data\":[0,0,0,1]}]}");
  assert_int_equal(got.status, 200);
  assert_string_equal(got.coding, "gzip");
  assert_string_equal(got.type, "application/octet-stream");
  size_t n, jl = (size_t)atoi(got.ihcl);
  char *plain = decoded(ISV__CODING_GZIP, &n);
  const float y[4] = {2, 2, 2, 3};
  assert_true(jl > 0 && n >= jl + 16);
  assert_memory_equal(plain + jl, y, 16);
  assert_memory_equal(plain, "{\"model_name\":\"add\",", 20);
  isv__free(plain);
  /* identity refused (q=0), nothing else offered: plain */
  extra[0] = (isv__header){"Accept-Encoding", 15, "gzip;q=0, identity", 18};
  post("/v2/models/add/infer", "application/json", json);
  expect(200, want);
  assert_string_equal(got.coding, "");
}

static void coded_body_errors(void **state) {
  (void)state;
  const char json[] = "{\"inputs\":[{\"name\":\"A\",\"datatype\":\"FP32\",\"shape\":[1,4],"
                      "\"data\":[1,2,3,4]}]}";
  isv__buf z;
  coded(ISV__CODING_GZIP, json, strlen(json), &z);
  extra[0] = (isv__header){"Content-Encoding", 16, "gzip", 4};
  n_extra = 1;
  /* cut short */
  call(ISV__M_POST, "/v2/models/add/infer", "application/json", NULL, z.data, z.len - 5);
  expect(400, "{\"error\":\"Content-Encoding gzip: the body is not valid gzip data: the data "
              "ends before the end of the compressed stream\"}");
  /* not gzip at all */
  call(ISV__M_POST, "/v2/models/add/infer", "application/json", NULL, json, strlen(json));
  assert_int_equal(got.status, 400);
  assert_non_null(strstr(got.body, "Content-Encoding gzip: the body is not valid gzip data: "));
  /* bigger than max_body_bytes once decoded: 413, whatever the compressed size */
  size_t saved = core.opts.max_body_bytes;
  core.opts.max_body_bytes = 40;
  call(ISV__M_POST, "/v2/models/add/infer", "application/json", NULL, z.data, z.len);
  expect(413, "{\"error\":\"the decoded (Content-Encoding gzip) request body exceeds the "
              "server's limit of 40 bytes\"}");
  core.opts.max_body_bytes = saved;
  /* an unknown path still gets its 404 after decoding */
  call(ISV__M_POST, "/v2/nowhere", "application/json", NULL, z.data, z.len);
  assert_int_equal(got.status, 404);
  isv__buf_free(&z);
  /* a large coded body is decoded off the loop, then routed */
  isv__buf big;
  isv__buf_init(&big, NULL);
  isv__buf_puts(&big, "{\"inputs\":[{\"name\":\"x\",\"datatype\":\"FP32\",\"shape\":[60000],"
                      "\"data\":[");
  uint32_t x = 1;
  for (int i = 0; i < 60000; i++) { /* varied numbers: the deflated body stays large */
    char num[16];
    x = x * 1103515245u + 12345u;
    snprintf(num, sizeof num, "%s%u", i ? "," : "", (x >> 8) % 100000);
    isv__buf_puts(&big, num);
  }
  isv__buf_puts(&big, "]}]}");
  isv__zpiece p = {big.data, big.len};
  isv__buf_init(&z, NULL);
  assert_int_equal(isv__deflate(ISV__CODING_DEFLATE, &p, 1, &z), 0);
  extra[0] = (isv__header){"Content-Encoding", 16, "deflate", 7};
  assert_true(z.len >= (16u << 10)); /* content_coding.c's threshold for a worker thread */
  call(ISV__M_POST, "/v2/models/big/infer", "application/json", NULL, z.data, z.len);
  assert_int_equal(got.status, 200);
  assert_int_equal(answered_inline, 0); /* it went to a worker thread and came back */
  assert_non_null(strstr(got.body, "\"shape\":[60000]"));
  isv__buf_free(&z);
  isv__buf_free(&big);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(server_metadata_names_the_server_and_its_extensions, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(health_live_and_ready_follow_online, setup, teardown),
      cmocka_unit_test_setup_teardown(model_metadata_with_and_without_a_version, setup, teardown),
      cmocka_unit_test_setup_teardown(unknown_models_and_versions_are_named_in_the_404, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(model_ready_for_ready_and_loading_versions, setup, teardown),
      cmocka_unit_test_setup_teardown(infer_with_a_json_body, setup, teardown),
      cmocka_unit_test_setup_teardown(large_json_is_decoded_and_encoded_off_the_loop, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(infer_with_binary_tensor_data, setup, teardown),
      cmocka_unit_test_setup_teardown(raw_binary_request_is_the_models_one_input, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(coded_request_and_response_bodies, setup, teardown),
      cmocka_unit_test_setup_teardown(coded_body_errors, setup, teardown),
      cmocka_unit_test_setup_teardown(binary_header_errors, setup, teardown),
      cmocka_unit_test_setup_teardown(unsupported_content_type_is_415, setup, teardown),
      cmocka_unit_test_setup_teardown(statistics_in_tritons_shape, setup, teardown),
      cmocka_unit_test_setup_teardown(model_config_of_the_registration, setup, teardown),
      cmocka_unit_test_setup_teardown(an_unknown_model_is_reported_before_a_broken_body, setup,
                                      teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
