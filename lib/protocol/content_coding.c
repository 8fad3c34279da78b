/* Decoding coded request bodies before routing: see content_coding.h. */
#include "protocol/content_coding.h"

#include <stdio.h>
#include <strings.h>

#include "codec/bigbuf.h"
#include "codec/zcoding.h"
#include "transport/exchange.h"
#include "core/offload.h"
#include "protocol/edge.h"

typedef struct decode_job {
  isv__offload_inflate inf; /* first: the job is its inflation */
  isv__router *r;
  isv__exchange *ex;
  isv__header *ce; /* the Content-Encoding header */
  isv__coding coding;
} decode_job;

static void finish(isv__offload_inflate *inf) {
  decode_job *j = (decode_job *)inf;
  isv__exchange *ex = j->ex;
  isv__router *r = j->r;
  int rc = inf->rc;
  if (rc != 0) {
    char msg[256];
    size_t max = r->core->opts.max_body_bytes;
    int status = rc == ISV_ETOOBIG    ? 413
                 : rc == ISV_EBADREQ  ? 400
                 : rc == ISV_EUNAVAIL ? 503
                                      : 500;
    if (rc == ISV_ETOOBIG)
      snprintf(msg, sizeof msg, "the decoded (Content-Encoding %s) request body exceeds the "
               "server's limit of %zu bytes", isv__coding_name(j->coding), max);
    else if (rc == ISV_EBADREQ)
      snprintf(msg, sizeof msg, "Content-Encoding %s: the body is not valid %s data: %s",
               isv__coding_name(j->coding), isv__coding_name(j->coding),
               isv__inflater_why(inf->f));
    else if (rc == ISV_EUNAVAIL)
      snprintf(msg, sizeof msg, "the server is receiving too much request data at once (the "
               "decoded bodies count too); retry later");
    else snprintf(msg, sizeof msg, "out of memory decoding the request body");
    isv__inflater_free(inf->f);
    isv__free(j);
    isv__router_error(r, ex, status, msg, NULL, 0);
    return;
  }
  size_t len, charged;
  char *body = isv__inflater_take(inf->f, &len, &charged);
  isv__inflater_free(inf->f);
  if (ex->body_big) isv__bigbuf_free(ex->body);
  else isv__free(ex->body);
  ex->body = body;
  ex->body_len = len;
  ex->body_big = 0;
  isv__exchange_hold_budget(ex, r->core->receiving, charged); /* until ex is freed */
  j->ce->value = "identity"; /* the body is plain now: the edge does not decode it again */
  j->ce->value_len = 8;
  isv__free(j);
  isv__edge_http(r, ex);
}

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
  /* every byte that comes out is charged to the receiving budget as it comes; the loop
   * inflates one slice, whatever the compressed size — a body that inflates past it goes on
   * on a worker thread */
  j->inf.rc = isv__inflater_new(coding, ex->body, ex->body_len, r->core->opts.max_body_bytes,
                                ex->mem, r->core->receiving, &j->inf.f);
  if (j->inf.rc == 0) isv__offload_inflate_run(r->core, &j->inf, finish);
  else finish(&j->inf);
  return 1;
}
