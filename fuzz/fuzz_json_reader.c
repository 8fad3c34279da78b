/* libFuzzer target: the JSON pull reader.
 *
 * Every input is read token by token (the reader must never crash, read out of bounds or
 * loop), skipped with isv__json_skip, and, when it is an array of scalars, parsed again with
 * isv__json_read_tensor into every datatype; isv__json_key_in, asked before every token, must
 * take a key exactly where the tokens read it, and leave the reader as they do.
 *
 * With ISV_FUZZ_WITH_JANSSON (meson defines it when jansson is found) the reader is also
 * compared with jansson on strict JSON: inputs whose tokens include NaN/Infinity are skipped,
 * and so are inputs jansson refuses only for its own limits (integers beyond long long,
 * reals that overflow to inf, nesting beyond its stack) or for its leniency (raw NUL bytes
 * outside strings are accepted by jansson). Otherwise both must agree on
 * accept/reject and, when both accept, on the values: structure, object keys, string bytes,
 * integers exactly and numbers as doubles bit-for-bit. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/datatype.h"
#include "codec/json_next.h"
#include "codec/json_reader.h"

#ifdef ISV_FUZZ_WITH_JANSSON
#include <jansson.h>
#endif

#define DEPTH 1024

static void check(int cond, const char *what, const uint8_t *data, size_t size) {
  if (cond) return;
  fprintf(stderr, "MISMATCH: %s\ninput (%zu bytes): %.*s\n", what, size, (int)(size > 2000 ? 2000 : size),
          (const char *)data);
  abort();
}

typedef struct pass_info {
  int ok;             /* the whole document was accepted */
  int has_nonfinite;  /* NaN / Infinity / -Infinity tokens */
  int depth_error;    /* rejected only for nesting */
  size_t keys;        /* KEY tokens */
  size_t scalars;     /* scalar tokens */
  int top_array_of_scalars; /* top-level array without objects */
} pass_info;

static void token_pass(char *buf, size_t size, pass_info *pi) {
  isv__json_reader r;
  isv__json_reader_init(&r, buf, size, DEPTH);
  isv__json_token t;
  memset(pi, 0, sizeof *pi);
  pi->top_array_of_scalars = 1;
  int first = 1;
  for (size_t guard = 0; guard <= size + 2; guard++) {
    isv__json_type ty = isv__json_next(&r, &t);
    if (ty == ISV__JSON_EOF) {
      pi->ok = 1;
      return;
    }
    if (ty == ISV__JSON_ERROR) {
      size_t off;
      const char *e = isv__json_error(&r, &off);
      if (!e || off > size || !strstr(e, "offset")) abort();
      pi->depth_error = strstr(e, "nesting deeper") != NULL;
      pi->top_array_of_scalars = 0;
      return;
    }
    if (first && ty != ISV__JSON_ARRAY_BEGIN) pi->top_array_of_scalars = 0;
    first = 0;
    switch (ty) {
      case ISV__JSON_NUMBER: {
        pi->scalars++;
        if (t.ptr[0] == 'N' || t.ptr[0] == 'I' || (t.len > 1 && t.ptr[1] == 'I')) pi->has_nonfinite = 1;
        double d;
        float f;
        uint16_t h;
        if (isv__json_to_double(&t, &d) || isv__json_to_float(&t, &f) || isv__json_to_f16(&t, &h) ||
            isv__json_to_bf16(&t, &h))
          abort(); /* every NUMBER token converts */
        int64_t i;
        uint64_t u;
        (void)isv__json_to_int64(&t, &i);
        (void)isv__json_to_uint64(&t, &u);
        break;
      }
      case ISV__JSON_STRING:
      case ISV__JSON_TRUE:
      case ISV__JSON_FALSE:
      case ISV__JSON_NULL:
        pi->scalars++;
        break;
      case ISV__JSON_KEY:
        pi->keys++;
        /* fallthrough */
      case ISV__JSON_OBJECT_BEGIN:
        pi->top_array_of_scalars = 0;
        break;
      default:
        break;
    }
  }
  abort(); /* no progress: the reader looped */
}

