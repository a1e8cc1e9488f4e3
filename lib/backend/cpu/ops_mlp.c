/* SwiGLU activation and the residual accumulation. */
#include "lib/backend/cpu/cpu.h"

/* out[N,F] = silu(gate) * up, h[N,2F] = [gate | up] per row */
void ax_cpu_swiglu_forward(ax_ctx *ctx, float *out, const float *h, int N, int F) {
    (void)ctx;
#pragma omp parallel for schedule(static) if ((long)N * F >= 16384) /* decoding: a few rows */
    for (int i = 0; i < N; i++) {
        const float *restrict g = h + (long)i * 2 * F;
        const float *restrict u = g + F;
        float *restrict o = out + (long)i * F;
        for (int j = 0; j < F; j++) o[j] = g[j] / (1.0f + ax_expf(-g[j])) * u[j];
    }
}

/* dh[N,2F] += ; with s = sigmoid(g): d gate = dout u s (1 + g (1 - s)), d up = dout g s */
void ax_cpu_swiglu_backward(ax_ctx *ctx, float *dh, const float *dout, const float *h, int N,
                            int F) {
    (void)ctx;
#pragma omp parallel for schedule(static)
    for (int i = 0; i < N; i++) {
        const float *restrict g = h + (long)i * 2 * F;
        const float *restrict u = g + F;
        const float *restrict dy = dout + (long)i * F;
        float *restrict dg = dh + (long)i * 2 * F;
        float *restrict du = dg + F;
        for (int j = 0; j < F; j++) {
            float s = 1.0f / (1.0f + ax_expf(-g[j]));
            dg[j] += dy[j] * u[j] * s * (1.0f + g[j] * (1.0f - s));
            du[j] += dy[j] * g[j] * s;
        }
    }
}

/* dst[n] += src */
void ax_cpu_accumulate(ax_ctx *ctx, float *dst, const float *src, long n) {
    (void)ctx;
#pragma omp parallel for simd schedule(static) if (n >= 16384)
    for (long i = 0; i < n; i++) dst[i] += src[i];
}
