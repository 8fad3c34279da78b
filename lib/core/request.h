/* The one canonical inference request/response every protocol decodes into and encodes from. */
#ifndef ISV_CORE_REQUEST_H
#define ISV_CORE_REQUEST_H

#include "core/layer.h"

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "codec/tracectx.h"
#include "core/arena.h"
#include "core/core.h"

struct isv_tensor {
  const char *name;
  isv_datatype dt;
  int64_t *shape;
  size_t ndim;
  void *data;
  size_t count;     /* element count */
  size_t byte_size; /* count * size, or the sum of BYTES lengths */
  isv_destructor del; /* client-side inputs: who frees data */
  uint32_t flags;     /* frontend-private bits (e.g. "write as binary") */
  const struct isv__out_dest *dest; /* an output written into its requester's buffer (its
                                     * data is there; front ends send no data for it) */
};

/* Where a requested output must be written: a buffer its requester provides
 * (isv_request_add_requested_output_buffer) or a shared memory region a front end resolved (shm.h).
 * isv_request_alloc_output hands it to the backend when the output fits; otherwise the output is
 * copied there after the backend (isv__request_postprocess), or the request fails 400. */
typedef struct isv__out_dest {
  void *p;            /* where the output may be written in memory; NULL with shm */
  size_t cap;
  size_t used;        /* bytes written (BYTES outputs: their u32-LE length + bytes form) */
  const char *region; /* the shared memory region's name (front ends echo it), or NULL */
  uint64_t offset;    /* shared_memory_offset within the region */
  struct isv__shm_region *shm; /* a region not mapped (shm.h): the output is copied there with
                                * pwrite after the backend, never handed to it */
} isv__out_dest;

typedef struct isv__req_output {
  const char *name;
  uint32_t classification; /* 0 = plain output, k = top-k classification */
  uint32_t flags;          /* frontend-private */
  isv__out_dest *dest;     /* NULL: library memory */
} isv__req_output;

/* Backend memory an output refers to, released when the request is freed. */
typedef struct isv__owned {
  struct isv__owned *next;
  void *p;
  isv_destructor del;
} isv__owned;

typedef struct isv__param_entry {
  const char *key;
  isv_param val;
} isv__param_entry;

/* The scheduler's record of a submitted request (core/scheduler.c: private there). */
struct isv__job;
/* A streaming request's responses (core/responses.h). */
struct isv__stream;
/* Models calling models: a request's part as a nested request or a parent (core/nested.h,
 * which sits above the scheduler: the scheduler reaches it through these hooks — the core's
 * nest_ops, set by isv__core_init — for a request whose r->nest is set). */
struct isv__nest;
typedef struct isv__nest_ops {
  /* x, an execution, was cancelled: so are its nested requests in flight (loop thread) */
  void (*cancel)(isv_request *x);
  /* isv_request_free's first step: 1 when r is not released now; else *then may name a
   * request whose free is due after r's */
  int (*free)(isv_request *r, isv_request **then);
  /* x, a nested request, starts an ISV_EXEC_POOL execution of its own: 1 when the thread
   * waiting for it (isv_request_run) takes the job and runs it itself — not a worker's hop
   * away, and never a job another request queued — else 0: the pool runs it (loop thread) */
  int (*run_here)(isv_request *x, struct isv__pool_job *job);
  /* x's nested requests submitted and not done (under core->mu): an INLINE backend with one
   * in flight may return without completing (its callback completes it) */
  unsigned (*in_flight)(const isv_request *x);
} isv__nest_ops;

/* The W3C trace context a request came with (part of its message, as its id). */
typedef struct isv__req_trace {
  int has;                /* a valid traceparent came with it (isv__request_trace) */
  isv__traceparent tp;    /* valid when has */
  const char *state;      /* its tracestate, kept with a valid traceparent only (arena); NULL */
} isv__req_trace;

struct isv_request {
  isv__core *core;
  isv__arena arena;
  const char *model_name;
  const char *version; /* requested version; NULL = default */
  const char *label;   /* requested label instead of a version; NULL = none */
  isv_model *model;    /* resolved; holds a reference */
  const char *id;
  isv__req_trace trace;

