/* HTTP/1.1 connections with llhttp on libuv.
 *
 * One request at a time per connection: when a message is complete the parser is paused until
 * its response is written, so pipelined responses leave in order. Reading goes on meanwhile
 * (no epoll_ctl per request): what arrives is kept in `pending`, parsed once the response is
 * out; past ISV__PIPELINE_MAX bytes reading stops, so a client cannot queue unbounded work.
 *
 * Memory: reads land in the transport's shared buffer and are copied once into the request's
 * head (URL + headers) or body buffer — except a body with a known Content-Length, which
 * libuv reads straight into its final buffer (llhttp then reports the span in place), in
 * batches when it is large (conn.h, "Read batching"; a paused client gets the mark dropped by
 * the watchdog, after which the header timeout runs as before).
 * At dispatch the exchange takes both buffers; the connection starts afresh. */
#include <llhttp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#ifndef _WIN32
#include <sys/socket.h>
#endif

#include "codec/buf.h"
#include "codec/numfmt.h"
#include "transport/conn.h"

typedef struct write_req {
  uv_write_t req;
  isv__conn *conn;
  isv__exchange *ex;
  char *head;
  int close_after;
  void (*release)(void *);
  void *release_ctx;
} write_req;

#define ISV__PIPELINE_MAX (64u * 1024u)

static void conn_close(isv__conn *c);
static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf);
static void on_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf);
static void execute(isv__conn *c, const char *data, size_t len);

isv__conn *isv__conn_next(isv__conn *c) { return c->next; }

/* ---- exchange ---------------------------------------------------------------------------- */

const isv__header *isv__exchange_header(const isv__exchange *ex, const char *name) {
  size_t n = strlen(name);
  for (size_t i = 0; i < ex->n_headers; i++)
    if (ex->headers[i].name_len == n && strncasecmp(ex->headers[i].name, name, n) == 0)
      return &ex->headers[i];
  return NULL;
}

int isv__exchange_respond(isv__exchange *ex, const isv__response *resp) {
  return ex->respond(ex, resp);
}

const char *isv__http_reason(int status) {
  switch (status) {
  case 100: return "Continue";
  case 200: return "OK";
  case 204: return "No Content";
  case 400: return "Bad Request";
  case 404: return "Not Found";
  case 405: return "Method Not Allowed";
  case 408: return "Request Timeout";
  case 409: return "Conflict";
  case 411: return "Length Required";
  case 413: return "Payload Too Large";
  case 415: return "Unsupported Media Type";
  case 429: return "Too Many Requests";
  case 431: return "Request Header Fields Too Large";
  case 499: return "Client Closed Request";
  case 500: return "Internal Server Error";
  case 501: return "Not Implemented";
  case 503: return "Service Unavailable";
  case 504: return "Gateway Timeout";
  case 505: return "HTTP Version Not Supported";
  default: return "Unknown";
  }
}

void isv__exchange_free(isv__exchange *ex) {
  free(ex->storage);
  if (ex->body_big) isv__bigbuf_free(ex->body);
  else free(ex->body);
  free(ex->headers);
  free(ex);
}

/* ---- writing ----------------------------------------------------------------------------- */

static void on_timer(uv_timer_t *h);

static void timer_start(isv__conn *c, uint64_t ms) {
  uv_timer_start(&c->timer, on_timer, ms, 0);
}

static void read_stop(isv__conn *c) {
  if (c->reading) uv_read_stop(c->stream);
  c->reading = 0;
}

void isv__conn_set_lowat(isv__conn *c, int v) {
  if (c->lowat_off || v == (c->lowat ? c->lowat : 1)) return;
#if defined(SO_RCVLOWAT) && !defined(_WIN32)
  uv_os_fd_t fd;
  if (uv_fileno((const uv_handle_t *)c->stream, &fd) == 0 &&
      setsockopt(fd, SOL_SOCKET, SO_RCVLOWAT, &v, sizeof v) == 0) {
    c->lowat = v;
    return;
  }
#endif
  c->lowat_off = 1; /* a pipe, or a platform without it: read as bytes come */
}

