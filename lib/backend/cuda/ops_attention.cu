// Causal attention on the GPU by query blocks on cuBLAS; the whole T x T matrix per head is
// never stored. The queries go in blocks of Tq rows (Tq from a fixed 256 MiB budget for one
// [B, H, Tq, T] score block, so memory does not grow with T^2), and each block is three
// batched GEMMs and row kernels in the context's arena:
//   forward   S = scale Q_blk K^T ; P = softmax(S) (causal, lse kept) ; O_blk = P V
//   backward  S again, P = exp(S - lse) ; dP = dO_blk V^T ; dS = scale P (dP - D_i),
//             D_i = sum_j P_ij dP_ij ; dQ_blk += dS K ; dK += dS^T Q_blk ; dV += P^T dO_blk
// The products run on the tensor cores: fp32 contexts in fp32 (no TF32, like the CPU), bf16
// contexts with Q, K, V, P and dS rounded to bf16 inside cuBLAS and fp32 accumulation. Keys
// past a block's last query are not computed (a block reads keys [0, i0 + Tq)). Every
// accumulation has a fixed order (GQA: a group's query heads in turn), so results are
// deterministic. The op's `att` buffer [B,H,T] receives the per-row logsumexp, as on the CPU
// (lib/backend/cpu/ops_attention.c); only this backend's own attention_backward reads it.
//
// Grouped-query attention: rows are [q (H heads) | k (Hkv heads) | v (Hkv heads)], C3 = C + 2 Ckv
// (Ckv = Hkv D), and query head h reads K/V head h / (H / Hkv).
//
// ax_cuda_attention_set (cuda.h) selects the fused bf16 kernels of ops_flash.cu instead, for
// the ops check and bench/bench_attention only, or fixes the block height for tests.
#include "lib/backend/cuda/kernels.cuh"

#define NW 8 // warps per block of the row kernels: rows per block

// ---- by query blocks on cuBLAS ----
// The score block S[B, H, q, kend] (q queries from i0, keys [0, kend = i0 + q)) is rows
// R = (b H + h) q + r of kend floats; row R is query i = i0 + r, whose keys are [0, i].

// P = softmax(S) per row over keys [0, i] (0 past i), in place; lse[b, h, i] = m + log(l)
__global__ void blk_softmax_kernel(float *S, float *lse, long rows, int q, int kend, int i0,
                                   int T) {
    long R = (long)blockIdx.x * NW + (threadIdx.x >> 5);
    int lane = threadIdx.x & 31;
    if (R >= rows) return; // warp-uniform
    long bh = R / q;
    int i = i0 + (int)(R % q);
    float *s = S + R * kend;
    float m = -INFINITY;
    for (int j = lane; j <= i; j += 32) m = fmaxf(m, s[j]);
    m = ax_warp_max(m);
    float l = 0.0f;
    for (int j = lane; j <= i; j += 32) l += expf(s[j] - m);
    l = ax_warp_sum(l);
    float inv = 1.0f / l;
    for (int j = lane; j < kend; j += 32) s[j] = j <= i ? expf(s[j] - m) * inv : 0.0f;
    if (lane == 0) lse[bh * T + i] = m + logf(l);
}

// P = exp(S - lse) over keys [0, i] (0 past i), in place: the forward's probabilities again
__global__ void blk_probs_kernel(float *S, const float *lse, long rows, int q, int kend, int i0,
                                 int T) {
    long R = (long)blockIdx.x * NW + (threadIdx.x >> 5);
    int lane = threadIdx.x & 31;
    if (R >= rows) return;
    int i = i0 + (int)(R % q);
    float L = lse[R / q * T + i], *s = S + R * kend;
    for (int j = lane; j < kend; j += 32) s[j] = j <= i ? expf(s[j] - L) : 0.0f;
}

// dS = scale P (dP - D), D = sum_j P_j dP_j per row, into dP
__global__ void blk_dsoft_kernel(float *dP, const float *P, long rows, int kend, float scale) {
    long R = (long)blockIdx.x * NW + (threadIdx.x >> 5);
    int lane = threadIdx.x & 31;
    if (R >= rows) return;
    const float *p = P + R * kend;
    float *d = dP + R * kend, Di = 0.0f;
    for (int j = lane; j < kend; j += 32) Di += p[j] * d[j];
    Di = ax_warp_sum(Di);
    for (int j = lane; j < kend; j += 32) d[j] = scale * p[j] * (d[j] - Di);
}

static inline int imin(int a, int b) {
    return a < b ? a : b;
}

#define BLK_BUDGET (256L << 20) // bytes of one score block [B, H, Tq, T]

