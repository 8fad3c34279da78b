/* Servers on several loops serving one set of models: the group's table and how members follow
 * it (core/group.h says why it is built this way). */
#include "core/group.h"

#include <string.h>

/* One model version the host registered on the group. */
struct isv__gmodel {
  isv__gmodel *next; /* the table */
  isv_group *g;
  isv_model_config *cfg; /* libc's copy: the group has no allocator of its own */
  char *version;
  isv_backend backend; /* the host's, destroy included: the copies have none */
  void *user;
  isv_model_state state; /* under mu */
  int removed;           /* out of the table; under mu */
  int hidden;            /* a record of library models (g->hidden): refs change under mu */
  atomic_uint refs;      /* the table's + one per member's copy */
  isv_model *copies;     /* every member's copy (m->gcopy_next); under mu */
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

ISV_EXTERN int isv_group_new(isv_group **out) {
  if (out == NULL) return ISV_EINVAL;
  isv_group *g = isv__calloc(NULL, 1, sizeof *g);
  if (g == NULL) return ISV_ENOMEM;
  if (uv_mutex_init(&g->mu) != 0) {
    isv__free(g);
    return ISV_ENOMEM;
  }
  if (uv_mutex_init(&g->listen_mu) != 0) {
    uv_mutex_destroy(&g->mu);
    isv__free(g);
    return ISV_ENOMEM;
  }
  if (isv__shm_init(&g->shm, NULL, 0, 0) != 0) {
    uv_mutex_destroy(&g->listen_mu);
    uv_mutex_destroy(&g->mu);
    isv__free(g);
    return ISV_ENOMEM;
  }
  if (isv__clients_init(&g->clients, NULL) != 0) {
    isv__shm_destroy(&g->shm);
    uv_mutex_destroy(&g->listen_mu);
    uv_mutex_destroy(&g->mu);
    isv__free(g);
    return ISV_ENOMEM;
  }
  atomic_init(&g->users, 1);
  atomic_init(&g->refs, 1);
  atomic_init(&g->gen, 0);
  atomic_init(&g->online, 1);
  g->protocols[0] = "inprocess"; /* as every core's own table starts */
  g->n_protocols = 1;
  *out = g;
  return 0;
}

ISV_EXTERN void isv_group_free(isv_group *g) {
  if (g) isv__group_unuse(g);
}

static void group_unref(isv_group *g) {
  if (atomic_fetch_sub(&g->refs, 1) != 1) return;
  while (g->addrs) {
    struct isv__gaddr *next = g->addrs->next;
    isv__free(g->addrs);
    g->addrs = next;
  }
  isv__shm_destroy(&g->shm); /* regions requests still use stay mapped until they let go */
  isv__clients_free(&g->clients);
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
  isv_model_config_free(gm->cfg);
  isv__free(gm->version);
  isv__free(gm);
}

static void gmodel_unref(isv__gmodel *gm) {
  if (atomic_fetch_sub(&gm->refs, 1) != 1) return;
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
  for (isv__core *o = g->members; o; o = o->group_next)
    if (o != self) uv_async_send(&o->async);
}

static void link_copy(isv__gmodel *gm, isv_model *m) {
  m->gm = gm;
  m->gcopy_next = gm->copies;
  m->gcopy_prev = NULL;
  if (gm->copies) gm->copies->gcopy_prev = m;
  gm->copies = m;
}

/* Register this member's copy of gm. Under mu (nothing here calls the host). */
static int copy_into(isv__core *c, isv__gmodel *gm, isv_model **out) {
  isv_model *m;
  int rc = isv__registry_add(&c->reg, gm->cfg, gm->version, &gm->backend, gm->user, &m);
  if (rc != 0) return rc;
  m->backend.destroy = NULL; /* the record's, once every copy is gone */
  m->state = gm->state;
  atomic_fetch_add(&gm->refs, 1);
  link_copy(gm, m);
  if (out) *out = m;
  return 0;
}

void isv__group_copy_unlink(isv_model *m) {
  isv__gmodel *gm = m->gm;
  isv_group *g = gm->g;
  uv_mutex_lock(&g->mu);
  if (m->gcopy_prev) m->gcopy_prev->gcopy_next = m->gcopy_next;
  else gm->copies = m->gcopy_next;
  if (m->gcopy_next) m->gcopy_next->gcopy_prev = m->gcopy_prev;
  m->gcopy_next = m->gcopy_prev = NULL;
  uv_mutex_unlock(&g->mu);
}

void isv__group_copy_gone(isv_model *m) {
  isv__gmodel *gm = m->gm;
  isv_group *g = gm->g;
  int last_hidden = 0;
  if (gm->hidden) {
    uv_mutex_lock(&g->mu);
    last_hidden = atomic_fetch_sub(&gm->refs, 1) == 1;
    if (last_hidden) { /* out of g->hidden before another member could find it */
      isv__gmodel **pp = &g->hidden;
      while (*pp != gm) pp = &(*pp)->next;
      *pp = gm->next;
    }
    uv_mutex_unlock(&g->mu);
  }
  m->gm = NULL;
  if (!gm->hidden) {
    gmodel_unref(gm);
  } else if (last_hidden) {
    gmodel_free(gm);
    group_unref(g);
  }
}

void isv__group_link_hidden(isv__core *c, isv_model *m) {
  isv_group *g = c->group;
  if (g == NULL) return;
  uv_mutex_lock(&g->mu);
  isv__gmodel *gm = g->hidden;
  while (gm && !(strcmp(gm->cfg->name, m->cfg->name) == 0 && strcmp(gm->version, m->version) == 0))
    gm = gm->next;
  if (gm == NULL && (gm = isv__calloc(NULL, 1, sizeof *gm)) != NULL) {
    gm->g = g;
    gm->hidden = 1;
    gm->cfg = isv__config_copy(m->cfg, NULL); /* its name, for the lookup */
    gm->version = isv__strdup(NULL, m->version);
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
  if (gm) { /* out of memory: the model counts alone */
    atomic_fetch_add(&gm->refs, 1);
    link_copy(gm, m);
  }
  uv_mutex_unlock(&g->mu);
}

/* ---- members ------------------------------------------------------------------------------- */

int isv__group_shm(isv__core *c, int enabled, int in_place) {
  isv_group *g = c->group;
  uv_mutex_lock(&g->mu);
  int rc = 0;
  if (!g->shm_set) {
    g->shm.enabled = enabled != 0;
    g->shm.in_place = in_place != 0;
    g->shm_set = 1;
  } else if (g->shm.enabled != (enabled != 0) || g->shm.in_place != (in_place != 0)) {
    rc = ISV_EINVAL; /* one registry: a region is mapped, or not, for every member */
  }
  uv_mutex_unlock(&g->mu);
  if (rc == 0) c->shm = &g->shm;
  return rc;
}

void isv__group_join(isv__core *c) {
  isv_group *g = c->group;
  if (g == NULL) return;
  uv_mutex_lock(&g->mu);
  c->group_next = g->members;
  g->members = c;
  c->group_joined = 1;
  c->group_gen = atomic_load(&g->gen) - 1; /* never synced */
  uv_mutex_unlock(&g->mu);
  isv__group_sync(c);
}

void isv__group_leave(isv__core *c) {
  isv_group *g = c->group;
  if (g == NULL || !c->group_joined) return;
  uv_mutex_lock(&g->mu);
  isv__core **pp = &g->members;
  while (*pp != c) pp = &(*pp)->group_next;
  *pp = c->group_next;
  c->group_next = NULL;
  c->group_joined = 0;
  uv_mutex_unlock(&g->mu);
}

typedef struct stale_walk {
  isv_model *head; /* copies whose record left the table, each referenced */
} stale_walk;

static void collect_stale(isv__model_entry *e, void *data) {
  stale_walk *w = data;
  for (isv_model *m = e->versions; m; m = m->next)
    if (m->gm && m->gm->removed) {
      isv__model_ref(m);
      m->gsync_next = w->head;
      w->head = m;
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
  isv_group *g = c->group;
  if (g == NULL || !c->group_joined) return;
  unsigned gen = atomic_load(&g->gen);
  if (gen == c->group_gen) return;
  /* 1. copies of versions that left the table go, outside the lock: the last reference to one
   *    ends its sequences (the host's sequence_end) and may run the host's destroy */
  stale_walk w = {NULL};
  uv_mutex_lock(&g->mu);
  gen = atomic_load(&g->gen);
  isv__registry_foreach(&c->reg, collect_stale, &w);
  uv_mutex_unlock(&g->mu);
  while (w.head) {
    isv_model *m = w.head;
    w.head = m->gsync_next;
    m->gsync_next = NULL;
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
    } else if (m->gm == gm) {
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
  if (ok) c->group_gen = gen;
  if (oom)
    isv__core_log(c, ISV_LOG_WARN, "group: out of memory following the group's model changes: "
                                   "this server tries again at the next one");
}

int isv__group_address(isv__core *c, const char *host, int port, int add) {
  isv_group *g = c->group;
  uv_mutex_lock(&g->mu);
  struct isv__gaddr *a = g->addrs;
  while (a && !(a->port == port && strcmp(a->host, host) == 0)) a = a->next;
  int known = a != NULL;
  if (!known && add && strlen(host) < sizeof a->host && (a = isv__calloc(NULL, 1, sizeof *a))) {
    a->port = port;
    memcpy(a->host, host, strlen(host) + 1);
    a->next = g->addrs;
    g->addrs = a;
  }
  uv_mutex_unlock(&g->mu);
  return known;
}

void isv__group_listen_lock(isv__core *c) { uv_mutex_lock(&c->group->listen_mu); }
void isv__group_listen_unlock(isv__core *c) { uv_mutex_unlock(&c->group->listen_mu); }

unsigned isv__group_protocol(isv__core *c, const char *label) {
  isv_group *g = c->group;
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
  isv_group *g = c->group;
  isv__group_sync(c); /* a copy of a version removed elsewhere would make this one EEXIST */
  isv__gmodel *gm = isv__calloc(NULL, 1, sizeof *gm);
  if (gm == NULL) return ISV_ENOMEM;
  gm->g = g;
  gm->cfg = isv__config_copy(cfg, NULL);
  gm->version = isv__strdup(NULL, version);
  if (gm->cfg == NULL || gm->version == NULL) {
    gmodel_free(gm);
    return ISV_ENOMEM;
  }
  memcpy(&gm->backend, be,
         sizeof gm->backend < be->struct_size ? sizeof gm->backend : be->struct_size);
  gm->backend.struct_size = sizeof gm->backend;
  gm->user = user;
  gm->state = ISV_MODEL_READY;
  atomic_init(&gm->refs, 1);
  uv_mutex_lock(&g->mu);
  isv__gname **np = gname_find(g, cfg->name);
  int rc = table_find(g, cfg->name, version) ? ISV_EEXIST : 0;
  if (rc == 0 && *np == NULL) {
    if ((*np = isv__calloc(NULL, 1, sizeof **np)) == NULL ||
        ((*np)->name = isv__strdup(NULL, cfg->name)) == NULL) {
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
  return rc;
}

int isv__group_remove(isv__core *c, const char *name, const char *version) {
  isv_group *g = c->group;
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
  isv_group *g = c->group;
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

/* A label (what = 0) or the default version (what = 1) of a model name. */
static int name_set(isv__core *c, int what, const char *name, const char *label,
                    const char *version) {
  isv_group *g = c->group;
  uv_mutex_lock(&g->mu);
  isv__gname *n = *gname_find(g, name);
  int rc = n == NULL || (version && table_find(g, name, version) == NULL) ? ISV_ENOTFOUND : 0;
  if (rc == 0 && what == 0) {
    rc = isv__labels_set(NULL, &n->labels, &n->n_labels, label, version);
  } else if (rc == 0) {
    char *v = version ? isv__strdup(NULL, version) : NULL;
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
  if (m->gm == NULL) {
    const isv__core *c = m->core;
    if (c) {
      memcpy(out->protocols, c->protocols, sizeof out->protocols);
      out->n_protocols = c->n_protocols;
    }
    add_copy(out, m);
    return;
  }
  isv_group *g = m->gm->g;
  uv_mutex_lock(&g->mu);
  memcpy(out->protocols, g->protocols, sizeof out->protocols);
  out->n_protocols = g->n_protocols;
  for (const isv_model *k = m->gm->copies; k; k = k->gcopy_next) add_copy(out, k);
  uv_mutex_unlock(&g->mu);
}

uint64_t isv__model_batch_execs(const isv_model *m, uint32_t k) {
  uint32_t max = m->cfg->max_batch ? m->cfg->max_batch : 1;
  if (k > max) return 0;
  if (m->gm == NULL) return m->stats.batch_execs ? isv__counter_get(&m->stats.batch_execs[k]) : 0;
  uint64_t n = 0;
  isv_group *g = m->gm->g;
  uv_mutex_lock(&g->mu);
  for (const isv_model *c = m->gm->copies; c; c = c->gcopy_next)
    if (c->stats.batch_execs && k <= (c->cfg->max_batch ? c->cfg->max_batch : 1))
      n += isv__counter_get(&c->stats.batch_execs[k]); /* the library's models ('@', linked
                                                          * by name) share no config */
  uv_mutex_unlock(&g->mu);
  return n;
}
