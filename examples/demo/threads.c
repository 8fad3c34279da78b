/* --threads N: the demo on N loops in N threads, one server each, all listening on the same
 * ports with SO_REUSEPORT (isv_options_set_reuse_port) — the kernel spreads the connections.
 * The servers are one group (isv_options_set_group, made by main.c): the first server (the
 * main thread's) registered the zoo's models, and every member serves them, counts them in the
 * same statistics and follows their loads and unloads. What is a server's own is set up here on
 * each: the custom routes, grps's default model, the authorizer, the model repository, the
 * Vertex routes. SIGINT/SIGTERM on the main thread close every server:
 * each member hears it through its own uv_async_t. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "zoo.h"

typedef struct member {
  uv_thread_t thread;
  uv_loop_t loop;
  isv_server *srv;
  uv_async_t stop;
  uv_async_t tls_reload; /* a new TLS configuration for the listener (demo_threads_set_tls) */
  uv_mutex_t mu;         /* tls_pending: uv_async_send orders nothing between threads */
  isv_tls *tls_pending;
  unsigned tls_index;
  uv_sem_t ready;
  int rc;
  const demo_threads_cfg *cfg;
} member;

static member *members;
static size_t n_members;

static void member_closed(isv_server *srv, void *data) {
  demo_repo_closed(srv);
  uv_close((uv_handle_t *)&((member *)data)->stop, NULL);
  uv_close((uv_handle_t *)&((member *)data)->tls_reload, NULL);
}

static void member_tls_reload(uv_async_t *a) {
  member *m = a->data;
  uv_mutex_lock(&m->mu);
  isv_tls *t = m->tls_pending;
  m->tls_pending = NULL;
  unsigned index = m->tls_index;
  uv_mutex_unlock(&m->mu);
  if (t == NULL) return; /* sends coalesce: this one's was taken already */
  if (isv_server_set_listener_tls(m->srv, index, t) != 0)
    fprintf(stderr, "inferserve-demo: thread: TLS reload: %s\n", isv_server_last_error(m->srv));
  isv_tls_free(t); /* the listener holds its own reference */
}

static int stopping; /* demo_threads_stop ran: members may have closed their handles */

void demo_threads_set_tls(isv_tls *(*make)(void), unsigned index) {
  for (size_t i = 0; !stopping && i < n_members; i++) {
    member *m = &members[i];
    isv_tls *t;
    if (m->rc != 0 || (t = make()) == NULL) continue;
    uv_mutex_lock(&m->mu);
    isv_tls *old = m->tls_pending; /* a reload this loop had not applied yet: the newer wins */
    m->tls_pending = t;
    m->tls_index = index;
    uv_mutex_unlock(&m->mu);
    isv_tls_free(old);
    uv_async_send(&m->tls_reload);
  }
}

static void member_stop(uv_async_t *a) {
  member *m = a->data;
  if (isv_server_close(m->srv, member_closed, m) != 0) uv_close((uv_handle_t *)a, NULL);
}

static void member_main(void *arg) {
  member *m = arg;
  uv_loop_init(&m->loop);
  const demo_threads_cfg *cfg = m->cfg;
  int rc = isv_server_new(&m->loop, cfg->opts, &m->srv); /* joins the group: has the models */
  if (rc == 0) rc = demo_zoo_attach(m->srv, (unsigned)(m - members) + 1);
  if (rc == 0 && cfg->with_auth) rc = demo_auth_attach(m->srv);
  if (rc == 0 && cfg->repo_delay_ms >= 0)
    rc = demo_repo_setup(m->srv, &m->loop, (uint64_t)cfg->repo_delay_ms);
  if (rc == 0 && cfg->vertex_model)
    rc = isv_server_set_vertex_routes(m->srv, cfg->vertex_model, cfg->predict_route,
                                      cfg->health_route);
  if (rc == 0 && cfg->openai_prefix)
    rc = isv_server_set_openai_prefix(m->srv, cfg->openai_prefix);
  if (rc == 0) rc = demo_vertex_endpoints(m->srv, cfg->vertex_endpoints, cfg->n_vertex_endpoints);
  for (size_t i = 0; rc == 0 && i < cfg->n_listen; i++)
    if ((rc = isv_server_listen(m->srv, cfg->hosts[i], cfg->ports[i])) != 0)
      fprintf(stderr, "inferserve-demo: thread: %s\n", isv_server_last_error(m->srv));
  if (rc == 0 && cfg->tls && /* the TLS listener last: the same index as the first server's */
      (rc = isv_server_listen_tls(m->srv, cfg->tls_host, cfg->tls_port, cfg->tls)) != 0)
    fprintf(stderr, "inferserve-demo: thread: %s\n", isv_server_last_error(m->srv));
  if (rc == 0) rc = uv_async_init(&m->loop, &m->stop, member_stop);
  if (rc == 0) rc = uv_async_init(&m->loop, &m->tls_reload, member_tls_reload);
  m->stop.data = m->tls_reload.data = m;
  m->rc = rc;
  if (rc != 0 && m->srv) isv_server_close(m->srv, NULL, NULL);
  uv_sem_post(&m->ready);
  uv_run(&m->loop, UV_RUN_DEFAULT);
  uv_loop_close(&m->loop);
}

int demo_threads_start(unsigned n, const demo_threads_cfg *cfg) {
  if (n == 0) return 0;
  members = calloc(n, sizeof *members);
  if (members == NULL) return -1;
  for (unsigned i = 0; i < n; i++) {
    member *m = &members[i];
    m->cfg = cfg;
    uv_mutex_init(&m->mu);
    uv_sem_init(&m->ready, 0);
    if (uv_thread_create(&m->thread, member_main, m) != 0) return -1;
    n_members++;
    uv_sem_wait(&m->ready); /* cfg is read before this */
    if (m->rc != 0) {
      fprintf(stderr, "inferserve-demo: thread %u: %s\n", i + 1, isv_strerror(m->rc));
      return -1;
    }
  }
  return 0;
}

void demo_threads_stop(void) {
  stopping = 1;
  for (size_t i = 0; i < n_members; i++)
    if (members[i].rc == 0) uv_async_send(&members[i].stop);
}

void demo_threads_join(void) {
  for (size_t i = 0; i < n_members; i++) {
    uv_thread_join(&members[i].thread);
    uv_sem_destroy(&members[i].ready);
    uv_mutex_destroy(&members[i].mu);
    isv_tls_free(members[i].tls_pending); /* a reload that came as it closed */
  }
  free(members);
  members = NULL;
  n_members = 0;
}
