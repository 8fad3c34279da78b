/* See transport_fixture.h. */
#include "cmocka_prelude.h"

#include "transport_fixture.h"

#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#define TF_GUARD_MS 10000

/* ---- the event log ----------------------------------------------------------------------- */

__attribute__((format(printf, 2, 3))) static void tf_log(tf_world *w, const char *fmt, ...) {
  char line[320];
  va_list ap;
  va_start(ap, fmt);
  int k = vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  if (k < 0) return;
  size_t len = (size_t)k < sizeof line ? (size_t)k : sizeof line - 1;
  assert_true(w->events_len + len + 2 < sizeof w->events);
  memcpy(w->events + w->events_len, line, len);
  w->events_len += len;
  w->events[w->events_len++] = '\n';
  w->events[w->events_len] = '\0';
}

int tf_event_pos(const tf_world *w, const char *line) {
  size_t n = strlen(line);
  for (const char *p = w->events; (p = strstr(p, line)) != NULL; p++) {
    if ((p == w->events || p[-1] == '\n') && p[n] == '\n') return (int)(p - w->events);
  }
  return -1;
}

uint32_t tf_hash(const void *p, size_t n) {
  uint32_t h = 2166136261u;
  for (size_t i = 0; i < n; i++) h = (h ^ ((const uint8_t *)p)[i]) * 16777619u;
  return h;
}

/* ---- the handler's timers ---------------------------------------------------------------- */

static void tf_timer_uv(uv_timer_t *u) {
  tf_timer *t = u->data;
  t->cb(t);
}

static void tf_timer_init(tf_world *w, tf_timer *t, void *data) {
  memset(t, 0, sizeof *t);
  t->w = w;
  t->data = data;
  t->open = 1;
  if (w->mem) {
    assert_true(w->n_timers < TF_MAX_TIMERS);
    w->timers[w->n_timers++] = t;
  } else {
    uv_timer_init(&w->loop, &t->uv);
    t->uv.data = t;
  }
}

static void tf_timer_start(tf_timer *t, void (*cb)(tf_timer *t), uint64_t ms, uint64_t repeat) {
  t->cb = cb;
  if (!t->w->mem) {
    uv_timer_start(&t->uv, tf_timer_uv, ms, repeat);
    return;
  }
  t->active = 1;
  t->due = t->w->clock + ms;
  t->repeat = repeat;
}

static void tf_timer_stop(tf_timer *t) {
  if (!t->open) return;
  if (t->w->mem) t->active = 0;
  else uv_timer_stop(&t->uv);
}

static void close_cb_nothing(uv_handle_t *h) { (void)h; }

static void tf_timer_close(tf_timer *t) {
  if (!t->open) return;
  tf_timer_stop(t);
  if (!t->w->mem) uv_close((uv_handle_t *)&t->uv, close_cb_nothing);
  t->open = 0;
}

/* ---- recording --------------------------------------------------------------------------- */

static void copy_text(char *dst, size_t cap, const char *src, size_t len) {
  if (src == NULL) len = 0;
  if (len > cap - 1) len = cap - 1;
  if (len) memcpy(dst, src, len);
  dst[len] = '\0';
}

static void copy_headers(tf_rec *r, const isv__header *hs, size_t n) {
  size_t k = 0;
  r->n_headers = n;
  for (size_t i = 0; i < n; i++) {
    int m = snprintf(r->headers + k, sizeof r->headers - k, "%.*s: %.*s\n", (int)hs[i].name_len,
                     hs[i].name, (int)hs[i].value_len, hs[i].value);
    if (m < 0 || (size_t)m >= sizeof r->headers - k) break;
    k += (size_t)m;
  }
}

static tf_rec *new_rec(tf_world *w, int kind) {
  assert_true(w->n_recs < TF_MAX_RECS);
  tf_rec *r = &w->recs[w->n_recs++];
  memset(r, 0, sizeof *r);
  r->w = w;
  r->kind = kind;
  return r;
}

static void record_exchange(tf_rec *r, const isv__exchange *ex) {
  r->method = ex->method;
  copy_text(r->method_name, sizeof r->method_name, ex->method_name,
            ex->method_name ? strlen(ex->method_name) : 0);
  r->has_path = ex->path != NULL;
  copy_text(r->path, sizeof r->path, ex->path, ex->path_len);
  r->path_len = ex->path_len;
  copy_text(r->query, sizeof r->query, ex->query, ex->query_len);
  r->query_len = ex->query_len;
  copy_headers(r, ex->headers, ex->n_headers);
  copy_text(r->body, sizeof r->body, ex->body, ex->body_len);
  r->body_len = ex->body_len;
  r->body_hash = tf_hash(ex->body, ex->body_len);
}

/* ---- the handler ------------------------------------------------------------------------- */

static const isv__header extra_header = {"X-Test", 6, "yes", 3};

static void answer(tf_world *w, isv__exchange *ex) {
  char path[300];
  copy_text(path, sizeof path, ex->path, ex->path_len);
  size_t cap = 64 + ex->path_len + ex->query_len + ex->body_len + strlen(ex->method_name);
  char *body = malloc(cap);
  assert_non_null(body);
  int n = snprintf(body, cap, "%s %s%s%s", ex->method_name, path, ex->query_len ? "?" : "",
                   ex->query_len ? ex->query : "");
  assert_true(n > 0);
  size_t len = (size_t)n;
  if (ex->body_len > TF_ECHO_MAX) { /* a large body: its length and hash */
    int k = snprintf(body + len, cap - len, " <%zu bytes %08x>", ex->body_len,
                     (unsigned)tf_hash(ex->body, ex->body_len));
    assert_true(k > 0);
    len += (size_t)k;
  } else if (ex->body_len) {
    body[len++] = ' ';
    memcpy(body + len, ex->body, ex->body_len);
    len += ex->body_len;
  }
  uv_buf_t part = uv_buf_init(body, (unsigned)len);
  isv__response resp = {.status = 200,
                        .content_type = "text/plain",
                        .headers = &extra_header,
                        .n_headers = 1,
                        .parts = &part,
                        .n_parts = 1,
                        .release = free,
                        .release_ctx = body};
  tf_log(w, "answer %s", path);
  tf_rec *r = ex->app;
  if (r) r->answered = 1;
  assert_int_equal(isv__exchange_respond(ex, &resp), 0);
}

