/* HTTP content codings (codec/zcoding.h). The first byte picks what the rest is:
 *  - bit 0: gzip or deflate; bits 1-3: the decoded-size limit (64 B .. 8 MiB, powers of 8
 *    apart); bit 4: the rest is plain data to encode first (a round trip), else a body a
 *    client sent.
 * A sent body either decodes within the limit — and then encodes and decodes back to the same
 * bytes — or is refused with ISV_EBADREQ (with a message) or ISV_ETOOBIG. The same bytes are
 * also read as Content-Encoding and Accept-Encoding values. Never a crash, a leak, or memory
 * past the limit. */
#include <stdlib.h>
#include <string.h>

#include "codec/zcoding.h"
#include "inferserve.h"

static void round_trip(isv__coding c, const char *plain, size_t n) {
  isv__buf z;
  isv__buf_init(&z, NULL);
  isv__zpiece halves[2] = {{plain, n / 2}, {plain + n / 2, n - n / 2}};
  if (isv__deflate(c, halves, 2, &z) != 0) abort();
  char *back, err[160];
  size_t len;
  if (isv__inflate(c, z.data, z.len, n, NULL, &back, &len, err, sizeof err) != 0) abort();
  if (len != n || (n && memcmp(back, plain, n) != 0)) abort();
  isv__free(back);
  isv__buf_free(&z);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  uint8_t mode = data[0];
  const char *rest = (const char *)data + 1;
  size_t n = size - 1;
  (void)isv__coding_of(rest, n);
  (void)isv__coding_accepted(rest, n);
  isv__coding c = (mode & 1) ? ISV__CODING_DEFLATE : ISV__CODING_GZIP;
  size_t limit = (size_t)64 << (3 * ((mode >> 1) & 7));
  if (mode & 16) {
    round_trip(c, rest, n);
    return 0;
  }
  char *out, err[160];
  size_t len;
  int rc = isv__inflate(c, rest, n, limit, NULL, &out, &len, err, sizeof err);
  if (rc == 0) {
    if (len > limit || out == NULL || out[len] != '\0') abort();
    round_trip(c, out, len);
    isv__free(out);
  } else if (rc == ISV_EBADREQ) {
    if (out != NULL || err[0] == '\0') abort();
  } else if (rc != ISV_ETOOBIG || out != NULL) {
    abort();
  }
  return 0;
}
