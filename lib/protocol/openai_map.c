/* An OpenAI request as a request to the host's model, and its answers back (openai.h; the
 * names are include/inferserve.h's "OpenAI-compatible endpoints" section). */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "protocol/openai.h"
#include "codec/datatype.h"

/* A sampling setting: the input names a model may declare for it (Triton's TensorRT-LLM
 * names second), and OpenAI's default when the client did not give it. */
typedef enum { F_INT, F_REAL, F_BOOL } field_type;

typedef struct field {
  const char *names[2];
  field_type type;
  size_t has_off, val_off; /* in isv__oai_req; has_off 0: always given (stream) */
  double dflt, chat_dflt; /* chat's max_tokens has no default in OpenAI's API: at most 4096 */
} field;

#define OFF(m) offsetof(isv__oai_req, m)
static const field fields[] = {
    {{"max_tokens", NULL}, F_INT, OFF(has_max_tokens), OFF(max_tokens), 16, 4096},
    {{"temperature", NULL}, F_REAL, OFF(has_temperature), OFF(temperature), 1, 1},
    {{"top_p", NULL}, F_REAL, OFF(has_top_p), OFF(top_p), 1, 1},
    {{"frequency_penalty", NULL}, F_REAL, OFF(has_frequency_penalty), OFF(frequency_penalty), 0, 0},
    {{"presence_penalty", NULL}, F_REAL, OFF(has_presence_penalty), OFF(presence_penalty), 0, 0},
    {{"seed", "random_seed"}, F_INT, OFF(has_seed), OFF(seed), 0, 0},
    {{"stream", NULL}, F_BOOL, 0, OFF(stream), 0, 0},
};
#undef OFF

/* The shape of `n` elements for input io: the declared shape, its one free dimension taking n
 * (or, with `rows` and a batching model whose rows hold one element, n rows), a batch
 * dimension of 1 in front when the model batches. NULL with r failed. */
static int64_t *fit_shape(isv_request *r, const isv__io *io, size_t n, int rows, size_t *ndim) {
  const isv_model_config *c = r->model->cfg;
  size_t off = c->max_batch > 0, nd = io->ndim + off, free_dim = SIZE_MAX;
  int64_t *shape = isv__arena_alloc(&r->arena, (nd ? nd : 1) * sizeof *shape);
  if (shape == NULL) return isv__request_fail(r, ISV_ENOMEM, "out of memory"), NULL;
  long long fixed = 1;
  if (off) shape[0] = 1;
  for (size_t d = 0; d < io->ndim; d++) {
    shape[d + off] = io->shape[d];
    if (io->shape[d] >= 0) fixed *= io->shape[d];
    else if (free_dim == SIZE_MAX) free_dim = d + off;
    else fixed = -1;
  }
  *ndim = nd;
  if (rows && off && fixed == 1) { /* one element per row: n rows */
    shape[0] = (int64_t)n;
    for (size_t d = 1; d < nd; d++)
      if (shape[d] < 0) shape[d] = 1;
    return shape;
  }
  if (free_dim != SIZE_MAX && fixed > 0 && ((size_t)fixed == 1 || n % (size_t)fixed == 0)) {
    shape[free_dim] = (int64_t)(n / (size_t)fixed);
    for (size_t d = 0; d < nd; d++)
      if (shape[d] < 0) shape[d] = 1;
    return shape;
  }
  if (free_dim == SIZE_MAX && (size_t)fixed == n) return shape;
  char want[160];
  isv__shape_text(want, sizeof want, io->shape, io->ndim, (int)off);
  isv__request_fail(r, ISV_EBADREQ, "model '%s' declares input '%s' as %s, which %zu element%s "
                    "cannot fill", c->name, io->name, want, n, n == 1 ? "" : "s");
  return NULL;
}

static int push(isv_request *r, const isv__io *io, void *data, size_t n, int rows) {
  size_t ndim;
  int64_t *shape = fit_shape(r, io, n, rows, &ndim);
  isv_tensor *t = shape ? isv__request_push_input(r) : NULL;
  if (t == NULL) return r->status;
  t->name = io->name;
  t->dt = io->dt;
  t->shape = shape;
  t->ndim = ndim;
  t->data = data;
  t->count = n;
  t->byte_size = io->dt == ISV_BYTES ? isv__bytes_total(data, n) : n * isv__dt_size(io->dt);
  return 0;
}

