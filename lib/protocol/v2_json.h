/* KServe V2 JSON: the infer request body → the canonical request, and the canonical response →
 * the response body. No I/O: the fuzz target drives these directly. */
#ifndef ISV_PROTOCOL_V2_JSON_H
#define ISV_PROTOCOL_V2_JSON_H

#include "protocol/layer.h"

#include <stdint.h>

#include "codec/buf.h"
#include "core/request.h"

/* What a server's V2 JSON front end keeps of what its clients repeat, so that the same bytes
 * are read once and the same text written once: each of the first inputs' members before
 * "data" (the text from the input's '{' to after "data":, and the name, datatype and shape read
 * there, with the reader's depth, limit and state), and an answer's beginning and each of its
 * first outputs' (the text, and the model name, version, output name, datatype and shape it
 * was written from). Caches only: a hit is byte for byte what reading or writing gives
 * (v2_json.c says what is kept and what never is). Zeroed: empty. One user at a time: a server
 * keeps one for its loop thread (the V2 front end's state, isv__frontend.state_size); a decode
 * or encode elsewhere passes none. */
#define ISV__V2_MEMO_INPUTS 4
#define ISV__V2_MEMO_OUTPUTS 4
#define ISV__V2_MEMO_NDIM 8
#define ISV__V2_MEMO_NAME 64
typedef struct isv__v2_input_memo {
  uint32_t len;               /* of bytes[] (0: none) */
  uint32_t name_at, name_len; /* the name's text in bytes[] */
  unsigned depth, max_depth;  /* the reader's, after the '{' */
  int state;                  /* the reader's after "data": */
  isv_datatype dt;
  uint32_t ndim;
  int64_t shape[ISV__V2_MEMO_NDIM];
  char bytes[160];
} isv__v2_input_memo;
typedef struct isv__v2_model_text {
  char name[ISV__V2_MEMO_NAME], version[ISV__V2_MEMO_NAME];
  uint32_t len;   /* of text[] (0: none) */
  char text[192]; /* {"model_name":...,"model_version":... */
} isv__v2_model_text;
typedef struct isv__v2_output_text {
  char name[ISV__V2_MEMO_NAME];
  isv_datatype dt;
  uint32_t ndim;
  int64_t shape[ISV__V2_MEMO_NDIM];
  uint32_t len;   /* of text[] (0: none) */
  char text[192]; /* {"name":...,"datatype":...,"shape":[...] */
} isv__v2_output_text;
typedef struct isv__v2_memo {
  isv__v2_input_memo inputs[ISV__V2_MEMO_INPUTS];
  isv__v2_model_text model;
  isv__v2_output_text outputs[ISV__V2_MEMO_OUTPUTS];
} isv__v2_memo;

/* Fill r's id, parameters, inputs and requested outputs. body[0..json_len) is the JSON;
 * body[json_len..len) is the binary part of Triton's binary tensor data extension (empty when
 * json_len == len), claimed in input order by inputs with a "binary_data_size" parameter.
 * Inputs and requested outputs with "shared_memory_region" / "_byte_size" / "_offset"
 * parameters are read from / written into that system shared memory region (core/shm.h).
 * The body is mutable (strings are unescaped in place) and tensors may point into it, so it
 * must outlive r. Returns 0, or the ISV_E* code with r's status and message set (the message
 * names the problem and, for syntax errors, the byte offset). memo (may be NULL): read through
 * it (isv__v2_memo), the same result. */
int isv__v2_decode_request(isv_request *r, char *body, size_t len, size_t json_len,
                           unsigned max_depth, isv__v2_memo *memo);

/* Triton's raw binary request (Inference-Header-Content-Length: 0): the whole body is the one
 * input of r's model (bound), its datatype and shape taken from the model's declaration — the
 * batch dimension 1, one variable-size dimension deduced from the byte count; a BYTES input
 * (declared shape [1]) gets the body as its one element. The body must outlive r, as above.
 * Returns 0, or ISV_EBADREQ with r's message naming what does not fit. */
int isv__v2_decode_raw(isv_request *r, char *body, size_t len);

/* Requested-output flags (isv__req_output.flags / isv_tensor.flags) and request flags
 * (isv_request.proto_flags) of the binary extension. */
#define ISV__V2_OUT_BIN_SET 1u /* the output said "binary_data" */
#define ISV__V2_OUT_BIN 2u     /* ... and it was true */
#define ISV__V2_REQ_BIN 1u     /* "binary_data_output": true (default for every output) */

/* One output's bytes in binary form. */
typedef struct isv__v2_binpart {
  const void *ptr;
  size_t len;
} isv__v2_binpart;

/* The response's JSON into b. An output written into shared memory gets its name, datatype
 * and shape only (Triton's answer: no "data", no "parameters"). An output sent in binary gets "parameters":{"binary_data_size":N}
 * instead of "data", and its bytes are listed in *parts (an array in r's arena, in output
 * order; *n_parts = 0 when no output is binary): BYTES are serialised into r's arena, other
 * types referenced where they are — r must outlive the parts. Returns 0 or an ISV_E* code
 * (r's message set); b->failed reports the JSON's own allocation failure. memo (may be NULL):
 * written through it (isv__v2_memo), the same text. */
int isv__v2_encode_response(isv_request *r, isv__buf *b, isv__v2_binpart **parts,
                            size_t *n_parts, isv__v2_memo *memo);

#endif
