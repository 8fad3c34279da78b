/* What gRPC server reflection may show of a server's schema: the compiled-in descriptors
 * (descriptors.h) of the services this server serves. A front end that is off is not there:
 * its services are not listed and its file is not found — nor the messages only it defines.
 * A file shows when one of its services is served, or when a file that shows imports it.
 * Loop thread (the method table is the server's). */
#ifndef ISV_PROTOCOL_REFLECTION_H
#define ISV_PROTOCOL_REFLECTION_H

#include "protocol/layer.h"

#include <stdint.h>

#include "protocol/descriptors.h"
#include "protocol/grpc_service.h"

/* The files s shows, one bit each (bit i: isv__pb_files[i]; the build keeps them ≤ 64). */
uint64_t isv__reflection_visible(const isv__grpc_services *s);

/* The index of the file named `name` among those shown, or -1. */
int isv__reflection_file(uint64_t visible, const char *name);

/* The index of the file that defines `symbol` — a message or enum (nested ones too), a field
 * or enum value, a served service or a method of one, all fully qualified — among those
 * shown, or -1. *kind
 * (may be NULL): what it is. */
int isv__reflection_symbol(const isv__grpc_services *s, uint64_t visible, const char *symbol,
                           isv__pb_kind *kind);

#endif
