/* The gRPC call layer (grpc_service.h): one call's life, for every method of every front end.
 *
 * A call (gcall) lives from dispatch until it has finished AND no request of it is in flight
 * AND none of its event callbacks is on the stack (`busy`: a backend that completes inline
 * runs infer_done inside on_message, which must not free the call under its caller).
 * Each request (job) owns the message its inputs point into; a job outlives its call when the
 * call is cancelled (the request still runs to completion; its answer is dropped). */
#include "protocol/grpc_service.h"
#include "protocol/trace.h"

#include "codec/pbwire.h"
#include "codec/zcoding.h"
#include "core/offload.h"
#include "protocol/gate.h"
#include "protocol/http_reply.h"
#include "core/responses.h"
#include "core/scheduler.h"

#include <assert.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Streamed responses up to this size are copied into one block and their response freed at
 * once (see stream_response); larger ones go out by reference. */
#define ISV__SMALL_RESPONSE_COPY ((size_t)16 << 10)

typedef struct job job;
typedef struct held held;

/* Where a call stands with the gate (gate.h): its first whole message asks. */
enum { GATE_NOT_ASKED = 0, GATE_PENDING, GATE_ALLOWED, GATE_REFUSED };

typedef struct gcall {
  isv__core *core;
  const isv__grpc_services *svc;
  const isv__grpc_method *m;
  unsigned protocol;
  isv__grpc_call *call;
  uint8_t *msg; /* unary and server-streaming: the one message */
  size_t len;
  int msg_compressed; /* ... still coded with the call's grpc-encoding */
  size_t msg_charged; /* what the decoded message holds of the receiving budget */
  int inflating;      /* a message is on a worker thread (being inflated, or decoded into its
                       * request): a stream's later messages wait in `held`, in order — a
                       * sequence's requests must reach the core as they were sent */
  unsigned n_msgs;
  int half_closed;
  int cancelled;
  int draining; /* server shutdown: end with UNAVAILABLE once in-flight work is answered */
  int finished;
  unsigned inflight;
  unsigned busy;
  job *jobs; /* requests in flight, to mark them cancelled */
  /* the edge (gate.h): the caller stage at the call's headers, the model stage for each
   * request (the core asks) and for what a unary answer names (isv__grpc_unary_model) */
  isv__caller who;     /* who.hold / release find the call (CALL_OF) */
  int judged;          /* someone judges (the gate is on): requests carry &who */
  int gate;            /* GATE_* */
  isv__client *client; /* its count under the per-client limit, released with the call */
  held *held, **held_tail; /* a stream's messages that came while the caller stage decides */
  unsigned holds;      /* decisions pending on who: the call (headers, peer) must stay */
  int finish_deferred; /* finished while held: the status goes out at the last release */
  int finish_status;
  char *finish_msg;
  isv__gate_pin allowed; /* what a later decision judged for a unary answer ... */
  int refused;                      /* ... and the refusal's code (0: allowed) and text */
  char refused_msg[256];
  size_t compress_min; /* answers this large are coded with call->answer_coding; 0: none */
  isv__grpc_keep keep; /* a SERVER_STREAM answer kept the call open (keep.end set) */
} gcall;

struct held {
  held *next;
  uint8_t *msg;
  size_t len;
  int compressed;
};

struct job {
  isv__offload off; /* a large message is decoded on the worker pool */
  gcall *g;
  job *prev, *next;
  isv_request *r;      /* holding its message (r->body) */
  isv__client *count;  /* a stream's request, counted under the per-client limit */
  isv__budget *budget; /* its decoded message holds `charged` of the receiving budget */
  size_t charged;
};

/* ---- the method table -------------------------------------------------------------------- */

void isv__grpc_services_init(isv__grpc_services *s, isv__core *core) {
  memset(s, 0, sizeof *s);
  s->core = core;
}

void isv__grpc_services_free(isv__grpc_services *s) {
  isv__free(s->entries);
  s->entries = NULL;
  s->n = s->cap = 0;
}

/* Every call looks its method up here: ~50 entries once every front end is on, so lengths are
 * compared before bytes (a strcmp per entry was 19 per ModelInfer). */
static int serves(const isv__grpc_entry *e, const char *path, size_t len) {
  return e->path_len == len && memcmp(e->method->path, path, len) == 0;
}

static const isv__grpc_entry *find(const isv__grpc_services *s, const char *path, size_t len) {
  for (size_t i = 0; i < s->n; i++)
    if (serves(&s->entries[i], path, len)) return &s->entries[i];
  return NULL;
}

