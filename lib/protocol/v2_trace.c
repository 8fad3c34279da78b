/* See v2_trace.h. */
#include "protocol/v2_trace.h"

#include <stdio.h>
#include <string.h>

#include "codec/decimal.h"
#include "codec/json_reader.h"
#include "codec/json_writer.h"
#include "codec/pbwire.h"
#include "codec/utf8.h"
#include "core/queries.h"
#include "core/resolve.h"
#include "protocol/edge.h"
#include "protocol/http_reply.h"

#define MAX_VALUES 8 /* trace_level's list: OFF, TIMESTAMPS, TENSORS, and some repeats */

/* A setting's value as either wire gives it: strings (one for every setting but trace_level),
 * or none (null: cleared). */
typedef struct values {
  int number; /* a JSON number (for the numeric settings only) */
  size_t n;
  const char *s[MAX_VALUES];
  size_t len[MAX_VALUES];
} values;

static const struct {
  const char *name;
  unsigned bit;
} settings[] = {
    {"trace_level", ISV__TS_LEVEL},   {"trace_rate", ISV__TS_RATE},
    {"trace_count", ISV__TS_COUNT},   {"log_frequency", ISV__TS_LOG_FREQUENCY},
    {"trace_file", ISV__TS_FILE},
};
#define N_SETTINGS (sizeof settings / sizeof settings[0])

static int is(const char *s, size_t n, const char *lit) {
  return strlen(lit) == n && memcmp(s, lit, n) == 0;
}

/* Decimal digits only, at most 20 of them and at most max: 0, or -1. */
static int decimal(const char *s, size_t n, uint64_t max, uint64_t *out) {
  return n > 20 ? -1 : isv__decimal_u64(s, n, max, out);
}

/* One setting into ch: 0, or an ISV_E* code with err. vals NULL: cleared. */
static int apply(isv__trace_change *ch, const char *key, size_t klen, const values *vals,
                 char *err, size_t cap) {
  size_t i = 0;
  while (i < N_SETTINGS && !is(key, klen, settings[i].name)) i++;
  if (i == N_SETTINGS) {
    snprintf(err, cap, "unknown trace setting '%.*s' (trace_level, trace_rate, trace_count, "
             "log_frequency, trace_file)", (int)(klen > 64 ? 64 : klen), key);
    return ISV_EBADREQ;
  }
  unsigned bit = settings[i].bit;
  const char *name = settings[i].name;
  if (vals == NULL) { /* cleared: the later of two mentions wins */
    ch->clear |= bit;
    ch->set &= ~bit;
    return 0;
  }
  if (vals->n == 0 || (bit != ISV__TS_LEVEL && vals->n != 1)) {
    snprintf(err, cap, "trace setting '%s' must have %s", name,
             bit == ISV__TS_LEVEL ? "at least one level" : "exactly one value");
    return ISV_EBADREQ;
  }
  if (vals->number && (bit == ISV__TS_LEVEL || bit == ISV__TS_FILE)) {
    snprintf(err, cap, "trace setting '%s' must be %s", name,
             bit == ISV__TS_LEVEL ? "a string or an array of strings" : "a string");
    return ISV_EBADREQ;
  }
  const char *s = vals->s[0];
  size_t n = vals->len[0];
  uint64_t u = 0;
  switch (bit) {
  case ISV__TS_LEVEL: {
    int ts = 0;
    for (size_t k = 0; k < vals->n; k++) {
      if (is(vals->s[k], vals->len[k], "TIMESTAMPS")) {
        ts = 1;
      } else if (is(vals->s[k], vals->len[k], "TENSORS")) {
        snprintf(err, cap, "trace level 'TENSORS' is unimplemented: this server traces "
                 "TIMESTAMPS");
        return ISV_EUNIMPL;
      } else if (!is(vals->s[k], vals->len[k], "OFF")) {
        snprintf(err, cap, "unknown trace level '%.*s' (OFF, TIMESTAMPS)",
                 (int)(vals->len[k] > 32 ? 32 : vals->len[k]), vals->s[k]);
        return ISV_EBADREQ;
      }
    }
    ch->v.timestamps = ts;
    break;
  }
  case ISV__TS_RATE:
    if (decimal(s, n, UINT32_MAX, &u) != 0 || u == 0) {
      snprintf(err, cap, "trace setting 'trace_rate' must be an integer from 1 to %u",
               UINT32_MAX);
      return ISV_EBADREQ;
    }
    ch->v.rate = (unsigned)u;
    break;
  case ISV__TS_COUNT:
    if (is(s, n, "-1")) {
      ch->v.count = -1;
    } else if (decimal(s, n, INT64_MAX, &u) == 0) {
      ch->v.count = (int64_t)u;
    } else {
      snprintf(err, cap, "trace setting 'trace_count' must be -1 (no limit) or an integer >= 0");
      return ISV_EBADREQ;
    }
    break;
  case ISV__TS_LOG_FREQUENCY:
    if (decimal(s, n, UINT32_MAX, &u) != 0) {
      snprintf(err, cap, "trace setting 'log_frequency' must be an integer from 0 to %u",
               UINT32_MAX);
      return ISV_EBADREQ;
    }
    ch->v.log_frequency = (unsigned)u;
    break;
  default: /* ISV__TS_FILE */
    if (n >= sizeof ch->v.file || !isv__utf8_text(s, n)) {
      snprintf(err, cap, "trace setting 'trace_file' must be a path of at most %zu bytes of "
               "UTF-8", sizeof ch->v.file - 1);
      return ISV_EBADREQ;
    }
    memcpy(ch->v.file, s, n);
    ch->v.file[n] = '\0';
    break;
  }
  ch->set |= bit;
  ch->clear &= ~bit;
  return 0;
}

