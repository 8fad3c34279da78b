/* The service's edge (lib/protocol/gate.c), in process through the transport adapter: the
 * authorizer deciding inside its callback, later from another thread, or never before its
 * client leaves; what it sees (protocol, method, path, model, headers, peer, identity); the
 * per-client limit with the authorizer's key; CORS preflights and headers; the close waiting
 * for a pending decision. */
#include "cmocka_prelude.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "inferserve.h"

typedef struct seen {
  int responds;
  int status;
  char headers[1024];
  char body[1024];
} seen;

static int on_respond(isv_exchange *x, int status, const isv_field *h, size_t nh,
                      const uv_buf_t *parts, size_t n, isv_piece *p, int more) {
  (void)more;
  seen *s = isv_exchange_user(x);
  s->responds++;
  s->status = status;
  for (size_t i = 0; i < nh; i++) {
    size_t at = strlen(s->headers);
    snprintf(s->headers + at, sizeof s->headers - at, "%.*s: %.*s\n", (int)h[i].name_len,
             h[i].name, (int)h[i].value_len, h[i].value);
  }
  for (size_t i = 0; i < n; i++) {
    size_t at = strlen(s->body);
    snprintf(s->body + at, sizeof s->body - at, "%.*s", (int)parts[i].len, parts[i].base);
  }
  isv_piece_free(p);
  return 0;
}
static int on_write(isv_exchange *x, const uv_buf_t *parts, size_t n, isv_piece *p) {
  (void)x, (void)parts, (void)n;
  isv_piece_free(p);
  return 0;
}
static void on_end(isv_exchange *x) { (void)x; }
static const isv_exchange_carrier carrier = {sizeof carrier, on_respond, on_write, on_end};

/* What the authorizer decides at each stage and what it saw. */
typedef struct policy {
  int mode[3]; /* by stage (1 caller, 2 model): 0 allow, 1 deny 401, 2 forbid 403, 3 later */
  char protocol[32], method[16], path[128], model[64], version[16], header[64], peer[64],
      identity[64], client[64];
  const char *set_client; /* the key it sets at the caller stage, NULL: the default */
  isv_auth *held;
  int calls, model_calls;
} policy;

static void authorize(isv_auth *a, void *user) {
  policy *p = user;
  isv_auth_stage stage = isv_auth_get_stage(a);
  p->calls++;
  snprintf(p->protocol, sizeof p->protocol, "%s", isv_auth_protocol(a));
  snprintf(p->method, sizeof p->method, "%s", isv_auth_method(a));
  snprintf(p->path, sizeof p->path, "%s", isv_auth_path(a));
  if (stage == ISV_AUTH_STAGE_CALLER) {
    assert_null(isv_auth_model(a)); /* nothing of the body is read yet */
  } else {
    p->model_calls++;
    snprintf(p->model, sizeof p->model, "%s", isv_auth_model(a));
    snprintf(p->version, sizeof p->version, "%s",
             isv_auth_version(a) ? isv_auth_version(a) : "(none)");
    assert_int_equal(isv_auth_set_client(a, "late"), ISV_ESTATE); /* counted already */
  }
  size_t n = 0;
  const char *v = isv_auth_header(a, "X-Token", &n);
  snprintf(p->header, sizeof p->header, "%.*s", (int)n, v ? v : "");
  snprintf(p->peer, sizeof p->peer, "%s", isv_auth_peer(a));
  snprintf(p->identity, sizeof p->identity, "%s",
           isv_auth_identity(a) ? isv_auth_identity(a) : "(none)");
  if (p->set_client && stage == ISV_AUTH_STAGE_CALLER)
    assert_int_equal(isv_auth_set_client(a, p->set_client), 0);
  snprintf(p->client, sizeof p->client, "%s", isv_auth_client(a));
  switch (p->mode[stage]) {
  case 0: isv_auth_complete(a, ISV_AUTH_ALLOW, NULL); break;
  case 1:
    assert_int_equal(isv_auth_set_challenge(a, "Bearer realm=\"t\""), 0);
    assert_int_equal(isv_auth_set_challenge(a, "bad\r\nheader"), ISV_EINVAL);
    isv_auth_complete(a, ISV_AUTH_UNAUTHENTICATED, "no token");
    break;
  case 2: isv_auth_complete(a, ISV_AUTH_FORBIDDEN, NULL); break;
  default: p->held = a;
  }
}

