/* Attention for one new query per sequence against cached keys and values: the inner loop of
 * KV-cached generation. Parallel over (sequence, head); the cache rows are contiguous. With
 * grouped-query attention the cache holds Hkv heads and query head h reads head h / (H / Hkv).
 *
 * Each (sequence, head) pair reads only len x D floats of K and of V, too short a stream for
 * the hardware prefetcher to ramp up and for a generic loop over D to pay its set-up. So the
 * common head sizes (D = 64, 128) get a loop with the query and the output row in registers,
 * and every pair prefetches the next pair's rows into L2 (a row per position, while it works)
 * where the cache has a gap between pairs (into L1 was slower than none). The result of a pair
 * depends only on that pair's data, never on the thread count or the batch around it. */
#include "lib/backend/cpu/cpu.h"

#include <math.h>
#include <omp.h>

#if defined(__AVX512F__)
#include <immintrin.h>
#define HAVE_PAIR16 1
/* one pair with D = 16 NV: scores p[0, len), then out o[D]; kn/vn: the next pair's rows to
 * prefetch (NULL: none), one cache line in `step` */
static inline __attribute__((always_inline)) void
pair16(const int NV, float *o, float *p, const float *qv, const float *k, const float *v, int len,
       float scale, const float *kn, const float *vn, int step) {
    const int D = 16 * NV;
    __m512 qr[8], acc[8];
    for (int i = 0; i < NV; i++) qr[i] = _mm512_loadu_ps(qv + 16 * i);
    float mx = -INFINITY, sum = 0.0f;
    for (int t = 0; t < len; t++) {
        const float *kt = k + (long)t * D;
        if (kn)
            for (int i = 0; i < NV; i += step) __builtin_prefetch(kn + (long)t * D + 16 * i, 0, 2);
        __m512 s = _mm512_mul_ps(qr[0], _mm512_loadu_ps(kt));
        for (int i = 1; i < NV; i++) s = _mm512_fmadd_ps(qr[i], _mm512_loadu_ps(kt + 16 * i), s);
        p[t] = _mm512_reduce_add_ps(s) * scale;
        mx = p[t] > mx ? p[t] : mx;
    }
    for (int t = 0; t < len; t++) sum += p[t] = ax_expf(p[t] - mx);
    for (int i = 0; i < NV; i++) acc[i] = _mm512_setzero_ps();
    for (int t = 0; t < len; t++) {
        const float *vt = v + (long)t * D;
        if (vn)
            for (int i = 0; i < NV; i += step) __builtin_prefetch(vn + (long)t * D + 16 * i, 0, 2);
        __m512 w = _mm512_set1_ps(p[t] / sum);
        for (int i = 0; i < NV; i++)
            acc[i] = _mm512_fmadd_ps(w, _mm512_loadu_ps(vt + 16 * i), acc[i]);
    }
    for (int i = 0; i < NV; i++) _mm512_storeu_ps(o + 16 * i, acc[i]);
}
#endif

#if !defined(__AVX512F__) && defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#define HAVE_PAIR8 1
static inline float hsum8(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    return _mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s)));
}
/* AVX2's 16 registers: pair16's scheme for D = 64, the query in 8 registers, then the output
 * in 8 accumulators. The scores take two chains of FMAs (even and odd vectors, summed at the
 * end: one chain waited on the FMA latency). 12 layers, B = 32, 12 heads, an AVX2 EPYC, medians
 * of 9, len 16 / 32 / 63 of Tmax 64, ms, generic loops -> this: two threads 3.8 / 6.0-6.5 /
 * 8.3-8.4 -> 3.0-3.1 / 5.0-5.8 / 8.0-8.9, one thread 6.5 / 10.1 / 14.2 -> 4.9 / 7.9 / 14.2 (the
 * long reads are bound by memory either way). D = 128 (16 query vectors) gained nothing over
 * the generic loops, which it keeps. */
