/* The edge's model stage, differentially (issue #34): for every HTTP route and every gRPC
 * method of every built-in front end, the model the authorizer saw at the model stage is the
 * model that ran — or was loaded / unloaded, or whose metadata, config, readiness or statistics
 * were answered — whichever way the request names it: the path, a percent-encoded path, a
 * version, the default version, a TF Serving label, a Vertex endpoint, protobuf's repeated
 * name fields (the last one wins), grps's body, ?model=, "name-version" and default model, a
 * JSON body that names its model twice, and every message of a stream.
 *
 * The table of what to cover is built from the descriptors (isv__builtin_frontends): a route or
 * method with neither a recipe below nor a place in `names_no_model` fails the test by name,
 * so a new front end or route cannot go uncovered silently.
 *
 * The server has models "ok" and "no" (versions 1 and 2, default version 2, label "stable" on
 * 1) and a repository. The authorizer records every model-stage question and forbids model "no"
 * ("AUTHZ-DENIED" in its message); backends and the repository record what they act on. Each
 * case is checked for:
 *   (a) nothing acts on "no", and a request placing "no" as its model is refused (HTTP 403,
 *       gRPC PERMISSION_DENIED, grps status 403 in its message, an in-stream error);
 *   (b) everything acted on was asked about, with the same version, and allowed;
 *   (c) a request for "ok" is not refused, succeeds (unless the recipe expects a validation
 *       error), and what ran is "ok" with the version the authorizer saw.
 * Everything runs twice: the authorizer deciding in its callback, and deciding later from
 * another thread (the handler-runs-again paths: isv__edge_http_model, isv__grpc_unary_model;
 * the core's pending path: isv__core_authorized). */
#include "cmocka_prelude.h"

#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "inferserve.h"
#include "protocol/builtin.h"

#define DENIED "AUTHZ-DENIED"

/* ---- what happened in one case ------------------------------------------------------------ */

typedef struct event {
  char model[32], version[16]; /* version "(none)" when NULL */
  int allowed;
  const char *what; /* "infer", "load", "unload" */
} event;

#define MAX_EVENTS 32
#define MAX_THREADS 64

typedef struct world {
  uv_loop_t loop;
  isv_server *srv;
  int later; /* the authorizer decides from another thread */
  event asked[MAX_EVENTS];
  int n_asked;
  event acted[MAX_EVENTS];
  int n_acted;
  uv_thread_t threads[MAX_THREADS];
  int n_threads;
  int failures, cases;
  int known_gaps;
  int decided_later; /* decisions made on another thread */
} world;

static void note(event *v, int *n, const char *model, const char *version, int allowed,
                 const char *what) {
  if (*n == MAX_EVENTS) return;
  event *e = &v[(*n)++];
  snprintf(e->model, sizeof e->model, "%s", model ? model : "(null)");
  snprintf(e->version, sizeof e->version, "%s", version ? version : "(none)");
  e->allowed = allowed;
  e->what = what;
}

/* ---- the authorizer ------------------------------------------------------------------------ */

typedef struct decision {
  isv_auth *a;
  isv_auth_decision d;
} decision;

static void decide_body(void *arg) {
  decision *d = arg;
  uv_sleep(1); /* after the callback returned: the pending path, not the one inside it */
  isv_auth_complete(d->a, d->d, d->d == ISV_AUTH_ALLOW ? NULL : DENIED " (model 'no')");
  free(d);
}

static void authorize(isv_auth *a, void *user) {
  world *w = user;
  isv_auth_decision d = ISV_AUTH_ALLOW;
  if (isv_auth_get_stage(a) == ISV_AUTH_STAGE_MODEL) {
    const char *m = isv_auth_model(a);
    int allowed = m == NULL || strcmp(m, "no") != 0;
    note(w->asked, &w->n_asked, m, isv_auth_version(a), allowed, "asked");
    if (!allowed) d = ISV_AUTH_FORBIDDEN;
  } else {
    assert_null(isv_auth_model(a));
  }
  if (w->later && w->n_threads < MAX_THREADS) {
    decision *x = malloc(sizeof *x);
    assert_non_null(x);
    *x = (decision){a, d};
    assert_int_equal(uv_thread_create(&w->threads[w->n_threads++], decide_body, x), 0);
    w->decided_later++;
    return;
  }
  isv_auth_complete(a, d, d == ISV_AUTH_ALLOW ? NULL : DENIED " (model 'no')");
}

/* ---- models and the repository ------------------------------------------------------------- */

typedef struct tag {
  world *w;
  const char *model, *version;
} tag;
static tag tags[4];

static int infer(isv_request *r, void *user) {
  tag *t = user;
  note(t->w->acted, &t->w->n_acted, t->model, t->version, 1, "infer");
  float y = 1.0f;
  int64_t one = 1;
  isv_request_set_output(r, "y", ISV_FP32, &one, 1, &y, sizeof y, ISV_TRANSIENT);
  return isv_request_complete(r, 0, NULL);
}

static void repo_load(void *user, isv_repository_op *op, const char *name, const char *cfg) {
  (void)cfg;
  world *w = user;
  note(w->acted, &w->n_acted, name, NULL, 1, "load");
  isv_repository_op_complete(op, 0, NULL);
}

static void repo_unload(void *user, isv_repository_op *op, const char *name, int deps) {
  (void)deps;
  world *w = user;
  note(w->acted, &w->n_acted, name, NULL, 1, "unload");
  isv_repository_op_complete(op, 0, NULL);
}

static void add_model(world *w, int i, const char *name, const char *version) {
  tags[i] = (tag){w, name, version};
  isv_model_config *c;
  assert_int_equal(isv_model_config_new(name, &c), 0);
  int64_t any[] = {-1};
  assert_int_equal(isv_model_config_add_input(c, "x", ISV_FP32, any, 1), 0);
  isv_model_config_set_open_io(c, 1);
  isv_backend be = {.struct_size = sizeof be, .infer = infer};
  assert_int_equal(isv_server_add_model(w->srv, c, version, &be, &tags[i], NULL), 0);
  isv_model_config_free(c);
}

static void no_trace(void *user, const isv_trace_timeline *t) {
  (void)user;
  (void)t;
}

static world *make(int later) {
  world *w = calloc(1, sizeof *w);
  assert_non_null(w);
  w->later = later;
  assert_int_equal(uv_loop_init(&w->loop), 0);
  isv_options *o;
  isv_options_new(&o);
  assert_int_equal(isv_options_set_trace(o, no_trace, NULL, 1), 0); /* the trace extension on */
  assert_int_equal(isv_server_new(&w->loop, o, &w->srv), 0);
  isv_options_free(o);
  add_model(w, 0, "ok", "1");
  add_model(w, 1, "ok", "2");
  add_model(w, 2, "no", "1");
  add_model(w, 3, "no", "2");
  for (int i = 0; i < 2; i++) {
    const char *name = i ? "no" : "ok";
    assert_int_equal(isv_server_set_default_version(w->srv, name, "2"), 0);
    assert_int_equal(isv_server_set_label(w->srv, name, "stable", "1"), 0);
  }
  isv_repository repo = {.struct_size = sizeof repo, .user = w, .load = repo_load,
                         .unload = repo_unload};
  assert_int_equal(isv_server_set_repository(w->srv, &repo), 0);
  assert_int_equal(isv_server_set_authorizer(w->srv, authorize, w), 0);
  return w;
}

static void on_closed(isv_server *s, void *d) {
  (void)s;
  *(int *)d = 1;
}

