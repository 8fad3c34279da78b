/* JSON's escaping of a string written out byte by byte, the reference codec/json_writer.c's
 * isv__json_write_string is held to: '"' '\\' and the named control bytes as two-byte escapes,
 * any other byte below 0x20 as \u00XX (upper-case hex), every other byte as it is, the whole in
 * quotes. Shared by fuzz_json_string and tests/unit/test_json_writer.c. */
#ifndef ISV_FUZZ_JSON_STRING_SAME_H
#define ISV_FUZZ_JSON_STRING_SAME_H

#include <stddef.h>

/* The quoted, escaped form of the n bytes at s into out (room for 6 * n + 2); its length. */
size_t jss_escape(char *out, const unsigned char *s, size_t n);

#endif
