/* transport/http1.c, driven through the memory seam — no socket, no loop, a fake clock
 * (transport_fixture.h, tf_setup_mem): raw HTTP/1.1 bytes are fed to the engine, and the bytes
 * it writes back are read and parsed. Covers what the handler sees of a request,
 * pipelining with a late answer, chunked bodies, absolute-form targets, 100-continue, the
 * limits (413, 431) and malformed requests (400) through the error callback, Upgrade: h2c
 * ignored, CONNECT refused (405), HTTP/1.0 and Connection: close, a client half-close, and the
 * deadlines (408, idle). Streamed answers: chunks exactly as written, each piece on the socket
 * before the next, HTTP/1.0's close-delimited body, HEAD, pipelining after a stream, no deadline
 * while the handler is slow, the send timeout (and a slow reader that keeps up); on_cancel when
 * the client closes, half-closes or stops reading — and never after the answer ended. */
#include "cmocka_prelude.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "transport_fixture.h"

#define REQ(method_path) method_path " HTTP/1.1\r\nHost: h\r\n\r\n"

static tf_resp resps[16];

static int responses(tf_client *c) { return tf_h1_responses(c, resps, 16); }

/* Wait for n responses on c, then parse them into resps. */
static void wait_responses(tf_client *c, int n) {
  tf_wait_responses(c, n);
  assert_true(responses(c) >= n);
}

static const char *header(int i, const char *name) {
  static char v[256];
  return tf_resp_header(&resps[i], name, v, sizeof v);
}

static int int_set(tf_world *w, void *p) {
  (void)w;
  return *(int *)p != 0;
}

#define HEAD_CHUNKED                                                                             \
  "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n"             \
  "X-Test: yes\r\n\r\n"

static void request_as_the_handler_sees_it(void **state) {
  tf_world *w = *state;
  tf_client *c = tf_connect(w);
  tf_write_str(c, "POST /v2/models/m/infer?x=1&y=%20 HTTP/1.1\r\n"
                  "Host: example.org\r\n"
                  "X-Custom:  spaced value \t\r\n"
                  "content-length: 5\r\n"
                  "\r\n"
                  "hello");
  wait_responses(c, 1);
  assert_int_equal(w->n_recs, 1);
  tf_rec *r = &w->recs[0];
  assert_int_equal(r->kind, TF_EXCHANGE);
  assert_int_equal(r->method, ISV__M_POST);
  assert_string_equal(r->method_name, "POST");
  assert_string_equal(r->path, "/v2/models/m/infer");
  assert_int_equal(r->path_len, 18);
  assert_string_equal(r->query, "x=1&y=%20"); /* not percent-decoded */
  assert_int_equal(r->query_len, 9);
  assert_int_equal(r->n_headers, 3);
  /* names as sent, values without the whitespace around them */
  assert_string_equal(r->headers, "Host: example.org\nX-Custom: spaced value\n"
                                  "content-length: 5\n");
  assert_int_equal(r->body_len, 5);
  assert_string_equal(r->body, "hello");

  assert_int_equal(responses(c), 1);
  assert_int_equal(resps[0].status, 200);
  assert_true(strncmp(resps[0].head, "HTTP/1.1 200 OK\r\n", 17) == 0);
  assert_string_equal(header(0, "Content-Type"), "text/plain");
  assert_string_equal(header(0, "X-Test"), "yes");
  assert_string_equal(header(0, "Content-Length"), "39");
  assert_null(header(0, "Connection")); /* HTTP/1.1 keeps the connection by default */
  assert_string_equal(resps[0].body, "POST /v2/models/m/infer?x=1&y=%20 hello");
  assert_false(c->eof);

  /* a second request on the same connection: no query, no body, another method */
  tf_write_str(c, REQ("DELETE /v2/repository/models/m"));
  wait_responses(c, 2);
  r = &w->recs[1];
  assert_int_equal(r->method, ISV__M_DELETE);
  assert_string_equal(r->path, "/v2/repository/models/m");
  assert_string_equal(r->query, "");
  assert_int_equal(r->query_len, 0);
  assert_int_equal(r->body_len, 0);
  assert_string_equal(resps[1].body, "DELETE /v2/repository/models/m");
}

static void methods_the_library_does_not_name_are_other(void **state) {
  tf_world *w = *state;
  tf_client *c = tf_connect(w);
  tf_write_str(c, REQ("PATCH /p") REQ("OPTIONS *") REQ("PUT /q"));
  wait_responses(c, 3);
  assert_int_equal(w->recs[0].method, ISV__M_OTHER);
  assert_string_equal(w->recs[0].method_name, "PATCH");
  assert_int_equal(w->recs[1].method, ISV__M_OPTIONS);
  assert_string_equal(w->recs[1].path, "*");
  assert_int_equal(w->recs[2].method, ISV__M_PUT);
}

static void head_responses_carry_no_body(void **state) {
  tf_world *w = *state;
  tf_client *c = tf_connect(w);
  tf_write_str(c, "HEAD /thing HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n");
  tf_wait_eof(c);
  assert_int_equal(w->recs[0].method, ISV__M_HEAD);
  /* the Content-Length of the body a GET would get, then nothing */
  const char *want = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 11\r\n"
                     "Connection: close\r\nX-Test: yes\r\n\r\n";
  assert_string_equal(c->in, want);
}

static void a_large_body_of_known_length_arrives_whole(void **state) {
  tf_world *w = *state;
  tf_client *c = tf_connect(w);
  size_t n = 300 * 1024; /* read in place, in batches (SO_RCVLOWAT where the socket takes it) */
  char *body = malloc(n);
  assert_non_null(body);
  for (size_t i = 0; i < n; i++) body[i] = (char)('a' + (i * 7) % 26);
  tf_write_str(c, "POST /big HTTP/1.1\r\nHost: h\r\nContent-Length: 307200\r\n\r\n");
  /* in uneven pieces, the loop running between them */
  size_t off = 0, piece = 1000;
  while (off < n) {
    size_t k = n - off < piece ? n - off : piece;
    tf_write(c, body + off, k);
    off += k;
    piece = piece * 3 + 17;
    tf_settle(w);
  }
  tf_write_str(c, REQ("GET /after"));
  wait_responses(c, 2);
  assert_int_equal(w->recs[0].body_len, n);
  assert_int_equal(w->recs[0].body_hash, tf_hash(body, n));
  char want[64];
  snprintf(want, sizeof want, "POST /big <%zu bytes %08x>", n, (unsigned)tf_hash(body, n));
  assert_string_equal(resps[0].body, want);
  assert_string_equal(resps[1].body, "GET /after");
  free(body);
}

