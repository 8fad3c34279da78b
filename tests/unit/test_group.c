/* A group (lib/core/group.c): servers on two loops in two threads serving one set of models —
 * registered once and served by both, changes made on either reaching the other (and a member
 * that joins late), statistics summed over both, online shared, the backend destroyed once;
 * and a lone server as a group of one, and the one recipe for the library's hidden models.
 * Run under ThreadSanitizer in CI (scripts/test.sh) for the cross-thread parts. */
#include "cmocka_prelude.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/group.h"
#include "core/resolve.h"
#include "inferserve.h"
#include "core/queries.h"
#include "core/watch.h"

/* ---- one member: a loop in a thread, and a way to run code on it ---------------------------- */

typedef struct member member;
typedef void (*on_loop_fn)(member *m, void *arg);

struct member {
  uv_thread_t th;
  uv_loop_t loop;
  isv_group *group;
  isv_server *srv;
  uv_async_t stop, call;
  uv_sem_t sem;
  int port; /* in: 0 for the first (picks one); out: the bound port */
  int rc;   /* isv_server_new's and isv_server_listen's */
  uv_mutex_t mu; /* fn and arg: uv_async_send is no ordering ThreadSanitizer knows of */
  on_loop_fn fn;
  void *arg;
};

static void member_closed(isv_server *srv, void *d) {
  (void)srv;
  member *m = d;
  uv_close((uv_handle_t *)&m->stop, NULL);
  uv_close((uv_handle_t *)&m->call, NULL);
}
static void member_stop(uv_async_t *a) {
  member *m = a->data;
  isv_server_close(m->srv, member_closed, m);
}
static void member_call(uv_async_t *a) {
  member *m = a->data;
  uv_mutex_lock(&m->mu);
  on_loop_fn fn = m->fn;
  void *arg = m->arg;
  m->fn = NULL;
  uv_mutex_unlock(&m->mu);
  if (fn == NULL) return; /* sends coalesce: a wake with nothing asked */
  fn(m, arg);
  uv_sem_post(&m->sem);
}

/* Warnings the members log: the group's changes, followed, are no news (one said "could not
 * follow every model change (out of memory?)" under ordinary churn). */
static atomic_int warnings;
static void count_warnings(void *user, isv_log_level level, const char *message) {
  (void)user, (void)message;
  if (level == ISV_LOG_WARN && strncmp(message, "group:", 6) == 0) atomic_fetch_add(&warnings, 1);
}

static void member_main(void *arg) {
  member *m = arg;
  uv_loop_init(&m->loop);
  isv_options *o;
  isv_options_new(&o);
  isv_options_set_log(o, count_warnings, NULL);
  isv_options_set_reuse_port(o, 1);
  isv_options_set_group(o, m->group);
  m->rc = isv_server_new(&m->loop, o, &m->srv);
  isv_options_free(o); /* the server holds the group itself */
  if (m->rc == 0) m->rc = isv_server_listen(m->srv, "127.0.0.1", m->port);
  if (m->rc == 0) m->port = isv_server_bound_port(m->srv, 0);
  uv_async_init(&m->loop, &m->stop, member_stop);
  uv_async_init(&m->loop, &m->call, member_call);
  m->stop.data = m->call.data = m;
  uv_sem_post(&m->sem);
  uv_run(&m->loop, UV_RUN_DEFAULT);
  uv_loop_close(&m->loop);
}

static void member_start(member *m, isv_group *g, int port) {
  memset(m, 0, sizeof *m);
  m->group = g;
  m->port = port;
  uv_sem_init(&m->sem, 0);
  uv_mutex_init(&m->mu);
  uv_thread_create(&m->th, member_main, m);
  uv_sem_wait(&m->sem);
  assert_int_equal(m->rc, 0);
}

static void member_end(member *m) {
  uv_async_send(&m->stop);
  uv_thread_join(&m->th);
  uv_sem_destroy(&m->sem);
  uv_mutex_destroy(&m->mu);
}

/* fn(m, arg) on m's loop thread; returns once it ran. */
static void on_loop(member *m, on_loop_fn fn, void *arg) {
  uv_mutex_lock(&m->mu);
  m->fn = fn;
  m->arg = arg;
  uv_mutex_unlock(&m->mu);
  uv_async_send(&m->call);
  uv_sem_wait(&m->sem);
}

/* ---- the model: y = x, counting where it ran ---------------------------------------------- */

typedef struct shared {
  atomic_int served[2]; /* by member: which loop thread ran it */
  atomic_int destroyed;
  atomic_int seq_ended;
  uv_thread_t threads[2];
} shared;

static int echo(isv_request *r, void *u) {
  shared *s = u;
  uv_thread_t self = uv_thread_self();
  for (int i = 0; i < 2; i++)
    if (uv_thread_equal(&self, &s->threads[i])) atomic_fetch_add(&s->served[i], 1);
  const isv_tensor *x = isv_request_input(r, "x");
  size_t nd;
  const int64_t *shape = isv_tensor_shape(x, &nd);
  int rc = isv_request_set_output(r, "y", ISV_FP32, shape, nd, isv_tensor_data(x),
                                  isv_tensor_byte_size(x), ISV_STATIC);
  return rc ? rc : isv_request_complete(r, 0, NULL);
}

