/* Triton's example models that the zoo adds for Triton's client example programs (see zoo.h):
 * the sequence models of its docs/examples and qa/ repositories and the identity model its
 * client tests call. Each computes what Triton's model of that name computes — the values the
 * example programs check — with the sequence extension's parameters (sequence_id,
 * sequence_start, sequence_end) in place of Triton's control inputs (START, END, READY,
 * CORRID): a request that reaches the backend is always READY.
 *
 *   simple_sequence              OUTPUT = INPUT + START. Not an accumulator: Triton's ONNX /
 *                                graphdef model "returns INPUT+START" (its generator says so,
 *                                and the examples expect 1, 101, 21 then the inputs as sent).
 *   simple_dyna_sequence         OUTPUT = INPUT + START + END * CORRID (the id truncated to 32
 *                                bits); a numeric id only (its CORRID is UINT64).
 *   simple_string_dyna_sequence  Triton's "dyna_sequence" backend with a TYPE_STRING CORRID: a
 *                                per-sequence accumulator — START sets it to INPUT, later
 *                                requests add INPUT, END adds the id read as a decimal int.
 *   custom_identity_int32        Triton's "identity" backend: OUTPUT0 = INPUT0 (max batch
 *                                1024), without the execute_delay_ms its qa configs add.
 * Arithmetic wraps like int32 does on the GPU and in TensorFlow (done in uint32 here). */
#include "zoo.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* INPUT as INT32 with at least one element, or NULL and the request failed. */
static const isv_tensor *seq_input(isv_request *req) {
  const isv_tensor *x = isv_request_input(req, "INPUT");
  size_t n = isv_tensor_element_count(x);
  if (x == NULL || isv_tensor_datatype(x) != ISV_INT32 || n == 0 ||
      isv_tensor_byte_size(x) < n * sizeof(int32_t)) {
    demo_fail(req, ISV_EBADREQ, "INPUT must be INT32 with at least one element");
    return NULL;
  }
  return x;
}

/* OUTPUT[i] = INPUT[i] + add for every element, OUTPUT shaped as INPUT. */
static int seq_answer(isv_request *req, const isv_tensor *x, uint32_t add) {
  size_t nd, n = isv_tensor_element_count(x);
  const int64_t *shape = isv_tensor_shape(x, &nd);
  unsigned char *out;
  int rc = isv_request_alloc_output(req, "OUTPUT", ISV_INT32, shape, nd, (void **)&out);
  if (rc != 0) return rc;
  const unsigned char *in = isv_tensor_data(x);
  for (size_t i = 0; i < n; i++) {
    uint32_t v;
    memcpy(&v, in + i * sizeof v, sizeof v);
    v += add;
    memcpy(out + i * sizeof v, &v, sizeof v);
  }
  return isv_request_complete(req, 0, NULL);
}

/* ---- simple_sequence: INPUT + START ----------------------------------------------------- */

static int simple_sequence_infer(isv_request *req, void *user) {
  (void)user;
  const isv_tensor *x = seq_input(req);
  if (x == NULL) return 0;
  int flags = isv_request_sequence(req, NULL, NULL);
  if (flags < 0) return demo_fail(req, ISV_EINTERNAL, "no sequence");
  return seq_answer(req, x, (flags & ISV_SEQUENCE_FLAG_START) ? 1u : 0u);
}

/* ---- simple_dyna_sequence: INPUT + START + END * CORRID --------------------------------- */

static int simple_dyna_sequence_infer(isv_request *req, void *user) {
  (void)user;
  const isv_tensor *x = seq_input(req);
  if (x == NULL) return 0;
  uint64_t id;
  const char *id_str;
  int flags = isv_request_sequence(req, &id, &id_str);
  if (flags < 0) return demo_fail(req, ISV_EINTERNAL, "no sequence");
  if (id_str != NULL)
    return demo_fail(req, ISV_EBADREQ, "model 'simple_dyna_sequence' takes a numeric "
                     "sequence_id (its CORRID is UINT64); simple_string_dyna_sequence takes "
                     "string ids");
  uint32_t add = (flags & ISV_SEQUENCE_FLAG_START) ? 1u : 0u;
  if (flags & ISV_SEQUENCE_FLAG_END) add += (uint32_t)id; /* CORRID cast to int32: the low bits */
  return seq_answer(req, x, add);
}

/* ---- simple_string_dyna_sequence: an accumulator per sequence ----------------------------- */

/* The id as the dyna_sequence backend reads a string CORRID (std::stoi): a decimal int32,
 * here the whole string. -1 when it is not one. */
static int id_as_int(const char *s, uint32_t *out) {
  const char *p = s;
  int neg = *p == '-';
  if (*p == '-' || *p == '+') p++;
  if (*p == '\0') return -1;
  uint64_t v = 0;
  for (; *p; p++) {
    if (*p < '0' || *p > '9' || (v = v * 10 + (uint64_t)(*p - '0')) > 2147483648u) return -1;
  }
  if (!neg && v > INT32_MAX) return -1;
  *out = neg ? 0u - (uint32_t)v : (uint32_t)v;
  return 0;
}

