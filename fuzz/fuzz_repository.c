/* The model repository extension's request decoders (lib/protocol/v2_repo_json.c,
 * v2_repo_pb.c): index, load and unload, as JSON bodies and as gRPC messages. The first byte
 * picks the decoder (low 3 bits: 0 JSON index, 1 JSON load, 2 JSON unload, 3 RepositoryIndex,
 * 4 RepositoryModelLoad, 5 RepositoryModelUnload; 6 and 7 as 1 and 4) and, for the JSON load
 * and unload, the model name of the path (bits 3-4: "m", "", invalid UTF-8, a NUL inside); the
 * rest is the body or the message. Must never crash, leak or hang: an input decodes into a
 * sane operation, or fails with an ISV_E* code and a message. */
#include <stdlib.h>
#include <string.h>

#include "codec/utf8.h"
#include "core/request.h"
#include "core_fixture.h"
#include "protocol/v2_repo.h"

static const struct {
  const char *s;
  size_t n;
} names[] = {{"m", 1}, {"", 0}, {"a\xff", 2}, {"x\0y", 3}};

/* A decoded operation is what the host may rely on. */
static void check_op(const isv_request *r, isv__repo_action want) {
  const isv__repo_op *op = r->repo_op;
  if (op == NULL || op->action != want || op->name == NULL || op->name[0] == '\0') abort();
  size_t n = strlen(op->name);
  if (!isv__utf8_valid(op->name, n)) abort();
  if (op->config) {
    size_t i = 0, c = strlen(op->config);
    while (i < c && strchr(" \t\r\n", op->config[i])) i++;
    if (i == c || op->config[i] != '{') abort(); /* a JSON object, as promised */
  }
  if (want == ISV__REPO_UNLOAD && op->config) abort();
}

static void check_failed(const isv_request *r, int rc) {
  if (rc >= 0 || r->status != rc || r->errmsg == NULL || r->errmsg[0] == '\0') abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0) return 0;
  unsigned sel = data[0] & 7, which = (data[0] >> 3) & 3;
  if (sel >= 6) sel = sel == 6 ? 1 : 4;
  size_t len = size - 1;
  /* an exact-size, writable copy: reads past the body are caught, in-place unescaping works */
  char *body = malloc(len ? len : 1);
  if (len) memcpy(body, data + 1, len);
  const uint8_t *msg = (const uint8_t *)body;
  if (sel == 0 || sel == 3) {
    char err[256];
    int ready = -1;
    int rc = sel == 0 ? isv__v2repo_json_index(len ? body : NULL, len, 64, &ready, err, sizeof err)
                      : isv__v2repo_pb_index(len ? msg : NULL, len, &ready, err, sizeof err);
    if (rc == 0 ? ready != 0 && ready != 1 : (rc != ISV_EBADREQ && rc != ISV_EUNIMPL) || !err[0])
      abort();
  } else {
    isv_request *r = isv_fuzz_request();
    isv__repo_action want = sel == 1 || sel == 4 ? ISV__REPO_LOAD : ISV__REPO_UNLOAD;
    int rc;
    if (sel == 1)
      rc = isv__v2repo_json_load(r, names[which].s, names[which].n, len ? body : NULL, len, 64);
    else if (sel == 2)
      rc = isv__v2repo_json_unload(r, names[which].s, names[which].n, len ? body : NULL, len, 64);
    else if (sel == 4)
      rc = isv__v2repo_pb_load(r, len ? msg : NULL, len);
    else
      rc = isv__v2repo_pb_unload(r, len ? msg : NULL, len);
    if (rc == 0) check_op(r, want);
    else check_failed(r, rc);
    isv_request_free(r);
  }
  free(body);
  return 0;
}
