/* Servers on several loops serving one set of models: the group's table and how members follow
 * it (core/group.h says why it is built this way). */
#include "core/group.h"

#include "codec/compiler.h"
#include "core/rcache.h"
#include "core/watch.h"

#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

typedef struct isv__gmodel isv__gmodel;
typedef struct isv__gname isv__gname;

struct isv_group {
  const isv_mem *mem; /* the records' allocator: libc's for the host's groups, the server's for
                       * a group of one */
  int one;            /* a lone server's group of one (isv__group_enter made it) */
  uv_mutex_t mu;
  uv_mutex_t listen_mu; /* one member's listen at a time: isv__group_listen_begin */
  atomic_uint users; /* the host's (isv_group_free), each options object and each server
                      * holding it; at 0 the table is emptied */
  atomic_uint refs;  /* the memory: 1 while there are users, + 1 per table record alive */
  atomic_uint gen;   /* bumped on every change of the table (under mu) */
  atomic_int online;
  isv__gmodel *models; /* the table, in registration order; under mu */
  isv__gmodel *hidden; /* the library's own models (routes', the repository's) that members
                        * registered each for themselves, grouped by name for their numbers */
  isv__gname *names;   /* labels and default version per model name; under mu */
  struct isv__member *members; /* servers joined; under mu */
  const char *protocols[ISV__MAX_PROTOCOLS]; /* protocol labels, indexed group-wide; under mu */
  unsigned n_protocols;
  isv__shm_registry shm; /* system shared memory regions: a client may register one on a
                          * connection one member serves and use it on another's */
  int shm_set;           /* the first member's options set shm.enabled and shm.in_place */
  isv__clients clients;  /* requests in flight per client, over every member */
  isv__logset logset;    /* the logging extension's settings, every member's */
  isv__traceset traceset; /* the trace extension's settings, every member's */
  struct isv__gaddr *addrs; /* addresses members listen on (isv__group_listen_end); under mu */
  _Atomic(isv__rcache *) rcache; /* the response cache (core/rcache.h), made once by the first
                                  * member that asks for one (isv__group_rcache_make) */
  uint64_t serials;    /* registrations so far: each record's serial; under mu */
};

/* A server's place in its group (core->member). */
struct isv__member {
  isv_group *g;
  isv__core *core;
  struct isv__member *next; /* the group's members; under the group's mutex */
  int joined;
  unsigned gen; /* the group's table as this member last followed it */
};
typedef struct isv__member isv__member;

/* A member's model version as a copy of a group record (m->gcopy): the record, the other
 * members' copies beside it (under the group's mutex), and a link for isv__group_sync's own
 * use. */
struct isv__gcopy {
  isv__gmodel *gm;
  isv_model *m;
  struct isv__gcopy *next, *prev;
  struct isv__gcopy *sync_next;
};
typedef struct isv__gcopy isv__gcopy;

/* One model version the host registered on the group. */
struct isv__gmodel {
  isv__gmodel *next; /* the table */
  isv_group *g;
  isv_model_config *cfg; /* the group's copy (g->mem) */
  char *version;
  isv_backend backend; /* the host's, destroy included: the copies have none */
  void *user;
  isv_model_state state; /* under mu */
  int removed;           /* out of the table; under mu */
  int hidden;            /* a record of library models (g->hidden): refs change under mu */
  atomic_uint refs;      /* the table's + one per member's copy */
  isv__gcopy *copies;    /* every member's copy; under mu */
  uint64_t serial;       /* its registration's number in the group (the response cache's key) */
  char *reason;          /* why it is not READY, when the library knows (a failed warmup);
                          * under mu */
};

/* An address members listen on: the first bind on it was exclusive, the others join it. */
struct isv__gaddr {
  struct isv__gaddr *next;
  int port;
  char host[64];
};

/* A model name's labels and default version, for every member's registry entry. */
struct isv__gname {
  isv__gname *next;
  char *name;
  isv__label *labels;
  size_t n_labels;
  char *default_version; /* NULL: the rule */
};

