/* protocol/openai_map.c: an OpenAI request as inputs of the host's model (the prompt, the
 * messages, the strings to embed shaped by the declaration; sampling settings as inputs when
 * declared — the client's value or OpenAI's default — else as parameters), what the model must
 * declare, and its answers read back (text pieces, finish_reason, token counts, embeddings). */
#include "cmocka_prelude.h"

#include <string.h>

#include "core/lifecycle.h"
#include "core/request.h"
#include "core/scheduler.h"
#include "protocol/openai.h"

static uv_loop_t loop;
static isv__core core;

static int noop(isv_request *r, void *u) {
  (void)r;
  (void)u;
  return 0;
}

typedef struct io {
  const char *name;
  isv_datatype dt;
  int64_t dim; /* one dimension */
} io;

/* A ChatML template that wants the conversation to end with the user; `user` counts calls and
 * may ask it to fail. */
typedef struct tmpl_state {
  int calls;
  int fail; /* a code to return instead */
} tmpl_state;

static int chatml(const isv_chat_message *m, size_t n, isv_chat_prompt *out, void *user) {
  tmpl_state *st = user;
  st->calls++;
  if (st->fail) return st->fail;
  if (strcmp(m[n - 1].role.ptr, "user") != 0)
    return isv_chat_prompt_reject(out, "the last message must be the user's");
  for (size_t i = 0; i < n; i++) {
    assert_int_equal(m[i].role.ptr[m[i].role.len], '\0');
    assert_int_equal(m[i].content.ptr[m[i].content.len], '\0');
    if (isv_chat_prompt_append(out, "<|im_start|>", 12) ||
        isv_chat_prompt_append(out, m[i].role.ptr, m[i].role.len) ||
        isv_chat_prompt_append(out, "\n", 1) ||
        isv_chat_prompt_append(out, m[i].content.ptr, m[i].content.len) ||
        isv_chat_prompt_append(out, "<|im_end|>\n", 11))
      return ISV_ENOMEM;
  }
  return isv_chat_prompt_append(out, "<|im_start|>assistant\n", 22);
}

static tmpl_state chatml_state;

static void add_cfg(const char *name, uint32_t max_batch, const io *in, size_t n_in,
                    isv_chat_template_fn tmpl, void *tmpl_user) {
  isv_model_config *c;
  assert_int_equal(isv_model_config_new(name, &c), 0);
  assert_int_equal(isv_model_config_set_chat_template(c, tmpl, tmpl_user), 0);
  assert_int_equal(isv_model_config_set_max_batch(c, max_batch), 0);
  for (size_t i = 0; i < n_in; i++)
    assert_int_equal(isv_model_config_add_input(c, in[i].name, in[i].dt, &in[i].dim, 1), 0);
  int64_t any = -1;
  assert_int_equal(isv_model_config_add_output(c, "text_output", ISV_BYTES, &any, 1), 0);
  isv_backend be = {.struct_size = sizeof be, .infer = noop};
  assert_int_equal(isv__registry_add(&core.reg, c, "1", &be, NULL, NULL), 0);
  isv_model_config_free(c);
}

static void add(const char *name, uint32_t max_batch, const io *in, size_t n_in) {
  add_cfg(name, max_batch, in, n_in, NULL, NULL);
}

static int setup(void **state) {
  (void)state;
  uv_loop_init(&loop);
  isv_options o;
  isv__options_defaults(&o);
  assert_int_equal(isv__core_init(&core, &loop, &o), 0);
  const io lm[] = {{"text_input", ISV_BYTES, 1}, {"max_tokens", ISV_INT32, 1},
                   {"temperature", ISV_FP32, 1}, {"random_seed", ISV_UINT64, 1},
                   {"stop_words", ISV_BYTES, -1}, {"stream", ISV_BOOL, 1},
                   {"response_format", ISV_BYTES, 1}};
  add("lm", 0, lm, 7);
  const io plain[] = {{"text_input", ISV_BYTES, 1}};
  add("plain", 0, plain, 1);
  add("emb", 8, plain, 1);
  const io free_dim[] = {{"text_input", ISV_BYTES, -1}};
  add("emb_free", 0, free_dim, 1);
  const io msgs[] = {{"messages", ISV_BYTES, 1}};
  add("chat_json", 0, msgs, 1);
  const io vec[] = {{"x", ISV_FP32, -1}};
  add("vec", 0, vec, 1);
  const io odd[] = {{"text_input", ISV_BYTES, 1}, {"temperature", ISV_BYTES, 1}};
  add("odd", 0, odd, 2);
  const io two[] = {{"text_input", ISV_BYTES, 2}};
  add("two", 0, two, 1);
  const io both[] = {{"text_input", ISV_BYTES, 1}, {"messages", ISV_BYTES, 1}};
  add_cfg("chatml", 0, both, 2, chatml, &chatml_state);
  return 0;
}

