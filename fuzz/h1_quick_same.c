/* The comparison of h1_quick_same.h. */
#include "h1_quick_same.h"

#include <llhttp.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "transport/h1_quick.h"

#define MAX_TEXT 4096
#define MAX_FIELDS (ISV__H1_QUICK_FIELDS + 2)

typedef struct text {
  char b[MAX_TEXT];
  size_t n;
  int over;
} text;

typedef struct record {
  text url;
  text names[MAX_FIELDS], values[MAX_FIELDS];
  size_t n_fields;
  int last; /* 0 none, 1 url, 2 name, 3 value */
  int headers_done, complete, keep_alive, upgrade, has_length;
  uint64_t content_length;
  text body;
} record;

static void add(text *t, const char *at, size_t n) {
  if (t->n + n > MAX_TEXT) {
    t->over = 1;
    return;
  }
  memcpy(t->b + t->n, at, n);
  t->n += n;
}

static record *rec(llhttp_t *p) { return p->data; }

static int on_url(llhttp_t *p, const char *at, size_t n) {
  rec(p)->last = 1;
  add(&rec(p)->url, at, n);
  return 0;
}
static int on_field(llhttp_t *p, const char *at, size_t n) {
  record *r = rec(p);
  if (r->last != 2) {
    if (r->n_fields == MAX_FIELDS) return -1;
    r->n_fields++;
    r->last = 2;
  }
  add(&r->names[r->n_fields - 1], at, n);
  return 0;
}
static int on_value(llhttp_t *p, const char *at, size_t n) {
  record *r = rec(p);
  if (r->n_fields == 0) return -1;
  r->last = 3;
  add(&r->values[r->n_fields - 1], at, n);
  return 0;
}
static int on_headers_complete(llhttp_t *p) {
  record *r = rec(p);
  r->headers_done = 1;
  r->upgrade = p->upgrade;
  r->has_length = (p->flags & F_CONTENT_LENGTH) != 0;
  r->content_length = p->content_length;
  return 0;
}
static int on_body(llhttp_t *p, const char *at, size_t n) {
  add(&rec(p)->body, at, n);
  return 0;
}
static int on_message_complete(llhttp_t *p) {
  record *r = rec(p);
  r->complete = 1;
  r->keep_alive = llhttp_should_keep_alive(p);
  return HPE_PAUSED;
}

static const llhttp_settings_t settings = {
    .on_url = on_url,
    .on_header_field = on_field,
    .on_header_value = on_value,
    .on_headers_complete = on_headers_complete,
    .on_body = on_body,
    .on_message_complete = on_message_complete,
};

static int differ(char *why, size_t why_len, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, why_len, fmt, ap);
  va_end(ap);
  return 0;
}

static int same_text(const text *t, const char *p, size_t n) {
  return !t->over && t->n == n && memcmp(t->b, p, n) == 0;
}

static isv__h1_quick_memo memo; /* as a server's transport keeps one: every reading's */

isv__h1_quick_memo *h1q_memo(void) { return &memo; }

int h1q_same(const char *p, size_t n, int *taken, char *why, size_t why_len) {
  static isv__h1_quick q; /* large: not on a fuzzer's stack; one caller at a time */
  size_t len = isv__h1_quick_read(p, n, &q, &memo);
  if (taken) *taken = len != 0;
  if (len == 0) return 1;
  static record r;
  memset(&r, 0, sizeof r);
  llhttp_t parser;
  llhttp_init(&parser, HTTP_REQUEST, &settings);
  parser.data = &r;
  llhttp_errno_t err = llhttp_execute(&parser, p, n);
  if (err != HPE_PAUSED || !r.complete) {
    const char *reason = llhttp_get_error_reason(&parser), *at = llhttp_get_error_pos(&parser);
    return differ(why, why_len, "taken (%zu bytes), but llhttp says %s (%s) at offset %td", len,
                  llhttp_errno_name(err), reason ? reason : "", at ? at - p : (ptrdiff_t)-1);
  }
  size_t used = (size_t)(llhttp_get_error_pos(&parser) - p);
  if (used != len) return differ(why, why_len, "message length: quick %zu, llhttp %zu", len, used);
  if (parser.method != q.method) return differ(why, why_len, "method: quick %u, llhttp %u", q.method, parser.method);
  if (parser.http_major != 1 || parser.http_minor != q.http_minor)
    return differ(why, why_len, "version: quick 1.%u, llhttp %u.%u", q.http_minor, parser.http_major,
                  parser.http_minor);
  if (!same_text(&r.url, p + q.url_off, q.url_len)) return differ(why, why_len, "URL differs");
  if (r.n_fields != q.n_fields)
    return differ(why, why_len, "fields: quick %zu, llhttp %zu", q.n_fields, r.n_fields);
  size_t text_len = q.url_len;
  for (size_t i = 0; i < q.n_fields; i++) {
    const isv__h1_quick_field *f = &q.fields[i];
    if (!same_text(&r.names[i], p + f->name_off, f->name_len))
      return differ(why, why_len, "field %zu's name differs", i);
    if (!same_text(&r.values[i], p + f->value_off, f->value_len))
      return differ(why, why_len, "field %zu's value differs: quick '%.*s', llhttp '%.*s'", i,
                    (int)f->value_len, p + f->value_off, (int)r.values[i].n, r.values[i].b);
    text_len += f->name_len + f->value_len;
  }
  if (text_len != q.text_len) return differ(why, why_len, "text length %zu, fields add up to %zu", q.text_len, text_len);
  if (r.has_length != (q.content_length >= 0) ||
      (r.has_length && r.content_length != (uint64_t)q.content_length))
    return differ(why, why_len, "Content-Length: quick %lld, llhttp %s%llu", (long long)q.content_length,
                  r.has_length ? "" : "none ", (unsigned long long)r.content_length);
  if (r.keep_alive != q.keep_alive)
    return differ(why, why_len, "keep-alive: quick %d, llhttp %d", q.keep_alive, r.keep_alive);
  if (r.upgrade) return differ(why, why_len, "llhttp reads an upgrade");
  if (!same_text(&r.body, p + q.head_len, len - q.head_len)) return differ(why, why_len, "body differs");
  return 1;
}
