/* The HTTP/1.1 engine (llhttp) of a connection (conn.h).
 *
 * A message that arrives whole and in the plain shape nearly every client sends is read by
 * transport/h1_quick.c in one pass instead, with llhttp's result (tests/unit/test_h1_quick.c,
 * fuzz_h1_quick): it stores what llhttp's callbacks would have stored, and the same checks and
 * the same exchange follow (quick_message). Anything else — a head cut across reads, chunked
 * bodies, Connection fields, any unusual byte — is llhttp's, as before; llhttp's state between
 * messages is a new message's, which the quick reading leaves as it is.
 *
 * One request at a time per connection: when a message is complete the parser is paused until
 * its response is written, so pipelined responses leave in order. Reading goes on meanwhile
 * (no epoll_ctl per request): what arrives is kept in `pending`, parsed once the response is
 * out; past ISV__PIPELINE_MAX bytes reading stops, so a client cannot queue unbounded work.
 * Reading on also hears a client that goes away while its request is answered: EOF (a
 * half-close counts as gone, as nginx takes it) or an error cancels the exchange (exchange.h);
 * past ISV__PIPELINE_MAX that is heard only when a write fails.
 *
 * A streamed answer (exchange.h) goes out piece by piece as the handler writes them: chunks for
 * an HTTP/1.1 client, the raw body for HTTP/1.0 (which then ends with the connection). The
 * next pipelined request waits for its end. While it waits for the handler no deadline runs (the
 * handler's time, not the client's); conn.c's send timeout watches what was written.
 *
 * Memory: reads land in the transport's shared buffer and are copied once into the request's
 * head (URL + headers) or body buffer — except a body with a known Content-Length, which
 * libuv reads straight into its final buffer (llhttp then reports the span in place), in
 * batches when it is large (conn.h, "Read batching").
 * At dispatch the exchange takes both buffers; the engine starts afresh. The exchange (with its
 * headers and head text) is one block, and a write's context with the response head another:
 * the connection keeps the last of each for its next request, so a warm keep-alive request
 * allocates only its body here.
 *
 * Errors the engine finds itself (limits, timeouts, malformed HTTP) become an exchange handed
 * to the transport's error handler with (status, message): the protocol the path belongs to
 * answers in its own shape, then the connection closes. */
#include <llhttp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "codec/buf.h"
#include "codec/numfmt.h"
#include "codec/span.h"
#include "codec/zcoding.h"
#include "transport/conn.h"
#include "transport/h1_quick.h"

#define ISV__PIPELINE_MAX (64u * 1024u)

typedef struct hdr_span {
  size_t no, nl, vo, vl;
} hdr_span;

/* The kind of span llhttp's callbacks last stored, in the order a head holds them: a header
 * field seen means the URL is whole (build_exchange). */
typedef enum h1_span { SPAN_NONE, SPAN_URL, SPAN_FIELD, SPAN_VALUE } h1_span;

typedef struct h1 {
  /* What every request reads or writes first (as isv__conn's front: fewer of its lines for a
   * request to bring back into the cache), the rarer and the larger after. */
  isv__conn *c;
  /* the request being read */
  int in_message;
  int headers_done;
  int method; /* llhttp's number, and whether it is HTTP/1.0: once headers_done */
  int http10;
  h1_span last_span; /* what the last bytes stored were: a field's next bytes extend it */
  int keep_alive;
  int body_big;
  int peer_eof;      /* the client half-closed: answer what it sent, then close */
  /* the request being answered */
  isv__exchange *ex; /* dispatched, its answer not yet all written */
  int wire_done;     /* ex's answer is complete on our side: once written, the next request */
  int chunked;       /* ex's streamed body goes as chunks */
  int close_after;   /* close once ex's answer is written */
  int shutting_down; /* close once the in-flight response is written */
  int want_writable; /* isv__exchange_writable said no: ex->on_writable once they drain */
  size_t queued;     /* bytes handed to isv__conn_write and not yet written (backpressure) */
  char *pending;     /* bytes read past it */
  size_t pending_len;
  isv__buf head;
  size_t url_len;
  hdr_span *hdrs;
  size_t n_hdrs, cap_hdrs;
  isv__buf body; /* from isv__bigbuf_alloc when body_big, else malloc'd */
  struct h1_fault *faulting; /* body.data's fresh pages being faulted in on the pool */
  size_t body_expected; /* Content-Length, when known */
  size_t reserved;      /* of the server's receiving budget (isv__conn_reserve) */
  uint64_t body_start;  /* isv__conn_now() when the headers were complete */
  isv__exchange *spare_ex; /* the last exchange's block (ex->block bytes), for the next */
  struct write_ctx *spare; /* the last write's block, for the next (freed with h) */
  llhttp_t parser;
  int err_status;       /* a limit or syntax error found inside a callback */
  const char *err_msg;
  char err_text[160]; /* err_msg when it names what the client sent */
} h1;

static h1 *h1_of(isv__conn *c) { return c->proto_state; }

/* An exchange block's least size: the exchange, a dozen headers and a short head fit. */
#define EX_BLOCK_MIN (sizeof(isv__exchange) + 12 * sizeof(isv__header) + 512)
/* A block this small is kept for the connection's next request (a kept block is memory an idle
 * connection holds). The body is not in it: the front end may give the body to the request,
 * which can outlive the exchange (a backend abandoned at close still reads its inputs). */
#define EX_SPARE_MAX 4096

/* The size of an exchange block's front — the exchange, its headers, its storage — for the
 * message read so far (with n_hdrs headers). */
static size_t ex_front(const h1 *h, size_t n_hdrs) {
  return sizeof(isv__exchange) + (n_hdrs ? n_hdrs : 1) * sizeof(isv__header) + h->head.len +
         h->url_len + 2;
}

/* The loop's warm blocks (isv__transport.h1_warm_*): the top one, or NULL. */
static void *warm_top(const isv__h1_warm *w) { return w->n ? w->block[w->n - 1] : NULL; }
static int warm_put(isv__h1_warm *w, void *block) {
  if (w->n == ISV__H1_WARM) return 0;
  w->block[w->n++] = block;
  return 1;
}
static void warm_drop(isv__h1_warm *w) {
  while (w->n) isv__free(w->block[--w->n]);
}

