/* core/responses.c: a decoupled request's responses — sent from any thread, delivered on the
 * loop in order and before the final answer, each outliving the request that sent it — and the
 * backpressure on them: a stream whose undelivered responses reach the server's bound, or that
 * its front end blocked, refuses the next with ISV_EAGAIN, and the backend's writable callback
 * runs once there is room again (or the request was cancelled), never after completion. */
#include "cmocka_prelude.h"

#include <string.h>

#include "core/request.h"
#include "core/responses.h"
#include "core_fixture.h"
#include "core/scheduler.h"

/* An ISV_EXEC_ASYNC backend that keeps its request for the test to drive on the loop thread. */
static struct {
  isv_request *r;
  int writable_calls;
  int cancelled_seen;
} hold;

static int be_hold(isv_request *r, void *u) {
  (void)u;
  hold.r = r;
  return 0;
}

static int teardown(void **state) {
  cf_world_free(*state);
  return 0;
}

static struct {
  cf_result resp[8];
  int n;
  int order;
} dec;

static void on_response(isv_request *r, int status, void *data) {
  (void)data;
  if (dec.n < 8) {
    dec.resp[dec.n].order = &dec.order;
    cf_on_done(r, status, &dec.resp[dec.n]); /* frees r */
  } else {
    isv_request_free(r);
  }
  dec.n++;
}

/* Three responses (y = x, 2x, 3x) from a thread of its own, then completes with y = 10x. */
static void stream_main(void *arg) {
  isv_request *r = arg;
  const isv_tensor *x = isv_request_input(r, "x");
  for (int k = 1; k <= 4; k++) {
    float *y;
    if (isv_request_alloc_output(r, "y", ISV_FP32, isv_tensor_shape(x, NULL), 1, (void **)&y) != 0)
      break;
    *y = *(const float *)isv_tensor_data(x) * (k == 4 ? 10 : (float)k);
    if (k < 4) isv_request_send_response(r);
  }
  isv_request_complete(r, 0, NULL);
}

static uv_thread_t stream_thread;
static int be_stream(isv_request *r, void *u) {
  (void)u;
  return uv_thread_create(&stream_thread, stream_main, r) == 0 ? 0 : ISV_EINTERNAL;
}

static int setup(void **state) {
  memset(&dec, 0, sizeof dec);
  cf_world *w = cf_world_new(NULL);
  cf_model m = {.name = "stream", .infer = be_stream, .mode = ISV_EXEC_ASYNC, .decoupled = 1};
  cf_add(w, &m);
  cf_model plain = {.name = "plain", .infer = be_hold, .mode = ISV_EXEC_ASYNC};
  cf_add(w, &plain);
  cf_model held = {.name = "held", .infer = be_hold, .mode = ISV_EXEC_ASYNC, .decoupled = 1};
  cf_add(w, &held);
  memset(&hold, 0, sizeof hold);
  *state = w;
  return 0;
}

static void a_decoupled_model_streams_its_responses_in_order(void **state) {
  cf_world *w = *state;
  float x = 2;
  cf_result done = {0};
  done.order = &dec.order;
  isv_request *r = cf_request(w, "stream", &x, 1, 0);
  assert_int_equal(isv_request_set_response_cb(r, on_response, NULL), 0);
  cf_submit(w, r, &done);
  cf_wait(w, &done, 1);
  uv_thread_join(&stream_thread);
  assert_int_equal(dec.n, 3);
  for (int k = 0; k < 3; k++) {
    assert_int_equal(dec.resp[k].status, 0);
    assert_int_equal(dec.resp[k].order_no, k + 1); /* in order, all before the final */
    assert_true(dec.resp[k].y[0] == 2.0f * (float)(k + 1));
  }
  assert_int_equal(done.order_no, 4);
  assert_int_equal(done.status, 0);
  assert_true(done.n == 1 && done.y[0] == 20);
}

