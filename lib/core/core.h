/* The protocol-agnostic server core's state: options, registry, the handles, the queues of
 * completions, the time heap, the counts of what is in flight. What runs on it sits above,
 * each in its file: the scheduler (scheduler.h: submit, cancel, completions), the queries
 * every front end asks (queries.h: online, ready, which model a name means), a core's life
 * (lifecycle.h: init, close). Loop thread only, except isv_request_complete() which may come
 * from any thread and returns to the loop through one uv_async_t. */
#ifndef ISV_CORE_CORE_H
#define ISV_CORE_CORE_H

#include "core/layer.h"

#include <stdatomic.h>
#include <string.h>
#include <uv.h>

#include "codec/bigbuf.h"
#include "codec/budget.h"
#include "codec/recycler.h"
#include "core/arena.h"
#include "core/clients.h"
#include "core/logset.h"
#include "core/options.h"
#include "core/pool.h"
#include "core/registry.h"
#include "core/shm.h"
#include "core/timeheap.h"

typedef struct isv__core isv__core;

/* How many freed requests stay dead before their memory is returned (about 0.5 MB). */
#define ISV__QUARANTINE 1024

struct isv__core {
  uv_loop_t *loop;
  uv_thread_t loop_thread;
  isv_options opts;
  const isv_mem *mem; /* &recycler.mem: every allocation of the server (codec/mem.h) */
  isv__recycler recycler; /* small blocks kept for the loop thread, over opts.mem (the host's) */
  isv__registry reg;
  isv__shm_registry *shm; /* system shared memory regions (shm.h): the group's */
  isv__clients *clients;  /* requests in flight per client (clients.h): the group's */
  isv__logset *logset;    /* the logging extension's settings (logset.h): the group's */
  isv__traceset *traceset; /* the trace extension's settings (traceset.h): the group's */
  uint64_t trace_seq; /* tracing: fresh trace ids made (loop) */
  uint64_t wall_ms, wall_at_ns; /* the wall clock (ms) at uv_hrtime wall_at_ns (loop: record()) */
  isv__bigbuf_cache bufs; /* large blocks reused across requests (bodies, messages, tensors) */
  isv__budget *receiving; /* the server's receiving budget (isv_options_set_max_receiving_bytes,
                           * the transport's): decoded bodies are charged to it too; NULL: none */
  uv_async_t async;
  uv_mutex_t mu; /* guards the done queue, the responses to deliver, and every request's
                  * completion flags */
  isv_request *done_head;
  isv_request *done_tail;
  /* Executions ever put on the done queue: written under mu next to the queue (a line the
   * writer holds anyway); the loop, spinning for a completion (scheduler.c,
   * wait_for_completion), reads it without mu against what it saw last and never writes it. */
  atomic_uint done_posted;
  unsigned done_seen; /* loop thread */
  /* When the oldest completion on the done queue completed (0: unknown or none): under mu. The
   * loop, woken for it, learns what its wake-up cost (loop_wake_ns), and spins about that long
   * for the next completion (core/spin.h) — loop thread, as loop_misses (its spins in a row
   * that caught none). */
  uint64_t done_first_ns;
  uint64_t loop_wake_ns;
  unsigned loop_misses;
  isv_request *resp_head; /* streaming requests with something to deliver (responses.h) */
  isv_request *resp_tail;
  size_t inflight; /* requests submitted and counted, not yet done: queued or running */
  size_t offloads; /* front-end work on a worker thread (offload.h), not yet back */
  struct isv__offload *off_head, *off_tail; /* offloads done, their continuations due; mu */
  uv_timer_t timer;       /* armed at the time heap's earliest entry; never keeps the loop alive */
  isv__timeheap timers;   /* deadlines, batching delays, sequence idle timeouts, the drain */
  isv__timed drain;       /* isv__core_begin_close's deadline */
  isv__timed abandon;     /* the drain deadline plus ISV__CANCEL_GRACE_MS: abandon the running */
  isv__pool pool;         /* ISV_EXEC_POOL backends */
  isv_model *waiting;     /* model versions with requests waiting */
  struct isv__job *running; /* executions running (their scheduler records: scheduler.c) */
  int cut;                /* the drain deadline passed: nothing new starts */
  uv_close_cb close_cb;   /* isv__core_close's, once both handles are closed */
  int closing;
  char default_model[128]; /* isv_server_set_default_model ("": none) */
  struct isv__repo *repo;   /* isv_server_set_repository's (core/repository.h); NULL: none */
  const struct isv__nest_ops *nest_ops; /* nested requests' hooks (core/nested.h), for the
                                         * scheduler below them; set by isv__core_init */
  const char *protocols[ISV__MAX_PROTOCOLS]; /* labels; [0] = "inprocess" */
  unsigned n_protocols;
  void (*on_idle)(isv__core *core); /* called when closing and the last request finished */
  /* Freed requests, kept dead a while so that a backend's call on one it already completed is
   * refused instead of touching freed memory (request.c); under mu. */
  isv_request *quarantine[ISV__QUARANTINE];
  size_t q_next, q_len;
  /* One that left the quarantine, for the next isv__request_new rather than free() and calloc()
   * (request.c): set under mu, and only when empty; taken by an exchange, without mu (a lock
   * pair per request less). */
  _Atomic(isv_request *) q_spare;
  /* The shared chunk of a released request's arena, for the next request's arena to start
   * with (its isv__arena.spare): set under mu and only when empty (request.c's bury), taken
   * without mu at the arena's first allocation — as q_spare, an allocation and a free per
   * request less. Poisoned while it waits. */
  _Atomic(isv__arena_chunk *) arena_spare;
  int closed; /* isv__core_close ran: requests freed later go straight to free(); under mu */
  /* The core's memory outlives its close while executions it abandoned still run: one
   * reference for the owner, one per abandoned execution, one for worker threads let go. */
  atomic_uint refs;
  void (*free_owner)(isv__core *c); /* frees the memory the core lives in, at the last one */
  unsigned stuck; /* abandoned executions whose infer has not returned on a worker; under mu */
  /* The edge's model stage (protocol/gate.h) for a submitted request that carries a caller
   * (r->caller), asked with the model version it resolved to (a repository operation: the
   * model it loads or unloads, version NULL): 0 go on, ISV__AUTHZ_LATER (the request waits,
   * counted in flight, until isv__core_authorized), or an ISV_E* code with r failed. NULL:
   * nobody asks. */
  int (*authorize)(void *ctx, isv_request *r, const char *model, const char *version);
  void *authorize_ctx;
#define ISV__AUTHZ_LATER 1 /* what authorize returns when the decision comes later */
  /* Its place in its group (core/group.h, private to group.c): the models are the group's,
   * this registry holds copies. A server made without a group is a group of one. */
  struct isv__member *member;
  /* On the loop thread: the executions out on the worker pool, not yet back, and how long
   * such an execution took lately (ns, a moving average): scheduler.c's wait_for_completion. */
  unsigned pool_execs;
  uint64_t pool_exec_ns;
  /* Who hears that readiness may have changed (watch.h): online or
   * offline, a model version's state, models added or removed, the close. Loop thread. */
  struct isv__core_watch *watches;
  int notifying; /* a notification is running: one that would nest is folded into it */
};