/* A fresh body block (no buffer cache: every large one is fresh) is faulted in off the loop
 * before a byte is read into it: reading stops until the job is done, then the bytes that came
 * with the headers and the rest arrive whole. The job is held (tf_hold_job) and run by the
 * test. */
static void a_fresh_body_block_is_faulted_in_before_it_is_read_into(void **state) {
  tf_world *w = *state;
  w->t.h.offload = tf_hold_job;
  w->t.limits.max_body_bytes = w->t.limits.max_receiving = 8u << 20;
  tf_held_job = NULL;
  tf_jobs_offered = 0;
  tf_client *c = tf_connect(w);
  size_t n = (size_t)3 << 20;
  char *body = malloc(n);
  assert_non_null(body);
  for (size_t i = 0; i < n; i++) body[i] = (char)(i * 13 + i / 7);
  char head[128];
  int hl = snprintf(head, sizeof head, "POST /big HTTP/1.1\r\nHost: h\r\nContent-Length: %zu\r\n\r\n", n);
  size_t first = 70000; /* arrives with the headers */
  char *msg = malloc((size_t)hl + first);
  memcpy(msg, head, (size_t)hl);
  memcpy(msg + hl, body, first);
  tf_write(c, msg, (size_t)hl + first);
  free(msg);
  tf_run_for(w, 50);
  assert_int_equal(tf_jobs_offered, 1);
  assert_non_null(tf_held_job);
  assert_int_equal(tf_server_conn(c)->reading, 0); /* nothing read while the block is faulted in */
  tf_write(c, body + first, n - first);
  tf_run_for(w, 20);
  assert_int_equal(w->n_recs, 0);
  tf_run_held_job();
  wait_responses(c, 1);
  assert_int_equal(w->recs[0].body_len, n);
  assert_int_equal(w->recs[0].body_hash, tf_hash(body, n));
  free(body);
}

/* The connection goes while its block is being faulted in (here the body deadline closes it,
 * with a 408): the job frees the block once done (LeakSanitizer and ASan watch). */
static int no_conns(tf_world *w, void *arg) {
  (void)arg;
  return tf_open_conns(w) == 0;
}
static void a_connection_closed_while_its_body_is_faulted_in_leaves_the_block_to_the_job(void **state) {
  tf_world *w = *state;
  w->t.h.offload = tf_hold_job;
  w->t.limits.max_body_bytes = w->t.limits.max_receiving = 8u << 20;
  w->t.limits.header_timeout_ms = 30;
  tf_held_job = NULL;
  tf_client *c = tf_connect(w);
  tf_write_str(c, "POST /big HTTP/1.1\r\nHost: h\r\nContent-Length: 5000000\r\n\r\nabc");
  tf_run_for(w, 10);
  assert_non_null(tf_held_job);
  tf_run_until(w, no_conns, NULL);
  assert_int_equal(w->n_recs, 1); /* the 408, through the error callback */
  assert_int_equal(w->recs[0].status, 408);
  tf_run_held_job();
  tf_close_client(c);
}

static void pipelined_requests_are_answered_in_order_when_the_first_is_late(void **state) {
  tf_world *w = *state;
  tf_client *c = tf_connect(w);
  /* one write: the first is answered from a timer, the others at once */
  tf_write_str(c, REQ("GET /slow/1") REQ("GET /two") "POST /three HTTP/1.1\r\nHost: h\r\n"
                                                    "Content-Length: 3\r\n\r\nabc");
  wait_responses(c, 3);
  assert_int_equal(responses(c), 3);
  assert_string_equal(resps[0].body, "GET /slow/1");
  assert_string_equal(resps[1].body, "GET /two");
  assert_string_equal(resps[2].body, "POST /three abc");
  /* one at a time: the second reached the handler only after the first was answered */
  int answered1 = tf_event_pos(w, "answer /slow/1"), ex2 = tf_event_pos(w, "exchange /two");
  assert_true(answered1 >= 0 && ex2 > answered1);
  assert_true(tf_event_pos(w, "exchange /three") > tf_event_pos(w, "answer /two"));
  assert_false(c->eof);
}

/* A whole plain message is read without llhttp (transport/h1_quick.h), any other by llhttp:
 * in one read, they take turns and the handler sees each the same way. */
static void plain_and_other_messages_take_turns_in_one_read(void **state) {
  tf_world *w = *state;
  tf_client *c = tf_connect(w);
  tf_write_str(c, "POST /q1 HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\nabc" /* quick */
                  "POST /c HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
                  "3\r\nxyz\r\n0\r\n\r\n"                                   /* llhttp: chunked */
                  "GET /q2 HTTP/1.1\r\nHost: h\r\nX-A:\t1\r\n\r\n"              /* quick */
                  "GET /q3 HTTP/1.1\r\nHost: h\r\nX-A: 1 \r\n\r\n"               /* llhttp: a trailing space */
                  "GET /q4 HTTP/1.1\r\nHost: h\r\n\r\n");                       /* quick */
  wait_responses(c, 5);
  assert_string_equal(resps[0].body, "POST /q1 abc");
  assert_string_equal(resps[1].body, "POST /c xyz");
  assert_string_equal(resps[2].body, "GET /q2");
  assert_string_equal(resps[3].body, "GET /q3");
  assert_string_equal(resps[4].body, "GET /q4");
  assert_string_equal(w->recs[2].headers, "Host: h\nX-A: 1\n");
  assert_string_equal(w->recs[3].headers, "Host: h\nX-A: 1\n");
  assert_int_equal(w->recs[0].body_len, 3);
  assert_false(c->eof);
  /* a plain message cut across two reads is llhttp's; the one after it is quick again */
  tf_write_str(c, "POST /q5 HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\na");
  tf_settle(w);
  tf_write_str(c, "bcGET /q6 HTTP/1.0\r\n\r\n");
  wait_responses(c, 7);
  assert_string_equal(resps[5].body, "POST /q5 abc");
  assert_string_equal(resps[6].body, "GET /q6");
  tf_wait_eof(c); /* HTTP/1.0 without keep-alive: the last */
}

