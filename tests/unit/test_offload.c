/* Work moved off the loop (lib/core/offload.c): it runs on a worker thread, its continuation
 * on the loop thread, the loop stays alive for it, and the core is not idle (the close waits)
 * until the continuation ran. */
#include "cmocka_prelude.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "core_fixture.h"
#include "codec/buf.h"
#include "core/offload.h"

typedef struct job {
  isv__offload off;
  cf_world *w;
  int on_loop_in_work;  /* where work ran (1 = the loop thread: wrong) */
  int on_loop_in_after; /* where after ran (1 = the loop thread: right) */
  int idle_in_after;    /* the core counted it until after ran */
  int after_order;
  atomic_int worked;
} job;

static int order;

static void work(isv__offload *o) {
  job *j = (job *)o;
  j->on_loop_in_work = isv__on_loop_thread(&j->w->core);
  uv_sleep(5); /* long enough for the loop to be waiting */
  atomic_store(&j->worked, 1);
}

static void after(isv__offload *o) {
  job *j = (job *)o;
  j->on_loop_in_after = isv__on_loop_thread(&j->w->core);
  j->idle_in_after = isv__core_idle(&j->w->core);
  j->after_order = ++order;
}

static void work_runs_off_the_loop_and_after_on_it(void **state) {
  (void)state;
  cf_world *w = cf_world_new(NULL);
  job j[8];
  order = 0;
  for (int i = 0; i < 8; i++) {
    j[i] = (job){.w = w};
    assert_int_equal(isv__offload_run(&w->core, &j[i].off, work, after), 0);
    assert_int_equal(j[i].after_order, 0); /* never before it returns */
  }
  assert_false(isv__core_idle(&w->core));
  uv_run(&w->loop, UV_RUN_DEFAULT); /* returns only once every continuation ran */
  assert_true(isv__core_idle(&w->core));
  for (int i = 0; i < 8; i++) {
    assert_true(atomic_load(&j[i].worked));
    assert_false(j[i].on_loop_in_work);
    assert_true(j[i].on_loop_in_after);
    assert_false(j[i].idle_in_after); /* still counted while its continuation runs */
    assert_true(j[i].after_order >= 1 && j[i].after_order <= 8);
  }
  cf_world_free(w);
}

/* With nothing offloaded the async handle does not keep the host's loop alive. */
static void an_idle_core_does_not_hold_the_loop(void **state) {
  (void)state;
  cf_world *w = cf_world_new(NULL);
  job j = {.w = w};
  assert_int_equal(isv__offload_run(&w->core, &j.off, work, after), 0);
  uv_run(&w->loop, UV_RUN_DEFAULT);
  assert_int_equal(j.after_order, order);
  assert_int_equal(uv_run(&w->loop, UV_RUN_NOWAIT), 0); /* nothing left alive */
  cf_world_free(w);
}

/* A large buffer handed to isv__offload_free is freed off the loop; the core counts it until
 * then (LeakSanitizer checks it is freed at all). */
static void a_buffer_is_freed_on_a_worker(void **state) {
  (void)state;
  cf_world *w = cf_world_new(NULL);
  char *big = isv__malloc(NULL, 4 << 20);
  assert_non_null(big);
  memset(big, 1, 4 << 20); /* touched: what makes unmapping it cost */
  isv__offload_free(&w->core, big);
  assert_false(isv__core_idle(&w->core));
  uv_run(&w->loop, UV_RUN_DEFAULT);
  assert_true(isv__core_idle(&w->core));
  cf_world_free(w);
}


/* ---- a coded body decoded: a slice on the loop, the rest on a worker thread ---------------- */

typedef struct inflation {
  isv__offload_inflate inf;
  cf_world *w;
  int done_calls;
  int on_loop;
  char *body;
  size_t len;
} inflation;

static void inflated(isv__offload_inflate *inf) {
  inflation *t = (inflation *)inf;
  t->done_calls++;
  t->on_loop = isv__on_loop_thread(&t->w->core);
  if (inf->rc == 0) {
    size_t charged;
    t->body = isv__inflater_take(inf->f, &t->len, &charged);
  }
  isv__inflater_free(inf->f);
}

