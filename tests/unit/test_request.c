/* The canonical request: building it, validating it against a model, output allocation. */
#include "cmocka_prelude.h"

#include <stdlib.h>
#include <string.h>

#include "core/request.h"
#include "core/lifecycle.h"

static int frees;
static void count_free(void *p) {
  frees++;
  free(p);
}
static int noop(isv_request *r, void *u) {
  (void)r;
  (void)u;
  return 0;
}

typedef struct fixture {
  uv_loop_t loop;
  isv__core core;
  isv_model *m;
} fixture;

static int setup(void **state) {
  fixture *f = calloc(1, sizeof *f);
  uv_loop_init(&f->loop);
  isv_options o;
  isv__options_defaults(&o);
  assert_int_equal(isv__core_init(&f->core, &f->loop, &o), 0);
  isv_model_config *c;
  isv_model_config_new("m", &c);
  int64_t s16[] = {16};
  isv_model_config_add_input(c, "A", ISV_INT32, s16, 1);
  isv_model_config_add_input(c, "B", ISV_INT32, s16, 1);
  isv_model_config_add_output(c, "Y", ISV_INT32, s16, 1);
  isv_model_config_add_output(c, "S", ISV_BYTES, NULL, 0);
  isv_model_config_set_max_batch(c, 4);
  isv_backend be = {.struct_size = sizeof be, .infer = noop};
  assert_int_equal(isv__registry_add(&f->core.reg, c, "1", &be, NULL, &f->m), 0);
  isv_model_config_free(c);
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fixture *f = *state;
  isv__core_close(&f->core, NULL);
  uv_run(&f->loop, UV_RUN_DEFAULT);
  uv_loop_close(&f->loop);
  free(f);
  return 0;
}

static isv_request *req(fixture *f) {
  isv_request *r = isv__request_new(&f->core);
  isv__model_ref(f->m);
  r->model = f->m;
  return r;
}

static void add(isv_request *r, const char *name, isv_datatype dt, int64_t b, int64_t n) {
  static int32_t zeros[64 * 16];
  int64_t shape[] = {b, n};
  assert_int_equal(isv_request_add_input(r, name, dt, shape, 2, zeros,
                                         (size_t)(b * n) * isv_datatype_size(dt), ISV_STATIC),
                   0);
}

static void expect_invalid(isv_request *r, const char *needle) {
  assert_int_not_equal(isv__request_validate(r), 0);
  assert_int_equal(r->status, ISV_EBADREQ);
  if (strstr(r->errmsg, needle) == NULL) fail_msg("message '%s' lacks '%s'", r->errmsg, needle);
  isv_request_free(r);
}

static void validation_names_each_problem(void **state) {
  fixture *f = *state;
  isv_request *r = req(f);
  add(r, "A", ISV_INT32, 2, 16);
  add(r, "B", ISV_INT32, 2, 16);
  assert_int_equal(isv__request_validate(r), 0);
  isv_request_free(r);

  r = req(f);
  add(r, "A", ISV_INT32, 1, 16);
  expect_invalid(r, "missing input 'B'");

  r = req(f);
  add(r, "A", ISV_INT32, 1, 16);
  add(r, "B", ISV_INT32, 1, 16);
  add(r, "C", ISV_INT32, 1, 16);
  expect_invalid(r, "unexpected input 'C'");

  r = req(f);
  add(r, "A", ISV_INT32, 1, 16);
  add(r, "A", ISV_INT32, 1, 16);
  expect_invalid(r, "duplicate input 'A'");

  r = req(f);
  add(r, "A", ISV_FP32, 1, 16);
  add(r, "B", ISV_INT32, 1, 16);
  expect_invalid(r, "datatype FP32, model 'm' expects INT32");

  r = req(f);
  add(r, "A", ISV_INT32, 1, 8);
  add(r, "B", ISV_INT32, 1, 8);
  expect_invalid(r, "expects [-1,16]");

  r = req(f);
  add(r, "A", ISV_INT32, 5, 16);
  add(r, "B", ISV_INT32, 5, 16);
  expect_invalid(r, "max batch size is 4");

  r = req(f);
  add(r, "A", ISV_INT32, 1, 16);
  add(r, "B", ISV_INT32, 2, 16);
  expect_invalid(r, "different batch sizes");

  r = req(f);
  add(r, "A", ISV_INT32, 1, 16);
  add(r, "B", ISV_INT32, 1, 16);
  isv_request_add_requested_output(r, "Z", 0);
  expect_invalid(r, "unknown output 'Z'");

  r = req(f);
  add(r, "A", ISV_INT32, 1, 16);
  add(r, "B", ISV_INT32, 1, 16);
  isv_request_add_requested_output(r, "S", 2);
  expect_invalid(r, "cannot be classified");
}

