/* The rare exact path of numparse.h: a literal compared with a binary midpoint. */
#include "numparse.h"

/* ---------------------------------------------------------------------------------------------
 * Exact comparison of a decimal literal with a binary midpoint B * 2^eB (the rare fallback).
 * ------------------------------------------------------------------------------------------- */
#define BIG_LIMBS 90 /* 2880 bits: enough for 2^55 * 5^1075 */

typedef struct big {
  uint32_t d[BIG_LIMBS];
  int n;
} big;

static void big_mul_small(big *b, uint32_t m) {
  uint64_t carry = 0;
  for (int i = 0; i < b->n; i++) {
    uint64_t t = (uint64_t)b->d[i] * m + carry;
    b->d[i] = (uint32_t)t;
    carry = t >> 32;
  }
  if (carry && b->n < BIG_LIMBS) b->d[b->n++] = (uint32_t)carry;
}

static void big_shl(big *b, int s) {
  int limbs = s / 32, bits = s % 32;
  if (limbs + b->n + 1 > BIG_LIMBS) limbs = BIG_LIMBS - b->n - 1; /* cannot happen */
  if (bits) {
    uint32_t carry = 0;
    for (int i = 0; i < b->n; i++) {
      uint32_t v = b->d[i];
      b->d[i] = v << bits | carry;
      carry = v >> (32 - bits);
    }
    if (carry) b->d[b->n++] = carry;
  }
  if (limbs) {
    memmove(b->d + limbs, b->d, (size_t)b->n * 4);
    memset(b->d, 0, (size_t)limbs * 4);
    b->n += limbs;
  }
}

/* Divide by 1e9 in place; returns the remainder. */
static uint32_t big_div1e9(big *b) {
  uint64_t rem = 0;
  for (int i = b->n - 1; i >= 0; i--) {
    uint64_t cur = rem << 32 | b->d[i];
    b->d[i] = (uint32_t)(cur / 1000000000u);
    rem = cur % 1000000000u;
  }
  while (b->n > 0 && b->d[b->n - 1] == 0) b->n--;
  return (uint32_t)rem;
}

/* Sign of (|literal| - B * 2^eB). The literal is finite and nonzero. */
int isv__num_cmp_exact(const char *lit, const char *lit_end, uint64_t B, int eB) {
  /* Decimal digits of the midpoint, most significant first. */
  big b;
  b.d[0] = (uint32_t)B;
  b.d[1] = (uint32_t)(B >> 32);
  b.n = b.d[1] ? 2 : 1;
  int64_t dexp = 0;
  if (eB >= 0) {
    big_shl(&b, eB);
  } else {
    int k = -eB;
    while (k >= 13) {
      big_mul_small(&b, 1220703125u); /* 5^13 */
      k -= 13;
    }
    uint32_t p5 = 1;
    while (k-- > 0) p5 *= 5;
    big_mul_small(&b, p5);
    dexp = eB;
  }
  char digs[900];
  int nd = 0;
  char chunk[BIG_LIMBS * 10 / 9 + 2][9];
  int nchunks = 0;
  while (b.n > 0) {
    uint32_t r = big_div1e9(&b);
    for (int i = 8; i >= 0; i--) {
      chunk[nchunks][i] = (char)('0' + r % 10);
      r /= 10;
    }
    nchunks++;
  }
  for (int c = nchunks - 1; c >= 0; c--)
    for (int i = 0; i < 9; i++) {
      if (nd == 0 && chunk[c][i] == '0') continue;
      digs[nd++] = chunk[c][i];
    }
  int64_t lb = nd - 1 + dexp; /* exponent of the leading digit */

  /* The literal's digits. */
  const char *p = lit;
  if (*p == '-') p++;
  const char *dstart = p;
  int64_t int_digits = 0;
  while (p < lit_end && isv__num_is_digit((unsigned char)*p)) {
    p++;
    int_digits++;
  }
  const char *frac = NULL, *frac_end = p;
  if (p < lit_end && *p == '.') {
    frac = ++p;
    while (p < lit_end && isv__num_is_digit((unsigned char)*p)) p++;
    frac_end = p;
  }
  int64_t E = 0;
  if (p < lit_end && (*p | 0x20) == 'e') {
    p++;
    int eneg = 0;
    if (*p == '+' || *p == '-') eneg = (*p++ == '-');
    while (p < lit_end && isv__num_is_digit((unsigned char)*p)) {
      if (E < ISV__NUM_EXP_SAT) E = E * 10 + (*p - '0');
      p++;
    }
    if (eneg) E = -E;
  }
  /* Iterate over all digits (integer then fraction), skipping leading zeros. */
  const char *ip = dstart, *ie = dstart + int_digits;
  int64_t idx = 0;
  const char *cur = ip;
  int in_frac = 0;
#define NEXT_DIGIT()                              \
  do {                                            \
    cur++;                                        \
    if (!in_frac && cur >= ie) {                  \
      in_frac = 1;                                \
      cur = frac ? frac : frac_end;               \
    }                                             \
  } while (0)
  if (int_digits == 0) { in_frac = 1; cur = frac ? frac : frac_end; }
  while ((in_frac ? cur < frac_end : 1) && *cur == '0') {
    NEXT_DIGIT();
    idx++;
  }
  /* cur is the first nonzero digit, at index idx of the digit sequence. */
  int64_t lx = int_digits - 1 - idx + E;
  if (lx != lb) return lx > lb ? 1 : -1;
  int k = 0;
  for (;;) {
    int xd_end = in_frac && cur >= frac_end;
    if (xd_end) {
      for (; k < nd; k++)
        if (digs[k] != '0') return -1;
      return 0;
    }
    if (k >= nd) {
      /* Midpoint exhausted: any nonzero remaining literal digit makes it larger. */
      while (!(in_frac && cur >= frac_end)) {
        if (*cur != '0') return 1;
        NEXT_DIGIT();
      }
      return 0;
    }
    if (*cur != digs[k]) return *cur > digs[k] ? 1 : -1;
    k++;
    NEXT_DIGIT();
  }
#undef NEXT_DIGIT
}
