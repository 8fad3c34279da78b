/* core/pool.c: no thread before the first job; threads started only as jobs need them, up to
 * the maximum; every job runs once, in FIFO order on a single thread; jobs queued behind busy
 * threads run when those free up; destroy runs what is queued, then joins; stop detaches the
 * threads instead only when a job may never return; several producers at once; idle threads
 * end up parked (the spin before parking is bounded) and learn what waking them cost, and
 * nobody spins when the process may run on one CPU only; a worker blocked in a nested call does
 * not count (isv__pool_block); the spin's budget (core/spin.h) as that rule says. */
#ifdef __linux__
#define _GNU_SOURCE /* sched_setaffinity */
#include <sched.h>
#endif
#include "cmocka_prelude.h"

#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/pool.h"

typedef struct tjob {
  isv__pool_job job;
  int id;
  uv_sem_t *gate;    /* wait on it before finishing, when set */
  uv_sem_t *started; /* posted when it starts, when set */
} tjob;

static atomic_int ran;
static int order[64];
static atomic_int order_n;
static uv_thread_t threads_seen[8];
static atomic_int n_threads_seen;
static uv_mutex_t seen_mu;

static void note_thread(void) {
  uv_thread_t self = uv_thread_self();
  uv_mutex_lock(&seen_mu);
  int n = atomic_load(&n_threads_seen);
  for (int i = 0; i < n; i++)
    if (uv_thread_equal(&threads_seen[i], &self)) {
      uv_mutex_unlock(&seen_mu);
      return;
    }
  if (n < 8) threads_seen[n] = self;
  atomic_store(&n_threads_seen, n + 1);
  uv_mutex_unlock(&seen_mu);
}

static void run(isv__pool_job *j) {
  tjob *t = (tjob *)j;
  note_thread();
  if (t->started) uv_sem_post(t->started);
  if (t->gate) uv_sem_wait(t->gate);
  order[atomic_fetch_add(&order_n, 1)] = t->id;
  atomic_fetch_add(&ran, 1);
}

/* The pool's counters, read under its lock (the workers change them). */
static unsigned threads_of(isv__pool *p) {
  uv_mutex_lock(&p->mu);
  unsigned n = p->n_threads;
  uv_mutex_unlock(&p->mu);
  return n;
}
static unsigned idle_of(isv__pool *p) {
  uv_mutex_lock(&p->mu);
  unsigned n = p->idle;
  uv_mutex_unlock(&p->mu);
  return n;
}

static int setup(void **state) {
  (void)state;
  atomic_store(&ran, 0);
  atomic_store(&order_n, 0);
  atomic_store(&n_threads_seen, 0);
  memset(order, 0, sizeof order);
  return uv_mutex_init(&seen_mu);
}

static int teardown(void **state) {
  (void)state;
  uv_mutex_destroy(&seen_mu);
  return 0;
}

static void one_thread_runs_jobs_in_order(void **state) {
  (void)state;
  isv__pool p;
  assert_int_equal(isv__pool_init(&p, 1, NULL), 0);
  assert_int_equal(p.n_threads, 0); /* none until needed (no thread yet to race with) */
  uv_sem_t gate;
  uv_sem_init(&gate, 0);
  tjob jobs[10];
  for (int i = 0; i < 10; i++) {
    jobs[i] = (tjob){{NULL, run}, i, i == 0 ? &gate : NULL, NULL};
    assert_int_equal(isv__pool_submit(&p, &jobs[i].job), 0);
  }
  assert_int_equal(threads_of(&p), 1); /* never more than the maximum */
  uv_sem_post(&gate);
  isv__pool_destroy(&p); /* runs what is queued, then joins */
  assert_int_equal(atomic_load(&ran), 10);
  for (int i = 0; i < 10; i++) assert_int_equal(order[i], i);
  assert_int_equal(atomic_load(&n_threads_seen), 1);
  uv_sem_destroy(&gate);
}

