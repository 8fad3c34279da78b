/* The binary form of a BYTES tensor shared by Triton's HTTP binary extension and gRPC's
 * raw_input_contents / raw_output_contents: per element, a u32 little-endian length followed by
 * that many bytes, elements back to back, nothing else. */
#ifndef ISV_CODEC_RAW_BYTES_H
#define ISV_CODEC_RAW_BYTES_H

#include <stddef.h>

#include "inferserve.h"

/* Where a scan stopped on malformed framing: element `elem` either starts with fewer than 4
 * bytes left (`in_prefix`) or claims `len` bytes while only `left` remain. */
typedef struct isv__rawbytes_err {
  size_t elem;
  int in_prefix;
  size_t len;
  size_t left;
} isv__rawbytes_err;

/* Count the elements of p[0..n). 0 and *count set, or -1 and *err filled. */
int isv__rawbytes_count(const void *p, size_t n, size_t *count, isv__rawbytes_err *err);
/* Point out[0..count) into p (which isv__rawbytes_count accepted): no copy. */
void isv__rawbytes_split(const void *p, size_t count, isv_bytes *out);
/* The encoded size of b[0..n); SIZE_MAX when an element is longer than a u32 can say. */
size_t isv__rawbytes_size(const isv_bytes *b, size_t n);
/* Write b[0..n) to dst, which has isv__rawbytes_size(b, n) bytes. */
void isv__rawbytes_write(void *dst, const isv_bytes *b, size_t n);

#endif
