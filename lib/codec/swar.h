/* Eight bytes at a time in a 64-bit word (Bit Twiddling Hacks): the tests the request readers
 * make on header names, targets and values (transport/h2_fields.c, transport/h1_quick.c), on
 * JSON strings (codec/json_reader.c) and on UTF-8 text (codec/utf8.c).
 *
 * Each returns 0x80 in the bytes it flags. The borrow-based ones may also flag a byte above a
 * flagged one, so as a yes/no for the word they are exact, and so is their lowest flag (the
 * first byte in memory of a word from isv__swar_load: isv__swar_first); any higher flag is not. */
#ifndef ISV_CODEC_SWAR_H
#define ISV_CODEC_SWAR_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define ISV__SWAR_ONES 0x0101010101010101ull
#define ISV__SWAR_HIGHS 0x8080808080808080ull

/* The 8 bytes at p (any alignment), the first in the lowest byte of the word on every machine
 * (swapped on a big-endian one), so that isv__swar_first names the first in memory. */
static inline uint64_t isv__swar_load(const void *p) {
  uint64_t w;
  memcpy(&w, p, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  w = __builtin_bswap64(w);
#endif
  return w;
}

/* The n bytes at p, 4 <= n <= 8, in one word: the first four in its low half, the last four
 * (overlapping them when n < 8) in its high half — for tests that ask whether any byte is
 * flagged, not which. The halves give the bytes back: (uint32_t)w, (uint32_t)(w >> 32). */
static inline uint64_t isv__swar_load_4to8(const void *p, size_t n) {
  uint32_t head, tail;
  memcpy(&head, p, 4);
  memcpy(&tail, (const char *)p + n - 4, 4);
  return head | (uint64_t)tail << 32;
}

/* The bytes below n (1 <= n <= 128); borrow-based. */
static inline uint64_t isv__swar_below(uint64_t w, unsigned n) {
  return (w - ISV__SWAR_ONES * n) & ~w & ISV__SWAR_HIGHS;
}

/* The bytes equal to b; borrow-based (isv__swar_eq flags every one exactly, for a few more
 * instructions). */
static inline uint64_t isv__swar_is(uint64_t w, unsigned char b) {
  return isv__swar_below(w ^ (ISV__SWAR_ONES * b), 1);
}

/* The bytes of 0x80 and above (not UTF-8's ASCII); every flag exact. */
static inline uint64_t isv__swar_high(uint64_t w) { return w & ISV__SWAR_HIGHS; }

/* The bytes below n (n <= 128), and 0x7f (DEL); borrow-based. */
static inline uint64_t isv__swar_below_or_del(uint64_t w, unsigned n) {
  return isv__swar_below(w, n) | isv__swar_is(w, 0x7f);
}

/* The bytes equal to b, every flag exact. */
static inline uint64_t isv__swar_eq(uint64_t w, unsigned char b) {
  uint64_t x = w ^ (ISV__SWAR_ONES * b);
  return ~(((x & ~ISV__SWAR_HIGHS) + ~ISV__SWAR_HIGHS) | x) & ISV__SWAR_HIGHS;
}

/* The ASCII letters, either case; every flag exact (with 0x20 set and the high bit dropped, the
 * adds stay within each byte). */
static inline uint64_t isv__swar_letters(uint64_t w) {
  uint64_t l = (w & ~ISV__SWAR_HIGHS) | (ISV__SWAR_ONES * 0x20);
  return (l + ISV__SWAR_ONES * (0x80 - 'a')) & ~(l + ISV__SWAR_ONES * (0x7f - 'z')) & ~w &
         ISV__SWAR_HIGHS;
}

/* The index (0-7) of the lowest flagged byte of a nonzero mask. */
static inline size_t isv__swar_first(uint64_t m) { return (size_t)__builtin_ctzll(m) >> 3; }

#endif
