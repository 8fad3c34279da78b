/* Standard-alphabet base64 (RFC 4648 §4), padded, strict decoding. */
#include "base64.h"

#include <stdint.h>

static const char b64_alphabet[64] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* 0..63 for alphabet characters, 64 for '=', 255 for anything else. */
static const uint8_t b64_rev[256] = {
    ['A'] = 0,  ['B'] = 1,  ['C'] = 2,  ['D'] = 3,  ['E'] = 4,  ['F'] = 5,  ['G'] = 6,
    ['H'] = 7,  ['I'] = 8,  ['J'] = 9,  ['K'] = 10, ['L'] = 11, ['M'] = 12, ['N'] = 13,
    ['O'] = 14, ['P'] = 15, ['Q'] = 16, ['R'] = 17, ['S'] = 18, ['T'] = 19, ['U'] = 20,
    ['V'] = 21, ['W'] = 22, ['X'] = 23, ['Y'] = 24, ['Z'] = 25, ['a'] = 26, ['b'] = 27,
    ['c'] = 28, ['d'] = 29, ['e'] = 30, ['f'] = 31, ['g'] = 32, ['h'] = 33, ['i'] = 34,
    ['j'] = 35, ['k'] = 36, ['l'] = 37, ['m'] = 38, ['n'] = 39, ['o'] = 40, ['p'] = 41,
    ['q'] = 42, ['r'] = 43, ['s'] = 44, ['t'] = 45, ['u'] = 46, ['v'] = 47, ['w'] = 48,
    ['x'] = 49, ['y'] = 50, ['z'] = 51, ['0'] = 52, ['1'] = 53, ['2'] = 54, ['3'] = 55,
    ['4'] = 56, ['5'] = 57, ['6'] = 58, ['7'] = 59, ['8'] = 60, ['9'] = 61, ['+'] = 62,
    ['/'] = 63,
};

static int b64_val(unsigned char c) {
  /* The designated-initializer table leaves 0 for unknown bytes; 'A' is the only real 0. */
  if (c == 'A') return 0;
  int v = b64_rev[c];
  return v ? v : -1;
}

void isv__base64_encode(isv__buf *b, const void *p, size_t n) {
  const unsigned char *s = p;
  size_t out_len = (n + 2) / 3 * 4;
  if (n == 0) return;
  if (n > (SIZE_MAX / 4) * 3 - 3) {
    b->failed = 1;
    return;
  }
  char *o = isv__buf_reserve(b, out_len);
  if (!o) return;
  size_t i = 0;
  for (; i + 3 <= n; i += 3) {
    uint32_t v = (uint32_t)s[i] << 16 | (uint32_t)s[i + 1] << 8 | s[i + 2];
    *o++ = b64_alphabet[v >> 18];
    *o++ = b64_alphabet[(v >> 12) & 63];
    *o++ = b64_alphabet[(v >> 6) & 63];
    *o++ = b64_alphabet[v & 63];
  }
  if (n - i == 1) {
    uint32_t v = (uint32_t)s[i] << 16;
    *o++ = b64_alphabet[v >> 18];
    *o++ = b64_alphabet[(v >> 12) & 63];
    *o++ = '=';
    *o++ = '=';
  } else if (n - i == 2) {
    uint32_t v = (uint32_t)s[i] << 16 | (uint32_t)s[i + 1] << 8;
    *o++ = b64_alphabet[v >> 18];
    *o++ = b64_alphabet[(v >> 12) & 63];
    *o++ = b64_alphabet[(v >> 6) & 63];
    *o++ = '=';
  }
  b->len += out_len;
}

size_t isv__base64_decode(const char *in, size_t n, unsigned char *out) {
  const unsigned char *s = (const unsigned char *)in;
  if (n % 4 != 0) return (size_t)-1;
  size_t o = 0;
  for (size_t i = 0; i < n; i += 4) {
    int a = b64_val(s[i]), b = b64_val(s[i + 1]);
    if (a < 0 || b < 0) return (size_t)-1;
    int last = (i + 4 == n);
    if (last && s[i + 2] == '=') {
      /* "xx==": one byte (unused low bits of b are ignored, as most decoders do). */
      if (s[i + 3] != '=') return (size_t)-1;
      out[o++] = (unsigned char)(a << 2 | b >> 4);
      break;
    }
    int c = b64_val(s[i + 2]);
    if (c < 0) return (size_t)-1;
    if (last && s[i + 3] == '=') {
      out[o++] = (unsigned char)(a << 2 | b >> 4);
      out[o++] = (unsigned char)((b & 15) << 4 | c >> 2);
      break;
    }
    int d = b64_val(s[i + 3]);
    if (d < 0) return (size_t)-1;
    /* out may alias in: o <= i, and we have already read s[i..i+3]. */
    out[o++] = (unsigned char)(a << 2 | b >> 4);
    out[o++] = (unsigned char)((b & 15) << 4 | c >> 2);
    out[o++] = (unsigned char)((c & 3) << 6 | d);
  }
  return o;
}
