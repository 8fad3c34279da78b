/* System shared memory (core/shm.c, protocol/v2_shm.c): the region registry on a real POSIX
 * shared memory object (bounds, overflow, names, status order, a region unregistered while a
 * request holds it stays mapped until the request is freed), the tensor parameters, the
 * register request decoders, and outputs written into a caller's buffer through a real core
 * (in place by isv_request_alloc_output, copied once after isv_request_set_output, refused when too
 * small). */
#include "cmocka_prelude.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/shm_tensor.h"
#include "core_fixture.h"
#include "protocol/v2_json.h"
#include "protocol/v2_pb.h"
#include "protocol/v2_shm.h"
#include "core/scheduler.h"

#define OBJ 8192

static char key[64];

static int make_object(void **state) {
  (void)state;
  snprintf(key, sizeof key, "/isv-test-shm-%ld", (long)getpid());
  int fd = shm_open(key, O_RDWR | O_CREAT | O_TRUNC, 0600);
  assert_true(fd >= 0);
  assert_int_equal(ftruncate(fd, OBJ), 0);
  char *p = mmap(NULL, OBJ, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  assert_true(p != MAP_FAILED);
  for (int i = 0; i < OBJ / 4; i++) ((int32_t *)p)[i] = i;
  munmap(p, OBJ);
  close(fd);
  return 0;
}

static int drop_object(void **state) {
  (void)state;
  shm_unlink(key);
  return 0;
}

typedef struct seen {
  char names[8][32];
  uint64_t offset[8], size[8];
  int n;
} seen;

static void collect(const isv__shm_region *g, void *data) {
  seen *s = data;
  snprintf(s->names[s->n], sizeof s->names[0], "%s", g->name);
  s->offset[s->n] = g->offset;
  s->size[s->n] = g->byte_size;
  s->n++;
}

static int reg(isv__shm_registry *s, const char *name, const char *k, uint64_t off, uint64_t size,
               char *err) {
  return isv__shm_register(s, name, strlen(name), k, strlen(k), off, size, err, 512);
}

static void registry_rules(void **state) {
  (void)state;
  isv__shm_registry s;
  char err[512];
  assert_int_equal(isv__shm_init(&s, NULL, 1, 0), 0);
  assert_int_equal(reg(&s, "a", key, 0, OBJ, err), 0);
  assert_int_equal(reg(&s, "b", key, 100, 28, err), 0);
  assert_int_equal(reg(&s, "a", key, 0, 4, err), ISV_EBADREQ);
  assert_string_equal(err, "shared memory region 'a' already in manager");
  assert_int_equal(reg(&s, "c", "/isv-test-no-such-object", 0, 4, err), ISV_EBADREQ);
  assert_non_null(strstr(err, "Unable to open shared memory region: '/isv-test-no-such-object'"));
  assert_int_equal(reg(&s, "c", key, 1, OBJ, err), ISV_EBADREQ);
  assert_non_null(strstr(err, "beyond the end"));
  assert_int_equal(reg(&s, "c", key, UINT64_MAX, 1, err), ISV_EBADREQ);
  assert_non_null(strstr(err, "overflows"));
  assert_int_equal(reg(&s, "c", key, 1, UINT64_MAX, err), ISV_EBADREQ);
  assert_int_equal(reg(&s, "c", "", 0, 1, err), ISV_EBADREQ);
  assert_int_equal(isv__shm_register(&s, "", 0, key, strlen(key), 0, 1, err, 512), ISV_EBADREQ);
  assert_int_equal(reg(&s, "empty", key, 0, 0, err), ISV_EBADREQ);
  assert_non_null(strstr(err, "byte_size must be greater than 0"));
  assert_int_equal(reg(&s, "end", key, OBJ - 1, 1, err), 0); /* the last byte */

  seen all = {0};
  assert_int_equal(isv__shm_status(&s, NULL, 0, collect, &all, err, sizeof err), 0);
  assert_int_equal(all.n, 3); /* in registration order */
  assert_string_equal(all.names[0], "a");
  assert_string_equal(all.names[1], "b");
  assert_true(all.offset[1] == 100 && all.size[1] == 28);
  seen one = {0};
  assert_int_equal(isv__shm_status(&s, "b", 1, collect, &one, err, sizeof err), 0);
  assert_int_equal(one.n, 1);
  assert_int_equal(isv__shm_status(&s, "zz", 2, collect, &one, err, sizeof err), ISV_ENOTFOUND);
  assert_string_equal(err, "Unable to find system shared memory region: 'zz'");

  isv__shm_unregister(&s, "b", 1);
  isv__shm_unregister(&s, "nope", 4); /* not an error */
  seen after = {0};
  isv__shm_status(&s, NULL, 0, collect, &after, err, sizeof err);
  assert_int_equal(after.n, 2);
  isv__shm_unregister(&s, NULL, 0);
  seen none = {0};
  isv__shm_status(&s, NULL, 0, collect, &none, err, sizeof err);
  assert_int_equal(none.n, 0);
  assert_int_equal(reg(&s, "a", key, 0, 64, err), 0); /* free again; destroy unmaps it */
  isv__shm_destroy(&s);
}

static void parameters(void **state) {
  (void)state;
  isv__shm_ref ref = {0};
  char err[96];
  isv_param s = {.type = ISV_PARAM_STRING, .v.s = {"reg", 3}};
  isv_param i = {.type = ISV_PARAM_INT64, .v.i64 = 64};
  isv_param u = {.type = ISV_PARAM_UINT64, .v.u64 = UINT64_MAX};
  isv_param neg = {.type = ISV_PARAM_INT64, .v.i64 = -1};
  isv_param b = {.type = ISV_PARAM_BOOL, .v.b = 1};
  assert_false(isv__shm_used(&ref));
  assert_int_equal(isv__shm_param(&ref, "binary_data_size", 16, &i, err, sizeof err), 0);
  assert_false(isv__shm_used(&ref));
  assert_int_equal(isv__shm_param(&ref, "shared_memory_region", 20, &s, err, sizeof err), 1);
  assert_int_equal(isv__shm_param(&ref, "shared_memory_byte_size", 23, &i, err, sizeof err), 1);
  assert_int_equal(isv__shm_param(&ref, "shared_memory_offset", 20, &u, err, sizeof err), 1);
  assert_true(ref.have_region && ref.have_size && ref.have_offset);
  assert_true(ref.region_len == 3 && ref.byte_size == 64 && ref.offset == UINT64_MAX);
  assert_int_equal(isv__shm_param(&ref, "shared_memory_region", 20, &i, err, sizeof err), -1);
  assert_string_equal(err, "'shared_memory_region' must be a string");
  assert_int_equal(isv__shm_param(&ref, "shared_memory_byte_size", 23, &neg, err, sizeof err),
                   -1);
  assert_int_equal(isv__shm_param(&ref, "shared_memory_offset", 20, &b, err, sizeof err), -1);
  assert_string_equal(err, "'shared_memory_offset' must be a non-negative integer");
}

static void register_decoders(void **state) {
  (void)state;
  isv__v2shm_reg r;
  char err[256];
  char ok[] = "{\"key\":\"/k\\u0031\",\"offset\":8,\"byte_size\":16,\"extra\":[1,{}]}";
  assert_int_equal(isv__v2shm_decode_register_json(ok, strlen(ok), 64, &r, err, sizeof err), 0);
  assert_int_equal(r.key_len, 3);
  assert_memory_equal(r.key, "/k1", 3);
  assert_true(r.offset == 8 && r.byte_size == 16);
  char nooff[] = "{\"key\":\"/k\",\"byte_size\":1}";
  assert_int_equal(isv__v2shm_decode_register_json(nooff, strlen(nooff), 64, &r, err, 256), 0);
  assert_true(r.offset == 0);
  char big[] = "{\"key\":\"/k\",\"byte_size\":18446744073709551616}";
  assert_int_equal(isv__v2shm_decode_register_json(big, strlen(big), 64, &r, err, 256), -1);
  assert_string_equal(err, "register request: 'byte_size' must be a non-negative integer");
  char frac[] = "{\"key\":\"/k\",\"byte_size\":1.5}";
  assert_int_equal(isv__v2shm_decode_register_json(frac, strlen(frac), 64, &r, err, 256), -1);
  char nokey[] = "{\"byte_size\":1}";
  assert_int_equal(isv__v2shm_decode_register_json(nokey, strlen(nokey), 64, &r, err, 256), -1);
  assert_string_equal(err, "register request needs 'key'");
  char arr[] = "[1]";
  assert_int_equal(isv__v2shm_decode_register_json(arr, 3, 64, &r, err, 256), -1);
  char trail[] = "{\"key\":\"/k\",\"byte_size\":1} x";
  assert_int_equal(isv__v2shm_decode_register_json(trail, strlen(trail), 64, &r, err, 256), -1);

  /* name "n", key "/k", offset 300, byte_size 2^64-1 */
  const uint8_t pb[] = {0x0a, 1,    'n',  0x12, 2,    '/',  'k',  0x18, 0xac, 0x02, 0x20,
                        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01};
  assert_int_equal(isv__v2shm_decode_register_pb(pb, sizeof pb, &r, err, 256), 0);
  assert_true(r.name_len == 1 && r.key_len == 2 && r.offset == 300 && r.byte_size == UINT64_MAX);
  const uint8_t wrong[] = {0x18, 0x02, 'a', 'b'}; /* offset as bytes */
  assert_int_equal(isv__v2shm_decode_register_pb(wrong, sizeof wrong, &r, err, 256), -1);
  const uint8_t cut[] = {0x0a, 5, 'n'};
  assert_int_equal(isv__v2shm_decode_register_pb(cut, sizeof cut, &r, err, 256), -1);
  const char *name;
  size_t nl;
  assert_int_equal(isv__v2shm_decode_name_pb(pb, 3, &name, &nl), 0);
  assert_true(nl == 1 && name[0] == 'n');
  assert_int_equal(isv__v2shm_decode_name_pb(NULL, 0, &name, &nl), 0);
  assert_int_equal(nl, 0);
}

static int mapped(const void *p) {
  long page = sysconf(_SC_PAGESIZE);
  void *base = (void *)((uintptr_t)p & ~(uintptr_t)(page - 1));
  return msync(base, (size_t)page, MS_ASYNC) == 0 || errno != ENOMEM;
}

static cf_world *world_with_shm(int on, int in_place) {
  isv_options o;
  isv__options_defaults(&o);
  o.shared_memory = on;
  o.shared_memory_in_place = in_place;
  return cf_world_new(&o);
}

/* Off by default: nothing can be registered, and a tensor naming a region says why. */
static void disabled_by_default(void **state) {
  (void)state;
  isv__shm_registry s;
  char err[512];
  assert_int_equal(isv__shm_init(&s, NULL, 0, 0), 0);
  assert_int_equal(reg(&s, "a", key, 0, 64, err), ISV_EUNIMPL);
  assert_non_null(strstr(err, "isv_options_set_shared_memory"));
  isv__shm_destroy(&s);
  cf_world *w = cf_world_new(NULL);
  isv_request *r = isv__request_new(&w->core);
  isv__shm_ref ref = {.region = "a", .region_len = 1, .byte_size = 16, .have_region = 1,
                      .have_size = 1};
  void *data;
  size_t size;
  assert_int_equal(isv__shm_input(r, &ref, "x", ISV_INT32, 4, 16, &data, &size), ISV_EBADREQ);
  assert_non_null(strstr(r->errmsg, "system shared memory is not enabled on this server"));
  isv_request_free(r);
  cf_world_free(w);
}

/* In place (trusted clients): a region unregistered while a request reads it stays mapped until
 * the request is freed. */
static void a_region_lives_while_used(void **state) {
  (void)state;
  cf_world *w = world_with_shm(1, 1);
  char err[512];
  assert_int_equal(reg(w->core.shm, "in", key, 4096, 4096, err), 0);
  isv_request *r = isv__request_new(&w->core);
  isv__shm_ref ref = {.region = "in", .region_len = 2, .offset = 8, .byte_size = 16,
                      .have_region = 1, .have_size = 1, .have_offset = 1};
  void *data;
  size_t size;
  assert_int_equal(isv__shm_input(r, &ref, "x", ISV_INT32, 4, 16, &data, &size), 0);
  assert_int_equal(size, 16);
  assert_int_equal(((int32_t *)data)[0], (4096 + 8) / 4); /* the object's words, in place */
  isv__shm_unregister(w->core.shm, NULL, 0);
  assert_true(mapped(data));
  assert_int_equal(((int32_t *)data)[3], (4096 + 8) / 4 + 3);
  isv_request_free(r);
  assert_false(mapped(data)); /* the last reference unmapped it */

  /* the errors name the problem */
  assert_int_equal(reg(w->core.shm, "in", key, 0, 64, err), 0);
  r = isv__request_new(&w->core);
  ref.offset = 60;
  assert_int_equal(isv__shm_input(r, &ref, "x", ISV_INT32, 4, 16, &data, &size), ISV_EBADREQ);
  assert_non_null(strstr(r->errmsg, "Invalid offset + byte size for shared memory region: 'in'"));
  isv_request_free(r);
  r = isv__request_new(&w->core);
  ref.offset = 0;
  assert_int_equal(isv__shm_input(r, &ref, "x", ISV_INT32, 8, 32, &data, &size), ISV_EBADREQ);
  assert_non_null(strstr(r->errmsg, "shared_memory_byte_size is 16 but its shape of INT32 needs 32"));
  isv_request_free(r);
  r = isv__request_new(&w->core);
  ref.region = "other";
  ref.region_len = 5;
  assert_int_equal(isv__shm_input(r, &ref, "x", ISV_INT32, 4, 16, &data, &size), ISV_EBADREQ);
  assert_string_equal(r->errmsg, "input 'x': Unable to find shared memory region: 'other'");
  isv_request_free(r);
  cf_world_free(w); /* unmaps "in" */
}

/* The V2 decoders read the parameters: JSON and protobuf inputs point into the mapping, outputs
 * get their destination; a wrong parameter fails the request naming the tensor. */
static void decoders_take_the_parameters(void **state) {
  (void)state;
  cf_world *w = world_with_shm(1, 0);
  char err[512];
  assert_int_equal(reg(w->core.shm, "r", key, 1024, 2048, err), 0);
  char body[] = "{\"inputs\":[{\"name\":\"x\",\"datatype\":\"INT32\",\"shape\":[2],"
                "\"parameters\":{\"shared_memory_offset\":8,\"shared_memory_region\":\"r\","
                "\"shared_memory_byte_size\":8}}],\"outputs\":[{\"parameters\":{"
                "\"shared_memory_region\":\"r\",\"shared_memory_byte_size\":64,"
                "\"shared_memory_offset\":512},\"name\":\"y\"}]}";
  isv_request *r = isv__request_new(&w->core);
  assert_int_equal(isv__v2_decode_request(r, body, strlen(body), strlen(body), 64, NULL), 0);
  assert_int_equal(r->n_inputs, 1);
  assert_int_equal(((int32_t *)r->inputs[0].data)[0], (1024 + 8) / 4);
  assert_int_equal(r->inputs[0].byte_size, 8);
  assert_non_null(r->req_outputs[0].dest);
  assert_int_equal(r->req_outputs[0].dest->cap, 64);
  assert_int_equal(r->req_outputs[0].dest->offset, 512);
  assert_string_equal(r->req_outputs[0].dest->region, "r");
  isv_request_free(r);

  char bad[] = "{\"inputs\":[{\"name\":\"x\",\"datatype\":\"INT32\",\"shape\":[2],"
               "\"parameters\":{\"shared_memory_region\":\"r\",\"shared_memory_byte_size\":"
               "true}}]}";
  r = isv__request_new(&w->core);
  assert_int_equal(isv__v2_decode_request(r, bad, strlen(bad), strlen(bad), 64, NULL),
                   ISV_EBADREQ);
  assert_string_equal(r->errmsg, "input 'x': 'shared_memory_byte_size' must be a non-negative "
                                 "integer");
  isv_request_free(r);

  /* ModelInferRequest{inputs: [{name x, datatype INT32, shape [2], parameters {region: "r",
   * byte_size: 8}}]} */
  const uint8_t pb[] = {
      0x2a, 0x49, 0x0a, 0x01, 'x',  0x12, 0x05, 'I',  'N',  'T',  '3',  '2',  0x1a, 0x01, 0x02,
      0x22, 0x1b, 0x0a, 0x14, 's',  'h',  'a',  'r',  'e',  'd',  '_',  'm',  'e',  'm',  'o',
      'r',  'y',  '_',  'r',  'e',  'g',  'i',  'o',  'n',  0x12, 0x03, 0x1a, 0x01, 'r',  0x22,
      0x1d, 0x0a, 0x17, 's',  'h',  'a',  'r',  'e',  'd',  '_',  'm',  'e',  'm',  'o',  'r',
      'y',  '_',  'b',  'y',  't',  'e',  '_',  's',  'i',  'z',  'e',  0x12, 0x02, 0x10, 0x08};
  r = isv__request_new(&w->core);
  assert_int_equal(isv__v2pb_decode_infer_request(r, pb, sizeof pb), 0);
  assert_int_equal(r->n_inputs, 1);
  assert_int_equal(((int32_t *)r->inputs[0].data)[1], 1024 / 4 + 1);
  isv_request_free(r);
  cf_world_free(w);
}

/* y = 2x written with isv_request_alloc_output (in place) or set from the backend's own buffer with
 * isv_request_set_output (copied once). */
static int twice_in_place(isv_request *r, void *u) {
  (void)u;
  const isv_tensor *x = isv_request_input(r, "x");
  size_t nd;
  const int64_t *shape = isv_tensor_shape(x, &nd);
  float *y;
  int rc = isv_request_alloc_output(r, "y", ISV_FP32, shape, nd, (void **)&y);
  if (rc) return rc;
  const float *in = isv_tensor_data(x);
  for (size_t i = 0; i < isv_tensor_element_count(x); i++) y[i] = in[i] * 2;
  return isv_request_complete(r, 0, NULL);
}

static int twice_own_buffer(isv_request *r, void *u) {
  (void)u;
  const isv_tensor *x = isv_request_input(r, "x");
  size_t nd, n = isv_tensor_element_count(x);
  const int64_t *shape = isv_tensor_shape(x, &nd);
  float *y = malloc(n * sizeof *y + 1);
  const float *in = isv_tensor_data(x);
  for (size_t i = 0; i < n; i++) y[i] = in[i] * 2;
  int rc = isv_request_set_output(r, "y", ISV_FP32, shape, nd, y, n * sizeof *y, free);
  return rc ? rc : isv_request_complete(r, 0, NULL);
}

typedef struct got {
  int calls, status;
  const void *y;
  char msg[256];
} got;

static void on_done(isv_request *r, int status, void *data) {
  got *g = data;
  g->calls++;
  g->status = status;
  const isv_tensor *y = isv_request_output(r, "y");
  g->y = y ? isv_tensor_data(y) : NULL;
  snprintf(g->msg, sizeof g->msg, "%s", isv_request_error_message(r));
  isv_request_free(r);
}

static got run(cf_world *w, const char *model, void *buf, size_t cap) {
  float x[4] = {1, 2, 3, 4};
  isv_request *r = cf_request(w, model, x, 4, 0);
  assert_int_equal(isv_request_add_requested_output_buffer(r, "y", buf, cap), 0);
  got g = {0};
  isv__core_submit(&w->core, r, on_done, &g);
  while (g.calls == 0) uv_run(&w->loop, UV_RUN_ONCE);
  return g;
}

static void outputs_into_a_callers_buffer(void **state) {
  (void)state;
  cf_world *w = cf_world_new(NULL);
  cf_add(w, &(cf_model){.name = "in_place", .infer = twice_in_place});
  cf_add(w, &(cf_model){.name = "own", .infer = twice_own_buffer});
  _Alignas(16) float buf[8];
  memset(buf, 0, sizeof buf);
  got g = run(w, "in_place", buf, sizeof buf);
  assert_int_equal(g.status, 0);
  assert_ptr_equal(g.y, buf); /* the backend wrote into it */
  assert_true(buf[0] == 2 && buf[3] == 8 && buf[4] == 0);
  memset(buf, 0, sizeof buf);
  g = run(w, "own", buf, 16);
  assert_int_equal(g.status, 0);
  assert_ptr_equal(g.y, buf); /* copied there once */
  assert_true(buf[0] == 2 && buf[3] == 8);
  g = run(w, "in_place", buf, 12);
  assert_int_equal(g.status, ISV_EBADREQ);
  assert_string_equal(g.msg, "the buffer given for output 'y' holds 12 bytes, the output needs 16");
  g = run(w, "own", buf, 15);
  assert_int_equal(g.status, ISV_EBADREQ);
  isv_request *r = cf_request(w, "own", buf, 1, 0);
  assert_int_equal(isv_request_add_requested_output_buffer(r, "y", NULL, 4), ISV_EINVAL);
  assert_int_equal(isv_request_add_requested_output_buffer(r, NULL, buf, 4), ISV_EINVAL);
  isv_request_free(r);
  cf_world_free(w);
}

/* ---- a client's object is the client's: copies by default, in place when trusted ---------- */

/* The test's own view of the object (the client's side). */
static float *client_view(void) {
  int fd = shm_open(key, O_RDWR, 0);
  assert_true(fd >= 0);
  float *p = mmap(NULL, OBJ, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  assert_true(p != MAP_FAILED);
  return p;
}

/* What a backend saw: its input's address and first value, its output's address. */
typedef struct seen_by_backend {
  const float *x;
  float x0;
  const float *y;
  int shrink; /* truncate the object to 0 before reading the input: the attack */
} seen_by_backend;

/* y = 2x through isv_request_alloc_output, noting what it was handed. */
static int twice_noting(isv_request *r, void *u) {
  seen_by_backend *sb = u;
  if (sb->shrink) {
    int fd = shm_open(key, O_RDWR, 0);
    if (fd >= 0) {
      if (ftruncate(fd, 0) != 0) sb->shrink = -1;
      close(fd);
    }
  }
  const isv_tensor *x = isv_request_input(r, "x");
  size_t nd, n = isv_tensor_element_count(x);
  const int64_t *shape = isv_tensor_shape(x, &nd);
  float *y;
  int rc = isv_request_alloc_output(r, "y", ISV_FP32, shape, nd, (void **)&y);
  if (rc) return rc;
  sb->x = isv_tensor_data(x);
  sb->x0 = sb->x[0];
  sb->y = y;
  for (size_t i = 0; i < n; i++) y[i] = sb->x[i] * 2;
  return isv_request_complete(r, 0, NULL);
}

/* Input x (4 FP32) from region "r" at byte 0; output y into "r" at byte 1024 when `out`. */
static isv_request *shm_request(cf_world *w, char *body, size_t cap, int out) {
  snprintf(body, cap, "{\"inputs\":[{\"name\":\"x\",\"datatype\":\"FP32\",\"shape\":[4],"
           "\"parameters\":{\"shared_memory_region\":\"r\",\"shared_memory_byte_size\":16}}]"
           "%s}", out ? ",\"outputs\":[{\"name\":\"y\",\"parameters\":{\"shared_memory_region\":"
                        "\"r\",\"shared_memory_byte_size\":16,\"shared_memory_offset\":1024}}]"
                      : "");
  isv_request *r = isv__request_new(&w->core);
  r->model_name = "twice";
  if (isv__v2_decode_request(r, body, strlen(body), strlen(body), 64, NULL) != 0) return r;
  return r;
}

/* The request decoded (the input read), then the client changes its object, then it runs. */
static got run_after_client_writes(cf_world *w, float *view, int out) {
  char body[512];
  for (int i = 0; i < 4; i++) view[i] = (float)(i + 1);
  isv_request *r = shm_request(w, body, sizeof body, out);
  assert_int_equal(r->status, 0);
  for (int i = 0; i < 4; i++) view[i] = 9;
  got g = {0};
  isv__core_submit(&w->core, r, on_done, &g);
  while (g.calls == 0) uv_run(&w->loop, UV_RUN_ONCE);
  return g;
}

/* Default: the backend reads a private copy taken at decoding (the client's later write is not
 * seen, no mapping exists) and writes into library memory, copied into the region after. */
static void by_default_the_backend_never_sees_the_mapping(void **state) {
  (void)state;
  make_object(NULL);
  cf_world *w = world_with_shm(1, 0);
  seen_by_backend sb = {0};
  cf_add(w, &(cf_model){.name = "twice", .infer = twice_noting, .user = &sb});
  char err[512];
  assert_int_equal(reg(w->core.shm, "r", key, 0, OBJ, err), 0);
  const isv__shm_region *g = w->core.shm->head;
  assert_null(g->map); /* nothing of the client's is mapped */
  float *view = client_view();
  got res = run_after_client_writes(w, view, 1);
  assert_int_equal(res.status, 0);
  assert_true(sb.x0 == 1); /* the copy, not the client's 9 */
  assert_true((const char *)sb.x < (const char *)view ||
              (const char *)sb.x >= (const char *)view + OBJ);
  assert_true(view[256] == 2 && view[259] == 8); /* pwritten at byte 1024 */
  munmap(view, OBJ);
  cf_world_free(w);
}

/* isv_options_set_shared_memory_in_place: zero copy, as before — the backend's input and output
 * pointers are the region's mapping (the client's later write is seen). */
static void in_place_when_the_host_trusts_its_clients(void **state) {
  (void)state;
  make_object(NULL);
  cf_world *w = world_with_shm(1, 1);
  seen_by_backend sb = {0};
  cf_add(w, &(cf_model){.name = "twice", .infer = twice_noting, .user = &sb});
  char err[512];
  assert_int_equal(reg(w->core.shm, "r", key, 0, OBJ, err), 0);
  const isv__shm_region *g = w->core.shm->head;
  assert_non_null(g->map);
  float *view = client_view();
  got res = run_after_client_writes(w, view, 1);
  assert_int_equal(res.status, 0);
  assert_ptr_equal(sb.x, g->map);        /* read in place */
  assert_ptr_equal(sb.y, g->map + 1024); /* written in place */
  assert_true(sb.x0 == 9);
  assert_true(view[256] == 18);
  munmap(view, OBJ);
  cf_world_free(w);
}

/* The attack (issue #34): the object truncated to 0 while a request that uses it runs. The
 * input was copied: the backend computes on it; the output cannot be written: 400 naming the
 * region, and the process lives. Then a request after the shrink: its input reads short. */
static void an_object_shrunk_during_a_request_fails_it(void **state) {
  (void)state;
  make_object(NULL);
  cf_world *w = world_with_shm(1, 0);
  seen_by_backend sb = {.shrink = 1};
  cf_add(w, &(cf_model){.name = "twice", .infer = twice_noting, .user = &sb});
  char err[512];
  assert_int_equal(reg(w->core.shm, "r", key, 0, OBJ, err), 0);
  float *view = client_view();
  for (int i = 0; i < 4; i++) view[i] = (float)(i + 1);
  munmap(view, OBJ);

  char body[512];
  isv_request *r = shm_request(w, body, sizeof body, 1); /* output into the region */
  got g = {0};
  isv__core_submit(&w->core, r, on_done, &g);
  while (g.calls == 0) uv_run(&w->loop, UV_RUN_ONCE);
  assert_int_equal(sb.shrink, 1);
  assert_int_equal(g.status, ISV_EBADREQ);
  assert_non_null(strstr(g.msg, "output 'y': shared memory region 'r' was shrunk below the "
                                "region while the request used it"));
  assert_true(sb.x0 == 1);

  make_object(NULL); /* whole again; shrunk again by the backend */
  sb.x0 = -1;
  r = shm_request(w, body, sizeof body, 0); /* input only: its copy is the backend's */
  memset(&g, 0, sizeof g);
  isv__core_submit(&w->core, r, on_done, &g);
  while (g.calls == 0) uv_run(&w->loop, UV_RUN_ONCE);
  assert_int_equal(g.status, 0);
  assert_int_equal(sb.shrink, 1);
  assert_true(sb.x0 == 0); /* make_object's word 0, read from the copy after the shrink */

  r = shm_request(w, body, sizeof body, 0); /* decoded after the shrink: a short read */
  assert_int_equal(r->status, ISV_EBADREQ);
  assert_non_null(strstr(r->errmsg, "input 'x': shared memory region 'r' was shrunk below the "
                                    "region while the request used it (its object '"));
  isv_request_free(r);
  cf_world_free(w);
  make_object(NULL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(registry_rules),
      cmocka_unit_test(parameters),
      cmocka_unit_test(register_decoders),
      cmocka_unit_test(disabled_by_default),
      cmocka_unit_test(a_region_lives_while_used),
      cmocka_unit_test(decoders_take_the_parameters),
      cmocka_unit_test(outputs_into_a_callers_buffer),
      cmocka_unit_test(by_default_the_backend_never_sees_the_mapping),
      cmocka_unit_test(in_place_when_the_host_trusts_its_clients),
      cmocka_unit_test(an_object_shrunk_during_a_request_fails_it),
  };
  return cmocka_run_group_tests(tests, make_object, drop_object);
}
