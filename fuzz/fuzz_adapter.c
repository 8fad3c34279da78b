/* libFuzzer target: the transport adapter (transport/adapter.c) — what a host's own HTTP
 * server or gRPC stack hands in, through the public API only, to a server with the V2, TF
 * Serving, grps and Vertex front ends and one inline model "m" (INT32 [-1] in and out).
 *
 * Input: byte 0 picks the mode (bit 0: a gRPC call instead of an HTTP exchange; bits 1-2: the
 * host cancels never, before submit/start, or right after it; bit 3: the host's carrier fails
 * its first call; bit 4: the host holds every piece until the end of the run); byte 1, the
 * method; then lines up to a blank line: the target (or gRPC method), then "name: value"
 * headers (or metadata); the rest is the body (or the messages), handed in pieces whose sizes
 * cycle through 1, 7, 64 and 4096 bytes.
 *
 * Checked: an exchange or call the host did not cancel is answered exactly once before the
 * loop runs dry (the model is inline) — respond once, and end once after respond with `more`;
 * a gRPC call finished once — with a status in 100..599 (0..16 for gRPC); nothing reaches the
 * host after it cancelled or failed; every piece is released exactly once (ASan's leak check
 * and double-free detection see the rest). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "inferserve.h"

static void check(int cond, const char *what) {
  if (cond) return;
  fprintf(stderr, "CHECK FAILED: %s\n", what);
  abort();
}

typedef struct host {
  int responds, writes, ends, finishes;
  int more;
  int status;
  int failed; /* the carrier said its client is gone */
  int let_go; /* cancelled, failed, or the answer ended: nothing more may come */
  int fail_first;
  int hold;
  isv_piece *held[256];
  size_t n_held;
  size_t pieces;
} host;

static void piece(host *h, isv_piece *p) {
  if (p == NULL) return;
  h->pieces++;
  if (h->hold && h->n_held < 256) h->held[h->n_held++] = p;
  else isv_piece_free(p);
}

static int fail_now(host *h) {
  if (!h->fail_first) return 0;
  h->fail_first = 0;
  h->failed = h->let_go = 1;
  return 1;
}

static int on_respond(isv_exchange *x, int status, const isv_field *hs, size_t nh,
                      const uv_buf_t *parts, size_t n, isv_piece *p, int more) {
  host *h = isv_exchange_user(x);
  check(!h->let_go, "respond after the host let go");
  check(h->responds == 0, "respond twice");
  check(status >= 100 && status <= 599, "status in range");
  for (size_t i = 0; i < nh; i++) check(hs[i].name_len > 0, "header with a name");
  for (size_t i = 0; i < n; i++) check(parts[i].base != NULL || parts[i].len == 0, "part");
  check((n == 0) == (p == NULL), "a piece iff parts");
  h->responds++;
  h->status = status;
  h->more = more;
  piece(h, p);
  if (fail_now(h)) return -1;
  if (!more) h->let_go = 1;
  return 0;
}

static int on_write(isv_exchange *x, const uv_buf_t *parts, size_t n, isv_piece *p) {
  host *h = isv_exchange_user(x);
  check(!h->let_go && h->responds == 1 && h->more, "write after a streamed respond only");
  (void)parts;
  (void)n;
  h->writes++;
  piece(h, p);
  return fail_now(h) ? -1 : 0;
}

static void on_end(isv_exchange *x) {
  host *h = isv_exchange_user(x);
  check(!h->let_go && h->responds == 1 && h->more, "end after a streamed respond only");
  h->ends++;
  h->let_go = 1;
}

static int on_send(isv_grpc_call *c, const uv_buf_t *parts, size_t n, isv_piece *p) {
  host *h = isv_grpc_call_user(c);
  check(!h->let_go, "send after the host let go");
  (void)parts;
  (void)n;
  h->writes++;
  piece(h, p);
  return fail_now(h) ? -1 : 0;
}

static void on_finish(isv_grpc_call *c, int status, const char *msg) {
  host *h = isv_grpc_call_user(c);
  check(!h->let_go, "finish after the host let go");
  check(status >= 0 && status <= 16 && msg != NULL, "gRPC status");
  h->finishes++;
  h->status = status;
  h->let_go = 1;
}

static const isv_exchange_carrier xc = {sizeof xc, on_respond, on_write, on_end};
static const isv_grpc_carrier gc = {sizeof gc, on_send, on_finish};

static int echo(isv_request *r, void *u) {
  (void)u;
  const isv_tensor *in = isv_request_input(r, "x");
  size_t nd;
  const int64_t *shape = isv_tensor_shape(in, &nd);
  int rc = isv_request_set_output(r, "y", ISV_INT32, shape, nd, isv_tensor_data(in),
                                  isv_tensor_byte_size(in), ISV_STATIC);
  return rc ? rc : isv_request_complete(r, 0, NULL);
}