/* ---- JSON -------------------------------------------------------------------------------- */

typedef struct json_ctx {
  isv__trace_change *ch;
  char *err;
  size_t cap;
} json_ctx;

static int json_member(void *ctx, const isv__json_token *k, isv__json_type ty,
                       const isv__json_token *x, isv__json_reader *r) {
  json_ctx *c = ctx;
  values vals = {0};
  int null = 0;
  if (ty == ISV__JSON_NULL) {
    null = 1;
  } else if (ty == ISV__JSON_STRING || ty == ISV__JSON_NUMBER) {
    vals.n = 1;
    vals.number = ty == ISV__JSON_NUMBER;
    vals.s[0] = x->ptr;
    vals.len[0] = x->len;
  } else if (ty == ISV__JSON_ARRAY_BEGIN) {
    isv__json_token e;
    while ((ty = isv__json_next(r, &e)) == ISV__JSON_STRING) {
      if (vals.n == MAX_VALUES) {
        snprintf(c->err, c->cap, "trace setting '%.*s' has more than %d values",
                 (int)(k->len > 64 ? 64 : k->len), k->ptr, MAX_VALUES);
        return ISV_EBADREQ;
      }
      vals.s[vals.n] = e.ptr;
      vals.len[vals.n++] = e.len;
    }
    if (ty == ISV__JSON_ERROR) return ISV__JSON_MALFORMED; /* the walker says it is */
    if (ty != ISV__JSON_ARRAY_END) {
      snprintf(c->err, c->cap, "trace setting '%.*s' must be an array of strings",
               (int)(k->len > 64 ? 64 : k->len), k->ptr);
      return ISV_EBADREQ;
    }
  } else {
    snprintf(c->err, c->cap, "trace setting '%.*s' must be a string, an array of strings or null",
             (int)(k->len > 64 ? 64 : k->len), k->ptr);
    return ISV_EBADREQ;
  }
  return apply(c->ch, k->ptr, k->len, null ? NULL : &vals, c->err, c->cap);
}

int isv__v2trace_parse_json(isv__trace_change *ch, char *body, size_t len, unsigned max_depth,
                            char *err, size_t cap) {
  memset(ch, 0, sizeof *ch);
  json_ctx c = {ch, err, cap};
  const char *m;
  int rc = isv__json_each_member(body, len, max_depth, json_member, &c, &m);
  if (rc == ISV__JSON_NOT_OBJECT) {
    snprintf(err, cap, "trace settings must be a JSON object%s%s", m ? ": " : "", m ? m : "");
    return ISV_EBADREQ;
  }
  if (rc == ISV__JSON_MALFORMED) {
    snprintf(err, cap, "malformed trace settings: %s", m);
    return ISV_EBADREQ;
  }
  return rc;
}

static void put_number(isv__buf *out, const char *key, int64_t v) {
  char s[24];
  int n = snprintf(s, sizeof s, "%lld", (long long)v);
  isv__buf_puts(out, key);
  isv__json_write_string(out, s, (size_t)n);
}

