/* The model repository extension: its codecs (lib/protocol/v2_repo_json.c, v2_repo_pb.c) and
 * its core side (lib/core/repository.c) on a real isv__core — the index, and operations that
 * the host completes inline, later on the loop, or from another thread. Messages are built
 * with a small protobuf writer written from the wire-format rules, not with the code under
 * test. */
#include "cmocka_prelude.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/repository.h"
#include "core/request.h"
#include "protocol/v2_repo.h"
#include "core/lifecycle.h"

static uv_loop_t loop;
static isv__core core;

static int setup(void **state) {
  (void)state;
  uv_loop_init(&loop);
  isv_options o;
  isv__options_defaults(&o);
  o.log = NULL;
  return isv__core_init(&core, &loop, &o);
}

static int teardown(void **state) {
  (void)state;
  isv__core_close(&core, NULL);
  uv_run(&loop, UV_RUN_DEFAULT);
  return uv_loop_close(&loop);
}

/* ---- protobuf writer ------------------------------------------------------------------------ */

typedef struct pbw {
  uint8_t p[4096];
  size_t n;
} pbw;

static void w_put(pbw *w, const void *s, size_t n) {
  assert_true(w->n + n <= sizeof w->p);
  memcpy(w->p + w->n, s, n);
  w->n += n;
}
static void w_varint(pbw *w, uint64_t v) {
  do {
    uint8_t b = (uint8_t)(v & 0x7f);
    v >>= 7;
    if (v) b |= 0x80;
    w_put(w, &b, 1);
  } while (v);
}
static void w_key(pbw *w, unsigned num, unsigned wt) { w_varint(w, (uint64_t)num << 3 | wt); }
static void w_len(pbw *w, unsigned num, const void *s, size_t n) {
  w_key(w, num, 2);
  w_varint(w, n);
  w_put(w, s, n);
}
static void w_str(pbw *w, unsigned num, const char *s) { w_len(w, num, s, strlen(s)); }
/* parameters[key] = ModelRepositoryParameter{field pf: varint v or string s} in field 3 */
static void w_param(pbw *w, const char *key, unsigned pf, uint64_t v, const char *s) {
  pbw val = {0}, e = {0};
  if (pf == 3 || pf == 4) w_str(&val, pf, s);
  else {
    w_key(&val, pf, 0);
    w_varint(&val, v);
  }
  w_str(&e, 1, key);
  w_len(&e, 2, val.p, val.n);
  w_len(w, 3, e.p, e.n);
}

/* ---- helpers -------------------------------------------------------------------------------- */

static isv_request *req(void) {
  isv_request *r = isv__request_new(&core);
  assert_non_null(r);
  return r;
}

/* The JSON load/unload decoders over a writable copy of body (NULL: no body). */
static int json_op(isv_request *r, int load, const char *name, const char *body) {
  static char buf[4096];
  size_t n = body ? strlen(body) : 0;
  if (body) memcpy(buf, body, n + 1);
  return load ? isv__v2repo_json_load(r, name, name ? strlen(name) : 0, body ? buf : NULL, n, 64)
              : isv__v2repo_json_unload(r, name, name ? strlen(name) : 0, body ? buf : NULL, n,
                                        64);
}

static void expect_fail(int load, const char *name, const char *body, int code,
                        const char *needle) {
  isv_request *r = req();
  int rc = json_op(r, load, name, body);
  if (rc != code || strstr(r->errmsg ? r->errmsg : "", needle) == NULL)
    fail_msg("%s %s: got %d '%s', want %d '%s'", name, body ? body : "(none)", rc,
             r->errmsg ? r->errmsg : "", code, needle);
  isv_request_free(r);
}

/* ---- JSON ------------------------------------------------------------------------------------ */

static int json_index(const char *body, int *ready, char *err) {
  char buf[512];
  size_t n = strlen(body);
  memcpy(buf, body, n + 1);
  return isv__v2repo_json_index(buf, n, 8, ready, err, 256);
}

