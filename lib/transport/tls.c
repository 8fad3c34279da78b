/* See tls.h. The public isv_tls (include/inferserve.h) is an SSL_CTX being configured; a
 * listener holds its own reference to one, and each connection's SSL object another, so that a
 * reload (a listener given a new one) never disturbs a connection already open. */
#include "transport/tls.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/compiler.h"
#include "codec/mem.h"

#ifdef ISV_HAVE_TLS

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

struct isv_tls {
  SSL_CTX *ctx;
  int has_key;
  char err[256];
};

struct sealed;

typedef struct tls_conn {
  SSL *ssl;
  const isv_mem *mem; /* the server's */
  /* SSL reads ciphertext from, and writes records to, these through the connection's BIO (no
   * copy into a memory BIO and out again): */
  const char *in;      /* what on_read is feeding SSL, not yet read by it (loop stack) */
  size_t in_len;       /* 0 outside isv__tls_on_read */
  struct sealed *out;  /* records written by SSL, not yet flushed: out_len bytes */
  size_t out_len;
  struct sealed *kept; /* a small flushed buffer back from its write, for the next records */
  int handshaken;
  int first_seen;
  int busy; /* read or written since the last quiet check (due: c->tls_check) */
  struct sealing *queue; /* large writes sealed a slice at a time, and those behind them */
  int sealing_busy;      /* the records of a slice of the queue's head are being written */
} tls_conn;

int isv__tls_available(void) { return 1; }

static int fail(isv_tls *t, const char *what) {
  unsigned long e = ERR_get_error();
  char why[160] = "";
  if (e) ERR_error_string_n(e, why, sizeof why);
  snprintf(t->err, sizeof t->err, "%s%s%s", what, why[0] ? ": " : "", why);
  ERR_clear_error();
  return ISV_EINVAL;
}

/* ALPN: h2 first, then http/1.1; a client that offers neither goes on without ALPN. */
static int alpn_select(SSL *ssl, const unsigned char **out, unsigned char *outlen,
                       const unsigned char *in, unsigned inlen, void *arg) {
  (void)ssl;
  (void)arg;
  static const unsigned char ours[] = "\x02h2\x08http/1.1";
  unsigned char *o;
  if (SSL_select_next_proto(&o, outlen, ours, sizeof ours - 1, in, inlen) !=
      OPENSSL_NPN_NEGOTIATED)
    return SSL_TLSEXT_ERR_NOACK;
  *out = o;
  return SSL_TLSEXT_ERR_OK;
}

/* Before 3.0.14, 3.1.6, 3.2.2 and 3.3.1, SSL_free_buffers also freed the buffer of a record
 * half received (CVE-2024-4741): a client that stops mid-record would have it used after free. */
static int free_buffers_safe(void) {
  unsigned long v = OpenSSL_version_num(); /* 0xMNN00PP0 */
  unsigned major = (unsigned)(v >> 28), minor = (unsigned)(v >> 20) & 0xff,
           patch = (unsigned)(v >> 4) & 0xff;
  static const unsigned fixed_in[] = {14, 6, 2, 1}; /* the patch release, for 3.0 to 3.3 */
  if (major != 3) return major > 3;
  return minor > 3 || patch >= fixed_in[minor];
}