static void requests_written_while_one_is_held_wait_their_turn(void **state) {
  tf_world *w = *state;
  tf_client *c = tf_connect(w);
  tf_write_str(c, REQ("GET /hold/a"));
  tf_wait_recs(w, 1);
  /* more requests arrive while the first is unanswered, in several writes */
  tf_write_str(c, REQ("GET /b"));
  tf_write_str(c, "GET /c HTTP/1.1\r\nHo");
  tf_settle(w);
  tf_write_str(c, "st: h\r\n\r\n");
  tf_settle(w);
  assert_int_equal(w->n_recs, 1); /* nothing dispatched behind the held one */
  assert_int_equal(c->in_len, 0);
  tf_answer_held(w);
  wait_responses(c, 3);
  assert_string_equal(resps[0].body, "GET /hold/a");
  assert_string_equal(resps[1].body, "GET /b");
  assert_string_equal(resps[2].body, "GET /c");
}

static void chunked_bodies_are_reassembled(void **state) {
  tf_world *w = *state;
  tf_client *c = tf_connect(w);
  tf_write_str(c, "POST /chunked HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
                  "5\r\nhello\r\n");
  tf_settle(w);
  assert_int_equal(w->n_recs, 0); /* not complete yet */
  tf_write_str(c, "1;ext=1\r\n \r\n"); /* a chunk extension */
  tf_settle(w);
  tf_write_str(c, "b\r\nchunked wor\r\n2\r\nld\r\n0\r\n\r\n");
  wait_responses(c, 1);
  assert_int_equal(w->recs[0].body_len, 19);
  assert_string_equal(w->recs[0].body, "hello chunked world");
  assert_string_equal(resps[0].body, "POST /chunked hello chunked world");
  /* chunked trailers, and the connection goes on */
  tf_write_str(c, "POST /t HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
                  "3\r\nabc\r\n0\r\nX-Trailer: 1\r\n\r\n" REQ("GET /after"));
  wait_responses(c, 3);
  assert_string_equal(resps[1].body, "POST /t abc");
  assert_string_equal(resps[2].body, "GET /after");
}

static void absolute_form_targets_give_their_path(void **state) {
  tf_world *w = *state;
  tf_client *c = tf_connect(w);
  tf_write_str(c, REQ("GET http://example.org/p/q?z=1") REQ("GET HTTPS://example.org:8443/s")
                   REQ("GET http://example.org?only=query") REQ("GET http://example.org")
                       REQ("GET http://user@example.org:80/a/b/"));
  wait_responses(c, 5);
  assert_string_equal(w->recs[0].path, "/p/q");
  assert_string_equal(w->recs[0].query, "z=1");
  assert_string_equal(w->recs[1].path, "/s");
  assert_string_equal(w->recs[1].query, "");
  assert_string_equal(w->recs[2].path, "/");
  assert_string_equal(w->recs[2].query, "only=query");
  assert_int_equal(w->recs[2].query_len, 10);
  assert_string_equal(w->recs[3].path, "/");
  assert_int_equal(w->recs[3].path_len, 1);
  assert_string_equal(w->recs[3].query, "");
  assert_string_equal(w->recs[4].path, "/a/b/");
  assert_string_equal(resps[0].body, "GET /p/q?z=1");
}

static void expect_100_continue_is_answered_before_the_body(void **state) {
  tf_world *w = *state;
  tf_client *c = tf_connect(w);
  tf_write_str(c, "PUT /upload HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\n"
                  "Content-Length: 6\r\n\r\n");
  tf_wait_in(c, "\r\n\r\n");
  assert_string_equal(c->in, "HTTP/1.1 100 Continue\r\n\r\n");
  assert_int_equal(w->n_recs, 0);
  tf_write_str(c, "abcdef");
  wait_responses(c, 2);
  assert_int_equal(resps[0].status, 100);
  assert_int_equal(resps[1].status, 200);
  assert_string_equal(resps[1].body, "PUT /upload abcdef");
  assert_string_equal(w->recs[0].body, "abcdef");
}

static void expect_100_continue_with_a_body_too_large_gets_413_only(void **state) {
  tf_world *w = *state;
  w->t.limits.max_body_bytes = 16;
  tf_client *c = tf_connect(w);
  tf_write_str(c, "PUT /upload HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\n"
                  "Content-Length: 17\r\n\r\n");
  tf_wait_eof(c);
  assert_int_equal(responses(c), 1);
  assert_int_equal(resps[0].status, 413); /* no 100 Continue: the client need not send it */
  assert_int_equal(w->n_recs, 1);
  assert_int_equal(w->recs[0].kind, TF_ERROR);
  assert_int_equal(w->recs[0].status, 413);
}

static void a_body_over_the_limit_goes_to_the_error_callback_with_its_path(void **state) {
  tf_world *w = *state;
  w->t.limits.max_body_bytes = 64;
  /* announced: refused from the headers */
  tf_client *c = tf_connect(w);
  char body[200];
  memset(body, 'x', sizeof body);
  tf_write_str(c, "POST /v2/models/big/infer?a=b HTTP/1.1\r\nHost: h\r\nContent-Length: 200\r\n"
                  "\r\n");
  tf_write(c, body, sizeof body);
  tf_wait_eof(c);
  assert_int_equal(w->n_recs, 1);
  tf_rec *r = &w->recs[0];
  assert_int_equal(r->kind, TF_ERROR);
  assert_int_equal(r->status, 413);
  assert_string_equal(r->msg, "request body exceeds the server's limit");
  assert_true(r->has_path);
  assert_string_equal(r->path, "/v2/models/big/infer");
  assert_string_equal(r->query, "a=b");
  assert_string_equal(r->method_name, "POST");
  assert_int_equal(r->n_headers, 2); /* the headers were read */
  assert_int_equal(r->body_len, 0);  /* the body was not */
  assert_int_equal(responses(c), 1);
  assert_true(strncmp(resps[0].head, "HTTP/1.1 413 Payload Too Large\r\n", 32) == 0);
  assert_string_equal(header(0, "Connection"), "close");
  assert_string_equal(resps[0].body, "request body exceeds the server's limit");

  /* chunked: refused once the chunks pass the limit */
  tf_client *d = tf_connect(w);
  tf_write_str(d, "POST /chunky HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
                  "40\r\n");
  tf_write(d, body, 64);
  tf_write_str(d, "\r\n1\r\nx\r\n0\r\n\r\n");
  tf_wait_eof(d);
  assert_int_equal(w->n_recs, 2);
  r = &w->recs[1];
  assert_int_equal(r->kind, TF_ERROR);
  assert_int_equal(r->status, 413);
  assert_string_equal(r->path, "/chunky");
  assert_int_equal(tf_h1_responses(d, resps, 16), 1);
  assert_int_equal(resps[0].status, 413);
  assert_string_equal(header(0, "Connection"), "close");

  /* exactly the limit is fine */
  tf_client *e = tf_connect(w);
  tf_write_str(e, "POST /fits HTTP/1.1\r\nHost: h\r\nContent-Length: 64\r\n\r\n");
  tf_write(e, body, 64);
  wait_responses(e, 1);
  assert_int_equal(w->recs[2].kind, TF_EXCHANGE);
  assert_int_equal(w->recs[2].body_len, 64);
}

