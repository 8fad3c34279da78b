/* protocol/reflection_grpc.c: ServerReflectionInfo's answers, one request message at a time
 * (the call layer's bidi streams are test_grpc_service.c's), read back with the wire reader:
 * list_services, files by name and by symbol (the bytes protoc wrote), the echo of the request
 * and its host, error_response codes, and malformed requests. */
#include "cmocka_prelude.h"

#include <string.h>

#include "codec/pbwire.h"
#include "core/lifecycle.h"
#include "protocol/builtin.h"
#include "protocol/descriptors.h"

static uv_loop_t loop;
static isv__core core;
static isv__grpc_services services;

static int setup(void **state) {
  (void)state;
  uv_loop_init(&loop);
  isv_options o;
  isv__options_defaults(&o);
  assert_int_equal(isv__core_init(&core, &loop, &o), 0);
  isv__grpc_services_init(&services, &core);
  for (const isv__grpc_method *m = isv__v2_frontend.methods; m->path; m++)
    assert_int_equal(isv__grpc_services_add(&services, m, "v2_grpc"), 0);
  for (const isv__grpc_method *m = isv__grpc_reflection_frontend.methods; m->path; m++)
    assert_int_equal(isv__grpc_services_add(&services, m, "grpc_reflection"), 0);
  return 0;
}

static int teardown(void **state) {
  (void)state;
  isv__grpc_services_free(&services);
  isv__core_close(&core, NULL);
  uv_run(&loop, UV_RUN_DEFAULT);
  return uv_loop_close(&loop);
}

/* One answer: rc, and the response in out. v1alpha: the second method (the same answer). */
static int ask(int v1alpha, const void *msg, size_t len, isv__buf *out) {
  const isv__grpc_method *m = &isv__grpc_reflection_frontend.methods[v1alpha];
  assert_int_equal(m->kind, ISV__RPC_BIDI_STREAM);
  isv__buf_init(out, NULL);
  isv__grpc_unary u = {&core, &services, msg, len, out, "", NULL, {0}};
  return m->answer(&u);
}

/* The LEN field `num` of span s (the last one), or {NULL, 0}. */
static isv__pb_span field(isv__pb_span s, uint32_t num) {
  isv__pb_reader r = isv__pb_reader_of(s);
  isv__pb_field f;
  isv__pb_span got = {NULL, 0};
  int rc;
  while ((rc = isv__pb_read_field(&r, &f)) == 1)
    if (f.num == num && f.wt == ISV__PB_LEN) got = f.s;
  assert_int_equal(rc, 0);
  return got;
}

static uint64_t varint_field(isv__pb_span s, uint32_t num) {
  isv__pb_reader r = isv__pb_reader_of(s);
  isv__pb_field f;
  while (isv__pb_read_field(&r, &f) == 1)
    if (f.num == num && f.wt == ISV__PB_VARINT) return f.v;
  return 0;
}

static isv__pb_span whole(const isv__buf *b) { return (isv__pb_span){(const uint8_t *)b->data, b->len}; }

static void list_services_names_what_is_served(void **state) {
  (void)state;
  for (int alpha = 0; alpha < 2; alpha++) {
    isv__buf b;
    assert_int_equal(ask(alpha, "\x3a\x00", 2, &b), 0); /* list_services: "" */
    isv__pb_span echo = field(whole(&b), 2);
    assert_int_equal(echo.n, 2);
    assert_memory_equal(echo.p, "\x3a\x00", 2);
    isv__pb_span list = field(whole(&b), 6);
    assert_non_null(list.p);
    isv__pb_reader r = isv__pb_reader_of(list);
    isv__pb_field f;
    const char *want[] = {"inference.GRPCInferenceService", "grpc.reflection.v1.ServerReflection",
                          "grpc.reflection.v1alpha.ServerReflection"};
    size_t n = 0;
    while (isv__pb_read_field(&r, &f) == 1) {
      assert_int_equal(f.num, 1);
      isv__pb_span name = field(f.s, 1);
      assert_true(n < 3);
      assert_int_equal(name.n, strlen(want[n]));
      assert_memory_equal(name.p, want[n], name.n);
      n++;
    }
    assert_int_equal(n, 3); /* each once, though V2 has many methods */
    isv__buf_free(&b);
  }
}