/* A block of at least `need` bytes: the loop's last one let go of, the connection's spare, or a
 * new one. */
static isv__exchange *take_block(h1 *h, size_t need) {
  isv__h1_warm *warm = &h->c->t->h1_warm_ex;
  isv__exchange *ex = warm_top(warm);
  if (ex && ex->block >= need) {
    warm->n--;
    return ex;
  }
  ex = h->spare_ex;
  if (ex && ex->block >= need) {
    h->spare_ex = NULL;
    return ex;
  }
  size_t block = need < EX_BLOCK_MIN ? EX_BLOCK_MIN : need;
  if ((ex = isv__malloc(h->c->t->mem, block)) == NULL) return NULL;
  ex->block = block;
  return ex;
}

/* A block nothing points into any more: kept for the next exchange (the loop's first, then the
 * connection's: many requests of a loop may be in flight at once), or freed. */
static void give_block(h1 *h, isv__exchange *ex) {
  if (ex->block <= EX_SPARE_MAX) {
    if (warm_put(&h->c->t->h1_warm_ex, ex)) return;
    if (h->spare_ex == NULL || h->spare_ex->block < ex->block) {
      isv__free(h->spare_ex);
      h->spare_ex = ex;
      return;
    }
  }
  isv__free(ex);
}
static void execute(h1 *h, const char *data, size_t len);
static int keep_pending(h1 *h, const char *data, size_t len);
static size_t body_left(const h1 *h);
static void unreserve(h1 *h);

/* ---- writing ----------------------------------------------------------------------------- */

/* One write: the piece's context and, in the same block, the head text it starts with. A
 * connection keeps the last one for the next (h1.spare): an answer costs no allocation here. */
typedef struct write_ctx {
  isv__exchange *ex;
  void (*release)(void *);
  void *release_ctx;
  size_t len;         /* its bytes and ISV__QUEUED_PIECE_COST, counted in h1.queued */
  char size_line[24]; /* a chunk's "<hex size>\r\n" */
  size_t cap;         /* of head[] */
  char head[];        /* the status line and headers, when the piece starts with them */
} write_ctx;

/* Heads above this are not kept for the next answer (a handler's many headers). */
#define SPARE_HEAD_MAX 2048
#define SPARE_HEAD_MIN 512

static const char crlf[] = "\r\n";
static const char last_chunk[] = "0\r\n\r\n";

/* llhttp was paused: go on, with the bytes kept meanwhile (h->pending). */
static void parse_pending(h1 *h) {
  char *p = h->pending;
  size_t n = h->pending_len;
  h->pending = NULL;
  h->pending_len = 0;
  llhttp_resume(&h->parser);
  if (n) execute(h, p, n);
  isv__free(p);
}

/* The response is written: parse what came meanwhile, then go on reading. */
static void resume(h1 *h) {
  isv__conn *c = h->c;
  isv__conn_deadline(c, c->t->limits.idle_timeout_ms);
  isv__conn_idle(c, 1); /* until the next message begins */
  parse_pending(h);
  if (c->closing || h->shutting_down) return;
  if (h->ex == NULL && h->peer_eof) { /* everything the client sent is answered */
    isv__conn_close(c);
    return;
  }
  if (!h->peer_eof && !h->faulting && h->pending_len < ISV__PIPELINE_MAX) isv__conn_read_start(c);
}

/* ex's answer is all written: let go of it, then the next request — or close. Never called
 * from inside a handler's call unless it closes (no request is dispatched from under it). */
static void answered(h1 *h) {
  isv__conn *c = h->c;
  isv__exchange *ex = h->ex;
  h->ex = NULL;
  h->wire_done = 0;
  h->want_writable = 0;
  ex->conn = NULL;
  /* a HEAD's streamed answer stays the handler's until its end */
  if (ex->phase == ISV__EX_DONE && ex->refs == 0 && ex->block) {
    isv__exchange_clear(ex); /* what collect would do, but its block is kept for the next */
    give_block(h, ex);
  } else {
    isv__exchange_collect(ex);
  }
  if (h->close_after || h->shutting_down) {
    if (h->peer_eof) isv__conn_close(c); /* it sends nothing more */
    else isv__conn_linger_close(c);      /* it may still be sending: let it read the answer */
    return;
  }
  resume(h);
}

/* The bound on what a streamed answer has queued: HTTP/1.1 carries one answer at a time, so
 * its stream's bound and its connection's are one (the smaller). 0: none. */
static size_t queue_bound(const isv__conn *c) {
  size_t s = c->t->limits.max_queued_stream, k = c->t->limits.max_queued_conn;
  return s && k ? (s < k ? s : k) : s ? s : k;
}

static int h1_writable(isv__exchange *ex) {
  isv__conn *c = ex->conn;
  h1 *h = h1_of(c);
  size_t bound = queue_bound(c);
  if (bound == 0 || h->queued < bound) return 1;
  h->want_writable = 1;
  return 0;
}

/* A write block with room for a head of `head_cap` bytes: the loop's last one let go of, the
 * connection's spare, or a new one. */
static write_ctx *take_write(h1 *h, size_t head_cap) {
  isv__h1_warm *warm = &h->c->t->h1_warm_write;
  write_ctx *w = warm_top(warm);
  if (w && w->cap >= head_cap) {
    warm->n--;
  } else if ((w = h->spare) != NULL && w->cap >= head_cap) {
    h->spare = NULL;
  } else {
    if (head_cap < SPARE_HEAD_MIN) head_cap = SPARE_HEAD_MIN;
    w = isv__malloc(h->c->t->mem, sizeof *w + head_cap);
    if (w == NULL) return NULL;
    w->cap = head_cap;
  }
  w->ex = NULL;
  w->release = NULL;
  w->release_ctx = NULL;
  w->len = 0;
  return w;
}

