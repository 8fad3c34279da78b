/* JSON writing into an isv__buf, without per-number allocation.
 *
 * Floats are written as the SHORTEST text that reads back (strtof/strtod, or for FP16/BF16 the
 * reader's round-to-nearest-even) to the same value; an integral float keeps ".0" ("3.0");
 * NaN, Infinity and -Infinity are written as bare tokens. Output is always valid UTF-8 JSON.
 * The text form is Python's repr(): fixed notation while the leading digit's decimal exponent
 * is in [-4, 15] ("0.0001", "1000000000000000.0", "-0.0"), otherwise "1e+16", "1.5e-07"
 * (at least two exponent digits). Among the shortest texts, the one closest to the value. */
#ifndef ISV_CODEC_JSON_WRITER_H
#define ISV_CODEC_JSON_WRITER_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "inferserve.h"

/* Shortest round-trip text of a float, not NUL-terminated; returns its length (<= 32). */
size_t isv__json_format_f32(char out[32], float v);
size_t isv__json_format_f64(char out[32], double v);
/* Same for a half (FP16 bits) / bfloat16 (BF16 bits): shortest text that the reader rounds
 * back to the same 16 bits. */
size_t isv__json_format_f16(char out[32], uint16_t bits);
size_t isv__json_format_bf16(char out[32], uint16_t bits);

/* The decimal digits of v (no NUL); returns how many. Also what HTTP heads use. */
size_t isv__json_format_u64(char out[20], uint64_t v);

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