static void json_index_requests(void **state) {
  (void)state;
  int ready = 7;
  char err[256];
  assert_int_equal(isv__v2repo_json_index(NULL, 0, 8, &ready, err, sizeof err), 0);
  assert_int_equal(ready, 0);
  assert_int_equal(json_index(" \r\n", &ready, err), 0);
  assert_int_equal(json_index("{}", &ready, err), 0);
  assert_int_equal(json_index("{\"ready\": true}", &ready, err), 0);
  assert_int_equal(ready, 1);
  assert_int_equal(json_index("{\"x\": [1, {\"y\": null}], \"ready\": false, \"z\": \"\\u00e9\"}",
                              &ready, err), 0);
  assert_int_equal(ready, 0);
  static const struct {
    const char *body, *needle;
  } bad[] = {{"{\"ready\": 1}", "'ready'"},
             {"{\"ready\": \"true\"}", "'ready'"},
             {"[true]", "JSON object"},
             {"true", "JSON object"},
             {"{\"ready\": true", "not valid JSON"},
             {"{\"ready\": true} x", "not valid JSON"},
             {"{\"a\": [[[[[[[[[[1]]]]]]]]]]}", "not valid JSON"}, /* deeper than 8 */
             {"{\"a\" 1}", "not valid JSON"},
             {"\xff", "not valid JSON"}};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    err[0] = '\0';
    assert_int_equal(json_index(bad[i].body, &ready, err), ISV_EBADREQ);
    if (strstr(err, bad[i].needle) == NULL) fail_msg("%s: %s", bad[i].body, err);
  }
}

static void json_load_requests(void **state) {
  (void)state;
  isv_request *r = req();
  assert_int_equal(json_op(r, 1, "m", NULL), 0);
  assert_non_null(r->repo_op);
  assert_int_equal(r->repo_op->action, ISV__REPO_LOAD);
  assert_string_equal(r->repo_op->name, "m");
  assert_null(r->repo_op->config);
  isv_request_free(r);

  /* the config reaches the host as it was sent (its escapes kept), NUL-terminated */
  r = req();
  assert_int_equal(json_op(r, 1, "simple",
                           "{\"other\": {\"a\": 1}, \"parameters\": {\"config\": "
                           "\"{\\\"name\\\": \\\"s\\\\u00e9\\\", \\\"max_batch_size\\\": 4}\"}}"),
                   0);
  assert_string_equal(r->repo_op->config, "{\"name\": \"s\\u00e9\", \"max_batch_size\": 4}");
  isv_request_free(r);

  expect_fail(1, "", "{}", ISV_EBADREQ, "names no model");
  expect_fail(1, NULL, NULL, ISV_EBADREQ, "names no model");
  expect_fail(1, "a\xffz", "{}", ISV_EBADREQ, "UTF-8");
  expect_fail(1, "m", "{\"parameters\": []}", ISV_EBADREQ, "\"parameters\" must be a JSON object");
  expect_fail(1, "m", "{\"parameters\": {\"config\": 4}}", ISV_EBADREQ,
              "invalid value type for load parameter 'config'");
  expect_fail(1, "m", "{\"parameters\": {\"config\": \"[1]\"}}", ISV_EBADREQ, "JSON object");
  expect_fail(1, "m", "{\"parameters\": {\"config\": \"{\\\"a\\\":}\"}}", ISV_EBADREQ,
              "not valid JSON");
  expect_fail(1, "m", "{\"parameters\": {\"config\": \"{} {}\"}}", ISV_EBADREQ, "not valid JSON");
  expect_fail(1, "m", "{\"parameters\": {\"config\": \"{}\\u0000\"}}", ISV_EBADREQ, "NUL");
  expect_fail(1, "m", "{\"parameters\": {\"file:1/model.plan\": \"AAAA\"}}", ISV_EUNIMPL,
              "'file:1/model.plan'");
  expect_fail(1, "m", "{\"parameters\": {\"colour\": \"red\"}}", ISV_EBADREQ,
              "unrecognized load parameter 'colour'.");
  expect_fail(1, "m", "{\"parameters\": {\"config\": \"{}\"}", ISV_EBADREQ, "not valid JSON");
  expect_fail(1, "m", "\"x\"", ISV_EBADREQ, "JSON object");
}