static void add_input_ownership_contract(void **state) {
  fixture *f = *state;
  isv_request *r = req(f);
  int64_t shape[] = {1, 4};
  int32_t *d = malloc(16);
  frees = 0;
  /* wrong byte size: fails, and the destructor still runs */
  assert_int_equal(isv_request_add_input(r, "A", ISV_INT32, shape, 2, d, 12, count_free), ISV_EINVAL);
  assert_int_equal(frees, 1);
  d = malloc(16);
  assert_int_equal(isv_request_add_input(r, "A", ISV_INT32, shape, 2, d, 16, count_free), 0);
  assert_int_equal(frees, 1);
  /* TRANSIENT copies, BYTES element memory included */
  char text[] = "hello";
  isv_bytes b[2] = {{text, 5}, {text, 0}};
  int64_t bs[] = {2};
  assert_int_equal(isv_request_add_input(r, "T", ISV_BYTES, bs, 1, b, 0, ISV_TRANSIENT), 0);
  text[0] = 'J';
  const isv_tensor *t = isv_request_input(r, "T");
  const isv_bytes *tb = isv_tensor_data(t);
  assert_int_equal(tb[0].len, 5);
  assert_memory_equal(tb[0].ptr, "hello", 5);
  assert_int_equal(isv_tensor_byte_size(t), 5);
  /* negative or overflowing shapes */
  int64_t neg[] = {-1};
  int64_t huge[] = {INT64_MAX, 4};
  assert_int_equal(isv_request_add_input(r, "X", ISV_INT32, neg, 1, d, 4, ISV_STATIC), ISV_EINVAL);
  assert_int_equal(isv_request_add_input(r, "X", ISV_INT32, huge, 2, d, 4, ISV_STATIC), ISV_EINVAL);
  /* at most ISV__MAX_NDIM (32) dimensions, as on every wire */
  int64_t dims[33];
  for (int i = 0; i < 33; i++) dims[i] = 1;
  assert_int_equal(isv_request_add_input(r, "X", ISV_INT32, dims, 33, d, 4, ISV_STATIC), ISV_EINVAL);
  assert_int_equal(isv_request_add_input(r, "X", ISV_INT32, dims, 32, d, 4, ISV_STATIC), 0);
  /* at most max_tensors inputs: the call fails, the request does not */
  f->core.opts.max_tensors = 3;
  assert_int_equal(isv_request_add_input(r, "Y", ISV_INT32, shape, 0, d, 4, ISV_STATIC), ISV_EBADREQ);
  assert_int_equal(r->status, 0);
  assert_int_equal(isv_request_add_requested_output(r, "a", 0), 0);
  assert_int_equal(isv_request_add_requested_output(r, "b", 0), 0);
  assert_int_equal(isv_request_add_requested_output(r, "c", 0), 0);
  assert_int_equal(isv_request_add_requested_output(r, "d", 0), ISV_EBADREQ);
  assert_int_equal(r->status, 0);
  f->core.opts.max_tensors = 1024;
  isv_request_free(r);
  assert_int_equal(frees, 2);
}

