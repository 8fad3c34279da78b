/* See conn_harness.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "conn_harness.h"
#include "inferserve.h"

static uv_loop_t loop;
static isv_server *srv;

static int add_one(isv_request *r, void *u) {
  (void)u;
  const isv_tensor *x = isv_request_input(r, "INPUT0");
  size_t nd;
  const int64_t *shape = isv_tensor_shape(x, &nd);
  int32_t *y;
  int rc = isv_request_output(r, "OUTPUT0", ISV_INT32, shape, nd, (void **)&y);
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

static void init(void) {
  uv_loop_init(&loop);
  isv_options *o = isv_options_new();
  isv_options_set_max_body_bytes(o, 1 << 16);
  isv_options_set_max_header_bytes(o, 4096);
  isv_server_new(&loop, o, &srv);
  isv_options_free(o);
  isv_model_config *c = isv_model_config_new("m");
  int64_t s[] = {4};
  isv_model_config_add_input(c, "INPUT0", ISV_INT32, s, 1);
  isv_model_config_add_output(c, "OUTPUT0", ISV_INT32, s, 1);
  isv_model_config_set_max_batch(c, 2);
  const char *labels[] = {"a", "b"};
  isv_model_config_set_labels(c, labels, 2);
  isv_backend be = {sizeof be, add_one, NULL};
  isv_server_add_model(srv, c, "1", &be, NULL, NULL);
  isv_model_config_free(c);
  c = isv_model_config_new("e");
  isv_model_config_add_input(c, "INPUT0", ISV_INT32, s, 1);
  isv_model_config_add_output(c, "OUTPUT0", ISV_INT32, s, 1);
  isv_model_config_set_max_batch(c, 2);
  isv_backend eb = {sizeof eb, echo, NULL};
  isv_server_add_model(srv, c, "1", &eb, NULL, NULL);
  isv_model_config_free(c);
}

void isv_fuzz_serve(const char *prefix, size_t prefix_len, const uint8_t *data, size_t size) {
  static int ready;
  if (!ready) {
    init();
    ready = 1;
  }
  if (size > 60000) return; /* stays under the socket buffer: the write never blocks */
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) return;
  uv_pipe_t *p = malloc(sizeof *p);
  uv_pipe_init(&loop, p, 0);
  uv_pipe_open(p, sv[0]);
  if (prefix_len && write(sv[1], prefix, prefix_len) != (ssize_t)prefix_len) abort();
  if (size && write(sv[1], data, size) != (ssize_t)size) abort();
  shutdown(sv[1], SHUT_WR);
  fcntl(sv[1], F_SETFL, O_NONBLOCK);
  if (isv_server_adopt(srv, (uv_stream_t *)p) != 0) abort();
  char buf[65536];
  for (int spins = 0; spins < 100000; spins++) {
    uv_run(&loop, UV_RUN_NOWAIT);
    ssize_t n = read(sv[1], buf, sizeof buf);
    if (n == 0) break; /* the server closed the connection */
    if (n < 0 && errno != EAGAIN) break;
    if (spins == 99999) abort(); /* a connection the server never closes is a hang */
  }
  close(sv[1]);
  for (int i = 0; i < 4; i++) uv_run(&loop, UV_RUN_NOWAIT); /* let the close callbacks run */
}
