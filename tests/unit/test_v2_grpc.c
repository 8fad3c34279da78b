/* protocol/v2_grpc.c: inference.GRPCInferenceService as a method table, every method of the V2
 * front end served by the call layer and driven through a fake carrier (the seam of
 * transport/grpc.h) — ServerLive, ServerReady, ServerMetadata, ModelReady, ModelMetadata
 * (found, unknown, malformed), ModelInfer with a ModelInferRequest built by hand, and
 * ModelStreamInfer whose failed requests are answered in-stream while the stream goes on.
 * Messages are written and read back with a tiny protobuf writer and parser below, written
 * from the wire-format rules, independent of the code under test. */
#include "cmocka_prelude.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/request.h"
#include "protocol/v2.h"
#include "core/lifecycle.h"

#define SVC "/inference.GRPCInferenceService/"

static uv_loop_t loop;
static isv__core core;
static isv__grpc_services svc;

/* ---- the fake carrier -------------------------------------------------------------------- */

typedef struct fake {
  isv__grpc_call call;
  int finished, status;
  char msg[256];
  int n_sent;
  uint8_t *sent[8]; /* each message, malloc'd */
  size_t sent_len[8];
} fake;

static int fake_send(isv__grpc_call *call, const uv_buf_t *parts, size_t n, void (*release)(void *),
                     void *ctx) {
  fake *f = call->carrier;
  assert_false(f->finished);
  assert_true(f->n_sent < 8);
  size_t total = 0;
  for (size_t i = 0; i < n; i++) total += parts[i].len;
  uint8_t *out = malloc(total + 1);
  assert_non_null(out);
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    if (parts[i].len) memcpy(out + k, parts[i].base, parts[i].len);
    k += parts[i].len;
  }
  f->sent[f->n_sent] = out;
  f->sent_len[f->n_sent++] = total;
  if (release) release(ctx);
  return 0;
}

static void fake_finish(isv__grpc_call *call, int status, const char *message) {
  fake *f = call->carrier;
  assert_false(f->finished); /* exactly once */
  f->finished = 1;
  f->status = status;
  snprintf(f->msg, sizeof f->msg, "%s", message ? message : "");
}

static void done(fake *f) {
  for (int i = 0; i < f->n_sent; i++) free(f->sent[i]);
  memset(f, 0, sizeof *f);
}

static void start(fake *f, const char *path) {
  memset(f, 0, sizeof *f);
  f->call.path = path;
  f->call.path_len = strlen(path);
  f->call.send = fake_send;
  f->call.finish = fake_finish;
  f->call.carrier = f;
  isv__grpc_services_dispatch(&svc, &f->call);
}

static void message(fake *f, const void *p, size_t n) {
  uint8_t *m = isv__bigbuf_alloc(NULL, n, 0); /* the layer takes it */
  assert_non_null(m);
  if (n) memcpy(m, p, n);
  f->call.on_message(&f->call, m, n, 0);
}

/* A unary call: one message, half-close. */
static void unary(fake *f, const char *method, const void *p, size_t n) {
  start(f, method);
  assert_false(f->finished);
  message(f, p, n);
  f->call.on_half_close(&f->call);
  assert_true(f->finished);
}

/* ---- protobuf writer --------------------------------------------------------------------- */

typedef struct pbw {
  uint8_t *p;
  size_t n, cap;
} pbw;

static void w_put(pbw *w, const void *s, size_t n) {
  if (w->n + n > w->cap) {
    size_t cap = w->cap ? w->cap : 64;
    while (cap < w->n + n) cap *= 2;
    w->p = realloc(w->p, cap);
    assert_non_null(w->p);
    w->cap = cap;
  }
  if (n) memcpy(w->p + w->n, s, n);
  w->n += n;
}

static void w_varint(pbw *w, uint64_t v) {
  do {
    uint8_t b = (uint8_t)(v & 0x7f);
    v >>= 7;
    if (v) b |= 0x80;
    w_put(w, &b, 1);
  } while (v);
}

static void w_key(pbw *w, unsigned num, unsigned wt) { w_varint(w, (uint64_t)num << 3 | wt); }
static void w_len(pbw *w, unsigned num, const void *s, size_t n) {
  w_key(w, num, 2);
  w_varint(w, n);
  w_put(w, s, n);
}
static void w_str(pbw *w, unsigned num, const char *s) { w_len(w, num, s, strlen(s)); }
static void w_sub(pbw *w, unsigned num, pbw *sub) {
  w_len(w, num, sub->p, sub->n);
  free(sub->p);
  memset(sub, 0, sizeof *sub);
}
static void w_free(pbw *w) {
  free(w->p);
  memset(w, 0, sizeof *w);
}