static int push_bytes(isv_request *r, const isv__io *io, const isv_bytes *b, size_t n, int rows) {
  if (io->dt != ISV_BYTES)
    return isv__request_fail(r, ISV_EBADREQ, "model '%s' declares input '%s' as %s: the OpenAI "
                             "front end gives it as BYTES", r->model->cfg->name, io->name,
                             isv_datatype_name(io->dt));
  isv_bytes *data = isv__arena_alloc(&r->arena, (n ? n : 1) * sizeof *data);
  if (data == NULL) return isv__request_fail(r, ISV_ENOMEM, "out of memory");
  if (n) memcpy(data, b, n * sizeof *data);
  return push(r, io, data, n, rows);
}

/* One number as an element of io's datatype. */
static int push_number(isv_request *r, const isv__io *io, double d, int64_t i, int integral) {
  void *p = isv__arena_alloc(&r->arena, 8);
  if (p == NULL) return isv__request_fail(r, ISV_ENOMEM, "out of memory");
  switch (io->dt) {
    case ISV_INT32: *(int32_t *)p = (int32_t)(integral ? i : (int64_t)d); break;
    case ISV_INT64: *(int64_t *)p = integral ? i : (int64_t)d; break;
    case ISV_UINT32: *(uint32_t *)p = (uint32_t)(integral ? i : (int64_t)d); break;
    case ISV_UINT64: *(uint64_t *)p = (uint64_t)(integral ? i : (int64_t)d); break;
    case ISV_FP32: *(float *)p = (float)(integral ? (double)i : d); break;
    case ISV_FP64: *(double *)p = integral ? (double)i : d; break;
    case ISV_BOOL: *(uint8_t *)p = (integral ? i : d) != 0; break;
    default:
      return isv__request_fail(r, ISV_EBADREQ, "model '%s' declares input '%s' as %s: the OpenAI "
                               "front end gives it as a number or a bool (INT32, INT64, UINT32, "
                               "UINT64, FP32, FP64, BOOL)", r->model->cfg->name, io->name,
                               isv_datatype_name(io->dt));
  }
  return push(r, io, p, 1, 0);
}

static int put_param(isv_request *r, const char *key, const isv_param *v) {
  isv__param_entry *e = isv__request_push_param(r, key, strlen(key));
  if (e == NULL) return r->status;
  e->val = *v;
  return 0;
}

static const isv__io *declared(const isv_request *r, const char *name) {
  return name ? isv__config_input(r->model->cfg, name, strlen(name)) : NULL;
}

static int sampling(isv_request *r, const isv__oai_req *q) {
  for (size_t k = 0; k < sizeof fields / sizeof fields[0]; k++) {
    const field *f = &fields[k];
    const char *base = (const char *)q;
    int has = f->has_off ? *(const int *)(base + f->has_off) : 1;
    const isv__io *io = declared(r, f->names[0]);
    if (io == NULL) io = declared(r, f->names[1]);
    double dflt = q->kind == ISV__OAI_CHAT ? f->chat_dflt : f->dflt;
    int64_t i = 0;
    double d = 0;
    if (f->type == F_INT) i = has ? *(const int64_t *)(base + f->val_off) : (int64_t)dflt;
    else if (f->type == F_REAL) d = has ? *(const double *)(base + f->val_off) : dflt;
    else i = *(const int *)(base + f->val_off);
    int rc = 0;
    if (io) {
      rc = push_number(r, io, d, i, f->type != F_REAL);
    } else if (has && f->has_off) { /* stream is the front end's business, not a parameter */
      isv_param p = {.type = f->type == F_REAL ? ISV_PARAM_DOUBLE : ISV_PARAM_INT64};
      if (f->type == F_REAL) p.v.d = d;
      else p.v.i64 = i;
      rc = put_param(r, f->names[0], &p);
    }
    if (rc) return rc;
  }
  /* user and response_format: a BYTES input when declared (empty when not given), else a
   * STRING parameter when given */
  const struct { const char *name; isv_bytes v; } texts[] = {{"user", q->user},
                                                             {"response_format", q->response_format}};
  for (size_t k = 0; k < sizeof texts / sizeof texts[0]; k++) {
    const isv__io *t = declared(r, texts[k].name);
    int rc = 0;
    if (t) {
      isv_bytes v = texts[k].v.ptr ? texts[k].v : (isv_bytes){"", 0};
      rc = push_bytes(r, t, &v, 1, 0);
    } else if (texts[k].v.ptr) {
      isv_param p = {.type = ISV_PARAM_STRING};
      p.v.s.ptr = texts[k].v.ptr;
      p.v.s.len = texts[k].v.len;
      rc = put_param(r, texts[k].name, &p);
    }
    if (rc) return rc;
  }
  /* stop: a BYTES input of its sequences, else a parameter when there is exactly one */
  const isv__io *io = declared(r, "stop");
  if (io == NULL) io = declared(r, "stop_words");
  if (io) return push_bytes(r, io, q->stop, q->n_stop, 0);
  if (q->n_stop == 1) {
    isv_param p = {.type = ISV_PARAM_STRING};
    p.v.s.ptr = q->stop[0].ptr;
    p.v.s.len = q->stop[0].len;
    return put_param(r, "stop", &p);
  }
  if (q->n_stop > 1)
    return isv__request_fail(r, ISV_EBADREQ, "model '%s' takes at most one 'stop' sequence (it "
                             "declares no 'stop' input)", r->model->cfg->name);
  return 0;
}

