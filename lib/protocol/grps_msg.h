/* grps's GrpsMessage (PROTOCOLS.md §5, seed 002) in memory: what its two wire forms — the
 * protobuf message of proto/grps.proto and its JSON mapping — decode into and encode from. The
 * conversion to and from the canonical request (grps_conv.h) reads only this struct, so the
 * codecs know no model and the conversion knows no wire.
 *
 * Ownership: a decoded message points into the wire buffer wherever the bytes can be used as
 * they are (str_data, bin_data, map strings and bytes, flat_string elements, and flat_float32 /
 * flat_float64 when the buffer is aligned for them) — the buffer must outlive the message; every
 * array, NUL-terminated name and converted element (varints, FP16 from floats, base64, unescaped
 * JSON) lives in the arena given to the decoder. Nothing is freed but the arena.
 *
 * Tensors are canonical isv_tensor values: dt an isv_datatype (grps's DataType numbers through
 * codec/datatype.h: DT_UINT8 → ISV_UINT8 ... DT_FLOAT16 → ISV_FP16 as half bits, DT_STRING →
 * ISV_BYTES as an isv_bytes array), name NUL-terminated ("" when the message names none), shape
 * int64 (grps's is uint32; a tensor that gives no shape is one-dimensional: [count]), data
 * row-major little-endian, count elements, byte_size as isv_tensor says. A decoded tensor always
 * has count equal to the product of its shape, and data in the flat_* field of its dtype (a
 * message with DT_INVALID takes the dtype of the one flat_* field that has data). */
#ifndef ISV_PROTOCOL_GRPS_MSG_H
#define ISV_PROTOCOL_GRPS_MSG_H

#include "protocol/layer.h"

#include <stddef.h>
#include <stdint.h>

#include "codec/buf.h"
#include "core/arena.h"
#include "core/request.h" /* struct isv_tensor */

/* Which member of data_oneof the message carries. */
typedef enum {
  ISV__GRPS_NONE = 0,  /* none (health, metadata requests; an empty predict) */
  ISV__GRPS_BIN_DATA,  /* bin_data 3 */
  ISV__GRPS_STR_DATA,  /* str_data 4 */
  ISV__GRPS_GTENSORS,  /* gtensors 5 */
  ISV__GRPS_NDARRAY,   /* ndarray 6: over JSON, one FP32 tensor as nested arrays; over protobuf
                        * an empty message (NDArrayData has no fields) */
  ISV__GRPS_GMAP       /* gmap 7 */
} isv__grps_kind;

/* The maps of GenericMapData, by field number. */
typedef enum {
  ISV__GRPS_S_S = 1, /* map<string, string> */
  ISV__GRPS_S_B,     /* map<string, bytes> (base64 in JSON) */
  ISV__GRPS_S_I32,   /* map<string, int32> */
  ISV__GRPS_S_I64,   /* map<string, int64> (JSON: a string or a number) */
  ISV__GRPS_S_F,     /* map<string, float> */
  ISV__GRPS_S_D,     /* map<string, double> */
  ISV__GRPS_S_T      /* map<string, GenericTensor>: grps's template HTTP client sends it */
} isv__grps_map;

typedef struct isv__grps_entry {
  isv__grps_map map;
  const char *key; /* NUL-terminated */
  size_t key_len;
  union {
    struct {
      const char *p; /* S_S (valid UTF-8), S_B */
      size_t n;
    } s;
    int64_t i; /* S_I32 (within int32), S_I64 */
    float f;   /* S_F */
    double d;  /* S_D */
  } v;
  isv_tensor t; /* S_T */
} isv__grps_entry;

typedef enum { ISV__GRPS_UNKNOWN = 0, ISV__GRPS_SUCCESS = 1, ISV__GRPS_FAILURE = 2 } isv__grps_flag;

