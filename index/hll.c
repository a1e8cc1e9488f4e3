#include "index/hll.h"
#include "index/hash.h"

#include <math.h>

double ax_ms_hll_estimate(const ax_ms_hll *s) {
    const double m = AX_MS_HLL_M;
    double sum = 0;
    int zeros = 0;
    for (int j = 0; j < AX_MS_HLL_M; j++) {
        sum += ldexp(1.0, -s->reg[j]);
        zeros += s->reg[j] == 0;
    }
    double alpha = 0.7213 / (1 + 1.079 / m);
    double e = alpha * m * m / sum;
    if (e <= 2.5 * m && zeros) e = m * log(m / zeros); /* linear counting for small sets */
    return e;
}

#define BASE 0x9E3779B97F4A7C15ULL /* odd: multiplication mod 2^64 is invertible */

void ax_ms_hll_add_windows(ax_ms_hll *s, const int32_t *t, uint64_t n_starts, int n) {
    if (!n_starts) return;
    uint64_t top = 1; /* BASE^(n-1): weight of the token that leaves the window */
    for (int i = 1; i < n; i++) top *= BASE;
    uint64_t h = 0;
    for (int i = 0; i < n; i++) h = h * BASE + (uint64_t)(uint32_t)t[i] + 1;
    ax_ms_hll_add(s, ax_ms_fmix64(h));
    for (uint64_t i = 1; i < n_starts; i++) {
        h = (h - ((uint64_t)(uint32_t)t[i - 1] + 1) * top) * BASE +
            (uint64_t)(uint32_t)t[i + n - 1] + 1;
        ax_ms_hll_add(s, ax_ms_fmix64(h));
    }
}
