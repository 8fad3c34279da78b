/* The server's own worker threads, where ISV_EXEC_POOL backends run.
 *
 * Why not libuv's pool (uv_queue_work): it is shared with the host's file system and DNS work
 * and sized once per process (UV_THREADPOOL_SIZE, default 4). Model calls last milliseconds to
 * seconds; four slow ones would stall every fs and getaddrinfo request of the host, and a host
 * could not give models more threads without giving them to everything. So the server keeps
 * its own threads, up to isv_options_set_worker_threads (default: the CPUs available), started
 * when work first needs them (isv_server_new starts none) and joined at close.
 *
 * Jobs are intrusive (the caller's struct embeds an isv__pool_job) and run in FIFO order. */
#ifndef ISV_CORE_POOL_H
#define ISV_CORE_POOL_H

#include "core/layer.h"

#include <uv.h>

#include "codec/mem.h"

typedef struct isv__pool_job isv__pool_job;
struct isv__pool_job {
  isv__pool_job *next;
  void (*run)(isv__pool_job *job); /* on a worker thread */
};

typedef struct isv__pool {
  uv_mutex_t mu;
  uv_cond_t wake;
  isv__pool_job *head, *tail;
  uv_thread_t *threads;
  unsigned n_threads, max_threads;
  unsigned idle;     /* threads waiting for a job */
  unsigned n_queued; /* jobs not yet taken */
  unsigned running;  /* jobs being run */
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

#endif