typedef struct isv__grps_msg {
  /* status 1 (a reply's; decoders fill it when present) */
  int has_status;
  int32_t code;    /* HTTP-like: 200, 400, 404, 500, 503 */
  const char *msg; /* not NUL-terminated; may be NULL when msg_len is 0 */
  size_t msg_len;
  isv__grps_flag flag;
  /* model 2: "name-version", "name", or empty (msg_len 0: the default model) */
  const char *model;
  size_t model_len;
  isv__grps_kind kind;
  const char *data; /* BIN_DATA, STR_DATA (STR_DATA is valid UTF-8) */
  size_t data_len;
  isv_tensor *tensors; /* GTENSORS; NDARRAY: exactly one FP32 tensor (JSON) or none (protobuf) */
  size_t n_tensors;
  isv__grps_entry *entries; /* GMAP, in wire order (a key repeated in one map: the last wins) */
  size_t n_entries;
} isv__grps_msg;

/* Limits a decoder enforces (the server's options): more than max_tensors tensors, or map
 * entries, is refused before they are allocated; max_depth bounds JSON nesting. */
typedef struct isv__grps_limits {
  unsigned max_tensors;
  unsigned max_depth;
} isv__grps_limits;

/* ---- protobuf (grps_pb.c) ------------------------------------------------------------------
 * Decode a serialized GrpsMessage. proto3 rules: unknown fields are skipped, a repeated scalar
 * field is accepted packed or not, a later oneof member replaces an earlier one, an enum value
 * out of range is refused (dtype) or kept as UNKNOWN (status). Returns 0, or ISV_EBADREQ
 * (malformed wire, a tensor whose data does not fill its shape or sits in the wrong flat_*
 * field, a limit) / ISV_ENOMEM, with a message naming the problem in err (NUL-terminated). */
int isv__grps_pb_decode(const uint8_t *msg, size_t len, const isv__grps_limits *lim,
                        isv__arena *a, isv__grps_msg *out, char *err, size_t errcap);
/* Append m serialized to out. Tensors of a type grps cannot carry (BOOL, UINT16/32/64, BF16)
 * and BYTES elements that are not UTF-8 (flat_string is a string) give ISV_EINVAL naming the
 * tensor in err; ISV_ENOMEM when out failed. NDARRAY with its tensor is written as gtensors
 * (grps carries ndarray data only in JSON); NDARRAY without one as the empty ndarray field. */
int isv__grps_pb_encode(const isv__grps_msg *m, isv__buf *out, char *err, size_t errcap);
/* The same message as parts for a vectored write, without copying the large payloads: packed
 * flat_float32 / flat_float64 data and bin_data / str_data of at least ref_min bytes are
 * referenced where they are (they must outlive the write: a request's outputs do), the bytes
 * around them written into memory from `a`. *v (from `a`, *nv entries) covers the whole
 * message, *total bytes. Errors as isv__grps_pb_encode. */
int isv__grps_pb_encode_ref(const isv__grps_msg *m, isv__arena *a, size_t ref_min, uv_buf_t **v,
                            size_t *nv, size_t *total, char *err, size_t errcap);

/* ---- JSON (grps_json.c) --------------------------------------------------------------------
 * Decode the protobuf JSON mapping of a GrpsMessage from a MUTABLE buffer (strings are
 * unescaped in place). Field names as in the proto or in lowerCamelCase ("str_data",
 * "strData"); enums by name or number; int64 and uint32 as numbers or strings; s_b values
 * base64 (standard or URL-safe, padding optional); "ndarray" nested arrays of numbers = one
 * FP32 tensor of that shape (ragged → error); bin_data → ISV_EBADREQ ("send
 * application/octet-stream"); unknown keys and two members of data_oneof → ISV_EBADREQ naming
 * them. Returns as isv__grps_pb_decode. */
int isv__grps_json_decode(char *body, size_t len, const isv__grps_limits *lim, isv__arena *a,
                          isv__grps_msg *out, char *err, size_t errcap);
/* Append m as JSON to out: {"status":{"code","msg","status":"SUCCESS"}}, "model" when set, then
 * its data — str_data, gtensors (dtype by name, shape, flat_<type>; int64 as strings), ndarray
 * (tensors[0] nested by its shape), gmap (s_b base64), bin_data as base64 (proto3 JSON; a
 * front end sends bin_data raw instead). Errors as isv__grps_pb_encode. */
int isv__grps_json_encode(const isv__grps_msg *m, isv__buf *out, char *err, size_t errcap);

#endif
