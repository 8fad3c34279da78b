/* The response cache: a keyed hash of the request, a table of entries, an LRU list bounded by
 * bytes (core/rcache.h says what is hashed and why). */
#include "core/rcache.h"

#include <stdatomic.h>
#include <string.h>
#include <uv.h>

#include "codec/compiler.h"

/* ---- SipHash-2-4, 128-bit result ---------------------------------------------------------- */

static inline uint64_t rotl(uint64_t x, int b) { return (x << b) | (x >> (64 - b)); }

static inline uint64_t le64(const uint8_t *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--) v = (v << 8) | p[i];
  return v;
}

static inline void sipround(isv__siphash *s) {
  s->v0 += s->v1; s->v1 = rotl(s->v1, 13); s->v1 ^= s->v0; s->v0 = rotl(s->v0, 32);
  s->v2 += s->v3; s->v3 = rotl(s->v3, 16); s->v3 ^= s->v2;
  s->v0 += s->v3; s->v3 = rotl(s->v3, 21); s->v3 ^= s->v0;
  s->v2 += s->v1; s->v1 = rotl(s->v1, 17); s->v1 ^= s->v2; s->v2 = rotl(s->v2, 32);
}

static inline void compress(isv__siphash *s, uint64_t m) {
  s->v3 ^= m;
  sipround(s);
  sipround(s);
  s->v0 ^= m;
}

void isv__siphash_init(isv__siphash *s, const uint8_t key[16]) {
  uint64_t k0 = le64(key), k1 = le64(key + 8);
  s->v0 = k0 ^ 0x736f6d6570736575ull;
  s->v1 = k1 ^ 0x646f72616e646f6dull ^ 0xee; /* the 128-bit variant */
  s->v2 = k0 ^ 0x6c7967656e657261ull;
  s->v3 = k1 ^ 0x7465646279746573ull;
  s->tail = 0;
  s->len = 0;
}

void isv__siphash_update(isv__siphash *s, const void *data, size_t n) {
  const uint8_t *p = data;
  size_t have = s->len & 7;
  s->len += n;
  if (have) { /* complete the pending word */
    while (n && have < 8) {
      s->tail |= (uint64_t)*p++ << (8 * have++);
      n--;
    }
    if (have < 8) return;
    compress(s, s->tail);
    s->tail = 0;
  }
  for (; n >= 8; n -= 8, p += 8) compress(s, le64(p));
  for (size_t i = 0; i < n; i++) s->tail |= (uint64_t)p[i] << (8 * i);
}

void isv__siphash_final(isv__siphash *s, uint8_t out[16]) {
  compress(s, s->tail | ((uint64_t)(s->len & 0xff) << 56));
  s->v2 ^= 0xee;
  for (int i = 0; i < 4; i++) sipround(s);
  uint64_t a = s->v0 ^ s->v1 ^ s->v2 ^ s->v3;
  s->v1 ^= 0xdd;
  for (int i = 0; i < 4; i++) sipround(s);
  uint64_t b = s->v0 ^ s->v1 ^ s->v2 ^ s->v3;
  for (int i = 0; i < 8; i++) {
    out[i] = (uint8_t)(a >> (8 * i));
    out[8 + i] = (uint8_t)(b >> (8 * i));
  }
}

/* ---- the key ------------------------------------------------------------------------------ */

struct isv__rcache {
  const isv_mem *mem;
  uint8_t sipkey[16];
  uv_mutex_t mu;
  size_t max_bytes;
  /* under mu */
  struct rentry **buckets;
  size_t n_buckets; /* a power of two */
  struct rentry *mru, *lru;
  isv__rcache_stats st;
};

static void put_u64(isv__siphash *s, uint64_t v) {
  uint8_t b[8];
  for (int i = 0; i < 8; i++) b[i] = (uint8_t)(v >> (8 * i));
  isv__siphash_update(s, b, 8);
}

static void put_str(isv__siphash *s, const char *p, size_t n) {
  put_u64(s, n);
  isv__siphash_update(s, p, n);
}

static void digest(isv__siphash *s, isv__rkey *k) {
  uint8_t d[16];
  isv__siphash_final(s, d);
  k->lo = le64(d);
  k->hi = le64(d + 8);
}

/* Inputs and parameters are each hashed alone and their digests summed, lane by lane: the
 * sum does not depend on their order, and without the key nobody can aim two digests at one
 * sum. */
static void add_digest(isv__rkey *sum, isv__siphash *s) {
  isv__rkey d;
  digest(s, &d);
  sum->lo += d.lo;
  sum->hi += d.hi;
}

