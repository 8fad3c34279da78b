/* See grpc_frame.h. */
#include "transport/grpc_frame.h"

#include <string.h>

isv__deframe_status isv__grpc_deframe(isv__grpc_deframer *df, const uint8_t **data, size_t *n,
                                      uint8_t **msg, size_t *len) {
  while (*n > 0) {
    if (df->prefix_len < ISV__GRPC_PREFIX) {
      size_t take = ISV__GRPC_PREFIX - df->prefix_len < *n ? ISV__GRPC_PREFIX - df->prefix_len : *n;
      memcpy(df->prefix + df->prefix_len, *data, take);
      df->prefix_len += take;
      *data += take;
      *n -= take;
      if (df->prefix_len < ISV__GRPC_PREFIX) return ISV__DEFRAME_MORE;
      if (df->prefix[0] > 1) return ISV__DEFRAME_BAD_FLAG;
      size_t l = ((size_t)df->prefix[1] << 24) | ((size_t)df->prefix[2] << 16) |
                 ((size_t)df->prefix[3] << 8) | df->prefix[4];
      if (l > df->max_len) { /* checked before allocating */
        *len = l;
        return ISV__DEFRAME_TOO_BIG;
      }
      if (df->admit && df->admit(df->admit_ctx, l) != 0) {
        *len = l;
        return ISV__DEFRAME_REFUSED;
      }
      df->msg = isv__bigbuf_alloc(df->bufs, l, 1);
      if (df->msg == NULL) return ISV__DEFRAME_NOMEM;
      df->msg_len = l;
      df->msg_got = 0;
      if (df->stop_fresh && isv__bigbuf_fresh(df->msg)) return ISV__DEFRAME_FRESH;
    }
    size_t take = df->msg_len - df->msg_got < *n ? df->msg_len - df->msg_got : *n;
    if (take) memcpy(df->msg + df->msg_got, *data, take);
    df->msg_got += take;
    *data += take;
    *n -= take;
    if (df->msg_got == df->msg_len) {
      *msg = df->msg;
      *len = df->msg_len;
      int compressed = df->prefix[0] == 1;
      df->msg = NULL;
      df->msg_len = df->msg_got = 0;
      df->prefix_len = 0;
      return compressed ? ISV__DEFRAME_COMPRESSED : ISV__DEFRAME_MESSAGE;
    }
  }
  return ISV__DEFRAME_MORE;
}

size_t isv__grpc_deframer_owed(const isv__grpc_deframer *df) {
  return df->msg ? df->msg_len - df->msg_got : 0;
}

int isv__grpc_deframer_partial(const isv__grpc_deframer *df) { return df->prefix_len != 0; }

void isv__grpc_deframer_free(isv__grpc_deframer *df) {
  isv__bigbuf_free(df->msg);
  df->msg = NULL;
  df->msg_len = df->msg_got = df->prefix_len = 0;
}

void isv__grpc_prefix(unsigned char out[ISV__GRPC_PREFIX], size_t len) {
  out[0] = 0;
  out[1] = (unsigned char)(len >> 24);
  out[2] = (unsigned char)(len >> 16);
  out[3] = (unsigned char)(len >> 8);
  out[4] = (unsigned char)len;
}

uint64_t isv__grpc_parse_timeout(const char *v, size_t n) {
  if (n < 2 || n > 9) return 0;
  uint64_t x = 0;
  for (size_t i = 0; i + 1 < n; i++) {
    if (v[i] < '0' || v[i] > '9') return 0;
    x = x * 10 + (uint64_t)(v[i] - '0');
  }
  switch (v[n - 1]) {
  case 'H': x *= 3600000; break;
  case 'M': x *= 60000; break;
  case 'S': x *= 1000; break;
  case 'm': break;
  case 'u': x /= 1000; break;
  case 'n': x /= 1000000; break;
  default: return 0;
  }
  return x ? x : 1; /* under a millisecond, or 0: already due */
}

void isv__grpc_percent_encode(isv__buf *b, const char *s) {
  static const char hex[] = "0123456789ABCDEF";
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    if (*p >= 0x20 && *p <= 0x7e && *p != '%') {
      isv__buf_putc(b, (char)*p);
    } else {
      char e[3] = {'%', hex[*p >> 4], hex[*p & 15]};
      isv__buf_append(b, e, 3);
    }
  }
}
