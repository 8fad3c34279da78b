/* Shared by the connection fuzzers: one demo-like server for the whole run, and one connection
 * per input through the memory seam (transport/memconn.h: no socket, no system call — the
 * server's loop still runs its core), half-closed by the client after sending `prefix` + data,
 * and read until the server closes it; once all is quiet, the connection's clock jumps to its
 * next deadline (idle, lingering close) — a connection that is never closed and has none left
 * is a hang: abort.
 *
 * The paths a real connection takes: the data is cut into segments at every ISV_FUZZ_SEP; the
 * harness feeds one segment (as far as the engine reads: the rest waits while it does not),
 * then runs the loop until the server has gone quiet (responses written, deferred completions
 * done) before it feeds the next. So bytes arrive both
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

/* For a target that plays the client itself (fuzz_tls_session: a TLS client in memory): */
typedef struct isv__memconn isv__memconn;
/* A new connection to the harness's server, as accepted (its sndbuf 1 MiB). */
isv__memconn *isv_fuzz_connect(void);
/* One turn of the server's loop, m's finished writes completed; what the server wrote stays for
 * the caller (isv__memconn_take). Whether anything happened, or may still. */
int isv_fuzz_turn(isv__memconn *m);
/* `ms` pass with the client silent: each of m's due times on the way runs (its deadlines,
 * TLS's quiet check), and the clock ends `ms` later. */
void isv_fuzz_wait(isv__memconn *m, uint64_t ms);
/* The client half-closes (if the server has not closed yet); the server's deadlines come until
 * it closes, what it writes meanwhile dropped; then m is freed. A server that never closes is a
 * hang: abort. */
void isv_fuzz_hang_up(isv__memconn *m);

#endif