static void threads_start_only_as_jobs_need_them(void **state) {
  (void)state;
  isv__pool p;
  assert_int_equal(isv__pool_init(&p, 4, NULL), 0);
  uv_sem_t gate, started;
  uv_sem_init(&gate, 0);
  uv_sem_init(&started, 0);
  tjob a = {{NULL, run}, 1, NULL, &started};
  assert_int_equal(isv__pool_submit(&p, &a.job), 0);
  uv_sem_wait(&started);
  /* a is done, its thread idle again (or about to be): waiting lets it park */
  while (atomic_load(&ran) < 1) uv_sleep(1);
  for (int i = 0; i < 2000 && idle_of(&p) < 1; i++) uv_sleep(1);
  tjob b = {{NULL, run}, 2, NULL, NULL};
  assert_int_equal(isv__pool_submit(&p, &b.job), 0);
  assert_int_equal(threads_of(&p), 1); /* the idle thread took it */
  /* three jobs that block at once need three threads */
  tjob blocked[3];
  for (int i = 0; i < 3; i++) {
    blocked[i] = (tjob){{NULL, run}, 10 + i, &gate, &started};
    assert_int_equal(isv__pool_submit(&p, &blocked[i].job), 0);
  }
  for (int i = 0; i < 3; i++) uv_sem_wait(&started);
  assert_true(threads_of(&p) >= 3 && threads_of(&p) <= 4);
  /* at the maximum, more jobs wait for a thread */
  tjob more[3];
  for (int i = 0; i < 3; i++) {
    more[i] = (tjob){{NULL, run}, 20 + i, NULL, NULL};
    assert_int_equal(isv__pool_submit(&p, &more[i].job), 0);
  }
  assert_int_equal(threads_of(&p), 4);
  for (int i = 0; i < 3; i++) uv_sem_post(&gate);
  isv__pool_destroy(&p);
  assert_int_equal(atomic_load(&ran), 8);
  uv_sem_destroy(&gate);
  uv_sem_destroy(&started);
}

static void destroy_without_jobs_is_fine(void **state) {
  (void)state;
  isv__pool p;
  assert_int_equal(isv__pool_init(&p, 3, NULL), 0);
  isv__pool_destroy(&p);
  isv__pool_destroy(&p); /* twice: nothing */
  assert_int_equal(p.n_threads, 0);
}

/* isv__pool_stop: a job that may never return (a backend the close abandoned) gets its threads
 * detached, and the last one to exit says so; otherwise the threads are joined. */
static uv_sem_t gone_sem;
static void on_gone(void *data) {
  *(int *)data = 1;
  uv_sem_post(&gone_sem);
}

static void stop_detaches_only_when_a_job_may_hang(void **state) {
  (void)state;
  uv_sem_t gate, started;
  uv_sem_init(&gate, 0);
  uv_sem_init(&started, 0);
  uv_sem_init(&gone_sem, 0);
  /* may hang, and a job runs: detached, gone after it returns */
  isv__pool *p = malloc(sizeof *p);
  assert_int_equal(isv__pool_init(p, 2, NULL), 0);
  tjob stuck = {{NULL, run}, 1, &gate, &started};
  assert_int_equal(isv__pool_submit(p, &stuck.job), 0);
  uv_sem_wait(&started);
  int gone = 0;
  assert_int_equal(isv__pool_stop(p, 1, on_gone, &gone), 1); /* returns while the job runs */
  assert_int_equal(atomic_load(&ran), 0);
  uv_sem_post(&gate); /* the backend comes back, long after */
  uv_sem_wait(&gone_sem);
  assert_true(gone);
  assert_int_equal(atomic_load(&ran), 1);
  isv__pool_free(p);
  free(p);
  /* a job still running but not one that may hang: joined */
  isv__pool q;
  assert_int_equal(isv__pool_init(&q, 2, NULL), 0);
  tjob slow = {{NULL, run}, 2, &gate, &started};
  assert_int_equal(isv__pool_submit(&q, &slow.job), 0);
  uv_sem_wait(&started);
  uv_sem_post(&gate);
  gone = 0;
  assert_int_equal(isv__pool_stop(&q, 0, on_gone, &gone), 0);
  assert_int_equal(atomic_load(&ran), 2); /* finished before stop returned */
  assert_false(gone);
  uv_sem_destroy(&gate);
  uv_sem_destroy(&started);
  uv_sem_destroy(&gone_sem);
}

/* Several threads submit at once (a front end's offloads and the scheduler share the pool):
 * every job runs once, and with one worker thread each producer's jobs run in the order it
 * submitted them — whether the worker was spinning or parked when they came. */
#define PRODUCERS 4
#define PER_PRODUCER 2000

typedef struct pjob {
  isv__pool_job job;
  int producer, seq;
} pjob;

static pjob pjobs[PRODUCERS][PER_PRODUCER];
static int last_seq[PRODUCERS]; /* written by the one worker thread only */
static atomic_int out_of_order;
static isv__pool *shared_pool;
static atomic_int submit_failures;

