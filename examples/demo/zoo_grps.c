/* The zoo's grps models (see zoo.h): generic models with open I/O, as grps's are — they take
 * whatever tensors a GrpsMessage carries and answer in any of its data kinds. */
#include "zoo.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

/* ---- echo: exactly the payload it got, in the kind it came ---------------------------------- */

static int echo_infer(isv_request *req, void *user) {
  (void)user;
  for (size_t i = 0; i < isv_request_input_count(req); i++) {
    const isv_tensor *t = isv_request_input_at(req, i);
    size_t nd;
    const int64_t *shape = isv_tensor_shape(t, &nd);
    /* by reference: an input lives as long as its request */
    int rc = isv_request_set_output(req, isv_tensor_name(t), isv_tensor_datatype(t), shape, nd,
                                    isv_tensor_data(t), isv_tensor_byte_size(t), ISV_STATIC);
    if (rc != 0) return rc;
  }
  const isv_param *kind = isv_request_param(req, "grps_data"); /* answer in the kind asked */
  if (kind && kind->type == ISV_PARAM_STRING) {
    int rc = isv_request_set_response_param(req, "grps_data", kind);
    if (rc != 0) return rc;
  }
  return isv_request_complete(req, 0, NULL);
}

/* ---- echo_native: the GrpsMessage as it came (grps's no-converter mode) --------------------- */

static int echo_native_infer(isv_request *req, void *user) {
  (void)user;
  const isv_tensor *m = isv_request_input(req, "grps_message");
  if (m == NULL) return demo_fail(req, ISV_EBADREQ, "no grps_message");
  int64_t one = 1;
  int rc = isv_request_set_output(req, "grps_message", ISV_BYTES, &one, 1, isv_tensor_data(m), 0,
                                  ISV_STATIC);
  return rc ? rc : isv_request_complete(req, 0, NULL);
}

/* ---- streamer: N messages "0" .. "N-1", then done ----------------------------------------- */

/* An INT32 [1] input of the gmap, or def. */
static int32_t gmap_i32(const isv_request *req, const char *name, int32_t def) {
  const isv_tensor *t = isv_request_input(req, name);
  int32_t v;
  if (t == NULL || isv_tensor_datatype(t) != ISV_INT32 || isv_tensor_element_count(t) != 1)
    return def;
  memcpy(&v, isv_tensor_data(t), sizeof v);
  return v;
}

/* N from str_data "N" or an INT32 tensor (first element); with gmap, s_i32 "n", "fail_at" (fail
 * after that many messages) and "delay_ms" (between messages). -1 when there is none. */
static long long count_of(const isv_request *req, int32_t *fail_at, int32_t *delay_ms) {
  *fail_at = gmap_i32(req, "s_i32/fail_at", -1);
  *delay_ms = gmap_i32(req, "s_i32/delay_ms", 0);
  if (isv_request_input(req, "s_i32/n")) return gmap_i32(req, "s_i32/n", -1);
  const isv_tensor *t = isv_request_input_at(req, 0);
  if (t == NULL || isv_tensor_element_count(t) < 1) return -1;
  if (isv_tensor_datatype(t) == ISV_INT32) {
    int32_t v;
    memcpy(&v, isv_tensor_data(t), sizeof v);
    return v;
  }
  if (isv_tensor_datatype(t) != ISV_BYTES) return -1;
  const isv_bytes *b = isv_tensor_data(t);
  long long n = 0;
  if (b->len == 0 || b->len > 9) return -1;
  for (size_t i = 0; i < b->len; i++) {
    if (b->ptr[i] < '0' || b->ptr[i] > '9') return -1;
    n = n * 10 + (b->ptr[i] - '0');
  }
  return n;
}

static int streamer_infer(isv_request *req, void *user) {
  (void)user;
  int32_t fail_at, delay_ms;
  long long n = count_of(req, &fail_at, &delay_ms);
  if (n < 0)
    return demo_fail(req, ISV_EBADREQ, "streamer wants N: str_data \"N\", an INT32 tensor, or gmap "
                 "s_i32 n");
  if (n > 1000)
    return demo_fail(req, ISV_EBADREQ, "streamer sends at most 1000 messages, not %lld", n);
  if (delay_ms < 0 || delay_ms > 1000) delay_ms = 0;
  static const isv_param str_kind = {.type = ISV_PARAM_STRING, .v.s = {"str_data", 8}};
  int64_t one = 1;
  for (long long i = 0; i < n; i++) {
    if (isv_request_is_cancelled(req)) return isv_request_complete(req, ISV_ECANCELED, "cancelled");
    if (fail_at >= 0 && i == fail_at)
      return demo_fail(req, ISV_EBACKEND, "streamer asked to fail after %lld messages", i);
    if (delay_ms && i) uv_sleep((unsigned)delay_ms);
    char text[24];
    int len = snprintf(text, sizeof text, "%lld", i);
    isv_bytes s = {text, (size_t)len};
    int rc = isv_request_set_output(req, "str_data", ISV_BYTES, &one, 1, &s, 0, ISV_TRANSIENT);
    if (rc == 0) rc = isv_request_set_response_param(req, "grps_data", &str_kind);
    if (rc == 0) rc = demo_send_response(req);
    if (rc == ISV_ECANCELED) return isv_request_complete(req, rc, "cancelled");
    if (rc != 0) return rc;
  }
  return isv_request_complete(req, 0, NULL);
}

/* ---- registration ------------------------------------------------------------------------- */

static int add_open(isv_server *srv, const char *name, int native, int decoupled,
                    isv_exec_mode mode, int (*infer)(isv_request *, void *)) {
  isv_model_config *c;
  int rc = isv_model_config_new(name, &c);
  if (rc != 0) return rc;
  rc = native ? isv_model_config_set_native(c, 1) : isv_model_config_set_open_io(c, 1);
  if (rc == 0) rc = isv_model_config_set_decoupled(c, decoupled);
  if (rc == 0) rc = isv_model_config_set_exec_mode(c, mode);
  if (rc == 0) rc = isv_model_config_set_instances(c, mode == ISV_EXEC_POOL ? 4 : 1);
  if (rc == 0) rc = isv_model_config_set_platform(c, "grps");
  if (rc == 0) {
    isv_backend be;
    memset(&be, 0, sizeof be);
    be.struct_size = sizeof be;
    be.infer = infer;
    rc = isv_server_add_model(srv, c, "1.0.0", &be, NULL, NULL);
  }
  isv_model_config_free(c);
  return rc;
}

int demo_zoo_register_grps(isv_server *srv) {
  int rc = add_open(srv, "echo", 0, 0, ISV_EXEC_INLINE, echo_infer);
  if (rc == 0) rc = add_open(srv, "echo_native", 1, 0, ISV_EXEC_INLINE, echo_native_infer);
  if (rc == 0) rc = add_open(srv, "streamer", 0, 1, ISV_EXEC_POOL, streamer_infer);
  if (rc == 0) rc = isv_server_set_default_model(srv, DEMO_DEFAULT_MODEL);
  return rc;
}
