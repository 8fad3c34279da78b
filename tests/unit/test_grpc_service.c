/* protocol/grpc_service.c: the one gRPC call layer, driven through a fake carrier (the seam of
 * transport/grpc.h) with a toy method table: answered unary calls, inference calls (unary,
 * server-streaming, bidi with in-stream errors), message counts, unknown methods, cancellation
 * of a request still running, and drain; streams answered by the front end (bidi answers, a
 * kept server stream). ASan checks that nothing leaks. */
#include "cmocka_prelude.h"

#include <stdio.h>
#include <string.h>

#include "codec/zcoding.h"
#include "protocol/grpc_service.h"
#include "core/lifecycle.h"

static uv_loop_t loop;
static isv__core core;
static isv__grpc_services svc;

/* ---- the fake carrier -------------------------------------------------------------------- */

typedef struct fake {
  isv__grpc_call call;
  int finished, status;
  char msg[256];
  int n_sent;
  char sent[8][64]; /* each message, NUL-terminated (its first 63 bytes) */
  size_t sent_len[8];
  int sent_z[8];            /* sent with send_compressed */
  size_t plain_len[8];      /* a compressed one's length once inflated */
  uint32_t plain_sum[8];    /* ... and a sum of its bytes */
  int full; /* the fake's queue says it is full (isv__grpc_writable) */
} fake;

static int fake_writable(isv__grpc_call *call) { return !((fake *)call->carrier)->full; }

static int fake_send(isv__grpc_call *call, const uv_buf_t *parts, size_t n, void (*release)(void *),
                     void *ctx) {
  fake *f = call->carrier;
  assert_false(f->finished);
  size_t k = 0;
  char *out = f->sent[f->n_sent++];
  size_t total = 0;
  for (size_t i = 0; i < n; i++) {
    size_t take = parts[i].len < 63 - k ? parts[i].len : 63 - k;
    memcpy(out + k, parts[i].base, take);
    k += take;
    total += parts[i].len;
  }
  out[k] = '\0';
  f->sent_len[f->n_sent - 1] = total;
  if (release) release(ctx);
  return 0;
}

/* As fake_send; the message is inflated with the call's answer coding and measured. */
static int fake_send_z(isv__grpc_call *call, const uv_buf_t *parts, size_t n,
                       void (*release)(void *), void *ctx) {
  fake *f = call->carrier;
  assert_int_equal(n, 1);
  int k = f->n_sent;
  char *plain;
  size_t len;
  char err[128];
  assert_int_equal(isv__inflate(call->answer_coding, parts[0].base, parts[0].len, 64u << 20, NULL,
                                &plain, &len, err, sizeof err), 0);
  uint32_t sum = 0;
  for (size_t i = 0; i < len; i++) sum = sum * 31 + (unsigned char)plain[i];
  isv__free(plain);
  fake_send(call, parts, n, release, ctx);
  f->sent_z[k] = 1;
  f->plain_len[k] = len;
  f->plain_sum[k] = sum;
  return 0;
}

static void fake_finish(isv__grpc_call *call, int status, const char *message) {
  fake *f = call->carrier;
  assert_false(f->finished); /* exactly once */
  f->finished = 1;
  f->status = status;
  snprintf(f->msg, sizeof f->msg, "%s", message ? message : "");
}

static void start(fake *f, const char *path) {
  memset(f, 0, sizeof *f);
  f->call.path = path;
  f->call.path_len = strlen(path);
  f->call.send = fake_send;
  f->call.finish = fake_finish;
  f->call.writable = fake_writable;
  f->call.carrier = f;
  isv__grpc_services_dispatch(&svc, &f->call);
}

static void message(fake *f, const char *text) {
  size_t n = strlen(text);
  uint8_t *m = isv__bigbuf_alloc(NULL, n, 0); /* the layer takes it */
  memcpy(m, text, n);
  f->call.on_message(&f->call, m, n, 0);
}

/* A message compressed with the call's coding (the carrier's flag set). */
static void message_z(fake *f, const void *data, size_t n) {
  isv__buf z;
  isv__buf_init(&z, NULL);
  isv__zpiece p = {data, n};
  assert_int_equal(isv__deflate(f->call.coding, &p, 1, &z), 0);
  uint8_t *m = isv__bigbuf_alloc(NULL, z.len, 0);
  memcpy(m, z.data, z.len);
  f->call.on_message(&f->call, m, z.len, 1);
  isv__buf_free(&z);
}

