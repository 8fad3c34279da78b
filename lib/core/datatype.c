#include <string.h>

#include "inferserve.h"

static const struct {
  const char *name;
  size_t size;
} isv__types[] = {
    [ISV_TYPE_INVALID] = {NULL, 0}, [ISV_BOOL] = {"BOOL", 1},     [ISV_UINT8] = {"UINT8", 1},
    [ISV_UINT16] = {"UINT16", 2},   [ISV_UINT32] = {"UINT32", 4}, [ISV_UINT64] = {"UINT64", 8},
    [ISV_INT8] = {"INT8", 1},       [ISV_INT16] = {"INT16", 2},   [ISV_INT32] = {"INT32", 4},
    [ISV_INT64] = {"INT64", 8},     [ISV_FP16] = {"FP16", 2},     [ISV_BF16] = {"BF16", 2},
    [ISV_FP32] = {"FP32", 4},       [ISV_FP64] = {"FP64", 8},
    [ISV_BYTES] = {"BYTES", sizeof(isv_bytes)},
};

#define ISV__NTYPES (sizeof isv__types / sizeof isv__types[0])

ISV_EXTERN size_t isv_datatype_size(isv_datatype dt) {
  return (unsigned)dt < ISV__NTYPES ? isv__types[dt].size : 0;
}

ISV_EXTERN const char *isv_datatype_name(isv_datatype dt) {
  return (unsigned)dt < ISV__NTYPES ? isv__types[dt].name : NULL;
}

ISV_EXTERN isv_datatype isv_datatype_from_name(const char *name, size_t len) {
  if (name == NULL) return ISV_TYPE_INVALID;
  for (size_t i = 1; i < ISV__NTYPES; i++)
    if (strlen(isv__types[i].name) == len && memcmp(isv__types[i].name, name, len) == 0)
      return (isv_datatype)i;
  return ISV_TYPE_INVALID;
}
