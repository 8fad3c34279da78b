/* inferserve-mhd: the demo's model zoo served by libmicrohttpd through libinferserve's
 * transport adapter — the shape of a host that already has an HTTP server of its own.
 *
 *   inferserve-mhd [--listen HOST:PORT]
 *
 * Prints "inferserve-mhd listening on HOST:PORT" once bound (port 0 picks one). SIGINT/SIGTERM
 * stop it cleanly.
 *
 * One thread. libmicrohttpd runs in its "external polling" mode with epoll: its one epoll
 * descriptor is watched by a uv_poll_t on the same libuv loop the library runs on, so MHD's
 * callbacks and the library's carrier callbacks all happen on the loop thread and need no
 * locks. A request's life:
 *   1. MHD's URI log callback sees the raw target (path and query as sent; the access handler
 *      only gets a percent-decoded path) and starts our per-request state;
 *   2. the access handler's first call makes an isv_exchange with the headers and the peer,
 *      later calls append the body as MHD reads it, the last one submits it and suspends the
 *      connection until the answer comes (it may come at once, inside submit);
 *   3. the carrier's respond makes the MHD response — a content reader walking the library's
 *      parts in place (no copy into a buffer of ours), releasing the piece when MHD is done —
 *      and resumes the connection; streamed answers use an unknown size (chunked) and a reader
 *      that suspends the connection while it waits for the next piece;
 *   4. MHD's completion callback cancels the exchange if the client left before the answer. */
#include <errno.h>
#include <inttypes.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <uv.h>

#include "inferserve.h"
#include "zoo.h"

typedef struct host {
  uv_loop_t loop;
  isv_server *srv;
  struct MHD_Daemon *mhd;
  uv_poll_t poll;
  uv_timer_t timer; /* MHD's next timeout, and "run MHD soon" after a resume */
  uv_signal_t sigint, sigterm;
  struct req *reqs; /* every request MHD has not completed: resumed before MHD stops */
  int stopping;
} host;

/* A piece of an answer queued for MHD's reader. */
typedef struct chunk {
  struct chunk *next;
  uv_buf_t *parts;
  size_t n, at, off; /* the part being read, and how far into it */
  isv_piece *piece;
} chunk;

/* What MHD's content reader reads: a whole body (one chunk, size known) or a stream. Owned by
 * the MHD response and, while the exchange may still write, by the request too (refs). */
typedef struct body_src {
  chunk *head, *tail;
  int ended;   /* the last piece is queued */
  int failed;  /* the client hung up: end the response with an error */
  int refs;
  struct req *waiting; /* the request whose connection the reader suspended for more */
  host *h;
} body_src;

typedef struct req {
  host *h;
  struct req *prev, *next;
  struct MHD_Connection *conn;
  char *uri; /* the raw target */
  isv_exchange *x; /* NULL once the answer completed, or after a cancel */
  int started, submitted, suspended;
  struct MHD_Response *resp; /* made by respond, queued by the access handler */
  int status;
  uv_poll_t *watch; /* the socket, while suspended: MHD does not look at it then */
  int gone;         /* the client hung up while suspended */
  int fd;           /* the watched socket */
  body_src *stream;          /* a streamed answer's source while the exchange writes */
} req;

static void on_timer(uv_timer_t *t);
static void run_soon(host *h) { uv_timer_start(&h->timer, on_timer, 0, 0); }

/* A suspended connection is not watched by MHD (it would not notice the client leave, and
 * the model would run on for nobody): we watch its socket for a hang-up meanwhile. */
