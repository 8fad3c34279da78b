/* transport/http2.c, driven by an nghttp2 CLIENT session through the memory seam — no socket,
 * no loop, a fake clock (transport_fixture.h, tf_setup_mem): REST requests reach the exchange handler and their
 * responses come back; gRPC calls reach the grpc handler with whole messages, and the
 * service's messages and status come back (with trailers, or trailers-only); the limits and a
 * gRPC GET go to the error callback; RST_STREAM, an oversized message and the grpc-timeout
 * cancel a call; the idle deadline and a graceful close. Streamed REST answers: DATA frames as
 * the pieces come and END_STREAM at the end, flow control, HEAD, no deadline while the handler
 * is slow, a stream the client does not read reset after the send timeout; on_cancel on
 * RST_STREAM and on the connection going away — and never after the answer ended. Large REST
 * bodies of a known length: one block, faulted in off the loop first. */
#include "cmocka_prelude.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "transport/grpc_frame.h"
#include "transport_fixture.h"

static int int_set(tf_world *w, void *p) {
  (void)w;
  return *(int *)p != 0;
}

static tf_client *h2_client(tf_world *w) {
  tf_client *c = tf_connect(w);
  tf_h2_start(c);
  tf_h2_flush(c);
  return c;
}

/* "\0" + 4-byte length + msg */
static size_t grpc_frame(uint8_t *out, const char *msg) {
  size_t n = strlen(msg);
  out[0] = 0;
  out[1] = (uint8_t)(n >> 24);
  out[2] = (uint8_t)(n >> 16);
  out[3] = (uint8_t)(n >> 8);
  out[4] = (uint8_t)n;
  memcpy(out + 5, msg, n);
  return n + 5;
}

static tf_h2_stream *grpc_call(tf_client *c, const char *path, const uint8_t *body, size_t len,
                               int keep_open) {
  nghttp2_nv nv[] = {TF_NV(":method", "POST"),
                     TF_NV(":scheme", "http"),
                     TF_NV(":authority", "localhost"),
                     {(uint8_t *)":path", (uint8_t *)path, 5, strlen(path), NGHTTP2_NV_FLAG_NONE},
                     TF_NV("content-type", "application/grpc"),
                     TF_NV("te", "trailers"),
                     TF_NV("grpc-timeout", "20S")};
  tf_h2_stream *st = tf_h2_request(c, nv, 7, body, len, keep_open);
  tf_h2_flush(c);
  return st;
}


static tf_h2_stream *rest(tf_client *c, const char *method, const char *path) {
  nghttp2_nv nv[] = {
      {(uint8_t *)":method", (uint8_t *)method, 7, strlen(method), NGHTTP2_NV_FLAG_NONE},
      TF_NV(":scheme", "http"),
      TF_NV(":authority", "localhost"),
      {(uint8_t *)":path", (uint8_t *)path, 5, strlen(path), NGHTTP2_NV_FLAG_NONE}};
  tf_h2_stream *st = tf_h2_request(c, nv, 4, NULL, 0, 0);
  tf_h2_flush(c);
  return st;
}

typedef struct body_arg {
  tf_h2_stream *st;
  size_t n;
} body_arg;
static int body_reached(tf_world *w, void *arg) {
  (void)w;
  body_arg *a = arg;
  return a->st->body_len >= a->n;
}
/* Until st's body has n bytes. */
static void wait_body(tf_world *w, tf_h2_stream *st, size_t n) {
  body_arg a = {st, n};
  tf_run_until(w, body_reached, &a);
}

static void a_rest_get_reaches_the_exchange_handler(void **state) {
  tf_world *w = *state;
  tf_client *c = h2_client(w);
  nghttp2_nv nv[] = {TF_NV(":method", "GET"), TF_NV(":scheme", "http"),
                     TF_NV(":authority", "localhost"), TF_NV(":path", "/v2/health/ready?v=1"),
                     TF_NV("x-custom", "some value")};
  tf_h2_stream *st = tf_h2_request(c, nv, 5, NULL, 0, 0);
  tf_h2_flush(c);
  tf_h2_wait_closed(c, st);

  assert_int_equal(w->n_recs, 1);
  tf_rec *r = &w->recs[0];
  assert_int_equal(r->kind, TF_EXCHANGE);
  assert_int_equal(r->method, ISV__M_GET);
  assert_string_equal(r->method_name, "GET");
  assert_string_equal(r->path, "/v2/health/ready");
  assert_int_equal(r->path_len, 16);
  assert_string_equal(r->query, "v=1");
  assert_int_equal(r->query_len, 3);
  assert_non_null(strstr(r->headers, "x-custom: some value\n"));
  assert_non_null(strstr(r->headers, ":authority: localhost\n"));
  assert_int_equal(r->body_len, 0);

  assert_int_equal(st->error_code, NGHTTP2_NO_ERROR);
  assert_int_equal(st->status, 200);
  assert_string_equal(st->ctype, "text/plain");
  assert_int_equal(st->body_len, strlen("GET /v2/health/ready?v=1"));
  assert_memory_equal(st->body, "GET /v2/health/ready?v=1", st->body_len);
  assert_false(c->eof); /* the connection stays */
}

static void a_rest_post_with_a_body_is_answered(void **state) {
  tf_world *w = *state;
  tf_client *c = h2_client(w);
  static const char body[] = "{\"inputs\": [1, 2, 3]}";
  nghttp2_nv nv[] = {TF_NV(":method", "POST"), TF_NV(":scheme", "http"),
                     TF_NV(":authority", "localhost"), TF_NV(":path", "/v2/models/m/infer"),
                     TF_NV("content-type", "application/json")};
  tf_h2_stream *st = tf_h2_request(c, nv, 5, body, sizeof body - 1, 0);
  /* and a second stream on the same connection, answered later */
  nghttp2_nv nv2[] = {TF_NV(":method", "PUT"), TF_NV(":scheme", "http"),
                      TF_NV(":authority", "localhost"), TF_NV(":path", "/slow/put")};
  tf_h2_stream *st2 = tf_h2_request(c, nv2, 4, "xyz", 3, 0);
  tf_h2_flush(c);
  tf_h2_wait_closed(c, st);
  tf_h2_wait_closed(c, st2);

  assert_int_equal(w->n_recs, 2);
  tf_rec *r = w->recs[0].method == ISV__M_POST ? &w->recs[0] : &w->recs[1];
  assert_string_equal(r->path, "/v2/models/m/infer");
  assert_string_equal(r->query, "");
  assert_int_equal(r->body_len, sizeof body - 1);
  assert_string_equal(r->body, body);
  assert_int_equal(st->status, 200);
  char want[128];
  snprintf(want, sizeof want, "POST /v2/models/m/infer %s", body);
  assert_int_equal(st->body_len, strlen(want));
  assert_memory_equal(st->body, want, st->body_len);
  assert_int_equal(st2->status, 200);
  assert_int_equal(st2->body_len, strlen("PUT /slow/put xyz"));
  assert_memory_equal(st2->body, "PUT /slow/put xyz", st2->body_len);
}