ISV_EXTERN int isv_tls_new(isv_tls **out) {
  if (out == NULL) return ISV_EINVAL;
  *out = NULL;
  isv_tls *t = calloc(1, sizeof *t);
  if (t == NULL) return ISV_ENOMEM;
  if ((t->ctx = SSL_CTX_new(TLS_server_method())) == NULL) {
    free(t);
    ERR_clear_error();
    return ISV_ENOMEM;
  }
  SSL_CTX_set_min_proto_version(t->ctx, TLS1_2_VERSION);
  SSL_CTX_set_options(t->ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
  /* an idle connection's buffers go after ISV__TLS_QUIET_MS (isv__tls_quiet); where that is
   * not safe, OpenSSL gives them back after every record */
  if (!free_buffers_safe()) SSL_CTX_set_mode(t->ctx, SSL_MODE_RELEASE_BUFFERS);
  SSL_CTX_set_alpn_select_cb(t->ctx, alpn_select, NULL);
  *out = t;
  return 0;
}

ISV_EXTERN void isv_tls_free(isv_tls *t) {
  if (t == NULL) return;
  SSL_CTX_free(t->ctx); /* listeners and connections keep their own references */
  free(t);
}

ISV_EXTERN const char *isv_tls_last_error(const isv_tls *t) { return t ? t->err : "no tls"; }

ISV_EXTERN int isv_tls_set_cert_files(isv_tls *t, const char *chain_file, const char *key_file) {
  if (t == NULL || chain_file == NULL || key_file == NULL) return ISV_EINVAL;
  t->err[0] = '\0';
  if (SSL_CTX_use_certificate_chain_file(t->ctx, chain_file) != 1)
    return fail(t, "certificate chain file");
  if (SSL_CTX_use_PrivateKey_file(t->ctx, key_file, SSL_FILETYPE_PEM) != 1)
    return fail(t, "private key file");
  if (SSL_CTX_check_private_key(t->ctx) != 1) return fail(t, "the key does not match");
  t->has_key = 1;
  return 0;
}

ISV_EXTERN int isv_tls_set_cert_pem(isv_tls *t, const char *chain_pem, const char *key_pem) {
  if (t == NULL || chain_pem == NULL || key_pem == NULL) return ISV_EINVAL;
  t->err[0] = '\0';
  BIO *b = BIO_new_mem_buf(chain_pem, -1);
  X509 *leaf = b ? PEM_read_bio_X509(b, NULL, NULL, NULL) : NULL;
  int rc = leaf && SSL_CTX_use_certificate(t->ctx, leaf) == 1 ? 0 : fail(t, "certificate PEM");
  X509_free(leaf);
  SSL_CTX_clear_chain_certs(t->ctx);
  for (X509 *ca; rc == 0 && (ca = PEM_read_bio_X509(b, NULL, NULL, NULL)) != NULL;)
    if (SSL_CTX_add0_chain_cert(t->ctx, ca) != 1) {
      X509_free(ca);
      rc = fail(t, "chain certificate");
    }
  ERR_clear_error(); /* the end of the chain reads as an error */
  BIO_free(b);
  if (rc) return rc;
  b = BIO_new_mem_buf(key_pem, -1);
  EVP_PKEY *key = b ? PEM_read_bio_PrivateKey(b, NULL, NULL, NULL) : NULL;
  BIO_free(b);
  rc = key && SSL_CTX_use_PrivateKey(t->ctx, key) == 1 ? 0 : fail(t, "private key PEM");
  EVP_PKEY_free(key);
  if (rc == 0 && SSL_CTX_check_private_key(t->ctx) != 1) rc = fail(t, "the key does not match");
  t->has_key = rc == 0;
  return rc;
}

ISV_EXTERN int isv_tls_set_client_ca_file(isv_tls *t, const char *ca_file, int require) {
  if (t == NULL || ca_file == NULL) return ISV_EINVAL;
  t->err[0] = '\0';
  STACK_OF(X509_NAME) *names = SSL_load_client_CA_file(ca_file);
  if (names == NULL || SSL_CTX_load_verify_locations(t->ctx, ca_file, NULL) != 1) {
    sk_X509_NAME_pop_free(names, X509_NAME_free);
    return fail(t, "client CA file");
  }
  SSL_CTX_set_client_CA_list(t->ctx, names);
  SSL_CTX_set_verify(t->ctx, SSL_VERIFY_PEER | (require ? SSL_VERIFY_FAIL_IF_NO_PEER_CERT : 0),
                     NULL);
  return 0;
}

void *isv__tls_ctx_ref(const isv_tls *tls) {
  if (tls == NULL || !tls->has_key || SSL_CTX_up_ref(tls->ctx) != 1) return NULL;
  return tls->ctx;
}

void isv__tls_ctx_unref(void *ctx) { SSL_CTX_free(ctx); }

/* ---- the connection's BIO --------------------------------------------------------------- */

/* Records wait in a `sealed` block for their write: the header, then `cap` bytes of records. A
 * small block comes back to the connection when written (tls_conn.kept), so that a keep-alive
 * connection's answers reuse one buffer; a large one (a slice of a large answer) is freed. */
typedef struct sealed {
  isv__write_cb cb;
  void *ctx;
  size_t cap;
} sealed;

#define SEALED_KEEP ((size_t)4 << 10) /* the largest block a connection keeps between writes */
#define RECORDS(s) ((char *)((s) + 1))

static int bio_create(BIO *b) {
  BIO_set_init(b, 1);
  return 1;
}

/* SSL asks for the next ciphertext: what on_read is feeding it, else "retry" (WANT_READ). SSL
 * keeps a partial record itself, so what it is given is read whole before on_read returns. */
static int bio_read(BIO *b, char *buf, int len) {
  tls_conn *t = BIO_get_data(b);
  BIO_clear_retry_flags(b);
  if (t->in_len == 0) {
    BIO_set_retry_read(b);
    return -1;
  }
  size_t k = t->in_len < (size_t)len ? t->in_len : (size_t)len;
  memcpy(buf, t->in, k);
  t->in += k;
  t->in_len -= k;
  return (int)k;
}

/* Room for `more` bytes of records after out_len: the kept block if it fits, else a larger one
 * (the records so far moved). 0 or ISV_ENOMEM. */
static int reserve(tls_conn *t, size_t more) {
  size_t need = t->out_len + more;
  if (t->out && t->out->cap >= need) return 0;
  if (t->out == NULL && t->kept && t->kept->cap >= need) {
    t->out = t->kept;
    t->kept = NULL;
    return 0;
  }
  size_t cap = t->out ? 2 * t->out->cap : 1024 - sizeof(sealed);
  if (cap < need) cap = need;
  sealed *s = isv__realloc(t->mem, t->out, sizeof *s + cap);
  if (s == NULL) return ISV_ENOMEM;
  s->cap = cap;
  t->out = s;
  return 0;
}

static int bio_write(BIO *b, const char *data, int len) {
  tls_conn *t = BIO_get_data(b);
  BIO_clear_retry_flags(b);
  if (len <= 0) return 0;
  if (reserve(t, (size_t)len) != 0) return -1; /* SSL_write fails: ISV_EIO */
  memcpy(RECORDS(t->out) + t->out_len, data, (size_t)len);
  t->out_len += (size_t)len;
  return len;
}

static long bio_ctrl(BIO *b, int cmd, long num, void *ptr) {
  (void)num, (void)ptr;
  tls_conn *t = BIO_get_data(b);
  switch (cmd) {
  case BIO_CTRL_PENDING: return (long)t->in_len;
  case BIO_CTRL_WPENDING: return (long)t->out_len;
  case BIO_CTRL_FLUSH: return 1; /* the records go out in flush(), after SSL returns */
  default: return 0;
  }
}

static BIO_METHOD *conn_bio_method;
static uv_once_t conn_bio_once = UV_ONCE_INIT;

static void make_conn_bio_method(void) {
  BIO_METHOD *m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "isv connection");
  if (m && BIO_meth_set_create(m, bio_create) && BIO_meth_set_read(m, bio_read) &&
      BIO_meth_set_write(m, bio_write) && BIO_meth_set_ctrl(m, bio_ctrl)) {
    conn_bio_method = m; /* for the life of the process, as OpenSSL's own methods */
    return;
  }
  BIO_meth_free(m);
  ERR_clear_error();
}