/* Back to the loop, or else the connection, for the next write (h NULL: the engine is gone). */
static void give_write(h1 *h, write_ctx *w) {
  if (h && w->cap <= SPARE_HEAD_MAX) {
    if (warm_put(&h->c->t->h1_warm_write, w)) return;
    if (h->spare == NULL || h->spare->cap < w->cap) {
      isv__free(h->spare);
      h->spare = w;
      return;
    }
  }
  isv__free(w);
}

static void on_written(isv__conn *c, void *ctx, int status) {
  write_ctx *w = ctx;
  isv__exchange *ex = w->ex;
  size_t len = w->len;
  if (w->release) w->release(w->release_ctx);
  h1 *h = c->closing ? NULL : h1_of(c);
  give_write(h, w);
  ex->refs--;
  if (h) h->queued -= len;
  if (h == NULL || h->ex != ex) { /* the connection let go of it */
    isv__exchange_collect(ex);
    return;
  }
  if (status < 0) isv__conn_close(c); /* the exchange, if still streaming, is cancelled */
  else if (h->wire_done && ex->refs == 0) answered(h);
  else if (h->want_writable && h->queued <= queue_bound(c) / 2 && ex->phase == ISV__EX_STREAMING) {
    h->want_writable = 0;
    if (ex->on_writable) ex->on_writable(ex); /* last: it may write or end ex */
  }
}

static size_t fmt_hex(char *p, size_t v) {
  char tmp[sizeof(size_t) * 2];
  size_t n = 0;
  do {
    tmp[n++] = "0123456789abcdef"[v & 15];
    v >>= 4;
  } while (v);
  for (size_t i = 0; i < n; i++) p[i] = tmp[n - 1 - i];
  return n;
}

/* Queue w's head (head_len bytes of w->head; w NULL: no head) + parts, the parts framed as one
 * chunk when `chunk` and they are not empty, in one write. Gives w back and calls release in
 * every case. 0, or -1 after closing the connection (ex may be gone then). */
static int write_parts(h1 *h, isv__exchange *ex, write_ctx *w, size_t head_len,
                       const uv_buf_t *parts, size_t n_parts, int chunk,
                       void (*release)(void *), void *ctx) {
  size_t body = 0;
  for (size_t i = 0; i < n_parts; i++) body += parts[i].len;
  chunk = chunk && body > 0;
  int has_head = w != NULL;
  if (w == NULL) w = take_write(h, 0);
  uv_buf_t stackbufs[8];
  uv_buf_t *bufs = n_parts + 3 <= 8 ? stackbufs : isv__malloc(h->c->t->mem, (n_parts + 3) * sizeof *bufs);
  int rc = ISV_ENOMEM;
  if (w != NULL && bufs != NULL) {
    w->ex = ex;
    w->release = release;
    w->release_ctx = ctx;
    size_t nb = 0;
    if (has_head) bufs[nb++] = uv_buf_init(w->head, (unsigned)head_len);
    if (chunk) {
      size_t k = fmt_hex(w->size_line, body);
      memcpy(w->size_line + k, crlf, 2);
      bufs[nb++] = uv_buf_init(w->size_line, (unsigned)k + 2);
    }
    for (size_t i = 0; i < n_parts; i++)
      if (parts[i].len) bufs[nb++] = parts[i];
    if (chunk) bufs[nb++] = uv_buf_init((char *)crlf, 2);
    for (size_t i = 0; i < nb; i++) w->len += bufs[i].len;
    w->len += ISV__QUEUED_PIECE_COST; /* a piece costs more than its bytes */
    ex->refs++;
    h->queued += w->len;
    rc = isv__conn_write(h->c, bufs, nb, on_written, w);
    if (rc != 0) {
      ex->refs--;
      h->queued -= w->len;
    }
  }
  if (bufs != stackbufs) isv__free(bufs);
  if (rc == 0) return 0;
  if (w) give_write(h, w);
  if (release) release(ctx);
  isv__conn_close(h->c);
  return -1;
}

static size_t head_size(const isv__response *r, size_t ct_len) {
  size_t n = 256 + ct_len;
  for (size_t i = 0; i < r->n_headers; i++) n += r->headers[i].name_len + r->headers[i].value_len + 4;
  return n;
}

static char *put(char *p, const char *s, size_t n) {
  memcpy(p, s, n);
  return p + n;
}
#define PUT_LIT(p, lit) put((p), (lit), sizeof(lit) - 1)

/* How the body's end is told: its length, the last chunk, or the connection's close. */
enum { BODY_LENGTH, BODY_CHUNKED, BODY_TO_CLOSE };

/* The status line and headers, into h (head_size(r, ct_len) bytes; ct_len is the length of
 * r's content type). Every response goes through here: no snprintf. */
static void build_head(char *h, const isv__response *r, size_t ct_len, int framing,
                       size_t body_len, int keep_alive, int http10, size_t *len) {
  char *p;
  if (r->status == 200) { /* most answers: the line whole */
    p = PUT_LIT(h, "HTTP/1.1 200 OK\r\n");
  } else {
    const char *reason = isv__http_reason(r->status);
    p = PUT_LIT(h, "HTTP/1.1 ");
    p += isv__fmt_u64(p, (uint64_t)(r->status >= 100 && r->status <= 999 ? r->status : 500));
    *p++ = ' ';
    p = put(p, reason, strlen(reason));
    p = PUT_LIT(p, "\r\n");
  }
  if (r->content_type) {
    p = PUT_LIT(p, "Content-Type: ");
    p = put(p, r->content_type, ct_len);
    p = PUT_LIT(p, "\r\n");
  }
  if (framing == BODY_LENGTH) {
    p = PUT_LIT(p, "Content-Length: ");
    p += isv__fmt_u64(p, body_len);
    p = PUT_LIT(p, "\r\n");
  } else if (framing == BODY_CHUNKED) {
    p = PUT_LIT(p, "Transfer-Encoding: chunked\r\n");
  }
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
}