#ifdef ISV_FUZZ_WITH_JANSSON
static size_t jansson_keys(const json_t *j) {
  size_t n = 0;
  if (json_is_object(j)) {
    const char *k;
    json_t *v;
    n += json_object_size(j);
    json_object_foreach((json_t *)j, k, v) n += jansson_keys(v);
  } else if (json_is_array(j)) {
    for (size_t i = 0; i < json_array_size(j); i++) n += jansson_keys(json_array_get(j, i));
  }
  return n;
}

static const uint8_t *g_data;
static size_t g_size;

/* Compare the value starting with token t with j. */
static void compare(isv__json_reader *r, isv__json_token *t, const json_t *j) {
  switch (t->type) {
    case ISV__JSON_OBJECT_BEGIN: {
      check(json_is_object(j), "object vs non-object", g_data, g_size);
      size_t n = 0;
      for (;;) {
        isv__json_type ty = isv__json_next(r, t);
        if (ty == ISV__JSON_OBJECT_END) break;
        check(ty == ISV__JSON_KEY, "expected key", g_data, g_size);
        json_t *v = json_object_getn(j, t->ptr, t->len);
        check(v != NULL, "key missing in jansson", g_data, g_size);
        n++;
        isv__json_next(r, t);
        compare(r, t, v);
      }
      check(n == json_object_size(j), "member count", g_data, g_size);
      return;
    }
    case ISV__JSON_ARRAY_BEGIN: {
      check(json_is_array(j), "array vs non-array", g_data, g_size);
      size_t n = 0;
      for (;;) {
        isv__json_type ty = isv__json_next(r, t);
        if (ty == ISV__JSON_ARRAY_END) break;
        check(n < json_array_size(j), "array too long", g_data, g_size);
        compare(r, t, json_array_get(j, n));
        n++;
      }
      check(n == json_array_size(j), "array length", g_data, g_size);
      return;
    }
    case ISV__JSON_STRING:
      check(json_is_string(j), "string vs non-string", g_data, g_size);
      check(json_string_length(j) == t->len && memcmp(json_string_value(j), t->ptr, t->len) == 0,
            "string bytes", g_data, g_size);
      return;
    case ISV__JSON_TRUE: check(json_is_true(j), "true", g_data, g_size); return;
    case ISV__JSON_FALSE: check(json_is_false(j), "false", g_data, g_size); return;
    case ISV__JSON_NULL: check(json_is_null(j), "null", g_data, g_size); return;
    case ISV__JSON_NUMBER: {
      check(json_is_number(j), "number vs non-number", g_data, g_size);
      if (json_is_integer(j)) {
        int64_t i;
        check(isv__json_to_int64(t, &i) == 0 && i == (int64_t)json_integer_value(j), "integer value", g_data,
              g_size);
      } else {
        double d, w = json_real_value(j);
        check(isv__json_to_double(t, &d) == 0 && memcmp(&d, &w, sizeof d) == 0, "real value (bits)", g_data,
              g_size);
      }
      return;
    }
    default:
      check(0, "unexpected token", g_data, g_size);
  }
}

