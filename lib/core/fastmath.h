/* Elementary functions written so gcc -O3 vectorises the loops that call them (glibc's are
 * scalar calls without -ffast-math); deterministic: the same bits on every thread count. Used by
 * the CPU kernels (lib/backend/ops.h includes this) and by host code above the backend (memscan's
 * scoring of logits). */
#pragma once

#include <math.h>
#include <stdint.h>

/* expf: Cody-Waite range reduction + degree-6 polynomial, max relative error ~2 ulp; exp(x) = 0
 * for x < -87.3 (flush instead of denormals), saturates at FLT_MAX-ish for x > 88.7. */
static inline float ax_expf(float x) {
    float xc = x < -87.33654f ? -87.33654f : x; /* ternaries, not fminf: those block vectorising */
    xc = xc > 88.72283f ? 88.72283f : xc;
    /* n = round(x / ln2) by the 1.5 * 2^23 trick (roundevenf does not vectorise in gcc 12) */
    float n = (xc * 1.44269504088896341f + 12582912.f) - 12582912.f;
    float r = fmaf(n, -0.693145751953125f, xc); /* ln2 split hi + lo: r exact-ish */
    r = fmaf(n, -1.428606765330187045e-06f, r);
    float p = 1.9875691500E-4f; /* Cephes expf minimax on [-ln2/2, ln2/2] */
    p = fmaf(p, r, 1.3981999507E-3f);
    p = fmaf(p, r, 8.3334519073E-3f);
    p = fmaf(p, r, 4.1665795894E-2f);
    p = fmaf(p, r, 1.6666665459E-1f);
    p = fmaf(p, r, 5.0000001201E-1f);
    p = fmaf(p, r * r, r + 1.0f);
    union {
        float f;
        uint32_t u;
    } b = {p};
    b.u += (uint32_t)(int32_t)n << 23; /* scale by 2^n through the exponent field */
    return x < -87.33654f ? 0.0f : b.f;
}
