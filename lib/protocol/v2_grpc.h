/* The gRPC services: inference.GRPCInferenceService (KServe V2) and grpc.health.v1.Health. */
#ifndef ISV_PROTOCOL_V2_GRPC_H
#define ISV_PROTOCOL_V2_GRPC_H

#include "protocol/layer.h"

#include "core/request.h"
#include "transport/grpc.h"

/* Route a new call by its path; an unknown method finishes with UNIMPLEMENTED. */
void isv__grpc_dispatch(isv__core *core, isv__grpc_call *call);

#endif
