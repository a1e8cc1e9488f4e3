/* GELU activations of the GPT-NeoX (exact erf form) and GPT-2 (tanh approximation) MLPs. */
#include "lib/backend/cpu/cpu.h"

#include <math.h>

#define SQRT_HALF 0.70710678118654752f
#define INV_SQRT_2PI 0.39894228040143268f
#define SQRT_2_OVER_PI 0.79788456080286536f
#define GELU_K 0.044715f

/* out[N,F] = gelu(h): 0.5 h (1 + erf(h / sqrt 2)), or with tanh_approx
 * 0.5 h (1 + tanh(sqrt(2/pi) (h + 0.044715 h^3))) */
void ax_cpu_gelu_forward(ax_ctx *ctx, float *out, const float *h, int N, int F, int tanh_approx) {
    (void)ctx;
    long n = (long)N * F;
    if (tanh_approx) {
#pragma omp parallel for schedule(static) if (n >= 16384)
        for (long i = 0; i < n; i++) {
            float x = h[i];
            out[i] = 0.5f * x * (1.0f + tanhf(SQRT_2_OVER_PI * (x + GELU_K * x * x * x)));
        }
    } else {
#pragma omp parallel for schedule(static) if (n >= 16384)
        for (long i = 0; i < n; i++) out[i] = 0.5f * h[i] * (1.0f + erff(h[i] * SQRT_HALF));
    }
}

/* dh[N,F] += dout * gelu'(h) */
void ax_cpu_gelu_backward(ax_ctx *ctx, float *dh, const float *dout, const float *h, int N, int F,
                          int tanh_approx) {
    (void)ctx;
    long n = (long)N * F;
    if (tanh_approx) {
#pragma omp parallel for schedule(static) if (n >= 16384)
        for (long i = 0; i < n; i++) {
            float x = h[i], t = tanhf(SQRT_2_OVER_PI * (x + GELU_K * x * x * x));
            float du = SQRT_2_OVER_PI * (1.0f + 3.0f * GELU_K * x * x);
            dh[i] += dout[i] * (0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * du);
        }
    } else {
#pragma omp parallel for schedule(static) if (n >= 16384)
        for (long i = 0; i < n; i++) {
            float x = h[i];
            float d = 0.5f * (1.0f + erff(x * SQRT_HALF)) + x * INV_SQRT_2PI * expf(-0.5f * x * x);
            dh[i] += dout[i] * d;
        }
    }
}
