/* Model warmup's samples as a model config holds them (Triton's model_warmup; the public
 * isv_model_config_add_warmup* live in core/warmup.c, with the runs): their shape, and the
 * copy, release and registration check the registry makes of them. Below the registry, which
 * holds them opaque. Any thread, one config at a time. */
#ifndef ISV_CORE_WARMUP_CFG_H
#define ISV_CORE_WARMUP_CFG_H

#include "core/layer.h"

#include <stddef.h>
#include <stdint.h>

#include "codec/mem.h"
#include "inferserve.h"

typedef struct isv__warmup_input {
  char *name;
  isv_datatype dt;
  int64_t *dims; /* without the batch dimension */
  size_t ndim;
  isv_warmup_fill fill;
  void *data; /* ISV_WARMUP_DATA's bytes (BYTES: the raw u32-length form); NULL otherwise */
  size_t byte_size;
} isv__warmup_input;

typedef struct isv__warmup {
  char *name;
  uint32_t batch_size; /* >= 1 */
  uint32_t count;      /* rounds; 0 counts as 1 */
  isv__warmup_input *inputs;
  size_t n_inputs;
} isv__warmup;

/* An input's fields, copied from mem (its name, dims, data). 0, or ISV_ENOMEM (in untouched). */
int isv__warmup_input_set(const isv_mem *mem, isv__warmup_input *in, const char *name,
                          isv_datatype dt, const int64_t *dims, size_t ndim,
                          isv_warmup_fill fill, const void *data, size_t byte_size);
/* n samples and their inputs. */
void isv__warmups_free(isv__warmup *v, size_t n);
/* A deep copy of v[0..n) from mem in *out (NULL when n is 0). 0, or ISV_ENOMEM. */
int isv__warmups_copy(const isv_mem *mem, const isv__warmup *v, size_t n, isv__warmup **out);
/* What isv__registry_check refuses (ISV_EINVAL, why filled): a sample with sequence batching,
 * a batch_size above 1 without batching or above max_batch. */
int isv__warmups_check(const isv__warmup *v, size_t n, uint32_t max_batch, int sequences,
                       char *why, size_t cap);

#endif