static void finish(world *w) {
  int closed = 0;
  isv_server_close(w->srv, on_closed, &closed);
  uv_run(&w->loop, UV_RUN_DEFAULT);
  assert_true(closed);
  for (int i = 0; i < w->n_threads; i++) uv_thread_join(&w->threads[i]);
  assert_int_equal(uv_loop_close(&w->loop), 0);
  free(w);
}

/* ---- carriers: what the client got --------------------------------------------------------- */

typedef struct reply {
  int answered;
  int status; /* HTTP status, or the gRPC status */
  char text[16384];
  size_t len;
} reply;

static void take(reply *r, const void *p, size_t n) {
  if (n > sizeof r->text - 1 - r->len) n = sizeof r->text - 1 - r->len;
  memcpy(r->text + r->len, p, n);
  r->len += n;
  r->text[r->len] = '\0';
}

static int on_respond(isv_exchange *x, int status, const isv_field *h, size_t nh,
                      const uv_buf_t *parts, size_t n, isv_piece *p, int more) {
  (void)h, (void)nh, (void)more;
  reply *r = isv_exchange_user(x);
  r->answered = 1;
  r->status = status;
  for (size_t i = 0; i < n; i++) take(r, parts[i].base, parts[i].len);
  isv_piece_free(p);
  return 0;
}
static int on_write(isv_exchange *x, const uv_buf_t *parts, size_t n, isv_piece *p) {
  reply *r = isv_exchange_user(x);
  for (size_t i = 0; i < n; i++) take(r, parts[i].base, parts[i].len);
  isv_piece_free(p);
  return 0;
}
static void on_end(isv_exchange *x) { (void)x; }
static const isv_exchange_carrier carrier = {sizeof carrier, on_respond, on_write, on_end};

static int g_send(isv_grpc_call *c, const uv_buf_t *parts, size_t n, isv_piece *p) {
  reply *r = isv_grpc_call_user(c);
  take(r, "|msg|", 5);
  for (size_t i = 0; i < n; i++) take(r, parts[i].base, parts[i].len);
  isv_piece_free(p);
  return 0;
}
static void g_finish(isv_grpc_call *c, int status, const char *message) {
  reply *r = isv_grpc_call_user(c);
  r->answered = 1;
  r->status = status;
  take(r, "|status|", 8);
  if (message) take(r, message, strlen(message));
}
static const isv_grpc_carrier gcarrier = {sizeof gcarrier, g_send, g_finish};

/* Where needle (k bytes) is in (h, n), or NULL (memmem is not C11). */
static const char *find(const char *h, size_t n, const char *needle, size_t k) {
  for (size_t i = 0; k <= n && i <= n - k; i++)
    if (memcmp(h + i, needle, k) == 0) return h + i;
  return NULL;
}

static size_t count_of(const reply *r, const char *needle) {
  size_t n = 0, k = strlen(needle);
  for (const char *p = r->text; (p = find(p, r->len - (size_t)(p - r->text), needle, k)); p += k)
    n++;
  return n;
}

/* ---- one case ------------------------------------------------------------------------------ */

#define MAX_MSGS 4
typedef struct request {
  int grpc;
  const char *method; /* HTTP method, or the gRPC method's path */
  char target[256];
  const char *ctype;
  char body[512];
  size_t body_len;
  uint8_t msg[MAX_MSGS][512];
  size_t msg_len[MAX_MSGS];
  int n_msgs;
  const char *default_model; /* grps: the server's default model for this case ("" none) */
} request;

typedef struct expect {
  int refused;         /* refusals the answer carries (a stream: one per message for "no") */
  int acted;           /* backend runs + repository operations on "ok" (-1: not checked) */
  const char *version; /* the version of what ran / was asked about (NULL: not checked) */
  int lax;             /* an "ok" request may fail validation (never with a refusal) */
  int grps;            /* errors in grps's message (gRPC status OK) */
  const char *leak;    /* an answer naming "no" this way acted on it (aggregate answers) */
} expect;

static const expect NO = {1, 0, NULL, 0, 0, NULL};
/* Names both models (JSON's duplicate keys): refused, or run as "ok" — (a) and (b) decide. */
static const expect EITHER = {-1, -1, NULL, 1, 0, NULL};

/* Answers that list every model are judged at the caller stage only, by design
 * (include/inferserve.h, "The service's edge": a host that must hide models refuses those
 * paths to the caller): the property does not apply to them. */
static const char *const by_design[] = {
    "* /v2/models/stats every model: the answer is about model 'no'*never asked",
    "* /inference.GRPCInferenceService/ModelStatistics every model: the answer is about model "
    "'no'*never asked",
    NULL,
};

/* Known gaps: cases that break the property today, reported ("KNOWN GAP") but not failed —
 * set ISV_AUTHZ_STRICT=1 to fail them. fnmatch patterns on "<now|later> <case label>". Each is
 * a finding of this test (issue #34); remove its line with the fix. None is left: the ones it
 * found (grps ModelMetadata's refusal text and shape, TF Serving's decode error before the
 * model stage) are fixed. */
static const char *const known_gaps[] = {
    NULL,
};

static int matches(const char *const *patterns, const world *w, const char *label,
                   const char *why) {
  char key[1024];
  snprintf(key, sizeof key, "%s %s: %s", w->later ? "later" : "now", label, why);
  for (const char *const *g = patterns; *g; g++)
    if (fnmatch(*g, key, 0) == 0) return 1;
  return 0;
}

static int is_known_gap(const world *w, const char *label, const char *why) {
  return matches(known_gaps, w, label, why);
}

