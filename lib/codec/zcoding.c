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

struct isv__inflater {
  z_stream z;
  int z_ready;         /* inflateInit2 done (inflateEnd owed) */
  isv__coding coding;
  int raw;             /* deflate: the zlib wrapper failed at once, a raw stream is tried */
  const unsigned char *in;
  size_t n, pos;       /* the input, and how much of it went into z */
  size_t max_out;
  const isv_mem *mem;
  isv__budget *budget;
  size_t charged;      /* taken from budget: the output buffer's capacity */
  isv__buf out;
  int done;
  int in_next_member;  /* gzip: a member ended and bytes followed: they must be another */
  const char *why;     /* ISV_EBADREQ's reason */
};

static int z_start(isv__inflater *f) {
  memset(&f->z, 0, sizeof f->z);
  f->z.zalloc = z_alloc;
  f->z.zfree = z_free;
  f->z.opaque = (voidpf)(uintptr_t)f->mem;
  /* gzip: 16 + 15 (the gzip wrapper); deflate: the zlib wrapper, else a raw stream */
  int wbits = f->coding == ISV__CODING_GZIP ? 16 + MAX_WBITS : f->raw ? -MAX_WBITS : MAX_WBITS;
  if (inflateInit2(&f->z, wbits) != Z_OK) return ISV_ENOMEM;
  f->z_ready = 1;
  f->pos = 0;
  return 0;
}

int isv__inflater_new(isv__coding c, const void *in, size_t n, size_t max_out, const isv_mem *mem,
                      isv__budget *budget, isv__inflater **out) {
  *out = NULL;
  if (c != ISV__CODING_GZIP && c != ISV__CODING_DEFLATE) return ISV_EINVAL;
  isv__inflater *f = isv__calloc(mem, 1, sizeof *f);
  if (f == NULL) return ISV_ENOMEM;
  f->coding = c;
  f->in = in;
  f->n = n;
  f->max_out = max_out;
  f->mem = mem;
  f->budget = budget;
  isv__buf_init(&f->out, mem);
  if (z_start(f) != 0) {
    isv__free(f);
    return ISV_ENOMEM;
  }
  *out = f;
  return 0;
}

/* Room for more output, charged to the budget as the buffer grows. */
static int grow(isv__inflater *f) {
  isv__buf *out = &f->out;
  /* grow with what comes out: double, from 4 times the input, never past the limit */
  size_t want = out->cap ? out->cap : (f->n < SIZE_MAX / 4 ? f->n * 4 : f->n);
  if (want < 65536) want = 65536;
  if (want > f->max_out - out->len) want = f->max_out - out->len;
  size_t before = out->cap;
  if (isv__buf_reserve(out, want) == NULL) return ISV_ENOMEM;
  if (out->cap > before) {
    if (isv__budget_take(f->budget, out->cap - before) != 0) return ISV_EUNAVAIL;
    f->charged += out->cap - before;
  }
  return 0;
}

