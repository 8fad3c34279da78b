/* HTTP content codings over zlib: see zcoding.h. */
#include "codec/zcoding.h"

#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <zlib.h>

#include "inferserve.h"

static int blank(char c) { return c == ' ' || c == '\t'; }

static void trim(const char **v, size_t *n) {
  while (*n && blank(**v)) (*v)++, (*n)--;
  while (*n && blank((*v)[*n - 1])) (*n)--;
}

static int token_is(const char *v, size_t n, const char *name) {
  return n == strlen(name) && strncasecmp(v, name, n) == 0;
}

isv__coding isv__coding_of(const char *v, size_t n) {
  if (v == NULL) return ISV__CODING_IDENTITY;
  trim(&v, &n);
  if (n == 0 || token_is(v, n, "identity")) return ISV__CODING_IDENTITY;
  if (token_is(v, n, "gzip") || token_is(v, n, "x-gzip")) return ISV__CODING_GZIP;
  if (token_is(v, n, "deflate")) return ISV__CODING_DEFLATE;
  return ISV__CODING_UNKNOWN;
}

const char *isv__coding_name(isv__coding c) {
  switch (c) {
  case ISV__CODING_GZIP: return "gzip";
  case ISV__CODING_DEFLATE: return "deflate";
  default: return "identity";
  }
}

/* A q value ("0", "0.5", "1.000"): nonzero when it is above 0; malformed counts as 1 (RFC 9110
 * §12.4.2 gives the grammar; a client that gets it wrong still asked for the coding). */
static int q_positive(const char *v, size_t n) {
  if (n == 0) return 1;
  for (size_t i = 0; i < n; i++)
    if (v[i] >= '1' && v[i] <= '9') return 1;
  for (size_t i = 0; i < n; i++)
    if (v[i] != '0' && v[i] != '.') return 1;
  return 0;
}

isv__coding isv__coding_accepted(const char *v, size_t n) {
  /* -1: not listed; 0: refused (q=0); 1: accepted */
  int gzip = -1, deflate = -1, star = -1;
  while (v && n) {
    size_t len = 0;
    while (len < n && v[len] != ',') len++;
    const char *item = v, *params = NULL;
    size_t item_len = len, params_len = 0;
    for (size_t i = 0; i < len; i++)
      if (v[i] == ';') {
        item_len = i;
        params = v + i + 1;
        params_len = len - i - 1;
        break;
      }
    trim(&item, &item_len);
    int ok = 1;
    while (params && params_len) { /* ;q=0.5 (other parameters are not defined; ignored) */
      size_t pl = 0;
      while (pl < params_len && params[pl] != ';') pl++;
      const char *p = params;
      size_t np = pl;
      trim(&p, &np);
      if (np >= 2 && (p[0] == 'q' || p[0] == 'Q') && p[1] == '=') {
        const char *qv = p + 2;
        size_t qn = np - 2;
        trim(&qv, &qn);
        ok = q_positive(qv, qn);
      }
      params += pl < params_len ? pl + 1 : pl;
      params_len -= pl < params_len ? pl + 1 : pl;
    }
    if (token_is(item, item_len, "gzip") || token_is(item, item_len, "x-gzip")) gzip = ok;
    else if (token_is(item, item_len, "deflate")) deflate = ok;
    else if (token_is(item, item_len, "*")) star = ok;
    v += len < n ? len + 1 : len;
    n -= len < n ? len + 1 : len;
  }
  if (gzip == 1 || (gzip == -1 && star == 1)) return ISV__CODING_GZIP;
  if (deflate == 1 || (deflate == -1 && star == 1)) return ISV__CODING_DEFLATE;
  return ISV__CODING_IDENTITY;
}

/* zlib allocates through the server's allocator, like everything else. */
static voidpf z_alloc(voidpf opaque, uInt items, uInt size) {
  if (size && items > SIZE_MAX / size) return Z_NULL;
  return isv__malloc(opaque, (size_t)items * size);
}

static void z_free(voidpf opaque, voidpf p) {
  (void)opaque;
  isv__free(p);
}

