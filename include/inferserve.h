/** @file inferserve.h
 * libinferserve — an embeddable inference server on the host's libuv loop.
 *
 * The host links libinferserve, registers its models as C callbacks, and attaches the library
 * to its OWN uv_loop_t. The library then serves the models over KServe V2 (REST and gRPC,
 * with Triton's binary-tensor and classification extensions) on the host's sockets.
 *
 * ---- Conventions: every name and rule in this header follows them ----------------------------
 *
 * Names.
 *  - Everything public is isv_ (functions, types) or ISV_ (constants, macros); isv__ and ISV__
 *    are the library's own.
 *  - A function is `isv_<object>_<verb>[_<noun>]`, acting on its first argument, an `isv_<object> *`
 *    (isv_server_listen, isv_model_config_add_input). One shortening: an isv_http_request's
 *    functions are isv_http_*.
 *  - One meaning per verb:
 *      new / free      make an object / let go of it (Ownership, below)
 *      add / remove    put an element into a collection the object holds / take it out; append
 *                      the next piece of a stream (a body, a gRPC message)
 *      set / (noun)    write a property / read it: isv_X_set_Y(x, v) and isv_X_Y(x); a reader
 *                      has no get_ but where the bare noun is a type's name (isv_auth_get_stage)
 *      alloc           the library allocates memory the caller FILLS, owned by the object
 *                      (isv_request_alloc, isv_request_alloc_output) — never a read
 *      (noun), _at, _count
 *                      read what the object holds by name, by position, how many
 *                      (isv_request_input / _input_at / _input_count; isv_request_output /
 *                      _output_at / _output_count for the outputs of a response)
 *      is_             a yes/no question (isv_server_is_ready, isv_request_is_cancelled)
 *      on_             a callback run ONCE when something happens (isv_request_on_writable);
 *                      `set_<what>_cb` installs one that stays (isv_request_set_response_cb)
 *      cancel          ask work in flight to stop (isv_request_cancel); it frees nothing
 *      complete        answer something handed to the host, once (Ownership, below)
 *  - Units are a name's last word: _ms, _us, _bytes; a max_ option bounds, a min_ one floors.
 *  - Constants are ISV_ + their enum's name without isv_ and without a generic last word
 *    (_mode, _level, _state, _reason...) + the value: isv_exec_mode -> ISV_EXEC_POOL,
 *    isv_sequence_end_reason -> ISV_SEQUENCE_END_IDLE; the flags of one field are
 *    `ISV_<field>_FLAG_<name>` (ISV_SEQUENCE_FLAG_START). Datatypes keep the protocols' names
 *    (ISV_FP32, ISV_BYTES).
 *  - Callback types are `isv_<what>_cb` (and isv_destructor, after sqlite's). A callback about an
 *    object receives the object first and
 *    the host's pointer last; one about no object (the log, the access log, a backend's
 *    model-wide calls, the repository's) receives the host's pointer first.
 *
 * Errors.
 *  - Every function that can fail returns 0 or a negative ISV_E* code; nothing returns -errno or
 *    a UV_E* code, and the codes (-1001 and below) never collide with them. Codes are never
 *    renumbered nor reused. A code is named for the condition, with errno's name where errno
 *    has one meaning it (ISV_EINVAL, ISV_ENOMEM, ISV_EAGAIN, ISV_ECANCELED) and a word of its
 *    own otherwise (ISV_EDEADLINE: the request's deadline passed, 504; ISV_EREQTIMEOUT: the
 *    client was too slow sending it, 408).
 *  - isv_strerror() and isv_err_name() describe a code; ISV_ERRNO_MAP is the one table of HTTP
 *    and gRPC statuses every front end answers with. The detail of a failure is the object's:
 *    isv_server_last_error, a request's error message.
 *  - Misuse is refused, never ignored: ISV_EINVAL (an argument), ISV_ESTATE (the object's
 *    state: closing, completed, already set), ISV_ETHREAD (the wrong thread). A refused or
 *    failed call changes nothing and never fires its callback.
 *
 * Ownership: how every object begins and ends.
 *  - Objects are opaque, made by int isv_X_new(..., isv_X **out): 0 and *out, or a code and
 *    *out NULL. Options are set through setters, so a new feature never changes a layout;
 *    structs that ARE public (isv_backend) start with struct_size.
 *  - An object ends by exactly one of three verbs, the one its kind of ownership calls for:
 *      isv_X_free(x)      the caller lets go of x — one it made, or one the library handed it
 *                         to keep (a response in its callback, an isv_piece). Immediate, NULL
 *                         is a no-op; work the caller started through x is cancelled, and
 *                         what the library still uses it keeps until it is done.
 *      isv_X_close(x, cb) x has work on the loop (a server): it ends asynchronously, drained,
 *                         and cb runs on the loop thread once it is gone (as uv_close).
 *      isv_X_complete(x, status, message)
 *                         x was handed to the host to answer (a request in a backend, an
 *                         authorization, a repository operation): exactly once, from any
 *                         thread; afterwards x is the library's and every setter on it answers
 *                         ISV_ESTATE, changing nothing (a request's outputs and response
 *                         parameters may be being encoded).
 *  - Memory handed to the library follows sqlite's contract: ISV_STATIC (the caller keeps it
 *    alive and unchanged until the object is done with it), ISV_TRANSIENT (copied before the
 *    call returns), or a destructor (the library owns it and calls it when done — also when
 *    the call fails).
 *
 * Threads.
 *  - Every function says which thread may call it. "Loop thread": the thread that runs the
 *    server's uv_loop_t (the one that called isv_server_new); called from another, a server
 *    call is refused with ISV_ETHREAD and does nothing (not even isv_server_last_error
 *    changes: it is the loop's). "Any thread": any, one thread at a time per object (a request
 *    is touched by the thread running its backend, or completing it).
 *  - Callbacks run on the loop thread unless they say otherwise, and must not block it.
 *    ISV_EXEC_POOL backends run on the server's own worker threads, never on libuv's pool
 *    (which the host's fs and DNS work need): see isv_options_set_worker_threads.
 *  - No global state: servers on different loops in one process are independent (or share
 *    their models on purpose: isv_group).
 *  - Like any libuv program that writes to sockets, the host must ignore SIGPIPE
 *    (signal(SIGPIPE, SIG_IGN)): a client that disconnects mid-response must not kill it.
 */
#ifndef INFERSERVE_H
#define INFERSERVE_H

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__) || defined(__clang__)
#define ISV_EXTERN __attribute__((visibility("default")))
#else
#define ISV_EXTERN
#endif

/** The version of this header: MAJOR (docs/versioning.md says what 0.x promises). */
#define ISV_VERSION_MAJOR 0
/** The version of this header: MINOR. */
#define ISV_VERSION_MINOR 1
/** The version of this header: PATCH. */
#define ISV_VERSION_PATCH 0
/** The version of this header as one number, (MAJOR << 16) | (MINOR << 8) | PATCH: compare it
 * with isv_version_hex(), the library's. */
#define ISV_VERSION_HEX ((ISV_VERSION_MAJOR << 16) | (ISV_VERSION_MINOR << 8) | ISV_VERSION_PATCH)

/** "0.1.0" and ISV_VERSION_HEX of the library actually loaded (not of the header compiled
 * against). Any thread.
 * @return "MAJOR.MINOR.PATCH" of the library loaded: a static string
 */
ISV_EXTERN const char *isv_version(void);
/** ISV_VERSION_HEX of the library actually loaded (not of the header compiled against), to compare
 * with the macro: see isv_version(). Any thread.
 * @return (MAJOR << 16) | (MINOR << 8) | PATCH of the library loaded
 */
ISV_EXTERN unsigned isv_version_hex(void);

/* ---------------------------------------------------------------------------------------------
 * Errors. XX(name, value, http status, gRPC status code, message).
 * The HTTP and gRPC columns are the one mapping table every frontend uses.
 * ------------------------------------------------------------------------------------------- */
/** The table of error codes: XX(name, value, HTTP status, gRPC status code, message) per code.
 * isv_errno, isv_strerror(), isv_err_http_status() and isv_err_grpc_status() are made from it. */
#define ISV_ERRNO_MAP(XX)                                                                          \
  XX(EINVAL, -1001, 400, 3, "invalid argument")                                                    \
  XX(ENOMEM, -1002, 500, 8, "out of memory")                                                       \
  XX(EBADREQ, -1003, 400, 3, "bad request")                                                        \
  XX(ENOTFOUND, -1004, 404, 5, "not found")                                                        \
  XX(EMETHOD, -1005, 405, 12, "method not allowed")                                                \
  XX(ETOOBIG, -1006, 413, 8, "request too large")                                                  \
  XX(EHDRTOOBIG, -1007, 431, 8, "request header too large")                                        \
  XX(EUNAVAIL, -1008, 503, 14, "unavailable")                                                      \
  XX(EOVERLOAD, -1009, 429, 14, "overloaded")                                                      \
  XX(EBACKEND, -1010, 500, 13, "backend failure")                                                  \
  XX(EINTERNAL, -1011, 500, 13, "internal error")                                                  \
  XX(EUNIMPL, -1012, 501, 12, "unimplemented")                                                     \
  XX(EDEADLINE, -1013, 504, 4, "deadline exceeded")                                                \
  XX(ECANCELED, -1014, 499, 1, "cancelled")                                                        \
  XX(EEXIST, -1015, 409, 6, "already exists")                                                      \
  XX(ESTATE, -1016, 409, 9, "operation not allowed in the current state")                          \
  XX(EMEDIATYPE, -1017, 415, 3, "unsupported media type")                                          \
  XX(EIO, -1018, 500, 13, "i/o error")                                                             \
  XX(EREQTIMEOUT, -1019, 408, 4, "request timeout")                                               \
  XX(EUNAUTH, -1020, 401, 16, "unauthenticated")                                                   \
  XX(EFORBIDDEN, -1021, 403, 7, "permission denied")                                               \
  XX(ETOOMANY, -1022, 429, 8, "too many requests in flight for this client")               \
  XX(EAGAIN, -1023, 503, 14, "the stream's send queue is full: try again when it drains")          \
  XX(ETHREAD, -1024, 500, 13, "called from a thread other than the server's loop thread")

/** The error codes: ISV_OK (0) and every ISV_E* code of ISV_ERRNO_MAP (-1001 and below). */
typedef enum {
#define ISV__ERR_ENUM(name, val, http, grpc, msg) ISV_##name = (val),
  ISV_ERRNO_MAP(ISV__ERR_ENUM)
#undef ISV__ERR_ENUM
  ISV_OK = 0
} isv_errno;

/** The message ("out of memory") and the name ("ENOMEM") of a code: static strings; unknown
 * codes give "unknown error" / "UNKNOWN". Any thread.
 * @param err an ISV_E* code (any int is accepted)
 * @return the code's message ("out of memory"), a static string; "unknown error" for an unknown
 *         code
 */
ISV_EXTERN const char *isv_strerror(int err);
/** The name ("ENOMEM") of a code, without its ISV_ prefix: a static string (see isv_strerror()).
 * Any thread.
 * @param err an ISV_E* code (any int is accepted)
 * @return the code's name, a static string; "UNKNOWN" for an unknown code
 */
ISV_EXTERN const char *isv_err_name(int err);
/** The HTTP status / gRPC status code every front end answers for err (200 / 0 for ISV_OK; 500
 * / 2 UNKNOWN for a code that is not an ISV_E* code). Any thread.
 * @param err an ISV_E* code, or ISV_OK
 * @return the HTTP status of err's row of ISV_ERRNO_MAP (200 for ISV_OK, 500 for an unknown code)
 */
ISV_EXTERN int isv_err_http_status(int err);
/** The gRPC status code every front end answers for err (0 OK for ISV_OK; 2 UNKNOWN for a code that
 * is not an ISV_E* code): see isv_err_http_status(). Any thread.
 * @param err an ISV_E* code, or ISV_OK
 * @return the gRPC status code of err's row of ISV_ERRNO_MAP
 */
ISV_EXTERN int isv_err_grpc_status(int err);

/* ---------------------------------------------------------------------------------------------
 * Datatypes
 * ------------------------------------------------------------------------------------------- */
/** A tensor's element type, named as the protocols name it (KServe V2). */
typedef enum {
  ISV_TYPE_INVALID = 0, /**< not a datatype (an unknown name) */
  ISV_BOOL,
  ISV_UINT8,
  ISV_UINT16,
  ISV_UINT32,
  ISV_UINT64,
  ISV_INT8,
  ISV_INT16,
  ISV_INT32,
  ISV_INT64,
  ISV_FP16, /**< IEEE binary16 bits in a uint16_t */
  ISV_BF16, /**< bfloat16 bits in a uint16_t */
  ISV_FP32,
  ISV_FP64,
  ISV_BYTES /**< elements are isv_bytes */
} isv_datatype;

/** One BYTES element. This layout is fixed forever (like uv_buf_t). */
typedef struct isv_bytes {
  const char *ptr; /**< the element's bytes (not NUL-terminated) */
  size_t len;      /**< how many */
} isv_bytes;

/** Element size in bytes (sizeof(isv_bytes) for BYTES), 0 for an invalid type. Any thread.
 * @param dt a datatype
 * @return the element size in bytes, 0 for an invalid type
 */
ISV_EXTERN size_t isv_datatype_size(isv_datatype dt);
/** "INT32", ... (the KServe V2 name); NULL for an invalid type. Any thread.
 * @param dt a datatype
 * @return its KServe V2 name (a static string), NULL for an invalid type
 */
ISV_EXTERN const char *isv_datatype_name(isv_datatype dt);
/** Parse a V2 name ("FP32"); ISV_TYPE_INVALID when unknown. Case-sensitive. Any thread.
 * @param name the name's bytes (need not be NUL-terminated)
 * @param len the name's length in bytes
 * @return the datatype, or ISV_TYPE_INVALID when the name is unknown
 */
ISV_EXTERN isv_datatype isv_datatype_from_name(const char *name, size_t len);

/* ---------------------------------------------------------------------------------------------
 * Buffers handed to the library (sqlite's contract)
 *  ISV_STATIC:    the caller keeps the memory alive and unchanged until the library is done
 *                 with it (for a request: until the request is freed — a backend may hand an
 *                 input back as an output, see isv_request_set_output).
 *  ISV_TRANSIENT: the library copies the memory before the call returns.
 *  a destructor:  the library owns the memory and calls the destructor when done — even when
 *                 the call fails.
 * ------------------------------------------------------------------------------------------- */
/** Frees memory handed to the library (called with the memory's address). */
typedef void (*isv_destructor)(void *p);
/** The caller keeps the memory alive and unchanged until the object is done with it. */
#define ISV_STATIC ((isv_destructor)0)
/** The library copies the memory before the call returns. */
#define ISV_TRANSIENT ((isv_destructor)-1)

/* ---------------------------------------------------------------------------------------------
 * Options (copied by isv_server_new; free them afterwards). An isv_options belongs to its
 * creator: any thread, one at a time. The setters return 0, or ISV_EINVAL for a value out of
 * range (the option keeps its previous value).
 * ------------------------------------------------------------------------------------------- */
/** A server's options, copied by isv_server_new() (the setters below). */
typedef struct isv_options isv_options;

/** Options holding every default. 0, or ISV_EINVAL (out NULL) / ISV_ENOMEM.
 * Any thread (the options' owner, one at a time).
 * @param out receives the new options (NULL on failure); free them with isv_options_free()
 * @return 0, or ISV_EINVAL (out NULL) / ISV_ENOMEM
 */
ISV_EXTERN int isv_options_new(isv_options **out);
/** Free options made by isv_options_new(); servers made with them keep their own copy. NULL is a
 * no-op. Any thread (the options' owner).
 * @param o the options, or NULL
 */
ISV_EXTERN void isv_options_free(isv_options *o);

/* ---- Limits on one request: what a client may send -------------------------------------- */
/** Largest request body (HTTP 413 beyond) and largest gRPC message (RESOURCE_EXHAUSTED beyond,
 * checked from the length prefix before anything is allocated). Default 65 MiB: a 64 MiB
 * tensor (binary, raw contents) with the JSON header or message fields that describe it.
 * Any thread (the options' owner, one at a time).
 * @param o the options
 * @param n the largest body or message in bytes (> 0)
 * @return 0, or ISV_EINVAL (o NULL, n 0)
 */
ISV_EXTERN int isv_options_set_max_body_bytes(isv_options *o, size_t n);
/** Largest request line + headers (HTTP/1.1) or header block (HTTP/2) accepted (431 beyond; a
 * gRPC call: a trailers-only RESOURCE_EXHAUSTED). Default 64 KiB.
 * Any thread (the options' owner, one at a time).
 * @param o the options
 * @param n the largest request head in bytes (at least 64)
 * @return 0, or ISV_EINVAL (o NULL, n under 64)
 */
ISV_EXTERN int isv_options_set_max_header_bytes(isv_options *o, size_t n);
/** Nesting depth allowed in JSON request bodies. Default 64.
 * Any thread (the options' owner, one at a time).
 * @param o the options
 * @param n the deepest nesting of arrays and objects accepted (1 to 1024)
 * @return 0, or ISV_EINVAL (o NULL, n out of range)
 */
ISV_EXTERN int isv_options_set_max_json_depth(isv_options *o, unsigned n);
/** Inputs, requested outputs and parameters one request may carry, each (400 beyond, on every
 * protocol and in process): a body of a million tiny inputs would hold the loop and memory
 * long before validation could refuse it. Default 1024.
 * Any thread (the options' owner, one at a time).
 * @param o the options
 * @param n inputs, requested outputs and parameters a request may carry, each (> 0)
 * @return 0, or ISV_EINVAL (o NULL, n 0)
 */
ISV_EXTERN int isv_options_set_max_tensors(isv_options *o, unsigned n);

/* ---- Connections and their timeouts ----------------------------------------------------- */
/** Connections open at once. At the limit, the connection without a request in flight that has
 * been so the longest is closed to make room — idle between keep-alive requests, or one that
 * never completed a request: silent since it connected, still sending a request's head, in
 * its TLS handshake or HTTP/2 preface — so that clients holding connections without asking
 * anything cannot lock new ones out before their timeouts. A connection whose request is being
 * received (its head complete), processed or answered is never closed for this. When every
 * connection has a request in flight, new ones are accepted and closed at once (logged once
 * per episode). Default 10000.
 * Any thread (the options' owner, one at a time).
 * @param o the options
 * @param n connections open at once (> 0)
 * @return 0, or ISV_EINVAL (o NULL, n 0)
 */
ISV_EXTERN int isv_options_set_max_connections(isv_options *o, unsigned n);
/** A connection with no request in progress is closed after this long. Default 60000 ms.
 * Any thread (the options' owner, one at a time).
 * @param o the options
 * @param ms how long an idle connection stays open, in milliseconds (> 0)
 * @return 0, or ISV_EINVAL (o NULL, ms 0)
 */
ISV_EXTERN int isv_options_set_idle_timeout_ms(isv_options *o, uint64_t ms);
/** A request's line and headers must arrive within this long of its first byte (408 beyond,
 * against slow-header attacks); the body must then keep arriving within the same bound
 * between reads — on HTTP/2 too, per REST stream (408, then RST_STREAM). gRPC streams may
 * idle (streaming calls do); grpc-timeout bounds them. Default 30000 ms.
 * Any thread (the options' owner, one at a time).
 * @param o the options
 * @param ms the bound on a request head's arrival and on a body's pauses, in milliseconds (> 0)
 * @return 0, or ISV_EINVAL (o NULL, ms 0)
 */
ISV_EXTERN int isv_options_set_header_timeout_ms(isv_options *o, uint64_t ms);
/** A request body (HTTP/1.1, REST over h2c) may take grace_ms plus one second per bytes_per_s
 * received, or it is answered 408 (Apache mod_reqtimeout's MinRate): one byte every 20 s no
 * longer holds a connection and its buffer forever. The bound is a deadline, not only a check
 * when bytes arrive: a body that stops altogether is answered 408 the moment its allowance is
 * spent (from its headers: grace_ms, plus one second per bytes_per_s received), not a header
 * timeout later. 0 bytes_per_s: no minimum. Default 1024 bytes/s after a grace of 10000 ms.
 * Any thread (the options' owner, one at a time).
 * @param o the options
 * @param bytes_per_s the least average rate of a body, in bytes per second (0: no minimum)
 * @param grace_ms the time a body gets before the rate applies, in milliseconds
 * @return 0, or ISV_EINVAL (o NULL)
 */
ISV_EXTERN int isv_options_set_min_body_rate(isv_options *o, size_t bytes_per_s,
                                             uint64_t grace_ms);
/** A response that makes no progress for this long — the client stopped reading, or keeps an
 * HTTP/2 window at 0 — is dropped with its memory: the connection is reset (a TCP RST, so that
 * the kernel drops the bytes queued for the client too, as nginx's reset_timedout_connection;
 * the stream is reset on HTTP/2 when only it is stuck). Default 30000 ms.
 * Any thread (the options' owner, one at a time).
 * @param o the options
 * @param ms how long a response may make no progress, in milliseconds (> 0)
 * @return 0, or ISV_EINVAL (o NULL, ms 0)
 */
ISV_EXTERN int isv_options_set_send_timeout_ms(isv_options *o, uint64_t ms);
/** Listen with SO_REUSEPORT: several servers — one per loop, each in its thread — may listen on
 * the same address and port, and the kernel spreads the connections over them (the demo's
 * --threads). Servers made with one group (isv_options_set_group) share their models; others
 * keep their own. Default off.
 * @param o the options
 * @param on nonzero to listen with SO_REUSEPORT
 * @return 0, or ISV_EINVAL (o NULL)
 */
ISV_EXTERN int isv_options_set_reuse_port(isv_options *o, int on);

/* ---- Memory: bytes received, queued and cached, and the allocator ----------------------- */
/** Request bytes the server buffers while they arrive, all connections together: a body or a
 * gRPC message reserves its size (announced, or as it grows) until it is complete; a
 * compressed one's decoded bytes (Content-Encoding, grpc-encoding) are charged too, as they
 * come out of the decoder, and held until the request is answered. Beyond it, a new one is
 * refused (HTTP 503, gRPC UNAVAILABLE: retry later) instead of memory growing with the number
 * of slow uploads or zip bombs. One max_body_bytes request always fits. Default 256 MiB.
 * Any thread (the options' owner, one at a time).
 * @param o the options
 * @param n request bytes buffered while arriving, all connections together (> 0)
 * @return 0, or ISV_EINVAL (o NULL, n 0)
 */
ISV_EXTERN int isv_options_set_max_receiving_bytes(isv_options *o, size_t n);
/** Bytes a streamed answer may have queued for its client and not yet written — a custom
 * route's isv_http_write pieces, Server-Sent Events of generate_stream, grps ?streaming=true
 * chunks, ModelStreamInfer / PredictStreaming messages and the decoupled responses behind
 * them — per stream (an HTTP/1.1 response, an HTTP/2 stream) and per connection (all its
 * streams together). Past either bound the producer is told to wait: isv_http_write and
 * isv_request_send_response answer ISV_EAGAIN, and their on_writable callback runs once the
 * queue drained to half the bound. A client that reads slowly thus holds at most about these
 * bytes (plus the kernel's socket buffers), and one that stops reading is cut at the send
 * timeout (isv_options_set_send_timeout_ms) with what it holds. One piece larger than the
 * bound is still taken when the queue is empty. Defaults: 4 MiB per stream — a few hundred
 * milliseconds of a fast client's worth, or one 4 MiB tensor, so a reader that keeps up never
 * waits — and 16 MiB per connection, so that an HTTP/2 connection's 100 streams cannot hold
 * 100 times a stream's bound. ISV_EINVAL for 0.
 * Any thread (the options' owner, one at a time).
 * @param o the options
 * @param n bytes one stream may have queued for its client (> 0)
 * @return 0, or ISV_EINVAL (o NULL, n 0)
 */