int isv__tls_attach(isv__conn *c, void *ctx) {
  uv_once(&conn_bio_once, make_conn_bio_method);
  if (conn_bio_method == NULL) return ISV_ENOMEM;
  tls_conn *t = isv__calloc(c->t->mem, 1, sizeof *t);
  if (t == NULL) return ISV_ENOMEM;
  t->mem = c->t->mem;
  t->ssl = SSL_new(ctx);
  BIO *bio = BIO_new(conn_bio_method);
  if (t->ssl == NULL || bio == NULL) {
    SSL_free(t->ssl);
    BIO_free(bio);
    isv__free(t);
    ERR_clear_error();
    return ISV_ENOMEM;
  }
  BIO_set_data(bio, t);
  SSL_set_bio(t->ssl, bio, bio); /* one reference, both ways */
  SSL_set_accept_state(t->ssl);
  c->tls = t;
  return 0;
}

static void fail_sealing(isv__conn *c, int status);

void isv__tls_free(isv__conn *c) {
  tls_conn *t = c->tls;
  if (t == NULL) return;
  if (t->queue) fail_sealing(c, UV_ECANCELED); /* c is still valid: closing */
  SSL_free(t->ssl);
  isv__free(t->out);
  isv__free(t->kept);
  t->out = t->kept = NULL;
  c->tls = NULL;
  ERR_clear_error();
  isv__free(t);
}

