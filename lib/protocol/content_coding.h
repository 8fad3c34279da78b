/* Request bodies sent with Content-Encoding gzip or deflate (codec/zcoding.h) are decoded before
 * routing, for every HTTP front end and custom route alike: a handler always sees the plain
 * body. The transports refuse every other coding (415) before reading the body. */
#ifndef ISV_PROTOCOL_CONTENT_CODING_H
#define ISV_PROTOCOL_CONTENT_CODING_H

#include "protocol/layer.h"

#include "protocol/router.h"

/* 0 when ex's body is not coded (route it now). 1 when this took ex: its body is decoded — a
 * slice here, the rest on a worker thread — and ex then goes through the edge again (edge.h)
 * with the plain body (its Content-Encoding now reads "identity"), or is answered with the
 * error: 400 naming what is wrong with the data, 413 when the decoded body exceeds the
 * server's max_body_bytes, 503 when the server's receiving budget (max_receiving_bytes, which
 * the decoded bytes are charged to as they come out, held until ex is freed) runs out, 500 out
 * of memory. */
int isv__content_decode(isv__router *r, isv__exchange *ex);

#endif
