/* Causal multi-head self-attention over a packed qkv buffer, in blocks (flash-attention style):
 * the T x T probability matrix is never stored, so memory is linear in T. Grouped-query
 * attention: rows are [q (H heads) | k (Hkv heads) | v (Hkv heads)] and query head h reads K/V
 * head h / (H / Hkv); Hkv == H is plain multi-head attention.
 *
 * Forward: one task per (b, h, tile of AX_ATT_BQ queries), OpenMP-dynamic over tasks. Keys
 * stream in tiles of AX_ATT_BK (only up to the tile's last query: the causal triangle above the
 * diagonal is skipped); per tile S = scale Q K^T and O += P V are small dnnl_sgemm calls, with
 * the online softmax between them (running row max m and sum l; O and l are rescaled by
 * exp(m_old - m_new) when the max grows). The op's `att` keeps only lse = m + log(l) per row:
 * att[B,H,T] (the layout the CUDA backend uses too).
 *
 * Backward: one task per (b, h), so dk and dv of a head are owned by one thread and accumulate
 * tile after tile in a fixed order (no atomics, no partials: with at least as many heads as
 * threads, the result does not depend on the thread count). Per query tile [r0, r1) the
 * probabilities are recomputed from q, k and lse (P = exp(S - lse)) for keys [0, r1), in a
 * per-thread buffer of AX_ATT_BQ x T floats: dP = dO V^T ; D_i = rowsum(P dP) (= rowsum(dO * O),
 * without needing O) ; dS = scale P (dP - D) ; dQ += dS K ; dK += dS^T Q ; dV += P^T dO. dnnl_sgemm
 * called inside a parallel region runs single-threaded on the calling thread. Workspace: the
 * context's arena, ax_attention_scratch_bytes (lib/backend/ops.h) per call. */
#include "lib/backend/cpu/cpu.h"

#include <math.h>
#include <omp.h>

#define BQ AX_ATT_BQ
#define BK AX_ATT_BK

static long ld_rows(int T) { /* row stride of the backward's per-thread P and dS tiles */
    return ((long)T + 15) / 16 * 16;
}

/* Where a head's q, k, v start in a packed row of C3 = (H + 2 Hkv) D floats: query head h,
 * K/V head hk of sequence b. */
typedef struct {
    int C, Ckv, D; /* C = H D (the output's row), Ckv = Hkv D */
    long C3;
} qkv_layout;
static long q_off(const qkv_layout *s, int T, int b, int h) {
    return (long)b * T * s->C3 + (long)h * s->D;
}
static long k_off(const qkv_layout *s, int T, int b, int hk) {
    return (long)b * T * s->C3 + s->C + (long)hk * s->D;
}

/* one (b, h, query tile) of the forward, h reading K/V head hk; w: BQ*BK (S) + BQ*D (O) + BQ (m)
 * + BQ (l) floats */