ISV_EXTERN int isv_options_set_max_queued_stream_bytes(isv_options *o, size_t n);
/** Bytes one connection's streams together may have queued for its client: the per-connection bound
 * of isv_options_set_max_queued_stream_bytes() (default 16 MiB). Any thread (the options' owner).
 * @param o the options
 * @param n bytes a connection may have queued for its client (> 0)
 * @return 0, or ISV_EINVAL (o NULL, n 0)
 */
ISV_EXTERN int isv_options_set_max_queued_conn_bytes(isv_options *o, size_t n);
/** Bytes of freed large buffers (request bodies, gRPC messages and tensors of 1 MiB or more)
 * the server keeps mapped for the next requests instead of returning them to the system:
 * touching fresh memory costs ~10x a copy into memory already mapped. At most 8 blocks are
 * kept. 0 keeps none. Default 64 MiB.
 * Any thread (the options' owner, one at a time).
 * @param o the options
 * @param n bytes of freed large buffers kept mapped (0: none)
 * @return 0, or ISV_EINVAL (o NULL)
 */
ISV_EXTERN int isv_options_set_buffer_cache_bytes(isv_options *o, size_t n);
/** Bytes of freed small blocks (16 KiB or less: streams, requests, bodies and answers of small
 * requests, nghttp2's frames) the server keeps for its loop thread's next allocations instead
 * of giving them back to its allocator (isv_options_set_mem) at once: a small request then
 * makes and frees nothing through the allocator once the server is warm. Blocks freed on other
 * threads go back at once; what is kept goes back when the server's memory is freed. Such a
 * block is made at its size class (16-byte steps to 1 KiB, 128-byte ones to 16 KiB). 0 keeps
 * none: every allocation and free reaches the allocator (a host counting its calls one by one).
 * Default 2 MiB.
 * Any thread (the options' owner, one at a time).
 * @param o the options
 * @param n bytes of freed small blocks kept (0: none)
 * @return 0, or ISV_EINVAL (o NULL)
 */
ISV_EXTERN int isv_options_set_small_block_cache_bytes(isv_options *o, size_t n);
/** gRPC answers (every service's response messages) of at least min_bytes are compressed when
 * the call's grpc-accept-encoding lists gzip or deflate (gzip first; zlib's fastest level) —
 * grpcio and grpc-java send that header on every call, so this is the host's choice, not the
 * client's: compression costs CPU per answer and float tensors shrink little; text, sparse or
 * repetitive answers crossing a slow link gain. The response then names the coding in
 * grpc-encoding and each compressed message says so in its flag; smaller answers go as they
 * are. A unary answer of 96 KiB or more is compressed on the worker threads; a streaming
 * call's messages keep their order, so those of 96 KiB or more go uncompressed (the loop
 * would otherwise be held ~3 ms per MB). Clients compressing their own messages need nothing:
 * those are always accepted. 0 (the default): answers are never compressed.
 * @param o the options
 * @param min_bytes the smallest answer compressed, in bytes (0: never)
 * @return 0, or ISV_EINVAL (o NULL)
 */
ISV_EXTERN int isv_options_set_grpc_compression(isv_options *o, size_t min_bytes);
/** `blocks` large buffers that each hold `block_bytes`, mapped and faulted in (their pages
 * touched) on a worker thread as the server starts, then kept in the buffer cache above, whose
 * limit is raised to hold them. Why: memory never touched costs ~1 ms per MiB to fault in on a
 * small VM, and the first large request body, gRPC message or tensor of each size pays it —
 * on the loop thread when an ISV_EXEC_INLINE backend writes an output from
 * isv_request_alloc_output (a 64 MiB output: 70-200 ms the first time instead of the copy's
 * ~10 ms). A host that serves tensors that large from an inline backend, or wants its first
 * requests as fast as the next ones, asks for them here; a request taking a block gives it back
 * to the cache when it ends. The server serves meanwhile: requests arriving before the blocks
 * are ready get fresh memory as without this. Without worker threads
 * (isv_options_set_worker_threads 0) isv_server_new faults them in itself before it returns. A
 * group's servers each keep their own. ISV_EINVAL for blocks > 8 (the cache's slots) or
 * block_bytes under 1 MiB (smaller buffers come from malloc). Default: none (0, 0).
 * @param o the options
 * @param block_bytes the size of each block (at least 1 MiB)
 * @param blocks how many blocks (at most 8; 0: none)
 * @return 0, or ISV_EINVAL (o NULL, blocks > 8, block_bytes under 1 MiB)
 */
ISV_EXTERN int isv_options_set_buffer_prefault(isv_options *o, size_t block_bytes, unsigned blocks);
/** The response cache's size, in bytes (Triton's --cache-config local,size=N): the answers of
 * models that enable it (isv_model_config_set_response_cache()) are kept, least recently used
 * evicted first, so that the same request again is answered without running the model. One
 * cache for a group's servers (isv_group), made by the first of them whose options ask for one;
 * a later member's size is ignored. What a cached answer is keyed by, and what is never
 * cached, is said at isv_model_config_set_response_cache(). Any thread (the options' owner).
 * @param o the options
 * @param bytes the cache's bound (0, the default: no cache, and a model that enables one runs
 *        every request)
 * @return 0, or ISV_EINVAL (o NULL)
 */
ISV_EXTERN int isv_options_set_response_cache_bytes(isv_options *o, size_t bytes);
/** The allocator a server uses for its own memory (nghttp2_mem's shape, plus struct_size): every
 * allocation the server makes from isv_server_new on — its connections, HTTP/2 sessions
 * (nghttp2 is given the same functions), requests and their tensors, registered models, and
 * the encoded answers and decoded (inflated) bodies (they grow through it by doubling,
 * whatever their size: a 66 MiB JSON answer takes up to 128 MiB of it at its peak). Not
 * through it: the large blocks the library maps itself — request bodies and gRPC messages as
 * they arrive, big tensors of 1 MiB or more (mapped directly, 2 MiB aligned for huge pages, and
 * cached: isv_options_set_buffer_cache_bytes); the table of a group the host made (isv_group:
 * shared by servers that may have different allocators, libc's — a server made without one
 * keeps its models' table through these functions); isv_options and isv_model_config objects,
 * which exist before any server (libc's malloc); libuv's own allocations
 * (uv_replace_allocator is the process's, the host's to set).
 * The functions are called from the loop thread, the server's worker threads and any thread a
 * backend calls the request API from: they must be thread-safe. They must return memory
 * aligned for any type (as malloc does); calloc's must be zeroed; realloc(NULL, n) and
 * free(NULL) must behave as libc's. A NULL return is an allocation failure, answered as the
 * server's shortage (503 / UNAVAILABLE, or ISV_ENOMEM from the call) — never a crash.
 * `user` is passed to each. Fields may be added at the end: struct_size = sizeof(isv_mem). */
typedef struct isv_mem {
  size_t struct_size; /**< sizeof(isv_mem) */
  void *user;         /**< passed to each function */
  void *(*malloc)(size_t size, void *user);               /**< as malloc(3) */
  void (*free)(void *ptr, void *user);                    /**< as free(3) */
  void *(*calloc)(size_t nmemb, size_t size, void *user); /**< as calloc(3) */
  void *(*realloc)(void *ptr, size_t size, void *user);   /**< as realloc(3) */
} isv_mem;
/** Copied. NULL: libc's (the default). ISV_EINVAL when a function is missing or struct_size is
 * too small.
 * Any thread (the options' owner, one at a time).
 * @param o the options
 * @param mem the allocator (copied), or NULL for libc's
 * @return 0, or ISV_EINVAL (o NULL, a function missing, struct_size too small)
 */
ISV_EXTERN int isv_options_set_mem(isv_options *o, const isv_mem *mem);

/* ---- Admission and execution: how much work at once, and who runs it -------------------- */
/** Inference requests accepted at once — queued or running, every model together. Beyond it a
 * request is refused at once (HTTP 503, gRPC UNAVAILABLE: retry later or elsewhere) instead of
 * queueing without bound. 0: no limit. Default 0 (each model's queue bound still holds:
 * isv_model_config_set_max_queue).
 * Any thread (the options' owner, one at a time).
 * @param o the options
 * @param n requests queued or running at once (0: no limit)
 * @return 0, or ISV_EINVAL (o NULL)
 */
ISV_EXTERN int isv_options_set_max_inflight(isv_options *o, unsigned n);
/** Worker threads the server keeps for ISV_EXEC_POOL backends — and for decoding and encoding
 * JSON request and response bodies of 96 KiB or more, which would otherwise hold the host's
 * loop for milliseconds (~3 ms per MB), for faulting in fresh memory for large HTTP/1.1 bodies
 * and for freeing large request buffers. Its own threads, not libuv's
 * pool: that pool is shared with the host's file system and DNS work and sized once per
 * process (UV_THREADPOOL_SIZE, 4), so four slow model calls would stall every fs request of
 * the host. Started when a POOL backend first needs one, joined when the server closes. A
 * worker blocked in a nested call (isv_request_run) does not count while it waits: more
 * threads may start then. Default: the CPUs available to the process
 * (uv_available_parallelism()). n >= 1.
 * @param o the options
 * @param n the number of worker threads (1 to 4096)
 * @return 0, or ISV_EINVAL (o NULL, n out of range)
 */
ISV_EXTERN int isv_options_set_worker_threads(isv_options *o, unsigned n);
/** isv_server_close lets in-flight requests and responses finish for at most this long. Then
 * the connections still open are closed, requests still queued are answered 503 without
 * running, and running ones are cancelled (isv_request_is_cancelled). A backend gets 1 s more to
 * complete them; one that does not is ABANDONED, so that a backend that never completes
 * cannot hold the close: its requests are answered 503 (a WARN log line names the model), the
 * close callback runs, and the library keeps what the backend still uses — the request, its
 * inputs, its model version, the worker thread it runs on (detached) — until the backend
 * completes it, whenever and from whatever thread. 0: no deadline. Default 30000 ms.
 * @param o the options
 * @param ms the drain's deadline in milliseconds (> 0)
 * @return 0, or ISV_EINVAL (o NULL, ms 0: the setter refuses it)
 */
ISV_EXTERN int isv_options_set_drain_timeout_ms(isv_options *o, uint64_t ms);

/* ---- What the server speaks, and says of itself ----------------------------------------- */
/** Turn a protocol front end on or off by name. Every one is on by default:
 *   "kserve_v2"    KServe V2 REST under /v2 and gRPC inference.GRPCInferenceService
 *   "tfserving"    TensorFlow Serving REST under /v1/models: status, metadata, :predict (row
 *                  and columnar formats), :classify and :regress (examples + context); and
 *                  gRPC tensorflow.serving.PredictionService (Predict, Classify, Regress,
 *                  MultiInference, GetModelMetadata) and ModelService (GetModelStatus)
 *   "vertex"       AI Platform / Vertex AI predict under /v1/projects: .../models/{m}
 *                  [/versions/{v}]:predict and .../locations/{l}/endpoints/{e}:predict (the
 *                  endpoint id names the model); "parameters" and other keys as parameters
 *   "grps"         grps under /grps/v1 (health, online/offline, metadata, infer/predict with
 *                  ?streaming=true, metrics at / and /grps/v1/monitor/metrics) and gRPC
 *                  grps.protos.v1.GrpsService
 *   "openai"       OpenAI's REST API under /openai/v1: models, chat/completions, completions
 *                  and embeddings, streamed as Server-Sent Events ("OpenAI-compatible
 *                  endpoints" below says how a request reaches a model)
 *   "grpc_health"  gRPC grpc.health.v1.Health: Check and Watch (a stream: the status at
 *                  once and at each change; ends OK at the server's close). `service` ""
 *                  or a served gRPC service: the server's readiness; a model name: that
 *                  model's; else Check NOT_FOUND, Watch SERVICE_UNKNOWN (and it watches on)
 *   "grpc_reflection"  gRPC server reflection (grpc.reflection.v1 and v1alpha
 *                  ServerReflection/ServerReflectionInfo): the services this server serves
 *                  and their .proto descriptors, for grpcurl, Postman and dynamic clients
 *   "metrics"      GET /metrics (Prometheus)
 * A disabled front end's paths answer 404 and its gRPC methods UNIMPLEMENTED. isv_server_new
 * fails with ISV_ENOTFOUND when a name matches no front end. ISV_ENOMEM past 16 names.
 * Any thread (the options' owner, one at a time).
 * @param o the options
 * @param name a front end's name (the list above; copied; not empty)
 * @param enabled nonzero to serve it, 0 to switch it off
 * @return 0, or ISV_EINVAL (o NULL, name NULL, empty or too long) / ISV_ENOMEM (past 16 names); an
 *         unknown name fails isv_server_new() with ISV_ENOTFOUND
 */
ISV_EXTERN int isv_options_set_protocol(isv_options *o, const char *name, int enabled);
/** The metric names GET /metrics may write: bits of isv_options_set_metrics_style(). */
typedef enum {
  ISV_METRICS_LIBINFERSERVE = 1,     /**< the library's own names */
  ISV_METRICS_TRITON = 2,            /**< Triton's names */
  ISV_METRICS_TRITON_HISTOGRAMS = 4, /**< with ISV_METRICS_TRITON: Triton's optional histogram */
  ISV_METRICS_TRITON_SUMMARIES = 8   /**< with ISV_METRICS_TRITON: Triton's optional summaries */
} isv_metrics_style;
/** Which metric names GET /metrics writes (a bitmask; both at once for a migration):
 *   ISV_METRICS_LIBINFERSERVE  the library's own (isv_requests_total by protocol and outcome,
 *                              latency, queue and batch-size histograms, ...): the default
 *   ISV_METRICS_TRITON         Triton's, for dashboards built on them, labels model and version:
 *     nv_inference_request_success, nv_inference_request_failure (+ reason: REJECTED — refused
 *     before it ran: a full queue, an overload, a client's limit, its deadline while waiting —
 *     CANCELED, BACKEND — the backend failed it —, OTHER), nv_inference_count (rows),
 *     nv_inference_exec_count, the cumulative nv_inference_request_duration_us (successful
 *     requests, as Triton's), nv_inference_queue_duration_us,
 *     nv_inference_compute_input_duration_us, nv_inference_compute_infer_duration_us,
 *     nv_inference_compute_output_duration_us, nv_inference_pending_request_count (waiting
 *     for an instance now), and nv_inference_request_duration_us histograms are not Triton's
 *     default and not written; the cache's (nv_cache_*) when a response cache is set
 *     (isv_options_set_response_cache_bytes()); not the GPU and CPU
 *     families.
 * With ISV_METRICS_TRITON, Triton's optional latency metrics (its --metrics-config
 * histogram_latencies=true, summary_latencies=true), off by default as Triton's are:
 *   ISV_METRICS_TRITON_HISTOGRAMS  nv_inference_first_response_histogram_ms: a decoupled
 *     model's requests' time to their first response, ms, buckets 100, 500, 2000, 5000, +Inf
 *     (for decoupled models only, as Triton)
 *   ISV_METRICS_TRITON_SUMMARIES   nv_inference_request_summary_us, nv_inference_queue_summary_us,
 *     nv_inference_compute_input_summary_us, nv_inference_compute_infer_summary_us,
 *     nv_inference_compute_output_summary_us: successful requests' times, quantiles 0.5, 0.9,
 *     0.95, 0.99, 0.999 over the last 60 s (from each loop's latest 512 per model version;
 *     NaN when none), _count and _sum since the start (as the counters count)
 * Any thread (the options' owner, one at a time).
 * @param o the options
 * @param styles bits of isv_metrics_style, ORed
 * @return 0, or ISV_EINVAL (o NULL, styles 0, an unknown bit, or Triton's optional metrics
 *         without ISV_METRICS_TRITON)
 */
ISV_EXTERN int isv_options_set_metrics_style(isv_options *o, unsigned styles);
/** Name and version reported by server metadata. Defaults "libinferserve", isv_version().
 * Any thread (the options' owner, one at a time).
 * @param o the options
 * @param name the server's name (copied)
 * @param version its version (copied)
 * @return 0, or ISV_EINVAL (o, name or version NULL, or too long)
 */
ISV_EXTERN int isv_options_set_server_name(isv_options *o, const char *name, const char *version);
/** Triton's strict readiness: the server is ready only while online AND every registered model
 * version is READY. Default off (ready = online).
 * Any thread (the options' owner, one at a time).
 * @param o the options
 * @param on nonzero for strict readiness
 * @return 0, or ISV_EINVAL (o NULL)
 */
ISV_EXTERN int isv_options_set_strict_readiness(isv_options *o, int on);
/** Triton's system shared memory extension (its --allow-client-shm): clients may register
 * regions of POSIX shared memory objects (/v2/systemsharedmemory/..., gRPC
 * SystemSharedMemory*) and name them in their tensors' parameters, which the server then reads
 * and writes. Any client that reaches the server can then open, read and write every
 * shared memory object the server's user may open: turn it on only where the clients are
 * trusted and on the same host. Default off: registering answers 501 / UNIMPLEMENTED saying
 * so, status lists nothing, and server metadata does not list "system_shared_memory".
 * By default the server never maps a client's object: an input in a region is read with
 * pread(2) into the request's own memory before the backend runs, and an output for a region
 * is written by the backend into library memory, then with pwrite(2) into the region — so a
 * client that shrinks its object while a request uses it gets a 400 / INVALID_ARGUMENT
 * ("... was shrunk ...") instead of killing the process (see
 * isv_options_set_shared_memory_in_place for the zero-copy alternative).
 * Any thread (the options' owner, one at a time).
 * @param o the options
 * @param on nonzero to let clients register system shared memory regions
 * @return 0, or ISV_EINVAL (o NULL)
 */
ISV_EXTERN int isv_options_set_shared_memory(isv_options *o, int on);
/** Zero-copy shared memory for TRUSTED clients only (default off). With it, a region is mapped
 * (mmap MAP_SHARED) at registration, backends read inputs in place from the client's mapping
 * and isv_request_alloc_output hands them a pointer into the region when the output fits there (as
 * Triton does): no copy of the tensor in or out. The risk: the pages belong to the client,
 * which can shrink its object (ftruncate) at any moment — a backend, or the library writing an
 * output, that then touches a page past the object's new end gets SIGBUS and the WHOLE
 * PROCESS dies (the size check at each use cannot close that race), and a client may change
 * an input while the backend reads it. Turn it on only when every client that can reach the
 * server is as trusted as the process itself. No effect without isv_options_set_shared_memory.
 * In a group (isv_options_set_group) every member must agree with the first on it, as on
 * isv_options_set_shared_memory, else isv_server_new answers ISV_EINVAL. 0, or ISV_EINVAL
 * (o NULL).
 * Any thread (the options' owner, one at a time).
 * @param o the options
 * @param trusted nonzero for zero copy (clients as trusted as the process)
 * @return 0, or ISV_EINVAL (o NULL)
 */
ISV_EXTERN int isv_options_set_shared_memory_in_place(isv_options *o, int trusted);

/* ---- What the server tells the host ----------------------------------------------------- */
/** Messages the server has for the host: a limit reached, a client cut off for abuse... */
typedef enum { ISV_LOG_ERROR = 1, ISV_LOG_WARN = 2, ISV_LOG_INFO = 3 } isv_log_level;
/** Receives one message of the server's, on the loop thread; message is valid during the call. */
typedef void (*isv_log_cb)(void *user, isv_log_level level, const char *message);
/** Where they go. Default: WARN and ERROR to stderr, one line each, prefixed "libinferserve: ".
 * cb NULL: nowhere. cb runs on the loop thread; message is valid during the call only.
 * @param o the options
 * @param cb the log callback, or NULL for nowhere
 * @param user passed to cb
 * @return 0, or ISV_EINVAL (o NULL)
 */
ISV_EXTERN int isv_options_set_log(isv_options *o, isv_log_cb cb, void *user);
/** Triton's logging extension (GET/POST /v2/logging, gRPC LogSettings; "logging" in server
 * metadata's extensions) changes the server's log settings at run time: log_info,
 * log_warning and log_error decide which levels reach the callback above (all on at start);
 * log_file, log_format ("default" or "ISO8601") and log_verbose_level mean what the host makes
 * of them — the library writes no file and has no verbose messages — so the host hears of
 * every change here, on the loop thread of the server that took it (a group's servers share
 * one set of settings; the host is told once). Strings are valid during the call only.
 * Fields may be added at the end: read them only when struct_size covers them. */
typedef struct isv_log_settings {
  size_t struct_size; /**< the size the library filled */
  const char *file;   /**< "": the host's usual place */
  int info;           /**< log_info: INFO messages reach the log callback */
  int warning;        /**< log_warning: WARN messages do */
  int error;          /**< log_error: ERROR messages do */
  unsigned verbose_level; /**< log_verbose_level, the host's to interpret */
  const char *format;     /**< log_format: "default" or "ISO8601" */
} isv_log_settings;
/** Receives the logging extension's new settings (isv_log_settings), on the loop thread. */
typedef void (*isv_log_settings_cb)(void *user, const isv_log_settings *settings);
/** The host hears of every change of the logging extension's settings (isv_log_settings, above)
 * through cb, on the loop thread of the server that took it; NULL: not told (the levels still
 * apply). Any thread (the options' owner).
 * @param o the options
 * @param cb called with the new settings, or NULL
 * @param user passed to cb
 * @return 0, or ISV_EINVAL (o NULL)
 */
ISV_EXTERN int isv_options_set_log_settings_cb(isv_options *o, isv_log_settings_cb cb, void *user);
/** A traced request's timeline (Triton's TIMESTAMPS trace level), handed to the host once it is
 * done. Times are uv_hrtime() nanoseconds (one clock, comparable with each other); 0 for a
 * point the request never reached (refused before it ran: no compute times). A batched
 * request's compute times are its batch's. The trace id is the request's traceparent's (W3C
 * trace context, has_parent 1, parent_id the caller's span) or, without one, a fresh random
 * one (has_parent 0). Strings are valid during the call only. Fields may be added at the end:
 * read them only when struct_size covers them. */
