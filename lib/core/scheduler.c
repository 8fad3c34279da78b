/* The request path in the core, after a front end (or the in-process API) submitted a request:
 * bind, validate, admit (limits, deadline, sequence), queue, dispatch executions onto the
 * model's instances — alone or as a dynamic batch — run the backend (on the loop thread or a
 * worker thread), collect its completion from whatever thread it comes, hand each request its
 * result, and call back.
 *
 * Scheduling (loop thread only). A model version has `instances` slots; an execution takes one
 * from dispatch until its backend completed. Requests wait in the version's FIFO queue — with
 * sequence batching, in the queue of the instance their sequence is bound to, so a sequence's
 * requests run in arrival order, one at a time. schedule() starts executions while a slot is
 * free and a request waits; with dynamic batching it takes the head and every later request
 * that can join it, and holds them back while the batch is short and the head's delay has not
 * run out. It never recurses: a completion inside it only asks it to go round again.
 *
 * Completion protocol (an execution's flags, under core->mu):
 *  - whoever is running infer sets in_infer; a completion that arrives meanwhile only sets
 *    `completed`, and the code that called infer finishes the execution once infer returned
 *    (loop thread: right after the call; worker thread: the worker hands it to the loop);
 *  - `completed` goes from 0 to 1 by a compare-and-swap, once: a second completion is refused
 *    (ISV_ESTATE) and touches nothing. So an inline execution's backend completing it with
 *    success on the loop thread during infer — every inline model, every request — takes no
 *    lock: nobody but the loop writes an inline execution's other flags, and a completion
 *    from another thread (a misuse) loses the swap; the loop then finishes it without the
 *    lock too (done_inline);
 *  - a completion after that point is queued and the loop is woken with uv_async_send, unless
 *    it already runs on the loop thread, where the execution finishes at once.
 *  - an execution the close abandoned (abandon_running: still running at the drain deadline
 *    plus ISV__CANCEL_GRACE_MS) was answered without its backend; its completion, and its
 *    owner's isv_request_free, only free it — whichever comes second (isv__abandoned_release).
 *
 * Time: one uv_timer for the whole core, armed at the earliest entry of the time heap
 * (request deadlines, batching delays, sequence idle timeouts, the drain deadline). */
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/compiler.h"
#include "core/batch.h"
#include "core/scheduler.h"
#include "core/group.h"
#include "core/offload.h"
#include "core/rcache.h"
#include "core/watch.h"
#include "core/repository.h"
#include "core/request.h"
#include "core/responses.h"
#include "core/sequence.h"
#include "core/spin.h"

enum { T_DEADLINE = 1, T_WAKE, T_SEQ_IDLE, T_DRAIN, T_ABANDON, T_QUEUE };
#define ISV__CACHE_HIT 1 /* admit(): answered from the response cache (not an error code) */

#define OWNER(ptr, type, member) ((type *)(void *)((char *)(ptr) - offsetof(type, member)))
#define US 1000ull /* ns */
#define MAX_TIMEOUT_US (1000000ull * 86400 * 365) /* a year: no overflow in ns */
/* wait_for_completion: how long the loop spins for all of a loop turn's completions at most
 * (for one: as long as its wake-ups cost lately, core/spin.h) */
#define ISV__LOOP_SPIN_TURN_NS ISV__SPIN_CAP_NS

typedef struct isv__job isv__job;

/* A FIFO of waiting requests' jobs. */
typedef struct job_queue {
  isv__job *head, *tail;
  size_t n;
} job_queue;

/* The scheduler's record of a submitted request (r->job), made in the request's arena when it
 * is submitted: where it waits, which execution runs it and on which instance, its deadline,
 * its sequence. Nothing outside this file reads it; the request itself holds the message and
 * the completion protocol (core/request.h). Loop thread only. */
struct isv__job {
  isv_request *r;
  isv__job *sq_prev, *sq_next; /* in its queue */
  job_queue *queue;            /* the queue it waits in; NULL when not queued */
  isv_request *exec;           /* the execution it runs in (itself, or a batch's); NULL before */
  isv__batch *batch;           /* an execution of several requests' rows (r is the batch's) */
  unsigned instance;           /* of the model, running it */
  isv__pool_job pool;          /* ISV_EXEC_POOL: the worker thread's job */
  int on_pool;                 /* submitted to the pool, not yet back (core->pool_execs) */
  isv__job *live_prev, *live_next; /* an execution, in the core's running list */
  isv__timed deadline;         /* the request's deadline in the core's time heap */
  isv__timed qtimeout;         /* its queue policy's timeout, while it waits (T_QUEUE) */
  int timed_out;               /* the deadline passed: it ends ISV_EDEADLINE, whatever comes */
  int authz_pending;           /* waiting for the model stage's decision (isv__core_authorized) */
  isv__seq *seq;               /* sequence batching: its sequence */
  unsigned seq_flags;          /* ISV_SEQUENCE_FLAG_START / END as the request said */
  int cache_store;             /* a response cache miss: store its answer under cache_key */
  isv__rkey cache_key;
  uint64_t run_ns;             /* when its execution started (0: never ran) */
  uint64_t infer_ns;           /* when infer was called */
};

/* A model version's scheduling state (registry.h's isv_model.sched). Loop thread; the counts
 * others read are in the model's stats (queued, batch_execs). */
struct isv__sched {
  isv_model *model;
  isv__core *core;
  unsigned busy;        /* instances running an execution */
  uint8_t *inst_busy;   /* per instance */
  unsigned *inst_seqs;  /* live sequences bound to each instance */
  job_queue *queues;    /* one queue; or, with sequence batching, one per instance; or, with
                         * queue policies, two per priority level — its requests, then those
                         * its DELAY policy put behind them — in the order they run */
  unsigned n_queues;
  unsigned low;         /* queue policies: no queue before this one holds a request */
  const isv_queue_policy **pol; /* queue policies: each level's (the config's) */
  isv__timed wake;      /* dynamic batching: when the oldest request's delay runs out */
  isv__seqtab seqs;
  int scheduling, again;  /* schedule() is running / must go round again */
  isv_model *qm_prev, *qm_next; /* in the core's list of versions with waiting requests */
};
typedef struct isv__sched isv__sched;

static void schedule(isv_model *m);
static void finish_request(isv_request *r);
static void run_admitted(isv_request *r);

/* ---- what a backend asks of its request's job -------------------------------------------- */

ISV_EXTERN unsigned isv_request_instance(const isv_request *r) {
  return r && r->job ? r->job->instance : 0;
}

ISV_EXTERN int isv_request_sequence(const isv_request *r, uint64_t *id, const char **id_str) {
  const isv__seq *q = r && r->job ? r->job->seq : NULL;
  if (id) *id = q ? q->id : 0;
  if (id_str) *id_str = q ? q->id_str : NULL;
  return q ? (int)r->job->seq_flags : -1;
}

ISV_EXTERN void **isv_request_sequence_state(isv_request *r) {
  return r && r->job && r->job->seq ? &r->job->seq->state : NULL;
}

/* ---- queues ------------------------------------------------------------------------------ */

/* The core's list of model versions with requests waiting (for the drain deadline). */
static void models_link(isv__core *c, isv_model *m) {
  m->sched->qm_prev = NULL;
  m->sched->qm_next = c->waiting;
  if (c->waiting) c->waiting->sched->qm_prev = m;
  c->waiting = m;
}

static void models_unlink(isv__core *c, isv_model *m) {
  isv__sched *s = m->sched;
  if (s->qm_prev) s->qm_prev->sched->qm_next = s->qm_next;
  else c->waiting = s->qm_next;
  if (s->qm_next) s->qm_next->sched->qm_prev = s->qm_prev;
  s->qm_prev = s->qm_next = NULL;
}

/* The core's list of executions running (for the drain deadline). */
static void running_link(isv__core *c, isv__job *x) {
  x->live_prev = NULL;
  x->live_next = c->running;
  if (c->running) c->running->live_prev = x;
  c->running = x;
}

static void running_unlink(isv__core *c, isv__job *x) {
  if (x->live_prev) x->live_prev->live_next = x->live_next;
  else c->running = x->live_next;
  if (x->live_next) x->live_next->live_prev = x->live_prev;
  x->live_prev = x->live_next = NULL;
}

static void q_push(job_queue *q, isv__job *j) {
  j->sq_next = NULL;
  j->sq_prev = q->tail;
  if (q->tail) q->tail->sq_next = j;
  else q->head = j;
  q->tail = j;
  q->n++;
  j->queue = q;
}

static void q_remove(isv_request *r) {
  isv__job *j = r->job;
  job_queue *q = j->queue;
  if (j->sq_prev) j->sq_prev->sq_next = j->sq_next;
  else q->head = j->sq_next;
  if (j->sq_next) j->sq_next->sq_prev = j->sq_prev;
  else q->tail = j->sq_prev;
  q->n--;
  j->queue = NULL;
  j->sq_prev = j->sq_next = NULL;
  isv_model *m = r->model;
  isv__sched *s = m->sched;
  if (isv__timed_armed(&j->qtimeout)) isv__timeheap_remove(&s->core->timers, &j->qtimeout);
  if (--m->stats.queued == 0 && s->core) {
    isv__timeheap_remove(&s->core->timers, &s->wake);
    models_unlink(s->core, m);
  }
}

