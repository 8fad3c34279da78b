/* OpenAI's request bodies (protocol/openai.c): the first byte picks chat, completions or
 * embeddings, the rest is the body. Must never crash, leak or hang; a body either parses or
 * fails with ISV_EBADREQ and a message. What parses is then mapped onto the fixture's model
 * (not a text model: refused with a message) and written back through every answer writer —
 * each answer must be valid JSON (an event's after its "data: "), whatever text it carries. */
#include <stdlib.h>
#include <string.h>

#include "codec/json_reader.h"
#include "core/request.h"
#include "core_fixture.h"
#include "protocol/openai.h"

/* b's bytes from `from` are one valid JSON value, else abort. */
static void valid_json(isv__buf *b, size_t from) {
  if (b->failed) abort();
  char *copy = malloc(b->len - from + 1);
  memcpy(copy, b->data + from, b->len - from);
  isv__json_reader rd;
  isv__json_reader_init(&rd, copy, b->len - from, 64);
  isv__json_token t;
  isv__json_type ty = isv__json_next(&rd, &t);
  if (ty == ISV__JSON_ERROR || isv__json_skip(&rd, &t, NULL) != 0 ||
      isv__json_next(&rd, &t) != ISV__JSON_EOF)
    abort();
  free(copy);
}

/* A "data: {...}\n\n" event: its JSON checked. */
static void valid_event(isv__buf *b) {
  if (b->len < 8 || memcmp(b->data, "data: ", 6) != 0 || b->data[b->len - 1] != '\n' ||
      b->data[b->len - 2] != '\n')
    abort();
  b->len -= 2;
  valid_json(b, 6);
}

static void answers(const isv__oai_req *q) {
  isv__buf b;
  isv__buf_init(&b, NULL);
  isv__oai_meta m = {q->kind == ISV__OAI_EMBEDDING ? ISV__OAI_CHAT : q->kind, "chatcmpl-0", 0,
                     q->model};
  isv__oai_usage u = {q->has_max_tokens ? q->max_tokens : 0, (int64_t)q->prompt_len};
  const char *text = q->prompt ? q->prompt : "";
  size_t len = q->prompt ? q->prompt_len : 0;
  const char *finish = q->n_stop ? q->stop[0].ptr : "stop"; /* client text, as a model's */
  isv__oai_write_completion(&b, &m, text, len, finish, &u);
  valid_json(&b, 0);
  b.len = 0;
  isv__oai_write_chunk(&b, &m, "assistant", text, len, NULL, NULL, q->include_usage);
  valid_event(&b);
  b.len = 0;
  isv__oai_write_chunk(&b, &m, NULL, NULL, 0, finish, q->stream ? &u : NULL, 1);
  valid_event(&b);
  b.len = 0;
  if (q->messages_json) { /* the messages as a model's text: any bytes at all */
    isv__oai_write_chunk(&b, &m, NULL, q->messages_json, q->messages_len, NULL, NULL, 0);
    valid_event(&b);
    b.len = 0;
  }
  size_t n = q->n_inputs, dim = n ? 1 + q->inputs[0].len % 70 : 0;
  float *v = calloc(n * dim + 1, sizeof *v);
  for (size_t i = 0; i < n * dim; i++) v[i] = (float)i - 3.5f;
  isv__oai_write_embeddings(&b, q->model, v, n, dim, q->base64, 3);
  valid_json(&b, 0);
  free(v);
  b.len = 0;
  isv__oai_write_model(&b, q->model, 0, "owner");
  valid_json(&b, 0);
  isv__buf_free(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0) return 0;
  isv__oai_kind kind = (isv__oai_kind)(data[0] % 3);
  char *body = malloc(size);
  memcpy(body, data + 1, size - 1);
  isv_request *r = isv_fuzz_request();
  isv__oai_req q;
  char err[512];
  err[0] = '\0';
  int rc = isv__oai_parse(&q, kind, body, size - 1, 64, &r->arena, err, sizeof err);
  if (rc == 0) {
    answers(&q);
    /* a chat's messages as a host's template sees them: each role non-empty, both strings
     * NUL-terminated at their length */
    if (kind == ISV__OAI_CHAT && (q.n_msgs == 0 || q.msgs == NULL)) abort();
    for (size_t i = 0; i < q.n_msgs; i++)
      if (q.msgs[i].role.len == 0 || q.msgs[i].role.ptr[q.msgs[i].role.len] != '\0' ||
          q.msgs[i].content.ptr[q.msgs[i].content.len] != '\0')
        abort();
    const char *param;
    if (isv__oai_to_request(r, &q, &param) == 0 || r->errmsg == NULL || r->errmsg[0] == '\0')
      abort(); /* the fixture's model is no text model: refused, saying why */
  } else if (rc != ISV_EBADREQ || err[0] == '\0') {
    abort(); /* every refusal is a bad request with a message */
  } else {
    isv__buf b;
    isv__buf_init(&b, NULL);
    isv__oai_write_error(&b, 400, err, q.err_param, NULL);
    valid_json(&b, 0);
    isv__buf_free(&b);
  }
  isv_request_free(r);
  free(body);
  return 0;
}
