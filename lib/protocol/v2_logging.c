/* See v2_logging.h. */
#include "protocol/v2_logging.h"

#include <stdio.h>
#include <string.h>

#include "codec/json_reader.h"
#include "codec/json_writer.h"
#include "codec/pbwire.h"
#include "protocol/http_reply.h"

/* A setting's value as either wire gives it. */
typedef enum { VAL_BOOL, VAL_UINT, VAL_STRING } val_type;
typedef struct setting_value {
  val_type type;
  int b;
  uint64_t u;
  const char *s;
  size_t n;
} setting_value;

typedef enum { S_FILE, S_INFO, S_WARNING, S_ERROR, S_VERBOSE, S_FORMAT, S_N } setting;

static const struct {
  const char *name;
  val_type type;
} settings[S_N] = {
    [S_FILE] = {"log_file", VAL_STRING},       [S_INFO] = {"log_info", VAL_BOOL},
    [S_WARNING] = {"log_warning", VAL_BOOL},   [S_ERROR] = {"log_error", VAL_BOOL},
    [S_VERBOSE] = {"log_verbose_level", VAL_UINT}, [S_FORMAT] = {"log_format", VAL_STRING},
};

static const char *const type_names[] = {"a boolean", "an unsigned integer", "a string"};

/* One setting into v: 0, or -1 with err. */
static int apply(isv__log_view *v, const char *key, size_t klen, const setting_value *val,
                 char *err, size_t cap) {
  setting s = S_N;
  for (int i = 0; i < S_N; i++)
    if (strlen(settings[i].name) == klen && memcmp(settings[i].name, key, klen) == 0) s = i;
  if (s == S_N) {
    snprintf(err, cap, "unknown log setting '%.*s' (log_file, log_info, log_warning, log_error, "
             "log_verbose_level, log_format)", (int)(klen > 64 ? 64 : klen), key);
    return -1;
  }
  if (val->type != settings[s].type) {
    snprintf(err, cap, "log setting '%s' must be %s", settings[s].name,
             type_names[settings[s].type]);
    return -1;
  }
  switch (s) {
  case S_FILE:
    if (val->n >= sizeof v->file || memchr(val->s, '\0', val->n)) {
      snprintf(err, cap, "log setting 'log_file' must be a path of at most %zu bytes",
               sizeof v->file - 1);
      return -1;
    }
    memcpy(v->file, val->s, val->n);
    v->file[val->n] = '\0';
    return 0;
  case S_INFO: v->info = val->b; return 0;
  case S_WARNING: v->warning = val->b; return 0;
  case S_ERROR: v->error = val->b; return 0;
  case S_VERBOSE:
    if (val->u > UINT32_MAX) {
      snprintf(err, cap, "log setting 'log_verbose_level' must fit in 32 bits");
      return -1;
    }
    v->verbose = (unsigned)val->u;
    return 0;
  case S_FORMAT:
    if (!(val->n == 7 && memcmp(val->s, "default", 7) == 0) &&
        !(val->n == 7 && memcmp(val->s, "ISO8601", 7) == 0)) {
      snprintf(err, cap, "log setting 'log_format' must be \"default\" or \"ISO8601\"");
      return -1;
    }
    memcpy(v->format, val->s, 7);
    v->format[7] = '\0';
    return 0;
  default: return -1;
  }
}

/* ---- JSON -------------------------------------------------------------------------------- */

typedef struct json_ctx {
  isv__log_view *next;
  char *err;
  size_t cap;
} json_ctx;

static int json_member(void *ctx, const isv__json_token *k, isv__json_type ty,
                       const isv__json_token *x, isv__json_reader *r) {
  (void)r;
  json_ctx *c = ctx;
  setting_value val = {0};
  if (ty == ISV__JSON_TRUE || ty == ISV__JSON_FALSE) {
    val.type = VAL_BOOL;
    val.b = ty == ISV__JSON_TRUE;
  } else if (ty == ISV__JSON_STRING) {
    val.type = VAL_STRING;
    val.s = x->ptr;
    val.n = x->len;
  } else if (ty == ISV__JSON_NUMBER && isv__json_to_uint64(x, &val.u) == 0) {
    val.type = VAL_UINT;
  } else {
    snprintf(c->err, c->cap, "log setting '%.*s' has a value of no setting's type (a boolean, an "
             "unsigned integer or a string)", (int)(k->len > 64 ? 64 : k->len), k->ptr);
    return 1;
  }
  return apply(c->next, k->ptr, k->len, &val, c->err, c->cap) != 0;
}