static int g_flash, g_block_rows; // ax_cuda_attention_set

extern "C" void ax_cuda_attention_set(int flash, int block_rows) {
    g_flash = flash != 0;
    g_block_rows = block_rows > 0 ? block_rows : 0;
}

// query rows per block: the most that fit the budget (all of T when they do; multiples of 16
// otherwise, at least 16), unless ax_cuda_attention_set fixed it
static int blk_rows(int B, int T, int H) {
    if (g_block_rows) return imin(g_block_rows, T);
    long per_row = (long)B * H * T * (long)sizeof(float);
    long q = BLK_BUDGET / (per_row > 0 ? per_row : 1);
    if (q >= T) return T;
    q = q / 16 * 16;
    return (int)(q < 16 ? imin(16, T) : q);
}

// the fused bf16 kernels of ops_flash.cu, when selected, on bf16 contexts and the head dims
// they take
static int use_flash(const ax_ctx *ctx, int B, int C, int H, int Hkv) {
    return g_flash && ((const ax_cuda_ctx *)ctx->impl)->bf16 &&
           ax_cuda_flash_supported(B, C, H, Hkv);
}

extern "C" size_t ax_cuda_attention_scratch(int B, int T, int H, int D, int nthreads) {
    (void)D, (void)nthreads;
    if (B <= 0 || T <= 0 || H <= 0) return 0;
    return 2 * sizeof(float) * (size_t)B * H * (size_t)blk_rows(B, T, H) * T; // S and dP blocks
}

static unsigned row_blocks(long rows) {
    return (unsigned)((rows + NW - 1) / NW);
}

// S[b, hk G + g] = scale Q_blk K^T for every (b, g), one batched GEMM over the K/V heads each
static void blk_scores(ax_ctx *ctx, float *S, const float *qkv, int B, int T, int C, int H, int Hkv,
                       int i0, int q) {
    int D = C / H, G = H / Hkv, kend = i0 + q;
    long C3 = C + 2L * Hkv * D, sz = (long)q * kend;
    float scale = 1.0f / sqrtf((float)D);
    for (int b = 0; b < B; b++)
        for (int g = 0; g < G; g++)
            ax_cuda_gemm_strided(ctx, 'N', 'T', q, kend, D, scale,
                                 qkv + ((long)b * T + i0) * C3 + (long)g * D, C3, (long)G * D,
                                 qkv + (long)b * T * C3 + C, C3, D, 0.0f,
                                 S + ((long)b * H + g) * sz, kend, G * sz, Hkv);
}

static void blocked_forward(ax_ctx *ctx, float *out, float *lse, const float *qkv, int B, int T,
                            int C, int H, int Hkv) {
    int D = C / H, G = H / Hkv, Tq = blk_rows(B, T, H);
    long C3 = C + 2L * Hkv * D, Ckv = (long)Hkv * D;
    float *S = (float *)ax_ctx_scratch(ctx, ax_cuda_attention_scratch(B, T, H, D, 1));
    if (!S) return; // recorded on the context
    for (int i0 = 0; i0 < T; i0 += Tq) {
        int q = imin(Tq, T - i0), kend = i0 + q;
        long sz = (long)q * kend, rows = (long)B * H * q;
        blk_scores(ctx, S, qkv, B, T, C, H, Hkv, i0, q);
        blk_softmax_kernel<<<row_blocks(rows), NW * 32, 0, AX_STREAM(ctx)>>>(S, lse, rows, q, kend,
                                                                             i0, T);
        ax_cuda_launched("attention_forward");
        for (int b = 0; b < B; b++)
            for (int g = 0; g < G; g++)
                ax_cuda_gemm_strided(ctx, 'N', 'N', q, D, kend, 1.0f, S + ((long)b * H + g) * sz,
                                     kend, G * sz, qkv + (long)b * T * C3 + C + Ckv, C3, D, 0.0f,
                                     out + ((long)b * T + i0) * C + (long)g * D, C, (long)G * D,
                                     Hkv);
        ax_cuda_prof_mark("attention_forward");
    }
}