  isv_tensor *inputs;
  size_t n_inputs, cap_inputs;
  isv__req_output *req_outputs;
  size_t n_req_outputs, cap_req_outputs;
  isv__param_entry *params;
  size_t n_params, cap_params;
  isv__param_entry *resp_params; /* set by the backend */
  size_t n_resp_params, cap_resp_params;
  isv_tensor *outputs;
  size_t n_outputs, cap_outputs;
  isv__owned *owned; /* isv_request_set_output() memory with a destructor */
  isv__owned *refs;  /* what its inputs and output destinations use (shared memory regions),
                      * released after everything else when it is freed */
  void *body;               /* the wire bytes its inputs may point into (a front end's body or
                             * message), handed over at decoding; freed after the inputs */
  isv_destructor body_free; /* how */
  size_t body_len;

  int status;
  const char *errmsg;
  uint32_t retry_after_s; /* a refusal's estimate of when a retry may be taken (the scheduler's:
                           * a full queue); 0 = none. REST answers carry it as Retry-After */

  /* completion: flags below are guarded by core->mu, but for an inline execution's own
   * completion on the loop thread (scheduler.c's completion protocol) */
  int submitted;
  atomic_int completed; /* set by a compare-and-swap, under core->mu but for that one; atomic so
                         * that a backend's thread may read it alone (completed_already) */
  int in_infer;
  int done_inline; /* completed by its inline backend on the loop thread, without core->mu,
                    * during infer (loop thread only) */
  int finished; /* done callback invoked (loop thread only) */
  int counted;  /* counted in core->inflight */
  int has_id;   /* the client sent an id (echo it, even "") */
  int backend_fault;    /* its error is the backend's: logged for the host (scheduler.c) */
  const char *misuse;   /* why the backend's last refused call on it was refused */
  atomic_int cancelled; /* set on the loop thread (isv__core_cancel), read by backends anywhere */
  isv_infer_cb done;
  void *done_data;
  isv_request *qnext; /* in the core's queue of completions */
  uint64_t start_ns;    /* when it was submitted */
  uint64_t complete_ns; /* when the backend completed it (any thread) */
  void *caller; /* who sent it, for the edge's model stage (protocol/gate.h; opaque here);
                 * NULL: nobody asks (in process, the server's own hidden models) */
  uint8_t protocol;     /* the front end's label index (isv__core_protocol), for the metrics */
  uint32_t proto_flags; /* frontend-private (e.g. V2's binary_data_output default) */
  void *fe_data;        /* frontend-private: what it hands its own backend (a custom route's
                         * isv_http_request) */
  struct isv__repo_op *repo_op; /* a model repository operation (core/repository.h): bound to
                                 * the repository's hidden model, never to a named one */

  uint64_t timeout_us;     /* a front end's deadline (grpc-timeout); 0 = none */
  int warmup;              /* a model warmup sample's (core/warmup.h): may run while its version
                            * is LOADING; never cached */
  int is_exec;             /* handed to a backend's infer (an execution, not a batch's member):
                            * the one a backend may complete; set before infer, never cleared */
  struct isv__job *job;    /* the scheduler's, from submission (core/scheduler.c); NULL before */
  /* decoupled models: responses sent before completion (core/responses.h) */
  struct isv__stream *stream;  /* its responses' way to the front end; NULL: answers once */
  isv__arena out_arena;        /* a streaming request's: where the next response's outputs are
                                * allocated (the request's own arena holds its message) */
  isv_request *parent;         /* a response: the request that sent it */
  isv_request *resp_next;      /* a response: in its parent's stream, not yet delivered */
  size_t resp_cost;            /* a response: what it counts in its stream's pending bytes */
  unsigned children;           /* responses not yet freed; under core->mu */
  int free_pending;            /* freed by its owner while responses still live */
  atomic_int dead;             /* freed: in the core's quarantine, every call on it refused */
  /* abandoned by the server's close: its backend still ran it past the drain deadline plus
   * the cancelled requests' grace; its memory lives on until the backend completes it
   * (scheduler.c). Under core->mu. */
  int abandoned;
  int backend_done; /* abandoned, and its backend has completed it */
  int stuck;        /* abandoned inside infer on a worker thread (counted in core->stuck) */
  struct isv__nest *nest; /* nested requests (core/nested.h): NULL unless it is one or made one;
                           * set under core->mu */
};

/* Whether a backend's call may touch r: not freed (a request in quarantine is dead). */
static inline int isv__request_dead(const isv_request *r) {
  return atomic_load_explicit(&((isv_request *)r)->dead, memory_order_relaxed);
}

