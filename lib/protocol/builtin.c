#include "protocol/builtin.h"

const isv__frontend *const isv__builtin_frontends[] = {
    &isv__v2_frontend,
    &isv__tfs_frontend,
    &isv__vertex_frontend,
    &isv__grps_frontend,
    &isv__openai_frontend,
    &isv__grpc_health_frontend,
    &isv__grpc_reflection_frontend,
    &isv__metrics_frontend,
    NULL,
};
