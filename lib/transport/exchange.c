/* The exchange helpers both HTTP engines share (exchange.h). */
#include "transport/exchange.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "codec/bigbuf.h"
#include "codec/span.h"
#include "codec/tracectx.h"
#include "inferserve.h" /* the ISV_E* codes */

const isv__header *isv__exchange_header_n(const isv__exchange *ex, const char *name, size_t n) {
  for (size_t i = 0; i < ex->n_headers; i++) /* header names hold no NUL (the parsers refuse) */
    if (ex->headers[i].name_len == n && isv__bytes_same_nocase(ex->headers[i].name, name, n))
      return &ex->headers[i];
  return NULL;
}

static uint64_t parts_len(const uv_buf_t *parts, size_t n) {
  uint64_t total = 0;
  for (size_t i = 0; i < n; i++) total += parts[i].len;
  return total;
}

#define MERGED_HEADERS 32

int isv__exchange_respond(isv__exchange *ex, const isv__response *resp) {
  if (resp->more && (ex->write == NULL || ex->end == NULL)) return ISV_EUNIMPL;
  if (ex->phase == ISV__EX_PENDING) {
    ex->status = resp->status;
    ex->bytes_out += parts_len(resp->parts, resp->n_parts);
  }
  if (ex->n_extra == 0 || resp->n_headers + ex->n_extra > MERGED_HEADERS)
    return ex->respond(ex, resp);
  /* the router's headers join the handler's (the carriers copy them before returning) */
  isv__header merged[MERGED_HEADERS];
  if (resp->n_headers) memcpy(merged, resp->headers, resp->n_headers * sizeof *merged);
  memcpy(merged + resp->n_headers, ex->extra, ex->n_extra * sizeof *merged);
  isv__response r = *resp;
  r.headers = merged;
  r.n_headers = resp->n_headers + ex->n_extra;
  return ex->respond(ex, &r);
}

int isv__exchange_write(isv__exchange *ex, const uv_buf_t *parts, size_t n,
                        void (*release)(void *), void *ctx) {
  if (ex->phase != ISV__EX_STREAMING) {
    if (release) release(ctx);
    return ISV_ESTATE;
  }
  ex->bytes_out += parts_len(parts, n);
  return ex->write(ex, parts, n, release, ctx);
}

int isv__exchange_writable(isv__exchange *ex) {
  if (ex->phase != ISV__EX_STREAMING || ex->conn == NULL || ex->writable == NULL) return 1;
  return ex->writable(ex);
}

int isv__exchange_end(isv__exchange *ex) {
  if (ex->phase != ISV__EX_STREAMING) return ISV_ESTATE;
  return ex->end(ex);
}

void isv__exchange_cancel(isv__exchange *ex) {
  if (ex->phase == ISV__EX_DONE || ex->cancelled) return;
  ex->cancelled = 1;
  if (ex->on_cancel) ex->on_cancel(ex);
}

int isv__exchange_collect(isv__exchange *ex) {
  if (ex->phase != ISV__EX_DONE || ex->conn != NULL || ex->refs != 0) return 0;
  isv__exchange_free(ex);
  return 1;
}

const char *isv__http_reason(int status) {
  switch (status) {
  case 100: return "Continue";
  case 200: return "OK";
  case 204: return "No Content";
  case 400: return "Bad Request";
  case 401: return "Unauthorized";
  case 403: return "Forbidden";
  case 404: return "Not Found";
  case 405: return "Method Not Allowed";
  case 408: return "Request Timeout";
  case 409: return "Conflict";
  case 411: return "Length Required";
  case 413: return "Payload Too Large";
  case 415: return "Unsupported Media Type";
  case 429: return "Too Many Requests";
  case 431: return "Request Header Fields Too Large";
  case 499: return "Client Closed Request";
  case 500: return "Internal Server Error";
  case 501: return "Not Implemented";
  case 503: return "Service Unavailable";
  case 504: return "Gateway Timeout";
  case 505: return "HTTP Version Not Supported";
  default: return "Unknown";
  }
}

isv__method isv__method_of(const char *name) {
  static const struct {
    const char *name;
    isv__method m;
  } known[] = {{"GET", ISV__M_GET},       {"HEAD", ISV__M_HEAD},   {"POST", ISV__M_POST},
               {"PUT", ISV__M_PUT},       {"DELETE", ISV__M_DELETE}, {"OPTIONS", ISV__M_OPTIONS}};
  for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
    if (strcmp(name, known[i].name) == 0) return known[i].m;
  return ISV__M_OTHER;
}

void isv__exchange_start_access(isv__exchange *ex, void (*access)(void *, const isv_access_entry *),
                                void *app, const char *proto) {
  if (access == NULL) return;
  ex->access = access;
  ex->access_app = app;
  ex->access_proto = proto;
  ex->start_ns = uv_hrtime();
}

const isv__header *isv__header_one(const isv__header *headers, size_t n, const char *name,
                                   size_t len) {
  const isv__header *one = NULL;
  for (size_t i = 0; i < n; i++)
    if (headers[i].name_len == len && strncasecmp(headers[i].name, name, len) == 0) {
      if (one) return NULL; /* two: neither counts */
      one = &headers[i];
    }
  return one;
}

const char *isv__access_trace_id(const isv__header *headers, size_t n, char out[33]) {
  const isv__header *tp = isv__header_one(headers, n, "traceparent", 11);
  out[0] = '\0';
  isv__traceparent t;
  if (tp && isv__traceparent_parse(tp->value, tp->value_len, &t) == 0)
    isv__trace_id_hex(t.trace_id, out);
  return out;
}

static void log_access(const isv__exchange *ex) {
  char trace[33];
  isv_access_entry e = {
      .struct_size = sizeof e,
      .protocol = ex->access_proto,
      .method = ex->method_name ? ex->method_name : "",
      .path = ex->path ? ex->path : "",
      .status = ex->status,
      .bytes_in = ex->body_len,
      .bytes_out = ex->bytes_out,
      .duration_us = (uv_hrtime() - ex->start_ns) / 1000,
      .trace_id = isv__access_trace_id(ex->headers, ex->headers ? ex->n_headers : 0, trace),
  };
  ex->access(ex->access_app, &e);
}

void isv__exchange_hold_budget(isv__exchange *ex, isv__budget *b, size_t n) {
  if (ex->held_budget && ex->held_budget != b) { /* one budget per exchange: give back at once */
    isv__budget_give(b, n);
    return;
  }
  ex->held_budget = b;
  ex->held += n;
}

void isv__exchange_clear(isv__exchange *ex) {
  if (ex->access && ex->status) log_access(ex);
  isv__budget_give(ex->held_budget, ex->held);
  if (ex->on_free) ex->on_free(ex->on_free_ctx);
  isv__free(ex->identity);
  if (ex->body_big) isv__bigbuf_free(ex->body);
  else isv__free(ex->body);
  if (ex->block == 0) { /* else they are in ex's block */
    isv__free(ex->storage);
    isv__free(ex->headers);
  }
}

void isv__exchange_free(isv__exchange *ex) {
  isv__exchange_clear(ex);
  isv__free(ex);
}
