/* Bytes from a client → the whole HTTP/1.1 server path (llhttp, limits, router, V2 frontend,
 * core, a real backend) → response bytes (see conn_harness.h). */
#include "conn_harness.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  isv_fuzz_serve(NULL, 0, data, size);
  return 0;
}
