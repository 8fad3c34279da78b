/* Shared by the connection fuzzers: one demo-like server for the whole run, and one
 * socketpair connection per input, adopted by the server, half-closed by the client after
 * sending `prefix` + data, and read until the server closes it (a connection it never closes
 * is a hang: abort).
 *
 * The paths a real connection takes: the data is cut into segments at every ISV_FUZZ_SEP; the
 * harness writes one segment, then runs the loop until the server has gone quiet (responses
 * written, deferred completions done) before it writes the next. So bytes arrive both
 * pipelined behind a request in flight (inside a segment) and after its response (the next
 * segment: llhttp's pause/resume, a stream reused after an answer). Model "d" completes on a
 * later loop turn, so bytes also arrive while a response is pending; "/fuzz/stream" answers
 * streamed (isv__exchange_write, one piece per loop turn, then _end), so they also arrive while
 * a streamed answer is open, and the client's half-close cancels it. */
#ifndef ISV_FUZZ_CONN_HARNESS_H
#define ISV_FUZZ_CONN_HARNESS_H

#include <stddef.h>
#include <stdint.h>

#define ISV_FUZZ_SEP "\xff\xfe\xfd"
#define ISV_FUZZ_SEP_LEN 3

void isv_fuzz_serve(const char *prefix, size_t prefix_len, const uint8_t *data, size_t size);

#endif