static void run_case(world *w, const request *rq, const expect *ex, const char *label) {
  w->n_asked = w->n_acted = 0;
  w->cases++;
  assert_int_equal(isv_server_set_default_model(w->srv, rq->default_model ? rq->default_model
                                                                          : "ok"),
                   0);
  reply *r = calloc(1, sizeof *r);
  assert_non_null(r);
  if (!rq->grpc) {
    isv_exchange *x;
    assert_int_equal(isv_exchange_new(w->srv, &carrier, r, rq->method, rq->target, &x), 0);
    if (rq->ctype) isv_exchange_add_header(x, "Content-Type", 12, rq->ctype, strlen(rq->ctype));
    isv_exchange_set_peer(x, "10.0.0.1:1", NULL);
    if (rq->body_len) assert_int_equal(isv_exchange_append_body(x, rq->body, rq->body_len), 0);
    assert_int_equal(isv_exchange_submit(x), 0);
  } else {
    isv_grpc_call *c;
    assert_int_equal(isv_grpc_call_new(w->srv, &gcarrier, r, rq->method, &c), 0);
    isv_grpc_call_set_peer(c, "10.0.0.1:1", NULL);
    assert_int_equal(isv_grpc_call_start(c), 0);
    for (int i = 0; i < rq->n_msgs; i++)
      isv_grpc_call_append_message(c, rq->msg[i], rq->msg_len[i]);
    isv_grpc_call_half_close(c);
  }
  uv_run(&w->loop, UV_RUN_DEFAULT);
  for (int i = 0; i < w->n_threads; i++) uv_thread_join(&w->threads[i]);
  w->n_threads = 0;

  char why[512] = "";
#define FAIL(...) (why[0] ? 0 : snprintf(why, sizeof why, __VA_ARGS__))
  if (!r->answered) FAIL("no answer");
  /* (a) nothing acts on "no"; (b) what acted was asked about, same version, and allowed */
  for (int i = 0; i < w->n_acted; i++) {
    const event *a = &w->acted[i];
    if (strcmp(a->model, "no") == 0) FAIL("%s acted on model 'no' version %s", a->what, a->version);
    int found = 0;
    for (int j = 0; j < w->n_asked && !found; j++)
      found = w->asked[j].allowed && strcmp(w->asked[j].model, a->model) == 0 &&
              strcmp(w->asked[j].version, a->version) == 0;
    if (!found)
      FAIL("%s acted on '%s' version %s, which the model stage did not allow", a->what, a->model,
           a->version);
  }
  if (ex->leak && find(r->text, r->len, ex->leak, strlen(ex->leak))) {
    int asked_no = 0;
    for (int j = 0; j < w->n_asked; j++) asked_no |= strcmp(w->asked[j].model, "no") == 0;
    FAIL("the answer is about model 'no' (it holds '%s'), %s", ex->leak,
         asked_no ? "which the model stage refused" : "and the model stage was never asked");
  }
  size_t refusals = count_of(r, DENIED);
  /* grps: a refusal is status 403 in the message (Status{code 1: 403}); its text must say why */
  if (ex->grps && refusals == 0 && count_of(r, "\x08\x93\x03") > 0) {
    refusals = count_of(r, "\x08\x93\x03");
    FAIL("refused with grps status 403, but its message lost the authorizer's text");
  }
  int stream = rq->grpc && rq->n_msgs > 1;
  int want_refused = ex->refused < 0 ? refusals > 0 : ex->refused; /* EITHER: as it went */
  if (want_refused) {
    if (stream ? refusals != (size_t)want_refused : refusals == 0)
      FAIL("expected %d refusal(s), the answer has %zu", want_refused, refusals);
    else if (!rq->grpc && r->status != 403) FAIL("refused with HTTP %d, not 403", r->status);
    else if (rq->grpc && !ex->grps && !stream && r->status != 7)
      FAIL("refused with gRPC status %d, not PERMISSION_DENIED", r->status);
    else if (rq->grpc && (ex->grps || stream) && r->status != 0)
      FAIL("refused with gRPC status %d, not in the message (OK)", r->status);
  } else {
    /* (c) "ok" is not refused and runs as judged */
    if (refusals) FAIL("refused, but names model 'ok'");
    else if (!rq->grpc && r->status == 403) FAIL("HTTP 403 for model 'ok'");
    else if (rq->grpc && r->status == 7) FAIL("PERMISSION_DENIED for model 'ok'");
    else if (!ex->lax && !rq->grpc && (r->status < 200 || r->status > 299))
      FAIL("HTTP %d for model 'ok'", r->status);
    else if (!ex->lax && rq->grpc && r->status != 0) FAIL("gRPC status %d for model 'ok'", r->status);
    else if (!ex->lax && ex->grps && (find(r->text, r->len, "\x08\xc8\x01", 3) == NULL))
      FAIL("grps status is not 200");
  }
  if (ex->acted >= 0 && w->n_acted != ex->acted)
    FAIL("%d model(s) acted, expected %d", w->n_acted, ex->acted);
  if (ex->version) {
    for (int i = 0; i < w->n_acted; i++)
      if (strcmp(w->acted[i].version, ex->version) != 0)
        FAIL("ran version %s, expected %s", w->acted[i].version, ex->version);
    int asked = 0;
    for (int j = 0; j < w->n_asked; j++)
      asked |= strcmp(w->asked[j].model, "ok") == 0 && strcmp(w->asked[j].version, ex->version) == 0;
    if (!asked) FAIL("the model stage was not asked about 'ok' version %s", ex->version);
  }
#undef FAIL
  if (why[0] && matches(by_design, w, label, why)) why[0] = '\0';
  if (why[0]) {
    for (char *p = why; *p; p++)
      if ((unsigned char)*p < 32) *p = '.';
    int gap = is_known_gap(w, label, why) && getenv("ISV_AUTHZ_STRICT") == NULL;
    fprintf(stderr, "%s [%s] %s%s%s: %s (status %d; asked:", gap ? "KNOWN GAP" : "FAIL",
            w->later ? "later" : "now", rq->method, rq->grpc ? "" : " ",
            rq->grpc ? "" : rq->target, why, r->status);
    for (int j = 0; j < w->n_asked; j++)
      fprintf(stderr, " %s/%s%s", w->asked[j].model, w->asked[j].version,
              w->asked[j].allowed ? "" : "(refused)");
    char shown[161];
    size_t n = r->len < 160 ? r->len : 160;
    for (size_t i = 0; i < n; i++) shown[i] = r->text[i] >= 32 && r->text[i] < 127 ? r->text[i] : '.';
    shown[n] = '\0';
    fprintf(stderr, ") — case %s — answer: %s\n", label, shown);
    if (gap) w->known_gaps++;
    else w->failures++;
  }
  free(r);
}

/* ---- building requests ---------------------------------------------------------------------- */

static request http(const char *method, const char *target, const char *ctype, const char *body) {
  request q;
  memset(&q, 0, sizeof q);
  q.method = method;
  snprintf(q.target, sizeof q.target, "%s", target);
  q.ctype = ctype;
  if (body) {
    q.body_len = strlen(body);
    memcpy(q.body, body, q.body_len);
  }
  return q;
}

static request grpc(const char *path) {
  request q;
  memset(&q, 0, sizeof q);
  q.grpc = 1;
  q.method = path;
  return q;
}

/* Append field `field` (length-delimited) to message i. */
static void pb_bytes(request *q, int i, int field, const void *p, size_t n) {
  assert_true(n < 128 && q->msg_len[i] + n + 2 <= sizeof q->msg[i]);
  uint8_t *m = q->msg[i] + q->msg_len[i];
  m[0] = (uint8_t)(field << 3 | 2);
  m[1] = (uint8_t)n;
  memcpy(m + 2, p, n);
  q->msg_len[i] += n + 2;
  if (q->n_msgs <= i) q->n_msgs = i + 1;
}
static void pb_str(request *q, int i, int field, const char *s) { pb_bytes(q, i, field, s, strlen(s)); }

/* An empty message i (a request naming nothing). */
static void pb_empty(request *q, int i) {
  if (q->n_msgs <= i) q->n_msgs = i + 1;
}

/* A ModelInferRequest's input x (FP32 [1], raw contents 1.0). */
static void pb_infer_input(request *q, int i) {
  static const char in[] = "\x0a\x01x" "\x12\x04" "FP32" "\x1a\x01\x01";
  pb_bytes(q, i, 5, in, sizeof in - 1);
  pb_bytes(q, i, 7, "\x00\x00\x80\x3f", 4);
}

/* ---- recipes -------------------------------------------------------------------------------- */

/* The placements of a model name: how a request names "ok" or "no". */
typedef struct ctx {
  world *w;
  const char *key; /* the route pattern or method path */
  char label[256];
} ctx;

static const char *lbl(ctx *c, const char *how) {
  snprintf(c->label, sizeof c->label, "%s %s", c->key, how);
  return c->label;
}

static expect ok_expect(int acted, const char *version) {
  return (expect){0, acted, version, 0, 0, NULL};
}

static const char v2_body[] =
    "{\"inputs\":[{\"name\":\"x\",\"datatype\":\"FP32\",\"shape\":[1],\"data\":[1]}]}";
static const char gen_body[] = "{\"x\":1.5}";
static const char tf_body[] = "{\"instances\":[1.0]}";
static const char tf_examples[] = "{\"examples\":[{\"x\":1.0}]}";

/* A route whose path captures {model} (and maybe {version} / {label}): the model named in the
 * path, plainly and percent-encoded, with a version or a label where the route has one. */
