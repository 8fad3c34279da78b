/* OpenAI's REST API (chat/completions, completions, embeddings, models): the request parser
 * and the answer writers. No I/O here — openai_http.c serves them, the fuzz target and the unit
 * tests drive these directly. How a request becomes a request to a host's model (the tensor
 * names) is include/inferserve.h's "OpenAI-compatible endpoints" section; openai_map.c does it.
 *
 * Fields the front end does not know are ignored (clients send many), as OpenAI's compatible
 * servers do; a known field that cannot be honoured (n > 1, token-id prompts, a non-text
 * content part) is refused, naming it (isv__oai_req.err_param). */
#ifndef ISV_PROTOCOL_OPENAI_H
#define ISV_PROTOCOL_OPENAI_H

#include "protocol/layer.h"

#include <stdint.h>

#include "codec/buf.h"
#include "core/arena.h"
#include "core/request.h"
#include "inferserve.h"

typedef enum isv__oai_kind {
  ISV__OAI_CHAT,       /* POST .../chat/completions */
  ISV__OAI_COMPLETION, /* POST .../completions */
  ISV__OAI_EMBEDDING,  /* POST .../embeddings */
} isv__oai_kind;

/* Most stop sequences a request may give (OpenAI's limit). */
#define ISV__OAI_MAX_STOP 4

typedef struct isv__oai_req {
  isv__oai_kind kind;
  const char *model; /* NUL-terminated, in the arena */
  int stream, include_usage;
  /* chat: the "messages" array as it came (JSON text, in the arena), and rendered as the
   * prompt; completions: the prompt; embeddings: unused */
  const char *messages_json;
  size_t messages_len;
  const char *prompt;
  size_t prompt_len;
  /* chat: each message's role and content (text parts joined), in the arena, for a model's
   * own chat template (isv_model_config_set_chat_template) */
  isv_chat_message *msgs;
  size_t n_msgs;
  /* embeddings: the strings ("input": a string or an array of them), in the arena */
  isv_bytes *inputs;
  size_t n_inputs;
  int base64; /* "encoding_format": "base64" */
  /* sampling: has_* says the client gave it */
  int has_max_tokens, has_temperature, has_top_p, has_seed, has_frequency_penalty,
      has_presence_penalty;
  int64_t max_tokens; /* max_tokens or max_completion_tokens */
  double temperature, top_p, frequency_penalty, presence_penalty;
  int64_t seed;
  isv_bytes stop[ISV__OAI_MAX_STOP];
  size_t n_stop;
  /* chat and completions: "user" (the end user's id) and "response_format" (its JSON object as
   * sent), for the model; ptr NULL when absent */
  isv_bytes user, response_format;
  const char *err_param; /* a refused request: the field at fault ("n", "messages"), or NULL */
} isv__oai_req;

/* Parse body (mutable: strings are unescaped in place; what out keeps is copied to a) as a
 * request of `kind`. 0, or ISV_EBADREQ / ISV_ENOMEM with a message in err naming the problem
 * (and out->err_param the field). */
int isv__oai_parse(isv__oai_req *out, isv__oai_kind kind, char *body, size_t len,
                   unsigned max_depth, isv__arena *a, char *err, size_t cap);

/* ---- the host's model (openai_map.c) --------------------------------------------------------- */

/* r (bound to its model) gets q's inputs, by the names inferserve.h documents: the prompt (a
 * chat's from the model's own template when it has one), the messages, the embeddings'
 * strings, and each sampling setting as an input when the model declares one of its names (the
 * client's value, else OpenAI's default), else as a request parameter when the client gave it.
 * 0, or r failed (ISV_EBADREQ naming what the model lacks or declares in a form the front end
 * cannot give, or why its template refused the messages: *param "messages"; else *param
 * NULL). */
int isv__oai_to_request(isv_request *r, const isv__oai_req *q, const char **param);

/* What one response (or the completion) of a text model says. */
typedef struct isv__oai_piece {
  char finish_reason[32]; /* "" when the response has no "finish_reason" */
  int has_prompt_tokens, has_completion_tokens;
  int64_t prompt_tokens, completion_tokens;
} isv__oai_piece;

/* Append resp's "text_output" elements to text, and read its "finish_reason",
 * "prompt_tokens" and "completion_tokens" outputs into p (untouched when absent). */
void isv__oai_take(const isv_request *resp, isv__buf *text, isv__oai_piece *p);

/* An embedding model's answer for n strings: its "embedding" output (else its only output),
 * FP32 with n rows of *dim. NULL with why set when it is not that. */
const float *isv__oai_embeddings(const isv_request *r, size_t n, size_t *dim, char *why,
                                 size_t cap);

/* ---- answers --------------------------------------------------------------------------------- */

/* What every completion object and chunk repeats. */
typedef struct isv__oai_meta {
  isv__oai_kind kind; /* CHAT or COMPLETION */
  const char *id;     /* "chatcmpl-..." / "cmpl-..." */
  uint64_t created;   /* Unix seconds */
  const char *model;
} isv__oai_meta;

typedef struct isv__oai_usage {
  int64_t prompt_tokens, completion_tokens;
} isv__oai_usage;

/* {"error":{"message","type","param","code"}} for an HTTP status, with the type (and, when
 * code is NULL, the code) OpenAI answers it with: 4xx invalid_request_error (401 code
 * invalid_api_key), 429 requests / rate_limit_exceeded, 5xx server_error. param and code may be
 * NULL (JSON null); the message is UTF-8-sanitised. */
void isv__oai_write_error(isv__buf *b, int http_status, const char *msg, const char *param,
                          const char *code);
/* A whole answer: "chat.completion" ({message: {role, content}}) or "text_completion"
 * ({text}), one choice, with its finish_reason and usage. */
void isv__oai_write_completion(isv__buf *b, const isv__oai_meta *m, const char *text, size_t len,
                               const char *finish_reason, const isv__oai_usage *u);
/* One Server-Sent Event "data: {...}\n\n" of a stream: a "chat.completion.chunk" (or a
 * streamed "text_completion"). role: the first chunk's delta role (NULL: none); text: a
 * content piece (NULL: none; a chat chunk with neither has an empty delta); finish_reason:
 * the last chunk's (NULL: null); usage: a usage-only chunk with no choices (include_usage's
 * last); with_usage: the other chunks carry "usage": null (include_usage asked). */
void isv__oai_write_chunk(isv__buf *b, const isv__oai_meta *m, const char *role, const char *text,
                          size_t len, const char *finish_reason, const isv__oai_usage *usage,
                          int with_usage);
/* {"object":"list","data":[{"object":"embedding","index":i,"embedding":[...] or "<base64 of
 * little-endian FP32>"}...],"model","usage"}: n rows of dim floats. */
void isv__oai_write_embeddings(isv__buf *b, const char *model, const float *data, size_t n,
                               size_t dim, int base64, int64_t prompt_tokens);
/* A model object {"id","object":"model","created","owned_by"}. */
void isv__oai_write_model(isv__buf *b, const char *id, uint64_t created, const char *owned_by);

#endif
