/* Attention for one new query per sequence against cached keys and values: the inner loop of
 * KV-cached generation. Parallel over (sequence, head); the cache rows are contiguous. With
 * grouped-query attention the cache holds Hkv heads and query head h reads head h / (H / Hkv). */
#include "lib/backend/cpu/cpu.h"

#include <math.h>
#include <omp.h>

void ax_cpu_attention_decode(ax_ctx *ctx, float *out, const float *q, const float *kc,
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
            const float *k = kc + ((long)b * Hkv + h / G) * Tmax * D;
            const float *v = vc + ((long)b * Hkv + h / G) * Tmax * D;
            float *o = out + (long)b * H * D + (long)h * D;
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
    }
}
