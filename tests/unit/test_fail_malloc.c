/* Out of memory, everywhere: a scripted request is run again and again, the k-th allocation
 * of the server failing on run k — through the allocator hooks the server is given
 * (isv_options_set_mem) — until a run sees no allocation fail. Every run must end cleanly —
 * the call that failed returns ISV_ENOMEM, or the client gets an answer (the right one, or an
 * error), or the connection is closed — never a crash, a hang, or a leak (LeakSanitizer checks
 * the whole binary in the sanitizer builds). Scripts: the in-process API, and HTTP/1.1 through
 * the transport on an adopted socketpair (a small JSON body, and one large enough to be
 * decoded and encoded on the worker pool).
 *
 * libc's malloc, calloc and realloc are also wrapped at link time (-Wl,--wrap) for the library
 * linked into this test: while a script runs, any call to them is an allocation that went
 * around the hooks, and fails the test. */
#include "cmocka_prelude.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "inferserve.h"
#include "server_fixture.h"

/* ---- the hooks: fail the k-th allocation once armed ---- */

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t n);

static atomic_long countdown; /* > 0: allocations left before the one that fails */
static atomic_int failed;     /* the armed failure happened */
static atomic_long hooked;    /* allocations through the hooks while armed */
static atomic_long bypassed;  /* libc allocations by the library while armed */
static atomic_int watching;

static int fail_now(void) {
  atomic_fetch_add(&hooked, 1);
  if (atomic_load(&countdown) <= 0) return 0;
  if (atomic_fetch_sub(&countdown, 1) != 1) return 0;
  atomic_store(&failed, 1);
  return 1;
}
static void *hook_malloc(size_t n, void *u) {
  (void)u;
  return fail_now() ? NULL : __real_malloc(n);
}
static void hook_free(void *p, void *u) {
  (void)u;
  free(p);
}
static void *hook_calloc(size_t n, size_t size, void *u) {
  (void)u;
  return fail_now() ? NULL : __real_calloc(n, size);
}
static void *hook_realloc(void *p, size_t n, void *u) {
  (void)u;
  return fail_now() ? NULL : __real_realloc(p, n);
}
static const isv_mem hooks = {sizeof hooks, NULL, hook_malloc, hook_free, hook_calloc,
                              hook_realloc};

static void bypass(void) {
  if (atomic_load(&watching)) atomic_fetch_add(&bypassed, 1);
}
void *__wrap_malloc(size_t n) {
  bypass();
  return __real_malloc(n);
}
void *__wrap_calloc(size_t n, size_t size) {
  bypass();
  return __real_calloc(n, size);
}
void *__wrap_realloc(void *p, size_t n) {
  bypass();
  return __real_realloc(p, n);
}

static void arm(long k) {
  atomic_store(&failed, 0);
  atomic_store(&hooked, 0);
  atomic_store(&bypassed, 0);
  atomic_store(&countdown, k);
  atomic_store(&watching, 1);
}
/* 1 when the armed failure happened. Every allocation of the run went through the hooks. */
static int disarm(void) {
  atomic_store(&watching, 0);
  atomic_store(&countdown, 0);
  assert_int_equal(atomic_load(&bypassed), 0);
  assert_true(atomic_load(&hooked) > 0);
  return atomic_load(&failed);
}

/* ---- the model: y = 2x (FP32, any length), inline or on the pool ---- */

static isv_server *new_server(uv_loop_t *loop) {
  isv_server *srv;
  isv_options *o;
  assert_int_equal(isv_options_new(&o), 0);
  isv_options_set_log(o, NULL, NULL); /* the failures' WARN lines: thousands of them */
  assert_int_equal(isv_options_set_mem(o, &hooks), 0);
  assert_int_equal(isv_server_new(loop, o, &srv), 0);
  isv_options_free(o);
  const char *names[] = {"inline", "pool"};
  for (int i = 0; i < 2; i++) {
    isv_model_config *c;
    assert_int_equal(isv_model_config_new(names[i], &c), 0);
    int64_t any[] = {-1};
    isv_model_config_add_input(c, "x", ISV_FP32, any, 1);
    isv_model_config_add_output(c, "y", ISV_FP32, any, 1);
    isv_model_config_set_exec_mode(c, i ? ISV_EXEC_POOL : ISV_EXEC_INLINE);
    isv_backend be = {.struct_size = sizeof be, .infer = sf_twice};
    assert_int_equal(isv_server_add_model(srv, c, "1", &be, NULL, NULL), 0);
    isv_model_config_free(c);
  }
  return srv;
}