/* slow: answers 50 ms later from a thread (a request that stays in flight a while) */
static void slow_body(void *arg) {
  uv_sleep(50);
  isv_request_complete(arg, 0, NULL);
}
static uv_thread_t threads[8];
static int n_threads;
static int slow(isv_request *r, void *u) {
  (void)u;
  return uv_thread_create(&threads[n_threads++], slow_body, r) == 0 ? 0 : ISV_EINTERNAL;
}
static int quick(isv_request *r, void *u) {
  (void)u;
  return isv_request_complete(r, 0, NULL);
}

typedef struct world {
  uv_loop_t loop;
  isv_server *srv;
  policy pol;
  int closed;
} world;

static void add(world *w, const char *name, int (*fn)(isv_request *, void *), isv_exec_mode m) {
  isv_model_config *c;
  isv_model_config_new(name, &c);
  int64_t any[] = {-1};
  isv_model_config_add_input(c, "x", ISV_FP32, any, 1);
  isv_model_config_set_open_io(c, 1);
  isv_model_config_set_exec_mode(c, m);
  isv_backend be = {.struct_size = sizeof be, .infer = fn};
  assert_int_equal(isv_server_add_model(w->srv, c, "1", &be, NULL, NULL), 0);
  isv_model_config_free(c);
}

static world *make(unsigned max_client, const char *origins, int with_authorizer) {
  world *w = calloc(1, sizeof *w);
  uv_loop_init(&w->loop);
  isv_options *o;
  isv_options_new(&o);
  isv_options_set_max_client_requests(o, max_client);
  assert_int_equal(isv_options_set_cors_origins(o, origins), 0);
  assert_int_equal(isv_server_new(&w->loop, o, &w->srv), 0);
  isv_options_free(o);
  add(w, "slow", slow, ISV_EXEC_ASYNC);
  add(w, "quick", quick, ISV_EXEC_INLINE);
  if (with_authorizer) assert_int_equal(isv_server_set_authorizer(w->srv, authorize, &w->pol), 0);
  return w;
}

static void on_closed(isv_server *s, void *d) {
  (void)s;
  ((world *)d)->closed = 1;
}

static void finish(world *w) {
  if (!w->closed) {
    isv_server_close(w->srv, on_closed, w);
    uv_run(&w->loop, UV_RUN_DEFAULT);
  }
  assert_true(w->closed);
  for (int i = 0; i < n_threads; i++) uv_thread_join(&threads[i]);
  n_threads = 0;
  assert_int_equal(uv_loop_close(&w->loop), 0);
  free(w);
}

static const char infer_body[] =
    "{\"inputs\":[{\"name\":\"x\",\"datatype\":\"FP32\",\"shape\":[1],\"data\":[1]}]}";

static isv_exchange *send_req(world *w, seen *s, const char *method, const char *target,
                              const char *peer, const char *const *hdrs) {
  isv_exchange *x;
  assert_int_equal(isv_exchange_new(w->srv, &carrier, s, method, target, &x), 0);
  for (; hdrs && *hdrs; hdrs += 2)
    isv_exchange_add_header(x, hdrs[0], strlen(hdrs[0]), hdrs[1], strlen(hdrs[1]));
  isv_exchange_set_peer(x, peer, strcmp(peer, "10.0.0.9:1") == 0 ? "CN=alice" : NULL);
  if (strcmp(method, "POST") == 0) isv_exchange_append_body(x, infer_body, strlen(infer_body));
  assert_int_equal(isv_exchange_submit(x), 0);
  return x;
}