static int string_dyna_infer(isv_request *req, void *user) {
  (void)user;
  const isv_tensor *x = seq_input(req);
  if (x == NULL) return 0;
  uint64_t id;
  const char *id_str;
  int flags = isv_request_sequence(req, &id, &id_str);
  void **slot = isv_request_sequence_state(req);
  if (flags < 0 || slot == NULL) return demo_fail(req, ISV_EINTERNAL, "no sequence");
  uint32_t corrid = (uint32_t)id; /* a numeric id is taken as it is */
  if (id_str != NULL && id_as_int(id_str, &corrid) != 0)
    return demo_fail(req, ISV_EBADREQ, "model 'simple_string_dyna_sequence' needs a "
                     "sequence_id that reads as a decimal int32");
  if (*slot == NULL && (*slot = calloc(1, sizeof(uint32_t))) == NULL) return ISV_ENOMEM;
  uint32_t *acc = *slot;
  const unsigned char *in = isv_tensor_data(x);
  size_t n = isv_tensor_element_count(x);
  for (size_t i = 0; i < n; i++) {
    uint32_t v;
    memcpy(&v, in + i * sizeof v, sizeof v);
    *acc = (i == 0 && (flags & ISV_SEQUENCE_FLAG_START)) ? v : *acc + v;
  }
  if (flags & ISV_SEQUENCE_FLAG_END) *acc += corrid;
  /* every element of OUTPUT is the accumulator: OUTPUT = INPUT * 0 + acc */
  size_t nd;
  const int64_t *shape = isv_tensor_shape(x, &nd);
  unsigned char *out;
  int rc = isv_request_alloc_output(req, "OUTPUT", ISV_INT32, shape, nd, (void **)&out);
  if (rc != 0) return rc;
  for (size_t i = 0; i < n; i++) memcpy(out + i * sizeof *acc, acc, sizeof *acc);
  return isv_request_complete(req, 0, NULL);
}

static void free_state(void *user, uint64_t id, const char *id_str, void *state,
                       isv_sequence_end_reason reason) {
  (void)user;
  (void)id;
  (void)id_str;
  (void)reason;
  free(state);
}

/* ---- custom_identity_int32: OUTPUT0 = INPUT0 ---------------------------------------------- */

static int custom_identity_infer(isv_request *req, void *user) {
  (void)user;
  const isv_tensor *x = isv_request_input(req, "INPUT0");
  if (x == NULL || isv_tensor_datatype(x) != ISV_INT32)
    return demo_fail(req, ISV_EBADREQ, "INPUT0 must be INT32");
  size_t nd;
  const int64_t *shape = isv_tensor_shape(x, &nd);
  /* by reference: an input lives as long as its request */
  int rc = isv_request_set_output(req, "OUTPUT0", ISV_INT32, shape, nd, isv_tensor_data(x),
                                  isv_tensor_byte_size(x), ISV_STATIC);
  return rc ? rc : isv_request_complete(req, 0, NULL);
}

/* ---- registration ------------------------------------------------------------------------- */

/* One model: `in` -> `out` (INT32 [dim], after the batch dimension), version "1". With
 * idle_us > 0 it has sequence batching with that idle timeout. */
static int add_model(isv_server *srv, const char *name, uint32_t max_batch, const char *in,
                     const char *out, int64_t dim, uint32_t instances, uint64_t idle_us,
                     int (*infer)(isv_request *, void *),
                     void (*end)(void *, uint64_t, const char *, void *,
                                 isv_sequence_end_reason)) {
  isv_model_config *c;
  int rc = isv_model_config_new(name, &c);
  if (rc != 0) return rc;
  rc = isv_model_config_set_max_batch(c, max_batch);
  if (rc == 0) rc = isv_model_config_add_input(c, in, ISV_INT32, &dim, 1);
  if (rc == 0) rc = isv_model_config_add_output(c, out, ISV_INT32, &dim, 1);
  if (rc == 0) rc = isv_model_config_set_instances(c, instances);
  if (rc == 0 && idle_us) rc = isv_model_config_set_sequence_batching(c, idle_us, 1024);
  if (rc == 0) {
    isv_backend be;
    memset(&be, 0, sizeof be);
    be.struct_size = sizeof be;
    be.infer = infer;
    be.sequence_end = end;
    rc = isv_server_add_model(srv, c, "1", &be, NULL, NULL);
  }
  isv_model_config_free(c);
  return rc;
}

int demo_zoo_register_triton(isv_server *srv) {
  /* idle timeouts as their configs: Triton's default 1 s; 10 s for the dyna models */
  int rc = add_model(srv, "simple_sequence", 8, "INPUT", "OUTPUT", 1, 1, 1000000,
                     simple_sequence_infer, NULL);
  if (rc == 0)
    rc = add_model(srv, "simple_dyna_sequence", 8, "INPUT", "OUTPUT", 1, 2, 10000000,
                   simple_dyna_sequence_infer, NULL);
  if (rc == 0)
    rc = add_model(srv, "simple_string_dyna_sequence", 8, "INPUT", "OUTPUT", 1, 2, 10000000,
                   string_dyna_infer, free_state);
  if (rc == 0)
    rc = add_model(srv, "custom_identity_int32", 1024, "INPUT0", "OUTPUT0", -1, 1, 0,
                   custom_identity_infer, NULL);
  return rc;
}
