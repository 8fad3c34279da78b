/* The host's own HTTP routes (isv_server_add_route): a route served by a hidden model version
 * whose backend is the host's handler (custom_http.c says how the answer travels). */
#ifndef ISV_PROTOCOL_CUSTOM_HTTP_H
#define ISV_PROTOCOL_CUSTOM_HTTP_H

#include "protocol/layer.h"

#include "protocol/frontend.h"

/* One route, owned by its hidden model (freed by the model's destroy). */
typedef struct isv__custom_route {
  isv_route_cb handler;
  void *user;
  unsigned methods; /* ISV__ROUTE_* */
  char path[256];   /* the prefix */
  isv_model *model; /* "@route <METHOD> <path>" */
} isv__custom_route;

extern const isv__frontend isv__custom_frontend; /* its routes' error shape and label */

/* The hidden model's infer: calls cr->handler with the request's isv_http_request. */
int isv__custom_infer(isv_request *r, void *user);
/* Serve cr at cr->path and under it. ISV_EEXIST when a route already added could take such a
 * path (isv__router_overlaps), ISV_EINVAL for a path that is not a plain one; nothing added
 * then. */
int isv__custom_add_routes(isv__router *router, const isv__custom_route *cr);

#endif
