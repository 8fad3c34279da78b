/* grpc.health.v1.Health/Check (Kubernetes gRPC probes) as a front end of its own.
 *
 * service "" or any served gRPC service ("inference.GRPCInferenceService"): the server's
 * readiness; a model name: that model's (default version's) readiness; anything else:
 * NOT_FOUND, as the health protocol says for an unknown service. */
#include <stdio.h>
#include <string.h>

#include "codec/nanopb_glue.h"
#include "health.pb.h"
#include "protocol/builtin.h"
#include "core/queries.h"

enum { SERVING = 1, NOT_SERVING = 2 };

static int check(isv__grpc_unary *u) {
  char service[256];
  grpc_health_v1_HealthCheckRequest req = grpc_health_v1_HealthCheckRequest_init_zero;
  isv__nanopb_cstr_dst dst = {service, sizeof service};
  isv__nanopb_read_cstr(&req.service, &dst);
  pb_istream_t in = pb_istream_from_buffer(u->msg ? u->msg : (const pb_byte_t *)"", u->len);
  if (!pb_decode(&in, grpc_health_v1_HealthCheckRequest_fields, &req)) {
    strcpy(u->err, "malformed HealthCheckRequest");
    return ISV_EBADREQ;
  }
  int status;
  if (service[0] == '\0' || isv__grpc_services_has(u->services, service)) {
    status = isv__core_ready(u->core) ? SERVING : NOT_SERVING;
  } else {
    isv_model *m;
    isv__model_spec spec = {service, strlen(service), NULL, 0, NULL, 0}; /* its default version */
    if (isv__core_resolve(u->core, &spec, &m) != ISV__FOUND) {
      snprintf(u->err, sizeof u->err, "unknown service or model '%.200s'", service);
      return ISV_ENOTFOUND;
    }
    status = isv__core_model_ready(u->core, m) ? SERVING : NOT_SERVING;
  }
  grpc_health_v1_HealthCheckResponse resp = grpc_health_v1_HealthCheckResponse_init_zero;
  resp.status = (grpc_health_v1_HealthCheckResponse_ServingStatus)status;
  return isv__nanopb_encode(grpc_health_v1_HealthCheckResponse_fields, &resp, u->out);
}

static const isv__grpc_method methods[] = {
    {"/grpc.health.v1.Health/Check", ISV__RPC_UNARY, check, NULL, NULL, NULL},
    {0},
};

const isv__frontend isv__grpc_health_frontend = {
    .name = "grpc_health",
    .enabled_by_default = 1,
    .methods = methods,
    .grpc_label = "grpc_health",
};
