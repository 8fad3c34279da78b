/* The response cache (Triton's response_cache: isv_model_config_set_response_cache, sized by
 * isv_options_set_response_cache_bytes): a model version's answers kept by the request that
 * produced them, so that the same request again is answered without running the model.
 *
 * One cache per group of servers (core/group.h: a lone server is a group of one), shared by
 * every member's loop: a mutex guards the table and the LRU list; an entry being copied out
 * is held by a reference, so a copy runs outside the lock and an eviction meanwhile only
 * unlinks it.
 *
 * The key (isv__rcache_key): a 128-bit SipHash-2-4 under a random key drawn when the cache is
 * made — a keyed hash, so that a client cannot craft two requests with one key and have its
 * answer served to another client (an unkeyed fast hash can be collided on purpose). Hashed,
 * each with its length so that no two fields run into each other:
 *  - the model's name, version, and its registration's serial in the group (a version removed
 *    and registered again — a repository reload — never sees its predecessor's answers);
 *  - every input, sorted by name (the order a client lists them in does not change the
 *    answer): name, datatype, shape and data (BYTES: each element's length and bytes);
 *  - the requested outputs' names, in order (a backend may skip what is not requested:
 *    isv_request_is_output_requested). Their classification and destinations are not: they
 *    are applied after the backend (isv__request_postprocess), to a hit as to a miss;
 *  - every request parameter, sorted by key, with its type and value — DECISION: all of them
 *    but those the library itself consumes and never hands to the answer: "timeout" and
 *    "priority" (queueing), "binary_data_output" (the V2 encoding) and the sequence's
 *    (sequence models are never cached). A host's parameter may change the answer, so it is
 *    in the key; a client that sends a fresh one each time (a request id as a parameter)
 *    only misses. The request's "id" is not hashed: it is echoed, not computed.
 *
 * The value: the outputs (name, datatype, shape, data) and response parameters as the backend
 * left them (after a batch's split, before output selection), copied into one block. Its cost
 * is the block's size; the cache holds at most max_bytes of blocks, evicting the least
 * recently used (an entry larger than the whole cache is not stored).
 *
 * What is never stored (the scheduler's rule, core/scheduler.c): a failed or cancelled
 * request, one that passed its deadline, one answered on a streaming endpoint, and any answer
 * of a decoupled or sequence model (isv_server_add_model refuses the cache for those, as
 * Triton refuses it for decoupled models). */
#ifndef ISV_CORE_RCACHE_H
#define ISV_CORE_RCACHE_H

#include "core/layer.h"

#include <stddef.h>
#include <stdint.h>

#include "codec/mem.h"
#include "core/request.h"

typedef struct isv__rcache isv__rcache;

typedef struct isv__rkey {
  uint64_t lo, hi;
} isv__rkey;

/* A cache of at most max_bytes (> 0), its memory from mem (NULL: libc's). ISV_ENOMEM,
 * ISV_EINVAL (max_bytes 0). Any thread. */
int isv__rcache_new(const isv_mem *mem, size_t max_bytes, isv__rcache **out);
/* Frees every entry and the cache; no lookup may be running. NULL is a no-op. */
void isv__rcache_free(isv__rcache *c);

/* The key of r (bound to its model, validated) as the header says; serial: its model's
 * registration (isv__model_serial). Any thread: reads r only. */
void isv__rcache_key(const isv__rcache *c, const isv_request *r, uint64_t serial,
                     isv__rkey *out);

/* A hit: r gets a copy of the entry's outputs and response parameters (in its arena, as a
 * backend's would be) and 1 is returned. 0: a miss, or the copy ran out of memory (r is left
 * as it was: it runs as a miss). *ns: the time the lookup (and copy) took. Any thread. */
int isv__rcache_answer(isv__rcache *c, const isv__rkey *k, isv_request *r, uint64_t *ns);
/* Store r's outputs and response parameters under k, replacing an entry of that key,
 * evicting the least recently used entries to make room. 0 stored; 1 not stored (larger than
 * the cache); ISV_ENOMEM. *ns: the time it took. Any thread. */
int isv__rcache_store(isv__rcache *c, const isv__rkey *k, const isv_request *r, uint64_t *ns);

/* Whether an entry of key k is held (its place in the LRU order unchanged). Any thread. */
int isv__rcache_has(isv__rcache *c, const isv__rkey *k);

/* The cache's numbers (Triton's nv_cache_* server-wide metrics), read under its lock. */
typedef struct isv__rcache_stats {
  size_t max_bytes, bytes, entries;
  uint64_t lookups, hits, misses, evictions, inserts;
  uint64_t lookup_ns, insert_ns; /* summed */
} isv__rcache_stats;
void isv__rcache_stats_get(isv__rcache *c, isv__rcache_stats *out);

/* SipHash-2-4 with a 128-bit result (Aumasson and Bernstein), streamed: the hash the key is
 * made with, exposed for its known-answer test. */
typedef struct isv__siphash {
  uint64_t v0, v1, v2, v3;
  uint64_t tail; /* bytes not yet in a whole word, little-endian */
  size_t len;    /* bytes hashed so far */
} isv__siphash;
void isv__siphash_init(isv__siphash *s, const uint8_t key[16]);
void isv__siphash_update(isv__siphash *s, const void *data, size_t n);
void isv__siphash_final(isv__siphash *s, uint8_t out[16]);

#endif
