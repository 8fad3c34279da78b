/* transport/h1_quick.c: the quick reading of a plain HTTP/1.x request, which must give
 * llhttp's result for every message it takes. Checked two ways: named cases — the requests real
 * clients send are taken, each shape h1_quick.h declines is declined — each run side by side
 * with llhttp (fuzz/h1_quick_same.c); and a seeded sweep of requests built from good and bad
 * pieces and then cut, flipped or doubled, every one side by side with llhttp. */
#include "cmocka_prelude.h"
#include "sweep_rng.h"

#include <llhttp.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "h1_quick_same.h"
#include "transport/h1_quick.h"

/* Side by side with llhttp; whether the quick reading took the bytes. */
static int taken(const char *p, size_t n) {
  char why[400];
  int t = 0;
  if (!h1q_same(p, n, &t, why, sizeof why)) fail_msg("%s\n--\n%.*s", why, (int)n, p);
  return t;
}
#define TAKEN(lit) taken(lit, sizeof(lit) - 1)

static const char wrk[] = "POST /v2/models/simple/infer HTTP/1.1\r\nHost: 127.0.0.1:8000\r\n"
                          "Content-Type: application/json\r\nContent-Length: 5\r\n\r\n{\"a\"}";

static void test_what_clients_send_is_taken(void **state) {
  (void)state;
  isv__h1_quick q;
  size_t n = sizeof wrk - 1;
  assert_int_equal(isv__h1_quick_read(wrk, n, &q, NULL), n);
  assert_int_equal(q.method, HTTP_POST);
  assert_int_equal(q.http_minor, 1);
  assert_int_equal(q.keep_alive, 1);
  assert_int_equal(q.content_length, 5);
  assert_int_equal(q.n_fields, 3);
  assert_int_equal(q.head_len, n - 5);
  assert_memory_equal(wrk + q.url_off, "/v2/models/simple/infer", q.url_len);
  assert_memory_equal(wrk + q.fields[1].value_off, "application/json", q.fields[1].value_len);
  assert_int_equal(q.text_len, 23 + 4 + 14 + 12 + 16 + 14 + 1);
  assert_true(taken(wrk, n));
  /* curl, python-requests, tritonclient (geventhttpclient), a browser-ish GET */
  assert_true(TAKEN("GET /v2/health/ready HTTP/1.1\r\nHost: localhost:8000\r\nUser-Agent: "
                    "curl/7.88.1\r\nAccept: */*\r\n\r\n"));
  assert_true(TAKEN("POST /v2/models/simple/infer HTTP/1.1\r\nHost: localhost:8000\r\nUser-Agent: "
                    "python-requests/2.28.1\r\nAccept-Encoding: gzip, deflate\r\nAccept: */*\r\n"
                    "Connection-Timeout: 5\r\nContent-Length: 2\r\nContent-Type: "
                    "application/json\r\n\r\n{}"));
  assert_true(TAKEN("POST /v2/models/simple/infer HTTP/1.1\r\nInference-Header-Content-Length: "
                    "0\r\nContent-Length: 0\r\nhost: localhost:8000\r\nuser-agent: "
                    "python/gevent-http-client-1.5.5\r\n\r\n"));
  assert_true(TAKEN("GET /v2/models/simple?x=1&y=%20 HTTP/1.1\r\nHost: h\r\nAccept: text/html,"
                    "application/xhtml+xml;q=0.9\r\nX-Tab: a\tb\r\n\r\n"));
  /* HTTP/1.0: taken, and not kept alive (no Connection field here) */
  assert_int_equal(isv__h1_quick_read("GET / HTTP/1.0\r\n\r\n", 18, &q, NULL), 18);
  assert_int_equal(q.keep_alive, 0);
  assert_true(TAKEN("GET / HTTP/1.0\r\n\r\n"));
  /* the value's leading whitespace is not its own; a number with leading zeros */
  assert_true(TAKEN("PUT /a HTTP/1.1\r\nHost:  \t h\r\nContent-Length: 003\r\n\r\nabc"));
  assert_true(TAKEN("DELETE /a HTTP/1.1\r\nHost: h\r\n\r\n"));
  assert_true(TAKEN("HEAD /a HTTP/1.1\r\nHost: h\r\n\r\n"));
  assert_true(TAKEN("OPTIONS /a HTTP/1.1\r\nHost: h\r\n\r\n"));
  assert_true(TAKEN("GET /a HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n"));
}

