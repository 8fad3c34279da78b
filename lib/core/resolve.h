/* Why a model a client named cannot be served (isv__why, core.h), in each protocol's words: one
 * table, a column per wording, as codec/datatype.h has a column per protocol for datatype
 * names. A front end asks the core (isv__core_resolve) and words the reason with its column,
 * never a text of its own: the copies drifted when they were written per front end. */
#ifndef ISV_CORE_RESOLVE_H
#define ISV_CORE_RESOLVE_H

#include "core/layer.h"

#include <stddef.h>

#include "core/core.h"

typedef enum isv__wording {
  ISV__WORDS_KSERVE, /* V2 REST and gRPC, Vertex, grps, and every protocol's inference
                      * (isv__request_bind): Triton's texts, which clients match on */
  ISV__WORDS_TFS,    /* TensorFlow Serving REST: "Servable not found for request: ..." */
  ISV__WORDS_API,    /* the in-process API (isv_server_last_error) */
  ISV__N_WORDINGS
} isv__wording;

/* why (not ISV__FOUND) for spec, in wording w's text, into buf (NUL-terminated, truncated to
 * cap); returns the ISV_E* code to answer with (its HTTP and gRPC statuses: ISV_ERRNO_MAP). */
int isv__why_say(isv__why why, isv__wording w, const isv__model_spec *spec, char *buf,
                 size_t cap);

#endif
