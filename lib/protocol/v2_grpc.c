/* KServe V2 over gRPC: inference.GRPCInferenceService as a method table for the call layer
 * (grpc_service.h). The small RPCs are answered here; ModelInfer and ModelStreamInfer are
 * codecs (v2_pb.h) around the core. */
#include <stdlib.h>
#include <string.h>

#include "core/resolve.h"
#include "protocol/v2.h"
#include "protocol/v2_pb.h"
#include "protocol/v2_logging.h"
#include "protocol/v2_trace.h"
#include "protocol/v2_shm.h"
#include "protocol/v2_repo.h"
#include "core/queries.h"

#define SVC "/inference.GRPCInferenceService/"

static int server_live(isv__grpc_unary *u) { return isv__v2pb_encode_bool1(1, u->out); }

static int server_ready(isv__grpc_unary *u) {
  return isv__v2pb_encode_bool1(isv__core_ready(u->core), u->out);
}

static int server_metadata(isv__grpc_unary *u) {
  const char *ext[32];
  size_t n_ext = isv__v2_server_extensions(u->core, ext, 32);
  return isv__v2pb_encode_server_metadata(u->core->opts.server_name, u->core->opts.server_version,
                                          ext, n_ext, u->out);
}

/* The model a ModelReadyRequest / ModelMetadataRequest names, judged at the edge's model stage
 * (the version it resolved to): 0, or an error for the call (ISV__GATE_LATER: wait). */
static int request_model(isv__grpc_unary *u, isv_model **m) {
  char name[256], version[64];
  if (isv__v2pb_decode_model_ref(u->msg, u->len, name, sizeof name, version, sizeof version) != 0) {
    strcpy(u->err, "malformed request message");
    return ISV_EBADREQ;
  }
  isv__model_spec spec = {name, strlen(name), version[0] ? version : NULL, strlen(version), NULL, 0};
  isv__why why = isv__core_resolve(u->core, &spec, m);
  if (why != ISV__FOUND) return isv__why_say(why, ISV__WORDS_KSERVE, &spec, u->err, sizeof u->err);
  return isv__grpc_unary_model(u, (*m)->cfg->name, (*m)->version);
}

/* A model or version that is not there is not ready: ready=false with status OK, as Triton's
 * ModelReady answers (its clients ask is_model_ready() after an unload and expect False, not an
 * error). REST's GET .../ready keeps its 404: any non-200 is "not ready" to HTTP clients. */
static int model_ready(isv__grpc_unary *u) {
  isv_model *m;
  int rc = request_model(u, &m);
  if (rc == ISV_ENOTFOUND) return isv__v2pb_encode_bool1(0, u->out);
  return rc ? rc : isv__v2pb_encode_bool1(isv__core_model_ready(u->core, m), u->out);
}

static int model_config(isv__grpc_unary *u) {
  isv_model *m;
  int rc = request_model(u, &m);
  return rc ? rc : isv__v2pb_encode_model_config(m, u->out);
}

static int model_metadata(isv__grpc_unary *u) {
  isv_model *m;
  int rc = request_model(u, &m);
  return rc ? rc : isv__v2pb_encode_model_metadata(m, u->out);
}

/* Triton's statistics extension: ModelStatisticsRequest {name 1, version 2} (name "": every
 * model; no version: every version of the model). */
typedef struct version_list {
  const isv_model **v;
  size_t n, cap;
  int failed;
  const isv_mem *mem;
} version_list;

static void list_one(version_list *l, const isv_model *m) {
  if (l->n == l->cap) {
    size_t cap = l->cap ? 2 * l->cap : 16;
    const isv_model **nv = isv__realloc(l->mem, l->v, cap * sizeof *nv);
    if (nv == NULL) {
      l->failed = 1;
      return;
    }
    l->v = nv;
    l->cap = cap;
  }
  l->v[l->n++] = m;
}

static void list_versions(isv__model_entry *e, void *data) {
  for (const isv_model *m = e->versions; m; m = m->next) list_one(data, m);
}

