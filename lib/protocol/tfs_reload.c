/* TF Serving's ModelService/HandleReloadConfigRequest on the host's model repository callbacks
 * (core/repository.h). The request's ModelConfigList is the whole set of models to serve, as
 * TF Serving's ServerCore::ReloadConfig takes it: each listed model without a READY version is
 * loaded, then each registered model the list drops is unloaded (loads first: a renamed model
 * is served throughout); a listed model already READY is left as it is.
 *
 * Each step is a repository operation — a request of the repository's hidden model, as a V2
 * RepositoryModelLoad is: queued behind other clients' operations (one at a time), judged by the
 * authorizer's model stage with the model it names, counted, drained at close. The steps run
 * one after another; the first failure ends the call with its status and message (the steps
 * before it stay done, as TF Serving's own reload leaves them). A client that goes away stops
 * the reload after the step in progress: no step runs for a caller that is gone. What a config
 * entry says beyond its name (base_path, model_platform) is the host's business: its load
 * callback gets the name; version_labels are refused (UNIMPLEMENTED) rather than ignored. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/pbwire.h"
#include "codec/utf8.h"
#include "core/arena.h"
#include "codec/mem.h"
#include "core/queries.h"
#include "core/registry.h"
#include "core/repository.h"
#include "core/request.h"
#include "core/scheduler.h"
#include "protocol/grpc_service.h"
#include "protocol/tfs_pb.h"

/* ModelServerConfig's oneof and ModelConfig's fields (tensorflow_serving/config). */
enum { CFG_MODEL_CONFIG_LIST = 1, CFG_CUSTOM = 2 };
enum { MC_NAME = 1, MC_VERSION_LABELS = 8 };


typedef struct step {
  isv__repo_action action;
  const char *name; /* in the reload's arena */
} step;

typedef struct reload {
  isv__core *core;
  struct gcall *call; /* NULL once the call is over (keep.end) */
  struct isv__caller *who;
  isv__arena arena;
  step *steps;
  size_t n, next;
  const char **listed; /* the config's names (isv__tfs_reload_decode) */
  size_t n_listed;
  int inflight;  /* a step was submitted and is not done */
  int pumping;   /* pump is submitting: a step done meanwhile leaves the rest to it */
  int failed;    /* the first failed step's code, and its message */
  char msg[256];
} reload;

static void reload_free(reload *st) {
  isv__arena_free(&st->arena);
  isv__free(st);
}

static int bad(isv__grpc_unary *u, int code, const char *what) {
  snprintf(u->err, sizeof u->err, "%s", what);
  return code;
}

/* ---- the request ------------------------------------------------------------------------- */

typedef struct names {
  isv__arena *a;
  const char **v;
  size_t n;
  char *err;
  size_t cap;
} names;

static int fail(names *ns, int code, const char *what) {
  snprintf(ns->err, ns->cap, "%s", what);
  return code;
}