int isv__grpc_services_add(isv__grpc_services *s, const isv__grpc_method *m,
                           const char *protocol_label) {
  int codec = m->decode && m->encode;
  if (m->path == NULL || m->path[0] != '/' || strchr(m->path + 1, '/') == NULL ||
      (m->answer != NULL) == codec)
    return ISV_EINVAL;
  if (find(s, m->path, strlen(m->path))) return ISV_EEXIST;
  if (s->n == s->cap) {
    size_t cap = s->cap ? 2 * s->cap : 16;
    isv__grpc_entry *e = isv__realloc(s->core->mem, s->entries, cap * sizeof *e);
    if (e == NULL) return ISV_ENOMEM;
    s->entries = e;
    s->cap = cap;
  }
  s->entries[s->n].method = m;
  s->entries[s->n].path_len = strlen(m->path);
  s->entries[s->n].protocol = isv__core_protocol(s->core, protocol_label);
  s->n++;
  return 0;
}

void isv__grpc_services_remove(isv__grpc_services *s, const isv__grpc_method *m) {
  size_t k = 0;
  for (size_t i = 0; i < s->n; i++)
    if (s->entries[i].method != m) s->entries[k++] = s->entries[i];
  s->n = k;
}

int isv__grpc_services_has(const isv__grpc_services *s, const char *service) {
  size_t n = strlen(service);
  for (size_t i = 0; i < s->n; i++) {
    const char *p = s->entries[i].method->path;
    if (strncmp(p + 1, service, n) == 0 && p[1 + n] == '/') return 1;
  }
  return 0;
}

/* ---- ending a call ----------------------------------------------------------------------- */

static void gcall_finish(gcall *g, int status, const char *msg) {
  if (g->finished) return;
  g->finished = 1;
  if (g->keep.end) { /* the front end lets go of a kept call first */
    void (*end)(void *) = g->keep.end;
    g->keep.end = NULL;
    end(g->keep.data);
  }
  if (g->holds) { /* the host still reads the call's headers: it ends once it has decided */
    g->finish_deferred = 1;
    g->finish_status = status;
    g->finish_msg = msg ? isv__strdup(g->core->mem, msg) : NULL;
    return;
  }
  isv__grpc_finish(g->call, status, msg);
}

#define CALL_OF(who) ((gcall *)((char *)(who) - offsetof(gcall, who)))

static void who_hold(isv__caller *who) { CALL_OF(who)->holds++; }

/* A hold ends (the host decided; a compressed answer went out): a finish deferred meanwhile
 * goes out with the last. */
static void release_hold(gcall *g) {
  if (--g->holds || !g->finish_deferred) return;
  g->finish_deferred = 0;
  isv__grpc_finish(g->call, g->finish_status, g->finish_msg);
  isv__free(g->finish_msg);
  g->finish_msg = NULL;
}

static void who_release(isv__caller *who) { release_hold(CALL_OF(who)); }

static void drop_held(gcall *g) {
  for (held *h = g->held, *n; h; h = n) {
    n = h->next;
    isv__bigbuf_free(h->msg);
    isv__free(h);
  }
  g->held = NULL;
  g->held_tail = &g->held;
}

static void gcall_maybe_free(gcall *g) {
  if (g->finished && g->inflight == 0 && g->busy == 0 && g->holds == 0) {
    isv__bigbuf_free(g->msg);
    isv__budget_give(g->core->receiving, g->msg_charged);
    drop_held(g);
    isv__client_release(g->client);
    isv__gate_pin_free(&g->allowed);
    isv__free(g);
  }
}

static void finish_error(gcall *g, int err, const char *msg) {
  gcall_finish(g, isv_err_grpc_status(err), msg && msg[0] ? msg : isv_strerror(err));
}

/* Send a buffer as one message; takes it. */
static void send_buf(gcall *g, isv__buf *b) {
  if (b->failed) {
    isv__buf_free(b);
    finish_error(g, ISV_ENOMEM, "out of memory");
    return;
  }
  size_t len;
  char *data = isv__buf_release(b, &len);
  uv_buf_t part = uv_buf_init(data, (unsigned)len);
  isv__grpc_send(g->call, &part, 1, isv__free, data);
}

int isv__grpc_kept_send(gcall *g, isv__buf *msg) {
  isv__buf b = *msg;
  isv__buf_init(msg, g->core->mem);
  if (g->finished || g->cancelled) {
    isv__buf_free(&b);
    return -1;
  }
  send_buf(g, &b);
  if (g->finished) { /* out of memory: keep.end has run */
    gcall_maybe_free(g);
    return -1;
  }
  return isv__grpc_writable(g->call);
}

void isv__grpc_kept_end(gcall *g) {
  gcall_finish(g, 0, NULL); /* keep.end runs first */
  gcall_maybe_free(g);      /* not from one of the call's own events: nobody else would */
}

void isv__grpc_kept_fail(gcall *g, int err, const char *msg) {
  finish_error(g, err, msg); /* keep.end runs first */
  gcall_maybe_free(g);
}

isv__caller *isv__grpc_unary_caller(isv__grpc_unary *u) {
  return u->call && u->call->judged ? &u->call->who : NULL;
}

/* A streaming call ends OK after the client's half-close, UNAVAILABLE when drained. */
static void end_stream(gcall *g) {
  if (g->draining) gcall_finish(g, ISV__GRPC_UNAVAILABLE, "server is shutting down");
  else gcall_finish(g, 0, NULL);
}