static int teardown(void **state) {
  (void)state;
  isv__core_close(&core, NULL);
  uv_run(&loop, UV_RUN_DEFAULT);
  return uv_loop_close(&loop);
}

static char body[1024];

/* model's request for `json`, mapped; *rc the mapping's result. */
static isv_request *map(const char *model, isv__oai_kind kind, const char *json, int *rc) {
  isv_request *r = isv__request_new(&core);
  r->model_name = model;
  assert_int_equal(isv__request_bind(r), 0);
  snprintf(body, sizeof body, "%s", json);
  isv__oai_req q;
  char err[256];
  assert_int_equal(isv__oai_parse(&q, kind, body, strlen(body), 64, &r->arena, err, sizeof err), 0);
  const char *param;
  *rc = isv__oai_to_request(r, &q, &param);
  return r;
}

static const isv_tensor *in(const isv_request *r, const char *name, isv_datatype dt, size_t n) {
  const isv_tensor *t = isv_request_input(r, name);
  if (t == NULL) fail_msg("no input %s", name);
  assert_int_equal(isv_tensor_datatype(t), dt);
  assert_int_equal(isv_tensor_element_count(t), n);
  return t;
}

static void text_model_with_declared_settings(void **state) {
  (void)state;
  int rc;
  isv_request *r = map("lm", ISV__OAI_COMPLETION,
                       "{\"model\":\"lm\",\"prompt\":\"go\",\"max_tokens\":5,\"seed\":9,"
                       "\"stop\":[\"a\",\"b\"],\"stream\":true,\"top_p\":0.25,\"user\":\"u-7\","
                       "\"response_format\":{\"type\": \"json_object\"}}",
                       &rc);
  assert_int_equal(rc, 0);
  const isv_bytes *p = isv_tensor_data(in(r, "text_input", ISV_BYTES, 1));
  assert_memory_equal(p->ptr, "go", 2);
  /* response_format declared: its JSON as sent; user not declared: a parameter */
  p = isv_tensor_data(in(r, "response_format", ISV_BYTES, 1));
  assert_int_equal(p->len, strlen("{\"type\": \"json_object\"}"));
  assert_memory_equal(p->ptr, "{\"type\": \"json_object\"}", p->len);
  const isv_param *u = isv_request_param(r, "user");
  assert_true(u && u->type == ISV_PARAM_STRING && u->v.s.len == 3 &&
              memcmp(u->v.s.ptr, "u-7", 3) == 0);
  assert_int_equal(*(const int32_t *)isv_tensor_data(in(r, "max_tokens", ISV_INT32, 1)), 5);
  /* not given: OpenAI's default */
  assert_true(*(const float *)isv_tensor_data(in(r, "temperature", ISV_FP32, 1)) == 1.0f);
  assert_int_equal(*(const uint64_t *)isv_tensor_data(in(r, "random_seed", ISV_UINT64, 1)), 9);
  const isv_bytes *s = isv_tensor_data(in(r, "stop_words", ISV_BYTES, 2));
  assert_memory_equal(s[1].ptr, "b", 1);
  assert_int_equal(*(const uint8_t *)isv_tensor_data(in(r, "stream", ISV_BOOL, 1)), 1);
  /* top_p is not declared: a parameter */
  const isv_param *tp = isv_request_param(r, "top_p");
  assert_non_null(tp);
  assert_true(tp->type == ISV_PARAM_DOUBLE && tp->v.d == 0.25);
  assert_int_equal(isv__request_validate(r), 0);
  isv_request_free(r);
  /* chat's max_tokens default when declared and not given */
  r = map("lm", ISV__OAI_CHAT, "{\"model\":\"lm\",\"messages\":[{\"role\":\"user\",\"content\":"
                              "\"x\"}]}", &rc);
  assert_int_equal(rc, 0);
  assert_int_equal(*(const int32_t *)isv_tensor_data(in(r, "max_tokens", ISV_INT32, 1)), 4096);
  assert_int_equal(isv_tensor_element_count(in(r, "stop_words", ISV_BYTES, 0)), 0);
  p = isv_tensor_data(in(r, "response_format", ISV_BYTES, 1)); /* declared, not given: empty */
  assert_int_equal(p->len, 0);
  assert_null(isv_request_param(r, "user"));
  assert_int_equal(isv__request_validate(r), 0);
  isv_request_free(r);
}

