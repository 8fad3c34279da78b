#include "core/pool.h"

#include <stdint.h>
#include <stdlib.h>
#ifndef _WIN32
#include <pthread.h>
#endif

#include "inferserve.h"

int isv__pool_init(isv__pool *p, unsigned max_threads, const isv_mem *mem) {
  p->head = p->tail = NULL;
  p->n_threads = p->idle = p->parked = p->spinning = p->n_queued = p->running = p->alive = 0;
  p->blocked = 0;
  atomic_init(&p->ready, 0);
  p->released = 0;
  p->gone = NULL;
  p->gone_data = NULL;
  p->max_threads = max_threads ? max_threads : 1;
  p->cap = p->max_threads + ISV__POOL_EXTRA_THREADS;
  p->stopping = 0;
  /* spinning pays only when the thread waited for can run meanwhile: two CPUs or more in the
   * process's affinity mask (uv_available_parallelism reads it) */
  p->spin_ns = uv_available_parallelism() >= 2 ? ISV__POOL_SPIN_NS : 0;
  p->misses = 0;
  p->wake_ns = 0;
  p->signaled_at = 0;
  p->threads = isv__calloc(mem, p->cap, sizeof *p->threads);
  if (p->threads == NULL) return ISV_ENOMEM;
  if (uv_mutex_init(&p->mu) != 0) goto fail;
  if (uv_cond_init(&p->wake) != 0) {
    uv_mutex_destroy(&p->mu);
    goto fail;
  }
  return 0;
fail:
  isv__free(p->threads);
  p->threads = NULL;
  return ISV_ENOMEM;
}

