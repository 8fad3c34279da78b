/* TF Serving's ReloadConfigRequest (lib/protocol/tfs_reload.c's decoder): a message either
 * gives its model names — each non-empty, valid UTF-8 without NUL, NUL-terminated at its
 * length, sorted, none twice — or is refused with a code and a message. Must never crash, leak
 * or read past the input. */
#include <stdlib.h>
#include <string.h>

#include "codec/utf8.h"
#include "protocol/tfs_pb.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  isv__arena a = ISV__ARENA_INIT;
  const char **names;
  size_t n;
  char err[256] = "";
  int rc = isv__tfs_reload_decode(size ? data : NULL, size, &a, &names, &n, err, sizeof err);
  if (rc != 0) {
    if ((rc != ISV_EBADREQ && rc != ISV_EUNIMPL && rc != ISV_ENOMEM) || err[0] == '\0') abort();
  } else {
    if (n > ISV__TFS_RELOAD_MAX || (n && names == NULL)) abort();
    for (size_t i = 0; i < n; i++) {
      size_t len = strlen(names[i]);
      if (len == 0 || !isv__utf8_valid(names[i], len)) abort();
      if (i && strcmp(names[i - 1], names[i]) >= 0) abort(); /* sorted, none twice */
    }
  }
  isv__arena_free(&a);
  return 0;
}
