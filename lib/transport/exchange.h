/* One HTTP exchange (request in, one response out), the same type for HTTP/1.1 and HTTP/2 —
 * and for anything else that carries HTTP (a host's own server): whoever fills it sets
 * `respond`. A protocol handler answers it exactly once — at once or later — with
 * isv__exchange_respond(). The carrier frees it after the response is written or the
 * connection is gone; the handler must not touch it after responding. */
#ifndef ISV_TRANSPORT_EXCHANGE_H
#define ISV_TRANSPORT_EXCHANGE_H

#include "transport/layer.h"

#include <stddef.h>
#include <uv.h>

typedef enum {
  ISV__M_OTHER = 0,
  ISV__M_GET,
  ISV__M_HEAD,
  ISV__M_POST,
  ISV__M_PUT,
  ISV__M_DELETE,
  ISV__M_OPTIONS
} isv__method;

typedef struct isv__header {
  const char *name;
  size_t name_len;
  const char *value;
  size_t value_len;
} isv__header;

typedef struct isv__exchange isv__exchange;

typedef struct isv__response {
  int status;
  const char *content_type;   /* NULL = no Content-Type */
  const isv__header *headers; /* extra headers, copied before respond returns */
  size_t n_headers;
  const uv_buf_t *parts; /* the body: referenced until release runs */
  size_t n_parts;
  void (*release)(void *ctx); /* called once the body was written or dropped; may be NULL */
  void *release_ctx;
} isv__response;

struct isv__exchange {
  isv__method method;
  const char *method_name;
  char *path; /* raw path, NUL-terminated, not percent-decoded */
  size_t path_len;
  char *query; /* after '?', NUL-terminated ("" when none) */
  size_t query_len;
  isv__header *headers;
  size_t n_headers;
  char *body; /* mutable: decoders unescape strings in place */
  size_t body_len;
  /* transport-private */
  void *conn;
  int (*respond)(isv__exchange *ex, const isv__response *resp);
  char *storage; /* path, query and header text */
  int body_big;  /* body came from isv__bigbuf_alloc */
};

/* "GET" -> ISV__M_GET ...; ISV__M_OTHER for the rest. */
isv__method isv__method_of(const char *name);
/* Case-insensitive lookup; NULL when absent. */
const isv__header *isv__exchange_header(const isv__exchange *ex, const char *name);
int isv__exchange_respond(isv__exchange *ex, const isv__response *resp);
const char *isv__http_reason(int status);
/* Free an exchange the HTTP engines built (storage, body, headers, itself). */
void isv__exchange_free(isv__exchange *ex);

#endif
