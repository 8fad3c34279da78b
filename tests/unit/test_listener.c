/* transport/listener.c over real TCP on 127.0.0.1: an ephemeral port reported back, addresses
 * and ports that are refused with a message naming them, the listener limit, a port already
 * taken, a connection accepted and served, the graceful close (listeners go, a busy connection
 * finishes, then the callback), listening after the close, and the drain deadline cutting off
 * a connection still busy. The socketpair cases (adopt, max_connections, engine choice) are in
 * test_conn.c. */
#include "cmocka_prelude.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "transport_fixture.h"

/* A plain TCP client, non-blocking: the test runs the server's loop while it waits. */
typedef struct tcp_client {
  int fd;
  char in[4096];
  size_t in_len;
  int eof;
} tcp_client;

static void tcp_connect(tcp_client *c, int port) {
  memset(c, 0, sizeof *c);
  c->fd = socket(AF_INET, SOCK_STREAM, 0);
  assert_true(c->fd >= 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  fcntl(c->fd, F_SETFL, O_NONBLOCK);
  int rc = connect(c->fd, (struct sockaddr *)&a, sizeof a);
  assert_true(rc == 0 || errno == EINPROGRESS);
}

static int tcp_poll_in(tcp_client *c) {
  for (;;) {
    ssize_t n = recv(c->fd, c->in + c->in_len, sizeof c->in - 1 - c->in_len, 0);
    if (n > 0) {
      c->in_len += (size_t)n;
      c->in[c->in_len] = 0;
      continue;
    }
    if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) c->eof = 1;
    return 0;
  }
}

static int got_response(tf_world *w, void *arg) {
  (void)w;
  tcp_client *c = arg;
  tcp_poll_in(c);
  return strstr(c->in, "\r\n\r\n") != NULL || c->eof;
}

static int got_eof(tf_world *w, void *arg) {
  (void)w;
  tcp_client *c = arg;
  tcp_poll_in(c);
  return c->eof;
}

static int n_conns_is(tf_world *w, void *arg) { return w->t.n_conns == *(unsigned *)arg; }

static int transport_closed(tf_world *w, void *arg) {
  (void)arg;
  return w->transport_closed > 0;
}

static void send_str(tcp_client *c, const char *s) {
  assert_int_equal(send(c->fd, s, strlen(s), 0), (ssize_t)strlen(s));
}

static void an_ephemeral_port_is_reported_and_served(void **state) {
  tf_world *w = *state;
  assert_int_equal(isv__transport_listen(&w->t, "127.0.0.1", 0), 0);
  assert_int_equal(w->t.n_listeners, 1);
  int port = w->t.listeners[0]->port;
  assert_true(port > 0 && port <= 65535);

  tcp_client c;
  tcp_connect(&c, port);
  unsigned one = 1;
  tf_run_until(w, n_conns_is, &one);
  send_str(&c, "GET /over/tcp HTTP/1.1\r\nHost: h\r\n\r\n");
  tf_run_until(w, got_response, &c);
  assert_non_null(strstr(c.in, "HTTP/1.1 200"));
  tf_run_until(w, got_response, &c); /* the body may come after the head */
  assert_int_equal(w->n_recs, 1);
  assert_string_equal(w->recs[0].path, "/over/tcp");
  close(c.fd);
  unsigned none = 0;
  tf_run_until(w, n_conns_is, &none);
}

static void localhost_means_the_ipv4_loopback(void **state) {
  tf_world *w = *state;
  assert_int_equal(isv__transport_listen(&w->t, "localhost", 0), 0);
  tcp_client c;
  tcp_connect(&c, w->t.listeners[0]->port); /* to 127.0.0.1 */
  unsigned one = 1;
  tf_run_until(w, n_conns_is, &one);
  close(c.fd);
}

static void bad_addresses_and_ports_are_refused_with_their_name(void **state) {
  tf_world *w = *state;
  assert_int_equal(isv__transport_listen(&w->t, "not-an-address", 0), ISV_EINVAL);
  assert_non_null(strstr(w->t.last_error, "'not-an-address' is not an IPv4 or IPv6 address"));
  assert_int_equal(isv__transport_listen(&w->t, "127.0.0.1", -1), ISV_EINVAL);
  assert_int_equal(isv__transport_listen(&w->t, "127.0.0.1", 65536), ISV_EINVAL);
  assert_int_equal(isv__transport_listen(&w->t, NULL, 0), ISV_EINVAL);
  assert_int_equal(w->t.n_listeners, 0);
}

static void a_port_already_taken_is_an_io_error_naming_it(void **state) {
  tf_world *w = *state;
  assert_int_equal(isv__transport_listen(&w->t, "127.0.0.1", 0), 0);
  int port = w->t.listeners[0]->port;
  assert_int_equal(isv__transport_listen(&w->t, "127.0.0.1", port), ISV_EIO);
  char want[64];
  snprintf(want, sizeof want, "cannot listen on 127.0.0.1:%d: ", port);
  assert_non_null(strstr(w->t.last_error, want));
  assert_int_equal(w->t.n_listeners, 1);
  tf_settle(w); /* the refused handle is closed and freed (LeakSanitizer) */
}

