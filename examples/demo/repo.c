/* The demo's model repository (isv_server_set_repository): zoo.c's own models can be unloaded
 * (isv_server_remove_model: requests already running on the model finish) and loaded again by
 * the zoo's own registration code (demo_zoo_register_picked), with a config override.
 *
 *  - index: every registered model, and zoo.c's models that are not (UNAVAILABLE, with the
 *    reason: "unloaded", or why the last load failed).
 *  - load: after --load-delay-ms (default 0: the next loop turn; loading takes time, and the
 *    client waits for it), the model is removed if registered and registered again. A config
 *    override (override.c) may set "max_batch_size" (an integer >= 0, or its digits as a
 *    string, as protobuf's JSON mapping writes int64), "response_cache" ({"enable": bool}) and
 *    "name" (the model's own); any other field is refused naming it. A name zoo.c does not have: Triton's "failed to load
 *    'x', failed to poll from model repository" (404).
 *  - unload: at once. A model zoo.c does not have that is not registered: success, as Triton
 *    (nothing to unload); one that IS registered (the scheduler's, grps's): refused (400), the
 *    demo could not load it again.
 * With --threads every server of the demo (one per loop, one group: their models are shared)
 * has the repository: a load runs on the loop of the server that was asked, and registers the
 * model on the group. The catalogue (names, reasons) is one, behind a mutex; so is the zoo's
 * registration (zoo.c's pick is a global). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "override.h"
#include "zoo.h"

#define MAX_MODELS 128
#define REASON_MAX 256

typedef struct pending pending;

typedef struct demo_repo {
  uv_mutex_t mu; /* the servers' loops load and unload at once: reasons, and zoo.c's pick */
  uint64_t load_delay_ms;
  size_t n;                            /* zoo.c's models (set once, read-only afterwards) */
  char *names[MAX_MODELS];
  char reasons[MAX_MODELS][REASON_MAX]; /* why one is not registered ("": it is, or never was) */
  unsigned n_servers, n_closed;
} demo_repo;

/* One server's side: its loop runs the loads it was asked for. */
typedef struct repo_server {
  demo_repo *r;
  isv_server *srv;
  uv_loop_t *loop;
  int closed;     /* the server is gone: touch it no more */
  pending *loads; /* loads waiting for their timer */
} repo_server;

struct pending {
  uv_timer_t timer;
  isv_repository_op *op;
  repo_server *rs;
  size_t model;      /* index in names */
  int64_t max_batch; /* -1: the zoo's */
  int response_cache; /* -1: the zoo's */
  pending *prev, *next;
};

static demo_repo the_repo;
static repo_server servers[DEMO_MAX_THREADS];

static void seen(void *user, const char *name) {
  demo_repo *r = user;
  for (size_t i = 0; i < r->n; i++)
    if (strcmp(r->names[i], name) == 0)
      return;
  if (r->n < MAX_MODELS && (r->names[r->n] = strdup(name)) != NULL)
    r->n++;
}

/* The model's index in zoo.c's catalogue, or -1. */
static long find(const demo_repo *r, const char *name) {
  for (size_t i = 0; i < r->n; i++)
    if (strcmp(r->names[i], name) == 0)
      return (long)i;
  return -1;
}

static void list(void *user, isv_repository_list *out) {
  demo_repo *r = ((repo_server *)user)->r;
  uv_mutex_lock(&r->mu);
  for (size_t i = 0; i < r->n; i++) /* the registered ones are skipped by the library */
    isv_repository_list_add(out, r->names[i], r->reasons[i][0] ? r->reasons[i] : "unloaded");
  uv_mutex_unlock(&r->mu);
}

/* ---- load ------------------------------------------------------------------------------------ */

static void free_pending(uv_handle_t *h) { free(h->data); }

static void unlink_pending(pending *pl) {
  repo_server *rs = pl->rs;
  if (pl->prev)
    pl->prev->next = pl->next;
  else
    rs->loads = pl->next;
  if (pl->next)
    pl->next->prev = pl->prev;
}

static void finish_load(pending *pl) {
  repo_server *rs = pl->rs;
  demo_repo *r = rs->r;
  const char *name = r->names[pl->model];
  unlink_pending(pl);
  if (rs->closed) {
    isv_repository_op_complete(pl->op, ISV_EUNAVAIL, "the server is shutting down");
  } else {
    char msg[REASON_MAX];
    uv_mutex_lock(&r->mu);
    isv_server_remove_model(rs->srv, name, NULL); /* a reload: running requests finish */
    demo_zoo_pick pick = {name, pl->max_batch, NULL, NULL, pl->response_cache};
    int rc = demo_zoo_register_picked(rs->srv, &pick);
    if (rc < 0) {
      snprintf(msg, sizeof msg, "failed to load '%s': %s", name, isv_server_last_error(rs->srv));
      snprintf(r->reasons[pl->model], REASON_MAX, "%s", msg);
      isv_server_remove_model(rs->srv, name, NULL); /* nothing half registered */
    } else {
      r->reasons[pl->model][0] = '\0';
    }
    uv_mutex_unlock(&r->mu);
    if (rc < 0) /* a config the override made invalid is the client's (400, as Triton's) */
      isv_repository_op_complete(pl->op, rc == ISV_ESTATE  ? ISV_EUNAVAIL
                                         : rc == ISV_EINVAL ? ISV_EBADREQ
                                                            : ISV_EBACKEND, msg);
    else isv_repository_op_complete(pl->op, 0, NULL);
  }
  uv_close((uv_handle_t *)&pl->timer, free_pending);
}