typedef struct isv_trace_timeline {
  size_t struct_size;     /**< the size the library filled */
  const char *model;      /**< the model's name */
  const char *version;    /**< the version that ran */
  const char *protocol;   /**< the label requests are counted under: "v2_http", "inprocess"... */
  const char *request_id; /**< the client's id, "" when none */
  int status;             /**< 0, or the ISV_E* code it ended with */
  uint8_t trace_id[16];   /**< the W3C trace id */
  uint8_t parent_id[8];   /**< the caller's span id (with has_parent) */
  uint8_t flags; /**< the traceparent's (bit 0: sampled); 1 for a fresh trace */
  int has_parent;         /**< 1 when the request came with a traceparent */
  uint64_t request_start_ns;        /**< the request was read whole (or submitted in process) */
  uint64_t queue_start_ns;          /**< it entered its model's queue */
  uint64_t compute_start_ns;        /**< its backend (or its batch's) started */
  uint64_t compute_input_end_ns;    /**< the inputs were ready for the backend */
  uint64_t compute_output_start_ns; /**< the backend started on the outputs */
  uint64_t compute_end_ns;          /**< the backend completed */
  uint64_t request_end_ns;          /**< the answer was done */
  size_t batch_size; /**< requests executed together (1: alone; 0: never ran) */
  /** The trace settings it was traced under (the model's own or the global ones, see
   * isv_options_set_trace_settings()), for the host to honour: where Triton would write it
   * ("": nowhere named). */
  const char *trace_file;
  unsigned log_frequency; /**< how many traces go to one file (0: one file) */
  int64_t traces_left;    /**< traces the setting still takes after this one (-1: no limit;
                           * 0: this was the last) */
} isv_trace_timeline;
/** Receives a traced request's timeline, on the loop thread; t is valid during the call. */
typedef void (*isv_trace_cb)(void *user, const isv_trace_timeline *t);
/** Trace requests: every `rate`-th request that finishes (1: each), and every one whose
 * traceparent says its caller sampled it (flag bit 0: a trace is followed end to end), goes to
 * cb on the loop thread when it is done — for a host to write Triton's trace file, or spans to
 * OpenTelemetry. Without cb (the default), nothing is recorded and nothing costs. Requests the
 * library runs for itself (the repository's) are not traced. `rate` is the global trace_rate
 * the server starts with, at level TIMESTAMPS; the trace extension's settings below change
 * both at run time.
 * @param o the options
 * @param cb called with each traced request's timeline, or NULL (the default: no tracing)
 * @param user passed to cb
 * @param rate trace every rate-th request (1: each); requests their caller sampled are traced
 *             anyway
 * @return 0, or ISV_EINVAL (o NULL, rate 0 with cb)
 */
ISV_EXTERN int isv_options_set_trace(isv_options *o, isv_trace_cb cb, void *user, unsigned rate);
/* ---- Triton's trace extension ----------------------------------------------------------------
 * GET/POST /v2/trace/setting and /v2/models/{m}/trace/setting, gRPC TraceSetting; "trace" in
 * server metadata's extensions when a trace hook is set — without one the endpoints answer
 * ISV_EUNIMPL. It changes at run time which requests reach the hook above: trace_level OFF
 * traces none (a caller's sampled traceparent included), TIMESTAMPS traces; trace_rate N every
 * Nth request (and every one its caller sampled); trace_count the traces still to take (-1: no
 * limit; each trace takes one, and at 0 none is traced). A model's own settings override the
 * global ones setting by setting; one it never set, or cleared (JSON null, a gRPC value without
 * values), is the global one. trace_file and log_frequency mean what the host makes of them
 * (Triton: the file traces are written to, and how many go to each of FILE.0, FILE.1...; 0: all
 * to FILE): every trace carries its own (isv_trace_timeline). A group's servers share one set
 * of settings. */
/** A trace level (Triton's trace_level; TENSORS is not implemented). */
typedef enum {
  ISV_TRACE_OFF = 0,       /**< nothing traced */
  ISV_TRACE_TIMESTAMPS = 1 /**< the timeline of each traced request */
} isv_trace_level;
/** Trace settings (the global ones, or a model's). Fields may be added at the end: read them
 * only when struct_size covers them; strings are valid during the call only. */
typedef struct isv_trace_settings {
  size_t struct_size;     /**< sizeof(isv_trace_settings) */
  const char *model;      /**< whose settings these are (NULL: the global ones) */
  isv_trace_level level;  /**< OFF or TIMESTAMPS */
  unsigned rate;          /**< trace every rate-th request (>= 1) */
  int64_t count;          /**< traces still to take (-1: no limit) */
  unsigned log_frequency; /**< traces per file (0: one file) */
  const char *file;       /**< where traces go ("" or NULL: none; at most 1023 bytes) */
} isv_trace_settings;
/** The global settings the server starts with (model must be NULL). Without this call: level
 * TIMESTAMPS at isv_options_set_trace()'s rate when a hook is set, else Triton's defaults (OFF,
 * rate 1000), count -1, log_frequency 0, no file. Clearing a global setting returns it to this.
 * In a group, the first member's options decide. Any thread (the options' owner, one at a time).
 * @param o the options
 * @param s the settings (copied)
 * @return 0, or ISV_EINVAL (o or s NULL, a model named, rate 0, count below -1, file too long)
 */
ISV_EXTERN int isv_options_set_trace_settings(isv_options *o, const isv_trace_settings *s);
/** The host hears of every change of the settings (s->model NULL: the global ones; else that
 * model's, as they now apply to it), on the loop thread of the server that took it — say, to
 * flush and reopen its trace file. */
typedef void (*isv_trace_settings_cb)(void *user, const isv_trace_settings *s);
/** Set the settings hook. Any thread (the options' owner, one at a time).
 * @param o the options
 * @param cb called at each change, or NULL (the default: none)
 * @param user passed to cb
 * @return 0, or ISV_EINVAL (o NULL)
 */
ISV_EXTERN int isv_options_set_trace_settings_cb(isv_options *o, isv_trace_settings_cb cb,
                                                 void *user);
/** One answered request, for an access log. Fields may be added at the end: read them only
 * when struct_size covers them. Strings are valid during the call only. */
typedef struct isv_access_entry {
  size_t struct_size; /**< the size the library filled */
  const char *protocol; /**< "http/1.1" (HTTP/1.0 too; with TLS too), "h2c" (REST over HTTP/2;
                         * "h2" with TLS), "grpc", or
                         * "adapter" (an isv_exchange the host's own server carried; the
                         * host's gRPC calls are its to log) */
  const char *method;   /**< "GET", "POST", ... ("" when the request line was not read) */
  const char *path;     /**< as sent, without the query ("" when not read); gRPC: the method */
  int status;           /**< the HTTP status; for gRPC the grpc-status code (0 = OK) */
  uint64_t bytes_in;    /**< request body bytes (gRPC: the messages' bytes, framing included) */
  uint64_t bytes_out;   /**< response body bytes the server answered with */
  uint64_t duration_us; /**< from the request read whole (REST) or the call's headers (gRPC)
                         * to its answer's end: written (REST), the trailers handed to
                         * HTTP/2 (gRPC) */
  const char *trace_id; /**< the W3C traceparent's trace id it came with, 32 hex digits; "" when
                         * none or one that does not parse (isv_request_trace_context) */
} isv_access_entry;
/** Receives one access log entry, on the loop thread; entry is valid during the call. */
typedef void (*isv_access_cb)(void *user, const isv_access_entry *entry);
/** Called on the loop thread once per request answered over the network — every status, the
 * transport's own refusals (400, 408, 413, 431...) included; a request whose client left
 * before its answer was written is logged with the status it was answered with (499 when it
 * was cancelled). Default: none. In-process requests are not logged.
 * @param o the options
 * @param cb called once per answered request, or NULL (the default)
 * @param user passed to cb
 * @return 0, or ISV_EINVAL (o NULL)
 */
ISV_EXTERN int isv_options_set_access_log(isv_options *o, isv_access_cb cb, void *user);

/* ---- Every core: a group of servers, one per loop and thread, serving one set of models ----
 *
 *   isv_group *g;  isv_group_new(&g);
 *   isv_options_set_group(opts, g);  isv_options_set_reuse_port(opts, 1);
 *   // in each thread i, on its own loop:  isv_server_new(loop_i, opts, &srv_i);
 *   //                                     isv_server_listen(srv_i, "0.0.0.0", 8000);
 *   // once, on any member's loop thread:  isv_server_add_model(srv_0, cfg, "1", &be, u, NULL);
 *   isv_group_free(g);   // the host's reference; the servers hold theirs until closed
 *
 * What a group shares: the models — isv_server_add_model, isv_server_remove_model,
 * isv_server_set_model_state, isv_server_set_label and isv_server_set_default_version called
 * on ANY member act on every member, present and future: once the call returned, every
 * request any member routes after it sees the change (a member catches up before it routes,
 * and on its loop's next turn anyway) — their statistics (every statistics and metrics
 * endpoint of every member sums all members' numbers), being online (isv_server_set_online,
 * grps's online/offline: one member offline takes the group offline), system shared memory
 * regions (registered through one member, used through any; every member must agree with the
 * first on isv_options_set_shared_memory and isv_options_set_shared_memory_in_place, else
 * isv_server_new answers ISV_EINVAL) and the
 * per-client count of isv_options_set_max_client_requests (a client's requests on every
 * member count against one limit).
 * What stays per server: routes (isv_server_add_route — register a route on each member; its
 * numbers in /metrics are summed over the members' routes of that method and path — and the
 * Vertex routes), the authorizer, the repository callbacks, the default
 * model, listeners, the transport's limits (max_connections, max_receiving_bytes,
 * max_inflight: each member's), the worker pool, and every model's scheduling — its queue and
 * max_queue, its `instances` (per member: a model with 1 instance may run once on each member
 * at the same time), dynamic batches (formed from one member's requests) and sequences (a
 * sequence lives on the member its start reached: send a sequence's requests over one
 * connection, as Triton's clients do).
 *
 * A backend registered on a group is called from every member's thread: it must be safe to
 * call concurrently from different threads for different requests. Its destroy runs once, when
 * the version was removed (or the group ended: the host's reference dropped and every member
 * closed) and no member uses it any more — on the thread that let the last use go. */
/** A group of servers sharing one set of models (above). */
typedef struct isv_group isv_group;
/** 0, or ISV_EINVAL (out NULL) / ISV_ENOMEM. Any thread.
 * @param out receives the group (the host's reference: isv_group_free())
 * @return 0, or ISV_EINVAL (out NULL) / ISV_ENOMEM
 */
ISV_EXTERN int isv_group_new(isv_group **out);
/** Drop the host's reference (NULL is a no-op); the group lives on while options or servers
 * hold it. Any thread.
 * @param g the group, or NULL
 */
ISV_EXTERN void isv_group_free(isv_group *g);
/** Servers made with these options join g (NULL: none, the default). The options hold a
 * reference to g until they are freed or set to another group. With
 * isv_options_set_reuse_port, members listen on the same addresses; the group's first listen
 * on an address must find it free (ISV_EIO, "address already in use", when another process
 * listens there), so SO_REUSEPORT shares a port among the group's members only. Members may
 * call isv_server_listen on one address at the same moment, each from its own loop thread:
 * the group takes their listens one at a time, and all succeed.
 * @param o the options
 * @param g the group to join, or NULL for none
 * @return 0, or ISV_EINVAL (o NULL)
 */
ISV_EXTERN int isv_options_set_group(isv_options *o, isv_group *g);

/* ---------------------------------------------------------------------------------------------
 * Server
 * ------------------------------------------------------------------------------------------- */
/** A server on the host's loop: its listeners, models, routes and connections. */
typedef struct isv_server isv_server;
/** Called on the loop thread once a closed server is gone (isv_server_close()). */
typedef void (*isv_close_cb)(isv_server *srv, void *data);

/** Create a server on the host's loop. Starts no thread and opens no socket. opts may be NULL
 * (defaults) and is not retained. The server starts ONLINE. ISV_ENOTFOUND when opts switches a
 * protocol no front end has (isv_options_set_protocol). Call it on the thread that runs
 * `loop`: it becomes the server's loop thread.
 * @param loop the host's loop; the calling thread becomes the server's loop thread
 * @param opts options (copied), or NULL for the defaults
 * @param out receives the server; it ends with isv_server_close()
 * @return 0, or ISV_EINVAL (loop or out NULL, a group's members disagreeing on shared memory) /
 *         ISV_ENOTFOUND (an unknown protocol name) / ISV_ENOMEM
 */
ISV_EXTERN int isv_server_new(uv_loop_t *loop, const isv_options *opts, isv_server **out);
/** Listen on host:port (IPv4 or IPv6 literal, or "localhost"). May be called several times.
 * Port 0 picks a free port: see isv_server_bound_port(). Returns ISV_EIO when the address
 * cannot be bound (isv_server_last_error() says why). Loop thread.
 * @param srv the server
 * @param host an IPv4 or IPv6 literal, or "localhost"
 * @param port the port; 0 picks a free one
 * @return 0, or ISV_EIO (the address cannot be bound), ISV_EINVAL, ISV_ESTATE (closing),
 *         ISV_ETHREAD
 */
ISV_EXTERN int isv_server_listen(isv_server *srv, const char *host, int port);
/** The port of the index-th successful listen (0-based), or -1. Loop thread.
 * @param srv the server
 * @param index which successful listen, 0-based
 * @return the port, or -1 when there is no such listener
 */
ISV_EXTERN int isv_server_bound_port(const isv_server *srv, unsigned index);
/** Serve a connection the host accepted itself: `stream` is an initialised, connected uv_tcp_t
 * or uv_pipe_t on the server's loop. The library takes it, even when the call fails: it
 * closes it when the connection ends (at once on failure) and then calls close_cb(stream),
 * with stream->data as the host left it: the host frees the memory there, whatever allocator
 * it came from. close_cb may be NULL when the stream's memory outlives the server. Loop
 * thread.
 * @param srv the server
 * @param stream a connected uv_tcp_t or uv_pipe_t on the server's loop; the library takes it
 * @param close_cb called with stream once the library closed it, or NULL
 * @return 0, or an ISV_E* code (the stream is then closed at once, and close_cb called)
 */
ISV_EXTERN int isv_server_adopt(isv_server *srv, uv_stream_t *stream, uv_close_cb close_cb);
/** Online (the default) makes the server ready; offline makes every readiness endpoint answer
 * not-ready so that load balancers drain this replica. Requests are still served. Loop
 * thread.
 * @param srv the server
 * @param online nonzero for online, 0 for offline
 */
ISV_EXTERN void isv_server_set_online(isv_server *srv, int online);
/** Whether the server is online (isv_server_set_online()). Loop thread.
 * @param srv the server
 * @return 1 when online, 0 when offline
 */
ISV_EXTERN int isv_server_is_online(const isv_server *srv);
/** Ready: online and not closing and, with strict readiness, every model version READY — what
 * every protocol's readiness endpoint reports. Loop thread.
 * @param srv the server
 * @return 1 when ready, 0 when not
 */
ISV_EXTERN int isv_server_is_ready(const isv_server *srv);
/** Stop listening, stop reading new requests, let in-flight requests finish and their
 * responses be written, close every connection, unregister every model (destroy callbacks
 * run), then call cb (may be NULL) on the loop thread; the server is freed after it and no
 * handle of the library stays on the loop. The drain has a deadline (isv_options_set_drain_
 * timeout_ms): past it and 1 s of grace, requests whose backends still run are abandoned
 * rather than waited for. ISV_ESTATE when already closing. Loop thread.
 * @param srv the server; freed after cb ran
 * @param cb called on the loop thread once the server is gone, or NULL
 * @param data passed to cb
 * @return 0, or ISV_ESTATE (already closing) / ISV_ETHREAD
 */
ISV_EXTERN int isv_server_close(isv_server *srv, isv_close_cb cb, void *data);
/** What the last call on this server said: every isv_server_* call (and isv_request_new,
 * isv_server_infer) resets it, and one that fails names its problem here ("" after a success).
 * Valid until the next call. Loop thread.
 * @param srv the server
 * @return the last call's problem, "" after a success; valid until the next call
 */
ISV_EXTERN const char *isv_server_last_error(const isv_server *srv);

/* ---------------------------------------------------------------------------------------------
 * Models
 * ------------------------------------------------------------------------------------------- */
/** A model version's state: only READY versions serve requests. */
typedef enum {
  ISV_MODEL_UNKNOWN = 0, /**< not a state */
  ISV_MODEL_LOADING,     /**< being loaded */
  ISV_MODEL_READY,       /**< serving */
  ISV_MODEL_UNLOADING,   /**< being unloaded */
  ISV_MODEL_UNAVAILABLE  /**< not serving */
} isv_model_state;

/** Where infer runs. Whatever the mode, one model version runs at most `instances` requests at
 * once (isv_model_config_set_instances); the others wait in its queue. */
typedef enum {
  ISV_EXEC_INLINE = 0, /**< on the loop thread, completing before it returns: it must not block.
                        * One that returns 0 without completing fails its request with
                        * ISV_EBACKEND naming the rule (and a later completion: ISV_ESTATE) */
  ISV_EXEC_POOL = 1,   /**< on one of the server's worker threads (isv_options_set_worker_threads) */
  ISV_EXEC_ASYNC = 2   /**< on the loop thread, where it only starts the work and returns; the
                        * backend completes later from a thread of its own (a GPU stream's
                        * callback, a remote call). The instance stays taken until then. */
} isv_exec_mode;

/** Why a sequence ended (isv_backend.sequence_end). */
typedef enum {
  ISV_SEQUENCE_END_REQUESTED = 1, /**< its request with sequence_end ran */
  ISV_SEQUENCE_END_IDLE,      /**< no request came for the model's idle timeout */
  ISV_SEQUENCE_END_RESTARTED, /**< a new request with sequence_start took its id */
  ISV_SEQUENCE_END_CLOSED     /**< the model version was removed or the server closed */
} isv_sequence_end_reason;

/** A model version's description (isv_model_config_new()). */
typedef struct isv_model_config isv_model_config;
/** One inference request, from the network or in process, and its response. */
typedef struct isv_request isv_request;

/** The backend: a callback table. Zero-initialise it and set struct_size = sizeof(isv_backend);
 * fields added later are read only when struct_size covers them. */
typedef struct isv_backend {
  size_t struct_size; /**< sizeof(isv_backend) */
  /** Run one request: read inputs, allocate outputs with isv_request_alloc_output(), then call
   * isv_request_complete() — before returning or later, from any thread. The return value is
   * ignored when the request was completed; a nonzero return WITHOUT completing completes the
   * request as isv_request_complete(req, rc, NULL) would (so returning what a failed library
   * call returned is fine: the client gets 500 naming the rule that call found broken). Never
   * called concurrently for one request. */
  int (*infer)(isv_request *req, void *user);
  /** Called once when the model version is unregistered and no request uses it any more
   * (on the loop thread) — for a version with requests the server's close abandoned (see
   * isv_options_set_drain_timeout_ms), after its backend completed the last of them, on the
   * thread that completed it. May be NULL. */
  void (*destroy)(void *user);
  /** Sequence batching: a sequence is over — free what the backend kept in its state slot
   * (isv_request_sequence_state). id_str is the string id, or NULL when the id is numeric (id).
   * Called once per sequence, after its last request finished, on the loop thread. May be
   * NULL. */
  void (*sequence_end)(void *user, uint64_t id, const char *id_str, void *state,
                       isv_sequence_end_reason reason);
} isv_backend;

/** A model version's description, copied by isv_server_add_model. It belongs to its creator:
 * it and every isv_model_config_* function below, any thread, one at a time. Names are
 * copied. 0, or ISV_EINVAL (a NULL or empty name, out NULL) / ISV_ENOMEM.
 * @param name the model's name (copied; not empty)
 * @param out receives the configuration; free it with isv_model_config_free()
 * @return 0, or ISV_EINVAL (a NULL or empty name, out NULL) / ISV_ENOMEM
 */
ISV_EXTERN int isv_model_config_new(const char *name, isv_model_config **out);
/** Free a model configuration; models registered with it keep their own copy. NULL is a no-op. Any
 * thread (the configuration's owner).
 * @param c the configuration, or NULL
 */
ISV_EXTERN void isv_model_config_free(isv_model_config *c);
/** ndim of a tensor of any rank (isv_model_config_add_input()). */
#define ISV_ANY_RANK ((size_t)-1)
/** Inputs and outputs: at most 32 dimensions, entries >= 0, or -1 for "any size". With
 * max_batch > 0 the shape EXCLUDES the batch dimension (Triton's convention) — metadata then
 * shows it as -1 first. ndim ISV_ANY_RANK (shape ignored, may be NULL): any number of
 * dimensions of any size (after the batch dimension); V2 metadata, which has no way to say
 * so, shows [-1] — a shape every such tensor may take. ISV_EEXIST when the name is already an
 * input or output.
 * Any thread (the configuration's owner, one at a time).
 * @param c the configuration
 * @param name the input's name (copied)
 * @param dt its datatype
 * @param shape its dimensions (-1: any size), may be NULL with ISV_ANY_RANK
 * @param ndim how many dimensions (at most 32), or ISV_ANY_RANK
 * @return 0, or ISV_EINVAL (a rule above broken) / ISV_EEXIST (the name is taken) / ISV_ENOMEM
 */
ISV_EXTERN int isv_model_config_add_input(isv_model_config *c, const char *name, isv_datatype dt,
                                          const int64_t *shape, size_t ndim);
/** Declare an output, by the rules of isv_model_config_add_input(). Any thread (the configuration's
 * owner).
 * @param c the configuration
 * @param name the output's name (copied)
 * @param dt its datatype
 * @param shape its dimensions (-1: any size), may be NULL with ISV_ANY_RANK
 * @param ndim how many dimensions (at most 32), or ISV_ANY_RANK
 * @return 0, or ISV_EINVAL (a rule broken) / ISV_EEXIST (the name is taken) / ISV_ENOMEM
 */
ISV_EXTERN int isv_model_config_add_output(isv_model_config *c, const char *name, isv_datatype dt,
                                           const int64_t *shape, size_t ndim);
/** 0 (the default) = the model takes no batch dimension.
 * Any thread (the configuration's owner, one at a time).
 * @param c the configuration
 * @param max_batch the largest batch (rows along the batch dimension), 0 for none
 * @return 0, or ISV_EINVAL (c NULL)
 */
ISV_EXTERN int isv_model_config_set_max_batch(isv_model_config *c, uint32_t max_batch);
/** Free text reported in metadata ("pytorch_libtorch", ...). Default "custom".
 * Any thread (the configuration's owner, one at a time).
 * @param c the configuration
 * @param platform the text (copied)
 * @return 0, or ISV_EINVAL / ISV_ENOMEM
 */
ISV_EXTERN int isv_model_config_set_platform(isv_model_config *c, const char *platform);
/** Class labels used by the classification extension: labels[i] names class index i (copied;
 * replaces earlier labels).
 * Any thread (the configuration's owner, one at a time).
 * @param c the configuration
 * @param labels n class names, labels[i] for class i (copied)
 * @param n how many labels
 * @return 0, or ISV_EINVAL / ISV_ENOMEM
 */
ISV_EXTERN int isv_model_config_set_labels(isv_model_config *c, const char *const *labels,
                                           size_t n);
