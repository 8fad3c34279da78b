/* See router.h. Matching never allocates: the request path is decoded once into the router's
 * scratch buffer (reused by every request), split into segments, and compared with each
 * route's compiled segments. */
#include "protocol/router.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "codec/compiler.h"
#include "codec/span.h"
#include "protocol/frontend.h"
#include "protocol/http_reply.h"
#include "core/queries.h"

typedef enum { SEG_LITERAL, SEG_CAPTURE, SEG_REST } seg_kind;

typedef struct pat_seg {
  seg_kind kind;
  const char *text; /* LITERAL: the segment; CAPTURE: the suffix after '}' ("" when none) */
  size_t len;
  const char *name; /* CAPTURE, REST: the capture's name */
} pat_seg;

struct isv__compiled_route {
  isv__http_route route;
  const isv__frontend *fe;
  void *state; /* fe's (isv__frontend.state_size), shared by its routes; NULL: none */
  unsigned protocol;
  char *pattern; /* owned copy; segs point into it */
  pat_seg segs[ISV__ROUTE_MAX_SEGMENTS];
  size_t n_segs;
  size_t n_caps;
};

/* A front end's per-server state: one block, this header then state_size zeroed bytes. */
struct isv__fe_state {
  struct isv__fe_state *next;
  const isv__frontend *fe;
  _Alignas(max_align_t) unsigned char block[];
};

/* A request path split into percent-decoded segments (in the scratch buffer). */
typedef struct path_segs {
  const char *s[ISV__ROUTE_MAX_SEGMENTS];
  size_t len[ISV__ROUTE_MAX_SEGMENTS];
  size_t n;
  char *spare; /* room after the segments for one rest-of-path, joined when a route wants it */
} path_segs;

/* ---- patterns ---------------------------------------------------------------------------- */

/* Compile c->pattern in place: segments are NUL-terminated within the copy. */
static int compile(isv__compiled_route *c) {
  char *p = c->pattern;
  if (p[0] != '/') return ISV_EINVAL;
  c->n_segs = c->n_caps = 0;
  if (p[1] == '\0') return 0; /* "/" */
  p++;
  for (;;) {
    char *end = strchr(p, '/');
    if (end) *end = '\0';
    if (c->n_segs == ISV__ROUTE_MAX_SEGMENTS) return ISV_EINVAL;
    pat_seg *s = &c->segs[c->n_segs++];
    size_t n = strlen(p);
    if (p[0] == '{') {
      char *close = strchr(p, '}');
      if (close == NULL || close == p + 1 || c->n_caps == ISV__ROUTE_MAX_CAPTURES) return ISV_EINVAL;
      *close = '\0';
      if (p[1] == '*') { /* {*rest}: the last segment, no suffix */
        if (end || close[1] != '\0' || p[2] == '\0') return ISV_EINVAL;
        *s = (pat_seg){SEG_REST, "", 0, p + 2};
      } else {
        if (strchr(close + 1, '{') || strchr(close + 1, '}')) return ISV_EINVAL;
        *s = (pat_seg){SEG_CAPTURE, close + 1, strlen(close + 1), p + 1};
      }
      c->n_caps++;
    } else {
      if (n == 0 || strchr(p, '{') || strchr(p, '}')) return ISV_EINVAL;
      *s = (pat_seg){SEG_LITERAL, p, n, NULL};
    }
    if (end == NULL) break;
    p = end + 1;
    if (*p == '\0') return ISV_EINVAL; /* a trailing '/' in a pattern */
  }
  return 0;
}

static int same_pattern(const isv__compiled_route *a, const isv__compiled_route *b) {
  if (a->n_segs != b->n_segs) return 0;
  for (size_t i = 0; i < a->n_segs; i++) {
    const pat_seg *x = &a->segs[i], *y = &b->segs[i];
    if (x->kind != y->kind || x->len != y->len || memcmp(x->text, y->text, x->len) != 0) return 0;
  }
  return 1;
}

