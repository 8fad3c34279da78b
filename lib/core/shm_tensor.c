/* Tensors in system shared memory regions (core/shm_tensor.h). */
#define _GNU_SOURCE /* pread, pwrite under -std=c11 */
#include "core/shm_tensor.h"
#include "codec/datatype.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "codec/raw_bytes.h"

/* The region ref names, checked against its bounds, with a reference r holds until it is
 * freed. */
static int acquire(isv_request *r, const isv__shm_ref *ref, const char *what, const char *name,
                   isv__shm_region **out) {
  if (!ref->have_region || !ref->have_size)
    return isv__request_fail(r, ISV_EBADREQ, "%s '%s': shared memory needs both "
                             "'shared_memory_region' and 'shared_memory_byte_size'", what, name);
  isv__shm_registry *s = r->core->shm;
  if (!s->enabled)
    return isv__request_fail(r, ISV_EBADREQ, "%s '%s' names a shared memory region, but %s", what,
                             name, ISV__SHM_DISABLED);
  char nb[80];
  isv__shm_shown(nb, sizeof nb, ref->region, ref->region_len);
  isv__shm_region *g = isv__shm_acquire(s, ref->region, ref->region_len);
  if (g == NULL)
    return isv__request_fail(r, ISV_EBADREQ, "%s '%s': Unable to find shared memory region: "
                             "'%s'", what, name, nb);
  if (isv__request_keep_ref(r, g, isv__shm_release) != 0) {
    isv__shm_release(g);
    return isv__request_fail(r, ISV_ENOMEM, "out of memory");
  }
  if (ref->byte_size > UINT64_MAX - ref->offset)
    return isv__request_fail(r, ISV_EBADREQ, "%s '%s': shared_memory_offset %llu + "
                             "shared_memory_byte_size %llu overflows", what, name,
                             (unsigned long long)ref->offset,
                             (unsigned long long)ref->byte_size);
  if (ref->offset + ref->byte_size > g->byte_size)
    return isv__request_fail(r, ISV_EBADREQ, "%s '%s': Invalid offset + byte size for shared "
                             "memory region: '%s' (offset %llu + byte_size %llu, the region "
                             "holds %llu bytes)", what, name, nb,
                             (unsigned long long)ref->offset, (unsigned long long)ref->byte_size,
                             (unsigned long long)g->byte_size);
  *out = g;
  return 0;
}

/* The object's size now, or -1. */
static int64_t object_size(const isv__shm_region *g) {
  struct stat st;
  return fstat(g->fd, &st) == 0 ? (int64_t)st.st_size : -1;
}

/* r fails because g's object no longer holds [pos, pos + need) (pos from the object's start). */
static int shrunk(isv_request *r, const char *what, const char *name, const isv__shm_region *g,
                  uint64_t pos, uint64_t need) {
  int64_t have = object_size(g);
  return isv__request_fail(r, ISV_EBADREQ, "%s '%s': shared memory region '%s' was shrunk below "
                           "the region while the request used it (its object '%s' holds %lld "
                           "bytes, the tensor needs bytes %llu to %llu)", what, name, g->name,
                           g->key, (long long)(have < 0 ? 0 : have), (unsigned long long)pos,
                           (unsigned long long)(pos + need));
}

/* Whether the object still covers [pos, pos + n): checked before every in-place use (a client
 * racing it can still raise SIGBUS there: the reason in place is for trusted clients only) and
 * before every pwrite (which would grow a shrunk object back). */
static int covers(const isv__shm_region *g, uint64_t pos, uint64_t n) {
  int64_t have = object_size(g);
  return have >= 0 && (uint64_t)have >= pos && (uint64_t)have - pos >= n;
}

/* Up to n bytes at pos of fd into dst, through EINTR and the kernel's per-call cap: what was
 * read (short at the object's end: a shrunk object reads short where a mapping faults). */
static size_t read_at(int fd, void *dst, size_t n, uint64_t pos) {
  size_t done = 0;
  while (done < n) {
    ssize_t k = pread(fd, (char *)dst + done, n - done, (off_t)(pos + done));
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) break;
    done += (size_t)k;
  }
  return done;
}

/* n bytes of src into fd at pos: what was written (short on ENOSPC and the like). */
static size_t write_at(int fd, const void *src, size_t n, uint64_t pos) {
  size_t done = 0;
  while (done < n) {
    ssize_t k = pwrite(fd, (const char *)src + done, n - done, (off_t)(pos + done));
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) break;
    done += (size_t)k;
  }
  return done;
}

/* The bytes of input `name` for the backend: a private copy in r's arena (the default), or a
 * pointer into the mapping (in place). */
static int input_bytes(isv_request *r, const char *name, const isv__shm_region *g,
                       uint64_t pos, size_t size, char **out) {
  if (g->map) {
    if (size && !covers(g, pos, size)) return shrunk(r, "input", name, g, pos, size);
    *out = g->map + pos;
    return 0;
  }
  char *buf = isv__arena_alloc(&r->arena, size);
  if (buf == NULL) return isv__request_fail(r, ISV_ENOMEM, "out of memory");
  if (read_at(g->fd, buf, size, pos) != size) return shrunk(r, "input", name, g, pos, size);
  *out = buf;
  return 0;
}

