/* System shared memory (Triton's extension): a server's registry of named regions of POSIX
 * shared memory objects, and the rules that let a request's input be read from a region and
 * its output be written into one.
 *
 * The client owns the object and may shrink it at any moment; a load or store through a
 * mapping past the object's new end is SIGBUS, which kills the process. So by default nothing
 * is mapped: an input is copied with pread(2) into the request's arena before the backend runs,
 * an output is written by the backend into library memory and copied with pwrite(2) after it
 * (isv__shm_write_output) — a shrunk object then gives a short read or a size check that fails
 * the request (400). Only a host that trusts its clients (isv_options_set_shared_memory_in_place)
 * gets the zero-copy form: the object mapped once at registration, inputs read in place,
 * outputs written straight into the mapping.
 *
 * A region is reference counted: the registry holds one reference, every request that uses it
 * one more (released when the request is freed). Unregistering drops the registry's; the
 * mapping goes with the last reference, so a region unregistered while requests read or write
 * it stays mapped until they are freed. Nothing here knows HTTP, JSON or protobuf: front ends
 * collect the tensor parameters with isv__shm_param and hand the result to isv__shm_input /
 * isv__shm_output.
 *
 * Thread rules: any thread — a group's registry (core/group.h) is used from every member's
 * loop, a large body is decoded on a worker; the list is under the registry's mutex. */
#ifndef ISV_CORE_SHM_H
#define ISV_CORE_SHM_H

#include "core/layer.h"

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "inferserve.h"


/* Longest region name and key accepted (a POSIX shm name is at most NAME_MAX). */
#define ISV__SHM_NAME_MAX 255

typedef struct isv__shm_region {
  struct isv__shm_region *next; /* in the registry */
  char *name, *key;
  uint64_t offset, byte_size; /* the region within the object */
  char *map;                  /* in place only: the object mapped from 0 to offset + byte_size */
  size_t map_len;
  int fd; /* kept open: the copies go through it (pread/pwrite), and every in-place use checks
           * the object was not shrunk under the mapping */
  atomic_uint refs;
} isv__shm_region;

typedef struct isv__shm_registry {
  uv_mutex_t mu; /* guards the list: decoding looks regions up off the loop thread */
  isv__shm_region *head;
  const isv_mem *mem;
  int ready;
  int enabled;  /* isv_options_set_shared_memory: else nothing can be registered */
  int in_place; /* isv_options_set_shared_memory_in_place: map regions, no copies (trusted) */
} isv__shm_registry;

#define ISV__SHM_DISABLED                                                                        \
  "system shared memory is not enabled on this server (the host enables it with "              \
  "isv_options_set_shared_memory; Triton's --allow-client-shm)"

int isv__shm_init(isv__shm_registry *s, const isv_mem *mem, int enabled, int in_place);
/* Unregister every region (mappings still used by requests stay until their release). */
void isv__shm_destroy(isv__shm_registry *s);

/* Register `name` as [offset, offset + byte_size) of the POSIX shared memory object `key`
 * (shm_open O_RDWR, fstat; mmap MAP_SHARED when in place). 0, or ISV_EBADREQ / ISV_ENOMEM with a message in
 * err: the name taken (Triton: "shared memory region 'x' already in manager"), no such object
 * or no permission, offset + byte_size beyond the object or overflowing, byte_size 0, empty
 * name or key; ISV_EUNIMPL when the host did not enable shared memory. */
int isv__shm_register(isv__shm_registry *s, const char *name, size_t name_len, const char *key,
                      size_t key_len, uint64_t offset, uint64_t byte_size, char *err,
                      size_t err_cap);
/* Unregister `name` (NULL or "": every region). Unregistering a name not registered is not an
 * error (Triton's rule). */
void isv__shm_unregister(isv__shm_registry *s, const char *name, size_t name_len);
/* Calls fn for each region (name NULL: all; else that one, ISV_ENOTFOUND with err set when it
 * is not registered — Triton's "Unable to find system shared memory region: 'x'"). Under the
 * registry's lock: fn must not call back into it. */
int isv__shm_status(isv__shm_registry *s, const char *name, size_t name_len,
                    void (*fn)(const isv__shm_region *g, void *data), void *data, char *err,
                    size_t err_cap);
/* Drop one reference (an isv_destructor: takes the region). */
void isv__shm_release(void *region);

/* A tensor's shared memory parameters as a front end collected them. */
typedef struct isv__shm_ref {
  const char *region; /* shared_memory_region (not NUL-terminated) */
  size_t region_len;
  uint64_t offset, byte_size;
  unsigned have_region : 1, have_size : 1, have_offset : 1;
} isv__shm_ref;

/* One tensor parameter: 1 when (key, v) is a shared memory parameter (taken into ref), 0 when
 * it is some other parameter, -1 when it is one with a wrong type or value (err says which:
 * region a string, byte_size and offset non-negative integers). */
int isv__shm_param(isv__shm_ref *ref, const char *key, size_t key_len, const isv_param *v,
                   char *err, size_t err_cap);
/* Whether any shared memory parameter was given. */
static inline int isv__shm_used(const isv__shm_ref *ref) {
  return ref->have_region || ref->have_size || ref->have_offset;
}

/* The region named (name, len) with a reference for the caller (isv__shm_release), or NULL.
 * Any thread. */
isv__shm_region *isv__shm_acquire(isv__shm_registry *s, const char *name, size_t len);
/* (p, n) quoted for a message, cut to fit buf. */
const char *isv__shm_shown(char *buf, size_t cap, const char *p, size_t n);

#endif