/* ModelReadyRequest / ModelMetadataRequest {name 1, version 2}. */
static pbw model_ref(const char *name, const char *version) {
  pbw m = {0};
  w_str(&m, 1, name);
  if (version) w_str(&m, 2, version);
  return m;
}

/* ModelInferRequest for "add": {model_name 1, model_version 2, id 3, inputs 5 {name 1,
 * datatype 2, shape 3 (packed)}, raw_input_contents 7}. */
static pbw infer_request(const char *model, const char *version, const char *id,
                         const float *a, size_t n_bytes) {
  pbw m = {0}, in = {0}, shape = {0};
  w_str(&m, 1, model);
  if (version) w_str(&m, 2, version);
  if (id) w_str(&m, 3, id);
  w_str(&in, 1, "A");
  w_str(&in, 2, "FP32");
  w_varint(&shape, 1);
  w_varint(&shape, 4);
  w_sub(&in, 3, &shape);
  w_sub(&m, 5, &in);
  w_len(&m, 7, a, n_bytes);
  return m;
}

/* ---- protobuf parser --------------------------------------------------------------------- */

typedef struct prd {
  const uint8_t *p, *end;
} prd;

static uint64_t p_varint(prd *r) {
  uint64_t v = 0;
  for (unsigned sh = 0;; sh += 7) {
    assert_true(r->p < r->end && sh < 64);
    uint8_t b = *r->p++;
    v |= (uint64_t)(b & 0x7f) << sh;
    if (!(b & 0x80)) return v;
  }
}

/* Next field: 0 at the end. LEN payloads in (*s, *n), varints in *v. */
static int p_field(prd *r, unsigned *num, unsigned *wt, uint64_t *v, const uint8_t **s,
                   size_t *n) {
  if (r->p == r->end) return 0;
  uint64_t k = p_varint(r);
  *num = (unsigned)(k >> 3);
  *wt = (unsigned)(k & 7);
  if (*wt == 0) {
    *v = p_varint(r);
  } else if (*wt == 2) {
    *n = (size_t)p_varint(r);
    assert_true(*n <= (size_t)(r->end - r->p));
    *s = r->p;
    r->p += *n;
  } else {
    fail_msg("unexpected wire type %u", *wt);
  }
  return 1;
}

static void copy_str(char *dst, size_t cap, const uint8_t *s, size_t n) {
  assert_true(n < cap);
  if (n) memcpy(dst, s, n);
  dst[n] = '\0';
}

/* A tensor's metadata: InferOutputTensor and TensorMetadata alike {name 1, datatype 2,
 * shape 3 (packed int64)}. */
typedef struct tensor_md {
  char name[32], dt[16];
  int64_t shape[8];
  size_t ndim;
} tensor_md;

static void parse_tensor(const uint8_t *s, size_t n, tensor_md *t) {
  memset(t, 0, sizeof *t);
  prd q = {s, s + n};
  unsigned num, wt;
  uint64_t v;
  const uint8_t *s2;
  size_t n2;
  while (p_field(&q, &num, &wt, &v, &s2, &n2)) {
    if (num == 1) copy_str(t->name, sizeof t->name, s2, n2);
    if (num == 2) copy_str(t->dt, sizeof t->dt, s2, n2);
    if (num == 3) {
      assert_int_equal(wt, 2); /* packed */
      prd d = {s2, s2 + n2};
      while (d.p < d.end) t->shape[t->ndim++] = (int64_t)p_varint(&d);
    }
  }
}

/* ModelInferResponse {model_name 1, model_version 2, id 3, outputs 5, raw_output_contents 6}. */
typedef struct infer_resp {
  char model[32], version[16], id[32];
  tensor_md outs[4];
  size_t n_outs;
  const uint8_t *raw[4];
  size_t raw_n[4];
  size_t n_raw;
} infer_resp;

static void parse_infer_response(const uint8_t *p, size_t n, infer_resp *o) {
  memset(o, 0, sizeof *o);
  prd r = {p, p + n};
  unsigned num, wt;
  uint64_t v;
  const uint8_t *s;
  size_t sn;
  while (p_field(&r, &num, &wt, &v, &s, &sn)) {
    assert_int_equal(wt, 2);
    if (num == 1) copy_str(o->model, sizeof o->model, s, sn);
    if (num == 2) copy_str(o->version, sizeof o->version, s, sn);
    if (num == 3) copy_str(o->id, sizeof o->id, s, sn);
    if (num == 5) parse_tensor(s, sn, &o->outs[o->n_outs++]);
    if (num == 6) {
      o->raw[o->n_raw] = s;
      o->raw_n[o->n_raw++] = sn;
    }
  }
}

