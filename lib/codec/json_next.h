/* The JSON pull reader's one-token fast path, inline (json_reader.h's isv__json_next is this
 * function, out of line). For json_reader.c and for the few loops that read a token per member
 * on every request — V2's inputs (protocol/v2_json.c) — where the call and the registers it
 * saves were a fifth of a token's cost (bench/RESULTS.md). What is here is the reader's own
 * state, shown only so that the fast path can be inlined: callers use isv__json_next_inline
 * and isv__json_key_in and nothing else of this file. */
#ifndef ISV_CODEC_JSON_NEXT_H
#define ISV_CODEC_JSON_NEXT_H

#include <stdint.h>

#include "compiler.h"
#include "json_reader.h"
#include "span.h"
#include "swar.h"

/* What the grammar expects next (isv__json_reader.state). */
enum isv__json_state {
  ISV__JST_VALUE = 0,        /* a value (top level, or after ':') */
  ISV__JST_VALUE_AFTER_COMMA, /* a value after ',' in an array (']' would be a trailing comma) */
  ISV__JST_ARRAY_FIRST,      /* after '[': a value or ']' */
  ISV__JST_OBJECT_FIRST,     /* after '{': a key or '}' */
  ISV__JST_OBJECT_KEY,       /* after ',' in an object: a key */
  ISV__JST_AFTER_VALUE,      /* after a value in a container: ',' or the closing bracket */
  ISV__JST_DONE              /* the top-level value has ended */
};

/* String byte classes: 0 plain, 1 '"', 2 '\\', 3 control, 4 non-ASCII. */
extern const uint8_t isv__json_str_class[256];

/* The token at r->pos read the general way: spaces skipped, any state, escapes, numbers and
 * literals, every error (json_reader.c). */
isv__json_type isv__json_next_general(isv__json_reader *r, isv__json_token *tok);

/* How many of the 8 bytes at s are plain (isv__json_str_class 0) before the first that is
 * not: 8 when all are. Per byte, the high bit of a mask is set for '"' and '\\' (a zero after
 * the xor), a control byte (below 0x20) or a non-ASCII one; a borrow may set it falsely only in
 * a byte after one truly set, so the lowest set bit is always right. */
ISV_INLINE int isv__json_plain_run8(const unsigned char *s) {
  uint64_t x = isv__swar_load(s);
  uint64_t m = isv__swar_is(x, '"') | isv__swar_is(x, '\\') | isv__swar_below(x, 0x20) |
               isv__swar_high(x);
  return m ? (int)isv__swar_first(m) : 8;
}

/* The end of the plain run (isv__json_str_class 0) that starts at offset j of s[0..n): eight
 * bytes at a time while eight are left, then byte by byte. */
ISV_INLINE size_t isv__json_plain_run(const unsigned char *s, size_t j, size_t n) {
  while (n - j >= 8) {
    int k = isv__json_plain_run8(s + j);
    j += (size_t)k;
    if (k < 8) return j;
  }
  while (j < n && isv__json_str_class[s[j]] == 0) j++;
  return j;
}

/* The usual string — printable ASCII up to its closing quote, no escape — found without
 * scan_string's call: 1 with (*ptr, *len, *end) as scan_string sets them, 0 for any other
 * (scan_string then reads it from the start). */
ISV_INLINE int isv__json_plain_string(const isv__json_reader *r, size_t start,
                                      const char **ptr, size_t *len, size_t *end) {
  const unsigned char *s = (const unsigned char *)r->buf;
  size_t j = isv__json_plain_run(s, start + 1, r->len);
  if (j >= r->len || s[j] != '"') return 0;
  *ptr = r->buf + start + 1;
  *len = j - (start + 1);
  *end = j + 1;
  return 1;
}

ISV_INLINE int isv__json_top_is_object(const isv__json_reader *r) {
  unsigned d = r->depth - 1;
  return (r->stack[d >> 3] >> (d & 7)) & 1;
}

ISV_INLINE void isv__json_after_value(isv__json_reader *r) {
  r->state = r->depth == 0 ? ISV__JST_DONE : ISV__JST_AFTER_VALUE;
}

/* The bracket at p (offset off) opens a level (the caller has checked the depth) or closes one. */
ISV_INLINE isv__json_type isv__json_open_token(isv__json_reader *r, isv__json_token *tok,
                                               const char *p, size_t off, int is_obj) {
  ISV_ASSERT(r->depth < r->max_depth, "a level is opened only under the depth limit");
  unsigned d = r->depth++;
  if (is_obj)
    r->stack[d >> 3] |= (uint8_t)(1u << (d & 7));
  else
    r->stack[d >> 3] &= (uint8_t)~(1u << (d & 7));
  r->state = is_obj ? ISV__JST_OBJECT_FIRST : ISV__JST_ARRAY_FIRST;
  tok->type = is_obj ? ISV__JSON_OBJECT_BEGIN : ISV__JSON_ARRAY_BEGIN;
  tok->ptr = p;
  tok->len = 1;
  tok->offset = off;
  r->pos = off + 1;
  return tok->type;
}