/* How long running requests, cancelled at the drain deadline, may still take before the close
 * abandons them (their backends may complete them later; nobody hears the answer). */
#define ISV__CANCEL_GRACE_MS 1000

/* Drop a reference (the owner's after isv__core_close's callback; any thread): the last one
 * destroys what abandoned executions still needed — the mutex, the buffer cache, the worker
 * pool — and calls free_owner. */
void isv__core_unref(isv__core *c);

/* Tell the host (isv_options_set_log); printf-style. Loop thread. */
void isv__core_log(const isv__core *c, isv_log_level level, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;



/* A model named by a client: name and at most one of version or label (neither: the default
 * version). Lengths are explicit: these may point into a request path. */
typedef struct isv__model_spec {
  const char *name;
  size_t name_len;
  const char *version; /* NULL: none */
  size_t version_len;
  const char *label;   /* NULL: none (TF Serving's /labels/{l}) */
  size_t label_len;
} isv__model_spec;

/* Why a model a client names cannot be served. Each front end words a reason in its own
 * protocol's text, from one table (core/resolve.h). */
typedef enum isv__why {
  ISV__FOUND = 0,
  ISV__NO_MODEL,   /* no model of that name (a hidden one's name included) */
  ISV__NO_VERSION, /* the model has no such version */
  ISV__NO_LABEL,   /* the model has no such label */
  ISV__NOT_READY,  /* the version is there, not READY (the submit's rule: isv__core_submit) */
  ISV__N_WHY
} isv__why;

/* The spec of a model version (for its reasons' words). */
static inline isv__model_spec isv__model_spec_of(const isv_model *m) {
  isv__model_spec s = {m->cfg->name, strlen(m->cfg->name), m->version, strlen(m->version), NULL, 0};
  return s;
}


int isv__on_loop_thread(const isv__core *c);
/* Nothing in flight: no request, no offloaded work (what the close waits for). */
static inline int isv__core_idle(const isv__core *c) { return c->inflight == 0 && c->offloads == 0; }
/* After inflight or offloads changed: the async handle keeps the host's loop alive exactly
 * while something is in flight (uv_ref and uv_unref are flags, not counts). */
static inline void isv__core_hold_loop(isv__core *c) {
  if (isv__core_idle(c)) uv_unref((uv_handle_t *)&c->async);
  else uv_ref((uv_handle_t *)&c->async);
}

#endif