static void there_are_at_most_max_listeners(void **state) {
  tf_world *w = *state;
  for (int i = 0; i < ISV__MAX_LISTENERS; i++)
    assert_int_equal(isv__transport_listen(&w->t, "127.0.0.1", 0), 0);
  assert_int_equal(isv__transport_listen(&w->t, "127.0.0.1", 0), ISV_EINVAL);
  char want[32];
  snprintf(want, sizeof want, "at most %d listeners", ISV__MAX_LISTENERS);
  assert_string_equal(w->t.last_error, want);
}

static void close_stops_listening_lets_the_busy_finish_then_calls_back(void **state) {
  tf_world *w = *state;
  assert_int_equal(isv__transport_listen(&w->t, "127.0.0.1", 0), 0);
  int port = w->t.listeners[0]->port;
  tcp_client busy;
  tcp_connect(&busy, port);
  send_str(&busy, "GET /hold HTTP/1.1\r\nHost: h\r\n\r\n");
  tf_wait_recs(w, 1);

  tf_close_transport(w);
  assert_int_equal(w->t.n_listeners, 0);
  assert_int_equal(isv__transport_listen(&w->t, "127.0.0.1", 0), ISV_ESTATE);
  tf_run_for(w, 20);
  assert_int_equal(w->transport_closed, 0); /* the held exchange keeps it open */
  tcp_client late;
  tcp_connect(&late, port); /* nobody listens any more */
  tf_run_until(w, got_eof, &late);
  close(late.fd);

  tf_answer_held(w);
  tf_run_until(w, got_response, &busy);
  assert_non_null(strstr(busy.in, "HTTP/1.1 200"));
  tf_run_until(w, transport_closed, NULL);
  assert_int_equal(w->t.n_conns, 0);
  tf_run_until(w, got_eof, &busy);
  close(busy.fd);
}

/* Connected (the kernel completed the handshake) and sent a request, but never accepted: the
 * close takes them from the listener's queue and serves them — closing the socket would have
 * reset them — and one that says nothing is closed after ISV__LATE_MS. */
static void connections_waiting_in_the_queue_at_the_close_are_served(void **state) {
  tf_world *w = *state;
  assert_int_equal(isv__transport_listen(&w->t, "127.0.0.1", 0), 0);
  int port = w->t.listeners[0]->port;
  tcp_client q[3], silent;
  for (int i = 0; i < 3; i++) {
    tcp_connect(&q[i], port);
    struct pollfd p = {.fd = q[i].fd, .events = POLLOUT};
    assert_int_equal(poll(&p, 1, 2000), 1); /* in the queue: the loop has not run */
    send_str(&q[i], "GET /queued HTTP/1.1\r\nHost: h\r\n\r\n");
  }
  tcp_connect(&silent, port);
  struct pollfd p = {.fd = silent.fd, .events = POLLOUT};
  assert_int_equal(poll(&p, 1, 2000), 1);
  assert_int_equal(w->t.n_conns, 0);
  tf_close_transport(w);
  assert_int_equal(w->t.n_conns, 4); /* taken from the queue, not reset */
  for (int i = 0; i < 3; i++) {
    tf_run_until(w, got_response, &q[i]);
    assert_non_null(strstr(q[i].in, "HTTP/1.1 200"));
  }
  tf_run_until(w, transport_closed, NULL); /* the silent one went at ISV__LATE_MS */
  assert_int_equal(w->t.n_conns, 0);
  for (int i = 0; i < 3; i++) {
    tf_run_until(w, got_eof, &q[i]);
    close(q[i].fd);
  }
  tf_run_until(w, got_eof, &silent);
  assert_null(strstr(silent.in, "HTTP/1.1"));
  close(silent.fd);
}

static void the_drain_deadline_cuts_off_a_connection_still_busy(void **state) {
  tf_world *w = *state;
  w->t.limits.drain_timeout_ms = 30;
  assert_int_equal(isv__transport_listen(&w->t, "127.0.0.1", 0), 0);
  tcp_client busy;
  tcp_connect(&busy, w->t.listeners[0]->port);
  send_str(&busy, "GET /hold HTTP/1.1\r\nHost: h\r\n\r\n");
  tf_wait_recs(w, 1);
  tf_close_transport(w);
  tf_run_until(w, transport_closed, NULL); /* without the answer: the deadline closed it */
  tf_run_until(w, got_eof, &busy);
  assert_null(strstr(busy.in, "HTTP/1.1"));
  close(busy.fd);
  tf_answer_held(w); /* nothing to answer: the exchange went with its connection */
}

int main(void) {
#define T(name) cmocka_unit_test_setup_teardown(name, tf_setup, tf_teardown)
  const struct CMUnitTest tests[] = {
      T(an_ephemeral_port_is_reported_and_served),
      T(localhost_means_the_ipv4_loopback),
      T(bad_addresses_and_ports_are_refused_with_their_name),
      T(a_port_already_taken_is_an_io_error_naming_it),
      T(there_are_at_most_max_listeners),
      T(close_stops_listening_lets_the_busy_finish_then_calls_back),
      T(connections_waiting_in_the_queue_at_the_close_are_served),
      T(the_drain_deadline_cuts_off_a_connection_still_busy),
  };
#undef T
  return cmocka_run_group_tests(tests, NULL, NULL);
}
