#include "train/dp_sample.h"
#include "lib/core/rng.h"

#include <stdlib.h>

/* The sampler's own key, apart from the seed's other uses (initialisation draws (seed, tensor,
 * index): the same small counters). */
#define DP_SAMPLE_KEY 0x44502d53414d504cULL /* "DP-SAMPL" */

/* the draw of (step, example) under the sampler's key: the top 53 bits as a uniform double in
 * [0, 1), so a fraction q of them (to 2^-53) falls below q */
static int drawn(uint64_t key, int64_t step, uint64_t example, double q) {
    return (double)(ax_rng_u64(key, (uint64_t)step, example) >> 11) * 0x1p-53 < q;
}

int ax_dp_sampled(uint64_t seed, int64_t step, uint64_t example, double q) {
    return drawn(ax_rng_u64(seed, DP_SAMPLE_KEY, 0), step, example, q);
}

ax_status ax_dp_sample_step(uint64_t seed, int64_t step, uint64_t n_examples, double q,
                            int64_t **list, int64_t *cap, int64_t *n) {
    uint64_t key = ax_rng_u64(seed, DP_SAMPLE_KEY, 0);
    *n = 0;
    for (uint64_t e = 0; e < n_examples; e++) {
        if (!drawn(key, step, e, q)) continue;
        if (*n == *cap) {
            int64_t c = *cap ? 2 * *cap : 64;
            int64_t *p = realloc(*list, (size_t)c * sizeof *p);
            if (!p) return ax_errorf(AX_ERR_NOMEM, "out of memory for the step's DP sample");
            *list = p, *cap = c;
        }
        (*list)[(*n)++] = (int64_t)e;
    }
    return AX_OK;
}

int64_t ax_dp_micro_count(int64_t n, int B, int P) {
    int64_t per = (int64_t)B * P;
    return n > 0 ? (n + per - 1) / per : 1;
}

int64_t ax_dp_row_position(int64_t n, int B, int P, int64_t micro, int part, int row) {
    int64_t k = micro * B * P + (int64_t)part * B + row;
    return k < n ? k : -1;
}