/* ---- requests ---------------------------------------------------------------------------- */

static void job_free(void *p) {
  job *j = p;
  isv_request_free(j->r); /* and the message it took */
  isv__client_release(j->count);
  isv__budget_give(j->budget, j->charged);
  isv__free(j);
}

static void job_unlink(job *j) {
  gcall *g = j->g;
  if (j->prev) j->prev->next = j->next;
  else g->jobs = j->next;
  if (j->next) j->next->prev = j->prev;
  g->inflight--;
}

static void release_response(void *p) { isv_request_free(p); }

/* ---- compressed answers (isv_options_set_grpc_compression) ---------------------------------- */

/* parts coded with the call's answer coding into out: 0, or nonzero (out freed). */
static int compress_parts(gcall *g, const isv__parts *p, isv__buf *out) {
  isv__zpiece small[8], *pieces = p->n <= 8 ? small : isv__malloc(g->core->mem, p->n * sizeof *pieces);
  isv__buf_init(out, g->core->mem);
  if (pieces == NULL) return ISV_ENOMEM;
  for (size_t i = 0; i < p->n; i++) pieces[i] = (isv__zpiece){p->v[i].base, p->v[i].len};
  int rc = isv__deflate(g->call->answer_coding, pieces, p->n, out);
  if (pieces != small) isv__free(pieces);
  if (rc != 0) isv__buf_free(out);
  return rc;
}

/* Send a coded buffer as one compressed message; takes it. */
static void send_coded(gcall *g, isv__buf *b) {
  size_t len;
  char *data = isv__buf_release(b, &len);
  uv_buf_t part = uv_buf_init(data, (unsigned)len);
  isv__grpc_send_compressed(g->call, &part, 1, isv__free, data);
}

/* A unary answer compressed on a worker thread: the call's finish waits for it (a hold). */
typedef struct zjob {
  isv__offload off;
  gcall *g;
  isv__parts parts;
  void (*release)(void *);
  void *ctx;
  isv__buf out;
  int rc;
} zjob;

static void zjob_work(isv__offload *o) {
  zjob *z = (zjob *)o;
  z->rc = compress_parts(z->g, &z->parts, &z->out);
}

static void zjob_after(isv__offload *o) {
  zjob *z = (zjob *)o;
  gcall *g = z->g;
  if (z->rc == 0) {
    z->release(z->ctx);
    send_coded(g, &z->out);
  } else {
    isv__grpc_send(g->call, z->parts.v, z->parts.n, z->release, z->ctx); /* as it is */
  }
  isv__free(z);
  release_hold(g);
  gcall_maybe_free(g);
}

/* One answer message: compressed when the call's coding and size say so (a unary one of
 * ISV__OFFLOAD_MIN_BYTES or more on a worker thread; a streamed one that large goes as it is,
 * behind nothing), else by reference. release(ctx) once it is sent or dropped. */
static void send_answer(gcall *g, const isv__parts *p, void (*release)(void *), void *ctx,
                        int unary) {
  if (g->compress_min == 0 || p->total < g->compress_min ||
      (!unary && p->total >= ISV__OFFLOAD_MIN_BYTES)) {
    isv__grpc_send(g->call, p->v, p->n, release, ctx);
    return;
  }
  if (p->total >= ISV__OFFLOAD_MIN_BYTES) {
    zjob *z = isv__calloc(g->core->mem, 1, sizeof *z);
    if (z != NULL) {
      *z = (zjob){.g = g, .parts = *p, .release = release, .ctx = ctx};
      g->holds++; /* the finish that follows waits for the message */
      if (isv__offload_run(g->core, &z->off, zjob_work, zjob_after) == 0) return;
      g->holds--;
      isv__free(z);
    }
  }
  isv__buf b;
  if (compress_parts(g, p, &b) != 0) {
    isv__grpc_send(g->call, p->v, p->n, release, ctx); /* as it is */
    return;
  }
  release(ctx);
  send_coded(g, &b);
}

/* A decoupled model's response before its request completes (streaming methods only): one
 * message, the response kept until it is written. */
static void stream_response(isv_request *resp, int status, void *data) {
  job *j = data;
  gcall *g = j->g;
  isv__parts parts;
  if (g->cancelled || g->finished || status != 0 || g->m->encode(resp, &parts) != 0 ||
      parts.n == 0) {
    isv_request_free(resp);
    return;
  }
  isv_request *r = resp->parent;
  if (g->compress_min && parts.total >= g->compress_min) {
    send_answer(g, &parts, release_response, resp, 0);
  } else if (parts.total <= ISV__SMALL_RESPONSE_COPY) {
    /* a small message is copied and its response freed now: a queued piece costs its bytes
     * (and the transport's constant), not the response's arena (8 KiB at the least) */
    char *copy = isv__malloc(g->core->mem, parts.total ? parts.total : 1);
    if (copy) {
      size_t at = 0;
      for (size_t i = 0; i < parts.n; i++) {
        if (parts.v[i].len) memcpy(copy + at, parts.v[i].base, parts.v[i].len);
        at += parts.v[i].len;
      }
      isv_request_free(resp);
      uv_buf_t one = uv_buf_init(copy, (unsigned)at);
      isv__grpc_send(g->call, &one, 1, isv__free, copy);
    } else {
      isv__grpc_send(g->call, parts.v, parts.n, release_response, resp);
    }
  } else {
    isv__grpc_send(g->call, parts.v, parts.n, release_response, resp);
  }
  /* backpressure: a full queue holds the backend's responses back (ISV_EAGAIN) until the
   * call drained (on_writable) */
  if (!g->cancelled && !isv__grpc_writable(g->call)) isv__request_flow_block(r);
}

