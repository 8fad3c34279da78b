/* V2 infer request JSON → canonical request (→ validation → response encoding of the inputs).
 * Must never crash, leak or hang; any input either decodes or fails with a message. */
#include <stdlib.h>
#include <string.h>

#include "core/request.h"
#include "core_fixture.h"
#include "protocol/v2_json.h"
#include "v2_json_same.h"

/* What a server keeps of what its clients repeat (isv__v2_memo), across inputs as a server's
 * across requests. */
static isv__v2_memo memo;

/* The body read through the memo, twice (the second time its members before "data" are there,
 * when they may be kept), reads as r, read without it: aborts on any difference. */
static void same_through_memo(const uint8_t *data, size_t size, const isv_request *r, int rc) {
  for (int k = 0; k < 2; k++) {
    char *body = malloc(size ? size : 1);
    if (size) memcpy(body, data, size);
    isv_request *q = isv_fuzz_request();
    int qrc = isv__v2_decode_request(q, body, size, size, 64, &memo);
    if (!isv_v2_json_same(r, rc, q, qrc, NULL, 0)) abort();
    isv_request_free(q);
    free(body);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *body = malloc(size ? size : 1);
  if (size) memcpy(body, data, size);
  isv_request *r = isv_fuzz_request();
  int rc = isv__v2_decode_request(r, body, size, size, 64, NULL);
  same_through_memo(data, size, r, rc);
  if (rc == 0) {
    if (r->errmsg == NULL) abort();
    isv__request_validate(r);
    /* Echo the decoded inputs as outputs: exercises the writer on every datatype, including
     * BYTES that came out of JSON escapes. */
    r->outputs = r->inputs;
    r->n_outputs = r->n_inputs;
    isv__buf b, again;
    isv__buf_init(&b, NULL);
    isv__v2_binpart *parts;
    size_t n_parts;
    int erc = isv__v2_encode_response(r, &b, &parts, &n_parts, NULL);
    /* written through the memo, twice (the second time the answer's beginnings are there, when
     * they may be kept): the same text as without it */
    for (int k = 0; k < 2; k++) {
      isv__buf_init(&again, NULL);
      if (isv__v2_encode_response(r, &again, &parts, &n_parts, &memo) != erc ||
          (erc == 0 && (b.len != again.len || memcmp(b.data, again.data, b.len) != 0)))
        abort();
      isv__buf_free(&again);
    }
    isv__buf_free(&b);
    r->outputs = NULL;
    r->n_outputs = 0;
  } else if (r->status >= 0 || r->errmsg == NULL || r->errmsg[0] == '\0') {
    abort(); /* every failure must carry a code and a message */
  }
  isv_request_free(r);
  free(body);
  return 0;
}