static void fwd_tile(float *out, float *lse, const float *qkv, int T, const qkv_layout *s_, int b,
                     int h, int hk, int r0, float scale, float *w) {
    long C3 = s_->C3;
    int C = s_->C, D = s_->D;
    const float *q = qkv + q_off(s_, T, b, h), *k = qkv + k_off(s_, T, b, hk), *v = k + s_->Ckv;
    int r1 = r0 + BQ < T ? r0 + BQ : T, rb = r1 - r0;
    float *S = w, *O = S + BQ * BK, *mr = O + (long)BQ * D, *lr = mr + BQ;
    for (int i = 0; i < rb; i++) mr[i] = -INFINITY, lr[i] = 0.0f;
    for (long e = 0; e < (long)rb * D; e++) O[e] = 0.0f;
    for (int k0 = 0; k0 < r1; k0 += BK) { /* k0 <= r0: BK is a multiple of BQ */
        int k1 = k0 + BK < r1 ? k0 + BK : r1, kb = k1 - k0;
        /* S[0:rb, 0:kb] = scale Q[r0:r1] K[k0:k1]^T */
        ax_sgemm('N', 'T', rb, kb, D, scale, q + r0 * C3, C3, k + k0 * C3, C3, 0.0f, S, BK);
        for (int i = 0; i < rb; i++) {
            float *restrict s = S + (long)i * BK;
            int t = r0 + i, nv = (t + 1 < k1 ? t + 1 : k1) - k0; /* keys k0..t: nv >= 1 */
            float mx = -INFINITY, sum = 0.0f;
#pragma omp simd reduction(max : mx)
            for (int j = 0; j < nv; j++) mx = s[j] > mx ? s[j] : mx;
            float mnew = mx > mr[i] ? mx : mr[i];
#pragma omp simd reduction(+ : sum)
            for (int j = 0; j < nv; j++) {
                s[j] = ax_expf(s[j] - mnew);
                sum += s[j];
            }
            for (int j = nv; j < kb; j++) s[j] = 0.0f; /* above the diagonal */
            float corr = ax_expf(mr[i] - mnew);        /* 0 on the first tile (m = -inf) */
            lr[i] = lr[i] * corr + sum;
            mr[i] = mnew;
            if (corr != 1.0f) {
                float *restrict o = O + (long)i * D;
#pragma omp simd
                for (int d = 0; d < D; d++) o[d] *= corr;
            }
        }
        /* O[0:rb] += P[0:rb, 0:kb] V[k0:k1] */
        ax_sgemm('N', 'N', rb, D, kb, 1.0f, S, BK, v + k0 * C3, C3, 1.0f, O, D);
    }
    for (int i = 0; i < rb; i++) {
        int t = r0 + i;
        float inv = 1.0f / lr[i], *restrict dst = out + ((long)b * T + t) * C + (long)h * D;
        const float *restrict o = O + (long)i * D;
#pragma omp simd
        for (int d = 0; d < D; d++) dst[d] = o[d] * inv;
        lse[t] = mr[i] + logf(lr[i]);
    }
}

/* out[B,T,C], att: lse[B,H,T] in its first B*H*T floats, qkv[B,T,C + 2 Hkv D] = [q | k | v] */
void ax_cpu_attention_forward_gqa(ax_ctx *ctx, float *out, float *att, const float *qkv, int B,
                                  int T, int C, int H, int Hkv) {
    int D = C / H, nq = (T + BQ - 1) / BQ, nt = omp_get_max_threads(), G = H / Hkv;
    qkv_layout lay = {C, Hkv * D, D, (long)C + 2L * Hkv * D};
    float scale = 1.0f / sqrtf((float)D);
    float *ws = ax_ctx_scratch(ctx, ax_attention_scratch_bytes(T, D, nt));
    if (!ws) return; /* recorded on the context */
    long per = (long)ax_attention_scratch_bytes(T, D, 1) / (long)sizeof(float);
    long ntask = (long)B * H * nq;
#pragma omp parallel for schedule(dynamic, 1)
    for (long task = 0; task < ntask; task++) {
        /* the longest tiles (last queries: the most keys) first, for the load balance */
        int qi = nq - 1 - (int)(task % nq), bh = (int)(task / nq);
        fwd_tile(out, att + (long)bh * T, qkv, T, &lay, bh / H, bh % H, bh % H / G, qi * BQ, scale,
                 ws + per * omp_get_thread_num());
    }
}

/* one (b, h) of the backward, h reading K/V head hk; w: 2 * BQ * ld_rows(T) floats (P and dS
 * tiles) */
