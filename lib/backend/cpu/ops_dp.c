/* Per-example gradient norms (DP-SGD): a dot product in double, per-row scaling and a column
 * gather. */
#include "lib/backend/cpu/cpu.h"

#include <math.h>

/* sum a[n] b[n] in double: fixed chunks summed serially in chunk order, so the result does not
 * depend on the thread count (as sum_squares) */
#define DOT_CHUNK 32768L
double ax_cpu_dot(ax_ctx *ctx, const float *a, const float *b, long n) {
    long nc = (n + DOT_CHUNK - 1) / DOT_CHUNK;
    if (nc <= 1) {
        double s = 0.0;
#pragma omp simd reduction(+ : s)
        for (long i = 0; i < n; i++) s += (double)a[i] * (double)b[i];
        return s;
    }
    double *part = ax_ctx_scratch(ctx, sizeof(double) * nc);
    if (!part) return NAN;
#pragma omp parallel for schedule(static)
    for (long c = 0; c < nc; c++) {
        long i0 = c * DOT_CHUNK, i1 = i0 + DOT_CHUNK < n ? i0 + DOT_CHUNK : n;
        double s = 0.0;
#pragma omp simd reduction(+ : s)
        for (long i = i0; i < i1; i++) s += (double)a[i] * (double)b[i];
        part[c] = s;
    }
    double total = 0.0;
    for (long c = 0; c < nc; c++) total += part[c];
    return total;
}

/* x[N, cols] row i *= w[i] */
void ax_cpu_scale_rows(ax_ctx *ctx, float *x, const float *w, int N, long cols) {
    (void)ctx;
#pragma omp parallel for schedule(static) if ((long)N * cols >= 16384)
    for (int i = 0; i < N; i++) {
        float *restrict r = x + (long)i * cols, s = w[i];
#pragma omp simd
        for (long c = 0; c < cols; c++) r[c] *= s;
    }
}

/* out[R, n] = the columns idx[0..n) of x[R, ldx] */
void ax_cpu_gather_cols(ax_ctx *ctx, float *out, const float *x, long ldx, const int32_t *idx,
                        int R, int n) {
    (void)ctx;
#pragma omp parallel for schedule(static) if ((long)R * n >= 16384)
    for (int r = 0; r < R; r++)
        for (int j = 0; j < n; j++) out[(long)r * n + j] = x[(long)r * ldx + idx[j]];
}
