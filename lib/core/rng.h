/* Counter-based RNG: every value is a pure function of (seed, stream, index), so any rank can
 * generate any slice of a global tensor and every grid builds the same weights. */
#pragma once
#include <stdint.h>

uint64_t ax_rng_u64(uint64_t seed, uint64_t stream, uint64_t index);
/* standard normal (Box-Muller on two counter draws) */
float ax_rng_normal(uint64_t seed, uint64_t stream, uint64_t index);
/* uniform integer in [0, n) without modulo bias worth noticing (128-bit multiply) */
uint64_t ax_rng_below(uint64_t seed, uint64_t stream, uint64_t index, uint64_t n);

/* ---- one stream, many draws: ax_rng_u64(seed, stream, i) == ax_rng_at(ax_rng_key(seed,
 * stream), i), so a loop over a stream hashes once per draw instead of three times ---- */
static inline uint64_t ax_rng_mix64(uint64_t z) { /* SplitMix64's finaliser */
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}
static inline uint64_t ax_rng_key(uint64_t seed, uint64_t stream) {
    return ax_rng_mix64(ax_rng_mix64(seed + 0x9e3779b97f4a7c15ULL) ^
                        (stream * 0xd1b54a32d192ed03ULL));
}
static inline uint64_t ax_rng_at(uint64_t key, uint64_t index) {
    return ax_rng_mix64(key ^ (index + 0x632be59bd9b4e019ULL));
}

/* ---- standard normals by the ziggurat (Marsaglia and Tsang 2000, 128 layers): one draw of
 * the keyed stream per value in ~99% of cases, so DP-SGD's noise over every parameter costs
 * little beside a step. The layer comes from the draw's low 7 bits and the value from its high
 * 32 (independent bits, avoiding the original's correlation between the two). ---- */
typedef struct {
    uint32_t k[128]; /* |h| < k[i]: the value lies under the curve (accept at once) */
    float w[128];    /* value = h * w[i], h the draw's signed high 32 bits */
    double f[128];   /* exp(-x_i^2 / 2) at each layer's edge */
} ax_rng_ziggurat;
/* The tables, built once (thread-safe). */
const ax_rng_ziggurat *ax_rng_ziggurat_tables(void);
/* the rare draws outside the fast test: a wedge or the tail beyond 3.44, with further keyed
 * draws (streams of key) for each retry */
float ax_rng_gauss_slow(const ax_rng_ziggurat *z, uint64_t key, uint64_t index, uint64_t r);
/* Element `index` of the standard-normal stream `key` (ax_rng_key). */
static inline float ax_rng_gauss(const ax_rng_ziggurat *z, uint64_t key, uint64_t index) {
    uint64_t r = ax_rng_at(key, index);
    int i = (int)(r & 127);
    int32_t h = (int32_t)(uint32_t)(r >> 32);
    uint32_t a = h < 0 ? 0u - (uint32_t)h : (uint32_t)h;             /* |h| <= 2^31 */
    if (__builtin_expect(a < z->k[i], 1)) return (float)h * z->w[i]; /* float: 4x the speed */
    return ax_rng_gauss_slow(z, key, index, r);
}