void isv__v2trace_write_json(const isv__trace_view *v, isv__buf *out) {
  isv__buf_puts(out, v->timestamps ? "{\"trace_level\":[\"TIMESTAMPS\"]" : "{\"trace_level\":[\"OFF\"]");
  put_number(out, ",\"trace_rate\":", v->rate);
  put_number(out, ",\"trace_count\":", v->count);
  put_number(out, ",\"log_frequency\":", v->log_frequency);
  isv__buf_puts(out, ",\"trace_file\":");
  isv__json_write_string(out, v->file, strlen(v->file));
  isv__buf_putc(out, '}');
}

/* ---- protobuf: map<string, SettingValue> settings = 1; string model_name = 2;
 * SettingValue { repeated string value = 1; } --------------------------------------------- */

static const uint8_t no_bytes[1];

static isv__pb_span span(isv__pb_span s) { /* never a reader over NULL */
  return s.p ? s : (isv__pb_span){no_bytes, 0};
}

int isv__v2trace_parse_pb(isv__trace_change *ch, char *model, size_t model_cap,
                          const uint8_t *msg, size_t len, char *err, size_t cap) {
  memset(ch, 0, sizeof *ch);
  if (model && model_cap) model[0] = '\0';
  isv__pb_reader rr = isv__pb_reader_of(span((isv__pb_span){msg, len}));
  isv__pb_field f;
  int k;
  while ((k = isv__pb_read_field(&rr, &f)) > 0) {
    if (f.num == 2) {
      if (f.wt != ISV__PB_LEN) goto malformed;
      if (model == NULL) continue;
      if (f.s.n >= model_cap || memchr(f.s.p, '\0', f.s.n)) {
        snprintf(err, cap, "model_name is longer than %zu bytes", model_cap - 1);
        return ISV_EBADREQ;
      }
      memcpy(model, f.s.p, f.s.n);
      model[f.s.n] = '\0';
      continue;
    }
    if (f.num != 1) continue;
    if (f.wt != ISV__PB_LEN) goto malformed;
    isv__pb_span key = {no_bytes, 0}, value = {NULL, 0};
    isv__pb_reader er = isv__pb_reader_of(span(f.s));
    isv__pb_field e;
    int ke;
    while ((ke = isv__pb_read_field(&er, &e)) > 0) {
      if ((e.num == 1 || e.num == 2) && e.wt != ISV__PB_LEN) goto malformed;
      if (e.num == 1) key = span(e.s);
      else if (e.num == 2) value = span(e.s);
    }
    if (ke < 0) goto malformed;
    values vals = {0};
    isv__pb_reader vr = isv__pb_reader_of(span(value)); /* no value: no values, cleared */
    while ((ke = isv__pb_read_field(&vr, &e)) > 0) {
      if (e.num != 1) continue;
      if (e.wt != ISV__PB_LEN) goto malformed;
      if (vals.n == MAX_VALUES) {
        snprintf(err, cap, "trace setting '%.*s' has more than %d values",
                 (int)(key.n > 64 ? 64 : key.n), (const char *)key.p, MAX_VALUES);
        return ISV_EBADREQ;
      }
      vals.s[vals.n] = (const char *)span(e.s).p;
      vals.len[vals.n++] = e.s.n;
    }
    if (ke < 0) goto malformed;
    int rc = apply(ch, (const char *)key.p, key.n, vals.n ? &vals : NULL, err, cap);
    if (rc) return rc;
  }
  if (k < 0) goto malformed;
  return 0;
malformed:
  snprintf(err, cap, "malformed TraceSettingRequest");
  return ISV_EBADREQ;
}

/* One map entry: key 1, value 2 = SettingValue { value 1 }. */
static void put_entry(isv__buf *out, const char *key, const char *val) {
  size_t kl = strlen(key), vl = strlen(val), body = isv__pb_len_field_size(vl);
  uint8_t *p = (uint8_t *)isv__buf_reserve(out, isv__pb_map_entry_size(kl, body));
  if (p == NULL) return;
  uint8_t *start = p;
  p = isv__pb_put_map_entry_head(p, 1, key, kl, body);
  p = isv__pb_put_bytes(p, 1, val, vl);
  out->len += (size_t)(p - start);
}

