/* protocol/http_reply.c: the JSON answers every HTTP front end shares — a JSON body with its
 * status and content type (a buffer that ran out of memory becomes a 500), and {"error": msg}
 * errors: the HTTP status mapped from the ISV_E* code, the message JSON-escaped, invalid UTF-8
 * replaced rather than sent, extra headers passed through; Triton's priority and timeout read
 * from the Inference-Priority / Inference-Timeout-Us headers, and a refusal's Retry-After. Exchanges are built by hand; their
 * respond function records the answer and releases its body (ASan checks nothing leaks). */
#include "cmocka_prelude.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/utf8.h"
#include "core/core.h"
#include "core/lifecycle.h"
#include "core/options.h"
#include "core/request.h"
#include "inferserve.h"
#include "protocol/http_reply.h"

/* ---- a fake exchange --------------------------------------------------------------------- */

static int n_responses;
static int got_status;
static char got_type[64];
static char got_body[2048];
static size_t got_len;
static char got_header_text[4][2][64];
static size_t got_n_headers;

static int fake_respond(isv__exchange *ex, const isv__response *r) {
  (void)ex;
  n_responses++;
  got_status = r->status;
  snprintf(got_type, sizeof got_type, "%s", r->content_type ? r->content_type : "(none)");
  got_len = 0;
  for (size_t i = 0; i < r->n_parts; i++) {
    assert_true(got_len + r->parts[i].len < sizeof got_body);
    if (r->parts[i].len) memcpy(got_body + got_len, r->parts[i].base, r->parts[i].len);
    got_len += r->parts[i].len;
  }
  got_body[got_len] = '\0';
  assert_true(r->n_headers <= 4);
  got_n_headers = r->n_headers;
  for (size_t i = 0; i < r->n_headers; i++) { /* copied: respond may not keep them */
    snprintf(got_header_text[i][0], 64, "%.*s", (int)r->headers[i].name_len, r->headers[i].name);
    snprintf(got_header_text[i][1], 64, "%.*s", (int)r->headers[i].value_len,
             r->headers[i].value);
  }
  if (r->release) r->release(r->release_ctx);
  return 0;
}

static isv__exchange ex;

static int setup(void **state) {
  (void)state;
  memset(&ex, 0, sizeof ex);
  ex.method = ISV__M_GET;
  ex.method_name = "GET";
  ex.respond = fake_respond;
  n_responses = 0;
  got_status = 0;
  got_body[0] = '\0';
  got_n_headers = 0;
  return 0;
}

/* ---- tests ------------------------------------------------------------------------------- */

static void json_body_is_sent_with_its_status_and_type(void **state) {
  (void)state;
  isv__buf b;
  isv__buf_init(&b, NULL);
  isv__buf_puts(&b, "{\"ready\":true}");
  assert_int_equal(isv__reply_json(&ex, 201, &b), 0);
  assert_int_equal(n_responses, 1);
  assert_int_equal(got_status, 201);
  assert_string_equal(got_type, "application/json");
  assert_string_equal(got_body, "{\"ready\":true}");
  assert_int_equal(got_n_headers, 0);
  assert_null(b.data); /* the buffer's memory was taken (released after the write) */
  assert_int_equal(b.len, 0);
}

static void a_buffer_that_ran_out_of_memory_becomes_a_500(void **state) {
  (void)state;
  isv__buf b;
  isv__buf_init(&b, NULL);
  isv__buf_puts(&b, "{\"half\":[1,2,"); /* what an encoder had written when it failed */
  b.failed = 1;
  assert_int_equal(isv__reply_json(&ex, 200, &b), 0);
  assert_int_equal(n_responses, 1);
  assert_int_equal(got_status, 500);
  assert_string_equal(got_type, "application/json");
  assert_string_equal(got_body, "{\"error\":\"out of memory\"}");
  assert_null(b.data);
}

static void error_status_comes_from_the_code(void **state) {
  (void)state;
  static const struct {
    int err;
    int http;
  } cases[] = {{ISV_EINVAL, 400},   {ISV_EBADREQ, 400},    {ISV_ENOTFOUND, 404},
               {ISV_EMETHOD, 405},  {ISV_EREQTIMEOUT, 408}, {ISV_EEXIST, 409},
               {ISV_ETOOBIG, 413},  {ISV_EMEDIATYPE, 415}, {ISV_EOVERLOAD, 429},
               {ISV_EHDRTOOBIG, 431}, {ISV_ECANCELED, 499}, {ISV_ENOMEM, 500},
               {ISV_EBACKEND, 500}, {ISV_EUNIMPL, 501},    {ISV_EUNAVAIL, 503},
               {ISV_EDEADLINE, 504}, {-5, 500} /* not an ISV_E* code: the server's fault */};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    n_responses = 0;
    assert_int_equal(isv__reply_error(&ex, cases[i].err, "case %zu", i), 0);
    assert_int_equal(n_responses, 1);
    if (got_status != cases[i].http)
      fail_msg("%s answered %d, want %d", isv_err_name(cases[i].err), got_status, cases[i].http);
    assert_string_equal(got_type, "application/json");
    char want[64];
    snprintf(want, sizeof want, "{\"error\":\"case %zu\"}", i);
    assert_string_equal(got_body, want);
  }
}