static void destroy(void *u) { atomic_fetch_add(&((shared *)u)->destroyed, 1); }

typedef struct add_args {
  const char *name, *version;
  shared *s;
  int rc;
} add_args;

/* A stateful model's sequence ends as its copy goes: the host takes its time (any host code
 * may run here while the copy is being freed). */
static void seq_end_slowly(void *u, uint64_t id, const char *id_str, void *state,
                           isv_sequence_end_reason reason) {
  (void)id, (void)id_str, (void)state, (void)reason;
  uv_sleep(2);
  atomic_fetch_add(&((shared *)u)->seq_ended, 1);
}

static void add_model_as(member *m, add_args *a, int stateful) {
  isv_model_config *c;
  isv_model_config_new(a->name, &c);
  int64_t any[] = {-1};
  isv_model_config_add_input(c, "x", ISV_FP32, any, 1);
  isv_model_config_add_output(c, "y", ISV_FP32, any, 1);
  isv_backend be = {.struct_size = sizeof be, .infer = echo, .destroy = destroy};
  if (stateful) { /* a reader of its statistics sums each of its 65 batch sizes in turn */
    isv_model_config_set_max_batch(c, 64);
    isv_model_config_set_sequence_batching(c, 0, 0);
    be.sequence_end = seq_end_slowly;
  }
  a->rc = isv_server_add_model(m->srv, c, a->version, &be, a->s, NULL);
  isv_model_config_free(c);
}

static void add_model(member *m, void *arg) { add_model_as(m, arg, 0); }
static void add_stateful_model(member *m, void *arg) { add_model_as(m, arg, 1); }

static void remove_model(member *m, void *arg) {
  add_args *a = arg;
  a->rc = isv_server_remove_model(m->srv, a->name, a->version);
}

static void set_stable(member *m, void *version) {
  if (isv_server_set_label(m->srv, "late", "stable", version) != 0) abort();
}

static void set_default_one(member *m, void *arg) {
  (void)arg;
  if (isv_server_set_default_version(m->srv, "late", "1") != 0) abort();
}

static void set_online(member *m, void *on) { isv_server_set_online(m->srv, on != NULL); }
static void is_ready(member *m, void *out) { *(int *)out = isv_server_is_ready(m->srv); }

/* A custom route each member registers for itself: its numbers are summed like a model's. */
static int route_ok(isv_http_request *req, void *user) {
  (void)user;
  return isv_http_respond(req, 200, "text/plain", "ok", 2, ISV_STATIC);
}
static void add_route(member *m, void *rc) {
  isv_route r;
  memset(&r, 0, sizeof r);
  r.struct_size = sizeof r;
  r.method = "GET";
  r.path = "/r";
  r.handler = route_ok;
  *(int *)rc = isv_server_add_route(m->srv, &r);
}

static void note_thread(member *m, void *arg) {
  (void)m;
  *(uv_thread_t *)arg = uv_thread_self();
}

/* Whether `name` (at `label`, if any) is known to m's server now: 1, 0. */
typedef struct known_args {
  const char *name, *label;
  int known;
} known_args;
static void known(member *m, void *arg) {
  known_args *k = arg;
  isv_request *r = NULL;
  int rc = k->label ? isv_request_new_by_label(m->srv, k->name, k->label, &r)
                    : isv_request_new(m->srv, k->name, NULL, &r);
  k->known = rc == 0;
  isv_request_free(r);
}

/* Poll m until `name` is (want 1) or is not (want 0) known: a change made on one member
 * reaches the other within a turn of its loop. */
static int becomes(member *m, const char *name, const char *label, int want) {
  for (int i = 0; i < 2000; i++) {
    known_args k = {name, label, -1};
    on_loop(m, known, &k);
    if (k.known == want) return 1;
    uv_sleep(1);
  }
  return 0;
}

/* ---- HTTP over loopback ---------------------------------------------------------------- */

/* One request on a fresh connection (the kernel picks the member); the status, the body in
 * resp. */
static int http(int port, const char *method, const char *path, const char *body, char *resp,
                size_t cap) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
    close(fd);
    return -1;
  }
  char req[1024];
  int n = snprintf(req, sizeof req,
                   "%s %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: %zu\r\n\r\n%s",
                   method, path, body ? strlen(body) : 0, body ? body : "");
  if (write(fd, req, (size_t)n) != n) n = -1;
  size_t got = 0;
  ssize_t k;
  while (got + 1 < cap && (k = read(fd, resp + got, cap - 1 - got)) > 0) got += (size_t)k;
  resp[got] = '\0';
  close(fd);
  int status = -1;
  sscanf(resp, "HTTP/1.1 %d", &status);
  return status;
}

static const char infer_body[] =
    "{\"inputs\":[{\"name\":\"x\",\"datatype\":\"FP32\",\"shape\":[2],\"data\":[1,2]}]}";

