/* Glue between nanopb's generated code (proto/) and the library: encode a message into an
 * isv__buf, and callbacks for NUL-terminated strings (Debian's nanopb builds every string and
 * bytes field of our .options as a callback; see DESIGN "Traps"). For the small messages only:
 * tensor-sized ones go through pbwire.h. */
#ifndef ISV_CODEC_NANOPB_GLUE_H
#define ISV_CODEC_NANOPB_GLUE_H

#include <pb_decode.h>
#include <pb_encode.h>

#include "buf.h"

/* Encode msg (of type `fields`) at the end of out: 0, or ISV_ENOMEM (out->failed or nanopb). */
int isv__nanopb_encode(const pb_msgdesc_t *fields, const void *msg, isv__buf *out);

/* A string field written from a C string (NULL or "" is not written: proto3's default). */
void isv__nanopb_cstr(pb_callback_t *cb, const char *s);

/* A string field read into a caller's array, NUL-terminated; decoding fails when it does not
 * fit or holds a NUL byte. */
typedef struct isv__nanopb_cstr_dst {
  char *p;
  size_t cap;
} isv__nanopb_cstr_dst;
void isv__nanopb_read_cstr(pb_callback_t *cb, isv__nanopb_cstr_dst *dst);

#endif
