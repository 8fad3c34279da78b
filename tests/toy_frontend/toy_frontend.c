/* A second protocol front end that exists only in the tests ("echo/v1"): one HTTP route and
 * two gRPC methods, added to a server with isv__server_add_frontend — no line of the router,
 * the server or the transport knows it. docs/ARCHITECTURE.md walks through this file.
 *
 *   POST /echo/v1/{*what}   -> 200 {"echo": "<body>", "what": "<rest of the path>"}
 *   GET  /echo/v1/models/{model}/ready -> the core's readiness of that model (its one rule)
 *   /echo.v1.Echo/Say       unary, answered here: "you said: <message>"
 *   /echo.v1.Echo/Double    unary inference: the message is a little-endian INT32 for model
 *                           "doubler"; the answer is its OUTPUT0, 4 bytes
 * Errors of /echo/v1 paths have this front end's own shape: {"echo_error": {"code", "why"}}.
 *
 * toy-frontend-server [--listen HOST:PORT] [--max-body-bytes N] prints "listening on HOST:PORT"
 * and serves until SIGINT/SIGTERM. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/resolve.h"
#include "codec/json_writer.h"
#include "protocol/http_reply.h"
#include "server_internal.h"
#include "core/queries.h"

/* ---- HTTP -------------------------------------------------------------------------------- */

static void echo_error(isv__exchange *ex, int status, const char *msg, const isv__header *extra,
                       size_t n_extra) {
  isv__buf b;
  isv__buf_init(&b, ex->mem);
  isv__buf_puts(&b, "{\"echo_error\":{\"code\":");
  isv__json_write_i64(&b, status);
  isv__buf_puts(&b, ",\"why\":");
  isv__json_write_bytes_element(&b, msg, strlen(msg));
  isv__buf_puts(&b, "}}");
  size_t len;
  char *body = isv__buf_release(&b, &len);
  uv_buf_t part = uv_buf_init(body, (unsigned)len);
  isv__response r = {.status = status, .content_type = "application/json", .headers = extra,
                     .n_headers = n_extra, .parts = &part, .n_parts = 1, .release = isv__free,
                     .release_ctx = body};
  isv__exchange_respond(ex, &r);
}

static void echo(isv__http_req *q) {
  size_t n;
  const char *what = isv__http_capture(q, "what", &n);
  isv__buf b;
  isv__buf_init(&b, q->ex->mem);
  isv__buf_puts(&b, "{\"echo\":");
  isv__json_write_bytes_element(&b, q->ex->body ? q->ex->body : "", q->ex->body_len);
  isv__buf_puts(&b, ",\"what\":");
  isv__json_write_bytes_element(&b, what, n);
  isv__buf_putc(&b, '}');
  isv__reply_json(q->ex, 200, &b);
}

static void ready(isv__http_req *q) {
  isv__model_spec spec = {0};
  spec.name = isv__http_capture(q, "model", &spec.name_len);
  isv_model *m;
  isv__why why = isv__core_resolve(q->core, &spec, &m);
  if (why != ISV__FOUND) { /* V2's words (core/resolve.h), in the toy's own error shape */
    char msg[512];
    echo_error(q->ex, isv_err_http_status(isv__why_say(why, ISV__WORDS_KSERVE, &spec, msg,
                                                       sizeof msg)), msg, NULL, 0);
    return;
  }
  isv__buf b;
  isv__buf_init(&b, q->ex->mem);
  isv__buf_puts(&b, isv__core_model_ready(q->core, m) ? "{\"ready\":true}" : "{\"ready\":false}");
  isv__reply_json(q->ex, 200, &b);
}

static const isv__http_route routes[] = {
    {ISV__ROUTE_GET, "/echo/v1/models/{model}/ready", ready, NULL},
    {ISV__ROUTE_POST, "/echo/v1/{*what}", echo, NULL},
    {0},
};

/* ---- gRPC -------------------------------------------------------------------------------- */

static int say(isv__grpc_unary *u) {
  isv__buf_puts(u->out, "you said: ");
  isv__buf_append(u->out, u->msg, u->len);
  return 0;
}

