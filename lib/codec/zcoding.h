/* HTTP content codings over zlib (RFC 9110 §8.4.1): the gzip and deflate bodies a client sends
 * (Content-Encoding) and the ones it accepts back (Accept-Encoding). Pure functions, no I/O:
 * fuzz/fuzz_zcoding.c drives them directly.
 *
 * "deflate" is the zlib format (RFC 1950) as the RFC says; a raw deflate stream (RFC 1951), which
 * some clients send under that name, is accepted too. A gzip body is one member. */
#ifndef ISV_CODEC_ZCODING_H
#define ISV_CODEC_ZCODING_H

#include <stddef.h>

#include "codec/buf.h"
#include "codec/mem.h"

typedef enum {
  ISV__CODING_IDENTITY = 0,
  ISV__CODING_GZIP,
  ISV__CODING_DEFLATE,
  ISV__CODING_UNKNOWN /* anything else, or a list of codings: refused */
} isv__coding;

/* A Content-Encoding value: one coding name, case-insensitive, blanks around it ignored
 * ("x-gzip" is gzip, RFC 9110 §8.4.1.3). Empty: identity. */
isv__coding isv__coding_of(const char *v, size_t n);
const char *isv__coding_name(isv__coding c); /* "gzip", "deflate", "identity" */

/* The coding to answer with for an Accept-Encoding value: gzip, else deflate, when the client
 * gives it a non-zero q (directly or through "*"); identity otherwise. NULL v: identity. */
isv__coding isv__coding_accepted(const char *v, size_t n);

/* The decoded body of in[0..n) into *out (from mem, NUL-terminated past *out_len; free with
 * isv__free), never more than max_out bytes. Returns 0; ISV_EBADREQ when the data is not valid
 * for the coding (truncated, corrupt, bytes after the end) with err naming the problem;
 * ISV_ETOOBIG when the decoded body would exceed max_out; ISV_ENOMEM. Memory grows with what
 * comes out, not with what the header claims. */
int isv__inflate(isv__coding c, const void *in, size_t n, size_t max_out, const isv_mem *mem,
                 char **out, size_t *out_len, char *err, size_t err_cap);

/* One piece of a body to encode. */
typedef struct isv__zpiece {
  const void *p;
  size_t n;
} isv__zpiece;

/* The pieces, concatenated and encoded with c (gzip or deflate, zlib's fastest level: the
 * point is fewer bytes on the wire for little CPU), appended to out. 0, or ISV_ENOMEM (out's
 * failed flag is set too), ISV_EINVAL for a coding that is not gzip or deflate. */
int isv__deflate(isv__coding c, const isv__zpiece *pieces, size_t n_pieces, isv__buf *out);

#endif
