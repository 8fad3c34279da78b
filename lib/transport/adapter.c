/* The host's carriers (adapter.h): an isv_exchange is an isv__exchange whose respond, write
 * and end call the host's isv_exchange_carrier; an isv_grpc_call is an isv__grpc_call whose
 * send and finish call the host's isv_grpc_carrier. What the library hands out by reference
 * travels in an isv_piece, which holds its exchange or call until the host releases it.
 *
 * Lifetimes, as for the HTTP engines' objects: the host holds an object from its _new until
 * the answer completes (the carrier's final callback) or it cancels it; the library's handler
 * holds it until it answered; every piece holds it until released. It is freed when all three
 * let go, and the transport's close waits for that (isv__transport.n_hosted). */
#include "transport/adapter.h"

#include <stdio.h>
#include <string.h>

#include "codec/bigbuf.h"
#include "codec/buf.h"
#include "codec/mem.h"
#include "codec/zcoding.h"

struct isv_piece {
  void (*release)(void *ctx); /* the library's, for the bytes it handed out */
  void *ctx;
  isv__exchange *ex; /* exactly one of these is set: what the piece keeps alive */
  isv_grpc_call *call;
};

/* ---- what exchanges and calls share: their header text, their peer ------------------------ */

/* Append "name\0value\0" to head (n entries so far) within `limit` bytes and 100 entries: 0,
 * ISV_EINVAL (a missing name, a NUL inside), ISV_EHDRTOOBIG (*refused set: answered when the
 * request is handed over), ISV_ENOMEM. */
static int add_field(isv__buf *head, size_t *n, size_t limit, int *refused, const char *name,
                     size_t name_len, const char *value, size_t value_len) {
  if (name == NULL || name_len == 0 || (value == NULL && value_len) ||
      memchr(name, '\0', name_len) || (value_len && memchr(value, '\0', value_len)))
    return ISV_EINVAL;
  if (*refused || head->len + name_len + value_len + 2 > limit || *n >= 100) {
    *refused = 1;
    return ISV_EHDRTOOBIG;
  }
  isv__buf_append(head, name, name_len);
  isv__buf_putc(head, '\0');
  if (value_len) isv__buf_append(head, value, value_len);
  isv__buf_putc(head, '\0');
  if (head->failed) return ISV_ENOMEM;
  (*n)++;
  return 0;
}

/* Copy the host's peer text and identity (replacing any earlier one). */
static int set_peer(const isv_mem *mem, char *peer_out, size_t cap, char **identity_out,
                    const char *peer, const char *identity) {
  char *id = NULL;
  if (identity) {
    size_t n = strlen(identity) + 1;
    if ((id = isv__malloc(mem, n)) == NULL) return ISV_ENOMEM;
    memcpy(id, identity, n);
  }
  snprintf(peer_out, cap, "%s", peer ? peer : "");
  isv__free(*identity_out);
  *identity_out = id;
  return 0;
}

/* ---- exchanges ---------------------------------------------------------------------------- */

struct isv_exchange {
  isv__exchange ex; /* first: the handler's object; isv__exchange_free frees the whole */
  isv__transport *t;
  const isv_exchange_carrier *carrier;
  void *user;
  isv__buf head; /* method\0 target\0 then name\0value\0 per header, until submit */
  size_t n_headers;
  isv__buf body;
  int submitted;
  int refused; /* 413, 415 or 431 to answer at submit */
};

static void gone(isv__transport *t) {
  t->n_hosted--;
  isv__transport_conn_gone(t);
}

static void x_collect(isv_exchange *x) {
  isv__transport *t = x->t;
  if (isv__exchange_collect(&x->ex)) gone(t);
}

/* The host let go (it cancelled, or a carrier call failed): its answer goes into the void and
 * the handler hears on_cancel if it has not answered yet. */
static void x_let_go(isv_exchange *x) {
  x->ex.conn = NULL;
  x->ex.refs++; /* the handler may answer inside on_cancel: x stays until the caller collects */
  isv__exchange_cancel(&x->ex);
  x->ex.refs--;
}

static isv_piece *piece_new(const isv_mem *mem, void (*release)(void *), void *ctx) {
  isv_piece *p = isv__calloc(mem, 1, sizeof *p);
  if (p == NULL) {
    if (release) release(ctx);
    return NULL;
  }
  p->release = release;
  p->ctx = ctx;
  return p;
}

