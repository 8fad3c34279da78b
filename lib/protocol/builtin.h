/* The front ends built into the library. The server adds the routes and gRPC methods of every
 * one its options enable (by name), in this order; a new protocol is its own files plus one
 * line in builtin.c. */
#ifndef ISV_PROTOCOL_BUILTIN_H
#define ISV_PROTOCOL_BUILTIN_H

#include "protocol/layer.h"

#include "protocol/frontend.h"

extern const isv__frontend isv__v2_frontend;          /* v2.c: KServe V2, REST and gRPC */
extern const isv__frontend isv__tfs_frontend;         /* tfs_http.c: TensorFlow Serving, REST and gRPC */
extern const isv__frontend isv__vertex_frontend;      /* tfs_http.c: AI Platform / Vertex AI */
extern const isv__frontend isv__grps_frontend;        /* grps_http.c: grps, REST and gRPC */
extern const isv__frontend isv__openai_frontend;      /* openai_http.c: OpenAI REST */
extern const isv__frontend isv__grpc_health_frontend; /* health_grpc.c: grpc.health.v1 */
extern const isv__frontend isv__grpc_reflection_frontend; /* reflection_grpc.c: reflection */
extern const isv__frontend isv__metrics_frontend;     /* metrics_http.c: GET /metrics */

/* All of the above, NULL-terminated. */
extern const isv__frontend *const isv__builtin_frontends[];

#endif
