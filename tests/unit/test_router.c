/* protocol/router.c: routes as data — patterns, captures, 404/405/400, error shapes by front
 * end, and routes added and removed at run time. Exchanges are built by hand; their respond
 * function records the answer. */
#include "cmocka_prelude.h"

#include <stdio.h>
#include <string.h>

#include "protocol/frontend.h"
#include "core/lifecycle.h"

static uv_loop_t loop;
static isv__core core;
static isv__router router;

/* ---- a fake exchange --------------------------------------------------------------------- */

static int got_status;
static char got_body[512];
static char got_allow[64];
static char got_shape[16]; /* which error formatter answered */
static char got_handler[64];
static char got_caps[256];

static int fake_respond(isv__exchange *ex, const isv__response *r) {
  (void)ex;
  got_status = r->status;
  size_t n = 0;
  for (size_t i = 0; i < r->n_parts && n < sizeof got_body - 1; i++) {
    size_t k = r->parts[i].len < sizeof got_body - 1 - n ? r->parts[i].len : sizeof got_body - 1 - n;
    memcpy(got_body + n, r->parts[i].base, k);
    n += k;
  }
  got_body[n] = '\0';
  got_allow[0] = '\0';
  for (size_t i = 0; i < r->n_headers; i++)
    if (r->headers[i].name_len == 5 && memcmp(r->headers[i].name, "Allow", 5) == 0)
      snprintf(got_allow, sizeof got_allow, "%.*s", (int)r->headers[i].value_len, r->headers[i].value);
  if (r->release) r->release(r->release_ctx);
  return 0;
}

static void route(isv__method method, const char *method_name, const char *path) {
  static char copy[1024];
  snprintf(copy, sizeof copy, "%s", path);
  isv__exchange ex = {0};
  ex.method = method;
  ex.method_name = method_name;
  ex.path = copy;
  ex.path_len = strlen(copy);
  ex.query = copy + ex.path_len;
  ex.respond = fake_respond;
  got_status = 0;
  got_body[0] = got_shape[0] = got_handler[0] = got_caps[0] = '\0';
  isv__router_dispatch(&router, &ex);
  assert_string_equal(ex.path, path); /* the path is left as it came */
}

/* ---- front ends -------------------------------------------------------------------------- */

static void handler(isv__http_req *q) {
  snprintf(got_handler, sizeof got_handler, "%s", (const char *)q->data);
  size_t n = 0;
  for (size_t i = 0; i < q->n_caps; i++)
    n += (size_t)snprintf(got_caps + n, sizeof got_caps - n, "%s%s=[%.*s]", i ? " " : "",
                          q->cap_name[i], (int)q->cap_len[i], q->cap[i]);
  size_t len;
  const char *m = isv__http_capture(q, "model", &len);
  if (m) assert_int_equal(strlen(m), len); /* NUL-terminated at its end */
  assert_null(isv__http_capture(q, "no such capture", &len));
  assert_int_equal(len, 0);
  isv__response r = {.status = 200};
  q->ex->respond(q->ex, &r);
}

static void shape_a(isv__exchange *ex, int status, const char *msg, const isv__header *extra,
                    size_t n_extra) {
  strcpy(got_shape, "A");
  char body[300];
  snprintf(body, sizeof body, "A:%s", msg);
  uv_buf_t part = uv_buf_init(body, (unsigned)strlen(body));
  isv__response r = {.status = status, .headers = extra, .n_headers = n_extra, .parts = &part, .n_parts = 1};
  ex->respond(ex, &r);
}

static const isv__http_route a_routes[] = {
    {ISV__ROUTE_GET, "/a", handler, "a-root"},
    {ISV__ROUTE_GET, "/a/models/{model}", handler, "a-model"},
    {ISV__ROUTE_GET, "/a/models/{model}/versions/{version}", handler, "a-version"},
    {ISV__ROUTE_POST, "/a/models/{model}:predict", handler, "a-predict"},
    {ISV__ROUTE_POST | ISV__ROUTE_PUT, "/a/models/{model}:classify", handler, "a-classify"},
    {ISV__ROUTE_ANY, "/a/files/{*rest}", handler, "a-files"},
    {0},
};
static const isv__frontend fe_a = {.name = "a", .path_prefix = "/a", .routes = a_routes,
                                   .http_error = shape_a, .http_label = "a_http"};

static const isv__http_route b_routes[] = {
    {ISV__ROUTE_GET, "/", handler, "b-root"},
    {ISV__ROUTE_DELETE, "/a/models/{model}", handler, "b-delete"}, /* same path, other method */
    {0},
};
static const isv__frontend fe_b = {.name = "b", .routes = b_routes};