static void output_allocation_checks_the_declaration(void **state) {
  fixture *f = *state;
  isv_request *r = req(f);
  void *p;
  int64_t ok[] = {2, 16}, bad[] = {2, 15}, big[] = {5, 16};
  assert_int_equal(isv_request_alloc_output(r, "Y", ISV_INT32, ok, 2, &p), 0);
  assert_non_null(p);
  memset(p, 0, 2 * 16 * 4);
  assert_int_equal(isv_request_alloc_output(r, "Y", ISV_INT32, ok, 2, &p), ISV_EEXIST);
  assert_int_equal(isv_request_alloc_output(r, "Q", ISV_INT32, ok, 2, &p), ISV_EINVAL);
  assert_int_equal(isv_request_alloc_output(r, "S", ISV_INT32, ok, 1, &p), ISV_EINVAL);
  r->n_outputs = 0;
  assert_int_equal(isv_request_alloc_output(r, "Y", ISV_FP32, ok, 2, &p), ISV_EINVAL);
  assert_int_equal(isv_request_alloc_output(r, "Y", ISV_INT32, bad, 2, &p), ISV_EINVAL);
  assert_int_equal(isv_request_alloc_output(r, "Y", ISV_INT32, big, 2, &p), ISV_EINVAL);
  assert_true(isv_request_is_output_requested(r, "Y"));
  assert_false(isv_request_is_output_requested(r, "nope"));
  isv_request_free(r);
}

/* Open I/O: undeclared inputs and outputs pass, declared ones keep their rules, and without
 * requested outputs every output set is answered in the order it was set. */
static void open_io_takes_any_tensor(void **state) {
  fixture *f = *state;
  isv_model_config *c;
  isv_model_config_new("open", &c);
  int64_t s16[] = {16};
  isv_model_config_add_input(c, "A", ISV_INT32, s16, 1);
  assert_int_equal(isv_model_config_set_open_io(c, 1), 0);
  isv_backend be = {.struct_size = sizeof be, .infer = noop};
  isv_model *m;
  assert_int_equal(isv__registry_add(&f->core.reg, c, "1", &be, NULL, &m), 0);
  assert_int_equal(isv_model_config_set_dynamic_batching(c, 10, NULL, 0), 0);
  assert_int_equal(isv_model_config_set_max_batch(c, 4), 0);
  assert_int_equal(isv__registry_add(&f->core.reg, c, "2", &be, NULL, NULL), ISV_EINVAL);
  isv_model_config_free(c);

  isv_request *r = isv__request_new(&f->core);
  isv__model_ref(m);
  r->model = m;
  static int32_t zeros[16];
  int64_t shape[] = {16}, three[] = {3};
  assert_int_equal(isv_request_add_input(r, "anything", ISV_FP64, three, 1, zeros, 24,
                                         ISV_STATIC), 0);
  expect_invalid(r, "missing input 'A'"); /* a declared input is still required */

  r = isv__request_new(&f->core);
  isv__model_ref(m);
  r->model = m;
  assert_int_equal(isv_request_add_input(r, "A", ISV_INT32, shape, 1, zeros, 64, ISV_STATIC), 0);
  assert_int_equal(isv_request_add_input(r, "x", ISV_UINT8, three, 1, zeros, 3, ISV_STATIC), 0);
  assert_int_equal(isv__request_validate(r), 0);
  assert_true(isv_request_is_output_requested(r, "whatever"));
  void *p;
  assert_int_equal(isv_request_alloc_output(r, "z", ISV_FP32, three, 1, &p), 0);
  assert_int_equal(isv_request_alloc_output(r, "y", ISV_BYTES, three, 1, &p), 0);
  assert_int_equal(isv_request_alloc_output(r, "z", ISV_INT8, three, 1, &p), ISV_EEXIST);
  int64_t neg[] = {-1};
  assert_int_equal(isv_request_alloc_output(r, "w", ISV_FP32, neg, 1, &p), ISV_EINVAL);
  assert_int_equal(isv_request_alloc_output(r, "w", (isv_datatype)99, three, 1, &p), ISV_EINVAL);
  assert_int_equal(isv__request_postprocess(r, 0), 0);
  assert_int_equal(r->n_outputs, 2);
  assert_string_equal(r->outputs[0].name, "z"); /* the order they were set */
  assert_string_equal(r->outputs[1].name, "y");
  isv_request_free(r);
}

