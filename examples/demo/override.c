/* The demo repository's config overrides (override.h): Triton's model configuration as JSON,
 * the few fields the demo honours. The text was checked as one JSON object by the library
 * (lib/protocol/v2_repo_json.c) before it gets here; fuzz/fuzz_demo_override.c checks it the
 * same way, then runs this on it. */
#include "override.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *ws(const char *p) {
  while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')
    p++;
  return p;
}

/* Four hex digits at p, or -1. */
static long hex4(const char *p) {
  long v = 0;
  for (int k = 0; k < 4; k++) {
    char c = p[k];
    int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
            : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
    if (d < 0) return -1;
    v = v * 16 + d;
  }
  return v;
}

/* Code point cp as UTF-8 into out[*n..cap): 0, or -1 when it does not fit. */
static int put_utf8(char *out, size_t *n, size_t cap, long cp) {
  unsigned char b[4];
  size_t k = cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
  if (k == 1) b[0] = (unsigned char)cp;
  else {
    for (size_t i = k - 1; i > 0; i--, cp >>= 6) b[i] = (unsigned char)(0x80 | (cp & 0x3f));
    b[0] = (unsigned char)((k == 2 ? 0xc0 : k == 3 ? 0xe0 : 0xf0) | cp);
  }
  if (*n + k >= cap) return -1;
  memcpy(out + *n, b, k);
  *n += k;
  return 0;
}

/* A JSON string at p (the library checked the whole text is JSON) into out, its escapes
 * decoded (\uXXXX and surrogate pairs as UTF-8); the position after it, or NULL — also for a
 * string that does not fit or holds \u0000 (a name is a C string: refused, never cut). */
static const char *string_at(const char *p, char *out, size_t cap) {
  size_t n = 0;
  if (*p++ != '"')
    return NULL;
  for (; *p && *p != '"'; p++) {
    char c = *p;
    if (c != '\\') {
      if (n + 1 >= cap)
        return NULL;
      out[n++] = c;
      continue;
    }
    c = *++p;
    long cp;
    switch (c) {
    case 'b': cp = '\b'; break;
    case 'f': cp = '\f'; break;
    case 'n': cp = '\n'; break;
    case 'r': cp = '\r'; break;
    case 't': cp = '\t'; break;
    case 'u':
      if ((cp = hex4(p + 1)) < 0)
        return NULL;
      p += 4;
      if (cp >= 0xd800 && cp < 0xdc00) { /* a high surrogate: its low one must follow */
        long lo = p[1] == '\\' && p[2] == 'u' ? hex4(p + 3) : -1;
        if (lo < 0xdc00 || lo >= 0xe000)
          return NULL;
        cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
        p += 6;
      } else if (cp >= 0xdc00 && cp < 0xe000) {
        return NULL;
      }
      break;
    case '\0': return NULL;
    default: cp = (unsigned char)c; /* \" \\ \/ */
    }
    if (cp == 0 || put_utf8(out, &n, cap, cp) != 0)
      return NULL;
  }
  out[n] = '\0';
  return *p == '"' ? p + 1 : NULL;
}

/* "true" or "false" at p into *v: the position after it, or NULL. */
static const char *bool_at(const char *p, int *v) {
  if (strncmp(p, "true", 4) == 0) return *v = 1, p + 4;
  if (strncmp(p, "false", 5) == 0) return *v = 0, p + 5;
  return NULL;
}

/* Triton's ModelResponseCache object at p ({"enable": bool}, nothing else) into *on: the
 * position after it, or NULL with err filled. */
static const char *response_cache_at(const char *p, int *on, char *err, size_t cap) {
  static const char bad[] = "config \"response_cache\" must be {\"enable\": true or false}";
  if (*p++ != '{') return snprintf(err, cap, "%s", bad), NULL;
  *on = 0; /* proto3's default: an empty object turns it off */
  for (p = ws(p); *p && *p != '}'; p = ws(p)) {
    char key[16];
    if ((p = string_at(p, key, sizeof key)) == NULL || *(p = ws(p)) != ':' ||
        strcmp(key, "enable") != 0 || (p = bool_at(ws(p + 1), on)) == NULL)
      return snprintf(err, cap, "%s", bad), NULL;
    p = ws(p);
    if (*p == ',') p++;
    else if (*p != '}') return snprintf(err, cap, "%s", bad), NULL;
  }
  return *p == '}' ? p + 1 : (snprintf(err, cap, "%s", bad), NULL);
}

int demo_parse_override(const char *json, const char *model, demo_override *out, char *err,
                        size_t cap) {
  out->max_batch = -1;
  out->response_cache = -1;
  const char *p = ws(json);
  if (*p++ != '{')
    return snprintf(err, cap, "the config override is not a JSON object"), -1;
  for (p = ws(p); *p && *p != '}'; p = ws(p)) {
    char key[64], text[256];
    if ((p = string_at(p, key, sizeof key)) == NULL || *(p = ws(p)) != ':')
      return snprintf(err, cap, "the config override could not be read"), -1;
    p = ws(p + 1);
    if (strcmp(key, "max_batch_size") == 0) {
      /* a number, or a string of digits: protobuf's JSON mapping (Triton's) allows both */
      int quoted = *p == '"';
      char *end;
      long long v = strtoll(p + quoted, &end, 10);
      if (end == p + quoted || *end == '.' || *end == 'e' || *end == 'E' || v < 0 ||
          v > 1 << 20 || (quoted && *end != '"'))
        return snprintf(err, cap, "config \"max_batch_size\" must be an integer from 0 to "
                                  "1048576"), -1;
      out->max_batch = v;
      p = end + quoted;
    } else if (strcmp(key, "name") == 0) {
      if ((p = string_at(p, text, sizeof text)) == NULL || strcmp(text, model) != 0)
        return snprintf(err, cap, "config \"name\" must be the model's own name, '%s'", model),
               -1;
    } else if (strcmp(key, "response_cache") == 0) {
      if ((p = response_cache_at(p, &out->response_cache, err, cap)) == NULL) return -1;
    } else {
      return snprintf(err, cap, "the demo's repository cannot honour config field \"%s\" (it "
                                "honours \"max_batch_size\", \"response_cache\" and \"name\")",
                      key), -1;
    }
    p = ws(p);
    if (*p == ',')
      p++;
    else if (*p != '}')
      return snprintf(err, cap, "the config override could not be read"), -1;
  }
  return 0;
}