static inline __attribute__((always_inline)) void pair8(float *o, float *p, const float *qv,
                                                        const float *k, const float *v, int len,
                                                        float scale, const float *kn,
                                                        const float *vn, int step) {
    enum { D = 64 };
    __m256 qr[8], acc[8];
    for (int i = 0; i < 8; i++) qr[i] = _mm256_loadu_ps(qv + 8 * i);
    float mx = -INFINITY, sum = 0.0f;
    for (int t = 0; t < len; t++) {
        const float *kt = k + (long)t * D;
        if (kn) /* step: in cache lines, 2 vectors each */
            for (int i = 0; i < 8; i += 2 * step)
                __builtin_prefetch(kn + (long)t * D + 8 * i, 0, 2);
        __m256 s0 = _mm256_mul_ps(qr[0], _mm256_loadu_ps(kt));
        __m256 s1 = _mm256_mul_ps(qr[1], _mm256_loadu_ps(kt + 8));
        for (int i = 2; i < 8; i += 2) {
            s0 = _mm256_fmadd_ps(qr[i], _mm256_loadu_ps(kt + 8 * i), s0);
            s1 = _mm256_fmadd_ps(qr[i + 1], _mm256_loadu_ps(kt + 8 * i + 8), s1);
        }
        p[t] = hsum8(_mm256_add_ps(s0, s1)) * scale;
        mx = p[t] > mx ? p[t] : mx;
    }
    for (int t = 0; t < len; t++) sum += p[t] = ax_expf(p[t] - mx);
    for (int i = 0; i < 8; i++) acc[i] = _mm256_setzero_ps();
    for (int t = 0; t < len; t++) {
        const float *vt = v + (long)t * D;
        if (vn)
            for (int i = 0; i < 8; i += 2 * step)
                __builtin_prefetch(vn + (long)t * D + 8 * i, 0, 2);
        __m256 w = _mm256_set1_ps(p[t] / sum);
        for (int i = 0; i < 8; i++)
            acc[i] = _mm256_fmadd_ps(w, _mm256_loadu_ps(vt + 8 * i), acc[i]);
    }
    for (int i = 0; i < 8; i++) _mm256_storeu_ps(o + 8 * i, acc[i]);
}
#endif

/* any D: the generic loops */
static void pair_any(float *o, float *p, const float *qv, const float *k, const float *v, int len,
                     int D, float scale) {
    float mx = -INFINITY, sum = 0.0f;
    for (int t = 0; t < len; t++) {
        float s = 0.0f;
#pragma omp simd reduction(+ : s)
        for (int d = 0; d < D; d++) s += qv[d] * k[(long)t * D + d];
        p[t] = s * scale;
        mx = p[t] > mx ? p[t] : mx;
    }
    for (int t = 0; t < len; t++) sum += p[t] = ax_expf(p[t] - mx);
    for (int d = 0; d < D; d++) o[d] = 0.0f;
    for (int t = 0; t < len; t++) {
        float w = p[t] / sum;
#pragma omp simd
        for (int d = 0; d < D; d++) o[d] += w * v[(long)t * D + d];
    }
}

void ax_cpu_attention_decode_gqa(ax_ctx *ctx, float *out, const float *q, const float *kc,
                                 const float *vc, int B, int H, int Hkv, int D, int len, int Tmax) {
    int G = H / Hkv;
    float scale = 1.0f / sqrtf((float)D);
    /* one row of len scores per thread, from the context's scratch */
    long per = ((long)(len > 0 ? len : 1) + 15) / 16 * 16; /* 64-byte rows: no false sharing */
    int nt = omp_in_parallel() ? 1 : omp_get_max_threads();
    if ((long)B * H * len * D < 32768) nt = 1; /* batch 1, early positions: not worth a fork */
    float *scores = ax_ctx_scratch(ctx, sizeof(float) * (size_t)(per * nt));
    if (!scores) return; /* out of memory growing an arena the caller under-reserved */
#pragma omp parallel num_threads(nt)
    {
        float *p = scores + per * omp_get_thread_num();
#pragma omp for schedule(static)
        for (int bh = 0; bh < B * H; bh++) {
            int b = bh / H, h = bh % H;
            const float *qv = q + (long)b * H * D + (long)h * D;
            long off = ((long)b * Hkv + h / G) * Tmax * D;
            float *o = out + (long)b * H * D + (long)h * D;
#if defined(HAVE_PAIR16) || defined(HAVE_PAIR8)
#ifdef HAVE_PAIR16
            if (D == 64 || D == 128) {
#else
            if (D == 64) {
#endif
                /* the next pair of this thread (static schedule: bh + 1 unless its last) */
                int bn = (bh + 1) / H, hn = (bh + 1) % H, more = bh + 1 < B * H;
                long noff = ((long)bn * Hkv + hn / G) * Tmax * D;
                /* rows len..Tmax-1 of a pair are not read: a gap of 2 KB and more stops the
                 * hardware prefetcher, so every line of the next pair is prefetched; below that
                 * it streams on, and one line a row does better than all */
                int step = (long)(Tmax - len) * D * (long)sizeof(float) >= 2048 ? 1 : 4;
                const float *kn = more ? kc + noff : NULL, *vn = more ? vc + noff : NULL;
#ifdef HAVE_PAIR16
                if (D == 64)
                    pair16(4, o, p, qv, kc + off, vc + off, len, scale, kn, vn, step);
                else
                    pair16(8, o, p, qv, kc + off, vc + off, len, scale, kn, vn, step);
#else
                pair8(o, p, qv, kc + off, vc + off, len, scale, kn, vn, step);
#endif
                continue;
            }
#endif
            pair_any(o, p, qv, kc + off, vc + off, len, D, scale);
        }
    }
}