static void decisions_made_in_the_callback(void **state) {
  (void)state;
  world *w = make(0, "", 1);
  const char *hdrs[] = {"X-Token", "abc", NULL};
  seen s = {0};
  send_req(w, &s, "POST", "/v2/models/quick/infer?x=1", "10.0.0.9:1", hdrs);
  uv_run(&w->loop, UV_RUN_DEFAULT);
  assert_int_equal(s.status, 200);
  assert_int_equal(w->pol.calls, 2); /* who, then which model */
  assert_int_equal(w->pol.model_calls, 1);
  assert_string_equal(w->pol.protocol, "kserve_v2");
  assert_string_equal(w->pol.method, "POST");
  assert_string_equal(w->pol.path, "/v2/models/quick/infer");
  assert_string_equal(w->pol.model, "quick");
  assert_string_equal(w->pol.version, "1"); /* the default version, resolved */
  assert_string_equal(w->pol.header, "abc");
  assert_string_equal(w->pol.peer, "10.0.0.9:1");
  assert_string_equal(w->pol.identity, "CN=alice");
  assert_string_equal(w->pol.client, "10.0.0.9"); /* the peer without its port */

  w->pol.mode[ISV_AUTH_STAGE_CALLER] = 1; /* refused before anything else */
  int model_calls = w->pol.model_calls;
  seen t = {0};
  send_req(w, &t, "GET", "/v2/models/quick", "10.0.0.8:1", NULL);
  assert_int_equal(t.status, 401);
  assert_non_null(strstr(t.headers, "WWW-Authenticate: Bearer realm=\"t\""));
  assert_non_null(strstr(t.body, "no token"));
  assert_int_equal(w->pol.model_calls, model_calls);
  seen t2 = {0}; /* a path no route takes: the caller is judged first, 401 before 404 */
  send_req(w, &t2, "GET", "/nowhere", "10.0.0.8:1", NULL);
  assert_int_equal(t2.status, 401);

  w->pol.mode[ISV_AUTH_STAGE_CALLER] = 0;
  w->pol.mode[ISV_AUTH_STAGE_MODEL] = 2;
  seen u = {0};
  send_req(w, &u, "GET", "/v1/models/quick", "10.0.0.8:1", NULL); /* TF Serving's status */
  assert_int_equal(u.status, 403);
  assert_string_equal(w->pol.protocol, "tfserving");
  assert_string_equal(w->pol.model, "quick");
  assert_string_equal(w->pol.version, "(none)"); /* the answer covers every version */
  assert_non_null(strstr(u.body, "permission denied"));
  seen u2 = {0}; /* refused at the model stage, the request never runs */
  send_req(w, &u2, "POST", "/v2/models/quick/infer", "10.0.0.8:1", NULL);
  uv_run(&w->loop, UV_RUN_DEFAULT);
  assert_int_equal(u2.status, 403);

  w->pol.mode[ISV_AUTH_STAGE_MODEL] = 0; /* an unknown model: 404, no model stage */
  model_calls = w->pol.model_calls;
  seen v = {0};
  send_req(w, &v, "GET", "/v2/models/nosuch", "10.0.0.8:1", NULL);
  assert_int_equal(v.status, 404);
  assert_int_equal(w->pol.model_calls, model_calls);
  finish(w);
}

static void decide_later(void *arg) {
  uv_sleep(20);
  isv_auth_complete(arg, ISV_AUTH_ALLOW, NULL);
}

/* Let the loop run until the authorizer holds a decision; a thread allows it 20 ms later. */
static void allow_later(world *w, uv_thread_t *t) {
  while (w->pol.held == NULL) uv_run(&w->loop, UV_RUN_ONCE);
  isv_auth *a = w->pol.held;
  w->pol.held = NULL;
  uv_thread_create(t, decide_later, a);
}

