/* libFuzzer target: the edge's model stage (issue #34) — the model the authorizer allowed is
 * the model that runs, is loaded or unloaded, on every route and gRPC method of the built-in
 * front ends (tests/unit/test_authz_differential.c checks the same property case by case).
 *
 * A server made once, on a loop of its own: models "ok" and "no" (versions 1 and 2, default
 * version 2, label "stable" on 1; open I/O, input x FP32 [-1]; inline backends that record
 * what ran), a model repository whose load / unload record the name they get, and an
 * authorizer that records every model-stage question and forbids model "no".
 *
 * Input: byte 0 picks a route or gRPC method from the descriptors (isv__builtin_frontends; the
 * grps "offline" ones excepted: they would take the server out of service for every later
 * input); byte 1: bit 0 the authorizer decides later (outside its callback, once the loop is
 * quiet), bit 1 the default model is "no" (else "ok"), bit 2 POST rather than GET where a route
 * takes both. The rest is cut at every "\xfe\xff": for a route, its captures in order (percent-
 * encoded into the path), then the query, then the body; for a gRPC method, its messages.
 *
 * Checked once the loop is quiet: nothing ran, was loaded or unloaded under a name the model
 * stage refused or was never asked about; what ran is the version that was judged. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "inferserve.h"
#include "protocol/builtin.h"

static void check(int cond, const char *what, const char *model, const char *version) {
  if (cond) return;
  fprintf(stderr, "AUTHZ PROPERTY BROKEN: %s (model '%s' version '%s')\n", what,
          model ? model : "(null)", version ? version : "(none)");
  abort();
}

/* ---- what happened to one input ------------------------------------------------------------ */

typedef struct event {
  char model[512], version[64];
  int allowed;
} event;

#define MAX_EVENTS 64
static event asked[MAX_EVENTS], acted[MAX_EVENTS];
static int n_asked, n_acted, overflow;
static isv_auth *pending[64];
static int n_pending;
static int later;

static void note(event *v, int *n, const char *model, const char *version, int allowed) {
  if (*n == MAX_EVENTS) {
    overflow = 1;
    return;
  }
  event *e = &v[(*n)++];
  snprintf(e->model, sizeof e->model, "%s", model ? model : "");
  snprintf(e->version, sizeof e->version, "%s", version ? version : "(none)");
  e->allowed = allowed;
}

static int forbidden(const char *model) { return model && strcmp(model, "no") == 0; }

static void decide(isv_auth *a) {
  if (isv_auth_get_stage(a) == ISV_AUTH_STAGE_MODEL && forbidden(isv_auth_model(a)))
    isv_auth_complete(a, ISV_AUTH_FORBIDDEN, "forbidden");
  else
    isv_auth_complete(a, ISV_AUTH_ALLOW, NULL);
}

static void authorize(isv_auth *a, void *user) {
  (void)user;
  if (isv_auth_get_stage(a) == ISV_AUTH_STAGE_MODEL) {
    const char *m = isv_auth_model(a);
    check(m != NULL, "a model-stage question without a model", m, NULL);
    note(asked, &n_asked, m, isv_auth_version(a), !forbidden(m));
  } else {
    check(isv_auth_model(a) == NULL, "a model at the caller stage", isv_auth_model(a), NULL);
  }
  if (later && n_pending < (int)(sizeof pending / sizeof pending[0])) pending[n_pending++] = a;
  else decide(a);
}

/* Whatever acted on (model, version) must have been asked about, allowed, same version. */
static void acted_on(const char *model, const char *version) {
  check(!forbidden(model), "acted on the forbidden model", model, version);
  note(acted, &n_acted, model, version, 1);
  if (overflow) return;
  const event *a = &acted[n_acted - 1]; /* compared as stored (names are cut alike) */
  for (int i = 0; i < n_asked; i++)
    if (asked[i].allowed && strcmp(asked[i].model, a->model) == 0 &&
        strcmp(asked[i].version, a->version) == 0)
      return;
  for (int i = 0; i < n_asked; i++) /* what it was asked, for the report */
    fprintf(stderr, "  asked: '%s' version %s: %s\n", asked[i].model, asked[i].version,
            asked[i].allowed ? "allowed" : "refused");
  check(0, "acted on a model version the model stage did not allow", model, version);
}

typedef struct tag {
  const char *model, *version;
} tag;
static const tag tags[] = {{"ok", "1"}, {"ok", "2"}, {"no", "1"}, {"no", "2"}};

