/* transport/conn.c and listener.c, through a real isv__transport over socketpairs
 * (transport_fixture.h): the choice of engine from the first bytes (the HTTP/2 preface split
 * over several writes, near-prefaces that diverge and must reach the HTTP/1.1 engine whole),
 * the idle deadline of a connection that never spoke, the transport's graceful close (idle
 * connections now, busy ones after their answer), adopted streams handed back to their close
 * callback with their own data, and max_connections. A graceful close waits for a streamed
 * answer (HTTP/1.1 and HTTP/2) until it ends; the drain deadline cuts it off, cancelling it. */
#include "cmocka_prelude.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "transport_fixture.h"

typedef struct sniff_arg {
  isv__transport *t;
  size_t n;
} sniff_arg;

/* The newest connection has held n bytes while it waits to choose (or has chosen). */
static int sniffed(tf_world *w, void *arg) {
  (void)w;
  sniff_arg *a = arg;
  return a->t->conns && a->t->conns->sniff_len == a->n;
}

static void wait_sniffed(tf_world *w, size_t n) {
  sniff_arg a = {&w->t, n};
  tf_run_until(w, sniffed, &a);
}

static tf_resp resps[8];

static void the_preface_split_over_several_writes_selects_http2(void **state) {
  tf_world *w = *state;
  tf_client *c = tf_connect(w);
  tf_h2_start(c);
  nghttp2_nv nv[] = {TF_NV(":method", "GET"), TF_NV(":scheme", "http"),
                     TF_NV(":authority", "localhost"), TF_NV(":path", "/after/preface")};
  tf_h2_stream *st = tf_h2_request(c, nv, 4, NULL, 0, 0);
  uint8_t out[1024];
  size_t n = tf_h2_take(c, out, sizeof out);
  assert_true(n > ISV__H2_PREFACE_LEN);
  assert_memory_equal(out, ISV__H2_PREFACE, ISV__H2_PREFACE_LEN);

  static const size_t cuts[] = {1, 3, 4, 16, 23, 24};
  size_t off = 0;
  for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
    tf_write(c, out + off, cuts[i] - off);
    off = cuts[i];
    wait_sniffed(w, off);
    if (off < ISV__H2_PREFACE_LEN) assert_null(w->t.conns->proto); /* still undecided */
    assert_int_equal(c->in_len, 0);                                /* nothing answered yet */
  }
  assert_ptr_equal(w->t.conns->proto, &isv__http2_proto);
  tf_write(c, out + off, n - off);
  tf_h2_wait_closed(c, st);
  assert_int_equal(st->status, 200);
  assert_memory_equal(st->body, "GET /after/preface", st->body_len);
  assert_int_equal(w->recs[0].kind, TF_EXCHANGE);
}

static void a_near_preface_that_diverges_reaches_http1_whole(void **state) {
  tf_world *w = *state;
  /* "PR" matches the preface; "O" does not: PROPFIND, with its first two bytes */
  tf_client *c = tf_connect(w);
  tf_write_str(c, "PR");
  wait_sniffed(w, 2);
  assert_null(w->t.conns->proto);
  tf_write_str(c, "OPFIND /dav/x?depth=1 HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\n\r\n<>");
  tf_wait_responses(c, 1);
  assert_int_equal(tf_h1_responses(c, resps, 8), 1);
  assert_int_equal(resps[0].status, 200);
  assert_string_equal(resps[0].body, "PROPFIND /dav/x?depth=1 <>");
  assert_int_equal(w->recs[0].kind, TF_EXCHANGE);
  assert_int_equal(w->recs[0].method, ISV__M_OTHER);
  assert_string_equal(w->recs[0].method_name, "PROPFIND");
  assert_string_equal(w->recs[0].path, "/dav/x");
  assert_ptr_equal(w->t.conns->proto, &isv__http1_proto);

  /* byte by byte up to the divergence, then one write with the rest and a second request */
  tf_client *d = tf_connect(w);
  const char *req = "PRI /p HTTP/1.1\r\nHost: h\r\n\r\n";
  for (size_t i = 0; i < 4; i++) {
    tf_write(d, req + i, 1);
    wait_sniffed(w, i + 1);
  }
  tf_write_str(d, req + 4);
  tf_wait_eof(d);
  /* "PRI" is HTTP/2's method only: llhttp refuses it in an HTTP/1.1 request line */
  assert_int_equal(w->n_recs, 2);
  assert_int_equal(w->recs[1].kind, TF_ERROR);
  assert_int_equal(w->recs[1].status, 400);
  assert_int_equal(tf_h1_responses(d, resps, 8), 1);
  assert_true(strncmp(resps[0].head, "HTTP/1.1 400 Bad Request\r\n", 26) == 0);
}

static void a_preface_wrong_in_its_last_byte_is_http1(void **state) {
  tf_world *w = *state;
  tf_client *c = tf_connect(w);
  tf_write(c, ISV__H2_PREFACE, ISV__H2_PREFACE_LEN - 1);
  wait_sniffed(w, ISV__H2_PREFACE_LEN - 1);
  assert_null(w->t.conns->proto);
  tf_write_str(c, "X");
  tf_wait_eof(c);
  assert_int_equal(w->n_recs, 1);
  assert_int_equal(w->recs[0].kind, TF_ERROR);
  assert_int_equal(w->recs[0].status, 400);
  assert_true(strncmp(w->recs[0].msg, "malformed HTTP request: ", 24) == 0);
  assert_int_equal(tf_h1_responses(c, resps, 8), 1);
  assert_int_equal(resps[0].status, 400);
}