/* ---- buffers ------------------------------------------------------------------------------ */

/* Read or written now: the buffers are in use. A flag, not a time: the check (at most one due
 * per connection) finds it set and looks again later — no timer moved, no clock read, per
 * request. */
static void note_busy(isv__conn *c, tls_conn *t) {
  t->busy = 1;
  if (c->tls_check == 0) isv__conn_tls_check(c, ISV__TLS_QUIET_MS);
}

uint64_t isv__tls_quiet(isv__conn *c) {
  tls_conn *t = c->tls;
  if (t == NULL) return 0;
  if (t->busy || t->queue) { /* busy since the last look, or a large write under way */
    t->busy = 0;
    return ISV__TLS_QUIET_MS;
  }
  /* SSL refuses while it holds part of a record (a client that stopped mid-record): later */
  if (free_buffers_safe() && SSL_free_buffers(t->ssl) != 1) {
    ERR_clear_error();
    return ISV__TLS_QUIET_MS;
  }
  isv__free(t->kept);
  t->kept = NULL;
  return 0; /* isv__conn_tls_due clears c->tls_check: the next read or write asks again */
}

/* ---- writing ------------------------------------------------------------------------------ */

static void sealed_done(isv__conn *c, void *ctx, int status) {
  sealed *s = ctx;
  isv__write_cb cb = s->cb;
  void *cctx = s->ctx;
  tls_conn *t = c->tls; /* NULL only once the connection is gone (isv__tls_free) */
  if (t && t->kept == NULL && s->cap <= SEALED_KEEP) t->kept = s; /* the next answer's records */
  else isv__free(s);
  if (cb) cb(c, cctx, status);
}

/* The records SSL produced so far, written in order; cb (may be NULL) once they are. */
static int flush(isv__conn *c, isv__write_cb cb, void *ctx) {
  tls_conn *t = c->tls;
  size_t n = t->out_len;
  if (n == 0 && cb == NULL) return 0; /* nothing to send, nobody to tell */
  if (t->out == NULL && reserve(t, 0) != 0) return ISV_ENOMEM; /* a block for cb alone */
  sealed *s = t->out;
  t->out = NULL;
  t->out_len = 0;
  s->cb = cb;
  s->ctx = ctx;
  uv_buf_t b = uv_buf_init(RECORDS(s), (unsigned)n);
  int rc = isv__conn_write_raw(c, &b, n ? 1 : 0, sealed_done, s);
  if (rc != 0) isv__free(s);
  return rc;
}

static int seal_one(tls_conn *t, const char *p, size_t k) {
  if (SSL_write(t->ssl, p, (int)k) == (int)k) return 0;
  ERR_clear_error();
  return ISV_EIO;
}

/* Seal bufs[0..n) from part *i, offset *off, at most `budget` bytes: 0, ISV_EIO or ISV_ENOMEM.
 * Small parts are gathered into one record (an HTTP/1.1 answer's head and body, a gRPC
 * message's frames): each record costs its own cipher set-up, header and tag, so two records
 * for an answer of 300 bytes cost about twice one. */
