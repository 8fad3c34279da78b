/* HTTP/2 request field rules: see h2_fields.h. */
#include "transport/h2_fields.h"

#include <string.h>

#include "codec/decimal.h"
#include "codec/span.h"
#include "codec/swar.h"

/* What a block has had (isv__h2_fields.seen). */
enum {
  SEEN_AUTHORITY = 1u << 0,
  SEEN_METHOD = 1u << 1,
  SEEN_PATH = 1u << 2,
  SEEN_SCHEME = 1u << 3,
  SEEN_HOST = 1u << 4,
  SEEN_REGULAR = 1u << 5,    /* a regular field: no pseudo-header may follow */
  METHOD_CONNECT = 1u << 6,
  METHOD_OPTIONS = 1u << 7,
  SCHEME_HTTP = 1u << 8,     /* http or https, any case: its :path has a shape */
  PATH_ABSOLUTE = 1u << 9,   /* :path starts with '/' */
  PATH_ASTERISK = 1u << 10,  /* :path is "*" */
};

/* Byte classes, a bit each: C_NAME a field name's (a lower-case token character), C_VALUE a
 * field value's, C_PATH :path's (visible, and bytes past 0x7f), C_METHOD :method's (a token
 * character), C_AUTH :authority's and host's. tests/unit/test_h2_fields.c compares each with
 * nghttp2's own check for all 256 bytes. */
enum { C_NAME = 1, C_VALUE = 2, C_PATH = 4, C_METHOD = 8, C_AUTH = 16 };
static const uint8_t cls[256] = {
    0,  0,  0,  0,  0,  0,  0,  0,  0,  2,  0,  0,  0,  0,  0,  0,  /* 00 */
    0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  /* 10 */
    2,  31, 6,  15, 31, 31, 31, 31, 22, 22, 31, 31, 22, 31, 31, 6,  /* 20 */
    31, 31, 31, 31, 31, 31, 31, 31, 31, 31, 22, 22, 6,  22, 6,  6,  /* 30 */
    22, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, /* 40 */
    30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 22, 6,  22, 15, 31, /* 50 */
    15, 31, 31, 31, 31, 31, 31, 31, 31, 31, 31, 31, 31, 31, 31, 31, /* 60 */
    31, 31, 31, 31, 31, 31, 31, 31, 31, 31, 31, 6,  15, 6,  31, 0,  /* 70 */
    6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  /* 80 */
    6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  /* 90 */
    6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  /* a0 */
    6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  /* b0 */
    6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  /* c0 */
    6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  /* d0 */
    6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  /* e0 */
    6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  /* f0 */
};

static int all_of(const uint8_t *p, size_t n, uint8_t c) {
  for (size_t i = 0; i < n; i++)
    if (!(cls[p[i]] & c)) return 0;
  return 1;
}

/* No byte below `below` and none 0x7f, for n >= 8: a word at a time, the last one overlapping
 * the one before. */
static int words_clear(const uint8_t *p, size_t n, unsigned below) {
  uint64_t bad = 0;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) bad |= isv__swar_below_or_del(isv__swar_load(p + i), below);
  if (i < n) bad |= isv__swar_below_or_del(isv__swar_load(p + n - 8), below);
  return bad == 0;
}

/* A value (RFC 9113 §8.2.1): no NUL, CR, LF, other control byte but tab, or DEL; no space or
 * tab first or last. A word with a tab in it fails words_clear: the bytes decide then. */
static int value_ok(const uint8_t *v, size_t n) {
  if (n == 0) return 1;
  if (v[0] == ' ' || v[0] == '\t' || v[n - 1] == ' ' || v[n - 1] == '\t') return 0;
  if (n >= 8 && words_clear(v, n, 0x20)) return 1;
  return all_of(v, n, C_VALUE);
}

static int path_ok(const uint8_t *v, size_t n) {
  return n >= 8 ? words_clear(v, n, 0x21) : all_of(v, n, C_PATH);
}

/* RFC 3986's scheme: a letter, then letters, digits, '+', '-', '.'. */
static int scheme_ok(const uint8_t *v, size_t n) {
  if (n == 0 || !((v[0] | 0x20) >= 'a' && (v[0] | 0x20) <= 'z')) return 0;
  for (size_t i = 1; i < n; i++) {
    uint8_t c = v[i], l = c | 0x20;
    if (!((l >= 'a' && l <= 'z') || (c >= '0' && c <= '9') || c == '+' || c == '-' || c == '.'))
      return 0;
  }
  return 1;
}

/* v is the lower-case literal lit, letters in any case (nghttp2's lstrieq): the usual exact
 * match first, a compare of a word or two once inlined */
#define NOCASE_IS(v, n, lit)                                                                       \
  (ISV__SPAN_IS(v, n, lit) || ((n) == sizeof(lit) - 1 && isv__bytes_same_nocase(v, lit, n)))

/* A decimal number without sign or space, or -1 (nghttp2's parse_uint). */
static int64_t decimal(const uint8_t *v, size_t n) {
  uint64_t x;
  return isv__decimal_u64((const char *)v, n, INT64_MAX, &x) == 0 ? (int64_t)x : -1;
}

/* The names with a rule of their own, and the usual ones that need no byte loop: one switch
 * on the length, then a compare of a few machine words. */
typedef enum {
  T_OTHER,     /* any other name: its bytes are checked */
  T_PLAIN,     /* a well-formed regular name with no rule of its own */
  T_AUTHORITY, T_METHOD, T_PATH, T_SCHEME, T_PSEUDO_BAD, /* :protocol, :status, ... */
  T_HOST, T_CONTENT_LENGTH, T_TE,
  T_CONNECTION_SPECIFIC,
} token;