/* A request with no model yet; frontends fill it then set model_name/version and submit. */
isv_request *isv__request_new(isv__core *c);
/* The trace context a front end read (traceparent tp, tracestate ts or NULL; not
 * NUL-terminated): kept when tp parses and ts is one to keep, else ISV_EINVAL and nothing kept
 * (front ends ignore that: a bad value is never the request's error). ISV_ENOMEM. */
int isv__request_trace(isv_request *r, const char *tp, size_t tp_len, const char *ts,
                       size_t ts_len);
/* Record an error before submission (frontend decode errors); printf-style. */
int isv__request_fail(isv_request *r, int status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
/* 0 when a request may carry `count` inputs / requested outputs / parameters (`what`), else
 * r failed with ISV_EBADREQ naming the server's max_tensors. A decoder that counts first
 * refuses before it allocates. */
int isv__request_within_limit(isv_request *r, size_t count, const char *what);
/* Arrays that grow in the arena, each holding at most the server's max_tensors entries. The
 * new element (zeroed; a repeated parameter key gives its entry back, cleared), or NULL with r
 * failed: ISV_EBADREQ naming the limit, or ISV_ENOMEM. */
isv_tensor *isv__request_push_input(isv_request *r);
isv__req_output *isv__request_push_output(isv_request *r);
isv__param_entry *isv__request_push_param(isv_request *r, const char *key, size_t klen);

/* A response parameter (copied), as isv_request_set_response_param without its state checks. */
int isv__request_add_resp_param(isv_request *r, const char *key, const isv_param *value);
/* A new zeroed output tensor of r, its fields for the caller to fill; NULL when out of memory. */
isv_tensor *isv__request_push_output_slot(isv_request *r);
/* Call del(p) when r is freed (memory r's outputs point into). 0, or ISV_ENOMEM. */
int isv__request_keep(isv_request *r, void *p, isv_destructor del);
/* Call del(p) when r is freed, after its inputs' and outputs' memory (a shared memory region
 * its tensors live in). 0, or ISV_ENOMEM. Any thread, before submission. */
int isv__request_keep_ref(isv_request *r, void *p, isv_destructor del);

/* Free r's memory at once: its inputs' and outputs' destructors, its model reference, its
 * arenas; the struct goes to the core's quarantine. isv_request_free is the public way. */
void isv__request_release(isv_request *r);

/* Whether err is one of the ISV_E* codes (error.c). */
int isv__err_known(int err);
/* A backend's failure code (and message, may be NULL) as r's result: an ISV_E* code as it is,
 * but ISV_EINVAL and ISV_EEXIST — what the library's calls return when a backend breaks their
 * rules — become ISV_EBACKEND with the rule that was broken; any other code (a -errno, a UV_E*,
 * a positive HTTP-like status) is the backend's fault too: ISV_EBACKEND naming the code, never
 * a status that blames the client. */
void isv__request_backend_failed(isv_request *r, int code, const char *message);

/* Element count of a shape with overflow and negativity checks: 0 ok, -1 bad. */
int isv__shape_count(const int64_t *shape, size_t ndim, size_t elsize, size_t *count,
                     size_t *bytes);
/* "[d0,d1,...]" into out (cap >= 32), with a leading -1 when `batch` (a model's batched
 * shape); dimensions that do not fit become "...". For error messages only. */
void isv__shape_text(char *out, size_t cap, const int64_t *shape, size_t ndim, int batch);
/* Sum of BYTES element lengths. */
size_t isv__bytes_total(const isv_bytes *b, size_t n);

/* Validation against the resolved model (core/validate.c). On error: status + message set. */
int isv__request_validate(isv_request *r);
/* After a successful backend run: drop unrequested outputs, check requested ones exist (unless
 * `partial`: a decoupled model's response may carry some of them), classification, order
 * outputs (core/validate.c). */
int isv__request_postprocess(isv_request *r, int partial);
/* The arena a backend's outputs and response parameters go to: the request's, or for a
 * decoupled model the next response's. */
static inline isv__arena *isv__out_arena(isv_request *r) {
  return r->stream ? &r->out_arena : &r->arena;
}

/* Top-k classification of one output tensor, replacing it (core/classify.c). */
int isv__classify(isv_request *r, isv_tensor *t, uint32_t k);

#endif