/* The bytes still to come of a body being read in place (known length), else 0. */
static size_t body_left(const isv__conn *c) {
  if (c->in_message && c->headers_done && c->body_expected > c->body.len && c->body.data &&
      c->body.cap >= c->body_expected)
    return c->body_expected - c->body.len;
  return 0;
}

void isv__conn_batch_reads(isv__conn *c, size_t must_come) {
  if (must_come > ISV__LOWAT_MAX) must_come = ISV__LOWAT_MAX;
  isv__conn_set_lowat(c, must_come >= ISV__LOWAT_MIN ? (int)must_come : 1);
  if (c->lowat > 1) timer_start(c, ISV__LOWAT_WATCHDOG_MS);
}

/* After each read: batch the rest of a large body; otherwise wake for every byte. */
static void batch_reads(isv__conn *c) { isv__conn_batch_reads(c, c->ex ? 0 : body_left(c)); }

/* Keep bytes that arrived behind the message being answered; 0, or -1 (connection closed). */
static int keep_pending(isv__conn *c, const char *data, size_t len) {
  char *p = realloc(c->pending, c->pending_len + len);
  if (p == NULL) {
    conn_close(c);
    return -1;
  }
  memcpy(p + c->pending_len, data, len);
  c->pending = p;
  c->pending_len += len;
  if (c->pending_len >= ISV__PIPELINE_MAX) read_stop(c);
  return 0;
}

/* The response is written: parse what came meanwhile, then go on reading. */
static void resume(isv__conn *c) {
  char *p = c->pending;
  size_t n = c->pending_len;
  c->pending = NULL;
  c->pending_len = 0;
  llhttp_resume(&c->parser);
  timer_start(c, c->t->limits.idle_timeout_ms);
  if (n) execute(c, p, n);
  free(p);
  if (c->closing || c->shutting_down) return;
  if (c->ex == NULL && c->peer_eof) { /* everything the client sent is answered */
    conn_close(c);
    return;
  }
  if (!c->reading && !c->peer_eof && c->pending_len < ISV__PIPELINE_MAX &&
      uv_read_start(c->stream, on_alloc, on_read) == 0)
    c->reading = 1;
}

static void on_write(uv_write_t *req, int status) {
  write_req *w = (write_req *)req;
  isv__conn *c = w->conn;
  if (w->release) w->release(w->release_ctx);
  free(w->head);
  if (w->ex) {
    if (c->ex == w->ex) c->ex = NULL;
    isv__exchange_free(w->ex);
  }
  int close_after = w->close_after;
  free(w);
  if (c->closing) return;
  if (status < 0 || close_after || c->shutting_down) {
    conn_close(c);
    return;
  }
  if (c->ex == NULL) resume(c);
}

/* Queue head + parts. Takes `head` (malloc'd) and calls release in every case. */
static int write_parts(isv__conn *c, isv__exchange *ex, char *head, size_t head_len,
                       const uv_buf_t *parts, size_t n_parts, int close_after,
                       void (*release)(void *), void *ctx) {
  write_req *w = calloc(1, sizeof *w);
  uv_buf_t stackbufs[8];
  uv_buf_t *bufs = n_parts + 1 <= 8 ? stackbufs : malloc((n_parts + 1) * sizeof *bufs);
  if (w == NULL || bufs == NULL) goto fail;
  w->conn = c;
  w->ex = ex;
  w->head = head;
  w->close_after = close_after;
  w->release = release;
  w->release_ctx = ctx;
  bufs[0] = uv_buf_init(head, (unsigned)head_len);
  size_t nb = 1;
  for (size_t i = 0; i < n_parts; i++)
    if (parts[i].len) bufs[nb++] = parts[i];
  int rc = uv_write(&w->req, c->stream, bufs, (unsigned)nb, on_write);
  if (bufs != stackbufs) free(bufs);
  if (rc != 0) {
    w->close_after = 1;
    free(w);
    w = NULL;
    goto fail;
  }
  return 0;
fail:
  if (bufs != stackbufs) free(bufs);
  free(w);
  if (release) release(ctx);
  free(head);
  if (ex) {
    if (c->ex == ex) c->ex = NULL;
    isv__exchange_free(ex);
  }
  conn_close(c);
  return -1;
}