/* Queue policies: j goes to the tail of queue `to` of its model, still waiting (DELAY). */
static void q_move(isv__sched *s, isv__job *j, unsigned to) {
  job_queue *q = j->queue;
  if (j->sq_prev) j->sq_prev->sq_next = j->sq_next;
  else q->head = j->sq_next;
  if (j->sq_next) j->sq_next->sq_prev = j->sq_prev;
  else q->tail = j->sq_prev;
  q->n--;
  q_push(&s->queues[to], j);
  if (to < s->low) s->low = to;
}

/* The request that runs next: the head of the first queue that holds one (one queue but with
 * queue policies, whose levels come in order). NULL when none waits. */
static isv__job *q_first(isv__sched *s) {
  while (s->low < s->n_queues && s->queues[s->low].head == NULL) s->low++;
  return s->low < s->n_queues ? s->queues[s->low].head : NULL;
}

/* The request after r in the order requests run (isv__batch_pick's walk): across queues with
 * queue policies — a batch takes what the levels hold in their order, as Triton's does. */
static isv_request *q_next(const isv_request *r) {
  const isv__job *j = r->job;
  if (j->sq_next) return j->sq_next->r;
  const isv__sched *s = r->model->sched;
  for (size_t i = (size_t)(j->queue - s->queues) + 1; i < s->n_queues; i++)
    if (s->queues[i].head) return s->queues[i].head->r;
  return NULL;
}

/* A job for r, in its arena (at submission; a batch's when it is built). 0, or ISV_ENOMEM. */
static int job_make(isv_request *r) {
  if (r->job) return 0;
  isv__job *j = isv__arena_alloc(&r->arena, sizeof *j);
  if (j == NULL) return ISV_ENOMEM;
  memset(j, 0, sizeof *j);
  j->r = r;
  r->job = j;
  return 0;
}

/* ---- the time heap's timer --------------------------------------------------------------- */

static void on_timer(uv_timer_t *t);

static void arm_timer(isv__core *c) {
  isv__timed *top = isv__timeheap_top(&c->timers);
  if (top == NULL) {
    uv_timer_stop(&c->timer);
    return;
  }
  uint64_t now = uv_hrtime();
  uint64_t ms = top->when > now ? (top->when - now + 999999) / 1000000 : 0;
  uv_timer_start(&c->timer, on_timer, ms, 0);
}

/* Put e in the heap at `when`; re-arm when it became the earliest. 0, or ISV_ENOMEM. */
static int set_timed(isv__core *c, isv__timed *e, int kind, uint64_t when) {
  e->kind = kind;
  if (isv__timeheap_set(&c->timers, e, when) != 0) return ISV_ENOMEM;
  if (isv__timeheap_top(&c->timers) == e) arm_timer(c);
  return 0;
}

/* ---- sequences --------------------------------------------------------------------------- */

static void seq_finalize(isv_model *m, isv__seq *q) {
  if (m->sched->core) isv__timeheap_remove(&m->sched->core->timers, &q->idle);
  m->sched->inst_seqs[q->instance]--;
  if (m->backend.sequence_end)
    m->backend.sequence_end(m->user, q->id, q->id_str, q->state,
                            (isv_sequence_end_reason)q->end_reason);
  isv__seq_free(q);
}

/* The sequence leaves the table (no request may join it any more); it ends once its last
 * pending request is done. */
static void seq_end(isv_model *m, isv__seq *q, int reason) {
  isv__seqtab_remove(&m->sched->seqs, q);
  q->ended = 1;
  q->end_reason = reason;
  if (q->pending == 0) seq_finalize(m, q);
}

static void seq_request_done(isv_request *r) {
  isv__seq *q = r->job->seq;
  isv_model *m = r->model;
  r->job->seq = NULL;
  if (--q->pending > 0) return;
  if (q->ended) {
    seq_finalize(m, q);
  } else if (set_timed(m->sched->core, &q->idle, T_SEQ_IDLE,
                       uv_hrtime() + m->cfg->seq_idle_us * US) != 0) {
    seq_end(m, q, ISV_SEQUENCE_END_IDLE); /* no memory for its timer: do not let it leak */
  }
}

static unsigned least_loaded(const isv__sched *s, unsigned n) {
  unsigned best = 0;
  for (unsigned i = 1; i < n; i++)
    if (s->inst_seqs[i] < s->inst_seqs[best]) best = i;
  return best;
}

static void seq_text(char *out, size_t cap, uint64_t id, const char *s, size_t len) {
  if (s) snprintf(out, cap, "'%.*s'", (int)(len > 100 ? 100 : len), s);
  else snprintf(out, cap, "%" PRIu64, id);
}

/* The request's sequence, found or started; 0, or r failed. */
static int seq_admit(isv_request *r, uint64_t id, const char *id_str, size_t len, unsigned flags) {
  isv_model *m = r->model;
  const isv_model_config *c = m->cfg;
  isv__sched *s = m->sched;
  char idt[128];
  if (id == 0 && id_str == NULL)
    return isv__request_fail(r, ISV_EBADREQ, "model '%s' is stateful: every request needs a "
                             "'sequence_id' parameter (a uint64 > 0 or a string)", c->name);
  isv__seq *q = isv__seqtab_find(&s->seqs, id, id_str, len);
  if (flags & ISV_SEQUENCE_FLAG_START) {
    if (q) seq_end(m, q, ISV_SEQUENCE_END_RESTARTED);
    if (s->seqs.n >= c->max_sequences)
      return isv__request_fail(r, ISV_EUNAVAIL, "model '%s' already runs %zu sequences, its "
                               "maximum", c->name, s->seqs.n);
    q = isv__seqtab_add(&s->seqs, id, id_str, len, least_loaded(s, c->instances));
    if (q == NULL) return isv__request_fail(r, ISV_ENOMEM, "out of memory");
    q->model = m;
    s->inst_seqs[q->instance]++;
  } else if (q == NULL) {
    seq_text(idt, sizeof idt, id, id_str, len);
    return isv__request_fail(r, ISV_EBADREQ, "sequence %s of model '%s' is not live: its first "
                             "request must set 'sequence_start'", idt, c->name);
  }
  isv__timeheap_remove(&s->core->timers, &q->idle);
  q->pending++;
  r->job->seq = q;
  r->job->seq_flags = flags;
  if (flags & ISV_SEQUENCE_FLAG_END) seq_end(m, q, ISV_SEQUENCE_END_REQUESTED);
  return 0;
}

/* ---- the model's scheduling state -------------------------------------------------------- */

static void sched_end(isv_model *m);

/* m's scheduling state, made on its first request (the registry ends it with the version:
 * m->sched_end). 0, or ISV_ENOMEM with nothing made. */
static int sched_make(isv_model *m) {
  const isv_model_config *c = m->cfg;
  const isv_mem *mem = c->mem; /* the registry's copy of the config: the server's */
  isv__sched *s = isv__calloc(mem, 1, sizeof *s);
  m->sched = s;
  m->sched_end = sched_end;
  if (s == NULL) return ISV_ENOMEM;
  s->model = m;
  s->core = m->core;
  unsigned levels = c->priority_levels ? c->priority_levels : 1;
  s->n_queues = c->sequences ? c->instances : c->queue_policies ? 2 * levels : 1;
  s->inst_busy = isv__calloc(mem, c->instances, sizeof *s->inst_busy);
  s->inst_seqs = isv__calloc(mem, c->instances, sizeof *s->inst_seqs);
  s->queues = isv__calloc(mem, s->n_queues, sizeof *s->queues);
  isv__seqtab_init(&s->seqs, mem);
  if (c->queue_policies && (s->pol = isv__calloc(mem, levels, sizeof *s->pol)) != NULL)
    for (unsigned i = 0; i < levels; i++)
      s->pol[i] = isv__config_level_policy(c, c->priority_levels ? i + 1 : 0);
  if (s->inst_busy && s->inst_seqs && s->queues && (s->pol || !c->queue_policies)) return 0;
  sched_end(m);
  return ISV_ENOMEM;
}

/* A model version that goes ends its live sequences (the backend's sequence_end) and leaves
 * the time heap. */
static void sched_end(isv_model *m) {
  isv__sched *s = m->sched;
  if (s == NULL) return;
  isv__seq *q;
  while ((q = isv__seqtab_pop(&s->seqs)) != NULL) {
    q->ended = 1;
    q->end_reason = ISV_SEQUENCE_END_CLOSED;
    seq_finalize(m, q); /* nothing is pending: requests hold the model */
  }
  isv__seqtab_free(&s->seqs);
  if (s->core) isv__timeheap_remove(&s->core->timers, &s->wake);
  isv__free(s->inst_busy);
  isv__free(s->inst_seqs);
  isv__free(s->queues);
  isv__free(s->pol);
  isv__free(s);
  m->sched = NULL;
  m->sched_end = NULL;
}

