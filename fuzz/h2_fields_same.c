/* See h2_fields_same.h. */
#include "h2_fields_same.h"

#include <nghttp2/nghttp2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "transport/h2_fields.h"

/* What one session delivered and sent, as text: "H" the request's header block, "D<n>" n DATA
 * bytes, "T" the trailers, "E" the end of the stream, "R<code>" a RST_STREAM sent. */
typedef struct side {
  int ours; /* the library's checks (nghttp2's off) */
  isv__h2_fields fields;
  int malformed;
  char log[512];
  size_t log_len;
} side;

static void note(side *s, const char *what) {
  size_t n = strlen(what);
  if (s->log_len + n < sizeof s->log) {
    memcpy(s->log + s->log_len, what, n + 1);
    s->log_len += n;
  }
}

/* http2.c's answer to a malformed request */
static void malformed(nghttp2_session *ss, side *s, int32_t id) {
  s->malformed = 1;
  nghttp2_submit_rst_stream(ss, NGHTTP2_FLAG_NONE, id, NGHTTP2_PROTOCOL_ERROR);
}

static int on_begin_headers(nghttp2_session *ss, const nghttp2_frame *f, void *u) {
  (void)ss;
  if (f->headers.cat == NGHTTP2_HCAT_REQUEST) isv__h2_fields_init(&((side *)u)->fields);
  return 0;
}

static int on_header(nghttp2_session *ss, const nghttp2_frame *f, const uint8_t *name,
                     size_t nlen, const uint8_t *value, size_t vlen, uint8_t flags, void *u) {
  (void)flags;
  side *s = u;
  if (!s->ours || s->malformed || f->hd.type != NGHTTP2_HEADERS) return 0;
  int trailer = f->headers.cat != NGHTTP2_HCAT_REQUEST;
  if (isv__h2_field(&s->fields, name, nlen, value, vlen, trailer) != 0)
    malformed(ss, s, f->hd.stream_id);
  return 0;
}

static int on_data_chunk(nghttp2_session *ss, uint8_t flags, int32_t id, const uint8_t *data,
                         size_t len, void *u) {
  (void)flags;
  (void)data;
  side *s = u;
  if (s->malformed) return 0;
  if (s->ours && isv__h2_fields_data(&s->fields, len) != 0) {
    malformed(ss, s, id);
    return 0;
  }
  char t[32];
  snprintf(t, sizeof t, "D%zu", len);
  note(s, t);
  return 0;
}

static int on_frame_recv(nghttp2_session *ss, const nghttp2_frame *f, void *u) {
  side *s = u;
  int headers = f->hd.type == NGHTTP2_HEADERS, end = (f->hd.flags & NGHTTP2_FLAG_END_STREAM) != 0;
  if ((!headers && f->hd.type != NGHTTP2_DATA) || s->malformed) return 0;
  int trailer = headers && f->headers.cat != NGHTTP2_HCAT_REQUEST;
  if (s->ours && isv__h2_fields_frame_end(&s->fields, headers, trailer, end) != 0) {
    malformed(ss, s, f->hd.stream_id);
    return 0;
  }
  if (headers) note(s, trailer ? "T" : "H");
  if (end) note(s, "E");
  return 0;
}

static int on_frame_send(nghttp2_session *ss, const nghttp2_frame *f, void *u) {
  (void)ss;
  if (f->hd.type == NGHTTP2_RST_STREAM) {
    char t[32];
    snprintf(t, sizeof t, "R%u", f->rst_stream.error_code);
    note(u, t);
  }
  return 0;
}

static ssize_t discard(nghttp2_session *ss, const uint8_t *d, size_t n, int fl, void *u) {
  (void)ss;
  (void)d;
  (void)fl;
  (void)u;
  return (ssize_t)n;
}

static void run(side *s, const uint8_t *in, size_t len) {
  nghttp2_session_callbacks *cb;
  nghttp2_option *opt;
  nghttp2_session *ss;
  if (nghttp2_session_callbacks_new(&cb) != 0 || nghttp2_option_new(&opt) != 0) abort();
  nghttp2_session_callbacks_set_on_begin_headers_callback(cb, on_begin_headers);
  nghttp2_session_callbacks_set_on_header_callback(cb, on_header);
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, on_data_chunk);
  nghttp2_session_callbacks_set_on_frame_recv_callback(cb, on_frame_recv);
  nghttp2_session_callbacks_set_on_frame_send_callback(cb, on_frame_send);
  nghttp2_session_callbacks_set_send_callback(cb, discard);
  nghttp2_option_set_no_http_messaging(opt, s->ours);
  nghttp2_option_set_no_closed_streams(opt, 1); /* as http2.c */
  if (nghttp2_session_server_new2(&ss, cb, s, opt) != 0) abort();
  nghttp2_session_callbacks_del(cb);
  nghttp2_option_del(opt);
  if (nghttp2_session_mem_recv(ss, in, len) != (ssize_t)len) note(s, "!recv");
  if (nghttp2_session_send(ss) != 0) note(s, "!send");
  nghttp2_session_del(ss);
}

/* ---- the client's bytes ------------------------------------------------------------------ */

typedef struct out {
  uint8_t *p;
  size_t len, cap;
} out;

