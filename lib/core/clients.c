#include "core/clients.h"

#include <stdio.h>
#include <string.h>

#include "inferserve.h"

struct isv__client {
  isv__client *next;
  isv__clients *t;
  unsigned n;
  char key[ISV__CLIENT_KEY_MAX];
};

int isv__clients_init(isv__clients *t, const isv_mem *mem) {
  memset(t, 0, sizeof *t);
  t->mem = mem;
  if (uv_mutex_init(&t->mu) != 0) return ISV_ENOMEM;
  t->ready = 1;
  return 0;
}

void isv__clients_free(isv__clients *t) {
  if (!t->ready) return;
  for (size_t i = 0; i < ISV__CLIENT_BUCKETS; i++)
    for (isv__client *c = t->buckets[i], *n; c; c = n) {
      n = c->next;
      isv__free(c);
    }
  memset(t->buckets, 0, sizeof t->buckets);
  uv_mutex_destroy(&t->mu);
  t->ready = 0;
}

static size_t bucket_of(const char *key) {
  size_t h = 5381;
  for (const unsigned char *p = (const unsigned char *)key; *p; p++) h = h * 33 + *p;
  return h % ISV__CLIENT_BUCKETS;
}

isv__client *isv__clients_take(isv__clients *t, const char *key, unsigned max, int *full) {
  char k[ISV__CLIENT_KEY_MAX];
  snprintf(k, sizeof k, "%s", key);
  *full = 0;
  uv_mutex_lock(&t->mu);
  isv__client **b = &t->buckets[bucket_of(k)], *c = *b;
  while (c && strcmp(c->key, k) != 0) c = c->next;
  if (c == NULL && (c = isv__calloc(t->mem, 1, sizeof *c)) != NULL) {
    c->t = t;
    memcpy(c->key, k, sizeof k);
    c->next = *b;
    *b = c;
  }
  if (c && c->n >= max) {
    *full = 1;
    c = NULL;
  } else if (c) {
    c->n++;
  }
  uv_mutex_unlock(&t->mu);
  return c;
}

void isv__client_release(isv__client *c) {
  if (c == NULL) return;
  isv__clients *t = c->t;
  uv_mutex_lock(&t->mu);
  if (--c->n == 0) {
    isv__client **p = &t->buckets[bucket_of(c->key)];
    while (*p != c) p = &(*p)->next;
    *p = c->next;
    isv__free(c);
  }
  uv_mutex_unlock(&t->mu);
}