static void a_grpc_unary_call_reaches_the_service_whole(void **state) {
  tf_world *w = *state;
  tf_client *c = h2_client(w);
  uint8_t body[64];
  size_t n = grpc_frame(body, "ping");
  tf_h2_stream *st = grpc_call(c, "/test.Echo/Unary", body, n, 0);
  tf_h2_wait_closed(c, st);

  assert_int_equal(w->n_recs, 1);
  tf_rec *r = &w->recs[0];
  assert_int_equal(r->kind, TF_GRPC);
  assert_string_equal(r->path, "/test.Echo/Unary");
  assert_int_equal(r->timeout_ms, 20000);
  assert_non_null(strstr(r->headers, "content-type: application/grpc\n"));
  tf_call *tc = &w->calls[0];
  assert_int_equal(tc->n_msgs, 1);
  assert_string_equal(tc->msgs, "ping");
  assert_true(tc->half_closed);
  assert_true(tc->finished);
  assert_int_equal(tc->cancelled, 0);
  /* the message reached the service before the half-close */
  assert_true(tf_event_pos(w, "message /test.Echo/Unary 4") <
              tf_event_pos(w, "half-close /test.Echo/Unary"));

  assert_int_equal(st->error_code, NGHTTP2_NO_ERROR);
  assert_int_equal(st->status, 200);
  assert_string_equal(st->ctype, "application/grpc");
  assert_int_equal(st->body_len, 5 + 9);
  assert_memory_equal(st->body, "\0\0\0\0\x09pong:ping", 14);
  assert_int_equal(st->grpc_status, 0);
  assert_true(st->grpc_in_trailers);
  assert_string_equal(st->grpc_message, "all good");
}

static void grpc_messages_split_across_data_frames_or_sharing_one_come_whole(void **state) {
  tf_world *w = *state;
  tf_client *c = h2_client(w);
  uint8_t body[256];
  size_t n = grpc_frame(body, "one");
  n += grpc_frame(body + n, "");
  n += grpc_frame(body + n, "three");
  /* the client sends it in DATA frames of 3 bytes, each read by the server on its own:
   * prefixes and messages split */
  tf_h2_stream *st = grpc_call(c, "/test.Echo/Unary", NULL, 0, 1);
  for (size_t off = 0; off < n; off += 3) {
    size_t k = n - off < 3 ? n - off : 3;
    st->req = body + off;
    st->req_len = k;
    st->req_off = 0;
    st->keep_open = off + k < n;
    assert_int_equal(nghttp2_session_resume_data(c->h2, st->id), 0);
    tf_h2_flush(c);
    tf_settle(w);
  }
  tf_h2_wait_closed(c, st);
  tf_call *tc = &w->calls[0];
  assert_int_equal(tc->n_msgs, 3);
  assert_string_equal(tc->msgs, "one,,three");
  assert_int_equal(st->body_len, 20);
  assert_memory_equal(st->body, "\0\0\0\0\x0fpong:one,,three", 20);
  assert_int_equal(st->grpc_status, 0);

  /* the same three in one DATA frame */
  tf_h2_stream *one = grpc_call(c, "/test.Echo/Unary", body, n, 0);
  tf_h2_wait_closed(c, one);
  assert_int_equal(w->calls[1].n_msgs, 3);
  assert_string_equal(w->calls[1].msgs, "one,,three");
  assert_memory_equal(one->body, "\0\0\0\0\x0fpong:one,,three", 20);
}

static void large_bodies_and_messages_arrive_whole(void **state) {
  tf_world *w = *state;
  tf_client *c = h2_client(w);
  size_t n = 200 * 1024; /* many DATA frames; the gRPC one read in batches */
  uint8_t *msg = malloc(n + 5);
  assert_non_null(msg);
  msg[0] = 0;
  msg[1] = (uint8_t)(n >> 24);
  msg[2] = (uint8_t)(n >> 16);
  msg[3] = (uint8_t)(n >> 8);
  msg[4] = (uint8_t)n;
  for (size_t i = 0; i < n; i++) msg[5 + i] = (uint8_t)(i * 13 + (i >> 9));
  uint32_t h = tf_hash(msg + 5, n);
  tf_h2_stream *g = grpc_call(c, "/test.Echo/Unary", msg, n + 5, 0);
  nghttp2_nv nv[] = {TF_NV(":method", "POST"), TF_NV(":scheme", "http"),
                     TF_NV(":authority", "localhost"), TF_NV(":path", "/big/rest")};
  tf_h2_stream *r = tf_h2_request(c, nv, 4, msg + 5, n, 0);
  tf_h2_flush(c);
  tf_h2_wait_closed(c, g);
  tf_h2_wait_closed(c, r);

  char want[96];
  int k = snprintf(want + 5, sizeof want - 5, "pong:<%zu bytes %08x>", n, (unsigned)h);
  assert_int_equal(g->grpc_status, 0);
  assert_int_equal(g->body_len, 5 + (size_t)k);
  assert_memory_equal(g->body + 5, want + 5, (size_t)k);
  snprintf(want, sizeof want, "POST /big/rest <%zu bytes %08x>", n, (unsigned)h);
  assert_int_equal(r->status, 200);
  assert_int_equal(r->body_len, strlen(want));
  assert_memory_equal(r->body, want, r->body_len);
  free(msg);
}

/* A REST body announced at 1 MiB or more is received into one block of its size (handed to the
 * exchange as a big buffer: ASan checks it is freed as one); a fresh block is faulted in off
 * the loop first — the connection stops reading until the job is done, the bytes that came
 * with the headers wait, then everything arrives whole. The job is held and run by the test. */

static uint8_t *pattern(size_t n) {
  uint8_t *b = malloc(n);
  assert_non_null(b);
  for (size_t i = 0; i < n; i++) b[i] = (uint8_t)(i * 13 + i / 7);
  return b;
}

static tf_h2_stream *rest_with_length(tf_client *c, const char *path, const uint8_t *body,
                                      size_t n) {
  char len[24];
  snprintf(len, sizeof len, "%zu", n);
  nghttp2_nv nv[] = {TF_NV(":method", "POST"), TF_NV(":scheme", "http"),
                     TF_NV(":authority", "localhost"),
                     {(uint8_t *)":path", (uint8_t *)path, 5, strlen(path), NGHTTP2_NV_FLAG_NONE},
                     {(uint8_t *)"content-length", (uint8_t *)len, 14, strlen(len),
                      NGHTTP2_NV_FLAG_NONE}};
  tf_h2_stream *st = tf_h2_request(c, nv, 5, body, n, 0);
  tf_h2_flush(c);
  return st;
}

static void a_large_rest_body_with_a_length_arrives_whole_in_one_block(void **state) {
  tf_world *w = *state;
  w->t.limits.max_body_bytes = w->t.limits.max_receiving = 8u << 20;
  tf_client *c = h2_client(w);
  size_t n = (size_t)3 << 20;
  uint8_t *body = pattern(n);
  tf_h2_stream *st = rest_with_length(c, "/big/rest", body, n);
  tf_h2_wait_closed(c, st);
  assert_int_equal(st->status, 200);
  assert_int_equal(w->n_recs, 1);
  assert_int_equal(w->recs[0].body_len, n);
  assert_int_equal(w->recs[0].body_hash, tf_hash(body, n));
  free(body);
}

