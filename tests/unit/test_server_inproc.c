/* The whole request path in process (no sockets): registry → validation → inline, pool and
 * cross-thread completion → post-processing → callback; the server's draining close; adopting
 * a host's stream. */
#include "cmocka_prelude.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "inferserve.h"
#include "server_fixture.h"

typedef sf_world world;

/* completes from another thread, after infer returned */
static void complete_later(void *arg) {
  uv_sleep(20);
  sf_twice(arg, NULL);
}
static uv_thread_t thread;
static int threaded(isv_request *r, void *u) {
  (void)u;
  return uv_thread_create(&thread, complete_later, r) == 0 ? 0 : ISV_EINTERNAL;
}

static int fails(isv_request *r, void *u) {
  (void)u;
  return isv_request_complete(r, ISV_EBACKEND, "intentional failure");
}
static int returns_error(isv_request *r, void *u) {
  (void)r;
  (void)u;
  return ISV_EUNAVAIL; /* without completing */
}
/* a habit from -errno code: "return -5" (-EIO) */
static int returns_errno(isv_request *r, void *u) {
  (void)r;
  (void)u;
  return -5;
}
static int completes_errno(isv_request *r, void *u) {
  (void)u;
  return isv_request_complete(r, -2, "no such file"); /* -ENOENT, with a message */
}
static int forgets_output(isv_request *r, void *u) {
  (void)u;
  return isv_request_complete(r, 0, NULL);
}
static void count_destroy(void *u) { ((world *)u)->destroyed++; }

static void add(world *w, const char *name, int (*fn)(isv_request *, void *), void *user,
                isv_exec_mode mode) {
  isv_model_config *c;
  isv_model_config_new(name, &c);
  int64_t any[] = {-1};
  isv_model_config_add_input(c, "x", ISV_FP32, any, 1);
  isv_model_config_add_output(c, "y", ISV_FP32, any, 1);
  isv_model_config_set_exec_mode(c, mode);
  const char *labels[] = {"a", "b", "c"};
  isv_model_config_set_labels(c, labels, 3);
  isv_backend be = {.struct_size = sizeof be, .infer = fn, .destroy = count_destroy};
  assert_int_equal(isv_server_add_model(w->srv, c, "1", &be, user ? user : w, NULL), 0);
  isv_model_config_free(c);
}

static int setup(void **state) {
  world *w = sf_world_new(NULL);
  add(w, "inline", sf_twice, NULL, ISV_EXEC_INLINE);
  add(w, "pool", sf_twice, NULL, ISV_EXEC_POOL);
  add(w, "fails", fails, NULL, ISV_EXEC_INLINE);
  add(w, "returns_error", returns_error, NULL, ISV_EXEC_POOL);
  add(w, "forgets", forgets_output, NULL, ISV_EXEC_INLINE);
  add(w, "errno", returns_errno, NULL, ISV_EXEC_INLINE);
  add(w, "errno_pool", returns_errno, NULL, ISV_EXEC_POOL);
  add(w, "completes_errno", completes_errno, NULL, ISV_EXEC_INLINE);
  *state = w;
  return 0;
}


typedef struct result {
  int calls;
  int status;
  char msg[256];
  float y[8];
  size_t n;
  char cls[3][32];
} result;

static void on_done(isv_request *r, int status, void *data) {
  result *res = data;
  res->calls++;
  res->status = status;
  snprintf(res->msg, sizeof res->msg, "%s", isv_request_error_message(r));
  const isv_tensor *y = isv_request_output(r, "y");
  if (y && isv_tensor_datatype(y) == ISV_FP32) {
    res->n = isv_tensor_element_count(y);
    memcpy(res->y, isv_tensor_data(y), res->n * sizeof(float));
  } else if (y && isv_tensor_datatype(y) == ISV_BYTES) {
    res->n = isv_tensor_element_count(y);
    const isv_bytes *b = isv_tensor_data(y);
    for (size_t i = 0; i < res->n && i < 3; i++)
      snprintf(res->cls[i], sizeof res->cls[i], "%.*s", (int)b[i].len, b[i].ptr);
  }
  isv_request_free(r);
}

static result run(world *w, const char *model, const float *x, int64_t n, uint32_t classify) {
  result res;
  memset(&res, 0, sizeof res);
  isv_request *r;
  assert_int_equal(isv_request_new(w->srv, model, NULL, &r), 0);
  assert_int_equal(isv_request_add_input(r, "x", ISV_FP32, &n, 1, x, (size_t)n * 4, ISV_TRANSIENT), 0);
  if (classify) isv_request_add_requested_output(r, "y", classify);
  assert_int_equal(isv_server_infer(w->srv, r, on_done, &res), 0);
  uv_run(&w->loop, UV_RUN_DEFAULT);
  assert_int_equal(res.calls, 1);
  return res;
}

static void inline_and_pool_give_the_same_answer(void **state) {
  world *w = *state;
  float x[] = {1, 2.5f, -3};
  result a = run(w, "inline", x, 3, 0), b = run(w, "pool", x, 3, 0);
  assert_int_equal(a.status, 0);
  assert_int_equal(b.status, 0);
  assert_int_equal(a.n, 3);
  assert_true(a.y[1] == 5.0f && a.y[2] == -6.0f);
  assert_memory_equal(a.y, b.y, sizeof a.y);
}

