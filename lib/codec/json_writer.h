/* JSON writing into an isv__buf, without per-number allocation. Numbers are numfmt.h's text
 * (shortest round-trip floats; NaN, Infinity and -Infinity as bare tokens); the output is
 * always valid UTF-8 JSON. */
#ifndef ISV_CODEC_JSON_WRITER_H
#define ISV_CODEC_JSON_WRITER_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "inferserve.h"

void isv__json_write_f32(isv__buf *b, float v);
void isv__json_write_f64(isv__buf *b, double v);
void isv__json_write_i64(isv__buf *b, int64_t v);
void isv__json_write_u64(isv__buf *b, uint64_t v);

/* A quoted, escaped JSON string. The input must be valid UTF-8 (check with isv__utf8_valid);
 * control characters, '"' and '\\' are escaped. */
void isv__json_write_string(isv__buf *b, const char *s, size_t len);

/* A BYTES element: a JSON string when it is valid UTF-8, else {"b64":"<standard base64>"}. */
void isv__json_write_bytes_element(isv__buf *b, const char *s, size_t len);

/* `count` elements of `dt` as a flat JSON array "[...]". For ISV_BYTES, data is an
 * isv_bytes array. BOOL as true/false. */
void isv__json_write_tensor(isv__buf *b, isv_datatype dt, const void *data, size_t count);

/* The same elements nested according to shape (ndim 0 = a single scalar, not an array). */
void isv__json_write_tensor_nested(isv__buf *b, isv_datatype dt, const void *data,
                                   const int64_t *shape, size_t ndim);

#endif
