/* A protocol front end, described as data: the HTTP routes and gRPC methods it serves, the name
 * that enables it, its protocol labels and the shape of its HTTP errors. The server builds its
 * router and its gRPC method table from the descriptors of the front ends it enables; nothing
 * else in the library names a protocol. A host's settings for a front end reach it through
 * its configure hook. docs/ARCHITECTURE.md walks through adding one. */
#ifndef ISV_PROTOCOL_FRONTEND_H
#define ISV_PROTOCOL_FRONTEND_H

#include "protocol/layer.h"

#include "protocol/grpc_service.h"
#include "protocol/router.h"

/* An HTTP error in the front end's own shape (V2 and TF Serving: {"error": msg}; grps: a
 * GrpsMessage status). `status` is the HTTP status; extra headers are copied. */
typedef void (*isv__http_error_fn)(isv__exchange *ex, int status, const char *msg,
                                   const isv__header *extra, size_t n_extra);

struct isv__frontend {
  const char *name;        /* isv_options_set_protocol(o, name, on) */
  int enabled_by_default;
  const char *path_prefix; /* unmatched paths under it get this front end's error shape */
  const isv__http_route *routes;   /* ends with a {0} entry; may be NULL */
  const isv__grpc_method *methods; /* ends with a {0} entry; may be NULL */
  isv__http_error_fn http_error; /* NULL: {"error": msg} (isv__reply_error_msg) */
  const char *http_label;        /* metrics label of requests made by its routes */
  const char *grpc_label;        /* ... and by its gRPC methods */
  /* A host's setting, made at run time through a public call of the front end's own (Vertex:
   * isv_server_set_vertex_routes(model, predict route, health route) → args[0..2]). It may add
   * routes to r and keep what they need there (isv__router_set_value). 0, or an ISV_E* code
   * with why set (the server's last error). NULL: the front end takes no settings. */
  int (*configure)(isv__router *r, const char *const *args, size_t n_args, char *why,
                   size_t cap);
  /* Bytes the front end keeps per server for its loop thread (V2: what its JSON clients
   * repeat, protocol/v2_json.h's isv__v2_memo): zeroed, made with its first route, freed with
   * the router; its route handlers get them as q->state. 0: none. */
  size_t state_size;
};

#endif