void isv__router_init(isv__router *r, isv__core *core) {
  memset(r, 0, sizeof *r);
  r->core = core;
  isv__buf_init(&r->scratch, core->mem);
  r->by_segs_stale = 1;
}

/* A front end's value on this router (isv__router_set_value), or one of its named values. */
struct isv__fe_value {
  struct isv__fe_value *next;
  const isv__frontend *fe;
  const char *name; /* NULL: the front end's one unnamed value; else in bytes, after the value */
  char value[];
};

static int same_name(const struct isv__fe_value *v, const char *name) {
  return name ? v->name && strcmp(v->name, name) == 0 : v->name == NULL;
}

const char *isv__router_named_value(const isv__router *r, const isv__frontend *fe,
                                    const char *name) {
  for (const struct isv__fe_value *v = r->values; v; v = v->next)
    if (v->fe == fe && same_name(v, name)) return v->value;
  return NULL;
}

const char *isv__router_value(const isv__router *r, const isv__frontend *fe) {
  return isv__router_named_value(r, fe, NULL);
}

int isv__router_set_value(isv__router *r, const isv__frontend *fe, const char *value) {
  return isv__router_set_named_value(r, fe, NULL, value, value ? strlen(value) : 0);
}

int isv__router_set_named_value(isv__router *r, const isv__frontend *fe, const char *name,
                                const char *value, size_t len) {
  struct isv__fe_value **pp = &r->values;
  while (*pp && !((*pp)->fe == fe && same_name(*pp, name))) pp = &(*pp)->next;
  struct isv__fe_value *v = NULL;
  if (value) {
    size_t nn = name ? strlen(name) + 1 : 0;
    if ((v = isv__malloc(r->core->mem, sizeof *v + len + 1 + nn)) == NULL) return ISV_ENOMEM;
    v->fe = fe;
    memcpy(v->value, value, len);
    v->value[len] = '\0';
    v->name = name ? memcpy(v->value + len + 1, name, nn) : NULL;
  }
  if (*pp) { /* the old value goes (its routes went before: they point into it) */
    struct isv__fe_value *old = *pp;
    *pp = old->next;
    isv__free(old);
  }
  if (v) {
    v->next = r->values;
    r->values = v;
  }
  return 0;
}

void isv__router_free(isv__router *r) {
  while (r->values)
    isv__router_set_named_value(r, r->values->fe, r->values->name, NULL, 0);
  for (struct isv__fe_state *s = r->states, *next; s; s = next) {
    next = s->next;
    isv__free(s);
  }
  for (size_t i = 0; i < r->n_routes; i++) isv__free(r->routes[i].pattern);
  isv__free(r->routes);
  isv__free(r->prefixes);
  isv__free(r->by_segs);
  isv__buf_free(&r->scratch);
  memset(r, 0, sizeof *r);
}

/* fe's state, made zeroed at its first route; NULL when it asks for none or out of memory. */
static void *fe_state(isv__router *r, const isv__frontend *fe) {
  for (struct isv__fe_state *s = r->states; s; s = s->next)
    if (s->fe == fe) return s->block;
  struct isv__fe_state *s = isv__calloc(r->core->mem, 1, sizeof *s + fe->state_size);
  if (s == NULL) return NULL;
  s->fe = fe;
  s->next = r->states;
  r->states = s;
  return s->block;
}

