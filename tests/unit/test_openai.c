/* protocol/openai.c: OpenAI's request bodies — the fields kept, the chat rendered as the
 * prompt, unknown fields ignored, and every refusal naming its field. */
#include "cmocka_prelude.h"

#include <string.h>

#include "protocol/openai.h"

static char body[2048];
static char err[512];
static isv__arena arena = ISV__ARENA_INIT;

static int parse(isv__oai_kind kind, const char *json, isv__oai_req *q) {
  snprintf(body, sizeof body, "%s", json);
  err[0] = '\0';
  return isv__oai_parse(q, kind, body, strlen(body), 64, &arena, err, sizeof err);
}

static int teardown(void **state) {
  (void)state;
  isv__arena_free(&arena);
  return 0;
}

/* A refusal: 400, the field named, the message saying `needle`. */
static void refused(isv__oai_kind kind, const char *json, const char *param, const char *needle) {
  isv__oai_req q;
  int rc = parse(kind, json, &q);
  if (rc != ISV_EBADREQ || strstr(err, needle) == NULL ||
      (param ? q.err_param == NULL || strcmp(q.err_param, param) != 0 : q.err_param != NULL))
    fail_msg("%s: rc %d, param %s, message '%s' (want '%s')", json, rc,
             q.err_param ? q.err_param : "(none)", err, needle);
}

static void chat_renders_messages(void **state) {
  (void)state;
  isv__oai_req q;
  assert_int_equal(parse(ISV__OAI_CHAT,
                         "{\"model\":\"m\",\"messages\":[{\"role\":\"system\",\"content\":\"be "
                         "\\\"brief\\\"\"},{\"role\":\"user\",\"content\":[{\"type\":\"text\","
                         "\"text\":\"a\\nb\"},{\"type\":\"text\",\"text\":\"c\"}]},{\"role\":"
                         "\"assistant\",\"content\":null,\"tool_calls\":[]}]}",
                         &q),
                   0);
  assert_string_equal(q.model, "m");
  assert_int_equal(q.prompt_len, strlen(q.prompt));
  assert_string_equal(q.prompt, "system: be \"brief\"\nuser: a\nbc\nassistant: \nassistant:");
  /* the messages as they came, escapes and all */
  assert_int_equal(q.messages_len, strlen(q.messages_json));
  assert_non_null(strstr(q.messages_json, "\"be \\\"brief\\\"\""));
  assert_true(q.messages_json[0] == '[' && q.messages_json[q.messages_len - 1] == ']');
  assert_false(q.stream);
  assert_false(q.has_max_tokens || q.has_temperature || q.has_seed || q.n_stop);
}

static void chat_sampling_fields(void **state) {
  (void)state;
  isv__oai_req q;
  assert_int_equal(parse(ISV__OAI_CHAT,
                         "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"stream\":true,"
                         "\"stream_options\":{\"include_usage\":true},\"max_completion_tokens\":7,"
                         "\"temperature\":0,\"top_p\":0.5,\"seed\":-3,\"stop\":[\"x\",\"yz\"],"
                         "\"frequency_penalty\":-1.5,\"presence_penalty\":2,\"n\":1,"
                         "\"model\":\"lm\"}",
                         &q),
                   0);
  assert_true(q.stream && q.include_usage);
  assert_true(q.has_max_tokens && q.max_tokens == 7);
  assert_true(q.has_temperature && q.temperature == 0);
  assert_true(q.has_top_p && q.top_p == 0.5);
  assert_true(q.has_seed && q.seed == -3);
  assert_true(q.has_frequency_penalty && q.frequency_penalty == -1.5);
  assert_true(q.has_presence_penalty && q.presence_penalty == 2);
  assert_int_equal(q.n_stop, 2);
  assert_int_equal(q.stop[1].len, 2);
  assert_memory_equal(q.stop[1].ptr, "yz", 2);
  assert_string_equal(q.model, "lm");
}

static void unknown_and_null_fields_are_ignored(void **state) {
  (void)state;
  isv__oai_req q;
  assert_int_equal(parse(ISV__OAI_CHAT,
                         "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\","
                         "\"name\":\"bob\"}],\"tools\":[{\"type\":\"function\",\"function\":{"
                         "\"name\":\"f\"}}],\"response_format\":{\"type\":\"text\"},\"user\":"
                         "\"u\",\"logit_bias\":{\"1\":2},\"max_tokens\":null,\"stop\":null,"
                         "\"stream_options\":null,\"logprobs\":false,\"n\":null}",
                         &q),
                   0);
  assert_false(q.has_max_tokens);
  assert_int_equal(q.n_stop, 0);
  assert_string_equal(q.prompt, "user: hi\nassistant:");
}