/* The call drained: every request streaming into it may send again. */
static void on_writable(isv__grpc_call *call) {
  gcall *g = call->app;
  g->busy++;
  if (g->keep.end && g->keep.writable) g->keep.writable(g->keep.data);
  for (job *j = g->jobs, *next; j; j = next) {
    next = j->next;
    isv__request_flow_resume(j->r);
  }
  g->busy--;
  gcall_maybe_free(g);
}

static void infer_done(isv_request *r, int status, void *data) {
  job *j = data;
  gcall *g = j->g;
  job_unlink(j);
  if (g->cancelled || g->finished) {
    job_free(j);
    gcall_maybe_free(g);
    return;
  }
  const isv__grpc_method *m = g->m;
  isv__parts parts;
  if (status == 0 && (status = m->encode(r, &parts)) != 0 && r->status == 0)
    isv__request_fail(r, status, "out of memory while encoding the response"); /* else its own */
  if (status == 0) {
    if (parts.n) send_answer(g, &parts, job_free, j, m->kind == ISV__RPC_UNARY); /* by reference */
    else job_free(j); /* nothing to say (a decoupled model's empty last response) */
    if (m->kind != ISV__RPC_BIDI_STREAM) gcall_finish(g, 0, NULL);
  } else if (m->encode_error) {
    isv__buf b; /* this request's error travels in a message: a stream goes on */
    isv__buf_init(&b, g->core->mem);
    m->encode_error(status, isv_request_error_message(r), &b);
    job_free(j);
    send_buf(g, &b);
    if (m->kind != ISV__RPC_BIDI_STREAM) gcall_finish(g, 0, NULL);
  } else {
    finish_error(g, status, isv_request_error_message(r));
    job_free(j);
  }
  if (m->kind == ISV__RPC_BIDI_STREAM && g->half_closed && g->inflight == 0) end_stream(g);
  gcall_maybe_free(g);
}

static void drain_held(gcall *g);

static void decode_work(isv__offload *o) {
  job *j = (job *)o;
  j->g->m->decode(j->r, j->r->body, j->r->body_len); /* touches the request only */
}

/* Triton's priority and timeout from the call's metadata, where the message has no parameter
 * of that name (grps's have no place for one): http_reply.h. Not for a repository operation,
 * which no priority concerns. */
static void queue_metadata(gcall *g, isv_request *r) {
  if (r->status == 0 && r->repo_op == NULL)
    isv__queue_headers(r, g->call->headers, g->call->n_headers);
}

static void decode_after(isv__offload *o) {
  job *j = (job *)o;
  gcall *g = j->g;
  g->busy++;
  g->inflight++; /* its answer (it may come at once) must not end the stream before the rest */
  g->inflating = 0;
  if (g->cancelled && j->r->status == 0) /* while it was decoded: it never runs */
    isv__request_fail(j->r, ISV_ECANCELED, "request cancelled before it ran");
  queue_metadata(g, j->r);
  isv__core_submit(g->core, j->r, infer_done, j);
  if (g->m->kind == ISV__RPC_BIDI_STREAM && !g->finished)
    drain_held(g); /* the messages that came meanwhile, after it */
  g->inflight--;
  if (g->m->kind == ISV__RPC_BIDI_STREAM && g->half_closed && g->inflight == 0 &&
      !g->inflating && !g->finished)
    end_stream(g);
  g->busy--;
  gcall_maybe_free(g);
}

/* A BIDI_STREAM message answered by the front end at once; takes msg and what it holds of
 * the receiving budget. */
static void answer_message(gcall *g, uint8_t *msg, size_t len, size_t charged) {
  isv__buf b;
  isv__buf_init(&b, g->core->mem);
  isv__grpc_unary u = {g->core, g->svc, msg, len, &b, "", g, {0}};
  int rc = g->m->answer(&u);
  isv__bigbuf_free(msg);
  isv__budget_give(g->core->receiving, charged);
  if (rc == ISV__GATE_LATER) { /* a stream's answer cannot wait for the host: not offered */
    rc = ISV_EINTERNAL;
    snprintf(u.err, sizeof u.err, "this stream's answers cannot wait for the authorizer");
  }
  if (rc != 0) {
    isv__buf_free(&b);
    finish_error(g, rc, u.err);
    return;
  }
  send_buf(g, &b);
  /* nothing holds a stream's messages back from the transport: a client that does not read
   * its answers is refused before their queue grows without a bound */
  if (!g->finished && !isv__grpc_writable(g->call))
    gcall_finish(g, ISV__GRPC_RESOURCE_EXHAUSTED,
                 "the client does not read the answers to its messages");
}