static int group_new(const isv_mem *mem, isv_group **out) {
  isv_group *g = isv__calloc(mem, 1, sizeof *g);
  if (g == NULL) return ISV_ENOMEM;
  g->mem = mem;
  /* each part made undoes the ones before it when a later one cannot be made */
  if (uv_mutex_init(&g->mu) != 0) goto no_mu;
  if (uv_mutex_init(&g->listen_mu) != 0) goto no_listen_mu;
  if (isv__shm_init(&g->shm, mem, 0, 0) != 0) goto no_shm;
  if (isv__clients_init(&g->clients, mem) != 0) goto no_clients;
  if (isv__logset_init(&g->logset) != 0) goto no_logset;
  if (isv__traceset_init(&g->traceset, mem) != 0) goto no_traceset;
  atomic_init(&g->users, 1);
  atomic_init(&g->refs, 1);
  atomic_init(&g->gen, 0);
  atomic_init(&g->online, 1);
  g->protocols[0] = "inprocess"; /* as every core's own table starts */
  g->n_protocols = 1;
  *out = g;
  return 0;
no_traceset:
  isv__logset_destroy(&g->logset);
no_logset:
  isv__clients_free(&g->clients);
no_clients:
  isv__shm_destroy(&g->shm);
no_shm:
  uv_mutex_destroy(&g->listen_mu);
no_listen_mu:
  uv_mutex_destroy(&g->mu);
no_mu:
  isv__free(g);
  return ISV_ENOMEM;
}

ISV_EXTERN int isv_group_new(isv_group **out) {
  if (out == NULL) return ISV_EINVAL;
  return group_new(NULL, out); /* libc's: the group outlives any one server's allocator */
}

ISV_EXTERN void isv_group_free(isv_group *g) {
  if (g) isv__group_unuse(g);
}

static void group_unref(isv_group *g) {
  unsigned before = atomic_fetch_sub(&g->refs, 1);
  ISV_ASSERT(before > 0, "a group's memory is let go once per user and per record");
  if (before != 1) return;
  while (g->addrs) {
    struct isv__gaddr *next = g->addrs->next;
    isv__free(g->addrs);
    g->addrs = next;
  }
  isv__rcache_free(atomic_load(&g->rcache));
  isv__shm_destroy(&g->shm); /* regions requests still use stay mapped until they let go */
  isv__clients_free(&g->clients);
  isv__logset_destroy(&g->logset);
  isv__traceset_destroy(&g->traceset);
  uv_mutex_destroy(&g->listen_mu);
  uv_mutex_destroy(&g->mu);
  isv__free(g);
}

static void gname_free(isv__gname *n) {
  isv__labels_free(n->labels, n->n_labels);
  isv__free(n->default_version);
  isv__free(n->name);
  isv__free(n);
}

/* The record's memory, without its backend's destroy (a registration that failed). */
static void gmodel_free(isv__gmodel *gm) {
  isv__free(gm->reason);
  isv_model_config_free(gm->cfg);
  isv__free(gm->version);
  isv__free(gm);
}

static void gmodel_unref(isv__gmodel *gm) {
  unsigned before = atomic_fetch_sub(&gm->refs, 1);
  ISV_ASSERT(before > 0, "a record is let go once by its table and once per member's copy");
  if (before != 1) return;
  isv_group *g = gm->g;
  if (gm->backend.destroy) gm->backend.destroy(gm->user);
  gmodel_free(gm);
  group_unref(g);
}

void isv__group_use(isv_group *g) { atomic_fetch_add(&g->users, 1); }

void isv__group_unuse(isv_group *g) {
  if (atomic_fetch_sub(&g->users, 1) != 1) return;
  /* nobody can register or serve any more: the table lets go of its records */
  uv_mutex_lock(&g->mu);
  isv__gmodel *models = g->models;
  isv__gname *names = g->names;
  g->models = NULL;
  g->names = NULL;
  for (isv__gmodel *gm = models; gm; gm = gm->next) gm->removed = 1;
  uv_mutex_unlock(&g->mu);
  while (names) {
    isv__gname *next = names->next;
    gname_free(names);
    names = next;
  }
  while (models) {
    isv__gmodel *next = models->next;
    gmodel_unref(models); /* the host's destroy, when no copy is left */
    models = next;
  }
  group_unref(g);
}

/* ---- the table (under mu) ------------------------------------------------------------------ */

static isv__gmodel *table_find(const isv_group *g, const char *name, const char *version) {
  for (isv__gmodel *gm = g->models; gm; gm = gm->next)
    if (strcmp(gm->cfg->name, name) == 0 && strcmp(gm->version, version) == 0) return gm;
  return NULL;
}