static void test_pipelined_messages_one_at_a_time(void **state) {
  (void)state;
  char two[2 * sizeof wrk];
  size_t n = sizeof wrk - 1;
  memcpy(two, wrk, n);
  memcpy(two + n, wrk, n);
  isv__h1_quick q;
  assert_int_equal(isv__h1_quick_read(two, 2 * n, &q, NULL), n); /* the first message's length */
  assert_true(taken(two, 2 * n));
  assert_true(taken(two + n, n));
}

/* A head read again — the same bytes as the last head taken through a memo, which h1_quick.c
 * then takes from what it gave instead of reading them — reads as llhttp reads it and as it
 * read the first time, whatever follows it: the whole body, part of it, none, a second message,
 * a longer or a shorter one; and a head that differs from it in one byte, or ends early, is
 * read, not taken from it. */
static void test_a_head_read_again_reads_the_same(void **state) {
  (void)state;
  const size_t n = sizeof wrk - 1, head = n - 5;
  static char b[2 * sizeof wrk];
  isv__h1_quick first, again;
  memset(&first, 0, sizeof first);
  memset(&again, 0, sizeof again);
  assert_int_equal(isv__h1_quick_read(wrk, n, &first, h1q_memo()), n);
  assert_int_equal(isv__h1_quick_read(wrk, n, &again, h1q_memo()), n);
  assert_memory_equal(&first, &again, offsetof(isv__h1_quick, fields) + 3 * sizeof first.fields[0]);
  for (size_t cut = 0; cut <= n; cut++) { /* every length, after the whole message each time */
    assert_true(taken(wrk, n));
    assert_int_equal(taken(wrk, cut), cut == n);
  }
  memcpy(b, wrk, n);
  memcpy(b + n, wrk, n);
  assert_true(taken(wrk, n));
  /* pipelined: the first message */
  assert_int_equal(isv__h1_quick_read(b, 2 * n, &again, h1q_memo()), n);
  assert_true(taken(b, 2 * n));
  memcpy(b, wrk, n);
  b[head - 5] = '6'; /* "Content-Length: 6": one byte of the head differs, the body is short */
  assert_true(taken(wrk, n));
  assert_int_equal(taken(b, n), 0);
  b[n] = '}';
  assert_true(taken(wrk, n));
  assert_int_equal(isv__h1_quick_read(b, n + 1, &again, h1q_memo()), n + 1);
  assert_int_equal(again.content_length, 6);
  assert_true(taken(b, n + 1));
  memcpy(b, wrk, n);
  b[25] = 'X'; /* the target differs, same length */
  assert_true(taken(wrk, n));
  assert_int_equal(isv__h1_quick_read(b, n, &again, h1q_memo()), n);
  assert_memory_equal(b + again.url_off, "/v2/models/simple/inXer", again.url_len);
  memcpy(b, wrk, n);
  b[head - 2] = 'x'; /* the blank line broken: no longer a head */
  assert_true(taken(wrk, n));
  assert_int_equal(taken(b, n), 0);
}

/* A head with credentials is taken as any other, and never kept: a server's memo is shared by
 * every client, and a head taken faster must not tell one client another's secret. */
