/* transport/exchange.c: the helpers both HTTP engines share — the case-insensitive header
 * lookup (exact length: header names are not NUL-terminated), method names to isv__method,
 * the reason phrase of every status the library answers with, and the streamed-answer and
 * cancellation rules every carrier relies on (a fake carrier here; the real ones are in
 * test_http1 and test_http2). */
#include "cmocka_prelude.h"

#include <stdlib.h>
#include <string.h>

#include "inferserve.h"
#include "transport/exchange.h"

/* Header names and values point into one text, as the engines build them: nothing after a
 * name is a NUL. */
static const char text[] = "Content-TypeapplicationX-AbcdefX-A1x-ab2HOSTexample.orgx-a3";

static isv__header hdr(size_t no, size_t nl, size_t vo, size_t vl) {
  return (isv__header){text + no, nl, text + vo, vl};
}

static isv__exchange with_headers(isv__header *hs, size_t n) {
  isv__exchange ex;
  memset(&ex, 0, sizeof ex);
  ex.headers = hs;
  ex.n_headers = n;
  return ex;
}

static void headers_are_found_whatever_their_case(void **state) {
  (void)state;
  isv__header hs[] = {
      hdr(0, 12, 12, 11),  /* Content-Type: application */
      hdr(23, 6, 29, 0),   /* X-Abcd: "" (the "ef" after it is not part of the name) */
      hdr(31, 3, 34, 1),   /* X-A: 1 */
      hdr(35, 4, 39, 1),   /* x-ab: 2 */
      hdr(40, 4, 44, 11),  /* HOST: example.org */
      hdr(55, 3, 58, 1),   /* x-a: 3 (a second X-A) */
  };
  isv__exchange ex = with_headers(hs, 6);
  const char *names[] = {"content-type", "CONTENT-TYPE", "Content-Type", "cOnTeNt-TyPe"};
  for (size_t i = 0; i < 4; i++) {
    const isv__header *h = isv__exchange_header_n(&ex, names[i], strlen(names[i]));
    assert_ptr_equal(h, &hs[0]);
    assert_int_equal(h->value_len, 11);
    assert_memory_equal(h->value, "application", 11);
  }
  assert_ptr_equal(isv__exchange_header(&ex, "host"), &hs[4]);
  assert_ptr_equal(isv__exchange_header(&ex, "Host"), &hs[4]);
  assert_ptr_equal(isv__exchange_header(&ex, "x-abcd"), &hs[1]);
  assert_int_equal(isv__exchange_header(&ex, "x-abcd")->value_len, 0);
}

static void header_names_must_match_their_whole_length(void **state) {
  (void)state;
  isv__header hs[] = {
      hdr(0, 12, 12, 11),  /* Content-Type */
      hdr(23, 6, 29, 0),   /* X-Abcd */
      hdr(31, 3, 34, 1),   /* X-A */
      hdr(35, 4, 39, 1),   /* x-ab */
  };
  isv__exchange ex = with_headers(hs, 4);
  /* neither a prefix nor an extension of a name matches it */
  assert_null(isv__exchange_header(&ex, "content-typ"));
  assert_null(isv__exchange_header(&ex, "content-type2"));
  assert_null(isv__exchange_header(&ex, "content-typeapplication"));
  assert_null(isv__exchange_header(&ex, "x-abcdef")); /* the bytes after X-Abcd in the text */
  assert_null(isv__exchange_header(&ex, "x-abc"));
  assert_null(isv__exchange_header(&ex, "x"));
  assert_null(isv__exchange_header(&ex, ""));
  assert_null(isv__exchange_header(&ex, "accept"));
  /* X-A and x-ab are told apart by length */
  assert_ptr_equal(isv__exchange_header(&ex, "x-a"), &hs[2]);
  assert_ptr_equal(isv__exchange_header(&ex, "X-AB"), &hs[3]);
}

static void the_first_of_repeated_headers_is_found(void **state) {
  (void)state;
  isv__header hs[] = {hdr(31, 3, 34, 1), hdr(55, 3, 58, 1)}; /* X-A: 1, x-a: 3 */
  isv__exchange ex = with_headers(hs, 2);
  const isv__header *h = isv__exchange_header(&ex, "x-a");
  assert_ptr_equal(h, &hs[0]);
  assert_memory_equal(h->value, "1", 1);
}