static void by_path(ctx *c, const char *method, const char *body, int acted, int lax,
                    const char *def_version) {
  world *w = c->w;
  int has_version = strstr(c->key, "{version}") != NULL;
  int has_label = strstr(c->key, "{label}") != NULL;
  static const struct {
    const char *model; /* as the path spells it */
    int no;
  } names[] = {{"ok", 0}, {"no", 1}, {"%6Fk", 0}, {"%6Eo", 1}};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    const char *versions[] = {has_version ? "1" : has_label ? "stable" : NULL,
                              has_version ? "2" : NULL};
    for (int v = 0; v < 2; v++) {
      if (v == 1 && versions[1] == NULL) break;
      /* the pattern, its captures filled */
      char target[256] = "";
      size_t at = 0;
      for (const char *p = c->key; *p && at < sizeof target - 64;) {
        if (*p == '{') {
          const char *end = strchr(p, '}');
          size_t n = (size_t)(end - p - 1);
          const char *val = strncmp(p + 1, "model", n) == 0 || strncmp(p + 1, "endpoint", n) == 0
                                ? names[i].model
                            : strncmp(p + 1, "version", n) == 0 || strncmp(p + 1, "label", n) == 0
                                ? versions[v]
                                : "p";
          at += (size_t)snprintf(target + at, sizeof target - at, "%s", val);
          p = end + 1;
        } else {
          target[at++] = *p++;
          target[at] = '\0';
        }
      }
      request q = http(method, target, body ? "application/json" : NULL, body);
      const char *version = has_label ? "1" : has_version ? versions[v] : def_version;
      expect e = names[i].no ? NO : ok_expect(acted, version);
      e.lax = lax;
      char how[64];
      snprintf(how, sizeof how, "path %s%s%s", names[i].model, versions[v] ? " @" : "",
               versions[v] ? versions[v] : "");
      run_case(w, &q, &e, lbl(c, how));
    }
  }
}

/* V2 REST */
/* A request for "no" whose body does not fit it: refused all the same, not told what "no"
 * takes (decoding is checked against the model before the model stage). */
static void no_with_bad_body(ctx *c, const char *target, const char *body) {
  request q = http("POST", target, "application/json", body);
  run_case(c->w, &q, &NO, lbl(c, "no, a body that does not fit it"));
}

static void v2_infer(ctx *c) {
  by_path(c, "POST", v2_body, 1, 0, "2");
  if (strstr(c->key, "{version}") == NULL)
    no_with_bad_body(c, "/v2/models/no/infer",
                     "{\"inputs\":[{\"name\":\"x\",\"datatype\":\"BYTES\",\"shape\":[1],"
                     "\"data\":[\"a\"]}]}");
}
static void v2_generate(ctx *c) { by_path(c, "POST", gen_body, 1, 1, "2"); }
static void v2_answer(ctx *c) { by_path(c, "GET", NULL, 0, 0, "2"); }
/* statistics without a version are about every version */
static void v2_stats(ctx *c) { by_path(c, "GET", NULL, 0, 0, "(none)"); }
static void v2_repo(ctx *c) { by_path(c, "POST", NULL, 1, 0, NULL); }

/* /v2/models/stats: every model's statistics, "no"'s included. */
static void v2_stats_all(ctx *c) {
  request q = http("GET", "/v2/models/stats", NULL, NULL);
  expect e = {0, 0, NULL, 0, 0, "\"name\":\"no\""};
  run_case(c->w, &q, &e, lbl(c, "every model"));
}

/* TF Serving REST */
/* a model's status covers every version; its metadata is the default version's */
static void tf_status(ctx *c) { by_path(c, "GET", NULL, 0, 0, "(none)"); }
static void tf_metadata(ctx *c) { by_path(c, "GET", NULL, 0, 0, "2"); }
static void tf_predict(ctx *c) {
  by_path(c, "POST", tf_body, 1, 0, "2");
  if (strcmp(c->key, "/v1/models/{model}:predict") == 0)
    no_with_bad_body(c, "/v1/models/no:predict", "{\"instances\":[{\"zz\":1}]}");
}
static void tf_examples_route(ctx *c) { by_path(c, "POST", tf_examples, -1, 1, NULL); }

/* Vertex: the model, its version, or an endpoint — a model's name */
static void vertex(ctx *c) { by_path(c, "POST", tf_body, 1, 0, "2"); }

/* grps's tensors: x, FP32 [1] */
#define GT "\"gtensors\":{\"tensors\":[{\"name\":\"x\",\"shape\":[1],\"flat_float32\":[1]}]}"

/* grps REST predict: the body's "model", ?model=, the default model, "name-version", a body
 * naming its model twice, ?streaming=true. */
static void grps_predict_http(ctx *c) {
  static const struct {
    const char *query, *body, *default_model;
    int no;
    const char *version;
  } forms[] = {
      {"", "{\"model\":\"ok\"," GT "}", "", 0, "2"},
      {"", "{\"model\":\"no\"," GT "}", "", 1, NULL},
      {"", "{\"model\":\"ok-1\"," GT "}", "", 0, "1"},
      {"", "{\"model\":\"no-1\"," GT "}", "", 1, NULL},
      {"?model=ok", "{" GT "}", "", 0, "2"},
      {"?model=no", "{" GT "}", "", 1, NULL},
      {"?model=no-2", "{" GT "}", "", 1, NULL},
      {"?model=%6Eo", "{" GT "}", "", 1, NULL},
      {"?model=no", "{\"model\":\"ok\"," GT "}", "", 0, "2"}, /* the body's wins */
      {"?model=ok", "{\"model\":\"no\"," GT "}", "", 1, NULL},
      {"", "{" GT "}", "ok", 0, "2"},
      {"", "{" GT "}", "no", 1, NULL},
      {"", "{" GT "}", "no-1", 1, NULL},
      {"?streaming=true", "{\"model\":\"no\"," GT "}", "", 1, NULL},
      {"?streaming=true", "{\"model\":\"ok\"," GT "}", "", 0, "2"},
      {"?streaming=true", "{" GT "}", "no", 1, NULL},
      /* a JSON body that names its model twice: whichever the decoder takes is judged */
      {"", "{\"model\":\"ok\",\"model\":\"no\"," GT "}", "", -1, NULL},
      {"", "{\"model\":\"no\",\"model\":\"ok\"," GT "}", "", -1, NULL},
  };
  for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) {
    char target[128];
    snprintf(target, sizeof target, "/grps/v1/infer/predict%s", forms[i].query);
    request q = http("POST", target, "application/json", forms[i].body);
    q.default_model = forms[i].default_model;
    expect e = forms[i].no == 1 ? NO : ok_expect(1, forms[i].version);
    if (forms[i].no < 0) e = EITHER;
    e.grps = 0;
    char how[160];
    snprintf(how, sizeof how, "%s %s default=%s", forms[i].query, forms[i].body,
             forms[i].default_model);
    run_case(c->w, &q, &e, lbl(c, how));
  }
}

