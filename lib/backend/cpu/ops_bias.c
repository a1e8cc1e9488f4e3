/* Biases of the linear layers: added to every row, their gradient the column sums. */
#include "lib/backend/cpu/cpu.h"

/* out[N,OC] += bias[OC] */
void ax_cpu_bias_add(ax_ctx *ctx, float *out, const float *bias, int N, int OC) {
    (void)ctx;
#pragma omp parallel for schedule(static) if ((long)N * OC >= 16384)
    for (int i = 0; i < N; i++) {
        float *restrict o = out + (long)i * OC;
#pragma omp simd
        for (int c = 0; c < OC; c++) o[c] += bias[c];
    }
}

/* dbias[OC] += sum over rows of dout[N,OC]: parallel over column blocks, each walking the rows
 * in order, so the sum is the same for any thread count */
#define BIAS_COLS 64
void ax_cpu_bias_backward(ax_ctx *ctx, float *dbias, const float *dout, int N, int OC) {
    (void)ctx;
    int nblk = (OC + BIAS_COLS - 1) / BIAS_COLS;
#pragma omp parallel for schedule(static)
    for (int blk = 0; blk < nblk; blk++) {
        int c0 = blk * BIAS_COLS, c1 = c0 + BIAS_COLS < OC ? c0 + BIAS_COLS : OC;
        float acc[BIAS_COLS] = {0};
        for (int i = 0; i < N; i++) {
            const float *g = dout + (long)i * OC;
            for (int c = c0; c < c1; c++) acc[c - c0] += g[c];
        }
        for (int c = c0; c < c1; c++) dbias[c] += acc[c - c0];
    }
}
