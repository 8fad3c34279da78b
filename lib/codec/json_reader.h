/* A strict, streaming pull reader for JSON (RFC 8259) plus the bare tokens NaN, Infinity and
 * -Infinity, over ONE contiguous, MUTABLE buffer (the request body).
 *
 * Nothing is allocated: strings and keys are returned as (ptr, len) pointing into the buffer;
 * a string that contains escapes is unescaped in place the first time it is returned (the
 * unescaped form is never longer than the escaped one). Numbers are returned as their literal
 * text and converted on demand, or parsed straight into a typed tensor buffer by
 * isv__json_read_tensor().
 *
 * Errors: every function that can fail records a message naming the problem and the byte
 * offset where it was found (isv__json_error()); after an error the reader stays in error. */
#ifndef ISV_CODEC_JSON_READER_H
#define ISV_CODEC_JSON_READER_H

#include <stddef.h>
#include <stdint.h>

#include "codec/span.h"
#include "inferserve.h" /* isv_datatype, isv_bytes */

#define ISV__JSON_MAX_DEPTH_LIMIT 1024

typedef enum isv__json_type {
  ISV__JSON_ERROR = 0,
  ISV__JSON_EOF,          /* the single top-level value has ended; trailing bytes are whitespace */
  ISV__JSON_OBJECT_BEGIN, /* '{' */
  ISV__JSON_OBJECT_END,   /* '}' */
  ISV__JSON_ARRAY_BEGIN,  /* '[' */
  ISV__JSON_ARRAY_END,    /* ']' */
  ISV__JSON_KEY,          /* an object member name; ptr/len = unescaped name */
  ISV__JSON_STRING,       /* ptr/len = unescaped value */
  ISV__JSON_NUMBER,       /* ptr/len = literal text (also "NaN", "Infinity", "-Infinity") */
  ISV__JSON_TRUE,
  ISV__JSON_FALSE,
  ISV__JSON_NULL
} isv__json_type;

typedef struct isv__json_token {
  isv__json_type type;
  const char *ptr; /* see isv__json_type; for punctuation, points at the character */
  size_t len;
  size_t offset; /* byte offset of the token's first character in the buffer */
} isv__json_token;

typedef struct isv__json_reader {
  char *buf;
  size_t len;
  size_t pos;
  unsigned depth;
  unsigned max_depth;
  int state;    /* private: what the grammar expects next (json_next.h's isv__json_state) */
  int failed;   /* sticky */
  int keep_bytes; /* strings are not unescaped in place (isv__json_rewind can then go back) */
  uint8_t stack[ISV__JSON_MAX_DEPTH_LIMIT / 8]; /* private: 1 bit per level, object or array */
  size_t err_offset;
  char err[160];
} isv__json_reader;

/* buf must stay valid and writable while the reader and its tokens are used.
 * max_depth is clamped to [1, ISV__JSON_MAX_DEPTH_LIMIT]. */
void isv__json_reader_init(isv__json_reader *r, char *buf, size_t len, unsigned max_depth);

/* The next token, written to tok (not NULL). Grammar is enforced here: a missing comma, a
 * trailing comma, a leading zero, a control character in a string, a bad escape, invalid
 * UTF-8, a value after the top-level value... each returns ISV__JSON_ERROR with a message.
 * json_next.h's isv__json_next_inline is the same function, inline, for a hot loop. */
isv__json_type isv__json_next(isv__json_reader *r, isv__json_token *tok);

/* Skip the rest of the value whose first token is `first` (the token just returned by
 * isv__json_next). For scalars this does nothing. The skipped text is still validated.
 * Returns 0, or -1 on error. On success *end (if not NULL) is the offset one past the value.
 * Skipping never modifies the buffer (no in-place unescaping), so a skipped value can be
 * parsed later by a second reader initialised over buf + first->offset (e.g. a V2 "data"
 * member that comes before "datatype" and "shape"). */
int isv__json_skip(isv__json_reader *r, const isv__json_token *first, size_t *end);

/* A place to come back to: read on with r->keep_bytes set (strings are then not unescaped in
 * place, so the bytes stay as they were), and if what was read is not wanted — it failed — rewind
 * to read or skip it again as if nothing happened (the error is forgotten). Only back to a
 * place at the same or a shallower depth than where reading went. */
typedef struct isv__json_mark {
  size_t pos;
  unsigned depth;
  int state;
} isv__json_mark;
static inline isv__json_mark isv__json_mark_here(const isv__json_reader *r) {
  isv__json_mark m = {r->pos, r->depth, r->state};
  return m;
}
static inline void isv__json_rewind(isv__json_reader *r, const isv__json_mark *m) {
  r->pos = m->pos;
  r->depth = m->depth; /* the stack's bits up to it were not touched */
  r->state = m->state;
  r->failed = 0;
  r->err_offset = 0;
  r->err[0] = '\0';
}

/* The recorded error message (NUL-terminated) and its byte offset; NULL when none. */
const char *isv__json_error(const isv__json_reader *r, size_t *offset);

