/* HTTP/2's rules for a request's header fields and its body's length (RFC 9113 §8.1, §8.2,
 * §8.3), made by the library as each field is decoded: nghttp2's own copy of them
 * (nghttp2_option_set_no_http_messaging turns it off) cost a small gRPC call ~2,400 of its
 * ~28,400 instructions — a lookup per field to find the field's token, a second per byte to
 * check its name and a third to check its value — where this is one name lookup that settles
 * the usual names without a byte loop, and value checks eight bytes at a time.
 *
 * The rules are nghttp2 1.52's, as a server without an on_invalid_header callback and without
 * SETTINGS_ENABLE_CONNECT_PROTOCOL applies them (tests/unit/test_h2_fields.c runs both side by
 * side over random requests): every field that breaks one makes the request malformed — the
 * stream is reset with PROTOCOL_ERROR and nothing of it reaches a handler:
 *   - a name of lower-case token characters, or ':' and such a name; a value without NUL, CR,
 *     LF, other control bytes or DEL, and without leading or trailing space or tab;
 *   - the pseudo-headers :method (a token), :scheme (a URI scheme), :path (visible bytes),
 *     :authority (an authority's bytes), each once, non-empty, before every regular field, none
 *     in trailers; no other pseudo-header (:protocol is unoffered: no extended CONNECT);
 *   - no connection-specific field (connection, keep-alive, proxy-connection,
 *     transfer-encoding, upgrade); te only as "trailers"; host at most once, non-empty, with an
 *     authority's bytes; content-length at most once, a decimal number;
 *   - the block: :method, :scheme, :path and :authority or host — except CONNECT, which has
 *     :authority and neither :scheme nor :path; an http(s) :path starts with '/' (or is "*" for
 *     OPTIONS);
 *   - trailers end the stream; the DATA add up to the content-length (CONNECT's ignored).
 *
 * Pure data: no nghttp2, no I/O. One per stream, on its connection's loop thread. */
#ifndef ISV_TRANSPORT_H2_FIELDS_H
#define ISV_TRANSPORT_H2_FIELDS_H

#include "transport/layer.h"

#include <stddef.h>
#include <stdint.h>

typedef struct isv__h2_fields {
  uint32_t seen;          /* what the block has had so far (flags private to h2_fields.c) */
  int64_t content_length; /* -1: none (or CONNECT's, ignored) */
  int64_t received;       /* DATA bytes so far */
} isv__h2_fields;

void isv__h2_fields_init(isv__h2_fields *f);

/* One field of the request's header block (trailer 0) or of its trailers (trailer 1): 0, or
 * -1 when it makes the request malformed. */
int isv__h2_field(isv__h2_fields *f, const uint8_t *name, size_t nlen, const uint8_t *value,
                  size_t vlen, int trailer);

/* A frame of the request is complete (on_frame_recv): its header block (`headers`; `trailer`
 * when it is the second one) or a DATA frame, and whether it ended the stream. 0, or -1 when
 * the request is malformed: the block lacks a pseudo-header it must have, trailers that do
 * not end the stream, a body whose length is not its content-length. */
int isv__h2_fields_frame_end(isv__h2_fields *f, int headers, int trailer, int end_stream);

/* `n` more DATA bytes arrived (before they are used): 0, or -1 when the body now runs past its
 * content-length. */
static inline int isv__h2_fields_data(isv__h2_fields *f, size_t n) {
  f->received += (int64_t)n;
  return f->content_length >= 0 && f->received > f->content_length ? -1 : 0;
}

#endif
