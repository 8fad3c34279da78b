/* Growable output byte buffer used by every encoder.
 *
 * Ownership: the buffer owns `data` (from its allocator, codec/mem.h); isv__buf_release() hands
 * it to the caller, who frees it with isv__free(); isv__buf_free() frees it. An allocation failure sets `failed` and every later append
 * becomes a no-op, so encoders check once at the end instead of after every byte. */
#ifndef ISV_CODEC_BUF_H
#define ISV_CODEC_BUF_H

#include <stddef.h>
#include <string.h>

#include "codec/compiler.h"
#include "codec/mem.h"

typedef struct isv__buf {
  char *data;
  size_t len;
  size_t cap;
  int failed; /* set on the first allocation failure; sticky */
  const isv_mem *mem; /* where data comes from; NULL: libc's */
} isv__buf;

/* Empty, allocating from mem (NULL: libc's). */
void isv__buf_init(isv__buf *b, const isv_mem *mem);
void isv__buf_free(isv__buf *b);
/* isv__buf_reserve's way when there is no room (or b has failed): grows. */
char *isv__buf_reserve_grow(isv__buf *b, size_t n);
/* isv__buf_append's way when there is no room (or b has failed): grows, then copies. */
void isv__buf_append_grow(isv__buf *b, const void *p, size_t n);
/* Returns data (NULL when empty) and resets b (same allocator); the caller frees it with
 * isv__free(). */
char *isv__buf_release(isv__buf *b, size_t *len);

/* Inline: an encoder appends many short pieces (a key, a quote, a comma), most of a length the
 * compiler knows, so the copy becomes a few moves instead of two calls. The test is
 * isv__buf_reserve's own: data, room for n > 0 bytes, not failed. */
static inline void isv__buf_append(isv__buf *b, const void *p, size_t n) {
  if (ISV_LIKELY(b->data && n - 1 < b->cap - b->len && !b->failed)) { /* 0 < n <= room */
    memcpy(b->data + b->len, p, n);
    b->len += n;
    return;
  }
  if (n) isv__buf_append_grow(b, p, n);
}

/* Make room for at least n more bytes; returns a pointer to the free space or NULL. Inline when
 * the room is there (a number's 24 bytes, a header's few dozen: most calls). */
static inline char *isv__buf_reserve(isv__buf *b, size_t n) {
  if (ISV_LIKELY(b->data && b->cap - b->len >= n && !b->failed)) return b->data + b->len;
  return isv__buf_reserve_grow(b, n);
}

static inline void isv__buf_putc(isv__buf *b, char c) {
  if (b->len < b->cap && !b->failed) {
    b->data[b->len++] = c;
    return;
  }
  isv__buf_append(b, &c, 1);
}

static inline void isv__buf_puts(isv__buf *b, const char *s) { isv__buf_append(b, s, strlen(s)); }

#endif