static int h1_respond(isv__exchange *ex, const isv__response *resp) {
  isv__conn *c = ex->conn;
  ex->phase = resp->more ? ISV__EX_STREAMING : ISV__EX_DONE;
  if (c == NULL) { /* the connection is gone: drop the response */
    if (resp->release) resp->release(resp->release_ctx);
    isv__exchange_collect(ex);
    return 0;
  }
  h1 *h = h1_of(c);
  size_t body_len = 0;
  for (size_t i = 0; i < resp->n_parts; i++) body_len += resp->parts[i].len;
  int http10 = h->headers_done ? h->http10 : h->parser.http_major == 1 && h->parser.http_minor == 0;
  int is_head = ex->method == ISV__M_HEAD;
  int framing = !resp->more ? BODY_LENGTH : http10 ? BODY_TO_CLOSE : BODY_CHUNKED;
  /* an HTTP/1.0 body of unknown length ends when the connection does */
  h->close_after = !h->keep_alive || h->shutting_down || (framing == BODY_TO_CLOSE && !is_head);
  h->chunked = framing == BODY_CHUNKED && !is_head;
  h->wire_done = !resp->more || is_head; /* HEAD: the head is the whole answer */
  size_t hl;
  size_t ct_len = resp->content_type ? strlen(resp->content_type) : 0;
  write_ctx *head = take_write(h, head_size(resp, ct_len));
  if (head != NULL)
    build_head(head->head, resp, ct_len, framing, body_len, !h->close_after, http10, &hl);
  if (head == NULL) {
    if (resp->release) resp->release(resp->release_ctx);
    isv__conn_close(c); /* lets go of ex */
    return ISV_ENOMEM;
  }
  if (is_head) {
    if (resp->release) resp->release(resp->release_ctx);
    return write_parts(h, ex, head, hl, NULL, 0, 0, NULL, NULL) ? ISV_EIO : 0;
  }
  return write_parts(h, ex, head, hl, resp->parts, resp->n_parts, h->chunked, resp->release,
                     resp->release_ctx)
             ? ISV_EIO
             : 0;
}

static int h1_write(isv__exchange *ex, const uv_buf_t *parts, size_t n, void (*release)(void *),
                    void *ctx) {
  isv__conn *c = ex->conn;
  size_t len = 0;
  for (size_t i = 0; i < n; i++) len += parts[i].len;
  if (c == NULL || len == 0 || ex->method == ISV__M_HEAD) {
    if (release) release(ctx);
    return c == NULL && ex->cancelled ? ISV_ECANCELED : 0;
  }
  h1 *h = h1_of(c);
  return write_parts(h, ex, NULL, 0, parts, n, h->chunked, release, ctx) ? ISV_ECANCELED : 0;
}

static int h1_end(isv__exchange *ex) {
  isv__conn *c = ex->conn;
  ex->phase = ISV__EX_DONE;
  if (c == NULL) {
    isv__exchange_collect(ex);
    return 0;
  }
  h1 *h = h1_of(c);
  h->wire_done = 1;
  if (h->chunked) {
    uv_buf_t last = uv_buf_init((char *)last_chunk, sizeof last_chunk - 1);
    write_parts(h, ex, NULL, 0, &last, 1, 0, NULL, NULL);
  } else if (ex->refs == 0) {
    answered(h); /* the body ends with the connection (HTTP/1.0): it closes now */
  }
  return 0;
}

/* ---- the exchange ------------------------------------------------------------------------ */

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

/* An exchange from what was read of the request: everything (a complete message), or, for an
 * error found on the way, the path once the request line is read and the headers once they
 * are. The engine's buffers move into it. NULL when out of memory. */
static isv__exchange *build_exchange(h1 *h, int complete) {
  int have_url = complete || h->headers_done || h->last_span >= SPAN_FIELD;
  size_t n_hdrs = complete || h->headers_done ? h->n_hdrs : 0;
  /* One block: the exchange, its headers, then its storage — the head text, then a
   * NUL-terminated copy of the path and of the query. The connection's spare when it is large
   * enough (the last exchange's, answered: see answered()). */
  size_t hs_bytes = (n_hdrs ? n_hdrs : 1) * sizeof(isv__header);
  size_t need = ex_front(h, n_hdrs);
  isv__exchange *ex = take_block(h, need);
  if (ex == NULL) return NULL;
  size_t block = ex->block;
  memset(ex, 0, sizeof *ex + hs_bytes);
  ex->block = block;
  ex->mem = h->c->t->mem;
  isv__header *hs = (isv__header *)(ex + 1);
  char *st = (char *)hs + hs_bytes;
  if (h->head.len) memcpy(st, h->head.data, h->head.len);
  if (have_url) {
    char *tail = st + h->head.len;
    /* absolute-form "http://host/path?q" (RFC 9112 §3.2.2): its path; the authority is ignored */
    const char *url = h->head.data;
    size_t url_len = h->url_len;
    if (url_len > 7 && (isv__bytes_same_nocase(url, "http://", 7) ||
                        isv__bytes_same_nocase(url, "https://", 8))) {
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
    } else if (url_len) {
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
    }
  }
  for (size_t i = 0; i < n_hdrs; i++) {
    hs[i].name = st + h->hdrs[i].no;
    hs[i].name_len = h->hdrs[i].nl;
    hs[i].value = st + h->hdrs[i].vo;
    hs[i].value_len = h->hdrs[i].vl;
    /* RFC 9110 §5.5: a field value excludes the whitespace around it (llhttp drops the
     * leading) */
    while (hs[i].value_len &&
           (hs[i].value[hs[i].value_len - 1] == ' ' || hs[i].value[hs[i].value_len - 1] == '\t'))
      hs[i].value_len--;
  }
  ex->headers = hs;
  ex->n_headers = n_hdrs;
  ex->storage = st;
  int method = h->headers_done ? h->method : h->parser.method;
  ex->method = method_of(method);
  ex->method_name = method || complete || h->last_span != SPAN_NONE
                        ? llhttp_method_name((llhttp_method_t)method)
                        : "";
  if (complete) {
    ex->body = h->body.data;
    ex->body_len = h->body.len;
    ex->body_big = h->body_big;
    isv__buf_init(&h->body, h->c->t->mem);
    h->body_big = 0;
  }
  ex->conn = h->c;
  isv__conn_stamp(h->c, ex);
  isv__exchange_start_access(ex, h->c->t->h.access, h->c->t->h.app, "http/1.1");
  ex->respond = h1_respond;
  ex->write = h1_write;
  ex->end = h1_end;
  ex->writable = h1_writable;
  return ex;
}

