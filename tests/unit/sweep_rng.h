/* The seeded generator of the side-by-side sweeps (test_h2_fields, test_h1_quick): xorshift64,
 * the same sequence on every run and machine, so a failing round is found again by its number. */
#ifndef ISV_TESTS_SWEEP_RNG_H
#define ISV_TESTS_SWEEP_RNG_H

#include <stddef.h>
#include <stdint.h>

static uint64_t sweep_state = 0x9E3779B97F4A7C15ull;

static inline uint32_t sweep_next(void) {
  sweep_state ^= sweep_state << 13;
  sweep_state ^= sweep_state >> 7;
  sweep_state ^= sweep_state << 17;
  return (uint32_t)(sweep_state >> 11);
}

/* 0 .. n-1 */
static inline size_t pick(size_t n) { return sweep_next() % n; }

#endif