static void json_unload_requests(void **state) {
  (void)state;
  isv_request *r = req();
  assert_int_equal(json_op(r, 0, "m", "{\"parameters\": {\"unload_dependents\": true, "
                                      "\"whatever\": [1]}}"),
                   0);
  assert_int_equal(r->repo_op->action, ISV__REPO_UNLOAD);
  assert_true(r->repo_op->unload_dependents);
  isv_request_free(r);
  r = req();
  assert_int_equal(json_op(r, 0, "m", "{\"parameters\": {\"unload_dependents\": false}}"), 0);
  assert_false(r->repo_op->unload_dependents);
  isv_request_free(r);
  expect_fail(0, "m", "{\"parameters\": {\"unload_dependents\": 1}}", ISV_EBADREQ,
              "Unable to parse 'unload_dependents'");
  r = req(); /* load's parameters mean nothing to an unload: ignored, as Triton */
  assert_int_equal(json_op(r, 0, "m", "{\"parameters\": {\"config\": 1}}"), 0);
  isv_request_free(r);
}

/* ---- protobuf -------------------------------------------------------------------------------- */

static int pb_op(isv_request *r, int load, const pbw *w) {
  return load ? isv__v2repo_pb_load(r, w->p, w->n) : isv__v2repo_pb_unload(r, w->p, w->n);
}

static void expect_pb_fail(int load, const pbw *w, int code, const char *needle) {
  isv_request *r = req();
  int rc = pb_op(r, load, w);
  if (rc != code || strstr(r->errmsg ? r->errmsg : "", needle) == NULL)
    fail_msg("got %d '%s', want %d '%s'", rc, r->errmsg ? r->errmsg : "", code, needle);
  isv_request_free(r);
}

