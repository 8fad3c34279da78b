/* grps's metadata: YAML text carried in str_data (seed 002: "metadata is YAML text"), the same
 * for HTTP and gRPC. Scalars are written as double-quoted YAML strings (JSON's escapes are
 * YAML's), so a name with any character stays one scalar. */
#ifndef ISV_PROTOCOL_GRPS_META_H
#define ISV_PROTOCOL_GRPS_META_H

#include "protocol/layer.h"

#include "codec/buf.h"
#include "core/core.h"

/* The server: name, version, whether it is live/ready/online, its default model, and every
 * model with its versions and their states. */
void isv__grps_server_yaml(isv__core *c, isv__buf *b);
/* One model version: name, version, the model's versions, platform, state, max_batch,
 * decoupled, open I/O and native modes, its inputs and outputs (dtype in grps's names when
 * grps has one, else V2's; shape with -1 for any size and the batch dimension). */
void isv__grps_model_yaml(const isv__core *c, const isv_model *m, isv__buf *b);

#endif