static void a_decoupled_model_needs_a_streaming_client(void **state) {
  cf_world *w = *state;
  float x = 2;
  cf_result res = {0};
  cf_submit(w, cf_request(w, "stream", &x, 1, 0), &res);
  assert_int_equal(res.status, ISV_EBADREQ);
  assert_string_equal(res.msg, "model 'stream' is decoupled (it streams any number of "
                               "responses): this endpoint answers once, use a streaming one");
  /* and a model that is not decoupled sends no response before completing */
  cf_result p = {0};
  cf_submit(w, cf_request(w, "plain", &x, 1, 0), &p);
  assert_int_equal(isv_request_send_response(hold.r), ISV_ESTATE);
  cf_scale(hold.r, 1);
  assert_int_equal(p.status, 0);
}

static isv_request *kept[8];
static int n_kept;
static void keep_response(isv_request *r, int status, void *data) {
  (void)status;
  (void)data;
  if (n_kept < 8) kept[n_kept++] = r;
}

static void a_response_outlives_the_request_that_sent_it(void **state) {
  cf_world *w = *state;
  float x = 3;
  cf_result done = {0};
  n_kept = 0;
  isv_request *r = cf_request(w, "stream", &x, 1, 0);
  isv_request_set_response_cb(r, keep_response, NULL);
  cf_submit(w, r, &done); /* cf_on_done frees the request while its responses are kept */
  cf_wait(w, &done, 1);
  uv_thread_join(&stream_thread);
  assert_int_equal(n_kept, 3);
  for (int k = 0; k < 3; k++) {
    const isv_tensor *y = isv_request_output(kept[k], "y");
    assert_non_null(y);
    assert_true(*(const float *)isv_tensor_data(y) == 3.0f * (float)(k + 1));
    assert_string_equal(isv_request_model_name(kept[k]), "stream");
    isv_request_free(kept[k]); /* the last one frees the request (LeakSanitizer checks) */
  }
}


/* y = v into the held request's output, then send it as a response. */
static int send_value(isv_request *r, float v) {
  int64_t one = 1;
  float *y;
  int rc = isv_request_alloc_output(r, "y", ISV_FP32, &one, 1, (void **)&y);
  if (rc != 0) return rc;
  *y = v;
  return isv_request_send_response(r);
}

static void on_writable(isv_request *r, void *user) {
  (void)user;
  hold.writable_calls++;
  hold.cancelled_seen = isv_request_is_cancelled(r);
}

static int setup_small(void **state) {
  /* a bound that one response (its 8 KiB arena at the least) already fills */
  isv_options *o;
  assert_int_equal(isv_options_new(&o), 0);
  assert_int_equal(isv_options_set_max_queued_stream_bytes(o, 1024), 0);
  cf_world *w = cf_world_new(o);
  isv_options_free(o);
  memset(&dec, 0, sizeof dec);
  memset(&hold, 0, sizeof hold);
  cf_model held = {.name = "held", .infer = be_hold, .mode = ISV_EXEC_ASYNC, .decoupled = 1};
  cf_add(w, &held);
  *state = w;
  return 0;
}

static void a_full_stream_refuses_until_delivery_makes_room(void **state) {
  cf_world *w = *state;
  float x = 1;
  cf_result done = {0};
  done.order = &dec.order;
  isv_request *r = cf_request(w, "held", &x, 1, 0);
  assert_int_equal(isv_request_set_response_cb(r, on_response, NULL), 0);
  cf_submit(w, r, &done);
  assert_ptr_equal(hold.r, r);
  assert_int_equal(send_value(r, 1), 0); /* an empty stream takes one, whatever its size */
  assert_int_equal(send_value(r, 7), ISV_EAGAIN); /* over the bound: refused, output kept */
  assert_int_equal(dec.n, 0); /* delivered from the loop, never inline */
  assert_int_equal(isv_request_on_writable(r, on_writable, NULL), 0);
  cf_run_for(w, 20);
  assert_int_equal(dec.n, 1);
  assert_true(dec.resp[0].y[0] == 1);
  assert_int_equal(hold.writable_calls, 1); /* room again: called once */
  assert_int_equal(hold.cancelled_seen, 0);
  assert_int_equal(isv_request_send_response(r), 0); /* the refused one, taken now */
  cf_run_for(w, 20);
  assert_int_equal(dec.n, 2);
  assert_true(dec.resp[1].n == 1 && dec.resp[1].y[0] == 7); /* set before it was refused */
  assert_int_equal(hold.writable_calls, 1); /* not called again unasked */
  assert_int_equal(cf_scale(r, 5), 0);
  cf_wait(w, &done, 1);
  assert_int_equal(done.status, 0);
  assert_int_equal(done.order_no, 3); /* after its responses */
}

