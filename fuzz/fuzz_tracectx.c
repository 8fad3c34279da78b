/* codec/tracectx against a reference written from the spec's grammar another way (sscanf-free,
 * character classes checked position by position), and the hex round trip. Any disagreement
 * aborts. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "codec/tracectx.h"

static int lhex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }

/* 1 when s[0..n) (OWS already trimmed) is a valid traceparent. */
static int reference(const char *s, size_t n) {
  if (n < 55) return 0;
  for (size_t i = 0; i < 55; i++) {
    int dash = i == 2 || i == 35 || i == 52;
    if (dash ? s[i] != '-' : !lhex(s[i])) return 0;
  }
  if (s[0] == 'f' && s[1] == 'f') return 0;
  int zero = 1;
  for (size_t i = 3; i < 35; i++) zero &= s[i] == '0';
  if (zero) return 0;
  zero = 1;
  for (size_t i = 36; i < 52; i++) zero &= s[i] == '0';
  if (zero) return 0;
  if (n == 55) return 1;
  return !(s[0] == '0' && s[1] == '0') && s[55] == '-';
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *s = malloc(size ? size : 1); /* exact size: reads past it are caught */
  if (size) memcpy(s, data, size);
  size_t a = 0, b = size;
  while (a < b && (s[a] == ' ' || s[a] == '\t')) a++;
  while (b > a && (s[b - 1] == ' ' || s[b - 1] == '\t')) b--;
  isv__traceparent t;
  int got = isv__traceparent_parse(s, size, &t) == 0;
  if (got != reference(s + a, b - a)) abort();
  if (got) {
    char hex[33];
    isv__trace_id_hex(t.trace_id, hex);
    if (memcmp(hex, s + a + 3, 32) != 0) abort();
  }
  (void)isv__tracestate_ok(s, size);
  free(s);
  return 0;
}