static uv_loop_t loop;
static isv_server *srv;

static void setup(void) {
  uv_loop_init(&loop);
  isv_options *o;
  isv_options_new(&o);
  isv_options_set_max_body_bytes(o, 1 << 16);
  isv_options_set_max_header_bytes(o, 2048);
  if (isv_server_new(&loop, o, &srv) != 0) abort();
  isv_options_free(o);
  isv_model_config *c;
  isv_model_config_new("m", &c);
  int64_t any[] = {-1};
  isv_model_config_add_input(c, "x", ISV_INT32, any, 1);
  isv_model_config_add_output(c, "y", ISV_INT32, any, 1);
  isv_backend be = {.struct_size = sizeof be, .infer = echo};
  if (isv_server_add_model(srv, c, "1", &be, NULL, NULL) != 0) abort();
  isv_model_config_free(c);
}

/* The next line of [*p, end) into out (NUL-terminated, at most cap-1 bytes kept). 0 at the
 * blank line or the end. */
static int next_line(const uint8_t **p, const uint8_t *end, char *out, size_t cap) {
  const uint8_t *s = *p, *nl = memchr(s, '\n', (size_t)(end - s));
  const uint8_t *e = nl ? nl : end;
  *p = nl ? nl + 1 : end;
  size_t n = (size_t)(e - s) < cap - 1 ? (size_t)(e - s) : cap - 1;
  memcpy(out, s, n);
  out[n] = '\0';
  return e > s;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (srv == NULL) setup();
  if (size < 2) return 0;
  static const char *methods[] = {"GET", "POST", "PUT", "DELETE", "HEAD", "OPTIONS", "PATCH"};
  uint8_t mode = data[0];
  const char *method = methods[data[1] % 7];
  int grpc = mode & 1, cancel = (mode >> 1) & 3;
  host h = {0};
  h.fail_first = (mode >> 3) & 1;
  h.hold = (mode >> 4) & 1;
  const uint8_t *p = data + 2, *end = data + size;
  char target[512], line[512];
  next_line(&p, end, target, sizeof target);
  isv_exchange *x = NULL;
  isv_grpc_call *c = NULL;
  if (grpc) {
    if (isv_grpc_call_new(srv, &gc, &h, target, &c) != 0) return 0;
  } else if (isv_exchange_new(srv, &xc, &h, method, target, &x) != 0) {
    return 0;
  }
  while (p < end && next_line(&p, end, line, sizeof line)) {
    char *colon = strchr(line, ':');
    if (colon == NULL || colon == line) continue;
    const char *v = colon + 1;
    while (*v == ' ') v++;
    if (grpc) isv_grpc_call_add_metadata(c, line, (size_t)(colon - line), v, strlen(v));
    else isv_exchange_add_header(x, line, (size_t)(colon - line), v, strlen(v));
  }
  if (grpc) isv_grpc_call_set_peer(c, "192.0.2.1:1", (mode & 32) ? "CN=fuzz" : NULL);
  else isv_exchange_set_peer(x, "192.0.2.1:1", (mode & 32) ? "CN=fuzz" : NULL);
  if (cancel == 1) {
    if (grpc) isv_grpc_call_free(c);
    else isv_exchange_free(x);
    uv_run(&loop, UV_RUN_NOWAIT);
    check(h.responds + h.finishes == 0, "nothing after a cancel before submit");
    return 0;
  }
  static const size_t sizes[] = {1, 7, 64, 4096};
  int started = 0;
  if (grpc && !(started = isv_grpc_call_start(c) == 0)) {
    isv_grpc_call_free(c);
    return 0;
  }
  for (size_t k = 0; p < end; k++) {
    size_t n = sizes[k % 4] < (size_t)(end - p) ? sizes[k % 4] : (size_t)(end - p);
    if (grpc) {
      if (h.let_go) break;
      if (started && isv_grpc_call_append_message(c, p, n) != 0) break;
    } else {
      isv_exchange_append_body(x, p, n);
    }
    p += n;
  }
  if (grpc) {
    if (!h.let_go) isv_grpc_call_half_close(c);
  } else {
    isv_exchange_submit(x);
  }
  if (cancel >= 2 && !h.let_go) { /* the host's client leaves right away */
    if (grpc) isv_grpc_call_free(c);
    else isv_exchange_free(x);
    h.let_go = 1;
    h.failed = 1;
  }
  uv_run(&loop, UV_RUN_DEFAULT);
  if (!h.failed && !(cancel >= 2)) {
    if (grpc) check(h.finishes == 1, "a gRPC call finished exactly once");
    else check(h.responds == 1 && (!h.more || h.ends == 1), "an exchange answered once");
  }
  for (size_t i = 0; i < h.n_held; i++) isv_piece_free(h.held[i]);
  if (h.n_held < 256) check(h.n_held == h.pieces || !h.hold, "every piece held");
  return 0;
}
