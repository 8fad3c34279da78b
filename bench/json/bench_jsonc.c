/* json-c side of bench_json.c, in its own translation unit: json-c and jansson both define
 * json_object_get() & co., so json-c is loaded with dlopen(RTLD_LOCAL | RTLD_DEEPBIND) and
 * called through pointers; its own internal calls then bind to json-c, not jansson. */
#define _GNU_SOURCE 1
#include <dlfcn.h>
#include <json-c/json.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static __typeof__(&json_tokener_new_ex) p_new;
static __typeof__(&json_tokener_parse_ex) p_parse;
static __typeof__(&json_tokener_get_error) p_err;
static __typeof__(&json_tokener_free) p_free;
static __typeof__(&json_object_is_type) p_is_type;
static __typeof__(&json_object_array_length) p_len;
static __typeof__(&json_object_array_get_idx) p_idx;
static __typeof__(&json_object_get_double) p_double;
static __typeof__(&json_object_get_int64) p_int64;
static __typeof__(&json_object_put) p_put;

int jsonc_load(void) {
  void *h = dlopen("libjson-c.so.5", RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
  if (!h) {
    fprintf(stderr, "dlopen json-c: %s\n", dlerror());
    return -1;
  }
#define SYM(p, name) \
  if (!(*(void **)&p = dlsym(h, #name))) return -1;
  SYM(p_new, json_tokener_new_ex)
  SYM(p_parse, json_tokener_parse_ex)
  SYM(p_err, json_tokener_get_error)
  SYM(p_free, json_tokener_free)
  SYM(p_is_type, json_object_is_type)
  SYM(p_len, json_object_array_length)
  SYM(p_idx, json_object_array_get_idx)
  SYM(p_double, json_object_get_double)
  SYM(p_int64, json_object_get_int64)
  SYM(p_put, json_object_put)
#undef SYM
  return 0;
}

static void walk(struct json_object *j, int k, void *out, size_t *i) {
  if (p_is_type(j, json_type_array)) {
    size_t m = p_len(j);
    for (size_t x = 0; x < m; x++) walk(p_idx(j, x), k, out, i);
    return;
  }
  if (k == 0)
    ((float *)out)[(*i)++] = (float)p_double(j);
  else if (k == 1)
    ((int32_t *)out)[(*i)++] = (int32_t)p_int64(j);
  else
    ((uint8_t *)out)[(*i)++] = (uint8_t)p_int64(j);
}

/* kind: 0 FP32, 1 INT32, 2 UINT8 */
int jsonc_decode(const char *p, size_t n, int kind, void *out, size_t count) {
  struct json_tokener *tk = p_new(64);
  struct json_object *j = p_parse(tk, p, (int)n);
  int ok = j && p_err(tk) == json_tokener_success;
  p_free(tk);
  if (!ok) return -1;
  size_t i = 0;
  walk(j, kind, out, &i);
  p_put(j);
  return i == count ? 0 : -1;
}
