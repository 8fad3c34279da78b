/* Triton's trace extension's codecs (protocol/v2_trace.c): the first byte picks a JSON body or a
 * TraceSettingRequest; a change read is applied to a trace set (the global settings, or a
 * model's when the message names one) and the answer written in both encodings is read back:
 * the protobuf answer as a request must give every setting as it applies, the JSON answer too.
 * A refusal must say why with one of its two codes. Any disagreement aborts. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "codec/buf.h"
#include "core/traceset.h"
#include "protocol/v2_trace.h"

static void same(const isv__trace_view *a, const isv__trace_change *ch) {
  unsigned all = ISV__TS_LEVEL | ISV__TS_RATE | ISV__TS_COUNT | ISV__TS_LOG_FREQUENCY | ISV__TS_FILE;
  if (ch->set != all || ch->clear != 0) abort();
  const isv__trace_view *b = &ch->v;
  if (a->timestamps != b->timestamps || a->rate != b->rate || a->count != b->count ||
      a->log_frequency != b->log_frequency || strcmp(a->file, b->file) != 0)
    abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0) return 0;
  int pb = data[0] & 1, sampled = (data[0] >> 1) & 1;
  data++, size--;
  char *body = malloc(size ? size : 1); /* exact size: reads past it are caught */
  if (size) memcpy(body, data, size);
  isv__trace_change ch;
  char err[256] = "", model[128] = "";
  int rc = pb ? isv__v2trace_parse_pb(&ch, model, sizeof model, data, size, err, sizeof err)
              : isv__v2trace_parse_json(&ch, body, size, 64, err, sizeof err);
  if (rc != 0) {
    if ((rc != ISV_EBADREQ && rc != ISV_EUNIMPL) || err[0] == '\0') abort();
    free(body);
    return 0;
  }
  if (ch.set & ch.clear) abort(); /* a setting is set or cleared, never both */
  isv__traceset s;
  if (isv__traceset_init(&s, NULL) != 0) abort();
  isv__traceset_seed(&s, NULL, 1, 1);
  isv__trace_view v, got;
  if (isv__traceset_apply(&s, model[0] ? model : NULL, &ch, &v) != 0) abort();
  isv__traceset_get(&s, model[0] ? model : NULL, &got);
  if (memcmp(&v, &got, sizeof v) != 0) abort();
  (void)isv__traceset_sample(&s, model[0] ? model : "other", sampled, &got);
  /* the answers, read back as requests: every setting as it applies */
  isv__buf b;
  isv__buf_init(&b, NULL);
  isv__v2trace_write_pb(&v, &b);
  if (b.failed) abort();
  isv__trace_change back;
  if (isv__v2trace_parse_pb(&back, NULL, 0, (const uint8_t *)b.data, b.len, err, sizeof err) != 0)
    abort();
  same(&v, &back);
  b.len = 0;
  isv__v2trace_write_json(&v, &b);
  if (b.failed) abort();
  if (isv__v2trace_parse_json(&back, b.data, b.len, 64, err, sizeof err) != 0) abort();
  same(&v, &back);
  isv__buf_free(&b);
  isv__traceset_destroy(&s);
  free(body);
  return 0;
}