/* Record an error at `offset` from a caller that found a semantic problem (wrong key type,
 * ...): printf-style message; " at offset N" is appended unless the message already says
 * "offset". The first error is kept (a later call does not overwrite it). Always returns -1. */
int isv__json_fail(isv__json_reader *r, size_t offset, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* The members of the one JSON object in buf[0..len), in order: each(ctx, key, the type and
 * first token of its value, the reader) — which may read on through the reader (an array's
 * elements, a nested value) — returns 0 to go on, anything else to stop with that code.
 * Returns 0 after the whole object (nothing but whitespace after it), each's code, or
 * ISV__JSON_NOT_OBJECT / ISV__JSON_MALFORMED with *msg the reader's message (NULL when the
 * input is well-formed JSON but not an object). For settings bodies: /v2/logging, trace. */
enum { ISV__JSON_NOT_OBJECT = -1, ISV__JSON_MALFORMED = -2 };
typedef int (*isv__json_member_cb)(void *ctx, const isv__json_token *key, isv__json_type type,
                                   const isv__json_token *value, isv__json_reader *r);
int isv__json_each_member(char *buf, size_t len, unsigned max_depth, isv__json_member_cb each,
                          void *ctx, const char **msg);

/* Number conversions of a NUMBER token. Floats are correctly rounded (bit-identical to
 * strtof/strtod of the same text, without depending on the locale); NaN/Infinity accepted; like
 * strtod, a finite literal beyond the range gives +-Infinity ("1e400") and one below half
 * the smallest subnormal gives +-0 ("1e-400"), without an error. Integers reject a fraction,
 * an exponent, NaN/Infinity and out-of-range values. Return 0, or -1 (no reader state
 * touched: the caller reports the error with isv__json_fail). */
int isv__json_to_double(const isv__json_token *t, double *out);
int isv__json_to_float(const isv__json_token *t, float *out);
int isv__json_to_int64(const isv__json_token *t, int64_t *out);
int isv__json_to_uint64(const isv__json_token *t, uint64_t *out);
/* FP16 / BF16 bits, rounded to nearest even directly from the decimal value (no double
 * rounding through double or float). */
int isv__json_to_f16(const isv__json_token *t, uint16_t *out);
int isv__json_to_bf16(const isv__json_token *t, uint16_t *out);

/* A scalar token as a request parameter (inferserve.h's isv_param): true/false, a string (ptr
 * and len point into the buffer), or a number — INT64 when it is one, else UINT64, else
 * DOUBLE. 0, or -1 (nothing written) for any other token or an invalid number. */
int isv__json_to_param(const isv__json_token *t, isv_param *out);

/* Parse the value whose first token is `first` (an array of any nesting, or a single scalar)
 * straight into `out`, flattened in row-major order, as `count` elements of datatype `dt`.
 *
 *  - out holds count * isv_datatype_size(dt) bytes; for ISV_BYTES it holds count isv_bytes
 *    that point into the reader's buffer (strings unescaped in place).
 *  - BOOL takes only true/false; integer types take only integral numbers within range;
 *    FP16/BF16 are rounded to nearest even; FP32/FP64 accept NaN/Infinity.
 *  - BYTES elements are JSON strings, or objects {"b64": "<standard base64>"} (the form
 *    isv__json_write_bytes_element writes for non-UTF-8 bytes, and TF Serving's), decoded in
 *    place.
 *  - Out-of-range finite literals follow strtod: FP32/FP64/FP16/BF16 "1e400" becomes
 *    +Infinity and "1e-400" becomes 0 (no error).
 *  - A different element count (more or fewer) is an error that names both counts; as soon
 *    as there are too many, parsing stops.
 * Returns 0, or -1 with the reader's error set (the message names the offending element's
 * index and what was wrong, e.g. "element 17: 300 is out of range for UINT8"). */
int isv__json_read_tensor(isv__json_reader *r, const isv__json_token *first, isv_datatype dt,
                          void *out, size_t count);

/* One element: the scalar token `first` just returned by isv__json_next (for BYTES also a
 * string, or the OBJECT_BEGIN of {"b64": ...}, which is consumed) into element idx of `out`,
 * with read_tensor's rules; an error message names element idx. For decoders that find the
 * shape as they go (TF Serving's nested lists). Returns 0, or -1 with the reader's error set. */
int isv__json_read_element(isv__json_reader *r, const isv__json_token *first, isv_datatype dt,
                           void *out, size_t idx);

/* A short array of small non-negative integers written compactly ("[1,16]": no space, each of
 * 1..7 digits, no leading zero) — a shape — read whole. Call it right after isv__json_next
 * returned the array's ARRAY_BEGIN. Returns the count (<= max), into out, the reader past the
 * array's ']' as if its tokens had been read; -1 for any other array (longer than max, a
 * space, a sign, a larger number, a nested value, an error...), the reader left as it was, for
 * the caller to read token by token (and to report what is wrong). */
int isv__json_small_uints(isv__json_reader *r, int64_t *out, size_t max);

/* The token t is the string literal lit (codec/span.h). */
#define ISV__TOKEN_IS(t, lit) ISV__SPAN_IS((t)->ptr, (t)->len, lit)

#endif