/* ---- a toy front end: its messages are model names; answers are text -------------------- */

static int answer(isv__grpc_unary *u) {
  if (u->len == 4 && memcmp(u->msg, "fail", 4) == 0) {
    strcpy(u->err, "asked to fail");
    return ISV_EUNAVAIL;
  }
  isv__buf_append(u->out, "echo:", 5);
  isv__buf_append(u->out, u->msg, u->len);
  return 0;
}

static int decode(isv_request *r, const uint8_t *msg, size_t len) {
  r->model_name = isv__arena_strndup(&r->arena, (const char *)msg, len);
  if (len >= 3 && memcmp(msg, "bad", 3) == 0) return isv__request_fail(r, ISV_EBADREQ, "bad body");
  static const int64_t shape[] = {1};
  isv_tensor *t = isv__request_push_input(r);
  int32_t *v = isv__arena_alloc(&r->arena, 4);
  *v = 41;
  *t = (isv_tensor){"x", ISV_INT32, (int64_t *)shape, 1, v, 1, 4, ISV_STATIC, 0, NULL};
  return 0;
}

static int encode(isv_request *r, isv__parts *out) {
  char *text = isv__arena_alloc(&r->arena, 32);
  int n = snprintf(text, 32, "y=%d", *(const int32_t *)r->outputs[0].data);
  out->v = isv__arena_alloc(&r->arena, sizeof *out->v);
  out->v[0] = uv_buf_init(text, (unsigned)n);
  out->n = 1;
  out->total = (size_t)n;
  return 0;
}

/* An answer of answer_len bytes (a pattern): large enough to be compressed. */
static size_t answer_len;
static uint32_t pattern_sum(size_t n) {
  uint32_t sum = 0;
  for (size_t i = 0; i < n; i++) sum = sum * 31 + (unsigned char)('a' + i % 7);
  return sum;
}
static int encode_big(isv_request *r, isv__parts *out) {
  char *text = isv__arena_alloc(&r->arena, answer_len);
  for (size_t i = 0; i < answer_len; i++) text[i] = (char)('a' + i % 7);
  out->v = isv__arena_alloc(&r->arena, 2 * sizeof *out->v); /* two parts, as V2's answers */
  out->v[0] = uv_buf_init(text, 10);
  out->v[1] = uv_buf_init(text + 10, (unsigned)(answer_len - 10));
  out->n = 2;
  out->total = answer_len;
  return 0;
}

static int encode_error(int status, const char *message, isv__buf *out) {
  (void)status;
  isv__buf_puts(out, "E:");
  isv__buf_puts(out, message);
  return 0;
}

/* A kept server stream: the answer says "first", later messages are the test's. */
static int kept_ends;
static struct gcall *kept_call;
static void kept_end(void *data) {
  (void)data;
  kept_ends++;
  kept_call = NULL;
}
static int keep_answer(isv__grpc_unary *u) {
  isv__buf_puts(u->out, "first");
  u->keep = (isv__grpc_keep){.end = kept_end, .data = NULL};
  kept_call = u->call;
  return 0;
}

/* A method that binds its model before decoding (grpc_service.h, bind): on the loop thread,
 * with its own words for an unknown model, which the core keeps. */
static int bind_calls, bound_before_decode, bind_off_loop;
static int bind_first(isv_request *r, const uint8_t *msg, size_t len) {
  bind_calls++;
  bind_off_loop += !isv__on_loop_thread(r->core);
  if (len == 7 && memcmp(msg, "unknown", 7) == 0)
    return isv__request_fail(r, ISV_ENOTFOUND, "no toy called that"); /* names no model */
  r->model_name = isv__arena_strndup(&r->arena, (const char *)msg, len);
  return isv__request_bind(r);
}
static int decode_bound(isv_request *r, const uint8_t *msg, size_t len) {
  if (r->status) return r->status;
  bound_before_decode += r->model != NULL;
  return decode(r, msg, len);
}

