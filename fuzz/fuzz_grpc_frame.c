/* libFuzzer target: the pure gRPC framing functions of transport/grpc_frame.c.
 *
 * The deframer: byte 0 chooses the size limit (byte0 * 64), byte 1 seeds how the rest is cut
 * into chunks (0: one chunk), and the rest is a stream of length-prefixed messages. The stream
 * is deframed chunk by chunk and compared with a reference that parses the whole buffer at
 * once: the same messages (bytes, lengths, and whether their flag said compressed), the same
 * end (BAD_FLAG, TOO_BIG with the same length, or MORE), and at the end the same owed/partial. Every call must make progress, MORE
 * only when the input is used up, and nothing may be allocated for a refused message.
 *
 * grpc-timeout: every ','-separated piece of the input is parsed and compared with a reference
 * (1 to 8 ASCII digits and one of H M S m u n, in ms, at least 1; 0 when malformed).
 *
 * grpc-message: the input up to its first NUL is percent-encoded, and the encoding must decode
 * back to it, with only printable ASCII but '%' left as is and upper-case hex escapes. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "transport/grpc_frame.h"

static void check(int cond, const char *what) {
  if (cond) return;
  fprintf(stderr, "MISMATCH: %s\n", what);
  abort();
}

/* ---- the deframer ------------------------------------------------------------------------ */

typedef struct ref_result {
  isv__deframe_status end; /* MORE, BAD_FLAG or TOO_BIG */
  size_t too_big_len;
  size_t n_msgs;
  int partial;
  size_t owed;
} ref_result;

/* The whole stream at once; msgs[i] = offset of message i's bytes, lens[i] its length. */
static void reference(const uint8_t *d, size_t n, size_t max_len, size_t *offs, size_t *lens,
                      uint8_t *flags, ref_result *r) {
  memset(r, 0, sizeof *r);
  size_t pos = 0;
  for (;;) {
    size_t left = n - pos;
    if (left < ISV__GRPC_PREFIX) {
      r->end = ISV__DEFRAME_MORE;
      r->partial = left > 0;
      return;
    }
    if (d[pos] > 1) {
      r->end = ISV__DEFRAME_BAD_FLAG;
      return;
    }
    size_t len = ((size_t)d[pos + 1] << 24) | ((size_t)d[pos + 2] << 16) |
                 ((size_t)d[pos + 3] << 8) | d[pos + 4];
    if (len > max_len) {
      r->end = ISV__DEFRAME_TOO_BIG;
      r->too_big_len = len;
      return;
    }
    if (left - ISV__GRPC_PREFIX < len) {
      r->end = ISV__DEFRAME_MORE;
      r->partial = 1;
      r->owed = len - (left - ISV__GRPC_PREFIX);
      return;
    }
    offs[r->n_msgs] = pos + ISV__GRPC_PREFIX;
    lens[r->n_msgs] = len;
    flags[r->n_msgs] = d[pos];
    r->n_msgs++;
    pos += ISV__GRPC_PREFIX + len;
  }
}

static uint32_t next_rand(uint32_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 17;
  *s ^= *s << 5;
  return *s;
}

