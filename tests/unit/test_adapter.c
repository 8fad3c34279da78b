/* The host's carriers (lib/transport/adapter.c), through the public API only: a host's own
 * HTTP server hands exchanges in and a host's gRPC stack hands calls in; the library routes,
 * limits and answers them as it does its own listeners' — whole and streamed answers, pieces
 * held past the answer, cancellation before and after submit, a carrier that fails, and a
 * close that waits for what the host still holds. Leaks and use-after-free are what the ASan
 * run of this test looks for. */
#include "cmocka_prelude.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "inferserve.h"
#include "server_fixture.h"

typedef struct world {
  uv_loop_t loop;
  isv_server *srv;
  int closed;
  uv_thread_t slow_thread;
  int slow_started;
} world;

/* What the host's server saw of one answer. */
typedef struct seen {
  int responds, writes, ends, finishes;
  int status;
  int more;
  char ctype[64];
  char body[4096];
  size_t body_len;
  isv_piece *held[8]; /* pieces kept past the answer, released by the test */
  size_t n_held;
  int hold;           /* keep pieces instead of releasing them at once */
  int fail_respond;   /* respond answers nonzero: the host's client is gone */
  char grpc_msg[256];
} seen;

static void take(seen *s, const uv_buf_t *parts, size_t n, isv_piece *p) {
  for (size_t i = 0; i < n; i++) {
    size_t room = sizeof s->body - s->body_len;
    size_t k = parts[i].len < room ? parts[i].len : room;
    memcpy(s->body + s->body_len, parts[i].base, k);
    s->body_len += k;
  }
  if (s->hold && p && s->n_held < 8) s->held[s->n_held++] = p;
  else isv_piece_free(p);
}

static int h_respond(isv_exchange *x, int status, const isv_field *h, size_t nh,
                     const uv_buf_t *parts, size_t n, isv_piece *p, int more) {
  seen *s = isv_exchange_user(x);
  s->responds++;
  s->status = status;
  s->more = more;
  for (size_t i = 0; i < nh; i++)
    if (h[i].name_len == 12 && strncasecmp(h[i].name, "content-type", 12) == 0)
      snprintf(s->ctype, sizeof s->ctype, "%.*s", (int)h[i].value_len, h[i].value);
  if (s->fail_respond) {
    isv_piece_free(p);
    return -1;
  }
  take(s, parts, n, p);
  return 0;
}
static int h_write(isv_exchange *x, const uv_buf_t *parts, size_t n, isv_piece *p) {
  seen *s = isv_exchange_user(x);
  s->writes++;
  take(s, parts, n, p);
  return 0;
}
static void h_end(isv_exchange *x) { ((seen *)isv_exchange_user(x))->ends++; }

static const isv_exchange_carrier carrier = {sizeof carrier, h_respond, h_write, h_end};

/* completes 100 ms later from a thread of its own, or at once when cancelled */
static void slow_body(void *arg) {
  isv_request *r = arg;
  for (int i = 0; i < 100 && !isv_request_is_cancelled(r); i++) uv_sleep(1);
  isv_request_complete(r, isv_request_is_cancelled(r) ? ISV_ECANCELED : 0, NULL);
}
static int slow(isv_request *r, void *u) {
  world *w = u;
  w->slow_started = 1;
  return uv_thread_create(&w->slow_thread, slow_body, r) == 0 ? 0 : ISV_EINTERNAL;
}

static void add(world *w, const char *name, int (*fn)(isv_request *, void *), isv_exec_mode mode) {
  isv_model_config *c;
  isv_model_config_new(name, &c);
  int64_t any[] = {-1};
  isv_model_config_add_input(c, "x", ISV_FP32, any, 1);
  isv_model_config_add_output(c, "y", ISV_FP32, any, 1);
  isv_model_config_set_exec_mode(c, mode);
  isv_model_config_set_instances(c, 1);
  isv_backend be = {.struct_size = sizeof be, .infer = fn};
  assert_int_equal(isv_server_add_model(w->srv, c, "1", &be, w, NULL), 0);
  isv_model_config_free(c);
}

