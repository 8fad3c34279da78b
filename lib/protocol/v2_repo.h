/* Triton's model repository extension on KServe V2 (core/repository.h has its core side):
 * REST POST /v2/repository/index, /v2/repository/models/{m}/load and /unload
 * (v2_repo_http.c), gRPC RepositoryIndex, RepositoryModelLoad and RepositoryModelUnload
 * (v2_repo_pb.c), and their codecs (v2_repo_json.c, v2_repo_pb.c: no I/O; fuzz_repository
 * drives them directly).
 *
 * As Triton (http_server.cc, grpc_server.cc, docs/protocol/extension_model_repository.md):
 *  - index: {"ready": bool} optional (an empty body is {}); the answer is a JSON array of
 *    {"name", "version", "state", "reason"}, version and state only when known, reason only
 *    when not empty. gRPC: RepositoryIndexResponse.models.
 *  - load: {"parameters": {"config": "<JSON>"}} optional; "config" must be a string holding a
 *    JSON object (400 otherwise), "file:..." parameters are not supported (501), any other
 *    parameter is unrecognized (400). Success: 200 with an empty body / an empty message.
 *  - unload: {"parameters": {"unload_dependents": bool}} optional; other parameters are
 *    ignored, as Triton does.
 *  - a repository_name (gRPC field 1, or the REST form /v2/repository/{name}/...): 501
 *    "'repository_name' specification is not supported".
 *  - unknown top-level JSON members and unknown protobuf fields are skipped.
 * Decoders refuse hostile input with 400 and a message naming the problem: a body that is not
 * a JSON object, wrong types, a model name that is empty, holds a NUL or is not UTF-8, a
 * truncated or mistyped protobuf field.
 *
 * DECISIONS, where Triton differs or is silent:
 *  - A server without repository callbacks answers load and unload 503 / UNAVAILABLE (Triton's
 *    code for a server without model control) with Triton's opening words, "explicit model
 *    load / unload is not allowed", and says why: it has no model repository (Triton's text
 *    goes on about polling, which means nothing here).
 *  - An unknown load parameter is 400 on REST too (Triton's REST answers an internal error,
 *    its gRPC "unrecognized load parameter"); "file:" parameters are 501 (Triton takes model
 *    files; a host here registers code, not files).
 *  - The host's errors keep their ISV_E* status: Triton answers a failed load 500 INTERNAL,
 *    a host says ISV_ENOTFOUND (404) for a model it does not have — a client's mistake is not
 *    the server's failure — with Triton's words if it likes (the demo does).
 *  - Operations run one at a time (core/repository.h); Triton serializes only the ones that
 *    touch the same models. */
#ifndef ISV_PROTOCOL_V2_REPO_H
#define ISV_PROTOCOL_V2_REPO_H

#include "protocol/layer.h"

#include <stddef.h>
#include <stdint.h>

#include "codec/buf.h"
#include "core/repository.h"
#include "protocol/grpc_service.h"
#include "protocol/router.h"

#define ISV__REPO_NAMED_UNSUPPORTED "'repository_name' specification is not supported"

/* ---- JSON (v2_repo_json.c) ------------------------------------------------------------------ */

/* An index request body (len 0: none): *ready. 0, or ISV_EBADREQ with err (cap bytes) set. */
int isv__v2repo_json_index(char *body, size_t len, unsigned max_depth, int *ready, char *err,
                           size_t cap);
/* A load / unload of model (name, name_len) — the path's — with its optional body: r becomes
 * the operation (isv__repo_request) and its op is filled. 0, or the ISV_E* code with r failed
 * (the body may be unescaped in place). */
int isv__v2repo_json_load(isv_request *r, const char *name, size_t name_len, char *body,
                          size_t len, unsigned max_depth);
int isv__v2repo_json_unload(isv_request *r, const char *name, size_t name_len, char *body,
                            size_t len, unsigned max_depth);
/* The index as Triton's JSON array. */
void isv__v2repo_json_index_response(const isv_repository_list *ix, isv__buf *b);

/* Shared by both codecs: op->name from (s, n) — not empty, no NUL, UTF-8 — and op->config
 * from a "config" parameter's string (a JSON object within max_depth). 0, or r failed. */
int isv__v2repo_set_name(isv_request *r, isv__repo_op *op, const char *s, size_t n);
int isv__v2repo_set_config(isv_request *r, isv__repo_op *op, const char *s, size_t n,
                           unsigned max_depth);

/* ---- protobuf (v2_repo_pb.c) --------------------------------------------------------------- */

/* RepositoryIndexRequest {repository_name 1, ready 2}: *ready. 0, or ISV_EBADREQ /
 * ISV_EUNIMPL (a repository_name) with err set. */
int isv__v2repo_pb_index(const uint8_t *msg, size_t len, int *ready, char *err, size_t cap);
/* RepositoryModelLoadRequest {repository_name 1, model_name 2, parameters 3 map<string,
 * ModelRepositoryParameter{bool 1, int64 2, string 3, bytes 4}>} and RepositoryModelUnloadRequest
 * (the same fields) into r, as the JSON decoders do: the gRPC methods' decode. */
int isv__v2repo_pb_load(isv_request *r, const uint8_t *msg, size_t len);
int isv__v2repo_pb_unload(isv_request *r, const uint8_t *msg, size_t len);
/* RepositoryIndexResponse {models 1: ModelIndex{name 1, version 2, state 3, reason 4}}. 0 or
 * ISV_ENOMEM. */
int isv__v2repo_pb_index_response(const isv_repository_list *ix, isv__buf *out);
/* RepositoryModelLoadResponse / RepositoryModelUnloadResponse: the empty message (the gRPC
 * methods' encode). */
int isv__v2repo_pb_empty(isv_request *r, isv__parts *out);
/* RepositoryIndex, answered at once (a grpc method's answer). */
int isv__v2repo_grpc_index(isv__grpc_unary *u);

/* ---- REST handlers (v2_repo_http.c), for v2_http.c's route table ----------------------------- */

void isv__v2repo_http_index(isv__http_req *q);
void isv__v2repo_http_load(isv__http_req *q);
void isv__v2repo_http_unload(isv__http_req *q);
/* /v2/repository/{repository}/...: 501 ISV__REPO_NAMED_UNSUPPORTED */
void isv__v2repo_http_named(isv__http_req *q);

#endif