/* The answer of "add" version `version` to A = {1, 2.5, -3, 0}: Y = A + version. */
static void expect_add_answer(const uint8_t *p, size_t n, const char *version, const char *id) {
  infer_resp o;
  parse_infer_response(p, n, &o);
  assert_string_equal(o.model, "add");
  assert_string_equal(o.version, version);
  assert_string_equal(o.id, id);
  assert_int_equal(o.n_outs, 1);
  assert_string_equal(o.outs[0].name, "Y");
  assert_string_equal(o.outs[0].dt, "FP32");
  assert_int_equal(o.outs[0].ndim, 2);
  assert_int_equal(o.outs[0].shape[0], 1);
  assert_int_equal(o.outs[0].shape[1], 4);
  assert_int_equal(o.n_raw, 1);
  float plus = (float)atoi(version);
  const float want[4] = {1 + plus, 2.5f + plus, -3 + plus, plus};
  assert_int_equal(o.raw_n[0], 16);
  assert_memory_equal(o.raw[0], want, 16);
}

/* ---- models ------------------------------------------------------------------------------ */

static const float a_in[4] = {1, 2.5f, -3, 0};

/* "add" (versions 1 and 2, batched FP32 [4]): Y = A + version. "fails": a backend error. */
static int add_version(isv_request *r, void *u) {
  (void)u;
  const isv_tensor *a = isv_request_input(r, "A");
  size_t nd;
  const int64_t *shape = isv_tensor_shape(a, &nd);
  float *y;
  int rc = isv_request_alloc_output(r, "Y", ISV_FP32, shape, nd, (void **)&y);
  if (rc) return rc;
  const float *x = isv_tensor_data(a);
  float plus = (float)atoi(isv_request_model_version(r));
  for (size_t i = 0; i < isv_tensor_element_count(a); i++) y[i] = x[i] + plus;
  return isv_request_complete(r, 0, NULL);
}

static int fails(isv_request *r, void *u) {
  (void)u;
  return isv_request_complete(r, ISV_EBACKEND, "intentional failure");
}

static isv_model *add_v2;

static int setup(void **state) {
  (void)state;
  uv_loop_init(&loop);
  isv_options o;
  isv__options_defaults(&o);
  assert_int_equal(isv__core_init(&core, &loop, &o), 0);
  isv__grpc_services_init(&svc, &core);
  for (const isv__grpc_method *m = isv__v2_frontend.methods; m->path; m++)
    assert_int_equal(isv__grpc_services_add(&svc, m, isv__v2_frontend.grpc_label), 0);
  int64_t four[] = {4};
  isv_model_config *c;
  isv_model_config_new("add", &c);
  isv_model_config_add_input(c, "A", ISV_FP32, four, 1);
  isv_model_config_add_output(c, "Y", ISV_FP32, four, 1);
  isv_model_config_set_max_batch(c, 8);
  isv_model_config_set_platform(c, "plat");
  isv_backend be = {.struct_size = sizeof be, .infer = add_version};
  assert_int_equal(isv__registry_add(&core.reg, c, "1", &be, NULL, NULL), 0);
  assert_int_equal(isv__registry_add(&core.reg, c, "2", &be, NULL, &add_v2), 0);
  isv_model_config_free(c);
  isv_model_config_new("fails", &c);
  isv_model_config_add_input(c, "A", ISV_FP32, four, 1);
  isv_model_config_set_max_batch(c, 8);
  be.infer = fails;
  assert_int_equal(isv__registry_add(&core.reg, c, "1", &be, NULL, NULL), 0);
  isv_model_config_free(c);
  return 0;
}

static int teardown(void **state) {
  (void)state;
  isv__grpc_services_free(&svc);
  isv__core_close(&core, NULL);
  uv_run(&loop, UV_RUN_DEFAULT);
  return uv_loop_close(&loop);
}

/* ---- tests ------------------------------------------------------------------------------- */