/* isv__header_one: the header when there is exactly one of its name (any case), else NULL —
 * and the access log's trace id follows it (two traceparents: none). */
static void one_header_or_none(void **state) {
  (void)state;
  isv__header hs[] = {hdr(31, 3, 34, 1), hdr(55, 3, 58, 1)}; /* X-A: 1, x-a: 3 */
  assert_null(isv__header_one(hs, 2, "x-a", 3));
  assert_ptr_equal(isv__header_one(hs, 1, "X-a", 3), &hs[0]);
  assert_null(isv__header_one(hs, 2, "x-b", 3));
  assert_null(isv__header_one(NULL, 0, "x-a", 3));
  static const char tp[] = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
  isv__header t[2] = {{"traceparent", 11, tp, sizeof tp - 1}, {"Traceparent", 11, tp, sizeof tp - 1}};
  char out[33];
  assert_string_equal(isv__access_trace_id(t, 1, out), "4bf92f3577b34da6a3ce929d0e0e4736");
  assert_string_equal(isv__access_trace_id(t, 2, out), "");
}

static void no_headers_find_nothing(void **state) {
  (void)state;
  isv__exchange ex = with_headers(NULL, 0);
  assert_null(isv__exchange_header(&ex, "host"));
  assert_null(isv__exchange_header(&ex, ""));
}

static void method_names_map_to_methods(void **state) {
  (void)state;
  assert_int_equal(isv__method_of("GET"), ISV__M_GET);
  assert_int_equal(isv__method_of("HEAD"), ISV__M_HEAD);
  assert_int_equal(isv__method_of("POST"), ISV__M_POST);
  assert_int_equal(isv__method_of("PUT"), ISV__M_PUT);
  assert_int_equal(isv__method_of("DELETE"), ISV__M_DELETE);
  assert_int_equal(isv__method_of("OPTIONS"), ISV__M_OPTIONS);
  /* methods are case-sensitive (RFC 9110 §9.1); the rest is OTHER */
  static const char *other[] = {"get", "Post", "PATCH", "CONNECT", "TRACE", "PRI", "",
                                "GETS", "GE",  "POST ", " GET", "DELETE\n"};
  for (size_t i = 0; i < sizeof other / sizeof other[0]; i++)
    if (isv__method_of(other[i]) != ISV__M_OTHER) fail_msg("'%s' is not OTHER", other[i]);
}

static void every_status_the_library_answers_has_its_reason(void **state) {
  (void)state;
  static const struct {
    int status;
    const char *reason;
  } known[] = {
      {100, "Continue"},
      {200, "OK"},
      {204, "No Content"},
      {400, "Bad Request"},
      {404, "Not Found"},
      {405, "Method Not Allowed"},
      {401, "Unauthorized"},
      {403, "Forbidden"},
      {408, "Request Timeout"},
      {409, "Conflict"},
      {411, "Length Required"},
      {413, "Payload Too Large"},
      {415, "Unsupported Media Type"},
      {429, "Too Many Requests"},
      {431, "Request Header Fields Too Large"},
      {499, "Client Closed Request"},
      {500, "Internal Server Error"},
      {501, "Not Implemented"},
      {503, "Service Unavailable"},
      {504, "Gateway Timeout"},
      {505, "HTTP Version Not Supported"},
  };
  for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
    assert_string_equal(isv__http_reason(known[i].status), known[i].reason);
}

static void other_statuses_are_unknown(void **state) {
  (void)state;
  static const int other[] = {0, -1, 1, 99, 101, 201, 301, 302, 402, 407, 502, 599, 600, 999};
  for (size_t i = 0; i < sizeof other / sizeof other[0]; i++)
    assert_string_equal(isv__http_reason(other[i]), "Unknown");
}

/* ---- a fake carrier: counts what reaches it -------------------------------------------- */

static int responds, writes, ends, cancels, releases;