static int table_has_name(const isv_group *g, const char *name) {
  for (isv__gmodel *gm = g->models; gm; gm = gm->next)
    if (strcmp(gm->cfg->name, name) == 0) return 1;
  return 0;
}

static isv__gname **gname_find(isv_group *g, const char *name) {
  isv__gname **pp = &g->names;
  while (*pp && strcmp((*pp)->name, name) != 0) pp = &(*pp)->next;
  return pp;
}

/* Every member but `self` hears of a change on its loop (its async handle: isv__group_sync). */
static void changed(isv_group *g, const isv__core *self) {
  atomic_fetch_add(&g->gen, 1);
  for (isv__member *o = g->members; o; o = o->next)
    if (o->core != self) uv_async_send(&o->core->async);
}

static void copy_unlink(isv_model *m);
static void copy_gone(isv_model *m);

static void link_copy(isv__gmodel *gm, isv__gcopy *k, isv_model *m) {
  k->gm = gm;
  k->m = m;
  k->next = gm->copies;
  k->prev = NULL;
  k->sync_next = NULL;
  if (gm->copies) gm->copies->prev = k;
  gm->copies = k;
  m->gcopy = k;
  m->gcopy_unlink = copy_unlink; /* the registry's, at the version's end */
  m->gcopy_gone = copy_gone;
}

/* Register this member's copy of gm. Under mu (nothing here calls the host). */
static int copy_into(isv__core *c, isv__gmodel *gm, isv_model **out) {
  isv__gcopy *k = isv__calloc(c->mem, 1, sizeof *k);
  if (k == NULL) return ISV_ENOMEM;
  isv_model *m;
  int rc = isv__registry_add(&c->reg, gm->cfg, gm->version, &gm->backend, gm->user, &m);
  if (rc != 0) {
    isv__free(k);
    return rc;
  }
  m->backend.destroy = NULL; /* the record's, once every copy is gone */
  m->state = gm->state;
  atomic_fetch_add(&gm->refs, 1);
  link_copy(gm, k, m);
  if (out) *out = m;
  return 0;
}

static void copy_unlink(isv_model *m) {
  isv__gcopy *k = m->gcopy;
  if (k == NULL) return; /* registered past the group (a unit test's), or its link failed */
  isv__gmodel *gm = k->gm;
  isv_group *g = gm->g;
  uv_mutex_lock(&g->mu);
  if (k->prev) k->prev->next = k->next;
  else gm->copies = k->next;
  if (k->next) k->next->prev = k->prev;
  k->next = k->prev = NULL;
  uv_mutex_unlock(&g->mu);
}

static void copy_gone(isv_model *m) {
  isv__gcopy *k = m->gcopy;
  if (k == NULL) return;
  isv__gmodel *gm = k->gm;
  isv_group *g = gm->g;
  /* read before letting go: once this copy's reference is dropped, another member may free
   * the record (a library model's, the last copy gone on its thread) */
  const int hidden = gm->hidden;
  int last_hidden = 0;
  if (hidden) {
    uv_mutex_lock(&g->mu);
    unsigned before = atomic_fetch_sub(&gm->refs, 1);
    ISV_ASSERT(before > 0, "a library model's record counts its members' copies");
    last_hidden = before == 1;
    if (last_hidden) { /* out of g->hidden before another member could find it */
      isv__gmodel **pp = &g->hidden;
      while (*pp != gm) pp = &(*pp)->next;
      *pp = gm->next;
    }
    uv_mutex_unlock(&g->mu);
  }
  m->gcopy = NULL;
  isv__free(k);
  if (!hidden) {
    gmodel_unref(gm);
  } else if (last_hidden) {
    gmodel_free(gm);
    group_unref(g);
  }
}

/* m, a library model this member registered for itself, joins the copies of the group's hidden
 * record of its name and version (made on first use). Out of memory: m counts alone. */