#define IS(lit) ISV__SPAN_IS(n, len, lit)
static token token_of(const uint8_t *n, size_t len) {
  switch (len) {
  case 2: return IS("te") ? T_TE : T_OTHER;
  case 4: return IS("host") ? T_HOST : T_OTHER;
  case 5: return IS(":path") ? T_PATH : T_OTHER;
  case 6: return IS("accept") ? T_PLAIN : T_OTHER;
  case 7:
    if (IS(":method")) return T_METHOD;
    if (IS(":scheme")) return T_SCHEME;
    if (IS(":status")) return T_PSEUDO_BAD;
    return IS("upgrade") ? T_CONNECTION_SPECIFIC : T_OTHER;
  case 9: return IS(":protocol") ? T_PSEUDO_BAD : T_OTHER;
  case 10:
    if (IS(":authority")) return T_AUTHORITY;
    if (IS("user-agent")) return T_PLAIN;
    return IS("connection") || IS("keep-alive") ? T_CONNECTION_SPECIFIC : T_OTHER;
  case 12: return IS("content-type") || IS("grpc-timeout") ? T_PLAIN : T_OTHER;
  case 13: return IS("grpc-encoding") ? T_PLAIN : T_OTHER;
  case 14: return IS("content-length") ? T_CONTENT_LENGTH : T_OTHER;
  case 15: return IS("accept-encoding") ? T_PLAIN : T_OTHER;
  case 16:
    if (IS("proxy-connection")) return T_CONNECTION_SPECIFIC;
    return IS("content-encoding") ? T_PLAIN : T_OTHER;
  case 17: return IS("transfer-encoding") ? T_CONNECTION_SPECIFIC : T_OTHER;
  case 20: return IS("grpc-accept-encoding") ? T_PLAIN : T_OTHER;
  default: return T_OTHER;
  }
}
#undef IS

void isv__h2_fields_init(isv__h2_fields *f) {
  f->seen = 0;
  f->content_length = -1;
  f->received = 0;
}

/* A pseudo-header's first and only, non-empty time. */
static int first(isv__h2_fields *f, uint32_t flag, size_t vlen) {
  if ((f->seen & flag) || vlen == 0) return 0;
  f->seen |= flag;
  return 1;
}

int isv__h2_field(isv__h2_fields *f, const uint8_t *name, size_t nlen, const uint8_t *value,
                  size_t vlen, int trailer) {
  if (nlen == 0) return -1;
  token t = token_of(name, nlen);
  if (name[0] == ':') {
    if (trailer || (f->seen & SEEN_REGULAR)) return -1;
  } else {
    f->seen |= SEEN_REGULAR;
  }
  switch (t) {
  case T_OTHER: /* an unknown pseudo-header, or a name to check byte by byte */
    if (name[0] == ':' || !all_of(name, nlen, C_NAME)) return -1;
    return value_ok(value, vlen) ? 0 : -1;
  case T_PLAIN: return value_ok(value, vlen) ? 0 : -1;
  case T_METHOD:
    if (!all_of(value, vlen, C_METHOD) || !first(f, SEEN_METHOD, vlen)) return -1;
    if (vlen == 7 && memcmp(value, "CONNECT", 7) == 0) f->seen |= METHOD_CONNECT;
    else if (vlen == 7 && memcmp(value, "OPTIONS", 7) == 0) f->seen |= METHOD_OPTIONS;
    return 0;
  case T_PATH:
    if (!path_ok(value, vlen) || !first(f, SEEN_PATH, vlen)) return -1;
    if (value[0] == '/') f->seen |= PATH_ABSOLUTE;
    else if (vlen == 1 && value[0] == '*') f->seen |= PATH_ASTERISK;
    return 0;
  case T_SCHEME:
    if (!scheme_ok(value, vlen) || !first(f, SEEN_SCHEME, vlen)) return -1;
    if (NOCASE_IS(value, vlen, "http") || NOCASE_IS(value, vlen, "https"))
      f->seen |= SCHEME_HTTP;
    return 0;
  case T_AUTHORITY:
    return all_of(value, vlen, C_AUTH) && first(f, SEEN_AUTHORITY, vlen) ? 0 : -1;
  case T_HOST: return all_of(value, vlen, C_AUTH) && first(f, SEEN_HOST, vlen) ? 0 : -1;
  case T_CONTENT_LENGTH:
    if (f->content_length != -1) return -1; /* twice, even alike */
    f->content_length = decimal(value, vlen);
    return f->content_length == -1 ? -1 : 0;
  case T_TE: return NOCASE_IS(value, vlen, "trailers") ? 0 : -1;
  case T_PSEUDO_BAD:
  case T_CONNECTION_SPECIFIC: return -1;
  }
  return -1;
}

int isv__h2_fields_frame_end(isv__h2_fields *f, int headers, int trailer, int end_stream) {
  if (headers && !trailer) {
    uint32_t s = f->seen;
    if (s & METHOD_CONNECT) {
      if ((s & (SEEN_SCHEME | SEEN_PATH)) || !(s & SEEN_AUTHORITY)) return -1;
      f->content_length = -1; /* a tunnel's bytes have no length */
    } else {
      if ((s & (SEEN_METHOD | SEEN_PATH | SEEN_SCHEME)) != (SEEN_METHOD | SEEN_PATH | SEEN_SCHEME) ||
          !(s & (SEEN_AUTHORITY | SEEN_HOST)))
        return -1;
      if ((s & SCHEME_HTTP) && !(s & PATH_ABSOLUTE) &&
          !((s & METHOD_OPTIONS) && (s & PATH_ASTERISK)))
        return -1;
    }
  } else if (headers && !end_stream) {
    return -1; /* trailers end the stream */
  }
  if (end_stream && f->content_length != -1 && f->content_length != f->received) return -1;
  return 0;
}
