/* libFuzzer target: the router (protocol/router.c) and the V2 REST handlers behind it.
 *
 * Input: byte 0 chooses the method, byte 1 the request's extras, the rest is the request
 * target (path, then '?' and a query, as the transports split it; cut at the first NUL, which
 * no transport lets through). Byte 1: bits 0-1 the body (none, a good V2 JSON body for model
 * "m", a broken one, a binary tensor data body with its Inference-Header-Content-Length), bit 2
 * an unsupported Content-Type, bit 3 an early error (isv__router_error, 413) instead of a
 * dispatch, bit 4 the request (without a body) sent again: the router's memo takes it the
 * second time, and must answer as the routing did (the same status).
 *
 * The router holds every V2 route and a front end of its own with suffixed captures
 * ({model}:predict, {model}:classify), a plain capture and {*rest}, whose handler checks the
 * captures it is given. Every exchange must be answered exactly once, before the target
 * returns (the backend is inline), with a status in 200..599; a JSON body must be valid UTF-8
 * and one well-formed JSON value (so must the JSON part of a binary answer); a 405 must carry
 * Allow. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/json_reader.h"
#include "codec/utf8.h"
#include "core/request.h"
#include "protocol/v2.h"
#include "core/lifecycle.h"

static uv_loop_t loop;
static isv__core core;
static isv__router router;

static void check(int cond, const char *what) {
  if (cond) return;
  fprintf(stderr, "CHECK FAILED: %s\n", what);
  abort();
}

/* ---- a front end of the fuzzer's own: captures checked, answered 200 --------------------- */

static void capture_handler(isv__http_req *q) {
  check(q->n_caps <= ISV__ROUTE_MAX_CAPTURES, "capture count");
  for (size_t i = 0; i < q->n_caps; i++) {
    check(q->cap[i] != NULL && q->cap_name[i] != NULL, "capture set");
    check(strlen(q->cap[i]) == q->cap_len[i], "capture NUL-terminated at its length");
    size_t len;
    const char *c = isv__http_capture(q, q->cap_name[i], &len);
    check(c != NULL, "capture found by name");
  }
  const char *suffix = q->data;
  if (suffix[0]) { /* a suffixed capture: the segment ended with the suffix, cut before it */
    size_t len;
    const char *m = isv__http_capture(q, "model", &len);
    check(m != NULL, "suffixed capture");
    check(strstr(q->ex->path, suffix + 1) != NULL || strchr(q->ex->path, '%') != NULL,
          "suffix in the path (maybe escaped)");
  }
  static char ok[] = "{\"ok\":true}";
  uv_buf_t part = uv_buf_init(ok, sizeof ok - 1);
  isv__response r = {.status = 200, .content_type = "application/json", .parts = &part,
                     .n_parts = 1};
  isv__exchange_respond(q->ex, &r);
}

static const isv__http_route own_routes[] = {
    {ISV__ROUTE_POST, "/x/models/{model}:predict", capture_handler, ":predict"},
    {ISV__ROUTE_POST | ISV__ROUTE_PUT, "/x/models/{model}:classify", capture_handler,
     ":classify"},
    {ISV__ROUTE_GET, "/x/models/{model}", capture_handler, ""},
    {ISV__ROUTE_GET, "/x/models/{model}/versions/{version}", capture_handler, ""},
    {ISV__ROUTE_ANY, "/x/files/{*rest}", capture_handler, ""},
    {ISV__ROUTE_DELETE, "/v2/models/{model}", capture_handler, ""}, /* a V2 path, other method */
    {0},
};
static const isv__frontend own = {.name = "fuzz", .path_prefix = "/x", .routes = own_routes,
                                  .http_label = "fuzz_http"};

/* ---- the core: model "m" v1, y = x (INT32 [-1]) inline --------------------------------- */

static int echo(isv_request *r, void *u) {
  (void)u;
  const isv_tensor *x = isv_request_input(r, "x");
  if (x == NULL) return isv_request_complete(r, 0, NULL);
  size_t nd;
  const int64_t *shape = isv_tensor_shape(x, &nd);
  void *y;
  int rc = isv_request_alloc_output(r, "y", ISV_INT32, shape, nd, &y);
  if (rc) return rc;
  memcpy(y, isv_tensor_data(x), isv_tensor_byte_size(x));
  return isv_request_complete(r, 0, NULL);
}

static void no_trace(void *user, const isv_trace_timeline *t) {
  (void)user;
  (void)t;
}

