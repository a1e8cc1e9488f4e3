/* Kernels for tensors split across ranks: RMSNorm over a sharded hidden dimension,
 * vocabulary-parallel cross-entropy and embedding. The caller does the all-reduces between
 * the passes (lib/dist/comm.h); one rank runs them as one shard. */
#include "lib/backend/cpu/cpu.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void ax_cpu_rmsnorm_sumsq(ax_ctx *ctx, float *ss, const float *inp, int N, int C) {
    (void)ctx;
#pragma omp parallel for schedule(static)
    for (int i = 0; i < N; i++) {
        const float *x = inp + (long)i * C;
        float s = 0.0f;
#pragma omp simd reduction(+ : s)
        for (int c = 0; c < C; c++) s += x[c] * x[c];
        ss[i] = s;
    }
}

void ax_cpu_rmsnorm_apply(ax_ctx *ctx, float *out, float *rstd, const float *inp,
                          const float *weight, const float *ss, int N, int C, int C_total,
                          float eps) {
    (void)ctx;
#pragma omp parallel for schedule(static)
    for (int i = 0; i < N; i++) {
        const float *restrict x = inp + (long)i * C;
        float *restrict o = out + (long)i * C;
        float r = 1.0f / sqrtf(ss[i] / (float)C_total + eps);
        rstd[i] = r;
        for (int c = 0; c < C; c++) o[c] = x[c] * r * weight[c];
    }
}

void ax_cpu_rmsnorm_backward_dot(ax_ctx *ctx, float *dot, const float *dout, const float *inp,
                                 const float *weight, int N, int C) {
    (void)ctx;
#pragma omp parallel for schedule(static)
    for (int i = 0; i < N; i++) {
        const float *x = inp + (long)i * C, *g = dout + (long)i * C;
        float s = 0.0f;
#pragma omp simd reduction(+ : s)
        for (int c = 0; c < C; c++) s += g[c] * weight[c] * x[c];
        dot[i] = s;
    }
}

/* dweight is parallel over columns (each thread walks every row in order): deterministic
 * for any thread count, no per-thread partial buffers */
#define NORM_COLS 32
void ax_cpu_rmsnorm_backward_apply(ax_ctx *ctx, float *dinp, float *dweight, const float *dout,
                                   const float *inp, const float *weight, const float *rstd,
                                   const float *dot, int N, int C, int C_total) {
    (void)ctx;
    if (dinp) {
#pragma omp parallel for schedule(static)
        for (int i = 0; i < N; i++) {
            const float *restrict x = inp + (long)i * C, *restrict g = dout + (long)i * C;
            float *restrict d = dinp + (long)i * C;
            float r = rstd[i], k = r * r * r * dot[i] / (float)C_total;
            for (int c = 0; c < C; c++) d[c] += r * weight[c] * g[c] - x[c] * k;
        }
    }
    if (dweight) {
        int nblk = (C + NORM_COLS - 1) / NORM_COLS;
#pragma omp parallel for schedule(static)
        for (int blk = 0; blk < nblk; blk++) {
            int c0 = blk * NORM_COLS, c1 = c0 + NORM_COLS < C ? c0 + NORM_COLS : C;
            float acc[NORM_COLS] = {0};
            for (int i = 0; i < N; i++) {
                const float *x = inp + (long)i * C, *g = dout + (long)i * C;
                for (int c = c0; c < c1; c++) acc[c - c0] += g[c] * x[c] * rstd[i];
            }
            for (int c = c0; c < c1; c++) dweight[c] += acc[c - c0];
        }
    }
}

void ax_cpu_ce_rowmax(ax_ctx *ctx, float *rowmax, const float *logits, int N, int Vl, int valid) {
    (void)ctx;
#pragma omp parallel for schedule(static)
    for (int i = 0; i < N; i++) {
        const float *x = logits + (long)i * Vl;
        float mx = -INFINITY;
#pragma omp simd reduction(max : mx)
        for (int j = 0; j < valid; j++) mx = x[j] > mx ? x[j] : mx;
        rowmax[i] = mx;
    }
}