static void on_watch_closed(uv_handle_t *h) { free(h); }
static void unwatch(req *r) {
  if (r->watch) {
    r->watch->data = NULL;
    uv_close((uv_handle_t *)r->watch, on_watch_closed);
    r->watch = NULL;
  }
}
static void resume(req *r);
static void on_hangup(uv_poll_t *p, int status, int events) {
  (void)events;
  req *r = p->data;
  if (r == NULL) return;
  char c;
  ssize_t n = status < 0 ? -1 : recv(r->fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
  if (n < 0 && status >= 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
  unwatch(r);
  if (n > 0) return; /* pipelined bytes, not a hang-up: MHD reads them once resumed */
  r->gone = 1;
  if (r->x) { /* the answer will never be read: stop what makes it */
    isv_exchange *x = r->x;
    r->x = NULL;
    isv_exchange_free(x);
  }
  if (r->stream) r->stream->failed = 1;
  resume(r); /* MHD closes the connection */
}
static void watch(req *r) {
  const union MHD_ConnectionInfo *ci =
      MHD_get_connection_info(r->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
  if (r->watch || ci == NULL || (r->watch = calloc(1, sizeof *r->watch)) == NULL) return;
  if (uv_poll_init_socket(&r->h->loop, r->watch, ci->connect_fd) != 0) {
    free(r->watch);
    r->watch = NULL;
    return;
  }
  r->watch->data = r;
  r->fd = ci->connect_fd;
  uv_poll_start(r->watch, UV_READABLE | UV_DISCONNECT, on_hangup);
}

static void suspend(req *r) {
  if (!r->suspended) {
    MHD_suspend_connection(r->conn);
    r->suspended = 1;
    watch(r);
  }
}
static void resume(req *r) {
  if (r->suspended) {
    unwatch(r);
    MHD_resume_connection(r->conn);
    r->suspended = 0;
    run_soon(r->h);
  }
}

/* ---- bodies ------------------------------------------------------------------------------ */

static void chunk_free(chunk *c) {
  isv_piece_free(c->piece);
  free(c->parts);
  free(c);
}

static void src_unref(body_src *s) {
  if (--s->refs > 0) return;
  for (chunk *c = s->head, *n; c; c = n) {
    n = c->next;
    chunk_free(c);
  }
  free(s);
}

static int src_push(body_src *s, const uv_buf_t *parts, size_t n, isv_piece *piece) {
  chunk *c = calloc(1, sizeof *c);
  uv_buf_t *copy = n ? malloc(n * sizeof *copy) : NULL;
  if (c == NULL || (n && copy == NULL)) {
    free(c);
    free(copy);
    isv_piece_free(piece);
    return -1;
  }
  if (n) memcpy(copy, parts, n * sizeof *copy);
  c->parts = copy;
  c->n = n;
  c->piece = piece;
  if (s->tail) s->tail->next = c;
  else s->head = c;
  s->tail = c;
  return 0;
}

static ssize_t src_read(void *cls, uint64_t pos, char *buf, size_t max) {
  (void)pos;
  body_src *s = cls;
  size_t got = 0;
  while (got < max && s->head) {
    chunk *c = s->head;
    if (c->at == c->n) {
      s->head = c->next;
      if (s->head == NULL) s->tail = NULL;
      chunk_free(c); /* MHD has copied it: the library may let go of its bytes */
      continue;
    }
    uv_buf_t *p = &c->parts[c->at];
    size_t k = p->len - c->off < max - got ? p->len - c->off : max - got;
    memcpy(buf + got, p->base + c->off, k);
    got += k;
    if ((c->off += k) == p->len) {
      c->at++;
      c->off = 0;
    }
  }
  if (got) return (ssize_t)got;
  if (s->failed) return MHD_CONTENT_READER_END_WITH_ERROR;
  if (s->ended) return MHD_CONTENT_READER_END_OF_STREAM;
  return 0; /* more to come: the request suspended itself (src_wait) */
}

static void src_free(void *cls) { src_unref(cls); }

/* ---- the carrier ------------------------------------------------------------------------ */

static int add_headers(struct MHD_Response *resp, const isv_field *hs, size_t n) {
  for (size_t i = 0; i < n; i++) {
    char name[128], value[1024];
    if (hs[i].name_len >= sizeof name || hs[i].value_len >= sizeof value) return -1;
    memcpy(name, hs[i].name, hs[i].name_len);
    name[hs[i].name_len] = '\0';
    memcpy(value, hs[i].value, hs[i].value_len);
    value[hs[i].value_len] = '\0';
    if (MHD_add_response_header(resp, name, value) != MHD_YES) return -1;
  }
  return 0;
}

static int on_respond(isv_exchange *x, int status, const isv_field *hs, size_t nh,
                      const uv_buf_t *parts, size_t n, isv_piece *piece, int more) {
  req *r = isv_exchange_user(x);
  body_src *s = calloc(1, sizeof *s);
  if (s == NULL) {
    isv_piece_free(piece);
    return -1;
  }
  s->h = r->h;
  s->refs = 1; /* the response's */
  uint64_t total = 0;
  for (size_t i = 0; i < n; i++) total += parts[i].len;
  if (src_push(s, parts, n, piece) != 0) {
    free(s);
    return -1;
  }
  s->ended = !more;
  struct MHD_Response *resp = MHD_create_response_from_callback(
      more ? MHD_SIZE_UNKNOWN : total, 64 * 1024, src_read, s, src_free);
  if (resp == NULL) {
    src_unref(s);
    return -1;
  }
  if (add_headers(resp, hs, nh) != 0) {
    MHD_destroy_response(resp);
    return -1;
  }
  r->resp = resp;
  r->status = status;
  if (more) {
    s->refs++; /* the exchange's, until end or cancel */
    r->stream = s;
  } else {
    r->x = NULL; /* the answer is complete: the library let go of x */
  }
  resume(r);
  return 0;
}

static int on_write(isv_exchange *x, const uv_buf_t *parts, size_t n, isv_piece *piece) {
  req *r = isv_exchange_user(x);
  body_src *s = r->stream;
  if (src_push(s, parts, n, piece) != 0) return -1;
  if (s->waiting) {
    resume(s->waiting);
    s->waiting = NULL;
  }
  return 0;
}

static void on_end(isv_exchange *x) {
  req *r = isv_exchange_user(x);
  body_src *s = r->stream;
  s->ended = 1;
  if (s->waiting) {
    resume(s->waiting);
    s->waiting = NULL;
  }
  r->stream = NULL;
  r->x = NULL;
  src_unref(s);
}

static const isv_exchange_carrier carrier = {sizeof carrier, on_respond, on_write, on_end};

/* ---- MHD's callbacks ---------------------------------------------------------------------- */

static void *on_uri(void *cls, const char *uri, struct MHD_Connection *conn) {
  host *h = cls;
  req *r = calloc(1, sizeof *r);
  if (r == NULL) return NULL;
  r->h = h;
  r->conn = conn;
  r->uri = strdup(uri);
  r->next = h->reqs;
  if (h->reqs) h->reqs->prev = r;
  h->reqs = r;
  return r;
}

typedef struct header_ctx {
  isv_exchange *x;
  int rc;
} header_ctx;

static enum MHD_Result add_header(void *cls, enum MHD_ValueKind kind, const char *key,
                                  const char *value) {
  (void)kind;
  header_ctx *c = cls;
  if (c->rc == 0 && key)
    c->rc = isv_exchange_add_header(c->x, key, strlen(key), value ? value : "",
                                    value ? strlen(value) : 0);
  return MHD_YES;
}

static void set_peer(req *r) {
  const union MHD_ConnectionInfo *ci =
      MHD_get_connection_info(r->conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
  char peer[64] = "", ip[INET6_ADDRSTRLEN] = "";
  if (ci && ci->client_addr && ci->client_addr->sa_family == AF_INET) {
    const struct sockaddr_in *a = (const struct sockaddr_in *)ci->client_addr;
    inet_ntop(AF_INET, &a->sin_addr, ip, sizeof ip);
    snprintf(peer, sizeof peer, "%s:%u", ip, (unsigned)ntohs(a->sin_port));
  } else if (ci && ci->client_addr && ci->client_addr->sa_family == AF_INET6) {
    const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)ci->client_addr;
    inet_ntop(AF_INET6, &a->sin6_addr, ip, sizeof ip);
    snprintf(peer, sizeof peer, "[%s]:%u", ip, (unsigned)ntohs(a->sin6_port));
  }
  isv_exchange_set_peer(r->x, peer, NULL);
}

static enum MHD_Result refuse(struct MHD_Connection *conn, unsigned status, const char *msg) {
  struct MHD_Response *resp =
      MHD_create_response_from_buffer(strlen(msg), (void *)msg, MHD_RESPMEM_PERSISTENT);
  if (resp == NULL) return MHD_NO;
  MHD_add_response_header(resp, "Content-Type", "application/json");
  enum MHD_Result rc = MHD_queue_response(conn, status, resp);
  MHD_destroy_response(resp);
  return rc;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version,
                                  const char *upload, size_t *upload_len, void **con_cls) {
  (void)url;
  (void)version;
  host *h = cls;
  req *r = *con_cls;
  if (r == NULL || r->gone) return MHD_NO; /* out of memory in on_uri; a hang-up */
  if (r->resp) { /* the answer came: hand it over */
    enum MHD_Result rc = MHD_queue_response(conn, (unsigned)r->status, r->resp);
    MHD_destroy_response(r->resp);
    r->resp = NULL;
    return rc;
  }
  if (!r->started) {
    r->started = 1;
    if (isv_exchange_new(h->srv, &carrier, r, method, r->uri, &r->x) != 0) {
      r->x = NULL;
      return refuse(conn, MHD_HTTP_SERVICE_UNAVAILABLE, "{\"error\":\"the server is closing\"}");
    }
    header_ctx c = {r->x, 0};
    MHD_get_connection_values(conn, MHD_HEADER_KIND, add_header, &c); /* a refusal (431) is */
    set_peer(r);                                                      /* answered at submit */
    return MHD_YES;
  }
  if (*upload_len) {
    if (r->x) isv_exchange_append_body(r->x, upload, *upload_len); /* 413 answered at submit */
    *upload_len = 0;
    return MHD_YES;
  }
  if (!r->submitted && r->x) {
    r->submitted = 1;
    isv_exchange_submit(r->x); /* may answer at once: then r->resp is set */
    if (r->resp) {
      resume(r); /* nothing to resume, but harmless */
      enum MHD_Result rc = MHD_queue_response(conn, (unsigned)r->status, r->resp);
      MHD_destroy_response(r->resp);
      r->resp = NULL;
      return rc;
    }
  }
  suspend(r); /* until the answer comes */
  return MHD_YES;
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode why) {
  (void)conn;
  (void)why;
  host *h = cls;
  req *r = *con_cls;
  if (r == NULL) return;
  *con_cls = NULL;
  unwatch(r);
  if (r->x) isv_exchange_free(r->x); /* the client left before the answer ended */
  if (r->stream) src_unref(r->stream);
  if (r->resp) MHD_destroy_response(r->resp);
  if (r->prev) r->prev->next = r->next;
  else h->reqs = r->next;
  if (r->next) r->next->prev = r->prev;
  free(r->uri);
  free(r);
}

/* The reader found nothing to send yet: wait for the next piece with the connection
 * suspended (MHD would otherwise ask again at every turn). */
static void wait_for_more(host *h) {
  for (req *r = h->reqs; r; r = r->next) {
    body_src *s = r->stream;
    if (s && !s->ended && !s->failed && s->head == NULL && !r->suspended && r->resp == NULL) {
      s->waiting = r;
      suspend(r);
    }
  }
}

/* ---- MHD on the libuv loop ---------------------------------------------------------------- */

static void run_mhd(host *h) {
  if (h->mhd == NULL) return;
  MHD_run(h->mhd);
  wait_for_more(h);
  MHD_UNSIGNED_LONG_LONG ms;
  if (MHD_get_timeout(h->mhd, &ms) == MHD_YES) uv_timer_start(&h->timer, on_timer, ms, 0);
}

static void on_poll(uv_poll_t *p, int status, int events) {
  (void)status;
  (void)events;
  run_mhd(p->data);
}
static void on_timer(uv_timer_t *t) { run_mhd(t->data); }

static void on_server_closed(isv_server *srv, void *data) {
  (void)srv;
  host *h = data;
  h->srv = NULL;
  uv_close((uv_handle_t *)&h->timer, NULL);
  uv_close((uv_handle_t *)&h->sigint, NULL);
  uv_close((uv_handle_t *)&h->sigterm, NULL);
}

static void on_signal(uv_signal_t *s, int signum) {
  host *h = s->data;
  if (h->stopping) return;
  h->stopping = 1;
  fprintf(stderr, "inferserve-mhd: signal %d, shutting down\n", signum);
  /* MHD first (its connections end: every exchange is answered or cancelled), then the
   * library, which waits for nothing the host still holds */
  for (req *r = h->reqs; r; r = r->next) resume(r); /* MHD must not stop with one suspended */
  uv_poll_stop(&h->poll);
  uv_close((uv_handle_t *)&h->poll, NULL);
  MHD_stop_daemon(h->mhd);
  h->mhd = NULL;
  isv_server_close(h->srv, on_server_closed, h);
}

int main(int argc, char **argv) {
  const char *host_arg = "127.0.0.1";
  int port = 8000;
  char hostbuf[64];
  for (int i = 1; i < argc; i++) {
    const char *v = NULL;
    if (strcmp(argv[i], "--listen") == 0 && i + 1 < argc) v = argv[++i];
    else if (strncmp(argv[i], "--listen=", 9) == 0) v = argv[i] + 9;
    const char *colon = v ? strrchr(v, ':') : NULL;
    if (colon == NULL || (size_t)(colon - v) >= sizeof hostbuf) {
      fprintf(stderr, "usage: inferserve-mhd [--listen IPV4:PORT]\n");
      return 2;
    }
    memcpy(hostbuf, v, (size_t)(colon - v));
    hostbuf[colon - v] = '\0';
    host_arg = hostbuf;
    port = atoi(colon + 1);
  }
  signal(SIGPIPE, SIG_IGN);
  static host h;
  uv_loop_init(&h.loop);
  int rc = isv_server_new(&h.loop, NULL, &h.srv);
  if (rc == 0) rc = demo_zoo_register(h.srv); /* the demo's models, routes included */
  if (rc != 0) {
    fprintf(stderr, "inferserve-mhd: %s (%s)\n", isv_strerror(rc),
            h.srv ? isv_server_last_error(h.srv) : "");
    return 1;
  }
  struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
  if (inet_pton(AF_INET, host_arg, &addr.sin_addr) != 1) {
    fprintf(stderr, "inferserve-mhd: '%s' is not an IPv4 address\n", host_arg);
    return 2;
  }
  h.mhd = MHD_start_daemon(MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG, 0, NULL,
                           NULL, on_request, &h, MHD_OPTION_SOCK_ADDR, &addr,
                           MHD_OPTION_URI_LOG_CALLBACK, on_uri, &h,
                           MHD_OPTION_NOTIFY_COMPLETED, on_completed, &h,
                           MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)60, MHD_OPTION_END);
  if (h.mhd == NULL) {
    fprintf(stderr, "inferserve-mhd: cannot start libmicrohttpd on %s:%d\n", host_arg, port);
    return 1;
  }
  const union MHD_DaemonInfo *ep = MHD_get_daemon_info(h.mhd, MHD_DAEMON_INFO_EPOLL_FD);
  const union MHD_DaemonInfo *bp = MHD_get_daemon_info(h.mhd, MHD_DAEMON_INFO_BIND_PORT);
  uv_poll_init(&h.loop, &h.poll, ep->epoll_fd);
  h.poll.data = &h;
  uv_poll_start(&h.poll, UV_READABLE, on_poll);
  uv_timer_init(&h.loop, &h.timer);
  h.timer.data = &h;
  uv_signal_init(&h.loop, &h.sigint);
  uv_signal_init(&h.loop, &h.sigterm);
  h.sigint.data = h.sigterm.data = &h;
  uv_signal_start(&h.sigint, on_signal, SIGINT);
  uv_signal_start(&h.sigterm, on_signal, SIGTERM);
  printf("inferserve-mhd listening on %s:%u\n", host_arg, (unsigned)bp->port);
  fflush(stdout);
  run_mhd(&h);
  uv_run(&h.loop, UV_RUN_DEFAULT);
  return uv_loop_close(&h.loop) == 0 ? 0 : 1;
}