unsigned isv__sched_busy(const isv_model *m) { return m->sched ? m->sched->busy : 0; }

uint64_t isv__request_deadline_ns(const isv_request *r) {
  const isv__job *j = r->job;
  if (j == NULL) return 0;
  uint64_t when = isv__timed_armed(&j->deadline) ? j->deadline.when : 0;
  for (size_t i = 0; j->batch && i < j->batch->n_members; i++) { /* a batch: its earliest */
    const isv__job *mj = j->batch->members[i]->job;
    if (isv__timed_armed(&mj->deadline) && (when == 0 || mj->deadline.when < when))
      when = mj->deadline.when;
  }
  return when;
}

/* ---- finishing requests ------------------------------------------------------------------ */

/* ---- tracing (isv_options_set_trace) ------------------------------------------------------ */

/* A fresh trace id: xorshift over the clock and a counter (unique per process is what a trace
 * id needs; nothing secret rides on it). Loop thread. */
static void fresh_trace_id(isv__core *c, uint8_t id[16]) {
  uint64_t x = uv_hrtime() ^ (++c->trace_seq * 0x9e3779b97f4a7c15ull) ^ (uintptr_t)c;
  for (int i = 0; i < 16; i++) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    id[i] = (uint8_t)(x >> 24);
  }
}

static void trace(isv_request *r, uint64_t now) {
  isv__core *c = r->core;
  int sampled = r->trace.has && (r->trace.tp.flags & 1); /* its caller's choice: always traced */
  isv__trace_view set; /* the settings it is traced under (traceset.h decides) */
  if (!isv__traceset_sample(c->traceset, r->model->cfg->name, sampled, &set)) return;
  const isv_request *x = r->job->exec;
  const isv__job *xj = x ? x->job : NULL;
  isv_trace_timeline t = {
      .struct_size = sizeof t,
      .model = r->model->cfg->name,
      .version = r->model->version,
      .protocol = r->protocol < c->n_protocols ? c->protocols[r->protocol] : "",
      .request_id = r->id ? r->id : "",
      .status = r->status,
      .has_parent = r->trace.has,
      .request_start_ns = r->start_ns,
      .queue_start_ns = r->start_ns,
      .compute_start_ns = r->job->run_ns,
      .compute_input_end_ns = xj && r->job->run_ns ? xj->infer_ns : 0,
      .compute_output_start_ns = x && r->job->run_ns ? x->complete_ns : 0,
      .compute_end_ns = r->job->run_ns ? now : 0,
      .request_end_ns = now,
      .batch_size = !r->job->run_ns ? 0 : xj && xj->batch ? xj->batch->n_members : 1,
      .trace_file = set.file,
      .log_frequency = set.log_frequency,
      .traces_left = set.count,
  };
  if (r->trace.has) {
    memcpy(t.trace_id, r->trace.tp.trace_id, 16);
    memcpy(t.parent_id, r->trace.tp.parent_id, 8);
    t.flags = r->trace.tp.flags;
  } else {
    fresh_trace_id(c, t.trace_id);
    t.flags = 1;
  }
  c->opts.trace(c->opts.trace_user, &t);
}

static isv__fail_reason fail_reason(const isv_request *r) {
  switch (r->status) {
  case ISV_ECANCELED: return ISV__FAIL_CANCELED;
  case ISV_EUNAVAIL:
  case ISV_EOVERLOAD:
  case ISV_ETOOMANY:
  case ISV_EDEADLINE:
  case ISV_EREQTIMEOUT: return r->job->run_ns ? ISV__FAIL_OTHER : ISV__FAIL_REJECTED;
  case ISV_EBACKEND: return ISV__FAIL_BACKEND;
  default: return r->backend_fault ? ISV__FAIL_BACKEND : ISV__FAIL_OTHER;
  }
}

/* The wall clock (ms since the epoch) at `now` (uv_hrtime), from one gettimeofday a second at
 * most: every request's last_inference. A step of the clock shows within the second. */
static uint64_t wall_ms(isv__core *c, uint64_t now) {
  if (c->wall_at_ns == 0 || now - c->wall_at_ns >= 1000000000ull) {
    uv_timeval64_t tv;
    if (uv_gettimeofday(&tv) != 0) return 0;
    c->wall_ms = (uint64_t)tv.tv_sec * 1000 + (uint64_t)tv.tv_usec / 1000;
    c->wall_at_ns = now;
  }
  return c->wall_ms + (now - c->wall_at_ns) / 1000000;
}

static void record(isv_request *r) {
  isv__stats *s = &r->model->stats; /* this loop's copy: one writer (stats.h) */
  atomic_store_explicit(&s->inflight,
                        atomic_load_explicit(&s->inflight, memory_order_relaxed) - 1,
                        memory_order_relaxed);
  uint64_t now = uv_hrtime();
  if (r->status == 0) {
    isv__count(&s->success[r->protocol], 1);
    isv__count(&s->success_ns, now - r->start_ns);
  } else {
    isv__count(&s->failure[r->protocol], 1);
    isv__count(&s->failure_ns, now - r->start_ns);
    isv__count(&s->failure_reason[fail_reason(r)], 1);
  }
  isv__hist_add(&s->latency, isv__lat_bounds, ISV__LAT_BUCKETS, (double)(now - r->start_ns) / 1e9);
  uint64_t wall = wall_ms(r->core, now);
  if (wall != 0) atomic_store_explicit(&s->last_inference_ms, wall, memory_order_relaxed);
  if (r->job->run_ns)
    isv__hist_add(&s->queue, isv__lat_bounds, ISV__LAT_BUCKETS,
                  (double)(r->job->run_ns - r->start_ns) / 1e9);
  double rows = 1;
  if (r->model->cfg->max_batch > 0 && r->n_inputs > 0 && r->inputs[0].ndim > 0)
    rows = (double)r->inputs[0].shape[0];
  isv__hist_add(&s->batch, isv__batch_bounds, ISV__BATCH_BUCKETS, rows);
  const isv_request *x = r->job->exec;
  if (r->status == 0 && x && x->complete_ns >= x->job->infer_ns && x->job->infer_ns >= r->job->run_ns) {
    isv__count(&s->queue_ns, r->job->run_ns - r->start_ns);
    isv__count(&s->compute_input_ns, x->job->infer_ns - r->job->run_ns);
    isv__count(&s->compute_infer_ns, x->complete_ns - x->job->infer_ns);
    isv__count(&s->compute_output_ns, now > x->complete_ns ? now - x->complete_ns : 0);
    if (s->windows) { /* Triton's summaries: the same times, each kept a while */
      uint64_t ms = now / 1000000;
      isv__window_add(&s->windows[ISV__SUM_REQUEST], (now - r->start_ns) / 1000, ms);
      isv__window_add(&s->windows[ISV__SUM_QUEUE], (r->job->run_ns - r->start_ns) / 1000, ms);
      isv__window_add(&s->windows[ISV__SUM_INPUT], (x->job->infer_ns - r->job->run_ns) / 1000, ms);
      isv__window_add(&s->windows[ISV__SUM_INFER], (x->complete_ns - x->job->infer_ns) / 1000, ms);
      isv__window_add(&s->windows[ISV__SUM_OUTPUT],
                      (now > x->complete_ns ? now - x->complete_ns : 0) / 1000, ms);
    }
  }
  /* not the library's own models' requests, nor a warmup's: no client sent them */
  if (r->core->opts.trace && r->core->traceset && r->model->cfg->name[0] != '@' && !r->warmup)
    trace(r, now);
}

/* ---- the response cache (core/rcache.h) ------------------------------------------------ */

/* Whether r's answer may come from, and go to, the cache: the model enables it, the group has
 * one, and r is an ordinary request (not a warmup sample's, not on a streaming endpoint, not
 * cancelled). Decoupled and sequence models never enable it (isv__registry_check). */
static isv__rcache *cache_of(const isv_request *r) {
  if (!r->model->cfg->response_cache || r->warmup || r->stream ||
      atomic_load_explicit(&((isv_request *)r)->cancelled, memory_order_relaxed))
    return NULL;
  return isv__group_rcache(r->core);
}

/* Admission: a hit is answered now, without the queue (1); a miss is marked to be stored. */
static int cache_lookup(isv_request *r) {
  isv__rcache *rc = cache_of(r);
  if (rc == NULL) return 0;
  isv__stats *s = &r->model->stats;
  isv__job *j = r->job;
  uint64_t ns;
  isv__rcache_key(rc, r, isv__model_serial(r->model), &j->cache_key);
  if (isv__rcache_answer(rc, &j->cache_key, r, &ns)) {
    isv__count(&s->cache_hit, 1);
    isv__count(&s->cache_hit_ns, ns);
    return 1;
  }
  isv__count(&s->cache_miss, 1);
  isv__count(&s->cache_miss_ns, ns);
  j->cache_store = 1;
  return 0;
}

