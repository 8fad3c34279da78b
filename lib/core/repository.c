/* The model repository extension's core side (repository.h): the hidden model that runs the
 * host's load and unload, and the index. */
#include "core/repository.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/utf8.h"
#include "core/group.h"
#include "core/request.h"
#include "core/queries.h"

/* ---- operations ---------------------------------------------------------------------------- */

static void repo_destroy(void *user) {
  isv__repo *rp = user;
  if (rp->core->repo == rp) rp->core->repo = NULL;
  isv__free(rp);
}

int isv__repo_attach(isv__core *c, const isv_repository *repo, char *why, size_t cap) {
  const char *bad = NULL;
  if (c->repo) {
    if (why) snprintf(why, cap, "set repository: already set");
    return ISV_ESTATE;
  }
  if (repo == NULL) bad = "no repository";
  else if (repo->struct_size < offsetof(isv_repository, unload) + sizeof repo->unload)
    bad = "struct_size too small (set it to sizeof(isv_repository))";
  else if (repo->load == NULL || repo->unload == NULL)
    bad = "load and unload callbacks are required";
  if (bad) {
    if (why) snprintf(why, cap, "set repository: %s", bad);
    return ISV_EINVAL;
  }
  isv__repo *rp = isv__calloc(c->mem, 1, sizeof *rp);
  if (rp == NULL) {
    if (why) snprintf(why, cap, "set repository: %s", isv_strerror(ISV_ENOMEM));
    return ISV_ENOMEM;
  }
  size_t n = repo->struct_size < sizeof rp->cb ? repo->struct_size : sizeof rp->cb;
  memcpy(&rp->cb, repo, n);
  rp->cb.struct_size = sizeof rp->cb;
  rp->core = c;
  /* the backend starts the host's work and returns; one operation at a time */
  isv__hidden_model h = {
      .name = ISV__REPO_MODEL,
      .platform = "model_repository",
      .mode = ISV_EXEC_ASYNC,
      .instances = 1,
      .backend = {.struct_size = sizeof h.backend, .infer = isv__repo_infer,
                  .destroy = repo_destroy},
      .user = rp,
  };
  int rc = isv__group_add_hidden(c, &h, &rp->model);
  if (rc != 0) {
    isv__free(rp);
    if (why) snprintf(why, cap, "set repository: %s", isv_strerror(rc));
    return rc;
  }
  c->repo = rp;
  return 0;
}

isv__repo_op *isv__repo_request(isv_request *r, isv__repo_action action) {
  isv__repo_op *op = isv__arena_calloc(&r->arena, 1, sizeof *op);
  if (op == NULL) {
    isv__request_fail(r, ISV_ENOMEM, "out of memory");
    return NULL;
  }
  op->action = action;
  r->repo_op = op;
  return op;
}

int isv__repo_bind(isv_request *r) {
  isv__repo *rp = r->core->repo;
  if (rp == NULL) return isv__request_fail(r, ISV_EUNAVAIL, "%s", ISV__REPO_NOT_ALLOWED);
  isv__model_ref(rp->model);
  r->model = rp->model;
  return 0;
}

int isv__repo_infer(isv_request *r, void *user) {
  isv__repo *rp = user;
  const isv__repo_op *op = r->repo_op;
  if (op == NULL || op->name == NULL) /* only a decoded operation is ever bound to the model */
    return isv_request_complete(r, ISV_EINTERNAL, "a repository operation without a model name");
  /* the op handed to the host is the request: its completion is isv_request_complete's */
  if (op->action == ISV__REPO_LOAD)
    rp->cb.load(rp->cb.user, (isv_repository_op *)(void *)r, op->name, op->config);
  else
    rp->cb.unload(rp->cb.user, (isv_repository_op *)(void *)r, op->name, op->unload_dependents);
  return 0;
}

ISV_EXTERN int isv_repository_op_complete(isv_repository_op *op, int status, const char *message) {
  if (op == NULL) return ISV_EINVAL;
  return isv_request_complete((isv_request *)(void *)op, status, message);
}

/* ---- the index ------------------------------------------------------------------------------ */