static void every_method_is_served_and_nothing_else(void **state) {
  (void)state;
  static const char *const names[] = {"ServerLive",    "ServerReady", "ModelReady",
                                      "ServerMetadata", "ModelMetadata", "ModelStatistics",
                                      "ModelConfig", "LogSettings", "TraceSetting",
                                      "SystemSharedMemoryStatus",
                                      "SystemSharedMemoryRegister", "SystemSharedMemoryUnregister",
                                      "CudaSharedMemoryStatus", "CudaSharedMemoryRegister",
                                      "CudaSharedMemoryUnregister", "RepositoryIndex",
                                      "RepositoryModelLoad", "RepositoryModelUnload", "ModelInfer",
                                      "ModelStreamInfer"};
  size_t n = 0;
  for (const isv__grpc_method *m = isv__v2_methods; m->path; m++, n++) {
    char path[96];
    snprintf(path, sizeof path, SVC "%s", names[n]);
    assert_string_equal(m->path, path);
  }
  assert_int_equal(n, sizeof names / sizeof names[0]);
  assert_ptr_equal(isv__v2_frontend.methods, isv__v2_methods);
  assert_true(isv__grpc_services_has(&svc, "inference.GRPCInferenceService"));
  assert_int_equal(isv__grpc_services_add(&svc, &isv__v2_methods[0], "x"), ISV_EEXIST);
  fake f;
  start(&f, SVC "NoSuchMethod");
  assert_true(f.finished);
  assert_int_equal(f.status, ISV__GRPC_UNIMPLEMENTED);
  assert_string_equal(f.msg, "unknown method " SVC "NoSuchMethod");
  done(&f);
  /* the trace extension without a trace hook: nothing would be traced, and it says so */
  unary(&f, SVC "TraceSetting", "", 0);
  assert_int_equal(f.status, ISV__GRPC_UNIMPLEMENTED);
  assert_non_null(strstr(f.msg, "no trace hook"));
  done(&f);
}

static void server_live_and_ready_follow_online(void **state) {
  (void)state;
  fake f;
  unary(&f, SVC "ServerLive", "", 0);
  assert_int_equal(f.status, 0);
  assert_int_equal(f.n_sent, 1);
  assert_int_equal(f.sent_len[0], 2);
  assert_memory_equal(f.sent[0], "\x08\x01", 2); /* live: true */
  done(&f);
  unary(&f, SVC "ServerReady", "", 0);
  assert_int_equal(f.status, 0);
  assert_int_equal(f.n_sent, 1);
  assert_int_equal(f.sent_len[0], 2);
  assert_memory_equal(f.sent[0], "\x08\x01", 2);
  done(&f);
  isv__core_set_online(&core, 0);
  unary(&f, SVC "ServerReady", "", 0);
  assert_int_equal(f.status, 0);
  assert_int_equal(f.n_sent, 1);
  assert_int_equal(f.sent_len[0], 0); /* ready: false, proto3's default, not written */
  done(&f);
  unary(&f, SVC "ServerLive", "", 0); /* offline is still live */
  assert_int_equal(f.sent_len[0], 2);
  done(&f);
  isv__core_set_online(&core, 1);
  start(&f, SVC "ServerLive"); /* a unary call without its message */
  f.call.on_half_close(&f.call);
  assert_int_equal(f.status, ISV__GRPC_INVALID_ARGUMENT);
  assert_int_equal(f.n_sent, 0);
  done(&f);
}

static void no_trace(void *user, const isv_trace_timeline *t) {
  (void)user;
  (void)t;
}

static void server_metadata_lists_both_extensions(void **state) {
  (void)state;
  core.shm->enabled = 1; /* isv_options_set_shared_memory: listed only when on */
  core.opts.trace = no_trace; /* and "trace" with a trace hook */
  fake f;
  unary(&f, SVC "ServerMetadata", "", 0);
  assert_int_equal(f.status, 0);
  assert_int_equal(f.n_sent, 1);
  prd r = {f.sent[0], f.sent[0] + f.sent_len[0]};
  unsigned num, wt;
  uint64_t v;
  const uint8_t *s;
  size_t sn, n_ext = 0;
  char name[64] = "", version[32] = "", ext[8][32];
  while (p_field(&r, &num, &wt, &v, &s, &sn)) {
    assert_int_equal(wt, 2);
    if (num == 1) copy_str(name, sizeof name, s, sn);
    if (num == 2) copy_str(version, sizeof version, s, sn);
    if (num == 3) {
      assert_true(n_ext < 8);
      copy_str(ext[n_ext++], sizeof ext[0], s, sn);
    }
  }
  assert_string_equal(name, "libinferserve");
  assert_string_equal(version, isv_version());
  assert_int_equal(n_ext, isv__v2_n_extensions); /* the same list as REST */
  for (size_t i = 0; i < n_ext; i++) assert_string_equal(ext[i], isv__v2_extensions[i]);
  assert_int_equal(n_ext, 7);
  assert_string_equal(ext[5], "logging");
  assert_string_equal(ext[6], "trace");
  core.shm->enabled = 0;
  core.opts.trace = NULL;
  assert_string_equal(ext[4], "system_shared_memory");
  assert_string_equal(ext[0], "classification");
  assert_string_equal(ext[1], "binary_tensor_data");
  assert_string_equal(ext[2], "statistics");
  assert_string_equal(ext[3], "model_configuration");
  done(&f);
}

