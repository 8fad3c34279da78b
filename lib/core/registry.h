/* The model registry: names → versions (each with its config, backend, state, refcount),
 * labels → versions, and the default-version rule. Loop thread only. */
#ifndef ISV_CORE_REGISTRY_H
#define ISV_CORE_REGISTRY_H

#include "core/layer.h"

#include "codec/mem.h"

#include <stddef.h>
#include <stdint.h>

#include "core/stats.h"
#include "core/timeheap.h"
#include "inferserve.h"

typedef struct isv__io {
  char *name;
  size_t name_len; /* strlen(name): the lookups by name compare it first */
  isv_datatype dt;
  int64_t *shape; /* without the batch dimension when max_batch > 0 */
  size_t ndim;
  int any_rank; /* ISV_ANY_RANK: shape is {-1} (what metadata shows), and any rank fits */
} isv__io;

/* A named signature (isv_model_config_add_signature): tensor names and the aliases they go by. */
typedef struct isv__signature {
  char *name;
  isv_signature_method method;
  char **in_names, **in_aliases; /* n_in each */
  size_t n_in;
  char **out_names, **out_aliases;
  size_t n_out;
} isv__signature;

/* A priority level's own queue policy (Triton's priority_queue_policy entry). */
typedef struct isv__level_policy {
  uint32_t level;
  isv_queue_policy policy;
} isv__level_policy;

struct isv_model_config {
  const isv_mem *mem; /* where its pieces come from: NULL (libc's) for the host's, the server's
                       * for a registered model's copy */
  char *name;
  char *platform;
  isv__io *inputs;
  size_t n_inputs;
  isv__io *outputs;
  size_t n_outputs;
  uint32_t max_batch;
  char **labels;
  size_t n_labels;
  isv_exec_mode exec_mode;
  uint32_t instances;          /* >= 1 */
  uint32_t max_queue;          /* 0: unbounded */
  uint64_t default_timeout_us; /* 0: none */
  int batching;                /* dynamic batching */
  uint64_t batch_delay_us;
  uint32_t *preferred;         /* preferred batch sizes, ascending */
  size_t n_preferred;
  int decoupled;
  int sequences;               /* sequence batching */
  uint64_t seq_idle_us;
  uint32_t max_sequences;
  isv__signature *sigs; /* none: the implicit serving_default */
  size_t n_sigs;
  /* priorities and queue policies (isv_model_config_set_priority_levels / _queue_policy) */
  int queue_policies;          /* either was set: the scheduler's policy queues (scheduler.c) */
  uint32_t priority_levels;    /* 0: one level */
  uint32_t default_priority;   /* in [1, priority_levels]; 0 with no levels */
  isv_queue_policy default_policy;
  isv__level_policy *level_policies; /* the levels given one of their own, in setting order */
  size_t n_level_policies;
  int response_cache;            /* Triton's response_cache.enable (core/rcache.h) */
  struct isv__warmup *warmups;   /* Triton's model_warmup samples (core/warmup.h), in order */
  size_t n_warmups;
  int open_io; /* undeclared inputs and outputs are allowed (isv_model_config_set_open_io) */
  int native;  /* wants a protocol's own message (isv_model_config_set_native) */
  struct isv__ens_cfg *ensemble; /* an ensemble's steps (core/ensemble_cfg.h); NULL: none */
  isv_chat_template_fn chat_template; /* the OpenAI front end's chat prompt; NULL: its own */
  void *chat_template_user;
};

struct isv__core;
/* A model version's scheduling state: its queues, instances, batching wake-up and live
 * sequences. Private to core/scheduler.c, which makes it on the version's first request. */
struct isv__sched;

typedef struct isv__model_entry isv__model_entry;
struct isv__gcopy;

struct isv_model {
  isv__model_entry *entry;
  isv_model *next; /* entry's version list, in registration order */
  char *version;
  isv_model_config *cfg; /* private deep copy */
  isv_backend backend;
  void *user;
  isv_model_state state;
  uint64_t registered_s; /* the wall clock (Unix seconds) at registration: OpenAI's "created" */
  unsigned refs;   /* the registry's own reference + one per request using it */
  int removed;
  struct isv__core *core; /* the server whose registry holds it */
  isv__stats stats; /* written on the loop thread; read anywhere (stats.h) */
  /* What the layers above keep for this version, and how each ends with it — the registry
   * calls the hooks at the version's end, in this order, each only when set:
   *  - gcopy: this version as a copy of its group's record (core/group.c's, private to it;
   *    every server is in a group, a lone one in a group of one; NULL: registered past the
   *    group). gcopy_unlink takes the copy out of its record's list first — other members'
   *    loops read its numbers through that list — and gcopy_gone lets the record go last;
   *  - sched: its scheduling state (core/scheduler.c's, made on its first request);
   *    sched_end ends it between the two (live sequences end: the backend's sequence_end). */
  struct isv__gcopy *gcopy;
  void (*gcopy_unlink)(isv_model *m);
  void (*gcopy_gone)(isv_model *m);
  struct isv__sched *sched;
  void (*sched_end)(isv_model *m);
};