/* A miss's answer, kept when it is a good one: succeeded, not cancelled, within its deadline,
 * not left to a backend the close abandoned. */
static void cache_store(isv_request *r) {
  isv__rcache *rc = cache_of(r);
  r->job->cache_store = 0;
  if (rc == NULL || r->status != 0 || r->job->timed_out || r->abandoned) return;
  uint64_t ns;
  if (isv__rcache_store(rc, &r->job->cache_key, r, &ns) == 0)
    isv__count(&r->model->stats.cache_miss_ns, ns);
}

static void finish_request(isv_request *r) {
  isv__core *c = r->core;
  ISV_ASSERT(!r->finished, "a request's done callback runs once");
  isv__job *j = r->job; /* NULL: no memory for it at submission (r failed) */
  if (r->stream) isv__responses_deliver(r);
  if (r->counted) isv__timeheap_remove(&c->timers, &j->deadline);
  if (j && isv__timed_armed(&j->qtimeout)) isv__timeheap_remove(&c->timers, &j->qtimeout);
  if (j && j->timed_out)
    isv__request_fail(r, ISV_EDEADLINE, "request to model '%s' passed its deadline while it %s",
                      r->model->cfg->name, j->run_ns ? "ran" : "waited");
  if (j && j->cache_store) cache_store(r);
  if (r->status == 0 && isv__request_postprocess(r, 0) != 0 && r->errmsg[0] == '\0')
    r->errmsg = isv_strerror(r->status);
  if (r->status != 0 && !r->abandoned) r->n_outputs = 0; /* no partial outputs (an abandoned
                                                           * one's are its backend's still) */
  if (j && j->seq && !r->abandoned) seq_request_done(r);
  if (r->backend_fault)
    isv__core_log(c, ISV_LOG_WARN, "model '%s' version '%s': %s", r->model->cfg->name,
                  r->model->version, r->errmsg);
  if (r->counted) {
    record(r);
    c->inflight--;
    isv__core_hold_loop(c);
  }
  r->finished = 1;
  r->done(r, r->status, r->done_data); /* may free r */
  if (c->closing && isv__core_idle(c) && c->on_idle) c->on_idle(c);
}

/* An execution submitted to the worker pool is back on the loop (completed or abandoned):
 * one fewer to wait for, and its duration in the moving average wait_for_completion reads. */
static void pool_exec_back(isv_request *x) {
  isv__core *c = x->core;
  isv__job *j = x->job;
  j->on_pool = 0;
  c->pool_execs--;
  uint64_t ns = x->complete_ns > j->infer_ns && j->infer_ns ? x->complete_ns - j->infer_ns : 0;
  c->pool_exec_ns = c->pool_exec_ns - c->pool_exec_ns / 8 + ns / 8; /* 1/8: a few executions */
}

/* An execution's backend completed (loop thread): its slot is free, its requests get their
 * results, and the model may start the next. */
static void exec_done(isv_request *x) {
  if (x->abandoned) { /* released by its backend and its owner, handed to the loop */
    isv__abandoned_release(x);
    return;
  }
  isv_model *m = x->model;
  isv__sched *s = m->sched;
  isv__job *j = x->job;
  isv__model_ref(m); /* the requests' done callbacks may drop the last other reference */
  running_unlink(x->core, j);
  if (j->on_pool) pool_exec_back(x);
  ISV_ASSERT(s->inst_busy[j->instance] && s->busy > 0, "an execution ends on a busy instance");
  s->inst_busy[j->instance] = 0;
  s->busy--;
  uint64_t rows = j->batch || m->cfg->max_batch ? isv__batch_rows(x) : 1;
  isv__count(&m->stats.exec_count, 1);
  isv__count(&m->stats.inference_count, rows);
  if (rows <= (m->cfg->max_batch ? m->cfg->max_batch : 1))
    isv__count(&m->stats.batch_execs[rows], 1);
  if (j->batch) {
    isv__batch *b = j->batch;
    ISV_ASSERT(b->refs == 1, "a batch that ran holds only the scheduler's reference");
    isv__batch_split(b);
    for (size_t i = 0; i < b->n_members; i++) finish_request(b->members[i]);
    isv__batch_release(b); /* the scheduler's reference; members keep theirs */
  } else {
    finish_request(x);
  }
  schedule(m);
  isv__model_unref(m);
}