static void on_closed(isv_server *s, void *data) {
  (void)s;
  *(int *)data = 1;
}

static void close_server(uv_loop_t *loop, isv_server *srv) {
  int closed = 0;
  assert_int_equal(isv_server_close(srv, on_closed, &closed), 0);
  uv_run(loop, UV_RUN_DEFAULT);
  assert_true(closed);
}

/* ---- script 1: in process ---- */

typedef struct answer {
  int calls, status;
  float y[4];
  size_t n;
} answer;

static void on_done(isv_request *r, int status, void *data) {
  answer *a = data;
  a->calls++;
  a->status = status;
  const isv_tensor *y = isv_request_output(r, "y");
  if (y && isv_tensor_element_count(y) <= 4) {
    a->n = isv_tensor_element_count(y);
    memcpy(a->y, isv_tensor_data(y), a->n * sizeof(float));
  }
  isv_request_free(r);
}

/* One run with the k-th allocation failing; 1 when one did. */
static int inprocess_run(long k, const char *model) {
  uv_loop_t loop;
  uv_loop_init(&loop);
  isv_server *srv = new_server(&loop);
  answer a = {0};
  int64_t n = 3;
  float x[] = {1, 2, 3};
  arm(k);
  isv_request *r = NULL;
  int rc = isv_request_new(srv, model, NULL, &r);
  if (rc == 0) rc = isv_request_set_id(r, "fail-malloc");
  if (rc == 0) rc = isv_request_add_input(r, "x", ISV_FP32, &n, 1, x, sizeof x, ISV_TRANSIENT);
  if (rc == 0) rc = isv_request_add_requested_output(r, "y", 0);
  if (rc == 0) rc = isv_server_infer(srv, r, on_done, &a);
  if (rc == 0) {
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_int_equal(a.calls, 1);
    if (a.status == 0) {
      assert_int_equal(a.n, 3);
      assert_true(a.y[0] == 2 && a.y[1] == 4 && a.y[2] == 6);
    } else {
      assert_int_equal(a.status, ISV_ENOMEM);
    }
  } else {
    assert_int_equal(rc, ISV_ENOMEM);
    isv_request_free(r);
  }
  int hit = disarm();
  close_server(&loop, srv);
  assert_int_equal(uv_loop_close(&loop), 0);
  return hit;
}

static void inprocess_survives_every_failed_allocation(void **state) {
  (void)state;
  const char *models[] = {"inline", "pool"};
  for (int m = 0; m < 2; m++) {
    long k = 1;
    while (inprocess_run(k, models[m])) k++;
    assert_true(k > 2); /* the script allocates (the request, its arena): the hooks saw it */
  }
}

/* ---- script 2: HTTP/1.1 on an adopted socketpair ---- */

static int adopted_closed;
static void on_stream_closed(uv_handle_t *h) {
  (void)h;
  adopted_closed = 1;
}

/* The client: reads what the server sends as it comes, and hangs up once the server has
 * (a server closing a connection waits for the client's end, as nginx's lingering close). */
typedef struct client {
  int fd; /* -1 once closed */
  char *buf;
  size_t len, cap;
  uint64_t started;
  int timed_out;
} client;

static void client_poll(uv_timer_t *t) {
  client *c = t->data;
  if (uv_hrtime() - c->started > 5000000000ull) c->timed_out = 1;
  while (c->fd >= 0) {
    ssize_t rd = read(c->fd, c->buf + c->len, c->cap - 1 - c->len);
    if (rd > 0) {
      c->len += (size_t)rd;
      continue;
    }
    if (rd < 0 && errno == EAGAIN) return;
    close(c->fd); /* end of stream, reset, or a full buffer */
    c->fd = -1;
  }
}