typedef struct isv__label {
  char *label;
  char *version;
} isv__label;

struct isv__model_entry {
  const isv_mem *mem; /* the server's */
  char *name;
  isv__model_entry *hnext;
  isv_model *versions;
  isv__label *labels;
  size_t n_labels;
  char *default_version;
};

typedef struct isv__registry {
  struct isv__core *core;
  const isv_mem *mem; /* the server's */
  isv__model_entry **buckets;
  size_t n_buckets;
  size_t n_entries;
  int summaries; /* Triton's latency summaries are on: each version gets its windows */
} isv__registry;

/* A model version's state as Triton and grps name it: "READY", "LOADING", "UNLOADING",
 * "UNAVAILABLE" ("UNKNOWN" for anything else). */
const char *isv__model_state_name(isv_model_state s);

int isv__registry_init(isv__registry *r, struct isv__core *core, const isv_mem *mem);
/* A deep copy of c whose every piece comes from mem (NULL: libc's). NULL when out of memory. */
isv_model_config *isv__config_copy(const isv_model_config *c, const isv_mem *mem);
/* Removes every model (destroy callbacks run when their last reference goes). */
void isv__registry_clear(isv__registry *r);

/* What isv__registry_add would refuse with ISV_EINVAL, with the reason in why (may be NULL). */
int isv__registry_check(const isv_model_config *c, const char *version, const isv_backend *be,
                        char *why, size_t cap);
int isv__registry_add(isv__registry *r, const isv_model_config *c, const char *version,
                      const isv_backend *be, void *user, isv_model **out);
int isv__registry_remove(isv__registry *r, const char *name, const char *version);
isv__model_entry *isv__registry_entry(const isv__registry *r, const char *name, size_t len);
/* Names starting with '@' are the library's own models (a custom route's: server.c), which
 * clients never see: lookups on their behalf and listings skip them. */
static inline int isv__entry_hidden(const isv__model_entry *e) { return e->name[0] == '@'; }
/* isv__registry_entry for a client: NULL for a hidden entry too. */
isv__model_entry *isv__registry_visible(const isv__registry *r, const char *name, size_t len);
/* Visit every visible entry, in no set order (isv__registry_foreach_all: the hidden ones too —
 * for the metrics and the registry's clear). */
void isv__registry_foreach_all(const isv__registry *r, void (*fn)(isv__model_entry *, void *),
                               void *data);
void isv__registry_foreach(const isv__registry *r, void (*fn)(isv__model_entry *, void *),
                           void *data);

isv_model *isv__entry_version(const isv__model_entry *e, const char *version, size_t len);
/* NULL when the label is unknown. */
isv_model *isv__entry_label(const isv__model_entry *e, const char *label, size_t len);
isv_model *isv__entry_default(const isv__model_entry *e);
int isv__entry_set_label(isv__model_entry *e, const char *label, const char *version);
/* A list of labels (an entry's, a group's name record): set one (version NULL removes it:
 * ISV_ENOTFOUND when there is none; ISV_ENOMEM), free them all. Strings from mem. */
int isv__labels_set(const isv_mem *mem, isv__label **v, size_t *n, const char *label,
                    const char *version);
void isv__labels_free(isv__label *v, size_t n);
int isv__entry_set_default(isv__model_entry *e, const char *version);

/* Compare two version strings: numeric ones as numbers, numeric before non-numeric. */
int isv__version_cmp(const char *a, const char *b);


void isv__model_ref(isv_model *m);
void isv__model_unref(isv_model *m);

/* The queue policy of priority level `level` (1..priority_levels; 0: the default one). */
const isv_queue_policy *isv__config_level_policy(const isv_model_config *c, uint32_t level);

/* Config helpers shared by validation and metadata. */
const isv__io *isv__config_input(const isv_model_config *c, const char *name, size_t len);
const isv__io *isv__config_output(const isv_model_config *c, const char *name, size_t len);

#endif
