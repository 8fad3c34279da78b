/* protocol/openai_write.c: OpenAI's answers byte for byte — errors, completion objects, stream
 * chunks (role first, content, finish, usage), embeddings as floats and as little-endian
 * base64, model objects — and text that is not UTF-8 made safe. */
#include "cmocka_prelude.h"

#include <string.h>

#include "codec/base64.h"
#include "protocol/openai.h"

static isv__buf b;

static const char *text(void) {
  isv__buf_putc(&b, '\0');
  b.len--;
  return b.data;
}

static int setup(void **state) {
  (void)state;
  isv__buf_init(&b, NULL);
  return 0;
}

static int teardown(void **state) {
  (void)state;
  isv__buf_free(&b);
  return 0;
}

static void errors(void **state) {
  (void)state;
  isv__oai_write_error(&b, 400, "'n' must be 1", "n", NULL);
  assert_string_equal(text(), "{\"error\":{\"message\":\"'n' must be 1\",\"type\":"
                              "\"invalid_request_error\",\"param\":\"n\",\"code\":null}}");
  b.len = 0;
  isv__oai_write_error(&b, 404, "no such model", NULL, "model_not_found");
  assert_string_equal(text(), "{\"error\":{\"message\":\"no such model\",\"type\":"
                              "\"invalid_request_error\",\"param\":null,\"code\":"
                              "\"model_not_found\"}}");
  b.len = 0;
  isv__oai_write_error(&b, 401, "who are you", NULL, NULL);
  assert_non_null(strstr(text(), "\"code\":\"invalid_api_key\""));
  b.len = 0;
  isv__oai_write_error(&b, 429, "slow down", NULL, NULL);
  assert_non_null(strstr(text(), "\"type\":\"requests\",\"param\":null,\"code\":"
                                 "\"rate_limit_exceeded\""));
  b.len = 0;
  isv__oai_write_error(&b, 503, "busy", NULL, NULL);
  assert_non_null(strstr(text(), "\"type\":\"server_error\""));
  b.len = 0;
  isv__oai_write_error(&b, 400, "bad \xff byte", NULL, NULL); /* a client's bytes quoted */
  assert_non_null(strstr(text(), "\"bad ? byte\""));
}

static const isv__oai_meta chat = {ISV__OAI_CHAT, "chatcmpl-1", 1700000000, "lm"};
static const isv__oai_meta cmpl = {ISV__OAI_COMPLETION, "cmpl-1", 1700000000, "lm"};

static void completion_objects(void **state) {
  (void)state;
  isv__oai_usage u = {3, 4};
  isv__oai_write_completion(&b, &chat, "hi \"there\"", 10, "stop", &u);
  assert_string_equal(text(),
                      "{\"id\":\"chatcmpl-1\",\"object\":\"chat.completion\",\"created\":1700000000,"
                      "\"model\":\"lm\",\"choices\":[{\"index\":0,\"message\":{\"role\":"
                      "\"assistant\",\"content\":\"hi \\\"there\\\"\"},\"logprobs\":null,"
                      "\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":3,"
                      "\"completion_tokens\":4,\"total_tokens\":7}}");
  b.len = 0;
  isv__oai_write_completion(&b, &cmpl, NULL, 0, "length", &u);
  assert_string_equal(text(),
                      "{\"id\":\"cmpl-1\",\"object\":\"text_completion\",\"created\":1700000000,"
                      "\"model\":\"lm\",\"choices\":[{\"index\":0,\"text\":\"\",\"logprobs\":null,"
                      "\"finish_reason\":\"length\"}],\"usage\":{\"prompt_tokens\":3,"
                      "\"completion_tokens\":4,\"total_tokens\":7}}");
}

#define CHUNK_HEAD "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":" \
                   "1700000000,\"model\":\"lm\",\"choices\":"

