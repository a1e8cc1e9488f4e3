/* AdamW update and the gradient-norm reduction. */
#include "lib/backend/cpu/cpu.h"

#include <math.h>
#include <stdlib.h>
#ifdef __AVX512F__
#include <immintrin.h>
#endif

/* One element of AdamW; the AVX-512 path below performs the same IEEE operations in the same
 * order, so both give bit-identical results. */
static inline void adamw_one(float *p, float g, float *m, float *v, float lr, float b1, float b2,
                             float eps, float wd, float gs, float ibc1, float ibc2) {
    g *= gs;
    float mi = b1 * *m + (1.0f - b1) * g;
    float vi = b2 * *v + (1.0f - b2) * (g * g);
    float upd = (mi * ibc1) / (sqrtf(vi * ibc2) + eps) + wd * *p;
    *m = mi;
    *v = vi;
    *p -= lr * upd;
}

/* param/grad/m/v[n]; t is the 1-based step (bias correction 1 - beta^t); param16: the bf16
 * copy (the CUDA kernel's reference; the model on this backend keeps none) */
void ax_cpu_adamw_update(ax_ctx *ctx, float *param, uint16_t *param16, const float *grad, float *m,
                         float *v, long n, float lr, float beta1, float beta2, float eps, float wd,
                         float grad_scale, long t) {
    float ibc1 = (float)(1.0 / (1.0 - pow(beta1, (double)t)));
    float ibc2 = (float)(1.0 / (1.0 - pow(beta2, (double)t)));
#ifdef __AVX512F__
    /* Intrinsics only here: gcc will not vectorise sqrtf without -fno-math-errno. 16-float
     * chunks are split over the threads; the tail (< 16) is done with the scalar code. */
    long nv = n / 16;
    __m512 vb1 = _mm512_set1_ps(beta1), vb1c = _mm512_set1_ps(1.0f - beta1);
    __m512 vb2 = _mm512_set1_ps(beta2), vb2c = _mm512_set1_ps(1.0f - beta2);
    __m512 vgs = _mm512_set1_ps(grad_scale), vi1 = _mm512_set1_ps(ibc1), vi2 = _mm512_set1_ps(ibc2);
    __m512 veps = _mm512_set1_ps(eps), vwd = _mm512_set1_ps(wd), vlr = _mm512_set1_ps(lr);
#pragma omp parallel for schedule(static) if (n >= 16384)
    for (long c = 0; c < nv; c++) {
        long i = c * 16;
        __m512 p = _mm512_loadu_ps(param + i);
        __m512 g = _mm512_mul_ps(_mm512_loadu_ps(grad + i), vgs);
        __m512 mi =
            _mm512_add_ps(_mm512_mul_ps(vb1, _mm512_loadu_ps(m + i)), _mm512_mul_ps(vb1c, g));
        __m512 vi = _mm512_add_ps(_mm512_mul_ps(vb2, _mm512_loadu_ps(v + i)),
                                  _mm512_mul_ps(vb2c, _mm512_mul_ps(g, g)));
        __m512 den = _mm512_add_ps(_mm512_sqrt_ps(_mm512_mul_ps(vi, vi2)), veps);
        __m512 upd =
            _mm512_add_ps(_mm512_div_ps(_mm512_mul_ps(mi, vi1), den), _mm512_mul_ps(vwd, p));
        _mm512_storeu_ps(m + i, mi);
        _mm512_storeu_ps(v + i, vi);
        _mm512_storeu_ps(param + i, _mm512_sub_ps(p, _mm512_mul_ps(vlr, upd)));
    }
    for (long i = nv * 16; i < n; i++)
        adamw_one(param + i, grad[i], m + i, v + i, lr, beta1, beta2, eps, wd, grad_scale, ibc1,
                  ibc2);
#else
#pragma omp parallel for schedule(static) if (n >= 16384)
    for (long i = 0; i < n; i++)
        adamw_one(param + i, grad[i], m + i, v + i, lr, beta1, beta2, eps, wd, grad_scale, ibc1,
                  ibc2);
#endif
    if (param16) ax_cpu_to_bf16(ctx, param16, param, n);
}

/* sum of x[n]^2 in double. Fixed chunks, each summed in double and then added serially in chunk
 * order: the result is the same for every thread count (the global grad norm must not depend on
 * how many threads a rank runs). */
#define SS_CHUNK 32768L
double ax_cpu_sum_squares(ax_ctx *ctx, const float *x, long n) {
    (void)ctx;
    long nc = (n + SS_CHUNK - 1) / SS_CHUNK;
    if (nc <= 1) {
        double s = 0.0;
#pragma omp simd reduction(+ : s)
        for (long i = 0; i < n; i++) s += (double)x[i] * (double)x[i];
        return s;
    }
    double *part = ax_ctx_scratch(ctx, sizeof(double) * nc);
    if (!part) return NAN; /* out of memory growing an arena the caller under-reserved */
#pragma omp parallel for schedule(static)
    for (long c = 0; c < nc; c++) {
        long i0 = c * SS_CHUNK, i1 = i0 + SS_CHUNK < n ? i0 + SS_CHUNK : n;
        double s = 0.0;
        for (long j0 = i0; j0 < i1; j0 += AX_CPU_STREAM_BLOCK) {
            long j1 = j0 + AX_CPU_STREAM_BLOCK < i1 ? j0 + AX_CPU_STREAM_BLOCK : i1;
            ax_cpu_prefetch(x, j1, j1 + AX_CPU_STREAM_BLOCK, n);
#pragma omp simd reduction(+ : s)
            for (long i = j0; i < j1; i++) s += (double)x[i] * (double)x[i];
        }
        part[c] = s;
    }
    double total = 0.0;
    for (long c = 0; c < nc; c++) total += part[c];
    return total;
}