void isv__v2trace_write_pb(const isv__trace_view *v, isv__buf *out) {
  char s[24];
  put_entry(out, "trace_level", v->timestamps ? "TIMESTAMPS" : "OFF");
  snprintf(s, sizeof s, "%u", v->rate);
  put_entry(out, "trace_rate", s);
  snprintf(s, sizeof s, "%lld", (long long)v->count);
  put_entry(out, "trace_count", s);
  snprintf(s, sizeof s, "%u", v->log_frequency);
  put_entry(out, "log_frequency", s);
  put_entry(out, "trace_file", v->file);
}

/* ---- the handlers ------------------------------------------------------------------------ */

static const char no_hook[] = "the trace extension is unimplemented on this server: its host "
                              "set no trace hook (isv_options_set_trace)";

/* The change applied to model's settings (NULL: the global ones) into *v, and the host told. */
static int store(isv__core *c, const char *model, const isv__trace_change *ch, isv__trace_view *v) {
  int rc = isv__traceset_apply(c->traceset, model, ch, v);
  if (rc != 0 || c->opts.trace_settings == NULL) return rc;
  isv_trace_settings s = {.struct_size = sizeof s,
                          .model = model,
                          .level = v->timestamps ? ISV_TRACE_TIMESTAMPS : ISV_TRACE_OFF,
                          .rate = v->rate,
                          .count = v->count,
                          .log_frequency = v->log_frequency,
                          .file = v->file};
  c->opts.trace_settings(c->opts.trace_settings_user, &s);
  return 0;
}

void isv__v2trace_http(isv__http_req *q) {
  isv__core *c = q->core;
  if (c->opts.trace == NULL || c->traceset == NULL) {
    isv__reply_error(q->ex, ISV_EUNIMPL, "%s", no_hook);
    return;
  }
  const char *model = NULL;
  isv__model_spec spec = {0};
  spec.name = isv__http_capture(q, "model", &spec.name_len);
  if (spec.name) { /* a model's settings: its name as registered, judged at the model stage */
    isv_model *m;
    isv__why why = isv__core_resolve(c, &spec, &m);
    if (why != ISV__FOUND) {
      char msg[512];
      int code = isv__why_say(why, ISV__WORDS_KSERVE, &spec, msg, sizeof msg);
      isv__reply_error(q->ex, code, "%s", msg);
      return;
    }
    if (!isv__edge_http_model(q, m->cfg->name, NULL)) return;
    model = m->cfg->name;
  }
  isv__trace_view v;
  if (q->ex->method == ISV__M_POST) {
    isv__trace_change ch;
    char err[256];
    int rc = isv__v2trace_parse_json(&ch, q->ex->body, q->ex->body_len, c->opts.max_json_depth,
                                     err, sizeof err);
    if (rc == 0 && (rc = store(c, model, &ch, &v)) != 0) snprintf(err, sizeof err, "out of memory");
    if (rc != 0) {
      isv__reply_error(q->ex, rc, "%s", err);
      return;
    }
  } else {
    isv__traceset_get(c->traceset, model, &v);
  }
  isv__buf b;
  isv__buf_init(&b, q->ex->mem);
  isv__v2trace_write_json(&v, &b);
  isv__reply_json(q->ex, 200, &b);
}

int isv__v2trace_grpc(isv__grpc_unary *u) {
  isv__core *c = u->core;
  if (c->opts.trace == NULL || c->traceset == NULL) {
    snprintf(u->err, sizeof u->err, "%s", no_hook);
    return ISV_EUNIMPL;
  }
  isv__trace_change ch;
  char name[256];
  int rc = isv__v2trace_parse_pb(&ch, name, sizeof name, u->msg, u->len, u->err, sizeof u->err);
  if (rc != 0) return rc;
  const char *model = NULL;
  if (name[0]) {
    isv__model_spec spec = {name, strlen(name), NULL, 0, NULL, 0};
    isv_model *m;
    isv__why why = isv__core_resolve(c, &spec, &m);
    if (why != ISV__FOUND) return isv__why_say(why, ISV__WORDS_KSERVE, &spec, u->err, sizeof u->err);
    if ((rc = isv__grpc_unary_model(u, m->cfg->name, NULL)) != 0) return rc;
    model = m->cfg->name;
  }
  isv__trace_view v;
  if (ch.set | ch.clear) { /* a request that names no setting only asks */
    if (store(c, model, &ch, &v) != 0) {
      snprintf(u->err, sizeof u->err, "out of memory");
      return ISV_ENOMEM;
    }
  } else {
    isv__traceset_get(c->traceset, model, &v);
  }
  isv__v2trace_write_pb(&v, u->out);
  return u->out->failed ? ISV_ENOMEM : 0;
}