/* Run a unary model query with a {name, version} message; returns its answer (caller frees). */
static void model_query(fake *f, const char *method, const char *name, const char *version) {
  pbw m = model_ref(name, version);
  unary(f, method, m.p, m.n);
  w_free(&m);
}

static void model_ready_found_unknown_and_malformed(void **state) {
  (void)state;
  fake f;
  model_query(&f, SVC "ModelReady", "add", NULL);
  assert_int_equal(f.status, 0);
  assert_int_equal(f.sent_len[0], 2);
  assert_memory_equal(f.sent[0], "\x08\x01", 2);
  done(&f);
  add_v2->state = ISV_MODEL_LOADING;
  model_query(&f, SVC "ModelReady", "add", "2");
  assert_int_equal(f.status, 0);
  assert_int_equal(f.n_sent, 1);
  assert_int_equal(f.sent_len[0], 0); /* ready: false */
  done(&f);
  model_query(&f, SVC "ModelReady", "add", "1");
  assert_int_equal(f.sent_len[0], 2);
  done(&f);
  add_v2->state = ISV_MODEL_READY;
  /* not there: not ready (Triton's answer), not an error */
  model_query(&f, SVC "ModelReady", "nope", NULL);
  assert_int_equal(f.status, 0);
  assert_int_equal(f.n_sent, 1);
  assert_int_equal(f.sent_len[0], 0); /* ready = false: the empty message */
  done(&f);
  model_query(&f, SVC "ModelReady", "add", "9");
  assert_int_equal(f.status, 0);
  assert_int_equal(f.sent_len[0], 0);
  done(&f);
  unary(&f, SVC "ModelReady", "\x0a\x09" "abc", 5); /* a string longer than the message */
  assert_int_equal(f.status, ISV__GRPC_INVALID_ARGUMENT);
  assert_string_equal(f.msg, "malformed request message");
  assert_int_equal(f.n_sent, 0);
  done(&f);
}

/* ModelStatisticsResponse: the names of its model_stats entries (field 1), and of the first
 * one: execution_count (5), inference_stats.success.count (6.1.1), batch_stats sizes (7.1). */
typedef struct stats_seen {
  char names[8][16];
  size_t n;
  uint64_t exec_count, success_count, fail_count, batch_size;
} stats_seen;

static uint64_t sub_count(const uint8_t *s, size_t sn) {
  prd r = {s, s + sn};
  unsigned num, wt;
  uint64_t v, count = 0;
  const uint8_t *x;
  size_t xn;
  while (p_field(&r, &num, &wt, &v, &x, &xn))
    if (num == 1) count = v;
  return count;
}

static stats_seen read_stats(const fake *f) {
  stats_seen st;
  memset(&st, 0, sizeof st);
  prd r = {f->sent[0], f->sent[0] + f->sent_len[0]};
  unsigned num, wt;
  uint64_t v;
  const uint8_t *s;
  size_t sn;
  while (p_field(&r, &num, &wt, &v, &s, &sn)) {
    assert_int_equal(num, 1);
    prd m = {s, s + sn};
    unsigned mn, mw;
    uint64_t mv;
    const uint8_t *ms;
    size_t msn;
    char name[16] = "", version[8] = "";
    while (p_field(&m, &mn, &mw, &mv, &ms, &msn)) {
      if (mn == 1) copy_str(name, sizeof name, ms, msn);
      if (mn == 2) copy_str(version, sizeof version, ms, msn);
      if (st.n == 0 && mn == 5) st.exec_count = mv;
      if (st.n == 0 && mn == 6) {
        prd is = {ms, ms + msn};
        unsigned in, iw;
        uint64_t iv;
        const uint8_t *d;
        size_t dn;
        while (p_field(&is, &in, &iw, &iv, &d, &dn)) {
          if (in == 1) st.success_count = sub_count(d, dn);
          if (in == 2) st.fail_count = sub_count(d, dn);
        }
      }
      if (st.n == 0 && mn == 7) st.batch_size = sub_count(ms, msn); /* batch_size is field 1 */
    }
    assert_true(st.n < 8);
    snprintf(st.names[st.n++], sizeof st.names[0], "%s/%s", name, version);
  }
  return st;
}

