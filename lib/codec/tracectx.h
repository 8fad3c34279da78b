/* W3C Trace Context (https://www.w3.org/TR/trace-context/): the `traceparent` and `tracestate`
 * a request carries, read and checked. Pure functions, no allocation: the front ends keep what
 * they read with the request (isv_request_trace_context), the transport puts the trace id in
 * the access log. A value that does not parse is ignored, never an error for the request
 * (the spec: a vendor that cannot parse traceparent restarts the trace; tracestate then goes
 * too). */
#ifndef ISV_CODEC_TRACECTX_H
#define ISV_CODEC_TRACECTX_H

#include <stddef.h>
#include <stdint.h>

typedef struct isv__traceparent {
  uint8_t version;
  uint8_t trace_id[16];
  uint8_t parent_id[8];
  uint8_t flags;
} isv__traceparent;

/* s[0..n): "VV-TTTT...(32 hex)-PPPP...(16 hex)-FF" in lowercase hex, version not ff, trace and
 * parent ids not all zeros; version 00 is exactly 55 characters, a later version may go on
 * after a '-' (its fields are ignored). Surrounding spaces and tabs (an HTTP field's OWS) are
 * allowed. 0 with *out filled, or -1. */
int isv__traceparent_parse(const char *s, size_t n, isv__traceparent *out);

/* Whether s[0..n) may be kept as a tracestate: at most ISV__TRACESTATE_MAX bytes of printable
 * ASCII, at most 32 comma-separated members, each empty (OWS only) or "key=value" with a key
 * and a value. Opaque otherwise: its vendors' content is theirs. */
#define ISV__TRACESTATE_MAX 512
int isv__tracestate_ok(const char *s, size_t n);

/* The trace id as 32 lowercase hex digits and a NUL. */
void isv__trace_id_hex(const uint8_t id[16], char out[33]);

#endif
