/* Distributed Gumbel-max sampling with global top-k / top-p thresholds (lib/model/sample.h). */
#include "lib/model/sample.h"
#include "lib/core/rng.h"

#include <math.h>
#include <stddef.h>

ax_status ax_sample_params_check(const ax_sample_params *p) {
    if (!(p->temperature > 0) || !isfinite(p->temperature))
        return ax_errorf(AX_ERR_ARG, "--temperature %g must be a number above 0", p->temperature);
    if (p->top_k < 0)
        return ax_errorf(AX_ERR_ARG, "--top-k %d must be 0 (no limit) or more", p->top_k);
    if (!(p->top_p > 0 && p->top_p <= 1))
        return ax_errorf(AX_ERR_ARG, "--top-p %g must be in (0, 1] (1 = no limit)", p->top_p);
    return AX_OK;
}

double ax_sample_gumbel(uint64_t seed, uint64_t key, int64_t id) {
    /* U in (0, 1) with 53 bits: never 0 or 1, so G is finite */
    double u = ((double)(ax_rng_u64(seed, key, (uint64_t)id) >> 11) + 0.5) * 0x1p-53;
    return -log(-log(u));
}

/* float <-> an unsigned integer of the same order (sign-magnitude to two's-complement-like) */
static uint32_t ord_of(float f) {
    union {
        float f;
        uint32_t u;
    } c = {.f = f};
    return (c.u & 0x80000000u) ? ~c.u : c.u | 0x80000000u;
}
static float float_of(uint32_t o) {
    union {
        float f;
        uint32_t u;
    } c = {.u = (o & 0x80000000u) ? o & 0x7fffffffu : ~o};
    return c.f;
}

size_t ax_sample_work_bytes(int B, int valid) {
    return sizeof(double) * 6 * (size_t)B +
           sizeof(float) * (size_t)B * (size_t)(valid > 0 ? valid : 1);
}

static ax_status reduce(ax_sample_reduce_fn fn, void *ctx, double *buf, int n, int is_max) {
    return fn ? fn(ctx, buf, n, is_max) : AX_OK;
}

/* The largest float tau in [lo, hi) (per row; hi exclusive) with f_b(tau) >= target[b], where
 * f_b(tau) = sum over kept columns with x >= tau of (w ? w : 1): a bisection over the ordered bit
 * patterns, one sum-reduction of B values per round. f_b(lo) >= target[b] > f_b(hi) on entry;
 * lo and hi (ordered patterns as doubles, exact) come back with hi = lo + 1, tau = lo. */
static ax_status bisect(const float *x, const float *w, int B, long ld, int valid, double *lo,
                        double *hi, const double *target, double *f, ax_sample_reduce_fn fn,
                        void *rctx) {
    for (;;) {
        int open = 0;
        for (int b = 0; b < B; b++) open |= hi[b] - lo[b] > 1;
        if (!open) return AX_OK; /* the same decision on every shard: lo, hi are reduced values */
            /* rows in parallel, each summed in order (its bits do not depend on the threads); a
             * count (no weights) is exact in any order, so it runs as an integer SIMD reduction */
#pragma omp parallel for schedule(static) if (B * (long)valid > 65536)
        for (int b = 0; b < B; b++) {
            const float *row = x + (long)b * ld;
            float tau = float_of((uint32_t)(lo[b] + floor((hi[b] - lo[b]) / 2)));
            if (!w) {
                long n = 0;
#pragma omp simd reduction(+ : n)
                for (int j = 0; j < valid; j++) n += row[j] >= tau;
                f[b] = (double)n;
                continue;
            }
            const float *wr = w + (long)b * valid;
            double s = 0;
            for (int j = 0; j < valid; j++)
                if (row[j] >= tau) s += wr[j];
            f[b] = s;
        }
        AX_CHECK(reduce(fn, rctx, f, B, 0));
        for (int b = 0; b < B; b++) {
            if (hi[b] - lo[b] <= 1) continue;
            double mid = lo[b] + floor((hi[b] - lo[b]) / 2);
            if (f[b] >= target[b])
                lo[b] = mid;
            else
                hi[b] = mid;
        }
    }
}

