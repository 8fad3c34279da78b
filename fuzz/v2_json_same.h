/* Two V2 JSON request decodings compared in full: the return code, the error message, and every
 * input's name, datatype, shape, element count, byte size and elements (a BYTES element's
 * length and bytes). Shared by fuzz_v2_json_request and tests/unit/test_v2_json.c, which decode
 * a body with and without the front end's memo (protocol/v2_json.h) and need the two alike. */
#ifndef ISV_FUZZ_V2_JSON_SAME_H
#define ISV_FUZZ_V2_JSON_SAME_H

#include <stddef.h>

#include "core/request.h"

/* 1 when they are the same; 0 with `why` (NUL-terminated, cut to why_len) saying where not. */
int isv_v2_json_same(const isv_request *a, int arc, const isv_request *b, int brc, char *why,
                     size_t why_len);

#endif