static size_t head_size(const isv__response *r) {
  size_t n = 256 + (r->content_type ? strlen(r->content_type) : 0);
  for (size_t i = 0; i < r->n_headers; i++) n += r->headers[i].name_len + r->headers[i].value_len + 4;
  return n;
}

static char *put(char *p, const char *s, size_t n) {
  memcpy(p, s, n);
  return p + n;
}
#define PUT_LIT(p, lit) put((p), (lit), sizeof(lit) - 1)

static char *put_uint(char *p, size_t v) { return p + isv__fmt_u64(p, v); }

/* The status line and headers. Every response goes through here: no snprintf. */
static char *build_head(const isv__response *r, size_t body_len, int keep_alive, int http10,
                        size_t *len) {
  char *h = malloc(head_size(r));
  if (h == NULL) return NULL;
  const char *reason = isv__http_reason(r->status);
  char *p = PUT_LIT(h, "HTTP/1.1 ");
  p = put_uint(p, (size_t)(r->status >= 100 && r->status <= 999 ? r->status : 500));
  *p++ = ' ';
  p = put(p, reason, strlen(reason));
  p = PUT_LIT(p, "\r\n");
  if (r->content_type) {
    p = PUT_LIT(p, "Content-Type: ");
    p = put(p, r->content_type, strlen(r->content_type));
    p = PUT_LIT(p, "\r\n");
  }
  p = PUT_LIT(p, "Content-Length: ");
  p = put_uint(p, body_len);
  p = PUT_LIT(p, "\r\n");
  if (!keep_alive) p = PUT_LIT(p, "Connection: close\r\n");
  else if (http10) p = PUT_LIT(p, "Connection: keep-alive\r\n");
  for (size_t i = 0; i < r->n_headers; i++) {
    const isv__header *x = &r->headers[i];
    p = put(p, x->name, x->name_len);
    p = PUT_LIT(p, ": ");
    p = put(p, x->value, x->value_len);
    p = PUT_LIT(p, "\r\n");
  }
  p = PUT_LIT(p, "\r\n");
  *len = (size_t)(p - h);
  return h;
}

static int h1_respond(isv__exchange *ex, const isv__response *resp) {
  isv__conn *c = ex->conn;
  if (c == NULL) { /* the connection is gone: drop the response */
    if (resp->release) resp->release(resp->release_ctx);
    isv__exchange_free(ex);
    return 0;
  }
  size_t body_len = 0;
  for (size_t i = 0; i < resp->n_parts; i++) body_len += resp->parts[i].len;
  int keep = c->keep_alive && !c->shutting_down;
  size_t hl;
  char *head = build_head(resp, body_len, keep, c->parser.http_major == 1 && c->parser.http_minor == 0,
                          &hl);
  if (head == NULL) {
    if (resp->release) resp->release(resp->release_ctx);
    c->ex = NULL;
    isv__exchange_free(ex);
    conn_close(c);
    return -1;
  }
  int is_head = ex->method == ISV__M_HEAD;
  return write_parts(c, ex, head, hl, is_head ? NULL : resp->parts, is_head ? 0 : resp->n_parts,
                     !keep, resp->release, resp->release_ctx);
}

