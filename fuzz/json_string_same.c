/* JSON's escaping written out byte by byte (json_string_same.h). */
#include "json_string_same.h"

#include <stdio.h>

size_t jss_escape(char *out, const unsigned char *s, size_t n) {
  size_t o = 0;
  out[o++] = '"';
  for (size_t i = 0; i < n; i++) {
    unsigned c = s[i];
    switch (c) {
      case '"': o += (size_t)sprintf(out + o, "\\\""); break;
      case '\\': o += (size_t)sprintf(out + o, "\\\\"); break;
      case '\n': o += (size_t)sprintf(out + o, "\\n"); break;
      case '\t': o += (size_t)sprintf(out + o, "\\t"); break;
      case '\r': o += (size_t)sprintf(out + o, "\\r"); break;
      case '\b': o += (size_t)sprintf(out + o, "\\b"); break;
      case '\f': o += (size_t)sprintf(out + o, "\\f"); break;
      default:
        if (c < 0x20) o += (size_t)sprintf(out + o, "\\u00%02X", c);
        else out[o++] = (char)c;
    }
  }
  out[o++] = '"';
  return o;
}