/* n bytes of a repeating pattern, gzipped. */
static isv__buf gzipped(size_t n, char **plain) {
  *plain = malloc(n);
  for (size_t i = 0; i < n; i++) (*plain)[i] = (char)('a' + i % 23);
  isv__buf b;
  isv__buf_init(&b, NULL);
  isv__zpiece piece = {*plain, n};
  assert_int_equal(isv__deflate(ISV__CODING_GZIP, &piece, 1, &b), 0);
  return b;
}

static void a_small_body_inflates_at_once_a_large_one_on_a_worker(void **state) {
  (void)state;
  cf_world *w = cf_world_new(NULL);
  static const size_t sizes[] = {1000, ISV__INFLATE_LOOP_SLICE * 3 + 17};
  for (int k = 0; k < 2; k++) {
    char *plain;
    isv__buf coded = gzipped(sizes[k], &plain);
    inflation t = {.w = w};
    assert_int_equal(isv__inflater_new(ISV__CODING_GZIP, coded.data, coded.len, sizes[k] * 2,
                                       NULL, NULL, &t.inf.f), 0);
    isv__offload_inflate_run(&w->core, &t.inf, inflated);
    if (k == 0) {
      assert_int_equal(t.done_calls, 1); /* one slice was enough: no thread hand-off */
    } else {
      assert_int_equal(t.done_calls, 0); /* the rest went to a worker thread */
      assert_false(isv__core_idle(&w->core));
      uv_run(&w->loop, UV_RUN_DEFAULT);
      assert_int_equal(t.done_calls, 1);
    }
    assert_true(t.on_loop);
    assert_int_equal(t.inf.rc, 0);
    assert_int_equal(t.len, sizes[k]);
    assert_memory_equal(t.body, plain, sizes[k]);
    isv__free(t.body);
    free(plain);
    isv__buf_free(&coded);
  }
  /* an error comes back the same way, with the inflater's reason */
  static const unsigned char not_gzip[] = {0x1f, 0x8b, 0x08, 0, 0, 0, 0, 0, 0, 0xff, 0xde, 0xad};
  inflation t = {.w = w};
  assert_int_equal(isv__inflater_new(ISV__CODING_GZIP, not_gzip, sizeof not_gzip, 1 << 20, NULL,
                                     NULL, &t.inf.f), 0);
  isv__offload_inflate_run(&w->core, &t.inf, inflated);
  assert_int_equal(t.done_calls, 1);
  assert_int_equal(t.inf.rc, ISV_EBADREQ);
  cf_world_free(w);
}

/* isv_options_set_buffer_prefault: the core faults its blocks in on a worker as it starts —
 * the loop runs meanwhile — and keeps them in its cache, whose limit was raised to hold them. */
static void the_core_prefaults_its_blocks_on_a_worker(void **state) {
  (void)state;
  isv_options *o;
  assert_int_equal(isv_options_new(&o), 0);
  assert_int_equal(isv_options_set_buffer_cache_bytes(o, 0), 0); /* would keep none */
  assert_int_equal(isv_options_set_buffer_prefault(o, (size_t)3 << 20, 2), 0);
  cf_world *w = cf_world_new(o);
  isv_options_free(o);
  uv_run(&w->loop, UV_RUN_DEFAULT); /* alive until the job's continuation ran */
  assert_int_equal(w->core.bufs.n, 2);
  assert_int_equal(w->core.bufs.held, 2 * isv__bigbuf_block_size((size_t)3 << 20));
  void *p = isv__bigbuf_alloc(&w->core.bufs, (size_t)3 << 20, 0);
  assert_false(isv__bigbuf_fresh(p));
  isv__bigbuf_free(p);
  cf_world_free(w);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(work_runs_off_the_loop_and_after_on_it),
      cmocka_unit_test(an_idle_core_does_not_hold_the_loop),
      cmocka_unit_test(a_buffer_is_freed_on_a_worker),
      cmocka_unit_test(a_small_body_inflates_at_once_a_large_one_on_a_worker),
      cmocka_unit_test(the_core_prefaults_its_blocks_on_a_worker),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