static void settings_as_parameters(void **state) {
  (void)state;
  int rc;
  isv_request *r = map("plain", ISV__OAI_CHAT,
                       "{\"model\":\"plain\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],"
                       "\"max_tokens\":3,\"temperature\":0.5,\"stop\":\"end\",\"seed\":-1}",
                       &rc);
  assert_int_equal(rc, 0);
  const isv_bytes *p = isv_tensor_data(in(r, "text_input", ISV_BYTES, 1));
  assert_int_equal(p->len, strlen("user: x\nassistant:"));
  const isv_param *v = isv_request_param(r, "max_tokens");
  assert_true(v && v->type == ISV_PARAM_INT64 && v->v.i64 == 3);
  v = isv_request_param(r, "temperature");
  assert_true(v && v->type == ISV_PARAM_DOUBLE && v->v.d == 0.5);
  v = isv_request_param(r, "seed");
  assert_true(v && v->v.i64 == -1);
  v = isv_request_param(r, "stop");
  assert_true(v && v->type == ISV_PARAM_STRING && v->v.s.len == 3);
  assert_null(isv_request_param(r, "top_p")); /* not given: not sent */
  assert_null(isv_request_param(r, "stream"));
  assert_int_equal(isv__request_validate(r), 0);
  isv_request_free(r);
  /* two stop sequences need a declared input */
  r = map("plain", ISV__OAI_COMPLETION, "{\"model\":\"plain\",\"prompt\":\"x\",\"stop\":[\"a\","
                                        "\"b\"]}", &rc);
  assert_int_equal(rc, ISV_EBADREQ);
  assert_non_null(strstr(r->errmsg, "at most one 'stop'"));
  isv_request_free(r);
}

static void chat_messages_input(void **state) {
  (void)state;
  int rc;
  isv_request *r = map("chat_json", ISV__OAI_CHAT,
                       "{\"model\":\"chat_json\",\"messages\":[{\"role\":\"user\",\"content\":"
                       "\"a\\\"b\"}]}", &rc);
  assert_int_equal(rc, 0);
  const isv_bytes *m = isv_tensor_data(in(r, "messages", ISV_BYTES, 1));
  const char want[] = "[{\"role\":\"user\",\"content\":\"a\\\"b\"}]";
  assert_int_equal(m->len, sizeof want - 1);
  assert_memory_equal(m->ptr, want, sizeof want - 1);
  assert_null(isv_request_input(r, "text_input"));
  isv_request_free(r);
  /* completions need text_input */
  r = map("chat_json", ISV__OAI_COMPLETION, "{\"model\":\"chat_json\",\"prompt\":\"x\"}", &rc);
  assert_int_equal(rc, ISV_EBADREQ);
  assert_non_null(strstr(r->errmsg, "no input 'text_input'"));
  isv_request_free(r);
}

/* A model's own chat template makes a chat's text_input; the JSON messages still go to
 * "messages"; completions never call it; a refusal is the client's 400 naming "messages", any
 * other failure the server's. */
