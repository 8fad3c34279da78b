/* embed-example: an existing libuv program — a periodic timer and a TCP echo service — that
 * adds model serving with libinferserve on its OWN loop. The lines marked "+inference" are all
 * that embedding takes; everything else is the host program as it was.
 *
 *   embed-example [--echo-port N] [--http-port N]      (defaults 7000 and 8080, on 127.0.0.1)
 *
 *   curl -s localhost:8080/v2/models/doubler/infer \
 *     -d '{"inputs":[{"name":"INPUT0","shape":[3],"datatype":"FP32","data":[1,2,3]}]}'
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <inferserve.h> /* +inference */
#include <uv.h>

static uv_loop_t loop;
static uv_timer_t tick;
static uv_tcp_t echo_server;
static uv_signal_t sig_int, sig_term;
static isv_server *inference; /* +inference */

/* ---- the host's own work: a timer and an echo service ---------------------------------- */

typedef struct client {
  uv_tcp_t tcp;
  struct client *prev, *next;
} client;
static client clients = {.prev = &clients, .next = &clients}; /* open connections */

typedef struct {
  uv_write_t req;
  char *base;
} echo_write;

static void on_tick(uv_timer_t *t) {
  (void)t;
  fprintf(stderr, "embed-example: tick\n");
}

static void on_client_closed(uv_handle_t *h) {
  client *c = (client *)h;
  c->prev->next = c->next;
  c->next->prev = c->prev;
  free(c);
}

static void on_alloc(uv_handle_t *h, size_t size, uv_buf_t *buf) {
  (void)h;
  buf->base = malloc(size);
  buf->len = buf->base ? size : 0;
}

static void on_written(uv_write_t *req, int status) {
  (void)status;
  echo_write *w = (echo_write *)req;
  free(w->base);
  free(w);
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf) {
  echo_write *w;
  if (nread > 0 && (w = malloc(sizeof *w)) != NULL) {
    w->base = buf->base; /* send the bytes straight back */
    uv_buf_t out = uv_buf_init(buf->base, (unsigned)nread);
    if (uv_write(&w->req, s, &out, 1, on_written) == 0)
      return;
    free(w);
  }
  free(buf->base);
  if (nread < 0 && !uv_is_closing((uv_handle_t *)s))
    uv_close((uv_handle_t *)s, on_client_closed);
}

static void on_connection(uv_stream_t *server, int status) {
  client *c = malloc(sizeof *c);
  if (status < 0 || c == NULL) {
    free(c);
    return;
  }
  uv_tcp_init(&loop, &c->tcp);
  c->next = clients.next;
  c->prev = &clients;
  clients.next->prev = c;
  clients.next = c;
  if (uv_accept(server, (uv_stream_t *)&c->tcp) == 0)
    uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read);
  else
    uv_close((uv_handle_t *)&c->tcp, on_client_closed);
}

/* ---- +inference: one model, OUTPUT0 = 2 * INPUT0 (FP32, any shape) ---------------------- */

static int doubler(isv_request *req, void *user) {
  (void)user;
  const isv_tensor *x = isv_request_input(req, "INPUT0");
  if (x == NULL || isv_tensor_datatype(x) != ISV_FP32)
    return isv_request_complete(req, ISV_EBADREQ, "INPUT0 must be an FP32 tensor");
  size_t ndim, n = isv_tensor_element_count(x);
  const int64_t *shape = isv_tensor_shape(x, &ndim);
  void *y;
  int rc = isv_request_alloc_output(req, "OUTPUT0", ISV_FP32, shape, ndim, &y);
  if (rc < 0)
    return rc; /* failing without completing completes the request with rc */
  const char *in = isv_tensor_data(x);
  for (size_t i = 0; i < n; i++) {
    float v; /* memcpy: no alignment assumed */
    memcpy(&v, in + i * sizeof v, sizeof v);
    v *= 2.0f;
    memcpy((char *)y + i * sizeof v, &v, sizeof v);
  }
  return isv_request_complete(req, 0, NULL);
}