static const isv__grpc_method methods[] = {
    {"/toy.S/Chat", ISV__RPC_BIDI_STREAM, answer, NULL, NULL, NULL, NULL},
    {"/toy.S/Keep", ISV__RPC_SERVER_STREAM, keep_answer, NULL, NULL, NULL, NULL},
    {"/toy.S/Answer", ISV__RPC_UNARY, answer, NULL, NULL, NULL, NULL},
    {"/toy.S/Infer", ISV__RPC_UNARY, NULL, decode, encode, NULL, NULL},
    {"/toy.S/Server", ISV__RPC_SERVER_STREAM, NULL, decode, encode, NULL, NULL},
    {"/toy.S/Stream", ISV__RPC_BIDI_STREAM, NULL, decode, encode, encode_error, NULL},
    {"/toy.S/StreamNoErr", ISV__RPC_BIDI_STREAM, NULL, decode, encode, NULL, NULL},
    {"/toy.S/Big", ISV__RPC_UNARY, NULL, decode, encode_big, NULL, NULL},
    {"/toy.S/BigServer", ISV__RPC_SERVER_STREAM, NULL, decode, encode_big, NULL, NULL},
    {"/toy.S/Bound", ISV__RPC_UNARY, NULL, decode_bound, encode, NULL, bind_first},
    {0},
};

/* "m": y = x + 1 at once; "later": completed by the test (held in `held`). */
static isv_request *held;
static int infer_calls;
static int plus_one(isv_request *r, void *u) {
  (void)u;
  infer_calls++;
  int64_t shape[] = {1};
  int32_t *y;
  int rc = isv_request_alloc_output(r, "y", ISV_INT32, shape, 1, (void **)&y);
  if (rc) return rc;
  *y = *(const int32_t *)isv_request_input(r, "x")->data + 1;
  if (strcmp(isv_request_model_name(r), "later") == 0) {
    held = r;
    return 0;
  }
  return isv_request_complete(r, 0, NULL);
}

static int setup(void **state) {
  (void)state;
  uv_loop_init(&loop);
  isv_options o;
  isv__options_defaults(&o);
  assert_int_equal(isv__core_init(&core, &loop, &o), 0);
  isv__grpc_services_init(&svc, &core);
  for (const isv__grpc_method *m = methods; m->path; m++)
    assert_int_equal(isv__grpc_services_add(&svc, m, "toy_grpc"), 0);
  int64_t one[] = {1};
  isv_backend be = {.struct_size = sizeof be, .infer = plus_one};
  for (int i = 0; i < 2; i++) {
    isv_model_config *c;
    isv_model_config_new(i ? "later" : "m", &c);
    isv_model_config_add_input(c, "x", ISV_INT32, one, 1);
    isv_model_config_add_output(c, "y", ISV_INT32, one, 1);
    if (i) isv_model_config_set_exec_mode(c, ISV_EXEC_ASYNC); /* completed by the test */
    assert_int_equal(isv__registry_add(&core.reg, c, "1", &be, NULL, NULL), 0);
    isv_model_config_free(c);
  }
  held = NULL;
  infer_calls = 0;
  return 0;
}

static int teardown(void **state) {
  (void)state;
  isv__grpc_services_free(&svc);
  isv__core_close(&core, NULL);
  uv_run(&loop, UV_RUN_DEFAULT);
  return uv_loop_close(&loop);
}

/* ---- tests ------------------------------------------------------------------------------- */