static void the_whole_preface_commits_to_http2_whatever_follows(void **state) {
  tf_world *w = *state;
  tf_client *c = tf_connect(w);
  tf_write(c, ISV__H2_PREFACE, ISV__H2_PREFACE_LEN);
  tf_write_str(c, "GET / HTTP/1.1\r\nHost: h\r\n\r\n"); /* not a SETTINGS frame */
  tf_wait_eof(c);
  assert_int_equal(w->n_recs, 0);
  /* what came back is HTTP/2 frames (SETTINGS first, then a GOAWAY), not an HTTP/1.1 answer */
  assert_true(c->in_len >= 9);
  assert_int_equal((unsigned char)c->in[3], NGHTTP2_SETTINGS);
  assert_null(strstr(c->in, "HTTP/1.1"));
}

static void a_half_close_before_the_engine_is_chosen_closes(void **state) {
  tf_world *w = *state;
  tf_client *c = tf_connect(w);
  tf_write_str(c, "PRI * HT");
  wait_sniffed(w, 8);
  tf_shutdown_write(c);
  tf_wait_eof(c);
  assert_int_equal(c->in_len, 0);
  assert_int_equal(w->n_recs, 0);
  tf_wait_stream_closed(c);
}

static void a_connection_silent_from_its_start_is_closed_by_the_idle_deadline(void **state) {
  tf_world *w = *state;
  w->t.limits.idle_timeout_ms = 50;
  tf_client *c = tf_connect(w);
  tf_wait_eof(c);
  tf_wait_stream_closed(c);
  assert_int_equal(c->in_len, 0);
  assert_int_equal(w->n_recs, 0);
  assert_int_equal(w->t.n_conns, 0);
}

static void closing_the_transport_closes_idle_connections_and_lets_a_busy_one_finish(
    void **state) {
  tf_world *w = *state;
  tf_client *silent = tf_connect(w);
  tf_client *idle = tf_connect(w);
  tf_write_str(idle, "GET /done HTTP/1.1\r\nHost: h\r\n\r\n");
  tf_wait_responses(idle, 1);
  tf_client *busy = tf_connect(w);
  tf_write_str(busy, "GET /hold/me HTTP/1.1\r\nHost: h\r\n\r\n");
  tf_wait_recs(w, 2);
  tf_client *partial = tf_connect(w);
  tf_write_str(partial, "GET /half HTTP/1.1\r\nHo");
  wait_sniffed(w, strlen("GET /half HTTP/1.1\r\nHo")); /* read */
  assert_int_equal(w->t.n_conns, 4);

  tf_close_transport(w);
  tf_wait_eof(silent);
  tf_wait_eof(idle);
  tf_wait_eof(partial);
  assert_int_equal(partial->in_len, 0); /* closed, not answered */
  assert_false(busy->eof);
  assert_int_equal(w->transport_closed, 0); /* waits for the busy one */
  assert_int_equal(w->t.n_conns, 1);

  /* the transport takes no new connection meanwhile: refused, and handed back */
  tf_client *late = tf_connect_rc(w, ISV_ESTATE);
  tf_wait_stream_closed(late);
  assert_int_equal(w->t.n_conns, 1);

  tf_answer_held(w);
  tf_wait_eof(busy);
  assert_int_equal(tf_h1_responses(busy, resps, 8), 1);
  assert_int_equal(resps[0].status, 200);
  assert_string_equal(resps[0].body, "GET /hold/me");
  char v[32];
  assert_string_equal(tf_resp_header(&resps[0], "Connection", v, sizeof v), "close");
  tf_wait_stream_closed(busy);
  assert_int_equal(w->transport_closed, 1);
  assert_int_equal(w->t.n_conns, 0);
}

static void closing_a_transport_without_connections_calls_back_at_once(void **state) {
  tf_world *w = *state;
  tf_close_transport(w);
  assert_int_equal(w->transport_closed, 1); /* before isv__transport_close returned */
}

static int other_closed;
static void on_other_closed(uv_handle_t *h) {
  assert_ptr_equal(h->data, &other_closed); /* its own data */
  other_closed++;
}