void ax_cpu_ce_partial(ax_ctx *ctx, float *stats, const float *logits, const float *rowmax,
                       const int32_t *targets, const uint8_t *mask, int N, int Vl, int valid,
                       int v0) {
    (void)ctx;
#pragma omp parallel for schedule(static)
    for (int i = 0; i < N; i++) {
        const float *x = logits + (long)i * Vl;
        float mx = rowmax[i], s = 0.0f;
        for (int j0 = 0; j0 < valid; j0 += AX_CPU_STREAM_BLOCK) {
            int j1 = j0 + AX_CPU_STREAM_BLOCK < valid ? j0 + AX_CPU_STREAM_BLOCK : valid;
            ax_cpu_prefetch(x, j1, j1 + AX_CPU_STREAM_BLOCK, valid);
#pragma omp simd reduction(+ : s)
            for (int j = j0; j < j1; j++) s += ax_expf(x[j] - mx);
        }
        stats[2 * i] = s;
        int t = mask && !mask[i] ? -1 : targets[i] - v0;
        stats[2 * i + 1] = t >= 0 && t < valid ? x[t] : 0.0f;
    }
}

double ax_cpu_ce_finish(ax_ctx *ctx, float *losses, float *dlogits, const float *logits,
                        const float *rowmax, const float *stats, const int32_t *targets,
                        const uint8_t *mask, float dscale, int N, int Vl, int valid, int v0) {
    (void)ctx;
    double total = 0.0;
    /* losses summed serially in row order: the total does not depend on the thread count */
#pragma omp parallel for schedule(static)
    for (int i = 0; i < N; i++) {
        int sup = !mask || mask[i];
        float *d = dlogits ? dlogits + (long)i * Vl : NULL;
        if (losses)
            losses[i] = sup ? (float)(log((double)stats[2 * i]) + (double)rowmax[i] -
                                      (double)stats[2 * i + 1])
                            : 0.0f;
        if (!d) continue;
        if (!sup) {
            memset(d, 0, sizeof(float) * Vl);
            continue;
        }
        const float *x = logits + (long)i * Vl;
        float mx = rowmax[i], k = dscale / stats[2 * i];
        for (int j0 = 0; j0 < valid; j0 += AX_CPU_STREAM_BLOCK) {
            int j1 = j0 + AX_CPU_STREAM_BLOCK < valid ? j0 + AX_CPU_STREAM_BLOCK : valid;
            ax_cpu_prefetch(x, j1, j1 + AX_CPU_STREAM_BLOCK, valid);
            for (int j = j0; j < j1; j++) d[j] = ax_expf(x[j] - mx) * k;
        }
        for (int j = valid; j < Vl; j++) d[j] = 0.0f;
        int t = targets[i] - v0;
        if (t >= 0 && t < valid) d[t] -= dscale;
    }
    for (int i = 0; i < N; i++)
        if (!mask || mask[i])
            total += log((double)stats[2 * i]) + (double)rowmax[i] - (double)stats[2 * i + 1];
    return total;
}

void ax_cpu_embedding_shard_forward(ax_ctx *ctx, float *out, const int32_t *tokens,
                                    const float *wte, int N, int C, int v0, int rows) {
    (void)ctx;
#pragma omp parallel for schedule(static)
    for (int i = 0; i < N; i++) {
        int r = tokens[i] - v0;
        if (r >= 0 && r < rows)
            memcpy(out + (long)i * C, wte + (long)r * C, sizeof(float) * C);
        else
            memset(out + (long)i * C, 0, sizeof(float) * C);
    }
}

/* Parallel over column blocks, not rows: two rows may name the same token, and splitting the
 * columns lets every thread walk all N rows in order without races or atomics, so the sum order
 * is fixed (deterministic for any thread count) and only the rows named in tokens are touched. */
#define EMB_COLS 64
void ax_cpu_embedding_shard_backward(ax_ctx *ctx, float *dwte, const float *dout,
                                     const int32_t *tokens, int N, int C, int v0, int rows) {
    (void)ctx;
    int nblk = (C + EMB_COLS - 1) / EMB_COLS;
#pragma omp parallel for schedule(static)
    for (int blk = 0; blk < nblk; blk++) {
        int c0 = blk * EMB_COLS, c1 = c0 + EMB_COLS < C ? c0 + EMB_COLS : C;
        for (int i = 0; i < N; i++) {
            int r = tokens[i] - v0;
            if (r < 0 || r >= rows) continue;
            float *restrict d = dwte + (long)r * C;
            const float *restrict g = dout + (long)i * C;
            for (int c = c0; c < c1; c++) d[c] += g[c];
        }
    }
}