static void init(void) {
  uv_loop_init(&loop);
  isv_options o;
  isv__options_defaults(&o);
  if (isv_options_set_trace(&o, no_trace, NULL, 1) != 0) abort(); /* the trace extension served */
  if (isv__core_init(&core, &loop, &o) != 0) abort();
  isv__router_init(&router, &core);
  for (const isv__http_route *r = isv__v2_frontend.routes; r->pattern; r++)
    if (isv__router_add(&router, &isv__v2_frontend, r) != 0) abort();
  for (const isv__http_route *r = own_routes; r->pattern; r++)
    if (isv__router_add(&router, &own, r) != 0) abort();
  isv_model_config *c;
  isv_model_config_new("m", &c);
  int64_t any[] = {-1};
  isv_model_config_add_input(c, "x", ISV_INT32, any, 1);
  isv_model_config_add_output(c, "y", ISV_INT32, any, 1);
  isv_backend be = {.struct_size = sizeof be, .infer = echo};
  if (isv__registry_add(&core.reg, c, "1", &be, NULL, NULL) != 0) abort();
  isv_model_config_free(c);
}

/* ---- the fake exchange ------------------------------------------------------------------ */

static int answers;
static int last_status;

static void check_json(const char *p, size_t n) {
  check(isv__utf8_valid(p, n), "JSON body is valid UTF-8");
  char *copy = malloc(n ? n : 1); /* the reader unescapes in place */
  if (n) memcpy(copy, p, n);
  isv__json_reader jr;
  isv__json_reader_init(&jr, copy, n, 64);
  isv__json_token t;
  isv__json_type ty;
  size_t guard = 0;
  while ((ty = isv__json_next(&jr, &t)) != ISV__JSON_EOF) {
    check(ty != ISV__JSON_ERROR, "JSON body is one well-formed value");
    check(++guard <= n + 1, "JSON reader makes progress");
  }
  free(copy);
}

static int fake_respond(isv__exchange *ex, const isv__response *r) {
  (void)ex;
  answers++;
  last_status = r->status;
  check(r->status >= 200 && r->status <= 599, "status in 200..599");
  size_t n = 0;
  for (size_t i = 0; i < r->n_parts; i++) n += r->parts[i].len;
  char *body = malloc(n ? n : 1);
  size_t k = 0;
  for (size_t i = 0; i < r->n_parts; i++) {
    if (r->parts[i].len) memcpy(body + k, r->parts[i].base, r->parts[i].len);
    k += r->parts[i].len;
  }
  const char *ihcl = NULL;
  size_t ihcl_len = 0;
  int allow = 0;
  for (size_t i = 0; i < r->n_headers; i++) {
    const isv__header *h = &r->headers[i];
    check(h->name != NULL && h->name_len > 0 && h->value != NULL, "header set");
    if (h->name_len == 31 && memcmp(h->name, "Inference-Header-Content-Length", 31) == 0) {
      ihcl = h->value;
      ihcl_len = h->value_len;
    }
    if (h->name_len == 5 && memcmp(h->name, "Allow", 5) == 0 && h->value_len > 0) allow = 1;
  }
  if (r->status == 405) check(allow, "a 405 carries Allow");
  check(r->content_type != NULL, "a content type");
  if (strcmp(r->content_type, "application/json") == 0) {
    check(ihcl == NULL, "JSON answers have no binary part");
    check_json(body, n);
  } else {
    check(strcmp(r->content_type, "application/octet-stream") == 0, "JSON or binary");
    check(r->status == 200 && ihcl != NULL, "a binary answer says where its JSON ends");
    size_t json_len = 0;
    for (size_t i = 0; i < ihcl_len; i++) {
      check(ihcl[i] >= '0' && ihcl[i] <= '9' && i < 19, "a byte count");
      json_len = json_len * 10 + (size_t)(ihcl[i] - '0');
    }
    check(json_len <= n, "the JSON part is inside the body");
    check_json(body, json_len);
  }
  free(body);
  if (r->release) r->release(r->release_ctx);
  return 0;
}

/* ---- bodies ----------------------------------------------------------------------------- */

static const char good_json[] =
    "{\"id\":\"f\",\"inputs\":[{\"name\":\"x\",\"datatype\":\"INT32\",\"shape\":[2],"
    "\"data\":[1,-2]}]}";