/* An error found by the engine itself: the app answers it in the shape of the path's protocol,
 * then the connection closes. */
static void early_error(h1 *h, int status, const char *msg) {
  isv__conn *c = h->c;
  unreserve(h);
  isv__conn_read_stop(c);
  isv__conn_deadline(c, 0);
  isv__conn_idle(c, 0); /* being answered */
  h->shutting_down = 1;
  isv__exchange *ex = build_exchange(h, 0);
  if (ex == NULL) {
    isv__conn_close(c);
    return;
  }
  h->ex = ex;
  c->t->h.error(c->t->h.app, ex, status, msg);
}

/* ---- parsing ----------------------------------------------------------------------------- */

static h1 *h1_parser(llhttp_t *p) { return p->data; }

static int fail(h1 *h, int status, const char *msg) {
  h->err_status = status;
  h->err_msg = msg;
  return -1;
}

static int head_append(h1 *h, const char *p, size_t n) {
  if (h->head.len + n > h->c->t->limits.max_header_bytes)
    return fail(h, 431, "request line and headers exceed the server's limit");
  isv__buf_append(&h->head, p, n);
  return h->head.failed ? fail(h, 500, "out of memory") : 0;
}

/* The receiving budget this request holds goes back: it is complete, or dropped. */
static void unreserve(h1 *h) {
  isv__conn_release(h->c, h->reserved);
  h->reserved = 0;
}

static int reserve(h1 *h, size_t n) {
  if (isv__conn_reserve(h->c, n) != 0)
    return fail(h, 503, "the server is receiving too much request data at once; retry later");
  h->reserved += n;
  return 0;
}

/* A fresh body block (isv__bigbuf_fresh) is faulted in on the server's pool before any byte is
 * read into it: reading a 64 MiB body into fresh memory had the loop zero a 2 MiB huge page per
 * read, ~2-5 ms each (bench/RESULTS.md, loop stall). Meanwhile llhttp is paused after the headers,
 * the bytes read past them wait in h->pending and reading stops; `faulted` goes on. The block
 * is the job's until then: a connection that closes meanwhile leaves it to the job to free. */
typedef struct h1_fault {
  isv__transport_job job;
  h1 *h; /* NULL: the connection let go */
  void *block;
  size_t len;
} h1_fault;

static void fault_in(isv__transport_job *j) {
  h1_fault *f = (h1_fault *)j;
  isv__bigbuf_populate(f->block, f->len);
}

static void faulted(isv__transport_job *j) {
  h1_fault *f = (h1_fault *)j;
  h1 *h = f->h;
  if (h == NULL) {
    isv__bigbuf_free(f->block);
    isv__free(f);
    return;
  }
  isv__free(f);
  h->faulting = NULL;
  isv__conn *c = h->c;
  parse_pending(h);
  if (c->closing || h->shutting_down || h->peer_eof) return;
  if (h->pending_len < ISV__PIPELINE_MAX) isv__conn_read_start(c);
  isv__conn_batch_reads(c, h->ex ? 0 : body_left(h));
}

/* 1: the body's pages are being faulted in (return HPE_PAUSED); 0: go on reading now. */
static int start_faulting(h1 *h) {
  if (!isv__bigbuf_fresh(h->body.data) || h->c->t->h.offload == NULL) return 0;
  h1_fault *f = isv__malloc(h->c->t->mem, sizeof *f);
  if (f == NULL) return 0; /* the loop faults them in as it reads */
  *f = (h1_fault){{fault_in, faulted}, h, h->body.data, h->body_expected};
  if (h->c->t->h.offload(h->c->t->h.app, &f->job) != 0) {
    isv__free(f);
    return 0;
  }
  h->faulting = f;
  return 1;
}

static void body_release(h1 *h) {
  if (h->faulting) { /* the job frees the block */
    h->faulting->h = NULL;
    h->faulting = NULL;
  } else if (h->body_big) isv__bigbuf_free(h->body.data);
  else isv__buf_free(&h->body);
  isv__buf_init(&h->body, h->c->t->mem);
  h->body_big = 0;
}

static void message_begin(h1 *h) {
  h->in_message = 1; /* still idle (isv__conn_idle) until its head is complete */
  h->headers_done = 0;
  h->last_span = SPAN_NONE;
  h->head.len = 0;
  h->url_len = 0;
  h->n_hdrs = 0;
  h->body_expected = 0;
}

static int on_message_begin(llhttp_t *p) {
  h1 *h = h1_parser(p);
  message_begin(h);
  isv__conn_deadline(h->c, h->c->t->limits.header_timeout_ms);
  return 0;
}

static int on_url(llhttp_t *p, const char *at, size_t n) {
  h1 *h = h1_parser(p);
  h->last_span = SPAN_URL;
  h->url_len += n;
  return head_append(h, at, n);
}

static int on_header_field(llhttp_t *p, const char *at, size_t n) {
  h1 *h = h1_parser(p);
  if (h->last_span != SPAN_FIELD) {
    if (h->n_hdrs == 100) return fail(h, 431, "too many request headers (limit 100)");
    if (h->n_hdrs == h->cap_hdrs) {
      size_t nc = h->cap_hdrs ? h->cap_hdrs * 2 : 16;
      hdr_span *nh = isv__realloc(h->c->t->mem, h->hdrs, nc * sizeof *nh);
      if (nh == NULL) return fail(h, 500, "out of memory");
      h->hdrs = nh;
      h->cap_hdrs = nc;
    }
    hdr_span *s = &h->hdrs[h->n_hdrs++];
    s->no = h->head.len;
    s->nl = s->vl = 0;
    s->vo = 0;
    h->last_span = SPAN_FIELD;
  }
  h->hdrs[h->n_hdrs - 1].nl += n;
  return head_append(h, at, n);
}

static int on_header_value(llhttp_t *p, const char *at, size_t n) {
  h1 *h = h1_parser(p);
  if (h->n_hdrs == 0) return 0;
  hdr_span *s = &h->hdrs[h->n_hdrs - 1];
  if (h->last_span != SPAN_VALUE) {
    s->vo = h->head.len;
    h->last_span = SPAN_VALUE;
  }
  s->vl += n;
  return head_append(h, at, n);
}