/* The input `name` of r's model: declared, or (a model with open I/O) BYTES of any length. */
static const isv__io *text_input(isv_request *r, const char *name, isv__io *open) {
  const isv__io *io = declared(r, name);
  if (io || !r->model->cfg->open_io) return io;
  static int64_t any[] = {-1};
  *open = (isv__io){.name = (char *)name, .name_len = strlen(name), .dt = ISV_BYTES, .shape = any,
                    .ndim = 1};
  return open;
}

/* ---- the model's chat template (inferserve.h: isv_model_config_set_chat_template) ----------- */

struct isv_chat_prompt {
  isv__buf text;
  char why[256]; /* isv_chat_prompt_reject's */
  int rejected;
};

ISV_EXTERN int isv_chat_prompt_append(isv_chat_prompt *out, const char *s, size_t len) {
  if (out == NULL || (s == NULL && len > 0)) return ISV_EINVAL;
  isv__buf_append(&out->text, s, len);
  return out->text.failed ? ISV_ENOMEM : 0;
}

ISV_EXTERN int isv_chat_prompt_reject(isv_chat_prompt *out, const char *why) {
  if (out == NULL) return ISV_EBADREQ;
  snprintf(out->why, sizeof out->why, "%s", why && why[0] ? why : "the model's chat template "
           "refused the messages");
  out->rejected = 1;
  return ISV_EBADREQ;
}

/* The prompt from the model's template, into *prompt (r's arena). 0, or r failed: a refusal
 * is the client's 400 naming the model, any other code the server's. */
static int templated(isv_request *r, const isv__oai_req *q, isv_bytes *prompt) {
  const isv_model_config *c = r->model->cfg;
  isv_chat_prompt out = {.rejected = 0};
  isv__buf_init(&out.text, NULL);
  int rc = c->chat_template(q->msgs, q->n_msgs, &out, c->chat_template_user);
  if (rc == 0 && out.text.failed) rc = ISV_ENOMEM;
  char *text = rc == 0 ? isv__arena_strndup(&r->arena, out.text.data ? out.text.data : "",
                                            out.text.len) : NULL;
  size_t len = out.text.len;
  isv__buf_free(&out.text);
  if (rc == 0 && text == NULL) return isv__request_fail(r, ISV_ENOMEM, "out of memory");
  if (rc == ISV_EBADREQ)
    return isv__request_fail(r, ISV_EBADREQ, "model '%s' cannot take these messages: %s",
                             c->name, out.rejected ? out.why : "its chat template refused them");
  if (rc != 0)
    return isv__request_fail(r, isv_err_http_status(rc) >= 500 ? rc : ISV_EBACKEND,
                             "model '%s''s chat template failed: %s", c->name,
                             isv_strerror(rc));
  *prompt = (isv_bytes){text, len};
  return 0;
}

