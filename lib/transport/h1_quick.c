/* The quick reading of a plain HTTP/1.x request (h1_quick.h): what it takes and why it gives
 * llhttp's result are in the header; here, how it stays cheap — one pass, byte classes from two
 * constants and two compares, values checked eight bytes at a time. */
#include "transport/h1_quick.h"

#include <string.h>

#include "codec/span.h"

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

#define ONES 0x0101010101010101ull
#define HIGHS 0x8080808080808080ull

/* The scans below take eight bytes at a time while eight are there, and stop at the word
 * holding the first byte to look at one by one. Their masks flag bytes by borrows that run
 * upward, so a flag above a flagged byte may be false; the lowest flag (the first byte, little
 * endian) never is, and only it is used. */

/* 0x80 in each byte of w that is b, exactly */
static inline uint64_t bytes_are(uint64_t w, unsigned char b) {
  uint64_t x = w ^ (ONES * b);
  return ~(((x & ~HIGHS) + ~HIGHS) | x) & HIGHS;
}

/* The index of the first byte from i that is not a letter or '-' — the ':' ending a name, or a
 * byte to look at one by one. */
static inline size_t name_run(const char *p, size_t i, size_t n) {
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    memcpy(&w, p + i, 8);
    uint64_t l = (w & ~HIGHS) | (ONES * 0x20); /* letters in lower case; no byte carries below */
    uint64_t letter = (l + ONES * (0x80 - 'a')) & ~(l + ONES * (0x7f - 'z')) & ~w & HIGHS;
    uint64_t other = ~(letter | bytes_are(w, '-')) & HIGHS;
    if (other) return i + ((size_t)__builtin_ctzll(other) >> 3);
  }
  return i;
}

/* The index of the first byte from i that is not visible ASCII or is '#' — the space ending a
 * target, or a byte to look at one by one. */
static inline size_t url_run(const char *p, size_t i, size_t n) {
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    memcpy(&w, p + i, 8);
    uint64_t bad = ((w - ONES * 0x21) & ~w & HIGHS) | bytes_are(w, 0x7f) | bytes_are(w, '#') |
                   (w & HIGHS);
    if (bad) return i + ((size_t)__builtin_ctzll(bad) >> 3);
  }
  return i;
}

/* The index of the first byte from i that is not visible ASCII or space — the CR ending a value,
 * or a byte to look at one by one. */
static inline size_t plain_run(const char *p, size_t i, size_t n) {
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    memcpy(&w, p + i, 8);
    uint64_t d = w ^ (ONES * 0x7f); /* DEL becomes a zero byte */
    uint64_t bad = ((w - ONES * 0x20) & ~w & HIGHS) | ((d - ONES) & ~d & HIGHS) | (w & HIGHS);
    if (bad) return i + ((size_t)__builtin_ctzll(bad) >> 3);
  }
  return i;
}

/* The request line's method and the space after it: its length, or 0. */
static size_t method_of(const char *p, size_t n, uint8_t *m) {
#define M(lit, v)                                                                                  \
  if (n > sizeof(lit) - 1 && memcmp(p, lit " ", sizeof(lit)) == 0) return *m = (v), sizeof(lit)
  switch (p[0]) {
  case 'G': M("GET", ISV__H1Q_GET); break;
  case 'P': M("POST", ISV__H1Q_POST); M("PUT", ISV__H1Q_PUT); break;
  case 'D': M("DELETE", ISV__H1Q_DELETE); break;
  case 'H': M("HEAD", ISV__H1Q_HEAD); break;
  case 'O': M("OPTIONS", ISV__H1Q_OPTIONS); break;
  default: break;
  }
#undef M
  return 0;
}

/* Fields llhttp reads for framing or the connection's fate: 1 Content-Length, -1 one of the
 * others (declined), 0 any other name. */
static int special(const char *name, size_t len) {
  switch (len) {
  case 7: return isv__bytes_same_nocase(name, "upgrade", 7) ? -1 : 0;
  case 10: return isv__bytes_same_nocase(name, "connection", 10) ? -1 : 0;
  case 14: return isv__bytes_same_nocase(name, "content-length", 14) ? 1 : 0;
  case 16: return isv__bytes_same_nocase(name, "proxy-connection", 16) ? -1 : 0;
  case 17: return isv__bytes_same_nocase(name, "transfer-encoding", 17) ? -1 : 0;
  default: return 0;
  }
}

size_t isv__h1_quick_read(const char *p, size_t n, isv__h1_quick *q) {
  if (n < 16) return 0;
  size_t i = method_of(p, n, &q->method);
  if (i == 0 || p[i] != '/') return 0;
  size_t u = i;
  i = url_run(p, i, n);
  while (i < n && is_url((unsigned char)p[i])) i++;
  if (i + 11 > n || p[i] != ' ' || memcmp(p + i + 1, "HTTP/1.", 7) != 0 ||
      (p[i + 8] != '0' && p[i + 8] != '1') || p[i + 9] != '\r' || p[i + 10] != '\n')
    return 0;
  q->url_off = (uint32_t)u;
  q->url_len = (uint32_t)(i - u);
  q->http_minor = (uint8_t)(p[i + 8] - '0');
  q->keep_alive = q->http_minor == 1;
  q->content_length = -1;
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
      i = name_run(p, i, n);
      if (i >= n || !is_token((unsigned char)p[i])) break;
      i++;
    }
    if (i == name || i >= n || p[i] != ':') return 0;
    size_t name_len = i - name;
    i++;
    while (i < n && (p[i] == ' ' || p[i] == '\t')) i++;
    size_t value = i;
    for (;;) {
      i = plain_run(p, i, n);
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
    if (s > 0) {
      if (q->content_length >= 0 || value_len > 15) return 0;
      int64_t v = 0;
      for (size_t k = 0; k < value_len; k++) {
        unsigned d = (unsigned char)p[value + k] - (unsigned)'0';
        if (d > 9) return 0;
        v = v * 10 + d;
      }
      q->content_length = v;
    }
    if (q->n_fields == ISV__H1_QUICK_FIELDS) return 0;
    q->fields[q->n_fields++] =
        (isv__h1_quick_field){(uint32_t)name, (uint32_t)name_len, (uint32_t)value, (uint32_t)value_len};
    text += name_len + value_len;
  }
  size_t body = q->content_length > 0 ? (size_t)q->content_length : 0;
  if (body > ISV__H1_QUICK_BODY_MAX || body > n - i) return 0;
  q->head_len = i;
  q->text_len = text;
  return i + body;
}