static const char broken_json[] = "{\"inputs\":[{\"name\":\"x\",";
static const char bin_json[] =
    "{\"inputs\":[{\"name\":\"x\",\"datatype\":\"INT32\",\"shape\":[2],"
    "\"parameters\":{\"binary_data_size\":8}}],\"parameters\":{\"binary_data_output\":true}}";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static int ready;
  if (!ready) {
    init();
    ready = 1;
  }
  if (size < 2 || size > 8192) return 0;
  static const char *const names[] = {"PATCH", "GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS"};
  isv__method method = (isv__method)(data[0] % 7);
  unsigned flags = data[1];

  /* the target: path '?' query, cut at a NUL */
  size_t tlen = 0;
  while (2 + tlen < size && data[2 + tlen] != 0) tlen++;
  char *target = malloc(tlen + 2);
  memcpy(target, data + 2, tlen);
  target[tlen] = '\0';
  char *q = memchr(target, '?', tlen);
  char *query;
  if (q) {
    *q = '\0';
    query = q + 1;
  } else {
    query = target + tlen;
  }

  char body[256];
  size_t body_len = 0;
  isv__header headers[2];
  size_t nh = 0;
  char hl[16];
  switch (flags & 3) {
    case 1:
      body_len = sizeof good_json - 1;
      memcpy(body, good_json, body_len);
      headers[nh++] = (isv__header){"Content-Type", 12, "application/json", 16};
      break;
    case 2:
      body_len = sizeof broken_json - 1;
      memcpy(body, broken_json, body_len);
      break;
    case 3: {
      size_t jl = sizeof bin_json - 1;
      const int32_t x[2] = {7, -7};
      memcpy(body, bin_json, jl);
      memcpy(body + jl, x, sizeof x);
      body_len = jl + sizeof x;
      int n = snprintf(hl, sizeof hl, "%zu", jl);
      headers[nh++] = (isv__header){"Content-Type", 12, "application/octet-stream", 24};
      headers[nh++] = (isv__header){"Inference-Header-Content-Length", 31, hl, (size_t)n};
      break;
    }
    default: break;
  }
  if (flags & 4) { /* replaces the Content-Type, or adds one */
    if (nh && headers[0].name_len == 12) headers[0].value = "text/xml", headers[0].value_len = 8;
    else headers[nh++] = (isv__header){"Content-Type", 12, "text/xml", 8};
  }

  isv__exchange ex;
  memset(&ex, 0, sizeof ex);
  ex.method = method;
  ex.method_name = names[method];
  ex.path = target;
  ex.path_len = strlen(target);
  ex.query = query;
  ex.query_len = strlen(query);
  ex.headers = headers;
  ex.n_headers = nh;
  /* on the heap, as the transport's: an inference request takes it (isv_request.body) */
  ex.body = body_len ? isv__malloc(NULL, body_len) : NULL;
  if (ex.body) memcpy(ex.body, body, body_len);
  ex.body_len = ex.body ? body_len : 0;
  ex.respond = fake_respond;

  char *orig = malloc(ex.path_len + 1);
  memcpy(orig, target, ex.path_len + 1);
  answers = 0;
  if (flags & 8) {
    isv__router_error(&router, &ex, 413, "request body exceeds the server's limit", NULL, 0);
    check(answers == 1 && last_status == 413, "an early error keeps its status");
  } else {
    isv__router_dispatch(&router, &ex);
    for (int i = 0; answers == 0 && i < 4; i++) uv_run(&loop, UV_RUN_NOWAIT);
  }
  check(answers == 1, "answered exactly once");
  check(strcmp(ex.path, orig) == 0, "the path is left as it came");
  if ((flags & 16) && !(flags & 8) && body_len == 0) {
    int first = last_status;
    isv__exchange again;
    memset(&again, 0, sizeof again);
    again.method = method;
    again.method_name = names[method];
    again.path = target;
    again.path_len = ex.path_len;
    again.query = query;
    again.query_len = ex.query_len;
    again.headers = headers;
    again.n_headers = nh;
    again.respond = fake_respond;
    answers = 0;
    isv__router_dispatch(&router, &again);
    for (int i = 0; answers == 0 && i < 4; i++) uv_run(&loop, UV_RUN_NOWAIT);
    check(answers == 1, "answered exactly once, again");
    check(last_status == first, "the same path and method answered alike again");
  }
  isv__free(ex.body); /* the exchange's, unless a request took it (then NULL) */
  free(orig);
  free(target);
  return 0;
}
