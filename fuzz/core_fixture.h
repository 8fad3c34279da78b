/* Shared by the decoder fuzzers: a core (no sockets) with a model "m" v1 — INPUT0 INT32
 * [-1,-1], INPUT1 BYTES [-1], OUTPUT0 FP32 [-1,-1] — a model "one" v1 with a single input x
 * BYTES of any rank and two signatures (serving_default: x -> y; "c", classify: x as "in" ->
 * y as "scores") — and requests bound to them. */
#ifndef ISV_FUZZ_CORE_FIXTURE_H
#define ISV_FUZZ_CORE_FIXTURE_H

#include "core/request.h"

/* A new request holding a reference to the model; free with isv_request_free. */
isv_request *isv_fuzz_request(void);
/* The same, bound to "one". */
isv_request *isv_fuzz_request_one(void);
/* A new request bound to nothing (a decoder that binds its own model), and the core (for its
 * limits). */
isv_request *isv_fuzz_request_unbound(void);
struct isv__core *isv_fuzz_core(void);

#endif