static void set_output_ownership_contract(void **state) {
  fixture *f = *state;
  isv_request *r = req(f);
  int64_t shape[] = {1, 16};
  frees = 0;
  /* by reference: the tensor IS the backend's memory, released when the request is freed */
  int32_t *y = malloc(64);
  for (int i = 0; i < 16; i++) y[i] = i * 3;
  assert_int_equal(isv_request_set_output(r, "Y", ISV_INT32, shape, 2, y, 64, count_free), 0);
  const isv_tensor *t = isv_request_output(r, "Y");
  assert_ptr_equal(isv_tensor_data(t), y);
  assert_int_equal(isv_tensor_byte_size(t), 64);
  assert_int_equal(frees, 0);
  /* set twice: EEXIST, and a destructor passed with the failing call runs at once */
  int32_t *y2 = malloc(64);
  assert_int_equal(isv_request_set_output(r, "Y", ISV_INT32, shape, 2, y2, 64, count_free),
                   ISV_EEXIST);
  assert_int_equal(frees, 1);
  isv_request_free(r);
  assert_int_equal(frees, 2);

  /* failures that run the destructor: byte size, undeclared name, datatype, shape */
  r = req(f);
  frees = 0;
  assert_int_equal(isv_request_set_output(r, "Y", ISV_INT32, shape, 2, malloc(64), 60, count_free),
                   ISV_EINVAL);
  assert_int_equal(isv_request_set_output(r, "Q", ISV_INT32, shape, 2, malloc(64), 64, count_free),
                   ISV_EINVAL);
  assert_int_equal(isv_request_set_output(r, "Y", ISV_FP32, shape, 2, malloc(64), 64, count_free),
                   ISV_EINVAL);
  int64_t wrong[] = {1, 15};
  assert_int_equal(isv_request_set_output(r, "Y", ISV_INT32, wrong, 2, malloc(60), 60, count_free),
                   ISV_EINVAL);
  assert_int_equal(isv_request_set_output(r, "Y", ISV_INT32, shape, 2, NULL, 64, ISV_STATIC),
                   ISV_EINVAL);
  assert_int_equal(frees, 4);
  assert_int_equal(isv_request_output_count(r), 0);

  /* ISV_STATIC keeps the pointer; misaligned memory is copied (and still released later) */
  static int32_t kept[16] = {7};
  assert_int_equal(isv_request_set_output(r, "Y", ISV_INT32, shape, 2, kept, 64, ISV_STATIC), 0);
  assert_ptr_equal(isv_tensor_data(isv_request_output(r, "Y")), kept);
  r->n_outputs = 0;
  char *raw = malloc(65);
  for (int i = 0; i < 65; i++) raw[i] = (char)i;
  assert_int_equal(isv_request_set_output(r, "Y", ISV_INT32, shape, 2, raw + 1, 64, ISV_STATIC), 0);
  const void *got = isv_tensor_data(isv_request_output(r, "Y"));
  assert_ptr_not_equal(got, raw + 1);
  assert_int_equal((uintptr_t)got % 4, 0);
  assert_memory_equal(got, raw + 1, 64);
  free(raw);
  r->n_outputs = 0;
  /* TRANSIENT copies now */
  int32_t tmp[16];
  for (int i = 0; i < 16; i++) tmp[i] = 100 + i;
  assert_int_equal(isv_request_set_output(r, "Y", ISV_INT32, shape, 2, tmp, 64, ISV_TRANSIENT), 0);
  tmp[0] = -1;
  assert_int_equal(((const int32_t *)isv_tensor_data(isv_request_output(r, "Y")))[0], 100);

  /* BYTES: an isv_bytes array; TRANSIENT copies the elements too; NULL element pointers fail */
  char text[] = "abc";
  isv_bytes b[2] = {{text, 3}, {text, 1}};
  int64_t bs[] = {2};
  isv_bytes nul[1] = {{NULL, 2}};
  int64_t one[] = {1};
  assert_int_equal(isv_request_set_output(r, "S", ISV_BYTES, one, 1, nul, 0, ISV_STATIC),
                   ISV_EINVAL);
  assert_int_equal(isv_request_set_output(r, "S", ISV_BYTES, bs, 1, b, 0, ISV_TRANSIENT), 0);
  text[0] = 'X';
  const isv_tensor *s = isv_request_output(r, "S");
  const isv_bytes *sb = isv_tensor_data(s);
  assert_int_equal(isv_tensor_byte_size(s), 4);
  assert_memory_equal(sb[0].ptr, "abc", 3);
  assert_memory_equal(sb[1].ptr, "a", 1);
  isv_request_free(r);
  assert_int_equal(frees, 4);
}

