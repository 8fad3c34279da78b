/* See conn_harness.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conn_harness.h"
#include "inferserve.h"
#include "server_internal.h"
#include "transport/memconn.h"

static uv_loop_t loop;
static isv_server *srv;

static int add_one(isv_request *r, void *u) {
  (void)u;
  const isv_tensor *x = isv_request_input(r, "INPUT0");
  size_t nd;
  const int64_t *shape = isv_tensor_shape(x, &nd);
  int32_t *y;
  int rc = isv_request_alloc_output(r, "OUTPUT0", ISV_INT32, shape, nd, (void **)&y);
  if (rc) return rc;
  const int32_t *in = isv_tensor_data(x);
  for (size_t i = 0; i < isv_tensor_element_count(x); i++) y[i] = (int32_t)((uint32_t)in[i] + 1u);
  return isv_request_complete(r, 0, NULL);
}

/* "e": the input handed back as the output by reference (isv_request_set_output), so the
 * encoders write memory the request body or message still owns. */
static int echo(isv_request *r, void *u) {
  (void)u;
  const isv_tensor *x = isv_request_input(r, "INPUT0");
  size_t nd;
  const int64_t *shape = isv_tensor_shape(x, &nd);
  int rc = isv_request_set_output(r, "OUTPUT0", ISV_INT32, shape, nd, isv_tensor_data(x),
                                  isv_tensor_byte_size(x), ISV_STATIC);
  if (rc) return rc;
  return isv_request_complete(r, 0, NULL);
}

/* "g": open I/O (grps's default model here): every input back, in the kind it came. */
static int echo_all(isv_request *r, void *u) {
  (void)u;
  for (size_t i = 0; i < isv_request_input_count(r); i++) {
    const isv_tensor *t = isv_request_input_at(r, i);
    size_t nd;
    const int64_t *shape = isv_tensor_shape(t, &nd);
    int rc = isv_request_set_output(r, isv_tensor_name(t), isv_tensor_datatype(t), shape, nd,
                                    isv_tensor_data(t), isv_tensor_byte_size(t), ISV_STATIC);
    if (rc) return rc;
  }
  const isv_param *kind = isv_request_param(r, "grps_data");
  if (kind && kind->type == ISV_PARAM_STRING) isv_request_set_response_param(r, "grps_data", kind);
  return isv_request_complete(r, 0, NULL);
}

/* POST /fuzz/custom[/...]: a custom route (isv_server_add_route) answering inline — whole
 * with ?whole, else streamed: the head, the body back, a last piece, the end. */
static int custom_route(isv_http_request *q, void *u) {
  (void)u;
  size_t n;
  void *body = isv_http_body(q, &n);
  if (strstr(isv_http_query(q), "whole"))
    return isv_http_respond(q, 200, "text/plain", body, n, ISV_TRANSIENT);
  int rc = isv_http_add_header(q, "X-Fuzz", "1");
  if (rc == 0) rc = isv_http_begin(q, 200, "text/event-stream");
  if (rc == 0) rc = isv_http_write(q, body, n, ISV_TRANSIENT);
  if (rc == 0) rc = isv_http_write(q, "data: [DONE]\n\n", 14, ISV_STATIC);
  return rc ? rc : isv_http_end(q);
}

/* "d": add_one, completed on a later loop turn (an idle handle), as an asynchronous backend. */
#define DEFERRED_MAX 64
static isv_request *deferred[DEFERRED_MAX];
static size_t n_deferred;
static uv_idle_t deferred_idle;

static void run_deferred(uv_idle_t *h) {
  isv_request *batch[DEFERRED_MAX];
  size_t n = n_deferred;
  memcpy(batch, deferred, n * sizeof *batch);
  n_deferred = 0;
  uv_idle_stop(h);
  for (size_t i = 0; i < n; i++) {
    int rc = add_one(batch[i], NULL);
    if (rc < 0) isv_request_complete(batch[i], rc, NULL);
  }
}

static int defer(isv_request *r, void *u) {
  (void)u;
  if (n_deferred == DEFERRED_MAX) return add_one(r, NULL);
  deferred[n_deferred++] = r;
  uv_idle_start(&deferred_idle, run_deferred);
  return 0;
}

/* "/fuzz/stream": a streamed answer, as Server-Sent Events are (isv__exchange_write, _end):
 * the head and a first piece now, then one piece per loop turn — some empty, each in two
 * parts — then the end. The body's length sets the number of pieces (0: ended at once, from
 * inside the handler). A client that goes away cancels it (on_cancel): one more piece goes
 * into the void, then the end. */
#define STREAMS_MAX 64
typedef struct fuzz_stream {
  isv__exchange *ex;
  int left;
  int cancelled;
} fuzz_stream;
static fuzz_stream *streams[STREAMS_MAX];
static size_t n_streams;
static uv_idle_t stream_idle;

static void stream_cancelled(isv__exchange *ex) { ((fuzz_stream *)ex->app)->cancelled = 1; }

