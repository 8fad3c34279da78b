#include "protocol/router.h"

#include <stdio.h>
#include <string.h>

#include "protocol/http_reply.h"
#include "protocol/metrics_http.h"
#include "protocol/v2_http.h"

static int hexval(int c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

int isv__route_split(char *path, size_t len, isv__route *out) {
  out->n = 0;
  if (len == 0 || path[0] != '/') return -1;
  size_t i = 1;
  while (i <= len) {
    size_t start = i;
    while (i < len && path[i] != '/') i++;
    size_t end = i;
    if (end == start && end == len) break; /* one trailing slash is ignored */
    if (out->n == ISV__MAX_SEGMENTS) return -1;
    /* decode in place: the decoded form is never longer */
    size_t w = start;
    for (size_t r = start; r < end; r++) {
      if (path[r] == '%') {
        if (r + 2 >= end) return -1;
        int h = hexval((unsigned char)path[r + 1]), l = hexval((unsigned char)path[r + 2]);
        if (h < 0 || l < 0 || (h | l) == 0) return -1; /* bad escape, or an embedded NUL */
        path[w++] = (char)(h * 16 + l);
        r += 2;
      } else {
        path[w++] = path[r];
      }
    }
    out->seg[out->n] = path + start;
    out->len[out->n] = w - start;
    out->n++;
    path[w] = '\0'; /* safe: w <= end, and path[end] is '/' or the terminating NUL */
    i = end + 1;
  }
  return 0;
}

int isv__reply_method_not_allowed(isv__exchange *ex, const char *allowed) {
  char msg[256];
  snprintf(msg, sizeof msg, "method %s is not allowed on this path; use %s", ex->method_name,
           allowed);
  isv__header allow = {"Allow", 5, allowed, strlen(allowed)};
  return isv__reply_error_msg(ex, 405, msg, &allow, 1);
}

static int seg_is(const isv__route *r, size_t i, const char *s) {
  return i < r->n && r->len[i] == strlen(s) && memcmp(r->seg[i], s, r->len[i]) == 0;
}

void isv__router_dispatch(isv__core *core, isv__exchange *ex) {
  isv__route rt;
  if (isv__route_split(ex->path, ex->path_len, &rt) != 0) {
    isv__reply_error(ex, ISV_EBADREQ, "malformed path '%.200s'", ex->path);
    return;
  }
  if (rt.n == 1 && seg_is(&rt, 0, "metrics")) {
    if (ex->method == ISV__M_GET || ex->method == ISV__M_HEAD) isv__metrics_reply(core, ex);
    else isv__reply_method_not_allowed(ex, "GET");
    return;
  }
  if (seg_is(&rt, 0, "v2")) {
    isv__v2_route(core, ex, &rt);
    return;
  }
  isv__reply_error(ex, ISV_ENOTFOUND, "unknown path '%.200s'", ex->path);
}
