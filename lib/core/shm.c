/* System shared memory regions (shm.h). */
#define _GNU_SOURCE /* shm_open, mmap flags under -std=c11 */
#include "core/shm.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "codec/mem.h"
#include "codec/span.h"

int isv__shm_init(isv__shm_registry *s, const isv_mem *mem, int enabled, int in_place) {
  memset(s, 0, sizeof *s);
  s->mem = mem;
  s->enabled = enabled;
  s->in_place = in_place;
  if (uv_mutex_init(&s->mu) != 0) return ISV_ENOMEM;
  s->ready = 1;
  return 0;
}

void isv__shm_release(void *p) {
  isv__shm_region *g = p;
  if (g == NULL || atomic_fetch_sub(&g->refs, 1) != 1) return;
  if (g->map) munmap(g->map, g->map_len);
  if (g->fd >= 0) close(g->fd);
  isv__free(g->name);
  isv__free(g->key);
  isv__free(g);
}

void isv__shm_destroy(isv__shm_registry *s) {
  if (!s->ready) return;
  isv__shm_unregister(s, NULL, 0);
  uv_mutex_destroy(&s->mu);
  s->ready = 0;
}

static int span_eq(const char *a, const char *b, size_t blen) {
  return strlen(a) == blen && memcmp(a, b, blen) == 0;
}

/* Under s->mu. */
static isv__shm_region *find(isv__shm_registry *s, const char *name, size_t len) {
  for (isv__shm_region *g = s->head; g; g = g->next)
    if (span_eq(g->name, name, len)) return g;
  return NULL;
}

static char *dup_span(const isv_mem *mem, const char *p, size_t n) {
  char *d = isv__malloc(mem, n + 1);
  if (d) {
    memcpy(d, p, n);
    d[n] = '\0';
  }
  return d;
}

/* Printable, bounded copy of a client's string for a message. */
const char *isv__shm_shown(char *buf, size_t cap, const char *p, size_t n) {
  size_t k = 0;
  for (size_t i = 0; i < n && k + 4 < cap; i++)
    buf[k++] = (p[i] >= 0x20 && p[i] < 0x7f) ? p[i] : '?';
  if (k + 4 >= cap && n > k) {
    memcpy(buf + k, "...", 3);
    k += 3;
  }
  buf[k] = '\0';
  return buf;
}

/* The trusted (in place) form only: the object mapped from 0 — mmap wants a page-aligned file
 * offset, a region's may be anything. 0, or -1 with errno. */
static int map_object(int fd, size_t len, char **map) {
  void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) return -1;
  *map = p;
  return 0;
}

/* The POSIX shared memory object `key` opened read-write, as glibc's shm_open opens it — a
 * file of /dev/shm, leading slashes dropped, no other slash, never a symlink — but through
 * open(2) itself: sanitizers see the descriptor made (ThreadSanitizer took a region's later
 * close for a race on a socket that once had its number, closed by libuv out of its sight).
 * The descriptor, or -1 with errno. */
static int open_object(const char *key, size_t key_len) {
  while (key_len && key[0] == '/') key++, key_len--;
  if (key_len == 0 || memchr(key, '/', key_len) || (key_len == 1 && key[0] == '.') ||
      (key_len == 2 && key[0] == '.' && key[1] == '.')) {
    errno = EINVAL;
    return -1;
  }
  char path[sizeof "/dev/shm/" + ISV__SHM_NAME_MAX];
  snprintf(path, sizeof path, "/dev/shm/%.*s", (int)key_len, key);
  return open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
}