static inline void cpu_relax(void) {
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
  __builtin_ia32_pause();
#elif defined(__GNUC__) && defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

/* Watch the queue without the lock until a job is there (1) or budget_ns passed (0). */
static int spin_for_job(isv__pool *p, unsigned budget_ns) {
  uint64_t end = uv_hrtime() + budget_ns;
  for (unsigned i = 1;; i++) {
    if (atomic_load_explicit(&p->ready, memory_order_relaxed) != 0) return 1;
    if (i % 16 == 0 && uv_hrtime() >= end) return 0;
    cpu_relax();
  }
}

/* The pool this thread works for (isv__pool_current): a worker knows whose it is. */
static _Thread_local isv__pool *current_pool;

isv__pool *isv__pool_current(void) { return current_pool; }

/* Under p->mu, with a job queued: take it, run it unlocked, and count it. */
static void run_one(isv__pool *p) {
  isv__pool_job *j = p->head;
  p->head = j->next;
  if (p->head == NULL) p->tail = NULL;
  p->n_queued--;
  atomic_store_explicit(&p->ready, p->n_queued, memory_order_relaxed);
  p->running++;
  uv_mutex_unlock(&p->mu);
  j->run(j);
  uv_mutex_lock(&p->mu);
  p->running--;
}

static void worker(void *arg);

/* Under p->mu: start one more thread when the queue holds more jobs than idle threads take
 * and the pool may grow — max_threads, plus one per worker blocked (isv__pool_block). */
static void grow(isv__pool *p) {
  unsigned limit = p->max_threads + p->blocked;
  if (limit > p->cap) limit = p->cap;
  if (p->n_queued >= p->idle && p->n_threads < limit &&
      uv_thread_create(&p->threads[p->n_threads], worker, p) == 0)
    p->n_threads++;
}

void isv__pool_block(isv__pool *p) {
  uv_mutex_lock(&p->mu);
  p->blocked++;
  if (p->n_queued > 0 && !p->stopping) grow(p); /* jobs wait that this worker will not take */
  uv_mutex_unlock(&p->mu);
}

void isv__pool_unblock(isv__pool *p) {
  uv_mutex_lock(&p->mu);
  p->blocked--;
  uv_mutex_unlock(&p->mu);
}

static void worker(void *arg) {
  isv__pool *p = arg;
  current_pool = p;
  uv_mutex_lock(&p->mu);
  for (;;) {
    /* one spinner at a time: more would take the cores the loop and the jobs need */
    if (p->head == NULL && !p->stopping && p->spinning == 0 && p->spin_ns) {
      unsigned budget_ns = isv__spin_next(p->wake_ns, p->misses);
      p->idle++;
      p->spinning++; /* a submission needs no signal for this thread */
      uv_mutex_unlock(&p->mu);
      int caught = spin_for_job(p, budget_ns);
      uv_mutex_lock(&p->mu);
      p->misses = isv__spin_count(p->misses, caught);
      p->idle--;
      p->spinning--;
    }
    while (p->head == NULL && !p->stopping) {
      p->idle++;
      p->parked++;
      uv_cond_wait(&p->wake, &p->mu);
      p->idle--;
      p->parked--;
      if (p->signaled_at) { /* this wake-up's cost: how long the next spins may be worth */
        p->wake_ns = isv__spin_learn(p->wake_ns, uv_hrtime() - p->signaled_at);
        p->signaled_at = 0;
      }
    }
    if (p->head == NULL) break; /* stopping, and nothing left to run */
    run_one(p);
  }
  int last = p->released && --p->alive == 0;
  uv_mutex_unlock(&p->mu);
  if (last) p->gone(p->gone_data); /* p may be freed from here on */
}

int isv__pool_submit(isv__pool *p, isv__pool_job *job) {
  job->next = NULL;
  uv_mutex_lock(&p->mu);
  /* One idle thread per queued job: a new thread only when every idle one is already spoken
   * for (the queue is as long as the idle count). */
  grow(p);
  if (p->n_threads == 0) {
    uv_mutex_unlock(&p->mu);
    return ISV_ENOMEM;
  }
  if (p->tail) p->tail->next = job;
  else p->head = job;
  p->tail = job;
  p->n_queued++;
  atomic_store_explicit(&p->ready, p->n_queued, memory_order_relaxed);
  /* the spinning threads take as many jobs without a wake-up */
  if (p->parked && p->n_queued > p->spinning) {
    if (p->spin_ns && p->signaled_at == 0) p->signaled_at = uv_hrtime(); /* see worker() */
    uv_cond_signal(&p->wake);
  }
  uv_mutex_unlock(&p->mu);
  return 0;
}

void isv__pool_free(isv__pool *p) {
  if (p->threads == NULL) return;
  uv_cond_destroy(&p->wake);
  uv_mutex_destroy(&p->mu);
  isv__free(p->threads);
  p->threads = NULL;
  p->n_threads = 0;
}

void isv__pool_destroy(isv__pool *p) {
  if (p->threads == NULL) return;
  uv_mutex_lock(&p->mu);
  p->stopping = 1;
  uv_cond_broadcast(&p->wake);
  uv_mutex_unlock(&p->mu);
  for (unsigned i = 0; i < p->n_threads; i++) uv_thread_join(&p->threads[i]);
  isv__pool_free(p);
}

int isv__pool_stop(isv__pool *p, int may_hang, void (*gone)(void *data), void *data) {
  if (p->threads == NULL) return 0;
  uv_mutex_lock(&p->mu);
  int release = may_hang && p->running > 0 && p->n_threads > 0;
  if (release) {
    p->released = 1;
    p->alive = p->n_threads;
    p->gone = gone;
    p->gone_data = data;
#ifndef _WIN32
    for (unsigned i = 0; i < p->n_threads; i++) pthread_detach(p->threads[i]);
#endif
  }
  p->stopping = 1;
  uv_cond_broadcast(&p->wake);
  uv_mutex_unlock(&p->mu);
  if (release) return 1;
  for (unsigned i = 0; i < p->n_threads; i++) uv_thread_join(&p->threads[i]);
  isv__pool_free(p);
  return 0;
}
