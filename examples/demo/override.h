/* The demo repository's config overrides (override.c): what a load's "config" parameter may
 * change, read from Triton's model configuration JSON. */
#ifndef INFERSERVE_DEMO_OVERRIDE_H
#define INFERSERVE_DEMO_OVERRIDE_H

#include <stddef.h>
#include <stdint.h>

typedef struct demo_override {
  int64_t max_batch;  /* "max_batch_size"; -1: not given */
  int response_cache; /* "response_cache": {"enable": b}: 1 or 0; -1: not given */
} demo_override;

/* Read json — one JSON object, as the library checked it — for model `model`: 0 with *out set,
 * or -1 with the reason in err (a field the demo cannot honour, a bad value, a "name" that is not
 * the model's). */
int demo_parse_override(const char *json, const char *model, demo_override *out, char *err,
                        size_t cap);

#endif