static int setup(void **state) {
  (void)state;
  uv_loop_init(&loop);
  isv_options o;
  isv__options_defaults(&o);
  assert_int_equal(isv__core_init(&core, &loop, &o), 0);
  isv__router_init(&router, &core);
  for (const isv__http_route *r = a_routes; r->pattern; r++)
    assert_int_equal(isv__router_add(&router, &fe_a, r), 0);
  for (const isv__http_route *r = b_routes; r->pattern; r++)
    assert_int_equal(isv__router_add(&router, &fe_b, r), 0);
  return 0;
}

static int teardown(void **state) {
  (void)state;
  isv__router_free(&router);
  isv__core_close(&core, NULL);
  uv_run(&loop, UV_RUN_DEFAULT);
  return uv_loop_close(&loop);
}

/* ---- tests ------------------------------------------------------------------------------- */

static void literals_captures_suffixes_and_rest(void **state) {
  (void)state;
  route(ISV__M_GET, "GET", "/a");
  assert_string_equal(got_handler, "a-root");
  route(ISV__M_GET, "GET", "/");
  assert_string_equal(got_handler, "b-root");
  route(ISV__M_GET, "GET", "/a/models/simple");
  assert_string_equal(got_handler, "a-model");
  assert_string_equal(got_caps, "model=[simple]");
  route(ISV__M_GET, "GET", "/a/models/simple/"); /* one trailing slash is ignored */
  assert_string_equal(got_handler, "a-model");
  route(ISV__M_HEAD, "HEAD", "/a/models/x/versions/3"); /* HEAD is GET */
  assert_string_equal(got_handler, "a-version");
  assert_string_equal(got_caps, "model=[x] version=[3]");
  route(ISV__M_GET, "GET", "/a/models/a%2Fb%20c"); /* decoded: %2F is not a separator */
  assert_string_equal(got_caps, "model=[a/b c]");
  route(ISV__M_POST, "POST", "/a/models/half:predict");
  assert_string_equal(got_handler, "a-predict");
  assert_string_equal(got_caps, "model=[half]");
  route(ISV__M_PUT, "PUT", "/a/models/half%3Aclassify"); /* the suffix is matched decoded */
  assert_string_equal(got_handler, "a-classify");
  route(ISV__M_OTHER, "PATCH", "/a/files/x/y/z");
  assert_string_equal(got_handler, "a-files");
  assert_string_equal(got_caps, "rest=[x/y/z]");
  route(ISV__M_GET, "GET", "/a/files");
  assert_string_equal(got_caps, "rest=[]");
  route(ISV__M_DELETE, "DELETE", "/a/models/m"); /* b's route on a's path */
  assert_string_equal(got_handler, "b-delete");
  /* empty segments are segments, with or without an escape in the path (two ways to split) */
  route(ISV__M_GET, "GET", "/a/files/x//y/");
  assert_string_equal(got_caps, "rest=[x//y]");
  route(ISV__M_GET, "GET", "/a/files/x//y/%41/");
  assert_string_equal(got_caps, "rest=[x//y/A]");
  route(ISV__M_GET, "GET", "/a/models//versions/3");
  assert_string_equal(got_handler, "a-version");
  assert_string_equal(got_caps, "model=[] version=[3]");
  route(ISV__M_GET, "GET", "/a/");
  assert_string_equal(got_handler, "a-root");
  const char *none[] = {"/b", "//", "/a/models/simple//", "/a/models/%41//"};
  for (size_t i = 0; i < sizeof none / sizeof none[0]; i++) {
    route(ISV__M_GET, "GET", none[i]);
    assert_int_equal(got_status, 404);
  }
}

static void not_found_names_the_whole_path_in_the_owners_shape(void **state) {
  (void)state;
  route(ISV__M_GET, "GET", "/a/nothing/here");
  assert_int_equal(got_status, 404);
  assert_string_equal(got_shape, "A"); /* under /a: a's error shape */
  assert_string_equal(got_body, "A:unknown path '/a/nothing/here'");
  route(ISV__M_GET, "GET", "/abc");
  assert_int_equal(got_status, 404);
  assert_string_equal(got_shape, ""); /* "/abc" is not under "/a": the default shape */
  assert_string_equal(got_body, "{\"error\":\"unknown path '/abc'\"}");
  route(ISV__M_GET, "GET", "/a/models/half:nothing"); /* not ":predict": a plain capture */
  assert_string_equal(got_handler, "a-model");
  assert_string_equal(got_caps, "model=[half:nothing]");
}