static void test_a_head_with_credentials_is_never_remembered(void **state) {
  (void)state;
  static const char *const with[] = {
      "POST /v2/models/simple/infer HTTP/1.1\r\nHost: h\r\nAuthorization: Bearer s3cr3t\r\n"
      "Content-Length: 2\r\n\r\n{}",
      "GET /v2/health/ready HTTP/1.1\r\nHost: h\r\nCookie: session=s3cr3t\r\n\r\n",
      "GET /v2/health/ready HTTP/1.1\r\nHost: h\r\nPROXY-AUTHORIZATION: Basic czNjcjN0\r\n\r\n",
      "GET / HTTP/1.1\r\nauthorization: x\r\nHost: h\r\n\r\n",
      "GET / HTTP/1.1\r\nHost: h\r\nX-API-Key: s3cr3t\r\n\r\n",
      "GET / HTTP/1.1\r\nHost: h\r\napi-key: s3cr3t\r\n\r\n",
      "GET / HTTP/1.1\r\nHost: h\r\nX-Auth-Token: s3cr3t\r\n\r\n",
  };
  static const char plain[] = "GET /v2/health/ready HTTP/1.1\r\nHost: h\r\nX-Cookie: a\r\n"
                              "Authorizations: b\r\nApi-Keys: c\r\nX-Auth: d\r\n\r\n";
  isv__h1_quick q;
  for (size_t i = 0; i < sizeof with / sizeof with[0]; i++) {
    size_t n = strlen(with[i]), head = (size_t)(strstr(with[i], "\r\n\r\n") + 4 - with[i]);
    assert_true(taken(plain, sizeof plain - 1));
    /* look-alike names: kept */
    assert_true(isv__h1_quick_remembers(h1q_memo(), plain, sizeof plain - 1));
    for (int twice = 0; twice < 2; twice++) {
      assert_int_equal(isv__h1_quick_read(with[i], n, &q, h1q_memo()), n);
      assert_int_equal(q.credentials, 1);
      assert_true(taken(with[i], n));
      assert_false(isv__h1_quick_remembers(h1q_memo(), with[i], head));
    }
    /* still the one before */
    assert_true(isv__h1_quick_remembers(h1q_memo(), plain, sizeof plain - 1));
  }
}

static void test_other_shapes_are_declined(void **state) {
  (void)state;
  static const char *const declined[] = {
      "get / HTTP/1.1\r\nHost: h\r\n\r\n",           /* a method's case */
      "PATCH / HTTP/1.1\r\nHost: h\r\n\r\n",         /* another method */
      "GET  / HTTP/1.1\r\nHost: h\r\n\r\n",          /* two spaces */
      "GET http://h/ HTTP/1.1\r\nHost: h\r\n\r\n",   /* absolute form */
      "OPTIONS * HTTP/1.1\r\nHost: h\r\n\r\n",       /* asterisk form */
      "GET /a#f HTTP/1.1\r\nHost: h\r\n\r\n",        /* a fragment */
      "GET /\xc3\xa9 HTTP/1.1\r\nHost: h\r\n\r\n",   /* a high byte in the target */
      "GET / HTTP/2.0\r\nHost: h\r\n\r\n",           /* another version */
      "GET / HTTP/1.1\nHost: h\r\n\r\n",             /* a bare LF */
      "GET / HTTP/1.1\r\nHost : h\r\n\r\n",          /* space before the colon */
      "GET / HTTP/1.1\r\nHost: h\r\n x\r\n\r\n",     /* obs-fold */
      "GET / HTTP/1.1\r\nHost: h\r\nX:\r\n\r\n",     /* an empty value */
      "GET / HTTP/1.1\r\nHost: h\r\nX:  \r\n\r\n",   /* only whitespace */
      "GET / HTTP/1.1\r\nHost: h \r\n\r\n",          /* trailing whitespace */
      "GET / HTTP/1.1\r\nHost: h\r\nX: caf\xc3\xa9\r\n\r\n", /* obs-text */
      "GET / HTTP/1.1\r\nHost: h\r\nX: a\x7f\r\n\r\n",       /* DEL */
      "GET / HTTP/1.1\r\nHost: h\r\nX: a\rb\r\n\r\n",        /* a lone CR */
      "GET / HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n",
      "GET / HTTP/1.0\r\nHost: h\r\nConnection: keep-alive\r\n\r\n",
      "GET / HTTP/1.1\r\nHost: h\r\nProxy-Connection: close\r\n\r\n",
      "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
      "GET / HTTP/1.1\r\nHost: h\r\nUpgrade: h2c\r\n\r\n",
      "POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\nx",
      "POST / HTTP/1.1\r\nContent-Length: +1\r\n\r\nx",
      "POST / HTTP/1.1\r\nContent-Length: 1 2\r\n\r\nx",
      "POST / HTTP/1.1\r\nContent-Length: 1234567890123456\r\n\r\nx",
      "POST / HTTP/1.1\r\nContent-Length: 5\r\n\r\nabcd", /* the body not all there */
      "GET / HTTP/1.1\r\nHost: h\r\n\r",                 /* the head not all there */
      "\r\nGET / HTTP/1.1\r\nHost: h\r\n\r\n",           /* a blank line first */
  };
  for (size_t i = 0; i < sizeof declined / sizeof *declined; i++)
    if (taken(declined[i], strlen(declined[i]))) fail_msg("taken: %s", declined[i]);
  /* a body over ISV__H1_QUICK_BODY_MAX, all there */
  static char big[ISV__H1_QUICK_BODY_MAX + 128];
  int k = snprintf(big, sizeof big, "POST / HTTP/1.1\r\nContent-Length: %u\r\n\r\n",
                   ISV__H1_QUICK_BODY_MAX + 1);
  memset(big + k, 'x', ISV__H1_QUICK_BODY_MAX + 1);
  assert_false(taken(big, (size_t)k + ISV__H1_QUICK_BODY_MAX + 1));
  /* one field more than ISV__H1_QUICK_FIELDS */
  char many[2048];
  size_t n = (size_t)snprintf(many, sizeof many, "GET / HTTP/1.1\r\n");
  for (int i = 0; i <= ISV__H1_QUICK_FIELDS; i++) n += (size_t)snprintf(many + n, sizeof many - n, "X-%d: v\r\n", i);
  n += (size_t)snprintf(many + n, sizeof many - n, "\r\n");
  assert_false(taken(many, n));
}