static int by_name(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Whether name is in v[0..n), sorted (isv__tfs_reload_decode sorts it): a binary search — a
 * reload lists up to 4096 names and the registry may hold as many, which a scan per name would
 * compare 16M times on the loop. */
static int has(const char *const *v, size_t n, const char *name) {
  return n && bsearch(&name, v, n, sizeof *v, by_name) != NULL;
}

/* One ModelConfig: its name into ns. */
static int model_config(names *ns, isv__pb_span m) {
  isv__pb_reader rd = isv__pb_reader_of(m);
  isv__pb_field f;
  isv__pb_span name = {NULL, 0};
  int rc;
  while ((rc = isv__pb_read_field(&rd, &f)) == 1) {
    if (f.num == MC_NAME) {
      if (f.wt != ISV__PB_LEN) return -1;
      name = f.s;
    } else if (f.num == MC_VERSION_LABELS) {
      return fail(ns, ISV_EUNIMPL, "version_labels in HandleReloadConfigRequest are not applied "
                                   "by this server: its host sets labels (isv_server_set_label)");
    }
  }
  if (rc < 0) return -1;
  if (name.n == 0)
    return fail(ns, ISV_EBADREQ, "a ModelConfig in the reload's model_config_list has no name");
  if (!isv__utf8_text((const char *)name.p, name.n))
    return fail(ns, ISV_EBADREQ, "a model name in the reload's model_config_list is not valid "
                                 "UTF-8");
  if (ns->n == ISV__TFS_RELOAD_MAX)
    return fail(ns, ISV_EBADREQ, "the reload's model_config_list lists more than 4096 models");
  char *s = isv__arena_strndup(ns->a, (const char *)name.p, name.n);
  if (s == NULL) return fail(ns, ISV_ENOMEM, "out of memory");
  ns->v[ns->n++] = s; /* a name listed twice is found once they are sorted */
  return 0;
}

static int decode(names *ns, const uint8_t *msg, size_t len) {
  isv__pb_reader rd = {msg, msg ? msg + len : msg};
  isv__pb_field f;
  isv__pb_span cfg = {NULL, 0};
  int has_cfg = 0, rc;
  while ((rc = isv__pb_read_field(&rd, &f)) == 1)
    if (f.num == 1) { /* config: ModelServerConfig (metric_names, 2, is not answered) */
      if (f.wt != ISV__PB_LEN) return -1;
      cfg = f.s;
      has_cfg = 1;
    }
  if (rc < 0) return -1;
  isv__pb_span list = {NULL, 0};
  int which = 0;
  rd = isv__pb_reader_of(cfg);
  while (has_cfg && (rc = isv__pb_read_field(&rd, &f)) == 1)
    if (f.num == CFG_MODEL_CONFIG_LIST || f.num == CFG_CUSTOM) { /* a oneof: the last wins */
      if (f.wt != ISV__PB_LEN) return -1;
      which = (int)f.num;
      list = f.s;
    }
  if (rc < 0) return -1;
  if (which != CFG_MODEL_CONFIG_LIST) /* TF Serving's words */
    return fail(ns, ISV_EBADREQ, "ServerModelConfig type not supported by "
                                 "HandleReloadConfigRequest. Only ModelConfigList is currently "
                                 "supported");
  ns->v = isv__arena_alloc(ns->a, ISV__TFS_RELOAD_MAX * sizeof *ns->v);
  if (ns->v == NULL) return fail(ns, ISV_ENOMEM, "out of memory");
  rd = isv__pb_reader_of(list);
  while ((rc = isv__pb_read_field(&rd, &f)) == 1)
    if (f.num == 1) { /* repeated ModelConfig config */
      if (f.wt != ISV__PB_LEN) return -1;
      int e = model_config(ns, f.s);
      if (e) return e;
    }
  return rc < 0 ? -1 : 0;
}

int isv__tfs_reload_decode(const uint8_t *msg, size_t len, isv__arena *a, const char ***out,
                           size_t *n, char *err, size_t cap) {
  names ns = {a, NULL, 0, err, cap};
  int rc = decode(&ns, msg, len);
  if (rc == -1)
    rc = fail(&ns, ISV_EBADREQ, "malformed protobuf: not a valid ReloadConfigRequest encoding "
                                "(truncated, or a field of the wrong wire type)");
  if (rc == 0 && ns.n > 1) {
    qsort(ns.v, ns.n, sizeof *ns.v, by_name);
    for (size_t i = 1; i < ns.n; i++)
      if (strcmp(ns.v[i - 1], ns.v[i]) == 0) {
        snprintf(err, cap, "Illegal to list model %.100s multiple times in config list", ns.v[i]);
        rc = ISV_EBADREQ;
        break;
      }
  }
  *out = ns.v;
  *n = ns.n;
  return rc;
}

/* ---- the plan ---------------------------------------------------------------------------- */

static int ready(const isv__model_entry *e) {
  for (const isv_model *m = e ? e->versions : NULL; m; m = m->next)
    if (m->state == ISV_MODEL_READY) return 1;
  return 0;
}

static int add_step(reload *st, isv__repo_action action, const char *name) {
  if (st->n == 2 * ISV__TFS_RELOAD_MAX) return ISV_ENOMEM; /* more registered models than steps */
  st->steps[st->n++] = (step){action, name};
  return 0;
}

typedef struct drop_ctx {
  reload *st;
  int rc;
} drop_ctx;

static void drop_unlisted(isv__model_entry *e, void *data) {
  drop_ctx *d = data;
  if (d->rc || e->name[0] == '@' || has(d->st->listed, d->st->n_listed, e->name)) return;
  const char *name = isv__arena_strndup(&d->st->arena, e->name, strlen(e->name));
  d->rc = name ? add_step(d->st, ISV__REPO_UNLOAD, name) : ISV_ENOMEM;
}

static int plan(reload *st) {
  st->steps = isv__arena_alloc(&st->arena, 2 * ISV__TFS_RELOAD_MAX * sizeof *st->steps);
  if (st->steps == NULL) return ISV_ENOMEM;
  const isv__registry *reg = isv__core_models(st->core);
  for (size_t i = 0; i < st->n_listed; i++) {
    const char *name = st->listed[i];
    if (!ready(isv__registry_visible(reg, name, strlen(name))) &&
        add_step(st, ISV__REPO_LOAD, name) != 0)
      return ISV_ENOMEM;
  }
  drop_ctx d = {st, 0};
  isv__registry_foreach(reg, drop_unlisted, &d);
  return d.rc;
}

/* ---- the steps --------------------------------------------------------------------------- */

/* Submit steps while each completes before its submission returns (a host that loads at once):
 * returns with one in flight, or none left, or one failed. No recursion, however many steps. */
static void step_done(isv_request *r, int status, void *data);

static void pump(reload *st) {
  st->pumping = 1;
  while (!st->inflight && !st->failed && st->next < st->n && st->call) {
    const step *s = &st->steps[st->next];
    isv_request *r = isv__request_new(st->core);
    isv__repo_op *op = r ? isv__repo_request(r, s->action) : NULL;
    if (op == NULL) {
      isv_request_free(r);
      st->failed = ISV_ENOMEM;
      snprintf(st->msg, sizeof st->msg, "out of memory");
      break;
    }
    op->name = isv__arena_strndup(&r->arena, s->name, strlen(s->name));
    r->caller = st->who; /* the model stage judges the model each step names */
    if (op->name == NULL) isv__request_fail(r, ISV_ENOMEM, "out of memory");
    st->inflight = 1;
    isv__core_submit(st->core, r, step_done, st); /* step_done may run before this returns */
  }
  st->pumping = 0;
}

/* The reload is over, or waits for its step in flight. */
static void settle(reload *st) {
  if (st->inflight) return;
  if (st->call == NULL) { /* the client went away: nothing more runs for it */
    reload_free(st);
    return;
  }
  if (st->failed) {
    isv__grpc_kept_fail(st->call, st->failed, st->msg);
  } else { /* ReloadConfigResponse{status: StatusProto{}}: OK, TF Serving's answer */
    isv__buf b;
    isv__buf_init(&b, st->core->mem);
    isv__buf_append(&b, "\x0a\x00", 2);
    if (isv__grpc_kept_send(st->call, &b) >= 0) isv__grpc_kept_end(st->call);
  }
  reload_free(st);
}

static void step_done(isv_request *r, int status, void *data) {
  reload *st = data;
  st->inflight = 0;
  if (status != 0) {
    st->failed = status;
    snprintf(st->msg, sizeof st->msg, "%s", isv_request_error_message(r));
  } else {
    st->next++;
  }
  isv_request_free(r);
  if (st->pumping) return; /* completed inside its submission: the pump goes on */
  pump(st);
  settle(st);
}

/* keep.end: the call is over — the client went away, the server closes, or settle ended it. */
static void call_over(void *data) {
  reload *st = data;
  st->call = NULL; /* settle frees st: now (it is ending the call) or when the step is done */
  st->who = NULL;
}

int isv__tfs_reload_config(isv__grpc_unary *u) {
  reload *st = isv__calloc(u->core->mem, 1, sizeof *st);
  if (st == NULL) return bad(u, ISV_ENOMEM, "out of memory");
  st->core = u->core;
  st->arena = (isv__arena)ISV__ARENA_INIT;
  int rc = isv__tfs_reload_decode(u->msg, u->len, &st->arena, &st->listed, &st->n_listed,
                                  u->err, sizeof u->err);
  if (rc == 0 && st->core->repo == NULL)
    rc = bad(u, ISV_EUNAVAIL, "HandleReloadConfigRequest is not allowed: this server has no "
                              "model repository (its host set no repository callbacks)");
  if (rc == 0 && plan(st) != 0) rc = bad(u, ISV_ENOMEM, "out of memory");
  if (rc == 0) {
    st->call = u->call; /* not kept yet: the answer below ends what finishes at once */
    st->who = isv__grpc_unary_caller(u);
    pump(st);
    if (st->inflight) { /* the rest comes later: the call is kept until then */
      u->keep = (isv__grpc_keep){.end = call_over, .data = st};
      return 0;
    }
    if (st->failed) rc = bad(u, st->failed, st->msg);
    else isv__buf_append(u->out, "\x0a\x00", 2);
  }
  reload_free(st);
  return rc;
}
