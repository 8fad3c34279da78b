/* The response cache (lib/core/rcache.c): SipHash-2-4-128's known answer, the key (equal for
 * equal requests, different when any field that makes the answer differs), LRU eviction by
 * bytes, a thread-safety smoke (run under TSan in CI), and the cache through a server's request
 * path: a hit answers without the backend and is counted; what must never be stored is not. */
#include "cmocka_prelude.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "core/group.h"
#include "core/rcache.h"
#include "core/registry.h"
#include "core/request.h"
#include "inferserve.h"

/* ---- SipHash ------------------------------------------------------------------------------ */

static void siphash_known_answer(void **state) {
  (void)state;
  /* the reference implementation's first vectors (vectors.h, vectors_sip128): key 00..0f,
   * messages 00..(n-1) for n = 0 and 1 */
  uint8_t key[16], msg[64], out[16];
  for (int i = 0; i < 16; i++) key[i] = (uint8_t)i;
  for (int i = 0; i < 64; i++) msg[i] = (uint8_t)i;
  static const uint8_t empty[16] = {0xa3, 0x81, 0x7f, 0x04, 0xba, 0x25, 0xa8, 0xe6,
                                    0x6d, 0xf6, 0x72, 0x14, 0xc7, 0x55, 0x02, 0x93};
  static const uint8_t one[16] = {0xda, 0x87, 0xc1, 0xd8, 0x6b, 0x99, 0xaf, 0x44,
                                  0x34, 0x76, 0x59, 0x11, 0x9b, 0x22, 0xfc, 0x45};
  isv__siphash s;
  isv__siphash_init(&s, key);
  isv__siphash_final(&s, out);
  assert_memory_equal(out, empty, 16);
  isv__siphash_init(&s, key);
  isv__siphash_update(&s, msg, 1);
  isv__siphash_final(&s, out);
  assert_memory_equal(out, one, 16);
  /* streamed in pieces of any size = at once */
  uint8_t whole[16], parts[16];
  for (size_t n = 0; n <= 64; n++) {
    isv__siphash_init(&s, key);
    isv__siphash_update(&s, msg, n);
    isv__siphash_final(&s, whole);
    isv__siphash_init(&s, key);
    for (size_t at = 0; at < n;) {
      size_t k = (at * 7 + 3) % 5 + 1;
      if (k > n - at) k = n - at;
      isv__siphash_update(&s, msg + at, k);
      at += k;
    }
    isv__siphash_final(&s, parts);
    assert_memory_equal(whole, parts, 16);
  }
}

/* ---- the key, on requests built by hand (isv__rcache_key reads fields only) ----------------- */

typedef struct fake {
  isv_model_config cfg;
  isv_model m;
  isv_request r;
  isv_tensor in[2];
  int64_t shape[2][2];
  float data[2][4];
  isv__req_output outs[2];
  isv__param_entry params[3];
} fake;

static void fake_init(fake *f) {
  memset(f, 0, sizeof *f);
  f->cfg.name = "m";
  f->m.cfg = &f->cfg;
  f->m.version = "1";
  f->r.model = &f->m;
  const char *names[2] = {"a", "b"};
  for (int i = 0; i < 2; i++) {
    f->shape[i][0] = 2;
    f->shape[i][1] = 2;
    for (int k = 0; k < 4; k++) f->data[i][k] = (float)(i * 10 + k);
    f->in[i] = (isv_tensor){.name = names[i], .dt = ISV_FP32, .shape = f->shape[i], .ndim = 2,
                            .data = f->data[i], .count = 4, .byte_size = 16};
  }
  f->r.inputs = f->in;
  f->r.n_inputs = 2;
  f->outs[0] = (isv__req_output){.name = "y"};
  f->outs[1] = (isv__req_output){.name = "z"};
  f->r.req_outputs = f->outs;
  f->params[0] = (isv__param_entry){"temperature", {.type = ISV_PARAM_DOUBLE, .v.d = 0.5}};
  f->params[1] = (isv__param_entry){"timeout", {.type = ISV_PARAM_UINT64, .v.u64 = 100}};
  f->params[2] = (isv__param_entry){"priority", {.type = ISV_PARAM_UINT64, .v.u64 = 1}};
  f->r.params = f->params;
  f->r.n_params = 3;
}

static isv__rkey key_of(isv__rcache *c, fake *f, uint64_t serial) {
  isv__rkey k;
  isv__rcache_key(c, &f->r, serial, &k);
  return k;
}

static int same(isv__rkey a, isv__rkey b) { return a.lo == b.lo && a.hi == b.hi; }