static int infer(int port, const char *model) {
  char path[128], resp[4096];
  snprintf(path, sizeof path, "/v2/models/%s/infer", model);
  return http(port, "POST", path, infer_body, resp, sizeof resp);
}

/* How many of n requests for "late" without a version were answered by version v. */
static int answered_by(int port, const char *v, int n) {
  char resp[4096], want[64];
  snprintf(want, sizeof want, "\"model_version\":\"%s\"", v);
  int k = 0;
  for (int i = 0; i < n; i++)
    if (http(port, "POST", "/v2/models/late/infer", infer_body, resp, sizeof resp) == 200 &&
        strstr(resp, want))
      k++;
  return k;
}

/* ---- the tests ------------------------------------------------------------------------------ */

/* Registered once, on the first member, before the second exists: both serve it (the kernel
 * spreads 64 connections), and whichever member answers a statistics or metrics request
 * counts all 64 — and all 16 requests of a route each member registered for itself. */
static void registered_once_served_by_every_member(void **state) {
  (void)state;
  isv_group *g;
  assert_int_equal(isv_group_new(&g), 0);
  shared s;
  memset(&s, 0, sizeof s);
  member a, b;
  member_start(&a, g, 0);
  add_args add = {"m", "1", &s, -1};
  on_loop(&a, add_model, &add);
  assert_int_equal(add.rc, 0);
  member_start(&b, g, a.port); /* joins late: gets "m" as it joins */
  on_loop(&a, note_thread, &s.threads[0]);
  on_loop(&b, note_thread, &s.threads[1]);
  int rc_a = -1, rc_b = -1;
  on_loop(&a, add_route, &rc_a);
  on_loop(&b, add_route, &rc_b);
  assert_int_equal(rc_a, 0);
  assert_int_equal(rc_b, 0);
  for (int i = 0; i < 64; i++) assert_int_equal(infer(a.port, "m"), 200);
  assert_int_equal(atomic_load(&s.served[0]) + atomic_load(&s.served[1]), 64);
  assert_true(atomic_load(&s.served[0]) > 0 && atomic_load(&s.served[1]) > 0); /* 2^-63 */

  char resp[16384];
  for (int i = 0; i < 16; i++) assert_int_equal(http(a.port, "GET", "/r", NULL, resp, sizeof resp), 200);
  for (int i = 0; i < 8; i++) { /* 8 connections: both members answer some */
    assert_int_equal(http(a.port, "GET", "/v2/models/m/stats", NULL, resp, sizeof resp), 200);
    assert_non_null(strstr(resp, "\"inference_count\":64,"));
    assert_non_null(strstr(resp, "\"success\":{\"count\":64,"));
    assert_int_equal(http(a.port, "GET", "/metrics", NULL, resp, sizeof resp), 200);
    assert_non_null(strstr(resp, "isv_requests_total{model=\"m\",version=\"1\",protocol=\"v2_http\","
                                 "outcome=\"success\"} 64\n"));
    assert_non_null(strstr(resp, "isv_batch_executions_total{model=\"m\",version=\"1\","
                                 "batch_size=\"1\"} 64\n"));
    /* each member's own route, counted as one */
    assert_non_null(strstr(resp, "isv_requests_total{model=\"@route GET /r\",version=\"1\","
                                 "protocol=\"custom\",outcome=\"success\"} 16\n"));
  }
  member_end(&a);
  member_end(&b);
  assert_int_equal(atomic_load(&s.destroyed), 0); /* the host still holds the group */
  isv_group_free(g);
  assert_int_equal(atomic_load(&s.destroyed), 1); /* once, when the group ended */
}

/* Made on either member, a change reaches the other: a model added on the second, a label set
 * on the first, a version removed on the first (destroyed once, after both copies went). The
 * same (name, version) twice is EEXIST whichever member is asked. */
static void changes_reach_every_member(void **state) {
  (void)state;
  isv_group *g;
  assert_int_equal(isv_group_new(&g), 0);
  shared s;
  memset(&s, 0, sizeof s);
  member a, b;
  member_start(&a, g, 0);
  member_start(&b, g, a.port);
  isv_group_free(g); /* the servers hold it */

  add_args add = {"late", "1", &s, -1};
  on_loop(&b, add_model, &add);
  assert_int_equal(add.rc, 0);
  assert_true(becomes(&a, "late", NULL, 1));
  on_loop(&a, add_model, &add);
  assert_int_equal(add.rc, ISV_EEXIST);
  add.version = "2";
  on_loop(&a, add_model, &add);
  assert_int_equal(add.rc, 0);
  for (int i = 0; i < 16; i++) assert_int_equal(infer(a.port, "late"), 200);

  /* a label, set on a: b resolves it; the default version, set on b: a answers with it */
  on_loop(&a, set_stable, "1");
  assert_true(becomes(&b, "late", "stable", 1));
  assert_int_equal(answered_by(a.port, "2", 16), 16); /* the rule: the highest */
  on_loop(&b, set_default_one, NULL);
  int all = 0;
  for (int i = 0; i < 200 && !all; i++) /* a follows within a turn of its loop */
    all = answered_by(a.port, "1", 16) == 16;
  assert_true(all);

  /* offline on b: a is not ready either; online again on a */
  on_loop(&b, set_online, (void *)0);
  int ready = -1;
  on_loop(&a, is_ready, &ready);
  assert_int_equal(ready, 0);
  on_loop(&a, set_online, (void *)1);
  on_loop(&b, is_ready, &ready);
  assert_int_equal(ready, 1);

  /* removed on a: gone from b too, each version's backend destroyed once */
  add_args rm = {"late", NULL, &s, -1};
  on_loop(&a, remove_model, &rm);
  assert_int_equal(rm.rc, 0);
  assert_true(becomes(&b, "late", NULL, 0));
  for (int i = 0; i < 200 && atomic_load(&s.destroyed) < 2; i++) uv_sleep(1);
  assert_int_equal(atomic_load(&s.destroyed), 2);
  for (int i = 0; i < 16; i++) assert_int_equal(infer(a.port, "late"), 404);
  on_loop(&b, remove_model, &rm);
  assert_int_equal(rm.rc, ISV_ENOTFOUND);
  member_end(&a);
  member_end(&b);
  assert_int_equal(atomic_load(&s.destroyed), 2);
}