static void params_replace_and_copy(void **state) {
  fixture *f = *state;
  isv_request *r = req(f);
  char s[] = "abc";
  isv_param v = {.type = ISV_PARAM_STRING, .v.s = {s, 3}};
  assert_int_equal(isv_request_set_param(r, "k", &v), 0);
  s[0] = 'X';
  const isv_param *got = isv_request_param(r, "k");
  assert_int_equal(got->type, ISV_PARAM_STRING);
  assert_memory_equal(got->v.s.ptr, "abc", 3);
  isv_param i = {.type = ISV_PARAM_INT64, .v.i64 = 7};
  assert_int_equal(isv_request_set_param(r, "k", &i), 0);
  assert_int_equal(isv_request_param_count(r), 1);
  assert_int_equal(isv_request_param(r, "k")->v.i64, 7);
  isv_param bad = {.type = (isv_param_type)42};
  assert_int_equal(isv_request_set_param(r, "z", &bad), ISV_EINVAL);
  assert_null(isv_request_param(r, "z"));
  isv_request_free(r);
}

/* A freed request stays, dead, in the core's quarantine for a while: a backend that reads it
 * after the fact (a bug the library survives) sees an empty request — every reader answers
 * NULL, 0 or "" (ASan: nothing of its freed buffers is read) — and writers are refused. */
static void a_freed_request_reads_as_empty(void **state) {
  fixture *f = *state;
  isv_request *r = req(f);
  int32_t a[16] = {0};
  int64_t shape[] = {1, 16};
  assert_int_equal(isv_request_add_input(r, "A", ISV_INT32, shape, 2, a, sizeof a, ISV_TRANSIENT), 0);
  isv_param v = {.type = ISV_PARAM_INT64, .v.i64 = 1};
  assert_int_equal(isv_request_set_param(r, "k", &v), 0);
  assert_int_equal(isv_request_set_id(r, "id-1"), 0);
  assert_non_null(isv_request_input(r, "A"));
  isv_request_free(r); /* in the quarantine now: its struct stays, its arena is gone */
  assert_null(isv_request_input(r, "A"));
  assert_null(isv_request_input_at(r, 0));
  assert_int_equal(isv_request_input_count(r), 0);
  assert_null(isv_request_param(r, "k"));
  assert_int_equal(isv_request_param_count(r), 0);
  assert_null(isv_request_param_at(r, 0, NULL));
  assert_string_equal(isv_request_id(r), "");
  assert_null(isv_request_model_name(r));
  assert_null(isv_request_model_version(r));
  assert_int_equal(isv_request_is_output_requested(r, "Y"), 0);
  assert_int_equal(isv_request_output_count(r), 0);
  assert_null(isv_request_output(r, "Y"));
  assert_string_equal(isv_request_error_message(r), "");
  isv_trace_context tc;
  assert_int_equal(isv_request_trace_context(r, &tc), ISV_ESTATE);
  assert_null(isv_request_alloc(r, 8));
  int64_t one = 16;
  void *out;
  assert_int_equal(isv_request_alloc_output(r, "Y", ISV_INT32, &one, 1, &out), ISV_ESTATE);
}