static int seal(isv__conn *c, const uv_buf_t *bufs, size_t n, size_t *i, size_t *off,
                size_t budget) {
  tls_conn *t = c->tls;
  char *stage = c->t->tls_stage; /* ISV__TLS_RECORD bytes: one record's plaintext */
  size_t plain = 0, staged = 0;
  for (size_t j = *i, o = *off; j < n && plain < budget; j++, o = 0) plain += bufs[j].len - o;
  if (plain > budget) plain = budget;
  /* records: the plaintext, and per record of it a header, a tag and TLS 1.3's type byte */
  if (reserve(t, plain + (plain / ISV__TLS_RECORD + 1) * 64) != 0) return ISV_ENOMEM;
  int rc = 0;
  while (rc == 0 && *i < n && budget) {
    size_t left = bufs[*i].len - *off, k = left < budget ? left : budget;
    const char *p = bufs[*i].base + *off;
    int last = *i + 1 == n || k == budget;
    if (k < ISV__TLS_RECORD / 2 && !(staged == 0 && last)) {
      if (staged + k > ISV__TLS_RECORD) {
        rc = seal_one(t, stage, staged);
        staged = 0;
      }
      memcpy(stage + staged, p, k);
      staged += k;
    } else if (k) {
      if (staged) rc = seal_one(t, stage, staged);
      staged = 0;
      if (rc == 0) rc = seal_one(t, p, k);
    }
    budget -= k;
    if ((*off += k) == bufs[*i].len) {
      (*i)++;
      *off = 0;
    }
  }
  if (rc == 0 && staged) rc = seal_one(t, stage, staged);
  return rc;
}

/* A large write is sealed ISV__WRITE_SLICE bytes at a time, the next slice once the records of
 * the previous one are written: sealing 16 MiB at once would hold the loop ~10 ms and a copy of
 * it in records. Writes behind one wait their turn (records must follow the plaintext's order). */
typedef struct sealing {
  struct sealing *next;
  uv_buf_t *bufs; /* the caller's array, copied; its memory stays the caller's until cb */
  size_t n, i, off;
  isv__write_cb cb;
  void *ctx;
} sealing;

static int pump_sealing(isv__conn *c);

static void fail_sealing(isv__conn *c, int status) {
  tls_conn *t = c->tls;
  sealing *q = t->queue;
  t->queue = NULL;
  while (q) { /* in order; a callback may write again (it then fails: c is closing) */
    sealing *next = q->next;
    isv__write_cb cb = q->cb;
    void *ctx = q->ctx;
    isv__free(q->bufs);
    isv__free(q);
    cb(c, ctx, status);
    q = next;
  }
}

/* The records of the head's last slice are written: the next slice, or the next write. */
static void slice_written(isv__conn *c, void *ctx, int status) {
  (void)ctx;
  tls_conn *t = c->tls;
  if (t == NULL) return;
  t->sealing_busy = 0;
  if (status != 0) {
    fail_sealing(c, status);
    return;
  }
  sealing *h = t->queue;
  if (h && h->i == h->n) { /* all of it sealed and written */
    isv__write_cb cb = h->cb;
    void *cctx = h->ctx;
    t->queue = h->next;
    isv__free(h->bufs);
    isv__free(h);
    cb(c, cctx, 0);
    if (c->tls == NULL) return;
  }
  if (t->queue && !t->sealing_busy && c->tls && pump_sealing(c) != 0)
    fail_sealing(c, ISV_EIO);
}

static int pump_sealing(isv__conn *c) {
  tls_conn *t = c->tls;
  sealing *h = t->queue;
  int rc = seal(c, h->bufs, h->n, &h->i, &h->off, ISV__WRITE_SLICE);
  if (rc == 0) rc = flush(c, slice_written, NULL);
  if (rc == 0) t->sealing_busy = 1;
  return rc;
}

