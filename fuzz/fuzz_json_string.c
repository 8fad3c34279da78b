/* libFuzzer target: isv__json_write_string against JSON's escaping written out byte by byte.
 *
 * The first byte picks the room the buffer has when the string is written (none: the general
 * way; else exactly enough, or up to 31 bytes more or fewer than enough: the one-pass way and
 * its give-up) and the text already in it; the rest is the string, any bytes, in a block of
 * exactly its size (so that ASan sees a read past it). The bytes written must be the
 * reference's (json_string_same.h), and when the string is valid UTF-8 the JSON reader must
 * read it back whole. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "codec/json_reader.h"
#include "codec/json_writer.h"
#include "codec/utf8.h"
#include "json_string_same.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  unsigned mode = data[0];
  size_t n = size - 1;
  uint8_t *s = malloc(n ? n : 1);
  char *want = malloc(n * 6 + 2);
  if (s == NULL || want == NULL) abort();
  memcpy(s, data + 1, n);
  size_t wl = jss_escape(want, s, n);

  isv__buf b;
  isv__buf_init(&b, NULL);
  size_t before = mode & 1 ? 3 : 0; /* text already there */
  if (mode >> 1) {
    /* room for the quoted string give or take up to 31 bytes; the block itself is larger */
    size_t room = n + 2, delta = (mode >> 2) & 31;
    room = mode & 2 ? room + delta : (room > delta ? room - delta : 0);
    if (isv__buf_reserve(&b, before + room + 64) == NULL) abort();
    b.cap = b.len + before + room;
  }
  if (before) isv__buf_append(&b, "x:[", 3);
  isv__json_write_string(&b, (const char *)s, n);
  if (b.failed || b.len != before + wl || memcmp(b.data + before, want, wl) != 0) abort();

  if (isv__utf8_valid((const char *)s, n)) {
    isv__json_reader r;
    isv__json_reader_init(&r, b.data + before, wl, 4);
    isv__json_token t;
    if (isv__json_next(&r, &t) != ISV__JSON_STRING || t.len != n || memcmp(t.ptr, s, n) != 0)
      abort();
  }
  isv__buf_free(&b);
  free(want);
  free(s);
  return 0;
}