static void a_fresh_rest_body_block_is_faulted_in_before_it_is_read_into(void **state) {
  tf_world *w = *state;
  w->t.h.offload = tf_hold_job;
  w->t.limits.max_body_bytes = w->t.limits.max_receiving = 8u << 20;
  tf_held_job = NULL;
  tf_jobs_offered = 0;
  tf_client *c = h2_client(w);
  size_t n = (size_t)3 << 20;
  uint8_t *body = pattern(n);
  tf_h2_stream *st = rest_with_length(c, "/big/rest", body, n);
  tf_run_for(w, 50);
  assert_int_equal(tf_jobs_offered, 1);
  assert_non_null(tf_held_job);
  assert_int_equal(tf_server_conn(c)->reading, 0); /* nothing read while the block is faulted in */
  assert_int_equal(w->n_recs, 0);
  tf_run_held_job();
  tf_h2_wait_closed(c, st);
  assert_int_equal(st->status, 200);
  assert_int_equal(w->n_recs, 1);
  assert_int_equal(w->recs[0].body_len, n);
  assert_int_equal(w->recs[0].body_hash, tf_hash(body, n));
  /* reading goes on: the next request on the connection is answered */
  tf_h2_stream *st2 = rest(c, "GET", "/after");
  tf_h2_wait_closed(c, st2);
  assert_int_equal(st2->status, 200);
  free(body);
}

/* The stream ends while its block is faulted in (its body stops arriving — the connection
 * does not read meanwhile — so the body deadline answers 408): the job frees the block once
 * done (LeakSanitizer and ASan watch), and the connection reads again at once. */
static void a_stream_ended_while_its_body_is_faulted_in_leaves_the_block_to_the_job(void **state) {
  tf_world *w = *state;
  w->t.h.offload = tf_hold_job;
  w->t.limits.max_body_bytes = w->t.limits.max_receiving = 8u << 20;
  w->t.limits.header_timeout_ms = 30;
  tf_held_job = NULL;
  tf_client *c = h2_client(w);
  size_t n = (size_t)2 << 20;
  uint8_t *body = pattern(n);
  tf_h2_stream *st = rest_with_length(c, "/big/rest", body, n);
  tf_run_for(w, 10);
  assert_non_null(tf_held_job);
  tf_h2_wait_closed(c, st); /* the 408, then the rest of its body is read and dropped */
  assert_int_equal(st->status, 408);
  assert_int_equal(w->n_recs, 1);
  assert_int_equal(w->recs[0].status, 408);
  tf_h2_stream *st2 = rest(c, "GET", "/after");
  tf_h2_wait_closed(c, st2); /* read although the job is still held */
  assert_int_equal(st2->status, 200);
  assert_non_null(tf_held_job);
  tf_run_held_job();
  free(body);
}

/* A gRPC message of 1 MiB or more whose block is fresh: faulted in off the loop before a byte
 * is copied into it, the connection not reading meanwhile; then it reaches the service whole,
 * and the half-close after it (END_STREAM came while the job was held). */
static void a_fresh_grpc_message_block_is_faulted_in_before_it_is_written(void **state) {
  tf_world *w = *state;
  w->t.h.offload = tf_hold_job;
  w->t.limits.max_body_bytes = w->t.limits.max_receiving = 8u << 20;
  tf_held_job = NULL;
  tf_jobs_offered = 0;
  tf_client *c = h2_client(w);
  size_t n = (size_t)2 << 20;
  uint8_t *msg = pattern(n + 5);
  isv__grpc_prefix(msg, n);
  uint32_t h = tf_hash(msg + 5, n);
  tf_h2_stream *g = grpc_call(c, "/test.Echo/Unary", msg, n + 5, 0);
  tf_run_for(w, 50);
  assert_int_equal(tf_jobs_offered, 1);
  assert_non_null(tf_held_job);
  assert_int_equal(tf_server_conn(c)->reading, 0);
  assert_int_equal(w->calls[0].n_msgs, 0);
  tf_run_held_job();
  tf_h2_wait_closed(c, g);
  char want[96];
  int k = snprintf(want, sizeof want, "pong:<%zu bytes %08x>", n, (unsigned)h);
  assert_int_equal(g->grpc_status, 0);
  assert_int_equal(g->body_len, 5 + (size_t)k);
  assert_memory_equal(g->body + 5, want, (size_t)k);
  assert_true(w->calls[0].half_closed);
  free(msg);
}

/* The call ends while its message's block is faulted in (its grpc-timeout): the job frees the
 * block once done, and the connection reads again at once. */
static void a_call_ended_while_its_message_is_faulted_in_leaves_the_block_to_the_job(void **state) {
  tf_world *w = *state;
  w->t.h.offload = tf_hold_job;
  w->t.limits.max_body_bytes = w->t.limits.max_receiving = 8u << 20;
  tf_held_job = NULL;
  tf_client *c = h2_client(w);
  size_t n = (size_t)2 << 20;
  uint8_t *msg = pattern(n + 5);
  isv__grpc_prefix(msg, n);
  nghttp2_nv nv[] = {TF_NV(":method", "POST"), TF_NV(":scheme", "http"),
                     TF_NV(":authority", "localhost"), TF_NV(":path", "/test.Echo/Unary"),
                     TF_NV("content-type", "application/grpc"), TF_NV("te", "trailers"),
                     TF_NV("grpc-timeout", "40m")};
  tf_h2_stream *g = tf_h2_request(c, nv, 7, msg, n + 5, 0);
  tf_h2_flush(c);
  tf_run_for(w, 10);
  assert_non_null(tf_held_job);
  tf_h2_wait_closed(c, g);
  assert_int_equal(g->grpc_status, 4); /* DEADLINE_EXCEEDED */
  tf_h2_stream *st2 = rest(c, "GET", "/after");
  tf_h2_wait_closed(c, st2);
  assert_int_equal(st2->status, 200);
  assert_non_null(tf_held_job);
  tf_run_held_job();
  free(msg);
}

static void a_grpc_call_finished_at_once_is_trailers_only(void **state) {
  tf_world *w = *state;
  tf_client *c = h2_client(w);
  uint8_t body[64];
  size_t n = grpc_frame(body, "x");
  tf_h2_stream *st = grpc_call(c, "/test.Echo/Fail", body, n, 0);
  tf_h2_wait_closed(c, st);
  assert_int_equal(w->recs[0].kind, TF_GRPC);
  assert_int_equal(st->status, 200);
  assert_string_equal(st->ctype, "application/grpc");
  assert_int_equal(st->body_len, 0);
  assert_int_equal(st->grpc_status, ISV__GRPC_NOT_FOUND);
  assert_false(st->grpc_in_trailers); /* in the one HEADERS frame */
  assert_string_equal(st->grpc_message, "no such thing: 100%25"); /* percent-encoded */
}

