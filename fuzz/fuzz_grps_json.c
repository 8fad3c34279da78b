/* grps's GrpsMessage JSON (protocol/grps_json.c): decode → encode → decode again, and the two
 * decoded messages must be the same field by field (kind, status, model, data, tensors' names,
 * dtypes, shapes and element bytes — NaN as NaN, whatever its payload — and each map's entries
 * in order). Must never crash, leak or hang; a refused body must carry ISV_EBADREQ or
 * ISV_ENOMEM and a message; what the decoder made, the encoder must take (ISV_EINVAL is kept
 * for BYTES that are not UTF-8, which JSON cannot produce). */
#include <stdlib.h>
#include <string.h>

#include "grps_same.h"
#include "protocol/grps_msg.h"

static const isv__grps_limits lim = {.max_tensors = 64, .max_depth = 64};

/* A refusal: the right code, and a message. */
static void check_refusal(int rc, const char *err) {
  if ((rc != ISV_EBADREQ && rc != ISV_ENOMEM) || err[0] == '\0') abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *body = malloc(size ? size : 1);
  if (body == NULL) return 0;
  if (size) memcpy(body, data, size);
  isv__arena a1 = ISV__ARENA_INIT, a2 = ISV__ARENA_INIT;
  isv__grps_msg m1, m2;
  char err[512];
  int rc = isv__grps_json_decode(body, size, &lim, &a1, &m1, err, sizeof err);
  if (rc != 0) {
    check_refusal(rc, err);
  } else {
    isv__buf b;
    isv__buf_init(&b, NULL);
    if (isv__grps_json_encode(&m1, &b, err, sizeof err) != 0) abort();
    rc = isv__grps_json_decode(b.data, b.len, &lim, &a2, &m2, err, sizeof err);
    if (rc == ISV_ENOMEM) check_refusal(rc, err);
    else if (rc != 0 || !isv_grps_same(&m1, &m2, 0)) abort();
    isv__buf_free(&b);
  }
  isv__arena_free(&a1);
  isv__arena_free(&a2);
  free(body);
  return 0;
}
