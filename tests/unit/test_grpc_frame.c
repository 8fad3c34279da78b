/* transport/grpc_frame.c: the gRPC length-prefixed message deframer (messages split at every
 * byte boundary, several in one chunk, empty messages, the compressed flag, the size limit
 * checked from the prefix before anything is allocated, owed/partial, free), the prefix
 * writer, the grpc-timeout parser and the percent-encoding of grpc-message. Pure functions:
 * no loop, no sockets. ASan checks that every message handed out is freed exactly once. */
#include "cmocka_prelude.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "transport/grpc_frame.h"

/* ---- helpers ----------------------------------------------------------------------------- */

/* Append one framed message (flag 0) to out at *n. */
static void frame(uint8_t *out, size_t *n, const char *msg, size_t len) {
  unsigned char p[ISV__GRPC_PREFIX];
  isv__grpc_prefix(p, len);
  memcpy(out + *n, p, sizeof p);
  *n += sizeof p;
  if (len) memcpy(out + *n, msg, len);
  *n += len;
}

/* What came out of a deframer: the messages, joined with '|' (each freed as it came). */
typedef struct got {
  char text[512];
  size_t len;
  int messages;
} got;

static void take(got *g, uint8_t *msg, size_t len) {
  assert_non_null(msg);
  assert_true(g->len + len + 1 < sizeof g->text);
  if (g->messages) g->text[g->len++] = '|';
  memcpy(g->text + g->len, msg, len);
  g->len += len;
  g->text[g->len] = '\0';
  g->messages++;
  isv__bigbuf_free(msg);
}

/* Feed one chunk; every status but MORE/MESSAGE fails the test. */
static void feed(isv__grpc_deframer *df, got *g, const uint8_t *data, size_t n) {
  while (n > 0) {
    uint8_t *msg = NULL;
    size_t len = 0;
    size_t before = n;
    isv__deframe_status s = isv__grpc_deframe(df, &data, &n, &msg, &len);
    assert_true(n < before); /* every call makes progress */
    if (s == ISV__DEFRAME_MESSAGE) take(g, msg, len);
    else assert_int_equal(s, ISV__DEFRAME_MORE);
    if (s == ISV__DEFRAME_MORE) assert_int_equal(n, 0); /* MORE: the input is used up */
  }
}

/* Three messages, one of them empty. */
static size_t three_messages(uint8_t *buf) {
  size_t n = 0;
  frame(buf, &n, "hello", 5);
  frame(buf, &n, "", 0);
  frame(buf, &n, "world, again", 12);
  return n;
}

/* ---- the deframer ------------------------------------------------------------------------ */

static void messages_split_at_every_byte_boundary_come_out_whole(void **state) {
  (void)state;
  uint8_t buf[64];
  size_t n = three_messages(buf);
  for (size_t cut = 0; cut <= n; cut++) {
    isv__grpc_deframer df = {0};
    df.max_len = 1024;
    got g = {0};
    feed(&df, &g, buf, cut);
    feed(&df, &g, buf + cut, n - cut);
    assert_int_equal(g.messages, 3);
    assert_string_equal(g.text, "hello||world, again");
    assert_int_equal(isv__grpc_deframer_partial(&df), 0);
    assert_int_equal(isv__grpc_deframer_owed(&df), 0);
    isv__grpc_deframer_free(&df);
  }
  /* and two cuts anywhere: prefixes and messages split three ways */
  for (size_t a = 0; a <= n; a++) {
    for (size_t b = a; b <= n; b++) {
      isv__grpc_deframer df = {0};
      df.max_len = 1024;
      got g = {0};
      feed(&df, &g, buf, a);
      feed(&df, &g, buf + a, b - a);
      feed(&df, &g, buf + b, n - b);
      assert_string_equal(g.text, "hello||world, again");
      isv__grpc_deframer_free(&df);
    }
  }
}