static void headers_over_the_limit_get_431(void **state) {
  tf_world *w = *state;
  w->t.limits.max_header_bytes = 256;
  tf_client *c = tf_connect(w);
  char big[400];
  memset(big, 'a', sizeof big - 1);
  big[sizeof big - 1] = '\0';
  tf_write_str(c, "GET /h?q HTTP/1.1\r\nHost: h\r\nX-Big: ");
  tf_write_str(c, big);
  tf_write_str(c, "\r\n\r\n");
  tf_wait_eof(c);
  assert_int_equal(w->n_recs, 1);
  tf_rec *r = &w->recs[0];
  assert_int_equal(r->kind, TF_ERROR);
  assert_int_equal(r->status, 431);
  assert_string_equal(r->path, "/h"); /* the request line was read */
  assert_int_equal(responses(c), 1);
  assert_true(strncmp(resps[0].head, "HTTP/1.1 431 Request Header Fields Too Large\r\n", 46) == 0);
  assert_string_equal(header(0, "Connection"), "close");

  /* a URL alone over the limit: refused too */
  tf_client *d = tf_connect(w);
  tf_write_str(d, "GET /");
  tf_write_str(d, big);
  tf_write_str(d, " HTTP/1.1\r\nHost: h\r\n\r\n");
  tf_wait_eof(d);
  assert_int_equal(w->recs[1].status, 431);
  assert_int_equal(tf_h1_responses(d, resps, 16), 1);
  assert_int_equal(resps[0].status, 431);
}

static void too_many_headers_get_431(void **state) {
  tf_world *w = *state;
  tf_client *c = tf_connect(w);
  tf_write_str(c, "GET /many HTTP/1.1\r\nHost: h\r\n");
  for (int i = 0; i < 100; i++) tf_write_str(c, "X: 1\r\n");
  tf_write_str(c, "\r\n");
  tf_wait_eof(c);
  assert_int_equal(w->recs[0].kind, TF_ERROR);
  assert_int_equal(w->recs[0].status, 431);
  assert_string_equal(w->recs[0].msg, "too many request headers (limit 100)");
}

static void malformed_requests_get_400(void **state) {
  tf_world *w = *state;
  /* not even a method: no path */
  tf_client *c = tf_connect(w);
  tf_write_str(c, "\x01\x02 garbage\r\n\r\n");
  tf_wait_eof(c);
  assert_int_equal(w->n_recs, 1);
  assert_int_equal(w->recs[0].kind, TF_ERROR);
  assert_int_equal(w->recs[0].status, 400);
  assert_false(w->recs[0].has_path);
  assert_true(strncmp(w->recs[0].msg, "malformed HTTP request: ", 24) == 0);
  assert_int_equal(responses(c), 1);
  assert_true(strncmp(resps[0].head, "HTTP/1.1 400 Bad Request\r\n", 26) == 0);
  assert_string_equal(header(0, "Connection"), "close");

  /* a bad header line after a good request line */
  tf_client *d = tf_connect(w);
  tf_write_str(d, "GET /p HTTP/1.1\r\nHost: h\r\nX-Ok: 1\r\nBad Header\r\n\r\n");
  tf_wait_eof(d);
  assert_int_equal(w->recs[1].kind, TF_ERROR);
  assert_int_equal(w->recs[1].status, 400);
  assert_string_equal(w->recs[1].path, "/p");
  assert_int_equal(tf_h1_responses(d, resps, 16), 1);
  assert_int_equal(resps[0].status, 400);

  /* HTTP/1.1 without Host, and with two */
  tf_client *e = tf_connect(w);
  tf_write_str(e, "GET /nohost HTTP/1.1\r\n\r\n");
  tf_wait_eof(e);
  assert_int_equal(w->recs[2].status, 400);
  assert_string_equal(w->recs[2].msg, "missing Host header");
  assert_string_equal(w->recs[2].path, "/nohost");
  tf_client *f = tf_connect(w);
  tf_write_str(f, "GET /twohosts HTTP/1.1\r\nHost: a\r\nhost: b\r\n\r\n");
  tf_wait_eof(f);
  assert_int_equal(w->recs[3].status, 400);
  assert_string_equal(w->recs[3].msg, "more than one Host header");

  /* a bad chunk size: the body fails after the headers were read */
  tf_client *g = tf_connect(w);
  tf_write_str(g, "POST /c HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n");
  tf_wait_eof(g);
  assert_int_equal(w->recs[4].status, 400);
  assert_string_equal(w->recs[4].path, "/c");
  assert_int_equal(w->n_recs, 5); /* nothing reached the exchange callback */
  for (int i = 0; i < 5; i++) assert_int_equal(w->recs[i].kind, TF_ERROR);
}

static void a_request_after_a_refused_one_is_never_dispatched(void **state) {
  tf_world *w = *state;
  tf_client *c = tf_connect(w);
  tf_write_str(c, "GET /nohost HTTP/1.1\r\n\r\n" REQ("GET /next"));
  tf_wait_eof(c);
  assert_int_equal(w->n_recs, 1);
  assert_int_equal(responses(c), 1);
  assert_int_equal(resps[0].status, 400);
}

