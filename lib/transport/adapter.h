/* The host's carriers (include/inferserve.h, "Transport adapters"): a host's own HTTP server
 * and gRPC stack carry isv__exchange and isv__grpc_call objects exactly as http1.c and http2.c
 * do, through the public isv_exchange / isv_grpc_call handles defined here. The transport
 * counts them (n_hosted) so that its close waits for them as for its connections. Loop thread
 * only. */
#ifndef ISV_TRANSPORT_ADAPTER_H
#define ISV_TRANSPORT_ADAPTER_H

#include "transport/layer.h"

#include "transport/transport.h"

/* isv_exchange_new / isv_grpc_call_new once the server checked it is not closing: ISV_EINVAL
 * (a bad argument, *why says which), ISV_ENOMEM. */
int isv__adapter_exchange_new(isv__transport *t, const isv_exchange_carrier *carrier, void *user,
                              const char *method, const char *target, isv_exchange **out,
                              const char **why);
int isv__adapter_call_new(isv__transport *t, const isv_grpc_carrier *carrier, void *user,
                          const char *method, isv_grpc_call **out, const char **why);
/* The transport is closing: every hosted gRPC call that was started hears on_drain. */
void isv__adapter_drain(isv__transport *t);

#endif
