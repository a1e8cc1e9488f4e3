#include "lib/core/rng.h"

#include <math.h>

/* Three rounds of a strong 64-bit mixer (SplitMix64 finaliser / Stafford variant 13) over the
 * keyed counter. Not cryptographic; decorrelated enough for initialisation and shuffling. */
static inline uint64_t mix64(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

uint64_t ax_rng_u64(uint64_t seed, uint64_t stream, uint64_t index) {
    uint64_t k = mix64(seed + 0x9e3779b97f4a7c15ULL);
    k = mix64(k ^ (stream * 0xd1b54a32d192ed03ULL));
    return mix64(k ^ (index + 0x632be59bd9b4e019ULL));
}

static float normal_from(uint64_t r) {
    /* two 32-bit halves -> Box-Muller; u1 in (0,1] avoids log(0) */
    double u1 = ((double)(r >> 32) + 1.0) / 4294967296.0;
    double u2 = (double)(r & 0xffffffffULL) / 4294967296.0;
    return (float)(sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
}

float ax_rng_normal(uint64_t seed, uint64_t stream, uint64_t index) {
    return normal_from(ax_rng_u64(seed, stream, index));
}

uint64_t ax_rng_below(uint64_t seed, uint64_t stream, uint64_t index, uint64_t n) {
    return (uint64_t)(((unsigned __int128)ax_rng_u64(seed, stream, index) * n) >> 64);
}
