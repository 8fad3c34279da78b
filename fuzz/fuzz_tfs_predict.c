/* TF Serving predict JSON (row and columnar) → canonical request → both answer formats of the
 * decoded inputs. The first byte picks the model — bit 0: a one-input BYTES model (bare values,
 * {"b64"} objects, {"x": ...}) or the two-input one (instances by name) — bit 1 Vertex AI's
 * body (parameters, extra keys), bit 2 a classify/regress body (examples, context). Must never
 * crash, leak or hang; any input either decodes or fails with a code and a message. */
#include <stdlib.h>
#include <string.h>

#include "core/request.h"
#include "core_fixture.h"
#include "protocol/tfs_json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0) return 0;
  int one = data[0] & 1;
  unsigned flags = data[0] & 2 ? ISV__TFS_VERTEX : 0;
  data++;
  size--;
  char *body = malloc(size ? size : 1);
  if (size) memcpy(body, data, size);
  isv_request *r = one ? isv_fuzz_request_one() : isv_fuzz_request();
  int row = -1;
  int examples = (data[-1] & 4) != 0;
  const isv__signature *sig;
  int rc = examples ? isv__tfs_decode_examples(r, body, size, 64, ISV_SIGNATURE_CLASSIFY, &sig)
                    : isv__tfs_decode_predict(r, body, size, 64, flags, &row, &sig);
  if (examples) row = 1;
  if (rc == 0) {
    if (r->status != 0 || (row != 0 && row != 1)) abort();
    isv__request_validate(r);
    r->outputs = r->inputs; /* echo: the encoder on what the decoder produced */
    r->n_outputs = r->n_inputs;
    char msg[256];
    for (int f = 0; f < 2; f++) {
      isv__buf b;
      isv__buf_init(&b, NULL);
      isv__tfs_encode_predict(r, sig, f, flags ? "1" : NULL, &b, msg, sizeof msg);
      isv__buf_free(&b);
      isv__buf_init(&b, NULL);
      if (f) isv__tfs_encode_classify(r, sig, &b, msg, sizeof msg);
      else isv__tfs_encode_regress(r, sig, &b, msg, sizeof msg);
      isv__buf_free(&b);
    }
    r->outputs = NULL;
    r->n_outputs = 0;
  } else if (r->status >= 0 || r->errmsg == NULL || r->errmsg[0] == '\0') {
    abort(); /* every failure must carry a code and a message */
  }
  isv_request_free(r);
  free(body);
  return 0;
}
