/* KServe V2 / Open Inference Protocol: the front end (v2.c), its REST routes (v2_http.c) and
 * gRPC methods (v2_grpc.c). The codecs are v2_json.h and v2_pb.h. */
#ifndef ISV_PROTOCOL_V2_H
#define ISV_PROTOCOL_V2_H

#include "protocol/layer.h"

#include "protocol/frontend.h"

extern const isv__frontend isv__v2_frontend;

extern const isv__http_route isv__v2_routes[];  /* ends with {0} */
extern const isv__grpc_method isv__v2_methods[]; /* ends with {0} */

/* The extensions server metadata lists, on REST and gRPC alike: only what is implemented. */
extern const char *const isv__v2_extensions[];
extern const size_t isv__v2_n_extensions;
/* This server's: those ("system_shared_memory" only when the host enabled it:
 * isv_options_set_shared_memory), and "model_repository" (with its "(unload_dependents)"
 * component) when the host set repository callbacks (isv_server_set_repository). Fills out
 * (cap >= n + 2). */
size_t isv__v2_server_extensions(const isv__core *c, const char **out, size_t cap);

#endif