static void decisions_made_later_on_another_thread(void **state) {
  (void)state;
  world *w = make(0, "", 1);
  w->pol.mode[ISV_AUTH_STAGE_CALLER] = w->pol.mode[ISV_AUTH_STAGE_MODEL] = 3;
  seen s = {0};
  send_req(w, &s, "POST", "/v2/models/quick/infer", "10.0.0.8:1", NULL);
  uv_run(&w->loop, UV_RUN_NOWAIT);
  assert_int_equal(s.responds, 0);
  assert_non_null(w->pol.held);
  assert_int_equal(w->pol.model_calls, 0);
  uv_thread_t t1, t2;
  allow_later(w, &t1);
  allow_later(w, &t2); /* then the model stage, later too */
  assert_string_equal(w->pol.model, "quick");
  uv_run(&w->loop, UV_RUN_DEFAULT); /* the pending decision keeps the loop alive */
  uv_thread_join(&t1);
  uv_thread_join(&t2);
  assert_int_equal(s.status, 200);

  /* an answer about a model, judged later: the handler runs again for the model allowed */
  seen m = {0};
  send_req(w, &m, "GET", "/v2/models/quick/ready", "10.0.0.8:1", NULL);
  uv_run(&w->loop, UV_RUN_NOWAIT);
  allow_later(w, &t1);
  allow_later(w, &t2);
  uv_run(&w->loop, UV_RUN_DEFAULT);
  uv_thread_join(&t1);
  uv_thread_join(&t2);
  assert_int_equal(m.status, 200);
  assert_non_null(strstr(m.body, "\"ready\":true"));

  /* the client leaves while the host decides: the late decision is harmless */
  seen c = {0};
  isv_exchange *x = send_req(w, &c, "POST", "/v2/models/quick/infer", "10.0.0.8:1", NULL);
  uv_run(&w->loop, UV_RUN_NOWAIT);
  isv_exchange_free(x);
  allow_later(w, &t1);
  uv_run(&w->loop, UV_RUN_DEFAULT);
  uv_thread_join(&t1);
  assert_int_equal(c.responds, 0);

  /* ... or while the model stage decides: the request never runs */
  seen c2 = {0};
  x = send_req(w, &c2, "POST", "/v2/models/quick/infer", "10.0.0.8:1", NULL);
  allow_later(w, &t1);
  uv_thread_join(&t1);
  while (w->pol.held == NULL) uv_run(&w->loop, UV_RUN_ONCE); /* the model stage asks */
  isv_exchange_free(x);
  allow_later(w, &t2);
  uv_run(&w->loop, UV_RUN_DEFAULT);
  uv_thread_join(&t2);
  assert_int_equal(c2.responds, 0);

  /* the close waits for a pending decision */
  seen d = {0};
  send_req(w, &d, "GET", "/v2/models/quick", "10.0.0.8:1", NULL);
  uv_run(&w->loop, UV_RUN_NOWAIT);
  isv_server_close(w->srv, on_closed, w);
  uv_run(&w->loop, UV_RUN_NOWAIT);
  assert_false(w->closed);
  isv_auth_complete(w->pol.held, ISV_AUTH_FORBIDDEN, "late");
  uv_run(&w->loop, UV_RUN_DEFAULT);
  assert_int_equal(d.status, 403);
  assert_true(w->closed);
  finish(w);
}