static void files_by_symbol_and_name(void **state) {
  (void)state;
  const isv__pb_file *v2 = NULL;
  for (size_t f = 0; f < isv__pb_n_files; f++)
    if (strcmp(isv__pb_files[f].name, "grpc_predict_v2.proto") == 0) v2 = &isv__pb_files[f];
  assert_non_null(v2);
  const char *asks[][2] = {
      {"\x0a\x02hh\x22\x2c" "inference.ModelInferRequest.InferInputTensor", "hh"}, /* host, symbol */
      {"\x1a\x15grpc_predict_v2.proto", ""},                                       /* by name */
  };
  size_t lens[] = {4 + 2 + 44, 2 + 21};
  for (size_t i = 0; i < 2; i++) {
    isv__buf b;
    assert_int_equal(ask(0, asks[i][0], lens[i], &b), 0);
    isv__pb_span host = field(whole(&b), 1);
    assert_int_equal(host.n, strlen(asks[i][1]));
    isv__pb_span files = field(whole(&b), 4);
    isv__pb_span first = field(files, 1); /* the only file: it imports nothing */
    assert_int_equal(first.n, v2->len);
    assert_memory_equal(first.p, v2->data, v2->len); /* protoc's bytes, as they are */
    isv__buf_free(&b);
  }
}

static void errors_are_answers(void **state) {
  (void)state;
  const struct {
    const char *msg;
    size_t len;
    uint64_t code;
  } cases[] = {
      {"\x22\x0einference.Nope", 16, 5},                       /* unknown symbol: NOT_FOUND */
      {"\x22\x15grpc.health.v1.Health", 23, 5},                /* health is off here */
      {"\x1a\x0agrps.proto", 12, 5},                           /* grps is off */
      {"\x2a\x05\x0a\x01x\x10\x01", 7, 5},                     /* file_containing_extension */
      {"\x32\x0einference.Nope", 16, 5},                       /* all_extension_numbers */
      {"\x32\x1einference.GRPCInferenceService", 32, 5},     /* ... of a service */
      {"", 0, 3},                                              /* asks nothing: INVALID_ARGUMENT */
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    isv__buf b;
    assert_int_equal(ask(0, cases[i].msg, cases[i].len, &b), 0);
    isv__pb_span e = field(whole(&b), 7);
    assert_non_null(e.p);
    assert_int_equal(varint_field(e, 1), cases[i].code);
    assert_true(field(e, 2).n > 0); /* a message says what */
    isv__buf_free(&b);
  }
  isv__buf b; /* a known type has no extensions: an empty list, not an error */
  assert_int_equal(ask(1, "\x32\x1binference.ModelInferRequest", 29, &b), 0);
  isv__pb_span ext = field(whole(&b), 5);
  assert_int_equal(field(ext, 1).n, 27);
  assert_null(field(whole(&b), 7).p);
  isv__buf_free(&b);
}

static void malformed_requests_end_the_stream(void **state) {
  (void)state;
  isv__buf b;
  assert_int_equal(ask(0, "\x22\x05" "ab", 4, &b), ISV_EBADREQ); /* truncated */
  isv__buf_free(&b);
  static char big[700];
  big[0] = 0x22;
  big[1] = (char)0xb8; /* 600, over the bound of names */
  big[2] = 0x04;
  memset(big + 3, 'a', 600);
  assert_int_equal(ask(0, big, 603, &b), ISV_EBADREQ);
  isv__buf_free(&b);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(list_services_names_what_is_served, setup, teardown),
      cmocka_unit_test_setup_teardown(files_by_symbol_and_name, setup, teardown),
      cmocka_unit_test_setup_teardown(errors_are_answers, setup, teardown),
      cmocka_unit_test_setup_teardown(malformed_requests_end_the_stream, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