static void on_load_timer(uv_timer_t *t) { finish_load(t->data); }

/* Whether a model of that name is registered (no query for it: a request that is never sent). */
static int registered(isv_server *srv, const char *name) {
  isv_request *req;
  if (isv_request_new(srv, name, NULL, &req) != 0)
    return 0;
  isv_request_free(req);
  return 1;
}

static void load(void *user, isv_repository_op *op, const char *name, const char *config_json) {
  repo_server *rs = user;
  demo_repo *r = rs->r;
  long i = find(r, name);
  char msg[300];
  if (i < 0 && registered(rs->srv, name)) {
    snprintf(msg, sizeof msg, "model '%.200s' is served, but not from the demo's repository: it "
                              "cannot be loaded again", name);
    isv_repository_op_complete(op, ISV_EBADREQ, msg);
    return;
  }
  if (i < 0) { /* Triton's words for a model its repository does not have */
    snprintf(msg, sizeof msg, "failed to load '%.200s', failed to poll from model repository",
             name);
    isv_repository_op_complete(op, ISV_ENOTFOUND, msg);
    return;
  }
  demo_override ov = {-1, -1};
  char err[300];
  if (config_json && demo_parse_override(config_json, name, &ov, err, sizeof err) != 0) {
    snprintf(msg, sizeof msg, "failed to load '%.60s': %.200s", name, err); /* Triton's words */
    isv_repository_op_complete(op, ISV_EBADREQ, msg);
    return;
  }
  pending *pl = calloc(1, sizeof *pl);
  if (pl == NULL) {
    isv_repository_op_complete(op, ISV_ENOMEM, "out of memory");
    return;
  }
  pl->op = op;
  pl->rs = rs;
  pl->model = (size_t)i;
  pl->max_batch = ov.max_batch;
  pl->response_cache = ov.response_cache;
  pl->next = rs->loads;
  if (rs->loads)
    rs->loads->prev = pl;
  rs->loads = pl;
  uv_timer_init(rs->loop, &pl->timer);
  pl->timer.data = pl;
  uv_timer_start(&pl->timer, on_load_timer, r->load_delay_ms, 0);
}

/* ---- unload ---------------------------------------------------------------------------------- */

static void unload(void *user, isv_repository_op *op, const char *name, int unload_dependents) {
  (void)unload_dependents; /* zoo.c's models have no dependents */
  repo_server *rs = user;
  demo_repo *r = rs->r;
  long i = find(r, name);
  if (i < 0 && registered(rs->srv, name)) {
    isv_repository_op_complete(op, ISV_EBADREQ, "the model is not in the demo's repository (the "
                                            "scheduler's and grps's models are not): it could "
                                            "not be loaded again, so it stays");
    return;
  }
  if (i >= 0) {
    uv_mutex_lock(&r->mu);
    isv_server_remove_model(rs->srv, name, NULL); /* requests running on it finish */
    snprintf(r->reasons[i], REASON_MAX, "unloaded");
    uv_mutex_unlock(&r->mu);
  }
  isv_repository_op_complete(op, 0, NULL); /* unloading what is not loaded succeeds, as Triton */
}

int demo_repo_setup(isv_server *srv, uv_loop_t *loop, uint64_t load_delay_ms) {
  demo_repo *r = &the_repo;
  if (r->n_servers == 0) { /* the first server: the catalogue (the others start after it) */
    if (uv_mutex_init(&r->mu) != 0)
      return ISV_ENOMEM;
    r->load_delay_ms = load_delay_ms;
    demo_zoo_pick listing = {NULL, -1, seen, r, -1};
    int rc = demo_zoo_register_picked(srv, &listing);
    if (rc < 0)
      return rc;
  }
  if (r->n_servers == DEMO_MAX_THREADS)
    return ISV_EINVAL;
  repo_server *rs = &servers[r->n_servers++];
  rs->r = r;
  rs->srv = srv;
  rs->loop = loop;
  isv_repository repo;
  memset(&repo, 0, sizeof repo);
  repo.struct_size = sizeof repo;
  repo.user = rs;
  repo.list = list;
  repo.load = load;
  repo.unload = unload;
  return isv_server_set_repository(srv, &repo);
}

void demo_repo_closed(isv_server *srv) {
  demo_repo *r = &the_repo;
  unsigned k = 0;
  while (k < r->n_servers && servers[k].srv != srv)
    k++;
  if (k == r->n_servers)
    return; /* a server without the repository */
  repo_server *rs = &servers[k];
  rs->closed = 1;
  while (rs->loads) { /* abandoned by the close (past its drain deadline): end them now */
    pending *pl = rs->loads;
    uv_timer_stop(&pl->timer);
    finish_load(pl);
  }
  uv_mutex_lock(&r->mu);
  int last = ++r->n_closed == r->n_servers;
  uv_mutex_unlock(&r->mu);
  if (!last)
    return;
  for (size_t i = 0; i < r->n; i++)
    free(r->names[i]);
  r->n = 0;
  uv_mutex_destroy(&r->mu);
}