static void key_rules(void **state) {
  (void)state;
  isv__rcache *c;
  assert_int_equal(isv__rcache_new(NULL, 1 << 20, &c), 0);
  fake a, b;
  fake_init(&a);
  fake_init(&b);
  isv__rkey base = key_of(c, &a, 7);
  assert_true(same(base, key_of(c, &b, 7))); /* equal requests, equal keys */
  assert_true(same(base, key_of(c, &a, 7))); /* and stable */
  /* inputs listed in another order: the same request */
  b.in[0] = a.in[1];
  b.in[1] = a.in[0];
  assert_true(same(base, key_of(c, &b, 7)));
  /* parameters the library consumes do not count; their order neither */
  fake_init(&b);
  b.params[1].val.v.u64 = 999;  /* timeout */
  b.params[2].val.v.u64 = 2;    /* priority */
  b.params[0] = a.params[2];
  b.params[2] = a.params[0];
  assert_true(same(base, key_of(c, &b, 7)));
  /* every field that may change the answer changes the key */
  fake_init(&b);
  assert_false(same(base, key_of(c, &b, 8))); /* another registration */
  b.cfg.name = "n";
  assert_false(same(base, key_of(c, &b, 7)));
  fake_init(&b);
  b.m.version = "2";
  assert_false(same(base, key_of(c, &b, 7)));
  fake_init(&b);
  b.in[1].name = "c";
  assert_false(same(base, key_of(c, &b, 7)));
  fake_init(&b);
  b.in[0].dt = ISV_INT32;
  assert_false(same(base, key_of(c, &b, 7)));
  fake_init(&b);
  b.shape[0][0] = 4;
  b.shape[0][1] = 1; /* same bytes, another shape */
  assert_false(same(base, key_of(c, &b, 7)));
  fake_init(&b);
  b.in[0].ndim = 1;
  b.shape[0][0] = 4;
  assert_false(same(base, key_of(c, &b, 7)));
  fake_init(&b);
  b.data[1][3] = 13.5f; /* one byte of data */
  assert_false(same(base, key_of(c, &b, 7)));
  fake_init(&b);
  b.r.n_inputs = 1;
  assert_false(same(base, key_of(c, &b, 7)));
  fake_init(&b);
  b.r.n_req_outputs = 1; /* outputs requested */
  assert_false(same(base, key_of(c, &b, 7)));
  fake_init(&a);
  a.r.n_req_outputs = 2;
  fake_init(&b);
  b.r.n_req_outputs = 2;
  b.outs[0] = a.outs[1];
  b.outs[1] = a.outs[0]; /* their order is the answer's order */
  assert_false(same(key_of(c, &a, 7), key_of(c, &b, 7)));
  fake_init(&a);
  fake_init(&b);
  b.params[0].val.v.d = 0.25; /* a parameter the backend may read */
  assert_false(same(base, key_of(c, &b, 7)));
  fake_init(&b);
  b.params[0].val = (isv_param){.type = ISV_PARAM_STRING, .v.s = {"0.5", 3}};
  assert_false(same(base, key_of(c, &b, 7)));
  fake_init(&b);
  b.r.n_params = 2; /* "priority" gone: consumed, no difference */
  assert_true(same(base, key_of(c, &b, 7)));
  b.r.n_params = 0; /* "temperature" gone */
  assert_false(same(base, key_of(c, &b, 7)));
  /* BYTES: element boundaries count */
  isv_bytes e1[2] = {{"ab", 2}, {"c", 1}}, e2[2] = {{"a", 1}, {"bc", 2}};
  int64_t two[1] = {2};
  fake_init(&a);
  fake_init(&b);
  a.in[0] = (isv_tensor){.name = "a", .dt = ISV_BYTES, .shape = two, .ndim = 1, .data = e1,
                         .count = 2, .byte_size = 3};
  b.in[0] = a.in[0];
  b.in[0].data = e2;
  assert_false(same(key_of(c, &a, 7), key_of(c, &b, 7)));
  /* another cache (another random hash key): another key for the same request */
  isv__rcache *d;
  assert_int_equal(isv__rcache_new(NULL, 1 << 20, &d), 0);
  fake_init(&a);
  assert_false(same(key_of(c, &a, 7), key_of(d, &a, 7)));
  isv__rcache_free(d);
  isv__rcache_free(c);
}

/* ---- eviction: least recently used first, by bytes ------------------------------------------ */

/* A request whose answer is one FP32 output of n elements. */
typedef struct answer {
  isv_request r;
  isv_tensor out;
  int64_t shape[1];
  float *data;
} answer;

