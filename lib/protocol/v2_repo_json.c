/* The model repository extension's JSON bodies (v2_repo.h): index, load and unload requests,
 * and the index answer. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "codec/json_reader.h"
#include "codec/json_writer.h"
#include "codec/utf8.h"
#include "core/request.h"
#include "protocol/v2_repo.h"

/* Where a decoder's error goes: its request (load, unload), or a message buffer (index). */
typedef struct sink {
  isv_request *r;
  char *err;
  size_t cap;
} sink;

static int fail(sink *s, int code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
static int fail(sink *s, int code, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (s->r) return isv__request_fail(s->r, code, "%s", msg);
  if (s->err && s->cap) snprintf(s->err, s->cap, "%s", msg);
  return code;
}

/* A key quoted in a message: at most 100 bytes of it. */
#define KEY_FMT "%.*s"
#define KEY_ARG(k) (int)((k)->len > 100 ? 100 : (k)->len), (k)->ptr

static int all_space(const char *p, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (p[i] != ' ' && p[i] != '\t' && p[i] != '\r' && p[i] != '\n') return 0;
  return 1;
}

/* Callbacks of one body's walk: a top-level member, and a member of "parameters". 0 handled
 * (the value consumed), 1 skip the value, or an error code (the sink has it). */
typedef struct walk {
  sink *s;
  const char *what; /* "index request", ... */
  int (*member)(struct walk *w, const isv__json_token *key, const isv__json_token *val);
  int (*param)(struct walk *w, const isv__json_token *key, const isv__json_token *val);
  isv__json_reader *rd;
  void *ctx;
} walk;

static int json_error(walk *w) {
  return fail(w->s, ISV_EBADREQ, "%s: the body is not valid JSON: %s", w->what,
              isv__json_error(w->rd, NULL));
}

/* The members of the object whose '{' was just read; for "parameters", its own members. */
static int walk_object(walk *w, int params) {
  isv__json_token k, v;
  for (;;) {
    isv__json_type t = isv__json_next(w->rd, &k);
    if (t == ISV__JSON_OBJECT_END) return 0;
    if (t != ISV__JSON_KEY || isv__json_next(w->rd, &v) == ISV__JSON_ERROR) return json_error(w);
    int rc;
    if (!params && ISV__TOKEN_IS(&k, "parameters") && w->param) {
      if (v.type != ISV__JSON_OBJECT_BEGIN)
        return fail(w->s, ISV_EBADREQ, "%s: \"parameters\" must be a JSON object", w->what);
      rc = walk_object(w, 1);
    } else {
      rc = params ? w->param(w, &k, &v) : w->member ? w->member(w, &k, &v) : 1;
    }
    if (rc == 1) rc = isv__json_skip(w->rd, &v, NULL) == 0 ? 0 : json_error(w);
    if (rc != 0) return rc;
  }
}

/* The whole body: nothing (empty, or only whitespace), or one JSON object. */
static int walk_body(walk *w, char *body, size_t len, unsigned max_depth) {
  if (body == NULL || all_space(body, len)) return 0;
  isv__json_reader rd;
  isv__json_reader_init(&rd, body, len, max_depth);
  w->rd = &rd;
  isv__json_token t;
  isv__json_type ty = isv__json_next(&rd, &t);
  if (ty == ISV__JSON_ERROR) return json_error(w);
  if (ty != ISV__JSON_OBJECT_BEGIN)
    return fail(w->s, ISV_EBADREQ, "%s: the body must be a JSON object (or empty)", w->what);
  int rc = walk_object(w, 0);
  if (rc == 0 && isv__json_next(&rd, &t) != ISV__JSON_EOF) rc = json_error(w);
  return rc;
}

static int get_bool(walk *w, const isv__json_token *v, const char *name, int *out) {
  if (v->type != ISV__JSON_TRUE && v->type != ISV__JSON_FALSE)
    return fail(w->s, ISV_EBADREQ, "Unable to parse '%s': expected a boolean (true or false)",
                name);
  *out = v->type == ISV__JSON_TRUE;
  return 0;
}

/* ---- shared by both codecs ---------------------------------------------------------------- */

int isv__v2repo_set_name(isv_request *r, isv__repo_op *op, const char *s, size_t n) {
  if (n == 0) return isv__request_fail(r, ISV_EBADREQ, "the request names no model");
  if (!isv__utf8_text(s, n))
    return isv__request_fail(r, ISV_EBADREQ, "the model name is not valid UTF-8 text (or holds "
                             "a NUL byte)");
  if ((op->name = isv__arena_strndup(&r->arena, s, n)) == NULL)
    return isv__request_fail(r, ISV_ENOMEM, "out of memory");
  return 0;
}

/* Triton's opening words for a load that fails, which its clients match on ("failed to load"),
 * with the model's name when it is known yet. */
#define LOAD_FAILED_FMT "failed to load%s%.200s%s: "
#define LOAD_FAILED_ARGS(op) (op)->name ? " '" : "", (op)->name ? (op)->name : "", \
                             (op)->name ? "'" : ""

int isv__v2repo_set_config(isv_request *r, isv__repo_op *op, const char *s, size_t n,
                           unsigned max_depth) {
  if (memchr(s, 0, n) != NULL)
    return isv__request_fail(r, ISV_EBADREQ, LOAD_FAILED_FMT "load parameter 'config' holds a "
                             "NUL byte", LOAD_FAILED_ARGS(op));
  char *copy = isv__arena_strndup(&r->arena, s, n);
  if (copy == NULL) return isv__request_fail(r, ISV_ENOMEM, "out of memory");
  /* checked, not kept: a skipped value is never unescaped, so the copy stays as it came */
  isv__json_reader rd;
  isv__json_reader_init(&rd, copy, n, max_depth);
  isv__json_token t;
  isv__json_type ty = isv__json_next(&rd, &t);
  if (ty != ISV__JSON_OBJECT_BEGIN && ty != ISV__JSON_ERROR)
    return isv__request_fail(r, ISV_EBADREQ, LOAD_FAILED_FMT "load parameter 'config' must hold "
                             "a JSON object (Triton's model configuration, e.g. "
                             "{\"max_batch_size\": 8})", LOAD_FAILED_ARGS(op));
  if (ty == ISV__JSON_ERROR || isv__json_skip(&rd, &t, NULL) != 0 ||
      isv__json_next(&rd, &t) != ISV__JSON_EOF)
    return isv__request_fail(r, ISV_EBADREQ, LOAD_FAILED_FMT "load parameter 'config' is not "
                             "valid JSON: %s", LOAD_FAILED_ARGS(op), isv__json_error(&rd, NULL));
  op->config = copy;
  return 0;
}

/* ---- index ------------------------------------------------------------------------------- */

static int index_member(walk *w, const isv__json_token *k, const isv__json_token *v) {
  if (!ISV__TOKEN_IS(k, "ready")) return 1; /* unknown members are skipped, as Triton does */
  return get_bool(w, v, "ready", w->ctx);
}

int isv__v2repo_json_index(char *body, size_t len, unsigned max_depth, int *ready, char *err,
                           size_t cap) {
  sink s = {NULL, err, cap};
  *ready = 0;
  if (err && cap) err[0] = '\0';
  walk w = {&s, "repository index request", index_member, NULL, NULL, ready};
  return walk_body(&w, body, len, max_depth);
}

/* ---- load and unload ---------------------------------------------------------------------- */

static int load_param(walk *w, const isv__json_token *k, const isv__json_token *v) {
  isv__repo_op *op = w->ctx;
  isv_request *r = w->s->r;
  if (ISV__TOKEN_IS(k, "config")) {
    if (v->type != ISV__JSON_STRING)
      return fail(w->s, ISV_EBADREQ, "invalid value type for load parameter 'config', expected "
                  "a JSON string (the model configuration as JSON text)");
    return isv__v2repo_set_config(r, op, v->ptr, v->len, w->rd->max_depth);
  }
  if (k->len >= 5 && memcmp(k->ptr, "file:", 5) == 0)
    return fail(w->s, ISV_EUNIMPL, "load parameter '" KEY_FMT "': model files sent with the "
                "request are not supported (this server's host loads its models itself; send "
                "\"config\" only)", KEY_ARG(k));
  return fail(w->s, ISV_EBADREQ, "unrecognized load parameter '" KEY_FMT "'.", KEY_ARG(k));
}

static int unload_param(walk *w, const isv__json_token *k, const isv__json_token *v) {
  if (!ISV__TOKEN_IS(k, "unload_dependents")) return 1; /* Triton ignores the others */
  return get_bool(w, v, "unload_dependents", &((isv__repo_op *)w->ctx)->unload_dependents);
}

static int control(isv_request *r, isv__repo_action action, const char *name, size_t name_len,
                   char *body, size_t len, unsigned max_depth) {
  isv__repo_op *op = isv__repo_request(r, action);
  if (op == NULL) return r->status;
  int rc = isv__v2repo_set_name(r, op, name ? name : "", name ? name_len : 0);
  if (rc != 0) return rc;
  sink s = {r, NULL, 0};
  walk w = {&s, action == ISV__REPO_LOAD ? "repository load request" : "repository unload request",
            NULL, action == ISV__REPO_LOAD ? load_param : unload_param, NULL, op};
  return walk_body(&w, body, len, max_depth);
}

int isv__v2repo_json_load(isv_request *r, const char *name, size_t name_len, char *body,
                          size_t len, unsigned max_depth) {
  return control(r, ISV__REPO_LOAD, name, name_len, body, len, max_depth);
}

int isv__v2repo_json_unload(isv_request *r, const char *name, size_t name_len, char *body,
                            size_t len, unsigned max_depth) {
  return control(r, ISV__REPO_UNLOAD, name, name_len, body, len, max_depth);
}

/* ---- the index answer --------------------------------------------------------------------- */

static void member(isv__buf *b, const char *key, const char *value) {
  isv__buf_puts(b, ",\"");
  isv__buf_puts(b, key);
  isv__buf_puts(b, "\":");
  isv__json_write_string(b, value, strlen(value));
}

void isv__v2repo_json_index_response(const isv_repository_list *ix, isv__buf *b) {
  isv__buf_putc(b, '[');
  for (size_t i = 0; i < ix->n; i++) {
    const isv__repo_entry *e = &ix->v[i];
    isv__buf_puts(b, i ? ",{\"name\":" : "{\"name\":");
    isv__json_write_string(b, e->name, strlen(e->name));
    if (e->version) member(b, "version", e->version);
    if (e->state) member(b, "state", e->state);
    if (e->reason[0]) member(b, "reason", e->reason);
    isv__buf_putc(b, '}');
  }
  isv__buf_putc(b, ']');
}