static void wrong_method_lists_every_allowed_one(void **state) {
  (void)state;
  route(ISV__M_OTHER, "PATCH", "/a/models/m:classify");
  assert_int_equal(got_status, 405);
  /* every route whose pattern matches: a-model, a-classify, b-delete */
  assert_string_equal(got_allow, "GET, POST, PUT, DELETE");
  assert_string_equal(got_shape, "A"); /* the first matching route's front end */
  assert_non_null(strstr(got_body, "method PATCH is not allowed on this path; use GET, POST, PUT"));
  route(ISV__M_POST, "POST", "/a/models/m");
  assert_int_equal(got_status, 405);
  assert_string_equal(got_allow, "GET, DELETE"); /* a's GET and b's DELETE */
}

static void malformed_paths(void **state) {
  (void)state;
  const char *bad[] = {"/a/%zz", "/a/%0", "/a/%00x", "/1/2/3/4/5/6/7/8/9/10/11/12/13/14/15/16/17"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    route(ISV__M_GET, "GET", bad[i]);
    assert_int_equal(got_status, 400);
    assert_non_null(strstr(got_body, "malformed path"));
  }
  route(ISV__M_GET, "GET", "/a/%41"); /* a good escape */
  assert_int_equal(got_status, 404);
}

static void patterns_are_checked_when_added(void **state) {
  (void)state;
  const char *bad[] = {"a", "/a/", "/a//b", "/{}", "/{x", "/x}", "/{*}", "/{*r}/more", "/{a}{b}",
                       "/{*r}x"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    isv__http_route r = {ISV__ROUTE_GET, bad[i], handler, NULL};
    if (isv__router_add(&router, &fe_b, &r) != ISV_EINVAL) fail_msg("'%s' accepted", bad[i]);
  }
  isv__http_route none = {0, "/x", handler, NULL};
  assert_int_equal(isv__router_add(&router, &fe_b, &none), ISV_EINVAL);
  /* the same pattern and an overlapping method: refused (no shadowing a built-in route) */
  isv__http_route dup = {ISV__ROUTE_GET | ISV__ROUTE_DELETE, "/a/models/{name}", handler, NULL};
  assert_int_equal(isv__router_add(&router, &fe_b, &dup), ISV_EEXIST);
  isv__http_route other = {ISV__ROUTE_PUT, "/a/models/{name}", handler, "b-put"};
  assert_int_equal(isv__router_add(&router, &fe_b, &other), 0);
}

static void routes_come_and_go_at_run_time(void **state) {
  (void)state;
  static const isv__frontend fe_c = {.name = "c", .path_prefix = "/c"};
  isv__http_route r = {ISV__ROUTE_POST, "/c/predict", handler, "c-predict"};
  route(ISV__M_POST, "POST", "/c/predict");
  assert_int_equal(got_status, 404);
  assert_int_equal(isv__router_add(&router, &fe_c, &r), 0);
  route(ISV__M_POST, "POST", "/c/predict");
  assert_string_equal(got_handler, "c-predict");
  isv__router_remove(&router, &fe_a);
  route(ISV__M_GET, "GET", "/a/models/m");
  assert_int_equal(got_status, 405); /* b's DELETE route is all that is left there */
  assert_string_equal(got_allow, "DELETE");
  assert_string_equal(got_shape, ""); /* a's shape went with a */
  route(ISV__M_GET, "GET", "/a/x");
  assert_int_equal(got_status, 404);
  route(ISV__M_POST, "POST", "/c/predict"); /* the others stay */
  assert_string_equal(got_handler, "c-predict");
}

/* The routes are tried by the number of segments they can take (router.h's by_segs), still
 * in the order they were added: a {*rest} route added first wins over a later, longer literal. */
static void the_first_route_added_wins_whatever_its_length(void **state) {
  (void)state;
  static const isv__frontend fe_d = {.name = "d"};
  isv__http_route longer = {ISV__ROUTE_GET, "/a/files/x/y", handler, "d-longer"};
  isv__http_route other = {ISV__ROUTE_GET, "/d/x/y", handler, "d-other"};
  assert_int_equal(isv__router_add(&router, &fe_d, &longer), 0);
  assert_int_equal(isv__router_add(&router, &fe_d, &other), 0);
  route(ISV__M_GET, "GET", "/a/files/x/y");
  assert_string_equal(got_handler, "a-files");
  assert_string_equal(got_caps, "rest=[x/y]");
  route(ISV__M_GET, "GET", "/d/x/y"); /* three segments, as the rest route's path above */
  assert_string_equal(got_handler, "d-other");
}