int isv__v2log_apply_json(isv__log_view *v, char *body, size_t len, unsigned max_depth,
                          char *err, size_t cap) {
  isv__log_view next = *v;
  json_ctx c = {&next, err, cap};
  const char *m;
  int rc = isv__json_each_member(body, len, max_depth, json_member, &c, &m);
  if (rc == ISV__JSON_NOT_OBJECT)
    snprintf(err, cap, "log settings must be a JSON object%s%s", m ? ": " : "", m ? m : "");
  else if (rc == ISV__JSON_MALFORMED)
    snprintf(err, cap, "malformed log settings: %s", m);
  if (rc != 0) return -1;
  *v = next;
  return 0;
}

void isv__v2log_write_json(const isv__log_view *v, isv__buf *out) {
  isv__buf_puts(out, "{\"log_file\":");
  isv__json_write_string(out, v->file, strlen(v->file));
  isv__buf_puts(out, v->info ? ",\"log_info\":true" : ",\"log_info\":false");
  isv__buf_puts(out, v->warning ? ",\"log_warning\":true" : ",\"log_warning\":false");
  isv__buf_puts(out, v->error ? ",\"log_error\":true" : ",\"log_error\":false");
  isv__buf_puts(out, ",\"log_verbose_level\":");
  isv__json_write_u64(out, v->verbose);
  isv__buf_puts(out, ",\"log_format\":");
  isv__json_write_string(out, v->format, strlen(v->format));
  isv__buf_putc(out, '}');
}

/* ---- protobuf: map<string, SettingValue> settings = 1; SettingValue { oneof { bool 1;
 * uint32 2; string 3 } } ------------------------------------------------------------------ */

int isv__v2log_apply_pb(isv__log_view *v, const uint8_t *msg, size_t len, char *err, size_t cap) {
  isv__log_view next = *v;
  isv__pb_reader rr = isv__pb_reader_of((isv__pb_span){msg, len});
  isv__pb_field f;
  int k;
  while ((k = isv__pb_read_field(&rr, &f)) > 0) {
    if (f.num != 1) continue;
    if (f.wt != ISV__PB_LEN) goto malformed;
    isv__pb_span key = {(const uint8_t *)"", 0}, value = {NULL, 0};
    isv__pb_reader er = isv__pb_reader_of(f.s);
    isv__pb_field e;
    int ke;
    while ((ke = isv__pb_read_field(&er, &e)) > 0) {
      if ((e.num == 1 || e.num == 2) && e.wt != ISV__PB_LEN) goto malformed;
      if (e.num == 1) key = e.s;
      else if (e.num == 2) value = e.s;
    }
    if (ke < 0) goto malformed;
    setting_value val = {.type = VAL_STRING, .s = "", .n = 0};
    int set = 0;
    /* an entry without a value has none to read (and no pointer to make a reader of) */
    isv__pb_reader vr = isv__pb_reader_of(value.p ? value : (isv__pb_span){(const uint8_t *)"", 0});
    while (value.p && (ke = isv__pb_read_field(&vr, &e)) > 0) { /* the oneof: the last wins */
      if (e.num == 1 || e.num == 2) {
        if (e.wt != ISV__PB_VARINT) goto malformed;
        val.type = e.num == 1 ? VAL_BOOL : VAL_UINT;
        val.b = e.v != 0;
        val.u = e.v & 0xffffffffu; /* uint32 */
        set = 1;
      } else if (e.num == 3) {
        if (e.wt != ISV__PB_LEN) goto malformed;
        val.type = VAL_STRING;
        val.s = (const char *)e.s.p;
        val.n = e.s.n;
        set = 1;
      }
    }
    if (value.p && ke < 0) goto malformed;
    if (!set) {
      snprintf(err, cap, "log setting '%.*s' has no value", (int)(key.n > 64 ? 64 : key.n),
               (const char *)key.p);
      return -1;
    }
    if (apply(&next, (const char *)key.p, key.n, &val, err, cap) != 0) return -1;
  }
  if (k < 0) goto malformed;
  *v = next;
  return 0;
malformed:
  snprintf(err, cap, "malformed LogSettingsRequest");
  return -1;
}

