/* Strict streaming JSON reader (RFC 8259 + NaN/Infinity/-Infinity) and typed tensor decoding.
 * Numbers are scanned and converted by numparse.h (exact, correctly rounded, no strtod). */
#include "json_reader.h"
#include "json_next.h"

#include "base64.h"
#include "datatype.h"
#include "numparse.h"
#include "swar.h"
#include "utf8.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>


/* ---------------------------------------------------------------------------------------------
 * Errors
 * ------------------------------------------------------------------------------------------- */
static void set_errv(isv__json_reader *r, size_t offset, const char *fmt, va_list ap) {
  if (r->failed) return; /* keep the first error */
  r->failed = 1;
  r->err_offset = offset;
  int n = vsnprintf(r->err, sizeof r->err, fmt, ap);
  if (n < 0) n = 0;
  if ((size_t)n >= sizeof r->err) n = (int)sizeof r->err - 1;
  if (!strstr(r->err, "offset")) snprintf(r->err + n, sizeof r->err - (size_t)n, " at offset %zu", offset);
}

int isv__json_fail(isv__json_reader *r, size_t offset, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  set_errv(r, offset, fmt, ap);
  va_end(ap);
  return -1;
}

#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
ISV_NOINLINE int fail(isv__json_reader *r, size_t offset, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  set_errv(r, offset, fmt, ap);
  va_end(ap);
  return -1;
}

const char *isv__json_error(const isv__json_reader *r, size_t *offset) {
  if (!r->failed) return NULL;
  if (offset) *offset = r->err_offset;
  return r->err;
}

/* "'x'", "byte 0x01" or "end of input" for messages. */
static const char *describe(const isv__json_reader *r, size_t pos, char tmp[16]) {
  if (pos >= r->len) return "end of input";
  unsigned char c = (unsigned char)r->buf[pos];
  if (c >= 0x20 && c < 0x7F)
    snprintf(tmp, 16, "'%c'", c);
  else
    snprintf(tmp, 16, "byte 0x%02X", c);
  return tmp;
}

static int fail_unexpected(isv__json_reader *r, size_t pos, const char *expected) {
  char tmp[16];
  if (expected)
    return fail(r, pos, "unexpected %s at offset %zu, expected %s", describe(r, pos, tmp), pos,
                expected);
  return fail(r, pos, "unexpected %s at offset %zu", describe(r, pos, tmp), pos);
}

/* ---------------------------------------------------------------------------------------------
 * Character classes
 * ------------------------------------------------------------------------------------------- */