static void model_statistics_of_one_version_a_model_or_all(void **state) {
  (void)state;
  fake f;
  model_query(&f, SVC "ModelStatistics", "add", "2");
  assert_int_equal(f.status, 0);
  stats_seen st = read_stats(&f);
  assert_int_equal(st.n, 1);
  assert_string_equal(st.names[0], "add/2");
  assert_int_equal(st.exec_count + st.success_count + st.fail_count, 0); /* nothing ran yet */
  done(&f);

  add_v2->stats.exec_count = 3;
  add_v2->stats.success[0] = 2;
  add_v2->stats.failure[0] = 1;
  add_v2->stats.batch_execs[4] = 3;
  model_query(&f, SVC "ModelStatistics", "add", "2");
  st = read_stats(&f);
  assert_int_equal(st.exec_count, 3);
  assert_int_equal(st.success_count, 2);
  assert_int_equal(st.fail_count, 1);
  assert_int_equal(st.batch_size, 4);
  done(&f);

  model_query(&f, SVC "ModelStatistics", "add", NULL); /* every version */
  st = read_stats(&f);
  assert_int_equal(st.n, 2);
  done(&f);
  model_query(&f, SVC "ModelStatistics", "", NULL); /* every model */
  st = read_stats(&f);
  assert_int_equal(st.n, 3);
  done(&f);
  model_query(&f, SVC "ModelStatistics", "nope", NULL);
  assert_int_equal(f.status, ISV__GRPC_NOT_FOUND);
  assert_string_equal(f.msg, "Request for unknown model: 'nope' is not found");
  done(&f);
}

/* ModelConfigResponse {config 1: ModelConfig} read back with Triton's field numbers. */
static void model_config_in_tritons_numbers(void **state) {
  (void)state;
  fake f;
  model_query(&f, SVC "ModelConfig", "add", "1");
  assert_int_equal(f.status, 0);
  prd r = {f.sent[0], f.sent[0] + f.sent_len[0]};
  unsigned num, wt;
  uint64_t v;
  const uint8_t *s;
  size_t sn;
  assert_true(p_field(&r, &num, &wt, &v, &s, &sn));
  assert_int_equal(num, 1); /* config */
  prd c = {s, s + sn};
  char name[16] = "", platform[16] = "", in_name[8] = "";
  uint64_t max_batch = 0, in_type = 0, kind = 0, count = 0, decoupled = 99;
  int64_t dims[4];
  size_t n_dims = 0;
  int groups = 0, tx = 0, batching = 0;
  while (p_field(&c, &num, &wt, &v, &s, &sn)) {
    if (num == 1) copy_str(name, sizeof name, s, sn);
    if (num == 2) copy_str(platform, sizeof platform, s, sn);
    if (num == 4) max_batch = v;
    if (num == 11 || num == 13) batching++;
    prd m = {s, s + sn};
    unsigned mn, mw;
    uint64_t mv;
    const uint8_t *ms;
    size_t msn;
    if (num == 5)
      while (p_field(&m, &mn, &mw, &mv, &ms, &msn)) {
        if (mn == 1) copy_str(in_name, sizeof in_name, ms, msn);
        if (mn == 2) in_type = mv;
        if (mn == 4) { /* packed int64 */
          prd d = {ms, ms + msn};
          while (d.p < d.end && n_dims < 4) {
            uint64_t x = 0;
            unsigned shift = 0;
            while (d.p < d.end) {
              uint8_t byte = *d.p++;
              x |= (uint64_t)(byte & 0x7f) << shift;
              shift += 7;
              if (!(byte & 0x80)) break;
            }
            dims[n_dims++] = (int64_t)x;
          }
        }
      }
    if (num == 7) {
      groups++;
      while (p_field(&m, &mn, &mw, &mv, &ms, &msn)) {
        if (mn == 2) count = mv;
        if (mn == 4) kind = mv;
      }
    }
    if (num == 19) {
      tx++;
      decoupled = 0;
      while (p_field(&m, &mn, &mw, &mv, &ms, &msn))
        if (mn == 1) decoupled = mv;
    }
  }
  assert_string_equal(name, "add");
  assert_string_equal(platform, "plat");
  assert_int_equal(max_batch, 8);
  assert_string_equal(in_name, "A");
  assert_int_equal(in_type, 11); /* TYPE_FP32 */
  assert_int_equal(n_dims, 1);
  assert_int_equal(dims[0], 4); /* without the batch dimension */
  assert_int_equal(groups, 1);
  assert_int_equal(kind, 2); /* KIND_CPU */
  assert_int_equal(count, 1);
  assert_int_equal(batching, 0);
  assert_int_equal(tx, 1);
  assert_int_equal(decoupled, 0);
  done(&f);
  model_query(&f, SVC "ModelConfig", "nope", NULL);
  assert_int_equal(f.status, ISV__GRPC_NOT_FOUND);
  done(&f);
}