/** A signature's method (isv_model_config_add_signature()). */
typedef enum {
  ISV_SIGNATURE_PREDICT = 0, /**< tensorflow/serving/predict */
  ISV_SIGNATURE_CLASSIFY,    /**< tensorflow/serving/classify */
  ISV_SIGNATURE_REGRESS      /**< tensorflow/serving/regress */
} isv_signature_method;
/** A named signature, as TF Serving's (its REST API selects one with "signature_name"): a method
 * and the model tensors it exposes, under which names — inputs[i] as input_aliases[i] (a NULL
 * array: their own names), likewise outputs. A model with no signature has "serving_default":
 * predict, every input and output under its own name; a model with some has exactly those.
 * Every name must be a declared input or output by registration (else isv_server_add_model
 * fails with ISV_EINVAL naming it). ISV_EEXIST: the signature name is taken; ISV_EINVAL: no
 * name, a duplicate alias. Copied.
 * Any thread (the configuration's owner, one at a time).
 * @param c the configuration
 * @param name the signature's name ("serving_default", ...; copied)
 * @param method predict, classify or regress
 * @param inputs the model inputs it exposes (n_inputs names)
 * @param input_aliases the name each goes by in the signature, or NULL for their own names
 * @param n_inputs how many inputs
 * @param outputs the model outputs it exposes (n_outputs names)
 * @param output_aliases the name each goes by in the signature, or NULL for their own names
 * @param n_outputs how many outputs
 * @return 0, or ISV_EEXIST (the signature name is taken) / ISV_EINVAL (no name, a duplicate alias)
 *         / ISV_ENOMEM
 */
ISV_EXTERN int isv_model_config_add_signature(isv_model_config *c, const char *name,
                                              isv_signature_method method,
                                              const char *const *inputs,
                                              const char *const *input_aliases, size_t n_inputs,
                                              const char *const *outputs,
                                              const char *const *output_aliases, size_t n_outputs);
/** Open I/O, for generic models (grps's, pass-throughs): a request may carry inputs the config
 * does not declare — any names (unique), datatypes and shapes — and the backend may set
 * outputs it does not declare (any name, datatype and shape; isv_request_alloc_output and
 * isv_request_set_output copy the name). Declared inputs and outputs keep their rules (a
 * declared input is still required). Without requested outputs every output set is answered,
 * in the order the backend set them. Not with dynamic batching (isv_server_add_model:
 * ISV_EINVAL). Default off.
 * Any thread (the configuration's owner, one at a time).
 * @param c the configuration
 * @param on nonzero for open I/O
 * @return 0, or ISV_EINVAL (c NULL)
 */
ISV_EXTERN int isv_model_config_set_open_io(isv_model_config *c, int on);
/** Native mode (grps's "no converter"): a protocol that has a message of its own hands the
 * backend that message as it came instead of tensors — for grps, the serialized GrpsMessage
 * (proto/grps.proto) as input "grps_message" (BYTES, shape [1]) — and takes the backend's
 * answer the same way: output "grps_message" (BYTES [1]), a serialized GrpsMessage whose data
 * is sent as it is (the library sets its status). Protocols without such a message (V2, TF
 * Serving) still send tensors. Implies open I/O. Default off.
 * Any thread (the configuration's owner, one at a time).
 * @param c the configuration
 * @param on nonzero for native mode
 * @return 0, or ISV_EINVAL (c NULL)
 */
ISV_EXTERN int isv_model_config_set_native(isv_model_config *c, int on);
/** Where infer runs: ISV_EXEC_INLINE (the default), ISV_EXEC_POOL or ISV_EXEC_ASYNC.
 * Any thread (the configuration's owner, one at a time).
 * @param c the configuration
 * @param mode ISV_EXEC_INLINE, ISV_EXEC_POOL or ISV_EXEC_ASYNC
 * @return 0, or ISV_EINVAL (c NULL, an unknown mode)
 */
ISV_EXTERN int isv_model_config_set_exec_mode(isv_model_config *c, isv_exec_mode mode);
/** Executions of this model version that may run at once (Triton's instance count); requests
 * beyond them wait in the version's queue, in arrival order. A backend learns which instance
 * runs a request from isv_request_instance() (0..n-1), for state kept per instance. Default 1:
 * a backend is never called concurrently unless it says it may be. n >= 1.
 * Any thread (the configuration's owner, one at a time).
 * @param c the configuration
 * @param n executions at once (>= 1)
 * @return 0, or ISV_EINVAL (c NULL, n 0)
 */
ISV_EXTERN int isv_model_config_set_instances(isv_model_config *c, uint32_t n);
/** Requests that may wait in this version's queue; one more is refused (HTTP 503, gRPC
 * UNAVAILABLE) naming the model. 0 (the default): no bound but isv_options_set_max_inflight.
 * Retry-After: a REST answer refusing a request for a full queue (this bound, or a level's
 * max_queue_size: isv_queue_policy) carries the server's estimate of when a place frees, in
 * whole seconds (at least 1, at most 3600): the requests ahead of the refused one, divided
 * among the instances, plus one round, each round the model's mean compute time per request
 * so far. Before the model ran any request there is no estimate and no Retry-After; nor for
 * other 503 and 429 answers (the server's in-flight limit, a client's request limit, a queue
 * timeout), whose end the server cannot foresee. gRPC answers carry no estimate.
 * Any thread (the configuration's owner, one at a time).
 * @param c the configuration
 * @param n requests that may wait (0: no bound of the model's own)
 * @return 0, or ISV_EINVAL (c NULL)
 */
ISV_EXTERN int isv_model_config_set_max_queue(isv_model_config *c, uint32_t n);
/** The deadline of requests that bring none, in microseconds (0, the default: none). Clients set
 * theirs with the request parameter "timeout" (microseconds, as Triton; for a model with queue
 * policies it is the queue timeout instead: isv_model_config_set_queue_policy) or gRPC's
 * grpc-timeout; the earliest of all wins. A request whose deadline passes while it waits never runs (HTTP 504,
 * gRPC DEADLINE_EXCEEDED); one already running is marked cancelled (isv_request_is_cancelled) and
 * answered 504 once its backend completes, whatever it completed with.
 * Any thread (the configuration's owner, one at a time).
 * @param c the configuration
 * @param us the default deadline in microseconds (0: none)
 * @return 0, or ISV_EINVAL (c NULL)
 */
ISV_EXTERN int isv_model_config_set_default_timeout_us(isv_model_config *c, uint64_t us);
/** The most priority levels a model may have (isv_model_config_set_priority_levels()). */
#define ISV_MAX_PRIORITY_LEVELS 256u
/** Priorities and queue policies (Triton's ModelDynamicBatching.priority_levels,
 * default_priority_level, default_queue_policy and priority_queue_policy, with its
 * ModelQueuePolicy) — for every model, batched or not: a model without batching has a queue
 * too. Not with sequence batching (isv_server_add_model: ISV_EINVAL), whose requests must run
 * in their sequence's order (Triton's sequence batcher has no priorities either).
 *
 * levels > 0: requests wait in one queue per level; level 1 runs first, then 2, ...; within a
 * level in arrival order. A request names its level with the parameter "priority" (V2 REST
 * and gRPC, as Triton's clients send it), or else the header Inference-Priority (a decimal
 * integer; gRPC: call metadata of that name) — what TF Serving, Vertex and grps clients, whose
 * messages have no place for it, send; any protocol's request may, its own "priority"
 * parameter winning, and a header that is no such integer is refused 400 on any model — or
 * in process isv_request_set_priority. 0 or none means default_level, a
 * level above `levels` is refused 400 / INVALID_ARGUMENT naming the range (DECISION: Triton
 * quietly runs it at the default level; a client's mistake should be heard). levels 0 (the
 * default): one level, and "priority" is not read at all. At most ISV_MAX_PRIORITY_LEVELS;
 * default_level in [1, levels] when levels > 0 (else 0), ISV_EINVAL otherwise.
 * Any thread (the configuration's owner, one at a time).
 * @param c the configuration
 * @param levels the number of levels (0: one level, "priority" not read)
 * @param default_level the level of a request that names none, in [1, levels] (0 when levels is 0)
 * @return 0, or ISV_EINVAL (c NULL, levels above ISV_MAX_PRIORITY_LEVELS, default_level out of
 *         range)
 */
ISV_EXTERN int isv_model_config_set_priority_levels(isv_model_config *c, uint32_t levels,
                                                    uint32_t default_level);
/** What happens to a request whose queue timeout passes while it waits. */
typedef enum {
  ISV_TIMEOUT_REJECT = 0, /**< it leaves the queue, answered 503 / UNAVAILABLE "Request timeout
                           * expired" (Triton's words) without running */
  ISV_TIMEOUT_DELAY = 1   /**< it moves behind every request of its level that has not timed out
                           * (those arriving later too) — still ahead of lower levels, as
                           * Triton's DELAY: it may wait indefinitely while new requests come */
} isv_timeout_action;
/** Triton's ModelQueuePolicy. Zero-initialise it and set struct_size = sizeof(isv_queue_policy);
 * fields added later are read only when struct_size covers them. */
typedef struct isv_queue_policy {
  size_t struct_size; /**< sizeof(isv_queue_policy) */
  isv_timeout_action timeout_action; /**< default ISV_TIMEOUT_REJECT */
  /** The queue timeout of every request of the level, from its submission, in µs; 0: none. */
  uint64_t default_timeout_us;
  /** Whether a request may shorten it with the "timeout" parameter (µs; Triton's; or else the
   * header or gRPC metadata Inference-Timeout-Us, as for Inference-Priority above;
   * isv_request_set_timeout_us in process): the shorter of the two applies, a longer one is
   * ignored — and with default_timeout_us 0 (no timeout) the request's own applies
   * (DECISION: Triton's code then ignores it, which its documentation does not say). */
  int allow_timeout_override;
  /** Requests that may wait at the level (timed out and delayed ones too); one more is refused
   * 503 / UNAVAILABLE "Exceeds maximum queue size" (Triton's words). 0: no bound (the model's
   * isv_model_config_set_max_queue still holds over all levels). */
  uint32_t max_queue_size;
} isv_queue_policy;
/** The queue policy of priority level `level` (Triton's priority_queue_policy), or with level 0
 * the default one (default_queue_policy) that every level without its own follows. Copied; a
 * later call for the same level replaces it. A level above the model's levels is refused by
 * isv_server_add_model (ISV_EINVAL, Triton's "priority queue policy must have priority level
 * in range [1, N]"). ISV_EINVAL: p NULL, struct_size too small, an unknown action, a level
 * above ISV_MAX_PRIORITY_LEVELS.
 *
 * A model with any priority level or queue policy set follows these rules alone for the
 * "timeout" parameter: it is the queue timeout above, honoured only with
 * allow_timeout_override, and no longer the request's deadline. Without (the default, Triton's
 * default policy but for this), "timeout" stays a deadline (isv_model_config_set_default_timeout_us:
 * 504 whether waiting or running). gRPC's grpc-timeout and the model's default timeout are
 * deadlines in both cases. A request refused by a policy (full level, timeout expired) counts
 * as a failed request in the statistics, as Triton counts it.
 * Any thread (the configuration's owner, one at a time).
 * @param c the configuration
 * @param level the priority level, or 0 for the default policy
 * @param p the policy (copied)
 * @return 0, or ISV_EINVAL (c or p NULL, struct_size too small, an unknown action, level above
 *         ISV_MAX_PRIORITY_LEVELS)
 */
ISV_EXTERN int isv_model_config_set_queue_policy(isv_model_config *c, uint32_t level,
                                                 const isv_queue_policy *p);
/** Dynamic batching (the model needs max_batch > 0): waiting requests whose inputs agree beyond
 * dimension 0 (same names, datatypes and other dimensions) and whose parameters are equal run
 * as ONE backend call, their inputs concatenated along dimension 0, at most max_batch rows.
 * Each request gets its own rows of every output back, with its own requested outputs, id,
 * deadline and response parameters (those the backend sets go to every request of the batch).
 * A batch that reaches neither max_batch nor a preferred size waits up to max_delay_us after
 * its oldest request for more; a request that cannot join waits for a later batch, in order,
 * never starved. preferred: batch sizes worth sending at once (may be NULL, n 0). Not with a
 * decoupled model or sequence batching (isv_server_add_model: ISV_EINVAL).
 * Any thread (the configuration's owner, one at a time).
 * @param c the configuration
 * @param max_delay_us how long a batch may wait for more requests, in microseconds
 * @param preferred batch sizes worth sending at once, or NULL
 * @param n how many preferred sizes
 * @return 0, or ISV_EINVAL / ISV_ENOMEM
 */
ISV_EXTERN int isv_model_config_set_dynamic_batching(isv_model_config *c, uint64_t max_delay_us,
                                                     const uint32_t *preferred, size_t n);
/** A decoupled model sends any number of responses to one request (isv_request_send_response)
 * before completing it. Only streaming endpoints carry them — gRPC ModelStreamInfer, REST
 * .../generate_stream, isv_request_set_response_cb in process; the others answer 400 naming
 * the model as decoupled. Default off.
 * Any thread (the configuration's owner, one at a time).
 * @param c the configuration
 * @param on nonzero for a decoupled model
 * @return 0, or ISV_EINVAL (c NULL)
 */
ISV_EXTERN int isv_model_config_set_decoupled(isv_model_config *c, int on);
/** Sequence batching (Triton's sequence extension, "direct" strategy), for stateful models.
 * Requests carry the parameters "sequence_id" (a uint64 > 0, or a non-empty string),
 * "sequence_start" and "sequence_end" (bools). A sequence begins with a request that sets
 * sequence_start; all its requests then run in arrival order on one instance, one at a time;
 * the backend reads the id and flags (isv_request_sequence) and keeps its state in the slot
 * isv_request_sequence_state gives it, handed back through isv_backend.sequence_end when the
 * sequence is over. A request for a sequence that is not live without sequence_start: 400. A
 * start beyond max_sequences live ones: 503. A start for a live id ends the old sequence
 * (ISV_SEQUENCE_END_RESTARTED; its requests already queued still run). idle_timeout_us: a
 * sequence with no request for this long ends (0: 1 s, Triton's default); max_sequences: 0
 * means 1024.
 * Any thread (the configuration's owner, one at a time).
 * @param c the configuration
 * @param idle_timeout_us a sequence with no request this long ends (0: 1 s)
 * @param max_sequences live sequences at most (0: 1024)
 * @return 0, or ISV_EINVAL (c NULL)
 */
ISV_EXTERN int isv_model_config_set_sequence_batching(isv_model_config *c,
                                                      uint64_t idle_timeout_us,
                                                      uint32_t max_sequences);

/** Triton's response_cache { enable: true }: this model's answers are kept in the server's
 * response cache (isv_options_set_response_cache_bytes(); without one the setting does nothing)
 * and a request equal to one answered before is answered from it, without running the model
 * and without waiting in its queue (once it passed validation and the server's in-flight limit:
 * the queue's own limits, priority levels and timeouts do not apply to a hit) —
 * statistics count it as a cache hit (Triton's cache_hit: count and lookup time; a request
 * that had to run is a cache_miss: its lookup and insertion time), not as an execution.
 * Equal means: the same model name, version and registration (a version registered again
 * starts with no answers), the same inputs by name — datatype, shape and every byte, in any
 * order —, the same requested outputs in the same order, and the same request parameters
 * except those the library consumes ("timeout", "priority", "binary_data_output"). A hit gets
 * the outputs and response parameters the backend produced, then output selection,
 * classification and output buffers apply as to any answer. Never stored: a failed, cancelled
 * or timed-out answer, one asked on a streaming endpoint, a warmup sample's. The backend must
 * be a pure function of those inputs and parameters. Not with a decoupled model or sequence
 * batching (isv_server_add_model: ISV_EINVAL, as Triton refuses them). Default off.
 * Any thread (the configuration's owner, one at a time).
 * @param c the configuration
 * @param on nonzero to cache the model's answers
 * @return 0, or ISV_EINVAL (c NULL)
 */
ISV_EXTERN int isv_model_config_set_response_cache(isv_model_config *c, int on);
/** Triton's model_warmup: samples run through the model before it serves. A version with any
 * sample starts LOADING (isv_server_add_model() returns at once); each sample runs `count`
 * times (0 counts as 1, as Triton's), in the order added, on the version's own execution path
 * (its queue, exec mode and instances: one request per instance at once, so that every
 * instance runs it — with dynamic batching they may run as one batch); the version becomes
 * READY once every run succeeded. The first failure stops the warmup and leaves it UNAVAILABLE,
 * "model warmup failed: sample '<name>': <the backend's message>" in the repository index's
 * reason and in the host's log (ERROR). Warmup requests come with the in-process protocol
 * label and are counted in the statistics like any request; they are never cached, nor traced
 * (isv_options_set_trace()). A host that sets the state meanwhile (isv_server_set_model_state())
 * decides: the warmup's end no longer changes it. A version removed meanwhile, or a server
 * closing, stops its warmup after the runs in flight (a closing server's stays LOADING).
 * A sample's inputs are given one by one (isv_model_config_add_warmup_input()).
 * Any thread (the configuration's owner, one at a time).
 * @param c the configuration
 * @param sample the sample's name (unique in the model)
 * @param batch_size >= 1; a model without batching takes 1 only (isv_server_add_model()
 *        refuses more)
 * @param count how many times it runs
 * @return 0, or ISV_EINVAL (a NULL or empty name, batch_size 0) / ISV_EEXIST (a sample name
 *         already added) / ISV_ENOMEM
 */
ISV_EXTERN int isv_model_config_add_warmup(isv_model_config *c, const char *sample,
                                           uint32_t batch_size, uint32_t count);
/** How a warmup input's data is made (Triton's zero_data, random_data, input_data_file). */
typedef enum {
  ISV_WARMUP_ZERO = 0,   /**< zeros (BYTES: empty elements) */
  ISV_WARMUP_RANDOM = 1, /**< random values: integers over their range, floats in [0, 1), BOOL
                          * 0 or 1 (BYTES: empty elements, as Triton falls back to zeros) */
  ISV_WARMUP_DATA = 2    /**< the bytes given, row-major, one batch row (BYTES: each element a
                          * u32 little-endian length then its bytes, Triton's file format) */
} isv_warmup_fill;
/** One input of sample `sample` (added before): the input's name, datatype and dims (without
 * the batch dimension; with max_batch > 0 the request is [batch_size, dims...], the sample's
 * data repeated batch_size times), and its data. Inputs the model declares and the sample
 * leaves out are left out of its requests (the model's validation then says what is missing,
 * and the warmup fails with it). Any thread (the configuration's owner, one at a time).
 * @param c the configuration
 * @param sample the sample's name
 * @param input the input's name
 * @param dt its datatype
 * @param dims its dimensions, without the batch dimension
 * @param ndim how many (at most 32)
 * @param fill zero, random or given data
 * @param data ISV_WARMUP_DATA's bytes, copied — exactly the row's bytes (BYTES: exactly its
 *        elements); NULL otherwise
 * @param byte_size data's bytes; 0 otherwise
 * @return 0, or ISV_ENOTFOUND (no such sample) / ISV_EEXIST (the input is already given) /
 *         ISV_EINVAL (a bad datatype, more than 32 dims or a negative one, data that does not
 *         match, an unknown fill) / ISV_ENOMEM
 */
ISV_EXTERN int isv_model_config_add_warmup_input(isv_model_config *c, const char *sample,
                                                 const char *input, isv_datatype dt,
                                                 const int64_t *dims, size_t ndim,
                                                 isv_warmup_fill fill, const void *data,
                                                 size_t byte_size);

typedef struct isv_model isv_model; /**< one registered (name, version) */

/* ---- Ensembles (Triton's platform "ensemble" and ensemble_scheduling) ----------------------
 * A model whose steps run other registered models of the server, passing tensors between them
 * by name: the ensemble's inputs, and each step's outputs, are "ensemble tensors"; a step
 * reads some (input_map: its model's input <- an ensemble tensor) and produces others
 * (output_map: its model's output -> an ensemble tensor); the ensemble's outputs are tensors
 * some step produced. Each step runs as soon as every tensor it reads exists — a DAG: steps
 * that do not depend on each other run at the same time (fan-out), a step may read several
 * steps' outputs (fan-in). Declare the ensemble's inputs and outputs on the config as for any
 * model (isv_model_config_add_input / _add_output, max_batch), add its steps, and register it
 * with isv_server_add_ensemble. It is then a model like the others: served over every protocol,
 * listed, with its own statistics and queue (each step is counted in its own model's statistics
 * too, under the protocol "inprocess"); its config (REST .../config, gRPC ModelConfig) shows
 * platform "ensemble" and ensemble_scheduling { step [...] } in Triton's shape.
 *
 *   const char *pre_in[] = {"IN", "RAW"},  *pre_out[] = {"OUT", "prepared"};
 *   const char *net_in[] = {"INPUT0", "prepared"}, *net_out[] = {"OUTPUT0", "SCORES"};
 *   isv_model_config_add_ensemble_step(c, "preprocess", NULL, pre_in, 1, pre_out, 1);
 *   isv_model_config_add_ensemble_step(c, "net", "1", net_in, 1, net_out, 1);
 *   isv_server_add_ensemble(srv, c, "1", NULL);       // c declares RAW in, SCORES out
 *
 * How a request runs: each step is a nested request of the ensemble's (see "Models calling
 * models" below) — its composing model's queue, instances, batching and exec mode apply.
 * Tensors are passed by reference, never copied: a step's inputs are the ensemble's inputs or
 * earlier steps' outputs in place, and the ensemble answers with the steps' output memory
 * (kept until its response was sent). A step's datatype and shape must fit the next model's
 * declaration (else that step fails). When a step fails, the request fails with that step's
 * code and a message naming it — "ensemble 'e' step 2 of 3 (model 'scale'): ..." — after the
 * steps still running were cancelled and ended (a composing model that is not registered:
 * 503 / UNAVAILABLE, not 404). The ensemble's deadline and cancellation (its client leaving,
 * isv_request_cancel, the drain) reach every step queued or running. Up to 1024 requests of one
 * ensemble run at once (isv_model_config_set_instances and _set_exec_mode are ignored: the
 * ensemble's own work is on the loop, its steps' where their models run); its queue policies
 * and timeouts apply as for any model. The authorizer judges the ensemble, not its steps. The
 * request's parameters reach each step (as Triton passes them to composing models), but
 * "timeout" — the steps inherit the remaining deadline instead — and a "priority" level the
 * step's model does not have (its default level then, as Triton normalises such a level). */

/** Add a step to c, an ensemble's config: model `model_name` (any registered model, resolved
 * per request; not the ensemble itself), version `model_version` (a decimal number, Triton's
 * int64; NULL: the model's default version — Triton's -1), input_map and output_map as
 * n_input_map / n_output_map pairs of strings, key then value: {"model input", "ensemble
 * tensor", ...} and {"model output", "ensemble tensor", ...}. Copied. Keys are unique within a
 * map, and one step produces a tensor once; the whole is checked by isv_server_add_ensemble().
 * Any thread (the configuration's owner, one at a time).
 * @param c the ensemble's configuration
 * @param model_name the step's model
 * @param model_version its version, or NULL for the default
 * @param input_map n_input_map pairs: the model's input, then the ensemble tensor it reads
 * @param n_input_map how many pairs
 * @param output_map n_output_map pairs: the model's output, then the ensemble tensor it makes
 * @param n_output_map how many pairs
 * @return 0, or ISV_EINVAL (a NULL or empty name or map entry, a duplicate key, a version that
 *         is not a number, more than 256 steps or 1024 entries) / ISV_ENOMEM
 */
ISV_EXTERN int isv_model_config_add_ensemble_step(isv_model_config *c, const char *model_name,
                                                  const char *model_version,
                                                  const char *const *input_map,
                                                  size_t n_input_map,
                                                  const char *const *output_map,
                                                  size_t n_output_map);