static void pb_load_requests(void **state) {
  (void)state;
  pbw w = {0};
  w_key(&w, 9, 0); /* an unknown field first */
  w_varint(&w, 5);
  w_param(&w, "config", 3, 0, "{\"max_batch_size\": 1}");
  w_str(&w, 2, "first");
  w_str(&w, 2, "simple"); /* the last one wins */
  w_param(&w, "config", 3, 0, "{\"max_batch_size\": 2}");
  isv_request *r = req();
  assert_int_equal(pb_op(r, 1, &w), 0);
  assert_string_equal(r->repo_op->name, "simple");
  assert_string_equal(r->repo_op->config, "{\"max_batch_size\": 2}");
  isv_request_free(r);

  pbw named = {0};
  w_str(&named, 1, "repo");
  w_str(&named, 2, "simple");
  expect_pb_fail(1, &named, ISV_EUNIMPL, "'repository_name' specification is not supported");
  pbw none = {0};
  expect_pb_fail(1, &none, ISV_EBADREQ, "names no model");
  pbw cfg_bool = {0};
  w_str(&cfg_bool, 2, "m");
  w_param(&cfg_bool, "config", 1, 1, NULL);
  expect_pb_fail(1, &cfg_bool, ISV_EBADREQ,
                 "invalid value type for load parameter 'config', expected string_param.");
  pbw file = {0};
  w_str(&file, 2, "m");
  w_param(&file, "file:1/m\x01", 4, 0, "xx");
  expect_pb_fail(1, &file, ISV_EUNIMPL, "'file:1/m?'");
  pbw unknown = {0};
  w_str(&unknown, 2, "m");
  w_param(&unknown, "k", 2, 3, NULL);
  expect_pb_fail(1, &unknown, ISV_EBADREQ, "unrecognized load parameter 'k'.");
  pbw nul = {0};
  w_len(&nul, 2, "a\0b", 3);
  expect_pb_fail(1, &nul, ISV_EBADREQ, "NUL");
  pbw trunc = {0};
  w_key(&trunc, 2, 2);
  w_varint(&trunc, 10);
  w_put(&trunc, "abc", 3);
  expect_pb_fail(1, &trunc, ISV_EBADREQ, "malformed");
  pbw wt = {0};
  w_key(&wt, 2, 0);
  w_varint(&wt, 1);
  expect_pb_fail(1, &wt, ISV_EBADREQ, "malformed");
  pbw bad_entry = {0}, e = {0};
  w_key(&e, 1, 0); /* a key that is a varint */
  w_varint(&e, 1);
  w_str(&bad_entry, 2, "m");
  w_len(&bad_entry, 3, e.p, e.n);
  expect_pb_fail(1, &bad_entry, ISV_EBADREQ, "malformed");
  pbw bad_value = {0}, e2 = {0}, v = {0};
  w_key(&v, 3, 0); /* string_param as a varint */
  w_varint(&v, 1);
  w_str(&e2, 1, "config");
  w_len(&e2, 2, v.p, v.n);
  w_str(&bad_value, 2, "m");
  w_len(&bad_value, 3, e2.p, e2.n);
  expect_pb_fail(1, &bad_value, ISV_EBADREQ, "malformed");
  pbw group = {0};
  w_key(&group, 5, 3);
  expect_pb_fail(1, &group, ISV_EBADREQ, "malformed");
}

static void pb_unload_and_index_requests(void **state) {
  (void)state;
  pbw w = {0};
  w_str(&w, 2, "m");
  w_param(&w, "unload_dependents", 1, 1, NULL);
  w_param(&w, "config", 2, 1, NULL); /* ignored on unload, as Triton */
  isv_request *r = req();
  assert_int_equal(pb_op(r, 0, &w), 0);
  assert_int_equal(r->repo_op->action, ISV__REPO_UNLOAD);
  assert_true(r->repo_op->unload_dependents);
  isv_request_free(r);
  pbw bad = {0};
  w_str(&bad, 2, "m");
  w_param(&bad, "unload_dependents", 3, 0, "true");
  expect_pb_fail(0, &bad, ISV_EBADREQ, "expected bool_param.");

  char err[256];
  int ready = 5;
  assert_int_equal(isv__v2repo_pb_index(NULL, 0, &ready, err, sizeof err), 0);
  assert_int_equal(ready, 0);
  pbw ix = {0};
  w_key(&ix, 2, 0);
  w_varint(&ix, 1);
  w_str(&ix, 1, "");
  assert_int_equal(isv__v2repo_pb_index(ix.p, ix.n, &ready, err, sizeof err), 0);
  assert_int_equal(ready, 1);
  pbw named = {0};
  w_str(&named, 1, "r");
  assert_int_equal(isv__v2repo_pb_index(named.p, named.n, &ready, err, sizeof err), ISV_EUNIMPL);
  assert_non_null(strstr(err, "'repository_name'"));
  pbw bad_ready = {0};
  w_str(&bad_ready, 2, "yes");
  assert_int_equal(isv__v2repo_pb_index(bad_ready.p, bad_ready.n, &ready, err, sizeof err),
                   ISV_EBADREQ);
  assert_non_null(strstr(err, "malformed"));
}

/* ---- the core: a repository on a real core --------------------------------------------------- */

typedef struct host {
  int loads, unloads, lists;
  char name[64], config[128];
  int deps;
  isv_repository_op *pending; /* kept to complete later */
  int complete_inline;        /* complete in the callback with this status + 1 (0: later) */
  const char *extra[4];       /* names list() adds, and their reasons */
  const char *reasons[4];
  size_t n_extra;
} host;