static void stream_piece(fuzz_stream *s) {
  char *text = malloc(32);
  if (text == NULL) return;
  int k = snprintf(text, 32, "data: %d\n\n", s->left);
  uv_buf_t parts[2] = {uv_buf_init(text, (unsigned)k / 2),
                       uv_buf_init(text + k / 2, (unsigned)(k - k / 2))};
  isv__exchange_write(s->ex, parts, s->left % 3 == 1 ? 0 : 2, free, text);
}

static void stream_end(fuzz_stream *s) {
  isv__exchange_end(s->ex);
  free(s);
}

static void run_streams(uv_idle_t *h) {
  fuzz_stream *batch[STREAMS_MAX];
  size_t n = n_streams;
  memcpy(batch, streams, n * sizeof *batch);
  n_streams = 0;
  uv_idle_stop(h);
  for (size_t i = 0; i < n; i++) {
    fuzz_stream *s = batch[i];
    if (s->left-- > 0) stream_piece(s);
    if (s->left <= 0 || s->cancelled) {
      stream_end(s);
      continue;
    }
    streams[n_streams++] = s;
    uv_idle_start(h, run_streams);
  }
}

static void stream_route(isv__http_req *q) {
  isv__exchange *ex = q->ex;
  fuzz_stream *s = n_streams < STREAMS_MAX ? calloc(1, sizeof *s) : NULL;
  static const char first[] = "event: start\n\n";
  uv_buf_t part = uv_buf_init((char *)first, sizeof first - 1);
  isv__response r = {.status = 200, .content_type = "text/event-stream", .parts = &part,
                     .n_parts = 1, .more = s != NULL};
  isv__exchange_respond(ex, &r);
  if (s == NULL) return; /* answered whole */
  s->ex = ex;
  s->left = (int)(ex->body_len % 5);
  ex->on_cancel = stream_cancelled;
  ex->app = s;
  if (s->left == 0) {
    stream_end(s);
    return;
  }
  streams[n_streams++] = s;
  uv_idle_start(&stream_idle, run_streams);
}

static const isv__http_route stream_routes[] = {
    {ISV__ROUTE_GET | ISV__ROUTE_POST, "/fuzz/stream", stream_route, NULL},
    {0},
};
static const isv__frontend stream_frontend = {
    .name = "fuzz_stream", .path_prefix = "/fuzz", .routes = stream_routes};

static void add_model(const char *name, int (*infer)(isv_request *, void *), int labels) {
  isv_model_config *c;
  isv_model_config_new(name, &c);
  int64_t s[] = {4};
  isv_model_config_add_input(c, "INPUT0", ISV_INT32, s, 1);
  isv_model_config_add_output(c, "OUTPUT0", ISV_INT32, s, 1);
  isv_model_config_set_max_batch(c, 2);
  if (labels) {
    const char *l[] = {"a", "b"};
    isv_model_config_set_labels(c, l, 2);
  }
  if (strcmp(name, "q") == 0) { /* Triton's priorities: a level full at 1, one that delays */
    isv_queue_policy p = {.struct_size = sizeof p, .default_timeout_us = 500,
                          .allow_timeout_override = 1, .max_queue_size = 1};
    isv_model_config_set_priority_levels(c, 3, 2);
    isv_model_config_set_queue_policy(c, 1, &p);
    p.timeout_action = ISV_TIMEOUT_DELAY;
    isv_model_config_set_queue_policy(c, 2, &p);
  }
  if (strcmp(name, "m") == 0) /* the response cache: clients' tensors hashed, answers copied */
    isv_model_config_set_response_cache(c, 1);
  if (infer == defer) /* it completes on a later turn: an asynchronous backend, declared so (an
                        * inline one must complete before it returns, or it is failed and freed) */
    isv_model_config_set_exec_mode(c, ISV_EXEC_ASYNC);
  isv_backend be = {.struct_size = sizeof be, .infer = infer};
  isv_server_add_model(srv, c, "1", &be, NULL, NULL);
  isv_model_config_free(c);
}

/* The access log is on, so that every answer's path through it is fuzzed too: its strings
 * must be readable and its status one the library answers with. */
static void check_access(void *user, const isv_access_entry *e) {
  (void)user;
  if (strlen(e->protocol) + strlen(e->method) + strlen(e->path) > (size_t)1 << 20) abort();
  if (strcmp(e->protocol, "grpc") == 0 ? e->status < 0 || e->status > 16
                                        : e->status < 100 || e->status > 599)
    abort();
}