int isv__shm_register(isv__shm_registry *s, const char *name, size_t name_len, const char *key,
                      size_t key_len, uint64_t offset, uint64_t byte_size, char *err,
                      size_t err_cap) {
  char nb[80], kb[80];
  if (name_len == 0 || name_len > ISV__SHM_NAME_MAX || memchr(name, '\0', name_len)) {
    snprintf(err, err_cap, "a shared memory region needs a name of 1 to %d bytes",
             ISV__SHM_NAME_MAX);
    return ISV_EBADREQ;
  }
  isv__shm_shown(nb, sizeof nb, name, name_len);
  if (key_len == 0 || key_len > ISV__SHM_NAME_MAX || memchr(key, '\0', key_len)) {
    snprintf(err, err_cap, "failed to register shared memory region '%s': 'key' must name a "
             "POSIX shared memory object (1 to %d bytes, e.g. \"/my_region\")", nb,
             ISV__SHM_NAME_MAX);
    return ISV_EBADREQ;
  }
  isv__shm_shown(kb, sizeof kb, key, key_len);
  if (byte_size == 0) { /* nothing to map (Triton's mmap of 0 bytes fails too) */
    snprintf(err, err_cap, "failed to register shared memory region '%s': byte_size must be "
             "greater than 0", nb);
    return ISV_EBADREQ;
  }
  if (byte_size > UINT64_MAX - offset || offset + byte_size > (uint64_t)SIZE_MAX ||
      offset + byte_size > (uint64_t)INT64_MAX) {
    snprintf(err, err_cap, "failed to register shared memory region '%s': offset %llu + "
             "byte_size %llu overflows", nb, (unsigned long long)offset,
             (unsigned long long)byte_size);
    return ISV_EBADREQ;
  }
  if (!s->enabled) {
    snprintf(err, err_cap, "%s", ISV__SHM_DISABLED);
    return ISV_EUNIMPL;
  }
  uv_mutex_lock(&s->mu);
  int taken = find(s, name, name_len) != NULL;
  uv_mutex_unlock(&s->mu);
  if (taken) { /* Triton's text; it refuses a second registration whatever its key */
    snprintf(err, err_cap, "shared memory region '%s' already in manager", nb);
    return ISV_EBADREQ;
  }
  int fd = open_object(key, key_len);
  if (fd < 0) {
    int e = errno;
    snprintf(err, err_cap, "Unable to open shared memory region: '%s': %s%s", kb, strerror(e),
             e == ENOENT ? " (no such shared memory object)"
             : e == EACCES ? " (the server may not read and write it)" : "");
    return ISV_EBADREQ;
  }
  struct stat st;
  if (fstat(fd, &st) != 0) {
    int e = errno;
    close(fd);
    snprintf(err, err_cap, "Invalid shared memory region: '%s': %s", kb, strerror(e));
    return ISV_EBADREQ;
  }
  if ((uint64_t)st.st_size < offset + byte_size) {
    close(fd);
    snprintf(err, err_cap, "failed to register shared memory region '%s': offset %llu + "
             "byte_size %llu is beyond the end of '%s' (%lld bytes)", nb,
             (unsigned long long)offset, (unsigned long long)byte_size, kb,
             (long long)st.st_size);
    return ISV_EBADREQ;
  }
  size_t len = (size_t)(offset + byte_size);
  char *map = NULL;
  if (s->in_place && map_object(fd, len, &map) != 0) {
    int e = errno;
    close(fd);
    snprintf(err, err_cap, "failed to register shared memory region '%s': unable to map '%s': "
             "%s", nb, kb, strerror(e));
    return ISV_EBADREQ;
  }
  isv__shm_region *g = isv__malloc(s->mem, sizeof *g);
  if (g) {
    memset(g, 0, sizeof *g);
    g->name = dup_span(s->mem, name, name_len);
    g->key = dup_span(s->mem, key, key_len);
  }
  if (g == NULL || g->name == NULL || g->key == NULL) {
    if (g) {
      isv__free(g->name);
      isv__free(g->key);
      isv__free(g);
    }
    if (map) munmap(map, len);
    close(fd);
    snprintf(err, err_cap, "out of memory");
    return ISV_ENOMEM;
  }
  g->offset = offset;
  g->byte_size = byte_size;
  g->map = map;
  g->map_len = len;
  g->fd = fd;
  atomic_init(&g->refs, 1);
  uv_mutex_lock(&s->mu);
  if (find(s, name, name_len) != NULL) { /* registered meanwhile (another thread's host) */
    uv_mutex_unlock(&s->mu);
    isv__shm_release(g);
    snprintf(err, err_cap, "shared memory region '%s' already in manager", nb);
    return ISV_EBADREQ;
  }
  g->next = s->head;
  s->head = g;
  uv_mutex_unlock(&s->mu);
  return 0;
}

