/* SwiGLU activation and the residual helpers. */
#include "lib/backend/ops.h"

/* out[N,F] = silu(gate) * up, h[N,2F] = [gate | up] per row */
void ax_swiglu_forward(float *out, const float *h, int N, int F) {
#pragma omp parallel for schedule(static)
    for (int i = 0; i < N; i++) {
        const float *restrict g = h + (long)i * 2 * F;
        const float *restrict u = g + F;
        float *restrict o = out + (long)i * F;
        for (int j = 0; j < F; j++) o[j] = g[j] / (1.0f + ax_expf(-g[j])) * u[j];
    }
}

/* dh[N,2F] += ; with s = sigmoid(g): d gate = dout u s (1 + g (1 - s)), d up = dout g s */
void ax_swiglu_backward(float *dh, const float *dout, const float *h, int N, int F) {
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

/* out[n] = a + b (out may alias a or b) */
void ax_add_forward(float *out, const float *a, const float *b, long n) {
#pragma omp parallel for simd schedule(static) if (n >= 16384)
    for (long i = 0; i < n; i++) out[i] = a[i] + b[i];
}

/* dst[n] += src */
void ax_accumulate(float *dst, const float *src, long n) {
#pragma omp parallel for simd schedule(static) if (n >= 16384)
    for (long i = 0; i < n; i++) dst[i] += src[i];
}
