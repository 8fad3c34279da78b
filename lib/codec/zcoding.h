/* HTTP content codings over zlib (RFC 9110 §8.4.1): the gzip and deflate bodies a client sends
 * (Content-Encoding) and the ones it accepts back (Accept-Encoding). Pure functions, no I/O:
 * fuzz/fuzz_zcoding.c drives them directly.
 *
 * "deflate" is the zlib format (RFC 1950) as the RFC says; a raw deflate stream (RFC 1951), which
 * some clients send under that name, is accepted too. A gzip body may hold several members, one
 * after the other (RFC 1952 §2.2): they decode to their concatenation. */
#ifndef ISV_CODEC_ZCODING_H
#define ISV_CODEC_ZCODING_H

#include <stddef.h>

#include "codec/budget.h"
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

/* The same, a slice at a time: the caller decides where each slice runs (the loop inflates a
 * first one; what is left goes to a worker thread), and every byte of output buffer is taken
 * from `budget` (NULL: none) as the buffer grows — so a decoded body holds the server's
 * receiving budget from its first byte, and a bomb is refused when the budget runs out, not
 * after it inflated. The input must stay valid until the inflater is freed. */
typedef struct isv__inflater isv__inflater;
#define ISV__INFLATE_MORE 1
/* How much of a body or message the loop thread inflates: ~0.3-1 ms of zlib. What it decodes
 * to past that is decoded on a worker thread — judged by what comes out, not by the compressed
 * size (15 KiB may hold 15 MiB). */
#define ISV__INFLATE_LOOP_SLICE ((size_t)256 << 10)
/* 0, or ISV_EINVAL (not gzip or deflate), ISV_ENOMEM. */
int isv__inflater_new(isv__coding c, const void *in, size_t n, size_t max_out, const isv_mem *mem,
                      isv__budget *budget, isv__inflater **out);
/* Inflate until done (0) or until `slice` more bytes came out (ISV__INFLATE_MORE: call again,
 * from any one thread at a time). Errors: ISV_EBADREQ (isv__inflater_why says what is wrong),
 * ISV_ETOOBIG (past max_out), ISV_EUNAVAIL (the budget ran out), ISV_ENOMEM. */
int isv__inflater_run(isv__inflater *f, size_t slice);
const char *isv__inflater_why(const isv__inflater *f);
/* Bytes decoded so far. */
size_t isv__inflater_produced(const isv__inflater *f);
/* Once done: the decoded body (NUL-terminated past *len; free with isv__free) and what it holds
 * of the budget (*charged: the caller gives it back with isv__budget_give when the body goes). */
char *isv__inflater_take(isv__inflater *f, size_t *len, size_t *charged);
/* Frees f, giving back what it holds of the budget (nothing once taken). NULL: nothing. */
void isv__inflater_free(isv__inflater *f);

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
