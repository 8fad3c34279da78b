/* HTTP routes as data: (methods, path pattern, handler) triples that front ends export and the
 * server adds to its router when it starts — or later, at run time (a host's routes, Vertex's
 * AIP_* routes). The router matches a request path against them, answers 404 and 405 itself,
 * and hands a matched exchange to the handler with the path's captures.
 *
 * Patterns: segments separated by '/'. A segment is a literal ("models"), a capture
 * ("{model}"), a capture with a literal suffix ("{model}:predict": the segment must end with
 * ":predict"; what precedes it is captured), or, last, "{*rest}": the rest of the path, maybe
 * empty. Request paths are percent-decoded segment by segment before matching (so "%2F" in a
 * model name is a character of the name, not a separator); one trailing '/' is ignored.
 * Routes are tried in the order they were added; the first whose pattern and method match wins.
 * Loop thread only. */
#ifndef ISV_PROTOCOL_ROUTER_H
#define ISV_PROTOCOL_ROUTER_H

#include "protocol/layer.h"

#include "codec/buf.h"
#include "core/core.h"
#include "transport/exchange.h"

#define ISV__ROUTE_MAX_SEGMENTS 16
#define ISV__ROUTE_MAX_CAPTURES 8
#define ISV__ROUTE_MEMO_PATH 96 /* the longest path the router remembers (isv__route_memo) */

/* Method masks. A route that answers GET answers HEAD too (the transport drops the body). */
#define ISV__ROUTE_GET (1u << ISV__M_GET)
#define ISV__ROUTE_POST (1u << ISV__M_POST)
#define ISV__ROUTE_PUT (1u << ISV__M_PUT)
#define ISV__ROUTE_DELETE (1u << ISV__M_DELETE)
#define ISV__ROUTE_ANY 0xffffffffu

typedef struct isv__frontend isv__frontend;
typedef struct isv__http_req isv__http_req;

/* Answers q->ex exactly once, now or later (the exchange stays valid until answered). */
typedef void (*isv__http_handler)(isv__http_req *q);

typedef struct isv__http_route {
  unsigned methods; /* ISV__ROUTE_* mask */
  const char *pattern;
  isv__http_handler handler;
  void *data; /* handed to the handler as q->data */
} isv__http_route;

/* What a handler gets. The captures point into the router's scratch space: valid until the
 * handler returns (copy what a later answer needs). */
struct isv__http_req {
  isv__core *core;
  isv__exchange *ex;
  const isv__frontend *fe; /* whose route this is: its error shape, its protocol label */
  unsigned protocol;       /* fe's label index (isv__core_protocol) for the requests it makes */
  const struct isv__router *router; /* the front ends' values (isv__router_named_value) */
  void *state; /* fe's per-server state (isv__frontend.state_size; loop thread only); NULL: none */
  void *data;
  size_t n_caps;
  const char *cap_name[ISV__ROUTE_MAX_CAPTURES]; /* "model" for "{model}" */
  const char *cap[ISV__ROUTE_MAX_CAPTURES];      /* percent-decoded, NUL-terminated */
  size_t cap_len[ISV__ROUTE_MAX_CAPTURES];
};

/* The capture named `name` (NULL when the route has none by that name); *len its length. */
const char *isv__http_capture(const isv__http_req *q, const char *name, size_t *len);

/* Query parameter `key` of ex ("a=1&b=x%20y"; '+' is a space), percent-decoded into out
 * (cap bytes, NUL-terminated), its length in *len (may be NULL). 1 found (the first of its
 * name), 0 absent, -1 present but longer than cap - 1 or badly escaped. A key without '=' has
 * the value "". */
int isv__http_query(const isv__exchange *ex, const char *key, char *out, size_t cap, size_t *len);
/* Whether query parameter `key` is "true" or "1" (case-insensitive "true"). */
int isv__http_query_flag(const isv__exchange *ex, const char *key);

typedef struct isv__compiled_route isv__compiled_route;

/* The last path dispatched, with its method, and what it matched: a client sends one path over
 * and over (a model's infer), and the next request on it skips the split and the matching. The
 * captures point into the router's scratch space, where the split that found them left the
 * path's segments: any split empties the memo (path_len 0), as does any change of the routes.
 * Keyed on the method too: the route that takes a path for one method need not be the first
 * that takes it for another. */