static void messages_fed_one_byte_at_a_time(void **state) {
  (void)state;
  uint8_t buf[64];
  size_t n = three_messages(buf);
  isv__grpc_deframer df = {0};
  df.max_len = 12; /* exactly the largest: accepted */
  got g = {0};
  for (size_t i = 0; i < n; i++) {
    feed(&df, &g, buf + i, 1);
    /* a message completes only on its last byte */
    if (i == 9) assert_int_equal(g.messages, 1);   /* 5 + 5 */
    if (i == 14) assert_int_equal(g.messages, 2);  /* + 5: the empty one, on its prefix */
    if (i == n - 2) assert_int_equal(g.messages, 2);
  }
  assert_int_equal(g.messages, 3);
  assert_string_equal(g.text, "hello||world, again");
  isv__grpc_deframer_free(&df);
}

static void several_messages_in_one_chunk_come_one_per_call(void **state) {
  (void)state;
  uint8_t buf[64];
  size_t total = three_messages(buf);
  isv__grpc_deframer df = {0};
  df.max_len = 1024;
  const uint8_t *d = buf;
  size_t n = total;
  uint8_t *msg;
  size_t len;

  assert_int_equal(isv__grpc_deframe(&df, &d, &n, &msg, &len), ISV__DEFRAME_MESSAGE);
  assert_int_equal(len, 5);
  assert_memory_equal(msg, "hello", 5);
  assert_ptr_equal(d, buf + 10); /* stopped right after the message */
  assert_int_equal(n, total - 10);
  isv__bigbuf_free(msg);

  assert_int_equal(isv__grpc_deframe(&df, &d, &n, &msg, &len), ISV__DEFRAME_MESSAGE);
  assert_int_equal(len, 0);
  assert_non_null(msg); /* an empty message is still a buffer of its own */
  assert_ptr_equal(d, buf + 15);
  isv__bigbuf_free(msg);

  assert_int_equal(isv__grpc_deframe(&df, &d, &n, &msg, &len), ISV__DEFRAME_MESSAGE);
  assert_int_equal(len, 12);
  assert_memory_equal(msg, "world, again", 12);
  assert_int_equal(n, 0);
  isv__bigbuf_free(msg);

  /* nothing left: MORE, and the input untouched */
  assert_int_equal(isv__grpc_deframe(&df, &d, &n, &msg, &len), ISV__DEFRAME_MORE);
  assert_int_equal(n, 0);
  isv__grpc_deframer_free(&df);
}

static void zero_length_messages_complete_on_their_prefix(void **state) {
  (void)state;
  uint8_t buf[16];
  size_t n = 0;
  frame(buf, &n, "", 0);
  frame(buf, &n, "", 0);
  isv__grpc_deframer df = {0};
  df.max_len = 0; /* a limit of 0 still admits empty messages */
  got g = {0};
  feed(&df, &g, buf, n);
  assert_int_equal(g.messages, 2);
  assert_int_equal(g.len, 1); /* "" | "" */
  assert_int_equal(isv__grpc_deframer_partial(&df), 0);
  isv__grpc_deframer_free(&df);
}

