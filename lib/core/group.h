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
 * (registry.c's model_free, through the copy's gcopy_unlink hook). Protocol labels are indexed
 * group-wide for that. The library's own models (a custom route's, the repository's: names
 * starting with '@') are each member's, but their numbers are summed the same way: members'
 * models of one name are linked as copies of a record that is in no table
 * (isv__group_add_hidden). Readiness (online / offline) is the group's too. Per member: routes,
 * the authorizer, the repository callbacks, shared memory regions, sequences (a sequence's
 * requests must reach one member: one connection).
 *
 * A server made without a group is a group of one (isv__group_enter makes it, with the
 * server's allocator): the same table, the same calls, the same sync, so a lone server and a
 * member run one code path. What differs is said by the group itself, here in group.c: a group
 * of one has nobody to wake, and its listens do not probe (a lone server with SO_REUSEPORT
 * shares its port with whoever the host meant).
 *
 * Everything of the group is private to group.c: the core holds one pointer to its member
 * record (core->member), a model version one pointer to its copy record (m->gcopy).
 *
 * Lock order: a core's mu, then the group's mu; nothing that can call the host (a destroy, a
 * sequence_end) runs under the group's mu. */
#ifndef ISV_CORE_GROUP_H
#define ISV_CORE_GROUP_H

#include "core/layer.h"

#include "core/core.h"

/* A reference for a new user (options, a server). */
void isv__group_use(isv_group *g);
/* Drop a user's reference (the last empties the table: destroy callbacks may run here). */
void isv__group_unuse(isv_group *g);

/* The core's life in its group: enter at init — g, the options' group, or NULL for a group of
 * one made with the core's allocator — which sets c->member, c->shm and c->clients (the
 * group's); ISV_EINVAL when the shared memory options disagree with the first member's
 * (isv__group_shm's rule), ISV_ENOMEM. Then join (its models arrive: a sync); leave when the
 * close starts (no change reaches it after that); exit at the close (leave, and the core's
 * reference goes). Loop thread. */
int isv__group_enter(isv__core *c, isv_group *g, int shm_enabled, int shm_in_place);
void isv__group_join(isv__core *c);
void isv__group_leave(isv__core *c);
void isv__group_exit(isv__core *c);
/* Apply the table's changes to this member's registry (a no-op when nothing changed since
 * the last sync: one atomic load). Called by the core only: its resolve, its submit, its
 * registry reader (isv__core_models) and the wake. Loop thread. */
void isv__group_sync(isv__core *c);

/* Online (isv_server_set_online): the group's, so that one member offline drains them all. */
int isv__group_online(const isv__core *c);
void isv__group_set_online(isv__core *c, int online);

/* Around a member's listen on host:port — the look-up, the first member's exclusive probe,
 * the bind and the record — one member at a time, so that members listening on one address at
 * the same moment all succeed: the first probes and binds while the others wait, then they
 * find the address recorded and join it. begin returns whether the listen must find the
 * address free (the group's first on it; never for a group of one: a lone server with
 * SO_REUSEPORT shares its port with whoever the host meant); end records it when listening
 * (port: the bound one) and lets the next member in. Any member's thread. */
int isv__group_listen_begin(isv__core *c, const char *host, int port);
void isv__group_listen_end(isv__core *c, const char *host, int port, int listening);

/* The group-wide index of a protocol label (see isv__core_protocol); the member's own table
 * is refreshed with the group's. */
unsigned isv__group_protocol(isv__core *c, const char *label);

/* The public model calls, made on the group: the table first, then this member; the others
 * are woken. *out is this member's copy. ISV_EEXIST, ISV_ENOTFOUND (gone meanwhile: removed on
 * another member), ISV_ENOMEM. */
int isv__group_add(isv__core *c, const isv_model_config *cfg, const char *version,
                   const isv_backend *be, void *user, isv_model **out);
int isv__group_remove(isv__core *c, const char *name, const char *version);
int isv__group_set_state(isv__core *c, const char *name, const char *version,
                         isv_model_state state);
/* version NULL removes the label (ISV_ENOTFOUND when there is none). */
int isv__group_set_label(isv__core *c, const char *name, const char *label, const char *version);
int isv__group_set_default(isv__core *c, const char *name, const char *version);

/* A library model (a custom route's, the repository's): the ONE recipe for them — version "1",
 * open I/O (no declared tensors), named '@...' so that clients never see it, each member's own
 * (in no table) but counted with the other members' models of its name (isv__model_stats sums
 * them). ISV_EEXIST when this server has one of that name. Loop thread. */
typedef struct isv__hidden_model {
  const char *name;      /* starts with '@' */
  const char *platform;  /* what /metrics and the model's config say it is */
  isv_exec_mode mode;
  unsigned instances;
  int decoupled;         /* its answers are responses sent before completing */
  isv_backend backend;   /* destroy: at the model's end — not when this fails */
  void *user;
} isv__hidden_model;
int isv__group_add_hidden(isv__core *c, const isv__hidden_model *h, isv_model **out);


/* The response cache (core/rcache.h) is the group's: make it with `bytes` unless a member
 * made it already (bytes 0: nothing). 0, or ISV_ENOMEM. Loop thread. */
int isv__group_rcache_make(isv__core *c, size_t bytes);
/* The group's response cache, or NULL: none. Any member's thread. */
struct isv__rcache *isv__group_rcache(const isv__core *c);
/* The registration m is a copy of: its serial number in the group (0: registered past the
 * group), so that a version registered again never answers from its predecessor's cache. */
uint64_t isv__model_serial(const isv_model *m);
/* Why m's version is not READY, as the library knows it (a failed warmup: core/warmup.h), for
 * every member's repository index: set it (copied), read it into out ("" when none; the
 * length). Loop thread / any thread that may use m. */
void isv__group_set_reason(isv__core *c, const isv_model *m, const char *why);
size_t isv__model_reason(const isv_model *m, char *out, size_t cap);

/* A model version's statistics, summed over every member's copy. Any thread that may use m. */
void isv__model_stats(const isv_model *m, isv__stats_snap *out);
/* Executions of batch size k (isv__stats.batch_execs), summed likewise. */
uint64_t isv__model_batch_execs(const isv_model *m, uint32_t k);
/* Triton's summaries (stats.h): the values of summary `kind` of m's version observed at
 * since_ms or later, every copy's, into out[0..cap); their number (0 without summaries). */
size_t isv__model_summary(const isv_model *m, isv__summary_kind kind, uint64_t since_ms,
                          uint64_t *out, size_t cap);

#endif
