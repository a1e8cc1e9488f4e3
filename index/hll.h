/* HyperLogLog distinct-window estimate, used to size the index table before the build so it
 * ends near its target fill (~15 bytes per distinct window) without growing. Windows are
 * hashed with a rolling polynomial hash (O(1) per window), not XXH3: an estimate needs no
 * more, and it keeps the sizing pass cheap next to the build itself. */
#pragma once
#include <stdint.h>

#define AX_MS_HLL_P 14
#define AX_MS_HLL_M (1 << AX_MS_HLL_P)

typedef struct {
    uint8_t reg[AX_MS_HLL_M];
} ax_ms_hll;

static inline void ax_ms_hll_add(ax_ms_hll *s, uint64_t x) {
    uint32_t idx = (uint32_t)(x >> (64 - AX_MS_HLL_P));
    uint64_t w = x << AX_MS_HLL_P | (1ULL << (AX_MS_HLL_P - 1)); /* sentinel bounds clz */
    uint8_t rho = (uint8_t)(__builtin_clzll(w) + 1);
    if (rho > s->reg[idx]) s->reg[idx] = rho;
}

double ax_ms_hll_estimate(const ax_ms_hll *s);

/* Adds every window of n tokens starting in t[0 .. n_starts) (t holds n_starts + n - 1
 * tokens). */
void ax_ms_hll_add_windows(ax_ms_hll *s, const int32_t *t, uint64_t n_starts, int n);
