/* A warm server's small requests call its allocator not once (issue 28: "the steady state of a
 * keep-alive connection does no malloc/free for a small request"): the server's own small
 * blocks come back through its recycler (codec/recycler.h). In process (an inline model, the
 * host on the loop thread) and HTTP/1.1 keep-alive through the transport on an adopted
 * socketpair: once warm, 200 more requests and not one call. With the recycler off
 * (isv_options_set_small_block_cache_bytes 0), every HTTP request calls it (its body, the
 * transport's blocks), an in-process one still not (the core keeps a request's struct and its
 * arena's chunk for the next). */
#include "cmocka_prelude.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/core.h" /* ISV__QUARANTINE */
#include "counting_mem.h"
#include "inferserve.h"
#include "server_fixture.h"

static counting_mem counted; /* the server's allocator: its malloc, calloc, realloc and free */

/* A world (server_fixture.h) whose server allocates through `counted`'s allocator, with the
 * recycler on or off, serving "twice". */
static sf_world *world_new(int recycle) {
  isv_options *o;
  assert_int_equal(isv_options_new(&o), 0);
  isv_mem counting = counting_mem_init(&counted);
  assert_int_equal(isv_options_set_mem(o, &counting), 0);
  if (!recycle) assert_int_equal(isv_options_set_small_block_cache_bytes(o, 0), 0);
  sf_world *w = sf_world_new(o);
  isv_options_free(o);
  isv_model_config *c;
  assert_int_equal(isv_model_config_new("twice", &c), 0);
  int64_t any[] = {-1};
  isv_model_config_add_input(c, "x", ISV_FP32, any, 1);
  isv_model_config_add_output(c, "y", ISV_FP32, any, 1);
  isv_backend be = {.struct_size = sizeof be, .infer = sf_twice};
  assert_int_equal(isv_server_add_model(w->srv, c, "1", &be, NULL, NULL), 0);
  isv_model_config_free(c);
  return w;
}

/* Warm: past the quarantine's length (core/request.c), from where a freed request's struct is
 * the next one's. */
#define WARM (ISV__QUARANTINE + 50)

/* ---- in process ---- */

static void on_done(isv_request *r, int status, void *data) {
  assert_int_equal(status, 0);
  const isv_tensor *y = isv_request_output(r, "y");
  assert_non_null(y);
  assert_true(((const float *)isv_tensor_data(y))[2] == 6);
  ++*(int *)data;
  isv_request_free(r);
}

/* Allocator calls made by `count` requests after `warm` others. */
static long inprocess_calls(int recycle, int warm, int count) {
  sf_world *w = world_new(recycle);
  long before = 0;
  int done = 0;
  for (int i = 0; i < warm + count; i++) {
    if (i == warm) before = counting_mem_calls(&counted);
    int64_t n = 3;
    float x[] = {1, 2, 3};
    isv_request *r;
    assert_int_equal(isv_request_new(w->srv, "twice", NULL, &r), 0);
    assert_int_equal(isv_request_add_input(r, "x", ISV_FP32, &n, 1, x, sizeof x, ISV_TRANSIENT), 0);
    assert_int_equal(isv_server_infer(w->srv, r, on_done, &done), 0);
    uv_run(&w->loop, UV_RUN_NOWAIT);
  }
  uv_run(&w->loop, UV_RUN_DEFAULT);
  long made = counting_mem_calls(&counted) - before;
  assert_int_equal(done, warm + count);
  sf_teardown((void **)&w);
  return made;
}

static void inprocess_warm_requests_allocate_nothing(void **state) {
  (void)state;
  assert_int_equal(inprocess_calls(1, WARM, 200), 0);
  /* nor without the recycler: the struct is the quarantine's spare, the arena's chunk the
   * core's (core.h's q_spare, arena_spare) — without that spare, two calls a request */
  assert_int_equal(inprocess_calls(0, WARM, 200), 0);
}

/* ---- HTTP/1.1 keep-alive on an adopted socketpair ---- */

static void on_pipe_closed(uv_handle_t *h) { free(h); }

/* One request written, the loop run until its whole answer is read back; the answer checked. */
static void round_trip(uv_loop_t *loop, int fd, const char *req, size_t len) {
  assert_int_equal(write(fd, req, len), (ssize_t)len);
  char buf[4096];
  size_t got = 0;
  uint64_t start = uv_hrtime();
  for (;;) {
    uv_run(loop, UV_RUN_NOWAIT);
    ssize_t rd = read(fd, buf + got, sizeof buf - 1 - got);
    if (rd > 0) got += (size_t)rd;
    else assert_true(rd < 0 && errno == EAGAIN);
    buf[got] = '\0';
    const char *end = strstr(buf, "\r\n\r\n");
    const char *cl = strstr(buf, "Content-Length: ");
    if (end && cl && got >= (size_t)(end + 4 - buf) + strtoul(cl + 16, NULL, 10)) break;
    assert_true(uv_hrtime() - start < 5000000000ull); /* no hang */
  }
  assert_int_equal(strncmp(buf, "HTTP/1.1 200 ", 13), 0);
  assert_non_null(strstr(buf, "\"data\":[2.0,4.0,6.0]"));
}

static long http_calls(int recycle, int warm, int count) {
  sf_world *w = world_new(recycle);
  int sv[2];
  assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  fcntl(sv[1], F_SETFL, fcntl(sv[1], F_GETFL) | O_NONBLOCK);
  uv_pipe_t *pipe = calloc(1, sizeof *pipe);
  uv_pipe_init(&w->loop, pipe, 0);
  uv_pipe_open(pipe, sv[0]);
  assert_int_equal(isv_server_adopt(w->srv, (uv_stream_t *)pipe, on_pipe_closed), 0);
  static const char body[] = "{\"inputs\":[{\"name\":\"x\",\"datatype\":\"FP32\",\"shape\":[3],"
                             "\"data\":[1,2,3]}]}";
  char req[512];
  int len = snprintf(req, sizeof req, "POST /v2/models/twice/infer HTTP/1.1\r\nHost: x\r\n"
                                      "Content-Type: application/json\r\nContent-Length: %zu\r\n"
                                      "\r\n%s", sizeof body - 1, body);
  long before = 0;
  for (int i = 0; i < warm + count; i++) {
    if (i == warm) before = counting_mem_calls(&counted);
    round_trip(&w->loop, sv[1], req, (size_t)len);
  }
  long made = counting_mem_calls(&counted) - before;
  close(sv[1]);
  sf_teardown((void **)&w);
  return made;
}

static void http_warm_keepalive_requests_allocate_nothing(void **state) {
  (void)state;
  assert_int_equal(http_calls(1, WARM, 200), 0);
  assert_true(http_calls(0, WARM, 200) >= 200);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(inprocess_warm_requests_allocate_nothing),
      cmocka_unit_test(http_warm_keepalive_requests_allocate_nothing),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
