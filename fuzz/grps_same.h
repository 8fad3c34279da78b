/* Two decoded GrpsMessages compared field by field (protocol/grps_msg.h): kind, status, model,
 * data, every tensor's name, dtype, shape and elements, every map entry. Shared by the grps
 * fuzz targets' round trips and test_grps_json.c. */
#ifndef ISV_FUZZ_GRPS_SAME_H
#define ISV_FUZZ_GRPS_SAME_H

#include "protocol/grps_msg.h"

enum {
  /* float elements compared as bits (protobuf keeps a NaN's payload); else a NaN equals any
   * NaN (JSON writes every NaN as NaN) */
  ISV_GRPS_SAME_BITS = 1,
  /* entries in the same order across maps (protobuf keeps wire order); else the order within
   * each map only (JSON groups a map's entries) */
  ISV_GRPS_SAME_ENTRY_ORDER = 2
};

int isv_grps_same(const isv__grps_msg *a, const isv__grps_msg *b, unsigned how);

#endif