/* GET /stream: three Server-Sent Events */
static int stream_route(isv_http_request *req, void *u) {
  (void)u;
  int rc = isv_http_begin(req, 200, "text/event-stream");
  for (int i = 0; rc == 0 && i < 3; i++) {
    char ev[32];
    int n = snprintf(ev, sizeof ev, "data: %d\n\n", i);
    rc = isv_http_write(req, ev, (size_t)n, ISV_TRANSIENT);
  }
  return rc ? rc : isv_http_end(req);
}

static int setup(void **state) {
  world *w = calloc(1, sizeof *w);
  uv_loop_init(&w->loop);
  isv_options *o;
  isv_options_new(&o);
  isv_options_set_max_body_bytes(o, 4096);
  isv_options_set_max_header_bytes(o, 1024);
  assert_int_equal(isv_server_new(&w->loop, o, &w->srv), 0);
  isv_options_free(o);
  add(w, "twice", sf_twice, ISV_EXEC_INLINE);
  add(w, "slow", slow, ISV_EXEC_ASYNC);
  isv_route route = {.struct_size = sizeof route, .method = "GET", .path = "/stream",
                     .handler = stream_route};
  assert_int_equal(isv_server_add_route(w->srv, &route), 0);
  *state = w;
  return 0;
}

static void on_closed(isv_server *s, void *data) {
  (void)s;
  ((world *)data)->closed = 1;
}

static int teardown(void **state) {
  world *w = *state;
  if (w->srv && !w->closed) {
    isv_server_close(w->srv, on_closed, w);
    uv_run(&w->loop, UV_RUN_DEFAULT);
  }
  assert_true(w->closed);
  if (w->slow_started) uv_thread_join(&w->slow_thread);
  assert_int_equal(uv_loop_close(&w->loop), 0);
  free(w);
  return 0;
}

/* One exchange from start to answer; the loop runs until nothing is left to do. */
static isv_exchange *exchange(world *w, seen *s, const char *method, const char *target,
                              const char *body) {
  isv_exchange *x;
  assert_int_equal(isv_exchange_new(w->srv, &carrier, s, method, target, &x), 0);
  if (body) {
    assert_int_equal(isv_exchange_add_header(x, "Content-Type", 12, "application/json", 16), 0);
    size_t half = strlen(body) / 2; /* in two pieces, as a server reading a socket hands them */
    assert_int_equal(isv_exchange_append_body(x, body, half), 0);
    assert_int_equal(isv_exchange_append_body(x, body + half, strlen(body) - half), 0);
  }
  assert_int_equal(isv_exchange_set_peer(x, "192.0.2.7:40000", NULL), 0);
  return x;
}

static void run(world *w) { uv_run(&w->loop, UV_RUN_DEFAULT); }

static void rest_requests_are_answered_as_on_the_builtin_listeners(void **state) {
  world *w = *state;
  seen s = {0};
  isv_exchange *x = exchange(w, &s, "GET", "/v2/health/ready", NULL);
  assert_int_equal(isv_exchange_submit(x), 0);
  run(w);
  assert_int_equal(s.responds, 1);
  assert_int_equal(s.status, 200);
  assert_int_equal(s.more, 0);

  seen t = {0};
  x = exchange(w, &t, "POST", "/v2/models/twice/infer",
               "{\"inputs\":[{\"name\":\"x\",\"datatype\":\"FP32\",\"shape\":[3],"
               "\"data\":[1,2.5,-3]}]}");
  assert_int_equal(isv_exchange_submit(x), 0);
  run(w);
  assert_int_equal(t.responds, 1);
  assert_int_equal(t.status, 200);
  assert_string_equal(t.ctype, "application/json");
  t.body[t.body_len] = '\0';
  assert_non_null(strstr(t.body, "\"data\":[2.0,5.0,-6.0]"));

  seen u = {0};
  x = exchange(w, &u, "GET", "/v2/models/absent?x=1", NULL);
  assert_int_equal(isv_exchange_submit(x), 0);
  run(w);
  assert_int_equal(u.status, 404);
  u.body[u.body_len] = '\0';
  assert_non_null(strstr(u.body, "absent"));
}