/* BYTES input: its u32-LE length + bytes elements split in place (p: the copy or mapping). */
static int bytes_input(isv_request *r, const char *name, char *p, size_t size, size_t count,
                       void **data, size_t *byte_size) {
  size_t n;
  isv__rawbytes_err e;
  if (isv__rawbytes_count(p, size, &n, &e) != 0)
    return isv__request_fail(r, ISV_EBADREQ, "input '%s': the BYTES elements in shared memory "
                             "overrun shared_memory_byte_size (%zu) at element %zu", name, size,
                             e.elem);
  if (n != count)
    return isv__request_fail(r, ISV_EBADREQ, "input '%s': shared memory holds %zu BYTES "
                             "elements, the shape needs %zu", name, n, count);
  isv_bytes *b = isv__arena_alloc(&r->arena, (n ? n : 1) * sizeof *b);
  if (b == NULL) return isv__request_fail(r, ISV_ENOMEM, "out of memory");
  isv__rawbytes_split(p, n, b);
  *data = b;
  *byte_size = isv__bytes_total(b, n);
  return 0;
}

int isv__shm_input(isv_request *r, const isv__shm_ref *ref, const char *name, isv_datatype dt,
                   size_t count, size_t bytes, void **data, size_t *byte_size) {
  isv__shm_region *g = NULL; /* set when acquire() returns 0 (GCC cannot always tell) */
  if (acquire(r, ref, "input", name, &g)) return r->status;
  size_t size = (size_t)ref->byte_size;
  uint64_t pos = g->offset + ref->offset; /* from the object's start */
  if (dt != ISV_BYTES && size != bytes)
    return isv__request_fail(r, ISV_EBADREQ, "input '%s': shared_memory_byte_size is %zu but its "
                             "shape of %s needs %zu bytes", name, size, isv_datatype_name(dt),
                             bytes);
  /* the mapping starts at the object's start, a page boundary: one rule in both forms */
  size_t align = dt == ISV_BYTES ? 1 : isv__dt_size(dt);
  if (align > 1 && pos % align != 0)
    return isv__request_fail(r, ISV_EBADREQ, "input '%s': shared_memory_offset leaves its %s "
                             "data misaligned (a multiple of %zu bytes from the object's start "
                             "is needed)", name, isv_datatype_name(dt), align);
  char *p = NULL;
  if (input_bytes(r, name, g, pos, size, &p)) return r->status;
  if (dt == ISV_BYTES) return bytes_input(r, name, p, size, count, data, byte_size);
  *data = p;
  *byte_size = bytes;
  return 0;
}

int isv__shm_output(isv_request *r, const isv__shm_ref *ref, isv__req_output *o) {
  isv__shm_region *g = NULL; /* set when acquire() returns 0 (GCC cannot always tell) */
  if (acquire(r, ref, "output", o->name, &g)) return r->status;
  uint64_t pos = g->offset + ref->offset;
  /* refused early, before the backend works for nothing (checked again when written) */
  if (ref->byte_size && !covers(g, pos, ref->byte_size))
    return shrunk(r, "output", o->name, g, pos, ref->byte_size);
  isv__out_dest *d = isv__arena_calloc(&r->arena, 1, sizeof *d);
  char *rn = isv__arena_strndup(&r->arena, ref->region, ref->region_len);
  if (d == NULL || rn == NULL) return isv__request_fail(r, ISV_ENOMEM, "out of memory");
  d->p = g->map ? g->map + pos : NULL;
  d->shm = g->map ? NULL : g;
  d->cap = (size_t)ref->byte_size;
  d->region = rn;
  d->offset = ref->offset;
  o->dest = d;
  return 0;
}

/* t's bytes as the region holds them: its data, or for BYTES their u32-LE length + bytes form
 * in r's arena. NULL when out of memory. */
static const void *wire_form(isv_request *r, const isv_tensor *t, size_t need) {
  if (t->dt != ISV_BYTES) return t->data;
  char *w = isv__arena_alloc(&r->arena, need);
  if (w) isv__rawbytes_write(w, t->data, t->count);
  return w;
}

int isv__shm_write_output(isv_request *r, const isv__out_dest *d, const isv_tensor *t,
                          size_t need) {
  const isv__shm_region *g = d->shm;
  uint64_t pos = g->offset + d->offset;
  if (need == 0) return 0;
  const void *src = wire_form(r, t, need);
  if (src == NULL) return isv__request_fail(r, ISV_ENOMEM, "out of memory");
  /* a client shrinking it between this check and the write only gets its object grown back */
  if (!covers(g, pos, need)) return shrunk(r, "output", t->name, g, pos, need);
  errno = 0;
  if (write_at(g->fd, src, need, pos) != need) {
    int e = errno;
    return isv__request_fail(r, ISV_EBADREQ, "output '%s': writing %zu bytes into shared memory "
                             "region '%s' (object '%s') failed: %s", t->name, need, g->name,
                             g->key, e ? strerror(e) : "short write");
  }
  return 0;
}