static void answer_init(answer *a, size_t n) {
  memset(a, 0, sizeof *a);
  a->data = calloc(n ? n : 1, sizeof(float));
  a->shape[0] = (int64_t)n;
  a->out = (isv_tensor){.name = "y", .dt = ISV_FP32, .shape = a->shape, .ndim = 1,
                        .data = a->data, .count = n, .byte_size = n * sizeof(float)};
  a->r.outputs = &a->out;
  a->r.n_outputs = 1;
}

#define K(i) (&(isv__rkey){(uint64_t)(i) * 0x9e3779b97f4a7c15ull, (uint64_t)(i)})

static void lru_by_bytes(void **state) {
  (void)state;
  answer a;
  answer_init(&a, 1000); /* ~4 KB an entry */
  isv__rcache *c;
  assert_int_equal(isv__rcache_new(NULL, 4 * 4096 + 2048, &c), 0); /* room for four */
  uint64_t ns;
  for (uint64_t i = 1; i <= 4; i++) assert_int_equal(isv__rcache_store(c, K(i), &a.r, &ns), 0);
  isv__rcache_stats st;
  isv__rcache_stats_get(c, &st);
  assert_int_equal(st.entries, 4);
  assert_true(st.bytes <= st.max_bytes && st.bytes > 4 * 4000);
  assert_int_equal(st.evictions, 0);
  /* key 1 used (a hit moves it to the front): key 2 is now the least recently used */
  /* isv__rcache_answer copies into a real request; the LRU move happens before: take it with
   * a store of key 1 again (a replacement is a use too) */
  assert_int_equal(isv__rcache_store(c, K(1), &a.r, &ns), 0);
  assert_int_equal(isv__rcache_store(c, K(5), &a.r, &ns), 0);
  assert_true(isv__rcache_has(c, K(1)));
  assert_false(isv__rcache_has(c, K(2)));
  assert_true(isv__rcache_has(c, K(3)));
  assert_true(isv__rcache_has(c, K(4)));
  assert_true(isv__rcache_has(c, K(5)));
  isv__rcache_stats_get(c, &st);
  assert_int_equal(st.entries, 4);
  assert_int_equal(st.evictions, 1);
  /* a large entry evicts as many as it needs, oldest first */
  answer big;
  answer_init(&big, 2500); /* ~10 KB: three of the four go */
  assert_int_equal(isv__rcache_store(c, K(6), &big.r, &ns), 0);
  assert_false(isv__rcache_has(c, K(3)));
  assert_false(isv__rcache_has(c, K(4)));
  assert_false(isv__rcache_has(c, K(1)));
  assert_true(isv__rcache_has(c, K(5)));
  assert_true(isv__rcache_has(c, K(6)));
  isv__rcache_stats_get(c, &st);
  assert_int_equal(st.entries, 2);
  assert_int_equal(st.evictions, 4);
  assert_true(st.bytes <= st.max_bytes);
  /* larger than the whole cache: not stored, nothing evicted */
  answer huge;
  answer_init(&huge, 10000);
  assert_int_equal(isv__rcache_store(c, K(7), &huge.r, &ns), 1);
  assert_false(isv__rcache_has(c, K(7)));
  assert_true(isv__rcache_has(c, K(6)));
  /* many small ones: the table grows, the bound holds */
  answer small;
  answer_init(&small, 1);
  for (uint64_t i = 100; i < 2100; i++)
    assert_int_equal(isv__rcache_store(c, K(i), &small.r, &ns), 0);
  isv__rcache_stats_get(c, &st);
  assert_true(st.bytes <= st.max_bytes);
  assert_true(isv__rcache_has(c, K(2099)));
  assert_false(isv__rcache_has(c, K(100)));
  isv__rcache *none;
  assert_int_equal(isv__rcache_new(NULL, 0, &none), ISV_EINVAL);
  isv__rcache_free(c);
  free(a.data);
  free(big.data);
  free(huge.data);
  free(small.data);
}

/* ---- threads: stores, lookups and evictions at once (TSan's to judge) ---------------------- */

typedef struct tharg {
  isv__rcache *c;
  unsigned id;
  answer a;
} tharg;

static void hammer(void *p) {
  tharg *t = p;
  uint64_t ns;
  for (uint64_t i = 0; i < 3000; i++) {
    uint64_t k = (i * 31 + t->id) % 200;
    if (i % 3 == 0) isv__rcache_store(t->c, K(k), &t->a.r, &ns);
    else (void)isv__rcache_has(t->c, K(k));
    if (i % 500 == 0) {
      isv__rcache_stats st;
      isv__rcache_stats_get(t->c, &st);
    }
  }
}