static void model_metadata_found_unknown_and_malformed(void **state) {
  (void)state;
  for (int with_version = 0; with_version < 2; with_version++) {
    fake f;
    model_query(&f, SVC "ModelMetadata", "add", with_version ? "1" : NULL);
    assert_int_equal(f.status, 0);
    assert_int_equal(f.n_sent, 1);
    prd r = {f.sent[0], f.sent[0] + f.sent_len[0]};
    unsigned num, wt;
    uint64_t v;
    const uint8_t *s;
    size_t sn;
    char name[16] = "", platform[16] = "", versions[8] = "";
    size_t nv = 0;
    tensor_md ins[2], outs[2];
    size_t n_in = 0, n_out = 0;
    while (p_field(&r, &num, &wt, &v, &s, &sn)) {
      if (num == 1) copy_str(name, sizeof name, s, sn);
      if (num == 2) {
        assert_int_equal(sn, 1);
        versions[nv++] = (char)s[0];
      }
      if (num == 3) copy_str(platform, sizeof platform, s, sn);
      if (num == 4) parse_tensor(s, sn, &ins[n_in++]);
      if (num == 5) parse_tensor(s, sn, &outs[n_out++]);
    }
    assert_string_equal(name, "add");
    assert_string_equal(versions, "12"); /* every version, whichever is named */
    assert_string_equal(platform, "plat");
    assert_int_equal(n_in, 1);
    assert_string_equal(ins[0].name, "A");
    assert_string_equal(ins[0].dt, "FP32");
    assert_int_equal(ins[0].ndim, 2);
    assert_int_equal(ins[0].shape[0], -1); /* the batch dimension */
    assert_int_equal(ins[0].shape[1], 4);
    assert_int_equal(n_out, 1);
    assert_string_equal(outs[0].name, "Y");
    assert_int_equal(outs[0].ndim, 2);
    done(&f);
  }
  fake f;
  model_query(&f, SVC "ModelMetadata", "nope", NULL);
  assert_int_equal(f.status, ISV__GRPC_NOT_FOUND);
  assert_string_equal(f.msg, "Request for unknown model: 'nope' is not found");
  done(&f);
  model_query(&f, SVC "ModelMetadata", "add", "3");
  assert_int_equal(f.status, ISV__GRPC_NOT_FOUND);
  assert_string_equal(f.msg, "Request for unknown model: 'add' version 3 is not found");
  done(&f);
  unary(&f, SVC "ModelMetadata", "\x0a", 1); /* a key without its length */
  assert_int_equal(f.status, ISV__GRPC_INVALID_ARGUMENT);
  assert_string_equal(f.msg, "malformed request message");
  done(&f);
}

static void model_infer_answers_a_model_infer_response(void **state) {
  (void)state;
  fake f;
  pbw m = infer_request("add", NULL, "req-1", a_in, sizeof a_in);
  unary(&f, SVC "ModelInfer", m.p, m.n);
  w_free(&m);
  assert_int_equal(f.status, 0);
  assert_int_equal(f.n_sent, 1);
  expect_add_answer(f.sent[0], f.sent_len[0], "2", "req-1"); /* the default version */
  done(&f);
  m = infer_request("add", "1", NULL, a_in, sizeof a_in);
  unary(&f, SVC "ModelInfer", m.p, m.n);
  w_free(&m);
  assert_int_equal(f.status, 0);
  expect_add_answer(f.sent[0], f.sent_len[0], "1", "");
  done(&f);
}

static void model_infer_errors_come_in_order(void **state) {
  (void)state;
  fake f;
  pbw m = infer_request("nope", NULL, NULL, a_in, 15); /* unknown AND a broken tensor */
  unary(&f, SVC "ModelInfer", m.p, m.n);
  w_free(&m);
  assert_int_equal(f.status, ISV__GRPC_NOT_FOUND);
  assert_string_equal(f.msg, "Request for unknown model: 'nope' is not found");
  assert_int_equal(f.n_sent, 0);
  done(&f);
  m = infer_request("add", "9", NULL, a_in, 15);
  unary(&f, SVC "ModelInfer", m.p, m.n);
  w_free(&m);
  assert_int_equal(f.status, ISV__GRPC_NOT_FOUND);
  assert_string_equal(f.msg, "Request for unknown model: 'add' version 9 is not found");
  done(&f);
  m = infer_request("add", NULL, NULL, a_in, 15); /* 15 bytes for shape [1,4] of FP32 */
  unary(&f, SVC "ModelInfer", m.p, m.n);
  w_free(&m);
  assert_int_equal(f.status, ISV__GRPC_INVALID_ARGUMENT);
  assert_non_null(strstr(f.msg, "'A'"));
  done(&f);
  unary(&f, SVC "ModelInfer", "\x0a\x7f", 2); /* not a message */
  assert_int_equal(f.status, ISV__GRPC_INVALID_ARGUMENT);
  done(&f);
  add_v2->state = ISV_MODEL_LOADING;
  m = infer_request("add", "2", NULL, a_in, sizeof a_in);
  unary(&f, SVC "ModelInfer", m.p, m.n);
  w_free(&m);
  assert_int_equal(f.status, ISV__GRPC_UNAVAILABLE);
  add_v2->state = ISV_MODEL_READY;
  done(&f);
  m = infer_request("fails", NULL, NULL, a_in, sizeof a_in);
  unary(&f, SVC "ModelInfer", m.p, m.n);
  w_free(&m);
  assert_int_equal(f.status, ISV__GRPC_INTERNAL);
  assert_string_equal(f.msg, "intentional failure");
  assert_int_equal(f.n_sent, 0);
  done(&f);
}

