/* libFuzzer target: transport/h2_fields.c, HTTP/2's request field rules the library makes in
 * place of nghttp2's, against nghttp2's own (fuzz/h2_fields_same.c runs one request through a
 * server session of each and aborts when they reset different requests or deliver different
 * frames). The rules are nghttp2 1.52's: against another nghttp2 a mismatch may be nghttp2's
 * own rules having moved (the message names the version linked).
 *
 * The input: byte 0's bits 0-1 the number of DATA frames, bit 2 whether the last ends the
 * stream, bit 3 trailers, bit 4 whether they end it, bit 5 a well-formed :method, :scheme, :path
 * and :authority first; byte 1 the body's length; then fields, each a length byte, the name, a
 * length byte, the value — a name length of 255 starts the trailers. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <nghttp2/nghttp2.h>

#include "h2_fields_same.h"

#define MAXF 64

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 2) return 0;
  static const h2f_field base[] = {
      {(const uint8_t *)":method", (const uint8_t *)"POST", 7, 4},
      {(const uint8_t *)":scheme", (const uint8_t *)"http", 7, 4},
      {(const uint8_t *)":path", (const uint8_t *)"/v2/models/simple/infer", 5, 23},
      {(const uint8_t *)":authority", (const uint8_t *)"localhost", 10, 9},
  };
  h2f_field f[MAXF], t[MAXF];
  size_t n = 0, nt = 0;
  uint8_t flags = data[0];
  if (flags & 32)
    for (size_t i = 0; i < 4; i++) f[n++] = base[i];
  int in_trailers = 0;
  size_t at = 2;
  while (at < size) {
    size_t nlen = data[at++];
    if (nlen == 255) {
      in_trailers = 1;
      continue;
    }
    if (at + nlen >= size) break;
    const uint8_t *name = data + at;
    at += nlen;
    size_t vlen = data[at++];
    if (at + vlen > size) break;
    h2f_field x = {name, data + at, nlen, vlen};
    at += vlen;
    if (in_trailers ? nt == MAXF : n == MAXF) break;
    if (in_trailers) t[nt++] = x;
    else f[n++] = x;
  }
  h2f_request r = {.fields = f, .n_fields = n, .body_len = data[1], .n_chunks = flags & 3,
                   .end_on_data = (flags & 4) != 0, .trailers = t, .n_trailers = nt,
                   .send_trailers = (flags & 8) != 0 || in_trailers,
                   .trailers_end = (flags & 16) != 0};
  char why[1200];
  if (!h2f_same(&r, why, sizeof why)) {
    fprintf(stderr, "MISMATCH (nghttp2 %s): %s\n", nghttp2_version(0)->version_str, why);
    abort();
  }
  return 0;
}