int isv__router_add(isv__router *r, const isv__frontend *fe, const isv__http_route *route) {
  if (route == NULL || route->pattern == NULL || route->handler == NULL || route->methods == 0)
    return ISV_EINVAL;
  isv__compiled_route c = {.route = *route, .fe = fe};
  if (fe && fe->state_size && (c.state = fe_state(r, fe)) == NULL) return ISV_ENOMEM;
  if ((c.pattern = isv__strdup(r->core->mem, route->pattern)) == NULL) return ISV_ENOMEM;
  int rc = compile(&c);
  for (size_t i = 0; rc == 0 && i < r->n_routes; i++)
    if ((r->routes[i].route.methods & route->methods) && same_pattern(&r->routes[i], &c))
      rc = ISV_EEXIST;
  if (rc == 0 && r->n_routes == r->cap_routes) {
    size_t cap = r->cap_routes ? 2 * r->cap_routes : 16;
    isv__compiled_route *n = isv__realloc(r->core->mem, r->routes, cap * sizeof *n);
    if (n == NULL) rc = ISV_ENOMEM;
    else {
      r->routes = n;
      r->cap_routes = cap;
    }
  }
  int known = 0; /* fe already listed for its path prefix */
  for (size_t i = 0; i < r->n_prefixes; i++) known |= r->prefixes[i] == fe;
  if (rc == 0 && fe && fe->path_prefix && !known) {
    const isv__frontend **p = isv__realloc(r->core->mem, r->prefixes, (r->n_prefixes + 1) * sizeof *p);
    if (p == NULL) rc = ISV_ENOMEM;
    else {
      r->prefixes = p;
      r->prefixes[r->n_prefixes++] = fe;
    }
  }
  if (rc != 0) {
    isv__free(c.pattern);
    return rc;
  }
  c.protocol = fe && fe->http_label ? isv__core_protocol(r->core, fe->http_label) : 0;
  /* segs point into c.pattern, which moves with the struct: it is a separate allocation */
  r->routes[r->n_routes++] = c;
  r->by_segs_stale = 1;
  return 0;
}

/* Could segment `seg` of some path (the prefix's segment i) match s? */
static int seg_can_match(const pat_seg *s, const char *seg, size_t n) {
  if (s->kind == SEG_LITERAL) return s->len == n && isv__bytes_same(s->text, seg, n);
  return n >= s->len && isv__bytes_same(seg + n - s->len, s->text, s->len); /* capture + suffix */
}

int isv__router_overlaps(const isv__router *r, unsigned methods, const char *prefix) {
  isv__compiled_route p = {.pattern = isv__strdup(r->core->mem, prefix)};
  if (p.pattern == NULL) return -1;
  int rc = compile(&p);
  for (size_t i = 0; rc == 0 && i < p.n_segs; i++)
    if (p.segs[i].kind != SEG_LITERAL) rc = -1;
  if (p.n_segs == 0) rc = -1; /* "/" would take every path */
  for (size_t i = 0; rc == 0 && i < r->n_routes; i++) {
    const isv__compiled_route *c = &r->routes[i];
    if (!(c->route.methods & methods)) continue;
    size_t k = 0;
    for (; k < p.n_segs && k < c->n_segs; k++) {
      if (c->segs[k].kind == SEG_REST) break; /* takes anything from here on */
      if (!seg_can_match(&c->segs[k], p.segs[k].text, p.segs[k].len)) break;
    }
    int rest_here = k < c->n_segs && c->segs[k].kind == SEG_REST;
    /* the prefix's segments all match (then c serves the prefix or paths under it), or c
     * takes the rest of any path from a segment the prefix still agrees with */
    if (rest_here || (k == p.n_segs && c->n_segs >= p.n_segs)) rc = 1;
  }
  isv__free(p.pattern);
  return rc;
}

void isv__router_truncate(isv__router *r, size_t n_routes, size_t n_prefixes) {
  for (size_t i = n_routes; i < r->n_routes; i++) isv__free(r->routes[i].pattern);
  if (n_routes < r->n_routes) r->n_routes = n_routes;
  if (n_prefixes < r->n_prefixes) r->n_prefixes = n_prefixes;
  r->by_segs_stale = 1;
}

void isv__router_remove(isv__router *r, const isv__frontend *fe) {
  size_t k = 0;
  for (size_t i = 0; i < r->n_routes; i++) {
    if (r->routes[i].fe == fe) isv__free(r->routes[i].pattern);
    else r->routes[k++] = r->routes[i];
  }
  r->n_routes = k;
  r->by_segs_stale = 1;
  k = 0;
  for (size_t i = 0; i < r->n_prefixes; i++)
    if (r->prefixes[i] != fe) r->prefixes[k++] = r->prefixes[i];
  r->n_prefixes = k;
}

/* ---- matching ---------------------------------------------------------------------------- */