/* What headers_complete asks of a head's fields, found in one pass (names by length first):
 * how many Host lines, how many Content-Encoding lines and the first one's value, the first
 * Expect's value. Names hold no NUL (llhttp and the quick reading take tokens only). */
typedef struct head_facts {
  int hosts;
  unsigned ce_lines;
  const char *ce, *expect;
  size_t ce_len, expect_len;
} head_facts;

static void facts_of(const h1 *h, head_facts *f) {
  *f = (head_facts){0, 0, NULL, NULL, 0, 0};
  for (size_t i = 0; i < h->n_hdrs; i++) {
    const hdr_span *s = &h->hdrs[i];
    const char *n = h->head.data + s->no;
    if (s->nl == 4) {
      f->hosts += isv__bytes_same_nocase(n, "host", 4);
    } else if (s->nl == 6) {
      if (f->expect == NULL && isv__bytes_same_nocase(n, "expect", 6))
        f->expect = h->head.data + s->vo, f->expect_len = s->vl;
    } else if (s->nl == 16 && isv__bytes_same_nocase(n, "content-encoding", 16)) {
      if (f->ce_lines++ == 0) f->ce = h->head.data + s->vo, f->ce_len = s->vl;
    }
  }
}

/* Content-Encoding: gzip and deflate bodies are decoded before any handler sees them (the
 * router, protocol/content_coding.c); any other coding is refused here, before its body is read
 * (RFC 9110 §8.4: 415), rather than read as plain. */
static int check_content_encoding(h1 *h, const head_facts *f) {
  size_t n = f->ce_len;
  const char *v = f->ce;
  unsigned lines = f->ce_lines; /* two lines are one list (RFC 9110 §5.3): "gzip, gzip", refused too */
  if (v == NULL || (lines == 1 && isv__coding_of(v, n) != ISV__CODING_UNKNOWN)) return 0;
  snprintf(h->err_text, sizeof h->err_text,
           "Content-Encoding '%.*s%s' is not supported: send gzip, deflate or identity",
           (int)(n > 40 ? 40 : n), v, lines > 1 ? ", ..." : "");
  for (char *m = h->err_text; *m; m++)
    if ((unsigned char)*m < 0x20 || (unsigned char)*m > 0x7e) *m = '?';
  return fail(h, 415, h->err_text);
}

static void on_continue_written(isv__conn *c, void *ctx, int status) {
  (void)c;
  (void)ctx;
  (void)status;
}

/* The head is read (by llhttp or the quick reading): what the server requires of it, then
 * the body's block. 0; -1 with h->err_status set; 1 when the body's pages are being faulted in
 * first (start_faulting: llhttp pauses), only if `may_pause`. */
static int headers_complete(h1 *h, int method, int major, int minor, int has_length,
                            uint64_t length, int may_pause) {
  h->headers_done = 1;
  h->method = method;
  h->http10 = major == 1 && minor == 0;
  isv__conn_idle(h->c, 0); /* a request in flight: never closed to make room */
  /* CONNECT asks for a tunnel: what follows is not HTTP, so answer and close. */
  if (method == HTTP_CONNECT) return fail(h, 405, "CONNECT is not supported: this is not a proxy");
  /* llhttp reads any one-digit version; this is an HTTP/1.x server (HTTP/2: prior knowledge) */
  if (major != 1)
    return fail(h, 505, "this server speaks HTTP/1.0 and HTTP/1.1 here (HTTP/2: with prior "
                        "knowledge)");
  head_facts facts;
  facts_of(h, &facts);
  /* RFC 9112 §3.2: an HTTP/1.1 request carries exactly one Host header */
  if (minor >= 1 && facts.hosts != 1)
    return fail(h, 400, facts.hosts ? "more than one Host header" : "missing Host header");
  if (check_content_encoding(h, &facts) != 0) return -1;
  size_t max = h->c->t->limits.max_body_bytes;
  h->body_start = isv__conn_now(h->c);
  if (has_length) {
    if (length > max) return fail(h, 413, "request body exceeds the server's limit");
    if (reserve(h, (size_t)length) != 0) return -1;
    h->body_expected = (size_t)length;
    body_release(h);
    if (h->body_expected > 0) {
      /* One block of exactly the announced size, END-aligned: tensors sit at the end of a
       * body (the binary extension), so the last one lands aligned and is used in place.
       * Large blocks come back from the server's cache already mapped. */
      h->body.data = isv__bigbuf_alloc(h->c->t->bufs, h->body_expected, 1);
      if (h->body.data == NULL) /* within the limit: the server's shortage, not the client's */
        return fail(h, 503, "out of memory for the request body; retry later");
      h->body.cap = h->body_expected;
      h->body_big = 1;
    }
  }
  int pause = may_pause && h->body_big && start_faulting(h);
  if (facts.expect && facts.expect_len == 12 && strncasecmp(facts.expect, "100-continue", 12) == 0 &&
      minor >= 1) {
    static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";
    uv_buf_t b = uv_buf_init((char *)cont, sizeof cont - 1);
    isv__conn_write(h->c, &b, 1, on_continue_written, NULL);
  }
  /* From here the body must keep coming: each read re-arms the same bound, or the minimum
   * rate's when sooner. */
  isv__conn_deadline(h->c, isv__conn_body_deadline(h->c, 0, 0));
  return pause;
}

static int on_headers_complete(llhttp_t *p) {
  /* Upgrade (h2c, websocket, ...) is optional for a server (RFC 9110 §7.8): it is ignored, the
   * request is answered over HTTP/1.1 and the connection stays HTTP/1.1 (h2c clients use prior
   * knowledge; RFC 9113 deprecates the h2c upgrade). Clearing the flag here, before llhttp reads
   * it, keeps llhttp from treating the bytes after this message as another protocol. */
  p->upgrade = 0;
  int rc = headers_complete(h1_parser(p), p->method, p->http_major, p->http_minor,
                            (p->flags & F_CONTENT_LENGTH) != 0, p->content_length, 1);
  return rc < 0 ? -1 : rc ? HPE_PAUSED : 0;
}