static void init(void) {
  uv_loop_init(&loop);
  uv_idle_init(&loop, &deferred_idle);
  uv_idle_init(&loop, &stream_idle);
  isv_options *o;
  isv_options_new(&o);
  isv_options_set_max_body_bytes(o, 1 << 16);
  isv_options_set_max_header_bytes(o, 4096);
  isv_options_set_access_log(o, check_access, NULL);
  isv_options_set_response_cache_bytes(o, 1 << 14); /* small: evictions happen too */
  isv_server_new(&loop, o, &srv);
  isv_options_free(o);
  add_model("m", add_one, 1);
  add_model("e", echo, 0);
  add_model("d", defer, 0);
  add_model("q", defer, 0); /* "d" with priority levels and queue policies */
  isv_model_config *g;
  isv_model_config_new("g", &g);
  isv_model_config_set_open_io(g, 1);
  isv_model_config_set_response_cache(g, 1); /* any inputs, any datatype, as keys */
  isv_backend gb = {.struct_size = sizeof gb, .infer = echo_all};
  if (isv_server_add_model(srv, g, "1.0.0", &gb, NULL, NULL) != 0) abort();
  isv_model_config_free(g);
  isv_server_set_default_model(srv, "g");
  isv_route cr = {.struct_size = sizeof cr, .method = "POST", .path = "/fuzz/custom",
                  .handler = custom_route};
  if (isv_server_add_route(srv, &cr) != 0) abort();
  if (isv__server_add_frontend(srv, &stream_frontend) != 0) abort();
}

static const uint8_t *find_sep(const uint8_t *p, const uint8_t *end) {
  for (; end - p >= ISV_FUZZ_SEP_LEN; p++)
    if (memcmp(p, ISV_FUZZ_SEP, ISV_FUZZ_SEP_LEN) == 0) return p;
  return NULL;
}

/* The connection's clock (ms): it moves only when the harness moves it — once the client
 * half-closed and all is quiet, to the connection's next deadline. */
static uint64_t clock_ms = 1000;

int isv_fuzz_turn(isv__memconn *m) {
  uv_run(&loop, UV_RUN_NOWAIT);
  return isv__memconn_settle(m) || n_deferred || n_streams;
}

/* Run the loop once, take what the server wrote, complete its writes. Whether anything
 * happened (or may still: a deferred completion, a stream's next piece). */
static int step(isv__memconn *m) {
  int busy = isv_fuzz_turn(m);
  if (isv__memconn_pending(m)) {
    isv__memconn_take(m, NULL, (size_t)-1);
    busy = 1;
  }
  return isv__memconn_settle(m) || busy;
}

isv__memconn *isv_fuzz_connect(void) {
  static int ready;
  if (!ready) {
    init();
    ready = 1;
  }
  isv__memconn *m = isv__memconn_new(isv__server_transport(srv), &clock_ms);
  if (m == NULL) abort();
  m->sndbuf = (size_t)1 << 20;
  return m;
}

void isv_fuzz_wait(isv__memconn *m, uint64_t ms) {
  uint64_t until = clock_ms + ms;
  for (int spins = 0; !m->c.closing; spins++) {
    if (spins == 10000) abort(); /* something due that never stops being due */
    uint64_t at = isv__memconn_next(m);
    if (at == 0 || at > until) break;
    if (at > clock_ms) clock_ms = at;
    isv__memconn_fire(m);
  }
  clock_ms = until;
}

void isv_fuzz_hang_up(isv__memconn *m) {
  if (!m->c.closing) isv__memconn_eof(m);
  for (int spins = 0, quiet = 0; !m->c.closing; spins++) {
    if (spins == 100000) abort(); /* a connection the server never closes is a hang */
    quiet = step(m) ? 0 : quiet + 1;
    if (quiet < 4) continue;
    uint64_t at = isv__memconn_next(m); /* quiet: its deadlines come (idle, linger, ...) */
    if (at == 0) abort(); /* nothing left that would ever close it */
    if (at > clock_ms) clock_ms = at;
    isv__memconn_fire(m);
  }
  for (int i = 0; i < 4; i++) step(m); /* what the close lets go of */
  isv__memconn_free(m);
}

void isv_fuzz_serve(const char *prefix, size_t prefix_len, const uint8_t *data, size_t size) {
  isv__memconn *m = isv_fuzz_connect();
  if (prefix_len && isv__memconn_feed(m, prefix, prefix_len) != prefix_len) abort();
  const uint8_t *seg = data, *end = data + size;
  while (!m->c.closing) {
    const uint8_t *sep = find_sep(seg, end);
    const uint8_t *seg_end = sep ? sep : end;
    /* the segment, as the engine reads it (it stops while a request is answered: the rest
     * waits, pipelined), and until the server is quiet: what it owes for it is written */
    int quiet = 0;
    for (int spins = 0; quiet < 4 && !m->c.closing; spins++) {
      if (spins == 100000) abort(); /* a server that never goes quiet is a hang */
      size_t fed = seg < seg_end ? isv__memconn_feed(m, seg, (size_t)(seg_end - seg)) : 0;
      seg += fed;
      quiet = step(m) || fed ? 0 : quiet + 1;
    }
    /* quiet with bytes the engine will not read (it stopped for good): the client stops */
    if (sep == NULL || m->c.closing || seg < seg_end) break;
    seg = sep + ISV_FUZZ_SEP_LEN;
  }
  isv_fuzz_hang_up(m);
}