static void chat_refusals(void **state) {
  (void)state;
  const isv__oai_kind C = ISV__OAI_CHAT;
#define MSG "\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]"
  refused(C, "{\"model\":\"m\"," MSG ",\"n\":2}", "n", "'n' must be 1");
  refused(C, "{\"model\":\"m\"," MSG ",\"n\":1.5}", "n", "'n' must be an integer");
  refused(C, "{\"model\":\"m\"," MSG ",\"max_tokens\":0}", "max_tokens", "at least 1");
  refused(C, "{\"model\":\"m\"," MSG ",\"temperature\":3}", "temperature", "between 0 and 2");
  refused(C, "{\"model\":\"m\"," MSG ",\"temperature\":\"hot\"}", "temperature", "a number");
  refused(C, "{\"model\":\"m\"," MSG ",\"user\":7}", "user", "'user' must be a string");
  refused(C, "{\"model\":\"m\"," MSG ",\"response_format\":\"json\"}", "response_format",
          "must be an object");
  refused(C, "{\"model\":\"m\"," MSG ",\"top_p\":1.5}", "top_p", "between 0 and 1");
  refused(C, "{\"model\":\"m\"," MSG ",\"stream\":\"yes\"}", "stream", "a boolean");
  refused(C, "{\"model\":\"m\"," MSG ",\"stop\":[\"a\",\"b\",\"c\",\"d\",\"e\"]}", "stop",
          "more than 4");
  refused(C, "{\"model\":\"m\"," MSG ",\"stop\":[]}", "stop", "must not be empty");
  refused(C, "{\"model\":\"m\"," MSG ",\"logprobs\":true}", "logprobs", "not supported");
  refused(C, "{\"model\":\"m\"," MSG ",\"stream_options\":{\"include_usage\":true}}",
          "stream_options", "only allowed with \"stream\": true");
  refused(C, "{" MSG "}", "model", "'model' is required");
  refused(C, "{\"model\":\"\"," MSG "}", "model", "non-empty string");
  refused(C, "{\"model\":\"m\"}", "messages", "'messages' is required");
  refused(C, "{\"model\":\"m\",\"messages\":[]}", "messages", "must not be empty");
  refused(C, "{\"model\":\"m\",\"messages\":\"hi\"}", "messages", "array of message objects");
  refused(C, "{\"model\":\"m\",\"messages\":[{\"content\":\"hi\"}]}", "messages", "no 'role'");
  refused(C, "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":"
             "\"image_url\",\"image_url\":{}}]}]}",
          "messages", "type 'image_url' are not supported");
  refused(C, "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":7}]}", "messages",
          "a string or an array of parts");
  refused(C, "[1]", NULL, "must be a JSON object");
  refused(C, "", NULL, "empty request body");
  refused(C, "{\"model\":\"m\"," MSG ",}", NULL, "malformed JSON");
  refused(C, "{\"model\":\"m\"," MSG "} x", NULL, "malformed JSON");
#undef MSG
}

static void completions(void **state) {
  (void)state;
  isv__oai_req q;
  assert_int_equal(parse(ISV__OAI_COMPLETION, "{\"model\":\"m\",\"prompt\":\"the \\u00e9\"}", &q),
                   0);
  assert_string_equal(q.prompt, "the \xc3\xa9");
  assert_null(q.messages_json);
  assert_int_equal(parse(ISV__OAI_COMPLETION, "{\"model\":\"m\",\"prompt\":[\"one\"],"
                                              "\"best_of\":1,\"echo\":false,\"suffix\":null}",
                         &q),
                   0);
  assert_string_equal(q.prompt, "one");
  const isv__oai_kind P = ISV__OAI_COMPLETION;
  refused(P, "{\"model\":\"m\",\"prompt\":[\"a\",\"b\"]}", "prompt", "one prompt per request");
  refused(P, "{\"model\":\"m\",\"prompt\":[1,2]}", "prompt", "token ids is not supported");
  refused(P, "{\"model\":\"m\",\"prompt\":[[1]]}", "prompt", "token ids is not supported");
  refused(P, "{\"model\":\"m\",\"prompt\":\"a\",\"best_of\":2}", "best_of", "must be 1");
  refused(P, "{\"model\":\"m\",\"prompt\":\"a\",\"echo\":true}", "echo", "not supported");
  refused(P, "{\"model\":\"m\",\"prompt\":\"a\",\"logprobs\":2}", "logprobs", "not supported");
  refused(P, "{\"model\":\"m\"}", "prompt", "'prompt' is required");
  /* messages is not a completions field: ignored, and the prompt still required */
  refused(P, "{\"model\":\"m\",\"messages\":[]}", "prompt", "'prompt' is required");
}

static void embeddings(void **state) {
  (void)state;
  isv__oai_req q;
  assert_int_equal(parse(ISV__OAI_EMBEDDING, "{\"model\":\"e\",\"input\":\"one\"}", &q), 0);
  assert_int_equal(q.n_inputs, 1);
  assert_false(q.base64);
  assert_int_equal(parse(ISV__OAI_EMBEDDING,
                         "{\"input\":[\"a\\tb\",\"\",\"c\"],\"encoding_format\":\"base64\","
                         "\"dimensions\":8,\"user\":\"x\",\"model\":\"e\",\"stream\":\"ignored\"}",
                         &q),
                   0);
  assert_int_equal(q.n_inputs, 3);
  assert_true(q.base64);
  assert_int_equal(q.inputs[0].len, 3);
  assert_memory_equal(q.inputs[0].ptr, "a\tb", 3);
  assert_int_equal(q.inputs[1].len, 0);
  assert_memory_equal(q.inputs[2].ptr, "c", 1);
  const isv__oai_kind E = ISV__OAI_EMBEDDING;
  refused(E, "{\"model\":\"e\",\"input\":[]}", "input", "must not be empty");
  refused(E, "{\"model\":\"e\",\"input\":[1,2]}", "input", "token ids is not supported");
  refused(E, "{\"model\":\"e\",\"input\":[\"a\",{}]}", "input", "a string or an array");
  refused(E, "{\"model\":\"e\",\"input\":\"a\",\"encoding_format\":\"hex\"}", "encoding_format",
          "\"float\" or \"base64\"");
  refused(E, "{\"model\":\"e\"}", "input", "'input' is required");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(chat_renders_messages),
      cmocka_unit_test(chat_sampling_fields),
      cmocka_unit_test(unknown_and_null_fields_are_ignored),
      cmocka_unit_test(chat_refusals),
      cmocka_unit_test(completions),
      cmocka_unit_test(embeddings),
  };
  return cmocka_run_group_tests(tests, NULL, teardown);
}