/* grps REST metadata/model: str_data, ?model=, the default model, "name-version". */
static void grps_metadata_http(ctx *c) {
  static const struct {
    const char *method, *query, *body, *default_model;
    int no;
    const char *version;
  } forms[] = {
      {"POST", "", "{\"str_data\":\"ok\"}", "", 0, "2"},
      {"POST", "", "{\"str_data\":\"no\"}", "", 1, NULL},
      {"POST", "", "{\"str_data\":\"ok-1\"}", "", 0, "1"},
      {"POST", "", "{\"str_data\":\"no-1\"}", "", 1, NULL},
      {"POST", "?model=ok", "{\"str_data\":\"no\"}", "", 1, NULL}, /* the body's wins */
      {"GET", "?model=ok", NULL, "", 0, "2"},
      {"GET", "?model=no", NULL, "", 1, NULL},
      {"GET", "?model=no-2", NULL, "", 1, NULL},
      {"GET", "", NULL, "ok", 0, "2"},
      {"GET", "", NULL, "no", 1, NULL},
      {"GET", "", NULL, "no-1", 1, NULL},
      {"POST", "", "{\"str_data\":\"ok\",\"str_data\":\"no\"}", "", -1, NULL},
      {"POST", "", "{\"str_data\":\"no\",\"str_data\":\"ok\"}", "", -1, NULL},
  };
  for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) {
    char target[128];
    snprintf(target, sizeof target, "/grps/v1/metadata/model%s", forms[i].query);
    request q = http(forms[i].method, target, forms[i].body ? "application/json" : NULL,
                     forms[i].body);
    q.default_model = forms[i].default_model;
    expect e = forms[i].no == 1 ? NO : forms[i].no < 0 ? EITHER : ok_expect(0, forms[i].version);
    char how[160];
    snprintf(how, sizeof how, "%s%s %s default=%s", forms[i].method, forms[i].query,
             forms[i].body ? forms[i].body : "", forms[i].default_model);
    run_case(c->w, &q, &e, lbl(c, how));
  }
}

/* OpenAI REST: the body's "model", plainly, streamed, and named twice. The models here take
 * "x", which the OpenAI front end never gives: an "ok" request is judged, then fails
 * validation (400, nothing runs). */
static void openai_create(ctx *c) {
  const char *fmt = strstr(c->key, "chat") ? "{%s\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}"
                    : strstr(c->key, "embeddings") ? "{%s\"input\":\"hi\"}"
                                                   : "{%s\"prompt\":\"hi\"}";
  int streams = strstr(c->key, "embeddings") == NULL;
  static const struct {
    const char *model;
    int no, stream;
  } forms[] = {
      {"\"model\":\"ok\",", 0, 0},
      {"\"model\":\"no\",", 1, 0},
      {"\"model\":\"ok\",\"stream\":true,", 0, 1},
      {"\"model\":\"no\",\"stream\":true,", 1, 1},
      {"\"model\":\"ok\",\"model\":\"no\",", -1, 0},
      {"\"model\":\"no\",\"model\":\"ok\",", -1, 0},
  };
  for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) {
    if (forms[i].stream && !streams) continue;
    char body[256];
    snprintf(body, sizeof body, fmt, forms[i].model);
    request q = http("POST", c->key, "application/json", body);
    expect e = forms[i].no == 1 ? NO : forms[i].no < 0 ? EITHER : ok_expect(0, "2");
    if (forms[i].no == 0) e.lax = 1;
    run_case(c->w, &q, &e, lbl(c, forms[i].model));
  }
}

/* ---- gRPC ------------------------------------------------------------------------------------ */

/* How a protobuf request names its model: the name field (and the version field) once, or
 * twice — the last occurrence is the one protobuf reads. */
typedef struct pb_form {
  const char *names[2]; /* name field occurrences, in order (NULL: fewer) */
  const char *versions[2];
  int no;              /* 1: the model is "no"; 0: "ok" */
  const char *version; /* what "ok" resolves to ("(none)": every version) */
  const char *how;
} pb_form;

static const pb_form v2_forms[] = {
    {{"ok"}, {NULL}, 0, "2", "ok"},
    {{"no"}, {NULL}, 1, NULL, "no"},
    {{"ok"}, {"1"}, 0, "1", "ok @1"},
    {{"no"}, {"1"}, 1, NULL, "no @1"},
    {{"ok", "no"}, {NULL}, 1, NULL, "ok then no"},
    {{"no", "ok"}, {NULL}, 0, "2", "no then ok"},
    {{"ok"}, {"2", "1"}, 0, "1", "ok @2 then @1"},
    {{"no", "ok"}, {"1", "2"}, 0, "2", "no then ok, @1 then @2"},
};

static void pb_model_ref(request *q, int i, const pb_form *f, int name_field, int version_field) {
  for (int k = 0; k < 2 && f->names[k]; k++) pb_str(q, i, name_field, f->names[k]);
  for (int k = 0; k < 2 && version_field && f->versions[k]; k++)
    pb_str(q, i, version_field, f->versions[k]);
  pb_empty(q, i);
}

/* ModelReady, ModelMetadata, ModelConfig: {name 1, version 2}, answered by the front end. */
static void v2_grpc_answer(ctx *c) {
  for (size_t i = 0; i < sizeof v2_forms / sizeof v2_forms[0]; i++) {
    request q = grpc(c->key);
    pb_model_ref(&q, 0, &v2_forms[i], 1, 2);
    expect e = v2_forms[i].no ? NO : ok_expect(0, v2_forms[i].version);
    run_case(c->w, &q, &e, lbl(c, v2_forms[i].how));
  }
}

/* TraceSetting: {model_name 2}, no version (a model's settings are every version's). */
static void v2_grpc_trace(ctx *c) {
  for (size_t i = 0; i < sizeof v2_forms / sizeof v2_forms[0]; i++) {
    if (v2_forms[i].versions[0]) continue;
    request q = grpc(c->key);
    pb_model_ref(&q, 0, &v2_forms[i], 2, 0);
    expect e = v2_forms[i].no ? NO : ok_expect(0, "(none)");
    run_case(c->w, &q, &e, lbl(c, v2_forms[i].how));
  }
}

/* ModelStatistics: the same, a model without a version is every version of it, and an empty
 * name is every model. */
static void v2_grpc_stats(ctx *c) {
  for (size_t i = 0; i < sizeof v2_forms / sizeof v2_forms[0]; i++) {
    request q = grpc(c->key);
    pb_model_ref(&q, 0, &v2_forms[i], 1, 2);
    const pb_form *f = &v2_forms[i];
    int versioned = f->versions[0] != NULL;
    expect e = f->no ? NO : ok_expect(0, versioned ? f->version : "(none)");
    run_case(c->w, &q, &e, lbl(c, f->how));
  }
  request q = grpc(c->key);
  pb_empty(&q, 0);
  expect e = {0, 0, NULL, 0, 0, "\x0a\x02no\x12"}; /* ModelStatistics{name "no", version} */
  run_case(c->w, &q, &e, lbl(c, "every model"));
}

/* RepositoryModelLoad / Unload: {repository_name 1, model_name 2}. */
static void v2_grpc_repo(ctx *c) {
  for (size_t i = 0; i < sizeof v2_forms / sizeof v2_forms[0]; i++) {
    if (v2_forms[i].versions[0]) continue; /* no versions here */
    request q = grpc(c->key);
    pb_model_ref(&q, 0, &v2_forms[i], 2, 0);
    expect e = v2_forms[i].no ? NO : ok_expect(1, NULL);
    run_case(c->w, &q, &e, lbl(c, v2_forms[i].how));
  }
}

/* ModelInfer: {model_name 1, model_version 2, inputs 5, raw_input_contents 7}. */
static void v2_grpc_infer(ctx *c) {
  for (size_t i = 0; i < sizeof v2_forms / sizeof v2_forms[0]; i++) {
    request q = grpc(c->key);
    pb_model_ref(&q, 0, &v2_forms[i], 1, 2);
    pb_infer_input(&q, 0);
    /* the name again after the inputs: still the last occurrence that counts */
    expect e = v2_forms[i].no ? NO : ok_expect(1, v2_forms[i].version);
    run_case(c->w, &q, &e, lbl(c, v2_forms[i].how));
  }
  request q = grpc(c->key); /* a name after the tensors */
  pb_str(&q, 0, 1, "ok");
  pb_infer_input(&q, 0);
  pb_str(&q, 0, 1, "no");
  run_case(c->w, &q, &NO, lbl(c, "ok, inputs, then no"));
}