static void the_compressed_flag_marks_a_whole_message_and_other_flags_are_refused(void **state) {
  (void)state;
  /* flag 1: the message, delivered whole and marked (its coding is the call's business) */
  uint8_t one[] = {1, 0, 0, 0, 3, 'a', 'b', 'c'};
  isv__grpc_deframer df = {0};
  df.max_len = 1024;
  const uint8_t *d = one;
  size_t n = sizeof one;
  uint8_t *msg = NULL;
  size_t len = 0;
  assert_int_equal(isv__grpc_deframe(&df, &d, &n, &msg, &len), ISV__DEFRAME_COMPRESSED);
  assert_non_null(msg);
  assert_int_equal(len, 3);
  assert_memory_equal(msg, "abc", 3);
  assert_int_equal(n, 0);
  isv__bigbuf_free(msg);
  isv__grpc_deframer_free(&df);
  /* any other flag byte: refused from the prefix, the message never read */
  static const unsigned char flags[] = {2, 0x80, 0xff};
  for (size_t i = 0; i < sizeof flags; i++) {
    uint8_t buf[] = {flags[i], 0, 0, 0, 3, 'a', 'b', 'c'};
    isv__grpc_deframer bad = {0};
    bad.max_len = 1024;
    d = buf;
    n = sizeof buf;
    msg = NULL;
    assert_int_equal(isv__grpc_deframe(&bad, &d, &n, &msg, &len), ISV__DEFRAME_BAD_FLAG);
    assert_null(msg);
    assert_int_equal(n, 3); /* the prefix was read, the message was not */
    assert_null(bad.msg);
    isv__grpc_deframer_free(&bad);
  }
  /* the flag of a later message, split from its length: still that message's */
  uint8_t buf[32];
  n = 0;
  frame(buf, &n, "ok", 2);
  buf[n++] = 1;
  df = (isv__grpc_deframer){0};
  df.max_len = 1024;
  got g = {0};
  feed(&df, &g, buf, n);
  assert_string_equal(g.text, "ok");
  uint8_t rest[] = {0, 0, 0, 1, 'x'};
  d = rest;
  size_t left = sizeof rest;
  msg = NULL;
  assert_int_equal(isv__grpc_deframe(&df, &d, &left, &msg, &len), ISV__DEFRAME_COMPRESSED);
  assert_int_equal(len, 1);
  assert_int_equal(msg[0], 'x');
  isv__bigbuf_free(msg);
  isv__grpc_deframer_free(&df);
}

static void a_message_above_the_limit_is_refused_from_its_prefix(void **state) {
  (void)state;
  struct {
    size_t max_len;
    uint8_t prefix[5];
    size_t want;
  } cases[] = {
      {10, {0, 0, 0, 0, 11}, 11},
      {0, {0, 0, 0, 0, 1}, 1},
      {1000, {0, 0xff, 0xff, 0xff, 0xff}, 0xffffffffu}, /* 4 GiB: never allocated */
      {(1u << 24) - 1, {0, 1, 0, 0, 0}, 1u << 24},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    isv__grpc_deframer df = {0};
    df.max_len = cases[i].max_len;
    /* the prefix arrives in two pieces, with a few message bytes behind it */
    uint8_t buf[8];
    memcpy(buf, cases[i].prefix, 5);
    memcpy(buf + 5, "abc", 3);
    const uint8_t *d = buf;
    size_t n = 2;
    uint8_t *msg = NULL;
    size_t len = 0;
    assert_int_equal(isv__grpc_deframe(&df, &d, &n, &msg, &len), ISV__DEFRAME_MORE);
    assert_int_equal(isv__grpc_deframer_partial(&df), 1);
    assert_int_equal(isv__grpc_deframer_owed(&df), 0); /* the length is not known yet */
    n = 6;
    assert_int_equal(isv__grpc_deframe(&df, &d, &n, &msg, &len), ISV__DEFRAME_TOO_BIG);
    assert_int_equal(len, cases[i].want);
    assert_null(msg);
    assert_null(df.msg); /* nothing allocated */
    assert_int_equal(n, 3);
    isv__grpc_deframer_free(&df);
  }
}

static void owed_and_partial_follow_a_message_in_progress(void **state) {
  (void)state;
  uint8_t buf[32];
  size_t total = 0;
  frame(buf, &total, "0123456789", 10);
  isv__grpc_deframer df = {0};
  df.max_len = 1024;
  got g = {0};
  assert_int_equal(isv__grpc_deframer_partial(&df), 0);
  assert_int_equal(isv__grpc_deframer_owed(&df), 0);

  feed(&df, &g, buf, 3); /* inside the prefix */
  assert_int_equal(isv__grpc_deframer_partial(&df), 1);
  assert_int_equal(isv__grpc_deframer_owed(&df), 0);

  feed(&df, &g, buf + 3, 2); /* the prefix whole, no message byte */
  assert_int_equal(isv__grpc_deframer_partial(&df), 1);
  assert_int_equal(isv__grpc_deframer_owed(&df), 10);

  feed(&df, &g, buf + 5, 4);
  assert_int_equal(isv__grpc_deframer_partial(&df), 1);
  assert_int_equal(isv__grpc_deframer_owed(&df), 6);

  feed(&df, &g, buf + 9, total - 9);
  assert_int_equal(g.messages, 1);
  assert_string_equal(g.text, "0123456789");
  assert_int_equal(isv__grpc_deframer_partial(&df), 0);
  assert_int_equal(isv__grpc_deframer_owed(&df), 0);
  isv__grpc_deframer_free(&df);
}

