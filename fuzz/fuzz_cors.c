/* libFuzzer target: CORS (protocol/gate.c) — the allowed-origins option, the Origin header and a
 * preflight's Access-Control-Request-Headers.
 *
 * Input: byte 0 bit 0: OPTIONS with Access-Control-Request-Method (a preflight) instead of a
 * POST; then three lines: the origins option, the Origin header, the requested headers.
 *
 * Checked: a malformed origins option is refused by isv_options_set_cors_origins and nothing
 * else is tried; a preflight is answered (204) exactly when the origin is allowed, and only
 * then; every header it or an actual answer carries has no CR, LF or NUL (no header
 * injection); Access-Control-Allow-Origin is the request's Origin, byte for byte. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/options.h"
#include "protocol/gate.h"

static void check(int cond, const char *what) {
  if (cond) return;
  fprintf(stderr, "CHECK FAILED: %s\n", what);
  abort();
}

static int answered, status;

static void clean(const isv__header *h, size_t n) {
  for (size_t i = 0; i < n; i++) {
    check(h[i].name_len > 0, "a header with a name");
    for (size_t k = 0; k < h[i].value_len; k++)
      check(h[i].value[k] != '\r' && h[i].value[k] != '\n' && h[i].value[k] != '\0',
            "no CR, LF or NUL in a header value");
  }
}

static int respond(isv__exchange *ex, const isv__response *r) {
  (void)ex;
  answered++;
  status = r->status;
  clean(r->headers, r->n_headers);
  return 0;
}

static size_t line(const uint8_t **p, const uint8_t *end, char *out, size_t cap) {
  const uint8_t *s = *p, *nl = memchr(s, '\n', (size_t)(end - s));
  const uint8_t *e = nl ? nl : end;
  *p = nl ? nl + 1 : end;
  size_t n = (size_t)(e - s) < cap - 1 ? (size_t)(e - s) : cap - 1;
  memcpy(out, s, n);
  out[n] = '\0';
  return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  int preflight = data[0] & 1;
  const uint8_t *p = data + 1, *end = data + size;
  char origins[1100], origin[300], req_headers[600];
  line(&p, end, origins, sizeof origins);
  size_t on = line(&p, end, origin, sizeof origin);
  size_t rn = line(&p, end, req_headers, sizeof req_headers);
  isv_options o;
  isv__options_defaults(&o);
  if (isv_options_set_cors_origins(&o, origins) != 0) return 0;
  isv__header hs[3] = {{"Origin", 6, origin, on},
                       {"Access-Control-Request-Method", 29, "POST", 4},
                       {"Access-Control-Request-Headers", 30, req_headers, rn}};
  isv__exchange ex;
  memset(&ex, 0, sizeof ex);
  ex.method = preflight ? ISV__M_OPTIONS : ISV__M_POST;
  ex.method_name = preflight ? "OPTIONS" : "POST";
  ex.headers = hs;
  ex.n_headers = preflight ? 3 : 1;
  ex.respond = respond;
  answered = 0;
  int allowed = isv__cors_origin_allowed(o.cors_origins, origin, on);
  int done = isv__gate_cors(o.cors_origins, &ex);
  check(done == (preflight && allowed), "a preflight is answered iff its origin is allowed");
  check(answered == done, "answered once when it says so");
  if (done) check(status == 204, "a preflight's answer is 204");
  if (!done) {
    check((ex.n_extra != 0) == allowed, "CORS headers iff the origin is allowed");
    clean(ex.extra, ex.n_extra);
  }
  if (allowed && !done)
    check(ex.extra[0].value_len == on && memcmp(ex.extra[0].value, origin, on) == 0,
          "Access-Control-Allow-Origin is the Origin");
  return 0;
}