static void chat_template_hook(void **state) {
  (void)state;
  int rc;
  const char *chat = "{\"model\":\"chatml\",\"messages\":[{\"role\":\"system\",\"content\":"
                     "\"be \\\"brief\\\"\"},{\"role\":\"user\",\"content\":[{\"type\":\"text\","
                     "\"text\":\"a\"},{\"type\":\"text\",\"text\":\"b\"}]}]}";
  chatml_state = (tmpl_state){0, 0};
  isv_request *r = map("chatml", ISV__OAI_CHAT, chat, &rc);
  assert_int_equal(rc, 0);
  assert_int_equal(chatml_state.calls, 1);
  const isv_bytes *p = isv_tensor_data(in(r, "text_input", ISV_BYTES, 1));
  const char want[] = "<|im_start|>system\nbe \"brief\"<|im_end|>\n<|im_start|>user\nab"
                      "<|im_end|>\n<|im_start|>assistant\n";
  assert_int_equal(p->len, sizeof want - 1);
  assert_memory_equal(p->ptr, want, sizeof want - 1);
  assert_non_null(isv_request_input(r, "messages"));
  isv_request_free(r);

  r = map("chatml", ISV__OAI_COMPLETION, "{\"model\":\"chatml\",\"prompt\":\"raw\"}", &rc);
  assert_int_equal(rc, 0);
  assert_int_equal(chatml_state.calls, 1); /* a completion's prompt is the client's */
  p = isv_tensor_data(in(r, "text_input", ISV_BYTES, 1));
  assert_int_equal(p->len, 3);
  isv_request_free(r);

  const char *last_assistant = "{\"model\":\"chatml\",\"messages\":[{\"role\":\"user\","
                               "\"content\":\"q\"},{\"role\":\"assistant\",\"content\":\"a\"}]}";
  snprintf(body, sizeof body, "%s", last_assistant);
  isv_request *r2 = isv__request_new(&core);
  r2->model_name = "chatml";
  assert_int_equal(isv__request_bind(r2), 0);
  isv__oai_req q;
  char err[256];
  assert_int_equal(isv__oai_parse(&q, ISV__OAI_CHAT, body, strlen(body), 64, &r2->arena, err,
                                  sizeof err), 0);
  assert_int_equal(q.n_msgs, 2);
  const char *param = "unset";
  assert_int_equal(isv__oai_to_request(r2, &q, &param), ISV_EBADREQ);
  assert_string_equal(param, "messages");
  assert_non_null(strstr(r2->errmsg, "model 'chatml' cannot take these messages: the last "
                                     "message must be the user's"));
  isv_request_free(r2);

  chatml_state.fail = ISV_ENOMEM; /* the server's failure, not the client's */
  r = map("chatml", ISV__OAI_CHAT, chat, &rc);
  assert_int_equal(rc, ISV_ENOMEM);
  assert_non_null(strstr(r->errmsg, "chat template failed"));
  isv_request_free(r);
  chatml_state.fail = ISV_ENOTFOUND; /* a client-side code from a template: the backend's fault */
  r = map("chatml", ISV__OAI_CHAT, chat, &rc);
  assert_int_equal(rc, ISV_EBACKEND);
  isv_request_free(r);
  chatml_state.fail = 0;
}

static void embeddings_shapes(void **state) {
  (void)state;
  int rc;
  isv_request *r = map("emb", ISV__OAI_EMBEDDING, "{\"model\":\"emb\",\"input\":[\"a\",\"b\","
                                                  "\"c\"]}", &rc);
  assert_int_equal(rc, 0);
  size_t nd;
  const int64_t *sh = isv_tensor_shape(in(r, "text_input", ISV_BYTES, 3), &nd);
  assert_int_equal(nd, 2); /* a batching model: one row per string */
  assert_int_equal(sh[0], 3);
  assert_int_equal(sh[1], 1);
  assert_int_equal(isv__request_validate(r), 0);
  isv_request_free(r);
  r = map("emb_free", ISV__OAI_EMBEDDING, "{\"model\":\"emb_free\",\"input\":[\"a\",\"b\"]}", &rc);
  assert_int_equal(rc, 0);
  sh = isv_tensor_shape(in(r, "text_input", ISV_BYTES, 2), &nd);
  assert_int_equal(nd, 1);
  assert_int_equal(sh[0], 2);
  isv_request_free(r);
  r = map("two", ISV__OAI_EMBEDDING, "{\"model\":\"two\",\"input\":\"a\"}", &rc);
  assert_int_equal(rc, ISV_EBADREQ);
  assert_non_null(strstr(r->errmsg, "cannot fill"));
  isv_request_free(r);
}