/** Register version `version` of the model described by c. The name may already have other
 * versions. The version starts READY (see isv_server_set_model_state) — LOADING when its
 * config has warmup samples (isv_model_config_add_warmup), until they ran. `user` is passed to
 * every backend callback. On failure the backend's destroy is NOT called (nothing was taken).
 * *out (may be NULL) receives a handle valid until the version is removed. Loop thread.
 * @param srv the server
 * @param c the model's description (copied)
 * @param version the version's name ("1"; copied)
 * @param backend the callbacks (copied; struct_size set)
 * @param user passed to every backend callback
 * @param out receives the version's handle, or NULL
 * @return 0, or ISV_EINVAL (a rule of the configuration broken: isv_server_last_error names it) /
 *         ISV_EEXIST (the version is registered) / ISV_ESTATE (closing) / ISV_ETHREAD / ISV_ENOMEM
 */
ISV_EXTERN int isv_server_add_model(isv_server *srv, const isv_model_config *c,
                                    const char *version, const isv_backend *backend, void *user,
                                    isv_model **out);
/** Register version `version` of the ensemble c describes (its steps:
 * isv_model_config_add_ensemble_step()): like isv_server_add_model(), with the library's backend
 * and platform "ensemble". The steps are checked now, the composing models are not (they may
 * be registered later; a request finds them or fails naming the step). isv_server_add_model
 * refuses a config with steps (ISV_EINVAL). Loop thread.
 * @param srv the server
 * @param c the ensemble's description (copied)
 * @param version the version's name ("1"; copied)
 * @param out receives the version's handle, or NULL
 * @return 0, or ISV_EINVAL, with isv_server_last_error() saying why: no step, a tensor produced
 *         by two steps or by a step and the ensemble's inputs, a step reading a tensor nothing
 *         produces, an ensemble output no step produces, steps that wait for each other (a
 *         cycle), a step running the ensemble itself, or options an ensemble does not take
 *         (dynamic or sequence batching, decoupled, open I/O, native); ISV_EEXIST /
 *         ISV_ESTATE / ISV_ETHREAD / ISV_ENOMEM as isv_server_add_model()
 */
ISV_EXTERN int isv_server_add_ensemble(isv_server *srv, const isv_model_config *c,
                                       const char *version, isv_model **out);
/** Remove one version (version != NULL) or every version of a model. Requests in flight
 * finish; destroy runs when the last one is done. ISV_ENOTFOUND when nothing matches. Loop
 * thread.
 * @param srv the server
 * @param name the model's name
 * @param version one version, or NULL for every version
 * @return 0, or ISV_ENOTFOUND (nothing matches) / ISV_EINVAL / ISV_ETHREAD
 */
ISV_EXTERN int isv_server_remove_model(isv_server *srv, const char *name, const char *version);
/** A version's state: only READY versions serve requests (the others answer 503), and
 * readiness reports it. ISV_ENOTFOUND for an unknown version. Loop thread.
 * @param srv the server
 * @param name the model's name
 * @param version the version
 * @param state its new state
 * @return 0, or ISV_ENOTFOUND (an unknown version) / ISV_EINVAL / ISV_ETHREAD
 */
ISV_EXTERN int isv_server_set_model_state(isv_server *srv, const char *name, const char *version,
                                          isv_model_state state);
/** A version's state, and why it is not READY when the library knows (a failed warmup:
 * "model warmup failed: sample ...", as the repository index says it) — for a host that
 * registered a version with warmup samples (LOADING until they ran) and completes its
 * repository load, or sends traffic, once it is READY. Loop thread.
 * @param srv the server
 * @param name the model's name
 * @param version the version, or NULL for the default version
 * @param state receives the state
 * @param reason receives the reason, NUL-terminated ("" when none), or NULL with cap 0
 * @param cap reason's size in bytes
 * @return 0, or ISV_ENOTFOUND (an unknown model or version) / ISV_EINVAL / ISV_ETHREAD
 */
ISV_EXTERN int isv_server_get_model_state(isv_server *srv, const char *name, const char *version,
                                          isv_model_state *state, char *reason, size_t cap);
/** Point a label ("stable", "canary") at a version; version NULL removes the label. Loop
 * thread.
 * @param srv the server
 * @param name the model's name
 * @param label the label ("stable"; copied)
 * @param version the version it points at, or NULL to remove the label
 * @return 0, or ISV_ENOTFOUND (an unknown model or version) / ISV_EINVAL / ISV_ENOMEM / ISV_ETHREAD
 */
ISV_EXTERN int isv_server_set_label(isv_server *srv, const char *name, const char *label,
                                    const char *version);
/** Vertex AI's custom-container contract: serve `model`'s predictions — Vertex's body
 * ({"instances", "parameters"?}) and answer ({"predictions", "deployedModelId"}) — at POST
 * predict_route, and the server's health at GET health_route (200 while ready, 503 otherwise):
 * the paths Vertex passes a container as AIP_PREDICT_ROUTE and AIP_HEALTH_ROUTE. Either route
 * may be NULL. The model is resolved per request (404 while unknown). Once per server:
 * ISV_ESTATE after the first success; ISV_EEXIST when a route is already served (a built-in
 * one included); ISV_EINVAL for a path that is not one. Loop thread.
 * @param srv the server
 * @param model the model whose predictions are served (resolved per request)
 * @param predict_route the path of predictions (AIP_PREDICT_ROUTE), or NULL
 * @param health_route the path of health (AIP_HEALTH_ROUTE), or NULL
 * @return 0, or ISV_ESTATE (already set) / ISV_EEXIST (a route already served) / ISV_EINVAL (not a
 *         path) / ISV_ETHREAD
 */
ISV_EXTERN int isv_server_set_vertex_routes(isv_server *srv, const char *model,
                                           const char *predict_route, const char *health_route);
/** Map a Vertex AI endpoint id to a model: POST
 * /v1/projects/{p}/locations/{l}/endpoints/{endpoint_id}:predict then runs `model` (its
 * `version`, or its default version) — a Vertex endpoint's id is a number Vertex chose, not the
 * model's name. An endpoint id that is not mapped names the model itself, as before. Mapping
 * an id again replaces its model; model NULL forgets the id. The model is resolved per request
 * (404 naming the model while it is unknown), and the authorizer's model stage judges the
 * model the endpoint maps to, never the id. Per server (each member of a group maps its own).
 * Loop thread.
 * @param srv the server
 * @param endpoint_id 1 to 128 letters, digits, '-', '_' or '.'
 * @param model the model's name (copied; under 128 bytes), or NULL to forget the id
 * @param version the version (copied; under 64 bytes), or NULL for the default
 * @return 0, or ISV_EINVAL (a bad id, model or version) / ISV_ENOTFOUND (forgetting an id not
 *         mapped) / ISV_ENOMEM / ISV_ESTATE (closing) / ISV_ETHREAD; isv_server_last_error
 *         says which
 */
ISV_EXTERN int isv_server_set_vertex_endpoint(isv_server *srv, const char *endpoint_id,
                                             const char *model, const char *version);
/** Serve the OpenAI-compatible endpoints (the "openai" front end, always under /openai/v1)
 * also under `prefix` — "/v1" for OpenAI clients given a base URL without a path
 * (http://host:8000/v1 then works as OpenAI's own). The rule with TF Serving, which owns
 * /v1/models/{m}: no precedence, a refusal — ISV_EEXIST, changing nothing, when a route already
 * served (TF Serving's, a custom route's) could take one of the prefix's paths; turn
 * "tfserving" off (isv_options_set_protocol) to serve OpenAI's API under /v1. ISV_EINVAL for
 * a prefix that is not a plain path ("/a[/b]", at most 64 bytes, no trailing '/'); ISV_ESTATE
 * when already set, or when the "openai" protocol is off. isv_server_last_error says which.
 * Loop thread.
 * @param srv the server
 * @param prefix a plain path ("/v1"), copied
 * @return 0, or ISV_EEXIST / ISV_EINVAL / ISV_ESTATE (see above; isv_server_last_error says which)
 *         / ISV_ETHREAD
 */
ISV_EXTERN int isv_server_set_openai_prefix(isv_server *srv, const char *prefix);
/** The model a request that names none is for, where a protocol allows naming none (grps: a
 * GrpsMessage without "model" and no ?model=). The name is resolved per request (404 while no
 * such model is registered); NULL or "" sets none (such requests: 404 saying so). At most 127
 * bytes (ISV_EINVAL). Loop thread.
 * @param srv the server
 * @param name the model's name (copied), or NULL or "" for none
 * @return 0, or ISV_EINVAL (longer than 127 bytes) / ISV_ETHREAD
 */
ISV_EXTERN int isv_server_set_default_model(isv_server *srv, const char *name);
/** The version used when a request names none (NULL: back to the rule). The rule: the highest
 * READY version (numeric versions compare as numbers, others as strings), else the highest
 * version. Loop thread.
 * @param srv the server
 * @param name the model's name
 * @param version the default version, or NULL for the rule
 * @return 0, or ISV_ENOTFOUND (an unknown model or version) / ISV_EINVAL / ISV_ENOMEM / ISV_ETHREAD
 */
ISV_EXTERN int isv_server_set_default_version(isv_server *srv, const char *name,
                                              const char *version);

/* ---------------------------------------------------------------------------------------------
 * Tensors (read-only views; valid while their request is). Any thread: the one that may touch
 * the request. A NULL tensor gives NULL, 0 or ISV_TYPE_INVALID.
 * ------------------------------------------------------------------------------------------- */
/** A read-only tensor: an input, or an output of a completed request. */
typedef struct isv_tensor isv_tensor;

/** The tensor's name. Any thread (the one that may touch its request).
 * @param t the tensor, or NULL
 * @return its name, NULL for a NULL tensor
 */
ISV_EXTERN const char *isv_tensor_name(const isv_tensor *t);
/** The tensor's datatype. Any thread (the one that may touch its request).
 * @param t the tensor, or NULL
 * @return its datatype, ISV_TYPE_INVALID for a NULL tensor
 */
ISV_EXTERN isv_datatype isv_tensor_datatype(const isv_tensor *t);
/** The dimensions, row-major; *ndim (ndim may be NULL) says how many.
 * Any thread (the one that may touch the tensor's request).
 * @param t the tensor, or NULL
 * @param ndim receives the number of dimensions, or NULL
 * @return the dimensions, NULL for a NULL tensor
 */
ISV_EXTERN const int64_t *isv_tensor_shape(const isv_tensor *t, size_t *ndim);
/** The number of elements: the product of the dimensions. Any thread (the one that may touch its
 * request).
 * @param t the tensor, or NULL
 * @return the element count, 0 for a NULL tensor
 */
ISV_EXTERN size_t isv_tensor_element_count(const isv_tensor *t);
/** Fixed-size types: the row-major little-endian elements, aligned to at least the element
 * size (the library copies a misaligned wire buffer rather than hand it out). BYTES: an
 * isv_bytes array of element_count entries.
 * Any thread (the one that may touch the tensor's request).
 * @param t the tensor, or NULL
 * @return the elements, NULL for a NULL tensor
 */
ISV_EXTERN const void *isv_tensor_data(const isv_tensor *t);
/** Bytes of data: element_count * size (for BYTES, the sum of the element lengths).
 * Any thread (the one that may touch the tensor's request).
 * @param t the tensor, or NULL
 * @return the bytes of its data, 0 for a NULL tensor
 */
ISV_EXTERN size_t isv_tensor_byte_size(const isv_tensor *t);

/* ---------------------------------------------------------------------------------------------
 * Parameters (request-level, string keys)
 * ------------------------------------------------------------------------------------------- */
/** The type of a parameter's value (isv_param). */
typedef enum {
  ISV_PARAM_BOOL = 1, /**< v.b */
  ISV_PARAM_INT64,    /**< v.i64 */
  ISV_PARAM_UINT64,   /**< v.u64 */
  ISV_PARAM_DOUBLE,   /**< v.d */
  ISV_PARAM_STRING    /**< v.s */
} isv_param_type;

/** Layout fixed forever. String values are not NUL-terminated-guaranteed: use len. */
typedef struct isv_param {
  isv_param_type type; /**< which member of v holds the value */
  /** The value. */
  union {
    int b;        /**< ISV_PARAM_BOOL: 0 or 1 */
    int64_t i64;  /**< ISV_PARAM_INT64 */
    uint64_t u64; /**< ISV_PARAM_UINT64 */
    double d;     /**< ISV_PARAM_DOUBLE */
    /** ISV_PARAM_STRING: the bytes (not NUL-terminated) and their length. */
    struct {
      const char *ptr; /**< the bytes */
      size_t len;      /**< how many */
    } s;
  } v;
} isv_param;

/* ---- OpenAI-compatible endpoints (the "openai" front end) ---------------------------------------
 * POST /openai/v1/chat/completions, /openai/v1/completions and /openai/v1/embeddings run the
 * model their body's "model" names: a registered name (its default version), else
 * "<name>/<version>" for one version of it (a name with a '/' of its own, as Hugging Face's
 * "org/model", is matched whole first); GET
 * /openai/v1/models lists every model and GET /openai/v1/models/{id} answers one. The same
 * routes can be served under a prefix of the host's choosing too ("/v1":
 * isv_server_set_openai_prefix). Nothing is
 * registered for them: any model whose declaration fits is served, by these tensor names
 * (Triton's generate and TensorRT-LLM conventions):
 *
 *   chat and completions — usually a DECOUPLED model (isv_model_config_set_decoupled), one
 *   isv_request_send_response per piece of text; a model that answers once works too.
 *     inputs   text_input BYTES [1]  completions: "prompt" (a string, or an array of one);
 *                                    chat: the "messages" rendered by the model's chat
 *                                    template (isv_model_config_set_chat_template), else by
 *                                    the front end's: a line `"<role>: <content>"` per message
 *                                    (text parts joined), then "assistant:" — e.g. "system:
 *                                    be brief\nuser: hi\nassistant:"
 *              messages BYTES [1]    chat, when declared: the "messages" array as the client
 *                                    sent it (JSON text), for a model that applies its own
 *                                    chat template; a chat model declares this, text_input,
 *                                    or both
 *              max_tokens (max_completion_tokens), temperature, top_p, frequency_penalty,
 *              presence_penalty, seed (or random_seed), stream: each an input when the model
 *                                    declares one of these names (a number of any of INT32,
 *                                    INT64, UINT32, UINT64, FP32, FP64; stream BOOL), with the
 *                                    client's value or else OpenAI's default (max_tokens 16
 *                                    for completions, 4096 for chat; temperature and top_p 1;
 *                                    penalties and seed 0); when not declared, a request
 *                                    parameter (isv_request_param: INT64 or DOUBLE) when the
 *                                    client gave it
 *              stop (or stop_words) BYTES [-1]  the stop sequences (0 to 4); undeclared, one
 *                                    stop sequence is the STRING parameter "stop" (more: 400)
 *              user, response_format BYTES [1]  the end user's id and the response_format
 *                                    object as sent (JSON text), empty when not given;
 *                                    undeclared, STRING parameters when the client gave them
 *     outputs  text_output BYTES     the text of this response (its elements joined)
 *              finish_reason BYTES [1]  optional, "stop" or "length" (default "stop")
 *              prompt_tokens, completion_tokens (any integer type, [1])  optional, for
 *                                    "usage" (the last value sent counts); without them
 *                                    prompt_tokens is 0 and completion_tokens the number of
 *                                    responses that carried text
 *   embeddings — text_input BYTES: the "input" strings, one per row of a batching model
 *   (max_batch >= n, declared [1]: shape [n, 1]) or along the free dimension of a model that
 *   does not batch ([-1]: shape [n]); the model answers "embedding" (else its only output),
 *   FP32 with n rows: [n, dim]. "encoding_format": "base64" sends each row as the base64 of
 *   its little-endian FP32 bytes.
 *
 * A worked example, a streaming chat model (error handling omitted):
 *
 *   static int lm_infer(isv_request *r, void *user) {          // ISV_EXEC_POOL
 *     const isv_bytes *prompt = isv_tensor_data(isv_request_input(r, "text_input"));
 *     int32_t max = *(const int32_t *)isv_tensor_data(isv_request_input(r, "max_tokens"));
 *     int64_t one = 1;
 *     int32_t n = 0;
 *     for (; n < max && !isv_request_is_cancelled(r); n++) {
 *       isv_bytes piece = next_piece(user, prompt);            // the host's model
 *       if (piece.len == 0) break;
 *       isv_request_set_output(r, "text_output", ISV_BYTES, &one, 1, &piece, 0, ISV_TRANSIENT);
 *       isv_request_send_response(r);                          // ISV_EAGAIN: wait, see above
 *     }
 *     if (isv_request_is_cancelled(r)) return isv_request_complete(r, ISV_ECANCELED, NULL);
 *     isv_bytes why = n == max ? (isv_bytes){"length", 6} : (isv_bytes){"stop", 4};
 *     isv_request_set_output(r, "finish_reason", ISV_BYTES, &one, 1, &why, 0, ISV_TRANSIENT);
 *     isv_request_set_output(r, "completion_tokens", ISV_INT32, &one, 1, &n, 4, ISV_TRANSIENT);
 *     return isv_request_complete(r, 0, NULL);
 *   }
 *   // registered: text_input BYTES [1], max_tokens INT32 [1] -> text_output BYTES [-1],
 *   // finish_reason BYTES [1], completion_tokens INT32 [1]; decoupled; ISV_EXEC_POOL
 *
 * A "stream": true request answers text/event-stream: "data: {chunk}\n\n" events, the first
 * with the role ("chat.completion.chunk", delta {"role":"assistant","content":""}), one per
 * response that carried text, one with the finish_reason, with stream_options.include_usage a
 * last one with "usage" and no choices, then "data: [DONE]\n\n". An error before the first
 * event is an ordinary JSON answer; one after it is a last event {"error": {...}} (no [DONE]).
 * A client that goes away cancels the request (isv_request_is_cancelled). Without "stream"
 * the pieces are joined into one "chat.completion" / "text_completion" object.
 *
 * Fields the front end does not know are ignored; a known field it cannot honour is refused
 * (400): n or best_of other than 1, logprobs, echo, token-id prompts, non-text content parts.
 * Errors take OpenAI's shape {"error": {"message", "type", "param", "code"}}: 400
 * invalid_request_error (param names the field), 404 model_not_found, 401 invalid_api_key
 * and 403 from the authorizer, 429 and 503 from the limits, 500 server_error. The edge (the
 * authorizer, per-client limits, CORS) and the statistics and metrics treat these requests as
 * any other (protocol label "openai"); the authorizer judges the model the body names. */

/** One message of a chat request as the OpenAI front end read it: its role and its content (a
 * string, or its text parts joined), UTF-8 as the client sent it, each NUL-terminated (len
 * without the NUL). */
typedef struct isv_chat_message {
  isv_bytes role;    /**< "system", "user", "assistant", or what the client sent */
  isv_bytes content; /**< the text ("" for a message without content) */
} isv_chat_message;

/** Where a chat template writes its prompt (the library's; valid during the call only). */
typedef struct isv_chat_prompt isv_chat_prompt;

/** A model's chat template: writes the prompt for msgs[0..n) into out
 * (isv_chat_prompt_append()) in the form the model was trained on — ChatML's
 * `"<|im_start|>user\n...<|im_end|>"`, Llama 3's headers — where the front end's own template
 * would give "user: ...". Called for every chat request to the model, once its body is read,
 * on the loop thread of the server that received it (a group's loops call it concurrently): it
 * must not block and must not call the request API. The prompt may be empty. The model still
 * receives the messages as JSON when it declares "messages".
 * @param msgs the messages, in the client's order (valid during the call)
 * @param n how many (at least 1)
 * @param out where the prompt goes
 * @param user the pointer given to isv_model_config_set_chat_template()
 * @return 0; or isv_chat_prompt_reject()'s value, ISV_EBADREQ, when the conversation does not
 *         fit the template (answered 400, invalid_request_error with param "messages" and the
 *         reason given); another ISV_E* code is the server's failure (a 5xx code as it is, any
 *         other as ISV_EBACKEND)
 */
typedef int (*isv_chat_template_fn)(const isv_chat_message *msgs, size_t n, isv_chat_prompt *out,
                                    void *user);
/** Append len bytes of s to the prompt (copied). From the template only (its thread).
 * @param out the template's out
 * @param s the bytes (may be NULL when len is 0)
 * @param len how many
 * @return 0, ISV_ENOMEM, or ISV_EINVAL for a NULL out or a NULL s with len > 0
 */
ISV_EXTERN int isv_chat_prompt_append(isv_chat_prompt *out, const char *s, size_t len);
/** Refuse the conversation: why is the 400's message. From the template only (its thread).
 * @param out the template's out
 * @param why the reason (copied, at most 255 bytes kept; NULL: a generic one)
 * @return ISV_EBADREQ, for the template to return
 */
ISV_EXTERN int isv_chat_prompt_reject(isv_chat_prompt *out, const char *why);
/** The model's chat template; only the OpenAI front end's chat endpoint calls it.
 * Any thread (the configuration's owner, one at a time).
 * @param c the config
 * @param fn the template, or NULL for the front end's own (the default)
 * @param user passed to each call
 * @return 0, or ISV_EINVAL for a NULL c
 */
ISV_EXTERN int isv_model_config_set_chat_template(isv_model_config *c, isv_chat_template_fn fn,
                                                  void *user);

/* ---------------------------------------------------------------------------------------------
 * Requests — backend side (inside infer). Functions marked "any thread" may be called by the
 * thread that runs infer or completes the request, one thread at a time per request. A request
 * is the backend's until it is completed: a call after that is a bug the library survives for a
 * while — once the request is answered and freed, readers see it empty (NULL, 0, "") and
 * writers get ISV_ESTATE — never one it honours.
 * ------------------------------------------------------------------------------------------- */
/** The name of the model r runs. Any thread.
 * @param r the request
 * @return the model's name, valid while r is
 */
ISV_EXTERN const char *isv_request_model_name(const isv_request *r);
/** The version of the model r runs. Any thread.
 * @param r the request
 * @return the version's name, valid while r is
 */
ISV_EXTERN const char *isv_request_model_version(const isv_request *r);
/** The client's request id, "" when none. Any thread.
 * @param r the request
 * @return the client's id, "" when none; valid while r is
 */
ISV_EXTERN const char *isv_request_id(const isv_request *r);
/** The W3C trace context the request came with (https://www.w3.org/TR/trace-context/): a
 * `traceparent` HTTP header or gRPC metadata entry, on every protocol, and its `tracestate`
 * (kept only with a valid traceparent, at most 512 bytes, NUL-terminated, NULL when none). A
 * backend passes it to its runtime to join the caller's trace. A value that does not parse is
 * ignored, never an error (the spec's rule): the request then has none. 0 with *out filled,
 * or ISV_ENOTFOUND. Any thread. */
