/* Counter-based RNG: every value is a pure function of (seed, stream, index), so any rank can
 * generate any slice of a global tensor and every grid builds the same weights. */
#pragma once
#include <stdint.h>

uint64_t ax_rng_u64(uint64_t seed, uint64_t stream, uint64_t index);
/* standard normal (Box-Muller on two counter draws) */
float ax_rng_normal(uint64_t seed, uint64_t stream, uint64_t index);
/* uniform integer in [0, n) without modulo bias worth noticing (128-bit multiply) */
uint64_t ax_rng_below(uint64_t seed, uint64_t stream, uint64_t index, uint64_t n);