/* In one thread: members must agree with the first on shared memory (ISV_EINVAL, and nothing
 * is left of the refused one); options hold the group until they are freed or set again; a
 * port is shared with the group's members, never with another process's socket. */
static void members_agree_and_options_hold_the_group(void **state) {
  (void)state;
  uv_loop_t loop;
  uv_loop_init(&loop);
  isv_group *g;
  assert_int_equal(isv_group_new(&g), 0);
  isv_options *o;
  isv_options_new(&o);
  assert_int_equal(isv_options_set_group(o, g), 0);
  isv_group_free(g); /* the options hold it */
  isv_options_set_reuse_port(o, 1);
  isv_options_set_shared_memory(o, 1);
  isv_server *a, *b;
  assert_int_equal(isv_server_new(&loop, o, &a), 0);
  isv_options_set_shared_memory(o, 0);
  assert_int_equal(isv_server_new(&loop, o, &b), ISV_EINVAL);
  assert_null(b);
  isv_options_set_shared_memory(o, 1);
  isv_options_set_shared_memory_in_place(o, 1); /* one registry: mapped for all, or for none */
  assert_int_equal(isv_server_new(&loop, o, &b), ISV_EINVAL);
  isv_options_set_shared_memory_in_place(o, 0);
  assert_int_equal(isv_server_new(&loop, o, &b), 0);
  assert_int_equal(isv_options_set_group(o, NULL), 0); /* the options' reference goes */
  isv_options_free(o);
  /* SO_REUSEPORT shares a port within the group only: an address another process (here a
   * server outside the group) listens on is refused to the group's first bind on it */
  isv_server *x;
  assert_int_equal(isv_server_new(&loop, NULL, &x), 0);
  assert_int_equal(isv_server_listen(x, "127.0.0.1", 0), 0);
  int taken = isv_server_bound_port(x, 0);
  assert_int_equal(isv_server_listen(a, "127.0.0.1", taken), ISV_EIO);
  assert_non_null(strstr(isv_server_last_error(a), "address already in use"));
  assert_int_equal(isv_server_listen(a, "127.0.0.1", 0), 0);
  int port = isv_server_bound_port(a, 0);
  assert_int_equal(isv_server_listen(b, "127.0.0.1", port), 0); /* a member joins it */
  assert_int_equal(isv_server_bound_port(b, 0), port);
  assert_int_equal(isv_server_close(x, NULL, NULL), 0);
  /* online is the group's: b offline takes a offline */
  isv_server_set_online(b, 0);
  assert_false(isv_server_is_online(a));
  assert_false(isv_server_is_ready(a));
  isv_server_set_online(a, 1);
  assert_true(isv_server_is_ready(b));
  assert_int_equal(isv_server_close(a, NULL, NULL), 0);
  assert_int_equal(isv_server_close(b, NULL, NULL), 0);
  uv_run(&loop, UV_RUN_DEFAULT); /* the last close frees the group: LeakSanitizer checks */
  assert_int_equal(uv_loop_close(&loop), 0);
}

/* ---- a storm: copies freed on one loop while another sums them ------------------------------ */

typedef struct storm {
  atomic_int port; /* the member to ask: the one that is not removing the model */
  atomic_int done; /* the writer finished */
  int reads, bad;  /* the reader's: requests made, answers that were not sane */
  char why[256];
} storm;

/* The number after `key` (a line of the metrics, a JSON member) in resp: -1 when absent. */
static long long number_after(const char *resp, const char *key) {
  const char *p = strstr(resp, key);
  return p ? strtoll(p + strlen(key), NULL, 10) : -1;
}

/* GET /v2/models/storm/stats and GET /metrics until the writer is done, checking what they
 * count: "m" its 8 requests; "storm" (each a new record) at most its one request, and only at
 * batch size 1 — a copy read after it was freed would show anything. */
