/* The words for why a model cannot be served: one table, a cell per (reason, wording). */
#include "core/resolve.h"

#include <stdio.h>
#include <string.h>

/* A cell: the code, the text ({model}, {version}, {label} are the spec's, each cut to the
 * column's limits), and, where the protocol words a request for a version differently, the
 * text for a spec that names one. */
typedef struct words {
  int code;
  const char *text;
  const char *versioned; /* NULL: text */
} words;

/* The longest name and version or label a column quotes (what its texts always cut at). */
static const struct {
  int name, other;
} limits[ISV__N_WORDINGS] = {
    [ISV__WORDS_KSERVE] = {200, 200},
    [ISV__WORDS_TFS] = {128, 200},
    [ISV__WORDS_API] = {100, 60},
};

static const words table[ISV__N_WHY][ISV__N_WORDINGS] = {
    [ISV__NO_MODEL] = {
        [ISV__WORDS_KSERVE] = {ISV_ENOTFOUND, "Request for unknown model: '{model}' is not found",
                               NULL},
        [ISV__WORDS_TFS] = {ISV_ENOTFOUND, "Servable not found for request: Latest({model})",
                            "Servable not found for request: Specific({model}, {version})"},
        [ISV__WORDS_API] = {ISV_ENOTFOUND, "no model '{model}' is registered", NULL},
    },
    [ISV__NO_VERSION] = {
        [ISV__WORDS_KSERVE] = {ISV_ENOTFOUND,
                               "Request for unknown model: '{model}' version {version} is not "
                               "found", NULL},
        [ISV__WORDS_TFS] = {ISV_ENOTFOUND,
                            "Servable not found for request: Specific({model}, {version})", NULL},
        [ISV__WORDS_API] = {ISV_ENOTFOUND, "model '{model}' has no version '{version}'", NULL},
    },
    [ISV__NO_LABEL] = {
        [ISV__WORDS_KSERVE] = {ISV_ENOTFOUND, "unknown label '{label}' of model '{model}'", NULL},
        /* TF Serving answers an unknown label 400, not 404 */
        [ISV__WORDS_TFS] = {ISV_EBADREQ, "Unrecognized servable version label: {label}", NULL},
        [ISV__WORDS_API] = {ISV_ENOTFOUND, "model '{model}' has no label '{label}'", NULL},
    },
    [ISV__NOT_READY] = {
        [ISV__WORDS_KSERVE] = {ISV_EUNAVAIL, "model '{model}' version '{version}' is not ready",
                               NULL},
        [ISV__WORDS_TFS] = {ISV_EUNAVAIL, "model '{model}' version '{version}' is not ready",
                            NULL},
        [ISV__WORDS_API] = {ISV_EUNAVAIL, "model '{model}' version '{version}' is not ready",
                            NULL},
    },
};

/* Append s[0..n) (cut at max) to buf. */
static void put(char *buf, size_t cap, size_t *len, const char *s, size_t n, int max) {
  if (s == NULL) s = "", n = 0;
  if (n > (size_t)max) n = (size_t)max;
  if (*len + 1 >= cap) return;
  if (n > cap - 1 - *len) n = cap - 1 - *len;
  memcpy(buf + *len, s, n);
  *len += n;
  buf[*len] = '\0';
}

int isv__why_say(isv__why why, isv__wording w, const isv__model_spec *spec, char *buf,
                 size_t cap) {
  if (cap == 0) return ISV_ENOTFOUND;
  buf[0] = '\0';
  if (why <= ISV__FOUND || why >= ISV__N_WHY || w < 0 || w >= ISV__N_WORDINGS) return 0;
  const words *c = &table[why][w];
  const char *t = spec->version && c->versioned ? c->versioned : c->text;
  size_t len = 0;
  while (*t) {
    const char *open = strchr(t, '{');
    if (open == NULL) {
      put(buf, cap, &len, t, strlen(t), (int)strlen(t));
      break;
    }
    put(buf, cap, &len, t, (size_t)(open - t), (int)(open - t));
    const char *close = strchr(open, '}');
    size_t k = (size_t)(close - open - 1);
    if (k == 5 && memcmp(open + 1, "model", 5) == 0)
      put(buf, cap, &len, spec->name, spec->name_len, limits[w].name);
    else if (k == 7 && memcmp(open + 1, "version", 7) == 0)
      put(buf, cap, &len, spec->version, spec->version_len, limits[w].other);
    else /* {label} */
      put(buf, cap, &len, spec->label, spec->label_len, limits[w].other);
    t = close + 1;
  }
  return c->code;
}