static void link_hidden(isv__core *c, isv_model *m) {
  isv_group *g = c->member->g;
  isv__gcopy *k = isv__calloc(c->mem, 1, sizeof *k);
  if (k == NULL) return;
  uv_mutex_lock(&g->mu);
  isv__gmodel *gm = g->hidden;
  while (gm && !(strcmp(gm->cfg->name, m->cfg->name) == 0 && strcmp(gm->version, m->version) == 0))
    gm = gm->next;
  if (gm == NULL && (gm = isv__calloc(g->mem, 1, sizeof *gm)) != NULL) {
    gm->g = g;
    gm->hidden = 1;
    gm->cfg = isv__config_copy(m->cfg, g->mem); /* its name, for the lookup */
    gm->version = isv__strdup(g->mem, m->version);
    if (gm->cfg == NULL || gm->version == NULL) {
      gmodel_free(gm);
      gm = NULL;
    } else {
      atomic_init(&gm->refs, 0);
      gm->next = g->hidden;
      g->hidden = gm;
      atomic_fetch_add(&g->refs, 1); /* the record's */
    }
  }
  if (gm) {
    atomic_fetch_add(&gm->refs, 1);
    link_copy(gm, k, m);
  }
  uv_mutex_unlock(&g->mu);
  if (gm == NULL) isv__free(k);
}

int isv__group_add_hidden(isv__core *c, const isv__hidden_model *h, isv_model **out) {
  isv_model_config *cfg;
  int rc = isv_model_config_new(h->name, &cfg);
  if (rc == 0) rc = isv_model_config_set_open_io(cfg, 1);
  if (rc == 0 && h->decoupled) rc = isv_model_config_set_decoupled(cfg, 1);
  if (rc == 0) rc = isv_model_config_set_exec_mode(cfg, h->mode);
  if (rc == 0) rc = isv_model_config_set_instances(cfg, h->instances ? h->instances : 1);
  if (rc == 0 && h->platform) rc = isv_model_config_set_platform(cfg, h->platform);
  isv_model *m = NULL;
  if (rc == 0) rc = isv__registry_add(&c->reg, cfg, "1", &h->backend, h->user, &m);
  if (rc == 0) link_hidden(c, m); /* counted with the other members' twins */
  isv_model_config_free(cfg);
  if (out) *out = m;
  return rc;
}

/* ---- members ------------------------------------------------------------------------------- */

/* The member's shared memory registry is the group's: every member must agree with the first
 * on whether there is one and whether regions are mapped in place (one registry: a region is
 * mapped, or not, for every member). */
static int agree_shm(isv_group *g, int enabled, int in_place) {
  uv_mutex_lock(&g->mu);
  int rc = 0;
  if (!g->shm_set) {
    g->shm.enabled = enabled != 0;
    g->shm.in_place = in_place != 0;
    g->shm_set = 1;
  } else if (g->shm.enabled != (enabled != 0) || g->shm.in_place != (in_place != 0)) {
    rc = ISV_EINVAL;
  }
  uv_mutex_unlock(&g->mu);
  return rc;
}

int isv__group_enter(isv__core *c, isv_group *g, int shm_enabled, int shm_in_place) {
  isv__member *me = isv__calloc(c->mem, 1, sizeof *me);
  if (me == NULL) return ISV_ENOMEM;
  if (g) {
    isv__group_use(g);
  } else if (group_new(c->mem, &g) == 0) {
    g->one = 1;
  } else {
    isv__free(me);
    return ISV_ENOMEM;
  }
  int rc = agree_shm(g, shm_enabled, shm_in_place);
  if (rc != 0) {
    isv__group_unuse(g);
    isv__free(me);
    return rc;
  }
  me->g = g;
  me->core = c;
  c->member = me;
  c->shm = &g->shm;
  c->clients = &g->clients;
  c->logset = &g->logset;
  c->traceset = &g->traceset;
  isv__traceset_seed(&g->traceset, c->opts.trace_init_set ? &c->opts.trace_init : NULL,
                     c->opts.trace != NULL, c->opts.trace_rate);
  return 0;
}

void isv__group_join(isv__core *c) {
  isv__member *me = c->member;
  isv_group *g = me->g;
  uv_mutex_lock(&g->mu);
  me->next = g->members;
  g->members = me;
  me->joined = 1;
  me->gen = atomic_load(&g->gen) - 1; /* never synced */
  uv_mutex_unlock(&g->mu);
  isv__group_sync(c);
}

