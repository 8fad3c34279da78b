/* The quick reading of a plain HTTP/1.x request (h1_quick.h): what it takes and why it gives
 * llhttp's result are in the header; here, how it stays cheap — one pass, byte classes from two
 * constants and two compares, names, targets and values checked eight bytes at a time. */
#include "transport/h1_quick.h"

#include <llhttp.h>
#include <stddef.h>
#include <string.h>

#include "codec/compiler.h"
#include "codec/decimal.h"
#include "codec/span.h"
#include "codec/swar.h"

/* RFC 9110 §5.6.2's tchar: ALPHA, DIGIT and !#$%&'*+-.^_`|~, as two 64-bit masks */
#define TOKEN_LO 0x03ff6cfa00000000ull /* 0x00-0x3f: ! # $ % & ' * + - . 0-9 */
#define TOKEN_HI 0x57ffffffc7fffffeull /* 0x40-0x7f: A-Z ^ _ ` a-z | ~ */

static inline int is_token(unsigned char c) {
  return c < 64 ? (int)((TOKEN_LO >> c) & 1) : c < 128 ? (int)((TOKEN_HI >> (c - 64)) & 1) : 0;
}
/* a value's byte: visible ASCII, space or tab */
static inline int is_value(unsigned char c) { return (unsigned char)(c - 0x20) < 0x5f || c == '\t'; }
/* a target's byte: visible ASCII but '#' */
static inline int is_url(unsigned char c) { return (unsigned char)(c - 0x21) < 0x5e && c != '#'; }

/* The scans below take eight bytes at a time (codec/swar.h) while eight are there, and stop at
 * the word holding the first byte to look at one by one: the byte `stops` flags first. */
ISV_INLINE size_t run(const char *p, size_t i, size_t n, uint64_t (*stops)(uint64_t)) {
  for (; i + 8 <= n; i += 8) {
    uint64_t m = stops(isv__swar_load(p + i));
    if (m) return i + isv__swar_first(m);
  }
  return i;
}

/* A name's: any byte but a letter or '-' (the ':' ending it, or a token byte to look at). */
static inline uint64_t name_stops(uint64_t w) {
  return ~(isv__swar_letters(w) | isv__swar_eq(w, '-')) & ISV__SWAR_HIGHS;
}

/* A target's: any byte but visible ASCII, and '#' (the space ending it). */
static inline uint64_t url_stops(uint64_t w) {
  return isv__swar_below_or_del(w, 0x21) | isv__swar_eq(w, '#') | (w & ISV__SWAR_HIGHS);
}

/* A value's: any byte but visible ASCII and space (the CR ending it, or a tab to look at). */
static inline uint64_t value_stops(uint64_t w) {
  return isv__swar_below_or_del(w, 0x20) | (w & ISV__SWAR_HIGHS);
}

/* The request line's method and the space after it: its length, or 0. */
static size_t method_of(const char *p, size_t n, uint8_t *m) {
#define M(lit, v)                                                                                  \
  if (n > sizeof(lit) - 1 && memcmp(p, lit " ", sizeof(lit)) == 0) return *m = (v), sizeof(lit)
  switch (p[0]) {
  case 'G': M("GET", HTTP_GET); break;
  case 'P': M("POST", HTTP_POST); M("PUT", HTTP_PUT); break;
  case 'D': M("DELETE", HTTP_DELETE); break;
  case 'H': M("HEAD", HTTP_HEAD); break;
  case 'O': M("OPTIONS", HTTP_OPTIONS); break;
  default: break;
  }
#undef M
  return 0;
}

/* Fields llhttp reads for framing or the connection's fate: 1 Content-Length, -1 one of the
 * others (declined); 2 a credential (Authorization, Proxy-Authorization, Cookie, and the API
 * keys gateways use: Api-Key, X-Api-Key, X-Auth-Token — taken, never kept in a memo); 0 any
 * other name. */
static int special(const char *name, size_t len) {
  switch (len) {
  case 6: return isv__bytes_same_nocase(name, "cookie", 6) ? 2 : 0;
  case 7:
    return isv__bytes_same_nocase(name, "upgrade", 7) ? -1
           : isv__bytes_same_nocase(name, "api-key", 7) ? 2 : 0;
  case 9: return isv__bytes_same_nocase(name, "x-api-key", 9) ? 2 : 0;
  case 10: return isv__bytes_same_nocase(name, "connection", 10) ? -1 : 0;
  case 12: return isv__bytes_same_nocase(name, "x-auth-token", 12) ? 2 : 0;
  case 13: return isv__bytes_same_nocase(name, "authorization", 13) ? 2 : 0;
  case 14: return isv__bytes_same_nocase(name, "content-length", 14) ? 1 : 0;
  case 16: return isv__bytes_same_nocase(name, "proxy-connection", 16) ? -1 : 0;
  case 17: return isv__bytes_same_nocase(name, "transfer-encoding", 17) ? -1 : 0;
  case 19: return isv__bytes_same_nocase(name, "proxy-authorization", 19) ? 2 : 0;
  default: return 0;
  }
}