static void run_pjob(isv__pool_job *j) {
  pjob *t = (pjob *)j;
  if (t->seq != last_seq[t->producer] + 1) atomic_fetch_add(&out_of_order, 1);
  last_seq[t->producer] = t->seq;
  atomic_fetch_add(&ran, 1);
}

static void producer(void *arg) {
  int id = (int)(intptr_t)arg;
  for (int i = 0; i < PER_PRODUCER; i++) {
    pjobs[id][i] = (pjob){{NULL, run_pjob}, id, i + 1};
    if (isv__pool_submit(shared_pool, &pjobs[id][i].job) != 0) /* cmocka asserts on main only */
      atomic_fetch_add(&submit_failures, 1);
    if (i % 500 == 0) uv_sleep(1); /* let the worker run dry, spin out and park now and then */
  }
}

static void run_producers(unsigned max_threads) {
  isv__pool p;
  assert_int_equal(isv__pool_init(&p, max_threads, NULL), 0);
  shared_pool = &p;
  atomic_store(&out_of_order, 0);
  atomic_store(&submit_failures, 0);
  memset(last_seq, 0, sizeof last_seq);
  uv_thread_t t[PRODUCERS];
  for (int i = 0; i < PRODUCERS; i++)
    assert_int_equal(uv_thread_create(&t[i], producer, (void *)(intptr_t)i), 0);
  for (int i = 0; i < PRODUCERS; i++) uv_thread_join(&t[i]);
  isv__pool_destroy(&p);
  assert_int_equal(atomic_load(&submit_failures), 0);
  assert_int_equal(atomic_load(&ran), PRODUCERS * PER_PRODUCER);
}

static void many_producers_one_worker_keep_each_order(void **state) {
  (void)state;
  run_producers(1);
  assert_int_equal(atomic_load(&out_of_order), 0);
  for (int i = 0; i < PRODUCERS; i++) assert_int_equal(last_seq[i], PER_PRODUCER);
}

static atomic_int concurrent_ran;
static void count_only(isv__pool_job *j) {
  (void)j;
  atomic_fetch_add(&concurrent_ran, 1);
}

static void many_producers_many_workers_run_every_job_once(void **state) {
  (void)state;
  isv__pool p;
  assert_int_equal(isv__pool_init(&p, 3, NULL), 0);
  enum { N = 3000 };
  static isv__pool_job js[N];
  atomic_store(&concurrent_ran, 0);
  for (int i = 0; i < N; i++) {
    js[i] = (isv__pool_job){NULL, count_only};
    assert_int_equal(isv__pool_submit(&p, &js[i]), 0);
    if (i % 700 == 0) uv_sleep(1);
  }
  isv__pool_destroy(&p);
  assert_int_equal(atomic_load(&concurrent_ran), N);
}

/* Spinning is bounded: with nothing to do, every thread ends up parked on the condition
 * variable (no CPU used), and a job submitted then still wakes one. */
static void idle_threads_park(void **state) {
  (void)state;
  isv__pool p;
  assert_int_equal(isv__pool_init(&p, 3, NULL), 0);
  uv_sem_t gate, started;
  uv_sem_init(&gate, 0);
  uv_sem_init(&started, 0);
  tjob blocked[3];
  for (int i = 0; i < 3; i++) {
    blocked[i] = (tjob){{NULL, run}, i, &gate, &started};
    assert_int_equal(isv__pool_submit(&p, &blocked[i].job), 0);
  }
  for (int i = 0; i < 3; i++) uv_sem_wait(&started);
  for (int i = 0; i < 3; i++) uv_sem_post(&gate);
  unsigned parked = 0;
  for (int i = 0; i < 5000 && parked < 3; i++) { /* the spin lasts µs; 5 s is far beyond */
    uv_mutex_lock(&p.mu);
    parked = p.parked;
    uv_mutex_unlock(&p.mu);
    if (parked < 3) uv_sleep(1);
  }
  assert_int_equal(parked, 3);
  assert_int_equal(idle_of(&p), 3);
  tjob late = {{NULL, run}, 9, NULL, &started};
  assert_int_equal(isv__pool_submit(&p, &late.job), 0);
  uv_sem_wait(&started); /* a parked thread was woken for it */
  assert_int_equal(threads_of(&p), 3);
  if (p.spin_ns) { /* and it learned what that wake-up cost (core/spin.h) */
    uv_mutex_lock(&p.mu);
    assert_true(p.wake_ns > 0);
    assert_int_equal(p.signaled_at, 0);
    uv_mutex_unlock(&p.mu);
  }
  isv__pool_destroy(&p);
  assert_int_equal(atomic_load(&ran), 4);
  uv_sem_destroy(&gate);
  uv_sem_destroy(&started);
}

