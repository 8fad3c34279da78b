/* A client connection: the state shared by HTTP/1.1 (http1.c) and HTTP/2 (http2.c). The first
 * bytes decide which one serves it: the HTTP/2 connection preface goes to nghttp2, anything
 * else to llhttp (which would half-parse a partial preface, so it never sees one). */
#ifndef ISV_TRANSPORT_CONN_H
#define ISV_TRANSPORT_CONN_H

#include "transport/layer.h"

#include <llhttp.h>

#include "codec/buf.h"
#include "transport/transport.h"

#define ISV__H2_PREFACE "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
#define ISV__H2_PREFACE_LEN 24

typedef struct isv__h2 isv__h2;

typedef struct hdr_span {
  size_t no, nl, vo, vl;
} hdr_span;

struct isv__conn {
  isv__transport *t;
  isv__conn *prev, *next;
  uv_stream_t *stream;
  uv_tcp_t tcp; /* the stream, when we accepted it ourselves */
  int adopted;
  uv_timer_t timer;
  llhttp_t parser;

  /* the request being read */
  int in_message;
  int headers_done;
  int last_span; /* 0 none, 1 url, 2 header field, 3 header value */
  isv__buf head;
  size_t url_len;
  hdr_span *hdrs;
  size_t n_hdrs, cap_hdrs;
  isv__buf body; /* data from isv__bigbuf_alloc when body_big, else malloc'd */
  int body_big;
  size_t body_expected; /* Content-Length, when known */
  int err_status;       /* a limit or syntax error found inside a callback */
  const char *err_msg;

  isv__exchange *ex; /* in flight: dispatched, response not yet written */
  char *pending;     /* bytes read past the dispatched message */
  size_t pending_len;
  int keep_alive;
  int reading;  /* uv_read_start is in effect */
  int peer_eof; /* the client half-closed: answer what it sent, then close */
  int shutting_down; /* close once the in-flight response is written */
  int closing;
  int handles_open;

  /* protocol choice: until `sniffed`, the first bytes wait in sniff[] */
  int sniffed;
  char sniff[ISV__H2_PREFACE_LEN];
  size_t sniff_len;
  isv__h2 *h2; /* non-NULL: this is an HTTP/2 connection */
  int lowat;     /* SO_RCVLOWAT in effect (0: never set, i.e. 1) */
  int lowat_off; /* the stream is not a socket that takes it */
};

/* Read batching: while a large body (HTTP/1.1, known length) or gRPC message (HTTP/2) is half
 * received, SO_RCVLOWAT asks the kernel to wake the loop only once min(what must still come,
 * ISV__LOWAT_MAX) is queued, instead of for every segment (which also costs the sender a
 * wake-up on loopback). The mark is only ever set to bytes the client must send to finish what
 * it started; a client that pauses anyway is heard after ISV__LOWAT_WATCHDOG_MS, when the
 * connection's timer drops the mark back to 1. */
#define ISV__LOWAT_MIN (32u << 10)
#define ISV__LOWAT_MAX (512u << 10)
#define ISV__LOWAT_WATCHDOG_MS 5
void isv__conn_set_lowat(isv__conn *c, int bytes);
/* After a read: `must_come` bytes are still owed by the client (0: nothing known). Sets the mark
 * to min(must_come, ISV__LOWAT_MAX) when that is at least ISV__LOWAT_MIN, else 1, and (re)starts
 * the watchdog on the connection's timer while it is above 1. */
void isv__conn_batch_reads(isv__conn *c, size_t must_come);

void isv__conn_close(isv__conn *c);
void isv__exchange_free(isv__exchange *ex);
void isv__conn_timer_start(isv__conn *c, uint64_t ms);

/* http2.c: take over a connection whose first bytes were the preface (data holds them). */
int isv__h2_start(isv__conn *c, const char *data, size_t len);
void isv__h2_on_read(isv__conn *c, const char *data, size_t len);
/* the connection's timer fired: 1 when HTTP/2 used it (read batching), 0 = idle, close */
int isv__h2_on_timer(isv__conn *c);
/* graceful: GOAWAY, close when the last stream is done */
void isv__h2_shutdown(isv__conn *c);
/* the connection is closing: cancel every stream, free the session */
void isv__h2_free(isv__conn *c);

#endif