static void threads_smoke(void **state) {
  (void)state;
  isv__rcache *c;
  assert_int_equal(isv__rcache_new(NULL, 64 * 1024, &c), 0);
  tharg t[4];
  uv_thread_t th[4];
  for (unsigned i = 0; i < 4; i++) {
    t[i].c = c;
    t[i].id = i;
    answer_init(&t[i].a, 64 + i * 100);
    assert_int_equal(uv_thread_create(&th[i], hammer, &t[i]), 0);
  }
  for (unsigned i = 0; i < 4; i++) uv_thread_join(&th[i]);
  isv__rcache_stats st;
  isv__rcache_stats_get(c, &st);
  assert_true(st.bytes <= st.max_bytes);
  assert_true(st.inserts > 0);
  for (unsigned i = 0; i < 4; i++) free(t[i].a.data);
  isv__rcache_free(c);
}

/* ---- through a server ------------------------------------------------------------------------ */

typedef struct server_world {
  uv_loop_t loop;
  isv_server *srv;
  int calls; /* backend runs */
} server_world;

/* y = 2 * (a + b), elementwise; fails when a[0] < 0 */
static int add2(isv_request *r, void *u) {
  server_world *w = u;
  w->calls++;
  const isv_tensor *a = isv_request_input(r, "a"), *b = isv_request_input(r, "b");
  const float *x = isv_tensor_data(a), *z = isv_tensor_data(b);
  if (x[0] < 0) return isv_request_complete(r, ISV_EBACKEND, "negative");
  size_t nd;
  const int64_t *shape = isv_tensor_shape(a, &nd);
  float *y;
  int rc = isv_request_alloc_output(r, "y", ISV_FP32, shape, nd, (void **)&y);
  if (rc) return rc;
  for (size_t i = 0; i < isv_tensor_element_count(a); i++) y[i] = 2 * (x[i] + z[i]);
  isv_request_set_response_param(r, "note", &(isv_param){.type = ISV_PARAM_STRING,
                                                         .v.s = {"computed", 8}});
  return isv_request_complete(r, 0, NULL);
}

typedef struct got {
  int done, status;
  float y[4];
  char note[16];
} got;

static void on_done(isv_request *r, int status, void *data) {
  got *g = data;
  g->done = 1;
  g->status = status;
  const isv_tensor *y = isv_request_output(r, "y");
  if (y) memcpy(g->y, isv_tensor_data(y), 4 * sizeof(float));
  for (size_t i = 0; i < isv_request_response_param_count(r); i++) {
    const isv_param *v;
    const char *k = isv_request_response_param_at(r, i, &v);
    if (strcmp(k, "note") == 0) snprintf(g->note, sizeof g->note, "%.*s", (int)v->v.s.len, v->v.s.ptr);
  }
  isv_request_free(r);
}

static got infer(server_world *w, float a0, float b0, int swap, const char *param, int64_t pv) {
  isv_request *r;
  assert_int_equal(isv_request_new(w->srv, "cached", NULL, &r), 0);
  float a[4] = {a0, 1, 2, 3}, b[4] = {b0, 1, 1, 1};
  int64_t shape[1] = {4};
  for (int i = 0; i < 2; i++) {
    int first = swap ? 1 - i : i;
    assert_int_equal(isv_request_add_input(r, first ? "b" : "a", ISV_FP32, shape, 1,
                                           first ? b : a, sizeof a, ISV_TRANSIENT), 0);
  }
  if (param)
    assert_int_equal(isv_request_set_param(r, param, &(isv_param){.type = ISV_PARAM_INT64,
                                                                  .v.i64 = pv}), 0);
  got g = {0};
  assert_int_equal(isv_server_infer(w->srv, r, on_done, &g), 0);
  while (!g.done) uv_run(&w->loop, UV_RUN_ONCE);
  return g;
}

static isv_model *add_cached(server_world *w, int decoupled) {
  isv_model_config *c;
  int64_t any[1] = {-1};
  assert_int_equal(isv_model_config_new("cached", &c), 0);
  assert_int_equal(isv_model_config_add_input(c, "a", ISV_FP32, any, 1), 0);
  assert_int_equal(isv_model_config_add_input(c, "b", ISV_FP32, any, 1), 0);
  assert_int_equal(isv_model_config_add_output(c, "y", ISV_FP32, any, 1), 0);
  assert_int_equal(isv_model_config_set_response_cache(c, 1), 0);
  if (decoupled) assert_int_equal(isv_model_config_set_decoupled(c, 1), 0);
  isv_backend be = {.struct_size = sizeof be, .infer = add2};
  isv_model *m = NULL;
  int rc = isv_server_add_model(w->srv, c, "1", &be, w, &m);
  isv_model_config_free(c);
  return rc == 0 ? m : NULL;
}