static void the_table_is_checked(void **state) {
  (void)state;
  assert_int_equal(isv__grpc_services_add(&svc, &methods[2], "x"), ISV_EEXIST);
  assert_string_equal(methods[2].path, "/toy.S/Answer");
  isv__grpc_method bad[] = {
      {"noslash", ISV__RPC_UNARY, answer, NULL, NULL, NULL, NULL},
      {"/toy.S", ISV__RPC_UNARY, answer, NULL, NULL, NULL, NULL},                 /* no method */
      {"/toy.T/Both", ISV__RPC_UNARY, answer, decode, encode, NULL, NULL},      /* answer and codec */
      {"/toy.T/None", ISV__RPC_UNARY, NULL, NULL, NULL, NULL, NULL},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    assert_int_equal(isv__grpc_services_add(&svc, &bad[i], "x"), ISV_EINVAL);
  assert_true(isv__grpc_services_has(&svc, "toy.S"));
  assert_false(isv__grpc_services_has(&svc, "toy"));
  assert_false(isv__grpc_services_has(&svc, "toy.S2"));
  /* the method the last call found is looked at first: calls to two methods in turn each
   * reach their own, and a method removed is not reached through it */
  fake f;
  static const char *const turns[] = {"/toy.S/Answer", "/toy.S/Answer", "/toy.S/Stream",
                                      "/toy.S/Answer", "/toy.S/Stream", "/toy.S/Stream"};
  for (size_t i = 0; i < sizeof turns / sizeof turns[0]; i++) {
    start(&f, turns[i]);
    message(&f, "m");
    f.call.on_half_close(&f.call);
    assert_true(f.finished);
    assert_int_equal(f.status, 0);
    assert_int_equal(f.n_sent, 1);
    assert_string_equal(f.sent[0], strcmp(turns[i], "/toy.S/Answer") == 0 ? "echo:m" : "y=42");
  }
  start(&f, "/toy.S/Answer");
  message(&f, "m");
  f.call.on_half_close(&f.call);
  assert_string_equal(f.sent[0], "echo:m");
  isv__grpc_services_remove(&svc, &methods[2]);
  start(&f, "/toy.S/Answer");
  assert_true(f.finished);
  assert_int_equal(f.status, ISV__GRPC_UNIMPLEMENTED);
  assert_string_equal(f.msg, "unknown method /toy.S/Answer");
}

static void answered_unary_calls(void **state) {
  (void)state;
  fake f;
  start(&f, "/toy.S/Answer");
  message(&f, "hi");
  assert_false(f.finished); /* unary: answered on half-close */
  f.call.on_half_close(&f.call);
  assert_int_equal(f.n_sent, 1);
  assert_string_equal(f.sent[0], "echo:hi");
  assert_int_equal(f.status, 0);
  start(&f, "/toy.S/Answer");
  message(&f, "fail");
  f.call.on_half_close(&f.call);
  assert_int_equal(f.n_sent, 0);
  assert_int_equal(f.status, ISV__GRPC_UNAVAILABLE);
  assert_string_equal(f.msg, "asked to fail");
  start(&f, "/toy.S/Answer"); /* no message at all */
  f.call.on_half_close(&f.call);
  assert_int_equal(f.status, ISV__GRPC_INVALID_ARGUMENT);
  assert_string_equal(f.msg, "a unary call takes exactly one request message");
  start(&f, "/toy.S/Answer"); /* two: refused at the second */
  message(&f, "a");
  message(&f, "b");
  assert_true(f.finished);
  assert_int_equal(f.status, ISV__GRPC_INVALID_ARGUMENT);
}

static void inference_calls_and_the_order_of_errors(void **state) {
  (void)state;
  fake f;
  start(&f, "/toy.S/Infer");
  message(&f, "m");
  f.call.on_half_close(&f.call);
  assert_int_equal(f.n_sent, 1);
  assert_string_equal(f.sent[0], "y=42");
  assert_int_equal(f.status, 0);
  start(&f, "/toy.S/Infer");
  message(&f, "bad-and-unknown"); /* the unknown model is reported before the decode error */
  f.call.on_half_close(&f.call);
  assert_int_equal(f.status, ISV__GRPC_NOT_FOUND);
  assert_string_equal(f.msg, "Request for unknown model: 'bad-and-unknown' is not found");
  start(&f, "/toy.S/Server");
  message(&f, "m");
  f.call.on_half_close(&f.call);
  assert_int_equal(f.n_sent, 1);
  assert_string_equal(f.sent[0], "y=42");
  assert_int_equal(f.status, 0);
}

static void a_method_binds_its_model_before_decoding(void **state) {
  (void)state;
  bind_calls = bound_before_decode = bind_off_loop = 0;
  fake f;
  start(&f, "/toy.S/Bound");
  message(&f, "m");
  f.call.on_half_close(&f.call);
  assert_int_equal(f.status, 0);
  assert_string_equal(f.sent[0], "y=42");
  assert_int_equal(bind_calls, 1);
  assert_int_equal(bound_before_decode, 1);
  start(&f, "/toy.S/Bound"); /* the front end's words for an unknown model, not the core's */
  message(&f, "unknown");
  f.call.on_half_close(&f.call);
  assert_int_equal(f.status, ISV__GRPC_NOT_FOUND);
  assert_string_equal(f.msg, "no toy called that");
  assert_int_equal(bind_calls, 2);
  assert_int_equal(bound_before_decode, 1);
  assert_int_equal(bind_off_loop, 0);
}

static void bidi_streams_answer_each_and_carry_errors(void **state) {
  (void)state;
  fake f;
  start(&f, "/toy.S/Stream");
  message(&f, "m");
  message(&f, "nope");
  message(&f, "m");
  assert_int_equal(f.n_sent, 3);
  assert_string_equal(f.sent[0], "y=42");
  assert_string_equal(f.sent[1], "E:Request for unknown model: 'nope' is not found");
  assert_string_equal(f.sent[2], "y=42");
  assert_false(f.finished);
  message(&f, "later"); /* in flight when the client half-closes */
  f.call.on_half_close(&f.call);
  assert_false(f.finished);
  assert_non_null(held);
  isv_request_complete(held, 0, NULL);
  assert_int_equal(f.n_sent, 4);
  assert_true(f.finished); /* half-closed and everything answered */
  assert_int_equal(f.status, 0);
  /* without encode_error an error ends the stream */
  start(&f, "/toy.S/StreamNoErr");
  message(&f, "nope");
  assert_true(f.finished);
  assert_int_equal(f.status, ISV__GRPC_NOT_FOUND);
}

static void compressed_messages_are_inflated_first(void **state) {
  (void)state;
  fake f;
  /* unary, answered and inferred; gzip and deflate */
  start(&f, "/toy.S/Answer");
  f.call.coding = ISV__CODING_GZIP;
  message_z(&f, "hi", 2);
  f.call.on_half_close(&f.call);
  assert_string_equal(f.sent[0], "echo:hi");
  start(&f, "/toy.S/Infer");
  f.call.coding = ISV__CODING_DEFLATE;
  message_z(&f, "m", 1);
  f.call.on_half_close(&f.call);
  assert_int_equal(f.status, 0);
  assert_string_equal(f.sent[0], "y=42");
  /* a stream: in order, compressed and plain messages mixed */
  start(&f, "/toy.S/Stream");
  f.call.coding = ISV__CODING_GZIP;
  message_z(&f, "m", 1);
  message(&f, "nope");
  message_z(&f, "m", 1);
  assert_int_equal(f.n_sent, 3);
  assert_string_equal(f.sent[0], "y=42");
  assert_string_equal(f.sent[2], "y=42");
  f.call.on_half_close(&f.call);
  assert_true(f.finished);
  /* one that decodes past the loop's slice (ISV__INFLATE_LOOP_SLICE) is decoded there on, on
   * a worker thread, then run — judged by what comes out: 1 MiB that codes to a few KiB */
  static char big[1 << 20];
  for (size_t i = 0; i < sizeof big; i++) big[i] = (char)('a' + i % 7);
  start(&f, "/toy.S/Answer");
  f.call.coding = ISV__CODING_GZIP;
  message_z(&f, big, sizeof big);
  f.call.on_half_close(&f.call);
  assert_false(f.finished);
  for (int i = 0; i < 1000 && !f.finished; i++) uv_run(&loop, UV_RUN_ONCE);
  assert_true(f.finished);
  assert_int_equal(f.status, 0);
  assert_int_equal(f.sent_len[0], 5 + sizeof big); /* "echo:" and all of it */
  /* in a stream, the messages behind it wait for it: none is submitted before it */
  start(&f, "/toy.S/Stream");
  f.call.coding = ISV__CODING_GZIP;
  message_z(&f, big, sizeof big); /* names no model there is: an error in the stream */
  message_z(&f, "m", 1);
  message(&f, "m");
  assert_int_equal(f.n_sent, 0); /* nothing overtakes the one being decoded */
  f.call.on_half_close(&f.call);
  for (int i = 0; i < 1000 && !f.finished; i++) uv_run(&loop, UV_RUN_ONCE);
  assert_true(f.finished);
  assert_int_equal(f.status, 0);
  assert_int_equal(f.n_sent, 3); /* answered in completion order (a 1 MiB message is decoded
                                  * into its request on a worker thread too) */
  int errors = 0, ys = 0;
  for (int i = 0; i < 3; i++) {
    errors += memcmp(f.sent[i], "E:", 2) == 0;
    ys += strcmp(f.sent[i], "y=42") == 0;
  }
  assert_int_equal(errors, 1);
  assert_int_equal(ys, 2);
  /* not what the encoding says: INTERNAL (gRPC's rule), naming it */
  start(&f, "/toy.S/Infer");
  f.call.coding = ISV__CODING_GZIP;
  uint8_t *junk = isv__bigbuf_alloc(NULL, 4, 0);
  memcpy(junk, "junk", 4);
  f.call.on_message(&f.call, junk, 4, 1);
  f.call.on_half_close(&f.call);
  assert_int_equal(f.status, ISV__GRPC_INTERNAL);
  assert_non_null(strstr(f.msg, "cannot decompress the request message (grpc-encoding gzip): "
                                "the body is not valid gzip data"));
  /* a bomb: past the server's message limit once inflated */
  size_t saved = core.opts.max_body_bytes;
  core.opts.max_body_bytes = 1000;
  start(&f, "/toy.S/Stream");
  f.call.coding = ISV__CODING_DEFLATE;
  static char zeros[5000];
  message_z(&f, zeros, sizeof zeros);
  assert_true(f.finished);
  assert_int_equal(f.status, ISV__GRPC_RESOURCE_EXHAUSTED);
  assert_string_equal(f.msg, "the decompressed message exceeds the server's limit of 1000 bytes");
  core.opts.max_body_bytes = saved;
}

static void a_cancelled_call_drops_its_answer(void **state) {
  (void)state;
  fake f;
  start(&f, "/toy.S/Infer");
  message(&f, "later");
  f.call.on_half_close(&f.call);
  assert_non_null(held);
  assert_false(isv_request_is_cancelled(held));
  f.call.on_cancel(&f.call); /* RST_STREAM, disconnect or deadline */
  assert_true(isv_request_is_cancelled(held)); /* the backend can see it */
  assert_true(f.finished);
  assert_int_equal(f.status, ISV__GRPC_CANCELLED);
  isv_request_complete(held, 0, NULL); /* the late answer is dropped, the job freed */
  assert_int_equal(f.n_sent, 0);
}

/* "later" has one instance: the second request of a stream waits behind the first. A cancel
 * flags the running one and takes the waiting one out of its queue: it never runs. */
static void a_cancelled_stream_never_runs_what_still_waits(void **state) {
  (void)state;
  fake f;
  start(&f, "/toy.S/Stream");
  f.call.timeout_ms = 250; /* grpc-timeout: the core's deadline for its requests too */
  message(&f, "later");
  message(&f, "later");
  assert_int_equal(infer_calls, 1);
  assert_non_null(held);
  assert_true(held->timeout_us == 250000);
  f.call.on_cancel(&f.call);
  assert_true(isv_request_is_cancelled(held));
  assert_int_equal(f.status, ISV__GRPC_CANCELLED);
  isv_request_complete(held, 0, NULL); /* the instance is free: nothing waits any more */
  assert_int_equal(infer_calls, 1);
  assert_int_equal(f.n_sent, 0);
  assert_int_equal(core.inflight, 0);
}

/* isv_options_set_grpc_compression: an answer over the minimum is coded with what the call's
 * grpc-accept-encoding lists — on a worker thread when unary and large, the finish waiting
 * for it; a streamed one that large goes as it is (order); without the header, or under the
 * minimum, as it is. */
static void start_z(fake *f, const char *path, const char *accept) {
  static isv__header h[1];
  h[0] = (isv__header){"grpc-accept-encoding", 20, accept, accept ? strlen(accept) : 0};
  memset(f, 0, sizeof *f);
  f->call.path = path;
  f->call.path_len = strlen(path);
  f->call.send = fake_send;
  f->call.send_compressed = fake_send_z;
  f->call.finish = fake_finish;
  f->call.carrier = f;
  f->call.headers = accept ? h : NULL;
  f->call.n_headers = accept ? 1 : 0;
  isv__grpc_services_dispatch(&svc, &f->call);
}

static void run_until_finished(fake *f) {
  for (int i = 0; i < 2000 && !f->finished; i++) uv_run(&loop, UV_RUN_ONCE);
  assert_true(f->finished);
}

static void answers_are_compressed_when_the_host_and_the_client_agree(void **state) {
  (void)state;
  core.opts.grpc_compress_min = 1024;
  fake f;
  /* unary, 200 KiB: on a worker; nothing goes out until it is back, then message and finish */
  answer_len = 200 << 10;
  start_z(&f, "/toy.S/Big", "identity, deflate, gzip");
  assert_int_equal(f.call.answer_coding, ISV__CODING_GZIP);
  message(&f, "m");
  f.call.on_half_close(&f.call);
  assert_int_equal(f.n_sent, 0);
  assert_false(f.finished); /* the finish waits for the compressed message */
  run_until_finished(&f);
  assert_int_equal(f.n_sent, 1);
  assert_true(f.sent_z[0]);
  assert_true(f.sent_len[0] < answer_len / 20);
  assert_int_equal(f.plain_len[0], answer_len);
  assert_int_equal(f.plain_sum[0], pattern_sum(answer_len));
  assert_int_equal(f.status, 0);
  /* unary, 4 KiB: compressed on the loop, at once */
  answer_len = 4096;
  start_z(&f, "/toy.S/Big", "deflate");
  assert_int_equal(f.call.answer_coding, ISV__CODING_DEFLATE);
  message(&f, "m");
  f.call.on_half_close(&f.call);
  assert_true(f.finished);
  assert_true(f.sent_z[0]);
  assert_int_equal(f.plain_sum[0], pattern_sum(answer_len));
  /* server-streaming, 200 KiB: as it is (a stream's messages keep their order) */
  answer_len = 200 << 10;
  start_z(&f, "/toy.S/BigServer", "gzip");
  message(&f, "m");
  f.call.on_half_close(&f.call);
  assert_true(f.finished);
  assert_false(f.sent_z[0]);
  assert_int_equal(f.sent_len[0], answer_len);
  /* under the minimum, or a client that accepts nothing: as it is */
  answer_len = 1000;
  start_z(&f, "/toy.S/Big", "gzip");
  message(&f, "m");
  f.call.on_half_close(&f.call);
  assert_false(f.sent_z[0]);
  answer_len = 4096;
  start_z(&f, "/toy.S/Big", NULL);
  assert_int_equal(f.call.answer_coding, ISV__CODING_IDENTITY);
  message(&f, "m");
  f.call.on_half_close(&f.call);
  assert_false(f.sent_z[0]);
  /* the host did not ask: never */
  core.opts.grpc_compress_min = 0;
  start_z(&f, "/toy.S/Big", "gzip");
  assert_int_equal(f.call.answer_coding, ISV__CODING_IDENTITY);
  message(&f, "m");
  f.call.on_half_close(&f.call);
  assert_false(f.sent_z[0]);
}

/* The call is cancelled while its answer is compressed on a worker: the message is sent into
 * the void (the carrier drops it), the finish comes once, nothing leaks. */
static void a_call_cancelled_while_its_answer_is_compressed_finishes_once(void **state) {
  (void)state;
  core.opts.grpc_compress_min = 1024;
  answer_len = 300 << 10;
  fake f;
  start_z(&f, "/toy.S/Big", "gzip");
  message(&f, "m");
  f.call.on_half_close(&f.call);
  assert_false(f.finished);
  f.call.on_cancel(&f.call);
  run_until_finished(&f);
  for (int i = 0; i < 100; i++) uv_run(&loop, UV_RUN_NOWAIT); /* the job comes back */
  assert_int_equal(core.inflight, 0);
}

static void drain_ends_what_waits_and_lets_work_finish(void **state) {
  (void)state;
  fake f;
  start(&f, "/toy.S/Infer"); /* waiting for its message */
  f.call.on_drain(&f.call);
  assert_int_equal(f.status, ISV__GRPC_UNAVAILABLE);
  start(&f, "/toy.S/Stream"); /* a stream with work in flight: ends once it is answered */
  message(&f, "later");
  f.call.on_drain(&f.call);
  assert_false(f.finished);
  isv_request_complete(held, 0, NULL);
  assert_int_equal(f.n_sent, 1);
  assert_true(f.finished);
  assert_int_equal(f.status, ISV__GRPC_UNAVAILABLE);
  assert_string_equal(f.msg, "server is shutting down");
}

static void bidi_streams_answered_by_the_front_end(void **state) {
  (void)state;
  fake f;
  start(&f, "/toy.S/Chat");
  message(&f, "a");
  message(&f, "b");
  assert_int_equal(f.n_sent, 2); /* each answered at once, in order */
  assert_string_equal(f.sent[0], "echo:a");
  assert_string_equal(f.sent[1], "echo:b");
  assert_false(f.finished);
  f.call.on_half_close(&f.call);
  assert_true(f.finished);
  assert_int_equal(f.status, 0);
  start(&f, "/toy.S/Chat"); /* an answer's error ends the call with its status */
  message(&f, "fail");
  assert_int_equal(f.status, ISV__GRPC_UNAVAILABLE);
  assert_string_equal(f.msg, "asked to fail");
  start(&f, "/toy.S/Chat"); /* compressed messages are inflated first */
  f.call.coding = ISV__CODING_GZIP;
  message_z(&f, "zz", 2);
  assert_int_equal(f.n_sent, 1);
  assert_string_equal(f.sent[0], "echo:zz");
  f.call.on_drain(&f.call); /* the server's close: UNAVAILABLE, as every stream */
  assert_int_equal(f.status, ISV__GRPC_UNAVAILABLE);
  start(&f, "/toy.S/Chat"); /* a client that does not read its answers */
  f.full = 1;
  message(&f, "x");
  assert_int_equal(f.n_sent, 1);
  assert_int_equal(f.status, ISV__GRPC_RESOURCE_EXHAUSTED);
}

static void a_kept_server_stream(void **state) {
  (void)state;
  fake f;
  kept_ends = 0;
  start(&f, "/toy.S/Keep");
  message(&f, "q");
  f.call.on_half_close(&f.call);
  assert_int_equal(f.n_sent, 1);
  assert_string_equal(f.sent[0], "first");
  assert_false(f.finished); /* kept open */
  isv__buf b;
  isv__buf_init(&b, NULL);
  isv__buf_puts(&b, "later");
  assert_int_equal(isv__grpc_kept_send(kept_call, &b), 1);
  assert_int_equal(b.len, 0); /* taken */
  f.full = 1;
  isv__buf_puts(&b, "more");
  assert_int_equal(isv__grpc_kept_send(kept_call, &b), 0); /* sent, but the queue is full */
  assert_int_equal(f.n_sent, 3);
  assert_string_equal(f.sent[1], "later");
  f.call.on_cancel(&f.call); /* the client's cancel: end runs once */
  assert_int_equal(kept_ends, 1);
  assert_int_equal(f.status, ISV__GRPC_CANCELLED);
  start(&f, "/toy.S/Keep"); /* the server's close: OK */
  message(&f, "q");
  f.call.on_half_close(&f.call);
  f.call.on_drain(&f.call);
  assert_int_equal(kept_ends, 2);
  assert_true(f.finished);
  assert_int_equal(f.status, 0);
  start(&f, "/toy.S/Keep"); /* the front end ends it */
  message(&f, "q");
  f.call.on_half_close(&f.call);
  isv__grpc_kept_end(kept_call);
  assert_int_equal(kept_ends, 3);
  assert_int_equal(f.status, 0);
  assert_int_equal(f.n_sent, 1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(the_table_is_checked, setup, teardown),
      cmocka_unit_test_setup_teardown(answered_unary_calls, setup, teardown),
      cmocka_unit_test_setup_teardown(inference_calls_and_the_order_of_errors, setup, teardown),
      cmocka_unit_test_setup_teardown(a_method_binds_its_model_before_decoding, setup, teardown),
      cmocka_unit_test_setup_teardown(bidi_streams_answer_each_and_carry_errors, setup, teardown),
      cmocka_unit_test_setup_teardown(compressed_messages_are_inflated_first, setup, teardown),
      cmocka_unit_test_setup_teardown(a_cancelled_call_drops_its_answer, setup, teardown),
      cmocka_unit_test_setup_teardown(a_cancelled_stream_never_runs_what_still_waits, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(drain_ends_what_waits_and_lets_work_finish, setup, teardown),
      cmocka_unit_test_setup_teardown(answers_are_compressed_when_the_host_and_the_client_agree,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(a_call_cancelled_while_its_answer_is_compressed_finishes_once,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(bidi_streams_answered_by_the_front_end, setup, teardown),
      cmocka_unit_test_setup_teardown(a_kept_server_stream, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
