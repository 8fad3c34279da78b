/* libFuzzer target: transport/h1_quick.c, the quick reading of a plain HTTP/1.x request, against
 * llhttp (fuzz/h1_quick_same.c reads the input both ways and aborts when the quick reading takes
 * bytes llhttp reads otherwise: another method, version, URL, field, length, keep-alive answer,
 * body, or an error) — twice, the second time from the head it remembers. The input is the bytes
 * of one read. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "h1_quick_same.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char why[400];
  if (!h1q_same((const char *)data, size, NULL, why, sizeof why)) {
    fprintf(stderr, "h1_quick differs from llhttp: %s\n", why);
    abort();
  }
  /* read again: a head just taken is in the memo (h1q_memo), and then taken from what it gave */
  if (!h1q_same((const char *)data, size, NULL, why, sizeof why)) {
    fprintf(stderr, "h1_quick read again differs from llhttp: %s\n", why);
    abort();
  }
  return 0;
}