/* Decode one message into a request and submit it; takes msg, and the `charged` bytes of the
 * receiving budget it holds (a decoded message). A method answered by its front end answers
 * it instead. */
static void submit(gcall *g, uint8_t *msg, size_t len, size_t charged) {
  if (g->m->answer) {
    answer_message(g, msg, len, charged);
    return;
  }
  job *j = isv__calloc(g->core->mem, 1, sizeof *j);
  isv_request *r = isv__request_new(g->core);
  if (j == NULL || r == NULL) {
    isv__free(j);
    isv__bigbuf_free(msg);
    isv__budget_give(g->core->receiving, charged);
    isv_request_free(r);
    finish_error(g, ISV_ENOMEM, "out of memory");
    return;
  }
  j->g = g;
  j->r = r;
  isv__trace_from_headers(r, g->call->headers, g->call->n_headers);
  j->budget = g->core->receiving;
  j->charged = charged;
  /* the request takes the message its inputs point into: it may outlive the call (a request
   * the server's close abandons waits for its backend) */
  r->body = msg;
  r->body_len = len;
  r->body_free = isv__bigbuf_free;
  r->protocol = (uint8_t)g->protocol;
  r->timeout_us = g->call->timeout_ms * 1000; /* grpc-timeout: the core's deadline too */
  if (g->judged) {
    r->caller = &g->who; /* the core asks the model stage about the model it resolves */
    char why[300];
    int rc = g->m->kind == ISV__RPC_BIDI_STREAM
                 ? isv__gate_admit(g->svc->gate, &g->who, &j->count, why, sizeof why)
                 : 0;
    if (rc) isv__request_fail(r, rc, "%s", why); /* answered in the stream; it goes on */
  }
  if (g->m->kind != ISV__RPC_UNARY) { /* streams carry a decoupled model's responses */
    if (isv__request_stream(r, stream_response, j) != 0 && r->status == 0)
      isv__request_fail(r, ISV_ENOMEM, "out of memory");
  }
  j->next = g->jobs;
  if (g->jobs) g->jobs->prev = j;
  g->jobs = j;
  g->inflight++;
  if (g->m->bind) g->m->bind(r, msg, len); /* the registry: on the loop */
  /* A large message is decoded on a worker thread: typed contents (varints, strings) take
   * milliseconds per MB, and the loop is the host's. A decode error is the core's to order
   * and report either way. */
  if (len >= ISV__OFFLOAD_MIN_BYTES &&
      isv__offload_run(g->core, &j->off, decode_work, decode_after) == 0) {
    g->inflating = 1; /* later messages of a stream wait behind it */
    return;
  }
  g->m->decode(r, msg, len);
  queue_metadata(g, r);
  isv__core_submit(g->core, r, infer_done, j);
}

/* ---- compressed messages (grpc-encoding gzip / deflate) --------------------------------- */

/* gRPC's rule for a message that cannot be decompressed: INTERNAL; over the limit:
 * RESOURCE_EXHAUSTED. */
static void finish_inflate_error(gcall *g, int rc, const char *err) {
  char msg[256];
  if (rc == ISV_EBADREQ) {
    snprintf(msg, sizeof msg, "cannot decompress the request message (grpc-encoding %s): %s",
             isv__coding_name(g->call->coding), err);
    gcall_finish(g, ISV__GRPC_INTERNAL, msg);
  } else if (rc == ISV_ETOOBIG) {
    snprintf(msg, sizeof msg, "the decompressed message exceeds the server's limit of %zu bytes",
             g->core->opts.max_body_bytes);
    gcall_finish(g, ISV__GRPC_RESOURCE_EXHAUSTED, msg);
  } else if (rc == ISV_EUNAVAIL) {
    finish_error(g, rc, "the server is receiving too much request data at once (decoded "
                        "messages count too); retry later");
  } else {
    finish_error(g, rc, "out of memory");
  }
}

static void run_unary(gcall *g);

/* ---- the edge (gate.h) ---------------------------------------------------------------------- */

static void take_message(gcall *g, uint8_t *msg, size_t len, int compressed);
static void drain_held(gcall *g);

/* The caller stage's decision, made later (or at once: see dispatch). */
static void gated(void *ctx, int err, const char *msg) {
  gcall *g = ctx;
  g->inflight--;
  if (g->cancelled || g->finished) { /* the client left while the host decided */
    g->gate = GATE_REFUSED;
    drop_held(g);
    gcall_finish(g, ISV__GRPC_CANCELLED, "cancelled");
  } else if (err) {
    g->gate = GATE_REFUSED;
    drop_held(g);
    finish_error(g, err, msg);
  } else {
    g->gate = GATE_ALLOWED;
  }
  g->busy++;
  if (g->gate == GATE_ALLOWED) {
    if (g->m->kind != ISV__RPC_BIDI_STREAM) {
      if (g->half_closed && g->n_msgs == 1) run_unary(g);
    } else {
      drain_held(g);
      if (g->half_closed && g->inflight == 0 && !g->finished) end_stream(g);
    }
  }
  g->busy--;
  gcall_maybe_free(g);
}