static int start_inference(int port) {
  int rc = isv_server_new(&loop, NULL, &inference);
  if (rc < 0)
    return rc;
  isv_model_config *c;
  if ((rc = isv_model_config_new("doubler", &c)) != 0)
    return rc;
  /* any rank, any sizes: the output takes the input's shape */
  isv_model_config_add_input(c, "INPUT0", ISV_FP32, NULL, ISV_ANY_RANK);
  isv_model_config_add_output(c, "OUTPUT0", ISV_FP32, NULL, ISV_ANY_RANK);
  isv_backend be = {.struct_size = sizeof be, .infer = doubler};
  rc = isv_server_add_model(inference, c, "1", &be, NULL, NULL);
  isv_model_config_free(c);
  if (rc == 0)
    rc = isv_server_listen(inference, "127.0.0.1", port);
  return rc;
}

/* ---- shutdown ------------------------------------------------------------------------------ */

static void on_inference_closed(isv_server *srv, void *data) { /* +inference */
  (void)srv;
  (void)data;
  fprintf(stderr, "embed-example: inference server closed\n");
}

static void on_signal(uv_signal_t *h, int signum) {
  (void)h;
  fprintf(stderr, "embed-example: signal %d, shutting down\n", signum);
  uv_close((uv_handle_t *)&tick, NULL);
  uv_close((uv_handle_t *)&echo_server, NULL);
  for (client *c = clients.next; c != &clients; c = c->next)
    if (!uv_is_closing((uv_handle_t *)&c->tcp))
      uv_close((uv_handle_t *)&c->tcp, on_client_closed);
  uv_close((uv_handle_t *)&sig_int, NULL);
  uv_close((uv_handle_t *)&sig_term, NULL);
  isv_server_close(inference, on_inference_closed, NULL); /* +inference: drains, then frees */
}

/* ---- main ---------------------------------------------------------------------------------- */

static int parse_port(const char *s) {
  char *end;
  long v = strtol(s, &end, 10);
  return (*s == '\0' || *end != '\0' || v < 0 || v > 65535) ? -1 : (int)v;
}

int main(int argc, char **argv) {
  int echo_port = 7000, http_port = 8080;
  for (int i = 1; i < argc; i++) {
    int *dst = strcmp(argv[i], "--echo-port") == 0   ? &echo_port
               : strcmp(argv[i], "--http-port") == 0 ? &http_port
                                                     : NULL;
    if (dst == NULL || i + 1 >= argc || (*dst = parse_port(argv[++i])) < 0) {
      fprintf(stderr, "usage: embed-example [--echo-port N] [--http-port N]\n");
      return 2;
    }
  }
  signal(SIGPIPE, SIG_IGN); /* a client hanging up mid-write must not kill the process */
  uv_loop_init(&loop);

  uv_timer_init(&loop, &tick);
  uv_timer_start(&tick, on_tick, 10000, 10000);

  struct sockaddr_in addr;
  uv_ip4_addr("127.0.0.1", echo_port, &addr);
  uv_tcp_init(&loop, &echo_server);
  int rc = uv_tcp_bind(&echo_server, (const struct sockaddr *)&addr, 0);
  if (rc == 0)
    rc = uv_listen((uv_stream_t *)&echo_server, 128, on_connection);
  if (rc < 0) {
    fprintf(stderr, "embed-example: echo port %d: %s\n", echo_port, uv_strerror(rc));
    return 1;
  }
  int namelen = sizeof addr;
  uv_tcp_getsockname(&echo_server, (struct sockaddr *)&addr, &namelen);

  if ((rc = start_inference(http_port)) < 0) { /* +inference */
    fprintf(stderr, "embed-example: inference: %s (%s)\n", isv_strerror(rc),
            inference ? isv_server_last_error(inference) : "");
    return 1;
  }

  uv_signal_init(&loop, &sig_int);
  uv_signal_init(&loop, &sig_term);
  uv_signal_start(&sig_int, on_signal, SIGINT);
  uv_signal_start(&sig_term, on_signal, SIGTERM);

  printf("embed-example echo on %d, inference on %d\n", ntohs(addr.sin_port),
         isv_server_bound_port(inference, 0)); /* +inference */
  fflush(stdout);

  uv_run(&loop, UV_RUN_DEFAULT);
  return uv_loop_close(&loop) == 0 ? 0 : 1;
}