static void blocked_backward(ax_ctx *ctx, float *dqkv, const float *dout, const float *qkv,
                             const float *lse, int B, int T, int C, int H, int Hkv) {
    int D = C / H, G = H / Hkv, Tq = blk_rows(B, T, H);
    long C3 = C + 2L * Hkv * D, Ckv = (long)Hkv * D;
    float scale = 1.0f / sqrtf((float)D);
    float *S = (float *)ax_ctx_scratch(ctx, ax_cuda_attention_scratch(B, T, H, D, 1));
    if (!S) return;
    float *dP = S + (long)B * H * Tq * T;
    for (int i0 = 0; i0 < T; i0 += Tq) {
        int q = imin(Tq, T - i0), kend = i0 + q;
        long sz = (long)q * kend, rows = (long)B * H * q;
        blk_scores(ctx, S, qkv, B, T, C, H, Hkv, i0, q);
        blk_probs_kernel<<<row_blocks(rows), NW * 32, 0, AX_STREAM(ctx)>>>(S, lse, rows, q, kend,
                                                                           i0, T);
        ax_cuda_launched("attention_backward");
        for (int b = 0; b < B; b++)
            for (int g = 0; g < G; g++) // dP = dO_blk V^T
                ax_cuda_gemm_strided(ctx, 'N', 'T', q, kend, D, 1.0f,
                                     dout + ((long)b * T + i0) * C + (long)g * D, C, (long)G * D,
                                     qkv + (long)b * T * C3 + C + Ckv, C3, D, 0.0f,
                                     dP + ((long)b * H + g) * sz, kend, G * sz, Hkv);
        blk_dsoft_kernel<<<row_blocks(rows), NW * 32, 0, AX_STREAM(ctx)>>>(dP, S, rows, kend,
                                                                           scale);
        ax_cuda_launched("attention_backward");
        for (int b = 0; b < B; b++)
            for (int g = 0; g < G; g++) {
                const float *dS = dP + ((long)b * H + g) * sz, *P = S + ((long)b * H + g) * sz;
                const float *Q = qkv + ((long)b * T + i0) * C3 + (long)g * D;
                const float *dO = dout + ((long)b * T + i0) * C + (long)g * D;
                float *kv = dqkv + (long)b * T * C3 + C;
                // dQ_blk += dS K
                ax_cuda_gemm_strided(ctx, 'N', 'N', q, D, kend, 1.0f, dS, kend, G * sz,
                                     qkv + (long)b * T * C3 + C, C3, D, 1.0f,
                                     dqkv + ((long)b * T + i0) * C3 + (long)g * D, C3, (long)G * D,
                                     Hkv);
                // dK[0, kend) += dS^T Q_blk ; dV[0, kend) += P^T dO_blk
                ax_cuda_gemm_strided(ctx, 'T', 'N', kend, D, q, 1.0f, dS, kend, G * sz, Q, C3,
                                     (long)G * D, 1.0f, kv, C3, D, Hkv);
                ax_cuda_gemm_strided(ctx, 'T', 'N', kend, D, q, 1.0f, P, kend, G * sz, dO, C,
                                     (long)G * D, 1.0f, kv + Ckv, C3, D, Hkv);
            }
        ax_cuda_prof_mark("attention_backward");
    }
}

static int heads_ok(int C, int H, int Hkv, const char *op) {
    if (H <= 0 || C % H || Hkv <= 0 || H % Hkv) {
        ax_cuda_fail("%s: C=%d, %d heads, %d K/V heads: heads must divide C and K/V heads the "
                     "heads",
                     op, C, H, Hkv);
        return 0;
    }
    return 1;
}

// out[B,T,C]; att: lse in its first B*H*T floats (see the top of this file)
extern "C" void ax_cuda_attention_forward_gqa(ax_ctx *ctx, float *out, float *att,
                                              const float *qkv, int B, int T, int C, int H,
                                              int Hkv) {
    if (B <= 0 || T <= 0 || !heads_ok(C, H, Hkv, "attention_forward")) return;
    if (use_flash(ctx, B, C, H, Hkv))
        ax_cuda_flash_forward(ctx, out, att, qkv, B, T, C, H, Hkv);
    else
        blocked_forward(ctx, out, att, qkv, B, T, C, H, Hkv);
}

// dqkv += ; scratch: B*H*T floats, D_i of the flash kernels (unused when blocked)
// out: the forward's output (flash reads D_i from it; NULL takes the blocked path)
extern "C" void ax_cuda_attention_backward_gqa(ax_ctx *ctx, float *dqkv, float *scratch,
                                               const float *dout, const float *qkv,
                                               const float *att, const float *out, int B, int T,
                                               int C, int H, int Hkv) {
    if (B <= 0 || T <= 0 || !heads_ok(C, H, Hkv, "attention_backward")) return;
    if (out && scratch && use_flash(ctx, B, C, H, Hkv))
        ax_cuda_flash_backward(ctx, dqkv, scratch, dout, qkv, att, out, B, T, C, H, Hkv);
    else
        blocked_backward(ctx, dqkv, dout, qkv, att, B, T, C, H, Hkv);
}