/* The request's bytes: a JSON body of n floats (1.0 each) for model. */
static char *http_request(const char *model, size_t n, size_t *len) {
  size_t cap = 256 + n * 4;
  char *body = __real_malloc(cap), *req = __real_malloc(cap + 256);
  size_t bl = (size_t)snprintf(body, cap, "{\"inputs\":[{\"name\":\"x\",\"datatype\":\"FP32\","
                                          "\"shape\":[%zu],\"data\":[", n);
  for (size_t i = 0; i < n; i++) bl += (size_t)snprintf(body + bl, cap - bl, i ? ",1" : "1");
  bl += (size_t)snprintf(body + bl, cap - bl, "]}]}");
  *len = (size_t)snprintf(req, cap + 256, "POST /v2/models/%s/infer HTTP/1.1\r\nHost: x\r\n"
                                          "Content-Type: application/json\r\nConnection: close\r\n"
                                          "Content-Length: %zu\r\n\r\n%s", model, bl, body);
  free(body);
  return req;
}

static int http_run(long k, const char *req, size_t len, size_t n) {
  uv_loop_t loop;
  uv_loop_init(&loop);
  isv_server *srv = new_server(&loop);
  int sv[2];
  assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  int big = 1 << 22;
  setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &big, sizeof big);
  uv_pipe_t *pipe = __real_calloc(1, sizeof *pipe);
  uv_pipe_init(&loop, pipe, 0);
  uv_pipe_open(pipe, sv[0]);
  size_t off = 0;
  while (off < len) { /* the whole request waits in the socket before the server reads */
    ssize_t w = write(sv[1], req + off, len - off);
    assert_true(w > 0);
    off += (size_t)w;
  }
  fcntl(sv[1], F_SETFL, fcntl(sv[1], F_GETFL) | O_NONBLOCK);
  client cl = {.fd = sv[1], .cap = n * 16 + 4096, .started = uv_hrtime()};
  cl.buf = __real_malloc(cl.cap);
  uv_timer_t timer;
  uv_timer_init(&loop, &timer);
  timer.data = &cl;
  uv_timer_start(&timer, client_poll, 1, 1);
  adopted_closed = 0;
  arm(k);
  int rc = isv_server_adopt(srv, (uv_stream_t *)pipe, on_stream_closed);
  assert_true(rc == 0 || rc == ISV_ENOMEM);
  while ((!adopted_closed || cl.fd >= 0) && !cl.timed_out) uv_run(&loop, UV_RUN_ONCE);
  int hit = disarm();
  assert_false(cl.timed_out); /* no hang: answered or closed within 5 s */
  cl.buf[cl.len] = '\0';
  if (cl.len) { /* an answer: the right one, or an error that says so */
    if (strncmp(cl.buf, "HTTP/1.1 200 ", 13) == 0) {
      assert_non_null(strstr(cl.buf, "\"data\":[2.0"));
    } else {
      assert_true(strncmp(cl.buf, "HTTP/1.1 500 ", 13) == 0 ||
                  strncmp(cl.buf, "HTTP/1.1 503 ", 13) == 0);
      assert_non_null(strstr(cl.buf, "\"error\""));
    }
  }
  free(cl.buf);
  uv_close((uv_handle_t *)&timer, NULL);
  close_server(&loop, srv);
  assert_int_equal(uv_loop_close(&loop), 0);
  free(pipe);
  return hit;
}

static void http_survives_every_failed_allocation(void **state) {
  (void)state;
  struct {
    const char *model;
    size_t n;
  } cases[] = {{"inline", 3}, {"pool", 3},
               {"inline", 50000}}; /* 100 KB of JSON in, 200 KB out: both on the pool */
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    size_t len;
    char *req = http_request(cases[c].model, cases[c].n, &len);
    long k = 1;
    while (http_run(k, req, len, cases[c].n)) k++;
    if (getenv("FAIL_MALLOC_VERBOSE")) fprintf(stderr, "%s n=%zu: %ld allocations\n",
                                                cases[c].model, cases[c].n, k - 1);
    assert_true(k > 10);
    free(req);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(inprocess_survives_every_failed_allocation),
      cmocka_unit_test(http_survives_every_failed_allocation),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
