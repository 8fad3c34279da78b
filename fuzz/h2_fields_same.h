/* transport/h2_fields.c against nghttp2's own HTTP checks, side by side: one request's frames
 * (a header block, DATA, trailers) go into two nghttp2 server sessions — nghttp2's checks on,
 * as the library ran before; and off, with isv__h2_fields making them as transport/http2.c
 * does (a malformed request: RST_STREAM PROTOCOL_ERROR, nothing more of it delivered) — and
 * the two must reset the same requests and deliver the same frames of the others. Shared by
 * fuzz_h2_fields and tests/unit/test_h2_fields.c (a seeded random sweep). */
#ifndef ISV_FUZZ_H2_FIELDS_SAME_H
#define ISV_FUZZ_H2_FIELDS_SAME_H

#include <stddef.h>
#include <stdint.h>

typedef struct h2f_field {
  const uint8_t *name, *value;
  size_t nlen, vlen;
} h2f_field;

typedef struct h2f_request {
  const h2f_field *fields; /* the request's header block */
  size_t n_fields;
  size_t body_len;   /* DATA bytes after it, in n_chunks frames (0: none; the HEADERS ends the
                      * stream unless there are trailers or end_on_data) */
  size_t n_chunks;
  int end_on_data;   /* the last DATA frame (an empty one if body_len is 0) ends the stream */
  const h2f_field *trailers; /* sent when n_trailers or send_trailers */
  size_t n_trailers;
  int send_trailers;
  int trailers_end;  /* the trailers' HEADERS carries END_STREAM */
} h2f_request;

/* 1 when both sessions agree; 0 with `why` saying how they differ. */
int h2f_same(const h2f_request *r, char *why, size_t why_len);

#endif