static void limits_are_the_servers(void **state) {
  world *w = *state;
  seen s = {0};
  isv_exchange *x;
  assert_int_equal(isv_exchange_new(w->srv, &carrier, &s, "POST", "/v2/models/twice/infer", &x), 0);
  static char big[3000];
  memset(big, ' ', sizeof big);
  assert_int_equal(isv_exchange_append_body(x, big, sizeof big), 0);
  assert_int_equal(isv_exchange_append_body(x, big, sizeof big), ISV_ETOOBIG);
  assert_int_equal(isv_exchange_append_body(x, "x", 1), ISV_ETOOBIG); /* sticky */
  assert_int_equal(isv_exchange_submit(x), 0);
  run(w);
  assert_int_equal(s.status, 413);

  seen t = {0};
  assert_int_equal(isv_exchange_new(w->srv, &carrier, &t, "GET", "/v2", &x), 0);
  static char value[900];
  memset(value, 'v', sizeof value);
  assert_int_equal(isv_exchange_add_header(x, "X-A", 3, value, sizeof value), 0);
  assert_int_equal(isv_exchange_add_header(x, "X-B", 3, value, sizeof value), ISV_EHDRTOOBIG);
  assert_int_equal(isv_exchange_submit(x), 0); /* answered: x is gone */
  assert_int_equal(t.responds, 1);
  assert_int_equal(t.status, 431);
}

static void bad_arguments_are_refused(void **state) {
  world *w = *state;
  seen s = {0};
  isv_exchange *x = (isv_exchange *)&s;
  isv_exchange_carrier no_end = {sizeof no_end, h_respond, h_write, NULL};
  assert_int_equal(isv_exchange_new(w->srv, &no_end, &s, "GET", "/v2", &x), ISV_EINVAL);
  assert_null(x);
  assert_non_null(strstr(isv_server_last_error(w->srv), "carrier"));
  assert_int_equal(isv_exchange_new(w->srv, &carrier, &s, "G T", "/v2", &x), ISV_EINVAL);
  assert_int_equal(isv_exchange_new(w->srv, &carrier, &s, "GET", "v2", &x), ISV_EINVAL);
  assert_non_null(strstr(isv_server_last_error(w->srv), "'/'"));
  isv_grpc_call *c;
  isv_grpc_carrier none = {sizeof none, NULL, NULL};
  assert_int_equal(isv_grpc_call_new(w->srv, &none, NULL, "/a.B/C", &c), ISV_EINVAL);
  assert_int_equal(s.responds, 0);
}

static void streamed_answers_come_in_pieces_held_past_the_end(void **state) {
  world *w = *state;
  seen s = {0};
  s.hold = 1;
  isv_exchange *x = exchange(w, &s, "GET", "/stream", NULL);
  assert_int_equal(isv_exchange_submit(x), 0);
  run(w);
  assert_int_equal(s.responds, 1);
  assert_int_equal(s.more, 1);
  /* isv_http_write copies its pieces into one buffer per loop turn: the handler's three writes
   * (inline, in one turn) reach the carrier as one piece or more, in order — maybe all with
   * the head */
  assert_true(s.writes <= 3);
  assert_int_equal(s.ends, 1);
  s.body[s.body_len] = '\0';
  assert_string_equal(s.body, "data: 0\n\ndata: 1\n\ndata: 2\n\n");
  assert_true(s.n_held >= 1 && s.n_held <= 4);
  /* the pieces are still readable after the end (ASan would see a freed buffer) */
  for (size_t i = 0; i < s.n_held; i++) isv_piece_free(s.held[i]);
}

static void a_cancelled_exchange_is_never_answered(void **state) {
  world *w = *state;
  seen s = {0};
  isv_exchange *x = exchange(w, &s, "POST", "/v2/models/twice/infer", "{\"inputs\":[]}");
  isv_exchange_free(x); /* before submit: freed */
  run(w);
  assert_int_equal(s.responds, 0);

  seen t = {0};
  x = exchange(w, &t, "POST", "/v2/models/slow/infer",
               "{\"inputs\":[{\"name\":\"x\",\"datatype\":\"FP32\",\"shape\":[1],\"data\":[1]}]}");
  assert_int_equal(isv_exchange_submit(x), 0);
  uv_run(&w->loop, UV_RUN_NOWAIT);
  assert_true(w->slow_started);
  /* a second one waits in the model's queue (one instance): cancelled there, it is answered
   * inside the cancel — which must not free x under it */
  seen q = {0};
  isv_exchange *y = exchange(w, &q, "POST", "/v2/models/slow/infer",
                             "{\"inputs\":[{\"name\":\"x\",\"datatype\":\"FP32\",\"shape\":[1],"
                             "\"data\":[1]}]}");
  assert_int_equal(isv_exchange_submit(y), 0);
  uv_run(&w->loop, UV_RUN_NOWAIT);
  isv_exchange_free(y);
  isv_exchange_free(x); /* the client went away while the model ran */
  run(w);
  assert_int_equal(t.responds, 0);
  assert_int_equal(q.responds, 0);
}

