/* OpenAI's answers (openai.h): completion objects, stream chunks, embeddings, models, errors. */
#include <string.h>

#include "codec/base64.h"
#include "codec/json_writer.h"
#include "codec/utf8.h"
#include "protocol/openai.h"

static void put_str(isv__buf *b, const char *s) { isv__json_write_string(b, s, strlen(s)); }

/* Text a model produced, or a message that may quote a client: JSON needs valid UTF-8, and a
 * model may cut a character in two between its pieces — such bytes become '?'. */
static void put_text(isv__buf *b, const char *s, size_t n) {
  if (isv__utf8_valid(s, n)) {
    isv__json_write_string(b, s, n);
    return;
  }
  char *copy = isv__malloc(b->mem, n ? n : 1);
  if (copy == NULL) {
    b->failed = 1;
    return;
  }
  for (size_t i = 0; i < n; i++) copy[i] = (unsigned char)s[i] < 0x80 ? s[i] : '?';
  isv__json_write_string(b, copy, n);
  isv__free(copy);
}

static void put_str_or_null(isv__buf *b, const char *s) {
  if (s) put_str(b, s);
  else isv__buf_puts(b, "null");
}

void isv__oai_write_error(isv__buf *b, int http_status, const char *msg, const char *param,
                          const char *code) {
  const char *type = "invalid_request_error";
  if (http_status >= 500) type = "server_error";
  else if (http_status == 429) type = "requests";
  if (code == NULL && http_status == 401) code = "invalid_api_key";
  else if (code == NULL && http_status == 429) code = "rate_limit_exceeded";
  isv__buf_puts(b, "{\"error\":{\"message\":");
  put_text(b, msg, strlen(msg));
  isv__buf_puts(b, ",\"type\":");
  put_str(b, type);
  isv__buf_puts(b, ",\"param\":");
  put_str_or_null(b, param);
  isv__buf_puts(b, ",\"code\":");
  put_str_or_null(b, code);
  isv__buf_puts(b, "}}");
}

/* "id", "object", "created", "model" — the start of every completion object and chunk. */
static void put_head(isv__buf *b, const isv__oai_meta *m, const char *object) {
  isv__buf_puts(b, "{\"id\":");
  put_str(b, m->id);
  isv__buf_puts(b, ",\"object\":");
  put_str(b, object);
  isv__buf_puts(b, ",\"created\":");
  isv__json_write_u64(b, m->created);
  isv__buf_puts(b, ",\"model\":");
  put_text(b, m->model, strlen(m->model));
}

static void put_usage(isv__buf *b, const isv__oai_usage *u) {
  isv__buf_puts(b, "\"usage\":{\"prompt_tokens\":");
  isv__json_write_i64(b, u->prompt_tokens);
  isv__buf_puts(b, ",\"completion_tokens\":");
  isv__json_write_i64(b, u->completion_tokens);
  isv__buf_puts(b, ",\"total_tokens\":");
  isv__json_write_i64(b, u->prompt_tokens + u->completion_tokens);
  isv__buf_putc(b, '}');
}

void isv__oai_write_completion(isv__buf *b, const isv__oai_meta *m, const char *text, size_t len,
                               const char *finish_reason, const isv__oai_usage *u) {
  int chat = m->kind == ISV__OAI_CHAT;
  put_head(b, m, chat ? "chat.completion" : "text_completion");
  isv__buf_puts(b, ",\"choices\":[{\"index\":0,");
  if (chat) {
    isv__buf_puts(b, "\"message\":{\"role\":\"assistant\",\"content\":");
    put_text(b, text ? text : "", text ? len : 0);
    isv__buf_puts(b, "},");
  } else {
    isv__buf_puts(b, "\"text\":");
    put_text(b, text ? text : "", text ? len : 0);
    isv__buf_putc(b, ',');
  }
  isv__buf_puts(b, "\"logprobs\":null,\"finish_reason\":");
  put_str_or_null(b, finish_reason);
  isv__buf_puts(b, "}],");
  put_usage(b, u);
  isv__buf_putc(b, '}');
}