/* A ModelStreamInferResponse: {error_message 1} or {infer_response 2}. */
static void stream_response(const fake *f, int i, const char **error, const uint8_t **resp,
                            size_t *resp_len) {
  prd r = {f->sent[i], f->sent[i] + f->sent_len[i]};
  unsigned num, wt;
  uint64_t v;
  const uint8_t *s;
  size_t sn;
  static char err[256];
  *error = NULL;
  *resp = NULL;
  int fields = 0;
  while (p_field(&r, &num, &wt, &v, &s, &sn)) {
    fields++;
    if (num == 1) {
      copy_str(err, sizeof err, s, sn);
      *error = err;
    } else if (num == 2) {
      *resp = s;
      *resp_len = sn;
    } else {
      fail_msg("unexpected field %u", num);
    }
  }
  assert_int_equal(fields, 1); /* one or the other */
}

static void model_stream_infer_answers_errors_in_stream(void **state) {
  (void)state;
  fake f;
  start(&f, SVC "ModelStreamInfer");
  pbw good = infer_request("add", NULL, "a", a_in, sizeof a_in);
  pbw unknown = infer_request("nope", NULL, "b", a_in, sizeof a_in);
  pbw broken = infer_request("add", "1", "c", a_in, 12);
  pbw good1 = infer_request("add", "1", "d", a_in, sizeof a_in);
  message(&f, good.p, good.n);
  message(&f, unknown.p, unknown.n);
  message(&f, broken.p, broken.n);
  assert_false(f.finished); /* the stream goes on after a failed request */
  message(&f, good1.p, good1.n);
  w_free(&good);
  w_free(&unknown);
  w_free(&broken);
  w_free(&good1);
  assert_int_equal(f.n_sent, 4);
  assert_false(f.finished);
  const char *error;
  const uint8_t *resp;
  size_t len;
  stream_response(&f, 0, &error, &resp, &len);
  assert_null(error);
  expect_add_answer(resp, len, "2", "a");
  stream_response(&f, 1, &error, &resp, &len);
  assert_string_equal(error, "Request for unknown model: 'nope' is not found");
  stream_response(&f, 2, &error, &resp, &len);
  assert_non_null(error);
  assert_non_null(strstr(error, "'A'"));
  stream_response(&f, 3, &error, &resp, &len);
  assert_null(error);
  expect_add_answer(resp, len, "1", "d");
  f.call.on_half_close(&f.call); /* everything answered: the call ends OK */
  assert_true(f.finished);
  assert_int_equal(f.status, 0);
  done(&f);
  start(&f, SVC "ModelStreamInfer"); /* an empty stream */
  f.call.on_half_close(&f.call);
  assert_true(f.finished);
  assert_int_equal(f.status, 0);
  assert_int_equal(f.n_sent, 0);
  done(&f);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(every_method_is_served_and_nothing_else, setup, teardown),
      cmocka_unit_test_setup_teardown(server_live_and_ready_follow_online, setup, teardown),
      cmocka_unit_test_setup_teardown(server_metadata_lists_both_extensions, setup, teardown),
      cmocka_unit_test_setup_teardown(model_statistics_of_one_version_a_model_or_all, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(model_config_in_tritons_numbers, setup, teardown),
      cmocka_unit_test_setup_teardown(model_ready_found_unknown_and_malformed, setup, teardown),
      cmocka_unit_test_setup_teardown(model_metadata_found_unknown_and_malformed, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(model_infer_answers_a_model_infer_response, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(model_infer_errors_come_in_order, setup, teardown),
      cmocka_unit_test_setup_teardown(model_stream_infer_answers_errors_in_stream, setup,
                                      teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
