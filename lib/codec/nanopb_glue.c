/* See nanopb_glue.h. */
#include "nanopb_glue.h"

#include <stdint.h>
#include <string.h>

#include "inferserve.h" /* ISV_ENOMEM */

static bool buf_write(pb_ostream_t *s, const pb_byte_t *p, size_t n) {
  isv__buf *b = s->state;
  isv__buf_append(b, p, n);
  return !b->failed;
}

int isv__nanopb_encode(const pb_msgdesc_t *fields, const void *msg, isv__buf *out) {
  pb_ostream_t s;
  memset(&s, 0, sizeof s);
  s.callback = buf_write;
  s.state = out;
  s.max_size = SIZE_MAX;
  if (out->failed) return ISV_ENOMEM;
  return pb_encode(&s, fields, msg) && !out->failed ? 0 : ISV_ENOMEM;
}

static bool enc_cstr(pb_ostream_t *s, const pb_field_t *f, void *const *arg) {
  const char *str = *arg;
  if (str == NULL || str[0] == '\0') return true; /* proto3 default: not written */
  return pb_encode_tag_for_field(s, f) && pb_encode_string(s, (const pb_byte_t *)str, strlen(str));
}

void isv__nanopb_cstr(pb_callback_t *cb, const char *s) {
  cb->funcs.encode = enc_cstr;
  cb->arg = (void *)(uintptr_t)s;
}

static bool dec_cstr(pb_istream_t *s, const pb_field_t *f, void **arg) {
  (void)f;
  isv__nanopb_cstr_dst *d = *arg;
  size_t n = s->bytes_left;
  if (n >= d->cap) return false; /* too long */
  if (!pb_read(s, (pb_byte_t *)d->p, n)) return false;
  if (memchr(d->p, 0, n) != NULL) return false;
  d->p[n] = '\0';
  return true;
}

void isv__nanopb_read_cstr(pb_callback_t *cb, isv__nanopb_cstr_dst *dst) {
  if (dst->cap) dst->p[0] = '\0'; /* cap 0: any string fails to fit */
  cb->funcs.decode = dec_cstr;
  cb->arg = dst;
}
