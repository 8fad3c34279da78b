/* Shared by the connection fuzzers: one demo-like server for the whole run, and one
 * socketpair connection per input, adopted by the server, half-closed by the client after
 * sending `prefix` + data, and read until the server closes it (a connection it never closes
 * is a hang: abort). */
#ifndef ISV_FUZZ_CONN_HARNESS_H
#define ISV_FUZZ_CONN_HARNESS_H

#include <stddef.h>
#include <stdint.h>

void isv_fuzz_serve(const char *prefix, size_t prefix_len, const uint8_t *data, size_t size);

#endif
