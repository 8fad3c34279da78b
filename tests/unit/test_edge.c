/* The HTTP edge's order (lib/protocol/edge.c), in process through the transport adapter: the
 * caller stage comes before content decoding (a refused caller's coded body is never
 * inflated), the per-client count before it too, a CORS preflight before both; the model stage
 * sees the model version the handler resolved (the default version, the one the path names,
 * none for an answer about every version). */
#include "cmocka_prelude.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "inferserve.h"

typedef struct seen {
  int status;
  char body[512];
} seen;

static int on_respond(isv_exchange *x, int status, const isv_field *h, size_t nh,
                      const uv_buf_t *parts, size_t n, isv_piece *p, int more) {
  (void)h, (void)nh, (void)more;
  seen *s = isv_exchange_user(x);
  s->status = status;
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

/* Lets in a caller with "X-Token: ok"; records the model stage's questions. */
typedef struct judge {
  int callers, models;
  char model[64], version[16];
} judge;

static void authorize(isv_auth *a, void *user) {
  judge *j = user;
  if (isv_auth_get_stage(a) == ISV_AUTH_STAGE_CALLER) {
    j->callers++;
    size_t n;
    const char *t = isv_auth_header(a, "X-Token", &n);
    isv_auth_complete(a, t && n == 2 && memcmp(t, "ok", 2) == 0 ? ISV_AUTH_ALLOW
                                                            : ISV_AUTH_UNAUTHENTICATED,
                  "who are you");
    return;
  }
  j->models++;
  snprintf(j->model, sizeof j->model, "%s", isv_auth_model(a));
  snprintf(j->version, sizeof j->version, "%s",
           isv_auth_version(a) ? isv_auth_version(a) : "(none)");
  isv_auth_complete(a, ISV_AUTH_ALLOW, NULL);
}

static int quick(isv_request *r, void *u) {
  (void)u;
  return isv_request_complete(r, 0, NULL);
}

typedef struct world {
  uv_loop_t loop;
  isv_server *srv;
  judge j;
} world;

static void add(world *w, const char *version) {
  isv_model_config *c;
  isv_model_config_new("m", &c);
  int64_t any[] = {-1};
  isv_model_config_add_input(c, "x", ISV_FP32, any, 1);
  isv_model_config_set_open_io(c, 1);
  isv_backend be = {.struct_size = sizeof be, .infer = quick};
  assert_int_equal(isv_server_add_model(w->srv, c, version, &be, NULL, NULL), 0);
  isv_model_config_free(c);
}

static world *make(unsigned max_client) {
  world *w = calloc(1, sizeof *w);
  uv_loop_init(&w->loop);
  isv_options *o;
  isv_options_new(&o);
  isv_options_set_max_client_requests(o, max_client);
  assert_int_equal(isv_server_new(&w->loop, o, &w->srv), 0);
  isv_options_free(o);
  add(w, "1");
  add(w, "2");
  assert_int_equal(isv_server_set_default_version(w->srv, "m", "1"), 0);
  assert_int_equal(isv_server_set_authorizer(w->srv, authorize, &w->j), 0);
  return w;
}

static void on_closed(isv_server *s, void *d) {
  (void)s;
  *(int *)d = 1;
}

static void finish(world *w) {
  int closed = 0;
  isv_server_close(w->srv, on_closed, &closed);
  uv_run(&w->loop, UV_RUN_DEFAULT);
  assert_true(closed);
  assert_int_equal(uv_loop_close(&w->loop), 0);
  free(w);
}

static void send_req(world *w, seen *s, const char *method, const char *target, int token,
                 const char *coding, const void *body, size_t len) {
  isv_exchange *x;
  memset(s, 0, sizeof *s);
  assert_int_equal(isv_exchange_new(w->srv, &carrier, s, method, target, &x), 0);
  if (token) isv_exchange_add_header(x, "X-Token", 7, "ok", 2);
  if (coding) isv_exchange_add_header(x, "Content-Encoding", 16, coding, strlen(coding));
  isv_exchange_set_peer(x, "10.0.0.1:5", NULL);
  if (len) isv_exchange_append_body(x, body, len);
  assert_int_equal(isv_exchange_submit(x), 0);
  uv_run(&w->loop, UV_RUN_DEFAULT);
}

static void the_caller_is_judged_before_the_body_is_decoded(void **state) {
  (void)state;
  world *w = make(0);
  static const char not_gzip[] = "\x1f\x8b this is not a gzip stream";
  seen s;
  send_req(w, &s, "POST", "/v2/models/m/infer", 0, "gzip", not_gzip, sizeof not_gzip - 1);
  assert_int_equal(s.status, 401); /* not 400 about the coding: nothing was inflated */
  assert_non_null(strstr(s.body, "who are you"));
  assert_int_equal(w->j.models, 0);
  send_req(w, &s, "POST", "/v2/models/m/infer", 1, "gzip", not_gzip, sizeof not_gzip - 1);
  assert_int_equal(s.status, 400); /* the same body, from a caller let in */
  assert_non_null(strstr(s.body, "gzip"));
  assert_int_equal(w->j.models, 0); /* a body that cannot be decoded names no model */
  finish(w);
}

static void the_model_stage_sees_the_resolved_version(void **state) {
  (void)state;
  world *w = make(0);
  static const char body[] =
      "{\"inputs\":[{\"name\":\"x\",\"datatype\":\"FP32\",\"shape\":[1],\"data\":[1]}]}";
  seen s;
  send_req(w, &s, "POST", "/v2/models/m/infer", 1, NULL, body, sizeof body - 1);
  assert_int_equal(s.status, 200);
  assert_string_equal(w->j.model, "m");
  assert_string_equal(w->j.version, "1"); /* the default version, not "none" */
  send_req(w, &s, "POST", "/v2/models/m/versions/2/infer", 1, NULL, body, sizeof body - 1);
  assert_int_equal(s.status, 200);
  assert_string_equal(w->j.version, "2");
  send_req(w, &s, "GET", "/v2/models/m/versions/2", 1, NULL, NULL, 0);
  assert_int_equal(s.status, 200);
  assert_string_equal(w->j.version, "2");
  send_req(w, &s, "GET", "/v2/models/m/stats", 1, NULL, NULL, 0);
  assert_int_equal(s.status, 200);
  assert_string_equal(w->j.version, "(none)"); /* the answer covers every version */
  int models = w->j.models;
  send_req(w, &s, "GET", "/v2/health/ready", 1, NULL, NULL, 0); /* names no model */
  assert_int_equal(s.status, 200);
  assert_int_equal(w->j.models, models);
  finish(w);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(the_caller_is_judged_before_the_body_is_decoded),
      cmocka_unit_test(the_model_stage_sees_the_resolved_version),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