/* Confined to one CPU (taskset, a cpuset), a pool never spins — its threads park at once, the
 * loop's wait for completions does not spin either (scheduler.c reads spin_ns) — and still runs
 * its jobs; with two CPUs or more it spins ISV__POOL_SPIN_NS. The affinity is this thread's, as
 * a host's loop thread would have it when it makes the server. */
static void on_one_cpu_nobody_spins(void **state) {
  (void)state;
#ifdef __linux__
  cpu_set_t all, one;
  assert_int_equal(sched_getaffinity(0, sizeof all, &all), 0);
  isv__pool p;
  if (CPU_COUNT(&all) >= 2) {
    assert_int_equal(isv__pool_init(&p, 2, NULL), 0);
    assert_int_equal(p.spin_ns, ISV__POOL_SPIN_NS);
    isv__pool_destroy(&p);
  }
  int first = 0;
  while (!CPU_ISSET(first, &all)) first++;
  CPU_ZERO(&one);
  CPU_SET(first, &one);
  assert_int_equal(sched_setaffinity(0, sizeof one, &one), 0);
  assert_int_equal(isv__pool_init(&p, 2, NULL), 0);
  assert_int_equal(p.spin_ns, 0);
  uv_sem_t started;
  uv_sem_init(&started, 0);
  tjob j = {{NULL, run}, 1, NULL, &started};
  assert_int_equal(isv__pool_submit(&p, &j.job), 0);
  uv_sem_wait(&started);
  unsigned parked = 0;
  for (int i = 0; i < 5000 && parked < 1; i++) { /* parks without a spin first */
    uv_mutex_lock(&p.mu);
    parked = p.parked;
    assert_int_equal(p.spinning, 0);
    uv_mutex_unlock(&p.mu);
    if (parked < 1) uv_sleep(1);
  }
  assert_int_equal(parked, 1);
  isv__pool_destroy(&p);
  assert_int_equal(atomic_load(&ran), 1);
  uv_sem_destroy(&started);
  assert_int_equal(sched_setaffinity(0, sizeof all, &all), 0);
#else
  skip();
#endif
}

/* A job that blocks waiting for a later job (a nested call's wait): with isv__pool_block the
 * pool of one thread starts a second for the job queued behind it; and knows its pool. */
typedef struct waiter_job {
  isv__pool_job job;
  isv__pool *pool;
  uv_sem_t *until;
  isv__pool *seen;
} waiter_job;

static void wait_blocked(isv__pool_job *j) {
  waiter_job *w = (waiter_job *)j;
  w->seen = isv__pool_current();
  isv__pool_block(w->pool);
  uv_sem_wait(w->until);
  isv__pool_unblock(w->pool);
  atomic_fetch_add(&ran, 1);
}

static void posts(isv__pool_job *j) {
  uv_sem_post(((tjob *)j)->gate);
  atomic_fetch_add(&ran, 1);
}

static void a_blocked_worker_does_not_count(void **state) {
  (void)state;
  isv__pool p;
  assert_int_equal(isv__pool_init(&p, 1, NULL), 0);
  assert_null(isv__pool_current()); /* not a worker */
  uv_sem_t until;
  uv_sem_init(&until, 0);
  waiter_job w = {{NULL, wait_blocked}, &p, &until, NULL};
  tjob release = {{NULL, posts}, 1, &until, NULL};
  assert_int_equal(isv__pool_submit(&p, &w.job), 0);
  assert_int_equal(isv__pool_submit(&p, &release.job), 0);
  for (int i = 0; i < 5000 && atomic_load(&ran) < 2; i++) uv_sleep(1);
  assert_int_equal(atomic_load(&ran), 2); /* without the second thread: never */
  assert_int_equal(threads_of(&p), 2);
  assert_ptr_equal(w.seen, &p);
  isv__pool_destroy(&p);
  uv_sem_destroy(&until);
}

/* ---- core/spin.h: the spin budget follows what wake-ups cost, within the floor and the cap;
 * one outlier moves it by a bounded step; misses in a row bring the spin down to the floor
 * (never below), and one catch brings the budget back. */

static uint64_t feed(uint64_t avg, uint64_t sample, int times) {
  for (int i = 0; i < times; i++) avg = isv__spin_learn(avg, sample);
  return avg;
}