void isv__group_leave(isv__core *c) {
  isv__member *me = c->member;
  if (me == NULL || !me->joined) return;
  isv_group *g = me->g;
  uv_mutex_lock(&g->mu);
  isv__member **pp = &g->members;
  while (*pp != me) pp = &(*pp)->next;
  *pp = me->next;
  me->next = NULL;
  me->joined = 0;
  uv_mutex_unlock(&g->mu);
}

void isv__group_exit(isv__core *c) {
  isv__member *me = c->member;
  if (me == NULL) return;
  isv__group_leave(c);
  c->member = NULL;
  isv_group *g = me->g;
  isv__free(me);
  isv__group_unuse(g); /* a group of one: its table goes (the host's destroys may run) */
}

int isv__group_online(const isv__core *c) { return atomic_load(&c->member->g->online); }
void isv__group_set_online(isv__core *c, int online) {
  isv_group *g = c->member->g;
  if (atomic_exchange(&g->online, online != 0) == (online != 0)) return;
  /* the other members' readiness watchers hear it at their wake (a sync that finds the
   * generation moved); the caller tells this member's */
  uv_mutex_lock(&g->mu);
  changed(g, c);
  uv_mutex_unlock(&g->mu);
}

typedef struct stale_walk {
  isv__gcopy *head; /* copies whose record left the table, each model referenced */
} stale_walk;

static void collect_stale(isv__model_entry *e, void *data) {
  stale_walk *w = data;
  for (isv_model *m = e->versions; m; m = m->next)
    if (m->gcopy && m->gcopy->gm->removed) {
      isv__model_ref(m);
      m->gcopy->sync_next = w->head;
      w->head = m->gcopy;
    }
}

/* The entry's labels and default version become the group's for its name. */
static int follow_name(isv__core *c, const isv__gname *n) {
  isv__model_entry *e = isv__registry_entry(&c->reg, n->name, strlen(n->name));
  if (e == NULL) return 0;
  for (size_t i = 0; i < e->n_labels;) {
    size_t k = 0;
    while (k < n->n_labels && strcmp(n->labels[k].label, e->labels[i].label) != 0) k++;
    if (k == n->n_labels) isv__entry_set_label(e, e->labels[i].label, NULL); /* swaps in the last */
    else i++;
  }
  int rc = 0;
  for (size_t k = 0; k < n->n_labels && rc == 0; k++)
    rc = isv__entry_set_label(e, n->labels[k].label, n->labels[k].version);
  const char *d = e->default_version, *want = n->default_version;
  if (rc == 0 && !(d == NULL && want == NULL) && !(d && want && strcmp(d, want) == 0))
    rc = isv__entry_set_default(e, want);
  return rc;
}

void isv__group_sync(isv__core *c) {
  isv__member *me = c->member;
  if (me == NULL || !me->joined) return; /* not yet, or no longer, following the table */
  isv_group *g = me->g;
  unsigned gen = atomic_load(&g->gen);
  if (gen == me->gen) return;
  /* 1. copies of versions that left the table go, outside the lock: the last reference to one
   *    ends its sequences (the host's sequence_end) and may run the host's destroy */
  stale_walk w = {NULL};
  uv_mutex_lock(&g->mu);
  gen = atomic_load(&g->gen);
  isv__registry_foreach(&c->reg, collect_stale, &w);
  uv_mutex_unlock(&g->mu);
  while (w.head) {
    isv_model *m = w.head->m;
    w.head = w.head->sync_next; /* before the model (and its copy record) may go */
    m->gcopy->sync_next = NULL;
    if (m->entry) isv__registry_remove(&c->reg, m->cfg->name, m->version);
    isv__model_unref(m);
  }
  /* 2. versions this member lacks, states, labels, default versions */
  int ok = 1, oom = 0; /* not done yet: tried again at the next sync; out of memory: said */
  uv_mutex_lock(&g->mu);
  for (isv__gmodel *gm = g->models; gm; gm = gm->next) {
    isv__model_entry *e = isv__registry_entry(&c->reg, gm->cfg->name, strlen(gm->cfg->name));
    isv_model *m = e ? isv__entry_version(e, gm->version, strlen(gm->version)) : NULL;
    int rc = 0;
    if (m == NULL) {
      rc = copy_into(c, gm, NULL);
    } else if (m->gcopy && m->gcopy->gm == gm) {
      m->state = gm->state;
    } else {
      ok = 0; /* a copy of an older record, removed in between: the next wake takes it away —
               * ordinary churn, nothing to say */
    }
    if (rc != 0) ok = 0, oom |= rc == ISV_ENOMEM;
  }
  for (const isv__gname *n = g->names; n; n = n->next) {
    int rc = follow_name(c, n);
    if (rc != 0) ok = 0, oom |= rc == ISV_ENOMEM;
  }
  uv_mutex_unlock(&g->mu);
  if (ok) me->gen = gen;
  isv__core_readiness_changed(c); /* models came, went or changed state: watchers compare */
  if (oom)
    isv__core_log(c, ISV_LOG_WARN, "group: out of memory following the group's model changes: "
                                   "this server tries again at the next one");
}