static void chunks(void **state) {
  (void)state;
  isv__oai_write_chunk(&b, &chat, "assistant", "", 0, NULL, NULL, 0);
  assert_string_equal(text(), CHUNK_HEAD "[{\"index\":0,\"delta\":{\"role\":\"assistant\","
                              "\"content\":\"\"},\"logprobs\":null,\"finish_reason\":null}]}\n\n");
  b.len = 0;
  isv__oai_write_chunk(&b, &chat, NULL, " word", 5, NULL, NULL, 1);
  assert_string_equal(text(), CHUNK_HEAD "[{\"index\":0,\"delta\":{\"content\":\" word\"},"
                              "\"logprobs\":null,\"finish_reason\":null}],\"usage\":null}\n\n");
  b.len = 0;
  isv__oai_write_chunk(&b, &chat, NULL, NULL, 0, "length", NULL, 0);
  assert_string_equal(text(), CHUNK_HEAD "[{\"index\":0,\"delta\":{},\"logprobs\":null,"
                              "\"finish_reason\":\"length\"}]}\n\n");
  b.len = 0;
  isv__oai_usage u = {2, 5};
  isv__oai_write_chunk(&b, &chat, NULL, NULL, 0, NULL, &u, 1);
  assert_string_equal(text(), CHUNK_HEAD "[],\"usage\":{\"prompt_tokens\":2,"
                              "\"completion_tokens\":5,\"total_tokens\":7}}\n\n");
  b.len = 0;
  isv__oai_write_chunk(&b, &cmpl, NULL, "ab", 2, NULL, NULL, 0);
  assert_string_equal(text(), "data: {\"id\":\"cmpl-1\",\"object\":\"text_completion\","
                              "\"created\":1700000000,\"model\":\"lm\",\"choices\":[{\"index\":0,"
                              "\"text\":\"ab\",\"logprobs\":null,\"finish_reason\":null}]}\n\n");
  b.len = 0; /* a piece that cut a character in two */
  isv__oai_write_chunk(&b, &chat, NULL, "caf\xc3", 4, NULL, NULL, 0);
  assert_non_null(strstr(text(), "\"content\":\"caf?\""));
}

static void embeddings(void **state) {
  (void)state;
  const float v[] = {1.0f, -2.0f, 0.5f, 0.0f};
  isv__oai_write_embeddings(&b, "e", v, 2, 2, 0, 3);
  assert_string_equal(text(), "{\"object\":\"list\",\"data\":[{\"object\":\"embedding\",\"index\":0,"
                              "\"embedding\":[1.0,-2.0]},{\"object\":\"embedding\",\"index\":1,"
                              "\"embedding\":[0.5,0.0]}],\"model\":\"e\",\"usage\":{"
                              "\"prompt_tokens\":3,\"total_tokens\":3}}");
  b.len = 0;
  isv__oai_write_embeddings(&b, "e", v, 1, 2, 1, 0);
  /* 00 00 80 3f 00 00 00 c0: 1.0 and -2.0, little-endian */
  assert_non_null(strstr(text(), "\"embedding\":\"AACAPwAAAMA=\""));
  /* a row longer than one encoding block: the same string as the whole row at once */
  float row[200];
  unsigned char le[800];
  for (int i = 0; i < 200; i++) {
    row[i] = (float)i * 0.25f - 7.0f;
    uint32_t x;
    memcpy(&x, &row[i], 4);
    for (int k = 0; k < 4; k++) le[4 * i + k] = (unsigned char)(x >> (8 * k));
  }
  isv__buf want;
  isv__buf_init(&want, NULL);
  isv__buf_puts(&want, "\"embedding\":\"");
  isv__base64_encode(&want, le, sizeof le);
  isv__buf_puts(&want, "\"}");
  isv__buf_putc(&want, '\0');
  b.len = 0;
  isv__oai_write_embeddings(&b, "e", row, 1, 200, 1, 0);
  assert_non_null(strstr(text(), want.data));
  isv__buf_free(&want);
}

static void model_object(void **state) {
  (void)state;
  isv__oai_write_model(&b, "tiny_lm", 0, "libinferserve");
  assert_string_equal(text(), "{\"id\":\"tiny_lm\",\"object\":\"model\",\"created\":0,"
                              "\"owned_by\":\"libinferserve\"}");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(errors, setup, teardown),
      cmocka_unit_test_setup_teardown(completion_objects, setup, teardown),
      cmocka_unit_test_setup_teardown(chunks, setup, teardown),
      cmocka_unit_test_setup_teardown(embeddings, setup, teardown),
      cmocka_unit_test_setup_teardown(model_object, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