/* An error found by the transport itself: answer and close. The message must be JSON-safe. */
static void respond_error(isv__conn *c, int status, const char *msg) {
  char *body = malloc(strlen(msg) + 16);
  if (body == NULL) {
    conn_close(c);
    return;
  }
  int bl = sprintf(body, "{\"error\":\"%s\"}", msg);
  isv__response r = {.status = status, .content_type = "application/json"};
  size_t hl;
  char *head = build_head(&r, (size_t)bl, 0, 0, &hl);
  if (head == NULL) {
    free(body);
    conn_close(c);
    return;
  }
  uv_buf_t part = uv_buf_init(body, (unsigned)bl);
  read_stop(c);
  uv_timer_stop(&c->timer);
  c->shutting_down = 1;
  write_parts(c, NULL, head, hl, &part, 1, 1, free, body);
}

/* ---- parsing ----------------------------------------------------------------------------- */

static isv__conn *conn_of(llhttp_t *p) { return p->data; }

static int fail(isv__conn *c, int status, const char *msg) {
  c->err_status = status;
  c->err_msg = msg;
  return -1;
}

static int head_append(isv__conn *c, const char *p, size_t n) {
  if (c->head.len + n > c->t->limits.max_header_bytes)
    return fail(c, 431, "request line and headers exceed the server's limit");
  isv__buf_append(&c->head, p, n);
  return c->head.failed ? fail(c, 500, "out of memory") : 0;
}

static void body_release(isv__conn *c) {
  if (c->body_big) isv__bigbuf_free(c->body.data);
  else isv__buf_free(&c->body);
  isv__buf_init(&c->body);
  c->body_big = 0;
}

static int on_message_begin(llhttp_t *p) {
  isv__conn *c = conn_of(p);
  c->in_message = 1;
  c->headers_done = 0;
  c->last_span = 0;
  c->head.len = 0;
  c->url_len = 0;
  c->n_hdrs = 0;
  c->body_expected = 0;
  timer_start(c, c->t->limits.header_timeout_ms);
  return 0;
}

static int on_url(llhttp_t *p, const char *at, size_t n) {
  isv__conn *c = conn_of(p);
  c->last_span = 1;
  c->url_len += n;
  return head_append(c, at, n);
}

static int on_header_field(llhttp_t *p, const char *at, size_t n) {
  isv__conn *c = conn_of(p);
  if (c->last_span != 2) {
    if (c->n_hdrs == 100) return fail(c, 431, "too many request headers (limit 100)");
    if (c->n_hdrs == c->cap_hdrs) {
      size_t nc = c->cap_hdrs ? c->cap_hdrs * 2 : 16;
      hdr_span *nh = realloc(c->hdrs, nc * sizeof *nh);
      if (nh == NULL) return fail(c, 500, "out of memory");
      c->hdrs = nh;
      c->cap_hdrs = nc;
    }
    hdr_span *h = &c->hdrs[c->n_hdrs++];
    h->no = c->head.len;
    h->nl = h->vl = 0;
    h->vo = 0;
    c->last_span = 2;
  }
  c->hdrs[c->n_hdrs - 1].nl += n;
  return head_append(c, at, n);
}

static int on_header_value(llhttp_t *p, const char *at, size_t n) {
  isv__conn *c = conn_of(p);
  if (c->n_hdrs == 0) return 0;
  hdr_span *h = &c->hdrs[c->n_hdrs - 1];
  if (c->last_span != 3) {
    h->vo = c->head.len;
    c->last_span = 3;
  }
  h->vl += n;
  return head_append(c, at, n);
}

static const char *find_header(isv__conn *c, const char *name, size_t *len) {
  size_t n = strlen(name);
  for (size_t i = 0; i < c->n_hdrs; i++)
    if (c->hdrs[i].nl == n && strncasecmp(c->head.data + c->hdrs[i].no, name, n) == 0) {
      *len = c->hdrs[i].vl;
      return c->head.data + c->hdrs[i].vo;
    }
  return NULL;
}

