/* gRPC on HTTP/2, the parts that are pure functions: the length-prefixed message framing
 * (1 byte compressed flag, 4 bytes big-endian length, the message) in both directions, the
 * grpc-timeout header and the percent-encoding of grpc-message. No I/O: unit-tested and fuzzed
 * directly; http2.c feeds them. */
#ifndef ISV_TRANSPORT_GRPC_FRAME_H
#define ISV_TRANSPORT_GRPC_FRAME_H

#include "transport/layer.h"

#include <stddef.h>
#include <stdint.h>

#include "codec/bigbuf.h"
#include "codec/buf.h"

#define ISV__GRPC_PREFIX 5

/* Reassembles messages from DATA payloads split anywhere. Zero-initialise, then set max_len
 * (a larger message is refused from its prefix, before anything is allocated) and bufs. */
typedef struct isv__grpc_deframer {
  size_t max_len;
  isv__bigbuf_cache *bufs; /* where message buffers come from; may be NULL */
  /* May this message of len bytes be buffered? Nonzero: no (ISV__DEFRAME_REFUSED). Asked once
   * per message, after its prefix and before its buffer is allocated. NULL: always. */
  int (*admit)(void *ctx, size_t len);
  void *admit_ctx;
  /* Nonzero: stop with ISV__DEFRAME_FRESH when a message's buffer was just mapped for it
   * (isv__bigbuf_fresh), so the caller can fault it in elsewhere before bytes are copied. */
  int stop_fresh;
  unsigned char prefix[ISV__GRPC_PREFIX];
  size_t prefix_len;
  uint8_t *msg; /* the message being filled */
  size_t msg_len, msg_got;
} isv__grpc_deframer;

typedef enum {
  ISV__DEFRAME_MORE = 0,    /* the input is used up; the message (if any) is not complete */
  ISV__DEFRAME_MESSAGE,     /* a whole message: *msg (the caller's, isv__bigbuf_free), *len */
  ISV__DEFRAME_COMPRESSED,  /* a whole message whose flag says compressed: as MESSAGE */
  ISV__DEFRAME_BAD_FLAG,    /* a flag byte other than 0 and 1 */
  ISV__DEFRAME_TOO_BIG,     /* its prefix says more than max_len (*len says how much) */
  ISV__DEFRAME_REFUSED,     /* admit said no (*len says how much) */
  ISV__DEFRAME_NOMEM,
  ISV__DEFRAME_FRESH        /* stop_fresh: df->msg (df->msg_len bytes) was just mapped and is
                             * untouched; nothing is copied into it until the next call */
} isv__deframe_status;

/* Take bytes from (*data, *n), advancing both, up to the end of the next message. Messages are
 * END-aligned in their buffer: serializers write raw_input_contents last, so the (last) tensor
 * lands aligned and is used in place; large ones reuse the server's mapped blocks. After
 * BAD_FLAG, TOO_BIG or NOMEM the deframer is spent (free it). */
isv__deframe_status isv__grpc_deframe(isv__grpc_deframer *df, const uint8_t **data, size_t *n,
                                      uint8_t **msg, size_t *len);
/* Bytes the client still owes for the message begun (0 between messages). */
size_t isv__grpc_deframer_owed(const isv__grpc_deframer *df);
/* 1 when the stream stopped inside a message (a prefix or a message begun). */
int isv__grpc_deframer_partial(const isv__grpc_deframer *df);
void isv__grpc_deframer_free(isv__grpc_deframer *df);

/* The prefix of an uncompressed message of len bytes (len <= UINT32_MAX). */
void isv__grpc_prefix(unsigned char out[ISV__GRPC_PREFIX], size_t len);

/* grpc-timeout: 1 to 8 digits and a unit (H M S m u n), in ms — at least 1: a timeout under a
 * millisecond, or of 0, is already due. 0 when malformed (no deadline). */
uint64_t isv__grpc_parse_timeout(const char *v, size_t len);

/* grpc-message: printable ASCII but '%' as is, every other byte %XX (the gRPC spec). */
void isv__grpc_percent_encode(isv__buf *b, const char *s);

#endif