static void upgrade_h2c_is_ignored(void **state) {
  tf_world *w = *state;
  tf_client *c = tf_connect(w);
  tf_write_str(c, "GET /u HTTP/1.1\r\nHost: h\r\nConnection: Upgrade, HTTP2-Settings\r\n"
                  "Upgrade: h2c\r\nHTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n\r\n"
                  REQ("GET /next"));
  wait_responses(c, 2);
  assert_int_equal(responses(c), 2);
  assert_int_equal(resps[0].status, 200); /* not 101 Switching Protocols */
  assert_null(header(0, "Upgrade"));
  assert_string_equal(resps[0].body, "GET /u");
  assert_string_equal(resps[1].body, "GET /next");
  assert_int_equal(w->recs[0].kind, TF_EXCHANGE);
  assert_int_equal(w->recs[1].kind, TF_EXCHANGE);
  /* and the connection is still HTTP/1.1 */
  tf_write_str(c, "POST /later HTTP/1.1\r\nHost: h\r\nUpgrade: websocket\r\nConnection: upgrade\r\n"
                  "Content-Length: 2\r\n\r\nhi");
  wait_responses(c, 3);
  assert_string_equal(resps[2].body, "POST /later hi");
  assert_false(c->eof);
}

static void connect_is_refused_with_405(void **state) {
  tf_world *w = *state;
  tf_client *c = tf_connect(w);
  tf_write_str(c, "CONNECT example.org:443 HTTP/1.1\r\nHost: example.org:443\r\n\r\n"
                  "\x16\x03\x01 tls bytes");
  tf_wait_eof(c);
  assert_int_equal(w->n_recs, 1);
  tf_rec *r = &w->recs[0];
  assert_int_equal(r->kind, TF_ERROR);
  assert_int_equal(r->status, 405);
  assert_string_equal(r->method_name, "CONNECT");
  assert_string_equal(r->path, "example.org:443");
  assert_int_equal(responses(c), 1);
  assert_true(strncmp(resps[0].head, "HTTP/1.1 405 Method Not Allowed\r\n", 33) == 0);
  assert_string_equal(header(0, "Connection"), "close");
}