/* -- streamed answers -- */

typedef struct tf_piece {
  tf_streamed *s;
  char data[];
} tf_piece;

static void piece_release(void *p) {
  tf_piece *pc = p;
  pc->s->released++;
  free(pc);
}

/* A copy of data as one piece, counted when handed and when released. */
static tf_piece *new_piece(tf_streamed *s, const void *data, size_t len, uv_buf_t *b) {
  tf_piece *pc = malloc(sizeof *pc + len + 1);
  assert_non_null(pc);
  pc->s = s;
  if (len) memcpy(pc->data, data, len);
  *b = uv_buf_init(pc->data, (unsigned)len);
  s->handed++;
  return pc;
}

/* One piece (a copy of data) handed as n parts of lens[0..n) bytes (n <= 64). */
static int stream_write_parts(tf_streamed *s, const void *data, const size_t *lens, size_t n) {
  assert_false(s->ended);
  assert_true(n <= 64);
  size_t total = 0;
  for (size_t k = 0; k < n; k++) total += lens[k];
  uv_buf_t b, parts[64];
  tf_piece *pc = new_piece(s, data, total, &b);
  for (size_t k = 0, off = 0; k < n; off += lens[k], k++)
    parts[k] = uv_buf_init(pc->data + off, (unsigned)lens[k]);
  s->last_rc = isv__exchange_write(s->ex, parts, n, piece_release, pc);
  return s->last_rc;
}

static int stream_write(tf_streamed *s, const void *data, size_t len) {
  return stream_write_parts(s, data, &len, 1);
}

static void stream_end(tf_streamed *s) {
  assert_false(s->ended);
  s->ended = 1;
  tf_rec *r = &s->w->recs[s->rec];
  r->answered = 1;
  tf_timer_stop(&s->timer);
  tf_log(s->w, "end %s", r->path);
  isv__exchange *ex = s->ex;
  s->ex = NULL;
  assert_int_equal(isv__exchange_end(ex), 0);
}

static void on_stream_tick(tf_timer *t) {
  tf_streamed *s = t->data;
  int i = s->next++;
  if (i == 1) { /* an empty write: nothing goes out */
    uv_buf_t b;
    tf_piece *pc = new_piece(s, "", 0, &b);
    s->last_rc = isv__exchange_write(s->ex, &b, 1, piece_release, pc);
  }
  if (i < TF_STREAM_PIECES) {
    char text[32];
    int k = snprintf(text, sizeof text, "piece %d\n", i);
    stream_write(s, text, (size_t)k);
  } else {
    stream_end(s);
  }
}

static void start_stream(tf_world *w, isv__exchange *ex, tf_rec *r) {
  assert_true(w->n_streamed < TF_MAX_STREAMED);
  tf_streamed *s = &w->streamed[w->n_streamed++];
  memset(s, 0, sizeof *s);
  s->w = w;
  s->ex = ex;
  s->rec = (int)(r - w->recs);
  s->manual = strncmp(r->path, "/stream/manual", 14) == 0;
  uv_buf_t first;
  tf_piece *pc = NULL;
  if (!s->manual) {
    char text[300];
    int k = snprintf(text, sizeof text, "%s %s\n", r->method_name, r->path);
    pc = new_piece(s, text, (size_t)k, &first);
  }
  isv__response resp = {.status = 200,
                        .content_type = "text/plain",
                        .headers = &extra_header,
                        .n_headers = 1,
                        .parts = pc ? &first : NULL,
                        .n_parts = pc ? 1 : 0,
                        .release = pc ? piece_release : NULL,
                        .release_ctx = pc,
                        .more = 1};
  tf_log(w, "stream %s", r->path);
  assert_int_equal(isv__exchange_respond(ex, &resp), 0);
  if (s->manual) return;
  tf_timer_init(w, &s->timer, s);
  tf_timer_start(&s->timer, on_stream_tick, 1, 1);
}

int tf_stream_write(tf_world *w, int i, const void *data, size_t len) {
  assert_true(i < w->n_streamed);
  return stream_write(&w->streamed[i], data, len);
}

int tf_stream_write_parts(tf_world *w, int i, const void *data, const size_t *lens, size_t n) {
  assert_true(i < w->n_streamed);
  return stream_write_parts(&w->streamed[i], data, lens, n);
}

int tf_stream_write_str(tf_world *w, int i, const char *text) {
  return tf_stream_write(w, i, text, strlen(text));
}

void tf_stream_end(tf_world *w, int i) {
  assert_true(i < w->n_streamed);
  stream_end(&w->streamed[i]);
}

static void on_ex_cancel(isv__exchange *ex) {
  tf_rec *r = ex->app;
  assert_false(r->answered);       /* never after the answer ended */
  assert_int_equal(r->cancels, 0); /* once */
  r->cancels++;
  tf_log(r->w, "cancel %s", r->path);
}

static int rec_cancelled(tf_world *w, void *arg) { return w->recs[*(int *)arg].cancels > 0; }
void tf_wait_cancelled(tf_world *w, int rec) { tf_run_until(w, rec_cancelled, &rec); }

static void on_slow_timer(tf_timer *t) {
  tf_world *w = t->data;
  int n = w->n_slow;
  isv__exchange *batch[8];
  memcpy(batch, w->slow, sizeof batch);
  w->n_slow = 0;
  for (int i = 0; i < n; i++) answer(w, batch[i]);
}

static void on_exchange(void *app, isv__exchange *ex) {
  tf_world *w = app;
  tf_rec *r = new_rec(w, TF_EXCHANGE);
  record_exchange(r, ex);
  tf_log(w, "exchange %s", r->path);
  ex->on_cancel = on_ex_cancel;
  ex->app = r;
  if (strncmp(r->path, "/stream", 7) == 0) {
    start_stream(w, ex, r);
  } else if (strncmp(r->path, "/hold", 5) == 0) {
    assert_true(w->n_held < 8);
    w->held[w->n_held++] = ex;
  } else if (strncmp(r->path, "/slow", 5) == 0) {
    assert_true(w->n_slow < 8);
    w->slow[w->n_slow++] = ex;
    tf_timer_start(&w->slow_timer, on_slow_timer, 5, 0);
  } else {
    answer(w, ex);
  }
}

