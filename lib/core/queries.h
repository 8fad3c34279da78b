/* The queries every front end asks the core, one rule each for every protocol: is the server
 * online and ready, is a model version ready, which version does (name, version or label)
 * mean — and why not (worded from resolve.h's table) — and the protocol labels requests are
 * counted under. Every answer is the group's as it is now: a member catches up with its group
 * (core/group.h) here, and in the scheduler's submit, nowhere else. Loop thread. */
#ifndef ISV_CORE_QUERIES_H
#define ISV_CORE_QUERIES_H

#include "core/layer.h"

#include "core/request.h"
#include "core/resolve.h"

/* Online (isv_server_set_online, grps's online/offline): the group's, so that taking one
 * member offline drains the whole process. */
int isv__core_online(const isv__core *c);
void isv__core_set_online(isv__core *c, int online);

/* Server readiness (PROTOCOLS.md section 1): online and not closing; with strict readiness,
 * also every registered model version READY (of the group's models as they are now). */
int isv__core_ready(isv__core *c);
/* The server's close has begun (isv_server_close): nothing is ready any more, for good. */
int isv__core_closing(const isv__core *c);
/* A model version's readiness as reported to clients: READY, registered, and the server
 * online and not closing. (Requests are served offline too: offline only drains.) */
int isv__core_model_ready(const isv__core *c, const isv_model *m);

/* The index of a protocol label for requests and their statistics, added on first use (the
 * label is not copied: a static string). 0 ("inprocess") when the table is full. */
unsigned isv__core_protocol(isv__core *c, const char *label);

/* The model version spec names, as the group has it now (a change made on any member before
 * this call counts: the member catches up here first). ISV__FOUND and *out, or why not (*out
 * NULL). The model is not referenced: use it before returning to the loop. */
isv__why isv__core_resolve(isv__core *c, const isv__model_spec *spec, isv_model **out);

/* The registry, caught up with the group: every reader of the models (listings, metrics,
 * strict readiness, the repository's index) gets it here. Loop thread. */
isv__registry *isv__core_models(isv__core *c);
/* Fail r for why, in the words every protocol's inference answers with (KServe's). Returns the
 * request's status. */
int isv__core_fail_why(isv_request *r, isv__why why, const isv__model_spec *spec);


#endif
