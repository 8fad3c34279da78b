/* The demo's models for the OpenAI-compatible endpoints (zoo.h): a tiny language model and a
 * tiny embedding model, deterministic and with nothing to download.
 *
 *   tiny_lm     decoupled, a word bigram model built at start from the text below. Inputs
 *               text_input BYTES [1] (the prompt, or the chat rendered by the front end),
 *               max_tokens INT32 [1], temperature FP32 [1], seed INT64 [1], stop BYTES [-1];
 *               one response per word (text_output BYTES [1]: " word"), --lm-delay-ms apart;
 *               the completion carries finish_reason ("length" at max_tokens, "stop" before a
 *               stop word), prompt_tokens and completion_tokens (INT32 [1]).
 *               It starts from the prompt's last word it knows; temperature 0 is greedy, above
 *               0 it samples (weights count^(1/T)) from a generator seeded by seed and the
 *               prompt: the same request gives the same text. A request cancelled mid-stream
 *               says so on stderr ("tiny_lm: cancelled after N words").
 *   tiny_lm_once  the same model answering once (not decoupled): the whole text in one
 *               text_output — what a model that does not stream looks like to the endpoints.
 *   tiny_embed  text_input BYTES [1] per row (max batch 2048) -> embedding FP32 [64]: hashed
 *               character trigram counts, signed, L2-normalised.
 *   chat_echo   a chat model with its own chat template (isv_model_config_set_chat_template)
 *               that answers the prompt it was given, so a client sees the template's work:
 *               version 1 ChatML ("<|im_start|>user\nhi<|im_end|>\n...<|im_start|>assistant\n"),
 *               version 2 (the default) Llama 3's headers; both refuse a conversation whose
 *               last message is not the user's (400 naming "messages"). "chat_echo/1" names
 *               version 1 from a request's "model".
 */
#include <ctype.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zoo.h"

static const char corpus[] =
    "the server listens on the host loop and the host registers its models . "
    "a model answers a request with a tensor and the server writes the answer . "
    "the client sends a request to the server and the server runs the model . "
    "a small model streams one word at a time and the client reads each word . "
    "the loop never blocks and the worker threads run the slow models . "
    "every answer goes back to the client that asked and the client is happy . "
    "a language model predicts the next word from the word before it . "
    "the embedding model turns a sentence into a vector of numbers . "
    "the stream ends when the model says stop or the client goes away . "
    "when the client goes away the model sees that the request was cancelled . ";

#define MAX_WORDS 256
#define MAX_NEXT 64
#define EMBED_DIM 64

typedef struct lm {
  size_t n_words;
  char words[MAX_WORDS][24];
  /* successors of each word, with repeats (a bigram seen twice is twice as likely) */
  uint16_t next[MAX_WORDS][MAX_NEXT];
  uint8_t n_next[MAX_WORDS];
} lm;

static lm model;
static unsigned delay_ms;

void demo_openai_set_delay_ms(unsigned ms) { delay_ms = ms; }

static size_t word_id(const char *w, size_t n) {
  for (size_t i = 0; i < model.n_words; i++)
    if (strlen(model.words[i]) == n && memcmp(model.words[i], w, n) == 0) return i;
  return SIZE_MAX;
}

static void build(void) {
  size_t prev = SIZE_MAX;
  for (const char *p = corpus; *p;) {
    while (*p == ' ') p++;
    const char *s = p;
    while (*p && *p != ' ') p++;
    size_t n = (size_t)(p - s);
    if (n == 0 || n >= sizeof model.words[0]) continue;
    size_t id = word_id(s, n);
    if (id == SIZE_MAX && model.n_words < MAX_WORDS) {
      id = model.n_words++;
      memcpy(model.words[id], s, n);
      model.words[id][n] = '\0';
    }
    if (prev != SIZE_MAX && id != SIZE_MAX && model.n_next[prev] < MAX_NEXT)
      model.next[prev][model.n_next[prev]++] = (uint16_t)id;
    prev = id;
  }
}

static uint64_t fnv(const char *s, size_t n, uint64_t h) {
  for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 0x100000001b3ull;
  return h;
}

static uint64_t rng(uint64_t *s) { /* xorshift64* */
  *s ^= *s >> 12;
  *s ^= *s << 25;
  *s ^= *s >> 27;
  return *s * 0x2545F4914F6CDD1Dull;
}

