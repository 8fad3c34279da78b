/* See trace.h. */
#include "protocol/trace.h"

#include <string.h>
#include <strings.h>

#include "codec/tracectx.h"

static int named(const isv__header *h, const char *name, size_t len) {
  return h->name_len == len && strncasecmp(h->name, name, len) == 0;
}

void isv__trace_from_headers(isv_request *r, const isv__header *headers, size_t n) {
  /* two traceparents: which one? neither (the spec) */
  const isv__header *tp = isv__header_one(headers, n, "traceparent", 11);
  if (tp == NULL) return;
  char state[ISV__TRACESTATE_MAX + 1];
  size_t state_len = 0;
  int states = 0, too_long = 0;
  for (size_t i = 0; i < n; i++) {
    const isv__header *h = &headers[i];
    if (named(h, "tracestate", 10)) {
      size_t add = h->value_len + (states ? 1 : 0);
      if (state_len + add > ISV__TRACESTATE_MAX) {
        too_long = 1;
        continue;
      }
      if (states) state[state_len++] = ',';
      memcpy(state + state_len, h->value, h->value_len);
      state_len += h->value_len;
      states++;
    }
  }
  /* a tracestate that cannot be kept goes alone: the traceparent still counts */
  if (states && !too_long &&
      isv__request_trace(r, tp->value, tp->value_len, state, state_len) == 0)
    return;
  isv__request_trace(r, tp->value, tp->value_len, NULL, 0);
}