/* Completes, then tries to add to what it completed: each call refused ISV_ESTATE, nothing of
 * the answer changed (late[] records the codes; the backend runs on its own thread). */
static int late[4];
static void complete_then_write(void *arg) {
  isv_request *r = arg;
  sf_twice(r, NULL);
  float *y;
  int64_t one = 1;
  static const float v = 99;
  isv_param p = {.type = ISV_PARAM_INT64, .v.i64 = 1};
  late[0] = isv_request_alloc_output(r, "y", ISV_FP32, &one, 1, (void **)&y);
  late[1] = isv_request_set_output(r, "y", ISV_FP32, &one, 1, &v, sizeof v, ISV_TRANSIENT);
  late[2] = isv_request_set_response_param(r, "late", &p);
  late[3] = isv_request_complete(r, 0, NULL);
}
static int writes_late(isv_request *r, void *u) {
  (void)u;
  return uv_thread_create(&thread, complete_then_write, r) == 0 ? 0 : ISV_EINTERNAL;
}

static void nothing_is_added_after_completion(void **state) {
  world *w = *state;
  add(w, "late", writes_late, NULL, ISV_EXEC_ASYNC);
  float x[] = {4};
  result r = run(w, "late", x, 1, 0);
  uv_thread_join(&thread);
  assert_int_equal(r.status, 0);
  assert_int_equal(r.n, 1); /* the answer the backend completed with, and only it */
  assert_true(r.y[0] == 8.0f);
  for (int i = 0; i < 4; i++) assert_int_equal(late[i], ISV_ESTATE);
}

/* The loop-thread-only calls, made from another thread: refused ISV_ETHREAD, nothing done. */
static int foreign[6];
static void call_from_elsewhere(void *arg) {
  world *w = arg;
  isv_model_config *c;
  isv_model_config_new("elsewhere", &c);
  int64_t any[] = {-1};
  isv_model_config_add_input(c, "x", ISV_FP32, any, 1);
  isv_backend be = {.struct_size = sizeof be, .infer = sf_twice};
  isv_request *r = NULL;
  foreign[0] = isv_server_add_model(w->srv, c, "1", &be, NULL, NULL);
  foreign[1] = isv_server_remove_model(w->srv, "inline", NULL);
  foreign[2] = isv_server_listen(w->srv, "127.0.0.1", 0);
  foreign[3] = isv_request_new(w->srv, "inline", NULL, &r);
  foreign[4] = isv_server_set_default_model(w->srv, "inline");
  foreign[5] = isv_server_close(w->srv, sf_on_closed, w);
  isv_model_config_free(c);
}

static void loop_thread_calls_refuse_other_threads(void **state) {
  world *w = *state;
  uv_thread_t t;
  assert_int_equal(uv_thread_create(&t, call_from_elsewhere, w), 0);
  uv_thread_join(&t);
  for (int i = 0; i < 6; i++) assert_int_equal(foreign[i], ISV_ETHREAD);
  assert_string_equal(isv_strerror(ISV_ETHREAD),
                      "called from a thread other than the server's loop thread");
  isv_request *r;
  assert_int_equal(isv_request_new(w->srv, "elsewhere", NULL, &r), ISV_ENOTFOUND); /* not added */
  float x[] = {1};
  assert_int_equal(run(w, "inline", x, 1, 0).status, 0); /* not removed, not closed */
}

/* ISV_EXEC_INLINE, returning 0 without completing: answered at once, 500 naming the rule;
 * the completion that comes later anyway is refused. */
static isv_request *forgotten;
static int forgets_to_complete(isv_request *r, void *u) {
  (void)u;
  forgotten = r;
  return 0;
}

static void an_inline_backend_must_complete_before_it_returns(void **state) {
  world *w = *state;
  add(w, "forgetful", forgets_to_complete, NULL, ISV_EXEC_INLINE);
  float x[] = {1};
  result res;
  memset(&res, 0, sizeof res);
  isv_request *r;
  int64_t n = 1;
  assert_int_equal(isv_request_new(w->srv, "forgetful", NULL, &r), 0);
  assert_int_equal(isv_request_add_input(r, "x", ISV_FP32, &n, 1, x, 4, ISV_TRANSIENT), 0);
  assert_int_equal(isv_server_infer(w->srv, r, on_done, &res), 0);
  assert_int_equal(res.calls, 1); /* answered before infer returned to its caller */
  assert_int_equal(res.status, ISV_EBACKEND);
  assert_non_null(strstr(res.msg, "'forgetful'"));
  assert_non_null(strstr(res.msg, "ISV_EXEC_INLINE backend returned 0 without completing"));
  assert_int_equal(isv_request_complete(forgotten, 0, NULL), ISV_ESTATE);
}