static void bwd_head(float *dqkv, const float *dout, const float *qkv, const float *lse, int T,
                     const qkv_layout *s_, int b, int h, int hk, float scale, float *w) {
    long C3 = s_->C3, ld = ld_rows(T), qoff = q_off(s_, T, b, h), koff = k_off(s_, T, b, hk);
    int C = s_->C, D = s_->D;
    const float *q = qkv + qoff, *k = qkv + koff, *v = k + s_->Ckv;
    float *dq = dqkv + qoff, *dk = dqkv + koff, *dv = dk + s_->Ckv;
    const float *dO = dout + (long)b * T * C + (long)h * D;
    float *P = w, *dS = w + BQ * ld;
    for (int r0 = 0; r0 < T; r0 += BQ) {
        int r1 = r0 + BQ < T ? r0 + BQ : T, rb = r1 - r0;
        /* P[0:rb, 0:r1] = exp(scale Q K^T - lse), 0 above the diagonal */
        ax_sgemm('N', 'T', rb, r1, D, scale, q + r0 * C3, C3, k, C3, 0.0f, P, ld);
        for (int i = 0; i < rb; i++) {
            int t = r0 + i;
            float L = lse[t], *restrict p = P + i * ld;
#pragma omp simd
            for (int s = 0; s <= t; s++) p[s] = ax_expf(p[s] - L);
            for (int s = t + 1; s < r1; s++) p[s] = 0.0f;
        }
        /* dP[0:rb, 0:r1] = dO[r0:r1] V[0:r1]^T, then dS in place */
        ax_sgemm('N', 'T', rb, r1, D, 1.0f, dO + r0 * (long)C, C, v, C3, 0.0f, dS, ld);
        for (int i = 0; i < rb; i++) {
            int t = r0 + i;
            const float *restrict p = P + i * ld;
            float *restrict d = dS + i * ld, dot = 0.0f;
#pragma omp simd reduction(+ : dot)
            for (int s = 0; s <= t; s++) dot += p[s] * d[s];
#pragma omp simd
            for (int s = 0; s <= t; s++) d[s] = scale * p[s] * (d[s] - dot);
            for (int s = t + 1; s < r1; s++) d[s] = 0.0f; /* the next GEMMs read up to r1 */
        }
        /* dQ[r0:r1] += dS K[0:r1] ; dK[0:r1] += dS^T Q[r0:r1] ; dV[0:r1] += P^T dO[r0:r1] */
        ax_sgemm('N', 'N', rb, D, r1, 1.0f, dS, ld, k, C3, 1.0f, dq + r0 * C3, C3);
        ax_sgemm('T', 'N', r1, D, rb, 1.0f, dS, ld, q + r0 * C3, C3, 1.0f, dk, C3);
        ax_sgemm('T', 'N', r1, D, rb, 1.0f, P, ld, dO + r0 * (long)C, C, 1.0f, dv, C3);
    }
}

/* dqkv[B,T,C + 2 Hkv D] +=. att: the forward's lse[B,H,T]. out: unused here (the forward's
 * output; CUDA's flash backward reads D_i from it). scratch: unused here (the CUDA
 * backend keeps D_i there); the per-thread tiles come from the context's arena. One task per
 * (b, K/V head) runs the group's query heads in order, so dK and dV sum over the group in a fixed
 * order (no atomics). */
void ax_cpu_attention_backward_gqa(ax_ctx *ctx, float *dqkv, float *scratch, const float *dout,
                                   const float *qkv, const float *att, const float *out, int B,
                                   int T, int C, int H, int Hkv) {
    (void)scratch, (void)out;
    int D = C / H, nt = omp_get_max_threads(), G = H / Hkv;
    qkv_layout lay = {C, Hkv * D, D, (long)C + 2L * Hkv * D};
    float scale = 1.0f / sqrtf((float)D);
    float *ws = ax_ctx_scratch(ctx, ax_attention_scratch_bytes(T, D, nt));
    if (!ws) return;
    long per = (long)ax_attention_scratch_bytes(T, D, 1) / (long)sizeof(float);
    /* fewer heads than threads: the heads run one after another and each GEMM uses every
     * thread (deterministic for a fixed thread count, like the model's other GEMMs) */
#pragma omp parallel for schedule(dynamic, 1) if (B * Hkv >= nt)
    for (int bk = 0; bk < B * Hkv; bk++) {
        int b = bk / Hkv, hk = bk % Hkv;
        for (int h = hk * G; h < hk * G + G; h++)
            bwd_head(dqkv, dout, qkv, att + ((long)b * H + h) * T, T, &lay, b, h, hk, scale,
                     ws + per * omp_get_thread_num());
    }
}
