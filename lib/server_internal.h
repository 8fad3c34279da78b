/* What the server offers inside the library and to its tests, beyond the public API. */
#ifndef ISV_SERVER_INTERNAL_H
#define ISV_SERVER_INTERNAL_H

#include "inferserve.h"
#include "protocol/frontend.h"
#include "transport/transport.h"

/* Serve one more front end: its routes and gRPC methods join the server's (the descriptor is
 * not copied: it must outlive the server). All or nothing: ISV_EEXIST when one of its routes
 * or methods is already served (nothing is added), ISV_EINVAL for a malformed descriptor.
 * Loop thread. */
int isv__server_add_frontend(isv_server *srv, const isv__frontend *fe);

/* The server's transport: for a harness that brings it connections through another seam than
 * a socket (fuzz/conn_harness.c, an isv__memconn). Loop thread. */
isv__transport *isv__server_transport(isv_server *srv);

#endif