static int address_known(isv_group *g, const char *host, int port, int add) {
  uv_mutex_lock(&g->mu);
  struct isv__gaddr *a = g->addrs;
  while (a && !(a->port == port && strcmp(a->host, host) == 0)) a = a->next;
  int known = a != NULL;
  if (!known && add && strlen(host) < sizeof a->host && (a = isv__calloc(g->mem, 1, sizeof *a))) {
    a->port = port;
    memcpy(a->host, host, strlen(host) + 1);
    a->next = g->addrs;
    g->addrs = a;
  }
  uv_mutex_unlock(&g->mu);
  return known;
}

int isv__group_listen_begin(isv__core *c, const char *host, int port) {
  isv_group *g = c->member->g;
  uv_mutex_lock(&g->listen_mu); /* members listening at once: one by one */
  return !g->one && host != NULL && !address_known(g, host, port, 0);
}

void isv__group_listen_end(isv__core *c, const char *host, int port, int listening) {
  isv_group *g = c->member->g;
  if (listening && host != NULL) address_known(g, host, port, 1);
  uv_mutex_unlock(&g->listen_mu);
}

unsigned isv__group_protocol(isv__core *c, const char *label) {
  isv_group *g = c->member->g;
  uv_mutex_lock(&g->mu);
  unsigned i = 0;
  while (i < g->n_protocols && strcmp(g->protocols[i], label) != 0) i++;
  if (i == g->n_protocols) {
    if (i == ISV__MAX_PROTOCOLS) i = 0;
    else g->protocols[g->n_protocols++] = label;
  }
  memcpy(c->protocols, g->protocols, sizeof c->protocols);
  c->n_protocols = g->n_protocols;
  uv_mutex_unlock(&g->mu);
  return i;
}

/* ---- the public model calls ----------------------------------------------------------------- */

int isv__group_add(isv__core *c, const isv_model_config *cfg, const char *version,
                   const isv_backend *be, void *user, isv_model **out) {
  isv_group *g = c->member->g;
  isv__group_sync(c); /* a copy of a version removed elsewhere would make this one EEXIST */
  isv__gmodel *gm = isv__calloc(g->mem, 1, sizeof *gm);
  if (gm == NULL) return ISV_ENOMEM;
  gm->g = g;
  gm->cfg = isv__config_copy(cfg, g->mem);
  gm->version = isv__strdup(g->mem, version);
  if (gm->cfg == NULL || gm->version == NULL) {
    gmodel_free(gm);
    return ISV_ENOMEM;
  }
  memcpy(&gm->backend, be,
         sizeof gm->backend < be->struct_size ? sizeof gm->backend : be->struct_size);
  gm->backend.struct_size = sizeof gm->backend;
  gm->user = user;
  gm->state = cfg->n_warmups ? ISV_MODEL_LOADING : ISV_MODEL_READY; /* warmup.h: READY after */
  atomic_init(&gm->refs, 1);
  uv_mutex_lock(&g->mu);
  gm->serial = ++g->serials;
  isv__gname **np = gname_find(g, cfg->name);
  int rc = table_find(g, cfg->name, version) ? ISV_EEXIST : 0;
  if (rc == 0 && *np == NULL) {
    if ((*np = isv__calloc(g->mem, 1, sizeof **np)) == NULL ||
        ((*np)->name = isv__strdup(g->mem, cfg->name)) == NULL) {
      isv__free(*np);
      *np = NULL;
      rc = ISV_ENOMEM;
    }
  }
  if (rc == 0 && (rc = copy_into(c, gm, out)) != 0 && !table_has_name(g, cfg->name)) {
    isv__gname *n = *np;
    *np = n->next;
    gname_free(n);
  }
  if (rc == 0) {
    isv__gmodel **pp = &g->models;
    while (*pp) pp = &(*pp)->next;
    *pp = gm;
    atomic_fetch_add(&g->refs, 1); /* the record's */
    changed(g, c);
  }
  uv_mutex_unlock(&g->mu);
  if (rc != 0) gmodel_free(gm); /* nothing was taken: no destroy */
  else isv__core_readiness_changed(c); /* this member has it now: its watchers hear it */
  return rc;
}