static void on_continue_written(uv_write_t *req, int status) {
  (void)status;
  free(req);
}

/* RFC 9112 §3.2: an HTTP/1.1 request carries exactly one Host header. */
static int host_count(isv__conn *c) {
  int n = 0;
  for (size_t i = 0; i < c->n_hdrs; i++)
    if (c->hdrs[i].nl == 4 && strncasecmp(c->head.data + c->hdrs[i].no, "host", 4) == 0) n++;
  return n;
}

static int on_headers_complete(llhttp_t *p) {
  isv__conn *c = conn_of(p);
  c->headers_done = 1;
  /* CONNECT asks for a tunnel: what follows is not HTTP, so answer and close. */
  if (p->method == HTTP_CONNECT) return fail(c, 405, "CONNECT is not supported: this is not a proxy");
  /* Upgrade (h2c, websocket, ...) is optional for a server (RFC 9110 §7.8): it is ignored, the
   * request is answered over HTTP/1.1 and the connection stays HTTP/1.1 (h2c clients use prior
   * knowledge; RFC 9113 deprecates the h2c upgrade). Clearing the flag here, before llhttp reads
   * it, keeps llhttp from treating the bytes after this message as another protocol. */
  p->upgrade = 0;
  if (p->http_major == 1 && p->http_minor >= 1 && host_count(c) != 1)
    return fail(c, 400, host_count(c) ? "more than one Host header" : "missing Host header");
  size_t max = c->t->limits.max_body_bytes;
  if (p->flags & F_CONTENT_LENGTH) {
    if (p->content_length > max) return fail(c, 413, "request body exceeds the server's limit");
    c->body_expected = (size_t)p->content_length;
    body_release(c);
    if (c->body_expected > 0) {
      /* One block of exactly the announced size, END-aligned: tensors sit at the end of a
       * body (the binary extension), so the last one lands aligned and is used in place.
       * Large blocks come back from the server's cache already mapped. */
      c->body.data = isv__bigbuf_alloc(c->t->bufs, c->body_expected, 1);
      if (c->body.data == NULL) return fail(c, 413, "request body too large to buffer");
      c->body.cap = c->body_expected;
      c->body_big = 1;
    }
  }
  size_t el;
  const char *e = find_header(c, "expect", &el);
  if (e && el == 12 && strncasecmp(e, "100-continue", 12) == 0 && p->http_minor >= 1) {
    static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";
    uv_write_t *w = malloc(sizeof *w);
    uv_buf_t b = uv_buf_init((char *)cont, sizeof cont - 1);
    if (w && uv_write(w, c->stream, &b, 1, on_continue_written) != 0) free(w);
  }
  /* From here the body must keep coming: each read re-arms the same bound. */
  timer_start(c, c->t->limits.header_timeout_ms);
  return 0;
}

static int on_body(llhttp_t *p, const char *at, size_t n) {
  isv__conn *c = conn_of(p);
  if (c->body.len + n > c->t->limits.max_body_bytes)
    return fail(c, 413, "request body exceeds the server's limit");
  if (c->body.data && at == c->body.data + c->body.len && c->body.len + n <= c->body.cap) {
    c->body.len += n; /* read in place by on_alloc */
    return 0;
  }
  if (c->body_big && n > c->body.cap - c->body.len) /* llhttp enforces Content-Length */
    return fail(c, 400, "request body longer than its Content-Length");
  isv__buf_append(&c->body, at, n);
  return c->body.failed ? fail(c, 500, "out of memory") : 0;
}

static isv__method method_of(int m) {
  switch (m) {
  case HTTP_GET: return ISV__M_GET;
  case HTTP_HEAD: return ISV__M_HEAD;
  case HTTP_POST: return ISV__M_POST;
  case HTTP_PUT: return ISV__M_PUT;
  case HTTP_DELETE: return ISV__M_DELETE;
  case HTTP_OPTIONS: return ISV__M_OPTIONS;
  default: return ISV__M_OTHER;
  }
}