void tf_answer_held(tf_world *w) {
  int n = w->n_held;
  isv__exchange *batch[8];
  memcpy(batch, w->held, sizeof batch);
  w->n_held = 0;
  for (int i = 0; i < n; i++) answer(w, batch[i]);
}

static void on_error(void *app, isv__exchange *ex, int status, const char *msg) {
  tf_world *w = app;
  tf_rec *r = new_rec(w, TF_ERROR);
  record_exchange(r, ex);
  r->status = status;
  copy_text(r->msg, sizeof r->msg, msg, strlen(msg));
  tf_log(w, "error %s %d", r->has_path ? r->path : "(null)", status);
  size_t len = strlen(msg);
  char *body = malloc(len + 1);
  assert_non_null(body);
  memcpy(body, msg, len + 1);
  uv_buf_t part = uv_buf_init(body, (unsigned)len);
  isv__response resp = {.status = status,
                        .content_type = "text/plain",
                        .parts = &part,
                        .n_parts = 1,
                        .release = free,
                        .release_ctx = body};
  assert_int_equal(isv__exchange_respond(ex, &resp), 0);
}

/* -- gRPC -- */

static tf_call *call_of(isv__grpc_call *call) { return call->app; }

static void finish(tf_call *tc, int status, const char *msg) {
  assert_false(tc->finished); /* exactly once */
  tc->finished = 1;
  tf_log(tc->w, "finish %s %d", tc->w->recs[tc->rec].path, status);
  isv__grpc_finish(tc->call, status, msg);
}

static void on_message(isv__grpc_call *call, uint8_t *msg, size_t len, int compressed) {
  tf_call *tc = call_of(call);
  assert_false(tc->cancelled);
  char big[64];
  const uint8_t *text = msg;
  size_t tlen = len;
  if (len > TF_ECHO_MAX) { /* a large message: its length and hash */
    tlen = (size_t)snprintf(big, sizeof big, "<%zu bytes %08x>", len, (unsigned)tf_hash(msg, len));
    text = (const uint8_t *)big;
  }
  assert_true(tc->msgs_len + tlen + 2 < sizeof tc->msgs);
  if (tc->n_msgs) tc->msgs[tc->msgs_len++] = ',';
  if (compressed) { /* marked "z:" (still coded: the service's to inflate) */
    memcpy(tc->msgs + tc->msgs_len, "z:", 2);
    tc->msgs_len += 2;
  }
  memcpy(tc->msgs + tc->msgs_len, text, tlen);
  tc->msgs_len += tlen;
  tc->msgs[tc->msgs_len] = '\0';
  tc->n_msgs++;
  isv__bigbuf_free(msg);
  tf_log(tc->w, "message %s %d", tc->w->recs[tc->rec].path, (int)len);
}

static void on_half_close(isv__grpc_call *call) {
  tf_call *tc = call_of(call);
  tc->half_closed = 1;
  tf_log(tc->w, "half-close %s", tc->w->recs[tc->rec].path);
  if (strcmp(tc->w->recs[tc->rec].path, "/test.Echo/Unary") != 0) return;
  size_t len = 5 + tc->msgs_len;
  char *out = malloc(len + 1);
  assert_non_null(out);
  memcpy(out, "pong:", 5);
  memcpy(out + 5, tc->msgs, tc->msgs_len);
  uv_buf_t part = uv_buf_init(out, (unsigned)len);
  assert_int_equal(isv__grpc_send(call, &part, 1, free, out), 0);
  finish(tc, ISV__GRPC_OK, "all good");
}

static void on_finish_timer(tf_timer *t) {
  tf_call *tc = t->data;
  if (!tc->finished) finish(tc, ISV__GRPC_CANCELLED, "cancelled");
}

static void on_cancel(isv__grpc_call *call) {
  tf_call *tc = call_of(call);
  tc->cancelled++;
  tf_log(tc->w, "cancel %s", tc->w->recs[tc->rec].path);
  if (tc->finished) return;
  if (!tc->finish_timer.open) tf_timer_init(tc->w, &tc->finish_timer, tc);
  tf_timer_start(&tc->finish_timer, on_finish_timer, 1, 0);
}

static void on_grpc(void *app, isv__grpc_call *call) {
  tf_world *w = app;
  tf_rec *r = new_rec(w, TF_GRPC);
  r->has_path = 1;
  copy_text(r->path, sizeof r->path, call->path, call->path_len);
  r->path_len = call->path_len;
  copy_headers(r, call->headers, call->n_headers);
  r->timeout_ms = call->timeout_ms;
  r->coding = (int)call->coding;
  assert_true(w->n_calls < TF_MAX_CALLS);
  tf_call *tc = &w->calls[w->n_calls++];
  memset(tc, 0, sizeof *tc);
  tc->w = w;
  tc->call = call;
  tc->rec = (int)(r - w->recs);
  call->app = tc;
  tf_log(w, "grpc %s", r->path);
  if (strcmp(r->path, "/test.Echo/Fail") == 0) {
    finish(tc, ISV__GRPC_NOT_FOUND, "no such thing: 100%");
    return;
  }
  call->on_message = on_message;
  call->on_half_close = on_half_close;
  call->on_cancel = on_cancel;
}

/* ---- world ------------------------------------------------------------------------------- */

void tf_default_limits(isv__transport_limits *l) {
  memset(l, 0, sizeof *l);
  l->max_body_bytes = 1u << 20;
  l->max_header_bytes = 8192;
  l->idle_timeout_ms = 60000;
  l->header_timeout_ms = 60000;
  l->max_connections = 64;
}

static void on_guard(uv_timer_t *t) { ((tf_world *)t->data)->guard_fired = 1; }