static void a_carrier_that_fails_is_let_go(void **state) {
  world *w = *state;
  seen s = {0};
  s.fail_respond = 1;
  isv_exchange *x = exchange(w, &s, "GET", "/stream", NULL);
  assert_int_equal(isv_exchange_submit(x), 0);
  run(w);
  assert_int_equal(s.responds, 1);
  assert_int_equal(s.writes, 0); /* nothing more once the host said its client is gone */
  assert_int_equal(s.ends, 0);
}

static void the_close_waits_for_what_the_host_holds(void **state) {
  world *w = *state;
  seen s = {0};
  isv_exchange *x = exchange(w, &s, "GET", "/v2/health/live", NULL);
  assert_int_equal(isv_server_close(w->srv, on_closed, w), 0);
  isv_exchange *y;
  assert_int_equal(isv_exchange_new(w->srv, &carrier, &s, "GET", "/v2", &y), ISV_ESTATE);
  uv_run(&w->loop, UV_RUN_NOWAIT);
  assert_false(w->closed); /* x is still being built by the host */
  assert_int_equal(isv_exchange_submit(x), 0);
  run(w);
  assert_int_equal(s.responds, 1);
  assert_true(w->closed);
}

/* ---- gRPC --------------------------------------------------------------------------------- */

static int g_send(isv_grpc_call *c, const uv_buf_t *parts, size_t n, isv_piece *p) {
  seen *s = isv_grpc_call_user(c);
  s->writes++;
  take(s, parts, n, p);
  return 0;
}
static void g_finish(isv_grpc_call *c, int status, const char *message) {
  seen *s = isv_grpc_call_user(c);
  s->finishes++;
  s->status = status;
  snprintf(s->grpc_msg, sizeof s->grpc_msg, "%s", message);
}
static const isv_grpc_carrier gcarrier = {sizeof gcarrier, g_send, g_finish};

static isv_grpc_call *call(world *w, seen *s, const char *method) {
  isv_grpc_call *c;
  assert_int_equal(isv_grpc_call_new(w->srv, &gcarrier, s, method, &c), 0);
  assert_int_equal(isv_grpc_call_add_metadata(c, "x-trace", 7, "1", 1), 0);
  assert_int_equal(isv_grpc_call_set_peer(c, "[::1]:5000", "CN=client"), 0);
  return c;
}

static void grpc_calls_take_whole_messages(void **state) {
  world *w = *state;
  seen s = {0};
  isv_grpc_call *c = call(w, &s, "/inference.GRPCInferenceService/ServerLive");
  assert_int_equal(isv_grpc_call_append_message(c, "", 0), ISV_ESTATE); /* before start */
  assert_int_equal(isv_grpc_call_start(c), 0);
  assert_int_equal(isv_grpc_call_append_message(c, "", 0), 0); /* ServerLiveRequest: empty */
  isv_grpc_call_half_close(c);
  run(w);
  assert_int_equal(s.finishes, 1);
  assert_int_equal(s.status, 0);
  assert_int_equal(s.writes, 1);
  assert_int_equal(s.body_len, 2); /* ServerLiveResponse{live: true}: field 1 varint 1 */
  assert_memory_equal(s.body, "\x08\x01", 2);

  /* ModelReady{name: "twice"} */
  seen t = {0};
  c = call(w, &t, "/inference.GRPCInferenceService/ModelReady");
  assert_int_equal(isv_grpc_call_start(c), 0);
  assert_int_equal(isv_grpc_call_append_message(c, "\x0a\x05twice", 7), 0);
  isv_grpc_call_half_close(c);
  run(w);
  assert_int_equal(t.status, 0);
  assert_int_equal(t.body_len, 2);
  assert_memory_equal(t.body, "\x08\x01", 2);
}