/* Build the exchange from the accumulated request; the connection's buffers move into it. */
static int on_message_complete(llhttp_t *p) {
  isv__conn *c = conn_of(p);
  isv__exchange *ex = calloc(1, sizeof *ex);
  isv__header *hs = calloc(c->n_hdrs ? c->n_hdrs : 1, sizeof *hs);
  /* storage: the head text, then a NUL-terminated copy of the path and of the query */
  char *st = malloc(c->head.len + c->url_len + 2);
  if (ex == NULL || hs == NULL || st == NULL) {
    free(ex);
    free(hs);
    free(st);
    return fail(c, 500, "out of memory");
  }
  memcpy(st, c->head.data, c->head.len);
  char *tail = st + c->head.len;
  /* absolute-form "http://host/path?q" (RFC 9112 §3.2.2): serve its path, ignore the authority */
  const char *url = c->head.data;
  size_t url_len = c->url_len;
  if (url_len > 7 && (strncasecmp(url, "http://", 7) == 0 || strncasecmp(url, "https://", 8) == 0)) {
    const char *a = url + (url[4] == ':' ? 7 : 8);
    const char *slash = memchr(a, '/', url_len - (size_t)(a - url));
    const char *qm = memchr(a, '?', url_len - (size_t)(a - url));
    const char *start = slash && (!qm || slash < qm) ? slash : qm;
    if (start == NULL) {
      memcpy(tail, "/", 1);
      url_len = 1;
    } else if (*start == '?') {
      tail[0] = '/';
      memcpy(tail + 1, start, url_len - (size_t)(start - url));
      url_len = url_len - (size_t)(start - url) + 1;
    } else {
      url_len -= (size_t)(start - url);
      memcpy(tail, start, url_len);
    }
  } else {
    memcpy(tail, url, url_len);
  }
  char *q = memchr(tail, '?', url_len);
  size_t plen = q ? (size_t)(q - tail) : url_len;
  ex->path = tail;
  ex->path_len = plen;
  if (q) {
    ex->query = q + 1;
    ex->query_len = url_len - plen - 1;
    ex->query[ex->query_len] = '\0';
    *q = '\0';
  } else {
    tail[plen] = '\0';
    ex->query = tail + plen; /* "" */
    ex->query_len = 0;
  }
  for (size_t i = 0; i < c->n_hdrs; i++) {
    hs[i].name = st + c->hdrs[i].no;
    hs[i].name_len = c->hdrs[i].nl;
    hs[i].value = st + c->hdrs[i].vo;
    hs[i].value_len = c->hdrs[i].vl;
  }
  ex->headers = hs;
  ex->n_headers = c->n_hdrs;
  ex->storage = st;
  ex->method = method_of(p->method);
  ex->method_name = llhttp_method_name((llhttp_method_t)p->method);
  ex->body = c->body.data;
  ex->body_len = c->body.len;
  ex->body_big = c->body_big;
  isv__buf_init(&c->body);
  c->body_big = 0;
  ex->conn = c;
  ex->respond = h1_respond;
  c->ex = ex;
  c->in_message = 0;
  c->keep_alive = llhttp_should_keep_alive(p);
  return HPE_PAUSED;
}

/* Const, no lazy initialisation: two servers may start on two threads at once. The callbacks
 * this parser does not use stay NULL, as llhttp_settings_init() would leave them. */
static const llhttp_settings_t settings = {
    .on_message_begin = on_message_begin,
    .on_url = on_url,
    .on_header_field = on_header_field,
    .on_header_value = on_header_value,
    .on_headers_complete = on_headers_complete,
    .on_body = on_body,
    .on_message_complete = on_message_complete,
};

static void dispatch(isv__conn *c) {
  uv_timer_stop(&c->timer);
  c->t->on_exchange(c->t->app, c->ex);
}

