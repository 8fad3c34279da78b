/* A group (isv_group): servers on several loops, one per thread, that serve ONE set of models.
 *
 * The group holds the table of what the host registered — each model version's config,
 * backend, user pointer and state, each model's labels and default version — and every member
 * server keeps a copy of each version in its own registry, with its own scheduling state
 * (queue, instances, batcher, sequences) on its own loop. A change (isv_server_add_model and
 * the others, on any member) is made in the table under the group's mutex and applied to the
 * calling member at once; the others are woken through their core's async handle and apply
 * it on their loop (isv__group_sync): a member reconciles its copies with the table, so a
 * member that joins late, or misses a wake, ends up with the same models.
 *
 * Why copies and not one shared registry: everything that runs per request (lookups, the
 * queue, the refcounts) stays on one thread with no lock, as on a lone server; only the
 * rare registration changes cross threads.
 *
 * A model version's backend is one for the group: its infer may run on every member's loop (or
 * pool) at once — `instances` bounds the executions per member — and its destroy runs once,
 * when the version is out of the table and no member's copy is left (on the thread that let
 * the last one go).
 *
 * Statistics: each copy counts its loop's requests (stats.h); a reader sums the copies
 * (isv__model_stats), so every member answers for the group. It walks a record's copies under
 * the group's mutex, so a copy leaves that list under it before any of its memory goes
 * (registry.c's model_free: isv__group_copy_unlink). Protocol labels are indexed
 * group-wide for that. The library's own models (a custom route's, the repository's: names
 * starting with '@') are each member's, but their numbers are summed the same way: members'
 * models of one name are linked as copies of a record that is in no table
 * (isv__group_link_hidden). Readiness (online / offline) is the group's too. Per member: routes,
 * the authorizer, the repository callbacks, shared memory regions, sequences (a sequence's
 * requests must reach one member: one connection).
 *
 * Lock order: a core's mu, then the group's mu; nothing that can call the host (a destroy, a
 * sequence_end) runs under the group's mu. */
#ifndef ISV_CORE_GROUP_H
#define ISV_CORE_GROUP_H

#include "core/layer.h"

#include <stdatomic.h>
#include <uv.h>

#include "core/core.h"

typedef struct isv__gmodel isv__gmodel;
typedef struct isv__gname isv__gname;

struct isv_group {
  uv_mutex_t mu;
  uv_mutex_t listen_mu; /* one member's listen at a time: isv__group_listen_lock */
  atomic_uint users; /* the host's (isv_group_free), each options object and each server
                      * holding it; at 0 the table is emptied */
  atomic_uint refs;  /* the memory: 1 while there are users, + 1 per table record alive */
  atomic_uint gen;   /* bumped on every change of the table (under mu) */
  atomic_int online;
  isv__gmodel *models; /* the table, in registration order; under mu */
  isv__gmodel *hidden; /* the library's own models (routes', the repository's) that members
                        * registered each for themselves, grouped by name for their numbers */
  isv__gname *names;   /* labels and default version per model name; under mu */
  isv__core *members;  /* servers joined (linked through core->group_next); under mu */
  const char *protocols[ISV__MAX_PROTOCOLS]; /* protocol labels, indexed group-wide; under mu */
  unsigned n_protocols;
  isv__shm_registry shm; /* system shared memory regions: a client may register one on a
                          * connection one member serves and use it on another's */
  int shm_set;           /* the first member's options set shm.enabled and shm.in_place */
  isv__clients clients;  /* requests in flight per client, over every member */
  struct isv__gaddr *addrs; /* addresses members listen on (isv__group_address); under mu */
};

/* A reference for a new user (options, a server). */
void isv__group_use(isv_group *g);
/* Drop a user's reference (the last empties the table: destroy callbacks may run here). */
void isv__group_unuse(isv_group *g);

/* The member's life: join once its server is built (and sync it); leave when it starts
 * closing (no change reaches it after that). Loop thread. */
void isv__group_join(isv__core *c);
void isv__group_leave(isv__core *c);
/* Apply the table's changes to this member's registry (a no-op when nothing changed since
 * the last sync). Loop thread. */
void isv__group_sync(isv__core *c);

/* Listening (server.c): whether a member listens on host:port already — then this member joins
 * it with SO_REUSEPORT; else the address must be free (its first bind is exclusive) — and, with
 * add, record that this member listens there now (port: the bound one). Loop thread. */
int isv__group_address(isv__core *c, const char *host, int port, int add);
/* Around a member's listen — the look-up, the first member's exclusive probe, the bind and the
 * record — so that members listening on one address at the same moment all succeed: the
 * first probes and binds while the others wait, then they find the address recorded and join
 * it. A second process on that port still fails (the first's probe). Any member's thread. */
void isv__group_listen_lock(isv__core *c);
void isv__group_listen_unlock(isv__core *c);

/* The group-wide index of a protocol label (see isv__core_protocol); the member's own table
 * is refreshed with the group's. */
unsigned isv__group_protocol(isv__core *c, const char *label);

/* The public model calls, made on the group: the table first, then this member; the others
 * are woken. Same results and errors as on a lone server; *out is this member's copy. `why`
 * gets a reason for ISV_EINVAL and ISV_ENOTFOUND where there is one. */
int isv__group_add(isv__core *c, const isv_model_config *cfg, const char *version,
                   const isv_backend *be, void *user, isv_model **out);
int isv__group_remove(isv__core *c, const char *name, const char *version);
int isv__group_set_state(isv__core *c, const char *name, const char *version,
                         isv_model_state state);
/* version NULL removes the label (ISV_ENOTFOUND when there is none). */
int isv__group_set_label(isv__core *c, const char *name, const char *label, const char *version);
int isv__group_set_default(isv__core *c, const char *name, const char *version);

/* The member's shared memory registry becomes the group's (c->shm). Every member must agree on
 * isv_options_set_shared_memory and isv_options_set_shared_memory_in_place with the first:
 * ISV_EINVAL otherwise. Before joining. */
int isv__group_shm(isv__core *c, int enabled, int in_place);

/* m, a library model this member registered for itself ('@...'), is counted with the other
 * members' models of its name and version (isv__model_stats sums them). Loop thread. */
void isv__group_link_hidden(isv__core *c, isv_model *m);

/* A copy's last reference is gone (registry.c's model_free, any thread), in two steps around
 * the end of its scheduling state (isv__sched_free). unlink: the copy leaves its record's list
 * (under the group's mutex), so no other member's reader of the numbers reaches it any more;
 * then gone: the record loses the copy's reference, and the host's destroy runs when the
 * record is gone too. */
void isv__group_copy_unlink(isv_model *m);
void isv__group_copy_gone(isv_model *m);

/* A model version's statistics, summed over every member's copy. Any thread that may use m. */
void isv__model_stats(const isv_model *m, isv__stats_snap *out);
/* Executions of batch size k (isv__stats.batch_execs), summed likewise. */
uint64_t isv__model_batch_execs(const isv_model *m, uint32_t k);

#endif
