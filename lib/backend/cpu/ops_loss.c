/* Fused softmax + masked cross-entropy (forward and backward in one pass over the logits). */
#include "lib/backend/cpu/cpu.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static float row_max(const float *restrict x, int V) {
    float mx = -INFINITY;
#pragma omp simd reduction(max : mx)
    for (int j = 0; j < V; j++) mx = x[j] > mx ? x[j] : mx;
    return mx;
}

/* d[V] <- exp(d - mx) in place; returns the sum. One pointer, so in place vectorises. */
static float exp_inplace(float *restrict d, float mx, int V) {
    float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
    for (int j = 0; j < V; j++) {
        d[j] = ax_expf(d[j] - mx);
        sum += d[j];
    }
    return sum;
}

static float exp_sum(const float *restrict x, float mx, int V) {
    float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
    for (int j = 0; j < V; j++) sum += ax_expf(x[j] - mx);
    return sum;
}

/* losses[N] (may be NULL), dlogits[N,V] (NULL = loss only; may alias logits), logits[N,V],
 * targets[N], mask[N] (NULL = all supervised). Returns the sum of supervised losses. */
double ax_cpu_crossentropy_forward_backward(ax_ctx *ctx, float *losses, float *dlogits,
                                            const float *logits, const int32_t *targets,
                                            const uint8_t *mask, float dscale, int N, int V) {
    /* per-row losses summed serially in row order: the total does not depend on thread count */
    double *rowloss = ax_ctx_scratch(ctx, sizeof(double) * (N > 0 ? N : 1));
    if (!rowloss) return NAN; /* out of memory growing an arena the caller under-reserved */
#pragma omp parallel for schedule(static)
    for (int i = 0; i < N; i++) {
        const float *x = logits + (long)i * V;
        float *d = dlogits ? dlogits + (long)i * V : NULL;
        if (mask && !mask[i]) { /* not a target: no loss, zero gradient, target never read */
            rowloss[i] = 0.0;
            if (d) memset(d, 0, sizeof(float) * V);
            continue;
        }
        int tgt = targets[i];
        float mx = row_max(x, V), xt = x[tgt]; /* read x[tgt] before an in-place overwrite */
        float sum;
        if (d) {
            if (d != x) memcpy(d, x, sizeof(float) * V);
            sum = exp_inplace(d, mx, V);
            float k = dscale / sum;
            for (int j = 0; j < V; j++) d[j] *= k;
            d[tgt] -= dscale;
        } else {
            sum = exp_sum(x, mx, V);
        }
        rowloss[i] = log((double)sum) + (double)mx - (double)xt;
    }
    double total = 0.0;
    for (int i = 0; i < N; i++) {
        if (losses) losses[i] = (float)rowloss[i];
        total += rowloss[i];
    }
    return total;
}
