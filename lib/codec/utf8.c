/* UTF-8 validation (RFC 3629). */
#include "utf8.h"

#include "swar.h"

#include <stdint.h>
#include <string.h>

/* Length of the valid UTF-8 sequence starting at s (1..4, s[0] >= 0x80), 0 when invalid.
 * Shared logic with the JSON reader's string scanner (it has its own inline copy). */
static size_t seq_len(const unsigned char *s, size_t n) {
  unsigned c = s[0];
  if (c < 0xC2) return 0; /* continuation byte or overlong 2-byte lead */
  if (c < 0xE0) return (n >= 2 && (s[1] & 0xC0) == 0x80) ? 2 : 0;
  if (c < 0xF0) {
    if (n < 3 || (s[1] & 0xC0) != 0x80 || (s[2] & 0xC0) != 0x80) return 0;
    if (c == 0xE0 && s[1] < 0xA0) return 0; /* overlong */
    if (c == 0xED && s[1] >= 0xA0) return 0; /* surrogates U+D800..U+DFFF */
    return 3;
  }
  if (c < 0xF5) {
    if (n < 4 || (s[1] & 0xC0) != 0x80 || (s[2] & 0xC0) != 0x80 || (s[3] & 0xC0) != 0x80)
      return 0;
    if (c == 0xF0 && s[1] < 0x90) return 0; /* overlong */
    if (c == 0xF4 && s[1] >= 0x90) return 0; /* > U+10FFFF */
    return 4;
  }
  return 0;
}

/* Both checks share the loop; a word's NUL is found with the has-a-zero-byte test, (w - 0x01..)
 * & ~w & 0x80.., which never says yes for a word without one. */
static int check(const char *str, size_t n, int no_nul) {
  const unsigned char *s = (const unsigned char *)str;
  size_t i = 0;
  for (;;) {
    /* ASCII fast path, 8 bytes at a time. */
    while (i + 8 <= n) {
      uint64_t w = isv__swar_load(s + i);
      if (isv__swar_high(w)) break;
      if (no_nul && isv__swar_below(w, 1)) return 0;
      i += 8;
    }
    /* the rest of a short string, or up to the byte that stopped the words: 1..0x7F go by */
    while (i < n && s[i] - 1u < 0x7Fu) i++;
    if (i >= n) return 1;
    if (s[i] == 0) {
      if (no_nul) return 0;
      i++;
      continue;
    }
    size_t l = seq_len(s + i, n - i);
    if (!l) return 0;
    i += l;
  }
}

int isv__utf8_valid(const char *s, size_t n) { return check(s, n, 0); }

int isv__utf8_text(const char *s, size_t n) { return check(s, n, 1); }