static void free_lets_go_of_a_message_begun_and_resets(void **state) {
  (void)state;
  uint8_t buf[64];
  size_t n = 0;
  frame(buf, &n, "a message cut short", 19);
  isv__grpc_deframer df = {0};
  df.max_len = 1024;
  got g = {0};
  feed(&df, &g, buf, 12); /* 7 bytes of it: a buffer is held (ASan: not leaked) */
  assert_non_null(df.msg);
  isv__grpc_deframer_free(&df);
  assert_null(df.msg);
  assert_int_equal(isv__grpc_deframer_partial(&df), 0);
  assert_int_equal(isv__grpc_deframer_owed(&df), 0);
  isv__grpc_deframer_free(&df); /* twice is harmless */

  /* the same deframer starts afresh on the next message */
  feed(&df, &g, buf, n);
  assert_int_equal(g.messages, 1);
  assert_string_equal(g.text, "a message cut short");
  isv__grpc_deframer_free(&df);
}

static void messages_come_from_the_bigbuf_cache_when_given(void **state) {
  (void)state;
  isv__bigbuf_cache cache;
  assert_int_equal(isv__bigbuf_cache_init(&cache, 8u << 20, NULL), 0);
  size_t big = ISV__BIGBUF_BLOCK_MIN + 3;
  uint8_t *buf = malloc(big + 5);
  assert_non_null(buf);
  isv__grpc_prefix(buf, big);
  for (size_t i = 0; i < big; i++) buf[5 + i] = (uint8_t)(i * 7);
  isv__grpc_deframer df = {0};
  df.max_len = big;
  df.bufs = &cache;
  const uint8_t *d = buf;
  size_t n = big + 5;
  uint8_t *msg = NULL;
  size_t len = 0;
  assert_int_equal(isv__grpc_deframe(&df, &d, &n, &msg, &len), ISV__DEFRAME_MESSAGE);
  assert_int_equal(len, big);
  assert_memory_equal(msg, buf + 5, big);
  /* END-aligned: the message ends on an ISV__BIGBUF_ALIGN boundary */
  assert_int_equal(((uintptr_t)(msg + len)) % ISV__BIGBUF_ALIGN, 0);
  isv__bigbuf_free(msg);
  isv__grpc_deframer_free(&df);
  free(buf);
  isv__bigbuf_cache_destroy(&cache);
}

/* stop_fresh: a message whose block was just mapped stops the deframer before a byte is copied
 * into it (FRESH, the input left where the message's bytes begin); the next call goes on and
 * the message comes whole. A block from the cache is not fresh: no stop. */