/* The next word after `cur`: the most frequent successor at temperature 0, else sampled. */
static size_t pick(size_t cur, float temperature, uint64_t *state) {
  size_t n = model.n_next[cur];
  if (n == 0) return word_id(".", 1);
  unsigned count[MAX_WORDS] = {0};
  for (size_t i = 0; i < n; i++) count[model.next[cur][i]]++;
  if (temperature <= 0) {
    size_t best = model.next[cur][0];
    for (size_t i = 0; i < n; i++)
      if (count[model.next[cur][i]] > count[best]) best = model.next[cur][i];
    return best;
  }
  double w[MAX_NEXT], total = 0;
  for (size_t i = 0; i < n; i++) /* each repeat counted once: weight count^(1/T) per word */
    total += w[i] = pow((double)count[model.next[cur][i]], 1.0 / temperature) /
                    count[model.next[cur][i]];
  double x = (double)(rng(state) >> 11) / 9007199254740992.0 * total;
  for (size_t i = 0; i < n; i++)
    if ((x -= w[i]) < 0) return model.next[cur][i];
  return model.next[cur][n - 1];
}

static int scalar_i64(const isv_request *req, const char *name, int64_t *v) {
  const isv_tensor *t = isv_request_input(req, name);
  if (t == NULL || isv_tensor_element_count(t) != 1) return 0;
  if (isv_tensor_datatype(t) == ISV_INT32) *v = *(const int32_t *)isv_tensor_data(t);
  else if (isv_tensor_datatype(t) == ISV_INT64) *v = *(const int64_t *)isv_tensor_data(t);
  else return 0;
  return 1;
}

static int set_i32(isv_request *req, const char *name, int32_t v) {
  int64_t one = 1;
  return isv_request_set_output(req, name, ISV_INT32, &one, 1, &v, sizeof v, ISV_TRANSIENT);
}

/* user: NULL for tiny_lm (one response per word), non-NULL for tiny_lm_once (one answer). */
static int lm_infer(isv_request *req, void *user) {
  int once = user != NULL;
  char *whole = once ? isv_request_alloc(req, 32 * (size_t)MAX_WORDS) : NULL;
  size_t whole_len = 0;
  if (once && whole == NULL) return demo_fail(req, ISV_ENOMEM, "out of memory");
  const isv_tensor *t = isv_request_input(req, "text_input");
  if (t == NULL || isv_tensor_datatype(t) != ISV_BYTES || isv_tensor_element_count(t) != 1)
    return demo_fail(req, ISV_EBADREQ, "text_input must be one BYTES element");
  const isv_bytes *prompt = isv_tensor_data(t);
  int64_t max_tokens = 16, seed = 0;
  scalar_i64(req, "max_tokens", &max_tokens);
  scalar_i64(req, "seed", &seed);
  float temperature = 1;
  const isv_tensor *tt = isv_request_input(req, "temperature");
  if (tt && isv_tensor_datatype(tt) == ISV_FP32 && isv_tensor_element_count(tt) == 1)
    temperature = *(const float *)isv_tensor_data(tt);
  const isv_tensor *st = isv_request_input(req, "stop");
  const isv_bytes *stop = st && isv_tensor_datatype(st) == ISV_BYTES ? isv_tensor_data(st) : NULL;
  size_t n_stop = stop ? isv_tensor_element_count(st) : 0;

  /* start from the prompt's last known word; count its words as the prompt's tokens */
  size_t cur = SIZE_MAX, prompt_words = 0;
  char low[24];
  for (size_t i = 0; i < prompt->len;) {
    while (i < prompt->len && !isalpha((unsigned char)prompt->ptr[i])) i++;
    size_t s = i, n = 0;
    while (i < prompt->len && isalpha((unsigned char)prompt->ptr[i])) {
      if (n < sizeof low - 1) low[n++] = (char)tolower((unsigned char)prompt->ptr[i]);
      i++;
    }
    if (i == s) break;
    prompt_words++;
    size_t id = word_id(low, n);
    if (id != SIZE_MAX) cur = id;
  }
  uint64_t state = fnv(prompt->ptr, prompt->len, 0xcbf29ce484222325ull) ^ (uint64_t)seed;
  state = state ? state : 1;
  if (cur == SIZE_MAX) cur = (size_t)(rng(&state) % model.n_words);

  if (once && max_tokens > MAX_WORDS) max_tokens = MAX_WORDS; /* what `whole` holds */
  const char *finish = "length";
  int32_t produced = 0;
  int64_t one = 1;
  while (produced < max_tokens) {
    if (isv_request_is_cancelled(req)) {
      fprintf(stderr, "tiny_lm: cancelled after %d words\n", (int)produced);
      return isv_request_complete(req, ISV_ECANCELED, "cancelled");
    }
    size_t next = pick(cur, temperature, &state);
    const char *w = model.words[next];
    int stopped = 0;
    for (size_t k = 0; k < n_stop; k++)
      if (stop[k].len == strlen(w) && memcmp(stop[k].ptr, w, stop[k].len) == 0) stopped = 1;
    if (stopped) { /* OpenAI's rule: the stop sequence is not part of the text */
      finish = "stop";
      break;
    }
    if (delay_ms) uv_sleep(delay_ms);
    char piece[32];
    int len = snprintf(piece, sizeof piece, "%s%s", produced ? " " : "", w);
    int rc = 0;
    if (once) {
      memcpy(whole + whole_len, piece, (size_t)len);
      whole_len += (size_t)len;
    } else {
      isv_bytes b = {piece, (size_t)len};
      rc = isv_request_set_output(req, "text_output", ISV_BYTES, &one, 1, &b, 0, ISV_TRANSIENT);
      if (rc == 0) rc = demo_send_response(req);
    }
    if (rc == ISV_ECANCELED) {
      fprintf(stderr, "tiny_lm: cancelled after %d words\n", (int)produced);
      return isv_request_complete(req, rc, "cancelled");
    }
    if (rc != 0) return rc;
    produced++;
    cur = next; /* "." is a word like any other: only max_tokens and stop words end the text */
  }
  isv_bytes fr = {finish, strlen(finish)}, all = {whole, whole_len};
  int rc = isv_request_set_output(req, "finish_reason", ISV_BYTES, &one, 1, &fr, 0, ISV_TRANSIENT);
  if (rc == 0 && once)
    rc = isv_request_set_output(req, "text_output", ISV_BYTES, &one, 1, &all, 0, ISV_TRANSIENT);
  if (rc == 0) rc = set_i32(req, "prompt_tokens", (int32_t)prompt_words);
  if (rc == 0) rc = set_i32(req, "completion_tokens", produced);
  if (rc != 0) return rc;
  return isv_request_complete(req, 0, NULL);
}