static void the_adopted_stream_is_handed_back_with_its_own_data(void **state) {
  tf_world *w = *state;
  /* served and closed by the client: the fixture's close callback checks h->data */
  tf_client *c = tf_connect(w);
  assert_ptr_equal(w->t.conns->adopted_data, &c->marker);
  assert_ptr_not_equal(c->pipe->data, &c->marker); /* the transport's while it serves it */
  tf_write_str(c, "GET /x HTTP/1.1\r\nHost: h\r\n\r\n");
  tf_wait_responses(c, 1);
  tf_close_client(c);
  tf_wait_stream_closed(c);

  /* closed by the server (Connection: close) */
  tf_client *d = tf_connect(w);
  tf_write_str(d, "GET /y HTTP/1.0\r\n\r\n");
  tf_wait_eof(d);
  tf_wait_stream_closed(d);

  /* refused: a stream of another loop is closed on its loop, with its data */
  assert_int_equal(isv__transport_adopt(&w->t, NULL, on_other_closed), ISV_EINVAL);
  uv_loop_t other;
  assert_int_equal(uv_loop_init(&other), 0);
  uv_pipe_t p;
  assert_int_equal(uv_pipe_init(&other, &p, 0), 0);
  p.data = &other_closed;
  other_closed = 0;
  assert_int_equal(isv__transport_adopt(&w->t, (uv_stream_t *)&p, on_other_closed), ISV_EINVAL);
  uv_run(&other, UV_RUN_DEFAULT);
  assert_int_equal(other_closed, 1);
  assert_int_equal(uv_loop_close(&other), 0);
  assert_int_equal(w->t.n_conns, 0);
}

/* At the limit, one more is refused only while every connection has a request in flight. */
static void max_connections_refuses_one_more(void **state) {
  tf_world *w = *state;
  w->t.limits.max_connections = 2;
  tf_client *a = tf_connect(w);
  tf_client *b = tf_connect(w);
  tf_write_str(a, "GET /hold/a HTTP/1.1\r\nHost: h\r\n\r\n");
  tf_write_str(b, "GET /hold/b HTTP/1.1\r\nHost: h\r\n\r\n");
  tf_wait_recs(w, 2); /* both being answered: neither makes room */
  tf_client *over = tf_connect_rc(w, ISV_EOVERLOAD);
  tf_wait_eof(over);
  tf_wait_stream_closed(over);
  assert_int_equal(over->in_len, 0);
  assert_int_equal(w->t.n_conns, 2);

  /* the two admitted are served */
  tf_answer_held(w);
  tf_wait_responses(a, 1);
  tf_wait_responses(b, 1);

  /* one gone: room for one more */
  tf_close_client(a);
  tf_wait_stream_closed(a);
  assert_int_equal(w->t.n_conns, 1);
  tf_client *c = tf_connect(w);
  tf_write_str(c, "GET /c HTTP/1.1\r\nHost: h\r\n\r\n");
  tf_wait_responses(c, 1);
  assert_int_equal(tf_h1_responses(c, resps, 8), 1);
  assert_string_equal(resps[0].body, "GET /c");
  /* at the limit again, with b and c idle between requests: the oldest idle one (b) makes
   * room (nginx's reuse of keep-alive connections) */
  tf_client *d = tf_connect(w);
  tf_wait_eof(b);
  tf_write_str(d, "GET /d HTTP/1.1\r\nHost: h\r\n\r\n");
  tf_wait_responses(d, 1);
  tf_write_str(c, "GET /c2 HTTP/1.1\r\nHost: h\r\n\r\n");
  tf_wait_responses(c, 2);
}

/* Connections that never completed a request make room too, the one idle the longest first:
 * silent since its accept, or still sending its request's head. */
static void max_connections_closes_silent_and_half_sent_heads_oldest_first(void **state) {
  tf_world *w = *state;
  w->t.limits.max_connections = 3;
  tf_client *silent = tf_connect(w);
  tf_client *partial = tf_connect(w);
  tf_write_str(partial, "GET /p HTTP/1.1\r\nHost:");
  tf_client *busy = tf_connect(w);
  tf_write_str(busy, "GET /hold/busy HTTP/1.1\r\nHost: h\r\n\r\n");
  tf_wait_recs(w, 1);
  tf_settle(w);
  tf_client *n1 = tf_connect(w); /* the silent one, the oldest, makes room */
  tf_wait_eof(silent);
  tf_client *n2 = tf_connect(w); /* then the half-sent head */
  tf_wait_eof(partial);
  tf_write_str(n2, "GET /n2 HTTP/1.1\r\nHost: h\r\n\r\n");
  tf_wait_responses(n2, 1);
  tf_client *n3 = tf_connect(w); /* then n1, silent since before n2 was idle again */
  tf_wait_eof(n1);
  tf_write_str(n3, "GET /n3 HTTP/1.1\r\nHost: h\r\n\r\n");
  tf_wait_responses(n3, 1);
  /* the request in flight was never the one closed */
  tf_answer_held(w);
  tf_wait_responses(busy, 1);
  assert_int_equal(tf_h1_responses(busy, resps, 8), 1);
  assert_string_equal(resps[0].body, "GET /hold/busy");
}

static int int_set(tf_world *w, void *p) {
  (void)w;
  return *(int *)p != 0;
}

static tf_h2_stream *h2_get(tf_client *c, const char *path) {
  nghttp2_nv nv[] = {TF_NV(":method", "GET"), TF_NV(":scheme", "http"),
                     TF_NV(":authority", "localhost"),
                     {(uint8_t *)":path", (uint8_t *)path, 5, strlen(path), NGHTTP2_NV_FLAG_NONE}};
  tf_h2_stream *st = tf_h2_request(c, nv, 4, NULL, 0, 0);
  tf_h2_flush(c);
  return st;
}