static void storm_reader(void *arg) {
  storm *st = arg;
  static char resp[1 << 17];
  static const char storm_execs[] = "isv_batch_executions_total{model=\"storm\",version=\"1\",";
  for (int i = 0; !atomic_load(&st->done) && i < 100000; i++) {
    int port = atomic_load(&st->port);
    st->reads++;
    int status = http(port, "GET", "/v2/models/storm/stats", NULL, resp, sizeof resp);
    long long n = number_after(resp, "\"inference_count\":");
    if (status == 200 ? n < 0 || n > 1 : status != 404) {
      snprintf(st->why, sizeof st->why, "/v2/models/storm/stats: status %d: %.120s", status, resp);
      st->bad++;
    }
    status = http(port, "GET", "/metrics", NULL, resp, sizeof resp);
    n = number_after(resp, "isv_batch_executions_total{model=\"m\",version=\"1\",batch_size=\"1\"} ");
    const char *x = strstr(resp, storm_execs);
    if (status != 200 || n != 8 ||
        (x && (strncmp(x + sizeof storm_execs - 1, "batch_size=\"1\"} 1\n", 18) != 0 ||
               strstr(x + 1, storm_execs) != NULL))) {
      snprintf(st->why, sizeof st->why, "/metrics: status %d, m's batch executions %lld; %.80s",
               status, n, x ? x : "");
      st->bad++;
    }
  }
}

static const char seq_body[] =
    "{\"parameters\":{\"sequence_id\":7,\"sequence_start\":true},"
    "\"inputs\":[{\"name\":\"x\",\"datatype\":\"FP32\",\"shape\":[1,2],\"data\":[1,2]}]}";

/* One member removes and adds a model again and again while a reader asks the other member
 * for its statistics and the metrics, which sum both members' copies: each removal frees the
 * remover's copy on its loop (its live sequence ends slowly, a host callback) while the other
 * loop may be summing it. ThreadSanitizer must report nothing. */
static void stats_while_copies_go(void **state) {
  (void)state;
  isv_group *g;
  assert_int_equal(isv_group_new(&g), 0);
  shared s;
  memset(&s, 0, sizeof s);
  member a, b;
  member_start(&a, g, 0);
  member_start(&b, g, 0); /* its own port: the test chooses the loop that answers */
  isv_group_free(g);
  add_args add = {"m", "1", &s, -1};
  on_loop(&a, add_model, &add);
  assert_int_equal(add.rc, 0);
  assert_true(becomes(&b, "m", NULL, 1));
  for (int i = 0; i < 8; i++) assert_int_equal(infer(i & 1 ? b.port : a.port, "m"), 200);

  storm st;
  memset(&st, 0, sizeof st);
  atomic_store(&st.port, b.port);
  uv_thread_t reader;
  uv_thread_create(&reader, storm_reader, &st);
  enum { CYCLES = 200 };
  add_args sa = {"storm", "1", &s, -1};
  char resp[4096];
  for (int i = 0; i < CYCLES; i++) {
    member *w = i % 4 < 2 ? &a : &b, *o = w == &a ? &b : &a; /* either loop frees its copy */
    sa.rc = -1;
    on_loop(w, add_stateful_model, &sa);
    assert_int_equal(sa.rc, 0);
    assert_true(becomes(o, "storm", NULL, 1)); /* the reader's member sums both copies */
    atomic_store(&st.port, o->port);
    assert_int_equal(http(w->port, "POST", "/v2/models/storm/infer", seq_body, resp, sizeof resp),
                     200); /* a live sequence on w's copy */
    sa.rc = -1;
    on_loop(w, remove_model, &sa);
    assert_int_equal(sa.rc, 0);
  }
  atomic_store(&st.done, 1);
  uv_thread_join(&reader);
  if (st.bad) fprintf(stderr, "%d of %d reads not sane; the last: %s\n", st.bad, st.reads, st.why);
  assert_int_equal(st.bad, 0);
  assert_true(st.reads > 0);
  member_end(&a);
  member_end(&b);
  assert_int_equal(atomic_load(&s.seq_ended), CYCLES);
  assert_int_equal(atomic_load(&s.destroyed), CYCLES + 1); /* each "storm" once, and "m" */
  assert_int_equal(atomic_load(&warnings), 0); /* churn is no news */
}

/* ---- members listening on one address at the same moment ------------------------------- */

#if defined(__SANITIZE_THREAD__)
#define LISTEN_RACES 100 /* ThreadSanitizer's build is ~10 times slower */
#else
#define LISTEN_RACES 500
#endif

typedef struct racer {
  uv_barrier_t *start;
  isv_group *group;
  int port;
  int rc;
} racer;

static void racer_closed(isv_server *srv, void *d) {
  (void)srv;
  *(int *)d = 1;
}

/* A member made on its own thread, then — with the other one — listening on the same port at
 * once (the barrier), then closed. */