static void a_fresh_message_block_stops_the_deframer_before_it_is_written(void **state) {
  (void)state;
  isv__bigbuf_cache cache;
  assert_int_equal(isv__bigbuf_cache_init(&cache, 8u << 20, NULL), 0);
  size_t big = ISV__BIGBUF_BLOCK_MIN + 3;
  uint8_t *buf = malloc(big + 5);
  assert_non_null(buf);
  isv__grpc_prefix(buf, big);
  for (size_t i = 0; i < big; i++) buf[5 + i] = (uint8_t)(i * 7);
  isv__grpc_deframer df = {0};
  df.max_len = big;
  df.bufs = &cache;
  df.stop_fresh = 1;
  for (int round = 0; round < 2; round++) { /* fresh, then from the cache */
    const uint8_t *d = buf;
    size_t n = big + 5;
    uint8_t *msg = NULL;
    size_t len = 0;
    isv__deframe_status st = isv__grpc_deframe(&df, &d, &n, &msg, &len);
    if (round == 0) {
      assert_int_equal(st, ISV__DEFRAME_FRESH);
      assert_ptr_equal(d, buf + 5);
      assert_int_equal(n, big);
      assert_non_null(df.msg);
      assert_int_equal(df.msg_len, big);
      assert_int_equal(isv__grpc_deframer_owed(&df), big);
      st = isv__grpc_deframe(&df, &d, &n, &msg, &len);
    }
    assert_int_equal(st, ISV__DEFRAME_MESSAGE);
    assert_int_equal(n, 0);
    assert_int_equal(len, big);
    assert_memory_equal(msg, buf + 5, big);
    isv__bigbuf_free(msg); /* into the cache: the second round's block */
  }
  isv__grpc_deframer_free(&df);
  free(buf);
  isv__bigbuf_cache_destroy(&cache);
}

/* ---- the prefix -------------------------------------------------------------------------- */

static void the_prefix_is_a_zero_flag_and_a_big_endian_length(void **state) {
  (void)state;
  unsigned char p[ISV__GRPC_PREFIX];
  isv__grpc_prefix(p, 0);
  assert_memory_equal(p, "\0\0\0\0\0", 5);
  isv__grpc_prefix(p, 5);
  assert_memory_equal(p, "\0\0\0\0\x05", 5);
  isv__grpc_prefix(p, 0x01020304);
  assert_memory_equal(p, "\0\x01\x02\x03\x04", 5);
  isv__grpc_prefix(p, 0xffffffffu);
  assert_memory_equal(p, "\0\xff\xff\xff\xff", 5);
  isv__grpc_prefix(p, 300);
  assert_memory_equal(p, "\0\0\0\x01\x2c", 5);
}

/* ---- grpc-timeout ------------------------------------------------------------------------ */

static uint64_t timeout(const char *s) { return isv__grpc_parse_timeout(s, strlen(s)); }

static void every_timeout_unit_converts_to_milliseconds(void **state) {
  (void)state;
  assert_int_equal(timeout("2H"), 2u * 3600000u);
  assert_int_equal(timeout("3M"), 3u * 60000u);
  assert_int_equal(timeout("4S"), 4000);
  assert_int_equal(timeout("250m"), 250);
  assert_int_equal(timeout("5000u"), 5);
  assert_int_equal(timeout("7000000n"), 7);
  assert_int_equal(timeout("1500u"), 1); /* rounded down to whole milliseconds */
  assert_int_equal(timeout("007S"), 7000); /* leading zeros are digits */
  /* 8 digits is the most the spec allows, with every unit */
  assert_int_equal(timeout("99999999H"), UINT64_C(99999999) * 3600000u);
  assert_int_equal(timeout("99999999M"), UINT64_C(99999999) * 60000u);
  assert_int_equal(timeout("99999999S"), UINT64_C(99999999) * 1000u);
  assert_int_equal(timeout("99999999m"), 99999999);
  assert_int_equal(timeout("99999999u"), 99999);
  assert_int_equal(timeout("99999999n"), 99);
}

static void zero_and_sub_millisecond_timeouts_are_one_millisecond(void **state) {
  (void)state;
  static const char *due[] = {"0H", "0M", "0S", "0m", "0u", "0n", "00000000S", "1u", "999u",
                              "1n", "999999n"};
  for (size_t i = 0; i < sizeof due / sizeof due[0]; i++) assert_int_equal(timeout(due[i]), 1);
  assert_int_equal(timeout("1000u"), 1);
  assert_int_equal(timeout("1000000n"), 1);
  assert_int_equal(timeout("1999999n"), 1);
  assert_int_equal(timeout("2000000n"), 2);
}