static int hexval(int c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/* Decode and split ex's path into r->scratch. -1 when malformed (a bad escape, an escaped NUL,
 * too many segments, not starting with '/'), -2 when out of memory. */
static int split(isv__router *r, const char *path, size_t len, path_segs *out) {
  r->memo.path_len = 0; /* the scratch space it pointed into is rewritten */
  out->n = 0;
  if (len == 0 || path[0] != '/') return -1;
  /* the segments, each NUL-terminated (<= 2 * len), then joined again for {*rest} (<= len + 1) */
  r->scratch.len = 0;
  char *buf = isv__buf_reserve(&r->scratch, 3 * len + 2);
  if (buf == NULL) return -2;
  if (memchr(path, '%', len) == NULL) { /* most paths: copied whole, each '/' becomes a NUL */
    memcpy(buf, path + 1, len - 1);
    char *s = buf, *e = buf + len - 1;
    *e = '\0';
    for (;;) {
      char *q = s;
      while (q < e && *q != '/') q++;
      if (q == s && q == e) break; /* one trailing slash is ignored (and "/" has no segment) */
      if (out->n == ISV__ROUTE_MAX_SEGMENTS) return -1;
      out->s[out->n] = s;
      out->len[out->n++] = (size_t)(q - s);
      if (q == e) break;
      *q = '\0';
      s = q + 1;
    }
    out->spare = e + 1;
    return 0;
  }
  char *w = buf;
  size_t i = 1;
  while (i <= len) {
    size_t start = i;
    const char *slash = memchr(path + i, '/', len - i);
    i = slash ? (size_t)(slash - path) : len;
    if (i == start && i == len) break; /* one trailing slash is ignored */
    if (out->n == ISV__ROUTE_MAX_SEGMENTS) return -1;
    out->s[out->n] = w;
    for (size_t k = start; k < i; k++) {
      if (path[k] == '%') {
        int h = k + 2 < i ? hexval((unsigned char)path[k + 1]) : -1;
        int l = k + 2 < i ? hexval((unsigned char)path[k + 2]) : -1;
        if (h < 0 || l < 0 || (h | l) == 0) return -1; /* a bad escape, or an embedded NUL */
        *w++ = (char)(h * 16 + l);
        k += 2;
      } else {
        *w++ = path[k];
      }
    }
    out->len[out->n] = (size_t)(w - out->s[out->n]);
    *w++ = '\0';
    out->n++;
    i++;
  }
  out->spare = w;
  return 0;
}

/* The decoded segments from k on joined with '/' (a {*rest} capture), in p's spare room (the
 * scratch buffer holds <= len + 1 more bytes there): made only for a route that captures it. */
static const char *rest_of(path_segs *p, size_t k, size_t *len) {
  char *w = p->spare;
  for (size_t i = k; i < p->n; i++) {
    memcpy(w, p->s[i], p->len[i]);
    w += p->len[i];
    if (i + 1 < p->n) *w++ = '/';
  }
  *w = '\0';
  *len = (size_t)(w - p->spare);
  return p->spare;
}

/* Could route c match a path of n segments? (match()'s first test) */
static int may_match(const isv__compiled_route *c, size_t n) {
  size_t k = c->n_segs;
  return k > 0 && c->segs[k - 1].kind == SEG_REST ? n >= k - 1 : n == k;
}

/* r->by_segs for the routes as they are now; on failure (out of memory) every route is tried. */
static void index_by_segs(isv__router *r) {
  r->by_segs_stale = 0;
  r->memo.path_len = 0; /* its route may have gone, or a route added before it may take its path */
  isv__free(r->by_segs);
  r->by_segs = NULL;
  size_t total = 0;
  for (size_t n = 0; n <= ISV__ROUTE_MAX_SEGMENTS; n++)
    for (size_t i = 0; i < r->n_routes; i++) total += may_match(&r->routes[i], n);
  if ((r->by_segs = isv__malloc(r->core->mem, (total ? total : 1) * sizeof *r->by_segs)) == NULL)
    return;
  uint32_t k = 0;
  for (size_t n = 0; n <= ISV__ROUTE_MAX_SEGMENTS; n++) {
    r->by_segs_at[n] = k;
    for (size_t i = 0; i < r->n_routes; i++)
      if (may_match(&r->routes[i], n)) r->by_segs[k++] = (uint32_t)i;
  }
  r->by_segs_at[ISV__ROUTE_MAX_SEGMENTS + 1] = k;
}

/* Could route c match path p? Its segment count, then its last segment: routes of one length
 * mostly differ there (…/infer, …/ready, …/config after the same /v2/models/{name}). Inline,
 * so that the routes a path is tried against and turned down cost no call; match()'s
 * precondition. */
static inline int may_match_path(const isv__compiled_route *c, const path_segs *p) {
  size_t n = c->n_segs;
  if (!may_match(c, p->n)) return 0;
  return n == 0 || c->segs[n - 1].kind == SEG_REST ||
         seg_can_match(&c->segs[n - 1], p->s[n - 1], p->len[n - 1]);
}

/* Does the route, which may match the path (may_match_path), match it? Fills the captures of q
 * when it does: every segment must match. */
static int match(const isv__compiled_route *c, path_segs *p, isv__http_req *q) {
  size_t n = c->n_segs;
  if (!may_match(c, p->n)) {
    ISV_ASSERT(0, "a route is matched against paths of its own length");
    return 0;
  }
  q->n_caps = 0;
  for (size_t i = 0; i < n; i++) {
    const pat_seg *s = &c->segs[i];
    if (s->kind == SEG_REST) {
      q->cap_name[q->n_caps] = s->name;
      q->cap[q->n_caps] = rest_of(p, i, &q->cap_len[q->n_caps]);
      q->n_caps++;
      return 1;
    }
    if (s->kind == SEG_LITERAL) {
      if (p->len[i] != s->len || !isv__bytes_same(p->s[i], s->text, s->len)) return 0;
      continue;
    }
    /* capture, maybe with a literal suffix that the segment must end with */
    if (p->len[i] < s->len || !isv__bytes_same(p->s[i] + p->len[i] - s->len, s->text, s->len))
      return 0;
    q->cap_name[q->n_caps] = s->name;
    q->cap[q->n_caps] = p->s[i];
    q->cap_len[q->n_caps] = p->len[i] - s->len;
    q->n_caps++;
  }
  return 1;
}

const char *isv__http_capture(const isv__http_req *q, const char *name, size_t *len) {
  for (size_t i = 0; i < q->n_caps; i++)
    if (q->cap_name[i][0] == name[0] && strcmp(q->cap_name[i], name) == 0) {
      if (len) *len = q->cap_len[i];
      return q->cap[i];
    }
  if (len) *len = 0;
  return NULL;
}

static int method_bit(const isv__exchange *ex) {
  return ex->method == ISV__M_HEAD ? ISV__M_GET : (int)ex->method;
}

/* The front end an unmatched path belongs to: the longest path_prefix it starts with. */
static const isv__frontend *owner_by_prefix(const isv__router *r, const char *path, size_t len) {
  const isv__frontend *best = NULL;
  size_t best_len = 0;
  for (size_t i = 0; i < r->n_prefixes; i++) {
    const char *pre = r->prefixes[i]->path_prefix;
    size_t n = strlen(pre);
    if (n > best_len && len >= n && memcmp(path, pre, n) == 0 &&
        (len == n || path[n] == '/' || path[n] == ':' || pre[n - 1] == '/')) {
      best = r->prefixes[i];
      best_len = n;
    }
  }
  return best;
}

void isv__router_error_as(const isv__frontend *fe, isv__exchange *ex, int status,
                          const char *msg, const isv__header *extra, size_t n_extra) {
  if (fe && fe->http_error) fe->http_error(ex, status, msg, extra, n_extra);
  else isv__reply_error_msg(ex, status, msg, extra, n_extra);
}
#define error_as isv__router_error_as

static void method_list(unsigned mask, char *out, size_t cap) {
  static const struct {
    unsigned bit;
    const char *name;
  } names[] = {{ISV__ROUTE_GET, "GET"},
               {ISV__ROUTE_POST, "POST"},
               {ISV__ROUTE_PUT, "PUT"},
               {ISV__ROUTE_DELETE, "DELETE"},
               {1u << ISV__M_OPTIONS, "OPTIONS"}};
  size_t k = 0;
  out[0] = '\0';
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (mask & names[i].bit)
      k += (size_t)snprintf(out + k, cap - k, "%s%s", k ? ", " : "", names[i].name);
}

/* Hand ex to route c's handler with the captures in q. */
static void call_handler(isv__router *r, isv__exchange *ex, const isv__compiled_route *c,
                         isv__http_req *q) {
  q->core = r->core;
  q->ex = ex;
  q->fe = c->fe;
  q->protocol = c->protocol;
  q->router = r;
  q->state = c->state;
  q->data = c->route.data;
  c->route.handler(q);
}

/* Remember that p (ex's path, split) with method `bit` goes to route c with q's captures. */
static void memo_set(isv__router *r, const isv__exchange *ex, unsigned bit,
                     const isv__compiled_route *c, const isv__http_req *q) {
  isv__route_memo *m = &r->memo;
  if (ex->path_len > sizeof m->path) return;
  memcpy(m->path, ex->path, ex->path_len);
  m->path_len = ex->path_len;
  m->method_bit = bit;
  m->route = (uint32_t)(c - r->routes);
  m->n_caps = q->n_caps;
  for (size_t k = 0; k < q->n_caps; k++) {
    m->cap_name[k] = q->cap_name[k];
    m->cap[k] = q->cap[k];
    m->cap_len[k] = q->cap_len[k];
  }
}

/* The remembered route when ex's path and method are the memo's: its captures in q. */
static const isv__compiled_route *memo_get(isv__router *r, const isv__exchange *ex, unsigned bit,
                                           isv__http_req *q) {
  const isv__route_memo *m = &r->memo;
  if (m->path_len == 0 /* empty: an empty path is not its match */ ||
      m->path_len != ex->path_len || m->method_bit != bit || r->by_segs_stale ||
      memcmp(m->path, ex->path, ex->path_len) != 0)
    return NULL;
  q->n_caps = m->n_caps; /* the arrays whole: a few moves, where a loop became three calls */
  memcpy(q->cap_name, m->cap_name, sizeof q->cap_name);
  memcpy(q->cap, m->cap, sizeof q->cap);
  memcpy(q->cap_len, m->cap_len, sizeof q->cap_len);
  return &r->routes[m->route];
}

void isv__router_dispatch(isv__router *r, isv__exchange *ex) {
  unsigned bit = 1u << method_bit(ex), allowed = 0;
  isv__http_req q;
  const isv__compiled_route *c = memo_get(r, ex, bit, &q);
  if (c) {
    call_handler(r, ex, c, &q);
    return;
  }
  path_segs p;
  int rc = split(r, ex->path, ex->path_len, &p);
  if (rc != 0) {
    char msg[300];
    snprintf(msg, sizeof msg, rc == -2 ? "out of memory" : "malformed path '%.200s'", ex->path);
    error_as(owner_by_prefix(r, ex->path, ex->path_len), ex, rc == -2 ? 500 : 400, msg, NULL, 0);
    return;
  }
  const isv__frontend *owner = NULL;
  if (r->by_segs_stale) index_by_segs(r);
  const uint32_t *ids = r->by_segs ? r->by_segs + r->by_segs_at[p.n] : NULL; /* p.n <= MAX */
  size_t n_ids = ids ? r->by_segs_at[p.n + 1] - r->by_segs_at[p.n] : r->n_routes;
  for (size_t k = 0; k < n_ids; k++) {
    c = &r->routes[ids ? ids[k] : k];
    if (!may_match_path(c, &p) || !match(c, &p, &q)) continue;
    if (!(c->route.methods & bit)) {
      allowed |= c->route.methods;
      if (owner == NULL) owner = c->fe;
      continue;
    }
    for (size_t k = 0; k < q.n_caps; k++) /* end a suffixed capture before its suffix */
      if (q.cap[k][q.cap_len[k]] != '\0') ((char *)q.cap[k])[q.cap_len[k]] = '\0';
    memo_set(r, ex, bit, c, &q); /* before the handler, whose own split (an error) empties it */
    call_handler(r, ex, c, &q);
    return;
  }
  char msg[300];
  if (allowed) { /* the path exists, not with this method */
    char list[64];
    method_list(allowed, list, sizeof list);
    snprintf(msg, sizeof msg, "method %.20s is not allowed on this path; use %s", ex->method_name,
             list);
    isv__header allow = {"Allow", 5, list, strlen(list)};
    error_as(owner, ex, 405, msg, &allow, 1);
    return;
  }
  snprintf(msg, sizeof msg, "unknown path '%.200s'", ex->path);
  error_as(owner_by_prefix(r, ex->path, ex->path_len), ex, 404, msg, NULL, 0);
}

const isv__frontend *isv__router_owner(isv__router *r, const isv__exchange *ex) {
  const isv__frontend *fe = NULL;
  path_segs p;
  if (ex->path && split(r, ex->path, ex->path_len, &p) == 0) {
    isv__http_req q;
    for (size_t i = 0; i < r->n_routes && fe == NULL; i++)
      if (may_match_path(&r->routes[i], &p) && match(&r->routes[i], &p, &q)) fe = r->routes[i].fe;
    if (fe == NULL) fe = owner_by_prefix(r, ex->path, ex->path_len);
  }
  return fe;
}

void isv__router_error(isv__router *r, isv__exchange *ex, int http_status, const char *msg,
                       const isv__header *extra, size_t n_extra) {
  error_as(isv__router_owner(r, ex), ex, http_status, msg, extra, n_extra);
}

/* ---- query parameters ---------------------------------------------------------------------- */

/* Percent-decode (and '+' → ' ') s[0..n) into out; -1 when it does not fit or is malformed. */
static int query_decode(const char *s, size_t n, char *out, size_t cap, size_t *len) {
  size_t o = 0;
  for (size_t i = 0; i < n; i++) {
    int c = (unsigned char)s[i];
    if (c == '+') {
      c = ' ';
    } else if (c == '%') {
      if (i + 2 >= n) return -1; /* "%" or "%4" at the end */
      int h = hexval((unsigned char)s[i + 1]), l = hexval((unsigned char)s[i + 2]);
      if (h < 0 || l < 0) return -1;
      c = h * 16 + l;
      i += 2;
    }
    if (o + 1 >= cap) return -1;
    out[o++] = (char)c;
  }
  out[o] = '\0';
  if (len) *len = o;
  return 0;
}

int isv__http_query(const isv__exchange *ex, const char *key, char *out, size_t cap, size_t *len) {
  const char *q = ex->query, *end = ex->query + ex->query_len;
  size_t kl = strlen(key);
  if (cap == 0) return -1;
  while (q < end) {
    const char *amp = memchr(q, '&', (size_t)(end - q));
    if (amp == NULL) amp = end;
    const char *eq = memchr(q, '=', (size_t)(amp - q));
    const char *kend = eq ? eq : amp;
    char kbuf[64];
    size_t klen;
    if ((size_t)(kend - q) < sizeof kbuf &&
        query_decode(q, (size_t)(kend - q), kbuf, sizeof kbuf, &klen) == 0 && klen == kl &&
        memcmp(kbuf, key, kl) == 0) {
      if (eq == NULL) {
        out[0] = '\0';
        if (len) *len = 0;
        return 1;
      }
      return query_decode(eq + 1, (size_t)(amp - eq - 1), out, cap, len) == 0 ? 1 : -1;
    }
    q = amp + 1;
  }
  return 0;
}

int isv__http_query_flag(const isv__exchange *ex, const char *key) {
  char v[8];
  size_t n;
  if (isv__http_query(ex, key, v, sizeof v, &n) != 1) return 0;
  return (n == 4 && strncasecmp(v, "true", 4) == 0) || (n == 1 && v[0] == '1');
}