static void closing_the_transport_waits_for_a_streamed_answer_to_end(void **state) {
  tf_world *w = *state;
  tf_client *a = tf_connect(w);
  tf_write_str(a, "GET /stream/manual/a HTTP/1.1\r\nHost: h\r\n\r\n");
  tf_wait_in(a, "\r\n\r\n");
  tf_client *b = tf_connect(w);
  tf_h2_start(b);
  tf_h2_flush(b);
  tf_h2_stream *st = h2_get(b, "/stream/manual/b");
  tf_run_until(w, int_set, &st->status);

  tf_close_transport(w);
  tf_settle(w);
  assert_int_equal(w->transport_closed, 0);
  assert_false(a->eof);
  assert_true(b->goaway_received);
  assert_false(st->closed);
  /* the streams go on */
  assert_int_equal(tf_stream_write_str(w, 0, "x"), 0);
  assert_int_equal(tf_stream_write_str(w, 1, "y"), 0);
  tf_wait_in(a, "x\r\n");
  tf_run_until(w, int_set, &st->data_frames);
  tf_stream_end(w, 0);
  tf_wait_eof(a); /* the last chunk, then closed */
  assert_int_equal(tf_h1_responses(a, resps, 8), 1);
  assert_string_equal(resps[0].body, "x");
  assert_int_equal(w->transport_closed, 0); /* b's still open */
  tf_stream_end(w, 1);
  tf_h2_wait_closed(b, st);
  assert_int_equal(st->error_code, NGHTTP2_NO_ERROR);
  assert_memory_equal(st->body, "y", 1);
  tf_run_until(w, int_set, &w->transport_closed);
  assert_int_equal(w->recs[0].cancels + w->recs[1].cancels, 0);
}

static void the_drain_deadline_cuts_streamed_answers_off(void **state) {
  tf_world *w = *state;
  w->t.limits.drain_timeout_ms = 50;
  tf_client *a = tf_connect(w);
  tf_write_str(a, "GET /stream/manual/a HTTP/1.1\r\nHost: h\r\n\r\n");
  tf_wait_in(a, "\r\n\r\n");
  tf_client *b = tf_connect(w);
  tf_h2_start(b);
  tf_h2_flush(b);
  tf_h2_stream *st = h2_get(b, "/stream/manual/b");
  tf_run_until(w, int_set, &st->status);
  tf_client *c = tf_connect(w);
  tf_write_str(c, "GET /hold/c HTTP/1.1\r\nHost: h\r\n\r\n");
  tf_wait_recs(w, 3);

  tf_close_transport(w);
  tf_run_until(w, int_set, &w->transport_closed);
  for (int i = 0; i < 3; i++) assert_int_equal(w->recs[i].cancels, 1);
  /* their handlers answer into the void */
  assert_int_equal(tf_stream_write_str(w, 0, "late"), ISV_ECANCELED);
  assert_int_equal(tf_stream_write_str(w, 1, "late"), ISV_ECANCELED);
  tf_stream_end(w, 0);
  tf_stream_end(w, 1);
  tf_answer_held(w);
  tf_wait_eof(a);
  tf_wait_eof(b);
  tf_wait_eof(c);
  assert_int_equal(tf_h1_responses(c, resps, 8), 0);
}

/* ---- writes: a large one goes out in slices, in order with what follows ----
 * The tests set the transport's slice budget to 0 (a slice per loop turn) or to a minute (all
 * in one turn): the rule, not the clock, is what they check. */

typedef struct wrote {
  int order[4];
  int status[4];
  int n;
} wrote;
static wrote wrote_log;
static void on_wrote(isv__conn *c, void *ctx, int status) {
  (void)c;
  wrote_log.order[wrote_log.n] = (int)(intptr_t)ctx;
  wrote_log.status[wrote_log.n++] = status;
}
static int received(tf_world *w, void *arg) {
  (void)w;
  tf_client *c = arg;
  return c->eof || c->in_len >= 5 * ISV__WRITE_SLICE - 100 + 4; /* the big write and "tail" */
}

/* After each turn's I/O: the most bytes libuv was given in one turn (held went down by). */
static size_t last_held, most_per_turn;
static void look_at_held(uv_check_t *h) {
  isv__conn *c = h->data;
  if (last_held > c->held && last_held - c->held > most_per_turn) most_per_turn = last_held - c->held;
  last_held = c->held;
}

/* Writes a large buffer (in two pieces) and "tail" behind it under the given slice budget;
 * checks that both arrive whole and in order. Returns the most bytes libuv was given in one
 * loop turn; *roomy: the socket could take more than a slice at once (root: past wmem_max, as
 * loopback TCP does) — else that figure says nothing. */
