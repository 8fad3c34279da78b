/* Model warmup's samples in a model config (core/warmup_cfg.h). */
#include "core/warmup_cfg.h"

#include <stdio.h>
#include <string.h>

static char *dup(const isv_mem *mem, const char *s) {
  size_t n = strlen(s) + 1;
  char *d = isv__malloc(mem, n);
  if (d) memcpy(d, s, n);
  return d;
}

static void input_free(isv__warmup_input *in) {
  isv__free(in->name);
  isv__free(in->dims);
  isv__free(in->data);
}

int isv__warmup_input_set(const isv_mem *mem, isv__warmup_input *in, const char *name,
                          isv_datatype dt, const int64_t *dims, size_t ndim,
                          isv_warmup_fill fill, const void *data, size_t byte_size) {
  isv__warmup_input t = {0};
  t.name = dup(mem, name);
  t.dims = isv__malloc(mem, (ndim ? ndim : 1) * sizeof *dims);
  t.data = byte_size ? isv__malloc(mem, byte_size) : NULL;
  if (t.name == NULL || t.dims == NULL || (byte_size && t.data == NULL)) {
    input_free(&t);
    return ISV_ENOMEM;
  }
  if (ndim) memcpy(t.dims, dims, ndim * sizeof *dims);
  if (byte_size) memcpy(t.data, data, byte_size);
  t.dt = dt;
  t.ndim = ndim;
  t.fill = fill;
  t.byte_size = byte_size;
  *in = t;
  return 0;
}

void isv__warmups_free(isv__warmup *v, size_t n) {
  for (size_t i = 0; v && i < n; i++) {
    for (size_t k = 0; k < v[i].n_inputs; k++) input_free(&v[i].inputs[k]);
    isv__free(v[i].inputs);
    isv__free(v[i].name);
  }
  isv__free(v);
}

int isv__warmups_copy(const isv_mem *mem, const isv__warmup *v, size_t n, isv__warmup **out) {
  *out = NULL;
  if (n == 0) return 0;
  isv__warmup *d = isv__calloc(mem, n, sizeof *d);
  if (d == NULL) return ISV_ENOMEM;
  for (size_t i = 0; i < n; i++) {
    d[i].batch_size = v[i].batch_size;
    d[i].count = v[i].count;
    if ((d[i].name = dup(mem, v[i].name)) == NULL ||
        (v[i].n_inputs && (d[i].inputs = isv__calloc(mem, v[i].n_inputs, sizeof *d[i].inputs)) == NULL))
      goto oom;
    for (size_t k = 0; k < v[i].n_inputs; k++) {
      const isv__warmup_input *in = &v[i].inputs[k];
      if (isv__warmup_input_set(mem, &d[i].inputs[k], in->name, in->dt, in->dims, in->ndim,
                                in->fill, in->data, in->byte_size) != 0)
        goto oom;
      d[i].n_inputs++;
    }
  }
  *out = d;
  return 0;
oom:
  isv__warmups_free(d, n);
  return ISV_ENOMEM;
}

int isv__warmups_check(const isv__warmup *v, size_t n, uint32_t max_batch, int sequences,
                       char *why, size_t cap) {
  for (size_t i = 0; i < n; i++) {
    if (sequences) {
      if (why) snprintf(why, cap, "model warmup does not combine with sequence batching (a "
                        "sequence's requests need its control parameters)");
      return ISV_EINVAL;
    }
    uint32_t max = max_batch ? max_batch : 1;
    if (v[i].batch_size > max) {
      if (why) snprintf(why, cap, "warmup sample '%s': batch_size %u is above the model's %s %u",
                        v[i].name, (unsigned)v[i].batch_size,
                        max_batch ? "max_batch_size" : "batch size without batching",
                        (unsigned)max);
      return ISV_EINVAL;
    }
  }
  return 0;
}
