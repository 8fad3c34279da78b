/* grpc.health.v1.Health (protocol/health_grpc.c): Check called through its method table; Watch
 * through the call layer with a fake carrier, told of changes by the core's readiness watches. */
#include "cmocka_prelude.h"

#include <string.h>

#include "protocol/builtin.h"
#include "core/lifecycle.h"
#include "core/queries.h"
#include "core/watch.h"
#include "core/scheduler.h"

static uv_loop_t loop;
static isv__core core;
static isv__grpc_services services;

static int noop(isv_request *r, void *u) {
  (void)r;
  (void)u;
  return 0;
}

static int setup(void **state) {
  (void)state;
  uv_loop_init(&loop);
  isv_options o;
  isv__options_defaults(&o);
  assert_int_equal(isv__core_init(&core, &loop, &o), 0);
  isv__grpc_services_init(&services, &core);
  for (const isv__grpc_method *m = isv__v2_frontend.methods; m->path; m++)
    assert_int_equal(isv__grpc_services_add(&services, m, "v2_grpc"), 0);
  for (const isv__grpc_method *m = isv__grpc_health_frontend.methods; m->path; m++)
    assert_int_equal(isv__grpc_services_add(&services, m, "grpc_health"), 0);
  isv_model_config *c;
  isv_model_config_new("m", &c);
  isv_backend be = {.struct_size = sizeof be, .infer = noop};
  assert_int_equal(isv__registry_add(&core.reg, c, "1", &be, NULL, NULL), 0);
  isv_model_config_free(c);
  return 0;
}

static int teardown(void **state) {
  (void)state;
  isv__grpc_services_free(&services);
  isv__core_close(&core, NULL);
  uv_run(&loop, UV_RUN_DEFAULT);
  return uv_loop_close(&loop);
}

/* Run Check on a request message; returns the answer code, the response in out. */
static int check(const char *msg, size_t len, isv__buf *out, char *err) {
  const isv__grpc_method *m = isv__grpc_health_frontend.methods;
  assert_string_equal(m->path, "/grpc.health.v1.Health/Check");
  isv__grpc_unary u = {&core, &services, (const uint8_t *)msg, len, out, "", NULL, {0}};
  int rc = m->answer(&u);
  strcpy(err, u.err);
  return rc;
}

static void expect_status(const char *msg, size_t len, int serving) {
  isv__buf b;
  isv__buf_init(&b, NULL);
  char err[256];
  assert_int_equal(check(msg, len, &b, err), 0);
  assert_int_equal(b.len, 2);
  assert_memory_equal(b.data, serving ? "\x08\x01" : "\x08\x02", 2); /* SERVING / NOT_SERVING */
  isv__buf_free(&b);
}

static void server_service_and_models(void **state) {
  (void)state;
  expect_status("", 0, 1);                                            /* the server */
  expect_status("\x0a\x1e" "inference.GRPCInferenceService", 32, 1); /* a served service */
  expect_status("\x0a\x01m", 3, 1);                                   /* a model */
  assert_int_equal(isv__registry_entry(&core.reg, "m", 1)->versions->state, ISV_MODEL_READY);
  isv__registry_entry(&core.reg, "m", 1)->versions->state = ISV_MODEL_LOADING;
  expect_status("\x0a\x01m", 3, 0);
  expect_status("", 0, 1); /* the server stays ready (not strict) */
  isv__core_set_online(&core, 0);         /* offline: everything drains */
  expect_status("", 0, 0);
  expect_status("\x0a\x1e" "inference.GRPCInferenceService", 32, 0);
  isv__core_set_online(&core, 1);
}

static void unknown_and_malformed(void **state) {
  (void)state;
  isv__buf b;
  isv__buf_init(&b, NULL);
  char err[256];
  assert_int_equal(check("\x0a\x04nope", 6, &b, err), ISV_ENOTFOUND);
  assert_string_equal(err, "unknown service or model 'nope'");
  assert_int_equal(check("\x0a\x09" "abc", 5, &b, err), ISV_EBADREQ); /* truncated */
  assert_string_equal(err, "malformed HealthCheckRequest");
  char big[300] = "\x0a\xa0\x02";                                      /* a 288-byte name */
  memset(big + 3, 'x', 288);
  assert_int_equal(check(big, 291, &b, err), ISV_EBADREQ);
  isv__buf_free(&b);
}

/* ---- Watch through the call layer ---------------------------------------------------------- */

typedef struct fake {
  isv__grpc_call call;
  int finished, status;
  int n_sent;
  unsigned char sent[8]; /* each message's status (they are 2 bytes: 08 0s) */
  int full;              /* the carrier's queue is full (isv__grpc_writable) */
} fake;

static int fake_writable(isv__grpc_call *call) { return !((fake *)call->carrier)->full; }

static int fake_send(isv__grpc_call *call, const uv_buf_t *parts, size_t n, void (*release)(void *),
                     void *ctx) {
  fake *f = call->carrier;
  assert_false(f->finished);
  assert_int_equal(n, 1);
  assert_int_equal(parts[0].len, 2);
  assert_int_equal((unsigned char)parts[0].base[0], 0x08);
  f->sent[f->n_sent++] = (unsigned char)parts[0].base[1];
  if (release) release(ctx);
  return 0;
}