static int double_decode(isv_request *r, const uint8_t *msg, size_t len) {
  r->model_name = "doubler";
  if (len != 4) return isv__request_fail(r, ISV_EBADREQ, "want 4 bytes, got %zu", len);
  return isv_request_add_input(r, "INPUT0", ISV_INT32, (const int64_t[]){1}, 1, msg, 4,
                               ISV_TRANSIENT);
}

static int double_encode(isv_request *r, isv__parts *out) {
  out->v = isv__arena_alloc(&r->arena, sizeof *out->v);
  if (out->v == NULL) return ISV_ENOMEM;
  out->v[0] = uv_buf_init((char *)r->outputs[0].data, 4); /* by reference */
  out->n = 1;
  out->total = 4;
  return 0;
}

static const isv__grpc_method methods[] = {
    {"/echo.v1.Echo/Say", ISV__RPC_UNARY, say, NULL, NULL, NULL, NULL},
    {"/echo.v1.Echo/Double", ISV__RPC_UNARY, NULL, double_decode, double_encode, NULL, NULL},
    {0},
};

static const isv__frontend echo_frontend = {
    .name = "echo_v1",
    .path_prefix = "/echo/v1",
    .routes = routes,
    .methods = methods,
    .http_error = echo_error,
    .http_label = "echo_http",
    .grpc_label = "echo_grpc",
};

/* ---- the host ---------------------------------------------------------------------------- */

static int doubler(isv_request *r, void *u) {
  (void)u;
  int32_t *y;
  int rc = isv_request_alloc_output(r, "OUTPUT0", ISV_INT32, (const int64_t[]){1}, 1, (void **)&y);
  if (rc) return rc;
  *y = 2 * *(const int32_t *)isv_tensor_data(isv_request_input(r, "INPUT0"));
  return isv_request_complete(r, 0, NULL);
}

static isv_server *srv;
static uv_signal_t sigs[2];

static void on_closed(isv_server *s, void *data) {
  (void)s;
  (void)data;
  uv_close((uv_handle_t *)&sigs[0], NULL);
  uv_close((uv_handle_t *)&sigs[1], NULL);
}

static void on_signal(uv_signal_t *h, int signum) {
  (void)h;
  (void)signum;
  isv_server_close(srv, on_closed, NULL);
}

int main(int argc, char **argv) {
  const char *host = "127.0.0.1";
  int port = 0;
  isv_options *o;
  isv_options_new(&o);
  for (int i = 1; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "--listen") == 0) {
      static char h[64];
      if (sscanf(argv[i + 1], "%63[^:]:%d", h, &port) != 2) return 2;
      host = h;
    } else if (strcmp(argv[i], "--max-body-bytes") == 0) {
      isv_options_set_max_body_bytes(o, strtoull(argv[i + 1], NULL, 10));
    } else {
      return 2;
    }
  }
  signal(SIGPIPE, SIG_IGN);
  uv_loop_t loop;
  uv_loop_init(&loop);
  if (isv_server_new(&loop, o, &srv) != 0) return 1;
  isv_options_free(o);
  if (isv__server_add_frontend(srv, &echo_frontend) != 0) {
    fprintf(stderr, "toy-frontend-server: %s\n", isv_server_last_error(srv));
    return 1;
  }
  isv_model_config *c;
  isv_model_config_new("doubler", &c);
  isv_model_config_add_input(c, "INPUT0", ISV_INT32, (const int64_t[]){1}, 1);
  isv_model_config_add_output(c, "OUTPUT0", ISV_INT32, (const int64_t[]){1}, 1);
  isv_backend be = {.struct_size = sizeof be, .infer = doubler};
  isv_server_add_model(srv, c, "1", &be, NULL, NULL);
  isv_model_config_free(c);
  if (isv_server_listen(srv, host, port) != 0) {
    fprintf(stderr, "toy-frontend-server: %s\n", isv_server_last_error(srv));
    return 1;
  }
  for (int i = 0; i < 2; i++) {
    uv_signal_init(&loop, &sigs[i]);
    uv_signal_start(&sigs[i], on_signal, i ? SIGTERM : SIGINT);
  }
  printf("toy-frontend-server listening on %s:%d\n", host, isv_server_bound_port(srv, 0));
  fflush(stdout);
  uv_run(&loop, UV_RUN_DEFAULT);
  return uv_loop_close(&loop) == 0 ? 0 : 1;
}