static int setup(void **state, int mem) {
  signal(SIGPIPE, SIG_IGN); /* as a host does: a client that hangs up mid-answer is no signal */
  tf_world *w = calloc(1, sizeof *w);
  assert_non_null(w);
  w->mem = mem;
  w->clock = 1000; /* any start: no deadline may take 0 for "none" */
  if (!mem) {
    assert_int_equal(uv_loop_init(&w->loop), 0);
    uv_timer_init(&w->loop, &w->guard);
    w->guard.data = w;
  }
  tf_timer_init(w, &w->slow_timer, w);
  isv__transport_limits l;
  tf_default_limits(&l);
  isv__transport_handler h = {w, on_exchange, on_error, on_grpc, NULL, NULL, NULL};
  isv__transport_init(&w->t, mem ? NULL : &w->loop, &l, &h); /* memory: no loop at all */
  *state = w;
  return 0;
}

int tf_setup(void **state) { return setup(state, 0); }
int tf_setup_mem(void **state) { return setup(state, 1); }

isv__conn *tf_server_conn(tf_client *c) {
  if (c->w->mem) return &c->mc->c;
  for (isv__conn *k = c->w->t.conns; k; k = k->next) /* adopted: its stream is our pipe */
    if (k->stream == (uv_stream_t *)c->pipe) return k;
  return NULL;
}

isv__transport_job *tf_held_job;
int tf_jobs_offered;

int tf_hold_job(void *app, isv__transport_job *j) {
  (void)app;
  tf_held_job = j;
  tf_jobs_offered++;
  return 0;
}

void tf_run_held_job(void) {
  isv__transport_job *j = tf_held_job;
  tf_held_job = NULL;
  j->work(j);
  j->done(j);
}

int tf_open_conns(tf_world *w) {
  if (!w->mem) return (int)(w->t.n_conns - w->t.n_closing);
  int n = 0;
  for (int i = 0; i < w->n_clients; i++)
    if (w->clients[i].mc && !w->clients[i].mc->c.closing) n++;
  return n;
}

static void on_transport_closed(isv__transport *t) {
  tf_world *w = (tf_world *)((char *)t - offsetof(tf_world, t));
  w->transport_closed++;
}

static int all_streams_closed(tf_world *w, void *arg) {
  (void)arg;
  for (int i = 0; i < w->n_clients; i++)
    if (w->clients[i].adopt_rc == 0 && !w->clients[i].stream_closed) return 0;
  return 1;
}

static int all_calls_finished(tf_world *w, void *arg) {
  (void)arg;
  for (int i = 0; i < w->n_calls; i++)
    if (!w->calls[i].finished) return 0;
  return 1;
}

static int transport_closed(tf_world *w, void *arg) {
  (void)arg;
  return w->transport_closed > 0;
}

void tf_close_transport(tf_world *w) {
  if (!w->mem) {
    isv__transport_close(&w->t, on_transport_closed);
    return;
  }
  w->mem_closing = 1;
  w->t.closing = 1;
  for (int i = 0; i < w->n_clients; i++)
    if (w->clients[i].mc) isv__conn_shutdown(&w->clients[i].mc->c);
}

int tf_teardown(void **state) {
  tf_world *w = *state;
  tf_answer_held(w);
  for (int i = 0; i < w->n_streamed; i++)
    if (!w->streamed[i].ended) stream_end(&w->streamed[i]);
  for (int i = 0; i < w->n_clients; i++) tf_close_client(&w->clients[i]);
  tf_run_until(w, all_streams_closed, NULL);
  tf_run_until(w, all_calls_finished, NULL); /* cancelled ones finish from a timer */
  if (!w->t.closing) tf_close_transport(w);
  tf_run_until(w, transport_closed, NULL);
  assert_int_equal(w->transport_closed, 1);
  assert_int_equal(w->t.n_conns, 0);
  assert_null(w->t.conns);
  assert_int_equal(tf_open_conns(w), 0);
  assert_null(w->t.idle_head); /* no connection left in the transport's idle list */
  for (int i = 0; i < w->n_calls; i++) tf_timer_close(&w->calls[i].finish_timer);
  for (int i = 0; i < w->n_streamed; i++) {
    tf_streamed *s = &w->streamed[i];
    assert_int_equal(s->released, s->handed); /* every piece let go of, once */
    tf_timer_close(&s->timer);
  }
  for (int i = 0; i < w->n_clients; i++) {
    tf_client *c = &w->clients[i];
    if (c->poll_open) uv_close((uv_handle_t *)&c->poll, close_cb_nothing);
    if (c->h2) nghttp2_session_del(c->h2);
    isv__memconn_free(c->mc);
    free(c->in);
    free(c->out);
  }
  tf_timer_close(&w->slow_timer);
  if (!w->mem) {
    uv_close((uv_handle_t *)&w->guard, close_cb_nothing);
    uv_run(&w->loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&w->loop), 0); /* no handle left behind */
  }
  free(w);
  return 0;
}

/* ---- running the loop -------------------------------------------------------------------- */

/* ---- memory mode: the world without a loop ------------------------------------------------ */

/* What a connection's "kernel" holds for a client that does not read (isv__memconn.sndbuf):
 * about a socketpair's buffer, as the tests were written against. */
#define TF_MEM_SNDBUF ((size_t)128 << 10)

static void read_in_mem(tf_client *c, size_t max);

/* What is due now, without moving the clock: the clients' bytes go to their connections (while
 * they read), the connections' bytes to the clients (unless paused), writes complete, closed
 * connections settle. Whether anything happened. */
