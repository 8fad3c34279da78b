/* The descriptors of proto/ — every .proto the library serves — compiled in at build time
 * (proto/gen_descriptors.py over protoc's descriptor set; proto/meson.build): for gRPC server
 * reflection (reflection_grpc.c). Nothing here is written by hand. */
#ifndef ISV_PROTOCOL_DESCRIPTORS_H
#define ISV_PROTOCOL_DESCRIPTORS_H

#include "protocol/layer.h"

#include <stddef.h>
#include <stdint.h>

typedef struct isv__pb_file {
  const char *name;     /* as protoc names it: the path under proto/ ("health.proto") */
  const uint8_t *data;  /* its serialized google.protobuf.FileDescriptorProto */
  size_t len;
  const uint16_t *deps; /* the files it imports, transitively (indices into isv__pb_files) */
  size_t n_deps;
} isv__pb_file;

typedef enum {
  ISV__PB_MESSAGE,
  ISV__PB_ENUM,
  ISV__PB_SERVICE,
  ISV__PB_METHOD,
  ISV__PB_FIELD,     /* a message's field or oneof: "pkg.Msg.field" */
  ISV__PB_ENUM_VALUE /* in its enum's scope: "pkg.Msg.VALUE" (protobuf's scoping) */
} isv__pb_kind;

/* A fully-qualified name: a message or enum (nested ones "pkg.Outer.Inner"), a field, an enum
 * value, a service ("pkg.Service") or a method ("pkg.Service.Method"). */
typedef struct isv__pb_symbol {
  const char *name;
  isv__pb_kind kind;
  uint16_t file;
} isv__pb_symbol;

extern const isv__pb_file isv__pb_files[];
extern const size_t isv__pb_n_files;
extern const isv__pb_symbol isv__pb_symbols[]; /* sorted by name, strcmp's order */
extern const size_t isv__pb_n_symbols;

#endif