/* The head read, from the request line through the blank line: its length, or 0. What it reads
 * depends on those bytes alone (every scan stops inside them). */
static size_t read_head(const char *p, size_t n, isv__h1_quick *q) {
  if (n < 16) return 0;
  size_t i = method_of(p, n, &q->method);
  if (i == 0 || p[i] != '/') return 0;
  size_t u = i;
  i = run(p, i, n, url_stops);
  while (i < n && is_url((unsigned char)p[i])) i++;
  if (i + 11 > n || p[i] != ' ' || memcmp(p + i + 1, "HTTP/1.", 7) != 0 ||
      (p[i + 8] != '0' && p[i + 8] != '1') || p[i + 9] != '\r' || p[i + 10] != '\n')
    return 0;
  q->url_off = (uint32_t)u;
  q->url_len = (uint32_t)(i - u);
  q->http_minor = (uint8_t)(p[i + 8] - '0');
  q->keep_alive = q->http_minor == 1;
  q->content_length = -1;
  q->credentials = 0;
  q->n_fields = 0;
  size_t text = i - u;
  i += 11;
  for (;;) {
    if (i + 2 > n) return 0;
    if (p[i] == '\r') {
      if (p[i + 1] != '\n') return 0;
      i += 2;
      break;
    }
    size_t name = i;
    for (;;) {
      i = run(p, i, n, name_stops);
      if (i >= n || !is_token((unsigned char)p[i])) break;
      i++;
    }
    if (i == name || i >= n || p[i] != ':') return 0;
    size_t name_len = i - name;
    i++;
    while (i < n && (p[i] == ' ' || p[i] == '\t')) i++;
    size_t value = i;
    for (;;) {
      i = run(p, i, n, value_stops);
      if (i >= n) return 0;
      if (p[i] == '\r') break;
      if (!is_value((unsigned char)p[i])) return 0;
      i++;
    }
    if (i == value || p[i - 1] == ' ' || p[i - 1] == '\t' || i + 1 >= n || p[i + 1] != '\n')
      return 0;
    size_t value_len = i - value;
    i += 2;
    int s = special(p + name, name_len);
    if (s < 0) return 0;
    if (s == 2) q->credentials = 1;
    if (s == 1) {
      uint64_t v;
      if (q->content_length >= 0 || value_len > 15 ||
          isv__decimal_u64(p + value, value_len, INT64_MAX, &v) != 0)
        return 0;
      q->content_length = (int64_t)v;
    }
    if (q->n_fields == ISV__H1_QUICK_FIELDS) return 0;
    q->fields[q->n_fields++] =
        (isv__h1_quick_field){(uint32_t)name, (uint32_t)name_len, (uint32_t)value, (uint32_t)value_len};
    text += name_len + value_len;
  }
  q->head_len = i;
  q->text_len = text;
  return i;
}

/* The bytes of a result q up to its last field: what a memo keeps of it. */
static size_t result_size(const isv__h1_quick *q) {
  return offsetof(isv__h1_quick, fields) + q->n_fields * sizeof q->fields[0];
}

size_t isv__h1_quick_read(const char *p, size_t n, isv__h1_quick *q, isv__h1_quick_memo *memo) {
  size_t head = memo ? memo->len : 0;
  if (head != 0 && head <= n && memcmp(p, memo->bytes, head) == 0) {
    memcpy(q, &memo->q, result_size(&memo->q));
  } else {
    head = read_head(p, n, q);
    if (head == 0) return 0;
    if (memo && head <= ISV__H1_QUICK_MEMO_HEAD && !q->credentials) {
      memcpy(memo->bytes, p, head);
      memcpy(&memo->q, q, result_size(q));
      memo->len = head;
    }
  }
  size_t body = q->content_length > 0 ? (size_t)q->content_length : 0;
  if (body > ISV__H1_QUICK_BODY_MAX || body > n - head) return 0;
  return head + body;
}

int isv__h1_quick_remembers(const isv__h1_quick_memo *memo, const char *p, size_t n) {
  return memo->len != 0 && memo->len == n && memcmp(p, memo->bytes, n) == 0;
}
