/* System shared memory: the register request decoders (REST JSON, SystemSharedMemoryRegister
 * protobuf), the registry's bounds and overflow checks, and V2 infer requests (JSON and
 * protobuf) whose tensors name a registered region — hostile offsets and sizes, BYTES framing
 * read straight from the mapping, outputs with destinations, then the response encoders.
 * Must never crash, leak or hang; every failure carries a code and a message.
 *
 * The first byte chooses the decoder (mod 4) and whether the object is truncated to half its
 * size while the infer request is decoded and its outputs written (bit 2: the client's attack
 * of issue #34 — the library's default copies, pread and pwrite, must fail the request, never
 * fault); the rest is its input. One POSIX shared memory object of this process (4096 bytes,
 * filled from the input) backs every region: a decoded register request is registered under
 * its own name, offset and size but with that object's key (a fuzzer must not open other
 * objects), then unregistered. Region "r" (the whole object) and "h" (its second half) stay
 * registered for the infer requests, whose inputs are copied out of them and whose outputs (the
 * inputs echoed) are copied into them with isv__shm_write_output. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/request.h"
#include "core/shm_tensor.h"
#include "core_fixture.h"
#include "protocol/v2_json.h"
#include "protocol/v2_pb.h"
#include "protocol/v2_shm.h"

#define OBJ_SIZE 4096

static char key[64];
static char *obj; /* the object, mapped by this file too, to fill it */
static int obj_fd; /* to truncate it and make it whole again */

static void cleanup(void) { shm_unlink(key); }

static void setup(isv__core *c) {
  snprintf(key, sizeof key, "/isv-fuzz-shm-%ld", (long)getpid());
  int fd = shm_open(key, O_RDWR | O_CREAT | O_EXCL, 0600);
  if (fd < 0 || ftruncate(fd, OBJ_SIZE) != 0) abort();
  obj = mmap(NULL, OBJ_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  obj_fd = fd;
  if (obj == MAP_FAILED) abort();
  atexit(cleanup);
  c->shm->enabled = 1; /* isv_options_set_shared_memory */
  char err[512];
  if (isv__shm_register(c->shm, "r", 1, key, strlen(key), 0, OBJ_SIZE, err, sizeof err) != 0 ||
      isv__shm_register(c->shm, "h", 1, key, strlen(key), OBJ_SIZE / 2, OBJ_SIZE / 2, err,
                        sizeof err) != 0)
    abort();
}

static void check_failed(const isv_request *r) {
  if (r->status >= 0 || r->errmsg == NULL || r->errmsg[0] == '\0') abort();
}

static void try_register(isv__core *c, const isv__v2shm_reg *reg) {
  char err[512];
  err[0] = '\0';
  const char *name = reg->name ? reg->name : "x";
  size_t nl = reg->name ? reg->name_len : 1;
  if (nl == 1 && (name[0] == 'r' || name[0] == 'h')) return; /* keep the fixed regions */
  int rc = isv__shm_register(c->shm, name, nl, key, strlen(key), reg->offset, reg->byte_size,
                             err, sizeof err);
  if (rc == 0) {
    if (reg->offset + reg->byte_size > OBJ_SIZE) abort(); /* out of bounds accepted */
    isv__shm_unregister(c->shm, name, nl);
  } else if (err[0] == '\0') {
    abort();
  }
}

/* Fill the object from the input, so BYTES framing and numbers in it are the fuzzer's. */
static void fill(const uint8_t *d, size_t n) {
  if (n == 0) return;
  for (size_t i = 0; i < OBJ_SIZE; i++) obj[i] = (char)d[i % n];
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static isv__core *core;
  if (core == NULL) {
    isv_request *r = isv_fuzz_request();
    core = r->core;
    isv_request_free(r);
    setup(core);
  }
  if (size == 0) return 0;
  unsigned mode = data[0] % 4;
  int shrink = (data[0] >> 2) & 1;
  data++;
  size--;
  char *body = malloc(size ? size : 1);
  if (size) memcpy(body, data, size);
  char err[512];
  isv__v2shm_reg reg;
  switch (mode) {
  case 0:
    if (isv__v2shm_decode_register_json(body, size, 64, &reg, err, sizeof err) == 0) {
      reg.name = body; /* any name: the body's first bytes */
      reg.name_len = size < 8 ? size : 8;
      try_register(core, &reg);
    } else if (err[0] == '\0') {
      abort();
    }
    break;
  case 1:
    if (isv__v2shm_decode_register_pb((const uint8_t *)body, size, &reg, err, sizeof err) == 0)
      try_register(core, &reg);
    else if (err[0] == '\0')
      abort();
    break;
  case 2:
  case 3: {
    fill(data, size); /* before the shrink: this file's own mapping would fault after it */
    if (shrink && ftruncate(obj_fd, OBJ_SIZE / 2) != 0) abort();
    isv_request *r = isv_fuzz_request();
    int rc = mode == 2 ? isv__v2_decode_request(r, body, size, size, 64, NULL)
                       : isv__v2pb_decode_infer_request(r, (const uint8_t *)body, size);
    if (rc == 0 && isv__request_validate(r) == 0) {
      /* the inputs echoed as outputs, the i-th sent as written into the i-th requested
       * output's destination when it has one (the encoders' shared memory form) */
      size_t n = r->n_inputs;
      isv_tensor *outs = isv__arena_alloc(&r->arena, (n ? n : 1) * sizeof *outs);
      if (outs == NULL) abort();
      if (n) memcpy(outs, r->inputs, n * sizeof *outs);
      int failed = 0;
      for (size_t i = 0; i < r->n_req_outputs && i < n && !failed; i++) {
        isv__out_dest *d = r->req_outputs[i].dest;
        if (d == NULL) continue;
        d->used = outs[i].byte_size < d->cap ? outs[i].byte_size : d->cap;
        outs[i].dest = d;
        /* the copy into the region (validate.c's into_dest does it after a backend) */
        if (d->shm && outs[i].dt != ISV_BYTES && isv__shm_write_output(r, d, &outs[i], d->used))
          failed = 1;
      }
      if (failed) check_failed(r);
      r->outputs = outs;
      r->n_outputs = n;
      if (!failed && mode == 2) {
        isv__buf b;
        isv__buf_init(&b, NULL);
        isv__v2_binpart *parts;
        size_t n_parts;
        isv__v2_encode_response(r, &b, &parts, &n_parts, NULL);
        isv__buf_free(&b);
      } else if (!failed) {
        isv__parts parts;
        isv__v2pb_encode_infer_response(r, &parts);
      }
      r->outputs = NULL;
      r->n_outputs = 0;
    } else if (rc != 0) {
      check_failed(r);
    }
    isv_request_free(r);
    if (shrink && ftruncate(obj_fd, OBJ_SIZE) != 0) abort();
    break;
  }
  }
  free(body);
  return 0;
}