int isv__inflater_run(isv__inflater *f, size_t slice) {
  if (f->done) return 0;
  isv__buf *out = &f->out;
  size_t start_len = out->len;
  int zrc, rc = 0;
  for (;;) {
    if (out->len - start_len >= slice) return ISV__INFLATE_MORE;
    if (f->z.avail_in == 0 && f->pos < f->n) {
      size_t left = f->n - f->pos;
      f->z.next_in = (Bytef *)(uintptr_t)(f->in + f->pos);
      f->z.avail_in = left > UINT_MAX ? UINT_MAX : (uInt)left;
      f->pos += f->z.avail_in;
    }
    if (out->len >= f->max_out) {
      /* full: one more byte would be too many — unless the stream ends here */
      unsigned char probe;
      f->z.next_out = &probe;
      f->z.avail_out = 1;
      zrc = inflate(&f->z, Z_NO_FLUSH);
      if (f->z.avail_out == 0) {
        rc = ISV_ETOOBIG;
        break;
      }
    } else {
      if (out->cap - out->len < 4096 && (rc = grow(f)) != 0) break;
      size_t room = out->cap - out->len;
      if (room > f->max_out - out->len) room = f->max_out - out->len;
      if (room > slice) room = slice < 4096 ? 4096 : slice; /* a slice's worth at a time */
      if (room > UINT_MAX) room = UINT_MAX;
      f->z.next_out = (Bytef *)out->data + out->len;
      f->z.avail_out = (uInt)room;
      zrc = inflate(&f->z, Z_NO_FLUSH);
      out->len += room - f->z.avail_out;
    }
    if (zrc == Z_STREAM_END) {
      if (f->z.avail_in == 0 && f->pos == f->n) break;
      if (f->coding == ISV__CODING_GZIP) { /* RFC 1952: members follow one another */
        if (inflateReset(&f->z) != Z_OK) {
          rc = ISV_ENOMEM;
          break;
        }
        f->in_next_member = 1;
        continue;
      }
      rc = ISV_EBADREQ;
      f->why = "bytes follow the end of the compressed stream";
      break;
    }
    if (zrc == Z_OK) {
      f->in_next_member = 0;
      continue;
    }
    if (zrc == Z_BUF_ERROR) { /* no progress: out of input (output room there always is) */
      if (f->z.avail_in == 0 && f->pos == f->n) {
        rc = ISV_EBADREQ;
        f->why = "the data ends before the end of the compressed stream";
        break;
      }
      continue;
    }
    if (zrc == Z_MEM_ERROR) {
      rc = ISV_ENOMEM;
      break;
    }
    /* Z_DATA_ERROR, Z_NEED_DICT, Z_STREAM_ERROR. "deflate" that is not zlib-wrapped from its
     * first byte: a raw stream, as some clients send under that name */
    if (f->coding == ISV__CODING_DEFLATE && !f->raw && out->len == 0) {
      inflateEnd(&f->z);
      f->z_ready = 0;
      f->raw = 1;
      if ((rc = z_start(f)) != 0) break;
      continue;
    }
    rc = ISV_EBADREQ;
    f->why = f->in_next_member ? "bytes follow the end of the compressed stream (not another "
                                 "gzip member)"
             : f->z.msg        ? f->z.msg
                               : "corrupt data";
    break;
  }
  if (f->z_ready) {
    inflateEnd(&f->z);
    f->z_ready = 0;
  }
  if (rc == 0 && isv__buf_reserve(out, 1) == NULL) rc = ISV_ENOMEM;
  if (rc == 0) {
    out->data[out->len] = '\0';
    f->done = 1;
  }
  return rc;
}

const char *isv__inflater_why(const isv__inflater *f) { return f->why ? f->why : "corrupt data"; }

size_t isv__inflater_produced(const isv__inflater *f) { return f->out.len; }

char *isv__inflater_take(isv__inflater *f, size_t *len, size_t *charged) {
  *charged = f->charged;
  f->charged = 0; /* the caller's to give back now */
  *len = f->out.len;
  return isv__buf_release(&f->out, len);
}

void isv__inflater_free(isv__inflater *f) {
  if (f == NULL) return;
  if (f->z_ready) inflateEnd(&f->z);
  isv__buf_free(&f->out);
  isv__budget_give(f->budget, f->charged);
  isv__free(f);
}

int isv__inflate(isv__coding c, const void *in, size_t n, size_t max_out, const isv_mem *mem,
                 char **out, size_t *out_len, char *err, size_t err_cap) {
  *out = NULL;
  *out_len = 0;
  if (err_cap) err[0] = '\0';
  isv__inflater *f;
  int rc = isv__inflater_new(c, in, n, max_out, mem, NULL, &f);
  if (rc != 0) return rc;
  if ((rc = isv__inflater_run(f, SIZE_MAX)) == 0) {
    size_t charged;
    *out = isv__inflater_take(f, out_len, &charged);
  } else if (rc == ISV_EBADREQ && err_cap) {
    snprintf(err, err_cap, "the body is not valid %s data: %s", isv__coding_name(c),
             isv__inflater_why(f));
  }
  isv__inflater_free(f);
  return rc;
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