static void racer_main(void *arg) {
  racer *r = arg;
  uv_loop_t loop;
  uv_loop_init(&loop);
  isv_options *o;
  isv_options_new(&o);
  isv_options_set_reuse_port(o, 1);
  isv_options_set_group(o, r->group);
  isv_server *srv = NULL;
  int rc = isv_server_new(&loop, o, &srv);
  isv_options_free(o);
  uv_barrier_wait(r->start);
  if (rc == 0) rc = isv_server_listen(srv, "127.0.0.1", r->port);
  r->rc = rc;
  uv_barrier_wait(r->start); /* both listened before either closes */
  if (srv) {
    int closed = 0;
    isv_server_close(srv, racer_closed, &closed);
    uv_run(&loop, UV_RUN_DEFAULT);
  }
  uv_loop_close(&loop);
}

/* A free port now (bound to 0, then let go). */
static int free_port(void) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t n = sizeof a;
  assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
  assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &n), 0);
  close(fd);
  return ntohs(a.sin_port);
}

/* The header's recipe — N loops, each isv_server_listen on the same port — with the members
 * listening at the very same moment: every one succeeds, every time (before, the second's
 * exclusive probe could run after the first bound: "address already in use (another process
 * listens there)", 6 in 600). A second process on the port still fails: the group's first
 * bind is exclusive. */
static void members_listen_at_once(void **state) {
  (void)state;
  int port = free_port(), failures = 0;
  for (int i = 0; i < LISTEN_RACES; i++) {
    isv_group *g;
    assert_int_equal(isv_group_new(&g), 0);
    uv_barrier_t start;
    uv_barrier_init(&start, 2);
    racer r[2] = {{&start, g, port, 0}, {&start, g, port, 0}};
    uv_thread_t t[2];
    for (int k = 0; k < 2; k++) uv_thread_create(&t[k], racer_main, &r[k]);
    for (int k = 0; k < 2; k++) uv_thread_join(&t[k]);
    uv_barrier_destroy(&start);
    isv_group_free(g);
    failures += (r[0].rc != 0) + (r[1].rc != 0);
  }
  assert_int_equal(failures, 0);
  /* someone else on the port: the group's first listen is refused */
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
  assert_int_equal(listen(fd, 1), 0);
  isv_group *g;
  assert_int_equal(isv_group_new(&g), 0);
  uv_barrier_t start;
  uv_barrier_init(&start, 1);
  racer lone = {&start, g, port, 0};
  racer_main(&lone);
  uv_barrier_destroy(&start);
  isv_group_free(g);
  close(fd);
  assert_int_equal(lone.rc, ISV_EIO);
}

/* Members that registered the same route (its hidden model: one record, a copy each) close at
 * the same moment on their threads: the last copy frees the record, and no other member reads it
 * afterwards (ASan saw copy_gone read the record's flags after the other thread freed it). */
static int route_handler(isv_http_request *req, void *u) {
  (void)req;
  (void)u;
  return 0;
}

static void route_member_main(void *arg) {
  racer *r = arg;
  uv_loop_t loop;
  uv_loop_init(&loop);
  isv_options *o;
  isv_options_new(&o);
  isv_options_set_group(o, r->group);
  isv_server *srv = NULL;
  int rc = isv_server_new(&loop, o, &srv);
  isv_options_free(o);
  isv_route route = {.struct_size = sizeof route, .method = "GET", .path = "/custom/same",
                     .handler = route_handler};
  if (rc == 0) rc = isv_server_add_route(srv, &route);
  r->rc = rc;
  uv_barrier_wait(r->start); /* both registered before either closes */
  if (srv) {
    int closed = 0;
    isv_server_close(srv, racer_closed, &closed);
    uv_run(&loop, UV_RUN_DEFAULT);
  }
  uv_loop_close(&loop);
}

static void members_close_their_routes_at_once(void **state) {
  (void)state;
  int failures = 0;
  for (int i = 0; i < 200; i++) {
    isv_group *g;
    assert_int_equal(isv_group_new(&g), 0);
    uv_barrier_t start;
    uv_barrier_init(&start, 2);
    racer r[2] = {{&start, g, 0, 0}, {&start, g, 0, 0}};
    uv_thread_t t[2];
    for (int k = 0; k < 2; k++) uv_thread_create(&t[k], route_member_main, &r[k]);
    for (int k = 0; k < 2; k++) uv_thread_join(&t[k]);
    uv_barrier_destroy(&start);
    isv_group_free(g);
    failures += (r[0].rc != 0) + (r[1].rc != 0);
  }
  assert_int_equal(failures, 0);
}

/* ---- a lone server is a group of one ---------------------------------------------------- */

static int lone_destroyed;
static void lone_destroy(void *u) {
  (void)u;
  lone_destroyed++;
}
static int lone_infer(isv_request *r, void *u) {
  (void)u;
  return isv_request_complete(r, 0, NULL);
}
static void lone_closed(isv_server *srv, void *d) {
  (void)srv;
  *(int *)d = 1;
}

/* A server made without a group runs the group's code: every model it registers is a copy of a
 * record of its own group of one (m->gcopy), and adding, labelling, choosing the default,
 * changing the state and removing go through the table and the sync as on a member — with the
 * same results, the same last errors (the in-process API's words, core/resolve.h), the host's
 * destroy once when a version goes. Its listens never probe the port: a lone server with
 * SO_REUSEPORT shares it with whoever the host meant. */
