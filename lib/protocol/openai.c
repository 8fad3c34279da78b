/* OpenAI's request bodies (openai.h): one pass over the JSON, known fields checked and kept,
 * the others skipped. */
#include "protocol/openai.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "codec/json_reader.h"

/* Most strings an embeddings request may give (OpenAI's limit). */
#define MAX_EMBED_INPUTS 2048

typedef struct parse {
  isv__oai_req *out;
  isv__json_reader rd;
  isv__arena *a;
  char *err;
  size_t cap;
  unsigned max_depth;
} parse;

static int fail(parse *p, const char *param, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
static int fail(parse *p, const char *param, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(p->err, p->cap, fmt, ap);
  va_end(ap);
  p->out->err_param = param;
  return ISV_EBADREQ;
}

static int syntax_of(parse *p, const isv__json_reader *rd) {
  size_t off = 0;
  const char *m = isv__json_error(rd, &off);
  if (m == NULL) m = "invalid JSON";
  if (strstr(m, "offset")) return fail(p, NULL, "malformed JSON: %s", m);
  return fail(p, NULL, "malformed JSON: %s (at byte offset %zu)", m, off);
}

static int syntax(parse *p) { return syntax_of(p, &p->rd); }

static int oom(parse *p) {
  snprintf(p->err, p->cap, "out of memory");
  return ISV_ENOMEM;
}

/* The next token, the reader's error reported. */
static int next(parse *p, isv__json_token *t) {
  return isv__json_next(&p->rd, t) == ISV__JSON_ERROR ? syntax(p) : 0;
}

static int skip(parse *p, const isv__json_token *v) {
  return isv__json_skip(&p->rd, v, NULL) != 0 ? syntax(p) : 0;
}

static int is(const isv__json_token *k, const char *name) {
  return k->len == strlen(name) && memcmp(k->ptr, name, k->len) == 0;
}

/* ---- scalars --------------------------------------------------------------------------------- */

static int get_bool(parse *p, const isv__json_token *v, const char *key, int *out) {
  if (v->type == ISV__JSON_TRUE || v->type == ISV__JSON_FALSE) {
    *out = v->type == ISV__JSON_TRUE;
    return 0;
  }
  return fail(p, key, "'%s' must be a boolean", key);
}

static int get_number(parse *p, const isv__json_token *v, const char *key, double lo, double hi,
                      int *has, double *out) {
  double d;
  if (v->type != ISV__JSON_NUMBER || isv__json_to_double(v, &d) != 0 || !(d == d))
    return fail(p, key, "'%s' must be a number", key);
  if (d < lo || d > hi) return fail(p, key, "'%s' must be between %g and %g", key, lo, hi);
  *has = 1;
  *out = d;
  return 0;
}

static int get_int(parse *p, const isv__json_token *v, const char *key, int64_t lo, int *has,
                   int64_t *out) {
  int64_t i;
  if (v->type != ISV__JSON_NUMBER || isv__json_to_int64(v, &i) != 0)
    return fail(p, key, "'%s' must be an integer", key);
  if (i < lo) return fail(p, key, "'%s' must be at least %lld", key, (long long)lo);
  *has = 1;
  *out = i;
  return 0;
}

static char *keep(parse *p, const char *s, size_t n) { return isv__arena_strndup(p->a, s, n); }

/* ---- arrays of strings: stop, input, prompt ----------------------------------------------- */

/* A string or an array of strings (at most max; the array not empty) into out[], copied to
 * the arena. `what` says what an element must be, for the errors. */
static int get_strings(parse *p, const isv__json_token *v, const char *key, isv_bytes *out,
                       size_t max, size_t *n) {
  *n = 0;
  if (v->type == ISV__JSON_STRING) {
    if ((out[0].ptr = keep(p, v->ptr, v->len)) == NULL) return oom(p);
    out[0].len = v->len;
    *n = 1;
    return 0;
  }
  if (v->type != ISV__JSON_ARRAY_BEGIN)
    return fail(p, key, "'%s' must be a string or an array of strings", key);
  for (;;) {
    isv__json_token e;
    int rc = next(p, &e);
    if (rc) return rc;
    if (e.type == ISV__JSON_ARRAY_END) break;
    if (e.type == ISV__JSON_NUMBER || e.type == ISV__JSON_ARRAY_BEGIN)
      return fail(p, key, "'%s' as token ids is not supported: send text", key);
    if (e.type != ISV__JSON_STRING)
      return fail(p, key, "'%s' must be a string or an array of strings", key);
    if (*n == max)
      return fail(p, key, "'%s' has more than %zu %s", key, max,
                  max == 1 ? "string: one prompt per request (n = 1)" : "strings");
    if ((out[*n].ptr = keep(p, e.ptr, e.len)) == NULL) return oom(p);
    out[(*n)++].len = e.len;
  }
  if (*n == 0) return fail(p, key, "'%s' must not be empty", key);
  return 0;
}

/* Embeddings' "input": the strings are counted first (a reader copy), then kept. */
static int get_inputs(parse *p, const isv__json_token *v) {
  size_t n = 1;
  if (v->type == ISV__JSON_ARRAY_BEGIN) {
    isv__json_reader peek = p->rd;
    isv__json_token e;
    peek.keep_bytes = 1; /* looking ahead must not unescape what the reader reads next */
    for (n = 0; isv__json_next(&peek, &e) == ISV__JSON_STRING; n++) {}
    if (n > MAX_EMBED_INPUTS)
      return fail(p, "input", "'input' has more than %d strings", MAX_EMBED_INPUTS);
    if (n == 0) n = 1; /* get_strings says what is wrong */
  }
  isv_bytes *in = isv__arena_calloc(p->a, n, sizeof *in);
  if (in == NULL) return oom(p);
  p->out->inputs = in;
  return get_strings(p, v, "input", in, n, &p->out->n_inputs);
}

/* ---- chat messages ---------------------------------------------------------------------------- */

/* A message's "content": a string, null, or an array of {"type":"text","text":...} parts,
 * appended to b. */
static int render_content(parse *p, isv__json_reader *rd, const isv__json_token *v, isv__buf *b) {
  if (v->type == ISV__JSON_STRING) {
    isv__buf_append(b, v->ptr, v->len);
    return 0;
  }
  if (v->type == ISV__JSON_NULL) return 0;
  if (v->type != ISV__JSON_ARRAY_BEGIN)
    return fail(p, "messages", "a message's 'content' must be a string or an array of parts");
  isv__json_token t, k, pv;
  for (;;) {
    if (isv__json_next(rd, &t) == ISV__JSON_ERROR) return syntax_of(p, rd);
    if (t.type == ISV__JSON_ARRAY_END) return 0;
    if (t.type != ISV__JSON_OBJECT_BEGIN)
      return fail(p, "messages", "a content part must be an object");
    int text = 0, is_text = 0;
    for (;;) {
      if (isv__json_next(rd, &k) == ISV__JSON_ERROR) return syntax_of(p, rd);
      if (k.type == ISV__JSON_OBJECT_END) break;
      if (isv__json_next(rd, &pv) == ISV__JSON_ERROR) return syntax_of(p, rd);
      if (is(&k, "type")) {
        if (pv.type != ISV__JSON_STRING || !is(&pv, "text"))
          return fail(p, "messages", "content parts of type '%.*s' are not supported: only "
                      "text", (int)(pv.type == ISV__JSON_STRING && pv.len < 32 ? pv.len : 0),
                      pv.ptr);
        is_text = 1;
      } else if (is(&k, "text") && pv.type == ISV__JSON_STRING) {
        isv__buf_append(b, pv.ptr, pv.len);
        text = 1;
      } else if (isv__json_skip(rd, &pv, NULL) != 0) {
        return syntax_of(p, rd);
      }
    }
    if (!is_text || !text)
      return fail(p, "messages", "a content part needs \"type\": \"text\" and a \"text\" string");
  }
}

/* The messages array (rd just returned its '[') rendered as the prompt: a line
 * "<role>: <content>" per message, then "assistant:" — inferserve.h's chat template; each
 * message's role and content also go to list (isv_chat_message, contents copied to the arena)
 * for a model's own template. */
static int render_messages(parse *p, isv__json_reader *rd, isv__buf *b, isv__buf *list) {
  isv__json_token t, k, v;
  size_t n = 0;
  for (;;) {
    isv_chat_message msg = {{NULL, 0}, {NULL, 0}};
    if (isv__json_next(rd, &t) == ISV__JSON_ERROR) return syntax_of(p, rd);
    if (t.type == ISV__JSON_ARRAY_END) break;
    if (t.type != ISV__JSON_OBJECT_BEGIN)
      return fail(p, "messages", "'messages' must be an array of message objects");
    size_t line = b->len;
    int has_role = 0;
    isv__buf content;
    isv__buf_init(&content, b->mem);
    int rc = 0;
    for (;;) {
      if (isv__json_next(rd, &k) == ISV__JSON_ERROR) {
        rc = syntax_of(p, rd);
        break;
      }
      if (k.type == ISV__JSON_OBJECT_END) break;
      if (isv__json_next(rd, &v) == ISV__JSON_ERROR) {
        rc = syntax_of(p, rd);
        break;
      }
      if (is(&k, "role")) {
        if (v.type != ISV__JSON_STRING || v.len == 0) {
          rc = fail(p, "messages", "a message's 'role' must be a non-empty string");
          break;
        }
        b->len = line; /* a repeated role: the last one */
        isv__buf_append(b, v.ptr, v.len);
        msg.role = (isv_bytes){v.ptr, v.len}; /* unescaped in place in the arena's copy */
        has_role = 1;
      } else if (is(&k, "content")) {
        content.len = 0;
        if ((rc = render_content(p, rd, &v, &content)) != 0) break;
      } else if (isv__json_skip(rd, &v, NULL) != 0) {
        rc = syntax_of(p, rd);
        break;
      }
    }
    if (rc == 0 && !has_role) rc = fail(p, "messages", "message %zu has no 'role'", n);
    if (rc == 0) {
      isv__buf_puts(b, ": ");
      if (content.len) isv__buf_append(b, content.data, content.len);
      isv__buf_putc(b, '\n');
      msg.content.len = content.len;
      msg.content.ptr = keep(p, content.data ? content.data : "", content.len);
      char *role = keep(p, msg.role.ptr, msg.role.len); /* NUL-terminated for the host */
      msg.role.ptr = role;
      if (msg.content.ptr == NULL || role == NULL) rc = oom(p);
      else isv__buf_append(list, &msg, sizeof msg);
    }
    isv__buf_free(&content);
    if (rc) return rc;
    n++;
  }
  if (n == 0) return fail(p, "messages", "'messages' must not be empty");
  isv__buf_puts(b, "assistant:");
  return 0;
}

/* "messages": kept as it came (skipped first, which changes nothing), then rendered from a
 * second copy (reading unescapes in place). */
static int get_messages(parse *p, const isv__json_token *v) {
  if (v->type != ISV__JSON_ARRAY_BEGIN)
    return fail(p, "messages", "'messages' must be an array of message objects");
  size_t end;
  if (isv__json_skip(&p->rd, v, &end) != 0) return syntax(p);
  size_t n = end - v->offset;
  char *raw = keep(p, p->rd.buf + v->offset, n), *work = keep(p, p->rd.buf + v->offset, n);
  if (raw == NULL || work == NULL) return oom(p);
  isv__json_reader rd;
  isv__json_token t;
  isv__json_reader_init(&rd, work, n, p->max_depth);
  isv__json_next(&rd, &t); /* the '[' again */
  isv__buf b, list;
  isv__buf_init(&b, NULL);
  isv__buf_init(&list, NULL);
  int rc = render_messages(p, &rd, &b, &list);
  char *prompt = rc == 0 && !b.failed ? keep(p, b.data ? b.data : "", b.len) : NULL;
  size_t plen = b.len, n_msgs = list.len / sizeof(isv_chat_message);
  isv_chat_message *msgs = rc == 0 && !list.failed && n_msgs
                               ? isv__arena_alloc(p->a, list.len) : NULL;
  if (msgs) memcpy(msgs, list.data, list.len);
  if (rc == 0 && (prompt == NULL || msgs == NULL)) rc = oom(p);
  isv__buf_free(&b);
  isv__buf_free(&list);
  if (rc) return rc;
  p->out->messages_json = raw;
  p->out->messages_len = n;
  p->out->prompt = prompt;
  p->out->prompt_len = plen;
  p->out->msgs = msgs;
  p->out->n_msgs = n_msgs;
  return 0;
}

/* ---- the object --------------------------------------------------------------------------------- */

static int get_stream_options(parse *p, const isv__json_token *v) {
  if (v->type != ISV__JSON_OBJECT_BEGIN)
    return fail(p, "stream_options", "'stream_options' must be an object");
  isv__json_token k, w;
  for (;;) {
    int rc = next(p, &k);
    if (rc) return rc;
    if (k.type == ISV__JSON_OBJECT_END) return 0;
    if ((rc = next(p, &w)) != 0) return rc;
    if (is(&k, "include_usage") && w.type != ISV__JSON_NULL)
      rc = get_bool(p, &w, "stream_options.include_usage", &p->out->include_usage);
    else
      rc = skip(p, &w);
    if (rc) return rc;
  }
}

/* One member of the top-level object (v its value's first token). */
static int member(parse *p, const isv__json_token *k, const isv__json_token *v) {
  isv__oai_req *o = p->out;
  int chat = o->kind == ISV__OAI_CHAT, completion = o->kind == ISV__OAI_COMPLETION,
      embed = o->kind == ISV__OAI_EMBEDDING;
  if (v->type == ISV__JSON_NULL) return 0; /* null: as if absent, as OpenAI's clients send it */
  if (is(k, "model")) {
    if (v->type != ISV__JSON_STRING || v->len == 0)
      return fail(p, "model", "'model' must be a non-empty string");
    return (o->model = keep(p, v->ptr, v->len)) ? 0 : oom(p);
  }
  if (chat && is(k, "messages")) return get_messages(p, v);
  if (completion && is(k, "prompt")) {
    isv_bytes one = {NULL, 0};
    size_t n;
    int rc = get_strings(p, v, "prompt", &one, 1, &n);
    o->prompt = one.ptr;
    o->prompt_len = one.len;
    return rc;
  }
  if (embed && is(k, "input")) return get_inputs(p, v);
  if (embed && is(k, "encoding_format")) {
    if (v->type == ISV__JSON_STRING && is(v, "float")) o->base64 = 0;
    else if (v->type == ISV__JSON_STRING && is(v, "base64")) o->base64 = 1;
    else return fail(p, "encoding_format", "'encoding_format' must be \"float\" or \"base64\"");
    return 0;
  }
  if (embed) return skip(p, v); /* dimensions, user...: what the model answers is its own */
  if (is(k, "stream")) return get_bool(p, v, "stream", &o->stream);
  if (is(k, "stream_options")) return get_stream_options(p, v);
  if (is(k, "max_tokens") || is(k, "max_completion_tokens"))
    return get_int(p, v, is(k, "max_tokens") ? "max_tokens" : "max_completion_tokens", 1,
                   &o->has_max_tokens, &o->max_tokens);
  if (is(k, "temperature"))
    return get_number(p, v, "temperature", 0, 2, &o->has_temperature, &o->temperature);
  if (is(k, "top_p")) return get_number(p, v, "top_p", 0, 1, &o->has_top_p, &o->top_p);
  if (is(k, "frequency_penalty"))
    return get_number(p, v, "frequency_penalty", -2, 2, &o->has_frequency_penalty,
                      &o->frequency_penalty);
  if (is(k, "presence_penalty"))
    return get_number(p, v, "presence_penalty", -2, 2, &o->has_presence_penalty,
                      &o->presence_penalty);
  if (is(k, "seed")) return get_int(p, v, "seed", INT64_MIN, &o->has_seed, &o->seed);
  if (is(k, "stop")) return get_strings(p, v, "stop", o->stop, ISV__OAI_MAX_STOP, &o->n_stop);
  if (is(k, "user")) {
    if (v->type != ISV__JSON_STRING) return fail(p, "user", "'user' must be a string");
    o->user.len = v->len;
    return (o->user.ptr = keep(p, v->ptr, v->len)) ? 0 : oom(p);
  }
  if (is(k, "response_format")) { /* the object as sent: the model knows its schemas */
    if (v->type != ISV__JSON_OBJECT_BEGIN)
      return fail(p, "response_format", "'response_format' must be an object");
    size_t end;
    if (isv__json_skip(&p->rd, v, &end) != 0) return syntax(p);
    o->response_format.len = end - v->offset;
    o->response_format.ptr = keep(p, p->rd.buf + v->offset, o->response_format.len);
    return o->response_format.ptr ? 0 : oom(p);
  }
  if (is(k, "n") || is(k, "best_of")) {
    const char *key = is(k, "n") ? "n" : "best_of";
    int64_t n = 1;
    int has;
    int rc = get_int(p, v, key, 1, &has, &n);
    if (rc == 0 && n != 1)
      rc = fail(p, key, "'%s' must be 1: this server answers one choice per request", key);
    return rc;
  }
  if (is(k, "logprobs") && (v->type == ISV__JSON_TRUE || v->type == ISV__JSON_NUMBER))
    return fail(p, "logprobs", "'logprobs' are not supported");
  if (completion && is(k, "echo") && v->type == ISV__JSON_TRUE)
    return fail(p, "echo", "'echo' is not supported");
  return skip(p, v);
}

int isv__oai_parse(isv__oai_req *out, isv__oai_kind kind, char *body, size_t len,
                   unsigned max_depth, isv__arena *a, char *err, size_t cap) {
  memset(out, 0, sizeof *out);
  out->kind = kind;
  parse p = {.out = out, .a = a, .err = err, .cap = cap, .max_depth = max_depth};
  if (body == NULL || len == 0) return fail(&p, NULL, "empty request body: expected a JSON object");
  isv__json_reader_init(&p.rd, body, len, max_depth);
  isv__json_token k, v;
  int rc = next(&p, &k);
  if (rc) return rc;
  if (k.type != ISV__JSON_OBJECT_BEGIN)
    return fail(&p, NULL, "the request body must be a JSON object");
  for (;;) {
    if ((rc = next(&p, &k)) != 0) return rc;
    if (k.type == ISV__JSON_OBJECT_END) break;
    if ((rc = next(&p, &v)) != 0 || (rc = member(&p, &k, &v)) != 0) return rc;
  }
  if (isv__json_next(&p.rd, &k) != ISV__JSON_EOF) return syntax(&p);
  if (out->model == NULL) return fail(&p, "model", "'model' is required");
  if (kind == ISV__OAI_CHAT && out->prompt == NULL)
    return fail(&p, "messages", "'messages' is required");
  if (kind == ISV__OAI_COMPLETION && out->prompt == NULL)
    return fail(&p, "prompt", "'prompt' is required");
  if (kind == ISV__OAI_EMBEDDING && out->n_inputs == 0)
    return fail(&p, "input", "'input' is required");
  if (out->include_usage && !out->stream)
    return fail(&p, "stream_options", "'stream_options' is only allowed with \"stream\": true");
  return 0;
}