static int mem_step(tf_world *w) {
  int did = 0;
  for (int i = 0; i < w->n_clients; i++) {
    tf_client *c = &w->clients[i];
    isv__memconn *m = c->mc;
    if (m == NULL) continue;
    if (c->out_off < c->out_len) {
      if (m->c.closing) { /* the server is gone: what is left can never be written */
        c->write_failed = 1;
        c->out_off = c->out_len;
        did = 1;
      } else {
        size_t n = isv__memconn_feed(m, c->out + c->out_off, c->out_len - c->out_off);
        c->out_off += n;
        did |= n > 0;
      }
    }
    if (c->out_off == c->out_len) {
      c->out_off = c->out_len = 0;
      if (c->shut_pending) {
        c->shut_pending = 0;
        if (!m->eof) isv__memconn_eof(m);
        did = 1;
      }
    }
    if (isv__memconn_pending(m) && c->fd >= 0 && !c->paused) {
      read_in_mem(c, (size_t)-1);
      did = 1;
    }
    did |= isv__memconn_settle(m); /* writes done (in the "kernel"), or failed */
    if (m->c.closing) {
      if (!c->eof && isv__memconn_pending(m) == 0 && c->fd >= 0) {
        c->eof = 1; /* it read all there was, then the end */
        c->reset = m->reset;
        did = 1;
      }
      if (!c->stream_closed && m->n_writes == 0) {
        c->stream_closed = 1;
        did = 1;
      }
    }
  }
  if (w->mem_closing && !w->transport_closed && tf_open_conns(w) == 0) {
    w->transport_closed = 1;
    did = 1;
  }
  return did;
}

static void mem_settle(tf_world *w) {
  for (int i = 0; i < 100000 && mem_step(w); i++) {
  }
}

/* The next time something is due (connections' deadlines and write checks, the handler's
 * timers), 0: nothing. */
static uint64_t mem_next(tf_world *w) {
  uint64_t at = 0;
  for (int i = 0; i < w->n_clients; i++) {
    uint64_t k = w->clients[i].mc ? isv__memconn_next(w->clients[i].mc) : 0;
    if (k && (at == 0 || k < at)) at = k;
  }
  for (int i = 0; i < w->n_timers; i++) {
    tf_timer *t = w->timers[i];
    if (t->open && t->active && (at == 0 || t->due < at)) at = t->due;
  }
  return at;
}

/* The clock moves to `at` (never back), and what is due then fires. */
static void mem_advance(tf_world *w, uint64_t at) {
  if (at > w->clock) w->clock = at;
  for (int i = 0; i < w->n_clients; i++)
    if (w->clients[i].mc) isv__memconn_fire(w->clients[i].mc);
  for (int i = 0; i < w->n_timers; i++) {
    tf_timer *t = w->timers[i];
    if (!t->open || !t->active || t->due > w->clock) continue;
    if (t->repeat) t->due = w->clock + t->repeat;
    else t->active = 0;
    t->cb(t);
  }
}

static void mem_run_until(tf_world *w, tf_pred pred, void *arg) {
  uint64_t limit = w->clock + TF_GUARD_MS;
  for (;;) {
    mem_settle(w);
    if (pred(w, arg)) return;
    uint64_t at = mem_next(w);
    if (at == 0) fail_msg("the condition cannot hold: nothing is left to happen");
    if (at > limit) fail_msg("the condition did not hold within %d ms", TF_GUARD_MS);
    mem_advance(w, at);
  }
}

void tf_run_until(tf_world *w, tf_pred pred, void *arg) {
  if (w->mem) {
    mem_run_until(w, pred, arg);
    return;
  }
  w->guard_fired = 0;
  uv_timer_start(&w->guard, on_guard, TF_GUARD_MS, 0);
  while (!pred(w, arg)) {
    if (w->guard_fired) fail_msg("the condition did not hold within %d ms", TF_GUARD_MS);
    uv_run(&w->loop, UV_RUN_ONCE);
  }
  uv_timer_stop(&w->guard);
}

void tf_settle(tf_world *w) {
  if (w->mem) {
    mem_settle(w);
    return;
  }
  for (int i = 0; i < 20; i++) uv_run(&w->loop, UV_RUN_NOWAIT);
}

static void on_run_for(uv_timer_t *t) { *(int *)t->data = 1; }
static int flag_set(tf_world *w, void *arg) {
  (void)w;
  return *(int *)arg;
}
void tf_run_for(tf_world *w, uint64_t ms) {
  if (w->mem) {
    uint64_t end = w->clock + ms;
    for (;;) {
      mem_settle(w);
      uint64_t at = mem_next(w);
      if (at == 0 || at > end) break;
      mem_advance(w, at);
    }
    w->clock = end;
    mem_settle(w);
    return;
  }
  uv_timer_t t;
  int fired = 0;
  uv_timer_init(&w->loop, &t);
  t.data = &fired;
  uv_timer_start(&t, on_run_for, ms, 0);
  tf_run_until(w, flag_set, &fired);
  uv_close((uv_handle_t *)&t, NULL);
  uv_run(&w->loop, UV_RUN_NOWAIT); /* its close callback: t lives on this stack */
}

static int client_eof(tf_world *w, void *arg) {
  (void)w;
  return ((tf_client *)arg)->eof;
}
void tf_wait_eof(tf_client *c) { tf_run_until(c->w, client_eof, c); }

static int recs_at_least(tf_world *w, void *arg) { return w->n_recs >= *(int *)arg; }
void tf_wait_recs(tf_world *w, int n) { tf_run_until(w, recs_at_least, &n); }

static int stream_closed(tf_world *w, void *arg) {
  (void)w;
  return ((tf_client *)arg)->stream_closed;
}
void tf_wait_stream_closed(tf_client *c) { tf_run_until(c->w, stream_closed, c); }

typedef struct in_arg {
  tf_client *c;
  const char *needle;
} in_arg;
static int in_has(tf_world *w, void *arg) {
  (void)w;
  in_arg *a = arg;
  if (a->c->in_len == 0) return 0;
  size_t n = strlen(a->needle);
  for (size_t i = 0; i + n <= a->c->in_len; i++)
    if (memcmp(a->c->in + i, a->needle, n) == 0) return 1;
  return 0;
}
void tf_wait_in(tf_client *c, const char *needle) {
  in_arg a = {c, needle};
  tf_run_until(c->w, in_has, &a);
}

typedef struct resp_arg {
  tf_client *c;
  int n;
} resp_arg;
static int responses_at_least(tf_world *w, void *arg) {
  (void)w;
  resp_arg *a = arg;
  static tf_resp scratch[16];
  return tf_h1_responses(a->c, scratch, 16) >= a->n;
}
void tf_wait_responses(tf_client *c, int n) {
  resp_arg a = {c, n};
  tf_run_until(c->w, responses_at_least, &a);
}

