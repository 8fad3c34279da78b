/* UTF-8 validation (RFC 3629: no overlongs, no surrogates, <= U+10FFFF). */
#ifndef ISV_CODEC_UTF8_H
#define ISV_CODEC_UTF8_H

#include <stddef.h>

/* The length (2..4) of the valid UTF-8 sequence at s, whose lead byte s[0] is 0x80 or above,
 * of the n bytes there; 0 when it is not one (a continuation byte, an overlong form, a
 * surrogate, above U+10FFFF, or cut short). Inline: the JSON reader's string scan calls it per
 * non-ASCII character. */
static inline size_t isv__utf8_seq_len(const unsigned char *s, size_t n) {
  unsigned c = s[0];
  if (c < 0xC2) return 0; /* a continuation byte, or an overlong 2-byte lead */
  if (c < 0xE0) return (n >= 2 && (s[1] & 0xC0) == 0x80) ? 2 : 0;
  if (c < 0xF0) {
    if (n < 3 || (s[1] & 0xC0) != 0x80 || (s[2] & 0xC0) != 0x80) return 0;
    if (c == 0xE0 && s[1] < 0xA0) return 0;  /* overlong */
    if (c == 0xED && s[1] >= 0xA0) return 0; /* surrogates U+D800..U+DFFF */
    return 3;
  }
  if (c < 0xF5) {
    if (n < 4 || (s[1] & 0xC0) != 0x80 || (s[2] & 0xC0) != 0x80 || (s[3] & 0xC0) != 0x80)
      return 0;
    if (c == 0xF0 && s[1] < 0x90) return 0; /* overlong */
    if (c == 0xF4 && s[1] >= 0x90) return 0; /* above U+10FFFF */
    return 4;
  }
  return 0;
}

int isv__utf8_valid(const char *s, size_t n); /* 1 valid, 0 not */
/* Valid UTF-8 holding no NUL byte (U+0000): text a C string can carry whole. 1 or 0. */
int isv__utf8_text(const char *s, size_t n);

#endif