/* A unary answer's model, judged later: the answer runs again, and finds it allowed. */
static void unary_decided(void *ctx, int err, const char *msg) {
  gcall *g = ctx;
  g->inflight--;
  g->busy++;
  g->refused = err; /* the answer words a refusal in its own protocol's shape (grps: a status) */
  snprintf(g->refused_msg, sizeof g->refused_msg, "%s", err && msg ? msg : "");
  if (g->cancelled || g->finished) gcall_finish(g, ISV__GRPC_CANCELLED, "cancelled");
  else if (err && g->allowed.model == NULL) finish_error(g, err, msg); /* nothing to run again */
  else run_unary(g);
  g->busy--;
  gcall_maybe_free(g);
}

int isv__grpc_unary_model(isv__grpc_unary *u, const char *name, const char *version) {
  gcall *g = u->call;
  if (g == NULL || !g->judged) return 0;
  if (isv__gate_pin_is(&g->allowed, name, version)) {
    if (g->refused) snprintf(u->err, sizeof u->err, "%s", g->refused_msg);
    return g->refused;
  }
  int rc = isv__gate_model(g->svc->gate, &g->who, name, version, unary_decided, g, u->err,
                           sizeof u->err);
  if (rc != ISV__GATE_LATER) return rc;
  isv__gate_pin_set(&g->allowed, g->core->mem, name, version);
  g->inflight++; /* the decision holds the call */
  return ISV__GATE_LATER;
}

/* ---- compressed messages: a slice on the loop, the rest on a worker thread ----------------- */

/* A message being decoded (the call counts it in flight while a worker thread has it). */
typedef struct inflating {
  isv__offload_inflate inf; /* first: this is its inflation */
  gcall *g;
  uint8_t *coded; /* the message as it came: the inflater reads it */
} inflating;

static void message_ready(gcall *g, uint8_t *msg, size_t len, size_t charged);

/* The decoder is done with w (rc): its message goes on, or the call ends with the error. */
static void inflate_done(inflating *w, int rc) {
  gcall *g = w->g;
  isv__inflater *f = w->inf.f;
  uint8_t *msg = NULL;
  size_t len = 0, charged = 0;
  char why[160] = "";
  if (rc == 0) {
    char *plain = isv__inflater_take(f, &len, &charged);
    /* a message buffer, END-aligned like the transport's, so raw tensors are used in place */
    if ((msg = isv__bigbuf_alloc(NULL, len, 1)) != NULL && len) memcpy(msg, plain, len);
    isv__free(plain);
    if (msg == NULL) rc = ISV_ENOMEM;
  } else if (rc == ISV_EBADREQ) {
    snprintf(why, sizeof why, "the body is not valid %s data: %s",
             isv__coding_name(g->call->coding), isv__inflater_why(f));
  }
  isv__inflater_free(f);
  isv__bigbuf_free(w->coded);
  isv__free(w);
  if (rc != 0 || g->finished) {
    isv__bigbuf_free(msg);
    isv__budget_give(g->core->receiving, charged);
    if (rc != 0) finish_inflate_error(g, rc, why);
    return;
  }
  message_ready(g, msg, len, charged);
}

/* The inflation is over (on the loop, at once or after a worker thread). */
static void inflated(isv__offload_inflate *inf) {
  inflating *w = (inflating *)inf;
  gcall *g = w->g;
  g->inflight--;
  g->inflating = 0;
  g->busy++;
  inflate_done(w, inf->rc);
  if (g->m->kind == ISV__RPC_BIDI_STREAM && !g->finished) {
    drain_held(g); /* the messages that came meanwhile, in order */
    if (g->half_closed && g->inflight == 0 && !g->inflating && !g->finished) end_stream(g);
  }
  g->busy--;
  gcall_maybe_free(g);
}

/* Decode `coded` (taken) with the call's grpc-encoding — every byte that comes out charged to
 * the receiving budget — then message_ready: now when it fits the loop's slice, else from a
 * worker thread (g->inflating meanwhile). */
static void inflate_start(gcall *g, uint8_t *coded, size_t len) {
  inflating *w = isv__calloc(g->core->mem, 1, sizeof *w);
  if (w == NULL) {
    isv__bigbuf_free(coded);
    finish_error(g, ISV_ENOMEM, "out of memory");
    return;
  }
  w->g = g;
  w->coded = coded;
  int rc = isv__inflater_new(g->call->coding, coded, len, g->core->opts.max_body_bytes,
                             g->core->mem, g->core->receiving, &w->inf.f);
  if (rc != 0) {
    inflate_done(w, rc);
    return;
  }
  g->inflating = 1; /* until inflated: a stream's later messages wait behind it */
  g->inflight++;
  isv__offload_inflate_run(g->core, &w->inf, inflated);
}