ax_status ax_sample_rows(const float *x, int B, long ld, int valid, int v0, int V,
                         const ax_sample_params *p, const uint64_t *keys, ax_sample_reduce_fn fn,
                         void *rctx, void *work, int32_t *out) {
    AX_CHECK(ax_sample_params_check(p));
    double *mx = work, *buf = mx + B, *lo = buf + 2 * B, *hi = lo + B, *tgt = hi + B;
    float *w = (float *)(tgt + B);
    double invT = 1.0 / p->temperature;
    /* the global maximum: the upper end of every search, and the top-p weights' reference */
#pragma omp parallel for schedule(static) if (B * (long)valid > 65536)
    for (int b = 0; b < B; b++) {
        const float *row = x + (long)b * ld;
        float m = -INFINITY;
#pragma omp simd reduction(max : m)
        for (int j = 0; j < valid; j++) m = row[j] > m ? row[j] : m;
        mx[b] = m;
    }
    AX_CHECK(reduce(fn, rctx, mx, B, 1));
    for (int b = 0; b < B; b++) lo[b] = ord_of(-INFINITY), hi[b] = (double)ord_of((float)mx[b]) + 1;
    if (p->top_k > 0 && p->top_k < V) { /* tau_k: the k-th largest logit */
        for (int b = 0; b < B; b++) tgt[b] = p->top_k;
        AX_CHECK(bisect(x, NULL, B, ld, valid, lo, hi, tgt, buf, fn, rctx));
    }
    if (p->top_p < 1) { /* tau_p in [tau_k, max]: the nucleus of the top-k distribution */
#pragma omp parallel for schedule(static) if (B * (long)valid > 65536)
        for (int b = 0; b < B; b++) {
            const float *row = x + (long)b * ld;
            float tau = float_of((uint32_t)lo[b]);
            double s = 0;
            for (int j = 0; j < valid; j++) {
                float e = (float)exp(((double)row[j] - mx[b]) * invT);
                w[(long)b * valid + j] = e;
                if (row[j] >= tau) s += e;
            }
            tgt[b] = s;
        }
        AX_CHECK(reduce(fn, rctx, tgt, B, 0));
        for (int b = 0; b < B; b++) tgt[b] *= p->top_p, hi[b] = (double)ord_of((float)mx[b]) + 1;
        AX_CHECK(bisect(x, w, B, ld, valid, lo, hi, tgt, buf, fn, rctx));
    }
    /* Gumbel-max over the kept ids: per row (best value, -lowest id holding it) */
#pragma omp parallel for schedule(static) if (B * (long)valid > 65536)
    for (int b = 0; b < B; b++) {
        const float *row = x + (long)b * ld;
        float tau = float_of((uint32_t)lo[b]);
        double best = -INFINITY;
        int arg = -1;
        for (int j = 0; j < valid; j++) {
            if (!(row[j] >= tau)) continue;
            double v = (double)row[j] * invT + ax_sample_gumbel(p->seed, keys[b], v0 + j);
            if (v > best) best = v, arg = j;
        }
        buf[2 * b] = best;
        buf[2 * b + 1] = arg < 0 ? -INFINITY : -(double)(v0 + arg);
    }
    if (fn) { /* two passes, as the greedy choice: the max value, then the lowest id holding it */
        for (int b = 0; b < B; b++) mx[b] = buf[2 * b];
        AX_CHECK(reduce(fn, rctx, mx, B, 1));
        for (int b = 0; b < B; b++) mx[b] = buf[2 * b] == mx[b] ? buf[2 * b + 1] : -INFINITY;
        AX_CHECK(reduce(fn, rctx, mx, B, 1));
        for (int b = 0; b < B; b++) buf[2 * b + 1] = mx[b];
    }
    for (int b = 0; b < B; b++) {
        if (!isfinite(buf[2 * b + 1]))
            return ax_errorf(AX_ERR_INTERNAL, "sampling row %d kept no token (non-finite logits)",
                             b);
        out[b] = (int32_t)(-buf[2 * b + 1]);
    }
    return AX_OK;
}