static void put(out *o, const void *d, size_t n) {
  if (o->len + n > o->cap) {
    o->cap = (o->len + n) * 2;
    if ((o->p = realloc(o->p, o->cap)) == NULL) abort();
  }
  if (n) memcpy(o->p + o->len, d, n);
  o->len += n;
}

/* a frame on stream 1 (SETTINGS: on the connection, 0) */
static void frame(out *o, uint8_t type, uint8_t flags, const uint8_t *payload, size_t n) {
  uint8_t hd[9] = {(uint8_t)(n >> 16), (uint8_t)(n >> 8), (uint8_t)n, type, flags,
                   0, 0, 0, type != NGHTTP2_SETTINGS};
  put(o, hd, 9);
  put(o, payload, n);
}

/* One header block: HPACK by nghttp2's deflater (its table carries on to the trailers), in
 * HEADERS and CONTINUATION frames of at most 16 KiB. */
static void block(out *o, nghttp2_hd_deflater *d, const h2f_field *f, size_t n, int end) {
  nghttp2_nv *nv = calloc(n ? n : 1, sizeof *nv);
  if (nv == NULL) abort();
  for (size_t i = 0; i < n; i++)
    nv[i] = (nghttp2_nv){(uint8_t *)f[i].name, (uint8_t *)f[i].value, f[i].nlen, f[i].vlen,
                         NGHTTP2_NV_FLAG_NONE};
  size_t cap = nghttp2_hd_deflate_bound(d, nv, n);
  uint8_t *b = malloc(cap ? cap : 1);
  if (b == NULL) abort();
  ssize_t len = nghttp2_hd_deflate_hd(d, b, cap, nv, n);
  if (len < 0) abort();
  size_t off = 0, max = 16384;
  do {
    size_t k = (size_t)len - off < max ? (size_t)len - off : max;
    int last = off + k == (size_t)len;
    uint8_t flags = (uint8_t)((last ? NGHTTP2_FLAG_END_HEADERS : 0) |
                              (off == 0 && end ? NGHTTP2_FLAG_END_STREAM : 0));
    frame(o, off == 0 ? NGHTTP2_HEADERS : NGHTTP2_CONTINUATION, flags, b + off, k);
    off += k;
  } while (off < (size_t)len);
  free(b);
  free(nv);
}

/* the fields, bytes outside printable ASCII escaped, at why + *w */
static void describe(char *why, size_t why_len, size_t *w, const h2f_field *f, size_t n) {
  for (size_t i = 0; i < n; i++)
    for (int part = 0; part < 2; part++) {
      const uint8_t *p = part ? f[i].value : f[i].name;
      size_t len = part ? f[i].vlen : f[i].nlen;
      if (*w + 4 >= why_len) return;
      why[(*w)++] = part ? '=' : ' ';
      for (size_t k = 0; k < len && *w + 5 < why_len; k++)
        *w += p[k] > 0x20 && p[k] < 0x7f && p[k] != '\\'
                  ? (size_t)snprintf(why + *w, 2, "%c", p[k])
                  : (size_t)snprintf(why + *w, 5, "\\x%02x", p[k]);
      why[*w] = '\0';
    }
}

int h2f_same(const h2f_request *r, char *why, size_t why_len) {
  static const uint8_t preface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
  static const uint8_t zeros[16384];
  out o = {0};
  put(&o, preface, sizeof preface - 1);
  frame(&o, NGHTTP2_SETTINGS, 0, NULL, 0);
  nghttp2_hd_deflater *d;
  if (nghttp2_hd_deflate_new(&d, 4096) != 0) abort();
  int trailers = r->send_trailers || r->n_trailers;
  size_t chunks = r->n_chunks ? r->n_chunks : (r->end_on_data && !trailers ? 1 : 0);
  block(&o, d, r->fields, r->n_fields, chunks == 0 && !trailers);
  size_t left = r->body_len > 60000 ? 60000 : r->body_len; /* within the stream's window */
  for (size_t i = 0; i < chunks; i++) {
    size_t k = i + 1 == chunks ? left : left / (chunks - i);
    if (k > sizeof zeros) k = sizeof zeros;
    int end = i + 1 == chunks && !trailers && r->end_on_data;
    frame(&o, NGHTTP2_DATA, end ? NGHTTP2_FLAG_END_STREAM : 0, zeros, k);
    left -= k;
  }
  if (trailers) block(&o, d, r->trailers, r->n_trailers, r->trailers_end);
  nghttp2_hd_deflate_del(d);

  side theirs = {.ours = 0}, ours = {.ours = 1};
  run(&theirs, o.p, o.len);
  run(&ours, o.p, o.len);
  free(o.p);
  /* every request comes to an answer: a session that took nothing in proves nothing */
  if (strcmp(theirs.log, ours.log) == 0 && theirs.log_len) return 1;
  size_t w = (size_t)snprintf(why, why_len, "nghttp2's checks: [%s], the library's: [%s]; "
                              "body %zu in %zu, end on data %d, fields", theirs.log, ours.log,
                              r->body_len, r->n_chunks, r->end_on_data);
  describe(why, why_len, &w, r->fields, r->n_fields);
  if (trailers) {
    w += (size_t)snprintf(why + (w < why_len ? w : why_len), w < why_len ? why_len - w : 0,
                          "; trailers (end %d)", r->trailers_end);
    describe(why, why_len, &w, r->trailers, r->n_trailers);
  }
  return 0;
}
