/* Listening sockets, adopted connections, and the transport's graceful close. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "transport/adapter.h"
#include "transport/conn.h"
#include "transport/tls.h"

void isv__transport_init(isv__transport *t, uv_loop_t *loop, const isv__transport_limits *limits,
                         const isv__transport_handler *h) {
  memset(t, 0, sizeof *t);
  t->loop = loop;
  t->limits = *limits;
  t->h = *h;
  t->slice_budget_ns = ISV__SLICE_BUDGET_NS;
  isv__budget_init(&t->receiving, limits->max_receiving);
}

static void on_drain_closed(uv_handle_t *h);

static void free_listener(uv_handle_t *h) { isv__free(h->data); }

static void maybe_closed(isv__transport *t) {
  if (t->closing && t->n_conns == 0 && t->n_hosted == 0 && t->drain_armed) { /* drained: its timer goes */
    t->drain_armed = 0;
    t->open_handles++;
    uv_close((uv_handle_t *)&t->drain, on_drain_closed);
  }
  if (t->closing && t->open_handles == 0 && t->n_conns == 0 && t->n_hosted == 0 &&
      t->on_closed) {
    void (*cb)(isv__transport *) = t->on_closed;
    t->on_closed = NULL;
    cb(t);
  }
}

void isv__transport_conn_gone(isv__transport *t) { maybe_closed(t); }

int isv__transport_make_room(isv__transport *t) {
  if (t->n_conns - t->n_closing < t->limits.max_connections) {
    t->at_limit = 0;
    return 0;
  }
  if (!t->at_limit && t->h.log) {
    char msg[200];
    snprintf(msg, sizeof msg, "the connection limit (%u) is reached: connections without a "
             "request in flight are closed to make room, oldest first, then new ones refused",
             t->limits.max_connections);
    t->h.log(t->h.app, ISV_LOG_WARN, msg);
  }
  t->at_limit = 1;
  isv__conn *oldest = t->idle_head; /* idle, not closing (conn.c keeps the list) */
  if (oldest == NULL) return -1;
  isv__conn_close(oldest);
  return 0;
}

static void on_connection(uv_stream_t *server, int status) {
  isv__listener *l = server->data;
  isv__transport *t = l->t;
  if (status < 0) return;
  int room = t->closing ? -1 : isv__transport_make_room(t);
  isv__conn *c = isv__conn_new(t, NULL, 0);
  if (c == NULL) return; /* out of memory: the connection waits in the backlog */
  if (uv_accept(server, c->stream) != 0 || room != 0 ||
      (l->tls_ctx && isv__tls_attach(c, l->tls_ctx) != 0)) {
    isv__conn_close(c); /* every connection busy: accepted and closed, costs that client only */
    return;
  }
  isv__conn_start(c);
}

int isv__transport_listen(isv__transport *t, const char *host, int port) {
  return isv__transport_listen_tls(t, host, port, NULL);
}

int isv__transport_set_tls(isv__transport *t, unsigned index, void *tls_ctx) {
  if (index >= t->n_listeners || t->listeners[index]->tls_ctx == NULL || tls_ctx == NULL) {
    isv__tls_ctx_unref(tls_ctx);
    return ISV_EINVAL;
  }
  isv__tls_ctx_unref(t->listeners[index]->tls_ctx);
  t->listeners[index]->tls_ctx = tls_ctx;
  return 0;
}

/* The listening itself; takes tls_ctx (NULL: plain). */
static int listen_on(isv__transport *t, const char *host, int port, void *tls_ctx);

int isv__transport_listen_tls(isv__transport *t, const char *host, int port, void *tls_ctx) {
  int rc = listen_on(t, host, port, tls_ctx);
  if (rc != 0) isv__tls_ctx_unref(tls_ctx);
  return rc;
}

/* Whether another socket listens on sa already: a plain bind (SO_REUSEADDR, as libuv's, no
 * SO_REUSEPORT) fails then. */
