/* How long a thread spins before it sleeps, learned from what sleeping costs.
 *
 * Two waits spin before they sleep: a worker for its next job (pool.c) and the loop for a
 * worker's completion (scheduler.c). A wait that outlasts its spin pays the spin AND a
 * wake-up: a futex or eventfd wake, a scheduler switch, on a VM an inter-processor interrupt.
 * That wake-up cost is the price of sleeping, and it is not a constant: 30-150 µs measured on
 * a 2-vCPU cloud guest (bench/RESULTS.md, "Spins as long as a wake-up costs"), far less where
 * no hypervisor stands between the CPUs. A spin fixed at 10 µs there let through every hiccup
 * longer than 10 µs — 2-4% of the round trips at one request in flight, each then ~100 µs.
 * Spinning as long as sleeping would cost is the ski-rental rule: whatever the wait turns out
 * to be, spin plus wake-up then cost at most twice what the best choice made knowing the wait
 * would have.
 *
 * So each waiting side keeps a moving average of the wake-ups it paid (the time from the
 * signal to the woken thread running) and spins that long next time (isv__spin_next: unless
 * its last spins caught nothing), within [ISV__SPIN_FLOOR_NS, ISV__SPIN_CAP_NS]: the floor is
 * the fixed spin of before (a machine with cheap wake-ups keeps it), the cap bounds the CPU an
 * idle server burns after its last request and how long the host's loop waits inside one
 * turn. A sample is clamped to twice the cap: one 10 ms stall (the VM descheduled) must not
 * hold the budget at the cap for dozens of waits.
 *
 * Pure arithmetic: the callers hold their own locks and read their own clocks. */
#ifndef ISV_CORE_SPIN_H
#define ISV_CORE_SPIN_H

#include "core/layer.h"

#include <stdint.h>

#define ISV__SPIN_FLOOR_NS 10000u
#define ISV__SPIN_CAP_NS 50000u

/* The average of wake-up costs after one more sample (ns): 1/8 of the way to it. */
static inline uint64_t isv__spin_learn(uint64_t avg, uint64_t sample_ns) {
  if (sample_ns > 2 * (uint64_t)ISV__SPIN_CAP_NS) sample_ns = 2 * (uint64_t)ISV__SPIN_CAP_NS;
  return avg - avg / 8 + sample_ns / 8;
}

/* What a wait is worth spinning for (ns) when wake-ups cost avg on average. */
static inline unsigned isv__spin_budget(uint64_t avg) {
  if (avg < ISV__SPIN_FLOOR_NS) return ISV__SPIN_FLOOR_NS;
  if (avg > ISV__SPIN_CAP_NS) return ISV__SPIN_CAP_NS;
  return (unsigned)avg;
}

/* How long the next spin lasts: the budget, unless the last ISV__SPIN_MISSES spins in a row
 * caught nothing — then the floor. Waits that outlast every spin (a worker waiting for a
 * client that sends a request every 200 µs over the network) then cost no more CPU than the
 * fixed spin of before, a lone miss (a hiccup longer than the budget) does not shorten the
 * spins that bridge the next ones, and one catch brings the long spin back. Two sides that
 * both fall back to the floor are where they were before this rule, never below it: no
 * cascade into not spinning (a gate that skipped spins after misses did that,
 * bench/RESULTS.md). misses: the caller's count of spins in a row that caught nothing. */
#define ISV__SPIN_MISSES 4u
static inline unsigned isv__spin_next(uint64_t avg, unsigned misses) {
  return misses < ISV__SPIN_MISSES ? isv__spin_budget(avg) : ISV__SPIN_FLOOR_NS;
}

/* The count of misses in a row after a spin that caught (1) or not (0); it stops growing. */
static inline unsigned isv__spin_count(unsigned misses, int caught) {
  return caught ? 0 : misses < ISV__SPIN_MISSES ? misses + 1 : misses;
}

#endif
