/* The model repository extension's core side (isv_server_set_repository): the host's callbacks,
 * the index (the registry's models and the host's list), and the load / unload operations.
 *
 * An operation is a request of a hidden model version "@repository" (open I/O, ISV_EXEC_ASYNC,
 * one instance) whose backend calls the host's load or unload: so an operation is queued (one
 * at a time, in arrival order), cancelled, timed out, drained on close and abandoned like any
 * request, and the host completes it from any thread through isv_request_complete — the
 * isv_repository_op handed to the host IS the request. Front ends decode a client's message
 * into the op (isv__repo_request), bind it like any request (isv__request_bind hands it to
 * isv__repo_bind) and answer it when it is done. Wire formats are the front ends'. Loop thread
 * only, but isv_repository_op_complete. */
#ifndef ISV_CORE_REPOSITORY_H
#define ISV_CORE_REPOSITORY_H

#include "core/layer.h"

#include <stddef.h>

#include "core/arena.h"
#include "inferserve.h"

struct isv__core;

/* The name of the hidden model that runs the operations. */
#define ISV__REPO_MODEL "@repository"

/* Triton's text for a server without model control (its clients match on the start). */
#define ISV__REPO_NOT_ALLOWED                                                                    \
  "explicit model load / unload is not allowed: this server has no model repository (its "     \
  "host set no repository callbacks)"

typedef enum { ISV__REPO_LOAD = 1, ISV__REPO_UNLOAD = 2 } isv__repo_action;

/* A load or unload a client asked for, decoded by a front end into its request's arena. */
typedef struct isv__repo_op {
  isv__repo_action action;
  const char *name;   /* NUL-terminated, no NUL inside; NULL until decoded */
  const char *config; /* load: the "config" parameter, a JSON object (NUL-terminated); NULL */
  int unload_dependents;
} isv__repo_op;

/* The host's repository (core->repo while set). Owned by the hidden model: freed by its
 * destroy, when the server's close unregisters it. */
typedef struct isv__repo {
  isv_repository cb; /* the host's table (only the fields this version knows) */
  struct isv__core *core;
  isv_model *model; /* ISV__REPO_MODEL */
} isv__repo;

/* Serve repo (copied): registers the hidden model and sets core->repo. ISV_ESTATE when one is
 * set already, ISV_EINVAL for a bad table, ISV_ENOMEM; why (cap bytes) says which. */
int isv__repo_attach(struct isv__core *c, const isv_repository *repo, char *why, size_t cap);

/* Make r an operation of `action`: its op, zeroed, in r's arena (r->repo_op). Call it before
 * decoding: r then runs the operation — or answers the server's lack of a repository —
 * whatever the decoder finds. NULL with r failed ISV_ENOMEM. */
isv__repo_op *isv__repo_request(isv_request *r, isv__repo_action action);
/* isv__request_bind of an operation (scheduler.c): r holds the hidden model, or fails ISV_EUNAVAIL
 * with ISV__REPO_NOT_ALLOWED when the server has no repository. */
int isv__repo_bind(isv_request *r);
/* The hidden model's infer: the host's load or unload. */
int isv__repo_infer(isv_request *r, void *user);

/* ---- the index -------------------------------------------------------------------------- */

typedef struct isv__repo_entry {
  const char *name;    /* valid UTF-8, NUL-terminated */
  const char *version; /* NULL: none (a model the host listed) */
  const char *state;   /* "READY", "UNAVAILABLE"...; NULL: the name alone */
  const char *reason;  /* "" when none */
} isv__repo_entry;

/* What list() fills (isv_repository_list is this struct). */
struct isv_repository_list {
  struct isv__core *core;
  isv__arena arena; /* the entries' strings */
  isv__repo_entry *v;
  size_t n, cap;
  int ready_only; /* only READY versions (the host's entries never are) */
  int failed;     /* out of memory: the index is incomplete */
};

/* The index: every registered (visible) model version, then the host's models that are not
 * registered, sorted by name and version; ready_only keeps the READY versions. 0, or ISV_ENOMEM
 * (ix freed). Free ix with isv__repo_index_free either way. */
int isv__repo_index(struct isv__core *c, int ready_only, isv_repository_list *ix);
void isv__repo_index_free(isv_repository_list *ix);

#endif