static int model_statistics(isv__grpc_unary *u) {
  char name[256], version[64];
  if (isv__v2pb_decode_model_ref(u->msg, u->len, name, sizeof name, version, sizeof version) != 0) {
    strcpy(u->err, "malformed request message");
    return ISV_EBADREQ;
  }
  version_list l = {.mem = u->core->mem};
  if (name[0] == '\0') {
    isv__registry_foreach(isv__core_models(u->core), list_versions, &l);
  } else {
    isv_model *m = NULL;
    isv__model_spec spec = {name, strlen(name), version[0] ? version : NULL, strlen(version),
                            NULL, 0};
    isv__why why = isv__core_resolve(u->core, &spec, &m);
    int rc = why ? isv__why_say(why, ISV__WORDS_KSERVE, &spec, u->err, sizeof u->err) : 0;
    if (rc == 0) { /* judged on the version it resolved to, or none: every version answered */
      int every = !version[0] && m->entry != NULL;
      rc = isv__grpc_unary_model(u, m->cfg->name, every ? NULL : m->version);
    }
    if (rc) return rc;
    if (version[0] || m->entry == NULL) list_one(&l, m);
    else list_versions(m->entry, &l);
  }
  int rc = l.failed ? ISV_ENOMEM
                    : isv__v2pb_encode_model_statistics(l.v, l.n, u->out);
  isv__free(l.v);
  return rc;
}

const isv__grpc_method isv__v2_methods[] = {
    {SVC "ServerLive", ISV__RPC_UNARY, server_live, NULL, NULL, NULL, NULL},
    {SVC "ServerReady", ISV__RPC_UNARY, server_ready, NULL, NULL, NULL, NULL},
    {SVC "ModelReady", ISV__RPC_UNARY, model_ready, NULL, NULL, NULL, NULL},
    {SVC "ServerMetadata", ISV__RPC_UNARY, server_metadata, NULL, NULL, NULL, NULL},
    {SVC "ModelMetadata", ISV__RPC_UNARY, model_metadata, NULL, NULL, NULL, NULL},
    {SVC "ModelStatistics", ISV__RPC_UNARY, model_statistics, NULL, NULL, NULL, NULL},
    {SVC "ModelConfig", ISV__RPC_UNARY, model_config, NULL, NULL, NULL, NULL},
    {SVC "LogSettings", ISV__RPC_UNARY, isv__v2log_grpc, NULL, NULL, NULL, NULL},
    {SVC "TraceSetting", ISV__RPC_UNARY, isv__v2trace_grpc, NULL, NULL, NULL, NULL},
    /* system shared memory (v2_shm.h); CUDA shared memory: not supported, said so */
    {SVC "SystemSharedMemoryStatus", ISV__RPC_UNARY, isv__v2shm_grpc_status, NULL, NULL, NULL, NULL},
    {SVC "SystemSharedMemoryRegister", ISV__RPC_UNARY, isv__v2shm_grpc_register, NULL, NULL, NULL, NULL},
    {SVC "SystemSharedMemoryUnregister", ISV__RPC_UNARY, isv__v2shm_grpc_unregister, NULL, NULL,
     NULL, NULL},
    {SVC "CudaSharedMemoryStatus", ISV__RPC_UNARY, isv__v2shm_grpc_cuda_status, NULL, NULL, NULL, NULL},
    {SVC "CudaSharedMemoryRegister", ISV__RPC_UNARY, isv__v2shm_grpc_cuda_register, NULL, NULL,
     NULL, NULL},
    {SVC "CudaSharedMemoryUnregister", ISV__RPC_UNARY, isv__v2shm_grpc_cuda_unregister, NULL, NULL,
     NULL, NULL},
    /* Triton's model repository extension (v2_repo_pb.c) */
    {SVC "RepositoryIndex", ISV__RPC_UNARY, isv__v2repo_grpc_index, NULL, NULL, NULL, NULL},
    {SVC "RepositoryModelLoad", ISV__RPC_UNARY, NULL, isv__v2repo_pb_load, isv__v2repo_pb_empty,
     NULL, NULL},
    {SVC "RepositoryModelUnload", ISV__RPC_UNARY, NULL, isv__v2repo_pb_unload,
     isv__v2repo_pb_empty, NULL, NULL},
    {SVC "ModelInfer", ISV__RPC_UNARY, NULL, isv__v2pb_decode_infer_request,
     isv__v2pb_encode_infer_response, NULL, NULL},
    /* one response per request, in completion order; a failed one is a message with
     * error_message, and the stream goes on */
    {SVC "ModelStreamInfer", ISV__RPC_BIDI_STREAM, NULL, isv__v2pb_decode_infer_request,
     isv__v2pb_encode_stream_response, isv__v2pb_encode_stream_error, NULL},
    {0},
};