static int address_taken(const struct sockaddr_storage *sa) {
  int fd = socket(sa->ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return 0; /* the real bind will say what is wrong */
  int on = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
  socklen_t len = sa->ss_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
  int taken = bind(fd, (const struct sockaddr *)sa, len) != 0 && errno == EADDRINUSE;
  close(fd);
  return taken;
}

static int listen_on(isv__transport *t, const char *host, int port, void *tls_ctx) {
  t->last_error[0] = '\0';
  if (t->closing) return ISV_ESTATE;
  if (host == NULL) {
    snprintf(t->last_error, sizeof t->last_error, "no host to listen on");
    return ISV_EINVAL;
  }
  if (port < 0 || port > 65535) {
    snprintf(t->last_error, sizeof t->last_error, "port %d is out of range (0 to 65535)", port);
    return ISV_EINVAL;
  }
  if (t->n_listeners == ISV__MAX_LISTENERS) {
    snprintf(t->last_error, sizeof t->last_error, "at most %d listeners", ISV__MAX_LISTENERS);
    return ISV_EINVAL;
  }
  struct sockaddr_storage ss;
  const char *h = strcmp(host, "localhost") == 0 ? "127.0.0.1" : host;
  if (uv_ip4_addr(h, port, (struct sockaddr_in *)&ss) != 0 &&
      uv_ip6_addr(h, port, (struct sockaddr_in6 *)&ss) != 0) {
    snprintf(t->last_error, sizeof t->last_error, "'%s' is not an IPv4 or IPv6 address", host);
    return ISV_EINVAL;
  }
  if (t->reuse_port && t->reuse_port_first && port != 0 && address_taken(&ss)) {
    snprintf(t->last_error, sizeof t->last_error, "cannot listen on %s:%d: %s (another "
             "process listens there)", host, port, uv_strerror(UV_EADDRINUSE));
    return ISV_EIO;
  }
  isv__listener *l = isv__calloc(t->mem, 1, sizeof *l);
  if (l == NULL) return ISV_ENOMEM;
  l->t = t;
  /* with reuse_port the socket exists before bind, for SO_REUSEPORT (libuv 1.44 has no flag) */
  int rc = uv_tcp_init_ex(t->loop, &l->tcp, t->reuse_port ? ss.ss_family : AF_UNSPEC);
  if (rc != 0) {
    isv__free(l);
    snprintf(t->last_error, sizeof t->last_error, "cannot make a socket: %s", uv_strerror(rc));
    return ISV_EIO;
  }
  l->tcp.data = l;
  if (t->reuse_port) {
    uv_os_fd_t fd;
    int on = 1;
    if (uv_fileno((uv_handle_t *)&l->tcp, &fd) != 0 ||
        setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &on, sizeof on) != 0)
      rc = UV_EINVAL;
  }
  if (rc == 0) rc = uv_tcp_bind(&l->tcp, (const struct sockaddr *)&ss, 0);
  if (rc == 0) rc = uv_listen((uv_stream_t *)&l->tcp, 511, on_connection);
  if (rc != 0) {
    snprintf(t->last_error, sizeof t->last_error, "cannot listen on %s:%d: %s", host, port,
             uv_strerror(rc));
    uv_close((uv_handle_t *)&l->tcp, free_listener);
    return ISV_EIO;
  }
  struct sockaddr_storage bound;
  int len = sizeof bound;
  uv_tcp_getsockname(&l->tcp, (struct sockaddr *)&bound, &len);
  l->port = ntohs(bound.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&bound)->sin6_port
                                              : ((struct sockaddr_in *)&bound)->sin_port);
  l->tls_ctx = tls_ctx;
  t->listeners[t->n_listeners++] = l;
  return 0;
}