/* A message, decoded: a stream's is submitted, a unary call's answered. */
static void message_ready(gcall *g, uint8_t *msg, size_t len, size_t charged) {
  if (g->m->kind == ISV__RPC_BIDI_STREAM) {
    submit(g, msg, len, charged);
    return;
  }
  g->msg = msg;
  g->len = len;
  g->msg_charged = charged;
  g->msg_compressed = 0;
  run_unary(g);
}

/* The one message of a unary or server-streaming call has come, and the client half-closed. */
static void run_unary(gcall *g) {
  if (g->msg_compressed) { /* message_ready runs this again with the decoded message */
    uint8_t *coded = g->msg;
    g->msg = NULL;
    g->msg_compressed = 0;
    inflate_start(g, coded, g->len);
    return;
  }
  if (g->m->answer) {
    isv__buf b;
    isv__buf_init(&b, g->core->mem);
    isv__grpc_unary u = {g->core, g->svc, g->msg, g->len, &b, "", g, {0}};
    int rc = g->m->answer(&u);
    if (rc == ISV__GATE_LATER) { /* the host judges the model it names: unary_decided */
      isv__buf_free(&b);
      return;
    }
    if (rc != 0) {
      isv__buf_free(&b);
      if (u.keep.end) u.keep.end(u.keep.data);
      finish_error(g, rc, u.err);
      return;
    }
    if (g->m->kind == ISV__RPC_SERVER_STREAM && u.keep.end) {
      g->keep = u.keep; /* open until the client or the server ends it (gcall_finish) */
      send_buf(g, &b);
      return;
    }
    if (u.keep.end) { /* a unary answer that comes later: isv__grpc_kept_send / _fail */
      assert(b.len == 0);
      isv__buf_free(&b);
      g->keep = u.keep;
      return;
    }
    send_buf(g, &b);
    gcall_finish(g, 0, NULL);
    return;
  }
  uint8_t *msg = g->msg;
  size_t charged = g->msg_charged;
  g->msg = NULL;
  g->msg_charged = 0;
  submit(g, msg, g->len, charged);
}

/* ---- call events ------------------------------------------------------------------------- */

/* Keep a stream's message for later, as it came (nothing is inflated for a caller not yet
 * judged, nor ahead of a message still being decoded). 0, or -1 out of memory (msg freed). */
static int hold(gcall *g, uint8_t *msg, size_t len, int compressed) {
  held *h = isv__calloc(g->core->mem, 1, sizeof *h);
  if (h == NULL) {
    isv__bigbuf_free(msg);
    return -1;
  }
  *h = (held){.msg = msg, .len = len, .compressed = compressed};
  *g->held_tail = h;
  g->held_tail = &h->next;
  return 0;
}

/* A stream's message, past the caller stage: decoded and submitted in the stream's order. */
static void take_message(gcall *g, uint8_t *msg, size_t len, int compressed) {
  if (g->finished) isv__bigbuf_free(msg);
  else if (g->inflating) { /* behind the one a worker thread decodes */
    if (hold(g, msg, len, compressed) != 0) finish_error(g, ISV_ENOMEM, "out of memory");
  } else if (compressed) inflate_start(g, msg, len);
  else submit(g, msg, len, 0);
}

/* The held messages, in order, until one has to wait for a worker thread again. */
static void drain_held(gcall *g) {
  held *h = g->held;
  g->held = NULL;
  g->held_tail = &g->held;
  g->inflight++; /* the first answered must not end the stream before the rest go in */
  for (held *n; h; h = n) {
    n = h->next;
    take_message(g, h->msg, h->len, h->compressed);
    isv__free(h);
  }
  g->inflight--;
}

static void on_message(isv__grpc_call *call, uint8_t *msg, size_t len, int compressed) {
  gcall *g = call->app;
  g->busy++;
  if (g->m->kind == ISV__RPC_BIDI_STREAM) {
    if (g->finished || g->gate == GATE_REFUSED) isv__bigbuf_free(msg);
    else if (g->gate != GATE_PENDING) take_message(g, msg, len, compressed);
    else if (hold(g, msg, len, compressed) != 0) finish_error(g, ISV_ENOMEM, "out of memory");
  } else if (++g->n_msgs > 1) {
    isv__bigbuf_free(msg);
    finish_error(g, ISV_EBADREQ, "a unary call takes exactly one request message");
  } else {
    g->msg = msg;
    g->len = len;
    g->msg_compressed = compressed;
  }
  g->busy--;
  gcall_maybe_free(g);
}