static void a_front_end_block_holds_the_backend_until_resumed(void **state) {
  cf_world *w = *state;
  float x = 1;
  cf_result done = {0};
  isv_request *r = cf_request(w, "held", &x, 1, 0);
  assert_int_equal(isv__request_stream(r, on_response, NULL), 0);
  cf_submit(w, r, &done);
  isv__request_flow_block(r); /* the front end's own queue is full */
  assert_int_equal(send_value(r, 2), ISV_EAGAIN); /* even with nothing undelivered */
  assert_int_equal(isv_request_on_writable(r, on_writable, NULL), 0);
  cf_run_for(w, 20);
  assert_int_equal(hold.writable_calls, 0); /* still blocked */
  isv__request_flow_resume(r);
  assert_int_equal(hold.writable_calls, 1);
  assert_int_equal(isv_request_send_response(r), 0);
  assert_int_equal(cf_scale(r, 1), 0);
  cf_wait(w, &done, 1);
  assert_int_equal(dec.n, 1);
  assert_true(dec.resp[0].y[0] == 2);
}

static void a_cancelled_stream_wakes_its_waiting_backend(void **state) {
  cf_world *w = *state;
  float x = 1;
  cf_result done = {0};
  isv_request *r = cf_request(w, "held", &x, 1, 0);
  assert_int_equal(isv_request_set_response_cb(r, on_response, NULL), 0);
  cf_submit(w, r, &done);
  isv__request_flow_block(r);
  assert_int_equal(isv_request_on_writable(r, on_writable, NULL), 0);
  isv__core_cancel(r); /* the client went */
  assert_int_equal(hold.writable_calls, 1);
  assert_int_equal(hold.cancelled_seen, 1);
  assert_int_equal(isv_request_complete(r, ISV_ECANCELED, "client gone"), 0);
  cf_wait(w, &done, 1);
  assert_int_equal(done.status, ISV_ECANCELED);
}

static void after_completion_a_stream_takes_nothing(void **state) {
  cf_world *w = *state;
  float x = 1;
  cf_result done = {0};
  done.keep = 1;
  isv_request *r = cf_request(w, "held", &x, 1, 0);
  assert_int_equal(isv_request_set_response_cb(r, on_response, NULL), 0);
  cf_submit(w, r, &done);
  assert_int_equal(cf_scale(r, 1), 0);
  cf_wait(w, &done, 1);
  assert_int_equal(isv_request_send_response(r), ISV_ESTATE);
  assert_int_equal(isv_request_on_writable(r, on_writable, NULL), ISV_ESTATE);
  assert_int_equal(isv_request_set_response_cb(r, on_response, NULL), ISV_EINVAL);
  assert_int_equal(isv__request_stream(r, on_response, NULL), ISV_EINVAL); /* submitted */
  assert_int_equal(hold.writable_calls, 0);
  isv_request_free(r);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(a_decoupled_model_streams_its_responses_in_order, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(a_decoupled_model_needs_a_streaming_client, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(a_response_outlives_the_request_that_sent_it, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(a_full_stream_refuses_until_delivery_makes_room,
                                      setup_small, teardown),
      cmocka_unit_test_setup_teardown(a_front_end_block_holds_the_backend_until_resumed,
                                      setup_small, teardown),
      cmocka_unit_test_setup_teardown(a_cancelled_stream_wakes_its_waiting_backend, setup_small,
                                      teardown),
      cmocka_unit_test_setup_teardown(after_completion_a_stream_takes_nothing, setup_small,
                                      teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