int isv__tls_write(isv__conn *c, const uv_buf_t *bufs, size_t n, isv__write_cb cb, void *ctx) {
  tls_conn *t = c->tls;
  if (!t->handshaken) return ISV_ESTATE;
  note_busy(c, t);
  size_t total = 0;
  for (size_t i = 0; i < n; i++) total += bufs[i].len;
  if (total == 0) return isv__conn_write_raw(c, bufs, n, cb, ctx); /* nothing to seal */
  if (t->queue == NULL && total <= ISV__WRITE_SLICE) { /* the usual case: sealed at once */
    size_t i = 0, off = 0;
    int rc = seal(c, bufs, n, &i, &off, total);
    return rc ? rc : flush(c, cb, ctx);
  }
  sealing *w = isv__calloc(c->t->mem, 1, sizeof *w);
  uv_buf_t *copy = isv__malloc(c->t->mem, n * sizeof *copy);
  if (w == NULL || copy == NULL) {
    isv__free(w);
    isv__free(copy);
    return ISV_ENOMEM;
  }
  memcpy(copy, bufs, n * sizeof *copy);
  *w = (sealing){.bufs = copy, .n = n, .cb = cb, .ctx = ctx};
  sealing **tail = &t->queue;
  while (*tail) tail = &(*tail)->next;
  *tail = w;
  if (t->queue == w && !t->sealing_busy && pump_sealing(c) != 0) {
    t->queue = NULL; /* nothing of it went out: the caller hears it now, not through cb */
    isv__free(copy);
    isv__free(w);
    return ISV_EIO;
  }
  return 0;
}

/* ---- reading ------------------------------------------------------------------------------ */

static void written(isv__conn *c, void *ctx, int status) { (void)c, (void)ctx, (void)status; }

/* Not a TLS record: a plain-text client on a TLS port. One that speaks HTTP is told so (as
 * nginx does) before the connection closes. */
static void refuse_plain(isv__conn *c, unsigned char first) {
  if (first >= 'A' && first <= 'Z') {
    static const char msg[] =
        "HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\nContent-Length: 69\r\n"
        "Connection: close\r\n\r\n"
        "{\"error\":\"this port speaks TLS: a plain HTTP request was sent to it\"}";
    uv_buf_t b = uv_buf_init((char *)msg, sizeof msg - 1);
    if (isv__conn_write_raw(c, &b, 1, written, NULL) == 0) {
      isv__conn_linger_close(c);
      return;
    }
  }
  isv__conn_close(c);
}

/* The verified client certificate's subject, for the authorizer. */
static void take_identity(isv__conn *c, tls_conn *t) {
  X509 *peer = SSL_get0_peer_certificate(t->ssl);
  if (peer == NULL || SSL_get_verify_result(t->ssl) != X509_V_OK) return;
  BIO *m = BIO_new(BIO_s_mem());
  if (m == NULL) return;
  if (X509_NAME_print_ex(m, X509_get_subject_name(peer), 0, XN_FLAG_RFC2253) >= 0) {
    size_t n = (size_t)BIO_ctrl_pending(m);
    char *id = isv__malloc(c->t->mem, n + 1);
    if (id && BIO_read(m, id, (int)n) == (int)n) {
      id[n] = '\0';
      isv__free(c->identity);
      c->identity = id;
    } else {
      isv__free(id);
    }
  }
  BIO_free(m);
}