static void a_lone_server_is_a_group_of_one(void **state) {
  (void)state;
  uv_loop_t loop;
  uv_loop_init(&loop);
  isv_options *o;
  assert_int_equal(isv_options_new(&o), 0);
  isv_options_set_reuse_port(o, 1);
  isv_server *srv;
  assert_int_equal(isv_server_new(&loop, o, &srv), 0);
  isv_options_free(o);
  isv__core *core = (isv__core *)srv; /* the server's first member */
  assert_non_null(core->member);

  isv_model_config *c;
  isv_model_config_new("m", &c);
  isv_backend be = {.struct_size = sizeof be, .infer = lone_infer, .destroy = lone_destroy};
  isv_model *v1, *v2;
  lone_destroyed = 0;
  assert_int_equal(isv_server_add_model(srv, c, "1", &be, NULL, &v1), 0);
  assert_int_equal(isv_server_add_model(srv, c, "2", &be, NULL, &v2), 0);
  assert_int_equal(isv_server_add_model(srv, c, "2", &be, NULL, NULL), ISV_EEXIST);
  assert_string_equal(isv_server_last_error(srv), "model 'm' version '2' is already registered");
  isv_model_config_free(c);
  assert_non_null(v1->gcopy); /* copies of the group's records */
  assert_non_null(v2->gcopy);
  isv_model *m;
  isv__model_spec spec = {"m", 1, NULL, 0, NULL, 0};
  assert_int_equal(isv__core_resolve(core, &spec, &m), ISV__FOUND);
  assert_ptr_equal(m, v2); /* the rule: the highest */

  /* label and default version: the group's name record, followed by the registry */
  assert_int_equal(isv_server_set_label(srv, "m", "stable", "1"), 0);
  isv_request *r;
  assert_int_equal(isv_request_new_by_label(srv, "m", "stable", &r), 0);
  isv_request_free(r);
  assert_int_equal(isv_request_new_by_label(srv, "m", "canary", &r), ISV_ENOTFOUND);
  assert_string_equal(isv_server_last_error(srv), "model 'm' has no label 'canary'");
  assert_int_equal(isv_server_set_default_version(srv, "m", "1"), 0);
  assert_int_equal(isv__core_resolve(core, &spec, &m), ISV__FOUND);
  assert_ptr_equal(m, v1);
  assert_int_equal(isv_server_set_label(srv, "m", "stable", NULL), 0);
  assert_int_equal(isv_server_set_label(srv, "m", "stable", NULL), ISV_ENOTFOUND);
  assert_string_equal(isv_server_last_error(srv), "model 'm' has no label 'stable'");
  assert_int_equal(isv_server_set_label(srv, "m", "x", "9"), ISV_ENOTFOUND);
  assert_string_equal(isv_server_last_error(srv), "model 'm' has no version '9'");

  /* the state: the table's, on the copy at once */
  assert_int_equal(isv_server_set_model_state(srv, "m", "2", ISV_MODEL_UNAVAILABLE), 0);
  assert_int_equal(v2->state, ISV_MODEL_UNAVAILABLE);
  assert_int_equal(isv_server_set_model_state(srv, "m", "2", ISV_MODEL_READY), 0);

  /* removed: out of the registry, destroyed once, at once (no request holds it) */
  assert_int_equal(isv_server_remove_model(srv, "m", "1"), 0);
  assert_int_equal(lone_destroyed, 1);
  assert_int_equal(isv__core_resolve(core, &spec, &m), ISV__FOUND);
  assert_ptr_equal(m, v2); /* the default named a version that went: the rule again */
  assert_int_equal(isv_server_remove_model(srv, "m", "1"), ISV_ENOTFOUND);
  assert_string_equal(isv_server_last_error(srv), "model 'm' has no version '1'");
  assert_int_equal(isv_server_remove_model(srv, "x", NULL), ISV_ENOTFOUND);
  assert_string_equal(isv_server_last_error(srv), "no model 'x' is registered");

  /* SO_REUSEPORT with another socket of the host's: no probe for a group of one */
  int fd = socket(AF_INET, SOCK_STREAM, 0), on = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &on, sizeof on);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t len = sizeof a;
  assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
  assert_int_equal(listen(fd, 1), 0);
  assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
  assert_int_equal(isv_server_listen(srv, "127.0.0.1", ntohs(a.sin_port)), 0);

  int closed = 0;
  assert_int_equal(isv_server_close(srv, lone_closed, &closed), 0);
  uv_run(&loop, UV_RUN_DEFAULT);
  close(fd);
  assert_true(closed);
  assert_int_equal(lone_destroyed, 2); /* the last version went with the group of one */
  assert_int_equal(uv_loop_close(&loop), 0);
}

/* ---- the one recipe for the library's hidden models ------------------------------------- */

static int hidden_destroyed;
static void hidden_destroy(void *u) {
  (void)u;
  hidden_destroyed++;
}

/* isv__group_add_hidden: version "1", open I/O, the mode, instances, platform and decoupling
 * asked; no client finds it; a second of the name is ISV_EEXIST (and its destroy is not
 * called: nothing was taken); it is linked to the group's hidden record, so its numbers are
 * summed with its twins'; its destroy runs when the server goes. */