void isv__oai_write_chunk(isv__buf *b, const isv__oai_meta *m, const char *role, const char *text,
                          size_t len, const char *finish_reason, const isv__oai_usage *usage,
                          int with_usage) {
  int chat = m->kind == ISV__OAI_CHAT;
  isv__buf_puts(b, "data: ");
  put_head(b, m, chat ? "chat.completion.chunk" : "text_completion");
  if (usage) { /* include_usage's last chunk: no choices */
    isv__buf_puts(b, ",\"choices\":[],");
    put_usage(b, usage);
    isv__buf_puts(b, "}\n\n");
    return;
  }
  isv__buf_puts(b, ",\"choices\":[{\"index\":0,");
  if (chat) {
    isv__buf_puts(b, "\"delta\":{");
    if (role) {
      isv__buf_puts(b, "\"role\":");
      put_str(b, role);
    }
    if (text) {
      if (role) isv__buf_putc(b, ',');
      isv__buf_puts(b, "\"content\":");
      put_text(b, text, len);
    }
    isv__buf_puts(b, "},");
  } else {
    isv__buf_puts(b, "\"text\":");
    put_text(b, text ? text : "", text ? len : 0);
    isv__buf_putc(b, ',');
  }
  isv__buf_puts(b, "\"logprobs\":null,\"finish_reason\":");
  put_str_or_null(b, finish_reason);
  isv__buf_puts(b, "}]");
  if (with_usage) isv__buf_puts(b, ",\"usage\":null");
  isv__buf_puts(b, "}\n\n");
}

void isv__oai_write_embeddings(isv__buf *b, const char *model, const float *data, size_t n,
                               size_t dim, int base64, int64_t prompt_tokens) {
  isv__buf_puts(b, "{\"object\":\"list\",\"data\":[");
  for (size_t i = 0; i < n; i++) {
    const float *row = data + i * dim;
    if (i) isv__buf_putc(b, ',');
    isv__buf_puts(b, "{\"object\":\"embedding\",\"index\":");
    isv__json_write_u64(b, i);
    isv__buf_puts(b, ",\"embedding\":");
    if (base64) { /* little-endian FP32, as OpenAI's clients decode it */
      /* in blocks of 63 floats: 252 bytes, a multiple of 3, so the pieces' base64 joins into
       * one string with no padding inside */
      unsigned char le[4 * 63];
      isv__buf_putc(b, '"');
      for (size_t j = 0; j < dim;) {
        size_t k = 0;
        for (; k < 63 && j < dim; k++, j++) {
          uint32_t u;
          memcpy(&u, &row[j], 4);
          le[4 * k] = (unsigned char)u;
          le[4 * k + 1] = (unsigned char)(u >> 8);
          le[4 * k + 2] = (unsigned char)(u >> 16);
          le[4 * k + 3] = (unsigned char)(u >> 24);
        }
        isv__base64_encode(b, le, 4 * k);
      }
      isv__buf_putc(b, '"');
    } else {
      isv__buf_putc(b, '[');
      for (size_t j = 0; j < dim; j++) {
        if (j) isv__buf_putc(b, ',');
        isv__json_write_f32(b, row[j]);
      }
      isv__buf_putc(b, ']');
    }
    isv__buf_putc(b, '}');
  }
  isv__buf_puts(b, "],\"model\":");
  put_text(b, model, strlen(model));
  isv__buf_puts(b, ",\"usage\":{\"prompt_tokens\":");
  isv__json_write_i64(b, prompt_tokens);
  isv__buf_puts(b, ",\"total_tokens\":");
  isv__json_write_i64(b, prompt_tokens);
  isv__buf_puts(b, "}}");
}

void isv__oai_write_model(isv__buf *b, const char *id, uint64_t created, const char *owned_by) {
  isv__buf_puts(b, "{\"id\":");
  put_text(b, id, strlen(id));
  isv__buf_puts(b, ",\"object\":\"model\",\"created\":");
  isv__json_write_u64(b, created);
  isv__buf_puts(b, ",\"owned_by\":");
  put_str(b, owned_by);
  isv__buf_putc(b, '}');
}