static void malformed_timeouts_are_zero(void **state) {
  (void)state;
  static const char *bad[] = {
      "",           "S",          "1",          "10",         "123456789S", /* 9 digits */
      "1234567890m", "1s",        "1h",         "1x",         "1 S",
      " 1S",        "-1S",        "+1S",        "1.5S",       "0x1S",
      "S1",         "1SS",        "\xff\x31S",   "1\n",        "1e3m",
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    if (timeout(bad[i]) != 0) fail_msg("'%s' was taken as a timeout", bad[i]);
  }
  /* a NUL among the digits is not a digit */
  assert_int_equal(isv__grpc_parse_timeout("1\0S", 3), 0);
  assert_int_equal(isv__grpc_parse_timeout(NULL, 0), 0);
}

static void the_timeout_reads_exactly_len_bytes(void **state) {
  (void)state;
  assert_int_equal(isv__grpc_parse_timeout("5mXYZ", 2), 5); /* not NUL-terminated */
  assert_int_equal(isv__grpc_parse_timeout("12S", 2), 0);   /* "12": no unit */
  assert_int_equal(isv__grpc_parse_timeout("12S", 3), 12000);
  assert_int_equal(isv__grpc_parse_timeout("3S", 1), 0);
}

/* ---- grpc-message ------------------------------------------------------------------------ */

static void encoded(const char *in, const char *want) {
  isv__buf b;
  isv__buf_init(&b, NULL);
  isv__grpc_percent_encode(&b, in);
  isv__buf_putc(&b, '\0');
  assert_false(b.failed);
  assert_string_equal(b.data, want);
  isv__buf_free(&b);
}

static void grpc_messages_are_percent_encoded(void **state) {
  (void)state;
  encoded("", "");
  encoded("plain text, ok!", "plain text, ok!");
  encoded(" ~", " ~"); /* the printable range ends are kept */
  encoded("50%", "50%25");
  encoded("%%", "%25%25");
  encoded("a\nb\tc\r", "a%0Ab%09c%0D");
  encoded("\x1f\x7f", "%1F%7F");
  encoded("caf\xc3\xa9", "caf%C3%A9"); /* UTF-8 bytes, upper-case hex */
  encoded("\xff", "%FF");

  /* appends to what the buffer holds */
  isv__buf b;
  isv__buf_init(&b, NULL);
  isv__buf_puts(&b, "x=");
  isv__grpc_percent_encode(&b, "1%");
  assert_int_equal(b.len, 6);
  assert_memory_equal(b.data, "x=1%25", 6);
  isv__buf_free(&b);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(messages_split_at_every_byte_boundary_come_out_whole),
      cmocka_unit_test(messages_fed_one_byte_at_a_time),
      cmocka_unit_test(several_messages_in_one_chunk_come_one_per_call),
      cmocka_unit_test(zero_length_messages_complete_on_their_prefix),
      cmocka_unit_test(the_compressed_flag_marks_a_whole_message_and_other_flags_are_refused),
      cmocka_unit_test(a_message_above_the_limit_is_refused_from_its_prefix),
      cmocka_unit_test(owed_and_partial_follow_a_message_in_progress),
      cmocka_unit_test(free_lets_go_of_a_message_begun_and_resets),
      cmocka_unit_test(messages_come_from_the_bigbuf_cache_when_given),
      cmocka_unit_test(a_fresh_message_block_stops_the_deframer_before_it_is_written),
      cmocka_unit_test(the_prefix_is_a_zero_flag_and_a_big_endian_length),
      cmocka_unit_test(every_timeout_unit_converts_to_milliseconds),
      cmocka_unit_test(zero_and_sub_millisecond_timeouts_are_one_millisecond),
      cmocka_unit_test(malformed_timeouts_are_zero),
      cmocka_unit_test(the_timeout_reads_exactly_len_bytes),
      cmocka_unit_test(grpc_messages_are_percent_encoded),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