static void hidden_models_have_one_recipe(void **state) {
  (void)state;
  uv_loop_t loop;
  uv_loop_init(&loop);
  isv_server *srv;
  assert_int_equal(isv_server_new(&loop, NULL, &srv), 0);
  isv__core *core = (isv__core *)srv;
  hidden_destroyed = 0;
  isv__hidden_model h = {
      .name = "@thing",
      .platform = "things",
      .mode = ISV_EXEC_ASYNC,
      .instances = 3,
      .decoupled = 1,
      .backend = {.struct_size = sizeof h.backend, .infer = lone_infer, .destroy = hidden_destroy},
  };
  isv_model *m;
  assert_int_equal(isv__group_add_hidden(core, &h, &m), 0);
  assert_non_null(m);
  assert_string_equal(m->version, "1");
  assert_string_equal(m->cfg->name, "@thing");
  assert_string_equal(m->cfg->platform, "things");
  assert_true(m->cfg->open_io);
  assert_true(m->cfg->decoupled);
  assert_int_equal(m->cfg->exec_mode, ISV_EXEC_ASYNC);
  assert_int_equal(m->cfg->instances, 3);
  assert_non_null(m->gcopy); /* counted with the other members' twins */
  isv__stats_snap snap;
  isv__model_stats(m, &snap);
  assert_int_equal(snap.queued, 0);
  isv__model_spec spec = {"@thing", 6, NULL, 0, NULL, 0};
  isv_model *found;
  assert_int_equal(isv__core_resolve(core, &spec, &found), ISV__NO_MODEL);
  isv_model *again;
  assert_int_equal(isv__group_add_hidden(core, &h, &again), ISV_EEXIST);
  assert_int_equal(hidden_destroyed, 0);
  h.name = "@plain"; /* the defaults: one instance, not decoupled */
  h.instances = 0;
  h.decoupled = 0;
  assert_int_equal(isv__group_add_hidden(core, &h, &m), 0);
  assert_int_equal(m->cfg->instances, 1);
  assert_false(m->cfg->decoupled);
  int closed = 0;
  assert_int_equal(isv_server_close(srv, lone_closed, &closed), 0);
  uv_run(&loop, UV_RUN_DEFAULT);
  assert_true(closed);
  assert_int_equal(hidden_destroyed, 2);
  assert_int_equal(uv_loop_close(&loop), 0);
}

/* ---- readiness watches hear the other members' changes (health's Watch) ----------------- */

typedef struct counted_watch {
  isv__core_watch w; /* first */
  atomic_int calls;  /* on b's loop thread; read by the test */
} counted_watch;

static void watch_changed(isv__core_watch *w) { atomic_fetch_add(&((counted_watch *)w)->calls, 1); }
/* The server's core is its first member (server.c): the watch goes on it directly. */
static void watch_add(member *m, void *w) { isv__core_watch_add((isv__core *)m->srv, w); }
static void watch_remove(member *m, void *w) { isv__core_watch_remove((isv__core *)m->srv, w); }

/* calls grows past `from` within about 2 s */
static int heard(counted_watch *w, int from) {
  for (int i = 0; i < 2000 && atomic_load(&w->calls) <= from; i++) uv_sleep(1);
  return atomic_load(&w->calls) > from;
}

static void watches_hear_every_member(void **state) {
  (void)state;
  isv_group *g;
  assert_int_equal(isv_group_new(&g), 0);
  shared s;
  memset(&s, 0, sizeof s);
  member a, b;
  member_start(&a, g, 0);
  member_start(&b, g, a.port);
  isv_group_free(g);
  counted_watch w = {.w = {.changed = watch_changed}};
  on_loop(&b, watch_add, &w);
  int n = atomic_load(&w.calls);
  on_loop(&a, set_online, (void *)0); /* offline on a: b's watch hears it at b's wake */
  assert_true(heard(&w, n));
  n = atomic_load(&w.calls);
  on_loop(&a, set_online, (void *)1);
  assert_true(heard(&w, n));
  n = atomic_load(&w.calls);
  add_args add = {"w", "1", &s, -1}; /* a model added on a */
  on_loop(&a, add_model, &add);
  assert_int_equal(add.rc, 0);
  assert_true(heard(&w, n));
  n = atomic_load(&w.calls);
  add_args rm = {"w", NULL, &s, -1}; /* ... and removed */
  on_loop(&a, remove_model, &rm);
  assert_true(heard(&w, n));
  on_loop(&b, watch_remove, &w);
  member_end(&a);
  member_end(&b);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(registered_once_served_by_every_member),
      cmocka_unit_test(changes_reach_every_member),
      cmocka_unit_test(members_agree_and_options_hold_the_group),
      cmocka_unit_test(stats_while_copies_go),
      cmocka_unit_test(members_listen_at_once),
      cmocka_unit_test(members_close_their_routes_at_once),
      cmocka_unit_test(a_lone_server_is_a_group_of_one),
      cmocka_unit_test(hidden_models_have_one_recipe),
      cmocka_unit_test(watches_hear_every_member),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
