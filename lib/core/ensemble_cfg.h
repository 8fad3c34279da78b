/* An ensemble's steps as a model config holds them (Triton's ensemble_scheduling): data, a
 * deep copy and its end. Below the registry, which copies and frees configs; what the steps
 * mean — checks, indexing, running — is core/ensemble.h's, above the scheduler. */
#ifndef ISV_CORE_ENSEMBLE_CFG_H
#define ISV_CORE_ENSEMBLE_CFG_H

#include "core/layer.h"

#include <stddef.h>

#include "codec/mem.h"

typedef struct isv__ens_step {
  char *model;
  char *version; /* NULL: the model's default version (Triton's model_version -1) */
  char **in_keys, **in_vals; /* the step model's input <- the ensemble tensor */
  size_t n_in;
  char **out_keys, **out_vals; /* the step model's output -> the ensemble tensor */
  size_t n_out;
  unsigned *in_idx, *out_idx; /* the tensors' slots (indexed configs only) */
} isv__ens_step;

typedef struct isv__ens_cfg {
  const isv_mem *mem;
  isv__ens_step *steps;
  size_t n_steps;
  /* Indexed (core/ensemble.c, for a config that passed its checks): slot i of a request's
   * tensor table holds ensemble input i (i < the config's n_inputs), then each step's outputs
   * in step order; out_idx[j] (n_out_idx of them) is the slot of the ensemble's output j. */
  int indexed;
  unsigned n_tensors;
  unsigned *out_idx;
  size_t n_out_idx;
} isv__ens_cfg;

/* Append a step (strings copied from mem; maps as n pairs key, value). 0 or ISV_ENOMEM. */
int isv__ens_cfg_add_step(isv__ens_cfg *e, const char *model, const char *version,
                          const char *const *in, size_t n_in, const char *const *out,
                          size_t n_out);
/* A deep copy of e (its indices too) from mem. NULL for e NULL (*rc 0) or out of memory (*rc
 * ISV_ENOMEM). */
isv__ens_cfg *isv__ens_cfg_copy(const isv__ens_cfg *e, const isv_mem *mem, int *rc);
void isv__ens_cfg_free(isv__ens_cfg *e); /* NULL is a no-op */

#endif