/* ---- clients ----------------------------------------------------------------------------- */

static void append_in(tf_client *c, const char *p, size_t n) {
  if (c->in_len + n + 1 > c->in_cap) {
    size_t cap = c->in_cap ? c->in_cap : 4096;
    while (cap < c->in_len + n + 1) cap *= 2;
    c->in = realloc(c->in, cap);
    assert_non_null(c->in);
    c->in_cap = cap;
  }
  memcpy(c->in + c->in_len, p, n);
  c->in_len += n;
  c->in[c->in_len] = '\0';
}

static void on_poll(uv_poll_t *p, int status, int events);

/* What the server wrote reaches the client (memory): at most max bytes. */
static void read_in_mem(tf_client *c, size_t max) {
  while (max && isv__memconn_pending(c->mc)) {
    char buf[65536];
    size_t n = isv__memconn_take(c->mc, buf, max < sizeof buf ? max : sizeof buf);
    max -= n;
    append_in(c, buf, n);
    if (c->h2) {
      ssize_t rc = nghttp2_session_mem_recv(c->h2, (const uint8_t *)buf, n);
      if (rc < 0) fail_msg("client nghttp2_session_mem_recv: %s", nghttp2_strerror((int)rc));
    }
  }
  if (c->h2) tf_h2_flush(c);
}

/* Watch for what the client waits for: bytes to read, and room to write what is queued. */
static void update_poll(tf_client *c) {
  if (c->w->mem) return; /* memory: mem_step does it all */
  int ev = 0;
  if (c->fd >= 0 && !c->eof)
    ev = (c->paused ? 0 : UV_READABLE) | (c->out_len > c->out_off ? UV_WRITABLE : 0);
  if (ev == c->poll_events) return;
  if (ev == 0) uv_poll_stop(&c->poll);
  else assert_int_equal(uv_poll_start(&c->poll, ev, on_poll), 0);
  c->poll_events = ev;
}

/* Write what is queued, as far as the socket takes it. */
static void write_out(tf_client *c) {
  if (c->w->mem) return; /* memory: mem_step feeds the connection */
  while (c->fd >= 0 && c->out_off < c->out_len) {
    ssize_t n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off, MSG_NOSIGNAL);
    if (n > 0) {
      c->out_off += (size_t)n;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    /* the server is gone: what is left can never be written */
    c->write_failed = 1;
    c->out_off = c->out_len;
  }
  if (c->out_off == c->out_len) {
    c->out_off = c->out_len = 0;
    if (c->shut_pending && c->fd >= 0) {
      c->shut_pending = 0;
      shutdown(c->fd, SHUT_WR);
    }
  }
  update_poll(c);
}

