/* Requests in flight per client (isv_options_set_max_client_requests): a count per client key
 * — the authorizer's isv_auth_set_client, else the peer's address. One table per server, or
 * one for a whole group (core/group.h): a client whose connections land on several loops is
 * still held to one limit. Any thread: the table has its own mutex. */
#ifndef ISV_CORE_CLIENTS_H
#define ISV_CORE_CLIENTS_H

#include "core/layer.h"

#include <uv.h>

#include "codec/mem.h"

#define ISV__CLIENT_BUCKETS 64
#define ISV__CLIENT_KEY_MAX 128

typedef struct isv__client isv__client;

typedef struct isv__clients {
  uv_mutex_t mu;
  const isv_mem *mem;
  isv__client *buckets[ISV__CLIENT_BUCKETS]; /* keys with requests in flight */
  int ready;
} isv__clients;

int isv__clients_init(isv__clients *t, const isv_mem *mem);
/* Every entry still counted is dropped (nothing may be released after this). */
void isv__clients_free(isv__clients *t);

/* One more request for `key` (truncated to ISV__CLIENT_KEY_MAX - 1 bytes), at most `max` (>= 1) at
 * once: its count, to release once the request is over; NULL when key has max already
 * (*full = 1) or out of memory (*full = 0). */
isv__client *isv__clients_take(isv__clients *t, const char *key, unsigned max, int *full);
/* The request is over (NULL is a no-op). */
void isv__client_release(isv__client *c);

#endif