// ---- one decoding step: a warp per (sequence, head), keys straight from the cache ----
// DEC_WARPS warps per block, each its own (sequence, head): one-warp blocks would cap an SM at
// its 32 resident blocks, half the warps it can hold, and decoding at batch 256 is bound by
// reading the cache. Lane j scores key j of each tile of 32 from its cache row; with `vec` (D a
// multiple of 4, rows 16-byte aligned) in 16-byte loads, 4x fewer load instructions than one
// float at a time for the same bytes, and the same order of additions (identical results).
#define DEC_WARPS 4
#define TILE 32         // keys per tile: one per lane
#define DMAX 128        // the largest head dim
#define DPL (DMAX / 32) // head-dim elements per lane
__global__ void attn_decode_kernel(float *out, const float *q, const float *kc, const float *vc,
                                   int BH, int H, int Hkv, int D, int len, int Tmax, float scale,
                                   int vec) {
    extern __shared__ float qsm[];
    int w = threadIdx.x >> 5, lane = threadIdx.x & 31;
    int bh = blockIdx.x * DEC_WARPS + w;
    if (bh >= BH) return; // the whole warp: nothing below waits on the block
    int b = bh / H, h = bh % H;
    float *qs = qsm + w * D;
    const float *qv = q + (long)b * H * D + (long)h * D;
    long kv = (long)b * Hkv + h / (H / Hkv); // the cache holds Hkv heads
    const float *k = kc + kv * Tmax * D, *v = vc + kv * Tmax * D;
    for (int d = lane; d < D; d += 32) qs[d] = qv[d];
    __syncwarp();
    float o[DPL] = {0.0f, 0.0f, 0.0f, 0.0f}, m = -INFINITY, l = 0.0f;
    for (int k0 = 0; k0 < len; k0 += TILE) {
        int t = k0 + lane;
        float s = -INFINITY;
        if (t < len) {
            const float *kr = k + (long)t * D;
            float acc = 0.0f;
            if (vec) {
                const float4 *k4 = (const float4 *)kr, *q4 = (const float4 *)qs;
                for (int d4 = 0; d4 < D / 4; d4++) {
                    float4 kk = k4[d4], qq = q4[d4];
                    acc += qq.x * kk.x;
                    acc += qq.y * kk.y;
                    acc += qq.z * kk.z;
                    acc += qq.w * kk.w;
                }
            } else {
                for (int d = 0; d < D; d++) acc += qs[d] * kr[d];
            }
            s = acc * scale;
        }
        float mn = fmaxf(m, ax_warp_max(s));
        float p = t < len ? expf(s - mn) : 0.0f, corr = expf(m - mn);
        l = l * corr + ax_warp_sum(p);
        for (int i = 0; i < DPL; i++) o[i] *= corr;
        int nk = min(TILE, len - k0);
        for (int jj = 0; jj < nk; jj++) {
            float pj = __shfl_sync(0xffffffffu, p, jj);
            for (int i = 0; i < DPL; i++) {
                int d = lane + 32 * i;
                if (d < D) o[i] += pj * v[(long)(k0 + jj) * D + d];
            }
        }
        m = mn;
    }
    float *dst = out + (long)b * H * D + (long)h * D;
    for (int i = 0; i < DPL; i++) {
        int d = lane + 32 * i;
        if (d < D) dst[d] = len > 0 ? o[i] / l : 0.0f;
    }
}

extern "C" void ax_cuda_attention_decode_gqa(ax_ctx *ctx, float *out, const float *q, const float *kc,
                                         const float *vc, int B, int H, int Hkv, int D, int len,
                                         int Tmax) {
    if (B <= 0 || H <= 0) return;
    if (Hkv <= 0 || H % Hkv) {
        ax_cuda_fail("attention_decode: %d K/V heads do not divide %d query heads", Hkv, H);
        return;
    }
    if (D < 1 || D > DMAX) {
        ax_cuda_fail("attention_decode: head dim %d is not supported (1..%d)", D, DMAX);
        return;
    }
    int BH = B * H, vec = D % 4 == 0 && ((uintptr_t)kc & 15) == 0;
    attn_decode_kernel<<<(BH + DEC_WARPS - 1) / DEC_WARPS, 32 * DEC_WARPS,
                         sizeof(float) * DEC_WARPS * D, AX_STREAM(ctx)>>>(
        out, q, kc, vc, BH, H, Hkv, D, len, Tmax, 1.0f / sqrtf((float)D), vec);
    ax_cuda_launched("attention_decode");
}