void isv__shm_unregister(isv__shm_registry *s, const char *name, size_t name_len) {
  isv__shm_region *gone = NULL;
  uv_mutex_lock(&s->mu);
  for (isv__shm_region **pp = &s->head; *pp;) {
    isv__shm_region *g = *pp;
    if (name == NULL || name_len == 0 || span_eq(g->name, name, name_len)) {
      *pp = g->next;
      g->next = gone;
      gone = g;
    } else {
      pp = &g->next;
    }
  }
  uv_mutex_unlock(&s->mu);
  while (gone) {
    isv__shm_region *next = gone->next;
    isv__shm_release(gone);
    gone = next;
  }
}

int isv__shm_status(isv__shm_registry *s, const char *name, size_t name_len,
                    void (*fn)(const isv__shm_region *g, void *data), void *data, char *err,
                    size_t err_cap) {
  int rc = 0;
  uv_mutex_lock(&s->mu);
  if (name && name_len) {
    isv__shm_region *g = find(s, name, name_len);
    if (g) {
      fn(g, data);
    } else {
      char nb[80];
      snprintf(err, err_cap, "Unable to find system shared memory region: '%s'",
               isv__shm_shown(nb, sizeof nb, name, name_len));
      rc = ISV_ENOTFOUND;
    }
  } else {
    /* oldest first: the order they were registered */
    size_t n = 0;
    for (isv__shm_region *g = s->head; g; g = g->next) n++;
    for (size_t i = n; i > 0; i--) {
      isv__shm_region *g = s->head;
      for (size_t k = 1; k < i; k++) g = g->next;
      fn(g, data);
    }
  }
  uv_mutex_unlock(&s->mu);
  return rc;
}

/* ---- tensor parameters ------------------------------------------------------------------- */

static int nonneg(const isv_param *v, uint64_t *out) {
  if (v->type == ISV_PARAM_INT64 && v->v.i64 >= 0) *out = (uint64_t)v->v.i64;
  else if (v->type == ISV_PARAM_UINT64) *out = v->v.u64;
  else return -1;
  return 0;
}

int isv__shm_param(isv__shm_ref *ref, const char *key, size_t key_len, const isv_param *v,
                   char *err, size_t err_cap) {
  if (ISV__SPAN_IS(key, key_len, "shared_memory_region")) {
    if (v->type != ISV_PARAM_STRING) {
      snprintf(err, err_cap, "'shared_memory_region' must be a string");
      return -1;
    }
    ref->region = v->v.s.ptr;
    ref->region_len = v->v.s.len;
    ref->have_region = 1;
    return 1;
  }
  if (ISV__SPAN_IS(key, key_len, "shared_memory_byte_size")) {
    if (nonneg(v, &ref->byte_size) != 0) {
      snprintf(err, err_cap, "'shared_memory_byte_size' must be a non-negative integer");
      return -1;
    }
    ref->have_size = 1;
    return 1;
  }
  if (ISV__SPAN_IS(key, key_len, "shared_memory_offset")) {
    if (nonneg(v, &ref->offset) != 0) {
      snprintf(err, err_cap, "'shared_memory_offset' must be a non-negative integer");
      return -1;
    }
    ref->have_offset = 1;
    return 1;
  }
  return 0;
}

isv__shm_region *isv__shm_acquire(isv__shm_registry *s, const char *name, size_t len) {
  uv_mutex_lock(&s->mu);
  isv__shm_region *g = find(s, name, len);
  if (g) atomic_fetch_add(&g->refs, 1);
  uv_mutex_unlock(&s->mu);
  return g;
}