static void differential(const uint8_t *data, size_t size, char *buf, const pass_info *pi) {
  if (pi->has_nonfinite || pi->depth_error) return;
  /* jansson treats a raw NUL byte as whitespace/end (a known leniency); RFC 8259 does not */
  if (memchr(data, 0, size)) return;
  json_error_t err;
  json_t *j = json_loadb((const char *)data, size, JSON_DECODE_ANY | JSON_ALLOW_NUL, &err);
  if (!j) {
    enum json_error_code code = json_error_code(&err);
    if (code == json_error_numeric_overflow || code == json_error_stack_overflow) return;
    /* jansson refuses "\u0000" in a key even with JSON_ALLOW_NUL; RFC 8259 allows it */
    if (code == json_error_null_byte_in_key) return;
    /* jansson stops at NaN / Infinity before our pass could see them when we fail earlier */
    if (pi->ok) {
      fprintf(stderr, "jansson: %s (line %d col %d pos %d)\n", err.text, err.line, err.column, err.position);
      check(0, "accepted by us, rejected by jansson", data, size);
    }
    return;
  }
  if (!pi->ok) {
    isv__json_reader r;
    memcpy(buf, data, size);
    isv__json_reader_init(&r, buf, size, DEPTH);
    isv__json_token t;
    while (isv__json_next(&r, &t) > ISV__JSON_EOF) {
    }
    /* a NaN/Infinity after our error point cannot matter: jansson accepted, so there is none */
    fprintf(stderr, "ours: %s\n", isv__json_error(&r, NULL));
    check(0, "rejected by us, accepted by jansson", data, size);
  }
  if (jansson_keys(j) == pi->keys) { /* no duplicate keys: compare values */
    memcpy(buf, data, size);
    isv__json_reader r;
    isv__json_reader_init(&r, buf, size, DEPTH);
    isv__json_token t;
    isv__json_next(&r, &t);
    g_data = data;
    g_size = size;
    compare(&r, &t, j);
    check(isv__json_next(&r, &t) == ISV__JSON_EOF, "trailing", data, size);
  }
  json_decref(j);
}
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *buf = malloc(size ? size : 1);
  if (!buf) return 0;
  memcpy(buf, data, size);
  pass_info pi;
  token_pass(buf, size, &pi);

  /* skip(): the first value skipped must end where a full token pass ends */
  memcpy(buf, data, size);
  {
    isv__json_reader r;
    isv__json_reader_init(&r, buf, size, DEPTH);
    isv__json_token t;
    isv__json_type ty = isv__json_next(&r, &t);
    if (ty != ISV__JSON_ERROR) {
      size_t end = 0;
      int rc = isv__json_skip(&r, &t, &end);
      if (rc == 0) {
        if (end > size) abort();
        isv__json_type t2 = isv__json_next(&r, &t);
        if ((t2 == ISV__JSON_EOF) != (pi.ok != 0)) abort();
      } else if (pi.ok) {
        abort();
      }
      /* skip leaves the bytes untouched (next() unescapes a top-level string in place) */
      if ((ty == ISV__JSON_ARRAY_BEGIN || ty == ISV__JSON_OBJECT_BEGIN) && memcmp(buf, data, size) != 0)
        abort();
    }
  }

  /* read_tensor into every datatype (most fail on type; none may crash) */
  if (pi.top_array_of_scalars && pi.ok) {
    static const isv_datatype types[] = {ISV_BOOL,  ISV_UINT8, ISV_UINT16, ISV_UINT32, ISV_UINT64,
                                         ISV_INT8,  ISV_INT16, ISV_INT32,  ISV_INT64,  ISV_FP16,
                                         ISV_BF16,  ISV_FP32,  ISV_FP64,   ISV_BYTES};
    size_t count = pi.scalars;
    void *out = malloc((count + 1) * 16);
    for (size_t k = 0; out && k < sizeof types / sizeof types[0]; k++) {
      for (int variant = 0; variant < 2; variant++) {
        memcpy(buf, data, size);
        isv__json_reader r;
        isv__json_reader_init(&r, buf, size, DEPTH);
        isv__json_token t;
        isv__json_next(&r, &t);
        size_t c = variant ? (count ? count - 1 : 0) : count;
        int rc = isv__json_read_tensor(&r, &t, types[k], out, c);
        if (rc != 0) {
          size_t off;
          const char *e = isv__json_error(&r, &off);
          if (!e || off > size) abort();
        } else {
          if (variant && count) abort(); /* one element too few must fail */
          if (isv__json_next(&r, &t) != ISV__JSON_EOF) abort();
        }
      }
    }
    free(out);
  }

  /* INT64 elements as read_tensor reads them (its own integer path) against the tokens'
   * (isv__json_to_int64): accepted together, the same values */
  if (pi.top_array_of_scalars && pi.ok && pi.scalars) {
    size_t count = pi.scalars;
    int64_t *a = malloc(count * sizeof *a);
    if (a) {
      memcpy(buf, data, size);
      isv__json_reader r;
      isv__json_reader_init(&r, buf, size, DEPTH);
      isv__json_token t;
      isv__json_next(&r, &t);
      int rc = isv__json_read_tensor(&r, &t, ISV_INT64, a, count);
      memcpy(buf, data, size);
      isv__json_reader_init(&r, buf, size, DEPTH);
      int all = 1;
      size_t i = 0;
      for (;;) {
        isv__json_type ty = isv__json_next(&r, &t);
        if (ty == ISV__JSON_EOF || ty == ISV__JSON_ERROR) break;
        if (ty == ISV__JSON_ARRAY_BEGIN || ty == ISV__JSON_ARRAY_END) continue;
        int64_t v;
        if (isv__json_to_int64(&t, &v) != 0) {
          all = 0;
          break;
        }
        check(i < count && (rc != 0 || a[i] == v), "read_tensor INT64 element != isv__json_to_int64",
              data, size);
        i++;
      }
      check((rc == 0) == all, "read_tensor INT64 and isv__json_to_int64 disagree on acceptance",
            data, size);
      free(a);
    }
  }

  /* isv__json_small_uints at every array: where it takes the array whole, a copy of the reader
   * reading it token by token meets the same integers and stops where it did; where it does
   * not, the reader is untouched */
  {
    memcpy(buf, data, size);
    isv__json_reader r;
    isv__json_reader_init(&r, buf, size, DEPTH);
    isv__json_token t;
    isv__json_type ty;
    int steps = 0;
    while ((ty = isv__json_next(&r, &t)) > ISV__JSON_EOF && steps++ < 4096) {
      if (ty != ISV__JSON_ARRAY_BEGIN) continue;
      isv__json_reader tokens = r; /* no pointers of its own but buf, shared: nothing moves */
      int64_t got[ISV__MAX_NDIM];
      size_t before = r.pos;
      int whole = isv__json_small_uints(&r, got, ISV__MAX_NDIM);
      if (whole < 0) {
        check(r.pos == before && r.depth == tokens.depth && r.state == tokens.state,
              "small_uints moved the reader when it said no", data, size);
        continue;
      }
      check(whole <= ISV__MAX_NDIM, "small_uints past max", data, size);
      isv__json_token u;
      for (int i = 0; i < whole; i++) {
        int64_t v;
        check(isv__json_next(&tokens, &u) == ISV__JSON_NUMBER && isv__json_to_int64(&u, &v) == 0 &&
                  v == got[i] && v >= 0,
              "small_uints element differs from the token's", data, size);
      }
      check(isv__json_next(&tokens, &u) == ISV__JSON_ARRAY_END && tokens.pos == r.pos &&
                tokens.depth == r.depth && tokens.state == r.state,
            "small_uints did not end where the tokens do", data, size);
    }
  }

  /* isv__json_key_in before every token: a key of its set taken at once is the key the tokens
   * read, and both readers then stand alike; where it takes none, the reader is untouched */
  {
    static const isv__json_key_lit keys[] = {ISV__JSON_KEY_LIT("name"), ISV__JSON_KEY_LIT("data"),
                                             ISV__JSON_KEY_LIT("datatype"), ISV__JSON_KEY_LIT("a"),
                                             ISV__JSON_KEY_LIT("")};
    char *copy = malloc(size ? size : 1);
    if (copy) {
      memcpy(buf, data, size);
      memcpy(copy, data, size);
      isv__json_reader r, tokens;
      isv__json_reader_init(&r, buf, size, DEPTH);
      isv__json_reader_init(&tokens, copy, size, DEPTH);
      isv__json_token t, u;
      for (int steps = 0; steps < 4096; steps++) {
        size_t before = r.pos;
        int st = r.state;
        int k = isv__json_key_in(&r, keys, sizeof keys / sizeof keys[0]);
        isv__json_type tu = isv__json_next(&tokens, &u);
        if (k >= 0) {
          check(tu == ISV__JSON_KEY && u.len + 3 == keys[k].len &&
                    memcmp(u.ptr, keys[k].text + 1, u.len) == 0,
                "key_in took a key the tokens do not read", data, size);
        } else {
          check(r.pos == before && r.state == st, "key_in moved the reader when it said no",
                data, size);
          isv__json_type tr = isv__json_next(&r, &t);
          check(tr == tu, "key_in's reader and the tokens' read differently", data, size);
          if (tr <= ISV__JSON_EOF) break; /* the end, or an error */
        }
        check(r.pos == tokens.pos && r.state == tokens.state && r.depth == tokens.depth,
              "key_in left the reader elsewhere than the tokens", data, size);
      }
      free(copy);
    }
  }

#ifdef ISV_FUZZ_WITH_JANSSON
  differential(data, size, buf, &pi);
#endif
  free(buf);
  return 0;
}