static int fake_respond(isv__exchange *ex, const isv__response *r) {
  responds++;
  ex->phase = r->more ? ISV__EX_STREAMING : ISV__EX_DONE;
  return 0;
}
static int fake_write(isv__exchange *ex, const uv_buf_t *parts, size_t n, void (*release)(void *),
                      void *ctx) {
  (void)ex;
  (void)parts;
  (void)n;
  writes++;
  if (release) release(ctx);
  return 0;
}
static int fake_end(isv__exchange *ex) {
  ends++;
  ex->phase = ISV__EX_DONE;
  return 0;
}
static void count_release(void *ctx) {
  (void)ctx;
  releases++;
}
static void count_cancel(isv__exchange *ex) {
  (void)ex;
  cancels++;
}

static isv__exchange fake(int can_stream) {
  isv__exchange ex;
  memset(&ex, 0, sizeof ex);
  responds = writes = ends = cancels = releases = 0;
  ex.respond = fake_respond;
  if (can_stream) {
    ex.write = fake_write;
    ex.end = fake_end;
  }
  ex.on_cancel = count_cancel;
  return ex;
}

static void a_carrier_that_cannot_stream_refuses_more(void **state) {
  (void)state;
  isv__exchange ex = fake(0);
  isv__response r = {.status = 200, .more = 1};
  assert_int_equal(isv__exchange_respond(&ex, &r), ISV_EUNIMPL);
  assert_int_equal(responds, 0);
  assert_int_equal(ex.phase, ISV__EX_PENDING); /* still to answer, whole */
  r.more = 0;
  assert_int_equal(isv__exchange_respond(&ex, &r), 0);
  assert_int_equal(responds, 1);
}

static void writes_and_the_end_need_a_streaming_answer(void **state) {
  (void)state;
  isv__exchange ex = fake(1);
  uv_buf_t b = uv_buf_init("x", 1);
  /* before the answer began: refused, the piece released all the same */
  assert_int_equal(isv__exchange_write(&ex, &b, 1, count_release, NULL), ISV_ESTATE);
  assert_int_equal(releases, 1);
  assert_int_equal(isv__exchange_end(&ex), ISV_ESTATE);
  assert_int_equal(writes + ends, 0);
  isv__response r = {.status = 200, .more = 1};
  assert_int_equal(isv__exchange_respond(&ex, &r), 0);
  assert_int_equal(isv__exchange_write(&ex, &b, 1, count_release, NULL), 0);
  assert_int_equal(writes, 1);
  assert_int_equal(releases, 2);
  assert_int_equal(isv__exchange_end(&ex), 0);
  assert_int_equal(ends, 1);
  /* ended: nothing more reaches the carrier */
  assert_int_equal(isv__exchange_write(&ex, &b, 1, count_release, NULL), ISV_ESTATE);
  assert_int_equal(releases, 3);
  assert_int_equal(isv__exchange_end(&ex), ISV_ESTATE);
  assert_int_equal(writes, 1);
  assert_int_equal(ends, 1);
}

static void cancel_runs_once_and_never_after_the_end(void **state) {
  (void)state;
  isv__exchange ex = fake(1);
  isv__exchange_cancel(&ex); /* pending */
  isv__exchange_cancel(&ex);
  assert_int_equal(cancels, 1);
  assert_true(ex.cancelled);

  ex = fake(1);
  isv__response r = {.status = 200, .more = 1};
  isv__exchange_respond(&ex, &r);
  isv__exchange_cancel(&ex); /* streaming */
  assert_int_equal(cancels, 1);

  ex = fake(1);
  isv__exchange_respond(&ex, &r);
  isv__exchange_end(&ex);
  isv__exchange_cancel(&ex); /* ended */
  assert_int_equal(cancels, 0);
  assert_false(ex.cancelled);

  ex = fake(1);
  r.more = 0;
  isv__exchange_respond(&ex, &r);
  isv__exchange_cancel(&ex); /* answered whole */
  assert_int_equal(cancels, 0);

  ex = fake(1);
  ex.on_cancel = NULL; /* the handler did not ask: marked all the same */
  isv__exchange_cancel(&ex);
  assert_true(ex.cancelled);
}

static isv_access_entry logged;
static int n_logged;
static char logged_path[64];
static void record_access(void *app, const isv_access_entry *e) {
  assert_ptr_equal(app, &n_logged);
  logged = *e;
  strncpy(logged_path, e->path, sizeof logged_path - 1); /* valid during the call only */
  n_logged++;
}