static void server_open(server_world *w, size_t cache_bytes) {
  memset(w, 0, sizeof *w);
  assert_int_equal(uv_loop_init(&w->loop), 0);
  isv_options *o;
  assert_int_equal(isv_options_new(&o), 0);
  assert_int_equal(isv_options_set_response_cache_bytes(o, cache_bytes), 0);
  assert_int_equal(isv_server_new(&w->loop, o, &w->srv), 0);
  isv_options_free(o);
}

static void server_close(server_world *w) {
  assert_int_equal(isv_server_close(w->srv, NULL, NULL), 0);
  uv_run(&w->loop, UV_RUN_DEFAULT);
  assert_int_equal(uv_loop_close(&w->loop), 0);
}

static void hits_skip_the_backend(void **state) {
  (void)state;
  server_world w;
  server_open(&w, 1 << 20);
  isv_model *m = add_cached(&w, 0);
  assert_non_null(m);
  got g1 = infer(&w, 1, 1, 0, NULL, 0);
  assert_int_equal(g1.status, 0);
  assert_int_equal(w.calls, 1);
  got g2 = infer(&w, 1, 1, 0, NULL, 0); /* the same request: a hit */
  assert_int_equal(g2.status, 0);
  assert_int_equal(w.calls, 1);
  assert_memory_equal(g1.y, g2.y, sizeof g1.y);
  assert_string_equal(g2.note, "computed"); /* the response parameters come back too */
  got g3 = infer(&w, 1, 1, 1, NULL, 0); /* inputs in the other order: still a hit */
  assert_int_equal(w.calls, 1);
  assert_memory_equal(g1.y, g3.y, sizeof g1.y);
  infer(&w, 1, 1, 0, "timeout", 5000000); /* a consumed parameter: a hit */
  assert_int_equal(w.calls, 1);
  infer(&w, 1, 1, 0, "temperature", 3); /* a parameter the backend may read: a miss */
  assert_int_equal(w.calls, 2);
  got g4 = infer(&w, 2, 1, 0, NULL, 0); /* another input: a miss */
  assert_int_equal(w.calls, 3);
  assert_true(g4.y[0] == 6.0f);
  /* a failure is never stored */
  assert_int_equal(infer(&w, -1, 0, 0, NULL, 0).status, ISV_EBACKEND);
  assert_int_equal(infer(&w, -1, 0, 0, NULL, 0).status, ISV_EBACKEND);
  assert_int_equal(w.calls, 5);
  isv__stats_snap s;
  isv__model_stats(m, &s);
  assert_int_equal(s.cache_hit, 3);
  assert_int_equal(s.cache_miss, 5);
  assert_true(s.cache_hit_ns > 0 && s.cache_miss_ns > 0);
  assert_int_equal(s.exec_count, 5); /* hits are not executions */
  isv__triton_stats t;
  isv__stats_triton(&s, &t);
  assert_int_equal(t.success.count, 6);
  assert_int_equal(t.compute_infer.count, 3); /* the successes that ran */
  assert_int_equal(t.cache_hit.count, 3);
  /* a version registered again starts with an empty cache */
  assert_int_equal(isv_server_remove_model(w.srv, "cached", "1"), 0);
  uv_run(&w.loop, UV_RUN_NOWAIT);
  assert_non_null(add_cached(&w, 0));
  infer(&w, 1, 1, 0, NULL, 0);
  assert_int_equal(w.calls, 6);
  server_close(&w);
}

static void never_cached(void **state) {
  (void)state;
  server_world w;
  server_open(&w, 1 << 20);
  assert_null(add_cached(&w, 1)); /* a decoupled model refuses the cache */
  assert_non_null(strstr(isv_server_last_error(w.srv), "response cache"));
  server_close(&w);
  /* no cache on the server: the model runs every request */
  server_open(&w, 0);
  isv_model *m = add_cached(&w, 0);
  infer(&w, 1, 1, 0, NULL, 0);
  infer(&w, 1, 1, 0, NULL, 0);
  assert_int_equal(w.calls, 2);
  isv__stats_snap s;
  isv__model_stats(m, &s);
  assert_int_equal(s.cache_hit + s.cache_miss, 0);
  server_close(&w);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(siphash_known_answer), cmocka_unit_test(key_rules),
      cmocka_unit_test(lru_by_bytes),         cmocka_unit_test(threads_smoke),
      cmocka_unit_test(hits_skip_the_backend), cmocka_unit_test(never_cached),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