typedef struct isv_trace_context {
  uint8_t trace_id[16]; /**< the trace id */
  uint8_t parent_id[8]; /**< the caller's span */
  uint8_t flags;        /**< bit 0: sampled */
  const char *tracestate; /**< the tracestate, NUL-terminated, or NULL */
} isv_trace_context;
/** The W3C trace context r came with (isv_trace_context above says what it holds and when it is
 * missing). Any thread.
 * @param r the request
 * @param out receives the trace context; its tracestate is valid while r is
 * @return 0 with *out filled, or ISV_ENOTFOUND (no valid traceparent)
 */
ISV_EXTERN int isv_request_trace_context(const isv_request *r, isv_trace_context *out);
/** The number of inputs r carries. Any thread.
 * @param r the request
 * @return the input count
 */
ISV_EXTERN size_t isv_request_input_count(const isv_request *r);
/** An input by position (NULL past the end) or by name (NULL when absent). Any thread.
 * @param r the request
 * @param i the input's position, 0-based
 * @return the input, NULL past the end
 */
ISV_EXTERN const isv_tensor *isv_request_input_at(const isv_request *r, size_t i);
/** An input by name (NULL when absent): see isv_request_input_at(). Any thread.
 * @param r the request
 * @param name the input's name
 * @return the input, NULL when r has none of that name
 */
ISV_EXTERN const isv_tensor *isv_request_input(const isv_request *r, const char *name);
/** Request parameters by key (NULL when absent) or by position. Any thread.
 * @param r the request
 * @param key the parameter's key
 * @return the parameter, NULL when absent; valid while r is
 */
ISV_EXTERN const isv_param *isv_request_param(const isv_request *r, const char *key);
/** The number of request parameters r carries (isv_request_param_at() reads them). Any thread.
 * @param r the request
 * @return the parameter count
 */
ISV_EXTERN size_t isv_request_param_count(const isv_request *r);
/** A request parameter by position (see isv_request_param()). Any thread.
 * @param r the request
 * @param i the parameter's position, 0-based
 * @param v receives the parameter's value (NULL past the end)
 * @return the parameter's key, NULL past the end; valid while r is
 */
ISV_EXTERN const char *isv_request_param_at(const isv_request *r, size_t i, const isv_param **v);
/** Whether the client asked for this output (it asked for all when it named none). A backend
 * may skip unrequested outputs; the library drops any it produces anyway. Any thread.
 * @param r the request
 * @param name the output's name
 * @return 1 when the client asked for it (or for every output), 0 when not
 */
ISV_EXTERN int isv_request_is_output_requested(const isv_request *r, const char *name);
/** Allocate output `name` (declared in the model config, datatype must match, shape must fit
 * the declared one with its batch dimension) and return its buffer in *data (16-byte
 * aligned), owned by the library and written to the client in place. BYTES: *data is an
 * isv_bytes array whose entries the backend fills with memory that stays valid until the
 * request completes (isv_request_alloc() memory, or its own). ISV_EINVAL when a rule is broken
 * (the request keeps which one, for the 500 its client gets if the backend returns the code),
 * ISV_EEXIST when the output is already set, ISV_ESTATE after isv_request_complete,
 * ISV_ENOMEM. Any thread.
 * @param r the request
 * @param name a declared output (copied for an open-I/O model)
 * @param dt its datatype, which must be the declared one
 * @param shape its dimensions, which must fit the declared ones
 * @param ndim how many dimensions
 * @param data receives the buffer to fill (NULL on failure)
 * @return 0, or ISV_EINVAL (a rule broken) / ISV_EEXIST (already set) / ISV_ESTATE (after
 *         completion) / ISV_ENOMEM
 */
ISV_EXTERN int isv_request_alloc_output(isv_request *r, const char *name, isv_datatype dt,
                                  const int64_t *shape, size_t ndim, void **data);
/** Set output `name` to memory the backend already holds, without a copy: a pass-through of an
 * input, a tensor the model keeps, a buffer from the backend's own pool. Name, datatype and
 * shape follow isv_request_alloc_output(). `data` follows the buffer contract above, where "done"
 * means the request is freed (after its response was written, or by the in-process client):
 *   ISV_STATIC     stays valid and unchanged until then — an input of this request
 *                  (isv_tensor_data), isv_request_alloc() memory, or the backend's own;
 *   ISV_TRANSIENT  copied before the call returns;
 *   a destructor   called with `data` when the request is freed, or at once if this fails.
 * Fixed-size types: byte_size must be element_count * size; memory not aligned to the element
 * size is copied. BYTES: data is an isv_bytes array of element_count entries (byte_size is
 * ignored) whose element memory lives as long as the array. ISV_EEXIST when the output is
 * already set. Any thread (the one running the backend, before it completes).
 * @param r the request
 * @param name a declared output (copied for an open-I/O model)
 * @param dt its datatype, which must be the declared one
 * @param shape its dimensions, which must fit the declared ones
 * @param ndim how many dimensions
 * @param data the elements (fixed-size types) or an isv_bytes array (BYTES)
 * @param byte_size the bytes of data (fixed-size types; ignored for BYTES)
 * @param del ISV_STATIC, ISV_TRANSIENT or a destructor (the buffer contract above)
 * @return 0, or ISV_EINVAL (a rule broken) / ISV_EEXIST (already set) / ISV_ESTATE (after
 *         completion) / ISV_ENOMEM; del is called at once when the call fails
 */
ISV_EXTERN int isv_request_set_output(isv_request *r, const char *name, isv_datatype dt,
                                      const int64_t *shape, size_t ndim, const void *data,
                                      size_t byte_size, isv_destructor del);
/** Whether the client is gone (disconnect, RST_STREAM, gRPC cancel, isv_request_cancel) or
 * the request's deadline passed. A backend may then stop early and complete with
 * ISV_ECANCELED; the answer goes nowhere when the client is gone, and is 504 when the deadline
 * passed. Any thread.
 * @param r the request
 * @return 1 when the client is gone or the deadline passed, 0 otherwise
 */
ISV_EXTERN int isv_request_is_cancelled(const isv_request *r);
/** Attach a parameter to the response (V2 REST "parameters", ModelInferResponse.parameters).
 * Key and string values are copied; a repeated key replaces the earlier value. ISV_EINVAL
 * for a request not submitted, ISV_ESTATE once it completed. Any thread (the one running the
 * backend, before it completes).
 * @param r the request
 * @param key the parameter's key (copied)
 * @param value its value (copied, string values too)
 * @return 0, or ISV_EINVAL (a request not submitted, a NULL argument) / ISV_ESTATE (completed) /
 *         ISV_ENOMEM
 */
ISV_EXTERN int isv_request_set_response_param(isv_request *r, const char *key,
                                              const isv_param *value);
/** Which instance of the model runs r: 0..instances-1 (isv_model_config_set_instances). Any
 * thread (the one running the backend).
 * @param r the request
 * @return the instance's index, 0..instances-1
 */
ISV_EXTERN unsigned isv_request_instance(const isv_request *r);
/** isv_request_sequence(): the request starts its sequence. */
#define ISV_SEQUENCE_FLAG_START 1u
/** isv_request_sequence(): the request ends its sequence. */
#define ISV_SEQUENCE_FLAG_END 2u
/** Sequence batching: r's flags (ISV_SEQUENCE_FLAG_START and/or ISV_SEQUENCE_FLAG_END, or 0 in
 * between) and its sequence's id — numeric in *id (*id_str NULL) or a string in *id_str (*id 0); id
 * and id_str may be NULL. -1 when r belongs to no sequence. Any thread (the one running the
 * backend).
 * @param r the request
 * @param id receives the numeric id (0 for a string id), or NULL
 * @param id_str receives the string id (NULL for a numeric id), or NULL
 * @return the flags (ISV_SEQUENCE_FLAG_START, ISV_SEQUENCE_FLAG_END, or 0), -1 when r belongs to no
 *         sequence
 */
ISV_EXTERN int isv_request_sequence(const isv_request *r, uint64_t *id, const char **id_str);
/** The state slot of r's sequence: NULL at its start; what the backend stores there is handed
 * back by isv_backend.sequence_end. NULL when r belongs to no sequence. Any thread (the one
 * running the backend: a sequence's requests never run at once).
 * @param r the request
 * @return the address of the sequence's state slot, NULL when r belongs to no sequence
 */
ISV_EXTERN void **isv_request_sequence_state(isv_request *r);
/** Decoupled models: send the outputs and response parameters set so far as one response, now, and
 * start the next one empty. isv_request_complete() ends the stream (outputs set then form a last
 * response). ISV_ESTATE when the model is not decoupled or r is complete. Any thread (the one
 * running the backend). Backpressure: ISV_EAGAIN when the stream's client has not taken what was
 * sent so far (isv_options_set_max_queued_stream_bytes / _conn_bytes; a response counts its
 * outputs' bytes, the memory it holds — 8 KiB at the least — and a small constant; a piece queued
 * on the connection its bytes and 256 more). Nothing was sent then: the outputs and parameters stay
 * set on r, and the same call may be repeated later. The call never blocks; learn when to retry
 * with isv_request_on_writable.
 * @param r the request of a decoupled model
 * @return 0 (sent), or ISV_EAGAIN (nothing sent: retry after isv_request_on_writable's callback) /
 *         ISV_ESTATE (not decoupled, or completed) / ISV_ENOMEM
 */
ISV_EXTERN int isv_request_send_response(isv_request *r);
/** Decoupled models: cb(r, user) runs ONCE, on the loop thread, when r's stream can take more
 * responses — at once (the next loop turn) when it already can — or when r was cancelled (the
 * client left, the deadline passed: check isv_request_is_cancelled and complete). A second call
 * replaces the first callback. cb must not block (it runs on the host's loop): a backend on a
 * worker thread typically signals its own condition variable there. Never called after r was
 * completed. 0, or ISV_EINVAL / ISV_ESTATE (r is complete, or not decoupled). Any thread (the
 * one running the backend). */
typedef void (*isv_writable_cb)(isv_request *r, void *user);
/** Install the once-only callback of a decoupled request's stream (isv_writable_cb above says when
 * it runs). Any thread (the one running the backend).
 * @param r the request of a decoupled model
 * @param cb called once, on the loop thread
 * @param user passed to cb
 * @return 0, or ISV_EINVAL / ISV_ESTATE (r is complete, or not decoupled)
 */
ISV_EXTERN int isv_request_on_writable(isv_request *r, isv_writable_cb cb, void *user);
/** Memory that lives as long as the request (freed with it). NULL when out of memory.
 * Any thread (the one running the backend).
 * @param r the request
 * @param n bytes
 * @return the memory, NULL when out of memory
 */
ISV_EXTERN void *isv_request_alloc(isv_request *r, size_t n);
/** Finish the request: status 0, or an error with a message (copied; may be NULL) that the
 * client sees. ISV_EBACKEND is the usual code for a model failure (HTTP 500); ISV_EBADREQ says
 * the client's data was wrong (400). ISV_EINVAL and ISV_EEXIST — what the library's own calls
 * return when a backend breaks their rules — and any code that is not an ISV_E* code (a
 * -errno, an HTTP-like 500) are the backend's fault: the client gets ISV_EBACKEND with the
 * message (or the rule the failed call found broken), and the host's log a WARN line. From ANY
 * thread, exactly once; the backend must not touch r afterwards. A second completion is
 * refused with ISV_ESTATE (so are outputs set after completing) — even once the response went
 * out and r was freed, for the library keeps a freed request's struct dead while the next
 * 1024 requests of the server are freed; past that the call is a use after free.
 * @param r the request; not to be touched afterwards
 * @param status 0, or an ISV_E* code
 * @param message the error's text for the client (copied), or NULL
 * @return 0, or ISV_ESTATE (already completed) / ISV_EINVAL (r NULL)
 */
ISV_EXTERN int isv_request_complete(isv_request *r, int status, const char *message);

/* ---------------------------------------------------------------------------------------------
 * Requests — client side, in process (no sockets), through the same path as the network. A
 * request being built belongs to its creator: any thread, one at a time, until it is handed
 * to isv_server_infer (loop thread); after its callback, the loop thread.
 * ------------------------------------------------------------------------------------------- */
/** Called on the loop thread when an in-process request is done (status 0 or its ISV_E* code),
 * or with each response of a decoupled model (isv_request_set_response_cb()). */
typedef void (*isv_infer_cb)(isv_request *r, int status, void *data);

/** A new request for model `name`, version `version` (NULL = default version). ISV_ENOTFOUND
 * (and isv_server_last_error naming it) when no such model or version is registered. Loop
 * thread.
 * @param srv the server
 * @param name the model's name
 * @param version the version, or NULL for the default version
 * @param out receives the request; free it with isv_request_free()
 * @return 0, or ISV_ENOTFOUND (no such model or version) / ISV_EINVAL / ISV_ENOMEM / ISV_ETHREAD
 */
ISV_EXTERN int isv_request_new(isv_server *srv, const char *name, const char *version,
                               isv_request **out);
/** The same, naming the version by a label (isv_server_set_label): the version the label points
 * to when the request is submitted. ISV_ENOTFOUND (and isv_server_last_error naming it) when
 * the model or the label is unknown. Loop thread.
 * @param srv the server
 * @param name the model's name
 * @param label the version's label
 * @param out receives the request; free it with isv_request_free()
 * @return 0, or ISV_ENOTFOUND (unknown model or label) / ISV_EINVAL / ISV_ENOMEM / ISV_ETHREAD
 */
ISV_EXTERN int isv_request_new_by_label(isv_server *srv, const char *name, const char *label,
                                        isv_request **out);
/** Free a request that was never submitted, or whose done callback has run (inside the callback
 * too) — and a response handed to a response callback. Every request must be freed before the
 * server's close callback runs. A request the close abandoned (answered ISV_EUNAVAIL while its
 * backend still ran it, isv_options_set_drain_timeout_ms) shows no outputs, and its memory is
 * kept until the backend completes it: its ISV_STATIC inputs must stay valid until then (give
 * them a destructor to learn when).
 * Any thread before the request is submitted; the loop thread once its done callback ran.
 * @param r the request (or a response handed to a response callback), or NULL
 */
ISV_EXTERN void isv_request_free(isv_request *r);
/** The request id echoed in responses (copied).
 * Any thread (the request's creator, one at a time), before isv_server_infer().
 * @param r the request
 * @param id the id (copied)
 * @return 0, or ISV_EINVAL / ISV_ENOMEM
 */
ISV_EXTERN int isv_request_set_id(isv_request *r, const char *id);
/** A trace context for an in-process request, as the network front ends read it from a
 * `traceparent` (and `tracestate`, may be NULL) value: ISV_EINVAL when traceparent does not
 * parse or tracestate is not one to keep (both copied). Before isv_server_infer.
 * Any thread (the request's creator, one at a time), before isv_server_infer().
 * @param r the request
 * @param traceparent a W3C traceparent value (copied)
 * @param tracestate a tracestate value (copied), or NULL
 * @return 0, or ISV_EINVAL (does not parse, or a tracestate not to keep)
 */
ISV_EXTERN int isv_request_set_trace_context(isv_request *r, const char *traceparent,
                                             const char *tracestate);
/** Add an input; `data` follows the buffer contract above (for BYTES: an isv_bytes array whose
 * element memory follows the same rule as the array).
 * Any thread (the request's creator, one at a time), before isv_server_infer().
 * @param r the request
 * @param name the input's name (copied)
 * @param dt its datatype
 * @param shape its dimensions
 * @param ndim how many dimensions
 * @param data the elements (fixed-size types) or an isv_bytes array (BYTES)
 * @param byte_size the bytes of data (fixed-size types)
 * @param del ISV_STATIC, ISV_TRANSIENT or a destructor (the buffer contract above)
 * @return 0, or ISV_EINVAL (a NULL argument, a rule broken) / ISV_ENOMEM
 */
ISV_EXTERN int isv_request_add_input(isv_request *r, const char *name, isv_datatype dt,
                                     const int64_t *shape, size_t ndim, const void *data,
                                     size_t byte_size, isv_destructor del);
/** Ask for one output (none asked = every output). classification > 0 turns it into the top-k
 * "value:index[:label]" BYTES output of the classification extension.
 * Any thread (the request's creator, one at a time), before isv_server_infer().
 * @param r the request
 * @param name the output's name (copied)
 * @param classification the top k classes to answer instead, or 0 for the tensor itself
 * @return 0, or ISV_EINVAL / ISV_ENOMEM
 */
ISV_EXTERN int isv_request_add_requested_output(isv_request *r, const char *name,
                                                uint32_t classification);
/** Ask for one output written into the caller's own buffer `buf` of `size` bytes (the way a
 * trusted client's shared memory region receives its output:
 * isv_options_set_shared_memory_in_place): the backend's
 * isv_request_alloc_output() writes straight into buf when the output fits and buf is 16-byte
 * aligned, else the output is copied there once after the backend (BYTES outputs as their
 * u32-LE length + bytes form). An output larger than `size` fails the request with ISV_EBADREQ
 * naming both sizes. buf is the caller's (ISV_STATIC-like): it must stay valid, and not be
 * read, until the request's done callback; the output tensor's data then points into it
 * (BYTES: an isv_bytes array of library memory, the serialised form in buf). Before
 * isv_server_infer. ISV_EINVAL (NULL name, NULL buf with a size, submitted), ISV_ENOMEM.
 * Any thread (the request's creator, one at a time), before isv_server_infer().
 * @param r the request
 * @param name the output's name (copied)
 * @param buf the caller's buffer
 * @param size its size in bytes
 * @return 0, or ISV_EINVAL (NULL name, NULL buf with a size, submitted) / ISV_ENOMEM
 */
ISV_EXTERN int isv_request_add_requested_output_buffer(isv_request *r, const char *name, void *buf,
                                             size_t size);
/** Copies key and value (string values too). A repeated key replaces the earlier value.
 * Any thread (the request's creator, one at a time), before isv_server_infer().
 * @param r the request
 * @param key the parameter's key (copied)
 * @param value its value (copied)
 * @return 0, or ISV_EINVAL / ISV_ENOMEM
 */
ISV_EXTERN int isv_request_set_param(isv_request *r, const char *key, const isv_param *value);
/** The request's priority level (isv_model_config_set_priority_levels): the parameter
 * "priority" (uint64) as a V2 client sends it; 0 is the model's default level. Before
 * isv_server_infer.
 * Any thread (the request's creator, one at a time), before isv_server_infer().
 * @param r the request
 * @param level the priority level (0: the model's default)
 * @return 0, or ISV_EINVAL / ISV_ESTATE (submitted)
 */
ISV_EXTERN int isv_request_set_priority(isv_request *r, uint64_t level);
/** The request's timeout in µs: the parameter "timeout" as a V2 client sends it (Triton's) — a
 * queue timeout for a model with queue policies (honoured with allow_timeout_override), a
 * deadline for the others (isv_model_config_set_queue_policy says which). Before
 * isv_server_infer.
 * Any thread (the request's creator, one at a time), before isv_server_infer().
 * @param r the request
 * @param us the timeout in microseconds
 * @return 0, or ISV_EINVAL / ISV_ESTATE (submitted)
 */
ISV_EXTERN int isv_request_set_timeout_us(isv_request *r, uint64_t us);
/** For a decoupled model: cb runs on the loop thread for each response the backend sends
 * (isv_request_send_response), in order, all before the request's done callback. Its first
 * argument is a new object holding that one response: read it with isv_request_output_* and
 * isv_request_response_param_*, then free it with isv_request_free (in cb or later). Without
 * it, a request to a decoupled model fails 400. Before isv_server_infer.
 * @param r the request
 * @param cb called for each response, on the loop thread
 * @param data passed to cb
 * @return 0, or ISV_EINVAL (a NULL argument, submitted)
 */
ISV_EXTERN int isv_request_set_response_cb(isv_request *r, isv_infer_cb cb, void *data);
/** Cancel a submitted request: if it still waits it never runs and completes ISV_ECANCELED at
 * once; if it runs, the backend sees isv_request_is_cancelled(). 0, or ISV_ESTATE when it is not
 * in flight. Loop thread.
 * @param r the request
 * @return 0, or ISV_ESTATE (not in flight) / ISV_EINVAL
 */
ISV_EXTERN int isv_request_cancel(isv_request *r);
/** Run it. cb runs on the loop thread once the request is done — possibly before this function
 * returns, when the backend completes inline. In cb, read the result with the functions below;
 * then free the request (in cb or later).
 * @param srv the server
 * @param r the request (from isv_request_new on this server)
 * @param cb called once on the loop thread when the request is done
 * @param data passed to cb
 * @return 0 (cb will run, perhaps already ran), or an ISV_E* code and cb is not called
 *         (isv_server_last_error says why)
 */
ISV_EXTERN int isv_server_infer(isv_server *srv, isv_request *r, isv_infer_cb cb, void *data);
/** After completion (in the callback or later, loop thread): the error message ("" on
 * success), and the outputs in the order the model declares them (or that the client
 * requested them).
 * @param r a completed request
 * @return its error message, "" on success; valid while r is
 */
ISV_EXTERN const char *isv_request_error_message(const isv_request *r);
/** The number of outputs of a completed request (or of a response a response callback got). Loop
 * thread, after completion.
 * @param r the completed request or response
 * @return the output count
 */
ISV_EXTERN size_t isv_request_output_count(const isv_request *r);
/** An output of a completed request by position, in the order the model declares them (or the
 * client requested them). Loop thread, after completion.
 * @param r the completed request or response
 * @param i the output's position, 0-based
 * @return the output, NULL past the end
 */
ISV_EXTERN const isv_tensor *isv_request_output_at(const isv_request *r, size_t i);
/** An output of a completed request by name. Loop thread, after completion.
 * @param r the completed request or response
 * @param name the output's name
 * @return the output, NULL when absent
 */
ISV_EXTERN const isv_tensor *isv_request_output(const isv_request *r, const char *name);
/** The parameters the backend attached to the response (after completion, loop thread).
 * @param r the completed request or response
 * @return the number of response parameters
 */
ISV_EXTERN size_t isv_request_response_param_count(const isv_request *r);
/** A response parameter by position (see isv_request_response_param_count()). Loop thread, after
 * completion.
 * @param r the completed request or response
 * @param i the parameter's position, 0-based
 * @param v receives the value (NULL past the end)
 * @return the parameter's key, NULL past the end; valid while r is
 */
ISV_EXTERN const char *isv_request_response_param_at(const isv_request *r, size_t i,
                                                     const isv_param **v);