/* ---- tiny_embed -------------------------------------------------------------------------------- */

static void embed_one(const isv_bytes *s, float *v) {
  memset(v, 0, EMBED_DIM * sizeof *v);
  char buf[3];
  size_t n = s->len + 2; /* the text between two spaces, lowercased */
  for (size_t i = 0; i + 3 <= n; i++) {
    for (size_t k = 0; k < 3; k++) {
      size_t j = i + k;
      buf[k] = j == 0 || j == n - 1 ? ' ' : (char)tolower((unsigned char)s->ptr[j - 1]);
    }
    uint64_t h = fnv(buf, 3, 0xcbf29ce484222325ull);
    v[h % EMBED_DIM] += (h >> 32) & 1 ? 1.0f : -1.0f;
  }
  double norm = 0;
  for (size_t i = 0; i < EMBED_DIM; i++) norm += (double)v[i] * v[i];
  if (norm > 0)
    for (size_t i = 0; i < EMBED_DIM; i++) v[i] = (float)(v[i] / sqrt(norm));
}

static int embed_infer(isv_request *req, void *user) {
  (void)user;
  const isv_tensor *t = isv_request_input(req, "text_input");
  if (t == NULL || isv_tensor_datatype(t) != ISV_BYTES)
    return demo_fail(req, ISV_EBADREQ, "text_input must be BYTES");
  size_t n = isv_tensor_element_count(t);
  const isv_bytes *s = isv_tensor_data(t);
  int64_t shape[2] = {(int64_t)n, EMBED_DIM};
  void *out;
  int rc = isv_request_alloc_output(req, "embedding", ISV_FP32, shape, 2, &out);
  if (rc != 0) return rc;
  for (size_t i = 0; i < n; i++) embed_one(&s[i], (float *)out + i * EMBED_DIM);
  return isv_request_complete(req, 0, NULL);
}

/* ---- chat_echo ------------------------------------------------------------------------------- */

/* A chat template's markers around each message: ChatML's or Llama 3's. */
typedef struct chat_format {
  const char *begin_role, *end_role, *end_message, *generation; /* generation: the prompt's end */
} chat_format;

static const chat_format chatml = {"<|im_start|>", "\n", "<|im_end|>\n",
                                   "<|im_start|>assistant\n"};
static const chat_format llama3 = {"<|start_header_id|>", "<|end_header_id|>\n\n", "<|eot_id|>",
                                   "<|start_header_id|>assistant<|end_header_id|>\n\n"};

static int put(isv_chat_prompt *out, const char *s) { return isv_chat_prompt_append(out, s, strlen(s)); }

static int chat_template(const isv_chat_message *m, size_t n, isv_chat_prompt *out, void *user) {
  const chat_format *f = user;
  if (strcmp(m[n - 1].role.ptr, "user") != 0)
    return isv_chat_prompt_reject(out, "the last message must be the user's");
  int rc = f == &llama3 ? put(out, "<|begin_of_text|>") : 0;
  for (size_t i = 0; rc == 0 && i < n; i++) {
    rc = put(out, f->begin_role);
    if (rc == 0) rc = isv_chat_prompt_append(out, m[i].role.ptr, m[i].role.len);
    if (rc == 0) rc = put(out, f->end_role);
    if (rc == 0) rc = isv_chat_prompt_append(out, m[i].content.ptr, m[i].content.len);
    if (rc == 0) rc = put(out, f->end_message);
  }
  return rc == 0 ? put(out, f->generation) : rc;
}