static void a_rest_body_over_the_limit_goes_to_the_error_callback(void **state) {
  tf_world *w = *state;
  w->t.limits.max_body_bytes = 64;
  tf_client *c = h2_client(w);
  static char body[200];
  memset(body, 'b', sizeof body);
  nghttp2_nv nv[] = {TF_NV(":method", "POST"), TF_NV(":scheme", "http"),
                     TF_NV(":authority", "localhost"), TF_NV(":path", "/v2/models/big/infer?q=1")};
  tf_h2_stream *st = tf_h2_request(c, nv, 4, body, sizeof body, 0);
  tf_h2_flush(c);
  tf_h2_wait_closed(c, st);
  assert_int_equal(w->n_recs, 1);
  tf_rec *r = &w->recs[0];
  assert_int_equal(r->kind, TF_ERROR);
  assert_int_equal(r->status, 413);
  assert_string_equal(r->msg, "request body exceeds the server's limit");
  assert_string_equal(r->path, "/v2/models/big/infer");
  assert_string_equal(r->query, "q=1");
  assert_string_equal(r->method_name, "POST");
  assert_int_equal(r->body_len, 0);
  assert_int_equal(st->status, 413);
  assert_memory_equal(st->body, "request body exceeds the server's limit", st->body_len);

  /* the connection goes on: exactly the limit is fine */
  tf_h2_stream *ok = tf_h2_request(c, nv, 4, body, 64, 0);
  tf_h2_flush(c);
  tf_h2_wait_closed(c, ok);
  assert_int_equal(ok->status, 200);
  assert_int_equal(w->recs[1].kind, TF_EXCHANGE);
  assert_int_equal(w->recs[1].body_len, 64);
}

static void a_header_block_over_the_limit_gets_431(void **state) {
  tf_world *w = *state;
  w->t.limits.max_header_bytes = 200;
  tf_client *c = h2_client(w);
  static char big[300];
  memset(big, 'v', sizeof big);
  nghttp2_nv nv[] = {TF_NV(":method", "GET"),
                     TF_NV(":scheme", "http"),
                     TF_NV(":authority", "localhost"),
                     TF_NV(":path", "/big/headers"),
                     {(uint8_t *)"x-big", (uint8_t *)big, 5, sizeof big, NGHTTP2_NV_FLAG_NONE}};
  tf_h2_stream *st = tf_h2_request(c, nv, 5, NULL, 0, 0);
  tf_h2_flush(c);
  tf_h2_wait_closed(c, st);
  assert_int_equal(w->n_recs, 1);
  assert_int_equal(w->recs[0].kind, TF_ERROR);
  assert_int_equal(w->recs[0].status, 431);
  assert_string_equal(w->recs[0].path, "/big/headers");
  assert_int_equal(st->status, 431);
}

static int round_done(tf_world *w, void *arg) {
  (void)w;
  tf_client *c = arg;
  int open = 0;
  for (int i = 0; i < c->n_streams; i++) open += !c->streams[i].closed;
  return open == 0 || c->eof;
}

/* `rounds` x 8 GETs, each with an x-big header of `big` bytes, answered one round at a time,
 * until the server ends the connection. */
static void header_rounds(tf_client *c, int rounds, size_t big) {
  static char v[8192];
  memset(v, 'v', sizeof v);
  nghttp2_nv nv[] = {TF_NV(":method", "GET"), TF_NV(":scheme", "http"),
                     TF_NV(":authority", "localhost"), TF_NV(":path", "/h"),
                     {(uint8_t *)"x-big", (uint8_t *)v, 5, big, NGHTTP2_NV_FLAG_NONE}};
  for (int r = 0; r < rounds && !c->eof; r++) {
    tf_h2_stream *st[TF_MAX_STREAMS];
    for (int i = 0; i < TF_MAX_STREAMS; i++) st[i] = tf_h2_request(c, nv, 5, NULL, 0, 0);
    tf_h2_flush(c);
    tf_run_until(c->w, round_done, c);
    if (c->eof) break;
    for (int i = 0; i < TF_MAX_STREAMS; i++) assert_int_equal(st[i]->status, 200);
    tf_h2_forget(c);
  }
}

static void a_fast_client_s_ordinary_headers_are_no_flood(void **state) {
  /* 4,800 requests with 4 KB of headers each (one HPACK byte on the wire once the header is in
   * the table): ~19.7 MB decoded within one second, past the 16 MiB a second, but each
   * stream's first 4 KiB are free — as for a client at 80k requests a second with 200 bytes */
  tf_client *c = h2_client(*state);
  header_rounds(c, 600, 4000);
  assert_false(c->goaway_received);
  assert_false(c->eof);
}

static void headers_past_the_free_bytes_count_toward_the_rate(void **state) {
  /* 7.6 KB each (under the 8 KiB limit): ~3.5 KB of each counts, so ENHANCE_YOUR_CALM comes
   * within ~4,800 streams */
  tf_client *c = h2_client(*state);
  header_rounds(c, 1000, 7600);
  assert_true(c->goaway_received && c->eof);
}

static void a_grpc_get_goes_to_the_error_callback_with_405(void **state) {
  tf_world *w = *state;
  tf_client *c = h2_client(w);
  nghttp2_nv nv[] = {TF_NV(":method", "GET"), TF_NV(":scheme", "http"),
                     TF_NV(":authority", "localhost"), TF_NV(":path", "/test.Echo/Unary"),
                     TF_NV("content-type", "application/grpc")};
  tf_h2_stream *st = tf_h2_request(c, nv, 5, NULL, 0, 0);
  tf_h2_flush(c);
  tf_h2_wait_closed(c, st);
  assert_int_equal(w->n_recs, 1);
  tf_rec *r = &w->recs[0];
  assert_int_equal(r->kind, TF_ERROR);
  assert_int_equal(r->status, 405);
  assert_string_equal(r->msg, "gRPC calls must use POST");
  assert_string_equal(r->path, "/test.Echo/Unary");
  assert_int_equal(w->n_calls, 0); /* the grpc handler never saw it */
  assert_int_equal(st->status, 405);
}

static void rst_stream_from_the_client_cancels_the_call(void **state) {
  tf_world *w = *state;
  tf_client *c = h2_client(w);
  uint8_t body[64];
  size_t n = grpc_frame(body, "wait");
  tf_h2_stream *st = grpc_call(c, "/test.Echo/Hold", body, n, 1); /* no END_STREAM */
  tf_wait_recs(w, 1);
  tf_call *tc = &w->calls[0];
  tf_run_until(w, int_set, &tc->n_msgs);
  assert_string_equal(tc->msgs, "wait");
  assert_int_equal(tc->cancelled, 0);

  assert_int_equal(nghttp2_submit_rst_stream(c->h2, NGHTTP2_FLAG_NONE, st->id, NGHTTP2_CANCEL),
                   0);
  tf_h2_flush(c);
  tf_h2_wait_closed(c, st);
  tf_run_until(w, int_set, &tc->finished);
  assert_int_equal(tc->cancelled, 1); /* once */
  assert_false(tc->half_closed);
  assert_true(tf_event_pos(w, "cancel /test.Echo/Hold") >= 0);
  /* the connection is still usable */
  tf_h2_stream *st2 = grpc_call(c, "/test.Echo/Unary", body, n, 0);
  tf_h2_wait_closed(c, st2);
  assert_int_equal(st2->grpc_status, 0);
  assert_memory_equal(st2->body, "\0\0\0\0\x09pong:wait", 14);
}

