/* RMSNorm. */
#include "lib/backend/cpu/cpu.h"

#include <math.h>

/* out[N,C] = inp * rstd * weight[C], rstd[N] = 1/sqrt(mean(inp^2) + eps) */
void ax_cpu_rmsnorm_forward(ax_ctx *ctx, float *out, float *rstd, const float *inp,
                            const float *weight, int N, int C, float eps) {
    (void)ctx;
    /* a few rows (decoding at batch 1) are not worth a fork and join of the team */
#pragma omp parallel for schedule(static) if ((long)N * C >= 16384)
    for (int i = 0; i < N; i++) {
        const float *restrict x = inp + (long)i * C;
        float *restrict o = out + (long)i * C;
        float ss = 0.0f;
#pragma omp simd reduction(+ : ss)
        for (int c = 0; c < C; c++) ss += x[c] * x[c];
        float r = 1.0f / sqrtf(ss / (float)C + eps);
        for (int c = 0; c < C; c++) o[c] = x[c] * r * weight[c];
        rstd[i] = r;
    }
}

/* dinp[N,C] += ; dweight[C] +=. With y = x r w:
 *   dx = r w dy - x r^3/C sum_c(dy w x) ;  dw = sum_rows dy x r */
#define NORM_COLS 64
void ax_cpu_rmsnorm_backward(ax_ctx *ctx, float *dinp, float *dweight, const float *dout,
                             const float *inp, const float *weight, const float *rstd, int N,
                             int C) {
    (void)ctx;
    if (dinp) {
#pragma omp parallel for schedule(static)
        for (int i = 0; i < N; i++) {
            const float *restrict x = inp + (long)i * C;
            const float *restrict dy = dout + (long)i * C;
            float *restrict dx = dinp + (long)i * C;
            float r = rstd[i], dot = 0.0f;
#pragma omp simd reduction(+ : dot)
            for (int c = 0; c < C; c++) dot += dy[c] * weight[c] * x[c];
            float k = dot * r * r * r / (float)C;
            for (int c = 0; c < C; c++) dx[c] += r * weight[c] * dy[c] - k * x[c];
        }
    }
    if (dweight) {
        /* Column blocks, each summing all rows in order: race-free and the same result for any
         * thread count (per-thread partials would depend on the row split). */
        int nblk = (C + NORM_COLS - 1) / NORM_COLS;
#pragma omp parallel for schedule(static)
        for (int blk = 0; blk < nblk; blk++) {
            int c0 = blk * NORM_COLS, c1 = c0 + NORM_COLS < C ? c0 + NORM_COLS : C;
            float acc[NORM_COLS] = {0};
            for (int i = 0; i < N; i++) {
                const float *restrict x = inp + (long)i * C;
                const float *restrict dy = dout + (long)i * C;
                float r = rstd[i];
                for (int c = c0; c < c1; c++) acc[c - c0] += dy[c] * x[c] * r;
            }
            for (int c = c0; c < c1; c++) dweight[c] += acc[c - c0];
        }
    }
}