static void completion_from_another_thread(void **state) {
  world *w = *state;
  add(w, "threaded", threaded, NULL, ISV_EXEC_ASYNC);
  float x[] = {4};
  result r = run(w, "threaded", x, 1, 0);
  uv_thread_join(&thread);
  assert_int_equal(r.status, 0);
  assert_true(r.y[0] == 8.0f);
}

/* isv_server_last_error describes the last call: every failure its own message, a success
 * none. */
static void the_last_error_is_the_last_calls(void **state) {
  world *w = *state;
  assert_int_equal(isv_server_listen(w->srv, "not-an-ip", 0), ISV_EINVAL);
  assert_string_equal(isv_server_last_error(w->srv), "'not-an-ip' is not an IPv4 or IPv6 address");
  assert_int_equal(isv_server_listen(w->srv, "127.0.0.1", 70000), ISV_EINVAL);
  assert_string_equal(isv_server_last_error(w->srv), "port 70000 is out of range (0 to 65535)");
  assert_int_equal(isv_server_remove_model(w->srv, "absent", NULL), ISV_ENOTFOUND);
  assert_string_equal(isv_server_last_error(w->srv), "no model 'absent' is registered");
  assert_int_equal(isv_server_set_label(w->srv, "inline", "stable", "9"), ISV_ENOTFOUND);
  assert_string_equal(isv_server_last_error(w->srv), "model 'inline' has no version '9'");
  assert_int_equal(isv_server_set_label(w->srv, "inline", "nolabel", NULL), ISV_ENOTFOUND);
  assert_string_equal(isv_server_last_error(w->srv), "model 'inline' has no label 'nolabel'");
  assert_int_equal(isv_server_set_model_state(w->srv, "inline", "1", (isv_model_state)42),
                   ISV_EINVAL);
  assert_string_equal(isv_server_last_error(w->srv), "set model state: not an isv_model_state");
  isv_model_config *c;
  isv_model_config_new("bad", &c);
  isv_model_config_set_dynamic_batching(c, 100, NULL, 0);
  isv_backend be = {.struct_size = sizeof be, .infer = sf_twice};
  assert_int_equal(isv_server_add_model(w->srv, c, "1", &be, NULL, NULL), ISV_EINVAL);
  assert_string_equal(isv_server_last_error(w->srv), "add model: dynamic batching needs max_batch > 0");
  assert_int_equal(isv_server_add_model(w->srv, c, "a/b", &be, NULL, NULL), ISV_EINVAL);
  assert_string_equal(isv_server_last_error(w->srv), "add model: a version may not contain '/'");
  isv_model_config_free(c);
  /* a success leaves nothing behind */
  assert_int_equal(isv_server_set_model_state(w->srv, "inline", "1", ISV_MODEL_READY), 0);
  assert_string_equal(isv_server_last_error(w->srv), "");
}

static void errors_reach_the_callback(void **state) {
  world *w = *state;
  float x[] = {1};
  result r = run(w, "fails", x, 1, 0);
  assert_int_equal(r.status, ISV_EBACKEND);
  assert_string_equal(r.msg, "intentional failure");
  r = run(w, "returns_error", x, 1, 0);
  assert_int_equal(r.status, ISV_EUNAVAIL);
  /* an unknown model is said by isv_request_new, not only in the callback */
  isv_request *req = (isv_request *)&w; /* not NULL: it must be reset */
  assert_int_equal(isv_request_new(w->srv, "nope", NULL, &req), ISV_ENOTFOUND);
  assert_null(req);
  assert_string_equal(isv_server_last_error(w->srv), "no model 'nope' is registered");
  assert_int_equal(isv_request_new(w->srv, "inline", "7", &req), ISV_ENOTFOUND);
  assert_string_equal(isv_server_last_error(w->srv), "model 'inline' has no version '7'");
  /* ... and a model removed after the request was made, in the callback */
  add(w, "gone", sf_twice, NULL, ISV_EXEC_INLINE);
  assert_int_equal(isv_request_new(w->srv, "gone", NULL, &req), 0);
  assert_string_equal(isv_server_last_error(w->srv), "");
  int64_t one = 1;
  isv_request_add_input(req, "x", ISV_FP32, &one, 1, x, 4, ISV_TRANSIENT);
  assert_int_equal(isv_server_remove_model(w->srv, "gone", NULL), 0);
  memset(&r, 0, sizeof r);
  assert_int_equal(isv_server_infer(w->srv, req, on_done, &r), 0);
  assert_int_equal(r.status, ISV_ENOTFOUND);
  assert_non_null(strstr(r.msg, "Request for unknown model: 'gone' is not found"));
  assert_int_equal(isv_server_set_model_state(w->srv, "inline", "1", ISV_MODEL_LOADING), 0);
  r = run(w, "inline", x, 1, 0);
  assert_int_equal(r.status, ISV_EUNAVAIL);
  assert_non_null(strstr(r.msg, "not ready"));
  isv_server_set_model_state(w->srv, "inline", "1", ISV_MODEL_READY);
  /* codes outside ISV_E* blame the backend (500), never the client: -5 used to answer 405 */
  r = run(w, "errno", x, 1, 0);
  assert_int_equal(r.status, ISV_EBACKEND);
  assert_string_equal(r.msg, "backend failed with code -5, which is not an ISV_E* code");
  r = run(w, "errno_pool", x, 1, 0);
  assert_int_equal(r.status, ISV_EBACKEND);
  r = run(w, "completes_errno", x, 1, 0);
  assert_int_equal(r.status, ISV_EBACKEND);
  assert_string_equal(r.msg, "no such file (backend code -2, not an ISV_E* code)");
  r = run(w, "forgets", x, 1, 0); /* asked for every output, got none: allowed, empty */
  assert_int_equal(r.status, 0);
  assert_int_equal(r.n, 0);
}

