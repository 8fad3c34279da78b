/* Standard-alphabet base64 (RFC 4648 §4), padded. */
#ifndef ISV_CODEC_BASE64_H
#define ISV_CODEC_BASE64_H

#include <stddef.h>

#include "buf.h"

/* Append the encoding of (p, n) to b. */
void isv__base64_encode(isv__buf *b, const void *p, size_t n);
/* Decode (in, n) into out, which may alias in (decoding shrinks). Strict: padding required,
 * no whitespace, no other characters. Returns the decoded length, or (size_t)-1 on error. */
size_t isv__base64_decode(const char *in, size_t n, unsigned char *out);

#endif
