/* Causal multi-head self-attention over a packed qkv buffer.
 * One (b, h) pair per OpenMP iteration; inside, GEMMs on row blocks of RB queries so the causal
 * upper triangle is (mostly) never computed: block [r0, r1) only needs keys [0, r1). dnnl_sgemm
 * called inside a parallel region runs single-threaded on the calling thread, so each (b, h) is
 * computed by exactly one thread and the result does not depend on the thread count. */
#include "lib/backend/cpu/cpu.h"

#include <math.h>

#define RB 64 /* query rows per block: small enough to skip most of the triangle */

/* out[B,T,C], att[B,H,T,T] (probs, upper triangle 0), qkv[B,T,3C] = [q | k | v] */
void ax_cpu_attention_forward(ax_ctx *ctx, float *out, float *att, const float *qkv, int B, int T,
                              int C, int H) {
    (void)ctx;
    int D = C / H;
    long C3 = 3L * C;
    float scale = 1.0f / sqrtf((float)D);
#pragma omp parallel for schedule(static)
    for (int bh = 0; bh < B * H; bh++) {
        int b = bh / H, h = bh % H;
        const float *q = qkv + (long)b * T * C3 + (long)h * D;
        const float *k = q + C, *v = q + 2L * C;
        float *P = att + (long)bh * T * T;
        float *o = out + (long)b * T * C + (long)h * D;
        for (int r0 = 0; r0 < T; r0 += RB) {
            int r1 = r0 + RB < T ? r0 + RB : T;
            /* S[r0:r1, 0:r1] = scale Q K^T */
            ax_sgemm('N', 'T', r1 - r0, r1, D, scale, q + r0 * C3, C3, k, C3, 0.0f,
                     P + (long)r0 * T, T);
            for (int t = r0; t < r1; t++) {
                float *restrict p = P + (long)t * T;
                float mx = -INFINITY, sum = 0.0f;
#pragma omp simd reduction(max : mx)
                for (int s = 0; s <= t; s++) mx = p[s] > mx ? p[s] : mx;
#pragma omp simd reduction(+ : sum)
                for (int s = 0; s <= t; s++) {
                    p[s] = ax_expf(p[s] - mx);
                    sum += p[s];
                }
                float inv = 1.0f / sum;
                for (int s = 0; s <= t; s++) p[s] *= inv;
                for (int s = t + 1; s < T; s++) p[s] = 0.0f;
            }
            /* O[r0:r1] = P[r0:r1, 0:r1] V[0:r1] */
            ax_sgemm('N', 'N', r1 - r0, D, r1, 1.0f, P + (long)r0 * T, T, v, C3, 0.0f,
                     o + r0 * (long)C, C);
        }
    }
}

/* dqkv[B,T,3C] += ; scratch[B,H,T,T] workspace. With S = scale Q K^T, P = softmax(S), O = P V:
 *   dV = P^T dO ; dP = dO V^T ; dS = P (dP - rowsum(P dP)) ; dQ = scale dS K ; dK = scale dS^T Q.
 * The scale is folded into dS. Keys [0, r1) of block r accumulate in block order: deterministic. */
void ax_cpu_attention_backward(ax_ctx *ctx, float *dqkv, float *scratch, const float *dout,
                               const float *qkv, const float *att, int B, int T, int C, int H) {
    (void)ctx;
    int D = C / H;
    long C3 = 3L * C;
    float scale = 1.0f / sqrtf((float)D);
#pragma omp parallel for schedule(static)
    for (int bh = 0; bh < B * H; bh++) {
        int b = bh / H, h = bh % H;
        long qoff = (long)b * T * C3 + (long)h * D;
        const float *q = qkv + qoff, *k = q + C, *v = q + 2L * C;
        float *dq = dqkv + qoff, *dk = dq + C, *dv = dq + 2L * C;
        const float *P = att + (long)bh * T * T;
        float *dS = scratch + (long)bh * T * T;
        const float *dO = dout + (long)b * T * C + (long)h * D;
        for (int r0 = 0; r0 < T; r0 += RB) {
            int r1 = r0 + RB < T ? r0 + RB : T, rb = r1 - r0;
            /* dP[r0:r1, 0:r1] = dO[r0:r1] V[0:r1]^T */
            ax_sgemm('N', 'T', rb, r1, D, 1.0f, dO + r0 * (long)C, C, v, C3, 0.0f,
                     dS + (long)r0 * T, T);
            for (int t = r0; t < r1; t++) {
                const float *restrict p = P + (long)t * T;
                float *restrict d = dS + (long)t * T;
                float dot = 0.0f;
#pragma omp simd reduction(+ : dot)
                for (int s = 0; s <= t; s++) dot += p[s] * d[s];
                for (int s = 0; s <= t; s++) d[s] = scale * p[s] * (d[s] - dot);
                for (int s = t + 1; s < r1; s++) d[s] = 0.0f; /* the next GEMMs read up to r1 */
            }
            /* dQ[r0:r1] += dS[r0:r1, 0:r1] K[0:r1] */
            ax_sgemm('N', 'N', rb, D, r1, 1.0f, dS + (long)r0 * T, T, k, C3, 1.0f, dq + r0 * C3,
                     C3);
            /* dK[0:r1] += dS[r0:r1, 0:r1]^T Q[r0:r1] */
            ax_sgemm('T', 'N', r1, D, rb, 1.0f, dS + (long)r0 * T, T, q + r0 * C3, C3, 1.0f, dk,
                     C3);
            /* dV[0:r1] += P[r0:r1, 0:r1]^T dO[r0:r1] */
            ax_sgemm('T', 'N', r1, D, rb, 1.0f, P + (long)r0 * T, T, dO + r0 * (long)C, C, 1.0f, dv,
                     C3);
        }
    }
}