static void h_list(void *user, isv_repository_list *out) {
  host *h = user;
  h->lists++;
  for (size_t i = 0; i < h->n_extra; i++) isv_repository_list_add(out, h->extra[i], h->reasons[i]);
  assert_int_equal(isv_repository_list_add(out, "", NULL), ISV_EINVAL);
  assert_int_equal(isv_repository_list_add(out, NULL, NULL), ISV_EINVAL);
}

static void h_load(void *user, isv_repository_op *op, const char *name, const char *config) {
  host *h = user;
  h->loads++;
  snprintf(h->name, sizeof h->name, "%s", name);
  snprintf(h->config, sizeof h->config, "%s", config ? config : "(none)");
  if (h->complete_inline) isv_repository_op_complete(op, h->complete_inline - 1, "inline answer");
  else h->pending = op;
}

static void h_unload(void *user, isv_repository_op *op, const char *name, int deps) {
  host *h = user;
  h->unloads++;
  h->deps = deps;
  snprintf(h->name, sizeof h->name, "%s", name);
  if (h->complete_inline) isv_repository_op_complete(op, h->complete_inline - 1, NULL);
  else h->pending = op;
}

typedef struct result {
  int calls, status;
  char msg[256];
} result;

static void on_done(isv_request *r, int status, void *data) {
  result *res = data;
  res->calls++;
  res->status = status;
  snprintf(res->msg, sizeof res->msg, "%s", isv_request_error_message(r));
  isv_request_free(r);
}

/* Submit a load (or unload) of name through the JSON decoder. */
static isv_request *submit(int load, const char *name, const char *body, result *res) {
  isv_request *r = req();
  json_op(r, load, name, body);
  isv__core_submit(&core, r, on_done, res);
  return r;
}

static void run_until(const result *res, int calls) {
  for (int i = 0; i < 2000 && res->calls < calls; i++) uv_run(&loop, UV_RUN_NOWAIT), uv_sleep(1);
  assert_int_equal(res->calls, calls);
}

static int noop_infer(isv_request *r, void *user) {
  (void)user;
  return isv_request_complete(r, 0, NULL);
}

static void add_model(const char *name, const char *version, isv_model_state st) {
  isv_model_config *c;
  assert_int_equal(isv_model_config_new(name, &c), 0);
  isv_backend be = {.struct_size = sizeof be, .infer = noop_infer};
  assert_int_equal(isv__registry_add(&core.reg, c, version, &be, NULL, NULL), 0);
  isv_model_config_free(c);
  isv__entry_version(isv__registry_entry(&core.reg, name, strlen(name)), version,
                     strlen(version))->state = st;
}

static isv_repository table(host *h) {
  isv_repository t = {.struct_size = sizeof t, .user = h, .list = h_list, .load = h_load,
                      .unload = h_unload};
  return t;
}

static void without_a_repository(void **state) {
  (void)state;
  result res = {0};
  submit(1, "m", "{\"parameters\": 3}", &res); /* its lack is said first, whatever the body */
  assert_int_equal(res.calls, 1);
  assert_int_equal(res.status, ISV_EUNAVAIL);
  assert_non_null(strstr(res.msg, "explicit model load / unload is not allowed"));
  add_model("b", "1", ISV_MODEL_READY);
  isv_repository_list ix;
  assert_int_equal(isv__repo_index(&core, 0, &ix), 0);
  assert_int_equal(ix.n, 1);
  assert_string_equal(ix.v[0].name, "b");
  isv__repo_index_free(&ix);
}