/* The struct that leaves the quarantine is the next request's, zeroed: one request's free and
 * the next one's new reuse it without malloc — and a late call on the old request, made after
 * the struct was reused, would reach the new one, which is why it waits ISV__QUARANTINE frees. */
static void a_struct_leaving_the_quarantine_is_reused_clean(void **state) {
  fixture *f = *state;
  isv_request *first = req(f);
  assert_int_equal(isv_request_set_id(first, "old"), 0);
  isv_request_free(first);
  for (size_t i = 0; i < ISV__QUARANTINE; i++) { /* the last of these pushes `first` out */
    isv_request *r = req(f);
    assert_ptr_not_equal(r, first);
    isv_request_free(r);
  }
  isv_request *again = isv__request_new(&f->core);
  assert_ptr_equal(again, first);
  assert_string_equal(isv_request_id(again), "");
  assert_int_equal(isv_request_input_count(again), 0);
  assert_int_equal(isv_request_is_cancelled(again), 0);
  isv_request_free(again);
}

/* Requests made and freed on two threads at once: the spare struct, and the spare arena chunk,
 * are taken without the core's lock (an exchange), so each goes to one of them, its bytes
 * handed over whole (TSan in CI: no race). */
typedef struct churn {
  fixture *f;
  const char *id;
  size_t kept; /* requests that kept this thread's id while it held them */
} churn;
static void churn_requests(void *arg) {
  churn *c = arg;
  for (size_t i = 0; i < 4 * ISV__QUARANTINE; i++) {
    isv_request *r = isv__request_new(&c->f->core);
    if (r == NULL) continue;
    isv_request_set_id(r, c->id);
    unsigned char *p = isv__arena_alloc(&r->arena, 1024); /* in the chunk the id took */
    if (p) memset(p, c->id[0], 1024);
    c->kept += strcmp(isv_request_id(r), c->id) == 0 && isv_request_input_count(r) == 0 &&
               p != NULL && p[0] == (unsigned char)c->id[0] && p[1023] == (unsigned char)c->id[0];
    isv_request_free(r);
  }
}
static void two_threads_share_the_spare(void **state) {
  fixture *f = *state;
  churn a = {.f = f, .id = "a"}, b = {.f = f, .id = "b"};
  uv_thread_t ta, tb;
  assert_int_equal(uv_thread_create(&ta, churn_requests, &a), 0);
  assert_int_equal(uv_thread_create(&tb, churn_requests, &b), 0);
  uv_thread_join(&ta);
  uv_thread_join(&tb);
  assert_int_equal(a.kept, 4 * ISV__QUARANTINE);
  assert_int_equal(b.kept, 4 * ISV__QUARANTINE);
  assert_non_null(atomic_load(&f->core.arena_spare)); /* the last chunk freed, kept */
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(validation_names_each_problem, setup, teardown),
      cmocka_unit_test_setup_teardown(add_input_ownership_contract, setup, teardown),
      cmocka_unit_test_setup_teardown(output_allocation_checks_the_declaration, setup, teardown),
      cmocka_unit_test_setup_teardown(set_output_ownership_contract, setup, teardown),
      cmocka_unit_test_setup_teardown(params_replace_and_copy, setup, teardown),
      cmocka_unit_test_setup_teardown(open_io_takes_any_tensor, setup, teardown),
      cmocka_unit_test_setup_teardown(a_freed_request_reads_as_empty, setup, teardown),
      cmocka_unit_test_setup_teardown(a_struct_leaving_the_quarantine_is_reused_clean, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(two_threads_share_the_spare, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
