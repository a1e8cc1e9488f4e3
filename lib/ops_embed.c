/* Token embedding lookup and its scatter-add gradient. */
#include "lib/ops.h"

#include <string.h>

/* out[N,C] = wte[tokens[i], :] */
void ax_embedding_forward(float *out, const int32_t *tokens, const float *wte, int N, int C) {
#pragma omp parallel for schedule(static)
    for (int i = 0; i < N; i++)
        memcpy(out + (long)i * C, wte + (long)tokens[i] * C, sizeof(float) * C);
}

/* dwte[V,C] += scatter of dout[N,C].
 * Parallel over column blocks, not rows: two rows may name the same token, and splitting the
 * columns lets every thread walk all N rows in order without races or atomics, so the sum order
 * is fixed (deterministic for any thread count) and only the rows named in tokens are touched. */
#define EMB_COLS 64
void ax_embedding_backward(float *dwte, const float *dout, const int32_t *tokens, int N, int C) {
    int nblk = (C + EMB_COLS - 1) / EMB_COLS;
#pragma omp parallel for schedule(static)
    for (int blk = 0; blk < nblk; blk++) {
        int c0 = blk * EMB_COLS, c1 = c0 + EMB_COLS < C ? c0 + EMB_COLS : C;
        for (int i = 0; i < N; i++) {
            float *restrict d = dwte + (long)tokens[i] * C;
            const float *restrict g = dout + (long)i * C;
            for (int c = c0; c < c1; c++) d[c] += g[c];
        }
    }
}