static void classification_top_k(void **state) {
  world *w = *state;
  float x[] = {0.5f, 1.65f, 0.1f};
  result r = run(w, "inline", x, 3, 2);
  assert_int_equal(r.status, 0);
  assert_int_equal(r.n, 2);
  assert_string_equal(r.cls[0], "3.3:1:b");
  assert_string_equal(r.cls[1], "1.0:0:a");
  r = run(w, "inline", x, 3, 10); /* k capped at the class count */
  assert_int_equal(r.n, 3);
  assert_string_equal(r.cls[2], "0.2:2:c");
}

static void removal_and_readiness(void **state) {
  world *w = *state;
  assert_true(isv_server_is_ready(w->srv));
  isv_server_set_online(w->srv, 0);
  assert_false(isv_server_is_ready(w->srv));
  isv_server_set_online(w->srv, 1);
  int before = w->destroyed;
  assert_int_equal(isv_server_remove_model(w->srv, "fails", NULL), 0);
  assert_int_equal(w->destroyed, before + 1);
  assert_int_equal(isv_server_remove_model(w->srv, "fails", NULL), ISV_ENOTFOUND);
  assert_int_equal(isv_server_set_label(w->srv, "inline", "stable", "9"), ISV_ENOTFOUND);
  assert_int_equal(isv_server_set_label(w->srv, "inline", "stable", "1"), 0);
}

/* A request can name its version by a label; an unknown label is said by the call. */
static void version_of(isv_request *r, int status, void *data) {
  snprintf(data, 16, "%d:%s", status, isv_request_model_version(r) ? isv_request_model_version(r)
                                                                     : "");
  isv_request_free(r);
}
static void a_request_names_its_version_by_a_label(void **state) {
  world *w = *state;
  isv_model_config *c;
  isv_model_config_new("inline", &c);
  int64_t any[] = {-1};
  isv_model_config_add_input(c, "x", ISV_FP32, any, 1);
  isv_model_config_add_output(c, "y", ISV_FP32, any, 1);
  isv_backend be = {.struct_size = sizeof be, .infer = sf_twice, .destroy = count_destroy};
  assert_int_equal(isv_server_add_model(w->srv, c, "2", &be, w, NULL), 0);
  isv_model_config_free(c);
  assert_int_equal(isv_server_set_label(w->srv, "inline", "canary", "2"), 0);
  assert_int_equal(isv_server_set_label(w->srv, "inline", "stable", "1"), 0);
  const char *labels[] = {"canary", "stable"}, *want[] = {"0:2", "0:1"};
  for (int i = 0; i < 2; i++) {
    isv_request *r;
    int64_t n = 1;
    float x = 1;
    char got[16] = "";
    assert_int_equal(isv_request_new_by_label(w->srv, "inline", labels[i], &r), 0);
    isv_request_add_input(r, "x", ISV_FP32, &n, 1, &x, 4, ISV_TRANSIENT);
    assert_int_equal(isv_server_infer(w->srv, r, version_of, got), 0);
    uv_run(&w->loop, UV_RUN_DEFAULT);
    assert_string_equal(got, want[i]);
  }
  isv_request *r = (isv_request *)1;
  assert_int_equal(isv_request_new_by_label(w->srv, "inline", "nope", &r), ISV_ENOTFOUND);
  assert_null(r);
  assert_non_null(strstr(isv_server_last_error(w->srv), "no label 'nope'"));
  assert_int_equal(isv_request_new_by_label(w->srv, "absent", "canary", &r), ISV_ENOTFOUND);
  assert_int_equal(isv_request_new_by_label(w->srv, "inline", NULL, &r), ISV_EINVAL);
}

/* Vertex's custom-container routes: refused when a route is taken or not a path, set once. */
static void vertex_routes_are_set_once(void **state) {
  world *w = *state;
  assert_int_equal(isv_server_set_vertex_routes(w->srv, NULL, "/predict", NULL), ISV_EINVAL);
  assert_int_equal(isv_server_set_vertex_routes(w->srv, "inline", "/predict", "/v2/health/live"),
                   ISV_EEXIST); /* a built-in route */
  assert_non_null(strstr(isv_server_last_error(w->srv), "already served"));
  assert_int_equal(isv_server_set_vertex_routes(w->srv, "inline", "no-slash", NULL), ISV_EINVAL);
  assert_int_equal(isv_server_set_vertex_routes(w->srv, "inline", "/predict", "/health"), 0);
  assert_int_equal(isv_server_set_vertex_routes(w->srv, "pool", "/p2", NULL), ISV_ESTATE);
}