/* ---------------------------------------------------------------------------------------------
 * Models calling models (Triton's business logic scripting): a backend infers another model of
 * its server and uses its outputs. Ensembles (below) are built on these calls.
 *
 *   static int bls_infer(isv_request *req, void *user) {          // ISV_EXEC_POOL
 *     isv_request *sub;
 *     int rc = isv_request_new_nested(req, "preprocess", NULL, &sub);
 *     if (rc == 0) rc = isv_request_add_input(sub, "IN", ISV_FP32, shape, 2,
 *                                             isv_tensor_data(isv_request_input(req, "X")),
 *                                             bytes, ISV_STATIC);  // the parent's, no copy
 *     if (rc == 0) rc = isv_request_run(sub);                      // blocks this worker
 *     if (rc != 0) return isv_request_complete(req, rc, isv_request_error_message(sub));
 *     const isv_tensor *y = isv_request_output(sub, "OUT");
 *     isv_request_set_output(req, "Y", ISV_FP32, isv_tensor_shape(y, NULL), 2,
 *                            isv_tensor_data(y), isv_tensor_byte_size(y), ISV_STATIC);
 *     return isv_request_complete(req, 0, NULL);                   // sub: freed with req
 *   }
 *
 * Threads — the rule a nested call never breaks: nobody waits for a thread that cannot come.
 *  - ISV_EXEC_POOL (a worker thread): isv_request_run blocks, or isv_request_submit calls back.
 *    A blocking call never waits for a worker that cannot come: the nested model, when it runs
 *    on the pool (ISV_EXEC_POOL, not batched with other requests), runs on the waiting thread
 *    itself — no hop to another worker — and a worker that waits does not count as one while
 *    it waits: the pool starts another thread when jobs are queued and none is idle (one per
 *    waiting worker at most, 256 beyond isv_options_set_worker_threads at most; they stay
 *    until the close). So workers all blocked in nested calls still run what they wait for,
 *    an execution queued behind them holding the instance a nested request needs included.
 *  - ISV_EXEC_INLINE (the loop thread): isv_request_submit only (isv_request_run answers
 *    ISV_ETHREAD: the loop would wait for itself). The callback runs on the loop — at once,
 *    before isv_request_submit returns, when the nested model is inline too, so the backend
 *    can still complete before it returns; otherwise an inline backend that has a nested
 *    request in flight may return 0 without completing, and completes from the callback.
 *  - ISV_EXEC_ASYNC: isv_request_submit from infer (the loop) or from the backend's own
 *    threads; isv_request_run from its own threads (never the loop), where a nested POOL
 *    model runs too, as on a worker.
 * A nested request must not run a model version already on its call chain (a model calling
 * itself, directly or through others, could wait for the instance its caller holds): it fails
 * with ISV_EINVAL naming it. Chains are at most 16 deep.
 *
 * What a nested request is: an in-process request of the parent's server (every rule of
 * isv_request_new and isv_server_infer applies: validation, queues, instances, batching;
 * statistics count it under the protocol "inprocess"; the authorizer is not asked — the
 * parent's request was judged), which also inherits the parent's deadline (its remaining time)
 * and trace context, and is cancelled when the parent is (its client left, its deadline
 * passed, the server's drain). Ownership: the parent owns it. The backend may free it with
 * isv_request_free once it is done (on any thread; off the loop thread its memory is kept until
 * the parent's is released) or leave it: it is freed with the parent — so its outputs, and its
 * ISV_STATIC inputs pointing into the parent's, stay valid until the parent's response was
 * sent, and the parent may answer them as its own outputs by reference (ISV_STATIC), without a
 * copy. A parent completed while nested requests still run: they are cancelled when the parent
 * is freed, their callbacks do not run any more, and the library frees them. */

/** A request to model `name`, version `version` (NULL: the default version), made by the
 * backend running `parent` (the request its infer was handed). Fill it as an in-process
 * request (isv_request_add_input(), isv_request_add_requested_output(),
 * isv_request_set_param()...), then isv_request_submit() or isv_request_run() it. The model is
 * resolved when it is submitted (an unknown one fails it with ISV_ENOTFOUND then).
 * Any thread (the one running parent's backend).
 * @param parent the request the backend was handed
 * @param name the model to run
 * @param version its version, or NULL for the default
 * @param out receives the nested request (owned by parent)
 * @return 0, or ISV_EINVAL (no name, out NULL, the chain would be more than 16 deep) /
 *         ISV_ESTATE (parent is not running: completed, or not an execution a backend was
 *         handed) / ISV_ENOMEM
 */
ISV_EXTERN int isv_request_new_nested(isv_request *parent, const char *name, const char *version,
                                      isv_request **out);
/** Run nested request r; cb(r, status, data) runs once on the loop thread when it is done
 * (possibly before this returns, see above): read its outputs there (or later, on the
 * backend's thread), free it or leave it to its parent. Any thread (the parent's backend's).
 * @param r a request isv_request_new_nested() made
 * @param cb the completion callback
 * @param data passed to cb
 * @return 0, or ISV_EINVAL (r is not a nested request, cb NULL) / ISV_ESTATE (submitted
 *         already, its parent completed, the server closed)
 */
ISV_EXTERN int isv_request_submit(isv_request *r, isv_infer_cb cb, void *data);
/** Run nested request r and wait for it; then its outputs are readable on this thread. Any
 * thread but the loop's (the parent's backend's).
 * @param r a request isv_request_new_nested() made
 * @return its status: 0, or the ISV_E* code it failed with (isv_request_error_message(r) says
 *         why); ISV_ETHREAD on the loop thread; ISV_EINVAL / ISV_ESTATE as
 *         isv_request_submit()
 */
ISV_EXTERN int isv_request_run(isv_request *r);

/* ---------------------------------------------------------------------------------------------
 * Model repository (Triton's model repository extension: V2 REST POST /v2/repository/index,
 * /v2/repository/models/{m}/load and /unload; gRPC RepositoryIndex, RepositoryModelLoad,
 * RepositoryModelUnload). The library keeps no model files: what "loading" means is the host's. -
 * index: the registered models (every version, its state from the registry: READY, LOADING,
 * UNAVAILABLE...), plus the models the host's list() names that are not registered (state
 * UNAVAILABLE with the host's reason, or the name alone), sorted by name then version. Served with
 * or without callbacks. - load / unload: forwarded to the host's callbacks, which register or
 * remove the model themselves (isv_server_add_model, isv_server_remove_model) and then complete the
 * operation. A load's "config" parameter (Triton's model config as JSON) reaches the host checked
 * to be a JSON object; "file:..." parameters are refused (501), other parameters too (400);
 * unload's "unload_dependents" (bool) is passed on. Without callbacks both answer 503 "explicit
 * model load / unload is not allowed: ..." (Triton's words for a server without model control), and
 * server metadata does not list "model_repository". Operations run one at a time, in arrival order
 * (a second waits until the first completes): the host never sees two at once on one server. In a
 * group (isv_options_set_group) the callbacks are each member's and so is that order: members given
 * callbacks may call them at the same time from their own threads (the registration a load makes is
 * the group's). Each runs like a request of a hidden model version ("@repository" in /metrics): a
 * client that goes away, a deadline (gRPC's grpc-timeout) or the server's close never frees an
 * operation under the host — its answer is just dropped.
 * ------------------------------------------------------------------------------------------- */
/** The list a repository's list() callback fills (isv_repository_list_add()). */
typedef struct isv_repository_list isv_repository_list;
/** One load or unload handed to the host, completed with isv_repository_op_complete(). */
typedef struct isv_repository_op isv_repository_op;

/** The host's callbacks. Zero-initialise it and set struct_size = sizeof(isv_repository);
 * fields added later are read only when struct_size covers them. Every callback runs on the
 * loop thread; strings passed to them live until the call returns (list) or until the
 * operation is completed (load, unload). */
typedef struct isv_repository {
  size_t struct_size; /**< sizeof(isv_repository) */
  void *user; /**< passed to every callback; must stay valid until the server's close callback */
  /** The models the host can load: isv_repository_list_add() for each (inside this call
   * only). May be NULL: the index then shows the registered models only. */
  void (*list)(void *user, isv_repository_list *out);
  /** Load (or reload) model `name`; config_json: the client's config override, a JSON object
   * (NULL when none). Register the model (isv_server_add_model), then complete op. */
  void (*load)(void *user, isv_repository_op *op, const char *name, const char *config_json);
  /** Unload model `name` (and, when unload_dependents, the models loaded with it): remove it
   * (isv_server_remove_model: requests in flight on it still finish), then complete op. */
  void (*unload)(void *user, isv_repository_op *op, const char *name, int unload_dependents);
} isv_repository;

/** Serve the model repository extension through `repo` (copied; load and unload required,
 * list optional). Once per server: ISV_ESTATE when already set or closing; ISV_EINVAL for a
 * missing callback or a struct_size too small. isv_server_last_error says which. Loop
 * thread.
 * @param srv the server
 * @param repo the callbacks (copied)
 * @return 0, or ISV_ESTATE (already set, closing) / ISV_EINVAL (a missing callback, struct_size too
 *         small) / ISV_ETHREAD
 */
ISV_EXTERN int isv_server_set_repository(isv_server *srv, const isv_repository *repo);
/** From list(): model `name` can be loaded. A name that is registered, or already added, is
 * skipped (the registry's state wins). Indexed as {"name", "state": "UNAVAILABLE", "reason"}
 * with a reason (e.g. "unloaded"), or as {"name"} alone without (Triton's entry for a model
 * never loaded). Name and reason are copied; bytes that are not UTF-8 become '?'. 0, or
 * ISV_EINVAL (no list, an empty name) / ISV_ENOMEM. Loop thread, inside list() only.
 * @param out the list list() was given
 * @param name a model the host can load (copied)
 * @param reason why it is not loaded ("unloaded"; copied), or NULL
 * @return 0, or ISV_EINVAL (no list, an empty name) / ISV_ENOMEM
 */
ISV_EXTERN int isv_repository_list_add(isv_repository_list *out, const char *name,
                                       const char *reason);
/** Complete a load or unload exactly once: status 0 (the client gets 200 with an empty body,
 * or an empty gRPC response), or an ISV_E* code and a message (copied; may be NULL) — e.g.
 * ISV_ENOTFOUND for a model the host does not have (404), ISV_EBADREQ for a config it cannot
 * honour (400), ISV_EBACKEND when loading failed (500). Codes follow isv_request_complete's
 * rules (ISV_EINVAL, ISV_EEXIST and non-ISV_E* codes become 500 and a WARN line). From any
 * thread — the answer reaches the loop through the library's async handle — but register or
 * remove the model on the loop thread BEFORE completing. A second completion is refused with
 * ISV_ESTATE (isv_request_complete's guarantee). After completing, op and the strings passed
 * with it are gone.
 * @param op the operation; gone afterwards
 * @param status 0, or an ISV_E* code
 * @param message the error's text (copied), or NULL
 * @return 0, or ISV_ESTATE (already completed)
 */
ISV_EXTERN int isv_repository_op_complete(isv_repository_op *op, int status, const char *message);

/* ---------------------------------------------------------------------------------------------
 * Custom HTTP routes (grps's "customized predict"): the host's own endpoints — an OpenAI-style
 * /v1/chat/completions streaming Server-Sent Events, a form upload — on the server's
 * connections (HTTP/1.1 and h2c), with its limits, timeouts, cancellation, metrics and
 * scheduling: each route runs like a model of its own (its handler is its backend: inline, on
 * the worker pool or async; `instances` at once, the rest queued), shown in /metrics as model
 * `"@route <METHOD> <path>"` and invisible to every model listing and lookup.
 * ------------------------------------------------------------------------------------------- */
/** A request to a custom route, handed to its handler (isv_route_cb). */
typedef struct isv_http_request isv_http_request;

/** Answer req — now or later, from any thread — exactly once: isv_http_respond(), or
 * isv_http_begin() + isv_http_write()* + isv_http_end(). 0, or a nonzero code without
 * answering: the client gets that error as a backend's failure would be (500, or the ISV_E*
 * code's status). */
typedef int (*isv_route_cb)(isv_http_request *req, void *user);

/** Zero-initialise it and set struct_size = sizeof(isv_route); fields added later are read only
 * when struct_size covers them. */
typedef struct isv_route {
  size_t struct_size; /**< sizeof(isv_route) */
  const char *method; /**< "GET" (also answers HEAD), "POST", "PUT", "DELETE"; NULL: all of them */
  const char *path;   /**< a prefix: the path itself and every path under it ("/custom/echo"
                       * serves "/custom/echo" and "/custom/echo/x"), percent-decoded */
  isv_exec_mode mode; /**< where the handler runs (ISV_EXEC_INLINE: on the loop, it must not
                       * block) */
  uint32_t instances; /**< requests handled at once; 0: 16 */
  isv_route_cb handler; /**< answers each request (isv_route_cb) */
  void *user;           /**< passed to handler */
} isv_route;

/** Serve route (copied). ISV_EEXIST when it would take paths a route already served answers —
 * a built-in front end's (under /v2, /v1/models, /grps/v1, ...) or an earlier custom route's,
 * in either direction (its prefix under theirs or theirs under its prefix) for a method both
 * serve; ISV_EINVAL for a path that is not one ("/x", at most 15 segments, no '{' or '}', not
 * "/"), an unknown method, no handler; ISV_ESTATE when closing. isv_server_last_error says
 * which. Loop thread.
 * @param srv the server
 * @param route the route (copied; struct_size set)
 * @return 0, or ISV_EEXIST / ISV_EINVAL / ISV_ESTATE (see above; isv_server_last_error says which)
 *         / ISV_ETHREAD / ISV_ENOMEM
 */
ISV_EXTERN int isv_server_add_route(isv_server *srv, const isv_route *route);

/** The request, as the client sent it: valid until it is answered. Any thread (the handler's).
 * The path is as sent (not percent-decoded); the query is what follows '?' ("" when none);
 * header names are matched case-insensitively, the value is not NUL-terminated (*len).
 * @param req the request
 * @return the method ("GET", "POST", ...)
 */
ISV_EXTERN const char *isv_http_method(const isv_http_request *req);
/** The path as sent, not percent-decoded (see isv_http_method()). Valid until req is answered. Any
 * thread (the handler's).
 * @param req the request
 * @return the path
 */
ISV_EXTERN const char *isv_http_path(const isv_http_request *req);
/** What follows '?' in the target, "" when none (see isv_http_method()). Valid until req is
 * answered. Any thread (the handler's).
 * @param req the request
 * @return the query
 */
ISV_EXTERN const char *isv_http_query(const isv_http_request *req);
/** A request header by name, matched case-insensitively; the value is not NUL-terminated (see
 * isv_http_method()). Valid until req is answered. Any thread (the handler's).
 * @param req the request
 * @param name the header's name
 * @param len receives the value's length
 * @return the value, NULL when absent
 */
ISV_EXTERN const char *isv_http_header(const isv_http_request *req, const char *name,
                                       size_t *len);
/** The body (mutable: the handler may parse it in place); *len its length.
 * Any thread (the handler's, or the one answering later).
 * @param req the request
 * @param len receives the body's length
 * @return the body, valid until req is answered
 */
ISV_EXTERN void *isv_http_body(isv_http_request *req, size_t *len);
/** The client went away (or the server's drain deadline passed): stop early and end.
 * Any thread (the handler's, or the one answering later).
 * @param req the request
 * @return 1 when cancelled, 0 otherwise
 */
ISV_EXTERN int isv_http_is_cancelled(const isv_http_request *req);
/** A response header for the head that goes out with isv_http_respond or isv_http_begin (name
 * and value copied; not Content-Length, Transfer-Encoding or Connection: ISV_EINVAL).
 * Any thread (the handler's, or the one answering later).
 * @param req the request
 * @param name the header's name
 * @param value its value
 * @return 0, or ISV_EINVAL / ISV_ESTATE (the head went out) / ISV_ENOMEM
 */
ISV_EXTERN int isv_http_add_header(isv_http_request *req, const char *name, const char *value);
/** The whole answer: status (100..599 but not 1xx: ISV_EINVAL), Content-Type (NULL: none) and
 * body, which follows the buffer contract (STATIC until the answer is written, TRANSIENT, or a
 * destructor called once it is). ISV_ESTATE when req was answered or begun.
 * Any thread (the handler's, or the one answering later).
 * @param req the request
 * @param status the HTTP status (200..599)
 * @param content_type the Content-Type, or NULL
 * @param body the body
 * @param len its length
 * @param del ISV_STATIC, ISV_TRANSIENT or a destructor
 * @return 0, or ISV_EINVAL / ISV_ESTATE (answered or begun) / ISV_ENOMEM
 */
ISV_EXTERN int isv_http_respond(isv_http_request *req, int status, const char *content_type,
                                const void *body, size_t len, isv_destructor del);
/** A streamed answer: the head now (HTTP/1.1 chunked, HTTP/2 DATA frames), then any number of
 * pieces, each sent as soon as the connection takes it and in order (Server-Sent Events: one
 * "data: ...\n\n" per write), then the end. A write after the client left is dropped (0).
 * ISV_ESTATE out of order (write before begin, anything after end).
 *
 * isv_http_write COPIES the piece before it returns (a destructor runs before it returns too):
 * pieces written between two loop turns join one buffer, so a small piece costs its bytes,
 * not an allocation of its own. Backpressure: the bytes written and not yet taken by the
 * client are bounded (isv_options_set_max_queued_stream_bytes, _conn_bytes). Past the bound
 * the write answers ISV_EAGAIN and takes NOTHING (data stays the caller's; a destructor is not
 * called): write it again after the isv_http_on_writable callback ran. isv_http_write never
 * blocks, on any thread.
 * @param req the request
 * @param status the HTTP status (200..599)
 * @param content_type the Content-Type ("text/event-stream" for Server-Sent Events), or NULL
 * @return 0, or ISV_EINVAL / ISV_ESTATE (answered or begun) / ISV_ENOMEM
 */
ISV_EXTERN int isv_http_begin(isv_http_request *req, int status, const char *content_type);
/** The next piece of a streamed answer, copied before the call returns (isv_http_begin() above says
 * how pieces go and what ISV_EAGAIN means). Any thread (the handler's, or the one answering later).
 * @param req the request
 * @param data the piece
 * @param len its length
 * @param del ISV_STATIC, ISV_TRANSIENT or a destructor (run before the call returns, unless
 *            ISV_EAGAIN)
 * @return 0 (also when the client left: the piece is dropped), or ISV_EAGAIN (nothing taken: write
 *         again after the isv_http_on_writable callback) / ISV_ESTATE (out of order) / ISV_ENOMEM
 */
ISV_EXTERN int isv_http_write(isv_http_request *req, const void *data, size_t len,
                              isv_destructor del);
/** cb(req, user) runs ONCE, on the loop thread, when req's stream can take more — at once (the
 * next loop turn) when it already can — or when the client left (isv_http_is_cancelled: end
 * then). A second call replaces the first callback; never called after isv_http_end. cb must
 * not block (it runs on the host's loop): a handler on a worker thread waits on its own
 * condition variable, signalled from cb (examples/demo/routes.c, /custom/sse); an inline or
 * async handler goes on writing from cb. 0, ISV_EINVAL, or ISV_ESTATE (before begin or after
 * end). Any thread. */
typedef void (*isv_http_writable_cb)(isv_http_request *req, void *user);
/** Install the once-only callback of a streamed answer (isv_http_writable_cb above says when it
 * runs). Any thread.
 * @param req the request
 * @param cb called once, on the loop thread
 * @param user passed to cb
 * @return 0, or ISV_EINVAL / ISV_ESTATE (before begin or after end)
 */
ISV_EXTERN int isv_http_on_writable(isv_http_request *req, isv_http_writable_cb cb, void *user);
/** End a streamed answer begun with isv_http_begin(); req is gone afterwards. Any thread (the
 * handler's, or the one answering later).
 * @param req the request
 * @return 0, or ISV_ESTATE (not begun, or already ended)
 */
ISV_EXTERN int isv_http_end(isv_http_request *req);

/* ---------------------------------------------------------------------------------------------
 * TLS on a listener (OpenSSL 3; a build without it answers ISV_EUNIMPL). The handshake and
 * the records run on the server's loop with memory BIOs: no thread of its own. ALPN offers h2
 * and http/1.1 (gRPC over TLS, curl --http2), and the protocol is chosen from the plaintext as
 * on a plain listener. A client certificate, when asked for and verified, gives the
 * connection its identity (isv_auth_identity). A plain HTTP request on a TLS port is answered
 * 400 in plain text, then the connection closed; a handshake not done within the handshake
 * timeout is closed.
 * ------------------------------------------------------------------------------------------- */
typedef struct isv_tls isv_tls; /**< a certificate, its key, and maybe client CAs */

/** An empty configuration. ISV_EUNIMPL without TLS in this build, ISV_ENOMEM. Any thread (one
 * at a time per isv_tls).
 * @param out receives the configuration; free it with isv_tls_free()
 * @return 0, or ISV_EUNIMPL (no TLS in this build) / ISV_EINVAL / ISV_ENOMEM
 */
ISV_EXTERN int isv_tls_new(isv_tls **out);
/** Listeners keep what they were given: freeing the configuration does not touch them.
 * Any thread (one at a time per isv_tls).
 * @param tls the configuration, or NULL
 */
ISV_EXTERN void isv_tls_free(isv_tls *tls);
/** The certificate chain (leaf first) and its private key, PEM, from files or from memory
 * (NUL-terminated). ISV_EINVAL when they cannot be read or do not match:
 * isv_tls_last_error says why (OpenSSL's reason).
 * Any thread (one at a time per isv_tls).
 * @param tls the configuration
 * @param chain_file the PEM certificate chain's file, leaf first
 * @param key_file the PEM private key's file
 * @return 0, or ISV_EINVAL (cannot be read, or do not match: isv_tls_last_error says why)
 */
ISV_EXTERN int isv_tls_set_cert_files(isv_tls *tls, const char *chain_file, const char *key_file);
/** The certificate chain (leaf first) and its private key as PEM in memory (NUL-terminated), as
 * isv_tls_set_cert_files() takes files. Any thread (one at a time per isv_tls).
 * @param tls the configuration
 * @param chain_pem the PEM certificate chain, leaf first
 * @param key_pem the PEM private key
 * @return 0, or ISV_EINVAL (cannot be read, or do not match: isv_tls_last_error says why)
 */
ISV_EXTERN int isv_tls_set_cert_pem(isv_tls *tls, const char *chain_pem, const char *key_pem);
/** Ask clients for a certificate signed by one of the CAs in ca_file (PEM): required (the
 * handshake fails without one) or optional (require 0: a client without one is anonymous).
 * A certificate that does not verify fails the handshake either way.
 * Any thread (one at a time per isv_tls).
 * @param tls the configuration
 * @param ca_file the PEM file of the CAs
 * @param require nonzero to require a certificate
 * @return 0, or ISV_EINVAL (the file cannot be read: isv_tls_last_error says why)
 */
ISV_EXTERN int isv_tls_set_client_ca_file(isv_tls *tls, const char *ca_file, int require);
/** Why the last call on tls failed (OpenSSL's reason). Any thread (one at a time per isv_tls).
 * @param tls the configuration
 * @return the reason, "" when the last call succeeded
 */
ISV_EXTERN const char *isv_tls_last_error(const isv_tls *tls);
/** Listen with TLS (as isv_server_listen; its index counts with theirs). The configuration is
 * referenced as it is now: later changes to tls do not reach the listener — give it again with
 * isv_server_set_listener_tls. ISV_EINVAL without a certificate and key. Loop thread.
 * @param srv the server
 * @param host an IPv4 or IPv6 literal, or "localhost"
 * @param port the port; 0 picks a free one
 * @param tls the configuration, referenced as it is now
 * @return 0, or ISV_EINVAL (no certificate and key) / ISV_EIO (cannot bind) / ISV_EUNIMPL /
 *         ISV_ESTATE / ISV_ETHREAD
 */
ISV_EXTERN int isv_server_listen_tls(isv_server *srv, const char *host, int port,
                                     const isv_tls *tls);
/** Reload: the index-th listener (a TLS one) uses tls for the handshakes from now on;
 * connections already open keep theirs. Loop thread.
 * @param srv the server
 * @param index the listener's index (as isv_server_bound_port() counts)
 * @param tls the new configuration
 * @return 0, or ISV_EINVAL (no such TLS listener, no certificate) / ISV_ETHREAD
 */