static void fake_finish(isv__grpc_call *call, int status, const char *message) {
  (void)message;
  fake *f = call->carrier;
  assert_false(f->finished);
  f->finished = 1;
  f->status = status;
}

static void watch(fake *f, const char *msg, size_t len) {
  memset(f, 0, sizeof *f);
  f->call.path = "/grpc.health.v1.Health/Watch";
  f->call.path_len = strlen(f->call.path);
  f->call.send = fake_send;
  f->call.finish = fake_finish;
  f->call.writable = fake_writable;
  f->call.carrier = f;
  isv__grpc_services_dispatch(&services, &f->call);
  uint8_t *m = isv__bigbuf_alloc(NULL, len ? len : 1, 0);
  memcpy(m, msg, len);
  f->call.on_message(&f->call, m, len, 0);
  f->call.on_half_close(&f->call);
}

enum { SERVING = 1, NOT_SERVING = 2, SERVICE_UNKNOWN = 3 };

static void watch_sends_each_change(void **state) {
  (void)state;
  fake server, model, unknown;
  watch(&server, "", 0);
  watch(&model, "\x0a\x01m", 3);
  watch(&unknown, "\x0a\x04nope", 6);
  assert_int_equal(server.n_sent, 1);
  assert_int_equal(server.sent[0], SERVING);
  assert_int_equal(model.sent[0], SERVING);
  assert_int_equal(unknown.sent[0], SERVICE_UNKNOWN);
  assert_false(unknown.finished); /* it goes on watching: not an error */
  isv__core_set_online(&core, 0);
  assert_int_equal(server.n_sent, 2);
  assert_int_equal(server.sent[1], NOT_SERVING);
  assert_int_equal(model.sent[1], NOT_SERVING);
  assert_int_equal(unknown.n_sent, 1); /* no change for it: nothing sent */
  isv__core_set_online(&core, 0);      /* no change at all */
  assert_int_equal(server.n_sent, 2);
  isv__core_set_online(&core, 1);
  assert_int_equal(server.sent[2], SERVING);
  assert_int_equal(model.sent[2], SERVING);
  isv__registry_entry(&core.reg, "m", 1)->versions->state = ISV_MODEL_LOADING;
  isv__core_readiness_changed(&core); /* as the core does after a state change */
  assert_int_equal(model.n_sent, 4);
  assert_int_equal(model.sent[3], NOT_SERVING);
  assert_int_equal(server.n_sent, 3); /* the server is still ready (not strict) */
  model.call.on_cancel(&model.call); /* the client leaves: its watcher goes */
  assert_int_equal(model.status, ISV__GRPC_CANCELLED);
  isv__core_readiness_changed(&core);
  assert_int_equal(model.n_sent, 4);
  isv__core_begin_close(&core, 0); /* the close: NOT_SERVING, then OK */
  assert_int_equal(server.sent[3], NOT_SERVING);
  assert_true(server.finished);
  assert_int_equal(server.status, 0);
  assert_int_equal(unknown.n_sent, 1); /* still unknown: nothing more to say, but it ends */
  assert_true(unknown.finished);
  assert_int_equal(unknown.status, 0);
  assert_null(core.watches); /* every watcher went */
}

/* A client that does not read: one message queued, then only the latest status once it
 * drained (no backlog of every flap). */
static void a_slow_reader_hears_the_latest(void **state) {
  (void)state;
  fake f;
  watch(&f, "", 0);
  assert_int_equal(f.sent[0], SERVING);
  f.full = 1;
  isv__core_set_online(&core, 0); /* sent: the queue is full after it */
  assert_int_equal(f.n_sent, 2);
  assert_int_equal(f.sent[1], NOT_SERVING);
  isv__core_set_online(&core, 1); /* held back */
  isv__core_set_online(&core, 0);
  isv__core_set_online(&core, 1);
  assert_int_equal(f.n_sent, 2);
  f.full = 0;
  f.call.on_writable(&f.call); /* drained: the status of the moment */
  assert_int_equal(f.n_sent, 3);
  assert_int_equal(f.sent[2], SERVING);
  f.call.on_writable(&f.call); /* nothing new */
  assert_int_equal(f.n_sent, 3);
  f.full = 1;
  isv__core_set_online(&core, 0);
  isv__core_begin_close(&core, 0); /* blocked at the close: it ends anyway */
  assert_true(f.finished);
  assert_int_equal(f.status, 0);
  fake late; /* a watch opened while closing: one answer, then OK */
  watch(&late, "", 0);
  assert_int_equal(late.n_sent, 1);
  assert_int_equal(late.sent[0], NOT_SERVING);
  assert_true(late.finished);
  assert_int_equal(late.status, 0);
  assert_null(core.watches);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(server_service_and_models, setup, teardown),
      cmocka_unit_test_setup_teardown(unknown_and_malformed, setup, teardown),
      cmocka_unit_test_setup_teardown(watch_sends_each_change, setup, teardown),
      cmocka_unit_test_setup_teardown(a_slow_reader_hears_the_latest, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