/* Read what is there, at most max bytes; the bytes read. */
static size_t read_in(tf_client *c, size_t max) {
  size_t got = 0;
  while (got < max) {
    char buf[65536];
    size_t want = max - got < sizeof buf ? max - got : sizeof buf;
    ssize_t n = read(c->fd, buf, want);
    if (n > 0) {
      append_in(c, buf, (size_t)n);
      got += (size_t)n;
      if (c->h2) {
        ssize_t rc = nghttp2_session_mem_recv(c->h2, (const uint8_t *)buf, (size_t)n);
        if (rc < 0) fail_msg("client nghttp2_session_mem_recv: %s", nghttp2_strerror((int)rc));
      }
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    if (n < 0 && errno == EINTR) continue;
    c->eof = 1;
    c->reset = n < 0 && errno == ECONNRESET;
    update_poll(c);
    break;
  }
  if (c->h2 && !c->eof) tf_h2_flush(c);
  return got;
}

static void on_poll(uv_poll_t *p, int status, int events) {
  tf_client *c = p->data;
  if (status < 0) return;
  if (events & UV_WRITABLE) write_out(c);
  if ((events & UV_READABLE) && !c->paused && c->fd >= 0) read_in(c, (size_t)-1);
}

void tf_pause_reading(tf_client *c, int paused) {
  c->paused = paused;
  update_poll(c);
}

size_t tf_read_some(tf_client *c, size_t max) {
  assert_true(c->fd >= 0);
  if (c->w->mem) {
    size_t before = c->in_len;
    read_in_mem(c, max);
    return c->in_len - before;
  }
  return read_in(c, max);
}

static void on_stream_closed(uv_handle_t *h) {
  /* the data is the host's again: it points at that client's marker */
  tf_client *c = (tf_client *)((char *)h->data - offsetof(tf_client, marker));
  assert_ptr_equal(h, c->pipe); /* fails when data is not the original one */
  assert_int_equal(c->marker, 0x5eed);
  assert_false(c->stream_closed); /* once */
  c->stream_closed = 1;
  c->pipe = NULL;
  free(h);
}

tf_client *tf_connect_rc(tf_world *w, int want_rc) {
  assert_true(w->n_clients < TF_MAX_CLIENTS);
  tf_client *c = &w->clients[w->n_clients];
  memset(c, 0, sizeof *c);
  c->w = w;
  c->index = w->n_clients++;
  if (w->mem) { /* the transport's accept, without a socket: room, then a connection */
    assert_int_equal(want_rc, 0);
    assert_int_equal(isv__transport_make_room(&w->t), 0);
    c->mc = isv__memconn_new(&w->t, &w->clock);
    assert_non_null(c->mc);
    c->mc->sndbuf = TF_MEM_SNDBUF;
    c->marker = 0x5eed;
    return c;
  }
  int sv[2];
  assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  assert_int_equal(fcntl(sv[1], F_SETFL, O_NONBLOCK), 0);
  c->fd = sv[1];
  c->pipe = malloc(sizeof *c->pipe);
  assert_non_null(c->pipe);
  assert_int_equal(uv_pipe_init(&w->loop, c->pipe, 0), 0);
  assert_int_equal(uv_pipe_open(c->pipe, sv[0]), 0);
  c->marker = 0x5eed;
  c->pipe->data = &c->marker;
  assert_int_equal(uv_poll_init(&w->loop, &c->poll, c->fd), 0);
  c->poll.data = c;
  c->poll_open = 1;
  update_poll(c);
  c->adopt_rc = isv__transport_adopt(&w->t, (uv_stream_t *)c->pipe, on_stream_closed);
  assert_int_equal(c->adopt_rc, want_rc);
  if (c->adopt_rc != 0) c->adopt_rc = 0; /* its close callback still runs: wait for it too */
  return c;
}

tf_client *tf_connect(tf_world *w) { return tf_connect_rc(w, 0); }

void tf_write(tf_client *c, const void *data, size_t len) {
  assert_true(c->fd >= 0);
  assert_false(c->shut_pending);
  if (len == 0) return;
  if (c->out_len + len > c->out_cap) {
    size_t cap = c->out_cap ? c->out_cap : 4096;
    while (cap < c->out_len + len) cap *= 2;
    c->out = realloc(c->out, cap);
    assert_non_null(c->out);
    c->out_cap = cap;
  }
  memcpy(c->out + c->out_len, data, len);
  c->out_len += len;
  write_out(c); /* what the socket does not take now goes when it is writable */
}

void tf_write_str(tf_client *c, const char *s) { tf_write(c, s, strlen(s)); }

void tf_shutdown_write(tf_client *c) {
  c->shut_pending = 1;
  write_out(c); /* after what is queued */
}

void tf_close_client(tf_client *c) {
  int fd = c->fd;
  if (fd < 0) return;
  c->fd = -1;
  if (c->w->mem) { /* the server reads the end; what it still writes fails */
    c->out_off = c->out_len = 0;
    c->shut_pending = 0;
    isv__memconn_hangup(c->mc);
    return;
  }
  update_poll(c); /* stopped before the descriptor is closed */
  close(fd);
}

/* ---- HTTP/1.1 responses ------------------------------------------------------------------ */

static const char *find(const char *p, size_t n, const char *needle) {
  size_t k = strlen(needle);
  for (size_t i = 0; i + k <= n; i++)
    if (memcmp(p + i, needle, k) == 0) return p + i;
  return NULL;
}

const char *tf_resp_header(const tf_resp *r, const char *name, char *buf, size_t cap) {
  size_t n = strlen(name);
  const char *line = strstr(r->head, "\r\n");
  while (line && line[2] != '\0') {
    line += 2;
    const char *end = strstr(line, "\r\n");
    if (end == NULL) end = line + strlen(line);
    if ((size_t)(end - line) > n && strncasecmp(line, name, n) == 0 && line[n] == ':') {
      const char *v = line + n + 1;
      while (*v == ' ') v++;
      copy_text(buf, cap, v, (size_t)(end - v));
      return buf;
    }
    line = end;
  }
  return NULL;
}

/* A chunked body at p: decoded into r; the bytes it took, or 0 when it is not complete. */
static size_t dechunk(tf_resp *r, const char *p, size_t n) {
  size_t off = 0;
  for (;;) {
    const char *eol = find(p + off, n - off, "\r\n");
    if (eol == NULL) return 0;
    char *endp;
    size_t size = (size_t)strtoul(p + off, &endp, 16);
    assert_ptr_equal(endp, eol); /* no extensions: the server writes none */
    off = (size_t)(eol - p) + 2;
    if (size == 0) { /* no trailers either */
      if (n - off < 2) return 0;
      assert_memory_equal(p + off, "\r\n", 2);
      r->body[r->body_len] = '\0';
      return off + 2;
    }
    if (n - off < size + 2) return 0;
    assert_true(r->body_len + size < sizeof r->body);
    memcpy(r->body + r->body_len, p + off, size);
    r->body_len += size;
    r->chunks++;
    assert_memory_equal(p + off + size, "\r\n", 2);
    off += size + 2;
  }
}

int tf_h1_responses(const tf_client *c, tf_resp *out, int max) {
  size_t pos = 0;
  int n = 0;
  while (n < max && pos < c->in_len) {
    const char *start = c->in + pos;
    const char *end = find(start, c->in_len - pos, "\r\n\r\n");
    if (end == NULL) break;
    size_t head_len = (size_t)(end - start) + 2;
    tf_resp *r = &out[n];
    memset(r, 0, sizeof *r);
    assert_true(head_len < sizeof r->head);
    memcpy(r->head, start, head_len);
    r->head[head_len] = '\0';
    assert_true(strncmp(r->head, "HTTP/1.1 ", 9) == 0);
    r->status = atoi(r->head + 9);
    size_t body = 0;
    char v[32];
    const char *b = start + head_len + 2;
    size_t avail = c->in_len - pos - head_len - 2;
    if (r->status >= 200 && tf_resp_header(r, "Transfer-Encoding", v, sizeof v)) {
      assert_string_equal(v, "chunked");
      size_t used = dechunk(r, b, avail);
      if (used == 0) break; /* not all here yet */
      pos += head_len + 2 + used;
      n++;
      continue;
    }
    if (r->status >= 200 && tf_resp_header(r, "Content-Length", v, sizeof v))
      body = (size_t)strtoul(v, NULL, 10);
    else if (r->status >= 200) { /* delimited by the close */
      if (!c->eof) break;
      body = avail;
    }
    size_t total = head_len + 2 + body;
    if (pos + total > c->in_len) break;
    assert_true(body < sizeof r->body);
    memcpy(r->body, b, body);
    r->body[body] = '\0';
    r->body_len = body;
    pos += total;
    n++;
  }
  return n;
}

/* ---- HTTP/2 client ----------------------------------------------------------------------- */

static tf_h2_stream *h2_stream(tf_client *c, int32_t id) {
  for (int i = 0; i < c->n_streams; i++)
    if (c->streams[i].id == id) return &c->streams[i];
  return NULL;
}

static int cli_on_header(nghttp2_session *s, const nghttp2_frame *f, const uint8_t *name,
                         size_t nlen, const uint8_t *value, size_t vlen, uint8_t flags,
                         void *user) {
  (void)s;
  (void)flags;
  tf_h2_stream *st = h2_stream(user, f->hd.stream_id);
  if (st == NULL) return 0;
  char v[256];
  copy_text(v, sizeof v, (const char *)value, vlen);
  if (nlen == 7 && memcmp(name, ":status", 7) == 0) st->status = atoi(v);
  else if (nlen == 14 && memcmp(name, "content-length", 14) == 0) st->has_clen = 1;
  else if (nlen == 12 && memcmp(name, "content-type", 12) == 0)
    copy_text(st->ctype, sizeof st->ctype, v, strlen(v));
  else if (nlen == 11 && memcmp(name, "grpc-status", 11) == 0) {
    st->grpc_status = atoi(v);
    st->grpc_in_trailers = f->headers.cat == NGHTTP2_HCAT_HEADERS;
  } else if (nlen == 12 && memcmp(name, "grpc-message", 12) == 0)
    copy_text(st->grpc_message, sizeof st->grpc_message, v, strlen(v));
  return 0;
}

static int cli_on_data(nghttp2_session *s, uint8_t flags, int32_t id, const uint8_t *data,
                       size_t len, void *user) {
  (void)s;
  (void)flags;
  tf_h2_stream *st = h2_stream(user, id);
  if (st == NULL) return 0;
  st->data_len += len;
  size_t keep = sizeof st->body - st->body_len < len ? sizeof st->body - st->body_len : len;
  memcpy(st->body + st->body_len, data, keep);
  st->body_len += keep;
  return 0;
}

static int cli_on_close(nghttp2_session *s, int32_t id, uint32_t err, void *user) {
  (void)s;
  tf_h2_stream *st = h2_stream(user, id);
  if (st) {
    st->closed = 1;
    st->error_code = err;
  }
  return 0;
}

static int cli_on_frame(nghttp2_session *s, const nghttp2_frame *f, void *user) {
  (void)s;
  tf_client *c = user;
  if (f->hd.type == NGHTTP2_GOAWAY) {
    c->goaway_received = 1;
    if (c->n_goaways < 4) c->goaway_last[c->n_goaways] = f->goaway.last_stream_id;
    c->n_goaways++;
  }
  if (f->hd.type == NGHTTP2_DATA) {
    tf_h2_stream *st = h2_stream(c, f->hd.stream_id);
    if (st) {
      st->data_frames++;
      if (f->hd.flags & NGHTTP2_FLAG_END_STREAM) st->data_end_stream = 1;
    }
  }
  if (f->hd.type == NGHTTP2_RST_STREAM) {
    tf_h2_stream *st = h2_stream(c, f->hd.stream_id);
    if (st) st->rst_received = 1;
  }
  return 0;
}

static ssize_t cli_read_body(nghttp2_session *s, int32_t id, uint8_t *buf, size_t length,
                             uint32_t *flags, nghttp2_data_source *src, void *user) {
  (void)s;
  (void)id;
  (void)user;
  tf_h2_stream *st = src->ptr;
  size_t n = st->req_len - st->req_off;
  if (n > length) n = length;
  if (n) memcpy(buf, st->req + st->req_off, n);
  st->req_off += n;
  if (st->req_off == st->req_len) {
    if (st->keep_open) return n ? (ssize_t)n : NGHTTP2_ERR_DEFERRED;
    *flags |= NGHTTP2_DATA_FLAG_EOF;
  }
  return (ssize_t)n;
}

void tf_h2_start(tf_client *c) {
  nghttp2_session_callbacks *cb;
  assert_int_equal(nghttp2_session_callbacks_new(&cb), 0);
  nghttp2_session_callbacks_set_on_header_callback(cb, cli_on_header);
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, cli_on_data);
  nghttp2_session_callbacks_set_on_stream_close_callback(cb, cli_on_close);
  nghttp2_session_callbacks_set_on_frame_recv_callback(cb, cli_on_frame);
  assert_int_equal(nghttp2_session_client_new(&c->h2, cb, c), 0);
  nghttp2_session_callbacks_del(cb);
  assert_int_equal(nghttp2_submit_settings(c->h2, NGHTTP2_FLAG_NONE, NULL, 0), 0);
}