/* ModelStreamInfer: every message is judged; messages change model. */
static void v2_grpc_stream(ctx *c) {
  static const int seqs[][4] = {{0, 1, 0, 1}, {1, 1, 0, 0}, {4, 5, 6, 7}, {3, 2, 1, 0}};
  for (size_t s = 0; s < sizeof seqs / sizeof seqs[0]; s++) {
    request q = grpc(c->key);
    int refused = 0, acted = 0;
    char how[64] = "stream";
    for (int k = 0; k < 4; k++) {
      const pb_form *f = &v2_forms[seqs[s][k]];
      pb_model_ref(&q, k, f, 1, 2);
      pb_infer_input(&q, k);
      refused += f->no;
      acted += !f->no;
      size_t at = strlen(how);
      snprintf(how + at, sizeof how - at, " %s", f->no ? "no" : "ok");
    }
    expect e = {refused, acted, NULL, 0, 0, NULL};
    run_case(c->w, &q, &e, lbl(c, how));
  }
}

/* grps Predict / PredictStreaming: GrpsMessage {model 2, str_data 4}. */
static void grps_grpc_predict(ctx *c) {
  static const struct {
    const char *models[2];
    const char *default_model;
    int no;
    const char *version;
    const char *how;
  } forms[] = {
      {{"ok"}, "", 0, "2", "ok"},
      {{"no"}, "", 1, NULL, "no"},
      {{"ok-1"}, "", 0, "1", "ok-1"},
      {{"no-1"}, "", 1, NULL, "no-1"},
      {{"ok", "no"}, "", 1, NULL, "ok then no"},
      {{"no", "ok"}, "", 0, "2", "no then ok"},
      {{"no-2", "ok-1"}, "", 0, "1", "no-2 then ok-1"},
      {{NULL}, "ok", 0, "2", "default ok"},
      {{NULL}, "no", 1, NULL, "default no"},
      {{NULL}, "no-1", 1, NULL, "default no-1"},
      {{NULL}, "ok-1", 0, "1", "default ok-1"},
  };
  for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) {
    request q = grpc(c->key);
    for (int k = 0; k < 2 && forms[i].models[k]; k++) pb_str(&q, 0, 2, forms[i].models[k]);
    static const char gt[] = "\x0a\x0c" "\x0a\x01x" "\x1a\x01\x01" "\x52\x04\x00\x00\x80\x3f";
    pb_bytes(&q, 0, 5, gt, sizeof gt - 1); /* gtensors {x, [1], flat_float32 [1.0]} */
    q.default_model = forms[i].default_model;
    expect e = forms[i].no ? NO : ok_expect(1, forms[i].version);
    e.grps = 1;
    run_case(c->w, &q, &e, lbl(c, forms[i].how));
  }
}

/* grps ModelMetadata: the name in str_data (4), else model (2), else the default model. */
static void grps_grpc_metadata(ctx *c) {
  static const struct {
    int field;
    const char *names[2];
    const char *default_model;
    int no;
    const char *version;
    const char *how;
  } forms[] = {
      {4, {"ok"}, "", 0, "2", "str_data ok"},
      {4, {"no"}, "", 1, NULL, "str_data no"},
      {4, {"ok-1"}, "", 0, "1", "str_data ok-1"},
      {4, {"no-1"}, "", 1, NULL, "str_data no-1"},
      {4, {"ok", "no"}, "", 1, NULL, "str_data ok then no"},
      {4, {"no", "ok"}, "", 0, "2", "str_data no then ok"},
      {2, {"no"}, "", 1, NULL, "model no"},
      {2, {"ok", "no"}, "", 1, NULL, "model ok then no"},
      {2, {"no", "ok-1"}, "", 0, "1", "model no then ok-1"},
      {0, {NULL}, "ok", 0, "2", "default ok"},
      {0, {NULL}, "no", 1, NULL, "default no"},
      {0, {NULL}, "no-2", 1, NULL, "default no-2"},
  };
  for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) {
    request q = grpc(c->key);
    for (int k = 0; k < 2 && forms[i].names[k]; k++)
      pb_str(&q, 0, forms[i].field, forms[i].names[k]);
    pb_empty(&q, 0);
    q.default_model = forms[i].default_model;
    expect e = forms[i].no ? NO : ok_expect(0, forms[i].version);
    e.grps = 1;
    run_case(c->w, &q, &e, lbl(c, forms[i].how));
  }
}

/* TF Serving gRPC: a ModelSpec {name 1, version 2 (Int64Value), signature_name 3,
 * version_label 4} in field 1 of every request; given twice, the two are merged (the later
 * fields win). */
typedef struct tfs_form {
  const char *names[2];  /* one ModelSpec per name (a second one is merged into the first) */
  int version;           /* -1: none; in the last ModelSpec */
  const char *label;     /* NULL: none; in the last ModelSpec, before the version */
  int no;
  const char *version_ran; /* what "ok" resolves to */
  const char *how;
} tfs_form;

static const tfs_form tfs_forms[] = {
    {{"ok"}, -1, NULL, 0, "2", "ok"},
    {{"no"}, -1, NULL, 1, NULL, "no"},
    {{"ok"}, 1, NULL, 0, "1", "ok @1"},
    {{"no"}, 1, NULL, 1, NULL, "no @1"},
    {{"ok"}, -1, "stable", 0, "1", "ok label stable"},
    {{"no"}, -1, "stable", 1, NULL, "no label stable"},
    {{"ok"}, 2, "stable", 0, "2", "ok label stable then @2"},
    {{"ok", "no"}, -1, NULL, 1, NULL, "spec ok then spec no"},
    {{"no", "ok"}, -1, NULL, 0, "2", "spec no then spec ok"},
};

static void pb_tfs_spec(request *q, const tfs_form *f, int with_version) {
  for (int k = 0; k < 2 && f->names[k]; k++) {
    uint8_t spec[64];
    size_t n = 0, len = strlen(f->names[k]);
    spec[n++] = 0x0a;
    spec[n++] = (uint8_t)len;
    memcpy(spec + n, f->names[k], len);
    n += len;
    int last = k == 1 || f->names[1] == NULL;
    if (last && f->label) {
      spec[n++] = 0x22;
      spec[n++] = (uint8_t)strlen(f->label);
      memcpy(spec + n, f->label, strlen(f->label));
      n += strlen(f->label);
    }
    if (last && with_version && f->version >= 0) { /* Int64Value {value 1} */
      spec[n++] = 0x12;
      spec[n++] = 2;
      spec[n++] = 0x08;
      spec[n++] = (uint8_t)f->version;
    }
    pb_bytes(q, 0, 1, spec, n);
  }
}

/* Predict: the inputs map {"x": TensorProto {DT_FLOAT, [1], float_val 1.0}}. */
static void tfs_grpc_predict(ctx *c) {
  static const char entry[] = "\x0a\x01x" "\x12\x0e" "\x08\x01" "\x12\x04\x12\x02\x08\x01"
                              "\x2a\x04\x00\x00\x80\x3f";
  for (size_t i = 0; i < sizeof tfs_forms / sizeof tfs_forms[0]; i++) {
    request q = grpc(c->key);
    pb_tfs_spec(&q, &tfs_forms[i], 1);
    pb_bytes(&q, 0, 2, entry, sizeof entry - 1);
    expect e = tfs_forms[i].no ? NO : ok_expect(1, tfs_forms[i].version_ran);
    run_case(c->w, &q, &e, lbl(c, tfs_forms[i].how));
  }
}