static int infer(isv_request *r, void *user) {
  const tag *t = user;
  acted_on(t->model, t->version);
  float y = 1.0f;
  int64_t one = 1;
  isv_request_set_output(r, "y", ISV_FP32, &one, 1, &y, sizeof y, ISV_TRANSIENT);
  return isv_request_complete(r, 0, NULL);
}

static void repo_load(void *user, isv_repository_op *op, const char *name, const char *cfg) {
  (void)user, (void)cfg;
  acted_on(name, NULL);
  isv_repository_op_complete(op, 0, NULL);
}

static void repo_unload(void *user, isv_repository_op *op, const char *name, int deps) {
  (void)user, (void)deps;
  acted_on(name, NULL);
  isv_repository_op_complete(op, 0, NULL);
}

/* ---- the server, made once -------------------------------------------------------------------- */

typedef struct entry {
  int grpc;
  const char *key; /* route pattern or method path */
  unsigned methods;
} entry;

static uv_loop_t loop;
static isv_server *srv;
static entry entries[256];
static size_t n_entries;

static void no_trace(void *user, const isv_trace_timeline *t) {
  (void)user;
  (void)t;
}

static void setup(void) {
  uv_loop_init(&loop);
  isv_options *o;
  isv_options_new(&o);
  if (isv_options_set_trace(o, no_trace, NULL, 1) != 0) abort(); /* the trace extension served */
  if (isv_server_new(&loop, o, &srv) != 0) abort();
  isv_options_free(o);
  for (size_t i = 0; i < sizeof tags / sizeof tags[0]; i++) {
    isv_model_config *c;
    isv_model_config_new(tags[i].model, &c);
    int64_t any[] = {-1};
    isv_model_config_add_input(c, "x", ISV_FP32, any, 1);
    isv_model_config_set_open_io(c, 1);
    isv_backend be = {.struct_size = sizeof be, .infer = infer};
    if (isv_server_add_model(srv, c, tags[i].version, &be, (void *)&tags[i], NULL) != 0) abort();
    isv_model_config_free(c);
  }
  isv_server_set_default_version(srv, "ok", "2");
  isv_server_set_default_version(srv, "no", "2");
  isv_server_set_label(srv, "ok", "stable", "1");
  isv_server_set_label(srv, "no", "stable", "1");
  isv_repository repo = {.struct_size = sizeof repo, .load = repo_load, .unload = repo_unload};
  if (isv_server_set_repository(srv, &repo) != 0) abort();
  if (isv_server_set_authorizer(srv, authorize, NULL) != 0) abort();
  /* FUZZ_AUTHZ_SKIP=substring leaves out the routes and methods whose pattern holds it (to
   * look past a crash already reported); byte 0 then picks among the others */
  const char *skip = getenv("FUZZ_AUTHZ_SKIP");
  if (skip && !skip[0]) skip = NULL;
  for (const isv__frontend *const *fe = isv__builtin_frontends; *fe; fe++) {
    for (const isv__http_route *rt = (*fe)->routes; rt && rt->pattern; rt++)
      if (strstr(rt->pattern, "offline") == NULL && n_entries < 256 &&
          !(skip && strstr(rt->pattern, skip)))
        entries[n_entries++] = (entry){0, rt->pattern, rt->methods};
    for (const isv__grpc_method *m = (*fe)->methods; m && m->path; m++)
      if (strstr(m->path, "Offline") == NULL && n_entries < 256 && !(skip && strstr(m->path, skip)))
        entries[n_entries++] = (entry){1, m->path, 0};
  }
  if (getenv("FUZZ_AUTHZ_LIST")) /* byte 0 of an input for each (seeds: fuzz/corpus/authz) */
    for (size_t i = 0; i < n_entries; i++) fprintf(stderr, "%zu %s\n", i, entries[i].key);
}

/* ---- carriers: answers are dropped ------------------------------------------------------------ */

static int on_respond(isv_exchange *x, int status, const isv_field *h, size_t nh,
                      const uv_buf_t *parts, size_t n, isv_piece *p, int more) {
  (void)x, (void)status, (void)h, (void)nh, (void)parts, (void)n, (void)more;
  isv_piece_free(p);
  return 0;
}
static int on_write(isv_exchange *x, const uv_buf_t *parts, size_t n, isv_piece *p) {
  (void)x, (void)parts, (void)n;
  isv_piece_free(p);
  return 0;
}
static void on_end(isv_exchange *x) { (void)x; }
static const isv_exchange_carrier xc = {sizeof xc, on_respond, on_write, on_end};
static int on_send(isv_grpc_call *c, const uv_buf_t *parts, size_t n, isv_piece *p) {
  (void)c, (void)parts, (void)n;
  isv_piece_free(p);
  return 0;
}
/* After its finish the host must not use a call (it may be freed at once). */
static void on_finish(isv_grpc_call *c, int status, const char *msg) {
  (void)status, (void)msg;
  *(int *)isv_grpc_call_user(c) = 1;
}
static const isv_grpc_carrier gc = {sizeof gc, on_send, on_finish};

