/* V2 infer request JSON → canonical request (→ validation → response encoding of the inputs).
 * Must never crash, leak or hang; any input either decodes or fails with a message. */
#include <stdlib.h>
#include <string.h>

#include "core/request.h"
#include "core_fixture.h"
#include "protocol/v2_json.h"


/* The same body read twice in a row reads the same: the second time, what v2_json.c remembers
 * of its inputs' members before "data" (a memo kept per thread, left by the first reading or by
 * an earlier input) stands in for reading them. Aborts on any difference. */
static void same_twice(const uint8_t *data, size_t size, const isv_request *r, int rc) {
  char *body = malloc(size ? size : 1);
  if (size) memcpy(body, data, size);
  isv_request *q = isv_fuzz_request();
  int qrc = isv__v2_decode_request(q, body, size, size, 64);
  if (qrc != rc || strcmp(q->errmsg, r->errmsg) != 0 || q->n_inputs != r->n_inputs) abort();
  for (size_t i = 0; i < r->n_inputs; i++) {
    const isv_tensor *a = &r->inputs[i], *b = &q->inputs[i];
    if (strcmp(a->name, b->name) != 0 || a->dt != b->dt || a->ndim != b->ndim ||
        a->count != b->count || a->byte_size != b->byte_size ||
        memcmp(a->shape, b->shape, a->ndim * sizeof *a->shape) != 0)
      abort();
    if (a->dt != ISV_BYTES && a->byte_size && memcmp(a->data, b->data, a->byte_size) != 0)
      abort();
  }
  isv_request_free(q);
  free(body);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *body = malloc(size ? size : 1);
  if (size) memcpy(body, data, size);
  isv_request *r = isv_fuzz_request();
  int rc = isv__v2_decode_request(r, body, size, size, 64);
  same_twice(data, size, r, rc);
  if (rc == 0) {
    if (r->errmsg == NULL) abort();
    isv__request_validate(r);
    /* Echo the decoded inputs as outputs: exercises the writer on every datatype, including
     * BYTES that came out of JSON escapes. */
    r->outputs = r->inputs;
    r->n_outputs = r->n_inputs;
    isv__buf b, again;
    isv__buf_init(&b, NULL);
    isv__buf_init(&again, NULL);
    isv__v2_binpart *parts;
    size_t n_parts;
    int erc = isv__v2_encode_response(r, &b, &parts, &n_parts);
    /* written again, the answer's beginnings come from what v2_json.c remembers of the first
     * writing: the same text */
    if (isv__v2_encode_response(r, &again, &parts, &n_parts) != erc ||
        (erc == 0 && (b.len != again.len || memcmp(b.data, again.data, b.len) != 0)))
      abort();
    isv__buf_free(&b);
    isv__buf_free(&again);
    r->outputs = NULL;
    r->n_outputs = 0;
  } else if (r->status >= 0 || r->errmsg == NULL || r->errmsg[0] == '\0') {
    abort(); /* every failure must carry a code and a message */
  }
  isv_request_free(r);
  free(body);
  return 0;
}