/* Classify / Regress: input {example_list {examples [{features {"x": float_list [1.0]}}]}};
 * "ok" has no signatures (its implicit one serves both); its output is no classification, so
 * the answer's error is not checked (lax), only who was asked and what ran. */
static void tfs_grpc_examples(ctx *c) {
  static const char input[] = "\x0a\x17" "\x0a\x15" "\x0a\x13" "\x0a\x11" "\x0a\x01x"
                              "\x12\x0c" "\x12\x0a" "\x0a\x08" "\x00\x00\x80\x3f"
                              "\x00\x00\x80\x3f";
  for (size_t i = 0; i < sizeof tfs_forms / sizeof tfs_forms[0]; i++) {
    request q = grpc(c->key);
    pb_tfs_spec(&q, &tfs_forms[i], 1);
    pb_bytes(&q, 0, 2, input, sizeof input - 1);
    expect e = tfs_forms[i].no ? NO : ok_expect(-1, tfs_forms[i].version_ran);
    e.lax = 1;
    run_case(c->w, &q, &e, lbl(c, tfs_forms[i].how));
  }
}

/* MultiInference: tasks {model_spec, method_name "tensorflow/serving/regress"}, the input of
 * Classify's recipe; the first task's spec chooses the model's version, and every task must
 * name the same model (a task naming another is refused before anything runs). */
static void tfs_grpc_multi(ctx *c) {
  static const char input[] = "\x0a\x17" "\x0a\x15" "\x0a\x13" "\x0a\x11" "\x0a\x01x"
                              "\x12\x0c" "\x12\x0a" "\x0a\x08" "\x00\x00\x80\x3f"
                              "\x00\x00\x80\x3f";
  static const char method[] = "tensorflow/serving/regress";
  for (size_t i = 0; i < sizeof tfs_forms / sizeof tfs_forms[0]; i++) {
    request q = grpc(c->key);
    request task = grpc(c->key); /* its message 0: one InferenceTask */
    pb_tfs_spec(&task, &tfs_forms[i], 1);
    pb_str(&task, 0, 2, method);
    pb_bytes(&q, 0, 1, task.msg[0], task.msg_len[0]);
    pb_bytes(&q, 0, 2, input, sizeof input - 1);
    expect e = tfs_forms[i].no ? NO : ok_expect(-1, tfs_forms[i].version_ran);
    e.lax = 1;
    run_case(c->w, &q, &e, lbl(c, tfs_forms[i].how));
  }
  /* tasks naming two models: refused (INVALID_ARGUMENT, naming neither) before any model is
   * resolved, asked about or run, whichever comes first */
  for (int first_no = 0; first_no < 2; first_no++) {
    request q = grpc(c->key);
    for (int k = 0; k < 2; k++) {
      request task = grpc(c->key);
      pb_tfs_spec(&task, &tfs_forms[(k == 0 ? first_no : !first_no) ? 1 : 0], 1);
      pb_str(&task, 0, 2, method);
      pb_bytes(&q, 0, 1, task.msg[0], task.msg_len[0]);
    }
    pb_bytes(&q, 0, 2, input, sizeof input - 1);
    expect e = ok_expect(0, NULL);
    e.lax = 1;
    run_case(c->w, &q, &e, lbl(c, first_no ? "tasks no, ok" : "tasks ok, no"));
  }
}

/* GetModelMetadata: the version the spec resolves to. */
static void tfs_grpc_metadata(ctx *c) {
  for (size_t i = 0; i < sizeof tfs_forms / sizeof tfs_forms[0]; i++) {
    request q = grpc(c->key);
    pb_tfs_spec(&q, &tfs_forms[i], 1);
    pb_str(&q, 0, 2, "signature_def");
    expect e = tfs_forms[i].no ? NO : ok_expect(0, tfs_forms[i].version_ran);
    run_case(c->w, &q, &e, lbl(c, tfs_forms[i].how));
  }
}

/* GetModelStatus: the version named, else every version (a label is not read: TF Serving's). */
static void tfs_grpc_status(ctx *c) {
  for (size_t i = 0; i < sizeof tfs_forms / sizeof tfs_forms[0]; i++) {
    const tfs_form *f = &tfs_forms[i];
    request q = grpc(c->key);
    pb_tfs_spec(&q, f, 1);
    pb_empty(&q, 0);
    char one[8];
    snprintf(one, sizeof one, "%d", f->version);
    expect e = f->no ? NO : ok_expect(0, f->version >= 0 ? one : "(none)");
    run_case(c->w, &q, &e, lbl(c, f->how));
  }
}

/* ---- the table --------------------------------------------------------------------------------- */

typedef struct recipe {
  const char *key; /* a route pattern or a gRPC method path, as its descriptor spells it */
  void (*fn)(ctx *c);
} recipe;

#define V2M "/v2/models/{model}"
#define TFM "/v1/models/{model}"
#define GSVC "/inference.GRPCInferenceService/"
#define GRPS "/grps.protos.v1.GrpsService/"
#define TPS "/tensorflow.serving.PredictionService/"
#define TMS "/tensorflow.serving.ModelService/"
static const recipe recipes[] = {
    {V2M "/infer", v2_infer},
    {V2M "/versions/{version}/infer", v2_infer},
    {V2M "/generate", v2_generate},
    {V2M "/versions/{version}/generate", v2_generate},
    {V2M "/generate_stream", v2_generate},
    {V2M "/versions/{version}/generate_stream", v2_generate},
    {V2M, v2_answer},
    {V2M "/versions/{version}", v2_answer},
    {V2M "/ready", v2_answer},
    {V2M "/versions/{version}/ready", v2_answer},
    {V2M "/config", v2_answer},
    {V2M "/versions/{version}/config", v2_answer},
    {V2M "/stats", v2_stats},
    {V2M "/trace/setting", v2_stats}, /* a model's trace settings: every version's */
    {V2M "/versions/{version}/stats", v2_stats},
    {"/v2/models/stats", v2_stats_all},
    {"/v2/repository/models/{model}/load", v2_repo},
    {"/v2/repository/models/{model}/unload", v2_repo},
    {TFM, tf_status},
    {TFM "/versions/{version}", tf_status},
    {TFM "/labels/{label}", tf_status},
    {TFM "/metadata", tf_metadata},
    {TFM "/versions/{version}/metadata", tf_metadata},
    {TFM "/labels/{label}/metadata", tf_metadata},
    {TFM ":predict", tf_predict},
    {TFM "/versions/{version}:predict", tf_predict},
    {TFM "/labels/{label}:predict", tf_predict},
    {TFM ":classify", tf_examples_route},
    {TFM "/versions/{version}:classify", tf_examples_route},
    {TFM "/labels/{label}:classify", tf_examples_route},
    {TFM ":regress", tf_examples_route},
    {TFM "/versions/{version}:regress", tf_examples_route},
    {TFM "/labels/{label}:regress", tf_examples_route},
    {"/v1/projects/{project}/models/{model}:predict", vertex},
    {"/v1/projects/{project}/models/{model}/versions/{version}:predict", vertex},
    {"/v1/projects/{project}/locations/{location}/endpoints/{endpoint}:predict", vertex},
    {"/grps/v1/infer/predict", grps_predict_http},
    {"/grps/v1/metadata/model", grps_metadata_http},
    {GSVC "ModelReady", v2_grpc_answer},
    {GSVC "ModelMetadata", v2_grpc_answer},
    {GSVC "ModelConfig", v2_grpc_answer},
    {GSVC "TraceSetting", v2_grpc_trace},
    {GSVC "ModelStatistics", v2_grpc_stats},
    {GSVC "RepositoryModelLoad", v2_grpc_repo},
    {GSVC "RepositoryModelUnload", v2_grpc_repo},
    {GSVC "ModelInfer", v2_grpc_infer},
    {GSVC "ModelStreamInfer", v2_grpc_stream},
    {GRPS "Predict", grps_grpc_predict},
    {GRPS "PredictStreaming", grps_grpc_predict},
    {GRPS "ModelMetadata", grps_grpc_metadata},
    {"/openai/v1/models/{model}", v2_answer},
    {"/openai/v1/chat/completions", openai_create},
    {"/openai/v1/completions", openai_create},
    {"/openai/v1/embeddings", openai_create},
    {TPS "Predict", tfs_grpc_predict},
    {TPS "GetModelMetadata", tfs_grpc_metadata},
    {TMS "GetModelStatus", tfs_grpc_status},
    {TPS "Classify", tfs_grpc_examples},
    {TPS "Regress", tfs_grpc_examples},
    {TPS "MultiInference", tfs_grpc_multi},
};

