#include "core/sequence.h"

#include <stdlib.h>
#include <string.h>

void isv__seqtab_init(isv__seqtab *t, const isv_mem *mem) {
  t->buckets = NULL;
  t->n_buckets = t->n = 0;
  t->mem = mem;
}

void isv__seqtab_free(isv__seqtab *t) {
  isv__free(t->buckets);
  isv__seqtab_init(t, t->mem);
}

static size_t hash(uint64_t id, const char *s, size_t len) {
  uint64_t h = 1469598103934665603ull;
  if (s == NULL) {
    h ^= id;
    h *= 1099511628211ull;
    return (size_t)(h ^ (h >> 29));
  }
  for (size_t i = 0; i < len; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
  return (size_t)h;
}

static int same(const isv__seq *q, uint64_t id, const char *s, size_t len) {
  if (s == NULL) return q->id_str == NULL && q->id == id;
  return q->id_str && strlen(q->id_str) == len && memcmp(q->id_str, s, len) == 0;
}

static size_t slot_of(const isv__seqtab *t, const isv__seq *q) {
  return hash(q->id, q->id_str, q->id_str ? strlen(q->id_str) : 0) & (t->n_buckets - 1);
}

isv__seq *isv__seqtab_find(const isv__seqtab *t, uint64_t id, const char *id_str, size_t len) {
  if (t->n_buckets == 0) return NULL;
  for (isv__seq *q = t->buckets[hash(id, id_str, len) & (t->n_buckets - 1)]; q; q = q->hnext)
    if (same(q, id, id_str, len)) return q;
  return NULL;
}

static int grow(isv__seqtab *t) {
  size_t nb = t->n_buckets ? 2 * t->n_buckets : 64;
  isv__seq **b = isv__calloc(t->mem, nb, sizeof *b);
  if (b == NULL) return -1;
  isv__seqtab old = *t;
  t->buckets = b;
  t->n_buckets = nb;
  for (size_t i = 0; i < old.n_buckets; i++)
    for (isv__seq *q = old.buckets[i], *next; q; q = next) {
      next = q->hnext;
      size_t h = slot_of(t, q);
      q->hnext = b[h];
      b[h] = q;
    }
  isv__free(old.buckets);
  return 0;
}

isv__seq *isv__seqtab_add(isv__seqtab *t, uint64_t id, const char *id_str, size_t len,
                          unsigned instance) {
  if (t->n >= t->n_buckets && grow(t) != 0) return NULL;
  isv__seq *q = isv__calloc(t->mem, 1, sizeof *q);
  if (q == NULL) return NULL;
  if (id_str) {
    if ((q->id_str = isv__malloc(t->mem, len + 1)) == NULL) {
      isv__free(q);
      return NULL;
    }
    memcpy(q->id_str, id_str, len);
    q->id_str[len] = '\0';
  } else {
    q->id = id;
  }
  q->instance = instance;
  size_t h = slot_of(t, q);
  q->hnext = t->buckets[h];
  t->buckets[h] = q;
  t->n++;
  return q;
}

void isv__seqtab_remove(isv__seqtab *t, isv__seq *q) {
  isv__seq **pp = &t->buckets[slot_of(t, q)];
  while (*pp && *pp != q) pp = &(*pp)->hnext;
  if (*pp == NULL) return;
  *pp = q->hnext;
  q->hnext = NULL;
  t->n--;
}

isv__seq *isv__seqtab_pop(isv__seqtab *t) {
  for (size_t i = 0; t->n && i < t->n_buckets; i++)
    if (t->buckets[i]) {
      isv__seq *q = t->buckets[i];
      t->buckets[i] = q->hnext;
      q->hnext = NULL;
      t->n--;
      return q;
    }
  return NULL;
}

void isv__seq_free(isv__seq *q) {
  if (q == NULL) return;
  isv__free(q->id_str);
  isv__free(q);
}