static int on_body(llhttp_t *p, const char *at, size_t n) {
  h1 *h = h1_parser(p);
  if (h->body.len + n > h->c->t->limits.max_body_bytes)
    return fail(h, 413, "request body exceeds the server's limit");
  if (h->body.data && at == h->body.data + h->body.len && h->body.len + n <= h->body.cap) {
    h->body.len += n; /* read in place (read_buf) */
    return 0;
  }
  if (h->body_big && n > h->body.cap - h->body.len) /* llhttp enforces Content-Length */
    return fail(h, 400, "request body longer than its Content-Length");
  isv__buf_append(&h->body, at, n);
  return h->body.failed ? fail(h, 500, "out of memory") : 0;
}

/* A chunk that would take the body past the limit is refused from its size line, before its
 * data is waited for. */
static int on_chunk_header(llhttp_t *p) {
  h1 *h = h1_parser(p);
  if (p->content_length > h->c->t->limits.max_body_bytes - h->body.len)
    return fail(h, 413, "request body exceeds the server's limit");
  return reserve(h, (size_t)p->content_length);
}

/* The message is read: its exchange, dispatched once the reading has returned (dispatch). 0,
 * or -1 with h->err_status set. */
static int message_complete(h1 *h, int keep_alive) {
  isv__exchange *ex = build_exchange(h, 1);
  if (ex == NULL) return fail(h, 500, "out of memory");
  unreserve(h); /* received: from here the body is the request's */
  h->ex = ex;
  h->in_message = 0;
  h->keep_alive = keep_alive;
  return 0;
}

static int on_message_complete(llhttp_t *p) {
  return message_complete(h1_parser(p), llhttp_should_keep_alive(p)) ? -1 : HPE_PAUSED;
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
    .on_chunk_header = on_chunk_header,
    .on_message_complete = on_message_complete,
};

/* Keep bytes that arrived behind the message being answered; 0, or -1 (connection closed). */
static int keep_pending(h1 *h, const char *data, size_t len) {
  char *p = isv__realloc(h->c->t->mem, h->pending, h->pending_len + len);
  if (p == NULL) {
    isv__conn_close(h->c);
    return -1;
  }
  memcpy(p + h->pending_len, data, len);
  h->pending = p;
  h->pending_len += len;
  if (h->pending_len >= ISV__PIPELINE_MAX) isv__conn_read_stop(h->c);
  return 0;
}

/* A message is read, its exchange built (h->ex): the bytes behind it are kept for later, then
 * the exchange goes to the app. */
static void dispatch(h1 *h, const char *rest, size_t rest_len) {
  if (rest_len && keep_pending(h, rest, rest_len) != 0) return;
  isv__conn *c = h->c;
  isv__exchange *ex = h->ex;
  isv__conn_deadline(c, 0);
  c->t->h.exchange(c->t->h.app, ex);
  /* read before the client half-closed: it is gone too (h1_on_eof) */
  if (!c->closing && c->proto_state == h && h->peer_eof && h->ex == ex) isv__exchange_cancel(ex);
}

/* A whole plain message at the start of `data` (transport/h1_quick.h), read without llhttp:
 * what the callbacks would have stored, stored the same way; then the same checks, the same
 * exchange. The bytes it used (then dispatched or answered as an error), or 0: llhttp reads
 * them. Only between messages, llhttp's state being a new message's, which it stays. */
static size_t quick_message(h1 *h, const char *data, size_t len) {
  isv__h1_quick q;
  size_t used = isv__h1_quick_read(data, len, &q, &h->c->t->h1_memo);
  if (used == 0 || q.text_len > h->c->t->limits.max_header_bytes) return 0; /* llhttp: 431 */
  if (q.n_fields > h->cap_hdrs) {
    hdr_span *nh = isv__realloc(h->c->t->mem, h->hdrs, ISV__H1_QUICK_FIELDS * sizeof *nh);
    if (nh == NULL) return 0;
    h->hdrs = nh;
    h->cap_hdrs = ISV__H1_QUICK_FIELDS;
  }
  message_begin(h);
  /* The head from the URL to the last value's end, copied once: the spans point into it where
   * they sit (llhttp's callbacks store them end to end, which is one copy per span). */
  size_t from = q.url_off;
  size_t to = q.n_fields ? q.fields[q.n_fields - 1].value_off + q.fields[q.n_fields - 1].value_len
                         : (size_t)q.url_off + q.url_len;
  char *t = isv__buf_reserve(&h->head, to - from);
  if (t == NULL) return 0;
  memcpy(t, data + from, to - from);
  for (size_t i = 0; i < q.n_fields; i++) {
    const isv__h1_quick_field *f = &q.fields[i];
    hdr_span *s = &h->hdrs[i];
    s->no = f->name_off - from;
    s->nl = f->name_len;
    s->vo = f->value_off - from;
    s->vl = f->value_len;
  }
  h->head.len = to - from;
  h->url_len = q.url_len;
  h->n_hdrs = q.n_fields;
  h->last_span = SPAN_VALUE;
  /* no pause to fault the body's pages in: a body this small is never in fresh pages
   * (ISV__H1_QUICK_BODY_MAX < ISV__BIGBUF_BLOCK_MIN), and it is copied in just below */
  int rc = headers_complete(h, q.method, 1, q.http_minor, q.content_length >= 0,
                            (uint64_t)(q.content_length >= 0 ? q.content_length : 0), 0);
  if (rc == 0 && used > q.head_len) {
    memcpy(h->body.data, data + q.head_len, used - q.head_len);
    h->body.len = used - q.head_len;
  }
  if (rc != 0 || message_complete(h, q.keep_alive) != 0) {
    early_error(h, h->err_status ? h->err_status : 500, h->err_status ? h->err_msg : "out of memory");
    return used;
  }
  dispatch(h, data + used, len - used);
  return used;
}

