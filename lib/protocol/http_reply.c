#include "protocol/http_reply.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/bigbuf.h"
#include "codec/decimal.h"
#include "codec/json_writer.h"
#include "codec/span.h"
#include "core/request.h"
#include "codec/utf8.h"
#include "core/offload.h"

static void release_buf(void *p) { isv__free(p); }

/* One application/json answer of `len` bytes at data, released by release(ctx) once written. */
static int respond_json(isv__exchange *ex, int status, char *data, size_t len,
                        void (*release)(void *), void *ctx, const isv__header *extra,
                        size_t n_extra) {
  uv_buf_t part = uv_buf_init(data, (unsigned)len);
  isv__response r = {.status = status,
                     .content_type = "application/json",
                     .headers = extra,
                     .n_headers = n_extra,
                     .parts = &part,
                     .n_parts = 1,
                     .release = release,
                     .release_ctx = ctx};
  return isv__exchange_respond(ex, &r);
}

/* A large body's memory, freed off the loop once written. */
typedef struct large_body {
  isv__core *core;
  char *data;
} large_body;

static void release_large(void *p) {
  large_body *l = p;
  isv__offload_free(l->core, l->data);
  isv__free(l);
}

int isv__reply_json_large(isv__core *c, isv__exchange *ex, int status, isv__buf *b) {
  large_body *l = b->failed || b->len < ISV__FREE_LATER_MIN_BYTES ? NULL : isv__malloc(c->mem, sizeof *l);
  if (l == NULL) return isv__reply_json(ex, status, b);
  size_t len;
  l->core = c;
  l->data = isv__buf_release(b, &len);
  return respond_json(ex, status, l->data, len, release_large, l, NULL, 0);
}

int isv__reply_json(isv__exchange *ex, int status, isv__buf *b) {
  return isv__reply_json_headers(ex, status, b, NULL, 0);
}

int isv__reply_json_headers(isv__exchange *ex, int status, isv__buf *b, const isv__header *extra,
                            size_t n_extra) {
  if (b->failed) { /* from static memory: the heap just failed */
    static const char oom[] = "{\"error\":\"out of memory\"}";
    isv__buf_free(b);
    return respond_json(ex, 500, (char *)oom, sizeof oom - 1, NULL, NULL, NULL, 0);
  }
  size_t len;
  char *data = isv__buf_release(b, &len);
  return respond_json(ex, status, data, len, release_buf, data, extra, n_extra);
}

void isv__http_give_body(isv_request *r, isv__exchange *ex) {
  if (ex->body == NULL) return;
  r->body = ex->body;
  r->body_len = ex->body_len;
  r->body_free = ex->body_big ? isv__bigbuf_free : isv__free;
  ex->body = NULL;
}

void isv__json_error_body(isv__buf *b, const char *msg) {
  size_t n = strlen(msg);
  isv__buf_puts(b, "{\"error\":");
  if (isv__utf8_valid(msg, n)) {
    isv__json_write_string(b, msg, n);
  } else {
    char *copy = isv__malloc(b->mem, n + 1);
    if (copy == NULL) {
      isv__json_write_string(b, "(unprintable message)", 21);
    } else {
      for (size_t i = 0; i < n; i++) copy[i] = (unsigned char)msg[i] < 0x80 ? msg[i] : '?';
      isv__json_write_string(b, copy, n);
      isv__free(copy);
    }
  }
  isv__buf_putc(b, '}');
}

int isv__reply_error_msg(isv__exchange *ex, int http_status, const char *msg,
                         const isv__header *extra, size_t n_extra) {
  isv__buf b;
  isv__buf_init(&b, ex->mem);
  isv__json_error_body(&b, msg);
  if (b.failed) return isv__reply_json(ex, 500, &b); /* answers out of memory */
  size_t len;
  char *data = isv__buf_release(&b, &len);
  return respond_json(ex, http_status, data, len, release_buf, data, extra, n_extra);
}

int isv__reply_error(isv__exchange *ex, int err, const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return isv__reply_error_msg(ex, isv_err_http_status(err), msg, NULL, 0);
}

int isv__media_is_n(const isv__header *ct, const char *type, size_t n) {
  if (ct->value_len < n) return 0;
  /* as sent, lower case, by almost every client: compared a word at a time first */
  if (!isv__bytes_same(ct->value, type, n) && !isv__bytes_same_nocase(ct->value, type, n))
    return 0;
  return ct->value_len == n || ct->value[n] == ';' || ct->value[n] == ' ';
}

size_t isv__retry_after(const isv_request *r, isv__header *h, char *buf, size_t cap) {
  if (r == NULL || r->retry_after_s == 0) return 0;
  int n = snprintf(buf, cap, "%u", (unsigned)r->retry_after_s);
  *h = (isv__header){"Retry-After", 11, buf, (size_t)n};
  return 1;
}

int isv__queue_headers(isv_request *r, const isv__header *hs, size_t n_hs) {
#define Q(header, shown, param) {header, sizeof(header) - 1, shown, param}
  static const struct {
    const char *header;
    size_t len;
    const char *shown, *param;
  } map[] = {Q("inference-priority", "Inference-Priority", "priority"),
             Q("inference-timeout-us", "Inference-Timeout-Us", "timeout")};
#undef Q
  enum { N = sizeof map / sizeof map[0] };
  _Static_assert(N == 2, "the pass below tells the two headers apart by their lengths");
  /* one pass over the headers, by length first: most requests carry neither */
  const isv__header *found[N] = {NULL};
  for (size_t k = 0; k < n_hs; k++) {
    size_t len = hs[k].name_len, i = len == map[0].len ? 0 : len == map[1].len ? 1 : N;
    if (i < N && found[i] == NULL && isv__bytes_same_nocase(hs[k].name, map[i].header, len))
      found[i] = &hs[k];
  }
  for (size_t i = 0; i < N; i++) {
    const isv__header *h = found[i];
    if (h == NULL || isv_request_param(r, map[i].param) != NULL) continue;
    uint64_t v;
    if (isv__decimal_u64(h->value, h->value_len, UINT64_MAX, &v) != 0)
      return isv__request_fail(r, ISV_EBADREQ, "header %s must be a non-negative decimal "
                               "integer", map[i].shown);
    isv_param p = {.type = ISV_PARAM_UINT64, .v.u64 = v};
    int rc = isv_request_set_param(r, map[i].param, &p);
    if (rc != 0) return isv__request_fail(r, rc, "out of memory");
  }
  return 0;
}

int isv__http_queue_headers(isv_request *r, const isv__exchange *ex) {
  return r->status ? r->status : isv__queue_headers(r, ex->headers, ex->n_headers);
}

void isv__sse_send(isv__exchange *ex, int *begun, isv__buf *b) {
  size_t len = 0;
  char *text = b->len && !b->failed ? isv__buf_release(b, &len) : NULL;
  isv__buf_free(b);
  uv_buf_t part = uv_buf_init(text, (unsigned)len);
  if (*begun) {
    if (text) isv__exchange_write(ex, &part, 1, isv__free, text);
    return;
  }
  static const isv__header no_cache = {"Cache-Control", 13, "no-cache", 8};
  isv__response resp = {.status = 200,
                        .content_type = "text/event-stream; charset=utf-8",
                        .headers = &no_cache,
                        .n_headers = 1,
                        .parts = &part,
                        .n_parts = text ? 1 : 0,
                        .release = text ? isv__free : NULL,
                        .release_ctx = text,
                        .more = 1};
  isv__exchange_respond(ex, &resp);
  *begun = 1;
}