ISV_INLINE int is_ws(unsigned char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

ISV_INLINE const char *skip_ws(const char *p, const char *end) {
  if (ISV_LIKELY(p < end && (unsigned char)*p > ' ')) return p; /* compact JSON: no space */
  while (p < end && is_ws((unsigned char)*p)) p++;
  return p;
}

/* String byte classes (json_next.h). */
const uint8_t isv__json_str_class[256] = {
    3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3,
    3, 3, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4,
    4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4,
    4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4,
    4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4,
    4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4};

static int hex4(const unsigned char *s, unsigned *out) {
  unsigned v = 0;
  for (int i = 0; i < 4; i++) {
    unsigned c = s[i], d;
    if (c >= '0' && c <= '9')
      d = c - '0';
    else if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f')
      d = (c | 0x20) - 'a' + 10;
    else
      return -1;
    v = v << 4 | d;
  }
  *out = v;
  return 0;
}

/* Scan the string whose opening quote is at offset `start`. When `unescape` is set and the
 * string has escapes, it is rewritten in place. On success (*ptr, *len) is the (unescaped when
 * asked) content and *end the offset one past the closing quote. */
static int scan_string(isv__json_reader *r, size_t start, int unescape, const char **ptr,
                       size_t *len, size_t *end) {
  unsigned char *s = (unsigned char *)r->buf;
  const size_t n = r->len;
  size_t i = start + 1;
  size_t w = 0; /* write index; only meaningful once an escape was seen (esc) */
  int esc = 0;
  for (;;) {
    size_t j = isv__json_plain_run(s, i, n);
    if (esc && unescape && j > i) {
      memmove(s + w, s + i, j - i);
      w += j - i;
    }
    i = j;
    if (i >= n) return fail(r, start, "unterminated string starting at offset %zu", start);
    switch (isv__json_str_class[s[i]]) {
      case 1: /* closing quote */
        *ptr = (const char *)s + start + 1;
        *len = (esc && unescape) ? w - (start + 1) : i - (start + 1);
        *end = i + 1;
        return 0;
      case 3:
        return fail(r, i, "control character 0x%02X in string at offset %zu", s[i], i);
      case 4: {
        size_t l = isv__utf8_seq_len(s + i, n - i);
        if (!l) return fail(r, i, "invalid UTF-8 in string at offset %zu", i);
        if (esc && unescape) memmove(s + w, s + i, l);
        w += l;
        i += l;
        break;
      }
      default: { /* backslash */
        if (!esc) {
          esc = 1;
          w = i;
        }
        if (i + 1 >= n) return fail(r, start, "unterminated string starting at offset %zu", start);
        unsigned char c = s[i + 1], out = 0;
        switch (c) {
          case '"': out = '"'; break;
          case '\\': out = '\\'; break;
          case '/': out = '/'; break;
          case 'b': out = '\b'; break;
          case 'f': out = '\f'; break;
          case 'n': out = '\n'; break;
          case 'r': out = '\r'; break;
          case 't': out = '\t'; break;
          case 'u': {
            unsigned cp, lo;
            if (i + 6 > n || hex4(s + i + 2, &cp))
              return fail(r, i, "invalid \\u escape in string at offset %zu", i);
            size_t adv = 6;
            if (cp >= 0xDC00 && cp <= 0xDFFF)
              return fail(r, i, "lone surrogate \\u%04X in string at offset %zu", cp, i);
            if (cp >= 0xD800 && cp <= 0xDBFF) {
              if (i + 12 > n || s[i + 6] != '\\' || s[i + 7] != 'u' || hex4(s + i + 8, &lo) ||
                  lo < 0xDC00 || lo > 0xDFFF)
                return fail(r, i, "lone surrogate \\u%04X in string at offset %zu", cp, i);
              cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
              adv = 12;
            }
            if (unescape) {
              if (cp < 0x80) {
                s[w++] = (unsigned char)cp;
              } else if (cp < 0x800) {
                s[w++] = (unsigned char)(0xC0 | cp >> 6);
                s[w++] = (unsigned char)(0x80 | (cp & 0x3F));
              } else if (cp < 0x10000) {
                s[w++] = (unsigned char)(0xE0 | cp >> 12);
                s[w++] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
                s[w++] = (unsigned char)(0x80 | (cp & 0x3F));
              } else {
                s[w++] = (unsigned char)(0xF0 | cp >> 18);
                s[w++] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
                s[w++] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
                s[w++] = (unsigned char)(0x80 | (cp & 0x3F));
              }
            }
            i += adv;
            continue;
          }
          default:
            if (c >= 0x20 && c < 0x7F)
              return fail(r, i, "invalid escape \\%c in string at offset %zu", c, i);
            return fail(r, i, "invalid escape (backslash then byte 0x%02X) in string at offset %zu",
                        c, i);
        }
        if (unescape) s[w++] = out;
        i += 2;
        break;
      }
    }
  }
}

/* Parse a whole token's text as a number literal. */
static int token_lit(const isv__json_token *t, isv__numlit *n) {
  if (!t || t->type != ISV__JSON_NUMBER || t->len == 0) return -1;
  int err = 0;
  const char *errp = NULL;
  const char *e = isv__num_scan(t->ptr, t->ptr + t->len, n, &err, &errp);
  return (e && e == t->ptr + t->len) ? 0 : -1;
}

int isv__json_to_double(const isv__json_token *t, double *out) {
  isv__numlit n;
  if (token_lit(t, &n)) return -1;
  *out = isv__num_to_f64(&n);
  return 0;
}

int isv__json_to_float(const isv__json_token *t, float *out) {
  isv__numlit n;
  if (token_lit(t, &n)) return -1;
  *out = isv__num_to_f32(&n);
  return 0;
}

/* The usual integer — an optional '-', then 1 to 18 digits, no leading zero — without the
 * literal scan (a V2 shape's dimensions). 0, or -1 (nothing written) for any other text: the
 * general path then decides. */
ISV_INLINE int plain_int(const char *p, size_t len, int64_t *out) {
  if (len == 0) return -1;
  const char *e = p + len;
  int neg = *p == '-';
  p += neg;
  size_t nd = (size_t)(e - p);
  if (nd == 0 || nd > 18 || (*p == '0' && nd > 1)) return -1;
  int64_t v = 0;
  for (; p < e; p++) {
    unsigned d = (unsigned)(unsigned char)*p - '0';
    if (d > 9) return -1;
    v = v * 10 + (int64_t)d;
  }
  *out = neg ? -v : v;
  return 0;
}

int isv__json_to_int64(const isv__json_token *t, int64_t *out) {
  if (t && t->type == ISV__JSON_NUMBER && plain_int(t->ptr, t->len, out) == 0) return 0;
  isv__numlit n;
  uint64_t m;
  if (token_lit(t, &n) || isv__num_to_mag(&n, &m)) return -1;
  if (n.neg) {
    if (m > (UINT64_C(1) << 63)) return -1;
    *out = (int64_t)(0 - m);
  } else {
    if (m > (uint64_t)INT64_MAX) return -1;
    *out = (int64_t)m;
  }
  return 0;
}

int isv__json_to_uint64(const isv__json_token *t, uint64_t *out) {
  isv__numlit n;
  uint64_t m;
  if (token_lit(t, &n) || isv__num_to_mag(&n, &m)) return -1;
  if (n.neg && m != 0) return -1;
  *out = m;
  return 0;
}

int isv__json_to_f16(const isv__json_token *t, uint16_t *out) {
  isv__numlit n;
  if (token_lit(t, &n)) return -1;
  *out = isv__num_to_f16(&n);
  return 0;
}

int isv__json_to_bf16(const isv__json_token *t, uint16_t *out) {
  isv__numlit n;
  if (token_lit(t, &n)) return -1;
  *out = isv__num_to_bf16(&n);
  return 0;
}

/* ---------------------------------------------------------------------------------------------
 * The pull reader
 * ------------------------------------------------------------------------------------------- */
void isv__json_reader_init(isv__json_reader *r, char *buf, size_t len, unsigned max_depth) {
  r->buf = buf;
  r->len = len;
  r->pos = 0;
  r->depth = 0;
  if (max_depth < 1) max_depth = 1;
  if (max_depth > ISV__JSON_MAX_DEPTH_LIMIT) max_depth = ISV__JSON_MAX_DEPTH_LIMIT;
  r->max_depth = max_depth;
  r->state = ISV__JST_VALUE;
  r->failed = 0;
  r->keep_bytes = 0;
  r->err_offset = 0;
  r->err[0] = '\0';
}

static int too_deep(isv__json_reader *r, size_t off) {
  return fail(r, off, "nesting deeper than %u at offset %zu", r->max_depth, off);
}

static int number_error(isv__json_reader *r, int err, const char *errp, const char *prefix) {
  size_t off = (size_t)(errp - r->buf);
  switch (err) {
    case ISV__NERR_LEADING0:
      return fail(r, off, "%sleading zero in number at offset %zu", prefix, off);
    case ISV__NERR_FRAC:
      return fail(r, off, "%sexpected a digit after '.' in number at offset %zu", prefix, off);
    case ISV__NERR_EXP:
      return fail(r, off, "%sexpected a digit in the exponent of number at offset %zu", prefix, off);
    default:
      return fail(r, off, "%sinvalid number or literal at offset %zu", prefix, off);
  }
}

/* tok is written on every path; an error leaves it ERROR, with no pointer and no length. */
static isv__json_type next_impl(isv__json_reader *r, isv__json_token *tok, int unescape) {
  if (r->failed) {
    tok->offset = r->err_offset;
    goto error;
  }
  const char *buf = r->buf;
  const char *end = buf + r->len;
  const char *p = buf + r->pos;
  int is_obj;
again:
  p = skip_ws(p, end);
  tok->offset = (size_t)(p - buf);
  if (p >= end) {
    if (r->state == ISV__JST_DONE) {
      r->pos = r->len;
      tok->type = ISV__JSON_EOF;
      tok->ptr = end;
      tok->len = 0;
      return ISV__JSON_EOF;
    }
    fail(r, r->len, "unexpected end of input at offset %zu", r->len);
    goto error;
  }
  switch (r->state) {
    case ISV__JST_DONE:
      fail_unexpected(r, tok->offset, NULL);
      snprintf(r->err + strlen(r->err), sizeof r->err - strlen(r->err), " after the top-level value");
      goto error;
    case ISV__JST_AFTER_VALUE:
      is_obj = isv__json_top_is_object(r);
      if (*p == ',') {
        p++;
        r->state = is_obj ? ISV__JST_OBJECT_KEY : ISV__JST_VALUE_AFTER_COMMA;
        goto again;
      }
      if (*p == (is_obj ? '}' : ']')) goto close;
      fail_unexpected(r, tok->offset, is_obj ? "',' or '}'" : "',' or ']'");
      goto error;
    case ISV__JST_OBJECT_FIRST:
    case ISV__JST_OBJECT_KEY: {
      if (*p == '}') {
        if (r->state == ISV__JST_OBJECT_FIRST) goto close;
        fail(r, tok->offset, "trailing comma before '}' at offset %zu", tok->offset);
        goto error;
      }
      if (*p != '"') {
        fail_unexpected(r, tok->offset, "an object key (a string)");
        goto error;
      }
      size_t e;
      if (!isv__json_plain_string(r, tok->offset, &tok->ptr, &tok->len, &e) &&
          scan_string(r, tok->offset, unescape, &tok->ptr, &tok->len, &e))
        goto error;
      p = skip_ws(buf + e, end);
      if (p >= end || *p != ':') {
        fail_unexpected(r, (size_t)(p - buf), "':' after an object key");
        goto error;
      }
      r->pos = (size_t)(p + 1 - buf);
      r->state = ISV__JST_VALUE;
      tok->type = ISV__JSON_KEY;
      return ISV__JSON_KEY;
    }
    case ISV__JST_ARRAY_FIRST:
      if (*p == ']') goto close;
      break;
    case ISV__JST_VALUE_AFTER_COMMA:
      if (*p == ']') {
        fail(r, tok->offset, "trailing comma before ']' at offset %zu", tok->offset);
        goto error;
      }
      break;
    default:
      break;
  }
  /* A value. */
  switch (*p) {
    case '{':
    case '[':
      if (r->depth >= r->max_depth) {
        too_deep(r, tok->offset);
        goto error;
      }
      return isv__json_open_token(r, tok, p, tok->offset, *p == '{');
    case '"': {
      size_t e;
      if (!isv__json_plain_string(r, tok->offset, &tok->ptr, &tok->len, &e) &&
          scan_string(r, tok->offset, unescape, &tok->ptr, &tok->len, &e))
        goto error;
      r->pos = e;
      tok->type = ISV__JSON_STRING;
      isv__json_after_value(r);
      return ISV__JSON_STRING;
    }
    case 't':
    case 'f':
    case 'n': {
      static const char *const lits[3] = {"true", "false", "null"};
      static const isv__json_type types[3] = {ISV__JSON_TRUE, ISV__JSON_FALSE, ISV__JSON_NULL};
      int k = *p == 't' ? 0 : *p == 'f' ? 1 : 2;
      size_t l = strlen(lits[k]);
      if ((size_t)(end - p) < l || memcmp(p, lits[k], l) != 0) {
        fail(r, tok->offset, "invalid literal at offset %zu", tok->offset);
        goto error;
      }
      tok->type = types[k];
      tok->ptr = p;
      tok->len = l;
      r->pos = tok->offset + l;
      isv__json_after_value(r);
      return tok->type;
    }
    default: {
      unsigned char c = (unsigned char)*p;
      if (!(isv__num_is_digit(c) || c == '-' || c == 'N' || c == 'I')) {
        fail_unexpected(r, tok->offset, "a value");
        goto error;
      }
      isv__numlit nl;
      int err = 0;
      const char *errp = NULL;
      const char *e = isv__num_scan(p, end, &nl, &err, &errp);
      if (!e) {
        number_error(r, err, errp, "");
        goto error;
      }
      tok->type = ISV__JSON_NUMBER;
      tok->ptr = p;
      tok->len = (size_t)(e - p);
      r->pos = (size_t)(e - buf);
      isv__json_after_value(r);
      return ISV__JSON_NUMBER;
    }
  }
close:
  return isv__json_close_token(r, tok, p, tok->offset, *p == '}');
error:
  tok->type = ISV__JSON_ERROR;
  tok->ptr = NULL;
  tok->len = 0;
  return ISV__JSON_ERROR;
}

isv__json_type isv__json_next_general(isv__json_reader *r, isv__json_token *tok) {
  return next_impl(r, tok, !r->keep_bytes);
}

/* Out of line for every other caller (json_next.h). */
isv__json_type isv__json_next(isv__json_reader *r, isv__json_token *tok) {
  return isv__json_next_inline(r, tok);
}

int isv__json_skip(isv__json_reader *r, const isv__json_token *first, size_t *end) {
  if (r->failed) return -1;
  if (!first) return fail(r, r->pos, "nothing to skip at offset %zu", r->pos);
  switch (first->type) {
    case ISV__JSON_OBJECT_BEGIN:
    case ISV__JSON_ARRAY_BEGIN: {
      unsigned target = r->depth - 1;
      isv__json_token t;
      for (;;) {
        isv__json_type ty = next_impl(r, &t, 0); /* validate, but leave the bytes untouched */
        if (ty == ISV__JSON_ERROR) return -1;
        if ((ty == ISV__JSON_OBJECT_END || ty == ISV__JSON_ARRAY_END) && r->depth == target) break;
      }
      if (end) *end = r->pos;
      return 0;
    }
    case ISV__JSON_STRING:
    case ISV__JSON_NUMBER:
    case ISV__JSON_TRUE:
    case ISV__JSON_FALSE:
    case ISV__JSON_NULL:
      if (end) *end = r->pos;
      return 0;
    default:
      return fail(r, first->offset, "no value to skip at offset %zu", first->offset);
  }
}

/* ---------------------------------------------------------------------------------------------
 * Tensors
 * ------------------------------------------------------------------------------------------- */
static const char *dt_name(isv_datatype dt) {
  const char *n = isv__dt_name(dt, ISV__DTN_V2);
  return n ? n : "INVALID";
}

static const char *what_is(const char *p, const char *end) {
  size_t n = (size_t)(end - p);
  switch (*p) {
    case '"': return "a string";
    case 't': return n >= 4 && memcmp(p, "true", 4) == 0 ? "a boolean" : NULL;
    case 'f': return n >= 5 && memcmp(p, "false", 5) == 0 ? "a boolean" : NULL;
    case 'n': return n >= 4 && memcmp(p, "null", 4) == 0 ? "null" : NULL;
    case '{': return "an object";
    case '[': return "an array";
    case ',': return "','";
    default: return (isv__num_is_digit((unsigned char)*p) || *p == '-' || *p == 'N' || *p == 'I') ? "a number" : NULL;
  }
}

ISV_NOINLINE int elem_type_error(isv__json_reader *r, const char *p, size_t idx, isv_datatype dt) {
  size_t off = (size_t)(p - r->buf);
  const char *w = what_is(p, r->buf + r->len);
  const char *want = dt == ISV_BOOL ? "true or false" : dt == ISV_BYTES ? "a string" : "a number";
  if (w)
    return fail(r, off, "element %zu: expected %s for %s, got %s at offset %zu", idx, want,
                dt_name(dt), w, off);
  char tmp[16];
  return fail(r, off, "element %zu: expected %s for %s, got %s at offset %zu", idx, want,
              dt_name(dt), describe(r, off, tmp), off);
}

/* An element literal, quoted for a message (at most 40 bytes). */
#define LIT_FMT "%.*s%s"
#define LIT_ARGS(s, e) (int)((e) - (s) > 40 ? 40 : (e) - (s)), (s), ((e) - (s) > 40 ? "..." : "")

ISV_NOINLINE int elem_int_error(isv__json_reader *r, const char *p, const char *end, size_t idx,
                                isv_datatype dt, int overflow) {
  isv__numlit nl;
  int err = 0;
  const char *errp = NULL;
  char prefix[48];
  snprintf(prefix, sizeof prefix, "element %zu: ", idx);
  const char *e = isv__num_scan(p, end, &nl, &err, &errp);
  if (!e) return number_error(r, err, errp, prefix);
  size_t off = (size_t)(p - r->buf);
  if (!nl.is_int && !overflow)
    return fail(r, off, "element %zu: " LIT_FMT " is not an integer (%s takes no fraction or exponent) at offset %zu",
                idx, LIT_ARGS(p, e), dt_name(dt), off);
  return fail(r, off, "element %zu: " LIT_FMT " is out of range for %s at offset %zu", idx,
              LIT_ARGS(p, e), dt_name(dt), off);
}

/* base64 body of a {"b64": "..."} BYTES element; p is just after '{'. Returns the end. */
static const char *parse_b64_obj(isv__json_reader *r, const char *p, size_t idx, isv_bytes *out) {
  const char *buf = r->buf, *end = buf + r->len;
  const char *k;
  size_t kl, e;
  p = skip_ws(p, end);
  if (p >= end || *p != '"') goto bad;
  if (scan_string(r, (size_t)(p - buf), 1, &k, &kl, &e)) return NULL;
  if (kl != 3 || memcmp(k, "b64", 3) != 0) goto bad;
  p = skip_ws(buf + e, end);
  if (p >= end || *p != ':') goto bad;
  p = skip_ws(p + 1, end);
  if (p >= end || *p != '"') goto bad;
  const char *v;
  size_t vl;
  size_t voff = (size_t)(p - buf);
  if (scan_string(r, voff, 1, &v, &vl, &e)) return NULL;
  size_t dl = isv__base64_decode(v, vl, (unsigned char *)(uintptr_t)v);
  if (dl == (size_t)-1) {
    fail(r, voff, "element %zu: invalid base64 at offset %zu", idx, voff);
    return NULL;
  }
  p = skip_ws(buf + e, end);
  if (p >= end || *p != '}') goto bad;
  out->ptr = v;
  out->len = dl;
  return p + 1;
bad:
  fail(r, (size_t)(p - buf), "element %zu: a BYTES object must be {\"b64\": \"<base64>\"} at offset %zu",
       idx, (size_t)(p - buf));
  return NULL;
}

/* out[idx] = the integer of magnitude v (negative when neg), when dt holds it; 0 when not. */
ISV_INLINE int store_int(const isv_datatype dt, void *out, size_t idx, uint64_t v, int neg) {
  int ok;
  switch (dt) {
    case ISV_UINT8: ok = !neg ? v <= UINT8_MAX : v == 0; if (ok) ((uint8_t *)out)[idx] = (uint8_t)v; break;
    case ISV_UINT16: ok = !neg ? v <= UINT16_MAX : v == 0; if (ok) ((uint16_t *)out)[idx] = (uint16_t)v; break;
    case ISV_UINT32: ok = !neg ? v <= UINT32_MAX : v == 0; if (ok) ((uint32_t *)out)[idx] = (uint32_t)v; break;
    case ISV_UINT64: ok = !neg || v == 0; if (ok) ((uint64_t *)out)[idx] = v; break;
    case ISV_INT8: ok = v <= (uint64_t)INT8_MAX + neg; if (ok) ((int8_t *)out)[idx] = (int8_t)(neg ? -(int64_t)v : (int64_t)v); break;
    case ISV_INT16: ok = v <= (uint64_t)INT16_MAX + neg; if (ok) ((int16_t *)out)[idx] = (int16_t)(neg ? -(int64_t)v : (int64_t)v); break;
    case ISV_INT32: ok = v <= (uint64_t)INT32_MAX + neg; if (ok) ((int32_t *)out)[idx] = (int32_t)(neg ? -(int64_t)v : (int64_t)v); break;
    default: /* INT64 */
      ok = v <= (uint64_t)INT64_MAX + (uint64_t)neg;
      if (ok) ((int64_t *)out)[idx] = neg ? (int64_t)(0 - v) : (int64_t)v;
      break;
  }
  return ok;
}

/* Four one-digit elements, as isv__num_swar_digits4 gives them (element i in byte 2i), into
 * out[idx..idx+4). */
ISV_INLINE void store_four(const isv_datatype dt, void *out, size_t idx, uint64_t d4) {
  for (int i = 0; i < 4; i++) store_int(dt, out, idx + (size_t)i, (d4 >> (16 * i)) & 0xf, 0);
}

ISV_INLINE int is_int_dt(const isv_datatype dt) {
  switch (dt) {
    case ISV_UINT8: case ISV_UINT16: case ISV_UINT32: case ISV_UINT64:
    case ISV_INT8: case ISV_INT16: case ISV_INT32: case ISV_INT64: return 1;
    default: return 0;
  }
}

/* Parse one element at p (p < end) into out[idx]. Returns the end or NULL. With a constant
 * dt (every caller below), the switch folds away. */
ISV_INLINE const char *parse_elem(isv__json_reader *r, const char *p, const char *end,
                                  const isv_datatype dt, void *out, size_t idx) {
  switch (dt) {
    case ISV_FP32:
    case ISV_FP64:
    case ISV_FP16:
    case ISV_BF16: {
      unsigned char c = (unsigned char)*p;
      if (ISV_UNLIKELY(!(isv__num_is_digit(c) || c == '-' || c == 'N' || c == 'I'))) {
        elem_type_error(r, p, idx, dt);
        return NULL;
      }
      isv__numlit nl;
      int err = 0;
      const char *errp = NULL;
      const char *e = isv__num_scan(p, end, &nl, &err, &errp);
      if (ISV_UNLIKELY(!e)) {
        char prefix[48];
        snprintf(prefix, sizeof prefix, "element %zu: ", idx);
        number_error(r, err, errp, prefix);
        return NULL;
      }
      if (dt == ISV_FP32)
        ((float *)out)[idx] = isv__num_to_f32(&nl);
      else if (dt == ISV_FP64)
        ((double *)out)[idx] = isv__num_to_f64(&nl);
      else if (dt == ISV_FP16)
        ((uint16_t *)out)[idx] = isv__num_to_f16(&nl);
      else
        ((uint16_t *)out)[idx] = isv__num_to_bf16(&nl);
      return e;
    }
    case ISV_UINT8:
    case ISV_UINT16:
    case ISV_UINT32:
    case ISV_UINT64:
    case ISV_INT8:
    case ISV_INT16:
    case ISV_INT32:
    case ISV_INT64: {
      const char *s = p;
      int neg = 0;
      if (*s == '-') {
        neg = 1;
        s++;
      }
      if (ISV_UNLIKELY(s >= end || !isv__num_is_digit((unsigned char)*s))) {
        if (s < end && (*s == 'I' || (*s == 'N' && !neg))) return elem_int_error(r, p, end, idx, dt, 0), NULL;
        if (neg) return elem_int_error(r, p, end, idx, dt, 0), NULL;
        elem_type_error(r, p, idx, dt);
        return NULL;
      }
      uint64_t v;
      int overflow = 0;
      if (ISV_LIKELY(end - s >= 8)) { /* up to 7 digits, the first included, in one go */
        int k = isv__num_swar_digits(s, &v);
        if (k < 8) {
          if (*s == '0' && k > 1) return elem_int_error(r, p, end, idx, dt, 0), NULL;
          s += k;
          goto int_end;
        }
      }
      v = (unsigned char)*s++ - '0';
      if (v == 0) {
        if (s < end && isv__num_is_digit((unsigned char)*s)) return elem_int_error(r, p, end, idx, dt, 0), NULL;
      } else {
        int ndig = 1;
        while (end - s >= 8 && ndig <= 11) {
          uint64_t x;
          int k = isv__num_swar_digits(s, &x);
          v = v * isv__num_p10u[k] + x;
          ndig += k;
          s += k;
          if (k < 8) break;
        }
        while (s < end && isv__num_is_digit((unsigned char)*s)) {
          unsigned d = (unsigned char)*s - '0';
          if (ISV_UNLIKELY(v > (UINT64_MAX - d) / 10)) overflow = 1;
          v = v * 10 + d;
          s++;
        }
      }
    int_end:
      if (ISV_UNLIKELY(s < end && (*s == '.' || (*s | 0x20) == 'e')))
        return elem_int_error(r, p, end, idx, dt, 0), NULL;
      if (ISV_UNLIKELY(overflow)) return elem_int_error(r, p, end, idx, dt, 1), NULL;
      if (ISV_UNLIKELY(!store_int(dt, out, idx, v, neg)))
        return elem_int_error(r, p, end, idx, dt, 1), NULL;
      return s;
    }
    case ISV_BOOL:
      if (*p == 't' && end - p >= 4 && memcmp(p, "true", 4) == 0) {
        ((uint8_t *)out)[idx] = 1;
        return p + 4;
      }
      if (*p == 'f' && end - p >= 5 && memcmp(p, "false", 5) == 0) {
        ((uint8_t *)out)[idx] = 0;
        return p + 5;
      }
      elem_type_error(r, p, idx, dt);
      return NULL;
    case ISV_BYTES: {
      isv_bytes *b = (isv_bytes *)out + idx;
      if (*p == '"') {
        size_t e, at = (size_t)(p - r->buf);
        if (!isv__json_plain_string(r, at, &b->ptr, &b->len, &e) &&
            scan_string(r, at, 1, &b->ptr, &b->len, &e))
          return NULL;
        return r->buf + e;
      }
      if (*p == '{') return parse_b64_obj(r, p + 1, idx, b);
      elem_type_error(r, p, idx, dt);
      return NULL;
    }
    default:
      fail(r, (size_t)(p - r->buf), "invalid datatype %d at offset %zu", (int)dt, (size_t)(p - r->buf));
      return NULL;
  }
}

ISV_NOINLINE int count_error(isv__json_reader *r, size_t off, size_t count, size_t got, int more) {
  if (more)
    return fail(r, off, "expected %zu elements, got more than %zu at offset %zu", count, count, off);
  return fail(r, off, "expected %zu elements, got %zu at offset %zu", count, got, off);
}

ISV_NOINLINE int eof_error(isv__json_reader *r) {
  return fail(r, r->len, "unexpected end of input at offset %zu", r->len);
}

/* The array loop; the opening '[' has been consumed (and counted in r->depth). */
ISV_INLINE int tensor_array(isv__json_reader *r, const isv_datatype dt, void *out, size_t count,
                            size_t first_off) {
  const char *const buf = r->buf;
  const char *const end = buf + r->len;
  const char *p = buf + r->pos;
  unsigned nest = 1;
  size_t n = 0;
first_in_array:
  p = skip_ws(p, end);
  if (ISV_UNLIKELY(p >= end)) return eof_error(r);
  if (*p == ']') goto close;
value:
  /* Integers of up to 7 digits followed by ',' or ']' (most integer tensors), a whole element
   * and its separator per turn: one 8-byte digit read, one store — or four one-digit elements
   * and their separators per turn when the next 8 bytes are just that ("1,0,1,1,"). A longer
   * number, a fraction, a value out of the type's range or an error leaves at the element's
   * start, for the general way below to take (and to report); a space or anything else that is
   * not a number, the count reached or the last 8 bytes of the body leave there too, or — past
   * a ',' this loop took — at after_comma, which reads what may follow a comma. */
  if (is_int_dt(dt)) {
    const char *const entry = p;
    for (;;) {
      if (ISV_UNLIKELY(end - p < 9 || n == count)) goto leave; /* a sign and 8 digit bytes */
      uint64_t d4;
      /* a one-digit element first (p[1] a comma): a longer number pays one test for it */
      int four = p[1] == ',' && count - n >= 4 ? isv__num_swar_digits4(p, &d4) : 0;
      if (four) { /* "d,d,d,d," or "d,d,d,d]": four one-digit elements at once */
        store_four(dt, out, n, d4);
        n += 4;
        if (four == 2) {
          p += 7;
          goto close;
        }
        p += 8;
        continue;
      }
      /* the same as json.dumps separates them, "d, d, d, d, " (12 bytes: 11 read, and the
       * space after; a word of its own, for the compact one's code to stay as it was) */
      if (p[1] == ',' && p[2] == ' ' && count - n >= 4 && end - p >= 12 &&
          (four = isv__num_swar_digits4_spaced(p, &d4)) != 0) {
        store_four(dt, out, n, d4);
        n += 4;
        if (four == 2) {
          p += 10;
          goto close;
        }
        p += 11 + (p[11] == ' ');
        continue;
      }
      int neg = *p == '-';
      const char *s = p + neg;
      uint64_t v;
      int k = isv__num_swar_digits(s, &v);
      if (ISV_UNLIKELY(k == 0)) {
        /* one space after a ',' this loop took, as Python's json.dumps separates ("1, 2"):
         * looked for only here, where a compact element never comes */
        if (*p != ' ' || p == entry || p[-1] != ',') goto leave;
        p++;
        continue;
      }
      if (k == 8 || (*s == '0' && k > 1)) break;
      char c = s[k];
      if (c != ',' && c != ']') break;
      /* under 10^7: every 32- and 64-bit type holds it (unsigned ones not negated) */
      if (dt == ISV_INT32 || dt == ISV_INT64) {
        int64_t sv = ((int64_t)v ^ -(int64_t)neg) + neg; /* v, negated when neg */
        if (dt == ISV_INT32) ((int32_t *)out)[n] = (int32_t)sv;
        else ((int64_t *)out)[n] = sv;
      } else if (!store_int(dt, out, n, v, neg)) {
        break;
      }
      n++;
      p = s + k;
      if (c == ']') goto close;
      p++;
      continue;
    leave:
      if (p != entry) goto after_comma;
      break;
    }
  }
  if (ISV_UNLIKELY(*p == '[')) {
    if (r->depth + nest > r->max_depth) return too_deep(r, (size_t)(p - buf));
    nest++;
    p++;
    goto first_in_array;
  }
  if (ISV_UNLIKELY(n == count)) return count_error(r, (size_t)(p - buf), count, n, 1);
  p = parse_elem(r, p, end, dt, out, n);
  if (ISV_UNLIKELY(!p)) return -1;
  n++;
  /* after a value */
  if (ISV_LIKELY(p < end && *p == ',')) {
    p++;
    goto after_comma;
  }
isv__json_after_value:
  p = skip_ws(p, end);
  if (ISV_UNLIKELY(p >= end)) return eof_error(r);
  if (*p == ',') {
    p++;
    goto after_comma;
  }
  if (*p == ']') goto close;
  return fail_unexpected(r, (size_t)(p - buf), "',' or ']'");
after_comma:
  if (ISV_LIKELY(p < end && !is_ws((unsigned char)*p) && *p != ']')) goto value;
  if (end - p >= 2 && *p == ' ' && (unsigned char)p[1] > ' ' && p[1] != ']') {
    p++; /* ", " as Python's json.dumps separates: the next value at once */
    goto value;
  }
  p = skip_ws(p, end);
  if (ISV_UNLIKELY(p >= end)) return eof_error(r);
  if (*p == ']') {
    size_t off = (size_t)(p - buf);
    return fail(r, off, "trailing comma before ']' at offset %zu", off);
  }
  goto value;
close:
  p++;
  if (--nest) goto isv__json_after_value;
  if (ISV_UNLIKELY(n != count)) return count_error(r, first_off, count, n, 0);
  r->pos = (size_t)(p - buf);
  r->depth--;
  isv__json_after_value(r);
  return 0;
}

int isv__json_small_uints(isv__json_reader *r, int64_t *out, size_t max) {
  if (r->failed || r->state != ISV__JST_ARRAY_FIRST) return -1;
  const char *const buf = r->buf;
  const char *const end = buf + r->len;
  const char *p = buf + r->pos;
  size_t n = 0;
  if (p < end && *p == ']') goto close;
  for (;;) {
    uint64_t v;
    int k;
    if (end - p < 8 || (k = isv__num_swar_digits(p, &v)) == 0 || k == 8 || (*p == '0' && k > 1) ||
        n == max) {
      /* ", " as Python's json.dumps separates: one space after the ',' (n > 0: p is past one) */
      if (n == 0 || end - p < 9 || *p != ' ' || p[-1] != ',') return -1;
      p++;
      continue;
    }
    char c = p[k];
    out[n++] = (int64_t)v;
    p += k;
    if (c == ']') break;
    if (c != ',') return -1;
    p++;
  }
close:
  r->pos = (size_t)(p + 1 - buf);
  r->depth--;
  isv__json_after_value(r);
  return (int)n;
}

int isv__json_read_tensor(isv__json_reader *r, const isv__json_token *first, isv_datatype dt,
                          void *out, size_t count) {
  if (r->failed) return -1;
  if (!first) return fail(r, r->pos, "no tensor value at offset %zu", r->pos);
  const size_t off = first->offset;
  switch (first->type) {
    case ISV__JSON_ARRAY_BEGIN:
      switch (dt) {
#define CASE(T) \
  case T: return tensor_array(r, T, out, count, off);
        CASE(ISV_BOOL) CASE(ISV_UINT8) CASE(ISV_UINT16) CASE(ISV_UINT32) CASE(ISV_UINT64)
        CASE(ISV_INT8) CASE(ISV_INT16) CASE(ISV_INT32) CASE(ISV_INT64) CASE(ISV_FP16)
        CASE(ISV_BF16) CASE(ISV_FP32) CASE(ISV_FP64) CASE(ISV_BYTES)
#undef CASE
        default:
          return fail(r, off, "invalid datatype %d at offset %zu", (int)dt, off);
      }
    case ISV__JSON_NUMBER:
    case ISV__JSON_TRUE:
    case ISV__JSON_FALSE:
    case ISV__JSON_NULL:
    case ISV__JSON_STRING:
    case ISV__JSON_OBJECT_BEGIN:
      break;
    default:
      return fail(r, off, "expected a tensor value (an array or a scalar) at offset %zu", off);
  }
  /* A scalar is one element. */
  if (count != 1) return count_error(r, off, count, 1, 0);
  return isv__json_read_element(r, first, dt, out, 0);
}

int isv__json_read_element(isv__json_reader *r, const isv__json_token *first, isv_datatype dt,
                           void *out, size_t idx) {
  if (r->failed) return -1;
  const size_t off = first->offset;
  if (dt == ISV_BYTES) {
    isv_bytes *b = (isv_bytes *)out + idx;
    if (first->type == ISV__JSON_STRING) {
      b->ptr = first->ptr;
      b->len = first->len;
      return 0;
    }
    if (first->type == ISV__JSON_OBJECT_BEGIN) {
      const char *e = parse_b64_obj(r, r->buf + r->pos, idx, b);
      if (!e) return -1;
      r->pos = (size_t)(e - r->buf);
      r->depth--;
      isv__json_after_value(r);
      return 0;
    }
    return elem_type_error(r, r->buf + off, idx, dt);
  }
  if (first->type != ISV__JSON_NUMBER && first->type != ISV__JSON_TRUE &&
      first->type != ISV__JSON_FALSE)
    return elem_type_error(r, r->buf + off, idx, dt);
  const char *s = first->ptr, *e = first->ptr + first->len, *got = NULL;
  switch (dt) {
#define CASE(T) \
  case T: got = parse_elem(r, s, e, T, out, idx); break;
    CASE(ISV_BOOL) CASE(ISV_UINT8) CASE(ISV_UINT16) CASE(ISV_UINT32) CASE(ISV_UINT64)
    CASE(ISV_INT8) CASE(ISV_INT16) CASE(ISV_INT32) CASE(ISV_INT64) CASE(ISV_FP16)
    CASE(ISV_BF16) CASE(ISV_FP32) CASE(ISV_FP64)
#undef CASE
    default:
      return fail(r, off, "invalid datatype %d at offset %zu", (int)dt, off);
  }
  return got ? 0 : -1;
}

int isv__json_to_param(const isv__json_token *t, isv_param *out) {
  isv_param p;
  memset(&p, 0, sizeof p);
  switch (t->type) {
  case ISV__JSON_TRUE:
  case ISV__JSON_FALSE:
    p.type = ISV_PARAM_BOOL;
    p.v.b = t->type == ISV__JSON_TRUE;
    break;
  case ISV__JSON_STRING:
    p.type = ISV_PARAM_STRING;
    p.v.s.ptr = t->ptr;
    p.v.s.len = t->len;
    break;
  case ISV__JSON_NUMBER:
    if (isv__json_to_int64(t, &p.v.i64) == 0) p.type = ISV_PARAM_INT64;
    else if (isv__json_to_uint64(t, &p.v.u64) == 0) p.type = ISV_PARAM_UINT64;
    else if (isv__json_to_double(t, &p.v.d) == 0) p.type = ISV_PARAM_DOUBLE;
    else return -1;
    break;
  default:
    return -1;
  }
  *out = p;
  return 0;
}


int isv__json_each_member(char *buf, size_t len, unsigned max_depth, isv__json_member_cb each,
                          void *ctx, const char **msg) {
  isv__json_reader rd;
  isv__json_reader_init(&rd, buf ? buf : (char *)"", buf ? len : 0, max_depth);
  isv__json_token t, v;
  size_t off;
  isv__json_type ty = isv__json_next(&rd, &t);
  *msg = NULL;
  if (ty != ISV__JSON_OBJECT_BEGIN) {
    if (ty == ISV__JSON_ERROR) *msg = isv__json_error(&rd, &off);
    return ISV__JSON_NOT_OBJECT;
  }
  while ((ty = isv__json_next(&rd, &t)) == ISV__JSON_KEY) {
    isv__json_token key = t;
    if ((ty = isv__json_next(&rd, &v)) == ISV__JSON_ERROR) break;
    int rc = each(ctx, &key, ty, &v, &rd);
    if (rc != 0) {
      if (isv__json_error(&rd, &off) == NULL) return rc;
      break; /* it read on into malformed JSON */
    }
  }
  if (ty == ISV__JSON_OBJECT_END && isv__json_next(&rd, &t) == ISV__JSON_EOF) return 0;
  *msg = isv__json_error(&rd, &off);
  if (*msg == NULL) *msg = "invalid JSON";
  return ISV__JSON_MALFORMED;
}