static int conn_idle(tf_world *w, void *arg) {
  (void)arg;
  return w->n_clients && tf_server_conn(&w->clients[0])->idle;
}

/* The exchange outlives its stream: what the handler reads of it stays valid (ASan). */
static void a_rest_exchange_reset_by_its_client_is_answered_into_the_void(void **state) {
  tf_world *w = *state;
  tf_client *c = h2_client(w);
  nghttp2_nv nv[] = {TF_NV(":method", "PUT"), TF_NV(":scheme", "http"),
                     TF_NV(":authority", "localhost"), TF_NV(":path", "/hold/reset?q=1"),
                     TF_NV("x-kept", "value")};
  tf_h2_stream *st = tf_h2_request(c, nv, 5, "body", 4, 0);
  tf_h2_flush(c);
  tf_wait_recs(w, 1);
  assert_int_equal(nghttp2_submit_rst_stream(c->h2, NGHTTP2_FLAG_NONE, st->id, NGHTTP2_CANCEL),
                   0);
  tf_h2_flush(c);
  tf_run_until(w, conn_idle, NULL); /* the server let go of the stream */
  isv__exchange *ex = w->held[0];
  assert_string_equal(ex->method_name, "PUT");
  assert_string_equal(ex->path, "/hold/reset");
  assert_string_equal(ex->query, "q=1");
  const isv__header *h = isv__exchange_header(ex, "x-kept");
  assert_non_null(h);
  assert_memory_equal(h->value, "value", 5);
  assert_memory_equal(ex->body, "body", 4);
  tf_answer_held(w); /* into the void */
  /* the connection goes on */
  nghttp2_nv nv2[] = {TF_NV(":method", "GET"), TF_NV(":scheme", "http"),
                      TF_NV(":authority", "localhost"), TF_NV(":path", "/ok")};
  tf_h2_stream *ok = tf_h2_request(c, nv2, 4, NULL, 0, 0);
  tf_h2_flush(c);
  tf_h2_wait_closed(c, ok);
  assert_int_equal(ok->status, 200);
}

static void a_message_over_the_limit_ends_the_call_with_resource_exhausted(void **state) {
  tf_world *w = *state;
  w->t.limits.max_body_bytes = 16;
  tf_client *c = h2_client(w);
  uint8_t body[64];
  size_t n = grpc_frame(body, "this message is too long");
  tf_h2_stream *st = grpc_call(c, "/test.Echo/Unary", body, n, 0);
  tf_h2_wait_closed(c, st);
  assert_int_equal(st->status, 200);
  assert_int_equal(st->grpc_status, ISV__GRPC_RESOURCE_EXHAUSTED);
  assert_string_equal(st->grpc_message,
                      "message of 24 bytes exceeds the server's limit of 16");
  tf_call *tc = &w->calls[0];
  tf_run_until(w, int_set, &tc->finished);
  assert_int_equal(tc->n_msgs, 0); /* never delivered */
  assert_int_equal(tc->cancelled, 1); /* the service heard of it, once */
}

static void compressed_messages_need_a_grpc_encoding_the_server_knows(void **state) {
  tf_world *w = *state;
  tf_client *c = h2_client(w);
  /* flag 1 without a grpc-encoding: gRPC's spec says INTERNAL; never delivered */
  uint8_t body[] = {1, 0, 0, 0, 2, 'h', 'i'};
  tf_h2_stream *st = grpc_call(c, "/test.Echo/Unary", body, sizeof body, 0);
  tf_h2_wait_closed(c, st);
  assert_int_equal(st->grpc_status, ISV__GRPC_INTERNAL);
  tf_call *tc = &w->calls[0];
  tf_run_until(w, int_set, &tc->finished);
  assert_int_equal(tc->n_msgs, 0);
  /* an encoding it does not know: UNIMPLEMENTED, and the ones it does */
  nghttp2_nv br[] = {TF_NV(":method", "POST"), TF_NV(":scheme", "http"),
                     TF_NV(":authority", "localhost"), TF_NV(":path", "/test.Echo/Unary"),
                     TF_NV("content-type", "application/grpc"), TF_NV("grpc-encoding", "br")};
  st = tf_h2_request(c, br, 6, body, sizeof body, 0);
  tf_h2_flush(c);
  tf_h2_wait_closed(c, st);
  assert_int_equal(st->grpc_status, ISV__GRPC_UNIMPLEMENTED);
  /* gzip: the message goes to the service whole, marked compressed, with the call's coding */
  nghttp2_nv gz[] = {TF_NV(":method", "POST"), TF_NV(":scheme", "http"),
                     TF_NV(":authority", "localhost"), TF_NV(":path", "/test.Echo/Unary"),
                     TF_NV("content-type", "application/grpc"), TF_NV("grpc-encoding", "gzip")};
  st = tf_h2_request(c, gz, 6, body, sizeof body, 0);
  tf_h2_flush(c);
  tf_h2_wait_closed(c, st);
  tc = &w->calls[1];
  tf_run_until(w, int_set, &tc->finished);
  assert_int_equal(tc->n_msgs, 1);
  assert_string_equal(tc->msgs, "z:hi"); /* the fixture marks compressed messages */
  assert_int_equal(w->recs[1].coding, ISV__CODING_GZIP);
}

static void the_grpc_timeout_cancels_a_call_that_runs_over(void **state) {
  tf_world *w = *state;
  tf_client *c = h2_client(w);
  nghttp2_nv nv[] = {TF_NV(":method", "POST"), TF_NV(":scheme", "http"),
                     TF_NV(":authority", "localhost"), TF_NV(":path", "/test.Echo/Hold"),
                     TF_NV("content-type", "application/grpc+proto"),
                     TF_NV("grpc-timeout", "30m")};
  uint64_t start = w->clock;
  tf_h2_stream *st = tf_h2_request(c, nv, 6, NULL, 0, 0);
  tf_h2_flush(c);
  tf_h2_wait_closed(c, st);
  assert_int_equal(w->recs[0].timeout_ms, 30);
  /* the fake clock went to the deadline (the connection's heap armed the seam), not past the
   * idle timeout or anything else */
  assert_true(w->clock >= start + 30 && w->clock < start + 1000);
  assert_int_equal(st->grpc_status, ISV__GRPC_DEADLINE_EXCEEDED);
  assert_string_equal(st->grpc_message, "deadline exceeded");
  tf_call *tc = &w->calls[0];
  tf_run_until(w, int_set, &tc->finished);
  /* Exactly once, though the service finishes later: the transport ended the call, and the
   * stream's close must not tell the service again (it did). */
  assert_int_equal(tc->cancelled, 1);
}