ISV_EXTERN int isv_server_set_listener_tls(isv_server *srv, unsigned index, const isv_tls *tls);
/** A TLS client must finish its handshake within this long of connecting. Default 10000 ms.
 * Any thread (the options' owner, one at a time).
 * @param o the options
 * @param ms the handshake's deadline in milliseconds (> 0)
 * @return 0, or ISV_EINVAL (o NULL, ms 0)
 */
ISV_EXTERN int isv_options_set_tls_handshake_timeout_ms(isv_options *o, uint64_t ms);

/* ---------------------------------------------------------------------------------------------
 * The service's edge: authorization, per-client limits, CORS.
 *
 * The authorizer is asked about every request — every protocol (V2, TF Serving, Vertex, grps,
 * custom routes, repository and shared-memory endpoints, metrics, health), HTTP and gRPC, from
 * the library's listeners or a host's carrier — except CORS preflights (browsers send no
 * credentials on them), at two stages (isv_auth_get_stage):
 *   - ISV_AUTH_STAGE_CALLER: who is calling. Once per HTTP request and once per gRPC call (at
 *     its headers), before a byte of the body is decoded or inflated: check the token or the
 *     certificate here, and name the client for the per-client limit (isv_auth_set_client).
 *     isv_auth_model is NULL.
 *   - ISV_AUTH_STAGE_MODEL: may this caller act on this model? For each model a request acts
 *     on — the one that runs (every message of a stream), is loaded or unloaded, or whose
 *     metadata, config, readiness or statistics are answered — after every resolution rule
 *     (grps "name-version", the default model, a Vertex endpoint, a TF Serving label, the
 *     default version): isv_auth_model and isv_auth_version name the model version itself.
 *     A model that does not exist is not asked about (the client hears it is unknown); a
 *     repository load names a model that may not be registered yet (version NULL). Nothing
 *     else is said about a refused model: not even what is wrong with the body sent to it.
 *     Answers that list every model (server metadata, statistics of every model, the
 *     repository index, /metrics) are judged at the caller stage only: a host that must hide
 *     models from a caller refuses it those paths.
 * Order for every request: connection limits, the caller stage, the per-client limit, content
 * decoding, routing and decoding, the model stage, queueing. A host that only checks tokens
 * allows the model stage at once; one that only guards models allows the caller stage.
 * ------------------------------------------------------------------------------------------- */
typedef struct isv_auth isv_auth; /**< one request waiting for a decision */

/** Which question the authorizer is asked (isv_auth_get_stage()). */
typedef enum {
  ISV_AUTH_STAGE_CALLER = 1, /**< who: before the body is read or decoded */
  ISV_AUTH_STAGE_MODEL = 2   /**< what: the resolved model version the request acts on */
} isv_auth_stage;

/** The authorizer's answer (isv_auth_complete()). */
typedef enum {
  ISV_AUTH_ALLOW = 0, /**< let the request in */
  ISV_AUTH_UNAUTHENTICATED = 1, /**< HTTP 401 (+ WWW-Authenticate when set), gRPC UNAUTHENTICATED */
  ISV_AUTH_FORBIDDEN = 2        /**< HTTP 403, gRPC PERMISSION_DENIED */
} isv_auth_decision;

/** Decide on a: call isv_auth_complete exactly once — inside the callback, or later from any thread
 * (after checking a token with another service). The callback runs on the loop thread and must not
 * block. Until the decision the request waits (it counts as in flight: the server's close waits for
 * it too); a client that leaves meanwhile is answered into the void when the decision comes. */
typedef void (*isv_authorize_cb)(isv_auth *a, void *user);
/** NULL cb: every request is allowed (the default). ISV_ESTATE when closing. Loop thread.
 * @param srv the server
 * @param cb the authorizer, or NULL to allow every request
 * @param user passed to cb
 * @return 0, or ISV_ESTATE (closing) / ISV_ETHREAD
 */
ISV_EXTERN int isv_server_set_authorizer(isv_server *srv, isv_authorize_cb cb, void *user);

/* What a carries — valid until isv_auth_complete, on the thread deciding: */
/** HTTP: the front end — "kserve_v2", "tfserving", "vertex", "grps", "custom", "metrics"; gRPC:
 * the method's label — "v2_grpc", "grps_grpc", "tfserving_grpc", "grpc_health".
 * Valid until isv_auth_complete(), on the thread deciding.
 * @param a the request waiting for a decision
 * @return the front end's or the gRPC method's label
 */
ISV_EXTERN const char *isv_auth_protocol(const isv_auth *a);
/** Whether a is a gRPC call (else an HTTP request). Valid until isv_auth_complete, on the thread
 * deciding.
 * @param a the request waiting for a decision
 * @return 1 for gRPC, 0 for HTTP
 */
ISV_EXTERN int isv_auth_is_grpc(const isv_auth *a);
/** "GET", "POST", ...; gRPC: "/inference.GRPCInferenceService/ModelInfer"
 * Valid until isv_auth_complete(), on the thread deciding.
 * @param a the request waiting for a decision
 * @return the HTTP method, or the gRPC method's path
 */
ISV_EXTERN const char *isv_auth_method(const isv_auth *a);
/** The path as sent, without the query (gRPC: the method again).
 * Valid until isv_auth_complete(), on the thread deciding.
 * @param a the request waiting for a decision
 * @return the path
 */
ISV_EXTERN const char *isv_auth_path(const isv_auth *a);
/** Which question a asks (see above).
 * Valid until isv_auth_complete(), on the thread deciding.
 * @param a the request waiting for a decision
 * @return ISV_AUTH_STAGE_CALLER or ISV_AUTH_STAGE_MODEL
 */
ISV_EXTERN isv_auth_stage isv_auth_get_stage(const isv_auth *a);
/** The model stage's model: its name as registered, after every resolution rule (NULL at the
 * caller stage), and its version ("1"; NULL when none is resolved: a model not registered yet,
 * or a question about every version of it).
 * Valid until isv_auth_complete(), on the thread deciding.
 * @param a the request waiting for a decision
 * @return the model's name, NULL at the caller stage
 */
ISV_EXTERN const char *isv_auth_model(const isv_auth *a);
/** The model stage's version ("1"; NULL when none is resolved: a model not registered yet, or a
 * question about every version of it): see isv_auth_model(). Valid until isv_auth_complete, on the
 * thread deciding.
 * @param a the request waiting for a decision
 * @return the version, or NULL
 */
ISV_EXTERN const char *isv_auth_version(const isv_auth *a);
/** A request header or gRPC metadata entry (case-insensitive name), NULL when absent; *len its
 * length (the value is not NUL-terminated).
 * Valid until isv_auth_complete(), on the thread deciding.
 * @param a the request waiting for a decision
 * @param name the header's or metadata entry's name
 * @param len receives the value's length
 * @return the value (not NUL-terminated), NULL when absent
 */
ISV_EXTERN const char *isv_auth_header(const isv_auth *a, const char *name, size_t *len);
/** The peer's address ("10.0.0.7:51234", "[::1]:8000", "" when unknown) and the subject of its
 * TLS client certificate (NULL: none).
 * Valid until isv_auth_complete(), on the thread deciding.
 * @param a the request waiting for a decision
 * @return the peer's address, "" when unknown
 */
ISV_EXTERN const char *isv_auth_peer(const isv_auth *a);
/** The subject of the peer's TLS client certificate (NULL: none): see isv_auth_peer(). Valid until
 * isv_auth_complete, on the thread deciding.
 * @param a the request waiting for a decision
 * @return the subject, or NULL
 */
ISV_EXTERN const char *isv_auth_identity(const isv_auth *a);
/** Who the client is for isv_options_set_max_client_requests (copied; at most 127 bytes): a
 * user, a token's subject. Default: the peer's address without its port. At the caller stage,
 * before done (ISV_ESTATE at the model stage: the request is counted already).
 * On the thread deciding, before isv_auth_complete().
 * @param a the request waiting for a decision, at the caller stage
 * @param key the client's key (copied; at most 127 bytes)
 * @return 0, or ISV_EINVAL / ISV_ESTATE (at the model stage)
 */
ISV_EXTERN int isv_auth_set_client(isv_auth *a, const char *key);
/** The client's key: the one set at the caller stage (the model stage sees it too).
 * Valid until isv_auth_complete(), on the thread deciding.
 * @param a the request waiting for a decision
 * @return the client's key
 */
ISV_EXTERN const char *isv_auth_client(const isv_auth *a);
/** The WWW-Authenticate value an HTTP 401 carries ("Bearer realm=\"models\""; copied).
 * On the thread deciding, before isv_auth_complete().
 * @param a the request waiting for a decision
 * @param value the WWW-Authenticate value (copied)
 * @return 0, or ISV_EINVAL / ISV_ENOMEM
 */
ISV_EXTERN int isv_auth_set_challenge(isv_auth *a, const char *value);
/** The decision, exactly once, from any thread; message (copied, NULL: a default) is the
 * error's text. a is gone afterwards. ISV_EINVAL for an unknown decision (nothing happens).
 * @param a the request waiting for a decision; gone afterwards
 * @param decision allow, unauthenticated (401) or forbidden (403)
 * @param message the error's text (copied), or NULL for a default
 * @return 0, or ISV_EINVAL (an unknown decision: nothing happens)
 */
ISV_EXTERN int isv_auth_complete(isv_auth *a, isv_auth_decision decision, const char *message);

/** Requests one client may have in flight at once — every protocol together, counted from its
 * admission to its answer's end; a gRPC call counts once, but a bidirectional stream
 * (ModelStreamInfer) counts each of its requests while it is in flight instead (one over the limit
 * is answered in the stream, RESOURCE_EXHAUSTED, and the stream goes on). Beyond: HTTP 429, gRPC
 * RESOURCE_EXHAUSTED, naming the limit. The client is the authorizer's key (isv_auth_set_client) or
 * the peer's address without the port. 0: no limit (the default).
 * Any thread (the options' owner, one at a time).
 * @param o the options
 * @param n requests one client may have in flight (0: no limit)
 * @return 0, or ISV_EINVAL (o NULL)
 */
ISV_EXTERN int isv_options_set_max_client_requests(isv_options *o, unsigned n);
/** Browsers on these origins may call the REST APIs (CORS): space-separated
 * "scheme://host[:port]" origins, or "*" for any. A preflight (OPTIONS with
 * Access-Control-Request-Method) from an allowed origin is answered 204 with the methods and
 * headers it asked for; answers to an allowed origin carry Access-Control-Allow-Origin (the
 * origin) and expose Inference-Header-Content-Length. Other origins get no CORS headers (the
 * browser refuses the answer to the page). "" or NULL: none (the default). ISV_EINVAL for a
 * malformed origin.
 * Any thread (the options' owner, one at a time).
 * @param o the options
 * @param origins space-separated origins, "*", or NULL / "" for none (copied)
 * @return 0, or ISV_EINVAL (o NULL, a malformed origin, too long)
 */
ISV_EXTERN int isv_options_set_cors_origins(isv_options *o, const char *origins);

/* ---------------------------------------------------------------------------------------------
 * Transport adapters: bring your own server. A host that already runs an HTTP server
 * (libmicrohttpd, h2o, an nginx module, its own) or a gRPC stack hands the library its
 * requests and gets the answers back through callbacks, with the same routing, protocols,
 * limits, cancellation and scheduling as the library's own listeners. Inside, the library's
 * HTTP/1.1 and HTTP/2 engines carry their requests over this very seam (an exchange: one
 * request in, one answer out; a gRPC call: whole messages in, messages and a status out) —
 * an adapter is a third carrier of the same objects, not a second path.
 *
 * What the host's server does itself: sockets, HTTP framing, TLS, timeouts while reading, and
 * the connection limits. What the library still enforces: max_body_bytes (413 /
 * RESOURCE_EXHAUSTED), max_header_bytes (431), max_tensors, every protocol's validation,
 * deadlines, queueing and the drain on isv_server_close — which waits for every exchange and
 * call the host created to be answered (or cancelled): stop the host's server first.
 *
 * Everything here runs on the server's loop thread.
 * ------------------------------------------------------------------------------------------- */

/** Bytes the library hands the host by reference (an answer's body, a gRPC message): they stay
 * valid until the host releases their piece, exactly once — after writing them, at once after
 * copying them, or when it drops them (the client is gone), also after the exchange or call
 * they belong to ended. The library keeps what they point into until then. NULL is a no-op. */
typedef struct isv_piece isv_piece;
/** Release a piece the library handed over by reference (the rules above). NULL is a no-op. Loop
 * thread.
 * @param piece the piece, or NULL
 */
ISV_EXTERN void isv_piece_free(isv_piece *piece);

/** A header or metadata entry: not NUL-terminated, valid during the call it is passed to. */
typedef struct isv_field {
  const char *name;  /**< the name's bytes */
  size_t name_len;   /**< how many */
  const char *value; /**< the value's bytes */
  size_t value_len;  /**< how many */
} isv_field;

/** One HTTP request handed in by the host, and its answer. */
typedef struct isv_exchange isv_exchange;

/** How the answer goes back: the host fills it (zero-initialised, struct_size =
 * sizeof(isv_exchange_carrier)); it is not copied and must outlive its exchanges. */
typedef struct isv_exchange_carrier {
  size_t struct_size; /**< sizeof(isv_exchange_carrier) */
  /** The answer's status and headers (Content-Type among them when there is a body;
   * Content-Length never: with more = 0 the body is the parts, all of it), then the body
   * (more = 0: the answer is complete) or its first piece (more = 1: maybe empty; pieces follow
   * through write, then end). `piece` is NULL when there are no parts. Return 0, or nonzero when
   * the host cannot send it (its client is gone): the exchange then counts as cancelled. For a
   * HEAD request the library answers as for GET: the host's server sends the head only. After
   * the answer completes (more = 0) the host must not use x. */
  int (*respond)(isv_exchange *x, int status, const isv_field *headers, size_t n_headers,
                 const uv_buf_t *parts, size_t n_parts, isv_piece *piece, int more);
  /** The next piece of a streamed answer (Server-Sent Events: one event per piece), to send as
   * soon as the host can and in order; 0 or nonzero as for respond. Required. */
  int (*write)(isv_exchange *x, const uv_buf_t *parts, size_t n_parts, isv_piece *piece);
  /** The streamed answer is complete; the host must not use x afterwards. Required. */
  void (*end)(isv_exchange *x);
} isv_exchange_carrier;

/** Start an exchange: `method` ("GET", "POST", ...) and `target` (the path and query as the
 * client sent them, "/v2/models/m/infer?x=1", not percent-decoded) are copied; `user` is the
 * host's (isv_exchange_user). Then headers, the peer and the body, then isv_exchange_submit.
 * ISV_EINVAL (no carrier or one missing a callback, a method that is not a token, a target
 * that does not start with '/'), ISV_ENOMEM, ISV_ESTATE when the server is closing.
 * Loop thread.
 * @param srv the server
 * @param carrier how the answer goes back (not copied: it must outlive its exchanges)
 * @param user the host's pointer (isv_exchange_user())
 * @param method the request's method (copied)
 * @param target the path and query as sent (copied)
 * @param out receives the exchange
 * @return 0, or ISV_EINVAL / ISV_ENOMEM / ISV_ESTATE (closing)
 */
ISV_EXTERN int isv_exchange_new(isv_server *srv, const isv_exchange_carrier *carrier, void *user,
                                const char *method, const char *target, isv_exchange **out);
/** The host's pointer given to isv_exchange_new(). Loop thread.
 * @param x the exchange
 * @return the user pointer
 */
ISV_EXTERN void *isv_exchange_user(const isv_exchange *x);
/** A request header (copied). ISV_EHDRTOOBIG once the target and headers together pass
 * max_header_bytes (the exchange is then answered 431 when submitted); ISV_ESTATE after
 * submit.
 * Loop thread.
 * @param x the exchange
 * @param name the header's name (copied)
 * @param name_len its length
 * @param value the header's value (copied)
 * @param value_len its length
 * @return 0, or ISV_EHDRTOOBIG (answered 431 when submitted) / ISV_ESTATE (submitted) / ISV_ENOMEM
 */
ISV_EXTERN int isv_exchange_add_header(isv_exchange *x, const char *name, size_t name_len,
                                       const char *value, size_t value_len);
/** Who sent it: the peer's address ("10.0.0.7:51234") and the subject of its TLS client
 * certificate (NULL: none), copied — what an authorization hook and per-client limits see.
 * Loop thread.
 * @param x the exchange
 * @param peer the peer's address (copied)
 * @param identity the subject of its TLS client certificate (copied), or NULL
 * @return 0, or ISV_EINVAL / ISV_ESTATE / ISV_ENOMEM
 */
ISV_EXTERN int isv_exchange_set_peer(isv_exchange *x, const char *peer, const char *identity);
/** The next bytes of the body, as they arrive (copied). ISV_ETOOBIG once the body passes
 * max_body_bytes: nothing more is kept, and the exchange is answered 413 when submitted.
 * Loop thread.
 * @param x the exchange
 * @param data the next bytes of the body (copied)
 * @param len how many
 * @return 0, or ISV_ETOOBIG (answered 413 when submitted) / ISV_ESTATE / ISV_ENOMEM
 */
ISV_EXTERN int isv_exchange_append_body(isv_exchange *x, const void *data, size_t len);
/** The request is complete: route and answer it — the carrier's callbacks may run before this
 * returns. 0, or ISV_ESTATE when it was already submitted. Loop thread.
 * @param x the exchange
 * @return 0, or ISV_ESTATE (already submitted)
 */
ISV_EXTERN int isv_exchange_submit(isv_exchange *x);
/** The host lets go of x: its client is gone (or it never submits it). Before submit, x is
 * freed; after, what answers it is told (as when a client disconnects: running work is
 * cancelled) and its answer is dropped — the carrier is not called for x again. The pieces the
 * host holds stay valid until it releases them. x must not be used afterwards.
 * Loop thread.
 * @param x the exchange; not to be used afterwards
 */
ISV_EXTERN void isv_exchange_free(isv_exchange *x);

/** One gRPC call handed in by a host with its own gRPC stack (it does the HTTP/2 framing,
 * compression and deadlines' transport; the library sees whole, uncompressed messages). */
typedef struct isv_grpc_call isv_grpc_call;

/** Zero-initialised, struct_size = sizeof(isv_grpc_carrier); not copied: it must outlive its
 * calls. */
typedef struct isv_grpc_carrier {
  size_t struct_size; /**< sizeof(isv_grpc_carrier) */
  /** One whole response message (serialized protobuf, no gRPC framing), in parts; 0, or
   * nonzero when the host cannot send it (the call then counts as cancelled). */
  int (*send)(isv_grpc_call *call, const uv_buf_t *parts, size_t n_parts, isv_piece *piece);
  /** The call's end: a gRPC status code and message (valid during the call). Exactly once per
   * started call that the host did not cancel; the host must not use call afterwards. */
  void (*finish)(isv_grpc_call *call, int status, const char *message);
} isv_grpc_carrier;

/** A call to `method` ("/inference.GRPCInferenceService/ModelInfer"; copied); `user` is the
 * host's (isv_grpc_call_user). Then metadata, peer and timeout, then isv_grpc_call_start,
 * then its messages. ISV_EINVAL, ISV_ENOMEM, ISV_ESTATE (closing). Loop thread.
 * @param srv the server
 * @param carrier how messages and the status go back (not copied: it must outlive its calls)
 * @param user the host's pointer (isv_grpc_call_user())
 * @param method the gRPC method's path (copied)
 * @param out receives the call
 * @return 0, or ISV_EINVAL / ISV_ENOMEM / ISV_ESTATE (closing)
 */
ISV_EXTERN int isv_grpc_call_new(isv_server *srv, const isv_grpc_carrier *carrier, void *user,
                                 const char *method, isv_grpc_call **out);
/** The host's pointer given to isv_grpc_call_new(). Loop thread.
 * @param call the call
 * @return the user pointer
 */
ISV_EXTERN void *isv_grpc_call_user(const isv_grpc_call *call);
/** A metadata entry (copied); ISV_EHDRTOOBIG past max_header_bytes (the call is then finished
 * RESOURCE_EXHAUSTED when started); ISV_ESTATE after start.
 * Loop thread.
 * @param call the call
 * @param name the entry's name (copied)
 * @param name_len its length
 * @param value the entry's value (copied)
 * @param value_len its length
 * @return 0, or ISV_EHDRTOOBIG / ISV_ESTATE (started) / ISV_ENOMEM
 */
ISV_EXTERN int isv_grpc_call_add_metadata(isv_grpc_call *call, const char *name, size_t name_len,
                                          const char *value, size_t value_len);
/** Who sent the call: the peer's address and the subject of its TLS client certificate (NULL:
 * none), copied — as isv_exchange_set_peer(). Loop thread, before isv_grpc_call_start().
 * @param call the call
 * @param peer the peer's address (copied)
 * @param identity the subject of its TLS client certificate (copied), or NULL
 * @return 0, or ISV_EINVAL / ISV_ESTATE / ISV_ENOMEM
 */
ISV_EXTERN int isv_grpc_call_set_peer(isv_grpc_call *call, const char *peer,
                                      const char *identity);
/** The client's deadline (grpc-timeout), from now: the requests it makes time out with it
 * (DEADLINE_EXCEEDED). 0: none (the default).
 * Loop thread.
 * @param call the call
 * @param ms the deadline from now in milliseconds (0: none)
 * @return 0, or ISV_EINVAL / ISV_ESTATE
 */
ISV_EXTERN int isv_grpc_call_set_timeout(isv_grpc_call *call, uint64_t ms);
/** Hand the call to its service: an unknown method is finished UNIMPLEMENTED — carrier calls
 * may run before this returns. ISV_ESTATE when already started.
 * Loop thread.
 * @param call the call
 * @return 0, or ISV_ESTATE (already started)
 */
ISV_EXTERN int isv_grpc_call_start(isv_grpc_call *call);
/** One whole request message (copied). ISV_ETOOBIG past max_body_bytes: the call is finished
 * RESOURCE_EXHAUSTED. ISV_ESTATE before start or after half-close; ISV_ECANCELED once the call
 * finished (the message is dropped).
 * Loop thread.
 * @param call the call
 * @param msg one whole serialized message (copied)
 * @param len its length
 * @return 0, or ISV_ETOOBIG / ISV_ESTATE / ISV_ECANCELED (the call finished) / ISV_ENOMEM
 */
ISV_EXTERN int isv_grpc_call_append_message(isv_grpc_call *call, const void *msg, size_t len);
/** The client sent its last message.
 * Loop thread.
 * @param call the call
 * @return 0, or ISV_ESTATE
 */
ISV_EXTERN int isv_grpc_call_half_close(isv_grpc_call *call);
/** The host lets go of call (its client cancelled or went away): the service is told, what it
 * still sends is dropped, the carrier is not called for it again; pieces held stay valid until
 * released. call must not be used afterwards.
 * Loop thread.
 * @param call the call; not to be used afterwards
 */
ISV_EXTERN void isv_grpc_call_free(isv_grpc_call *call);

#ifdef __cplusplus
}
#endif

#endif /* INFERSERVE_H */
