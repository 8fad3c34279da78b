/* grps (PROTOCOLS.md §5, seed 002): the front end (grps_http.c), its REST routes under
 * /grps/v1 (grps_http.c) and its gRPC service grps.protos.v1.GrpsService (grps_grpc.c). The
 * message and its codecs are grps_msg.h; the mapping to requests grps_conv.h; metadata
 * grps_meta.h. */
#ifndef ISV_PROTOCOL_GRPS_H
#define ISV_PROTOCOL_GRPS_H

#include "protocol/layer.h"

#include "protocol/frontend.h"

extern const isv__frontend isv__grps_frontend;

extern const isv__http_route isv__grps_routes[];  /* ends with {0} */
extern const isv__grpc_method isv__grps_methods[]; /* ends with {0} */

#endif