static size_t write_large_then_tail(tf_world *w, uint64_t budget_ns, int *roomy) {
  tf_client *cl = tf_connect(w);
  isv__conn *c = w->t.conns;
  assert_non_null(c);
  uv_os_fd_t fd;
  int big_buf = 16 << 20;
  *roomy = uv_fileno((uv_handle_t *)c->stream, &fd) == 0 &&
           setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &big_buf, sizeof big_buf) == 0;
  static uv_check_t check; /* outlives this function until its close completes */
  uv_check_init(&w->loop, &check);
  check.data = c;
  most_per_turn = 0;
  w->t.slice_budget_ns = budget_ns;
  size_t big_len = 5 * ISV__WRITE_SLICE - 100; /* the last slice is short */
  char *big = malloc(big_len);
  for (size_t i = 0; i < big_len; i++) big[i] = (char)('a' + i % 23);
  memset(&wrote_log, 0, sizeof wrote_log);
  uv_buf_t b[2] = {uv_buf_init(big, (unsigned)(big_len / 3)),
                   uv_buf_init(big + big_len / 3, (unsigned)(big_len - big_len / 3))};
  assert_int_equal(isv__conn_write(c, b, 2, on_wrote, (void *)(intptr_t)1), 0);
  /* libuv has one slice at most; the rest waits in the connection */
  assert_true(uv_stream_get_write_queue_size(c->stream) <= ISV__WRITE_SLICE);
  assert_true(c->held >= big_len - ISV__WRITE_SLICE);
  static char small[] = "tail";
  uv_buf_t s = uv_buf_init(small, 4);
  assert_int_equal(isv__conn_write(c, &s, 1, on_wrote, (void *)(intptr_t)2), 0);
  last_held = c->held;
  uv_check_start(&check, look_at_held);
  tf_run_until(w, received, cl);
  uv_close((uv_handle_t *)&check, NULL);
  assert_int_equal(cl->in_len, big_len + 4);
  assert_memory_equal(cl->in, big, big_len); /* whole, in order */
  assert_memory_equal(cl->in + big_len, "tail", 4);
  assert_int_equal(wrote_log.n, 2);
  assert_int_equal(wrote_log.order[0], 1);
  assert_int_equal(wrote_log.order[1], 2);
  assert_int_equal(wrote_log.status[0], 0);
  assert_int_equal(wrote_log.status[1], 0);
  assert_int_equal(c->held, 0);
  free(big);
  return most_per_turn;
}

static void a_large_write_goes_out_a_slice_per_loop_turn_with_no_budget(void **state) {
  int roomy;
  size_t most = write_large_then_tail(*state, 0, &roomy);
  if (roomy) assert_true(most <= ISV__WRITE_SLICE);
}

/* With the budget, the slices of a write go on in the same loop turn (libuv runs its pending
 * write callbacks up to 8 times a turn). */
static void a_large_write_goes_on_in_the_same_turn_within_the_budget(void **state) {
  int roomy;
  size_t most = write_large_then_tail(*state, (uint64_t)60 * 1000000000u, &roomy);
  if (roomy) assert_true(most > ISV__WRITE_SLICE);
}

/* A write callback that starts the next large write (HTTP/1.1 answering the next pipelined
 * request from the previous answer's callback): the new write's first slice is with libuv
 * already, and must not be given again. */
static char *chain_big;
static size_t chain_len;
static void write_more(isv__conn *c, void *ctx, int status) {
  on_wrote(c, ctx, status);
  uv_buf_t b = uv_buf_init(chain_big + chain_len / 2, (unsigned)(chain_len - chain_len / 2));
  assert_int_equal(isv__conn_write(c, &b, 1, on_wrote, (void *)(intptr_t)2), 0);
}
static int received_chain(tf_world *w, void *arg) {
  (void)w;
  tf_client *c = arg;
  return c->eof || c->in_len >= chain_len;
}

static void a_write_callback_may_start_the_next_large_write(void **state) {
  tf_world *w = *state;
  tf_client *cl = tf_connect(w);
  isv__conn *c = w->t.conns;
  chain_len = 6 * ISV__WRITE_SLICE;
  chain_big = malloc(chain_len);
  for (size_t i = 0; i < chain_len; i++) chain_big[i] = (char)(i * 7 + i / 4096);
  memset(&wrote_log, 0, sizeof wrote_log);
  uv_buf_t b = uv_buf_init(chain_big, (unsigned)(chain_len / 2));
  assert_int_equal(isv__conn_write(c, &b, 1, write_more, (void *)(intptr_t)1), 0);
  tf_run_until(w, received_chain, cl);
  assert_int_equal(cl->in_len, chain_len);
  assert_memory_equal(cl->in, chain_big, chain_len);
  while (wrote_log.n < 2) uv_run(&w->loop, UV_RUN_ONCE);
  assert_int_equal(wrote_log.order[0], 1);
  assert_int_equal(wrote_log.order[1], 2);
  assert_int_equal(wrote_log.status[1], 0);
  free(chain_big);
}

/* ---- reads: a body read in place, in slices under the same budget ---- */

static int body_recorded(tf_world *w, void *arg) {
  (void)arg;
  return w->n_recs > 0;
}

/* Sends a body of 6 slices and a bit in one go; returns the connection's read_yields. */
static unsigned read_big_body(tf_world *w, uint64_t budget_ns, int *can_pause) {
  w->t.limits.max_body_bytes = 8u << 20;
  w->t.limits.max_receiving = 8u << 20;
  w->t.slice_budget_ns = budget_ns;
  tf_client *cl = tf_connect(w);
  /* a socket that holds more than a slice (loopback TCP does; a socketpair's default does not:
   * raising it past wmem_max needs CAP_NET_ADMIN, without which only delivery is checked) */
  int big = 8 << 20;
  *can_pause = setsockopt(cl->fd, SOL_SOCKET, SO_SNDBUFFORCE, &big, sizeof big) == 0;
  size_t n = 6 * ISV__READ_SLICE + 123;
  char *body = malloc(n);
  for (size_t i = 0; i < n; i++) body[i] = (char)(i % 251);
  char head[160];
  int hl = snprintf(head, sizeof head,
                    "POST /big HTTP/1.1\r\nHost: x\r\nContent-Length: %zu\r\n\r\n", n);
  tf_write(cl, head, (size_t)hl);
  tf_write(cl, body, n);
  tf_run_until(w, body_recorded, NULL);
  assert_int_equal(w->recs[0].body_len, n);
  assert_int_equal(w->recs[0].body_hash, tf_hash(body, n)); /* whole, in order */
  free(body);
  return w->t.conns ? w->t.conns->read_yields : 0;
}