ISV_INLINE isv__json_type isv__json_close_token(isv__json_reader *r, isv__json_token *tok,
                                                const char *p, size_t off, int is_obj) {
  r->depth--;
  tok->type = is_obj ? ISV__JSON_OBJECT_END : ISV__JSON_ARRAY_END;
  tok->ptr = p;
  tok->len = 1;
  tok->offset = off;
  r->pos = off + 1;
  isv__json_after_value(r);
  return tok->type;
}

/* The tokens of compact JSON — a key right after '{' or ',', a string with nothing to unescape,
 * an opening bracket, a closing one right after a value — and of JSON separated as Python's
 * json.dumps writes it by default (one space after ',' and after ':': tritonclient's, and
 * requests' json=) are read here without the general walk (skip the spaces, decide by state,
 * then again after a ','); for any other byte, other spaces, a string with an escape, an error
 * or the end, isv__json_next_general reads the token from where this one left everything
 * untouched. fuzz_json_reader holds the two to jansson's verdicts. */
ISV_INLINE isv__json_type isv__json_next_inline(isv__json_reader *r, isv__json_token *tok) {
  const char *const buf = r->buf;
  size_t pos = r->pos, e;
  if (ISV_UNLIKELY(r->failed || pos >= r->len)) goto general;
  const char *p = buf + pos;
  switch (r->state) {
    case ISV__JST_AFTER_VALUE: {
      int is_obj = isv__json_top_is_object(r);
      if (*p == ',') {
        if (pos + 1 >= r->len) goto general;
        pos++;
        p++;
        if (is_obj) {
          if (*p != '"') {
            if (*p != ' ' || pos + 1 >= r->len || p[1] != '"') goto general;
            pos++; /* ", " as Python's json.dumps separates */
            p++;
          }
          goto key;
        }
        r->pos = pos; /* the ',' taken as the general walk takes it: a ']' after it is an error */
        r->state = ISV__JST_VALUE_AFTER_COMMA;
        goto value;
      }
      if (*p != (is_obj ? '}' : ']')) goto general;
      return isv__json_close_token(r, tok, p, pos, is_obj);
    }
    case ISV__JST_OBJECT_FIRST:
    case ISV__JST_OBJECT_KEY:
      if (*p != '"') goto general;
    key:
      if (!isv__json_plain_string(r, pos, &tok->ptr, &tok->len, &e) || e >= r->len ||
          buf[e] != ':')
        goto general;
      tok->offset = pos;
      r->pos = e + 1;
      r->state = ISV__JST_VALUE;
      tok->type = ISV__JSON_KEY;
      return ISV__JSON_KEY;
    case ISV__JST_VALUE:
    case ISV__JST_ARRAY_FIRST:
    case ISV__JST_VALUE_AFTER_COMMA:
    value:
      if (*p == '"') {
        if (!isv__json_plain_string(r, pos, &tok->ptr, &tok->len, &e)) goto general;
        tok->offset = pos;
        r->pos = e;
        tok->type = ISV__JSON_STRING;
        isv__json_after_value(r);
        return ISV__JSON_STRING;
      }
      if ((*p == '{' || *p == '[') && r->depth < r->max_depth)
        return isv__json_open_token(r, tok, p, pos, *p == '{');
      if (ISV_UNLIKELY(*p == ' ') && pos + 1 < r->len && p[1] != ' ') { /* json.dumps's ": " */
        pos++;
        p++;
        goto value;
      }
      goto general;
    default:
      goto general;
  }
general:
  return isv__json_next_general(r, tok);
}

/* A key as isv__json_key_in looks for it: quoted, with its colon ("\"name\":"), and its length. */
typedef struct isv__json_key_lit {
  const char *text;
  size_t len;
} isv__json_key_lit;
#define ISV__JSON_KEY_LIT(name) {"\"" name "\":", sizeof(name) + 2}

/* The next member's key when it is one of keys[0..n) written compactly — right after '{', or
 * after a value and its ',', the name quoted and the ':' at once — read at once: its index,
 * with the reader past the ':' as isv__json_next would have left it. -1 with nothing read for
 * anything else (another key, a space, an escape, the object's end, an error), which the
 * caller then reads token by token as before. */
ISV_INLINE int isv__json_key_in(isv__json_reader *r, const isv__json_key_lit *keys, size_t n) {
  size_t pos = r->pos;
  if (ISV_UNLIKELY(r->failed || pos >= r->len)) return -1;
  const char *p = r->buf + pos;
  if (r->state == ISV__JST_AFTER_VALUE) {
    if (*p != ',' || !isv__json_top_is_object(r)) return -1;
    p++;
    pos++;
  } else if (r->state != ISV__JST_OBJECT_FIRST && r->state != ISV__JST_OBJECT_KEY) {
    return -1;
  }
  size_t left = r->len - pos;
  if (left < 3 || p[0] != '"') return -1;
  for (size_t i = 0; i < n; i++) {
    const isv__json_key_lit *k = &keys[i];
    if (p[1] == k->text[1] && k->len <= left && isv__bytes_same(p, k->text, k->len)) {
      r->pos = pos + k->len;
      r->state = ISV__JST_VALUE;
      return (int)i;
    }
  }
  return -1;
}

#endif
