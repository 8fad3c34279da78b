/* TensorFlow Serving REST and AI Platform / Vertex AI predict (tfs_http.c): the front ends are
 * builtin.h's; this is what the server adds on a host's request. */
#ifndef ISV_PROTOCOL_TFS_HTTP_H
#define ISV_PROTOCOL_TFS_HTTP_H

#include "protocol/layer.h"

#include "protocol/router.h"

/* Vertex AI's custom-container routes (isv_server_set_vertex_routes): POST predict answers
 * `model`'s predictions as Vertex's :predict does, GET health 200 while the server is ready
 * (503 otherwise). model must outlive the router. Either path may be NULL. 0, or the router's
 * ISV_EINVAL / ISV_EEXIST / ISV_ENOMEM (nothing added). */
int isv__vertex_add_routes(isv__router *r, const char *model, const char *predict,
                           const char *health);

#endif
