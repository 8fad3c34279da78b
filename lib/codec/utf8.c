/* UTF-8 validation (RFC 3629). */
#include "utf8.h"

#include "swar.h"

#include <stdint.h>
#include <string.h>

/* Both checks share the loop; a word's NUL is found with the has-a-zero-byte test, (w - 0x01..)
 * & ~w & 0x80.., which never says yes for a word without one. */
static int check(const char *str, size_t n, int no_nul) {
  const unsigned char *s = (const unsigned char *)str;
  size_t i = 0;
  if (n >= 4 && n < 8) { /* a name, a datatype: two overlapping words, no byte loop */
    uint64_t w = isv__swar_load_4to8(s, n);
    if (!isv__swar_high(w) && !(no_nul && isv__swar_below(w, 1))) return 1;
  }
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
    size_t l = isv__utf8_seq_len(s + i, n - i);
    if (!l) return 0;
    i += l;
  }
}

int isv__utf8_valid(const char *s, size_t n) { return check(s, n, 0); }

int isv__utf8_text(const char *s, size_t n) { return check(s, n, 1); }
