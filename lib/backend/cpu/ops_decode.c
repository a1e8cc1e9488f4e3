/* Attention for one new query per sequence against cached keys and values: the inner loop of
 * KV-cached generation. Parallel over (sequence, head); the cache rows are contiguous. */
#include "lib/backend/ops.h"

#include <math.h>
#include <stdlib.h>

void ax_attention_decode(float *out, const float *q, const float *kc, const float *vc, int B, int H,
                         int D, int len, int Tmax) {
    float scale = 1.0f / sqrtf((float)D);
#pragma omp parallel
    {
        float *p = malloc(sizeof(float) * (size_t)(len > 0 ? len : 1));
#pragma omp for schedule(static)
        for (int bh = 0; bh < B * H; bh++) {
            int b = bh / H, h = bh % H;
            const float *qv = q + (long)b * H * D + (long)h * D;
            const float *k = kc + ((long)b * H + h) * Tmax * D;
            const float *v = vc + ((long)b * H + h) * Tmax * D;
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
        free(p);
    }
}