tf_h2_stream *tf_h2_request(tf_client *c, const nghttp2_nv *nv, size_t n, const void *body,
                            size_t len, int keep_open) {
  assert_true(c->n_streams < TF_MAX_STREAMS);
  tf_h2_stream *st = &c->streams[c->n_streams++];
  memset(st, 0, sizeof *st);
  st->grpc_status = -1;
  st->req = body;
  st->req_len = len;
  st->keep_open = keep_open;
  nghttp2_data_provider prd = {.source.ptr = st, .read_callback = cli_read_body};
  int32_t id = nghttp2_submit_request(c->h2, NULL, nv, n, body || keep_open ? &prd : NULL, st);
  assert_true(id > 0);
  st->id = id;
  return st;
}

void tf_h2_forget(tf_client *c) {
  for (int i = 0; i < c->n_streams; i++) assert_true(c->streams[i].closed);
  c->n_streams = 0;
  c->w->n_recs = 0;
  c->w->events_len = 0;
  c->w->events[0] = '\0';
}

void tf_h2_flush(tf_client *c) {
  if (c->fd < 0 || c->write_failed) return;
  for (;;) {
    const uint8_t *data;
    ssize_t n = nghttp2_session_mem_send(c->h2, &data);
    assert_true(n >= 0);
    if (n == 0) break;
    tf_write(c, data, (size_t)n); /* queued: never runs the loop */
  }
}

size_t tf_h2_take(tf_client *c, uint8_t *out, size_t cap) {
  size_t got = 0;
  for (;;) {
    const uint8_t *data;
    ssize_t n = nghttp2_session_mem_send(c->h2, &data);
    assert_true(n >= 0);
    if (n == 0) break;
    assert_true(got + (size_t)n <= cap);
    memcpy(out + got, data, (size_t)n);
    got += (size_t)n;
  }
  return got;
}

static int h2_closed(tf_world *w, void *arg) {
  (void)w;
  return ((tf_h2_stream *)arg)->closed;
}
void tf_h2_wait_closed(tf_client *c, tf_h2_stream *st) { tf_run_until(c->w, h2_closed, st); }