struct isv_grpc_call {
  isv__grpc_call call; /* first */
  isv__transport *t;
  const isv_grpc_carrier *carrier;
  void *user;
  isv_grpc_call *prev, *next; /* started and not finished by the service: the drain's list */
  isv__buf meta;              /* path\0 then name\0value\0 per entry, until start */
  size_t n_meta;
  char *storage;
  isv__header *hdrs;
  int started;
  int half_closed;
  int service_done; /* the service called finish (or never got the call) */
  int host_gone;    /* the host let go: it cancelled, a carrier call failed, or finish went out */
  int refused;      /* metadata past the limit: finished at start */
  unsigned refs;    /* pieces not released, and the library's calls under way */
};

static void call_collect(isv_grpc_call *c);

ISV_EXTERN void isv_piece_free(isv_piece *p) {
  if (p == NULL) return;
  if (p->release) p->release(p->ctx);
  isv__exchange *ex = p->ex;
  isv_grpc_call *call = p->call;
  isv__free(p);
  if (ex) {
    ex->refs--;
    x_collect((isv_exchange *)ex);
  } else if (call) {
    call->refs--;
    call_collect(call);
  }
}

#define X_FIELDS_ON_STACK 24

static int x_respond(isv__exchange *ex, const isv__response *r) {
  isv_exchange *x = (isv_exchange *)ex;
  if (ex->phase != ISV__EX_PENDING) {
    if (r->release) r->release(r->release_ctx);
    return ISV_ESTATE;
  }
  ex->phase = r->more ? ISV__EX_STREAMING : ISV__EX_DONE;
  if (ex->conn == NULL) { /* the host let go: dropped */
    if (r->release) r->release(r->release_ctx);
    x_collect(x);
    return 0;
  }
  size_t nf = r->n_headers + (r->content_type != NULL);
  isv_field stack[X_FIELDS_ON_STACK];
  isv_field *f = nf <= X_FIELDS_ON_STACK ? stack : isv__malloc(ex->mem, nf * sizeof *f);
  isv_piece *p = NULL;
  int ok = f != NULL;
  if (ok && r->n_parts) {
    if ((p = piece_new(ex->mem, r->release, r->release_ctx)) == NULL) {
      ok = 0; /* piece_new released the parts */
    } else {
      p->ex = ex;
      ex->refs++;
    }
  } else if (r->release) {
    r->release(r->release_ctx); /* no parts to hold, or the answer cannot go out */
  }
  int rc = ISV_ENOMEM;
  if (ok) {
    size_t i = 0;
    if (r->content_type)
      f[i++] = (isv_field){"Content-Type", 12, r->content_type, strlen(r->content_type)};
    for (size_t k = 0; k < r->n_headers; k++, i++)
      f[i] = (isv_field){r->headers[k].name, r->headers[k].name_len, r->headers[k].value,
                         r->headers[k].value_len};
    ex->refs++; /* held across the host's call: it may cancel x from inside */
    rc = x->carrier->respond(x, r->status, f, nf, r->parts, r->n_parts, p, r->more) ? ISV_EIO
                                                                                      : 0;
    ex->refs--;
  }
  if (f != stack) isv__free(f);
  if (rc != 0) x_let_go(x);
  else if (!r->more) ex->conn = NULL; /* complete: the host let go */
  x_collect(x);
  return rc;
}

static int x_write(isv__exchange *ex, const uv_buf_t *parts, size_t n, void (*release)(void *),
                   void *ctx) {
  isv_exchange *x = (isv_exchange *)ex;
  size_t total = 0;
  for (size_t i = 0; i < n; i++) total += parts[i].len;
  if (ex->conn == NULL || total == 0) {
    if (release) release(ctx);
    return ex->conn == NULL ? ISV_ECANCELED : 0;
  }
  isv_piece *p = piece_new(ex->mem, release, ctx);
  if (p == NULL) {
    x_let_go(x);
    x_collect(x);
    return ISV_ECANCELED;
  }
  p->ex = ex;
  ex->refs += 2; /* the piece's, and one across the host's call */
  int rc = x->carrier->write(x, parts, n, p);
  ex->refs--;
  if (rc != 0) x_let_go(x);
  x_collect(x);
  return rc ? ISV_ECANCELED : 0;
}

