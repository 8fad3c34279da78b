/* libFuzzer target: the demo repository's config override (examples/demo/override.c) — the one
 * place a client's model configuration JSON is read field by field (the library only checks
 * that a load's "config" parameter is one JSON object: lib/protocol/v2_repo_json.c).
 *
 * Input: the "config" text. Like the library, only a text that is one JSON object reaches the
 * parser (checked with the library's own reader, as isv__v2repo_set_config checks it).
 *
 * Checked: it never crashes or reads past the text (ASan); a refusal says why (a message);
 * what it accepts is in range (max_batch_size -1 or 0..2^20, response_cache -1, 0 or 1); and,
 * against the library's JSON reader as a reference: an accepted override has only the fields
 * the demo honours, its response_cache is the last occurrence's last "enable" (proto3's JSON
 * reading; an empty object is off), and an override of well-formed response_cache objects
 * alone is accepted. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../examples/demo/override.h"
#include "codec/json_reader.h"

static void check(int cond, const char *what) {
  if (cond) return;
  fprintf(stderr, "CHECK FAILED: %s\n", what);
  abort();
}

static int key_is(const isv__json_token *t, const char *s) {
  return t->len == strlen(s) && memcmp(t->ptr, s, t->len) == 0;
}

/* The reference reading (text already known to be one JSON object): 1 when every field is
 * response_cache; *others: fields of another honoured name (max_batch_size, name) seen;
 * *unknown: a field the demo does not honour; *rc: the last response_cache's enable (-1: none);
 * *well_formed: every response_cache is an object of "enable": bool members only. */
static void reference(char *buf, size_t n, int *rc, int *others, int *unknown, int *well_formed) {
  isv__json_reader rd;
  isv__json_reader_init(&rd, buf, n, 64);
  isv__json_token t;
  *rc = -1;
  *others = *unknown = 0;
  *well_formed = 1;
  check(isv__json_next(&rd, &t) == ISV__JSON_OBJECT_BEGIN, "an object");
  while (isv__json_next(&rd, &t) == ISV__JSON_KEY) {
    int is_rc = key_is(&t, "response_cache");
    if (!is_rc) {
      if (key_is(&t, "max_batch_size") || key_is(&t, "name")) *others = 1;
      else *unknown = 1;
      check(isv__json_next(&rd, &t) != ISV__JSON_ERROR, "valid");
      check(isv__json_skip(&rd, &t, NULL) == 0, "valid");
      continue;
    }
    isv__json_type ty = isv__json_next(&rd, &t);
    if (ty != ISV__JSON_OBJECT_BEGIN) {
      *well_formed = 0;
      check(isv__json_skip(&rd, &t, NULL) == 0, "valid");
      continue;
    }
    int v = 0; /* proto3: absent is false */
    while ((ty = isv__json_next(&rd, &t)) == ISV__JSON_KEY) {
      int enable = key_is(&t, "enable");
      ty = isv__json_next(&rd, &t);
      if (enable && (ty == ISV__JSON_TRUE || ty == ISV__JSON_FALSE)) {
        v = ty == ISV__JSON_TRUE;
      } else {
        *well_formed = 0;
        check(isv__json_skip(&rd, &t, NULL) == 0, "valid");
      }
    }
    check(ty == ISV__JSON_OBJECT_END, "valid");
    *rc = v;
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 1 << 16 || memchr(data, 0, size)) return 0; /* the library refuses a NUL byte */
  char *text = malloc(size + 1), *copy = malloc(size + 1);
  memcpy(text, data, size);
  text[size] = '\0';
  memcpy(copy, data, size);
  copy[size] = '\0';
  /* the library's gate: one JSON object and nothing after it (a copy: the reader unescapes) */
  isv__json_reader rd;
  isv__json_reader_init(&rd, copy, size, 64);
  isv__json_token t;
  int object = isv__json_next(&rd, &t) == ISV__JSON_OBJECT_BEGIN &&
               isv__json_skip(&rd, &t, NULL) == 0 && isv__json_next(&rd, &t) == ISV__JSON_EOF;
  if (object) {
    demo_override ov;
    char err[300];
    err[0] = '\0';
    int rc = demo_parse_override(text, "simple", &ov, err, sizeof err);
    check(rc == 0 || rc == -1, "0 or -1");
    if (rc != 0) {
      check(err[0] != '\0' && memchr(err, 0, sizeof err) != NULL, "a refusal says why");
    } else {
      check(ov.max_batch >= -1 && ov.max_batch <= 1 << 20, "max_batch_size in range");
      check(ov.response_cache >= -1 && ov.response_cache <= 1, "response_cache -1, 0 or 1");
    }
    memcpy(copy, data, size);
    copy[size] = '\0';
    int want, others, unknown, well_formed;
    reference(copy, size, &want, &others, &unknown, &well_formed);
    if (rc == 0) {
      check(!unknown, "an accepted override has only the fields the demo honours");
      check(ov.response_cache == want, "response_cache as the reference reads it");
    }
    if (!others && !unknown && well_formed) check(rc == 0, "well-formed response_cache accepted");
  }
  free(text);
  free(copy);
  return 0;
}