static void a_large_body_is_read_two_slices_per_loop_turn_with_no_budget(void **state) {
  int can_pause;
  unsigned yields = read_big_body(*state, 0, &can_pause);
  if (can_pause) assert_true(yields >= 2); /* after each second full slice: the first read of a
                                            * turn is not timed (conn.c, on_alloc) */
}

static void a_large_body_is_read_in_one_turn_within_the_budget(void **state) {
  int can_pause;
  unsigned yields = read_big_body(*state, (uint64_t)60 * 1000000000u, &can_pause);
  assert_int_equal(yields, 0);
}

/* Reads into the shared buffer (here a chunked body, parsed from it) are under the same budget. */
static void a_chunked_body_is_read_two_buffers_per_loop_turn_with_no_budget(void **state) {
  tf_world *w = *state;
  w->t.limits.max_body_bytes = 8u << 20;
  w->t.limits.max_receiving = 8u << 20;
  w->t.slice_budget_ns = 0;
  tf_client *cl = tf_connect(w);
  int big = 8 << 20;
  int can_pause = setsockopt(cl->fd, SOL_SOCKET, SO_SNDBUFFORCE, &big, sizeof big) == 0;
  size_t chunk = 64 << 10, n_chunks = 24; /* 1.5 MiB: six shared buffers' worth */
  size_t cap = n_chunks * (chunk + 16) + 256, len = 0;
  char *msg = malloc(cap);
  len += (size_t)snprintf(msg, cap, "POST /chunked HTTP/1.1\r\nHost: x\r\n"
                                    "Transfer-Encoding: chunked\r\n\r\n");
  for (size_t i = 0; i < n_chunks; i++) {
    len += (size_t)snprintf(msg + len, cap - len, "%zx\r\n", chunk);
    memset(msg + len, 'a' + (int)(i % 26), chunk);
    len += chunk;
    len += (size_t)snprintf(msg + len, cap - len, "\r\n");
  }
  len += (size_t)snprintf(msg + len, cap - len, "0\r\n\r\n");
  tf_write(cl, msg, len);
  tf_run_until(w, body_recorded, NULL);
  assert_int_equal(w->recs[0].body_len, chunk * n_chunks);
  if (can_pause) assert_true(w->t.conns->read_yields >= 2); /* 3 here: two reads a turn, and
                                                             * loopback's short reads */
  free(msg);
}

/* A connection closed while a sliced write is under way: each write's callback says so, in
 * order, once. */
static void closing_mid_slices_fails_the_queued_writes(void **state) {
  tf_world *w = *state;
  tf_client *cl = tf_connect(w);
  tf_pause_reading(cl, 1);
  isv__conn *c = w->t.conns;
  size_t big_len = 8 * ISV__WRITE_SLICE;
  char *big = calloc(1, big_len);
  memset(&wrote_log, 0, sizeof wrote_log);
  uv_buf_t b = uv_buf_init(big, (unsigned)big_len);
  assert_int_equal(isv__conn_write(c, &b, 1, on_wrote, (void *)(intptr_t)1), 0);
  static char small[] = "tail";
  uv_buf_t s = uv_buf_init(small, 4);
  assert_int_equal(isv__conn_write(c, &s, 1, on_wrote, (void *)(intptr_t)2), 0);
  for (int i = 0; i < 5; i++) uv_run(&w->loop, UV_RUN_NOWAIT); /* a few slices, then stuck */
  assert_true(c->held > 0);
  isv__conn_close(c);
  for (int i = 0; i < 10 && wrote_log.n < 2; i++) uv_run(&w->loop, UV_RUN_NOWAIT);
  assert_int_equal(wrote_log.n, 2);
  assert_int_equal(wrote_log.order[0], 1);
  assert_int_equal(wrote_log.order[1], 2);
  assert_true(wrote_log.status[0] < 0 && wrote_log.status[1] < 0);
  free(big);
}

/* ---- the steady state of a keep-alive connection: no syscall or timer move it can spare ---- */

static int got_ten(tf_world *w, void *arg) {
  (void)w;
  tf_client *c = arg;
  return c->eof || c->in_len >= 10;
}

/* A small write with nothing pending goes to the kernel at once (uv_try_write: no POLLOUT
 * watcher to stop afterwards, so no epoll_ctl), yet its callback still never runs from inside
 * the write call: it runs next loop turn. A write made meanwhile goes through libuv, and the
 * callbacks come in order. */