static inline void cpu_relax(void) {
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
  __builtin_ia32_pause();
#elif defined(__GNUC__) && defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

/* After the completions of a loop turn: 1 when the next one came within a short spin, to be
 * taken in the same turn. Going back to the loop to be woken by the worker's uv_async_send
 * costs a sleep and a wake-up of the loop thread — 15-150 µs on a 2-vCPU VM, where the
 * execution itself took 1 µs (bench/inproc.c). So the loop waits about as long as such a
 * wake-up cost lately (isv__spin_next, core/spin.h), but only when it pays: executions are
 * out on the worker pool, no more than it has threads (with more, the threads stay busy and
 * completions keep coming without a wait, and a spinning loop would take a core they need),
 * such executions took less than that lately, the process may run on two CPUs (on one, the
 * worker needs the CPU the loop would spin on), and the server is not closing — and never
 * past ISV__LOOP_SPIN_TURN_NS from the turn's start (the host's other handles wait
 * meanwhile). */
static int wait_for_completion(isv__core *c, uint64_t turn_start) {
  if (c->closing || c->pool_execs == 0 || c->pool_execs > c->pool.max_threads ||
      c->pool_exec_ns >= isv__spin_budget(c->loop_wake_ns) ||
      c->pool.spin_ns == 0 /* one CPU: pool.h */)
    return 0;
  uint64_t now = uv_hrtime();
  if (now - turn_start >= ISV__LOOP_SPIN_TURN_NS) return 0;
  uint64_t end = now + isv__spin_next(c->loop_wake_ns, c->loop_misses);
  if (end > turn_start + ISV__LOOP_SPIN_TURN_NS) end = turn_start + ISV__LOOP_SPIN_TURN_NS;
  for (unsigned i = 1;; i++) {
    if (atomic_load_explicit(&c->done_posted, memory_order_relaxed) != c->done_seen) {
      c->loop_misses = 0;
      return 1;
    }
    if (i % 16 == 0 && uv_hrtime() >= end) {
      c->loop_misses = isv__spin_count(c->loop_misses, 0);
      return 0;
    }
    cpu_relax();
  }
}

/* Completions that came from other threads, and responses sent from them. */
void isv__core_drain_completions(uv_async_t *h) {
  isv__core *c = h->data;
  uint64_t turn_start = 0;
  isv__group_sync(c); /* a group's change woke this member (cheap when nothing changed) */
  isv__offload_drain(c);
  for (;;) {
    uv_mutex_lock(&c->mu);
    isv_request *r = c->resp_head;
    uv_mutex_unlock(&c->mu);
    if (r == NULL) break;
    isv__responses_deliver(r); /* unlinks r */
  }
  do {
    uv_mutex_lock(&c->mu);
    isv_request *q = c->done_head;
    uint64_t first_ns = c->done_first_ns;
    c->done_head = c->done_tail = NULL;
    c->done_first_ns = 0;
    c->done_seen = atomic_load_explicit(&c->done_posted, memory_order_relaxed);
    uv_mutex_unlock(&c->mu);
    if (turn_start == 0) { /* the turn's first batch: the loop was woken for it */
      turn_start = uv_hrtime();
      if (q != NULL && first_ns != 0 && turn_start > first_ns) /* what the wake-up cost */
        c->loop_wake_ns = isv__spin_learn(c->loop_wake_ns, turn_start - first_ns);
    }
    while (q) {
      isv_request *next = q->qnext;
      exec_done(q);
      q = next;
    }
  } while (wait_for_completion(c, turn_start));
}

/* Under core->mu: the backend is done with x, an execution the close abandoned. 1 when its
 * owner let go of it already: the caller frees it (isv__abandoned_release, after unlocking). */
static int abandoned_backend_done(isv_request *x) {
  x->backend_done = 1;
  return x->free_pending && x->children == 0;
}

/* Under core->mu, which it releases: the backend's infer returned rc for x, an execution the
 * close abandoned while it ran. A nonzero rc without completing completes it (its answer went
 * out already: only its memory waits). */
static void abandoned_infer_returned(isv_request *x, int rc) {
  isv__core *c = x->core;
  if (x->stuck) c->stuck--; /* its worker thread is back */
  x->stuck = 0;
  int release = (x->completed || rc != 0) && abandoned_backend_done(x);
  uv_mutex_unlock(&c->mu);
  if (release) isv__abandoned_release(x);
}

/* Under core->mu: x completed off the loop thread; the loop will finish it. */
static void post_done(isv__core *c, isv_request *x, uint64_t completed_ns) {
  x->qnext = NULL;
  if (c->done_tail) c->done_tail->qnext = x;
  else {
    c->done_head = x;
    c->done_first_ns = completed_ns;
  }
  c->done_tail = x;
  atomic_store_explicit(&c->done_posted,
                        atomic_load_explicit(&c->done_posted, memory_order_relaxed) + 1,
                        memory_order_relaxed); /* under mu: one writer at a time */
}

/* Whether r's completion (a success) may take the inline way: its inline backend completes it
 * on the loop thread while infer runs. The model is read first: an inline execution's flags
 * are only ever written by the loop thread, so that this thread may read them alone. */
static int completes_inline(const isv_request *r, int status) {
  return status == 0 && r->is_exec && r->model != NULL &&
         r->model->cfg->exec_mode == ISV_EXEC_INLINE && isv__on_loop_thread(r->core) &&
         r->in_infer && !r->abandoned;
}

ISV_EXTERN int isv_request_complete(isv_request *r, int status, const char *message) {
  if (r == NULL) return ISV_EINVAL;
  isv__core *c = r->core;
  uint64_t now = uv_hrtime();
  int zero = 0;
  if (!isv__request_dead(r) && completes_inline(r, status)) {
    if (!atomic_compare_exchange_strong(&r->completed, &zero, 1)) return ISV_ESTATE;
    r->complete_ns = now;
    r->done_inline = 1; /* after_infer finishes it */
    return 0;
  }
  uv_mutex_lock(&c->mu);
  /* dead: completed, answered and freed (request.c's quarantine) — a second completion */
  if (isv__request_dead(r) || !r->submitted || !r->is_exec ||
      !atomic_compare_exchange_strong(&r->completed, &zero, 1)) {
    uv_mutex_unlock(&c->mu);
    return ISV_ESTATE;
  }
  if (status != 0 && !r->abandoned) isv__request_backend_failed(r, status, message);
  r->complete_ns = now;
  if (r->in_infer) { /* the caller of infer finishes it */
    uv_mutex_unlock(&c->mu);
    return 0;
  }
  if (r->abandoned) { /* answered already: only its memory waits for this */
    int release = abandoned_backend_done(r);
    uv_mutex_unlock(&c->mu);
    if (release) isv__abandoned_release(r);
    return 0;
  }
  int on_loop = isv__on_loop_thread(c);
  if (!on_loop) post_done(c, r, now);
  uv_mutex_unlock(&c->mu);
  if (on_loop) exec_done(r);
  else uv_async_send(&c->async);
  return 0;
}

/* After infer returned on the loop thread: finish now if it completed, or fail it if it
 * returned an error. */
static void after_infer(isv_request *x, int rc) {
  isv__core *c = x->core;
  if (x->done_inline) { /* its backend completed it here, without the lock: finished so too */
    x->in_infer = 0;
    exec_done(x);
    return;
  }
  uv_mutex_lock(&c->mu);
  x->in_infer = 0;
  if (x->abandoned) {
    abandoned_infer_returned(x, rc);
    return;
  }
  int done = x->completed;
  if (!done && rc != 0) { /* an error returned instead of completing */
    isv__request_backend_failed(x, rc, rc > 0 ? "the backend returned a positive value without "
                                                "completing the request" : NULL);
    x->completed = done = 1;
    x->complete_ns = uv_hrtime();
  } else if (!done && x->model->cfg->exec_mode == ISV_EXEC_INLINE &&
             x->model->cfg->name[0] != '@' &&
             (x->nest == NULL || c->nest_ops->in_flight(x) == 0)) {
    /* ISV_EXEC_INLINE promises the completion before infer returns: nobody would ever answer
     * this request (a route's handler, '@', may answer later whatever its mode) — unless it
     * submitted a nested request, whose callback (on the loop) completes it (core/nested.h).
     * A completion that comes later anyway is refused (ISV_ESTATE). */
    isv__request_fail(x, ISV_EBACKEND, "model '%s' version '%s': its ISV_EXEC_INLINE backend "
                      "returned 0 without completing the request (inline backends complete "
                      "before they return; ISV_EXEC_ASYNC completes later)", x->model->cfg->name,
                      x->model->version);
    x->backend_fault = 1; /* the host's log hears of it too */
    x->completed = done = 1;
    x->complete_ns = uv_hrtime();
  }
  uv_mutex_unlock(&c->mu);
  if (done) exec_done(x);
}

/* A worker thread runs the backend; a completed execution goes back to the loop. */
static void pool_run(isv__pool_job *pj) {
  isv_request *x = OWNER(pj, isv__job, pool)->r;
  isv__core *c = x->core;
  x->job->infer_ns = uv_hrtime();
  int rc = x->model->backend.infer(x, x->model->user);
  uv_mutex_lock(&c->mu);
  x->in_infer = 0;
  if (x->abandoned) { /* the close gave up on it while it ran */
    abandoned_infer_returned(x, rc);
    return;
  }
  if (!x->completed && rc != 0) {
    isv__request_backend_failed(x, rc, rc > 0 ? "the backend returned a positive value without "
                                                "completing the request" : NULL);
    x->completed = 1;
    x->complete_ns = uv_hrtime();
  }
  int done = x->completed;
  if (done) post_done(c, x, x->complete_ns);
  uv_mutex_unlock(&c->mu);
  if (done) uv_async_send(&c->async); /* x may be gone once the loop has it */
}

/* ---- dispatch ---------------------------------------------------------------------------- */

static void start_exec(isv_model *m, isv_request *x, unsigned instance) {
  isv__sched *s = m->sched;
  isv__core *c = x->core;
  isv__job *j = x->job;
  ISV_ASSERT(!s->inst_busy[instance] && s->busy < m->cfg->instances,
             "an execution starts on a free instance");
  s->inst_busy[instance] = 1;
  s->busy++;
  running_link(c, j);
  j->exec = x;
  j->instance = instance;
  j->run_ns = uv_hrtime();
  x->is_exec = 1;
  x->in_infer = 1; /* before any other thread can see x */
  if (m->cfg->exec_mode == ISV_EXEC_POOL) {
    j->pool.run = pool_run;
    j->on_pool = 1;
    c->pool_execs++;
    /* a nested request a thread waits for runs on that thread (core/nested.h) */
    if (x->nest && c->nest_ops->run_here(x, &j->pool)) return;
    if (isv__pool_submit(&c->pool, &j->pool) != 0) {
      j->on_pool = 0;
      c->pool_execs--;
      x->in_infer = 0;
      x->completed = 1;
      x->complete_ns = j->run_ns;
      isv__request_fail(x, ISV_EINTERNAL, "no worker thread could be started for model '%s'",
                        m->cfg->name);
      exec_done(x);
    }
    return;
  }
  x->job->infer_ns = x->job->run_ns;
  int rc = m->backend.infer(x, m->user);
  after_infer(x, rc);
}

static unsigned free_instance(const isv__sched *s, unsigned n) {
  unsigned i = 0;
  while (i < n && s->inst_busy[i]) i++;
  return i;
}

/* Dynamic batching: start one execution from the head of the queue, or wait for more.
 * 1 when an execution started, 0 when the batch waits (the wake-up is armed). */
static int dispatch_batch(isv_model *m, unsigned instance) {
  const isv_model_config *c = m->cfg;
  isv__sched *s = m->sched;
  isv__core *core = s->core;
  isv_request *picked[64], **members = picked;
  size_t cap = c->max_batch < 64 ? 64 : c->max_batch;
  if (cap > 64 && (members = isv__malloc(core->mem, cap * sizeof *members)) == NULL) {
    members = picked; /* out of memory: batches of at most 64 requests */
    cap = 64;
  }
  uint64_t rows;
  size_t n = isv__batch_pick(q_first(s)->r, q_next, c->max_batch, members, cap, &rows);
  isv_request *head = members[0];
  int full = rows >= c->max_batch || isv__batch_preferred(c, rows);
  uint64_t due = head->start_ns + c->batch_delay_us * US;
  int started = 1;
  if (!full && c->batch_delay_us && uv_hrtime() < due &&
      set_timed(core, &s->wake, T_WAKE, due) == 0) {
    started = 0; /* short and early: wait for more */
    goto out;
  }
  if (!full && c->n_preferred) { /* the longest start of the batch that is a preferred size */
    uint64_t acc = 0;
    size_t best = 0;
    for (size_t i = 0; i < n; i++) {
      acc += isv__batch_rows(members[i]);
      if (isv__batch_preferred(c, acc)) best = i + 1;
    }
    if (best) n = best;
  }
  for (size_t i = 0; i < n; i++) q_remove(members[i]);
  if (n == 1) { /* alone: it runs as it is, no copy */
    start_exec(m, head, instance);
    goto out;
  }
  for (size_t i = 0; i < n; i++) members[i]->job->run_ns = uv_hrtime(); /* input work starts */
  isv_request *b = isv__request_new(core);
  isv__batch *batch = b && job_make(b) == 0 ? isv__batch_build(b, members, n) : NULL;
  if (batch == NULL) {
    if (b) isv_request_free(b);
    for (size_t i = 0; i < n; i++) {
      isv__request_fail(members[i], ISV_ENOMEM, "out of memory while batching");
      finish_request(members[i]);
    }
    goto out;
  }
  b->model = m;
  isv__model_ref(m);
  b->submitted = 1;
  b->finished = 1; /* freed by its last reference (the batch's), never called back */
  b->job->batch = batch;
  for (size_t i = 0; i < n; i++) members[i]->job->exec = b;
  start_exec(m, b, instance);
out:
  if (members != picked) isv__free(members);
  return started;
}

/* Start what can start. */
static void schedule_once(isv_model *m) {
  const isv_model_config *c = m->cfg;
  isv__sched *s = m->sched;
  if (s->core && s->core->cut) return; /* the drain deadline passed: nothing new runs */
  if (c->sequences) { /* each instance runs its own sequences' queue */
    for (unsigned i = 0; i < c->instances; i++)
      if (!s->inst_busy[i] && s->queues[i].n) {
        isv_request *r = s->queues[i].head->r;
        q_remove(r);
        start_exec(m, r, i);
      }
    return;
  }
  while (s->busy < c->instances && m->stats.queued > 0) {
    unsigned i = free_instance(s, c->instances);
    if (c->batching) {
      if (!dispatch_batch(m, i)) return;
      continue;
    }
    isv_request *r = q_first(s)->r;
    q_remove(r);
    start_exec(m, r, i);
  }
}

static void schedule(isv_model *m) {
  isv__sched *s = m->sched;
  if (s->scheduling) { /* a completion inside a dispatch: the outer loop goes round again */
    s->again = 1;
    return;
  }
  s->scheduling = 1;
  isv__model_ref(m);
  do {
    s->again = 0;
    schedule_once(m);
  } while (s->again);
  s->scheduling = 0;
  isv__model_unref(m);
}

/* ---- admission --------------------------------------------------------------------------- */

/* The parameters the core reads itself: "timeout" (µs) and the sequence's. 0, or r failed. */
static int core_params(isv_request *r, uint64_t *timeout_us, uint64_t *seq_id, const char **seq_s,
                       size_t *seq_len, unsigned *flags) {
  if (r->n_params == 0) return 0; /* most requests: four lookups of nothing saved */
  const isv_param *p = isv_request_param(r, "timeout");
  if (p) {
    if (p->type == ISV_PARAM_INT64 && p->v.i64 >= 0) *timeout_us = (uint64_t)p->v.i64;
    else if (p->type == ISV_PARAM_UINT64) *timeout_us = p->v.u64;
    else
      return isv__request_fail(r, ISV_EBADREQ, "parameter 'timeout' must be a non-negative "
                               "integer (microseconds)");
  }
  if ((p = isv_request_param(r, "sequence_id")) != NULL) {
    if (p->type == ISV_PARAM_INT64 && p->v.i64 >= 0) *seq_id = (uint64_t)p->v.i64;
    else if (p->type == ISV_PARAM_UINT64) *seq_id = p->v.u64;
    else if (p->type == ISV_PARAM_STRING && p->v.s.len) {
      *seq_s = p->v.s.ptr;
      *seq_len = p->v.s.len;
    } else if (p->type != ISV_PARAM_STRING) {
      return isv__request_fail(r, ISV_EBADREQ, "parameter 'sequence_id' must be an unsigned "
                               "integer or a string");
    }
  }
  static const char *const names[2] = {"sequence_start", "sequence_end"};
  for (unsigned i = 0; i < 2; i++) {
    if ((p = isv_request_param(r, names[i])) == NULL) continue;
    if (p->type != ISV_PARAM_BOOL)
      return isv__request_fail(r, ISV_EBADREQ, "parameter '%s' must be true or false", names[i]);
    if (p->v.b) *flags |= 1u << i;
  }
  return 0;
}

static uint64_t earliest(uint64_t a, uint64_t b) { return a == 0 ? b : b == 0 || a < b ? a : b; }

/* A refusal for a full queue: the seconds until a place may have freed — `ahead` requests go
 * first, `instances` at a time, each round taking the model's mean compute time per request
 * so far (a batch's time counts once per member: an upper bound for batches). 0 (nothing to
 * say) before any request of the model ran. At least 1, at most an hour. */
static uint32_t retry_after_s(const isv_model *m, size_t ahead) {
  uint64_t ok = 0;
  for (unsigned p = 0; p < ISV__MAX_PROTOCOLS; p++) ok += isv__counter_get(&m->stats.success[p]);
  if (ok == 0) return 0;
  uint64_t mean = isv__counter_get(&m->stats.compute_infer_ns) / ok;
  uint64_t rounds = ahead / m->cfg->instances + 1;
  uint64_t s = mean > UINT64_MAX / rounds ? UINT64_MAX : (mean * rounds + 999999999) / 1000000000;
  return s < 1 ? 1 : s > 3600 ? 3600 : (uint32_t)s;
}

/* Queue policies: the level r waits at (its queue: *q) and its queue timeout (*queue_us; 0:
 * none) from its "priority" and "timeout" (timeout_us) — or r failed: a level out of range,
 * a full level. */
static int policy_admit(isv_request *r, uint64_t timeout_us, unsigned *q, uint64_t *queue_us) {
  isv_model *m = r->model;
  const isv_model_config *cfg = m->cfg;
  isv__sched *s = m->sched;
  uint64_t level = cfg->default_priority; /* 0 with no levels: the one there is */
  const isv_param *p = cfg->priority_levels ? isv_request_param(r, "priority") : NULL;
  if (p) {
    uint64_t v;
    if (p->type == ISV_PARAM_INT64 && p->v.i64 >= 0) v = (uint64_t)p->v.i64;
    else if (p->type == ISV_PARAM_UINT64) v = p->v.u64;
    else
      return isv__request_fail(r, ISV_EBADREQ, "parameter 'priority' must be a non-negative "
                               "integer (0: the model's default level)");
    if (v > cfg->priority_levels)
      return isv__request_fail(r, ISV_EBADREQ, "priority %" PRIu64 " is out of range for model "
                               "'%s': its priority levels are 1 to %u (0 or none: the default, "
                               "%u)", v, cfg->name, (unsigned)cfg->priority_levels,
                               (unsigned)cfg->default_priority);
    if (v) level = v;
  }
  unsigned i = level ? (unsigned)level - 1 : 0;
  const isv_queue_policy *pol = s->pol[i];
  size_t waiting = s->queues[2 * i].n + s->queues[2 * i + 1].n;
  if (pol->max_queue_size && waiting >= pol->max_queue_size) {
    size_t ahead = 0; /* a place frees when the level's first request runs */
    for (unsigned k = 0; k < 2 * i; k++) ahead += s->queues[k].n;
    r->retry_after_s = retry_after_s(m, ahead);
    return isv__request_fail(r, ISV_EUNAVAIL, "Exceeds maximum queue size: model '%s' version "
                             "'%s' has %zu requests waiting at priority level %u, its "
                             "max_queue_size: retry later", cfg->name, m->version, waiting,
                             level ? (unsigned)level : 1);
  }
  uint64_t us = pol->default_timeout_us;
  if (pol->allow_timeout_override && timeout_us && (us == 0 || timeout_us < us)) us = timeout_us;
  *queue_us = us > MAX_TIMEOUT_US ? MAX_TIMEOUT_US : us;
  *q = 2 * i;
  return 0;
}

/* Admit a bound, valid request: limits, deadline, sequence, queue — or answer it from the
 * response cache (ISV__CACHE_HIT: finish it). 0, ISV__CACHE_HIT, or r failed. */
static int admit(isv__core *c, isv_request *r) {
  isv_model *m = r->model;
  const isv_model_config *cfg = m->cfg;
  isv__sched *s = m->sched;
  uint64_t timeout_us = 0, seq_id = 0;
  const char *seq_s = NULL;
  size_t seq_len = 0;
  unsigned flags = 0;
  if (core_params(r, &timeout_us, &seq_id, &seq_s, &seq_len, &flags) != 0) return r->status;
  if (cfg->decoupled && r->stream == NULL)
    return isv__request_fail(r, ISV_EBADREQ, "model '%s' is decoupled (it streams any number "
                             "of responses): this endpoint answers once, use a streaming one",
                             cfg->name);
  if (cache_lookup(r)) return ISV__CACHE_HIT; /* answered: it needs no queue */
  size_t queued = m->stats.queued;
  if (cfg->max_queue && queued >= cfg->max_queue) {
    r->retry_after_s = retry_after_s(m, 0);
    return isv__request_fail(r, ISV_EUNAVAIL, "model '%s' version '%s' has %zu requests waiting, "
                             "its queue limit: retry later", cfg->name, m->version, queued);
  }
  unsigned q = 0;
  uint64_t queue_us = 0;
  if (cfg->queue_policies) { /* "timeout" is the queue policy's, not a deadline */
    if (policy_admit(r, timeout_us, &q, &queue_us) != 0) return r->status;
    timeout_us = 0;
  }
  uint64_t us = earliest(earliest(timeout_us, r->timeout_us), cfg->default_timeout_us);
  if (us > MAX_TIMEOUT_US) us = MAX_TIMEOUT_US;
  if (us && set_timed(c, &r->job->deadline, T_DEADLINE, r->start_ns + us * US) != 0)
    return isv__request_fail(r, ISV_ENOMEM, "out of memory");
  if (queue_us && set_timed(c, &r->job->qtimeout, T_QUEUE, r->start_ns + queue_us * US) != 0)
    return isv__request_fail(r, ISV_ENOMEM, "out of memory");
  if (cfg->sequences) {
    if (seq_admit(r, seq_id, seq_s, seq_len, flags) != 0) return r->status;
    q = r->job->seq->instance;
  }
  q_push(&s->queues[q], r->job);
  if (q < s->low) s->low = q;
  if (m->stats.queued++ == 0) models_link(c, m);
  return 0;
}

int isv__request_bind(isv_request *r) {
  if (r->model) return 0;
  if (r->repo_op) return isv__repo_bind(r); /* the repository's own model (repository.c) */
  if (r->model_name == NULL || r->model_name[0] == '\0') {
    if (r->status == 0) isv__request_fail(r, ISV_EBADREQ, "the request names no model");
    return r->status;
  }
  isv__model_spec ref = {r->model_name, strlen(r->model_name), r->version,
                        r->version ? strlen(r->version) : 0, r->label, r->label ? strlen(r->label) : 0};
  isv_model *m;
  isv__why why = isv__core_resolve(r->core, &ref, &m);
  if (why != ISV__FOUND) return isv__core_fail_why(r, why, &ref); /* replaces a decode error */
  isv__model_ref(m);
  r->model = m;
  return 0;
}

void isv__core_submit(isv__core *c, isv_request *r, isv_infer_cb done, void *data) {
  isv__group_sync(c); /* a group's changes first (a gRPC stream's later messages, in process) */
  r->core = c;
  r->done = done;
  r->done_data = data;
  r->submitted = 1;
  r->start_ns = uv_hrtime();
  if (job_make(r) != 0) { /* the scheduler's record of it, in its arena */
    isv__request_fail(r, ISV_ENOMEM, "out of memory");
    finish_request(r);
    return;
  }
  /* The one order of errors for every protocol: an unknown model or version (404), then the
   * edge's model stage (401, 403: nothing else is said about a model the caller may not use,
   * not even what is wrong with the body it sent), then the front end's decode error (400...),
   * then a model that is not ready (503), then validation, then admission (limits, parameters
   * the core reads, sequences). */
  if (isv__request_bind(r) != 0) {
    finish_request(r);
    return;
  }
  /* The edge's model stage: the model the request resolved to is the one judged and the one
   * that runs (a repository operation: the model it names). The server's own hidden models
   * ('@' names: custom routes) were judged by their route at the caller stage. A refused
   * request is not counted in the model's statistics. */
  isv_model *m = r->model;
  if (r->caller && c->authorize && (r->repo_op || m->cfg->name[0] != '@')) {
    const char *name = r->repo_op ? r->repo_op->name : m->cfg->name;
    int rc = c->authorize(c->authorize_ctx, r, name ? name : "", r->repo_op ? NULL : m->version);
    if (rc == ISV__AUTHZ_LATER) { /* in flight meanwhile: the close waits for the decision */
      r->job->authz_pending = 1;
      c->inflight++;
      isv__core_hold_loop(c);
      return;
    }
    if (rc != 0) {
      finish_request(r);
      return;
    }
  }
  run_admitted(r);
}

void isv__core_authorized(isv_request *r) {
  if (r->job == NULL || !r->job->authz_pending) { /* applied once: twice would run it twice */
    ISV_ASSERT(0, "a model-stage decision for a request that waits for none");
    return;
  }
  r->job->authz_pending = 0;
  isv__core *c = r->core;
  c->inflight--; /* counted again below when it goes on */
  isv__core_hold_loop(c);
  if (r->status == 0 && atomic_load_explicit(&r->cancelled, memory_order_relaxed))
    isv__request_fail(r, ISV_ECANCELED, "request cancelled before it ran");
  run_admitted(r);
}

/* Past the edge: the decode error, readiness, validation, the server's limits, the model's
 * queue. */
static void run_admitted(isv_request *r) {
  isv__core *c = r->core;
  isv_model *m = r->model;
  if (r->status == 0 && m->sched == NULL && sched_make(m) != 0) /* its first request */
    isv__request_fail(r, ISV_ENOMEM, "out of memory");
  if (r->status != 0) {
    finish_request(r);
    return;
  }
  /* While requests are in flight, the async handle keeps the loop alive for their completions. */
  c->inflight++;
  isv__core_hold_loop(c);
  r->counted = 1;
  atomic_store_explicit(&m->stats.inflight,
                        atomic_load_explicit(&m->stats.inflight, memory_order_relaxed) + 1,
                        memory_order_relaxed);
  if (m->removed ||
      (m->state != ISV_MODEL_READY && !(r->warmup && m->state == ISV_MODEL_LOADING))) {
    isv__model_spec spec = isv__model_spec_of(m);
    isv__core_fail_why(r, ISV__NOT_READY, &spec); /* KServe's words, for every protocol */
    finish_request(r);
    return;
  }
  if (isv__request_validate(r) != 0) {
    finish_request(r);
    return;
  }
  if (c->opts.max_inflight && c->inflight > c->opts.max_inflight) {
    isv__request_fail(r, ISV_EUNAVAIL, "the server has %zu requests in flight, its limit: retry "
                      "later", c->inflight - 1);
    finish_request(r);
    return;
  }
  if (admit(c, r) != 0) { /* a refusal, or a cache hit's answer */
    finish_request(r);
    return;
  }
  schedule(m);
}

/* ---- cancellation, deadlines, drain ------------------------------------------------------ */

/* x, an execution, was cancelled: so are the nested requests its backend made
 * (core/nested.h), when it made some. */
static void nested_cancel(isv_request *x) {
  uv_mutex_lock(&x->core->mu); /* the backend may be setting it on its thread */
  int nested = x->nest != NULL;
  uv_mutex_unlock(&x->core->mu);
  if (nested) x->core->nest_ops->cancel(x);
}

/* A running member of a batch was cancelled: the batch is, once every member is. */
static void batch_cancelled(isv_request *x) {
  const isv__batch *b = x->job->batch;
  for (size_t i = 0; i < b->n_members; i++)
    if (!atomic_load_explicit(&b->members[i]->cancelled, memory_order_relaxed)) return;
  atomic_store_explicit(&x->cancelled, 1, memory_order_relaxed);
  nested_cancel(x); /* what its backend asked of other models, too */
}

/* r leaves its queue and finishes with (status, msg) without running. */
static void unqueue_fail(isv_request *r, int status, const char *msg) {
  isv_model *m = r->model;
  isv__model_ref(m);
  q_remove(r);
  isv__request_fail(r, status, "%s", msg);
  finish_request(r);
  schedule(m); /* a batch waiting on it may now be complete */
  isv__model_unref(m);
}

void isv__core_cancel(isv_request *r) {
  if (r == NULL || !r->submitted || r->finished || r->parent || r->job == NULL) return;
  atomic_store_explicit(&r->cancelled, 1, memory_order_relaxed);
  if (r->job->queue) { /* r may be gone once this returns */
    unqueue_fail(r, ISV_ECANCELED, "request cancelled before it ran");
    return;
  }
  isv_request *x = r->job->exec;
  if (x && x != r) batch_cancelled(x);
  else if (r->stream) isv__responses_cancelled(r); /* a backend waiting for room hears it */
  if (x == r) nested_cancel(r); /* what its backend asked of other models (last: an
                                      * ensemble may finish r there) */
}

int isv__core_queued(const isv_request *r) { return r->job && r->job->queue; }

ISV_EXTERN int isv_request_cancel(isv_request *r) {
  if (r == NULL) return ISV_EINVAL;
  if (!r->submitted || r->finished || r->parent) return ISV_ESTATE;
  isv__core_cancel(r);
  return 0;
}

static void deadline_passed(isv_request *r) {
  r->job->timed_out = 1;
  if (r->job->queue) {
    char msg[300];
    snprintf(msg, sizeof msg, "request to model '%s' passed its deadline while it waited",
             r->model->cfg->name);
    r->job->timed_out = 0; /* the message says it all */
    unqueue_fail(r, ISV_EDEADLINE, msg);
    return;
  }
  atomic_store_explicit(&r->cancelled, 1, memory_order_relaxed);
  isv_request *x = r->job->exec;
  if (x && x != r) batch_cancelled(x);
  else if (r->stream) isv__responses_cancelled(r);
  if (x == r) nested_cancel(r); /* its nested requests too (last: r may finish there) */
}

/* A waiting request's queue timeout passed: its level's policy rejects it (Triton's words) or
 * puts it behind the level's requests that have not timed out (DELAY). */
static void queue_timeout_passed(isv_request *r) {
  isv__job *j = r->job;
  isv_model *m = r->model;
  isv__sched *s = m->sched;
  ISV_ASSERT(j->queue != NULL, "a queue timeout is armed only while its request waits");
  if (j->queue == NULL) return;
  unsigned qi = (unsigned)(j->queue - s->queues);
  const isv_queue_policy *pol = s->pol[qi / 2];
  if (pol->timeout_action == ISV_TIMEOUT_DELAY) {
    q_move(s, j, qi | 1);
    schedule(m); /* a batch waiting for more may see its head change */
    return;
  }
  char msg[300];
  snprintf(msg, sizeof msg, "Request timeout expired: it waited in the queue of model '%s' "
           "version '%s' (priority level %u) for its whole queue timeout", m->cfg->name,
           m->version, qi / 2 + 1);
  unqueue_fail(r, ISV_EUNAVAIL, msg);
}

/* The drain deadline: queued requests are answered without running, running ones cancelled. */
static void drain_passed(isv__core *c) {
  c->cut = 1; /* schedule() starts nothing from now on */
  while (c->waiting) {
    isv__sched *s = c->waiting->sched;
    unsigned q = 0;
    while (s->queues[q].head == NULL) q++;
    unqueue_fail(s->queues[q].head->r, ISV_EUNAVAIL, "the server closed before the request ran");
  }
  for (isv__job *j = c->running; j; j = j->live_next) {
    atomic_store_explicit(&j->r->cancelled, 1, memory_order_relaxed);
    for (size_t i = 0; j->batch && i < j->batch->n_members; i++)
      atomic_store_explicit(&j->batch->members[i]->cancelled, 1, memory_order_relaxed);
  }
  if (c->running)
    set_timed(c, &c->abandon, T_ABANDON, uv_hrtime() + ISV__CANCEL_GRACE_MS * 1000000ull);
}

/* Why an abandoned request failed. A static text: its arena is its backend's still. */
static const char abandoned_msg[] =
    "the server closed while the model still ran the request: cancelled at the drain deadline, "
    "its backend did not complete it in time";

/* The drain deadline plus the grace passed and x still runs: its requests are answered now
 * (503) so that the close can finish; x itself stays, with its memory and its model version,
 * until its backend completes it (isv__abandoned_release). The backend may go on reading its
 * inputs and writing outputs; nobody reads them any more. */
static void abandon(isv__core *c, isv_request *x) {
  atomic_fetch_add(&c->refs, 1); /* the core's memory outlives its close for x */
  running_unlink(c, x->job);
  if (x->job->on_pool) { /* no longer waited for (and its time says nothing) */
    x->job->on_pool = 0;
    c->pool_execs--;
  }
  isv_model *m = x->model;
  isv__core_log(c, ISV_LOG_WARN,
                "model '%s' version '%s': the server closed while its backend still ran a "
                "request cancelled %u ms before; abandoned (freed when the backend completes it)",
                m->cfg->name, m->version, (unsigned)ISV__CANCEL_GRACE_MS);
  const isv__batch *b = x->job->batch;
  if (b) { /* a batch: its requests are distinct from it, the backend sees only x */
    for (size_t i = 0; i < b->n_members; i++) {
      isv_request *r = b->members[i];
      r->job->timed_out = 0;
      r->status = ISV_EUNAVAIL;
      r->errmsg = abandoned_msg;
      finish_request(r);
    }
    return;
  }
  x->job->timed_out = 0;
  x->status = ISV_EUNAVAIL;
  x->errmsg = abandoned_msg;
  finish_request(x); /* its sequence ends when the backend is done with it, not now */
}

static void abandon_running(isv__core *c) {
  isv__job *j = c->running;
  while (j) {
    isv__job *next = j->live_next;
    isv_request *x = j->r;
    uv_mutex_lock(&c->mu);
    int completed = x->completed; /* on its way to exec_done: not abandoned */
    if (!completed) {
      x->abandoned = 1;
      if (x->job->batch) x->free_pending = 1; /* a batch has no owner to let go of it */
      if (x->in_infer && x->model->cfg->exec_mode == ISV_EXEC_POOL) {
        x->stuck = 1; /* its worker thread may never come back: the close must not join it */
        c->stuck++;
      }
    }
    uv_mutex_unlock(&c->mu);
    if (!completed) abandon(c, x);
    j = next;
  }
}

/* An abandoned request's sequence: the loop's rules while it runs, after the close only the
 * count (the sequence table goes with the model version). */
static void abandoned_seq_done(isv_request *x, int closed) {
  if (!closed) {
    seq_request_done(x);
    return;
  }
  isv__seq *q = x->job->seq;
  x->job->seq = NULL;
  if (--q->pending == 0 && q->ended) seq_finalize(x->model, q);
}

void isv__abandoned_release(isv_request *x) {
  isv__core *c = x->core;
  uv_mutex_lock(&c->mu);
  int closed = c->closed;
  if (!closed && !isv__on_loop_thread(c)) {
    /* model versions are counted on the loop until the close: the loop frees x (exec_done).
     * Sent under mu: the close marks the core closed under mu before closing the handle. */
    post_done(c, x, 0); /* not a wake-up worth learning from */
    uv_async_send(&c->async);
    uv_mutex_unlock(&c->mu);
    return;
  }
  /* after the close: whoever completes an abandoned execution frees it, under mu (model
   * versions' counts are shared by them); on the loop before it, the loop alone */
  if (!closed) uv_mutex_unlock(&c->mu);
  if (x->job->seq) abandoned_seq_done(x, closed);
  isv__request_release(x);
  if (closed) uv_mutex_unlock(&c->mu);
  isv__core_unref(c);
}

void isv__core_begin_close(isv__core *c, uint64_t drain_ms) {
  c->closing = 1;
  isv__group_leave(c); /* a closing member follows the group's models no more */
  if (drain_ms) set_timed(c, &c->drain, T_DRAIN, uv_hrtime() + drain_ms * 1000000ull);
  isv__core_readiness_changed(c); /* closing: nothing is ready any more */
}

static void on_timer(uv_timer_t *t) {
  isv__core *c = t->data;
  isv__timed *e;
  while ((e = isv__timeheap_top(&c->timers)) != NULL && e->when <= uv_hrtime()) {
    isv__timeheap_remove(&c->timers, e);
    switch (e->kind) {
    case T_DEADLINE: deadline_passed(OWNER(e, isv__job, deadline)->r); break;
    case T_WAKE: schedule(OWNER(e, isv__sched, wake)->model); break;
    case T_SEQ_IDLE: {
      isv__seq *q = OWNER(e, isv__seq, idle);
      seq_end(q->model, q, ISV_SEQUENCE_END_IDLE);
      break;
    }
    case T_DRAIN: drain_passed(c); break;
    case T_ABANDON: abandon_running(c); break;
    case T_QUEUE: queue_timeout_passed(OWNER(e, isv__job, qtimeout)->r); break;
    }
  }
  arm_timer(c);
}

/* ---- a request's end -------------------------------------------------------------------- */

/* Under core->mu: nothing stops r's memory from going — no response borrows from it and, when
 * the close abandoned it, its backend is done with it. */
static int releasable(const isv_request *r) {
  return r->children == 0 && (!r->abandoned || r->backend_done);
}

static void release_request(isv_request *r) {
  if (r->abandoned) isv__abandoned_release(r);
  else isv__request_release(r);
}

static void free_one(isv_request *r);

ISV_EXTERN void isv_request_free(isv_request *r) {
  if (r == NULL) return;
  if (r->submitted && !r->finished) return; /* misuse: still running; leak, never crash */
  isv_request *then = NULL; /* a nested request's parent whose free waited for it */
  if (r->nest && r->core->nest_ops->free(r, &then)) return; /* its nested requests first */
  free_one(r);
  if (then) isv_request_free(then);
}

static void free_one(isv_request *r) {
  isv_request *parent = r->parent;
  if (parent == NULL && r->stream == NULL && !r->abandoned) { /* nothing borrows from it */
    isv__request_release(r);
    return;
  }
  if (parent == NULL) {
    /* responses of a decoupled model borrow its model, id and memory: the last one frees it;
     * a backend still running an abandoned request frees it when it completes it */
    uv_mutex_lock(&r->core->mu);
    r->free_pending = 1;
    int now = releasable(r);
    uv_mutex_unlock(&r->core->mu);
    if (now) release_request(r);
    return;
  }
  isv__request_release(r);
  uv_mutex_lock(&parent->core->mu);
  int last = --parent->children == 0 && parent->free_pending && releasable(parent);
  uv_mutex_unlock(&parent->core->mu);
  if (last) release_request(parent);
}
