/* A core's life (lifecycle.h): init and close, composing the core's parts — its handles, the
 * worker pool, its group — and the scheduler that drains its completions. */
#include "core/lifecycle.h"

#include <stdint.h>
#include <string.h>

#include "core/group.h"
#include "core/nested.h"
#include "core/offload.h"

/* isv_options_set_buffer_prefault: the blocks are faulted in on a worker thread while the
 * server serves; without one (no worker threads, or no memory for the job) here and now. */
static void prefault_work(isv__offload *o) {
  isv__core *c = o->core;
  isv__bigbuf_prefault(&c->bufs, c->opts.prefault_block_bytes, c->opts.prefault_blocks);
}

static void prefault_done(isv__offload *o) { isv__free(o); }

static void prefault_start(isv__core *c) {
  isv__offload *o = isv__malloc(c->mem, sizeof *o);
  if (o == NULL || isv__offload_run(c, o, prefault_work, prefault_done) != 0) {
    isv__free(o);
    isv__bigbuf_prefault(&c->bufs, c->opts.prefault_block_bytes, c->opts.prefault_blocks);
  }
}

int isv__core_init(isv__core *c, uv_loop_t *loop, const isv_options *opts) {
  memset(c, 0, sizeof *c);
  c->loop = loop;
  c->loop_thread = uv_thread_self();
  c->opts = *opts;
  isv__recycler_init(&c->recycler, &c->opts.mem, c->opts.small_block_cache_bytes);
  c->mem = &c->recycler.mem;
  c->opts.group = NULL; /* the options' reference is theirs: the core holds its own */
  c->nest_ops = &isv__nested_ops;
  c->protocols[0] = "inprocess";
  c->n_protocols = 1;
  atomic_init(&c->refs, 1);
  atomic_init(&c->done_posted, 0u);
  int rc = isv__registry_init(&c->reg, c, c->mem);
  if (rc) goto fail_recycler;
  c->reg.summaries = (c->opts.metrics_style & ISV_METRICS_TRITON_SUMMARIES) != 0;
  isv__timeheap_init(&c->timers, c->mem);
  if (uv_mutex_init(&c->mu) != 0) goto fail_reg;
  /* the options' group, or a group of one: c->shm and c->clients are the group's */
  if ((rc = isv__group_enter(c, opts->group, opts->shared_memory,
                             opts->shared_memory_in_place)) != 0)
    goto fail_mu;
  if ((rc = isv__group_rcache_make(c, opts->response_cache_bytes)) != 0) goto fail_group;
  size_t cache = opts->buffer_cache_bytes, warm = 0;
  if (opts->prefault_blocks) { /* the cache's limit holds the blocks asked for */
    size_t block = isv__bigbuf_block_size(opts->prefault_block_bytes);
    warm = block > SIZE_MAX / opts->prefault_blocks ? SIZE_MAX : block * opts->prefault_blocks;
  }
  if (isv__bigbuf_cache_init(&c->bufs, cache > warm ? cache : warm, c->mem) != 0) goto fail_group;
  if (isv__pool_init(&c->pool, opts->worker_threads, c->mem) != 0) goto fail_bufs;
  if (uv_async_init(loop, &c->async, isv__core_drain_completions) != 0) goto fail_pool;
  c->async.data = c;
  uv_unref((uv_handle_t *)&c->async); /* referenced only while requests are in flight */
  uv_timer_init(loop, &c->timer);
  c->timer.data = c;
  uv_unref((uv_handle_t *)&c->timer); /* deadlines never keep the host's loop alive */
  isv__group_join(c); /* the group's models arrive */
  if (opts->prefault_blocks) prefault_start(c);
  return 0;
fail_pool:
  isv__pool_destroy(&c->pool);
fail_bufs:
  isv__bigbuf_cache_destroy(&c->bufs);
fail_group:
  isv__group_exit(c);
fail_mu:
  uv_mutex_destroy(&c->mu);
fail_reg:
  isv__registry_clear(&c->reg);
fail_recycler:
  isv__recycler_destroy(&c->recycler);
  return rc ? rc : ISV_ENOMEM;
}

/* The timer is closed first, then the async handle; then the caller's close callback runs
 * and the owner's reference is dropped (the memory may outlive it: isv__core_unref). */
static void on_async_closed(uv_handle_t *h) {
  isv__core *c = h->data;
  if (c->close_cb) c->close_cb(h);
  isv__core_unref(c);
}

static void on_timer_closed(uv_handle_t *h) {
  isv__core *c = h->data;
  c->async.data = c;
  uv_close((uv_handle_t *)&c->async, on_async_closed);
}

static void pool_gone(void *data) { isv__core_unref(data); }

void isv__core_close(isv__core *c, uv_close_cb close_cb) {
  /* the pool's reference, kept while threads let go may still run an abandoned backend */
  uv_mutex_lock(&c->mu);
  int may_hang = c->stuck > 0; /* else the jobs still running are finishing: join them */
  uv_mutex_unlock(&c->mu);
  atomic_fetch_add(&c->refs, 1);
  if (isv__pool_stop(&c->pool, may_hang, pool_gone, c) == 0) atomic_fetch_sub(&c->refs, 1);
  isv__registry_clear(&c->reg); /* a version an abandoned execution holds stays until then */
  /* left the group at the close's start (isv__core_begin_close); now its reference goes — a
   * group of one's table, shared memory and client counts with it (a region a request still
   * uses stays mapped until then) */
  isv__group_exit(c);
  uv_mutex_lock(&c->mu);
  c->closed = 1; /* from now on abandoned executions are freed by whoever completes them */
  isv_request *q = c->done_head; /* abandoned ones completed, not yet freed by the loop */
  c->done_head = c->done_tail = NULL;
  for (size_t i = 0; i < c->q_len; i++) isv__free(c->quarantine[i]);
  c->q_len = 0;
  isv__free(atomic_exchange_explicit(&c->q_spare, NULL, memory_order_acquire));
  isv__arena_chunk_free(atomic_exchange_explicit(&c->arena_spare, NULL, memory_order_acquire));
  uv_mutex_unlock(&c->mu);
  while (q) {
    isv_request *next = q->qnext;
    isv__abandoned_release(q);
    q = next;
  }
  isv__timeheap_free(&c->timers);
  c->close_cb = close_cb;
  uv_close((uv_handle_t *)&c->timer, on_timer_closed);
}

