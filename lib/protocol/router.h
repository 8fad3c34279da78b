/* Path → frontend handler. The protocol layer's entry point for every HTTP exchange. */
#ifndef ISV_PROTOCOL_ROUTER_H
#define ISV_PROTOCOL_ROUTER_H

#include "protocol/layer.h"

#include "core/core.h"
#include "transport/exchange.h"

#define ISV__MAX_SEGMENTS 16

typedef struct isv__route {
  const char *seg[ISV__MAX_SEGMENTS]; /* percent-decoded, NUL-terminated */
  size_t len[ISV__MAX_SEGMENTS];
  size_t n;
} isv__route;

void isv__router_dispatch(isv__core *core, isv__exchange *ex);
/* Split and percent-decode a path in place. -1 when malformed (bad escape, too deep). */
int isv__route_split(char *path, size_t len, isv__route *out);
/* 405 with an Allow header naming the method that works. */
int isv__reply_method_not_allowed(isv__exchange *ex, const char *allowed);

#endif