typedef struct isv__route_memo {
  size_t path_len; /* 0: nothing remembered */
  unsigned method_bit;
  uint32_t route; /* the index in routes */
  size_t n_caps;
  const char *cap_name[ISV__ROUTE_MAX_CAPTURES]; /* in the route's pattern */
  const char *cap[ISV__ROUTE_MAX_CAPTURES];      /* in scratch */
  size_t cap_len[ISV__ROUTE_MAX_CAPTURES];
  char path[ISV__ROUTE_MEMO_PATH];
} isv__route_memo;

typedef struct isv__router {
  isv__core *core;
  struct isv__gate *gate; /* the edge's judge (gate.h, edge.h); NULL: none */
  isv__compiled_route *routes;
  size_t n_routes, cap_routes;
  const isv__frontend **prefixes; /* front ends with a path_prefix, for unmatched paths */
  size_t n_prefixes;
  isv__buf scratch; /* the decoded path of the request being routed */
  struct isv__fe_value *values; /* front ends' own settings (isv__router_set_value) */
  struct isv__fe_state *states; /* front ends' per-server state (isv__frontend.state_size) */
  /* by_segs[by_segs_at[n] .. by_segs_at[n + 1]): the routes that may match a path of n
   * segments, in the order they were added — a V2 infer path tries 4 routes, not 32. Made at
   * the first dispatch after the routes changed (by_segs_stale); NULL: every route is tried. */
  uint32_t *by_segs;
  uint32_t by_segs_at[ISV__ROUTE_MAX_SEGMENTS + 2];
  int by_segs_stale;
  isv__route_memo memo;
} isv__router;

void isv__router_init(isv__router *r, isv__core *core);
void isv__router_free(isv__router *r);
/* Add route (copied; pattern compiled) on behalf of fe. ISV_EINVAL for a malformed pattern,
 * ISV_EEXIST when a route with the same pattern already answers one of its methods (a host's
 * route may not shadow a built-in one), ISV_ENOMEM. */
int isv__router_add(isv__router *r, const isv__frontend *fe, const isv__http_route *route);
/* Whether a route already added (for a method in `methods`) could take a path that `prefix`
 * (literal segments, "/a/b") or a path under it names: the custom routes' no-shadowing rule.
 * -1 for a prefix that is not a plain path. */
int isv__router_overlaps(const isv__router *r, unsigned methods, const char *prefix);
/* A front end's own value on this router: what a configure hook (frontend.h) keeps for its
 * routes to use (Vertex's model name, the data of its predict route). set copies value (NULL
 * removes it; 0 or ISV_ENOMEM); the router frees it. NULL when fe has none. */
const char *isv__router_value(const isv__router *r, const isv__frontend *fe);
int isv__router_set_value(isv__router *r, const isv__frontend *fe, const char *value);
/* ... and its values by name (Vertex's endpoint ids): len bytes of value, which may hold NULs
 * (kept NUL-terminated after them); NULL removes the name's. */
const char *isv__router_named_value(const isv__router *r, const isv__frontend *fe,
                                    const char *name);
int isv__router_set_named_value(isv__router *r, const isv__frontend *fe, const char *name,
                                const char *value, size_t len);
/* Forget the routes added after the first n_routes (and the prefixes after n_prefixes): the
 * all-or-nothing rollback of a front end that failed to be added. */
void isv__router_truncate(isv__router *r, size_t n_routes, size_t n_prefixes);
/* Remove every route fe added (and fe's path prefix). */
void isv__router_remove(isv__router *r, const isv__frontend *fe);
/* Route one exchange: its handler, or 400 (malformed path), 404 or 405 (with Allow). Only
 * matching: an exchange comes here through the edge (edge.h), which judged and decoded it. */
void isv__router_dispatch(isv__router *r, isv__exchange *ex);
/* The front end whose shape ex's errors take: the matching route's, else the longest
 * path_prefix's, else NULL. */
const isv__frontend *isv__router_owner(isv__router *r, const isv__exchange *ex);
/* Answer an error found before any handler ran — by the transport (408, 413, 431...) or the
 * router — in the shape of the front end the path belongs to (the matched route's, else the
 * longest path_prefix's, else {"error": msg}). */
void isv__router_error(isv__router *r, isv__exchange *ex, int http_status, const char *msg,
                       const isv__header *extra, size_t n_extra);
/* The same, in fe's shape (NULL: {"error": msg}). */
void isv__router_error_as(const isv__frontend *fe, isv__exchange *ex, int http_status,
                          const char *msg, const isv__header *extra, size_t n_extra);

#endif