static void attach_rules(void **state) {
  (void)state;
  host h = {0};
  char why[256];
  isv_repository t = table(&h);
  assert_int_equal(isv__repo_attach(&core, NULL, why, sizeof why), ISV_EINVAL);
  t.struct_size = offsetof(isv_repository, load);
  assert_int_equal(isv__repo_attach(&core, &t, why, sizeof why), ISV_EINVAL);
  assert_non_null(strstr(why, "struct_size"));
  t = table(&h);
  t.unload = NULL;
  assert_int_equal(isv__repo_attach(&core, &t, why, sizeof why), ISV_EINVAL);
  t = table(&h);
  t.list = NULL; /* optional */
  assert_int_equal(isv__repo_attach(&core, &t, why, sizeof why), 0);
  assert_int_equal(isv__repo_attach(&core, &t, why, sizeof why), ISV_ESTATE);
  /* the hidden model is nobody's to name */
  assert_null(isv__registry_visible(&core.reg, ISV__REPO_MODEL, strlen(ISV__REPO_MODEL)));
  isv_repository_list ix;
  assert_int_equal(isv__repo_index(&core, 0, &ix), 0);
  assert_int_equal(ix.n, 0);
  isv__repo_index_free(&ix);
}

static void the_index(void **state) {
  (void)state;
  host h = {.extra = {"zeta", "b", "a\xff", "zeta"},
            .reasons = {"unloaded", NULL, "x\xfe", "unloaded"},
            .n_extra = 4};
  isv_repository t = table(&h);
  assert_int_equal(isv__repo_attach(&core, &t, NULL, 0), 0);
  add_model("b", "10", ISV_MODEL_READY);
  add_model("b", "9", ISV_MODEL_UNAVAILABLE);
  add_model("c", "1", ISV_MODEL_LOADING);
  isv_repository_list ix;
  assert_int_equal(isv__repo_index(&core, 0, &ix), 0);
  assert_int_equal(h.lists, 1);
  /* sorted by name, versions as numbers; "b" from the registry only; "zeta" once */
  assert_int_equal(ix.n, 5);
  assert_string_equal(ix.v[0].name, "a?");
  assert_string_equal(ix.v[0].state, "UNAVAILABLE");
  assert_string_equal(ix.v[0].reason, "x?");
  assert_null(ix.v[0].version);
  assert_string_equal(ix.v[1].version, "9");
  assert_string_equal(ix.v[1].state, "UNAVAILABLE");
  assert_string_equal(ix.v[2].version, "10");
  assert_string_equal(ix.v[2].state, "READY");
  assert_string_equal(ix.v[2].reason, "");
  assert_string_equal(ix.v[3].state, "LOADING");
  assert_string_equal(ix.v[4].name, "zeta");

  isv__buf b;
  isv__buf_init(&b, NULL);
  isv__v2repo_json_index_response(&ix, &b);
  isv__buf_putc(&b, '\0');
  assert_string_equal(b.data, "[{\"name\":\"a?\",\"state\":\"UNAVAILABLE\",\"reason\":\"x?\"},"
                              "{\"name\":\"b\",\"version\":\"9\",\"state\":\"UNAVAILABLE\"},"
                              "{\"name\":\"b\",\"version\":\"10\",\"state\":\"READY\"},"
                              "{\"name\":\"c\",\"version\":\"1\",\"state\":\"LOADING\"},"
                              "{\"name\":\"zeta\",\"state\":\"UNAVAILABLE\","
                              "\"reason\":\"unloaded\"}]");
  isv__buf_free(&b);
  isv__buf_init(&b, NULL);
  assert_int_equal(isv__v2repo_pb_index_response(&ix, &b), 0);
  /* models 1: {name 1 "a?", state 3 "UNAVAILABLE", reason 4 "x?"} first */
  static const uint8_t first[] = {0x0a, 0x15, 0x0a, 0x02, 'a', '?', 0x1a, 0x0b, 'U', 'N', 'A',
                                  'V', 'A', 'I', 'L', 'A', 'B', 'L', 'E', 0x22, 0x02, 'x', '?'};
  assert_true(b.len > sizeof first);
  assert_memory_equal(b.data, first, sizeof first);
  isv__buf_free(&b);
  isv__repo_index_free(&ix);

  assert_int_equal(isv__repo_index(&core, 1, &ix), 0); /* ready only */
  assert_int_equal(ix.n, 1);
  assert_string_equal(ix.v[0].version, "10");
  isv__repo_index_free(&ix);
  isv_repository_list empty;
  h.n_extra = 0;
  assert_int_equal(isv__repo_index(&core, 1, &empty), 0);
  isv__repo_index_free(&empty);
}

