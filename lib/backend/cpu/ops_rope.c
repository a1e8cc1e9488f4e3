/* Rotary position embedding, rotate-half layout: pair (i, i + D/2) of each head is rotated by
 * angle(t, i) = t * theta^(-2i/D). */
#include "lib/backend/cpu/cpu.h"

#include <math.h>

/* cos_t/sin_t[T, D/2]; angles in double so large t keeps full float precision */
void ax_cpu_rope_table(ax_ctx *ctx, float *cos_t, float *sin_t, int T, int D, float theta) {
    (void)ctx;
    int h = D / 2;
    for (int t = 0; t < T; t++)
        for (int i = 0; i < h; i++) {
            double a = (double)t * pow((double)theta, -2.0 * i / (double)D);
            cos_t[(long)t * h + i] = (float)cos(a);
            sin_t[(long)t * h + i] = (float)sin(a);
        }
}

/* Rotate every head of x[B,T,ld] by +angle (sgn = 1) or -angle (sgn = -1, the transpose). */
static void rope_apply(float *x, const float *cos_t, const float *sin_t, int B, int T, int H, int D,
                       long ld, float sgn) {
    int h2 = D / 2;
#pragma omp parallel for collapse(2) schedule(static) if ((long)B * T * H * D >= 16384)
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) {
            const float *restrict cs = cos_t + (long)t * h2;
            const float *restrict sn = sin_t + (long)t * h2;
            for (int hd = 0; hd < H; hd++) {
                float *restrict x1 = x + ((long)b * T + t) * ld + (long)hd * D;
                float *restrict x2 = x1 + h2;
                for (int i = 0; i < h2; i++) {
                    float a = x1[i], c = x2[i], s = sgn * sn[i];
                    x1[i] = a * cs[i] - c * s;
                    x2[i] = a * s + c * cs[i];
                }
            }
        }
}

/* x[B,T,ld] in place, heads at x[row*ld + h*D + d] */
void ax_cpu_rope_forward(ax_ctx *ctx, float *x, const float *cos_t, const float *sin_t, int B,
                         int T, int H, int D, long ld) {
    (void)ctx;
    rope_apply(x, cos_t, sin_t, B, T, H, D, ld, 1.0f);
}

/* dx[B,T,ld] <- R^T dx (overwrites) */
void ax_cpu_rope_backward(ax_ctx *ctx, float *dx, const float *cos_t, const float *sin_t, int B,
                          int T, int H, int D, long ld) {
    (void)ctx;
    rope_apply(dx, cos_t, sin_t, B, T, H, D, ld, -1.0f);
}