static void error_message_is_formatted_and_escaped(void **state) {
  (void)state;
  isv__reply_error(&ex, ISV_ENOTFOUND, "unknown model '%s' (%d)", "a\"b\\c", 7);
  assert_int_equal(got_status, 404);
  assert_string_equal(got_body, "{\"error\":\"unknown model 'a\\\"b\\\\c' (7)\"}");
  /* control characters are escaped, valid UTF-8 is kept as it is */
  isv__reply_error(&ex, ISV_EBADREQ, "line\nnext\ttab\x01 caf\xc3\xa9 \xe2\x82\xac");
  assert_int_equal(got_status, 400);
  assert_string_equal(got_body,
                      "{\"error\":\"line\\nnext\\ttab\\u0001 caf\xc3\xa9 \xe2\x82\xac\"}");
}

static void invalid_utf8_in_a_message_is_replaced(void **state) {
  (void)state;
  /* client bytes (a model name from a path) that are not UTF-8 */
  isv__reply_error(&ex, ISV_ENOTFOUND, "unknown model '%s'", "x\xff\xfey");
  assert_int_equal(got_status, 404);
  assert_true(isv__utf8_valid(got_body, got_len));
  assert_null(strchr(got_body, '\xff'));
  assert_null(strchr(got_body, '\xfe'));
  assert_string_equal(got_body, "{\"error\":\"unknown model 'x??y'\"}");
  /* a truncated sequence, an overlong encoding and a surrogate are not UTF-8 either */
  const char *bad[] = {"cut \xe2\x82", "overlong \xc0\xaf", "surrogate \xed\xa0\x80"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    isv__reply_error(&ex, ISV_EBADREQ, "%s", bad[i]);
    assert_int_equal(got_status, 400);
    if (!isv__utf8_valid(got_body, got_len)) fail_msg("'%s' was sent as it is", bad[i]);
    assert_non_null(strstr(got_body, "{\"error\":\""));
    assert_non_null(strchr(got_body, '?'));
  }
}

static void a_long_message_is_cut_but_stays_json(void **state) {
  (void)state;
  char name[3000];
  memset(name, 'n', sizeof name - 1);
  name[sizeof name - 1] = '\0';
  isv__reply_error(&ex, ISV_ENOTFOUND, "unknown model '%s'", name);
  assert_int_equal(got_status, 404);
  assert_true(got_len > 1000 && got_len < 1100);
  assert_memory_equal(got_body, "{\"error\":\"unknown model 'nnn", 28);
  assert_memory_equal(got_body + got_len - 3, "n\"}", 3);
}

static void error_msg_passes_extra_headers(void **state) {
  (void)state;
  isv__header extra[] = {{"Allow", 5, "GET, POST", 9}, {"Retry-After", 11, "3", 1}};
  assert_int_equal(isv__reply_error_msg(&ex, 405, "use \"GET\"", extra, 2), 0);
  assert_int_equal(n_responses, 1);
  assert_int_equal(got_status, 405); /* the HTTP status as given, not a code */
  assert_string_equal(got_type, "application/json");
  assert_string_equal(got_body, "{\"error\":\"use \\\"GET\\\"\"}");
  assert_int_equal(got_n_headers, 2);
  assert_string_equal(got_header_text[0][0], "Allow");
  assert_string_equal(got_header_text[0][1], "GET, POST");
  assert_string_equal(got_header_text[1][0], "Retry-After");
  assert_string_equal(got_header_text[1][1], "3");
  assert_int_equal(isv__reply_error_msg(&ex, 503, "", NULL, 0), 0);
  assert_int_equal(got_status, 503);
  assert_int_equal(got_n_headers, 0);
  assert_string_equal(got_body, "{\"error\":\"\"}");
}

/* A core of its own, for the requests the header cases build. */
typedef struct with_core {
  uv_loop_t loop;
  isv__core core;
} with_core;

static with_core *core_new(void) {
  with_core *w = calloc(1, sizeof *w);
  assert_non_null(w);
  assert_int_equal(uv_loop_init(&w->loop), 0);
  isv_options o;
  isv__options_defaults(&o);
  assert_int_equal(isv__core_init(&w->core, &w->loop, &o), 0);
  return w;
}

static void core_free(with_core *w) {
  isv__core_close(&w->core, NULL);
  uv_run(&w->loop, UV_RUN_DEFAULT);
  assert_int_equal(uv_loop_close(&w->loop), 0);
  free(w);
}

static uint64_t u64_param(const isv_request *r, const char *key) {
  const isv_param *p = isv_request_param(r, key);
  assert_non_null(p);
  assert_int_equal(p->type, ISV_PARAM_UINT64);
  return p->v.u64;
}