static void execute(isv__conn *c, const char *data, size_t len) {
  llhttp_errno_t err = llhttp_execute(&c->parser, data, len);
  if (err == HPE_OK) return;
  /* The one pause that dispatches: on_message_complete's, with its exchange built. Every other
   * code — HPE_PAUSED_UPGRADE included, which on_headers_complete rules out — is answered as
   * an error of the request and never reaches the router. */
  if (err == HPE_PAUSED && c->ex != NULL) {
    const char *pos = llhttp_get_error_pos(&c->parser);
    size_t used = pos ? (size_t)(pos - data) : len;
    if (used < len && keep_pending(c, data + used, len - used) != 0) return;
    dispatch(c);
    return;
  }
  if (c->err_status) {
    respond_error(c, c->err_status, c->err_msg);
    return;
  }
  char msg[160];
  const char *reason = llhttp_get_error_reason(&c->parser);
  snprintf(msg, sizeof msg, "malformed HTTP request: %s", reason ? reason : llhttp_errno_name(err));
  for (char *m = msg; *m; m++)
    if (*m == '"' || *m == '\\' || (unsigned char)*m < 0x20) *m = ' ';
  respond_error(c, 400, msg);
}

/* ---- reading ----------------------------------------------------------------------------- */

static void on_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf) {
  (void)hint;
  isv__conn *c = h->data;
  /* A body of known length is read straight into its buffer (no copy). */
  size_t left = body_left(c);
  if (left) {
    *buf = uv_buf_init(c->body.data + c->body.len, (unsigned)(left > (1u << 30) ? 1u << 30 : left));
    return;
  }
  *buf = uv_buf_init(c->t->rbuf, sizeof c->t->rbuf);
}

/* Decide between HTTP/1.1 and HTTP/2 on the first bytes: the preface is 24 bytes and may
 * arrive split, so a prefix of it waits in c->sniff until it matches or stops matching. */
static void sniff(isv__conn *c, const char *data, size_t len) {
  size_t want = ISV__H2_PREFACE_LEN - c->sniff_len, take = len < want ? len : want;
  memcpy(c->sniff + c->sniff_len, data, take);
  c->sniff_len += take;
  int is_prefix = memcmp(c->sniff, ISV__H2_PREFACE, c->sniff_len) == 0;
  if (is_prefix && c->sniff_len < ISV__H2_PREFACE_LEN) return; /* need more */
  c->sniffed = 1;
  if (is_prefix) {
    if (isv__h2_start(c, c->sniff, c->sniff_len) == 0 && len > take && c->h2)
      isv__h2_on_read(c, data + take, len - take);
    return;
  }
  /* HTTP/1.x: replay what was held back, then the rest of this read */
  char held[ISV__H2_PREFACE_LEN];
  size_t n = c->sniff_len;
  memcpy(held, c->sniff, n);
  execute(c, held, n);
  if (c->shutting_down) return; /* an error answer is on its way; the rest is dropped */
  if (len > take && !c->closing && c->ex == NULL && c->pending == NULL)
    execute(c, data + take, len - take);
  else if (len > take && !c->closing) /* paused on a message inside the held bytes */
    keep_pending(c, data + take, len - take);
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf) {
  isv__conn *c = s->data;
  if (nread == 0) return;
  if (nread < 0) {
    /* A half-close after a request still wants its answer (HTTP/1.0 clients, `nc -q`). */
    if (nread == UV_EOF && c->h2 == NULL && c->ex != NULL) {
      c->peer_eof = 1;
      read_stop(c);
      return;
    }
    conn_close(c);
    return;
  }
  if (c->h2) {
    isv__h2_on_read(c, buf->base, (size_t)nread);
    return;
  }
  if (!c->sniffed) {
    sniff(c, buf->base, (size_t)nread);
    if (!c->closing && c->h2 == NULL && c->sniffed) batch_reads(c);
    return;
  }
  if (c->ex != NULL) { /* pipelined behind the request being answered */
    keep_pending(c, buf->base, (size_t)nread);
    return;
  }
  if (c->in_message && c->headers_done) timer_start(c, c->t->limits.header_timeout_ms);
  execute(c, buf->base, (size_t)nread);
  if (!c->closing) batch_reads(c);
}

