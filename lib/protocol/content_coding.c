/* Decoding coded request bodies before routing: see content_coding.h. */
#include "protocol/content_coding.h"

#include <stdio.h>
#include <strings.h>

#include "codec/bigbuf.h"
#include "codec/zcoding.h"
#include "core/offload.h"
#include "protocol/edge.h"

/* Compressed bodies of at least this size are inflated on a worker thread: what comes out is
 * commonly 4-10 times larger, and inflating runs at a few hundred MB/s. */
#define INFLATE_OFFLOAD_MIN_BYTES ((size_t)16 << 10)

typedef struct decode_job {
  isv__offload off;
  isv__router *r;
  isv__exchange *ex;
  isv__header *ce; /* the Content-Encoding header */
  isv__coding coding;
  size_t max;
  int rc;
  char *out;
  size_t out_len;
  char err[160];
} decode_job;

static void inflate_body(decode_job *j) {
  j->rc = isv__inflate(j->coding, j->ex->body, j->ex->body_len, j->max, j->ex->mem, &j->out,
                       &j->out_len, j->err, sizeof j->err);
}

static void finish(decode_job *j) {
  isv__exchange *ex = j->ex;
  isv__router *r = j->r;
  if (j->rc != 0) {
    char msg[256];
    int status = j->rc == ISV_ETOOBIG ? 413 : j->rc == ISV_EBADREQ ? 400 : 500;
    if (j->rc == ISV_ETOOBIG)
      snprintf(msg, sizeof msg, "the decoded (Content-Encoding %s) request body exceeds the "
               "server's limit of %zu bytes", isv__coding_name(j->coding), j->max);
    else if (j->rc == ISV_EBADREQ)
      snprintf(msg, sizeof msg, "Content-Encoding %s: %s", isv__coding_name(j->coding), j->err);
    else snprintf(msg, sizeof msg, "out of memory decoding the request body");
    isv__free(j);
    isv__router_error(r, ex, status, msg, NULL, 0);
    return;
  }
  if (ex->body_big) isv__bigbuf_free(ex->body);
  else isv__free(ex->body);
  ex->body = j->out;
  ex->body_len = j->out_len;
  ex->body_big = 0;
  j->ce->value = "identity"; /* the body is plain now: routing again does not decode it */
  j->ce->value_len = 8;
  isv__free(j);
  isv__edge_http(r, ex);
}

static void decode_work(isv__offload *o) { inflate_body((decode_job *)o); }
static void decode_after(isv__offload *o) { finish((decode_job *)o); }

int isv__content_decode(isv__router *r, isv__exchange *ex) {
  isv__header *ce = NULL;
  for (size_t i = 0; i < ex->n_headers && ce == NULL; i++)
    if (ex->headers[i].name_len == 16 &&
        strncasecmp(ex->headers[i].name, "content-encoding", 16) == 0)
      ce = &ex->headers[i];
  if (ce == NULL || ex->body_len == 0) return 0; /* nothing to decode */
  isv__coding coding = isv__coding_of(ce->value, ce->value_len);
  if (coding != ISV__CODING_GZIP && coding != ISV__CODING_DEFLATE) return 0; /* identity */
  decode_job *j = isv__calloc(ex->mem, 1, sizeof *j);
  if (j == NULL) {
    isv__router_error(r, ex, 500, "out of memory", NULL, 0);
    return 1;
  }
  j->r = r;
  j->ex = ex;
  j->ce = ce;
  j->coding = coding;
  j->max = r->core->opts.max_body_bytes;
  if (ex->body_len >= INFLATE_OFFLOAD_MIN_BYTES &&
      isv__offload_run(r->core, &j->off, decode_work, decode_after) == 0)
    return 1;
  inflate_body(j);
  finish(j);
  return 1;
}