/* A copy of s in the index's arena that is valid UTF-8 (when s is not, every byte >= 0x80
 * becomes '?': names and reasons go into JSON and proto3 strings). */
static const char *text(isv_repository_list *ix, const char *s) {
  size_t n = strlen(s);
  char *p = isv__arena_strndup(&ix->arena, s, n);
  if (p == NULL) {
    ix->failed = 1;
    return NULL;
  }
  if (!isv__utf8_valid(p, n))
    for (size_t i = 0; i < n; i++)
      if ((unsigned char)p[i] >= 0x80) p[i] = '?';
  return p;
}

static void push(isv_repository_list *ix, const char *name, const char *version,
                 const char *state, const char *reason) {
  if (ix->failed) return;
  if (ix->n == ix->cap) {
    size_t cap = ix->cap ? 2 * ix->cap : 32;
    isv__repo_entry *v = isv__realloc(ix->core->mem, ix->v, cap * sizeof *v);
    if (v == NULL) {
      ix->failed = 1;
      return;
    }
    ix->v = v;
    ix->cap = cap;
  }
  isv__repo_entry e = {text(ix, name), version ? text(ix, version) : NULL, state,
                       reason[0] ? text(ix, reason) : ""};
  if (ix->failed) return;
  ix->v[ix->n++] = e;
}

static void add_versions(isv__model_entry *e, void *data) {
  isv_repository_list *ix = data;
  char why[512]; /* the library's own reason (a failed warmup: core/warmup.h), if any */
  for (const isv_model *m = e->versions; m; m = m->next)
    if (!ix->ready_only || m->state == ISV_MODEL_READY) {
      if (m->state == ISV_MODEL_READY) why[0] = '\0';
      else isv__model_reason(m, why, sizeof why);
      push(ix, e->name, m->version, isv__model_state_name(m->state), why);
    }
}

ISV_EXTERN int isv_repository_list_add(isv_repository_list *out, const char *name,
                                       const char *reason) {
  if (out == NULL || name == NULL || name[0] == '\0') return ISV_EINVAL;
  /* a host's model is not loaded, so never ready; a registered one has the registry's state
   * (caught up with the group by isv__repo_index, which calls the host's list) */
  if (out->ready_only || isv__registry_visible(&out->core->reg, name, strlen(name)) != NULL)
    return 0;
  push(out, name, NULL, reason ? "UNAVAILABLE" : NULL, reason ? reason : "");
  return out->failed ? ISV_ENOMEM : 0;
}

static int entry_cmp(const void *a, const void *b) {
  const isv__repo_entry *x = a, *y = b;
  int c = strcmp(x->name, y->name);
  if (c != 0) return c;
  if (x->version == NULL || y->version == NULL) /* the host's: no version */
    return x->version ? 1 : y->version ? -1 : 0;
  return isv__version_cmp(x->version, y->version);
}

int isv__repo_index(isv__core *c, int ready_only, isv_repository_list *ix) {
  memset(ix, 0, sizeof *ix);
  ix->core = c;
  ix->arena.bufs = &c->bufs;
  ix->ready_only = ready_only;
  isv__registry_foreach(isv__core_models(c), add_versions, ix);
  if (c->repo && c->repo->cb.list) c->repo->cb.list(c->repo->cb.user, ix);
  if (ix->failed) {
    isv__repo_index_free(ix);
    return ISV_ENOMEM;
  }
  if (ix->n > 1) qsort(ix->v, ix->n, sizeof *ix->v, entry_cmp);
  /* a name the host added twice: once */
  size_t k = 0;
  for (size_t i = 0; i < ix->n; i++) {
    if (k && ix->v[i].version == NULL && strcmp(ix->v[k - 1].name, ix->v[i].name) == 0) continue;
    ix->v[k++] = ix->v[i];
  }
  ix->n = k;
  return 0;
}

void isv__repo_index_free(isv_repository_list *ix) {
  isv__arena_free(&ix->arena);
  isv__free(ix->v);
  ix->v = NULL;
  ix->n = ix->cap = 0;
}
