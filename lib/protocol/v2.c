/* The KServe V2 front end: REST under /v2 and inference.GRPCInferenceService. */
#include "protocol/v2.h"

const char *const isv__v2_extensions[] = {"classification", "binary_tensor_data", "statistics",
                                          "model_configuration", "system_shared_memory"};
const size_t isv__v2_n_extensions = sizeof isv__v2_extensions / sizeof isv__v2_extensions[0];

const isv__frontend isv__v2_frontend = {
    .name = "kserve_v2",
    .enabled_by_default = 1,
    .path_prefix = "/v2",
    .routes = isv__v2_routes,
    .methods = isv__v2_methods,
    .http_label = "v2_http",
    .grpc_label = "v2_grpc",
};