static void hash_input(const isv__rcache *c, const isv_tensor *t, isv__rkey *sum) {
  isv__siphash s;
  isv__siphash_init(&s, c->sipkey);
  put_str(&s, t->name, strlen(t->name));
  put_u64(&s, (uint64_t)t->dt);
  put_u64(&s, t->ndim);
  for (size_t i = 0; i < t->ndim; i++) put_u64(&s, (uint64_t)t->shape[i]);
  if (t->dt == ISV_BYTES) {
    const isv_bytes *b = t->data;
    put_u64(&s, t->count);
    for (size_t i = 0; i < t->count; i++) put_str(&s, b[i].ptr, b[i].len);
  } else {
    put_u64(&s, t->byte_size);
    if (t->byte_size) isv__siphash_update(&s, t->data, t->byte_size);
  }
  add_digest(sum, &s);
}

/* The parameters the library consumes itself (rcache.h's DECISION). */
static int param_ignored(const char *key) {
  static const char *const names[] = {"timeout",        "priority",       "binary_data_output",
                                      "sequence_id",    "sequence_start", "sequence_end"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (strcmp(key, names[i]) == 0) return 1;
  return 0;
}

static void hash_param(const isv__rcache *c, const isv__param_entry *p, isv__rkey *sum) {
  isv__siphash s;
  isv__siphash_init(&s, c->sipkey);
  put_str(&s, p->key, strlen(p->key));
  put_u64(&s, (uint64_t)p->val.type);
  switch (p->val.type) {
  case ISV_PARAM_BOOL: put_u64(&s, p->val.v.b != 0); break;
  case ISV_PARAM_INT64: put_u64(&s, (uint64_t)p->val.v.i64); break;
  case ISV_PARAM_UINT64: put_u64(&s, p->val.v.u64); break;
  case ISV_PARAM_DOUBLE: {
    uint64_t u;
    memcpy(&u, &p->val.v.d, sizeof u);
    put_u64(&s, u);
    break;
  }
  case ISV_PARAM_STRING: put_str(&s, p->val.v.s.ptr, p->val.v.s.len); break;
  default: break;
  }
  add_digest(sum, &s);
}

void isv__rcache_key(const isv__rcache *c, const isv_request *r, uint64_t serial,
                     isv__rkey *out) {
  const isv_model *m = r->model;
  isv__siphash s;
  isv__siphash_init(&s, c->sipkey);
  put_str(&s, m->cfg->name, strlen(m->cfg->name));
  put_str(&s, m->version, strlen(m->version));
  put_u64(&s, serial);
  isv__rkey in = {0, 0}, par = {0, 0};
  for (size_t i = 0; i < r->n_inputs; i++) hash_input(c, &r->inputs[i], &in);
  put_u64(&s, r->n_inputs);
  put_u64(&s, in.lo);
  put_u64(&s, in.hi);
  put_u64(&s, r->n_req_outputs);
  for (size_t i = 0; i < r->n_req_outputs; i++)
    put_str(&s, r->req_outputs[i].name, strlen(r->req_outputs[i].name));
  size_t np = 0;
  for (size_t i = 0; i < r->n_params; i++) {
    if (param_ignored(r->params[i].key)) continue;
    hash_param(c, &r->params[i], &par);
    np++;
  }
  put_u64(&s, np);
  put_u64(&s, par.lo);
  put_u64(&s, par.hi);
  digest(&s, out);
}

/* ---- entries ------------------------------------------------------------------------------ */

typedef struct rout {
  const char *name;
  isv_datatype dt;
  const int64_t *shape;
  size_t ndim;
  const void *data; /* BYTES: an isv_bytes array pointing into the block */
  size_t count;
  size_t byte_size; /* what isv_request_set_output expects (BYTES: the element array's) */
} rout;

typedef struct rentry {
  isv__rkey key;
  struct rentry *hnext;
  struct rentry *prev, *next; /* the LRU list: prev toward the most recent */
  atomic_uint refs;           /* the cache's while linked, + one per copy running */
  size_t cost;
  size_t n_out, n_params;
  rout *outs;
  isv__param_entry *params;
} rentry;

int isv__rcache_new(const isv_mem *mem, size_t max_bytes, isv__rcache **out) {
  *out = NULL;
  if (max_bytes == 0) return ISV_EINVAL;
  isv__rcache *c = isv__calloc(mem, 1, sizeof *c);
  if (c == NULL) return ISV_ENOMEM;
  c->mem = mem;
  c->max_bytes = max_bytes;
  c->st.max_bytes = max_bytes;
  c->n_buckets = 64;
  c->buckets = isv__calloc(mem, c->n_buckets, sizeof *c->buckets);
  if (c->buckets == NULL || uv_mutex_init(&c->mu) != 0) {
    isv__free(c->buckets);
    isv__free(c);
    return ISV_ENOMEM;
  }
  /* the hash's key: unpredictable where the system can say so; else the clock and the
   * address (still keyed, only less secret) */
  if (uv_random(NULL, NULL, c->sipkey, sizeof c->sipkey, 0, NULL) != 0) {
    uint64_t a = uv_hrtime(), b = (uint64_t)(uintptr_t)c;
    memcpy(c->sipkey, &a, 8);
    memcpy(c->sipkey + 8, &b, 8);
  }
  *out = c;
  return 0;
}

static void entry_unref(rentry *e) {
  if (atomic_fetch_sub_explicit(&e->refs, 1, memory_order_acq_rel) == 1) isv__free(e);
}

void isv__rcache_free(isv__rcache *c) {
  if (c == NULL) return;
  for (rentry *e = c->mru, *next; e; e = next) {
    next = e->next;
    entry_unref(e);
  }
  uv_mutex_destroy(&c->mu);
  isv__free(c->buckets);
  isv__free(c);
}

static rentry **slot(isv__rcache *c, const isv__rkey *k) {
  rentry **pp = &c->buckets[k->lo & (c->n_buckets - 1)];
  while (*pp && ((*pp)->key.lo != k->lo || (*pp)->key.hi != k->hi)) pp = &(*pp)->hnext;
  return pp;
}

static void lru_unlink(isv__rcache *c, rentry *e) {
  if (e->prev) e->prev->next = e->next;
  else c->mru = e->next;
  if (e->next) e->next->prev = e->prev;
  else c->lru = e->prev;
  e->prev = e->next = NULL;
}

static void lru_front(isv__rcache *c, rentry *e) {
  e->prev = NULL;
  e->next = c->mru;
  if (c->mru) c->mru->prev = e;
  c->mru = e;
  if (c->lru == NULL) c->lru = e;
}

/* Under mu: take e out of the table and the list; its memory goes with its last reference. */
static void drop(isv__rcache *c, rentry *e) {
  rentry **pp = slot(c, &e->key);
  ISV_ASSERT(*pp == e, "a linked entry is in the table");
  *pp = e->hnext;
  lru_unlink(c, e);
  c->st.bytes -= e->cost;
  c->st.entries--;
  entry_unref(e);
}

/* Under mu: twice the buckets when there are more entries than buckets (no failure: a table
 * that cannot grow only has longer chains). */
static void maybe_grow(isv__rcache *c) {
  if (c->st.entries <= c->n_buckets || c->n_buckets > SIZE_MAX / 2 / sizeof(rentry *)) return;
  size_t n = c->n_buckets * 2;
  rentry **b = isv__calloc(c->mem, n, sizeof *b);
  if (b == NULL) return;
  for (size_t i = 0; i < c->n_buckets; i++) {
    for (rentry *e = c->buckets[i], *next; e; e = next) {
      next = e->hnext;
      rentry **pp = &b[e->key.lo & (n - 1)];
      e->hnext = *pp;
      *pp = e;
    }
  }
  isv__free(c->buckets);
  c->buckets = b;
  c->n_buckets = n;
}

int isv__rcache_answer(isv__rcache *c, const isv__rkey *k, isv_request *r, uint64_t *ns) {
  uint64_t t0 = uv_hrtime();
  uv_mutex_lock(&c->mu);
  rentry *e = *slot(c, k);
  c->st.lookups++;
  if (e) {
    lru_unlink(c, e);
    lru_front(c, e);
    atomic_fetch_add_explicit(&e->refs, 1, memory_order_relaxed);
  }
  uv_mutex_unlock(&c->mu);
  int hit = 0;
  if (e) { /* copied out of the lock: the reference keeps the block */
    hit = 1;
    for (size_t i = 0; hit && i < e->n_out; i++) {
      const rout *o = &e->outs[i];
      hit = isv_request_set_output(r, o->name, o->dt, o->shape, o->ndim, o->data, o->byte_size,
                                   ISV_TRANSIENT) == 0;
    }
    for (size_t i = 0; hit && i < e->n_params; i++)
      hit = isv__request_add_resp_param(r, e->params[i].key, &e->params[i].val) == 0;
    if (!hit) { /* out of memory: as if it were not there (the arena keeps what was taken) */
      r->n_outputs = 0;
      r->n_resp_params = 0;
      r->misuse = NULL;
    }
    entry_unref(e);
  }
  uint64_t dt = uv_hrtime() - t0;
  uv_mutex_lock(&c->mu);
  if (hit) c->st.hits++;
  else c->st.misses++;
  c->st.lookup_ns += dt;
  uv_mutex_unlock(&c->mu);
  *ns = dt;
  return hit;
}

/* A bump allocator over the entry's block: first run with base NULL to measure. */
typedef struct bump {
  char *base;
  size_t at;
} bump;

static void *take(bump *b, size_t n, size_t align) {
  b->at = (b->at + align - 1) & ~(align - 1);
  void *p = b->base ? b->base + b->at : NULL;
  b->at += n;
  return p;
}

static char *take_str(bump *b, const char *s, size_t n) {
  char *p = take(b, n + 1, 1);
  if (p) {
    memcpy(p, s, n);
    p[n] = '\0';
  }
  return p;
}

/* Lay r's answer out in b (measuring when b->base is NULL). */
static void layout(bump *b, rentry *e, const isv_request *r) {
  rentry *h = take(b, sizeof *h, _Alignof(max_align_t));
  rout *outs = take(b, r->n_outputs * sizeof *outs, _Alignof(rout));
  isv__param_entry *ps = take(b, r->n_resp_params * sizeof *ps, _Alignof(isv__param_entry));
  (void)h;
  if (e) {
    e->outs = outs;
    e->params = ps;
    e->n_out = r->n_outputs;
    e->n_params = r->n_resp_params;
  }
  for (size_t i = 0; i < r->n_outputs; i++) {
    const isv_tensor *t = &r->outputs[i];
    int64_t *shape = take(b, t->ndim * sizeof *shape, _Alignof(int64_t));
    char *name = take_str(b, t->name, strlen(t->name));
    size_t arr = t->dt == ISV_BYTES ? t->count * sizeof(isv_bytes) : t->byte_size;
    void *data = take(b, arr, 16);
    if (e) {
      if (t->ndim) memcpy(shape, t->shape, t->ndim * sizeof *shape);
      outs[i] = (rout){name, t->dt, shape, t->ndim, data, t->count, arr};
    }
    if (t->dt == ISV_BYTES) {
      const isv_bytes *src = t->data;
      isv_bytes *dst = data;
      for (size_t j = 0; j < t->count; j++) {
        char *p = take(b, src[j].len, 1);
        if (e) {
          if (src[j].len) memcpy(p, src[j].ptr, src[j].len);
          dst[j] = (isv_bytes){src[j].len ? p : NULL, src[j].len};
        }
      }
    } else if (e && arr) {
      memcpy(data, t->data, arr);
    }
  }
  for (size_t i = 0; i < r->n_resp_params; i++) {
    const isv__param_entry *p = &r->resp_params[i];
    char *key = take_str(b, p->key, strlen(p->key));
    char *s = p->val.type == ISV_PARAM_STRING ? take_str(b, p->val.v.s.ptr, p->val.v.s.len) : NULL;
    if (e) {
      ps[i].key = key;
      ps[i].val = p->val;
      if (s) ps[i].val.v.s.ptr = s;
    }
  }
}

int isv__rcache_store(isv__rcache *c, const isv__rkey *k, const isv_request *r, uint64_t *ns) {
  uint64_t t0 = uv_hrtime();
  *ns = 0;
  bump b = {NULL, 0};
  layout(&b, NULL, r);
  size_t cost = b.at;
  if (cost > c->max_bytes) return 1;
  char *block = isv__malloc(c->mem, cost);
  if (block == NULL) return ISV_ENOMEM;
  rentry *e = (rentry *)(void *)block;
  memset(e, 0, sizeof *e);
  b = (bump){block, 0};
  layout(&b, e, r);
  ISV_ASSERT(b.at == cost, "the layout measured is the layout written");
  e->key = *k;
  e->cost = cost;
  atomic_init(&e->refs, 1);
  uv_mutex_lock(&c->mu);
  rentry *old = *slot(c, k);
  if (old) drop(c, old); /* two misses of one key raced: the later answer stays */
  while (c->st.bytes + cost > c->max_bytes && c->lru) {
    drop(c, c->lru);
    c->st.evictions++;
  }
  rentry **pp = slot(c, k);
  e->hnext = *pp;
  *pp = e;
  lru_front(c, e);
  c->st.bytes += cost;
  c->st.entries++;
  c->st.inserts++;
  maybe_grow(c);
  uint64_t dt = uv_hrtime() - t0;
  c->st.insert_ns += dt;
  uv_mutex_unlock(&c->mu);
  *ns = dt;
  return 0;
}

int isv__rcache_has(isv__rcache *c, const isv__rkey *k) {
  uv_mutex_lock(&c->mu);
  int has = *slot(c, k) != NULL;
  uv_mutex_unlock(&c->mu);
  return has;
}

void isv__rcache_stats_get(isv__rcache *c, isv__rcache_stats *out) {
  uv_mutex_lock(&c->mu);
  *out = c->st;
  uv_mutex_unlock(&c->mu);
}