static int x_end(isv__exchange *ex) {
  isv_exchange *x = (isv_exchange *)ex;
  ex->phase = ISV__EX_DONE;
  if (ex->conn) {
    ex->conn = NULL;
    ex->refs++;
    x->carrier->end(x);
    ex->refs--;
  }
  x_collect(x);
  return 0;
}

/* An HTTP method is a token (RFC 9110 §5.6.2). */
static int is_token(const char *s) {
  if (*s == '\0') return 0;
  for (; *s; s++)
    if (*s <= 32 || *s >= 127 || strchr("\"(),/:;<=>?@[\\]{}", *s)) return 0;
  return 1;
}

int isv__adapter_exchange_new(isv__transport *t, const isv_exchange_carrier *carrier, void *user,
                              const char *method, const char *target, isv_exchange **out,
                              const char **why) {
  *why = NULL;
  if (carrier == NULL || carrier->struct_size < sizeof *carrier || carrier->respond == NULL ||
      carrier->write == NULL || carrier->end == NULL) {
    *why = "the carrier is missing, too small (struct_size) or lacks a callback";
    return ISV_EINVAL;
  }
  if (method == NULL || !is_token(method) || target == NULL || target[0] != '/') {
    *why = method == NULL || !is_token(method) ? "the method is not an HTTP token"
                                               : "the target does not start with '/'";
    return ISV_EINVAL;
  }
  isv_exchange *x = isv__calloc(t->mem, 1, sizeof *x);
  if (x == NULL) return ISV_ENOMEM;
  x->t = t;
  x->carrier = carrier;
  x->user = user;
  x->ex.mem = t->mem;
  isv__buf_init(&x->head, t->mem);
  isv__buf_init(&x->body, t->mem);
  isv__buf_append(&x->head, method, strlen(method) + 1);
  isv__buf_append(&x->head, target, strlen(target) + 1);
  if (x->head.failed) {
    isv__buf_free(&x->head);
    isv__free(x);
    return ISV_ENOMEM;
  }
  if (strlen(target) > t->limits.max_header_bytes) x->refused = 431;
  x->ex.conn = x;
  t->n_hosted++;
  *out = x;
  return 0;
}

ISV_EXTERN void *isv_exchange_user(const isv_exchange *x) { return x ? x->user : NULL; }

ISV_EXTERN int isv_exchange_add_header(isv_exchange *x, const char *name, size_t name_len,
                                       const char *value, size_t value_len) {
  if (x == NULL) return ISV_EINVAL;
  if (x->submitted) return ISV_ESTATE;
  int refused = x->refused == 431;
  int rc = add_field(&x->head, &x->n_headers, x->t->limits.max_header_bytes, &refused, name,
                     name_len, value, value_len);
  if (refused) x->refused = 431;
  return rc;
}

ISV_EXTERN int isv_exchange_set_peer(isv_exchange *x, const char *peer, const char *identity) {
  if (x == NULL) return ISV_EINVAL;
  if (x->submitted) return ISV_ESTATE;
  return set_peer(x->t->mem, x->ex.peer, sizeof x->ex.peer, &x->ex.identity, peer, identity);
}

ISV_EXTERN int isv_exchange_append_body(isv_exchange *x, const void *data, size_t len) {
  if (x == NULL || (data == NULL && len)) return ISV_EINVAL;
  if (x->submitted) return ISV_ESTATE;
  if (x->refused == 413 || len > x->t->limits.max_body_bytes - x->body.len) {
    if (x->refused == 0) x->refused = 413;
    isv__buf_free(&x->body); /* nothing more is kept */
    isv__buf_init(&x->body, x->t->mem);
    return ISV_ETOOBIG;
  }
  isv__buf_append(&x->body, data, len);
  return x->body.failed ? ISV_ENOMEM : 0;
}

/* Lay the request out as the engines do: the head text owned by ex->storage, the path and
 * query NUL-terminated in it, the header array pointing into it. */