int isv__transport_adopt(isv__transport *t, uv_stream_t *stream, uv_close_cb on_closed) {
  if (stream == NULL) return ISV_EINVAL;
  if (t->closing || (stream->type != UV_TCP && stream->type != UV_NAMED_PIPE) ||
      stream->loop != t->loop) {
    uv_close((uv_handle_t *)stream, on_closed);
    return t->closing ? ISV_ESTATE : ISV_EINVAL;
  }
  int room = isv__transport_make_room(t);
  isv__conn *c = isv__conn_new(t, stream, 1);
  if (c == NULL) {
    uv_close((uv_handle_t *)stream, on_closed);
    return ISV_ENOMEM;
  }
  c->adopted_closed = on_closed;
  if (room != 0) {
    isv__conn_close(c);
    return ISV_EOVERLOAD;
  }
  isv__conn_start(c);
  return 0;
}

static void on_listener_closed(uv_handle_t *h) {
  isv__listener *l = h->data;
  isv__transport *t = l->t;
  isv__tls_ctx_unref(l->tls_ctx);
  isv__free(l);
  t->open_handles--;
  maybe_closed(t);
}

static void on_drain_closed(uv_handle_t *h) {
  isv__transport *t = h->data;
  t->open_handles--;
  maybe_closed(t);
}

/* The drain deadline: whoever is still connected is cut off. */
static void on_drain_deadline(uv_timer_t *h) {
  isv__transport *t = h->data;
  if (t->h.log && t->conns)
    t->h.log(t->h.app, ISV_LOG_WARN, "drain deadline: closing the connections still open");
  for (isv__conn *c = t->conns, *next; c; c = next) {
    next = c->next;
    isv__conn_close(c);
  }
}

/* The connections still in a listener's accept queue as it closes. Closing the socket would
 * reset them, and a client (a balancer) may have written a request on one already, which it
 * cannot always resend (nginx's gRPC): they are accepted and served like the connections open
 * before the close — each is shut down once its engine read what came (conn.c, sniff), or
 * closed if nothing comes within ISV__LATE_MS. Several servers on one port (SO_REUSEPORT) have
 * a queue each, closing a moment apart: the race is theirs most. */
static void accept_queued(isv__transport *t, isv__listener *l) {
  uv_os_fd_t lfd;
  if (uv_fileno((const uv_handle_t *)&l->tcp, &lfd) != 0) return;
  for (unsigned i = 0; i < 1024; i++) { /* a queue is at most the backlog (511) */
    int fd = accept(lfd, NULL, NULL); /* the listener is non-blocking: EAGAIN when empty */
    if (fd < 0) return;
    fcntl(fd, F_SETFD, FD_CLOEXEC); /* uv_tcp_open makes it non-blocking */
    isv__conn *c = isv__conn_new(t, NULL, 0);
    if (c == NULL) {
      close(fd);
      return;
    }
    if (uv_tcp_open(&c->tcp, fd) != 0) {
      close(fd);
      isv__conn_close(c);
      continue;
    }
    if (l->tls_ctx && isv__tls_attach(c, l->tls_ctx) != 0) {
      isv__conn_close(c);
      continue;
    }
    c->late = 1;
    isv__conn_start(c);
    isv__conn_deadline(c, ISV__LATE_MS);
  }
}

void isv__transport_close(isv__transport *t, void (*on_closed)(isv__transport *t)) {
  t->closing = 1;
  t->on_closed = on_closed;
  if (t->limits.drain_timeout_ms) {
    uv_timer_init(t->loop, &t->drain);
    t->drain.data = t;
    uv_timer_start(&t->drain, on_drain_deadline, t->limits.drain_timeout_ms, 0);
    uv_unref((uv_handle_t *)&t->drain); /* it never keeps the host's loop alive by itself */
    t->drain_armed = 1;
  }
  for (unsigned i = 0; i < t->n_listeners; i++) {
    accept_queued(t, t->listeners[i]);
    t->open_handles++;
    uv_close((uv_handle_t *)&t->listeners[i]->tcp, on_listener_closed);
    t->listeners[i] = NULL;
  }
  t->n_listeners = 0;
  for (isv__conn *c = t->conns, *next; c; c = next) {
    next = c->next;
    isv__conn_shutdown(c);
  }
  isv__adapter_drain(t);
  maybe_closed(t);
}
