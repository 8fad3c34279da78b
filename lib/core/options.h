#ifndef ISV_CORE_OPTIONS_H
#define ISV_CORE_OPTIONS_H

#include "core/layer.h"

#include <stddef.h>
#include <stdint.h>

#include "inferserve.h"

struct isv_options {
  size_t max_body_bytes;
  size_t max_header_bytes;
  uint64_t idle_timeout_ms;
  uint64_t header_timeout_ms;
  unsigned max_connections;
  unsigned max_json_depth;
  int strict_readiness;
  size_t buffer_cache_bytes;
  char server_name[64];
  char server_version[32];
};

void isv__options_defaults(isv_options *o);

#endif