/* ---- side by side with llhttp ------------------------------------------------------------- */


static const char *const methods[] = {"GET", "POST", "PUT", "DELETE", "HEAD", "OPTIONS", "PATCH",
                                      "get", "CONNECT", "POSTX", "", "G"};
static const char *const targets[] = {"/", "/v2/models/simple/infer", "/a?b=c&d", "/%41%zz",
                                      "/a b", "/a#b", "*", "http://h/x", "/\"<>\\^`{|}",
                                      "/!$&'()*+,;=:@~", "/\xe9", "/\t", ""};
static const char *const versions[] = {"HTTP/1.1", "HTTP/1.0", "HTTP/1.2", "HTTP/2.0", "HTTP/1.",
                                       "http/1.1", "HTTP/11", "HTTP/0.9"};
static const char *const names[] = {"Host", "host", "HOST", "Content-Type", "Content-Length",
                                    "content-length", "CONTENT-LENGTH", "Connection",
                                    "Proxy-Connection", "Transfer-Encoding", "Upgrade", "Expect",
                                    "Keep-Alive", "X-a", "!#$%&'*+-.^_`|~09", "x y", "x\x7f",
                                    "x\xe9", "", "Content-Lengt", "Content-Lengthh", "Te"};
static const char *const values[] = {"h", "localhost:8000", "application/json", "0", "5", "12",
                                     "007", "-1", "+5", "5 ", " 5", "1,1", "99999999999999999",
                                     "close", "keep-alive", "chunked", "h2c", "100-continue",
                                     "a\tb", "\tx", "x\t", "caf\xc3\xa9", "a\x7f", "a\rb", "a\nb",
                                     "a\x01", "", " ", "long value, with spaces; q=0.5"};
static const char *const seps[] = {": ", ":", ":\t", ":  ", " : ", ":\t \t"};
static const char *const eols[] = {"\r\n", "\r\n", "\r\n", "\r\n", "\n", "\r", "\r\r\n"};