static void on_half_close(isv__grpc_call *call) {
  gcall *g = call->app;
  g->half_closed = 1;
  if (g->finished) return;
  g->busy++;
  if (g->m->kind == ISV__RPC_BIDI_STREAM) {
    if (g->inflight == 0) end_stream(g);
  } else if (g->n_msgs != 1) {
    finish_error(g, ISV_EBADREQ, "a unary call takes exactly one request message");
  } else if (g->gate != GATE_PENDING) { /* else gated runs it once the caller is judged */
    run_unary(g);
  }
  g->busy--;
  gcall_maybe_free(g);
}

static void on_cancel(isv__grpc_call *call) {
  gcall *g = call->app;
  g->cancelled = 1;
  g->busy++;
  /* A running request sees the flag; a waiting one leaves its queue and never runs. Each of
   * those finishes at once (infer_done frees its job), and the scheduler may then start and
   * finish others of this call: look for the next waiting one from the start each time. */
  for (job *j = g->jobs; j; j = j->next)
    if (!isv__core_queued(j->r)) isv__core_cancel(j->r); /* running: only flagged */
  for (;;) {
    job *w = g->jobs;
    while (w && !isv__core_queued(w->r)) w = w->next;
    if (w == NULL) break;
    isv__core_cancel(w->r);
  }
  gcall_finish(g, ISV__GRPC_CANCELLED, "cancelled"); /* the transport drops it */
  g->busy--;
  gcall_maybe_free(g);
}

static void on_drain(isv__grpc_call *call) {
  gcall *g = call->app;
  if (g->finished) return;
  g->draining = 1;
  g->busy++;
  if (g->m->kind == ISV__RPC_BIDI_STREAM) {
    g->half_closed = 1; /* nothing more will come */
    if (g->inflight == 0) end_stream(g);
  } else if (g->keep.end && g->m->kind == ISV__RPC_UNARY) { /* its answer will not come */
    gcall_finish(g, ISV__GRPC_UNAVAILABLE, "server is shutting down");
  } else if (g->keep.end) { /* a kept stream has said what the close means: it ends OK */
    gcall_finish(g, 0, NULL);
  } else if (g->inflight == 0) { /* still waiting for its message: it will not come */
    gcall_finish(g, ISV__GRPC_UNAVAILABLE, "server is shutting down");
  }
  g->busy--;
  gcall_maybe_free(g);
}

void isv__grpc_services_dispatch(isv__grpc_services *s, isv__grpc_call *call) {
  const isv__grpc_entry *e = NULL;
  if (s->last < s->n && serves(&s->entries[s->last], call->path, call->path_len))
    e = &s->entries[s->last];
  else if ((e = find(s, call->path, call->path_len)) != NULL)
    s->last = (size_t)(e - s->entries);
  if (e == NULL) {
    char msg[300];
    snprintf(msg, sizeof msg, "unknown method %.200s", call->path);
    isv__grpc_finish(call, ISV__GRPC_UNIMPLEMENTED, msg);
    return;
  }
  gcall *g = isv__calloc(s->core->mem, 1, sizeof *g);
  if (g == NULL) {
    isv__grpc_finish(call, ISV__GRPC_RESOURCE_EXHAUSTED, "out of memory");
    return;
  }
  g->core = s->core;
  g->svc = s;
  g->m = e->method;
  g->protocol = e->protocol;
  g->call = call;
  g->held_tail = &g->held;
  if (s->core->opts.grpc_compress_min && call->send_compressed) {
    for (size_t i = 0; i < call->n_headers; i++)
      if (call->headers[i].name_len == 20 &&
          strncasecmp(call->headers[i].name, "grpc-accept-encoding", 20) == 0)
        call->answer_coding = isv__coding_accepted(call->headers[i].value,
                                                   call->headers[i].value_len);
    if (call->answer_coding != ISV__CODING_IDENTITY) g->compress_min = s->core->opts.grpc_compress_min;
  }
  call->app = g;
  call->on_message = on_message;
  call->on_half_close = on_half_close;
  call->on_cancel = on_cancel;
  call->on_drain = on_drain;
  call->on_writable = on_writable;
  if (!isv__gate_on(s->gate)) return;
  /* the caller stage, at the headers: nothing of a message is read, let alone inflated, for a
   * caller not yet judged; a stream counts each request under the per-client limit instead */
  g->judged = 1;
  g->who = (isv__caller){.protocol = s->core->protocols[g->protocol],
                         .grpc = 1,
                         .method = call->path,
                         .path = call->path,
                         .headers = call->headers,
                         .n_headers = call->n_headers,
                         .peer = call->peer,
                         .identity = call->identity,
                         .hold = who_hold,
                         .release = who_release};
  g->gate = GATE_PENDING;
  g->inflight++; /* the decision holds the call */
  char msg[300];
  int rc = isv__gate_caller(s->gate, &g->who,
                            g->m->kind == ISV__RPC_BIDI_STREAM ? NULL : &g->client, gated, g,
                            msg, sizeof msg);
  if (rc == ISV__GATE_LATER) return;
  g->busy++; /* decided now: applied as a later one is */
  gated(g, rc, rc ? msg : NULL);
  g->busy--;
  gcall_maybe_free(g);
}