static void priority_headers_become_parameters_a_request_s_own_win(void **state) {
  (void)state;
  with_core *w = core_new();
  isv__header hs[] = {{"Content-Type", 12, "application/json", 16},
                      {"INFERENCE-PRIORITY", 18, "2", 1},
                      {"inference-timeout-us", 20, "18446744073709551615", 20}};
  isv_request *r = isv__request_new(&w->core);
  assert_int_equal(isv__queue_headers(r, hs, 3), 0);
  assert_int_equal(u64_param(r, "priority"), 2); /* the name in any case */
  assert_int_equal(u64_param(r, "timeout"), UINT64_MAX);
  isv_request_free(r);
  /* a request that names its own keeps it */
  r = isv__request_new(&w->core);
  assert_int_equal(isv_request_set_priority(r, 3), 0);
  assert_int_equal(isv__queue_headers(r, hs, 3), 0);
  assert_int_equal(u64_param(r, "priority"), 3);
  assert_int_equal(u64_param(r, "timeout"), UINT64_MAX);
  isv_request_free(r);
  /* a name of the same length is not it; of two, the first counts */
  isv__header twice[] = {{"inference-priorit!", 18, "5", 1},
                         {"Inference-Priority", 18, "7", 1},
                         {"inference-priority", 18, "9", 1}};
  r = isv__request_new(&w->core);
  assert_int_equal(isv__queue_headers(r, twice, 3), 0);
  assert_int_equal(u64_param(r, "priority"), 7);
  assert_null(isv_request_param(r, "timeout"));
  isv_request_free(r);
  /* none: nothing set */
  r = isv__request_new(&w->core);
  assert_int_equal(isv__queue_headers(r, hs, 1), 0);
  assert_null(isv_request_param(r, "priority"));
  assert_int_equal(r->status, 0);
  isv_request_free(r);
  /* what is not a decimal integer — a sign, a space, nothing, past 2^64 — fails the request */
  static const char *const bad[] = {"-1", " 1", "", "1x", "18446744073709551616", "+1"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    isv__header h = {"Inference-Priority", 18, bad[i], strlen(bad[i])};
    r = isv__request_new(&w->core);
    assert_int_equal(isv__queue_headers(r, &h, 1), ISV_EBADREQ);
    assert_string_equal(r->errmsg, "header Inference-Priority must be a non-negative decimal "
                                   "integer");
    assert_null(isv_request_param(r, "priority"));
    isv_request_free(r);
  }
  core_free(w);
}

static void retry_after_is_the_core_s_estimate_or_nothing(void **state) {
  (void)state;
  with_core *w = core_new();
  isv_request *r = isv__request_new(&w->core);
  isv__header h;
  char v[16];
  assert_int_equal(isv__retry_after(r, &h, v, sizeof v), 0);
  r->retry_after_s = 3600;
  assert_int_equal(isv__retry_after(r, &h, v, sizeof v), 1);
  assert_int_equal(h.name_len, 11);
  assert_memory_equal(h.name, "Retry-After", 11);
  assert_int_equal(h.value_len, 4);
  assert_memory_equal(h.value, "3600", 4);
  isv_request_free(r);
  assert_int_equal(isv__retry_after(NULL, &h, v, sizeof v), 0);
  core_free(w);
}

static void error_body_appends_to_a_buffer(void **state) {
  (void)state;
  isv__buf b;
  isv__buf_init(&b, NULL);
  isv__buf_puts(&b, "[");
  isv__json_error_body(&b, "a \"quoted\" word");
  isv__buf_putc(&b, ',');
  isv__json_error_body(&b, "bad \x80 byte");
  isv__buf_putc(&b, ',');
  isv__json_error_body(&b, "");
  isv__buf_putc(&b, ']');
  assert_false(b.failed);
  isv__buf_putc(&b, '\0');
  assert_string_equal(b.data, "[{\"error\":\"a \\\"quoted\\\" word\"},{\"error\":\"bad ? byte\"},"
                              "{\"error\":\"\"}]");
  isv__buf_free(&b);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup(json_body_is_sent_with_its_status_and_type, setup),
      cmocka_unit_test_setup(a_buffer_that_ran_out_of_memory_becomes_a_500, setup),
      cmocka_unit_test_setup(error_status_comes_from_the_code, setup),
      cmocka_unit_test_setup(error_message_is_formatted_and_escaped, setup),
      cmocka_unit_test_setup(invalid_utf8_in_a_message_is_replaced, setup),
      cmocka_unit_test_setup(a_long_message_is_cut_but_stays_json, setup),
      cmocka_unit_test_setup(error_msg_passes_extra_headers, setup),
      cmocka_unit_test_setup(error_body_appends_to_a_buffer, setup),
      cmocka_unit_test_setup(priority_headers_become_parameters_a_request_s_own_win, setup),
      cmocka_unit_test_setup(retry_after_is_the_core_s_estimate_or_nothing, setup),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