/* The handshake, then the plaintext to `deliver`, from the ciphertext in t->in. */
static void feed(isv__conn *c, tls_conn *t,
                 void (*deliver)(isv__conn *c, const char *data, size_t len)) {
  if (!t->handshaken) {
    int r = SSL_do_handshake(t->ssl);
    if (r != 1) {
      int e = SSL_get_error(t->ssl, r);
      flush(c, NULL, NULL); /* a ServerHello, or an alert */
      if (e != SSL_ERROR_WANT_READ) {
        ERR_clear_error();
        isv__conn_linger_close(c); /* the alert goes out before the close */
      }
      return;
    }
    t->handshaken = 1;
    take_identity(c, t);
    isv__conn_deadline(c, c->t->limits.idle_timeout_ms); /* now as any new connection */
  }
  char *plain = c->t->tls_plain;
  for (;;) {
    int n = SSL_read(t->ssl, plain, (int)ISV__TLS_PLAIN);
    if (n > 0) {
      deliver(c, plain, (size_t)n);
      if (c->closing || c->lingering || c->tls == NULL) return;
      if (t->in_len == 0 && SSL_pending(t->ssl) == 0) break; /* no call only to hear WANT_READ */
      continue;
    }
    int e = SSL_get_error(t->ssl, n);
    if (e == SSL_ERROR_WANT_READ) break;
    ERR_clear_error();
    if (e == SSL_ERROR_ZERO_RETURN && c->proto) { /* close_notify: the client is done sending */
      isv__conn_read_stop(c);
      c->proto->on_eof(c);
    } else {
      isv__conn_close(c);
    }
    return;
  }
  if (t->in_len) { /* SSL asked for more while bytes were left: they would be lost */
    ISV_ASSERT(0, "SSL reads all the ciphertext it is given before it wants more");
    isv__conn_close(c);
    return;
  }
  if (t->out_len && flush(c, NULL, NULL) != 0) /* tickets, key updates */
    isv__conn_close(c);
}

void isv__tls_on_read(isv__conn *c, const char *data, size_t len,
                      void (*deliver)(isv__conn *c, const char *data, size_t len)) {
  tls_conn *t = c->tls;
  if (!t->first_seen && len) {
    t->first_seen = 1;
    if ((unsigned char)data[0] != 0x16) { /* a TLS record of type handshake starts 0x16 */
      refuse_plain(c, (unsigned char)data[0]);
      return;
    }
  }
  t->in = data; /* read by bio_read, inside SSL's calls below */
  t->in_len = len;
  note_busy(c, t);
  feed(c, t, deliver);
  t->in = NULL; /* t outlives c's callbacks (isv__tls_free runs once its handles are closed) */
  t->in_len = 0;
}

#else /* !ISV_HAVE_TLS */

int isv__tls_available(void) { return 0; }

ISV_EXTERN int isv_tls_new(isv_tls **out) {
  if (out) *out = NULL;
  return ISV_EUNIMPL;
}
ISV_EXTERN void isv_tls_free(isv_tls *t) { (void)t; }
ISV_EXTERN const char *isv_tls_last_error(const isv_tls *t) {
  (void)t;
  return "this libinferserve was built without TLS (meson -Dtls=enabled, OpenSSL 3)";
}
ISV_EXTERN int isv_tls_set_cert_files(isv_tls *t, const char *c, const char *k) {
  (void)t, (void)c, (void)k;
  return ISV_EUNIMPL;
}
ISV_EXTERN int isv_tls_set_cert_pem(isv_tls *t, const char *c, const char *k) {
  (void)t, (void)c, (void)k;
  return ISV_EUNIMPL;
}
ISV_EXTERN int isv_tls_set_client_ca_file(isv_tls *t, const char *f, int r) {
  (void)t, (void)f, (void)r;
  return ISV_EUNIMPL;
}
void *isv__tls_ctx_ref(const isv_tls *tls) {
  (void)tls;
  return NULL;
}
void isv__tls_ctx_unref(void *ctx) { (void)ctx; }
int isv__tls_attach(isv__conn *c, void *ctx) {
  (void)c, (void)ctx;
  return ISV_EUNIMPL;
}
void isv__tls_on_read(isv__conn *c, const char *d, size_t n,
                      void (*deliver)(isv__conn *, const char *, size_t)) {
  (void)d, (void)n, (void)deliver;
  isv__conn_close(c);
}
int isv__tls_write(isv__conn *c, const uv_buf_t *b, size_t n, isv__write_cb cb, void *ctx) {
  (void)c, (void)b, (void)n, (void)cb, (void)ctx;
  return ISV_EUNIMPL;
}
uint64_t isv__tls_quiet(isv__conn *c) {
  (void)c;
  return 0;
}
void isv__tls_free(isv__conn *c) { (void)c; }

#endif