static void a_small_write_is_taken_at_once_and_called_back_next_turn(void **state) {
  tf_world *w = *state;
  tf_client *cl = tf_connect(w);
  isv__conn *c = w->t.conns;
  memset(&wrote_log, 0, sizeof wrote_log);
  static char hello[] = "hello", world[] = "world";
  uv_buf_t a = uv_buf_init(hello, 5), b = uv_buf_init(world, 5);
  assert_int_equal(isv__conn_write(c, &a, 1, on_wrote, (void *)(intptr_t)1), 0);
  assert_int_equal(wrote_log.n, 0); /* not from inside the call */
  assert_int_equal(uv_stream_get_write_queue_size(c->stream), 0); /* the kernel has it */
  assert_true(c->done_due);
  assert_int_equal(c->write_pending, 5);
  assert_int_equal(isv__conn_write(c, &b, 1, on_wrote, (void *)(intptr_t)2), 0);
  assert_int_equal(wrote_log.n, 0);
  assert_int_equal(c->write_pending, 10);
  tf_run_until(w, got_ten, cl);
  while (wrote_log.n < 2) uv_run(&w->loop, UV_RUN_ONCE);
  assert_int_equal(wrote_log.order[0], 1);
  assert_int_equal(wrote_log.order[1], 2);
  assert_int_equal(wrote_log.status[0], 0);
  assert_int_equal(wrote_log.status[1], 0);
  assert_int_equal(c->write_pending, 0);
  assert_memory_equal(cl->in, "helloworld", 10);
}

/* Closed before its callback's turn: the callback still runs once, with the write's status
 * (the kernel took the bytes), while c is valid. */
static void a_write_taken_at_once_is_called_back_when_the_connection_closes_first(void **state) {
  tf_world *w = *state;
  tf_connect(w);
  isv__conn *c = w->t.conns;
  memset(&wrote_log, 0, sizeof wrote_log);
  static char hello[] = "hello";
  uv_buf_t a = uv_buf_init(hello, 5);
  assert_int_equal(isv__conn_write(c, &a, 1, on_wrote, (void *)(intptr_t)1), 0);
  isv__conn_close(c);
  assert_int_equal(wrote_log.n, 0);
  for (int i = 0; i < 10 && wrote_log.n < 1; i++) uv_run(&w->loop, UV_RUN_NOWAIT);
  assert_int_equal(wrote_log.n, 1);
  assert_int_equal(wrote_log.status[0], 0);
}

static tf_resp ka_resps[4];
static int two_answers(tf_world *w, void *arg) {
  (void)w;
  return tf_h1_responses(arg, ka_resps, 4) >= 2 || ((tf_client *)arg)->eof;
}
static int one_answer(tf_world *w, void *arg) {
  (void)w;
  return tf_h1_responses(arg, ka_resps, 4) >= 1 || ((tf_client *)arg)->eof;
}

/* Between keep-alive requests the connection goes on reading (no read stop/start: an
 * epoll_ctl each) and its timer stays where it was: the deadlines of the next request (header,
 * body, idle) are no sooner than the ones it is set for, so nothing moves it (conn.c, arm). */
static void a_keep_alive_connection_keeps_reading_and_its_timer_between_requests(void **state) {
  tf_world *w = *state;
  tf_client *cl = tf_connect(w);
  static const char req[] = "POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc";
  tf_write_str(cl, req);
  tf_run_until(w, one_answer, cl);
  isv__conn *c = w->t.conns;
  assert_non_null(c);
  assert_true(c->reading);
  uint64_t armed = c->armed;
  assert_true(armed != 0); /* the idle deadline is watched */
  tf_write_str(cl, req);
  tf_run_until(w, two_answers, cl);
  assert_int_equal(tf_h1_responses(cl, ka_resps, 4), 2);
  assert_true(c->reading);
  assert_true(c->armed == armed); /* not moved for the second request */
  /* the answers were written from the read callback: their callbacks ran as it ended, and
   * nothing is left waiting */
  assert_false(c->done_due);
  assert_false(uv_is_active((uv_handle_t *)&c->done_idle));
  assert_true(c->deadline != 0);  /* yet the idle deadline is the current one */
}

/* Every one of eight clients has `want_each` answers (or was closed). */
static int want_each;
static int answered_each(tf_world *w, void *arg) {
  tf_client **cl = arg;
  for (int i = 0; i < 8; i++)
    if (tf_h1_responses(cl[i], ka_resps, 4) < want_each && !cl[i]->eof) return 0;
  (void)w;
  return 1;
}
static int no_conns(tf_world *w, void *arg) {
  (void)arg;
  return w->t.n_conns == 0;
}

/* An answer written from a connection's read callback is done with (its write callback run,
 * its exchange's and its write's blocks given back) before the loop reads the next connection,
 * which takes the same blocks while they are still in the CPU's cache: eight connections
 * answered in the same turns leave one block of each on the loop's warm stacks, not one per
 * connection in flight. They go with the last HTTP/1.1 connection. */