static void a_rest_body_that_stops_arriving_gets_408(void **state) {
  tf_world *w = *state;
  w->t.limits.header_timeout_ms = 50;
  tf_client *c = h2_client(w);
  nghttp2_nv nv[] = {TF_NV(":method", "POST"), TF_NV(":scheme", "http"),
                     TF_NV(":authority", "localhost"), TF_NV(":path", "/stalled?x=y")};
  uint64_t start = w->clock;
  tf_h2_stream *st = tf_h2_request(c, nv, 4, "part", 4, 1); /* and then nothing */
  tf_h2_flush(c);
  tf_h2_wait_closed(c, st);
  assert_true(w->clock >= start + 50 && w->clock < start + 1000); /* its deadline, on the clock */
  assert_int_equal(w->n_recs, 1);
  tf_rec *r = &w->recs[0];
  assert_int_equal(r->kind, TF_ERROR);
  assert_int_equal(r->status, 408);
  assert_string_equal(r->path, "/stalled");
  assert_string_equal(r->query, "x=y");
  assert_int_equal(r->body_len, 0);
  assert_int_equal(st->status, 408);
  assert_true(st->rst_received); /* neither side keeps the half-sent stream */
  assert_false(c->eof);          /* the connection goes on */
}

/* Every stream keeps its own deadline in the connection's one heap, whatever the order they
 * were armed in: six gRPC calls with scrambled grpc-timeouts and a REST body that stops
 * arriving end one by one at their own times (the fake clock makes the order exact), each with
 * its own answer; then the connection serves a new stream as before. */
static void many_streams_each_keep_their_deadline(void **state) {
  tf_world *w = *state;
  w->t.limits.header_timeout_ms = 35; /* the REST body's */
  tf_client *c = h2_client(w);
  static const char *const timeouts[] = {"60m", "10m", "50m", "20m", "40m", "30m"};
  const uint64_t ms[] = {60, 10, 50, 20, 40, 30};
  tf_h2_stream *calls[6];
  for (int i = 0; i < 6; i++) {
    nghttp2_nv nv[] = {TF_NV(":method", "POST"), TF_NV(":scheme", "http"),
                       TF_NV(":authority", "localhost"), TF_NV(":path", "/test.Echo/Hold"),
                       TF_NV("content-type", "application/grpc"),
                       {(uint8_t *)"grpc-timeout", (uint8_t *)timeouts[i], 12, 3,
                        NGHTTP2_NV_FLAG_NONE}};
    calls[i] = tf_h2_request(c, nv, 6, NULL, 0, 1); /* the client keeps sending: only the
                                                     * deadline ends them */
  }
  nghttp2_nv nv[] = {TF_NV(":method", "POST"), TF_NV(":scheme", "http"),
                     TF_NV(":authority", "localhost"), TF_NV(":path", "/stalled")};
  tf_h2_stream *stalled = tf_h2_request(c, nv, 4, "part", 4, 1);
  tf_h2_flush(c);
  tf_wait_recs(w, 6);
  uint64_t start = w->clock;
  for (uint64_t t = 10; t <= 60; t += 5) {
    /* at each deadline, the stream(s) due and no other */
    tf_run_for(w, t + start - w->clock);
    for (int i = 0; i < 6; i++) {
      assert_int_equal(calls[i]->closed, ms[i] <= t);
      if (ms[i] <= t) assert_int_equal(calls[i]->grpc_status, ISV__GRPC_DEADLINE_EXCEEDED);
    }
    assert_int_equal(stalled->closed, 35 <= t);
  }
  assert_int_equal(stalled->status, 408);
  for (int i = 0; i < 6; i++) assert_int_equal(w->calls[i].cancelled, 1);
  assert_int_equal(w->recs[6].kind, TF_ERROR);
  assert_int_equal(w->recs[6].status, 408);
  tf_h2_stream *ok = rest(c, "GET", "/ok");
  tf_h2_wait_closed(c, ok);
  assert_int_equal(ok->status, 200);
  assert_false(c->eof);
}

static void closing_the_transport_ends_a_call_still_waiting_for_its_client(void **state) {
  tf_world *w = *state;
  tf_client *c = h2_client(w);
  uint8_t body[64];
  size_t n = grpc_frame(body, "first");
  tf_h2_stream *st = grpc_call(c, "/test.Echo/Hold", body, n, 1); /* the client keeps sending */
  tf_wait_recs(w, 1);
  tf_call *tc = &w->calls[0];
  tf_run_until(w, int_set, &tc->n_msgs);
  tf_close_transport(w);
  tf_h2_wait_closed(c, st);
  /* no on_drain: the transport ends it, UNAVAILABLE so that the client goes elsewhere */
  assert_int_equal(st->grpc_status, ISV__GRPC_UNAVAILABLE);
  assert_string_equal(st->grpc_message, "server is shutting down");
  assert_true(c->goaway_received);
  tf_run_until(w, int_set, &tc->finished);
  assert_int_equal(tc->cancelled, 1);
  tf_wait_eof(c);
}

static void shutdown_is_two_goaways_around_a_ping(void **state) {
  tf_world *w = *state;
  tf_client *c = h2_client(w);
  nghttp2_nv nv[] = {TF_NV(":method", "GET"), TF_NV(":scheme", "http"),
                     TF_NV(":authority", "localhost"), TF_NV(":path", "/hold/h2")};
  tf_h2_stream *st = tf_h2_request(c, nv, 4, NULL, 0, 0); /* held: the client stays */
  tf_h2_flush(c);
  tf_wait_recs(w, 1);
  tf_close_transport(w);
  /* the client (nghttp2) answers the PING: the final GOAWAY follows */
  for (int i = 0; i < 200 && c->n_goaways < 2; i++) tf_settle(w);
  assert_int_equal(c->n_goaways, 2);
  assert_int_equal(c->goaway_last[0], INT32_MAX); /* "open no more": what comes is served */
  assert_int_equal(c->goaway_last[1], 1);         /* the last stream processed */
  tf_answer_held(w);
  tf_h2_wait_closed(c, st);
  assert_int_equal(st->status, 200);
  tf_wait_eof(c);
}

static void the_idle_deadline_closes_a_connection_without_streams(void **state) {
  tf_world *w = *state;
  w->t.limits.idle_timeout_ms = 50;
  tf_client *c = h2_client(w);
  nghttp2_nv nv[] = {TF_NV(":method", "GET"), TF_NV(":scheme", "http"),
                     TF_NV(":authority", "localhost"), TF_NV(":path", "/once")};
  tf_h2_stream *st = tf_h2_request(c, nv, 4, NULL, 0, 0);
  tf_h2_flush(c);
  tf_h2_wait_closed(c, st);
  assert_int_equal(st->status, 200);
  tf_wait_eof(c);
  tf_wait_stream_closed(c);
}

static void closing_the_transport_lets_a_stream_in_flight_finish(void **state) {
  tf_world *w = *state;
  tf_client *c = h2_client(w);
  nghttp2_nv nv[] = {TF_NV(":method", "GET"), TF_NV(":scheme", "http"),
                     TF_NV(":authority", "localhost"), TF_NV(":path", "/hold/h2")};
  tf_h2_stream *st = tf_h2_request(c, nv, 4, NULL, 0, 0);
  tf_h2_flush(c);
  tf_wait_recs(w, 1);
  tf_close_transport(w);
  tf_settle(w);
  assert_true(c->goaway_received);
  assert_false(c->eof);
  assert_int_equal(w->transport_closed, 0);
  tf_answer_held(w);
  tf_h2_wait_closed(c, st);
  assert_int_equal(st->status, 200);
  assert_memory_equal(st->body, "GET /hold/h2", 12);
  tf_wait_eof(c);
  tf_wait_stream_closed(c);
}


