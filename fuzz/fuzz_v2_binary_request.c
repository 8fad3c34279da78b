/* V2 infer request with Triton's binary tensor data extension: the first 2 input bytes give
 * the JSON part's length (as Inference-Header-Content-Length would), the rest is the body:
 * JSON, then binary tensors. Decoded inputs are echoed back as outputs, in binary when the
 * request asked for it, so the BYTES framing is read and written. Must never crash, leak or
 * hang; any input either decodes or fails with a code and a message. */
#include <stdlib.h>
#include <string.h>

#include "core/request.h"
#include "core_fixture.h"
#include "protocol/v2_json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 2) return 0;
  size_t json_len = (size_t)data[0] | (size_t)data[1] << 8;
  data += 2;
  size -= 2;
  if (json_len > size) json_len = size;
  /* The body lives at a deliberately odd address half the time: tensors must then be copied,
   * never read misaligned (UBSan watches). */
  size_t shift = json_len & 1;
  char *mem = malloc(size + shift + 1);
  char *body = mem + shift;
  if (size) memcpy(body, data, size);
  isv_request *r = isv_fuzz_request();
  if (isv__v2_decode_request(r, body, size, json_len, 64, NULL) == 0) {
    isv__request_validate(r);
    r->outputs = r->inputs;
    r->n_outputs = r->n_inputs;
    isv__buf b;
    isv__buf_init(&b, NULL);
    isv__v2_binpart *parts;
    size_t n_parts;
    if (isv__v2_encode_response(r, &b, &parts, &n_parts, NULL) == 0) {
      /* binary_data_output decides for every output (none says otherwise here). */
      if (n_parts != ((r->proto_flags & ISV__V2_REQ_BIN) ? r->n_outputs : 0)) abort();
      for (size_t i = 0; i < n_parts; i++)
        if (parts[i].len && parts[i].ptr == NULL) abort();
    }
    isv__buf_free(&b);
    r->outputs = NULL;
    r->n_outputs = 0;
  } else if (r->status >= 0 || r->errmsg == NULL || r->errmsg[0] == '\0') {
    abort();
  }
  isv_request_free(r);
  free(mem);
  return 0;
}