static void operations(void **state) {
  (void)state;
  host h = {.complete_inline = 1};
  isv_repository t = table(&h);
  assert_int_equal(isv__repo_attach(&core, &t, NULL, 0), 0);
  /* completed inside the callback */
  result a = {0};
  submit(1, "m1", "{\"parameters\": {\"config\": \"{\\\"max_batch_size\\\": 2}\"}}", &a);
  assert_int_equal(a.calls, 1);
  assert_int_equal(a.status, 0);
  assert_string_equal(h.name, "m1");
  assert_string_equal(h.config, "{\"max_batch_size\": 2}");
  /* refused by the host: its code and words */
  h.complete_inline = 1 + ISV_ENOTFOUND;
  result b = {0};
  submit(1, "m2", NULL, &b);
  assert_int_equal(b.status, ISV_ENOTFOUND);
  assert_string_equal(b.msg, "inline answer");
  assert_string_equal(h.config, "(none)");
  /* a decode error never reaches the host */
  result c = {0};
  int loads = h.loads;
  submit(1, "m3", "{\"parameters\": {\"x\": \"y\"}}", &c);
  assert_int_equal(c.status, ISV_EBADREQ);
  assert_int_equal(h.loads, loads);

  /* completed later; one at a time: the second waits for the first */
  h.complete_inline = 0;
  result d = {0}, e = {0};
  submit(0, "m4", "{\"parameters\": {\"unload_dependents\": true}}", &d);
  submit(1, "m5", NULL, &e);
  uv_run(&loop, UV_RUN_NOWAIT);
  assert_int_equal(h.unloads, 1);
  assert_int_equal(h.deps, 1);
  assert_int_equal(h.loads, loads);
  assert_int_equal(d.calls, 0);
  isv_repository_op *op = h.pending;
  assert_int_equal(isv_repository_op_complete(op, 0, NULL), 0);
  run_until(&d, 1);
  assert_int_equal(isv_repository_op_complete(op, 0, NULL), ISV_ESTATE); /* exactly once */
  assert_int_equal(h.loads, loads + 1); /* the second started */
  assert_string_equal(h.name, "m5");
  assert_int_equal(isv_repository_op_complete(NULL, 0, NULL), ISV_EINVAL);
  /* a non-ISV code is the host's bug: 500 */
  assert_int_equal(isv_repository_op_complete(h.pending, -5, "oops"), 0);
  run_until(&e, 1);
  assert_int_equal(e.status, ISV_EBACKEND);
  assert_non_null(strstr(e.msg, "oops"));
}

/* The host completes from a thread of its own. */
static void finish_on_thread(void *arg) {
  isv_repository_op_complete(arg, ISV_EBACKEND, "disk full");
}

static void completion_from_another_thread(void **state) {
  (void)state;
  host h = {0};
  isv_repository t = table(&h);
  assert_int_equal(isv__repo_attach(&core, &t, NULL, 0), 0);
  result a = {0}, b = {0};
  submit(1, "m", NULL, &a);
  isv_request *queued = submit(1, "n", NULL, &b);
  assert_non_null(h.pending);
  /* the client of the queued one leaves: it never reaches the host */
  isv__core_cancel(queued);
  assert_int_equal(b.calls, 1);
  assert_int_equal(b.status, ISV_ECANCELED);
  uv_thread_t th;
  assert_int_equal(uv_thread_create(&th, finish_on_thread, h.pending), 0);
  uv_thread_join(&th);
  run_until(&a, 1);
  assert_int_equal(a.status, ISV_EBACKEND);
  assert_string_equal(a.msg, "disk full");
  assert_int_equal(h.loads, 1);
}