static int x_build(isv_exchange *x) {
  isv__exchange *ex = &x->ex;
  ex->headers = isv__calloc(ex->mem, x->n_headers ? x->n_headers : 1, sizeof *ex->headers);
  if (ex->headers == NULL) return ISV_ENOMEM;
  size_t st_len;
  char *st = isv__buf_release(&x->head, &st_len);
  ex->storage = st;
  ex->method_name = st;
  ex->method = isv__method_of(st);
  char *target = st + strlen(st) + 1;
  char *q = strchr(target, '?');
  ex->path = target;
  if (q) {
    *q = '\0';
    ex->query = q + 1;
  } else {
    ex->query = target + strlen(target);
  }
  ex->path_len = strlen(ex->path);
  ex->query_len = strlen(ex->query);
  const char *p = (q ? ex->query : target) + strlen(q ? ex->query : target) + 1;
  for (size_t i = 0; i < x->n_headers; i++) {
    const char *n = p, *v = n + strlen(n) + 1;
    p = v + strlen(v) + 1;
    ex->headers[i] = (isv__header){n, strlen(n), v, strlen(v)};
  }
  ex->n_headers = x->n_headers;
  ex->body = isv__buf_release(&x->body, &ex->body_len);
  return 0;
}

ISV_EXTERN int isv_exchange_submit(isv_exchange *x) {
  if (x == NULL) return ISV_EINVAL;
  if (x->submitted) return ISV_ESTATE;
  if (x->head.failed || x->body.failed || x_build(x) != 0) return ISV_ENOMEM;
  x->submitted = 1;
  isv__exchange *ex = &x->ex;
  ex->respond = x_respond;
  ex->write = x_write;
  ex->end = x_end;
  isv__transport *t = x->t;
  isv__exchange_start_access(ex, t->h.access, t->h.app, "adapter");
  /* gzip and deflate bodies are decoded before routing; any other coding is refused, as the
   * HTTP engines refuse it (RFC 9110 §8.4) */
  const isv__header *ce = isv__exchange_header(ex, "content-encoding");
  unsigned lines = 0; /* two lines are one list (RFC 9110 §5.3), refused like "gzip, gzip" */
  for (size_t i = 0; i < ex->n_headers; i++)
    lines += ex->headers[i].name_len == 16 &&
             strncasecmp(ex->headers[i].name, "content-encoding", 16) == 0;
  char text[160];
  if (x->refused == 0 && ce &&
      (lines > 1 || isv__coding_of(ce->value, ce->value_len) == ISV__CODING_UNKNOWN)) {
    snprintf(text, sizeof text,
             "Content-Encoding '%.*s%s' is not supported: send gzip, deflate or identity",
             (int)(ce->value_len > 40 ? 40 : ce->value_len), ce->value, lines > 1 ? ", ..." : "");
    for (char *m = text; *m; m++)
      if ((unsigned char)*m < 0x20 || (unsigned char)*m > 0x7e) *m = '?';
    x->refused = 415;
  }
  ex->refs++; /* the handler may answer (and the host cancel) before this returns */
  if (x->refused == 415)
    t->h.error(t->h.app, ex, 415, text);
  else if (x->refused == 413)
    t->h.error(t->h.app, ex, 413, "request body exceeds the server's limit");
  else if (x->refused == 431)
    t->h.error(t->h.app, ex, 431, "request line and headers exceed the server's limit");
  else
    t->h.exchange(t->h.app, ex);
  ex->refs--;
  x_collect(x);
  return 0;
}

ISV_EXTERN void isv_exchange_free(isv_exchange *x) {
  if (x == NULL) return;
  if (!x->submitted) {
    isv__transport *t = x->t;
    isv__buf_free(&x->head);
    isv__buf_free(&x->body);
    isv__free(x->ex.identity);
    isv__free(x->ex.headers);
    isv__free(x->ex.storage);
    isv__free(x);
    gone(t);
    return;
  }
  if (x->ex.conn == NULL) return; /* already let go (a contract breach: x may be gone) */
  x_let_go(x);
  x_collect(x);
}

/* ---- gRPC calls --------------------------------------------------------------------------- */



static void unlink_call(isv_grpc_call *c) {
  isv__transport *t = c->t;
  if (c->prev) c->prev->next = c->next;
  else if (t->hosted_calls == c) t->hosted_calls = c->next;
  if (c->next) c->next->prev = c->prev;
  c->prev = c->next = NULL;
}

