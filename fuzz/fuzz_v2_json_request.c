/* V2 infer request JSON → canonical request (→ validation → response encoding of the inputs).
 * Must never crash, leak or hang; any input either decodes or fails with a message. */
#include <stdlib.h>
#include <string.h>

#include "core/request.h"
#include "core_fixture.h"
#include "protocol/v2_json.h"


int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *body = malloc(size ? size : 1);
  if (size) memcpy(body, data, size);
  isv_request *r = isv_fuzz_request();
  if (isv__v2_decode_request(r, body, size, size, 64) == 0) {
    if (r->errmsg == NULL) abort();
    isv__request_validate(r);
    /* Echo the decoded inputs as outputs: exercises the writer on every datatype, including
     * BYTES that came out of JSON escapes. */
    r->outputs = r->inputs;
    r->n_outputs = r->n_inputs;
    isv__buf b;
    isv__buf_init(&b, NULL);
    isv__v2_binpart *parts;
    size_t n_parts;
    isv__v2_encode_response(r, &b, &parts, &n_parts);
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