static void deframer(const uint8_t *data, size_t size) {
  if (size < 2) return;
  size_t max_len = (size_t)data[0] * 64;
  uint32_t seed = data[1];
  const uint8_t *d = data + 2;
  size_t n = size - 2;

  /* at most one message per 5 bytes */
  size_t *offs = malloc((n / ISV__GRPC_PREFIX + 1) * sizeof *offs);
  size_t *lens = malloc((n / ISV__GRPC_PREFIX + 1) * sizeof *lens);
  uint8_t *flags = malloc(n / ISV__GRPC_PREFIX + 1);
  if (offs == NULL || lens == NULL || flags == NULL) {
    free(offs);
    free(lens);
    free(flags);
    return;
  }
  ref_result want;
  reference(d, n, max_len, offs, lens, flags, &want);

  isv__grpc_deframer df;
  memset(&df, 0, sizeof df);
  df.max_len = max_len;
  size_t got = 0, pos = 0;
  isv__deframe_status end = ISV__DEFRAME_MORE;
  size_t too_big_len = 0;
  uint32_t s = seed * 2654435761u + 1;
  while (pos < n && end == ISV__DEFRAME_MORE) {
    size_t chunk = seed == 0 ? n - pos : 1 + next_rand(&s) % 23;
    if (chunk > n - pos) chunk = n - pos;
    const uint8_t *p = d + pos;
    size_t left = chunk;
    while (left > 0) {
      uint8_t *msg = NULL;
      size_t len = 0, before = left;
      const uint8_t *pb = p;
      isv__deframe_status st = isv__grpc_deframe(&df, &p, &left, &msg, &len);
      check(left < before, "no progress with input left");
      check(p == pb + (before - left), "data and n advanced differently");
      if (st == ISV__DEFRAME_MORE) {
        check(left == 0, "MORE with input left");
        check(msg == NULL, "MORE handed out a message");
        break;
      }
      if (st == ISV__DEFRAME_MESSAGE || st == ISV__DEFRAME_COMPRESSED) {
        check(got < want.n_msgs, "more messages than the reference");
        check((st == ISV__DEFRAME_COMPRESSED) == (flags[got] == 1), "compressed flag");
        check(len == lens[got], "message length");
        check(msg != NULL, "MESSAGE without a buffer");
        check(len <= max_len, "message above the limit");
        if (len) check(memcmp(msg, d + offs[got], len) == 0, "message bytes");
        isv__bigbuf_free(msg);
        got++;
        continue;
      }
      check(msg == NULL, "a refusal handed out a message");
      check(df.msg == NULL, "a refused message was allocated");
      check(st != ISV__DEFRAME_NOMEM, "out of memory for a message under 16 KiB");
      end = st;
      if (st == ISV__DEFRAME_TOO_BIG) too_big_len = len;
      break;
    }
    pos += chunk;
  }
  check(got == want.n_msgs, "message count");
  check(end == want.end, "how the stream ended");
  if (end == ISV__DEFRAME_TOO_BIG) check(too_big_len == want.too_big_len, "TOO_BIG length");
  if (end == ISV__DEFRAME_MORE) {
    check(isv__grpc_deframer_partial(&df) == want.partial, "partial");
    check(isv__grpc_deframer_owed(&df) == want.owed, "owed");
  }
  isv__grpc_deframer_free(&df);
  check(isv__grpc_deframer_partial(&df) == 0 && isv__grpc_deframer_owed(&df) == 0,
        "free did not reset");
  free(offs);
  free(lens);
  free(flags);
}

/* ---- grpc-timeout ------------------------------------------------------------------------ */

static uint64_t ref_timeout(const char *v, size_t n) {
  if (n < 2 || n > 9) return 0;
  uint64_t x = 0;
  for (size_t i = 0; i + 1 < n; i++) {
    if (v[i] < '0' || v[i] > '9') return 0;
    x = x * 10 + (uint64_t)(v[i] - '0');
  }
  static const struct {
    char unit;
    uint64_t mul, div;
  } units[] = {{'H', 3600000, 1}, {'M', 60000, 1}, {'S', 1000, 1},
               {'m', 1, 1},       {'u', 1, 1000},  {'n', 1, 1000000}};
  for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
    if (v[n - 1] == units[i].unit) {
      uint64_t ms = x * units[i].mul / units[i].div;
      return ms ? ms : 1;
    }
  return 0;
}

static void timeouts(const uint8_t *data, size_t size) {
  const char *s = (const char *)data;
  size_t start = 0;
  for (size_t i = 0; i <= size; i++) {
    if (i < size && s[i] != ',') continue;
    size_t len = i - start;
    uint64_t got = isv__grpc_parse_timeout(s + start, len);
    check(got == ref_timeout(s + start, len), "grpc-timeout value");
    check(got == 0 || (len >= 2 && len <= 9), "grpc-timeout accepted a bad length");
    start = i + 1;
  }
}

/* ---- grpc-message ------------------------------------------------------------------------ */

static int hexval(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1; /* lower case is not what we write */
}

static void percent(const uint8_t *data, size_t size) {
  char *in = malloc(size + 1);
  if (in == NULL) return;
  memcpy(in, data, size);
  in[size] = '\0';
  size_t n = strlen(in);
  isv__buf b;
  isv__buf_init(&b, NULL);
  isv__buf_puts(&b, "pre");
  isv__grpc_percent_encode(&b, in);
  check(!b.failed, "buffer failed");
  check(b.len >= 3 && memcmp(b.data, "pre", 3) == 0, "the buffer's content was touched");
  size_t k = 0;
  for (size_t i = 3; i < b.len; k++) {
    check(k < n, "the encoding is longer than its input");
    unsigned char want = (unsigned char)in[k];
    char c = b.data[i];
    if (c == '%') {
      check(i + 2 < b.len, "a truncated escape");
      int hi = hexval(b.data[i + 1]), lo = hexval(b.data[i + 2]);
      check(hi >= 0 && lo >= 0, "an escape that is not upper-case hex");
      check((unsigned char)(hi * 16 + lo) == want, "an escape of the wrong byte");
      check(want < 0x20 || want > 0x7e || want == '%', "a printable byte was escaped");
      i += 3;
    } else {
      check(c >= 0x20 && c <= 0x7e, "an unprintable byte left as is");
      check((unsigned char)c == want, "a byte changed");
      i++;
    }
  }
  check(k == n, "the encoding is shorter than its input");
  isv__buf_free(&b);
  free(in);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  deframer(data, size);
  timeouts(data, size);
  percent(data, size);
  return 0;
}