/* One pass of inflate over the whole input with window bits wbits. */
static int inflate_once(int wbits, const void *in, size_t n, size_t max_out, const isv_mem *mem,
                        isv__buf *out, const char **why) {
  z_stream z;
  memset(&z, 0, sizeof z);
  z.zalloc = z_alloc;
  z.zfree = z_free;
  z.opaque = (voidpf)(uintptr_t)mem;
  if (inflateInit2(&z, wbits) != Z_OK) return ISV_ENOMEM;
  const unsigned char *p = in;
  size_t left = n;
  int zrc, rc = 0;
  for (;;) {
    if (z.avail_in == 0 && left > 0) {
      z.next_in = (Bytef *)(uintptr_t)p;
      z.avail_in = left > UINT_MAX ? UINT_MAX : (uInt)left;
      p += z.avail_in;
      left -= z.avail_in;
    }
    if (out->len >= max_out) {
      /* full: one more byte would be too many — unless the stream ends here */
      unsigned char probe;
      z.next_out = &probe;
      z.avail_out = 1;
      zrc = inflate(&z, Z_NO_FLUSH);
      if (z.avail_out == 0) {
        rc = ISV_ETOOBIG;
        break;
      }
    } else {
      if (out->cap - out->len < 4096) {
        /* grow with what comes out: double, from 4 times the input, never past the limit */
        size_t want = out->cap ? out->cap : (n < SIZE_MAX / 4 ? n * 4 : n);
        if (want < 65536) want = 65536;
        if (want > max_out - out->len) want = max_out - out->len;
        if (isv__buf_reserve(out, want) == NULL) {
          rc = ISV_ENOMEM;
          break;
        }
      }
      size_t room = out->cap - out->len;
      if (room > max_out - out->len) room = max_out - out->len;
      if (room > UINT_MAX) room = UINT_MAX;
      z.next_out = (Bytef *)out->data + out->len;
      z.avail_out = (uInt)room;
      zrc = inflate(&z, Z_NO_FLUSH);
      out->len += room - z.avail_out;
    }
    if (zrc == Z_STREAM_END) break;
    if (zrc == Z_OK) continue;
    if (zrc == Z_BUF_ERROR) { /* no progress: out of input (output room there always is) */
      if (z.avail_in == 0 && left == 0) {
        rc = ISV_EBADREQ;
        *why = "the data ends before the end of the compressed stream";
        break;
      }
      continue;
    }
    if (zrc == Z_MEM_ERROR) {
      rc = ISV_ENOMEM;
      break;
    }
    rc = ISV_EBADREQ; /* Z_DATA_ERROR, Z_NEED_DICT, Z_STREAM_ERROR */
    *why = z.msg ? z.msg : "corrupt data";
    break;
  }
  if (rc == 0 && (z.avail_in > 0 || left > 0)) {
    rc = ISV_EBADREQ;
    *why = "bytes follow the end of the compressed stream";
  }
  inflateEnd(&z);
  return rc;
}

int isv__inflate(isv__coding c, const void *in, size_t n, size_t max_out, const isv_mem *mem,
                 char **out, size_t *out_len, char *err, size_t err_cap) {
  *out = NULL;
  *out_len = 0;
  if (err_cap) err[0] = '\0';
  if (c != ISV__CODING_GZIP && c != ISV__CODING_DEFLATE) return ISV_EINVAL;
  isv__buf b;
  isv__buf_init(&b, mem);
  const char *why = NULL;
  /* gzip: 16 + 15 (the gzip wrapper); deflate: the zlib wrapper, else a raw stream */
  int rc = inflate_once(c == ISV__CODING_GZIP ? 16 + MAX_WBITS : MAX_WBITS, in, n, max_out, mem,
                        &b, &why);
  if (rc == ISV_EBADREQ && c == ISV__CODING_DEFLATE && b.len == 0) {
    const char *raw_why = NULL;
    b.len = 0;
    if ((rc = inflate_once(-MAX_WBITS, in, n, max_out, mem, &b, &raw_why)) == ISV_EBADREQ)
      why = raw_why;
  }
  if (rc == 0 && isv__buf_reserve(&b, 1) == NULL) rc = ISV_ENOMEM;
  if (rc != 0) {
    if (rc == ISV_EBADREQ && err_cap)
      snprintf(err, err_cap, "the body is not valid %s data: %s", isv__coding_name(c), why);
    isv__buf_free(&b);
    return rc;
  }
  b.data[b.len] = '\0';
  *out_len = b.len;
  *out = isv__buf_release(&b, out_len);
  return 0;
}

int isv__deflate(isv__coding c, const isv__zpiece *pieces, size_t n_pieces, isv__buf *out) {
  if (c != ISV__CODING_GZIP && c != ISV__CODING_DEFLATE) return ISV_EINVAL;
  if (out->failed) return ISV_ENOMEM;
  z_stream z;
  memset(&z, 0, sizeof z);
  z.zalloc = z_alloc;
  z.zfree = z_free;
  z.opaque = (voidpf)(uintptr_t)out->mem;
  if (deflateInit2(&z, Z_BEST_SPEED, Z_DEFLATED, c == ISV__CODING_GZIP ? 16 + MAX_WBITS : MAX_WBITS,
                   8, Z_DEFAULT_STRATEGY) != Z_OK) {
    out->failed = 1;
    return ISV_ENOMEM;
  }
  size_t total = 0;
  for (size_t i = 0; i < n_pieces; i++) total += pieces[i].n;
  int rc = 0;
  size_t i = 0, off = 0;
  for (;;) {
    int flush = Z_NO_FLUSH;
    if (z.avail_in == 0) {
      while (i < n_pieces && off == pieces[i].n) i++, off = 0;
      if (i == n_pieces) flush = Z_FINISH;
      else {
        size_t take = pieces[i].n - off;
        if (take > UINT_MAX) take = UINT_MAX;
        z.next_in = (Bytef *)(uintptr_t)((const char *)pieces[i].p + off);
        z.avail_in = (uInt)take;
        off += take;
      }
    }
    size_t want = total / 2 + 1024;
    if (want > (1u << 24)) want = 1u << 24;
    if (isv__buf_reserve(out, out->cap - out->len < 1024 ? want : 1) == NULL) {
      rc = ISV_ENOMEM;
      break;
    }
    size_t room = out->cap - out->len;
    if (room > UINT_MAX) room = UINT_MAX;
    z.next_out = (Bytef *)out->data + out->len;
    z.avail_out = (uInt)room;
    int zrc = deflate(&z, flush);
    out->len += room - z.avail_out;
    if (zrc == Z_STREAM_END) break;
    if (zrc != Z_OK && zrc != Z_BUF_ERROR) {
      rc = ISV_ENOMEM; /* deflate fails only for want of memory here */
      break;
    }
  }
  deflateEnd(&z);
  if (rc) out->failed = 1;
  return rc;
}