int isv__group_remove(isv__core *c, const char *name, const char *version) {
  isv_group *g = c->member->g;
  isv__gmodel *gone = NULL;
  uv_mutex_lock(&g->mu);
  for (isv__gmodel **pp = &g->models; *pp;) {
    isv__gmodel *gm = *pp;
    if (strcmp(gm->cfg->name, name) == 0 && (version == NULL || strcmp(gm->version, version) == 0)) {
      *pp = gm->next;
      gm->removed = 1;
      gm->next = gone;
      gone = gm;
    } else {
      pp = &gm->next;
    }
  }
  if (gone) {
    isv__gname **np = gname_find(g, name);
    if (*np && !table_has_name(g, name)) { /* its labels go with its last version */
      isv__gname *n = *np;
      *np = n->next;
      gname_free(n);
    }
    changed(g, NULL); /* this member too: isv__group_sync below */
  }
  uv_mutex_unlock(&g->mu);
  if (gone == NULL) return ISV_ENOTFOUND;
  isv__group_sync(c); /* this member's copies go now (requests in flight keep theirs) */
  while (gone) {
    isv__gmodel *next = gone->next;
    gmodel_unref(gone); /* the table's: destroy once no member holds a copy */
    gone = next;
  }
  return 0;
}

int isv__group_set_state(isv__core *c, const char *name, const char *version,
                         isv_model_state state) {
  isv_group *g = c->member->g;
  uv_mutex_lock(&g->mu);
  isv__gmodel *gm = table_find(g, name, version);
  if (gm) {
    gm->state = state;
    changed(g, NULL);
  }
  uv_mutex_unlock(&g->mu);
  if (gm == NULL) return ISV_ENOTFOUND;
  isv__group_sync(c);
  return 0;
}

int isv__group_rcache_make(isv__core *c, size_t bytes) {
  isv_group *g = c->member->g;
  if (bytes == 0) return 0;
  int rc = 0;
  uv_mutex_lock(&g->mu);
  if (atomic_load(&g->rcache) == NULL) {
    isv__rcache *rc_new;
    rc = isv__rcache_new(g->mem, bytes, &rc_new);
    if (rc == 0) atomic_store(&g->rcache, rc_new);
  }
  uv_mutex_unlock(&g->mu);
  return rc;
}

isv__rcache *isv__group_rcache(const isv__core *c) {
  return atomic_load_explicit(&c->member->g->rcache, memory_order_acquire);
}

uint64_t isv__model_serial(const isv_model *m) { return m->gcopy ? m->gcopy->gm->serial : 0; }

void isv__group_set_reason(isv__core *c, const isv_model *m, const char *why) {
  if (m->gcopy == NULL) return;
  isv_group *g = c->member->g;
  char *d = isv__strdup(g->mem, why); /* NULL when out of memory: no reason, the log has it */
  uv_mutex_lock(&g->mu);
  isv__free(m->gcopy->gm->reason);
  m->gcopy->gm->reason = d;
  uv_mutex_unlock(&g->mu);
}

size_t isv__model_reason(const isv_model *m, char *out, size_t cap) {
  if (cap) out[0] = '\0';
  if (m->gcopy == NULL || cap == 0) return 0;
  isv_group *g = m->gcopy->gm->g;
  uv_mutex_lock(&g->mu);
  const char *r = m->gcopy->gm->reason;
  if (r) snprintf(out, cap, "%s", r);
  uv_mutex_unlock(&g->mu);
  return strlen(out);
}