/* ---- one input ------------------------------------------------------------------------------ */

#define MAX_PIECES 12
typedef struct piece {
  const uint8_t *p;
  size_t n;
} piece;

static size_t split(const uint8_t *d, size_t n, piece *out) {
  size_t k = 0, start = 0;
  for (size_t i = 0; i + 1 < n && k < MAX_PIECES - 1; i++)
    if (d[i] == 0xfe && d[i + 1] == 0xff) {
      out[k++] = (piece){d + start, i - start};
      start = i + 2;
      i++;
    }
  out[k++] = (piece){d + start, n - start};
  return k;
}

/* bytes percent-encoded into out (keep: unreserved, and `also`). */
static size_t pct(char *out, size_t cap, const uint8_t *p, size_t n, const char *also) {
  static const char hex[] = "0123456789ABCDEF";
  size_t at = 0;
  for (size_t i = 0; i < n && at + 4 < cap; i++) {
    uint8_t c = p[i];
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
        c == '_' || c == '.' || c == '~' || (c && strchr(also, c))) {
      out[at++] = (char)c;
    } else {
      out[at++] = '%';
      out[at++] = hex[c >> 4];
      out[at++] = hex[c & 15];
    }
  }
  out[at] = '\0';
  return at;
}

static void run_quiet(void) {
  for (;;) {
    int alive = uv_run(&loop, UV_RUN_NOWAIT);
    if (n_pending) { /* the host decides now, outside its callback */
      isv_auth *now[64];
      int n = n_pending;
      memcpy(now, pending, sizeof now[0] * (size_t)n);
      n_pending = 0;
      for (int i = 0; i < n; i++) decide(now[i]);
      continue;
    }
    if (!alive) break;
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (srv == NULL) setup();
  if (size < 2) return 0;
  const entry *e = &entries[data[0] % n_entries];
  later = data[1] & 1;
  isv_server_set_default_model(srv, data[1] & 2 ? "no" : "ok");
  n_asked = n_acted = overflow = 0;
  piece pc[MAX_PIECES];
  size_t np = split(data + 2, size - 2, pc);
  if (e->grpc) {
    isv_grpc_call *c;
    static int finished;
    finished = 0;
    if (isv_grpc_call_new(srv, &gc, &finished, e->key, &c) != 0) return 0;
    isv_grpc_call_start(c);
    for (size_t i = 0; i < np && !finished; i++) isv_grpc_call_append_message(c, pc[i].p, pc[i].n);
    if (!finished) isv_grpc_call_half_close(c);
  } else {
    char target[2048];
    size_t at = 0, used = 0;
    for (const char *p = e->key; *p && at < 1024;) {
      if (*p == '{') {
        const char *end = strchr(p, '}');
        if (used < np - 1) {
          at += pct(target + at, sizeof target - at, pc[used].p, pc[used].n, "");
          used++;
        }
        p = end + 1;
      } else {
        target[at++] = *p++;
      }
    }
    target[at] = '\0';
    piece body = pc[np - 1];
    if (used + 1 < np) { /* a query before the body */
      target[at++] = '?';
      pct(target + at, sizeof target - at, pc[used].p, pc[used].n, "=&+");
    }
    int post = (e->methods & ISV__ROUTE_POST) && ((data[1] & 4) || !(e->methods & ISV__ROUTE_GET));
    const char *method = post ? "POST" : "GET";
    isv_exchange *x;
    if (isv_exchange_new(srv, &xc, NULL, method, target, &x) != 0) return 0;
    static const char ct[] = "application/json";
    if (body.n && body.p[0] != '{') isv_exchange_add_header(x, "Content-Type", 12,
                                                          "application/octet-stream", 24);
    else isv_exchange_add_header(x, "Content-Type", 12, ct, sizeof ct - 1);
    if (body.n) isv_exchange_append_body(x, body.p, body.n);
    isv_exchange_submit(x);
  }
  run_quiet();
  return 0;
}
