/* What the fault-safe shared memory path costs (issue #34): a tensor copied out of and into a
 * POSIX shared memory object through its fd (pread / pwrite: core/shm.c's default, a shrunk
 * object reads or writes short) against the same bytes touched through a mapping (the
 * in-place form of isv_options_set_shared_memory_in_place, which a shrunk object turns into
 * SIGBUS).
 *
 *   shm_copy [MiB ...]     (default: 1 64)
 *
 * One JSON line per size, GB/s = 10^9 tensor bytes per second, best of 5 rounds of ~0.3 s:
 *   pread_gb_per_s         pread of the whole tensor into a buffer already faulted in (the
 *                          request arena's big blocks come back from the buffer cache warm)
 *   pread_fresh_gb_per_s   the same into a buffer mmap'ed for each copy (a cold cache)
 *   pwrite_gb_per_s        pwrite of the tensor from a warm buffer into the object
 *   memcpy_in_gb_per_s     memcpy from the mapping into a warm buffer: the one copy a backend
 *                          that wants its own buffer makes in place
 *   memcpy_out_gb_per_s    memcpy into the mapping: isv_request_set_output's copy in place
 *   read_map_gb_per_s      a backend reading the tensor straight from the mapping (8-byte sum)
 *   read_copy_gb_per_s     the same backend reading the private copy instead: pread + sum, the
 *                          default path's input as the backend sees it */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static volatile uint64_t sink; /* keeps the reads observable */

typedef struct fixture {
  int fd;
  size_t n;
  char *map; /* the object, mapped */
  char *buf; /* warm private buffer */
} fixture;

static uint64_t sum64(const char *p, size_t n) {
  uint64_t s = 0, w;
  for (size_t i = 0; i + 8 <= n; i += 8) {
    memcpy(&w, p + i, 8);
    s += w;
  }
  return s;
}

static int read_all(int fd, char *dst, size_t n) {
  size_t done = 0;
  while (done < n) {
    ssize_t k = pread(fd, dst + done, n - done, (off_t)done);
    if (k <= 0) return -1;
    done += (size_t)k;
  }
  return 0;
}

static int write_all(int fd, const char *src, size_t n) {
  size_t done = 0;
  while (done < n) {
    ssize_t k = pwrite(fd, src + done, n - done, (off_t)done);
    if (k <= 0) return -1;
    done += (size_t)k;
  }
  return 0;
}

enum op { PREAD, PREAD_FRESH, PWRITE, MEMCPY_IN, MEMCPY_OUT, READ_MAP, READ_COPY, N_OPS };
static const char *const names[N_OPS] = {"pread",      "pread_fresh", "pwrite",    "memcpy_in",
                                         "memcpy_out", "read_map",    "read_copy"};

static int one(const fixture *f, enum op op) {
  switch (op) {
  case PREAD: return read_all(f->fd, f->buf, f->n);
  case PREAD_FRESH: {
    char *d = mmap(NULL, f->n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (d == MAP_FAILED) return -1;
    int rc = read_all(f->fd, d, f->n);
    munmap(d, f->n);
    return rc;
  }
  case PWRITE: return write_all(f->fd, f->buf, f->n);
  case MEMCPY_IN: memcpy(f->buf, f->map, f->n); return 0;
  case MEMCPY_OUT: memcpy(f->map, f->buf, f->n); return 0;
  case READ_MAP: sink += sum64(f->map, f->n); return 0;
  case READ_COPY:
    if (read_all(f->fd, f->buf, f->n) != 0) return -1;
    sink += sum64(f->buf, f->n);
    return 0;
  default: return -1;
  }
}

/* Best GB/s of 5 rounds of about 0.3 s each. */
static double rate(const fixture *f, enum op op) {
  double best = 0;
  for (int round = 0; round < 5; round++) {
    unsigned long k = 0;
    double t0 = now(), t;
    do {
      if (one(f, op) != 0) {
        perror(names[op]);
        exit(1);
      }
      k++;
      t = now() - t0;
    } while (t < 0.3);
    double gbs = (double)k * (double)f->n / t / 1e9;
    if (gbs > best) best = gbs;
  }
  return best;
}

static int run(size_t mib) {
  char key[64];
  snprintf(key, sizeof key, "/isv-bench-shm-copy-%ld", (long)getpid());
  fixture f = {.n = mib << 20};
  f.fd = shm_open(key, O_RDWR | O_CREAT | O_EXCL, 0600);
  if (f.fd < 0) return perror("shm_open"), 1;
  shm_unlink(key); /* the fd keeps it */
  if (ftruncate(f.fd, (off_t)f.n) != 0) return perror("ftruncate"), 1;
  f.map = mmap(NULL, f.n, PROT_READ | PROT_WRITE, MAP_SHARED, f.fd, 0);
  f.buf = malloc(f.n);
  if (f.map == MAP_FAILED || f.buf == NULL) return perror("mmap"), 1;
  memset(f.map, 1, f.n);
  memset(f.buf, 2, f.n);
  printf("{\"mib\": %zu", mib);
  for (int op = 0; op < N_OPS; op++) printf(", \"%s_gb_per_s\": %.2f", names[op], rate(&f, op));
  printf("}\n");
  fflush(stdout);
  munmap(f.map, f.n);
  free(f.buf);
  close(f.fd);
  return 0;
}

int main(int argc, char **argv) {
  static const size_t defaults[] = {1, 64};
  int n = argc > 1 ? argc - 1 : 2;
  for (int i = 0; i < n; i++) {
    size_t mib = argc > 1 ? (size_t)strtoul(argv[i + 1], NULL, 10) : defaults[i];
    if (mib == 0 || run(mib) != 0) return 1;
  }
  return 0;
}