static int echo_infer(isv_request *req, void *user) {
  (void)user;
  const isv_tensor *t = isv_request_input(req, "text_input");
  static const int64_t one = 1;
  int rc = isv_request_set_output(req, "text_output", ISV_BYTES, &one, 1, isv_tensor_data(t), 0,
                                  ISV_TRANSIENT);
  return rc != 0 ? rc : isv_request_complete(req, 0, NULL);
}

/* ---- registration ------------------------------------------------------------------------------ */

static int add_version(isv_server *srv, isv_model_config *c, int rc, const char *version,
                       int (*infer)(isv_request *, void *), void *user) {
  if (rc == 0) {
    isv_backend be;
    memset(&be, 0, sizeof be);
    be.struct_size = sizeof be;
    be.infer = infer;
    rc = isv_server_add_model(srv, c, version, &be, user, NULL);
  }
  isv_model_config_free(c);
  return rc;
}

static int add(isv_server *srv, isv_model_config *c, int rc, int (*infer)(isv_request *, void *),
               void *user) {
  return add_version(srv, c, rc, "1", infer, user);
}

static int add_chat_echo(isv_server *srv, const char *version, const chat_format *f) {
  static const int64_t one[] = {1};
  isv_model_config *c;
  int rc = isv_model_config_new("chat_echo", &c);
  if (rc != 0) return rc;
  rc = isv_model_config_add_input(c, "text_input", ISV_BYTES, one, 1);
  if (rc == 0) rc = isv_model_config_add_output(c, "text_output", ISV_BYTES, one, 1);
  if (rc == 0) rc = isv_model_config_set_chat_template(c, chat_template, (void *)f);
  return add_version(srv, c, rc, version, echo_infer, NULL);
}

/* tiny_lm's declaration; decoupled or not. */
static int lm_config(const char *name, int decoupled, isv_model_config **out) {
  static const int64_t one[] = {1}, any[] = {-1};
  isv_model_config *c;
  *out = NULL;
  int rc = isv_model_config_new(name, &c);
  if (rc != 0) return rc;
  rc = isv_model_config_add_input(c, "text_input", ISV_BYTES, one, 1);
  if (rc == 0) rc = isv_model_config_add_input(c, "max_tokens", ISV_INT32, one, 1);
  if (rc == 0) rc = isv_model_config_add_input(c, "temperature", ISV_FP32, one, 1);
  if (rc == 0) rc = isv_model_config_add_input(c, "seed", ISV_INT64, one, 1);
  if (rc == 0) rc = isv_model_config_add_input(c, "stop", ISV_BYTES, any, 1);
  if (rc == 0) rc = isv_model_config_add_output(c, "text_output", ISV_BYTES, any, 1);
  if (rc == 0) rc = isv_model_config_add_output(c, "finish_reason", ISV_BYTES, one, 1);
  if (rc == 0) rc = isv_model_config_add_output(c, "prompt_tokens", ISV_INT32, one, 1);
  if (rc == 0) rc = isv_model_config_add_output(c, "completion_tokens", ISV_INT32, one, 1);
  if (rc == 0) rc = isv_model_config_set_decoupled(c, decoupled);
  if (rc == 0) rc = isv_model_config_set_exec_mode(c, ISV_EXEC_POOL);
  if (rc == 0) rc = isv_model_config_set_instances(c, 4);
  *out = c;
  return rc;
}

int demo_zoo_register_openai(isv_server *srv) {
  if (model.n_words == 0) build();
  static const int64_t one[] = {1}, dim[] = {EMBED_DIM};
  static int once = 1;
  isv_model_config *c = NULL;
  int rc = lm_config("tiny_lm", 1, &c);
  if (c == NULL || (rc = add(srv, c, rc, lm_infer, NULL)) != 0) return rc;
  rc = lm_config("tiny_lm_once", 0, &c);
  if (c == NULL || (rc = add(srv, c, rc, lm_infer, &once)) != 0) return rc;

  if ((rc = isv_model_config_new("tiny_embed", &c)) != 0) return rc;
  rc = isv_model_config_set_max_batch(c, 2048); /* OpenAI's most inputs */
  if (rc == 0) rc = isv_model_config_add_input(c, "text_input", ISV_BYTES, one, 1);
  if (rc == 0) rc = isv_model_config_add_output(c, "embedding", ISV_FP32, dim, 1);
  if ((rc = add(srv, c, rc, embed_infer, NULL)) != 0) return rc;
  if ((rc = add_chat_echo(srv, "1", &chatml)) != 0) return rc;
  return add_chat_echo(srv, "2", &llama3);
}