static void models_that_do_not_fit(void **state) {
  (void)state;
  int rc;
  isv_request *r = map("vec", ISV__OAI_CHAT, "{\"model\":\"vec\",\"messages\":[{\"role\":\"user\","
                                             "\"content\":\"x\"}]}", &rc);
  assert_int_equal(rc, ISV_EBADREQ);
  assert_non_null(strstr(r->errmsg, "not a text model"));
  isv_request_free(r);
  r = map("vec", ISV__OAI_EMBEDDING, "{\"model\":\"vec\",\"input\":\"x\"}", &rc);
  assert_int_equal(rc, ISV_EBADREQ);
  assert_non_null(strstr(r->errmsg, "not an embedding model"));
  isv_request_free(r);
  r = map("odd", ISV__OAI_COMPLETION, "{\"model\":\"odd\",\"prompt\":\"x\"}", &rc);
  assert_int_equal(rc, ISV_EBADREQ);
  assert_non_null(strstr(r->errmsg, "declares input 'temperature' as BYTES"));
  isv_request_free(r);
}

/* An output of r, set as a backend would. */
static void out(isv_request *r, const char *name, isv_datatype dt, const void *data, size_t n) {
  isv_tensor *t = isv__request_push_output_slot(r);
  assert_non_null(t);
  t->name = name;
  t->dt = dt;
  t->data = (void *)data;
  t->count = n;
}

static void answers_read_back(void **state) {
  (void)state;
  isv_request *r = isv__request_new(&core);
  r->model_name = "plain";
  assert_int_equal(isv__request_bind(r), 0);
  const isv_bytes pieces[] = {{"a", 1}, {" b", 2}}, fin = {"length", 6};
  const int32_t pt = 4;
  const int64_t ct = 2;
  out(r, "text_output", ISV_BYTES, pieces, 2);
  out(r, "finish_reason", ISV_BYTES, &fin, 1);
  out(r, "prompt_tokens", ISV_INT32, &pt, 1);
  out(r, "completion_tokens", ISV_INT64, &ct, 1);
  isv__buf text;
  isv__buf_init(&text, NULL);
  isv__oai_piece p;
  memset(&p, 0, sizeof p);
  isv__oai_take(r, &text, &p);
  assert_int_equal(text.len, 3);
  assert_memory_equal(text.data, "a b", 3);
  assert_string_equal(p.finish_reason, "length");
  assert_true(p.has_prompt_tokens && p.prompt_tokens == 4);
  assert_true(p.has_completion_tokens && p.completion_tokens == 2);
  isv__buf_free(&text);
  char why[256];
  size_t dim;
  assert_null(isv__oai_embeddings(r, 1, &dim, why, sizeof why)); /* no "embedding", 4 outputs */
  assert_non_null(strstr(why, "no output 'embedding'"));
  const float e[6] = {1, 2, 3, 4, 5, 6};
  out(r, "embedding", ISV_FP32, e, 6);
  assert_ptr_equal(isv__oai_embeddings(r, 2, &dim, why, sizeof why), e);
  assert_int_equal(dim, 3);
  assert_null(isv__oai_embeddings(r, 4, &dim, why, sizeof why)); /* 6 is not 4 rows */
  assert_non_null(strstr(why, "FP32 [4, dim]"));
  isv_request_free(r);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(text_model_with_declared_settings),
      cmocka_unit_test(settings_as_parameters),
      cmocka_unit_test(chat_messages_input),
      cmocka_unit_test(chat_template_hook),
      cmocka_unit_test(embeddings_shapes),
      cmocka_unit_test(models_that_do_not_fit),
      cmocka_unit_test(answers_read_back),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