/* ModelInfer through the seam: raw FP32 contents in, raw contents out. */
static void grpc_model_infer_runs_the_model(void **state) {
  world *w = *state;
  static const char req[] =
      "\x0a\x05twice"                                 /* 1 model_name */
      "\x2a\x0c" "\x0a\x01x" "\x12\x04" "FP32" "\x1a\x01\x02" /* 5 inputs {x, FP32, [2]} */
      "\x3a\x08" "\x00\x00\x80\x3f" "\x00\x00\x20\x40";    /* 7 raw: 1.0, 2.5 */
  seen s = {0};
  isv_grpc_call *c = call(w, &s, "/inference.GRPCInferenceService/ModelInfer");
  assert_int_equal(isv_grpc_call_start(c), 0);
  assert_int_equal(isv_grpc_call_append_message(c, req, sizeof req - 1), 0);
  isv_grpc_call_half_close(c);
  run(w);
  assert_int_equal(s.finishes, 1);
  assert_int_equal(s.status, 0);
  assert_int_equal(s.writes, 1);
  /* 6 raw_output_contents: 2.0, 5.0 */
  static const char raw[] = "\x32\x08" "\x00\x00\x00\x40" "\x00\x00\xa0\x40";
  int found = 0;
  for (size_t i = 0; i + sizeof raw - 1 <= s.body_len; i++)
    found |= memcmp(s.body + i, raw, sizeof raw - 1) == 0;
  assert_true(found);
}

static void grpc_errors_finish_the_call(void **state) {
  world *w = *state;
  seen s = {0};
  isv_grpc_call *c = call(w, &s, "/no.Such/Method");
  assert_int_equal(isv_grpc_call_start(c), 0);
  assert_int_equal(s.finishes, 1); /* before start returned */
  assert_int_equal(s.status, 12);  /* UNIMPLEMENTED */

  seen t = {0};
  c = call(w, &t, "/inference.GRPCInferenceService/ModelReady");
  assert_int_equal(isv_grpc_call_start(c), 0);
  static char big[5000];
  assert_int_equal(isv_grpc_call_append_message(c, big, sizeof big), ISV_ETOOBIG);
  assert_int_equal(t.finishes, 1);
  assert_int_equal(t.status, 8); /* RESOURCE_EXHAUSTED */
  assert_non_null(strstr(t.grpc_msg, "limit"));
  run(w);
  assert_int_equal(t.finishes, 1);

  seen u = {0};
  c = call(w, &u, "/inference.GRPCInferenceService/ServerReady");
  assert_int_equal(isv_grpc_call_start(c), 0);
  isv_grpc_call_free(c); /* the host's client went away: nothing more reaches the host */
  run(w);
  assert_int_equal(u.finishes, 0);
  assert_int_equal(u.writes, 0);

  seen v = {0};
  c = call(w, &v, "/inference.GRPCInferenceService/ServerReady");
  isv_grpc_call_free(c); /* never started */
  run(w);
  assert_int_equal(v.finishes, 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(rest_requests_are_answered_as_on_the_builtin_listeners,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(limits_are_the_servers, setup, teardown),
      cmocka_unit_test_setup_teardown(bad_arguments_are_refused, setup, teardown),
      cmocka_unit_test_setup_teardown(streamed_answers_come_in_pieces_held_past_the_end, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(a_cancelled_exchange_is_never_answered, setup, teardown),
      cmocka_unit_test_setup_teardown(a_carrier_that_fails_is_let_go, setup, teardown),
      cmocka_unit_test_setup_teardown(the_close_waits_for_what_the_host_holds, setup, teardown),
      cmocka_unit_test_setup_teardown(grpc_calls_take_whole_messages, setup, teardown),
      cmocka_unit_test_setup_teardown(grpc_model_infer_runs_the_model, setup, teardown),
      cmocka_unit_test_setup_teardown(grpc_errors_finish_the_call, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