/* The last path, method and route are remembered (router.h's isv__route_memo): the same path
 * again takes the same route with the same captures, without a split; a path of another
 * method, a change of the routes or another split (which rewrites the scratch space the
 * captures point into) is routed afresh. */
static void a_path_sent_again_takes_the_remembered_route(void **state) {
  (void)state;
  for (int i = 0; i < 2; i++) { /* a miss, then a hit, with the same answer */
    route(ISV__M_GET, "GET", "/a/models/x/versions/3");
    assert_string_equal(got_handler, "a-version");
    assert_string_equal(got_caps, "model=[x] version=[3]");
    assert_int_equal(router.memo.path_len, strlen("/a/models/x/versions/3"));
  }
  route(ISV__M_HEAD, "HEAD", "/a/models/x/versions/3"); /* HEAD is GET, here too */
  assert_string_equal(got_caps, "model=[x] version=[3]");
  for (int i = 0; i < 2; i++) { /* decoded captures and a suffix, ended before it, again */
    route(ISV__M_POST, "POST", "/a/models/h%61lf:predict");
    assert_string_equal(got_handler, "a-predict");
    assert_string_equal(got_caps, "model=[half]"); /* the handler checks the NUL at its end */
  }
  /* it is the memo that answers: pointed at another route, that route's handler runs */
  uint32_t was = router.memo.route;
  router.memo.route = 0; /* "/a": a-root, which takes the captures it is given */
  route(ISV__M_POST, "POST", "/a/models/h%61lf:predict");
  assert_string_equal(got_handler, "a-root");
  router.memo.route = was;

  /* the method is part of the key: e-any takes POST /e/y, the earlier e-get takes GET /e/y */
  static const isv__frontend fe_e = {.name = "e"};
  isv__http_route e_get = {ISV__ROUTE_GET, "/e/{x}", handler, "e-get"};
  isv__http_route e_any = {ISV__ROUTE_GET | ISV__ROUTE_POST, "/e/y", handler, "e-any"};
  assert_int_equal(isv__router_add(&router, &fe_e, &e_get), 0);
  assert_int_equal(isv__router_add(&router, &fe_e, &e_any), 0);
  route(ISV__M_POST, "POST", "/e/y");
  assert_string_equal(got_handler, "e-any");
  route(ISV__M_GET, "GET", "/e/y");
  assert_string_equal(got_handler, "e-get");
  assert_string_equal(got_caps, "x=[y]");

  /* routes removed before the remembered one: its index moved, and it is found again */
  route(ISV__M_POST, "POST", "/e/y");
  assert_int_not_equal(router.memo.path_len, 0);
  isv__router_remove(&router, &fe_a);
  route(ISV__M_POST, "POST", "/e/y");
  assert_string_equal(got_handler, "e-any");
  isv__router_remove(&router, &fe_e);
  route(ISV__M_POST, "POST", "/e/y"); /* and a route gone is gone */
  assert_int_equal(got_status, 404);
  assert_int_equal(router.memo.path_len, 0);

  /* another split (an early error's owner) rewrites the scratch space: routed afresh */
  route(ISV__M_DELETE, "DELETE", "/a/models/simple");
  assert_string_equal(got_caps, "model=[simple]");
  static char longer[600];
  memset(longer, 'z', sizeof longer - 1);
  longer[0] = '/';
  isv__exchange ex = {.method = ISV__M_GET, .method_name = "GET", .path = longer,
                      .path_len = strlen(longer), .respond = fake_respond};
  assert_null(isv__router_owner(&router, &ex)); /* the scratch space grows: it moved */
  assert_int_equal(router.memo.path_len, 0);
  route(ISV__M_DELETE, "DELETE", ""); /* an empty path is not the empty memo (fuzz_router) */
  assert_int_equal(got_status, 400);
  route(ISV__M_DELETE, "DELETE", "/a/models/simple");
  assert_string_equal(got_handler, "b-delete");
  assert_string_equal(got_caps, "model=[simple]");

  /* a path longer than the memo holds is routed each time, not remembered */
  char path[ISV__ROUTE_MEMO_PATH + 16];
  snprintf(path, sizeof path, "/a/models/%0*d", ISV__ROUTE_MEMO_PATH, 7);
  route(ISV__M_DELETE, "DELETE", path);
  assert_string_equal(got_handler, "b-delete");
  assert_int_equal(router.memo.path_len, 0);
}