/* One map entry: key 1, value 2 = SettingValue. */
static void put_entry(isv__buf *out, const char *key, const setting_value *val) {
  size_t kl = strlen(key), body;
  if (val->type == VAL_STRING) body = isv__pb_len_field_size(val->n);
  else body = 1 + isv__pb_varint_len(val->type == VAL_BOOL ? (uint64_t)val->b : val->u);
  uint8_t *p = (uint8_t *)isv__buf_reserve(out, isv__pb_map_entry_size(kl, body));
  if (p == NULL) return;
  uint8_t *start = p;
  p = isv__pb_put_map_entry_head(p, 1, key, kl, body);
  if (val->type == VAL_STRING) {
    p = isv__pb_put_bytes(p, 3, val->s, val->n);
  } else {
    p = isv__pb_put_key(p, val->type == VAL_BOOL ? 1 : 2, ISV__PB_VARINT);
    p = isv__pb_put_varint(p, val->type == VAL_BOOL ? (uint64_t)val->b : val->u);
  }
  out->len += (size_t)(p - start);
}

void isv__v2log_write_pb(const isv__log_view *v, isv__buf *out) {
  setting_value s;
  s = (setting_value){.type = VAL_STRING, .s = v->file, .n = strlen(v->file)};
  put_entry(out, "log_file", &s);
  s = (setting_value){.type = VAL_BOOL, .b = v->info};
  put_entry(out, "log_info", &s);
  s.b = v->warning;
  put_entry(out, "log_warning", &s);
  s.b = v->error;
  put_entry(out, "log_error", &s);
  s = (setting_value){.type = VAL_UINT, .u = v->verbose};
  put_entry(out, "log_verbose_level", &s);
  s = (setting_value){.type = VAL_STRING, .s = v->format, .n = strlen(v->format)};
  put_entry(out, "log_format", &s);
}

/* ---- the handlers ------------------------------------------------------------------------ */

/* The settings changed from v: stored for every member, and the host told. */
static void store(isv__core *c, const isv__log_view *v) {
  isv__logset_set(c->logset, v);
  if (c->opts.log_settings == NULL) return;
  isv_log_settings s = {.struct_size = sizeof s,
                        .file = v->file,
                        .info = v->info,
                        .warning = v->warning,
                        .error = v->error,
                        .verbose_level = v->verbose,
                        .format = v->format};
  c->opts.log_settings(c->opts.log_settings_user, &s);
}

void isv__v2log_http(isv__http_req *q) {
  isv__log_view v;
  isv__logset_get(q->core->logset, &v);
  if (q->ex->method == ISV__M_POST) {
    char err[256];
    if (isv__v2log_apply_json(&v, q->ex->body, q->ex->body_len, q->core->opts.max_json_depth,
                              err, sizeof err) != 0) {
      isv__reply_error(q->ex, ISV_EBADREQ, "%s", err);
      return;
    }
    store(q->core, &v);
  }
  isv__buf b;
  isv__buf_init(&b, q->ex->mem);
  isv__v2log_write_json(&v, &b);
  isv__reply_json(q->ex, 200, &b);
}

int isv__v2log_grpc(isv__grpc_unary *u) {
  isv__log_view v;
  isv__logset_get(u->core->logset, &v);
  if (u->len > 0) { /* an empty request asks only */
    if (isv__v2log_apply_pb(&v, u->msg, u->len, u->err, sizeof u->err) != 0) return ISV_EBADREQ;
    store(u->core, &v);
  }
  isv__v2log_write_pb(&v, u->out);
  return u->out->failed ? ISV_ENOMEM : 0;
}