static void the_budget_follows_the_wake_ups(void **state) {
  (void)state;
  /* nothing learned yet: the floor, the fixed spin of before */
  assert_int_equal(isv__spin_budget(0), ISV__SPIN_FLOOR_NS);
  /* cheap wake-ups (an idle bare machine): the floor */
  assert_int_equal(isv__spin_budget(feed(0, 3000, 100)), ISV__SPIN_FLOOR_NS);
  /* 30 µs wake-ups: about 30 µs of spin */
  assert_in_range(isv__spin_budget(feed(0, 30000, 100)), 29000, 30000);
  /* 120 µs wake-ups (a busy 2-vCPU guest): the cap */
  assert_int_equal(isv__spin_budget(feed(0, 120000, 100)), ISV__SPIN_CAP_NS);
  /* from the cap back down when wake-ups get cheap again */
  assert_int_equal(isv__spin_budget(feed(feed(0, 120000, 100), 2000, 100)), ISV__SPIN_FLOOR_NS);
}

static void one_outlier_moves_it_a_bounded_step(void **state) {
  (void)state;
  uint64_t avg = feed(0, 12000, 100); /* 12 µs, above the floor */
  uint64_t after = isv__spin_learn(avg, 10 * 1000 * 1000); /* one 10 ms stall */
  /* the sample is clamped to twice the cap: the average moves an eighth of that at most */
  assert_true(after > avg);
  assert_true(after - avg <= 2 * (uint64_t)ISV__SPIN_CAP_NS / 8);
  assert_true(isv__spin_budget(after) < ISV__SPIN_CAP_NS);
  /* and it fades: a few ordinary wake-ups later the budget is back near 12 µs */
  assert_in_range(isv__spin_budget(feed(after, 12000, 40)), 12000, 12100);
}

static void misses_in_a_row_fall_back_to_the_floor(void **state) {
  (void)state;
  uint64_t avg = feed(0, 40000, 100); /* worth about 40 µs of spin */
  unsigned misses = 0;
  /* lone misses keep the long spin */
  for (unsigned i = 0; i + 1 < ISV__SPIN_MISSES; i++) {
    misses = isv__spin_count(misses, 0);
    assert_int_equal(isv__spin_next(avg, misses), isv__spin_budget(avg));
    assert_true(isv__spin_next(avg, misses) > ISV__SPIN_FLOOR_NS);
  }
  misses = isv__spin_count(misses, 0);
  assert_int_equal(misses, ISV__SPIN_MISSES);
  assert_int_equal(isv__spin_next(avg, misses), ISV__SPIN_FLOOR_NS);
  /* the count stops growing (no wrap-around, however long the misses go on) */
  assert_int_equal(isv__spin_count(misses, 0), ISV__SPIN_MISSES);
  assert_int_equal(isv__spin_count(UINT32_MAX, 0), UINT32_MAX);
  /* never below the floor, whatever the average */
  assert_int_equal(isv__spin_next(0, misses), ISV__SPIN_FLOOR_NS);
  assert_int_equal(isv__spin_next(0, 0), ISV__SPIN_FLOOR_NS);
  /* one catch: the budget again */
  misses = isv__spin_count(misses, 1);
  assert_int_equal(misses, 0);
  assert_int_equal(isv__spin_next(avg, misses), isv__spin_budget(avg));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(a_blocked_worker_does_not_count, setup, teardown),
      cmocka_unit_test_setup_teardown(one_thread_runs_jobs_in_order, setup, teardown),
      cmocka_unit_test_setup_teardown(threads_start_only_as_jobs_need_them, setup, teardown),
      cmocka_unit_test_setup_teardown(destroy_without_jobs_is_fine, setup, teardown),
      cmocka_unit_test_setup_teardown(stop_detaches_only_when_a_job_may_hang, setup, teardown),
      cmocka_unit_test_setup_teardown(many_producers_one_worker_keep_each_order, setup, teardown),
      cmocka_unit_test_setup_teardown(many_producers_many_workers_run_every_job_once, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(idle_threads_park, setup, teardown),
      cmocka_unit_test_setup_teardown(on_one_cpu_nobody_spins, setup, teardown),
      cmocka_unit_test(the_budget_follows_the_wake_ups),
      cmocka_unit_test(one_outlier_moves_it_a_bounded_step),
      cmocka_unit_test(misses_in_a_row_fall_back_to_the_floor),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