static void early_errors_take_the_routes_shape(void **state) {
  (void)state;
  char path[] = "/a/models/m:predict";
  isv__exchange ex = {0};
  ex.method = ISV__M_POST;
  ex.method_name = "POST";
  ex.path = path;
  ex.path_len = strlen(path);
  ex.respond = fake_respond;
  got_shape[0] = '\0';
  isv__router_error(&router, &ex, 413, "request body exceeds the server's limit", NULL, 0);
  assert_int_equal(got_status, 413);
  assert_string_equal(got_shape, "A");
  ex.path = NULL; /* a request whose path was never read (431 on the request line) */
  got_shape[0] = '\0';
  isv__router_error(&router, &ex, 431, "too big", NULL, 0);
  assert_int_equal(got_status, 431);
  assert_string_equal(got_body, "{\"error\":\"too big\"}");
}

/* Query parameters: percent-decoding, '+', the first of a name, flags, refusals. */
/* A front end's values: one unnamed, any named ones (bytes with NULs kept), each replaced or
 * removed on its own, another front end's apart; the router frees what is left (LSan). */
static void front_end_values(void **state) {
  (void)state;
  assert_null(isv__router_value(&router, &fe_a));
  assert_int_equal(isv__router_set_value(&router, &fe_a, "m"), 0);
  assert_int_equal(isv__router_set_named_value(&router, &fe_a, "endpoint:1", "x\0v2", 4), 0);
  assert_int_equal(isv__router_set_named_value(&router, &fe_b, "endpoint:1", "y", 1), 0);
  assert_string_equal(isv__router_value(&router, &fe_a), "m");
  const char *v = isv__router_named_value(&router, &fe_a, "endpoint:1");
  assert_string_equal(v, "x");
  assert_string_equal(v + 2, "v2");
  assert_string_equal(isv__router_named_value(&router, &fe_b, "endpoint:1"), "y");
  assert_null(isv__router_named_value(&router, &fe_a, "endpoint:2"));
  assert_int_equal(isv__router_set_named_value(&router, &fe_a, "endpoint:1", "z", 1), 0);
  assert_string_equal(isv__router_named_value(&router, &fe_a, "endpoint:1"), "z");
  assert_int_equal(isv__router_set_named_value(&router, &fe_a, "endpoint:1", NULL, 0), 0);
  assert_null(isv__router_named_value(&router, &fe_a, "endpoint:1"));
  assert_string_equal(isv__router_value(&router, &fe_a), "m"); /* the unnamed one stays */
  assert_int_equal(isv__router_set_named_value(&router, &fe_a, "endpoint:3", "w", 1), 0);
}

static void query_parameters(void **state) {
  (void)state;
  char q[] = "model=echo-1.0.0&streaming=true&x=a%20b+c&flag&bad=%4&Big=1&model=later";
  isv__exchange ex = {0};
  ex.query = q;
  ex.query_len = strlen(q);
  char v[16];
  size_t n;
  assert_int_equal(isv__http_query(&ex, "model", v, sizeof v, &n), 1);
  assert_string_equal(v, "echo-1.0.0");
  assert_int_equal(n, 10);
  assert_int_equal(isv__http_query(&ex, "x", v, sizeof v, &n), 1);
  assert_string_equal(v, "a b c");
  assert_int_equal(isv__http_query(&ex, "flag", v, sizeof v, &n), 1);
  assert_int_equal(n, 0);
  assert_int_equal(isv__http_query(&ex, "bad", v, sizeof v, NULL), -1);
  assert_int_equal(isv__http_query(&ex, "big", v, sizeof v, NULL), 0); /* case matters */
  assert_int_equal(isv__http_query(&ex, "model", v, 4, NULL), -1);    /* does not fit */
  assert_true(isv__http_query_flag(&ex, "streaming"));
  assert_true(isv__http_query_flag(&ex, "Big"));
  assert_false(isv__http_query_flag(&ex, "flag"));
  assert_false(isv__http_query_flag(&ex, "absent"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(literals_captures_suffixes_and_rest, setup, teardown),
      cmocka_unit_test_setup_teardown(not_found_names_the_whole_path_in_the_owners_shape, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(wrong_method_lists_every_allowed_one, setup, teardown),
      cmocka_unit_test_setup_teardown(malformed_paths, setup, teardown),
      cmocka_unit_test_setup_teardown(patterns_are_checked_when_added, setup, teardown),
      cmocka_unit_test_setup_teardown(routes_come_and_go_at_run_time, setup, teardown),
      cmocka_unit_test_setup_teardown(the_first_route_added_wins_whatever_its_length, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(a_path_sent_again_takes_the_remembered_route, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(early_errors_take_the_routes_shape, setup, teardown),
      cmocka_unit_test_setup_teardown(front_end_values, setup, teardown),
      cmocka_unit_test(query_parameters),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
