/* Triton's generate request (a flat JSON object) → canonical request → the generate response of
 * its inputs. Must never crash, leak or hang; any input either decodes or fails with a code and
 * a message. The fixture's model has INPUT0 INT32 [-1,-1] (two free dimensions: the generate
 * form cannot shape it, always an error) and INPUT1 BYTES [-1]. */
#include <stdlib.h>
#include <string.h>

#include "core/request.h"
#include "core_fixture.h"
#include "protocol/v2_generate.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *body = malloc(size ? size : 1);
  if (size) memcpy(body, data, size);
  isv_request *r = isv_fuzz_request();
  if (isv__v2gen_decode_request(r, body, size, 64) == 0) {
    isv__request_validate(r);
    r->outputs = r->inputs; /* echo: the encoder on what the decoder produced */
    r->n_outputs = r->n_inputs;
    isv__buf b;
    isv__buf_init(&b, NULL);
    isv__v2gen_encode_response(r, &b);
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