static void execute(h1 *h, const char *data, size_t len) {
  /* a new message's first byte, llhttp as it was after the last */
  if (!h->in_message && h->parser.error == HPE_OK && quick_message(h, data, len)) return;
  llhttp_errno_t err = llhttp_execute(&h->parser, data, len);
  if (err == HPE_OK) return;
  if (err == HPE_PAUSED && h->faulting != NULL) { /* on_headers_complete's: see start_faulting */
    const char *pos = llhttp_get_error_pos(&h->parser);
    size_t used = pos ? (size_t)(pos - data) : len;
    if (used < len && keep_pending(h, data + used, len - used) != 0) return;
    isv__conn_read_stop(h->c);
    return;
  }
  /* The one pause that dispatches: on_message_complete's, with its exchange built. Every other
   * code — HPE_PAUSED_UPGRADE included, which on_headers_complete rules out — is answered as
   * an error of the request and never reaches the router. */
  if (err == HPE_PAUSED && h->ex != NULL) {
    const char *pos = llhttp_get_error_pos(&h->parser);
    size_t used = pos ? (size_t)(pos - data) : len;
    dispatch(h, data + used, len - used);
    return;
  }
  if (h->err_status) {
    early_error(h, h->err_status, h->err_msg);
    return;
  }
  char msg[160];
  const char *reason = llhttp_get_error_reason(&h->parser);
  snprintf(msg, sizeof msg, "malformed HTTP request: %s", reason ? reason : llhttp_errno_name(err));
  early_error(h, 400, msg);
}

/* ---- the engine -------------------------------------------------------------------------- */

/* The bytes still to come of a body being read in place (known length), else 0. */
static size_t body_left(const h1 *h) {
  if (h->in_message && h->headers_done && h->body_expected > h->body.len && h->body.data &&
      h->body.cap >= h->body_expected)
    return h->body_expected - h->body.len;
  return 0;
}

static void h1_read_buf(isv__conn *c, uv_buf_t *buf) {
  h1 *h = h1_of(c);
  size_t left = h->ex || h->faulting ? 0 : body_left(h); /* a body of known length: in place */
  if (left)
    *buf = uv_buf_init(h->body.data + h->body.len, (unsigned)(left > (1u << 30) ? 1u << 30 : left));
}

static void h1_on_read(isv__conn *c, const char *data, size_t len) {
  h1 *h = h1_of(c);
  if (h->ex != NULL || h->faulting != NULL) { /* pipelined behind the request being answered,
                                                * or past headers whose body is being faulted in */
    keep_pending(h, data, len);
    return;
  }
  if (h->in_message && h->headers_done) {
    uint64_t elapsed = isv__conn_now(c) - h->body_start;
    isv__conn_deadline(c, isv__conn_body_deadline(c, elapsed, h->body.len + len)); /* the body
                                                                       * keeps coming... */
    if (isv__conn_body_too_slow(c, elapsed, h->body.len + len)) {
      early_error(h, 408, "request body arriving too slowly (under the server's minimum rate)");
      return; /* ...fast enough */
    }
  }
  execute(h, data, len);
  if (c->closing) return;
  if (h->in_message && h->headers_done && h->ex == NULL) /* the body, or what came of it with
                                                         * its head: the rate's deadline */
    isv__conn_deadline(c, isv__conn_body_deadline(c, isv__conn_now(c) - h->body_start,
                                                  h->body.len));
  isv__conn_batch_reads(c, h->ex ? 0 : body_left(h));
}

static int h1_start(isv__conn *c, const char *data, size_t len) {
  h1 *h = isv__calloc(c->t->mem, 1, sizeof *h);
  if (h == NULL) {
    isv__conn_close(c);
    return -1;
  }
  c->t->n_h1++;
  h->c = c;
  isv__buf_init(&h->head, c->t->mem);
  isv__buf_init(&h->body, c->t->mem);
  llhttp_init(&h->parser, HTTP_REQUEST, &settings);
  h->parser.data = h;
  c->proto_state = h;
  h1_on_read(c, data, len);
  return 0;
}

static void h1_on_eof(isv__conn *c) {
  h1 *h = h1_of(c);
  if (h->ex == NULL) {
    isv__conn_close(c);
    return;
  }
  /* A client that half-closes while it is answered is taken to have gone (nginx): the handler
   * hears it, and what it still answers is written if the socket takes it, with the answers to
   * what the client sent before; then the connection closes. */
  h->peer_eof = 1;
  isv__exchange_cancel(h->ex);
}

static void h1_on_deadline(isv__conn *c) {
  h1 *h = h1_of(c);
  if (h->ex) return; /* answering: the app's time, not the client's */
  if (h->in_message && h->headers_done &&
      isv__conn_body_too_slow(c, isv__conn_now(c) - h->body_start, h->body.len))
    early_error(h, 408, "request body arriving too slowly (under the server's minimum rate)");
  else if (h->in_message) early_error(h, 408, "request not received in time");
  else isv__conn_close(c); /* idle */
}

static void h1_shutdown(isv__conn *c) {
  h1 *h = h1_of(c);
  h->shutting_down = 1;
  if (h->ex == NULL) isv__conn_close(c);
}

static void h1_free(isv__conn *c) {
  h1 *h = h1_of(c);
  if (h == NULL) return;
  isv__exchange *ex = h->ex;
  unreserve(h);
  isv__buf_free(&h->head);
  body_release(h);
  isv__free(h->hdrs);
  isv__free(h->pending);
  isv__free(h->spare);
  isv__free(h->spare_ex);
  isv__free(h);
  if (--c->t->n_h1 == 0) { /* the loop's warm blocks go with its last HTTP/1.1 connection */
    warm_drop(&c->t->h1_warm_ex);
    warm_drop(&c->t->h1_warm_write);
  }
  c->proto_state = NULL; /* on_cancel below must find no engine through c */
  if (ex) { /* its handler answers (or ends) into the void */
    ex->conn = NULL;
    if (!isv__exchange_collect(ex)) isv__exchange_cancel(ex);
  }
}

const isv__conn_proto isv__http1_proto = {
    .name = "http/1.1",
    .start = h1_start,
    .read_buf = h1_read_buf,
    .on_read = h1_on_read,
    .on_eof = h1_on_eof,
    .on_deadline = h1_on_deadline,
    .shutdown = h1_shutdown,
    .free = h1_free,
};