static void http10_closes_unless_kept_alive(void **state) {
  tf_world *w = *state;
  tf_client *c = tf_connect(w);
  tf_write_str(c, "GET /old HTTP/1.0\r\n\r\n"); /* no Host needed */
  tf_wait_eof(c);
  assert_false(c->reset);
  assert_int_equal(responses(c), 1);
  assert_int_equal(resps[0].status, 200);
  assert_true(strncmp(resps[0].head, "HTTP/1.1 200 OK\r\n", 17) == 0);
  assert_string_equal(header(0, "Connection"), "close");
  assert_string_equal(resps[0].body, "GET /old");

  /* keep-alive asked for: kept, and said so */
  tf_client *d = tf_connect(w);
  tf_write_str(d, "GET /ka HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
  wait_responses(d, 1);
  assert_int_equal(tf_h1_responses(d, resps, 16), 1);
  assert_string_equal(header(0, "Connection"), "keep-alive");
  tf_write_str(d, "GET /ka2 HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
  wait_responses(d, 2);
  assert_false(d->eof);
  /* the next HTTP/1.0 request without it is the last */
  tf_write_str(d, "GET /ka3 HTTP/1.0\r\n\r\n");
  tf_wait_eof(d);
  assert_int_equal(tf_h1_responses(d, resps, 16), 3);
  assert_string_equal(header(2, "Connection"), "close");
}

static void connection_close_is_the_last_request(void **state) {
  tf_world *w = *state;
  tf_client *c = tf_connect(w);
  tf_write_str(c, "GET /last HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n" REQ("GET /never"));
  tf_wait_eof(c);
  assert_int_equal(w->n_recs, 1);
  assert_int_equal(responses(c), 1);
  assert_string_equal(header(0, "Connection"), "close");
}

static void a_half_close_after_a_request_still_gets_its_answer(void **state) {
  tf_world *w = *state;
  /* answered at once */
  tf_client *c = tf_connect(w);
  tf_write_str(c, REQ("GET /now"));
  tf_shutdown_write(c);
  tf_wait_eof(c);
  assert_int_equal(responses(c), 1);
  assert_string_equal(resps[0].body, "GET /now");

  /* answered later, after the EOF was read; and two pipelined requests before the EOF */
  tf_client *d = tf_connect(w);
  tf_write_str(d, REQ("GET /slow/x") REQ("GET /y"));
  tf_shutdown_write(d);
  tf_wait_eof(d);
  assert_int_equal(tf_h1_responses(d, resps, 16), 2);
  assert_string_equal(resps[0].body, "GET /slow/x");
  assert_string_equal(resps[1].body, "GET /y");

  /* a half request and EOF: closed, nothing dispatched */
  int before = w->n_recs;
  tf_client *e = tf_connect(w);
  tf_write_str(e, "GET /half HTTP/1.1\r\nHo");
  tf_shutdown_write(e);
  tf_wait_eof(e);
  assert_int_equal(w->n_recs, before);
  assert_int_equal(e->in_len, 0);
}

static void the_idle_deadline_closes_a_silent_connection(void **state) {
  tf_world *w = *state;
  w->t.limits.idle_timeout_ms = 50;
  tf_client *c = tf_connect(w);
  tf_write_str(c, REQ("GET /once"));
  wait_responses(c, 1);
  tf_wait_eof(c); /* then silence: closed */
  assert_int_equal(responses(c), 1);
  assert_int_equal(w->n_recs, 1); /* no 408: an idle connection is just closed */
  tf_wait_stream_closed(c);
}

static void a_request_that_stops_arriving_gets_408(void **state) {
  tf_world *w = *state;
  w->t.limits.header_timeout_ms = 50;
  tf_client *c = tf_connect(w);
  tf_write_str(c, "GET /slowloris HTTP/1.1\r\nHost: h\r\nX-A: ");
  tf_wait_eof(c);
  assert_int_equal(w->n_recs, 1);
  assert_int_equal(w->recs[0].kind, TF_ERROR);
  assert_int_equal(w->recs[0].status, 408);
  assert_string_equal(w->recs[0].path, "/slowloris");
  assert_int_equal(responses(c), 1);
  assert_true(strncmp(resps[0].head, "HTTP/1.1 408 Request Timeout\r\n", 30) == 0);

  /* a body that stops arriving */
  tf_client *d = tf_connect(w);
  tf_write_str(d, "POST /body HTTP/1.1\r\nHost: h\r\nContent-Length: 10\r\n\r\nabc");
  tf_wait_eof(d);
  assert_int_equal(w->recs[1].status, 408);
  assert_string_equal(w->recs[1].path, "/body");
  assert_int_equal(w->recs[1].body_len, 0);
}

static void a_slow_handler_is_not_timed_out(void **state) {
  tf_world *w = *state;
  w->t.limits.idle_timeout_ms = 30;
  w->t.limits.header_timeout_ms = 30;
  tf_client *c = tf_connect(w);
  tf_write_str(c, REQ("GET /hold/long"));
  tf_wait_recs(w, 1);
  /* well past both deadlines: the answer is the app's time, not the client's */
  tf_run_for(w, 150);
  assert_false(c->eof);
  tf_answer_held(w);
  wait_responses(c, 1);
  assert_string_equal(resps[0].body, "GET /hold/long");
}


/* ---- streamed answers -------------------------------------------------------------------- */

static void a_streamed_answer_goes_out_as_chunks_as_written(void **state) {
  tf_world *w = *state;
  tf_client *c = tf_connect(w);
  tf_write_str(c, REQ("GET /stream/a?q=1"));
  tf_wait_in(c, "\r\n0\r\n\r\n");
  /* the first piece with the head, then one chunk per write; the empty write wrote nothing */
  assert_string_equal(c->in, HEAD_CHUNKED "e\r\nGET /stream/a\n\r\n"
                                          "8\r\npiece 0\n\r\n"
                                          "8\r\npiece 1\n\r\n"
                                          "8\r\npiece 2\n\r\n"
                                          "0\r\n\r\n");
  assert_int_equal(responses(c), 1);
  assert_int_equal(resps[0].chunks, 4);
  assert_string_equal(resps[0].body, "GET /stream/a\npiece 0\npiece 1\npiece 2\n");
  assert_int_equal(w->streamed[0].handed, 5); /* the first, the empty one and three */
  /* kept alive */
  tf_write_str(c, REQ("GET /after"));
  wait_responses(c, 2);
  assert_string_equal(resps[1].body, "GET /after");
  assert_false(c->eof);
  assert_int_equal(w->recs[0].cancels, 0);
}

static void each_piece_reaches_the_client_before_the_next_is_written(void **state) {
  tf_world *w = *state;
  tf_client *c = tf_connect(w);
  tf_write_str(c, REQ("GET /stream/manual/sse"));
  tf_wait_in(c, "\r\n\r\n");
  tf_settle(w);
  assert_string_equal(c->in, HEAD_CHUNKED); /* no first piece: no chunk */
  assert_int_equal(tf_stream_write_str(w, 0, "data: 1\n\n"), 0);
  tf_wait_in(c, "data: 1\n\n\r\n");
  assert_int_equal(tf_stream_write_str(w, 0, "data: 2\n\n"), 0);
  tf_wait_in(c, "data: 2\n\n\r\n");
  assert_string_equal(c->in, HEAD_CHUNKED "9\r\ndata: 1\n\n\r\n9\r\ndata: 2\n\n\r\n");
  /* a piece of several parts (empty ones among them) is one chunk */
  uv_buf_t parts[] = {uv_buf_init("ab", 2), uv_buf_init("", 0), uv_buf_init("cde", 3)};
  assert_int_equal(isv__exchange_write(w->streamed[0].ex, parts, 3, NULL, NULL), 0);
  tf_wait_in(c, "5\r\nabcde\r\n");
  /* a larger one, still one chunk */
  static char big[3000];
  memset(big, 'z', sizeof big);
  assert_int_equal(tf_stream_write(w, 0, big, sizeof big), 0);
  tf_stream_end(w, 0);
  wait_responses(c, 1);
  assert_int_equal(resps[0].chunks, 4);
  assert_int_equal(resps[0].body_len, 18 + 5 + sizeof big);
  assert_non_null(strstr(c->in, "\r\nbb8\r\nzzz"));
  tf_run_until(w, int_set, &w->streamed[0].released);
  assert_int_equal(w->streamed[0].released, 3);
}

static void a_streamed_answer_to_http10_ends_with_the_connection(void **state) {
  tf_world *w = *state;
  /* keep-alive asked for, but a body of unknown length can only end with the connection */
  tf_client *c = tf_connect(w);
  tf_write_str(c, "GET /stream/old HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
  tf_wait_eof(c);
  assert_false(c->reset);
  assert_string_equal(c->in, "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nConnection: close\r\n"
                             "X-Test: yes\r\n\r\nGET /stream/old\npiece 0\npiece 1\npiece 2\n");
  assert_int_equal(responses(c), 1);
  assert_string_equal(resps[0].body, "GET /stream/old\npiece 0\npiece 1\npiece 2\n");

  /* ended when every piece is already written: it closes then */
  tf_client *d = tf_connect(w);
  tf_write_str(d, "GET /stream/manual/old HTTP/1.0\r\n\r\n");
  tf_wait_recs(w, 2);
  assert_int_equal(tf_stream_write_str(w, 1, "all"), 0);
  tf_wait_in(d, "\r\n\r\nall");
  tf_settle(w);
  assert_false(d->eof);
  tf_stream_end(w, 1);
  tf_wait_eof(d);
  assert_false(d->reset);
  assert_int_equal(tf_h1_responses(d, resps, 16), 1);
  assert_string_equal(resps[0].body, "all");
  tf_wait_stream_closed(d);
}

static void a_streamed_answer_to_head_is_its_head_and_the_connection_goes_on(void **state) {
  tf_world *w = *state;
  tf_client *c = tf_connect(w);
  tf_write_str(c, "HEAD /stream/manual/h HTTP/1.1\r\nHost: h\r\n\r\n" REQ("GET /next"));
  /* the next request is answered while the HEAD's stream is still open: its head was all */
  tf_wait_in(c, "GET /next");
  assert_string_equal(c->in, HEAD_CHUNKED "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n"
                                          "Content-Length: 9\r\nX-Test: yes\r\n\r\nGET /next");
  assert_false(w->streamed[0].ended);
  assert_int_equal(tf_stream_write_str(w, 0, "dropped"), 0); /* released, never written */
  assert_int_equal(w->streamed[0].released, w->streamed[0].handed);
  /* its client gone: no cancel, the answer was complete */
  tf_close_client(c);
  tf_wait_stream_closed(c);
  assert_int_equal(tf_stream_write_str(w, 0, "dropped too"), 0);
  tf_stream_end(w, 0);
  assert_int_equal(w->recs[0].cancels, 0);

  /* timer-driven: head only, then the next one */
  tf_client *d = tf_connect(w);
  tf_write_str(d, "HEAD /stream/t HTTP/1.1\r\nHost: h\r\n\r\n");
  tf_wait_in(d, "\r\n\r\n");
  tf_run_until(w, int_set, &w->streamed[1].ended);
  tf_write_str(d, REQ("GET /then"));
  tf_wait_in(d, "GET /then");
  assert_true(strncmp(d->in, HEAD_CHUNKED "HTTP/1.1 200 OK\r\n", strlen(HEAD_CHUNKED) + 17) == 0);
}

static void a_request_pipelined_behind_a_stream_is_served_after_its_end(void **state) {
  tf_world *w = *state;
  tf_client *c = tf_connect(w);
  tf_write_str(c, REQ("GET /stream/manual/p") REQ("GET /next") REQ("GET /stream/third"));
  tf_wait_recs(w, 1);
  assert_int_equal(tf_stream_write_str(w, 0, "one"), 0);
  tf_wait_in(c, "one\r\n");
  tf_settle(w);
  assert_int_equal(w->n_recs, 1); /* the next waits for the end */
  assert_int_equal(tf_stream_write_str(w, 0, "two"), 0);
  tf_stream_end(w, 0);
  wait_responses(c, 3);
  assert_string_equal(resps[0].body, "onetwo");
  assert_string_equal(resps[1].body, "GET /next");
  assert_string_equal(resps[2].body, "GET /stream/third\npiece 0\npiece 1\npiece 2\n");
  assert_true(tf_event_pos(w, "end /stream/manual/p") < tf_event_pos(w, "exchange /next"));
  assert_true(tf_event_pos(w, "answer /next") < tf_event_pos(w, "exchange /stream/third"));
  assert_false(c->eof);
}

static void a_stream_waiting_for_its_handler_outlives_the_idle_and_header_deadlines(
    void **state) {
  tf_world *w = *state;
  w->t.limits.idle_timeout_ms = 30;
  w->t.limits.header_timeout_ms = 30;
  w->t.limits.send_timeout_ms = 30;
  tf_client *c = tf_connect(w);
  tf_write_str(c, REQ("GET /stream/manual/long"));
  tf_wait_in(c, "\r\n\r\n");
  tf_run_for(w, 150); /* the handler's time, not the client's */
  assert_false(c->eof);
  assert_int_equal(tf_stream_write_str(w, 0, "late"), 0);
  tf_wait_in(c, "late\r\n");
  tf_run_for(w, 150);
  assert_false(c->eof);
  tf_stream_end(w, 0);
  wait_responses(c, 1);
  assert_string_equal(resps[0].body, "late");
  assert_int_equal(w->recs[0].cancels, 0);
  tf_wait_eof(c); /* then idle: the deadline is back */
}

static void a_stream_its_client_does_not_read_is_dropped_after_the_send_timeout(void **state) {
  tf_world *w = *state;
  w->t.limits.send_timeout_ms = 50;
  tf_client *c = tf_connect(w);
  tf_write_str(c, REQ("GET /stream/manual/big"));
  tf_wait_in(c, "\r\n\r\n");
  tf_pause_reading(c, 1);
  static char big[256 * 1024];
  memset(big, 'b', sizeof big);
  /* more than the socket holds: the rest waits in the server, and never moves */
  assert_int_equal(tf_stream_write(w, 0, big, sizeof big), 0);
  assert_int_equal(tf_stream_write(w, 0, big, sizeof big), 0);
  tf_wait_cancelled(w, 0);
  tf_wait_stream_closed(c);
  assert_int_equal(w->streamed[0].released, w->streamed[0].handed); /* the queued ones too */
  /* the handler goes on into the void */
  assert_int_equal(tf_stream_write_str(w, 0, "more"), ISV_ECANCELED);
  assert_int_equal(w->streamed[0].released, w->streamed[0].handed);
  tf_stream_end(w, 0);
  assert_int_equal(w->recs[0].cancels, 1);
}

/* Backpressure (exchange.h, isv__exchange_writable): the bytes a streamed answer has queued
 * and the kernel has not taken are counted; past the bound the exchange says wait, and
 * on_writable runs once they drained to half of it. */
static int writable_calls;
static void count_writable(isv__exchange *ex) {
  (void)ex;
  writable_calls++;
}

static void a_stream_past_its_queue_bound_waits_until_it_drained(void **state) {
  tf_world *w = *state;
  w->t.limits.max_queued_stream = 64 * 1024;
  w->t.limits.max_queued_conn = 1 << 20;
  writable_calls = 0;
  tf_client *c = tf_connect(w);
  tf_write_str(c, REQ("GET /stream/manual/bound"));
  tf_wait_in(c, "\r\n\r\n");
  tf_settle(w);
  isv__exchange *ex = w->streamed[0].ex;
  ex->on_writable = count_writable;
  assert_int_equal(isv__exchange_writable(ex), 1); /* nothing queued */
  tf_pause_reading(c, 1);
  static char big[4 << 20]; /* more than the socket buffers take (the fixture's client
                                * keeps only the start of what it reads) */
  memset(big, 'q', sizeof big);
  assert_int_equal(tf_stream_write(w, 0, big, sizeof big), 0);
  tf_run_for(w, 20);
  assert_int_equal(isv__exchange_writable(ex), 0); /* the bound is passed: wait */
  assert_int_equal(writable_calls, 0);
  tf_pause_reading(c, 0); /* it reads: the queue drains, on_writable once */
  tf_run_until(w, int_set, &writable_calls);
  assert_int_equal(writable_calls, 1);
  assert_int_equal(isv__exchange_writable(ex), 1);
  tf_stream_end(w, 0);
  tf_close_client(c);
  tf_wait_stream_closed(c);
  assert_int_equal(writable_calls, 1); /* once */
}

/* Progress is bytes the client takes: a reader slower than the stream but never stopped is not
 * cut off, though the backlog grows; once it stops, the send timeout drops it. The timeout is
 * long next to the reader's pauses (100 ms), so that a loaded machine does not fail this. */
static void a_slow_reader_that_keeps_reading_is_not_dropped(void **state) {
  tf_world *w = *state;
  w->t.limits.send_timeout_ms = 1000;
  tf_client *c = tf_connect(w);
  tf_write_str(c, REQ("GET /stream/manual/slow"));
  tf_wait_in(c, "\r\n\r\n");
  tf_pause_reading(c, 1);
  static char piece[128 * 1024];
  memset(piece, 's', sizeof piece);
  for (int i = 0; i < 4; i++) assert_int_equal(tf_stream_write(w, 0, piece, sizeof piece), 0);
  for (int round = 0; round < 14; round++) { /* well past one send timeout */
    tf_run_for(w, 100);
    assert_true(tf_read_some(c, 32 * 1024) > 0);
    assert_int_equal(tf_stream_write(w, 0, piece, sizeof piece), 0); /* more than it read */
  }
  assert_int_equal(w->recs[0].cancels, 0);
  assert_false(c->stream_closed);
  tf_wait_cancelled(w, 0); /* stopped reading: dropped */
  tf_stream_end(w, 0);
}

static void a_client_that_goes_away_while_answered_cancels_its_exchange(void **state) {
  tf_world *w = *state;
  /* closes while its request is pending */
  tf_client *c = tf_connect(w);
  tf_write_str(c, REQ("GET /hold/gone"));
  tf_wait_recs(w, 1);
  tf_close_client(c);
  tf_wait_cancelled(w, 0);
  tf_answer_held(w); /* into the void */
  tf_wait_stream_closed(c);
  assert_int_equal(w->recs[0].cancels, 1);

  /* half-closes while pending: cancelled, and the answer that still comes is written */
  tf_client *d = tf_connect(w);
  tf_write_str(d, REQ("GET /hold/half"));
  tf_wait_recs(w, 2);
  tf_shutdown_write(d);
  tf_wait_cancelled(w, 1);
  assert_false(d->eof);
  tf_answer_held(w);
  tf_wait_eof(d);
  assert_int_equal(tf_h1_responses(d, resps, 16), 1);
  assert_string_equal(resps[0].body, "GET /hold/half");

  /* closes during a stream */
  tf_client *e = tf_connect(w);
  tf_write_str(e, REQ("GET /stream/manual/x"));
  tf_wait_recs(w, 3);
  assert_int_equal(tf_stream_write_str(w, 0, "a"), 0);
  tf_wait_in(e, "a\r\n");
  tf_close_client(e);
  tf_wait_cancelled(w, 2);
  tf_stream_write_str(w, 0, "b"); /* written if the socket takes it: it does not */
  tf_wait_stream_closed(e);
  assert_int_equal(tf_stream_write_str(w, 0, "c"), ISV_ECANCELED);
  tf_stream_end(w, 0);
  assert_int_equal(w->recs[2].cancels, 1);
  assert_int_equal(w->streamed[0].released, w->streamed[0].handed);
}

static void no_cancel_once_the_answer_ended(void **state) {
  tf_world *w = *state;
  /* ended, written, then the client goes */
  tf_client *c = tf_connect(w);
  tf_write_str(c, REQ("GET /stream/manual/done") REQ("GET /plain"));
  tf_wait_recs(w, 1);
  tf_stream_end(w, 0);
  wait_responses(c, 2);
  tf_close_client(c);
  tf_wait_stream_closed(c);

  /* ended while its pieces are still queued in the server, then the client goes: the writes
   * fail, and still no cancel */
  tf_client *d = tf_connect(w);
  tf_write_str(d, REQ("GET /stream/manual/queued"));
  tf_wait_recs(w, 3);
  tf_pause_reading(d, 1);
  static char big[256 * 1024];
  memset(big, 'q', sizeof big);
  assert_int_equal(tf_stream_write(w, 1, big, sizeof big), 0);
  assert_int_equal(tf_stream_write(w, 1, big, sizeof big), 0);
  tf_stream_end(w, 1);
  tf_close_client(d);
  tf_wait_stream_closed(d);
  for (int i = 0; i < w->n_recs; i++) assert_int_equal(w->recs[i].cancels, 0);
  assert_int_equal(w->streamed[1].released, w->streamed[1].handed);
}

int main(void) {
#define T(name) cmocka_unit_test_setup_teardown(name, tf_setup_mem, tf_teardown)
  const struct CMUnitTest tests[] = {
      T(request_as_the_handler_sees_it),
      T(methods_the_library_does_not_name_are_other),
      T(head_responses_carry_no_body),
      T(a_large_body_of_known_length_arrives_whole),
      T(a_fresh_body_block_is_faulted_in_before_it_is_read_into),
      T(a_connection_closed_while_its_body_is_faulted_in_leaves_the_block_to_the_job),
      T(pipelined_requests_are_answered_in_order_when_the_first_is_late),
      T(plain_and_other_messages_take_turns_in_one_read),
      T(requests_written_while_one_is_held_wait_their_turn),
      T(chunked_bodies_are_reassembled),
      T(absolute_form_targets_give_their_path),
      T(expect_100_continue_is_answered_before_the_body),
      T(expect_100_continue_with_a_body_too_large_gets_413_only),
      T(a_body_over_the_limit_goes_to_the_error_callback_with_its_path),
      T(headers_over_the_limit_get_431),
      T(too_many_headers_get_431),
      T(malformed_requests_get_400),
      T(a_request_after_a_refused_one_is_never_dispatched),
      T(upgrade_h2c_is_ignored),
      T(connect_is_refused_with_405),
      T(http10_closes_unless_kept_alive),
      T(connection_close_is_the_last_request),
      T(a_half_close_after_a_request_still_gets_its_answer),
      T(the_idle_deadline_closes_a_silent_connection),
      T(a_request_that_stops_arriving_gets_408),
      T(a_slow_handler_is_not_timed_out),
      T(a_streamed_answer_goes_out_as_chunks_as_written),
      T(each_piece_reaches_the_client_before_the_next_is_written),
      T(a_streamed_answer_to_http10_ends_with_the_connection),
      T(a_streamed_answer_to_head_is_its_head_and_the_connection_goes_on),
      T(a_request_pipelined_behind_a_stream_is_served_after_its_end),
      T(a_stream_waiting_for_its_handler_outlives_the_idle_and_header_deadlines),
      T(a_stream_its_client_does_not_read_is_dropped_after_the_send_timeout),
      T(a_slow_reader_that_keeps_reading_is_not_dropped),
      T(a_stream_past_its_queue_bound_waits_until_it_drained),
      T(a_client_that_goes_away_while_answered_cancels_its_exchange),
      T(no_cancel_once_the_answer_ended),
  };
#undef T
  return cmocka_run_group_tests(tests, NULL, NULL);
}
