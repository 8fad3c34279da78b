/* UTF-8 validation (RFC 3629: no overlongs, no surrogates, <= U+10FFFF). */
#ifndef ISV_CODEC_UTF8_H
#define ISV_CODEC_UTF8_H

#include <stddef.h>

int isv__utf8_valid(const char *s, size_t n); /* 1 valid, 0 not */
/* Valid UTF-8 holding no NUL byte (U+0000): text a C string can carry whole. 1 or 0. */
int isv__utf8_text(const char *s, size_t n);

#endif