/* ---- streamed REST answers --------------------------------------------------------------- */

static void a_streamed_answer_comes_as_data_frames_then_end_stream(void **state) {
  tf_world *w = *state;
  tf_client *c = h2_client(w);
  tf_h2_stream *st = rest(c, "GET", "/stream/manual/sse");
  tf_run_until(w, int_set, &st->status); /* the headers, before any piece */
  assert_int_equal(st->status, 200);
  assert_string_equal(st->ctype, "text/plain");
  assert_false(st->has_clen);
  assert_int_equal(st->data_frames, 0);
  assert_int_equal(tf_stream_write_str(w, 0, "data: 1\n\n"), 0);
  wait_body(w, st, 9);
  assert_int_equal(st->data_frames, 1);
  assert_int_equal(tf_stream_write_str(w, 0, "data: 2\n\n"), 0);
  wait_body(w, st, 18);
  assert_int_equal(st->data_frames, 2);
  assert_false(st->closed);
  tf_stream_end(w, 0);
  tf_h2_wait_closed(c, st);
  assert_int_equal(st->error_code, NGHTTP2_NO_ERROR);
  assert_true(st->data_end_stream);
  assert_int_equal(st->data_frames, 3); /* the last one empty, with END_STREAM */
  assert_memory_equal(st->body, "data: 1\n\ndata: 2\n\n", 18);
  assert_int_equal(st->body_len, 18);

  /* timer-driven, on the same connection */
  tf_h2_stream *t = rest(c, "GET", "/stream/t?x");
  tf_h2_wait_closed(c, t);
  static const char want[] = "GET /stream/t\npiece 0\npiece 1\npiece 2\n";
  assert_int_equal(t->body_len, sizeof want - 1);
  assert_memory_equal(t->body, want, sizeof want - 1);
  assert_false(t->has_clen);
  assert_true(t->data_end_stream);
  assert_int_equal(w->recs[0].cancels + w->recs[1].cancels, 0);
  assert_false(c->eof);
}

/* One piece of 12 parts, small ones (copied next to their frame headers) between large ones
 * (referenced): one write's copies outgrow its inline room (512 bytes) and its segments their
 * first array (8), and the bytes still come in order (all of them within the client's 8 KiB). */
static void a_piece_of_many_small_and_large_parts_comes_whole(void **state) {
  tf_world *w = *state;
  tf_client *c = h2_client(w);
  tf_h2_stream *st = rest(c, "GET", "/stream/manual/parts");
  tf_run_until(w, int_set, &st->status);
  size_t lens[12], total = 0;
  for (size_t k = 0; k < 12; k++) total += lens[k] = k % 2 ? 1100 + k : 100 + k;
  char *data = malloc(total);
  assert_non_null(data);
  for (size_t i = 0; i < total; i++) data[i] = (char)('a' + (i * 7) % 26);
  assert_int_equal(tf_stream_write_parts(w, 0, data, lens, 12), 0);
  tf_stream_end(w, 0);
  tf_h2_wait_closed(c, st);
  assert_int_equal(st->error_code, NGHTTP2_NO_ERROR);
  assert_int_equal(st->body_len, total);
  assert_memory_equal(st->body, data, total);
  free(data);
}

static void a_streamed_answer_keeps_to_the_client_s_flow_control_window(void **state) {
  tf_world *w = *state;
  tf_client *c = tf_connect(w);
  tf_h2_start(c);
  nghttp2_settings_entry iv[] = {{NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, 16}};
  assert_int_equal(nghttp2_submit_settings(c->h2, NGHTTP2_FLAG_NONE, iv, 1), 0);
  tf_h2_flush(c);
  tf_h2_stream *st = rest(c, "GET", "/stream/manual/fc");
  tf_wait_recs(w, 1);
  char piece[100];
  for (size_t i = 0; i < sizeof piece; i++) piece[i] = (char)('a' + i % 26);
  assert_int_equal(tf_stream_write(w, 0, piece, sizeof piece), 0);
  tf_stream_end(w, 0);
  tf_h2_wait_closed(c, st); /* the client's window updates let it through, 16 bytes at a time */
  assert_int_equal(st->error_code, NGHTTP2_NO_ERROR);
  assert_int_equal(st->body_len, sizeof piece);
  assert_memory_equal(st->body, piece, sizeof piece);
  assert_true(st->data_frames >= 7);
}

static void a_streamed_answer_to_head_is_headers_only(void **state) {
  tf_world *w = *state;
  tf_client *c = h2_client(w);
  tf_h2_stream *st = rest(c, "HEAD", "/stream/manual/h");
  tf_h2_wait_closed(c, st); /* before the stream's end: the headers were all */
  assert_int_equal(st->status, 200);
  assert_int_equal(st->data_frames, 0);
  assert_false(w->streamed[0].ended);
  assert_int_equal(tf_stream_write_str(w, 0, "dropped"), 0);
  assert_int_equal(w->streamed[0].released, w->streamed[0].handed);
  tf_stream_end(w, 0);
  assert_int_equal(w->recs[0].cancels, 0);
  tf_h2_stream *ok = rest(c, "GET", "/ok");
  tf_h2_wait_closed(c, ok);
  assert_int_equal(ok->status, 200);
}

static void a_stream_waiting_for_its_handler_outlives_the_deadlines(void **state) {
  tf_world *w = *state;
  w->t.limits.idle_timeout_ms = 30;
  w->t.limits.header_timeout_ms = 30;
  w->t.limits.send_timeout_ms = 30;
  tf_client *c = h2_client(w);
  tf_h2_stream *st = rest(c, "GET", "/stream/manual/long");
  tf_run_until(w, int_set, &st->status);
  tf_run_for(w, 150);
  assert_false(st->closed);
  assert_false(c->eof);
  assert_int_equal(tf_stream_write_str(w, 0, "late"), 0);
  wait_body(w, st, 4);
  tf_run_for(w, 150);
  assert_false(st->closed);
  tf_stream_end(w, 0);
  tf_h2_wait_closed(c, st);
  assert_int_equal(st->error_code, NGHTTP2_NO_ERROR);
  assert_memory_equal(st->body, "late", 4);
  assert_int_equal(w->recs[0].cancels, 0);
  tf_wait_eof(c); /* then idle: the deadline is back */
}