/* The access log: the carrier starts it; the answer's status and every body byte the handler
 * gave (whole or streamed) are logged once, when the exchange is freed; an exchange never
 * answered is not. */
static void an_answered_exchange_is_logged_when_freed(void **state) {
  (void)state;
  n_logged = 0;
  isv__exchange *ex = isv__calloc(NULL, 1, sizeof *ex);
  *ex = fake(1);
  ex->method_name = "POST";
  ex->path = isv__strdup(NULL, "/v2/models/m/infer");
  ex->storage = ex->path;
  ex->body_len = 42;
  isv__exchange_start_access(ex, record_access, &n_logged, "h2c");
  uv_buf_t parts[] = {uv_buf_init("abc", 3), uv_buf_init("de", 2)};
  isv__response r = {.status = 201, .parts = parts, .n_parts = 2, .more = 1};
  assert_int_equal(isv__exchange_respond(ex, &r), 0);
  assert_int_equal(isv__exchange_write(ex, parts, 1, NULL, NULL), 0);
  assert_int_equal(isv__exchange_end(ex), 0);
  assert_int_equal(n_logged, 0);
  isv__exchange_free(ex);
  assert_int_equal(n_logged, 1);
  assert_int_equal(logged.struct_size, sizeof logged);
  assert_string_equal(logged.protocol, "h2c");
  assert_string_equal(logged.method, "POST");
  assert_string_equal(logged_path, "/v2/models/m/infer");
  assert_int_equal(logged.status, 201);
  assert_int_equal(logged.bytes_in, 42);
  assert_int_equal(logged.bytes_out, 8);

  ex = isv__calloc(NULL, 1, sizeof *ex);
  *ex = fake(0);
  isv__exchange_start_access(ex, record_access, &n_logged, "http/1.1");
  isv__exchange_free(ex); /* never answered (dropped before its handler ran) */
  assert_int_equal(n_logged, 1);
  ex = isv__calloc(NULL, 1, sizeof *ex);
  *ex = fake(0);
  isv__exchange_start_access(ex, NULL, NULL, "http/1.1"); /* no access log: nothing kept */
  assert_null(ex->access);
  isv__response whole = {.status = 200};
  isv__exchange_respond(ex, &whole);
  isv__exchange_free(ex);
  assert_int_equal(n_logged, 1);
}

static void an_exchange_is_collected_only_when_nothing_holds_it(void **state) {
  (void)state;
  isv__exchange *ex = isv__calloc(NULL, 1, sizeof *ex);
  assert_non_null(ex);
  int anchor;
  ex->phase = ISV__EX_STREAMING; /* the handler holds it */
  assert_int_equal(isv__exchange_collect(ex), 0);
  ex->phase = ISV__EX_DONE;
  ex->conn = &anchor; /* its carrier does */
  assert_int_equal(isv__exchange_collect(ex), 0);
  ex->conn = NULL;
  ex->refs = 1; /* a write points into it */
  assert_int_equal(isv__exchange_collect(ex), 0);
  ex->refs = 0;
  assert_int_equal(isv__exchange_collect(ex), 1); /* freed (ASan: no leak) */
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(headers_are_found_whatever_their_case),
      cmocka_unit_test(an_answered_exchange_is_logged_when_freed),
      cmocka_unit_test(header_names_must_match_their_whole_length),
      cmocka_unit_test(the_first_of_repeated_headers_is_found),
      cmocka_unit_test(no_headers_find_nothing),
      cmocka_unit_test(one_header_or_none),
      cmocka_unit_test(method_names_map_to_methods),
      cmocka_unit_test(every_status_the_library_answers_has_its_reason),
      cmocka_unit_test(other_statuses_are_unknown),
      cmocka_unit_test(a_carrier_that_cannot_stream_refuses_more),
      cmocka_unit_test(writes_and_the_end_need_a_streaming_answer),
      cmocka_unit_test(cancel_runs_once_and_never_after_the_end),
      cmocka_unit_test(an_exchange_is_collected_only_when_nothing_holds_it),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