static void on_timer(uv_timer_t *h) {
  isv__conn *c = h->data;
  if (c->h2) { /* idle (no open stream), or the read-batching watchdog */
    if (!isv__h2_on_timer(c)) conn_close(c);
    return;
  }
  if (c->lowat > 1) { /* the client paused mid-body: take what it sent, then time it as ever */
    isv__conn_set_lowat(c, 1);
    timer_start(c, c->t->limits.header_timeout_ms);
    return;
  }
  if (c->ex) return;
  if (c->in_message) {
    respond_error(c, 408, "request not received in time");
    return;
  }
  conn_close(c);
}

/* ---- lifecycle --------------------------------------------------------------------------- */

static void on_handle_closed(uv_handle_t *h) {
  isv__conn *c = h->data;
  if (--c->handles_open > 0) return;
  isv__transport *t = c->t;
  if (c->prev) c->prev->next = c->next;
  else t->conns = c->next;
  if (c->next) c->next->prev = c->prev;
  t->n_conns--;
  isv__buf_free(&c->head);
  body_release(c);
  free(c->hdrs);
  free(c->pending);
  if (c->adopted) free(c->stream);
  free(c);
  isv__transport_conn_gone(t);
}

static void conn_close(isv__conn *c) {
  if (c->closing) return;
  c->closing = 1;
  if (c->h2) isv__h2_free(c);
  if (c->ex) {
    c->ex->conn = NULL; /* its handler will answer into the void */
    c->ex = NULL;
  }
  uv_close((uv_handle_t *)c->stream, on_handle_closed);
  uv_close((uv_handle_t *)&c->timer, on_handle_closed);
}

isv__conn *isv__h1_conn_new(isv__transport *t, uv_stream_t *stream, int adopted) {
  isv__conn *c = calloc(1, sizeof *c);
  if (c == NULL) return NULL;
  c->t = t;
  c->adopted = adopted;
  if (adopted) {
    c->stream = stream;
  } else {
    uv_tcp_init(t->loop, &c->tcp);
    c->stream = (uv_stream_t *)&c->tcp;
  }
  c->stream->data = c;
  uv_timer_init(t->loop, &c->timer);
  c->timer.data = c;
  c->handles_open = 2;
  isv__buf_init(&c->head);
  isv__buf_init(&c->body);
  llhttp_init(&c->parser, HTTP_REQUEST, &settings);
  c->parser.data = c;
  c->next = t->conns;
  if (t->conns) t->conns->prev = c;
  t->conns = c;
  t->n_conns++;
  return c;
}

void isv__h1_conn_start(isv__conn *c) {
  if (c->stream->type == UV_TCP) uv_tcp_nodelay((uv_tcp_t *)c->stream, 1);
  timer_start(c, c->t->limits.idle_timeout_ms);
  if (uv_read_start(c->stream, on_alloc, on_read) != 0) conn_close(c);
  else c->reading = 1;
}

void isv__conn_close(isv__conn *c) { conn_close(c); }

void isv__conn_timer_start(isv__conn *c, uint64_t ms) { timer_start(c, ms); }

void isv__h1_conn_shutdown(isv__conn *c) {
  if (c->h2) {
    isv__h2_shutdown(c);
    return;
  }
  c->shutting_down = 1;
  if (c->ex == NULL) conn_close(c);
}

uv_stream_t *isv__conn_stream(isv__conn *c) { return c->stream; }

void isv__h1_conn_abort(isv__conn *c) { conn_close(c); }
