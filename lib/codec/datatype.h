/* The tensor datatypes: sizes, and the name each protocol gives them, in ONE table.
 *
 * A front end never spells a datatype itself: it looks the name up in its column here (V2
 * "FP32", TF Serving "DT_FLOAT", grps "DT_FLOAT32" = 7, Triton's model configuration
 * "TYPE_FP32" = 11). A type a protocol cannot carry has no name in its column (NULL, number 0). */
#ifndef ISV_CODEC_DATATYPE_H
#define ISV_CODEC_DATATYPE_H

#include <stddef.h>

#include "inferserve.h" /* isv_datatype */

/* Dimensions of any tensor, on every protocol and in the in-process API. */
#define ISV__MAX_NDIM 32

/* XX(enum suffix, element size, V2, TF Serving, grps name, grps number, Triton config name,
 *    Triton config number (model_config.proto's DataType), TF Serving's DataType number
 *    (tensorflow.DataType, the TensorProto's dtype on gRPC)) */
#define ISV__DATATYPES(XX)                                                                     \
  XX(BOOL, 1, "BOOL", "DT_BOOL", NULL, 0, "TYPE_BOOL", 1, 10)                                     \
  XX(UINT8, 1, "UINT8", "DT_UINT8", "DT_UINT8", 1, "TYPE_UINT8", 2, 4)                            \
  XX(UINT16, 2, "UINT16", "DT_UINT16", NULL, 0, "TYPE_UINT16", 3, 17)                             \
  XX(UINT32, 4, "UINT32", "DT_UINT32", NULL, 0, "TYPE_UINT32", 4, 22)                             \
  XX(UINT64, 8, "UINT64", "DT_UINT64", NULL, 0, "TYPE_UINT64", 5, 23)                             \
  XX(INT8, 1, "INT8", "DT_INT8", "DT_INT8", 2, "TYPE_INT8", 6, 6)                                 \
  XX(INT16, 2, "INT16", "DT_INT16", "DT_INT16", 3, "TYPE_INT16", 7, 5)                            \
  XX(INT32, 4, "INT32", "DT_INT32", "DT_INT32", 4, "TYPE_INT32", 8, 3)                            \
  XX(INT64, 8, "INT64", "DT_INT64", "DT_INT64", 5, "TYPE_INT64", 9, 9)                            \
  XX(FP16, 2, "FP16", "DT_HALF", "DT_FLOAT16", 6, "TYPE_FP16", 10, 19)                            \
  XX(BF16, 2, "BF16", "DT_BFLOAT16", NULL, 0, "TYPE_BF16", 14, 14)                                \
  XX(FP32, 4, "FP32", "DT_FLOAT", "DT_FLOAT32", 7, "TYPE_FP32", 11, 1)                            \
  XX(FP64, 8, "FP64", "DT_DOUBLE", "DT_FLOAT64", 8, "TYPE_FP64", 12, 2)                           \
  XX(BYTES, sizeof(isv_bytes), "BYTES", "DT_STRING", "DT_STRING", 9, "TYPE_STRING", 13, 7)

/* Which column of the table a name is in. */
typedef enum {
  ISV__DTN_V2 = 0, /* KServe V2 / Open Inference Protocol (also the public names) */
  ISV__DTN_TF,     /* TensorFlow Serving's DataType enum names */
  ISV__DTN_GRPS,   /* grps.protos.v1.DataType names */
  ISV__DTN_TRITON, /* Triton's model configuration data_type */
  ISV__DTN_COUNT
} isv__dt_naming;

/* Element size (sizeof(isv_bytes) for BYTES); 0 for an invalid type. Inline, from the table's
 * size column: it is asked for several times per tensor (isv_datatype_size is this). */
static inline size_t isv__dt_size(isv_datatype dt) {
  switch (dt) {
#define ISV__DT_SIZE_CASE(e, size, ...) \
  case ISV_##e:                         \
    return size;
    ISV__DATATYPES(ISV__DT_SIZE_CASE)
#undef ISV__DT_SIZE_CASE
    default:
      return 0;
  }
}
/* dt's name in that protocol; NULL when the protocol has no such type, or dt is invalid. */
const char *isv__dt_name(isv_datatype dt, isv__dt_naming naming);
/* The type named (name, len) in that protocol (case-sensitive); ISV_TYPE_INVALID if none. */
isv_datatype isv__dt_from_name(isv__dt_naming naming, const char *name, size_t len);
/* grps's DataType numbers: 0 when grps cannot carry dt; ISV_TYPE_INVALID for an unknown n. */
int isv__dt_grps_number(isv_datatype dt);
isv_datatype isv__dt_from_grps_number(int n);
/* Triton's model configuration DataType number (TYPE_FP32 = 11); 0 for an invalid type. */
int isv__dt_triton_number(isv_datatype dt);
/* TensorFlow's DataType number (DT_FLOAT = 1); ISV_TYPE_INVALID for a number with no type here
 * (DT_COMPLEX64, DT_RESOURCE, DT_VARIANT, the quantized types...). */
int isv__dt_tf_number(isv_datatype dt);
isv_datatype isv__dt_from_tf_number(int n);

#endif
