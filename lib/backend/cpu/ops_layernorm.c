/* LayerNorm over a hidden dimension that may be split across ranks (C of C_total columns
 * here): out = (x - mean) * rstd * weight + bias, rstd = 1/sqrt(var + eps), var the biased
 * variance. Two row statistics (the sum, then the sum of squared deviations from the mean the
 * sum gives) are all-reduced by the caller between the passes: two passes rather than
 * E[x^2] - mean^2, which loses the variance to cancellation when the mean is large. With one
 * shard (C == C_total) this is the plain LayerNorm. */
#include "lib/backend/cpu/cpu.h"

#include <math.h>

/* sum[N] = sum_c inp */
void ax_cpu_layernorm_rowsum(ax_ctx *ctx, float *sum, const float *inp, int N, int C) {
    (void)ctx;
#pragma omp parallel for schedule(static)
    for (int i = 0; i < N; i++) {
        const float *restrict x = inp + (long)i * C;
        float s = 0.0f;
#pragma omp simd reduction(+ : s)
        for (int c = 0; c < C; c++) s += x[c];
        sum[i] = s;
    }
}

/* sq[N] = sum_c (inp - sum / C_total)^2, sum already reduced over the shards */
void ax_cpu_layernorm_sqdev(ax_ctx *ctx, float *sq, const float *inp, const float *sum, int N,
                            int C, int C_total) {
    (void)ctx;
#pragma omp parallel for schedule(static)
    for (int i = 0; i < N; i++) {
        const float *restrict x = inp + (long)i * C;
        float mu = sum[i] / (float)C_total, s = 0.0f;
#pragma omp simd reduction(+ : s)
        for (int c = 0; c < C; c++) s += (x[c] - mu) * (x[c] - mu);
        sq[i] = s;
    }
}

/* out[N,C], mean[N] and rstd[N] (saved for the backward) from the reduced sum and sq */
void ax_cpu_layernorm_apply(ax_ctx *ctx, float *out, float *mean, float *rstd, const float *inp,
                            const float *weight, const float *bias, const float *sum,
                            const float *sq, int N, int C, int C_total, float eps) {
    (void)ctx;
#pragma omp parallel for schedule(static)
    for (int i = 0; i < N; i++) {
        const float *restrict x = inp + (long)i * C;
        float *restrict o = out + (long)i * C;
        float mu = sum[i] / (float)C_total, r = 1.0f / sqrtf(sq[i] / (float)C_total + eps);
        mean[i] = mu;
        rstd[i] = r;
        for (int c = 0; c < C; c++) o[c] = (x[c] - mu) * r * weight[c] + bias[c];
    }
}

/* dots[N] = sum_c dout * weight ; dots[N + i] = sum_c dout * weight * xhat (local columns) */
void ax_cpu_layernorm_backward_dot(ax_ctx *ctx, float *dots, const float *dout, const float *inp,
                                   const float *weight, const float *mean, const float *rstd, int N,
                                   int C) {
    (void)ctx;
#pragma omp parallel for schedule(static)
    for (int i = 0; i < N; i++) {
        const float *restrict x = inp + (long)i * C, *restrict g = dout + (long)i * C;
        float mu = mean[i], r = rstd[i], a = 0.0f, b = 0.0f;
#pragma omp simd reduction(+ : a, b)
        for (int c = 0; c < C; c++) {
            float gw = g[c] * weight[c];
            a += gw;
            b += gw * (x[c] - mu) * r;
        }
        dots[i] = a;
        dots[N + i] = b;
    }
}

/* With xhat = (x - mean) rstd and dots reduced over the shards:
 *   dinp += rstd (dout w - dots[i] / C_total - xhat dots[N + i] / C_total)
 *   dweight += sum_rows dout xhat ; dbias += sum_rows dout
 * Each output may be NULL. The column sums are parallel over column blocks, every block walking
 * the rows in order: deterministic for any thread count. */
#define LN_COLS 32
void ax_cpu_layernorm_backward_apply(ax_ctx *ctx, float *dinp, float *dweight, float *dbias,
                                     const float *dout, const float *inp, const float *weight,
                                     const float *mean, const float *rstd, const float *dots, int N,
                                     int C, int C_total) {
    (void)ctx;
    if (dinp) {
#pragma omp parallel for schedule(static)
        for (int i = 0; i < N; i++) {
            const float *restrict x = inp + (long)i * C, *restrict g = dout + (long)i * C;
            float *restrict d = dinp + (long)i * C;
            float mu = mean[i], r = rstd[i], a = dots[i] / (float)C_total,
                  b = dots[N + i] / (float)C_total;
            for (int c = 0; c < C; c++) d[c] += r * (g[c] * weight[c] - a - (x[c] - mu) * r * b);
        }
    }
    if (dweight || dbias) {
        int nblk = (C + LN_COLS - 1) / LN_COLS;
#pragma omp parallel for schedule(static)
        for (int blk = 0; blk < nblk; blk++) {
            int c0 = blk * LN_COLS, c1 = c0 + LN_COLS < C ? c0 + LN_COLS : C;
            float aw[LN_COLS] = {0}, ab[LN_COLS] = {0};
            for (int i = 0; i < N; i++) {
                const float *x = inp + (long)i * C, *g = dout + (long)i * C;
                float mu = mean[i], r = rstd[i];
                for (int c = c0; c < c1; c++) {
                    aw[c - c0] += g[c] * (x[c] - mu) * r;
                    ab[c - c0] += g[c];
                }
            }
            for (int c = c0; c < c1; c++) {
                if (dweight) dweight[c] += aw[c - c0];
                if (dbias) dbias[c] += ab[c - c0];
            }
        }
    }
}