int isv__oai_to_request(isv_request *r, const isv__oai_req *q, const char **param) {
  *param = NULL;
  const char *name = r->model->cfg->name;
  isv__io open_text, open_msgs;
  if (q->kind == ISV__OAI_EMBEDDING) {
    const isv__io *io = text_input(r, "text_input", &open_text);
    if (io == NULL)
      return isv__request_fail(r, ISV_EBADREQ, "model '%s' is not an embedding model: it has no "
                               "input 'text_input'", name);
    return push_bytes(r, io, q->inputs, q->n_inputs, 1);
  }
  const isv__io *text = text_input(r, "text_input", &open_text);
  const isv__io *msgs = q->kind == ISV__OAI_CHAT && declared(r, "messages")
                            ? text_input(r, "messages", &open_msgs) : NULL;
  if (text == NULL && msgs == NULL)
    return isv__request_fail(r, ISV_EBADREQ, "model '%s' is not a text model: it has no input "
                             "'text_input'%s", name,
                             q->kind == ISV__OAI_CHAT ? " nor 'messages'" : "");
  isv_bytes prompt = {q->prompt, q->prompt_len}, raw = {q->messages_json, q->messages_len};
  if (text && q->kind == ISV__OAI_CHAT && r->model->cfg->chat_template &&
      templated(r, q, &prompt) != 0) {
    if (r->status == ISV_EBADREQ) *param = "messages";
    return r->status;
  }
  if (text && push_bytes(r, text, &prompt, 1, 0) != 0) return r->status;
  if (msgs && push_bytes(r, msgs, &raw, 1, 0) != 0) return r->status;
  return sampling(r, q);
}

/* ---- answers ------------------------------------------------------------------------------- */

static const isv_tensor *output(const isv_request *r, const char *name) {
  for (size_t i = 0; i < r->n_outputs; i++)
    if (strcmp(r->outputs[i].name, name) == 0) return &r->outputs[i];
  return NULL;
}

/* An integer output's first element. */
static int int_of(const isv_tensor *t, int64_t *v) {
  if (t == NULL || t->count < 1) return 0;
  switch (t->dt) {
    case ISV_INT32: *v = *(const int32_t *)t->data; return 1;
    case ISV_INT64: *v = *(const int64_t *)t->data; return 1;
    case ISV_UINT32: *v = *(const uint32_t *)t->data; return 1;
    case ISV_UINT64: *v = (int64_t)*(const uint64_t *)t->data; return 1;
    default: return 0;
  }
}

void isv__oai_take(const isv_request *resp, isv__buf *text, isv__oai_piece *p) {
  const isv_tensor *t = output(resp, "text_output");
  if (t && t->dt == ISV_BYTES)
    for (size_t i = 0; i < t->count; i++) {
      const isv_bytes *b = (const isv_bytes *)t->data + i;
      isv__buf_append(text, b->ptr, b->len);
    }
  t = output(resp, "finish_reason");
  if (t && t->dt == ISV_BYTES && t->count >= 1) {
    const isv_bytes *b = t->data;
    size_t n = b->len < sizeof p->finish_reason - 1 ? b->len : sizeof p->finish_reason - 1;
    memcpy(p->finish_reason, b->ptr, n);
    p->finish_reason[n] = '\0';
  }
  if (int_of(output(resp, "prompt_tokens"), &p->prompt_tokens)) p->has_prompt_tokens = 1;
  if (int_of(output(resp, "completion_tokens"), &p->completion_tokens))
    p->has_completion_tokens = 1;
}

const float *isv__oai_embeddings(const isv_request *r, size_t n, size_t *dim, char *why,
                                 size_t cap) {
  const isv_tensor *t = output(r, "embedding");
  if (t == NULL && r->n_outputs == 1) t = &r->outputs[0];
  if (t == NULL) {
    snprintf(why, cap, "model '%s' answered no output 'embedding'", r->model->cfg->name);
    return NULL;
  }
  if (t->dt != ISV_FP32 || n == 0 || t->count % n != 0) {
    snprintf(why, cap, "model '%s' answered '%s' as %s with %zu elements: an embedding model "
             "answers FP32 [%zu, dim]", r->model->cfg->name, t->name, isv_datatype_name(t->dt),
             t->count, n);
    return NULL;
  }
  *dim = t->count / n;
  return t->data;
}