/* The client of a running operation leaves: the host still completes it, nothing is freed under
 * it, and the answer goes nowhere (the done callback still runs, once). */
static void client_gone_while_running(void **state) {
  (void)state;
  host h = {0};
  isv_repository t = table(&h);
  assert_int_equal(isv__repo_attach(&core, &t, NULL, 0), 0);
  result a = {0};
  isv_request *r = submit(0, "m", NULL, &a);
  isv__core_cancel(r);
  assert_int_equal(a.calls, 0);
  assert_true(isv_request_is_cancelled((isv_request *)(void *)h.pending));
  assert_int_equal(isv_repository_op_complete(h.pending, 0, NULL), 0);
  run_until(&a, 1);
}

/* The public call: isv_server_set_repository's rules, and what it changes in server metadata
 * is checked end to end (tests/integration/test_repository.py). */
static void closed_cb(isv_server *srv, void *data) {
  (void)srv;
  *(int *)data = 1;
}

static void public_api(void **state) {
  (void)state;
  uv_loop_t l;
  uv_loop_init(&l);
  isv_options *o;
  assert_int_equal(isv_options_new(&o), 0);
  isv_options_set_log(o, NULL, NULL);
  isv_server *srv;
  assert_int_equal(isv_server_new(&l, o, &srv), 0);
  isv_options_free(o);
  host h = {0};
  isv_repository t = table(&h);
  assert_int_equal(isv_server_set_repository(NULL, &t), ISV_EINVAL);
  assert_int_equal(isv_server_set_repository(srv, NULL), ISV_EINVAL);
  assert_non_null(strstr(isv_server_last_error(srv), "no repository"));
  t.load = NULL;
  assert_int_equal(isv_server_set_repository(srv, &t), ISV_EINVAL);
  assert_non_null(strstr(isv_server_last_error(srv), "required"));
  t = table(&h);
  assert_int_equal(isv_server_set_repository(srv, &t), 0);
  assert_string_equal(isv_server_last_error(srv), "");
  assert_int_equal(isv_server_set_repository(srv, &t), ISV_ESTATE);
  /* its hidden model is nobody's: not removable, not addable */
  assert_int_equal(isv_server_remove_model(srv, ISV__REPO_MODEL, NULL), ISV_ENOTFOUND);
  isv_request *r;
  assert_int_equal(isv_request_new(srv, ISV__REPO_MODEL, NULL, &r), ISV_ENOTFOUND);
  int closed = 0;
  assert_int_equal(isv_server_close(srv, closed_cb, &closed), 0);
  uv_run(&l, UV_RUN_DEFAULT);
  assert_true(closed);
  assert_int_equal(uv_loop_close(&l), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(json_index_requests, setup, teardown),
      cmocka_unit_test_setup_teardown(json_load_requests, setup, teardown),
      cmocka_unit_test_setup_teardown(json_unload_requests, setup, teardown),
      cmocka_unit_test_setup_teardown(pb_load_requests, setup, teardown),
      cmocka_unit_test_setup_teardown(pb_unload_and_index_requests, setup, teardown),
      cmocka_unit_test_setup_teardown(without_a_repository, setup, teardown),
      cmocka_unit_test_setup_teardown(attach_rules, setup, teardown),
      cmocka_unit_test_setup_teardown(the_index, setup, teardown),
      cmocka_unit_test_setup_teardown(operations, setup, teardown),
      cmocka_unit_test_setup_teardown(completion_from_another_thread, setup, teardown),
      cmocka_unit_test_setup_teardown(client_gone_while_running, setup, teardown),
      cmocka_unit_test(public_api),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
