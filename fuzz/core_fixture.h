/* Shared by the decoder fuzzers: a core (no sockets) with one model "m" v1 — INPUT0 INT32
 * [-1,-1], INPUT1 BYTES [-1], OUTPUT0 FP32 [-1,-1] — and requests bound to it. */
#ifndef ISV_FUZZ_CORE_FIXTURE_H
#define ISV_FUZZ_CORE_FIXTURE_H

#include "core/request.h"

/* A new request holding a reference to the model; free with isv_request_free. */
isv_request *isv_fuzz_request(void);

#endif
