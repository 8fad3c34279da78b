/* The server's own worker threads, where ISV_EXEC_POOL backends run.
 *
 * Why not libuv's pool (uv_queue_work): it is shared with the host's file system and DNS work
 * and sized once per process (UV_THREADPOOL_SIZE, default 4). Model calls last milliseconds to
 * seconds; four slow ones would stall every fs and getaddrinfo request of the host, and a host
 * could not give models more threads without giving them to everything. So the server keeps
 * its own threads, up to isv_options_set_worker_threads (default: the CPUs available), started
 * when work first needs them (isv_server_new starts none) and joined at close.
 *
 * Jobs are intrusive (the caller's struct embeds an isv__pool_job) and run in FIFO order.
 *
 * Spin, then park. A thread that finds the queue empty first watches it without the lock — for
 * as long as waking a parked thread has cost lately (core/spin.h: 10-50 µs) — then sleeps on
 * the condition variable. Waking a parked thread costs a futex
 * call on the submitting side and a scheduler wake-up (an inter-processor interrupt in a VM)
 * on the other — on a 2-vCPU KVM guest the kernel's switch and wake paths took most of the
 * 30-40 µs of CPU a 1 µs pool job cost at one in flight (bench/inproc.c) — when the loop feeds
 * jobs one by one, as completions come back; a thread still spinning takes the next job for
 * the price of the lock. One thread
 * spins at a time (more would take the cores the loop and the running jobs need), and the spin
 * is bounded so that an idle server uses no CPU: a thread spins once after each job it ran,
 * then parks until a submission signals it. */
#ifndef ISV_CORE_POOL_H
#define ISV_CORE_POOL_H

#include "core/layer.h"

#include <stdatomic.h>

#include <uv.h>

#include "codec/mem.h"
#include "core/spin.h"

typedef struct isv__pool_job isv__pool_job;
struct isv__pool_job {
  isv__pool_job *next;
  void (*run)(isv__pool_job *job); /* on a worker thread */
};

/* How long an idle thread watches the queue before it parks (see above) at first — when the
 * process may run on two CPUs or more; from then on as long as waking a parked thread has cost
 * lately (core/spin.h), within [ISV__SPIN_FLOOR_NS, ISV__SPIN_CAP_NS]. Confined to one CPU (its
 * affinity: taskset, a container's cpuset), nobody spins: the thread a spinner waits for needs
 * that very CPU, so the spin only delays it (XGBoost over REST at one connection, server pinned
 * to one core: 65.7 -> 56.4 us of CPU per request without it, bench/RESULTS.md). Whether to
 * spin is read once, when the pool is made. */
#define ISV__POOL_SPIN_NS ISV__SPIN_FLOOR_NS

typedef struct isv__pool {
  uv_mutex_t mu;
  uv_cond_t wake;
  isv__pool_job *head, *tail;
  uv_thread_t *threads;
  unsigned n_threads, max_threads;
  unsigned idle;     /* threads waiting for a job: spinning or parked */
  unsigned spinning; /* of them, watching `ready` (at most one): takes a job without a signal */
  unsigned parked;   /* of them, asleep on `wake` */
  unsigned n_queued; /* jobs not yet taken */
  unsigned spin_ns;  /* ISV__POOL_SPIN_NS, or 0 on one CPU (see above): set once */
  unsigned misses;     /* spins in a row that took no job (isv__spin_next) */
  uint64_t wake_ns;    /* what waking a parked thread cost lately (ns, core/spin.h) */
  uint64_t signaled_at; /* when a parked thread was signalled, until one wakes (0: none) */
  /* n_queued as the spinner watches it, without the lock. Next to n_queued on purpose: the
   * submitter writes that line anyway; on a line of its own (padded), 64 requests in flight
   * took 2.1 µs each instead of 1.1-1.4 (an extra line taken over inside the lock). */
  atomic_uint ready;
  unsigned running;  /* jobs being run */
  unsigned blocked;  /* workers waiting in isv__pool_block: not counted in max_threads */
  unsigned cap;      /* threads[] holds this many: max_threads + ISV__POOL_EXTRA_THREADS */
  int stopping;
  /* let go (isv__pool_stop with a job still running): the threads exit on their own */
  int released;
  unsigned alive; /* released threads not yet exited */
  void (*gone)(void *data);
  void *gone_data;
} isv__pool;

/* 0, or ISV_ENOMEM. max_threads >= 1. Starts no thread. */
int isv__pool_init(isv__pool *p, unsigned max_threads, const isv_mem *mem);
/* Queue a job; a thread is started when none is idle and fewer than max_threads run. 0, or
 * ISV_ENOMEM when no thread runs and none could be started (the job is not queued). Loop
 * thread (any thread, in fact: the queue is locked). */
int isv__pool_submit(isv__pool *p, isv__pool_job *job);
/* Let the threads finish the jobs queued, then join them. Loop thread. */
void isv__pool_destroy(isv__pool *p);
/* Stop the threads, nothing being queued. 0: the threads are joined (a job still running
 * finishes first) and the pool destroyed. 1, only when `may_hang` (a backend the server's close
 * abandoned may never return) and a job still runs: joining could hang, so the threads are
 * detached instead and exit as their jobs return; the last one calls gone(data) as its last
 * touch of the pool, after which isv__pool_free may run (on any thread). Loop thread. */
int isv__pool_stop(isv__pool *p, int may_hang, void (*gone)(void *data), void *data);
/* A released pool's memory, once gone was called. */
void isv__pool_free(isv__pool *p);
/* The pool whose worker thread calls this, or NULL on any other thread. */
isv__pool *isv__pool_current(void);
/* A worker of p is about to wait for work that may need a worker (a nested request it made,
 * core/nested.h): until isv__pool_unblock it does not count as one of p's max_threads, so a
 * thread is started when jobs wait and no thread is idle — compensation, as Java's
 * ForkJoinPool.managedBlock: workers all blocked in nested calls cannot starve the jobs they
 * wait for. The pool grows by at most one thread per blocked worker, and never past
 * max_threads + ISV__POOL_EXTRA_THREADS; threads started so stay until the pool stops. */
#define ISV__POOL_EXTRA_THREADS 256u
void isv__pool_block(isv__pool *p);
void isv__pool_unblock(isv__pool *p);

#endif