static void call_collect(isv_grpc_call *c) {
  if (!c->service_done || !c->host_gone || c->refs) return;
  isv__transport *t = c->t;
  isv__buf_free(&c->meta);
  isv__free(c->storage);
  isv__free(c->hdrs);
  isv__free(c->call.identity);
  isv__free(c);
  gone(t);
}

/* The host is told the end (unless it let go), then the service hears on_cancel if it is
 * still at work: what the transport does for a limit it enforces mid-call. */
static void call_end_now(isv_grpc_call *c, int status, const char *message) {
  if (!c->host_gone) {
    c->host_gone = 1;
    c->refs++;
    c->carrier->finish(c, status, message);
    c->refs--;
  }
  if (!c->service_done && c->call.on_cancel) c->call.on_cancel(&c->call);
}

static int c_send(isv__grpc_call *call, const uv_buf_t *parts, size_t n, void (*release)(void *),
                  void *ctx) {
  isv_grpc_call *c = (isv_grpc_call *)call;
  if (c->host_gone || c->service_done) {
    if (release) release(ctx);
    return ISV_ECANCELED;
  }
  isv_piece *p = piece_new(c->t->mem, release, ctx);
  if (p == NULL) {
    call_end_now(c, ISV__GRPC_RESOURCE_EXHAUSTED, "out of memory");
    return ISV_ECANCELED;
  }
  p->call = c;
  c->refs += 2; /* the piece's, and one across the host's call */
  int rc = c->carrier->send(c, parts, n, p);
  c->refs--;
  if (rc != 0 && !c->host_gone) {
    c->host_gone = 1;
    if (!c->service_done && call->on_cancel) call->on_cancel(call);
  }
  call_collect(c);
  return rc ? ISV_ECANCELED : 0;
}

static void c_finish(isv__grpc_call *call, int status, const char *message) {
  isv_grpc_call *c = (isv_grpc_call *)call;
  if (c->service_done) return;
  c->service_done = 1;
  unlink_call(c);
  if (!c->host_gone) {
    c->host_gone = 1;
    c->refs++;
    c->carrier->finish(c, status, message ? message : "");
    c->refs--;
  }
  call_collect(c);
}

int isv__adapter_call_new(isv__transport *t, const isv_grpc_carrier *carrier, void *user,
                          const char *method, isv_grpc_call **out, const char **why) {
  *why = NULL;
  if (carrier == NULL || carrier->struct_size < sizeof *carrier || carrier->send == NULL ||
      carrier->finish == NULL) {
    *why = "the carrier is missing, too small (struct_size) or lacks a callback";
    return ISV_EINVAL;
  }
  if (method == NULL || method[0] != '/' || strlen(method) > t->limits.max_header_bytes) {
    *why = "the method is not a gRPC path (\"/package.Service/Method\")";
    return ISV_EINVAL;
  }
  isv_grpc_call *c = isv__calloc(t->mem, 1, sizeof *c);
  if (c == NULL) return ISV_ENOMEM;
  c->t = t;
  c->carrier = carrier;
  c->user = user;
  isv__buf_init(&c->meta, t->mem);
  isv__buf_append(&c->meta, method, strlen(method) + 1);
  if (c->meta.failed) {
    isv__buf_free(&c->meta);
    isv__free(c);
    return ISV_ENOMEM;
  }
  t->n_hosted++;
  *out = c;
  return 0;
}

ISV_EXTERN void *isv_grpc_call_user(const isv_grpc_call *c) { return c ? c->user : NULL; }

ISV_EXTERN int isv_grpc_call_add_metadata(isv_grpc_call *c, const char *name, size_t name_len,
                                          const char *value, size_t value_len) {
  if (c == NULL) return ISV_EINVAL;
  if (c->started) return ISV_ESTATE;
  return add_field(&c->meta, &c->n_meta, c->t->limits.max_header_bytes, &c->refused, name,
                   name_len, value, value_len);
}

ISV_EXTERN int isv_grpc_call_set_peer(isv_grpc_call *c, const char *peer, const char *identity) {
  if (c == NULL) return ISV_EINVAL;
  if (c->started) return ISV_ESTATE;
  return set_peer(c->t->mem, c->call.peer, sizeof c->call.peer, &c->call.identity, peer,
                  identity);
}

