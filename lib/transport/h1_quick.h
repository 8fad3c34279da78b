/* The quick reading of an HTTP/1.x request: the plain shape nearly every client sends, read in
 * one pass over a message that arrived whole, with the result llhttp 8.1 gives for it; any other
 * shape is declined, and llhttp (transport/http1.c) reads it as before. llhttp's state machine
 * and its span callbacks cost a small keep-alive request ~3.3k of its ~20.3k user-space
 * instructions (bench/RESULTS.md); this is one pass over the head, eight bytes at a time.
 *
 * Taken — everything else is declined (0):
 *   - a request line `METHOD SP /target SP HTTP/1.0|HTTP/1.1 CRLF`: METHOD one of GET, HEAD,
 *     POST, PUT, DELETE, OPTIONS; the target starts with '/' and holds visible ASCII only ('#'
 *     aside), single spaces between the three;
 *   - fields `name ":" *(SP / HTAB) value CRLF`: a token name, a value of visible ASCII, space
 *     and tab that neither starts nor ends with them (llhttp leaves trailing ones in), at most
 *     ISV__H1_QUICK_FIELDS of them; no Connection, Proxy-Connection, Transfer-Encoding or
 *     Upgrade (which llhttp reads for framing or the connection's fate); Content-Length at most
 *     once, 1 to 15 digits;
 *   - the blank line, then the whole body (Content-Length's, at most ISV__H1_QUICK_BODY_MAX
 *     bytes; none without one) in the same bytes.
 * Taken, it is the message llhttp reads from the same bytes, to the callback: the same method,
 * version, URL span, field spans (the value after its leading whitespace), Content-Length,
 * keep-alive answer (HTTP/1.1 yes, HTTP/1.0 no: neither has a Connection field here), body and
 * message length (tests/unit/test_h1_quick.c and fuzz_h1_quick, through fuzz/h1_quick_same.c).
 * What the server then requires of a request (Host, limits, codings) is http1.c's, on either
 * path.
 *
 * Pure data: of llhttp only its method numbers, no I/O. Spans are offsets into the bytes read.
 * A caller's memo (isv__h1_quick_memo: the transport keeps one per server, for its loop) holds
 * the last head taken, up to 512 bytes, with what reading it gave: the same bytes again — a
 * client's next request — are taken from it with one memcmp, the same result, instead of the
 * ~750 instructions of reading them. A head with credentials (Authorization,
 * Proxy-Authorization, Cookie, Api-Key, X-Api-Key, X-Auth-Token) is never kept: a server's memo is shared by all its clients, and
 * a hit's speed must not let one test a guess of another's head (HPACK keeps such fields out of
 * its shared table for the same reason). */
#ifndef ISV_TRANSPORT_H1_QUICK_H
#define ISV_TRANSPORT_H1_QUICK_H

#include "transport/layer.h"

#include <stddef.h>
#include <stdint.h>

#define ISV__H1_QUICK_FIELDS 32
#define ISV__H1_QUICK_BODY_MAX (64u * 1024u)

typedef struct isv__h1_quick_field {
  uint32_t name_off, name_len, value_off, value_len;
} isv__h1_quick_field;

typedef struct isv__h1_quick {
  uint8_t method;         /* llhttp's number (llhttp_method_t: HTTP_GET, ...) */
  uint8_t http_minor;     /* 0 or 1; the major is 1 */
  uint8_t keep_alive;     /* llhttp_should_keep_alive's answer */
  uint8_t credentials;    /* a field with credentials (h1_quick.c's special) */
  int64_t content_length; /* -1: no Content-Length field */
  uint32_t url_off, url_len;
  size_t n_fields;
  size_t head_len;        /* the request line and fields through the blank line */
  size_t text_len;        /* URL, names and values: the bytes llhttp's span callbacks give */
  isv__h1_quick_field fields[ISV__H1_QUICK_FIELDS];
} isv__h1_quick;

#define ISV__H1_QUICK_MEMO_HEAD 512

/* The last head taken and what reading it gave; zeroed: empty. One user at a time. */
typedef struct isv__h1_quick_memo {
  size_t len; /* of bytes[]; 0: none */
  isv__h1_quick q;
  char bytes[ISV__H1_QUICK_MEMO_HEAD];
} isv__h1_quick_memo;

/* The n bytes at p, from a message's first byte: the message's length (head and body) when it
 * is all there and of the shape taken, with *q filled; else 0 and *q undefined. With a memo
 * (may be NULL), the head is taken from it when it is the one kept there, and kept there when
 * read. */
size_t isv__h1_quick_read(const char *p, size_t n, isv__h1_quick *q, isv__h1_quick_memo *memo);

/* Whether the n bytes at p are the head memo keeps (for tests). */
int isv__h1_quick_remembers(const isv__h1_quick_memo *memo, const char *p, size_t n);

#endif
