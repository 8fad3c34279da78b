/* Bytes from an HTTP/2 client (after the connection preface, which this target adds) → nghttp2
 * session → REST exchanges and gRPC calls (deframer, V2 gRPC services, protobuf decoding) →
 * frames out (see conn_harness.h). */
#include "conn_harness.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const char preface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
  isv_fuzz_serve(preface, 24, data, size);
  return 0;
}