ISV_EXTERN int isv_grpc_call_set_timeout(isv_grpc_call *c, uint64_t ms) {
  if (c == NULL) return ISV_EINVAL;
  if (c->started) return ISV_ESTATE;
  c->call.timeout_ms = ms;
  return 0;
}

ISV_EXTERN int isv_grpc_call_start(isv_grpc_call *c) {
  if (c == NULL) return ISV_EINVAL;
  if (c->started) return ISV_ESTATE;
  if (c->meta.failed) return ISV_ENOMEM;
  c->hdrs = isv__calloc(c->t->mem, c->n_meta ? c->n_meta : 1, sizeof *c->hdrs);
  if (c->hdrs == NULL) return ISV_ENOMEM;
  c->started = 1;
  size_t st_len;
  c->storage = isv__buf_release(&c->meta, &st_len);
  const char *p = c->storage + strlen(c->storage) + 1;
  for (size_t i = 0; i < c->n_meta; i++) {
    const char *n = p, *v = n + strlen(n) + 1;
    p = v + strlen(v) + 1;
    c->hdrs[i] = (isv__header){n, strlen(n), v, strlen(v)};
  }
  isv__grpc_call *call = &c->call;
  call->path = c->storage;
  call->path_len = strlen(c->storage);
  call->headers = c->hdrs;
  call->n_headers = c->n_meta;
  call->coding = ISV__CODING_IDENTITY;
  call->carrier = c;
  call->send = c_send;
  call->finish = c_finish;
  isv__transport *t = c->t;
  if (c->refused) {
    c->service_done = 1; /* the service never sees it */
    call_end_now(c, ISV__GRPC_RESOURCE_EXHAUSTED, "metadata exceed the server's limit");
    call_collect(c);
    return 0;
  }
  c->next = t->hosted_calls;
  if (c->next) c->next->prev = c;
  t->hosted_calls = c;
  c->refs++; /* the service may finish (and the host cancel) before this returns */
  t->h.grpc(t->h.app, call);
  if (t->closing && !c->service_done && call->on_drain) call->on_drain(call);
  c->refs--;
  call_collect(c);
  return 0;
}

ISV_EXTERN int isv_grpc_call_append_message(isv_grpc_call *c, const void *msg, size_t len) {
  if (c == NULL || (msg == NULL && len)) return ISV_EINVAL;
  if (!c->started || c->half_closed) return ISV_ESTATE;
  if (c->service_done || c->host_gone) return ISV_ECANCELED;
  if (len > c->t->limits.max_body_bytes) {
    char text[128];
    snprintf(text, sizeof text, "message of %zu bytes exceeds the server's limit of %zu", len,
             c->t->limits.max_body_bytes);
    c->refs++;
    call_end_now(c, ISV__GRPC_RESOURCE_EXHAUSTED, text);
    c->refs--;
    call_collect(c);
    return ISV_ETOOBIG;
  }
  if (c->call.on_message == NULL) return 0;
  uint8_t *m = isv__bigbuf_alloc(c->t->bufs, len ? len : 1, 0);
  if (m == NULL) return ISV_ENOMEM;
  if (len) memcpy(m, msg, len);
  c->refs++;
  c->call.on_message(&c->call, m, len, 0);
  c->refs--;
  call_collect(c);
  return 0;
}

ISV_EXTERN int isv_grpc_call_half_close(isv_grpc_call *c) {
  if (c == NULL) return ISV_EINVAL;
  if (!c->started || c->half_closed) return ISV_ESTATE;
  c->half_closed = 1;
  if (c->service_done || c->host_gone) return ISV_ECANCELED;
  if (c->call.on_half_close) {
    c->refs++;
    c->call.on_half_close(&c->call);
    c->refs--;
    call_collect(c);
  }
  return 0;
}

ISV_EXTERN void isv_grpc_call_free(isv_grpc_call *c) {
  if (c == NULL || c->host_gone) return;
  c->host_gone = 1;
  if (!c->started) c->service_done = 1;
  c->refs++;
  if (!c->service_done && c->call.on_cancel) c->call.on_cancel(&c->call);
  c->refs--;
  call_collect(c);
}

void isv__adapter_drain(isv__transport *t) {
  for (isv_grpc_call *c = t->hosted_calls, *next; c; c = next) {
    next = c->next;
    if (c->call.on_drain) c->call.on_drain(&c->call);
  }
}
