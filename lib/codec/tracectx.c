/* See tracectx.h. */
#include "codec/tracectx.h"

#include <string.h>

static int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1; /* uppercase is invalid in traceparent */
}

/* n bytes from 2n lowercase hex digits: 0, or -1. */
static int hex_bytes(const char *s, uint8_t *out, size_t n) {
  for (size_t i = 0; i < n; i++) {
    int hi = hex_digit(s[2 * i]), lo = hex_digit(s[2 * i + 1]);
    if (hi < 0 || lo < 0) return -1;
    out[i] = (uint8_t)(hi << 4 | lo);
  }
  return 0;
}

static int all_zero(const uint8_t *p, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (p[i]) return 0;
  return 1;
}

static int ows(char c) { return c == ' ' || c == '\t'; }

int isv__traceparent_parse(const char *s, size_t n, isv__traceparent *out) {
  while (n && ows(*s)) s++, n--;
  while (n && ows(s[n - 1])) n--;
  /* VV-<32>-<16>-FF: 2 + 1 + 32 + 1 + 16 + 1 + 2 */
  if (n < 55 || s[2] != '-' || s[35] != '-' || s[52] != '-') return -1;
  isv__traceparent t;
  if (hex_bytes(s, &t.version, 1) || hex_bytes(s + 3, t.trace_id, 16) ||
      hex_bytes(s + 36, t.parent_id, 8) || hex_bytes(s + 53, &t.flags, 1))
    return -1;
  if (t.version == 0xff || all_zero(t.trace_id, 16) || all_zero(t.parent_id, 8)) return -1;
  if (n > 55 && (t.version == 0 || s[55] != '-')) return -1; /* 00 is exactly 55 */
  *out = t;
  return 0;
}

int isv__tracestate_ok(const char *s, size_t n) {
  if (n > ISV__TRACESTATE_MAX) return 0;
  unsigned members = 0;
  size_t i = 0;
  for (;;) {
    size_t start = i;
    while (i < n && s[i] != ',') {
      if (s[i] < 0x20 || s[i] > 0x7e) return 0;
      i++;
    }
    size_t a = start, b = i; /* the member, its OWS trimmed */
    while (a < b && ows(s[a])) a++;
    while (b > a && ows(s[b - 1])) b--;
    if (a < b) {
      const char *eq = memchr(s + a, '=', b - a);
      if (eq == NULL || eq == s + a || eq == s + b - 1 || ++members > 32) return 0;
    }
    if (i == n) return 1;
    i++; /* the comma */
  }
}

void isv__trace_id_hex(const uint8_t id[16], char out[33]) {
  static const char digits[] = "0123456789abcdef";
  for (int i = 0; i < 16; i++) {
    out[2 * i] = digits[id[i] >> 4];
    out[2 * i + 1] = digits[id[i] & 15];
  }
  out[32] = '\0';
}