/* A label (what = 0) or the default version (what = 1) of a model name. */
static int name_set(isv__core *c, int what, const char *name, const char *label,
                    const char *version) {
  isv_group *g = c->member->g;
  uv_mutex_lock(&g->mu);
  isv__gname *n = *gname_find(g, name);
  int rc = n == NULL || (version && table_find(g, name, version) == NULL) ? ISV_ENOTFOUND : 0;
  if (rc == 0 && what == 0) {
    rc = isv__labels_set(g->mem, &n->labels, &n->n_labels, label, version);
  } else if (rc == 0) {
    char *v = version ? isv__strdup(g->mem, version) : NULL;
    if (version && v == NULL) rc = ISV_ENOMEM;
    else {
      isv__free(n->default_version);
      n->default_version = v;
    }
  }
  if (rc == 0) changed(g, NULL);
  uv_mutex_unlock(&g->mu);
  if (rc == 0) isv__group_sync(c);
  return rc;
}

int isv__group_set_label(isv__core *c, const char *name, const char *label, const char *version) {
  return name_set(c, 0, name, label, version);
}

int isv__group_set_default(isv__core *c, const char *name, const char *version) {
  return name_set(c, 1, name, NULL, version);
}

/* ---- statistics ------------------------------------------------------------------------------ */

static void add_copy(isv__stats_snap *out, const isv_model *m) {
  isv__stats_add_to(out, &m->stats);
  out->queued += atomic_load_explicit((_Atomic size_t *)&m->stats.queued, memory_order_relaxed);
}

void isv__model_stats(const isv_model *m, isv__stats_snap *out) {
  memset(out, 0, sizeof *out);
  if (m->gcopy == NULL) { /* registered past the group (a unit test's), or its link failed */
    const isv__core *c = m->core;
    if (c) {
      memcpy(out->protocols, c->protocols, sizeof out->protocols);
      out->n_protocols = c->n_protocols;
    }
    add_copy(out, m);
    return;
  }
  isv_group *g = m->gcopy->gm->g;
  uv_mutex_lock(&g->mu);
  memcpy(out->protocols, g->protocols, sizeof out->protocols);
  out->n_protocols = g->n_protocols;
  for (const isv__gcopy *k = m->gcopy->gm->copies; k; k = k->next) add_copy(out, k->m);
  uv_mutex_unlock(&g->mu);
}

size_t isv__model_summary(const isv_model *m, isv__summary_kind kind, uint64_t since_ms,
                          uint64_t *out, size_t cap) {
  size_t n = 0;
  if (m->gcopy == NULL) {
    if (m->stats.windows) isv__window_recent(&m->stats.windows[kind], since_ms, out, &n, cap);
    return n;
  }
  isv_group *g = m->gcopy->gm->g;
  uv_mutex_lock(&g->mu); /* the copies stay while it is held (model_free unlinks under it) */
  for (const isv__gcopy *k = m->gcopy->gm->copies; k; k = k->next)
    if (k->m->stats.windows) isv__window_recent(&k->m->stats.windows[kind], since_ms, out, &n, cap);
  uv_mutex_unlock(&g->mu);
  return n;
}

uint64_t isv__model_batch_execs(const isv_model *m, uint32_t k) {
  uint32_t max = m->cfg->max_batch ? m->cfg->max_batch : 1;
  if (k > max) return 0;
  if (m->gcopy == NULL)
    return m->stats.batch_execs ? isv__counter_get(&m->stats.batch_execs[k]) : 0;
  uint64_t n = 0;
  isv_group *g = m->gcopy->gm->g;
  uv_mutex_lock(&g->mu);
  for (const isv__gcopy *kc = m->gcopy->gm->copies; kc; kc = kc->next) {
    const isv_model *c = kc->m;
    if (c->stats.batch_execs && k <= (c->cfg->max_batch ? c->cfg->max_batch : 1))
      n += isv__counter_get(&c->stats.batch_execs[k]); /* the library's models ('@', linked
                                                          * by name) share no config */
  }
  uv_mutex_unlock(&g->mu);
  return n;
}

/* ---- the options' reference ------------------------------------------------------------------ */

ISV_EXTERN int isv_options_set_group(isv_options *o, isv_group *g) {
  if (o == NULL) return ISV_EINVAL;
  if (g) isv__group_use(g);
  if (o->group) isv__group_unuse(o->group);
  o->group = g;
  o->group_unuse = isv__group_unuse; /* isv_options_free's (options.c sits below the group) */
  return 0;
}