static void a_stream_its_client_does_not_read_is_reset_after_the_send_timeout(void **state) {
  tf_world *w = *state;
  w->t.limits.send_timeout_ms = 50;
  tf_client *c = h2_client(w);
  tf_h2_stream *st = rest(c, "GET", "/stream/manual/stuck");
  tf_run_until(w, int_set, &st->status);
  tf_pause_reading(c, 1); /* and so never opens its window again */
  static char big[200 * 1024];
  memset(big, 'b', sizeof big);
  assert_int_equal(tf_stream_write(w, 0, big, sizeof big), 0);
  tf_wait_cancelled(w, 0);
  assert_int_equal(tf_stream_write_str(w, 0, "more"), ISV_ECANCELED);
  tf_stream_end(w, 0);
  assert_int_equal(w->streamed[0].released, w->streamed[0].handed);
  tf_pause_reading(c, 0);
  tf_h2_wait_closed(c, st);
  assert_int_equal(st->error_code, NGHTTP2_CANCEL);
  assert_true(st->rst_received);
  /* the stream only: the connection goes on */
  tf_h2_stream *ok = rest(c, "GET", "/ok");
  tf_h2_wait_closed(c, ok);
  assert_int_equal(ok->status, 200);
  assert_int_equal(w->recs[0].cancels, 1);
}

static void rst_stream_from_the_client_cancels_a_rest_exchange(void **state) {
  tf_world *w = *state;
  tf_client *c = h2_client(w);
  /* streaming */
  tf_h2_stream *st = rest(c, "GET", "/stream/manual/r");
  tf_wait_recs(w, 1);
  assert_int_equal(tf_stream_write_str(w, 0, "a"), 0);
  wait_body(w, st, 1);
  assert_int_equal(nghttp2_submit_rst_stream(c->h2, NGHTTP2_FLAG_NONE, st->id, NGHTTP2_CANCEL),
                   0);
  tf_h2_flush(c);
  tf_wait_cancelled(w, 0);
  assert_int_equal(tf_stream_write_str(w, 0, "b"), ISV_ECANCELED);
  tf_stream_end(w, 0);
  assert_int_equal(w->streamed[0].released, w->streamed[0].handed);
  /* pending */
  tf_h2_stream *p = rest(c, "POST", "/hold/r");
  tf_wait_recs(w, 2);
  assert_int_equal(nghttp2_submit_rst_stream(c->h2, NGHTTP2_FLAG_NONE, p->id, NGHTTP2_CANCEL), 0);
  tf_h2_flush(c);
  tf_wait_cancelled(w, 1);
  tf_answer_held(w); /* into the void */
  /* the connection goes on */
  tf_h2_stream *ok = rest(c, "GET", "/ok");
  tf_h2_wait_closed(c, ok);
  assert_int_equal(ok->status, 200);
  assert_int_equal(w->recs[0].cancels, 1);
  assert_int_equal(w->recs[1].cancels, 1);
  assert_int_equal(w->recs[2].cancels, 0);
}

static void the_connection_going_away_cancels_its_exchanges(void **state) {
  tf_world *w = *state;
  tf_client *c = h2_client(w);
  rest(c, "GET", "/hold/a");
  tf_h2_stream *b = rest(c, "GET", "/stream/manual/b");
  tf_h2_stream *done = rest(c, "GET", "/stream/manual/done");
  tf_wait_recs(w, 3);
  assert_int_equal(tf_stream_write_str(w, 0, "x"), 0);
  wait_body(w, b, 1);
  tf_stream_end(w, 1); /* ended: not cancelled */
  tf_h2_wait_closed(c, done);
  tf_close_client(c);
  tf_wait_cancelled(w, 0);
  tf_wait_cancelled(w, 1);
  tf_wait_stream_closed(c);
  assert_int_equal(tf_stream_write_str(w, 0, "y"), ISV_ECANCELED);
  tf_stream_end(w, 0);
  tf_answer_held(w);
  assert_int_equal(w->recs[2].cancels, 0);
}

static void no_cancel_once_the_answer_ended(void **state) {
  tf_world *w = *state;
  tf_client *c = h2_client(w);
  tf_h2_stream *st = rest(c, "GET", "/stream/manual/e");
  tf_run_until(w, int_set, &st->status);
  tf_pause_reading(c, 1); /* what follows stays queued in the server */
  static char big[200 * 1024];
  memset(big, 'e', sizeof big);
  assert_int_equal(tf_stream_write(w, 0, big, sizeof big), 0);
  tf_stream_end(w, 0);
  rest(c, "GET", "/slow/whole"); /* answered whole, its DATA queued too */
  tf_run_until(w, int_set, &w->recs[1].answered);
  tf_settle(w);
  tf_close_client(c);
  tf_wait_stream_closed(c);
  assert_int_equal(w->recs[0].cancels, 0);
  assert_int_equal(w->recs[1].cancels, 0);
  assert_int_equal(w->streamed[0].released, w->streamed[0].handed);
}

int main(void) {
#define T(name) cmocka_unit_test_setup_teardown(name, tf_setup_mem, tf_teardown)
  const struct CMUnitTest tests[] = {
      T(a_rest_get_reaches_the_exchange_handler),
      T(a_rest_post_with_a_body_is_answered),
      T(a_grpc_unary_call_reaches_the_service_whole),
      T(grpc_messages_split_across_data_frames_or_sharing_one_come_whole),
      T(large_bodies_and_messages_arrive_whole),
      T(a_large_rest_body_with_a_length_arrives_whole_in_one_block),
      T(a_fresh_rest_body_block_is_faulted_in_before_it_is_read_into),
      T(a_stream_ended_while_its_body_is_faulted_in_leaves_the_block_to_the_job),
      T(a_fresh_grpc_message_block_is_faulted_in_before_it_is_written),
      T(a_call_ended_while_its_message_is_faulted_in_leaves_the_block_to_the_job),
      T(a_grpc_call_finished_at_once_is_trailers_only),
      T(a_rest_body_over_the_limit_goes_to_the_error_callback),
      T(a_header_block_over_the_limit_gets_431),
      T(a_fast_client_s_ordinary_headers_are_no_flood),
      T(headers_past_the_free_bytes_count_toward_the_rate),
      T(a_grpc_get_goes_to_the_error_callback_with_405),
      T(rst_stream_from_the_client_cancels_the_call),
      T(a_rest_exchange_reset_by_its_client_is_answered_into_the_void),
      T(a_message_over_the_limit_ends_the_call_with_resource_exhausted),
      T(compressed_messages_need_a_grpc_encoding_the_server_knows),
      T(shutdown_is_two_goaways_around_a_ping),
      T(the_grpc_timeout_cancels_a_call_that_runs_over),
      T(a_rest_body_that_stops_arriving_gets_408),
      T(many_streams_each_keep_their_deadline),
      T(closing_the_transport_ends_a_call_still_waiting_for_its_client),
      T(the_idle_deadline_closes_a_connection_without_streams),
      T(closing_the_transport_lets_a_stream_in_flight_finish),
      T(a_streamed_answer_comes_as_data_frames_then_end_stream),
      T(a_piece_of_many_small_and_large_parts_comes_whole),
      T(a_streamed_answer_keeps_to_the_client_s_flow_control_window),
      T(a_streamed_answer_to_head_is_headers_only),
      T(a_stream_waiting_for_its_handler_outlives_the_deadlines),
      T(a_stream_its_client_does_not_read_is_reset_after_the_send_timeout),
      T(rst_stream_from_the_client_cancels_a_rest_exchange),
      T(the_connection_going_away_cancels_its_exchanges),
      T(no_cancel_once_the_answer_ended),
  };
#undef T
  return cmocka_run_group_tests(tests, NULL, NULL);
}
