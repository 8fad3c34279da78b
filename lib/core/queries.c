/* The queries every front end asks the core (queries.h). Written once here so that no protocol
 * keeps a copy of a rule (they drifted when they did). */
#include "core/queries.h"

#include <string.h>

#include "core/group.h"
#include "core/watch.h"

static void ready_one(isv__model_entry *e, void *data) {
  for (isv_model *m = e->versions; m; m = m->next)
    if (m->state != ISV_MODEL_READY) *(int *)data = 0;
}

int isv__core_online(const isv__core *c) { return isv__group_online(c); }

void isv__core_set_online(isv__core *c, int online) {
  isv__group_set_online(c, online); /* the other members hear it through their wake */
  isv__core_readiness_changed(c);
}

int isv__core_ready(isv__core *c) {
  if (!isv__core_online(c) || c->closing) return 0;
  if (!c->opts.strict_readiness) return 1;
  int ok = 1;
  isv__registry_foreach(isv__core_models(c), ready_one, &ok);
  return ok;
}


unsigned isv__core_protocol(isv__core *c, const char *label) {
  return isv__group_protocol(c, label); /* one index for every member's statistics */
}

int isv__core_closing(const isv__core *c) { return c->closing; }

int isv__core_model_ready(const isv__core *c, const isv_model *m) {
  return m->state == ISV_MODEL_READY && !m->removed && isv__core_online(c) && !c->closing;
}

isv__registry *isv__core_models(isv__core *c) {
  isv__group_sync(c);
  return &c->reg;
}

isv__why isv__core_resolve(isv__core *c, const isv__model_spec *ref, isv_model **out) {
  *out = NULL;
  const isv__model_entry *e = isv__registry_visible(isv__core_models(c), ref->name, ref->name_len);
  if (e == NULL) return ISV__NO_MODEL;
  if (ref->label) *out = isv__entry_label(e, ref->label, ref->label_len);
  else if (ref->version) *out = isv__entry_version(e, ref->version, ref->version_len);
  else *out = isv__entry_default(e); /* an entry has a version: it goes with its last one */
  if (*out) return ISV__FOUND;
  return ref->label ? ISV__NO_LABEL : ISV__NO_VERSION;
}

int isv__core_fail_why(isv_request *r, isv__why why, const isv__model_spec *spec) {
  char msg[512];
  int code = isv__why_say(why, ISV__WORDS_KSERVE, spec, msg, sizeof msg);
  return isv__request_fail(r, code, "%s", msg);
}

