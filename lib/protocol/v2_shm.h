/* Triton's system shared memory extension on the V2 front end (docs/protocol/
 * extension_shared_memory.md): register / status / unregister over REST and gRPC, their
 * request decoders (fuzzed: fuzz/fuzz_shm_params.c), and the answers of the CUDA shared memory
 * endpoints (not supported: nothing is ever registered there, registering is refused 501 /
 * UNIMPLEMENTED). The region registry itself is the core's (core/shm.h); the tensor
 * parameters are read by the infer decoders (v2_json.c, v2_pb.c) with isv__shm_param. */
#ifndef ISV_PROTOCOL_V2_SHM_H
#define ISV_PROTOCOL_V2_SHM_H

#include "protocol/layer.h"

#include <stddef.h>
#include <stdint.h>

#include "protocol/grpc_service.h"
#include "protocol/router.h"

/* A register request: name, key, offset, byte_size. Strings point into the decoded buffer. */
typedef struct isv__v2shm_reg {
  const char *name, *key;
  size_t name_len, key_len;
  uint64_t offset, byte_size;
} isv__v2shm_reg;

/* The REST body {"key": str, "offset": uint (optional, 0), "byte_size": uint} (body is
 * unescaped in place; the name comes from the path). 0, or -1 with err naming the problem. */
int isv__v2shm_decode_register_json(char *body, size_t len, unsigned max_depth,
                                    isv__v2shm_reg *out, char *err, size_t err_cap);
/* SystemSharedMemoryRegisterRequest {name 1, key 2, offset 3, byte_size 4}. 0 or -1. */
int isv__v2shm_decode_register_pb(const uint8_t *msg, size_t len, isv__v2shm_reg *out,
                                  char *err, size_t err_cap);
/* SystemSharedMemory{Status,Unregister}Request {name 1}: *name "" (len 0) when absent. */
int isv__v2shm_decode_name_pb(const uint8_t *msg, size_t len, const char **name,
                              size_t *name_len);

/* REST handlers (the V2 route table names them). */
void isv__v2shm_http_status(isv__http_req *q);
void isv__v2shm_http_register(isv__http_req *q);
void isv__v2shm_http_unregister(isv__http_req *q);
/* the route's data: "status", "register" or "unregister" */
void isv__v2shm_http_cuda(isv__http_req *q);

/* gRPC answers (the V2 method table names them). */
int isv__v2shm_grpc_status(isv__grpc_unary *u);
int isv__v2shm_grpc_register(isv__grpc_unary *u);
int isv__v2shm_grpc_unregister(isv__grpc_unary *u);
int isv__v2shm_grpc_cuda_status(isv__grpc_unary *u);
int isv__v2shm_grpc_cuda_register(isv__grpc_unary *u);
int isv__v2shm_grpc_cuda_unregister(isv__grpc_unary *u);

#endif
