/* The comparison of v2_json_same.h. */
#include "v2_json_same.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static int differ(char *why, size_t why_len, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  if (why_len) vsnprintf(why, why_len, fmt, ap);
  va_end(ap);
  return 0;
}

static int same_elements(const isv_tensor *a, const isv_tensor *b) {
  if (a->dt != ISV_BYTES) return a->byte_size == 0 || memcmp(a->data, b->data, a->byte_size) == 0;
  const isv_bytes *x = a->data, *y = b->data;
  for (size_t k = 0; k < a->count; k++)
    if (x[k].len != y[k].len || (x[k].len && memcmp(x[k].ptr, y[k].ptr, x[k].len) != 0)) return 0;
  return 1;
}

int isv_v2_json_same(const isv_request *a, int arc, const isv_request *b, int brc, char *why,
                     size_t why_len) {
  if (arc != brc || strcmp(a->errmsg, b->errmsg) != 0 || a->n_inputs != b->n_inputs)
    return differ(why, why_len, "%d '%s' (%zu inputs) against %d '%s' (%zu)", arc, a->errmsg,
                  a->n_inputs, brc, b->errmsg, b->n_inputs);
  for (size_t i = 0; i < a->n_inputs; i++) {
    const isv_tensor *x = &a->inputs[i], *y = &b->inputs[i];
    if (strcmp(x->name, y->name) != 0 || x->dt != y->dt || x->ndim != y->ndim ||
        x->count != y->count || x->byte_size != y->byte_size ||
        (x->ndim && memcmp(x->shape, y->shape, x->ndim * sizeof *x->shape) != 0))
      return differ(why, why_len, "input %zu differs ('%s' against '%s')", i, x->name, y->name);
    if (!same_elements(x, y)) return differ(why, why_len, "input %zu's elements differ", i);
  }
  return 1;
}
