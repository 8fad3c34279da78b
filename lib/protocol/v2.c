/* The KServe V2 front end: REST under /v2 and inference.GRPCInferenceService. */
#include "protocol/v2.h"

#include <string.h>

#include "protocol/v2_json.h"

const char *const isv__v2_extensions[] = {"classification", "binary_tensor_data", "statistics",
                                          "model_configuration", "system_shared_memory",
                                          "logging", "trace"};
const size_t isv__v2_n_extensions = sizeof isv__v2_extensions / sizeof isv__v2_extensions[0];

size_t isv__v2_server_extensions(const isv__core *c, const char **out, size_t cap) {
  static const char *const repo[] = {"model_repository", "model_repository(unload_dependents)"};
  size_t n = 0;
  for (size_t i = 0; i < isv__v2_n_extensions && n < cap; i++)
    if ((c->shm->enabled || strcmp(isv__v2_extensions[i], "system_shared_memory") != 0) &&
        (c->opts.trace || strcmp(isv__v2_extensions[i], "trace") != 0))
      out[n++] = isv__v2_extensions[i]; /* shared memory, tracing: when the host enabled it */
  for (size_t i = 0; c->repo && i < 2 && n < cap; i++) out[n++] = repo[i];
  return n;
}

const isv__frontend isv__v2_frontend = {
    .name = "kserve_v2",
    .enabled_by_default = 1,
    .path_prefix = "/v2",
    .routes = isv__v2_routes,
    .methods = isv__v2_methods,
    .http_label = "v2_http",
    .grpc_label = "v2_grpc",
    .state_size = sizeof(isv__v2_memo),
};