/* Routes and methods that act on no model, each with why. A new one goes here only when it
 * names no model; one that does needs a recipe. */
static const struct {
  const char *key, *why;
} names_no_model[] = {
    {"/v2", "server metadata"},
    {"/v2/health/live", "server liveness"},
    {"/v2/health/ready", "server readiness"},
    {"/v2/logging", "the server's log settings"},
    {"/v2/trace/setting", "the global trace settings"},
    {"/v2/systemsharedmemory/status", "shared memory regions, not models"},
    {"/v2/systemsharedmemory/region/{region}/status", "shared memory"},
    {"/v2/systemsharedmemory/region/{region}/register", "shared memory"},
    {"/v2/systemsharedmemory/unregister", "shared memory"},
    {"/v2/systemsharedmemory/region/{region}/unregister", "shared memory"},
    {"/v2/cudasharedmemory/status", "CUDA shared memory (unsupported)"},
    {"/v2/cudasharedmemory/region/{region}/status", "CUDA shared memory"},
    {"/v2/cudasharedmemory/region/{region}/register", "CUDA shared memory"},
    {"/v2/cudasharedmemory/unregister", "CUDA shared memory"},
    {"/v2/cudasharedmemory/region/{region}/unregister", "CUDA shared memory"},
    {"/openai/v1/models", "OpenAI's model list: every model's name (judged at the caller stage "
                          "only, as the repository's index)"},
    {"/v2/repository/index", "the repository's index: every model's name and state (judged at "
                             "the caller stage only)"},
    {"/v2/repository/{repository}/index", "501: named repositories are not supported"},
    {"/v2/repository/{repository}/models/{model}/load", "501 before any model is read"},
    {"/v2/repository/{repository}/models/{model}/unload", "501 before any model is read"},
    {TFM, "POST: 400 Malformed request, whatever the model (GET has a recipe)"},
    {TFM "/versions/{version}", "POST: 400 Malformed request"},
    {TFM "/labels/{label}", "POST: 400 Malformed request"},
    {"/grps/v1/health/online", "server state"},
    {"/grps/v1/health/offline", "server state"},
    {"/grps/v1/health/live", "server liveness"},
    {"/grps/v1/health/ready", "server readiness"},
    {"/grps/v1/metadata/server", "server metadata"},
    {"/grps/v1/monitor/metrics", "Prometheus metrics (judged at the caller stage only)"},
    {"/metrics", "Prometheus metrics (judged at the caller stage only)"},
    {"/", "grps's metrics at the root (judged at the caller stage only)"},
    {GSVC "ServerLive", "server liveness"},
    {GSVC "LogSettings", "the server's log settings"},
    {GSVC "ServerReady", "server readiness"},
    {GSVC "ServerMetadata", "server metadata"},
    {GSVC "SystemSharedMemoryStatus", "shared memory"},
    {GSVC "SystemSharedMemoryRegister", "shared memory"},
    {GSVC "SystemSharedMemoryUnregister", "shared memory"},
    {GSVC "CudaSharedMemoryStatus", "CUDA shared memory"},
    {GSVC "CudaSharedMemoryRegister", "CUDA shared memory"},
    {GSVC "CudaSharedMemoryUnregister", "CUDA shared memory"},
    {GSVC "RepositoryIndex", "the repository's index (judged at the caller stage only)"},
    {GRPS "Online", "server state"},
    {GRPS "Offline", "server state"},
    {GRPS "CheckLiveness", "server liveness"},
    {GRPS "CheckReadiness", "server readiness"},
    {GRPS "ServerMetadata", "server metadata"},
    {TMS "HandleReloadConfigRequest", "UNIMPLEMENTED before the message is read"},
    {"/grpc.health.v1.Health/Check", "a service's health, not a model's"},
    {"/grpc.health.v1.Health/Watch", "a service's health, as Check (a stream of it)"},
    {"/grpc.reflection.v1.ServerReflection/ServerReflectionInfo", "the schema, not a model"},
    {"/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo", "the schema"},
};

static const recipe *recipe_of(const char *key, unsigned methods) {
  for (size_t i = 0; i < sizeof recipes / sizeof recipes[0]; i++)
    if (strcmp(recipes[i].key, key) == 0) {
      /* TF Serving's POST to a bare model path is the malformed route, not the status one */
      if (recipes[i].fn == tf_status && !(methods & ISV__ROUTE_GET)) return NULL;
      return &recipes[i];
    }
  return NULL;
}

static int no_model(const char *key) {
  for (size_t i = 0; i < sizeof names_no_model / sizeof names_no_model[0]; i++)
    if (strcmp(names_no_model[i].key, key) == 0) return 1;
  return 0;
}

/* Every route and method of every built-in front end, through its recipe. */
static void every_route_and_method(world *w) {
  int uncovered = 0;
  for (const isv__frontend *const *fe = isv__builtin_frontends; *fe; fe++) {
    for (const isv__http_route *rt = (*fe)->routes; rt && rt->pattern; rt++) {
      const recipe *rc = recipe_of(rt->pattern, rt->methods);
      if (rc) {
        ctx c = {w, rt->pattern, ""};
        rc->fn(&c);
      } else if (!no_model(rt->pattern)) {
        fprintf(stderr, "UNCOVERED: front end %s, route %s: add a recipe (or, if it names no "
                "model, a line in names_no_model)\n", (*fe)->name, rt->pattern);
        uncovered++;
      }
    }
    for (const isv__grpc_method *m = (*fe)->methods; m && m->path; m++) {
      const recipe *rc = recipe_of(m->path, ~0u);
      if (rc) {
        ctx c = {w, m->path, ""};
        rc->fn(&c);
      } else if (!no_model(m->path)) {
        fprintf(stderr, "UNCOVERED: front end %s, gRPC method %s: add a recipe (or, if it "
                "names no model, a line in names_no_model)\n", (*fe)->name, m->path);
        uncovered++;
      }
    }
  }
  fprintf(stderr, "[%s] %d cases, %d decisions on other threads, %d failed, %d known gaps, %d "
          "uncovered\n", w->later ? "decided later" : "decided at once", w->cases,
          w->decided_later, w->failures, w->known_gaps, uncovered);
  if (w->later) assert_true(w->decided_later >= w->cases);
  assert_int_equal(uncovered, 0);
  assert_int_equal(w->failures, 0);
}

static void decided_at_once(void **state) {
  (void)state;
  world *w = make(0);
  every_route_and_method(w);
  finish(w);
}

static void decided_later_on_another_thread(void **state) {
  (void)state;
  world *w = make(1);
  every_route_and_method(w);
  finish(w);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(decided_at_once),
      cmocka_unit_test(decided_later_on_another_thread),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