/* The OpenAI endpoints under a prefix of the host's: refused where TF Serving's /v1/models is
 * (EEXIST, saying what to turn off), served once TF Serving is off; once per server. */
static void a_server_with(const char *off, uv_loop_t *loop, isv_server **srv) {
  isv_options *o;
  isv_options_new(&o);
  if (off) isv_options_set_protocol(o, off, 0);
  assert_int_equal(isv_server_new(loop, o, srv), 0);
  isv_options_free(o);
}

static void openai_prefix_rule(void **state) {
  world *w = *state;
  assert_int_equal(isv_server_set_openai_prefix(w->srv, "/v1"), ISV_EEXIST);
  assert_non_null(strstr(isv_server_last_error(w->srv), "turn the \"tfserving\" protocol off"));
  static const char *const bad[] = {NULL, "", "/", "v1", "/v1/", "/a//b", "/{x}", "/a:b"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
    assert_int_equal(isv_server_set_openai_prefix(w->srv, bad[i]), ISV_EINVAL);
  assert_int_equal(isv_server_set_openai_prefix(w->srv, "/v2"), ISV_EEXIST); /* V2's /v2/models */
  assert_int_equal(isv_server_set_openai_prefix(w->srv, "/api/openai"), 0);  /* free */
  assert_int_equal(isv_server_set_openai_prefix(w->srv, "/other"), ISV_ESTATE);
  assert_non_null(strstr(isv_server_last_error(w->srv), "already set ('/api/openai')"));

  uv_loop_t loop;
  uv_loop_init(&loop);
  isv_server *srv;
  a_server_with("tfserving", &loop, &srv);
  assert_int_equal(isv_server_set_openai_prefix(srv, "/v1"), 0);
  isv_server_close(srv, NULL, NULL);
  a_server_with("openai", &loop, &srv);
  assert_int_equal(isv_server_set_openai_prefix(srv, "/v1"), ISV_ESTATE);
  assert_non_null(strstr(isv_server_last_error(srv), "protocol is off"));
  isv_server_close(srv, NULL, NULL);
  uv_run(&loop, UV_RUN_DEFAULT);
  assert_int_equal(uv_loop_close(&loop), 0);
}

static int route_noop(isv_http_request *req, void *user) {
  (void)user;
  return isv_http_respond(req, 204, NULL, NULL, 0, ISV_STATIC);
}

static int add_route(world *w, const char *method, const char *path) {
  isv_route r = {.struct_size = sizeof r, .method = method, .path = path, .handler = route_noop};
  return isv_server_add_route(w->srv, &r);
}

/* A custom route may not take a path a route already served answers, in either direction; its
 * model is invisible to clients and to the host's model calls. */
static void custom_routes_never_shadow(void **state) {
  world *w = *state;
  assert_int_equal(add_route(w, "POST", "/v2"), ISV_EEXIST); /* built-ins under it */
  assert_non_null(strstr(isv_server_last_error(w->srv), "already served"));
  assert_int_equal(add_route(w, "POST", "/v2/models/x"), ISV_EEXIST);         /* {model} */
  assert_int_equal(add_route(w, "POST", "/v2/models/x/infer/more"), 0);       /* nothing there */
  assert_int_equal(add_route(w, "GET", "/grps/v1/health"), ISV_EEXIST);
  assert_int_equal(add_route(w, "POST", "/grps/v1/health"), 0); /* its routes are GET only */
  assert_int_equal(add_route(w, "POST", "/v1/chat/completions"), 0); /* beside TF Serving's */
  assert_int_equal(add_route(w, "POST", "/v1/chat/completions"), ISV_EEXIST);
  assert_int_equal(add_route(w, NULL, "/v1/chat/completions/x"), ISV_EEXIST); /* under it */
  assert_int_equal(add_route(w, NULL, "/v1/chat"), ISV_EEXIST);               /* over it */
  assert_int_equal(add_route(w, "GET", "/v1/chat/completions"), 0); /* another method */
  static const char *const bad[] = {"/", "x", "/a/", "/a/{b}", "/a?b", ""};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
    assert_int_equal(add_route(w, "POST", bad[i]), ISV_EINVAL);
  assert_int_equal(add_route(w, "PATCH", "/p"), ISV_EINVAL);
  isv_route r = {.struct_size = sizeof r, .path = "/nohandler"};
  assert_int_equal(isv_server_add_route(w->srv, &r), ISV_EINVAL);
  r.handler = route_noop;
  r.struct_size = 8;
  assert_int_equal(isv_server_add_route(w->srv, &r), ISV_EINVAL);
  /* the route's model: no client or host call finds it, and its name is reserved */
  isv_request *req;
  assert_int_equal(isv_request_new(w->srv, "@route POST /v1/chat/completions", NULL, &req),
                   ISV_ENOTFOUND);
  assert_int_equal(isv_server_remove_model(w->srv, "@route POST /v1/chat/completions", NULL),
                   ISV_ENOTFOUND);
  isv_model_config *c;
  assert_int_equal(isv_model_config_new("@mine", &c), 0);
  isv_backend be = {.struct_size = sizeof be, .infer = sf_twice};
  assert_int_equal(isv_server_add_model(w->srv, c, "1", &be, NULL, NULL), ISV_EINVAL);
  assert_non_null(strstr(isv_server_last_error(w->srv), "reserved"));
  isv_model_config_free(c);
}

static void close_drains_in_flight_requests(void **state) {
  world *w = *state;
  add(w, "threaded", threaded, NULL, ISV_EXEC_ASYNC);
  result res;
  memset(&res, 0, sizeof res);
  isv_request *r;
  int64_t n = 1;
  float x = 3;
  isv_request_new(w->srv, "threaded", NULL, &r);
  isv_request_add_input(r, "x", ISV_FP32, &n, 1, &x, 4, ISV_TRANSIENT);
  assert_int_equal(isv_server_infer(w->srv, r, on_done, &res), 0);
  assert_int_equal(isv_server_close(w->srv, sf_on_closed, w), 0);
  assert_int_equal(isv_server_close(w->srv, sf_on_closed, w), ISV_ESTATE);
  uv_run(&w->loop, UV_RUN_DEFAULT);
  uv_thread_join(&thread);
  assert_int_equal(res.calls, 1);
  assert_int_equal(res.status, 0);
  assert_true(res.y[0] == 6.0f);
  assert_true(w->closed);
  assert_int_equal(w->destroyed, 9); /* every model's destroy ran */
  assert_int_equal(uv_loop_close(&w->loop), 0);
  free(w);
  *state = NULL;
}

/* ---- close with backends that never complete: abandoned after the drain deadline ---- */

/* A pool backend stuck in infer until the test lets it go, and an async one that keeps its
 * request for a thread of the host that completes it much later. Both go on using their
 * requests after the server's close callback ran: ASan checks the memory is still theirs. */
static uv_sem_t stuck_go, stuck_done;
static atomic_int stuck_saw_cancel, stuck_rc, held_rc, abandoned_destroys;
static isv_request *held;

static int stuck(isv_request *r, void *u) {
  (void)u;
  uv_sem_wait(&stuck_go);
  atomic_store(&stuck_saw_cancel, isv_request_is_cancelled(r));
  int rc = sf_twice(r, NULL); /* reads its input, writes its output, completes */
  atomic_store(&stuck_rc, rc);
  uv_sem_post(&stuck_done);
  return rc;
}
static int holds(isv_request *r, void *u) {
  (void)u;
  held = r;
  return 0;
}
static void complete_held(void *arg) {
  (void)arg;
  atomic_store(&held_rc, sf_twice(held, NULL));
}
static void count_abandoned_destroy(void *u) {
  (void)u;
  atomic_fetch_add(&abandoned_destroys, 1);
}

static void close_abandons_backends_that_never_complete(void **state) {
  (void)state;
  uv_sem_init(&stuck_go, 0);
  uv_sem_init(&stuck_done, 0);
  world w = {0};
  uv_loop_init(&w.loop);
  isv_options *o;
  isv_options_new(&o);
  isv_options_set_drain_timeout_ms(o, 50);
  assert_int_equal(isv_server_new(&w.loop, o, &w.srv), 0);
  isv_options_free(o);
  struct {
    const char *name;
    int (*fn)(isv_request *, void *);
    isv_exec_mode mode;
  } models[] = {{"stuck", stuck, ISV_EXEC_POOL}, {"holds", holds, ISV_EXEC_ASYNC}};
  for (int i = 0; i < 2; i++) {
    isv_model_config *c;
    isv_model_config_new(models[i].name, &c);
    int64_t any[] = {-1};
    isv_model_config_add_input(c, "x", ISV_FP32, any, 1);
    isv_model_config_add_output(c, "y", ISV_FP32, any, 1);
    isv_model_config_set_exec_mode(c, models[i].mode);
    isv_backend be = {.struct_size = sizeof be, .infer = models[i].fn,
                      .destroy = count_abandoned_destroy};
    assert_int_equal(isv_server_add_model(w.srv, c, "1", &be, NULL, NULL), 0);
    isv_model_config_free(c);
  }
  result res[2];
  memset(res, 0, sizeof res);
  int64_t n = 2;
  float x[] = {1, 2};
  for (int i = 0; i < 2; i++) {
    isv_request *r;
    assert_int_equal(isv_request_new(w.srv, models[i].name, NULL, &r), 0);
    isv_request_add_input(r, "x", ISV_FP32, &n, 1, x, sizeof x, ISV_TRANSIENT);
    assert_int_equal(isv_server_infer(w.srv, r, on_done, &res[i]), 0);
  }
  uv_run(&w.loop, UV_RUN_NOWAIT); /* both started */
  assert_non_null(held);
  uint64_t t0 = uv_hrtime();
  assert_int_equal(isv_server_close(w.srv, sf_on_closed, &w), 0);
  uv_run(&w.loop, UV_RUN_DEFAULT); /* returns: the close finished without the backends */
  uint64_t ms = (uv_hrtime() - t0) / 1000000;
  assert_true(w.closed);
  assert_true(ms >= 1000 && ms < 10000); /* the drain deadline, then the cancelled ones' grace */
  for (int i = 0; i < 2; i++) {
    assert_int_equal(res[i].calls, 1);
    assert_int_equal(res[i].status, ISV_EUNAVAIL);
    assert_non_null(strstr(res[i].msg, "server closed while the model still ran the request"));
    assert_int_equal(res[i].n, 0); /* no outputs shown: the backend may still write them */
  }
  assert_int_equal(uv_loop_close(&w.loop), 0); /* no handle left on the host's loop */
  assert_int_equal(atomic_load(&abandoned_destroys), 0); /* the backends still run */

  /* the backends finish long after: their requests are still theirs, then freed */
  uv_thread_t t;
  assert_int_equal(uv_thread_create(&t, complete_held, NULL), 0);
  uv_thread_join(&t);
  assert_int_equal(atomic_load(&held_rc), 0);
  uv_sem_post(&stuck_go);
  uv_sem_wait(&stuck_done);
  assert_true(atomic_load(&stuck_saw_cancel));
  assert_int_equal(atomic_load(&stuck_rc), 0);
  /* each version's destroy runs once its last request is freed, on the completing thread */
  for (int i = 0; i < 1000 && atomic_load(&abandoned_destroys) < 2; i++) uv_sleep(1);
  assert_int_equal(atomic_load(&abandoned_destroys), 2);
  uv_sem_destroy(&stuck_go);
  uv_sem_destroy(&stuck_done);
}

/* ---- adopt: the host's stream, freed by the host's callback ---- */

static int adopted_closed;
static void on_adopted_closed(uv_handle_t *h) {
  adopted_closed++;
  assert_ptr_equal(h->data, (void *)0x5eed); /* the host's data, given back */
}

static void adopt_serves_and_hands_the_stream_back(void **state) {
  world *w = *state;
  int sv[2];
  assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  static uv_pipe_t pipe_on_the_stack_of_the_host; /* not malloc'd: nothing frees it */
  uv_pipe_init(&w->loop, &pipe_on_the_stack_of_the_host, 0);
  uv_pipe_open(&pipe_on_the_stack_of_the_host, sv[0]);
  pipe_on_the_stack_of_the_host.data = (void *)0x5eed;
  adopted_closed = 0;
  assert_int_equal(isv_server_adopt(w->srv, (uv_stream_t *)&pipe_on_the_stack_of_the_host,
                                    on_adopted_closed), 0);
  static const char req[] = "GET /v2/health/live HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
  assert_int_equal(write(sv[1], req, sizeof req - 1), (ssize_t)(sizeof req - 1));
  while (!adopted_closed) uv_run(&w->loop, UV_RUN_ONCE);
  char resp[512];
  ssize_t n = read(sv[1], resp, sizeof resp - 1);
  assert_true(n > 0);
  resp[n] = '\0';
  assert_non_null(strstr(resp, "HTTP/1.1 200 OK"));
  assert_non_null(strstr(resp, "{\"live\":true}"));
  close(sv[1]);

  /* refused (another loop's stream): still closed and handed back */
  uv_loop_t other;
  uv_loop_init(&other);
  static uv_pipe_t foreign;
  assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  uv_pipe_init(&other, &foreign, 0);
  uv_pipe_open(&foreign, sv[0]);
  foreign.data = (void *)0x5eed;
  assert_int_equal(isv_server_adopt(w->srv, (uv_stream_t *)&foreign, on_adopted_closed),
                   ISV_EINVAL);
  uv_run(&other, UV_RUN_DEFAULT);
  assert_int_equal(adopted_closed, 2);
  assert_int_equal(uv_loop_close(&other), 0);
  close(sv[1]);
}

static int teardown_if_open(void **state) { return *state ? sf_teardown(state) : 0; }

/* ---- several loops: one server each, one port (isv_options_set_reuse_port) -------------- */

typedef struct looper {
  uv_thread_t th;
  uv_loop_t loop;
  isv_server *srv;
  uv_async_t stop;
  uv_sem_t ready;
  int port; /* in: 0 for the first (picks one); out: the bound port */
  atomic_int served;
} looper;

static int count_and_echo(isv_request *r, void *u) {
  atomic_fetch_add(&((looper *)u)->served, 1);
  const isv_tensor *x = isv_request_input(r, "x");
  size_t nd;
  const int64_t *shape = isv_tensor_shape(x, &nd);
  int rc = isv_request_set_output(r, "y", ISV_FP32, shape, nd, isv_tensor_data(x),
                                  isv_tensor_byte_size(x), ISV_STATIC);
  return rc ? rc : isv_request_complete(r, 0, NULL);
}

static void looper_closed(isv_server *srv, void *d) {
  (void)srv;
  uv_close((uv_handle_t *)&((looper *)d)->stop, NULL);
}
static void looper_stop(uv_async_t *a) { isv_server_close(((looper *)a->data)->srv, looper_closed, a->data); }

static void looper_main(void *arg) {
  looper *l = arg;
  uv_loop_init(&l->loop);
  isv_options *o;
  isv_options_new(&o);
  isv_options_set_reuse_port(o, 1);
  assert_int_equal(isv_server_new(&l->loop, o, &l->srv), 0);
  isv_options_free(o);
  isv_model_config *c;
  isv_model_config_new("m", &c);
  int64_t any[] = {-1};
  isv_model_config_add_input(c, "x", ISV_FP32, any, 1);
  isv_model_config_add_output(c, "y", ISV_FP32, any, 1);
  isv_backend be = {.struct_size = sizeof be, .infer = count_and_echo};
  assert_int_equal(isv_server_add_model(l->srv, c, "1", &be, l, NULL), 0);
  isv_model_config_free(c);
  assert_int_equal(isv_server_listen(l->srv, "127.0.0.1", l->port), 0);
  l->port = isv_server_bound_port(l->srv, 0);
  uv_async_init(&l->loop, &l->stop, looper_stop);
  l->stop.data = l;
  uv_sem_post(&l->ready);
  uv_run(&l->loop, UV_RUN_DEFAULT);
  assert_int_equal(uv_loop_close(&l->loop), 0);
}

/* One request on a fresh connection; the HTTP status. */
static int one_request(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
    close(fd);
    return -1;
  }
  static const char body[] =
      "{\"inputs\":[{\"name\":\"x\",\"datatype\":\"FP32\",\"shape\":[2],\"data\":[1,2]}]}";
  char req[512];
  int n = snprintf(req, sizeof req,
                   "POST /v2/models/m/infer HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                   "Content-Length: %zu\r\n\r\n%s", sizeof body - 1, body);
  if (write(fd, req, (size_t)n) != n) n = -1;
  char resp[2048];
  size_t got = 0;
  ssize_t k;
  while ((k = read(fd, resp + got, sizeof resp - 1 - got)) > 0) got += (size_t)k;
  resp[got] = '\0';
  close(fd);
  int status = -1;
  sscanf(resp, "HTTP/1.1 %d", &status);
  return status;
}

/* Two loops in two threads, a server on each, one port: the kernel spreads 64 connections over
 * both, and they never touch each other's state (the ThreadSanitizer run checks that). */
static void two_loops_share_one_port(void **state) {
  (void)state;
  looper a, b;
  memset(&a, 0, sizeof a);
  memset(&b, 0, sizeof b);
  uv_sem_init(&a.ready, 0);
  uv_sem_init(&b.ready, 0);
  uv_thread_create(&a.th, looper_main, &a);
  uv_sem_wait(&a.ready);
  b.port = a.port;
  uv_thread_create(&b.th, looper_main, &b);
  uv_sem_wait(&b.ready);
  assert_int_equal(b.port, a.port);
  for (int i = 0; i < 64; i++) assert_int_equal(one_request(a.port), 200);
  assert_int_equal(atomic_load(&a.served) + atomic_load(&b.served), 64);
  assert_true(atomic_load(&a.served) > 0 && atomic_load(&b.served) > 0); /* 2^-63 to fail */
  uv_async_send(&a.stop);
  uv_async_send(&b.stop);
  uv_thread_join(&a.th);
  uv_thread_join(&b.th);
  uv_sem_destroy(&a.ready);
  uv_sem_destroy(&b.ready);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(inline_and_pool_give_the_same_answer, setup, sf_teardown),
      cmocka_unit_test_setup_teardown(completion_from_another_thread, setup, sf_teardown),
      cmocka_unit_test_setup_teardown(nothing_is_added_after_completion, setup, sf_teardown),
      cmocka_unit_test_setup_teardown(an_inline_backend_must_complete_before_it_returns, setup,
                                      sf_teardown),
      cmocka_unit_test_setup_teardown(loop_thread_calls_refuse_other_threads, setup, sf_teardown),
      cmocka_unit_test_setup_teardown(the_last_error_is_the_last_calls, setup, sf_teardown),
      cmocka_unit_test_setup_teardown(errors_reach_the_callback, setup, sf_teardown),
      cmocka_unit_test_setup_teardown(classification_top_k, setup, sf_teardown),
      cmocka_unit_test_setup_teardown(removal_and_readiness, setup, sf_teardown),
      cmocka_unit_test_setup_teardown(a_request_names_its_version_by_a_label, setup, sf_teardown),
      cmocka_unit_test_setup_teardown(vertex_routes_are_set_once, setup, sf_teardown),
      cmocka_unit_test_setup_teardown(openai_prefix_rule, setup, sf_teardown),
      cmocka_unit_test_setup_teardown(custom_routes_never_shadow, setup, sf_teardown),
      cmocka_unit_test_setup_teardown(close_drains_in_flight_requests, setup, teardown_if_open),
      cmocka_unit_test_setup_teardown(adopt_serves_and_hands_the_stream_back, setup, sf_teardown),
      cmocka_unit_test(close_abandons_backends_that_never_complete),
      cmocka_unit_test(two_loops_share_one_port),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