static void the_per_client_limit(void **state) {
  (void)state;
  world *w = make(2, "", 0);
  seen a = {0}, b = {0}, c = {0}, other = {0};
  send_req(w, &a, "POST", "/v2/models/slow/infer", "10.0.0.1:1", NULL);
  send_req(w, &b, "POST", "/v2/models/slow/infer", "10.0.0.1:2", NULL);
  send_req(w, &c, "POST", "/v2/models/quick/infer", "10.0.0.1:3", NULL); /* same address */
  send_req(w, &other, "POST", "/v2/models/quick/infer", "10.0.0.2:1", NULL);
  assert_int_equal(c.status, 429);
  assert_non_null(strstr(c.body, "client '10.0.0.1' has 2 requests in flight"));
  assert_int_equal(other.status, 200);
  uv_run(&w->loop, UV_RUN_DEFAULT);
  assert_int_equal(a.status, 200);
  assert_int_equal(b.status, 200);
  seen d = {0}; /* released once answered */
  send_req(w, &d, "POST", "/v2/models/quick/infer", "10.0.0.1:4", NULL);
  assert_int_equal(d.status, 200);
  finish(w);

  /* with the authorizer's key: two addresses, one user */
  w = make(1, "", 1);
  w->pol.set_client = "user-7";
  seen e = {0}, f = {0};
  send_req(w, &e, "POST", "/v2/models/slow/infer", "10.0.0.1:1", NULL);
  send_req(w, &f, "POST", "/v2/models/quick/infer", "10.0.0.2:1", NULL);
  assert_int_equal(f.status, 429);
  assert_non_null(strstr(f.body, "'user-7'"));
  uv_run(&w->loop, UV_RUN_DEFAULT);
  assert_int_equal(e.status, 200);
  finish(w);
}

static void cors(void **state) {
  (void)state;
  isv_options *o;
  isv_options_new(&o);
  assert_int_equal(isv_options_set_cors_origins(o, "http://a.example no-scheme"), ISV_EINVAL);
  assert_int_equal(isv_options_set_cors_origins(o, "http://a.example/path"), ISV_EINVAL);
  assert_int_equal(isv_options_set_cors_origins(o, "*"), 0);
  isv_options_free(o);

  world *w = make(0, "http://a.example https://b.example:8443", 1);
  const char *pre[] = {"Origin", "https://b.example:8443", "Access-Control-Request-Method",
                       "POST", "Access-Control-Request-Headers", "content-type", NULL};
  seen s = {0};
  int calls = w->pol.calls;
  send_req(w, &s, "OPTIONS", "/v2/models/quick/infer", "10.0.0.1:1", pre);
  assert_int_equal(s.status, 204);
  assert_int_equal(w->pol.calls, calls); /* a preflight is not authorized */
  assert_non_null(strstr(s.headers, "Access-Control-Allow-Origin: https://b.example:8443\n"));
  assert_non_null(strstr(s.headers, "Access-Control-Allow-Headers: content-type\n"));
  const char *bad_pre[] = {"Origin", "https://b.example:8443", "Access-Control-Request-Method",
                           "POST", "Access-Control-Request-Headers", "x\r\ny", NULL};
  seen s2 = {0};
  send_req(w, &s2, "OPTIONS", "/v2/models/quick/infer", "10.0.0.1:1", bad_pre);
  assert_int_equal(s2.status, 204);
  assert_null(strstr(s2.headers, "Access-Control-Allow-Headers"));

  const char *actual[] = {"Origin", "http://a.example", NULL};
  seen t = {0};
  send_req(w, &t, "POST", "/v2/models/quick/infer", "10.0.0.1:1", actual);
  assert_int_equal(t.status, 200);
  assert_non_null(strstr(t.headers, "Access-Control-Allow-Origin: http://a.example\n"));
  assert_non_null(strstr(t.headers, "Vary: Origin\n"));

  const char *stranger[] = {"Origin", "http://c.example", NULL};
  seen u = {0};
  send_req(w, &u, "POST", "/v2/models/quick/infer", "10.0.0.1:1", stranger);
  assert_int_equal(u.status, 200);
  assert_null(strstr(u.headers, "Access-Control"));
  finish(w);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(decisions_made_in_the_callback),
      cmocka_unit_test(decisions_made_later_on_another_thread),
      cmocka_unit_test(the_per_client_limit),
      cmocka_unit_test(cors),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