static void answers_from_the_read_callback_give_their_blocks_back_before_the_next_read(void **state) {
  tf_world *w = *state;
  tf_client *cl[8];
  static const char req[] = "POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc";
  for (int i = 0; i < 8; i++) cl[i] = tf_connect(w);
  for (int round = 0; round < 2; round++) { /* the second: every connection known already */
    for (int i = 0; i < 8; i++) tf_write_str(cl[i], req);
    want_each = round + 1;
    tf_run_until(w, answered_each, cl);
  }
  assert_int_equal(w->t.n_h1, 8);
  assert_int_equal(w->t.h1_warm_ex.n, 1);
  assert_int_equal(w->t.h1_warm_write.n, 1);
  for (int i = 0; i < 8; i++) tf_close_client(cl[i]);
  tf_run_until(w, no_conns, NULL);
  assert_int_equal(w->t.n_h1, 0);
  assert_int_equal(w->t.h1_warm_ex.n, 0);
  assert_int_equal(w->t.h1_warm_write.n, 0);
}

/* Counts what the transport allocates (its isv_mem). */
static int n_allocs;
static void *count_malloc(size_t n, void *u) {
  (void)u;
  n_allocs++;
  return malloc(n);
}
static void count_free(void *p, void *u) {
  (void)u;
  free(p);
}
static void *count_calloc(size_t n, size_t size, void *u) {
  (void)u;
  n_allocs++;
  return calloc(n, size);
}
static void *count_realloc(void *p, size_t n, void *u) {
  (void)u;
  n_allocs++;
  return realloc(p, n);
}
static const isv_mem counting_mem = {sizeof(isv_mem), NULL, count_malloc, count_free, count_calloc,
                                     count_realloc};

/* The steady state of a keep-alive connection allocates nothing from the transport's
 * allocator for a small request: the exchange, its headers and storage share one block, the
 * write's context and the response head another; each is the last request's, recycled — and
 * reset: the third request, unlike the second, has no query, one header less and another body,
 * and its exchange shows only its own. (The body is the one allocation left, from the buffer
 * cache: the front end may hand it to the request, which can outlive the exchange.) */
static void a_keep_alive_request_allocates_nothing_once_warm(void **state) {
  tf_world *w = *state;
  w->t.mem = &counting_mem;
  tf_client *cl = tf_connect(w);
  static const char a[] = "POST /a?q=1 HTTP/1.1\r\nHost: x\r\nX-One: 1\r\nContent-Length: 5\r\n"
                          "\r\nhello";
  static const char b[] = "POST /bb HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc";
  tf_write_str(cl, a);
  tf_run_until(w, one_answer, cl);
  tf_write_str(cl, a);
  tf_run_until(w, two_answers, cl);
  int before = n_allocs;
  tf_write_str(cl, b);
  while (tf_h1_responses(cl, ka_resps, 4) < 3 && !cl->eof) uv_run(&w->loop, UV_RUN_ONCE);
  tf_settle(w);
  assert_int_equal(n_allocs - before, 0);
  assert_int_equal(w->n_recs, 3);
  tf_rec *r = &w->recs[2];
  assert_string_equal(r->path, "/bb");
  assert_int_equal(r->query_len, 0);
  assert_int_equal(r->n_headers, 2);
  assert_null(strstr(r->headers, "X-One"));
  assert_int_equal(r->body_len, 3);
  assert_memory_equal(r->body, "abc", 3);
  assert_string_equal(w->recs[1].path, "/a");
  assert_string_equal(w->recs[1].query, "q=1");
}

int main(void) {
#define T(name) cmocka_unit_test_setup_teardown(name, tf_setup, tf_teardown)
  const struct CMUnitTest tests[] = {
      T(the_preface_split_over_several_writes_selects_http2),
      T(a_near_preface_that_diverges_reaches_http1_whole),
      T(a_preface_wrong_in_its_last_byte_is_http1),
      T(the_whole_preface_commits_to_http2_whatever_follows),
      T(a_half_close_before_the_engine_is_chosen_closes),
      T(a_connection_silent_from_its_start_is_closed_by_the_idle_deadline),
      T(closing_the_transport_closes_idle_connections_and_lets_a_busy_one_finish),
      T(closing_a_transport_without_connections_calls_back_at_once),
      T(the_adopted_stream_is_handed_back_with_its_own_data),
      T(max_connections_refuses_one_more),
      T(max_connections_closes_silent_and_half_sent_heads_oldest_first),
      T(closing_the_transport_waits_for_a_streamed_answer_to_end),
      T(the_drain_deadline_cuts_streamed_answers_off),
      T(a_large_write_goes_out_a_slice_per_loop_turn_with_no_budget),
      T(a_large_write_goes_on_in_the_same_turn_within_the_budget),
      T(closing_mid_slices_fails_the_queued_writes),
      T(a_write_callback_may_start_the_next_large_write),
      T(a_large_body_is_read_two_slices_per_loop_turn_with_no_budget),
      T(a_large_body_is_read_in_one_turn_within_the_budget),
      T(a_chunked_body_is_read_two_buffers_per_loop_turn_with_no_budget),
      T(a_small_write_is_taken_at_once_and_called_back_next_turn),
      T(a_write_taken_at_once_is_called_back_when_the_connection_closes_first),
      T(a_keep_alive_connection_keeps_reading_and_its_timer_between_requests),
      T(answers_from_the_read_callback_give_their_blocks_back_before_the_next_read),
      T(a_keep_alive_request_allocates_nothing_once_warm),
  };
#undef T
  return cmocka_run_group_tests(tests, NULL, NULL);
}