#define ARR(a) a[pick(sizeof a / sizeof *a)]

static size_t put(char *b, size_t at, size_t cap, const char *s) {
  size_t n = strlen(s);
  if (at + n > cap) return at;
  memcpy(b + at, s, n);
  return at + n;
}

/* One request: mostly good pieces, some bad, then perhaps cut, flipped or followed. */
static size_t random_request(char *b, size_t cap) {
  size_t at = 0;
  int good = pick(3) != 0;
  at = put(b, at, cap, good ? methods[pick(6)] : ARR(methods));
  at = put(b, at, cap, pick(12) ? " " : "  ");
  at = put(b, at, cap, good ? targets[pick(4)] : ARR(targets));
  at = put(b, at, cap, " ");
  at = put(b, at, cap, good ? versions[pick(2)] : ARR(versions));
  at = put(b, at, cap, good ? "\r\n" : ARR(eols));
  size_t body = pick(4) ? pick(24) : 0;
  char cl[24];
  snprintf(cl, sizeof cl, "%zu", body + (pick(6) == 0) - (body && pick(8) == 0));
  int cl_at = (int)pick(5) - 1; /* which field is a Content-Length for the body (-1: none) */
  size_t n_fields = pick(6);
  for (size_t i = 0; i < n_fields; i++) {
    if ((int)i == cl_at) {
      at = put(b, at, cap, pick(2) ? "Content-Length" : "content-length");
      at = put(b, at, cap, pick(8) ? ": " : ARR(seps));
      at = put(b, at, cap, cl);
    } else {
      at = put(b, at, cap, good && pick(2) ? names[pick(4)] : ARR(names));
      at = put(b, at, cap, good ? ": " : ARR(seps));
      at = put(b, at, cap, good ? values[pick(4)] : ARR(values));
    }
    at = put(b, at, cap, good || pick(3) ? "\r\n" : ARR(eols));
    if (pick(30) == 0) at = put(b, at, cap, " folded\r\n");
  }
  at = put(b, at, cap, good || pick(3) ? "\r\n" : ARR(eols));
  for (size_t i = 0; i < body && at < cap; i++) b[at++] = (char)('a' + pick(26));
  switch (pick(8)) {
  case 0: /* cut short */
    if (at) at = pick(at);
    break;
  case 1: /* one byte flipped */
    if (at) b[pick(at)] = (char)pick(256);
    break;
  case 2: /* a second request behind it */
    at = put(b, at, cap, "GET / HTTP/1.1\r\nHost: h\r\n\r\n");
    break;
  default: break;
  }
  return at;
}

static void test_side_by_side_with_llhttp(void **state) {
  (void)state;
  enum { ROUNDS = 50000 };
  static char b[4096];
  char why[400];
  unsigned took = 0, declined = 0;
  for (unsigned round = 0; round < ROUNDS; round++) {
    size_t n = random_request(b, sizeof b);
    int t;
    if (!h1q_same(b, n, &t, why, sizeof why)) fail_msg("round %u: %s\n--\n%.*s", round, why, (int)n, b);
    t ? took++ : declined++;
    int again; /* a head just taken is now remembered: read again, it must read the same */
    if (!h1q_same(b, n, &again, why, sizeof why) || again != t)
      fail_msg("round %u, read again: %s\n--\n%.*s", round, why, (int)n, b);
  }
  /* both outcomes often: a sweep that never took (or never declined) proves little */
  assert_true(took > ROUNDS / 10);
  assert_true(declined > ROUNDS / 10);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_what_clients_send_is_taken),
      cmocka_unit_test(test_pipelined_messages_one_at_a_time),
      cmocka_unit_test(test_a_head_read_again_reads_the_same),
      cmocka_unit_test(test_a_head_with_credentials_is_never_remembered),
      cmocka_unit_test(test_other_shapes_are_declined),
      cmocka_unit_test(test_side_by_side_with_llhttp),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
