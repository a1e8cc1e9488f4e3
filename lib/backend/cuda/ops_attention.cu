// Causal attention on the GPU, two ways; neither stores the whole T x T matrix per head.
//
// By query blocks on cuBLAS (the default): the queries go in blocks of Tq rows (Tq from a fixed
// 256 MiB budget for one [B, H, Tq, T] score block, so memory does not grow with T^2), and each
// block is three batched GEMMs and row kernels in the context's arena:
//   forward   S = scale Q_blk K^T ; P = softmax(S) (causal, lse kept) ; O_blk = P V
//   backward  S again, P = exp(S - lse) ; dP = dO_blk V^T ; dS = scale P (dP - D_i),
//             D_i = sum_j P_ij dP_ij ; dQ_blk += dS K ; dK += dS^T Q_blk ; dV += P^T dO_blk
// The products run on the tensor cores: fp32 contexts in fp32 (no TF32, like the CPU), bf16
// contexts with Q, K, V, P and dS rounded to bf16 inside cuBLAS and fp32 accumulation. Keys
// past a block's last query are not computed (a block reads keys [0, i0 + Tq)). Every
// accumulation has a fixed order (GQA: a group's query heads in turn), so results are
// deterministic.
//
// Fused kernels (AXMEM_CUDA_ATTENTION=fused; the first version, kept as the reference the
// blocked path is checked against): one warp per query row, fp32 CUDA cores, T x T never
// materialised at all.
//
// Fused forward: one warp per query row, 8 rows per block; keys and values stream through shared
// memory in tiles of 32, lane j scoring key j of the tile, with the online softmax (running
// max m and sum l, the output rescaled when m grows). The op's `att` buffer [B,H,T] receives
// the per-row logsumexp lse = m + log(l), as on the CPU (lib/backend/cpu/ops_attention.c); only
// this backend's own attention_backward reads it.
//
// Fused backward recomputes the probabilities from q, k and lse (p = exp(scale q.k - lse)):
//   pass 1, per query row:  Di = sum_j p_ij dp_ij with dp_ij = dO_i . v_j   (into `scratch`)
//                           dq_i += sum_j ds_ij k_j, ds_ij = scale p_ij (dp_ij - Di)
//   pass 2, per key row:    dv_j += sum_i p_ij dO_i ; dk_j += sum_i ds_ij q_i
// Each output row is owned by one warp, so there are no atomics and the result is
// deterministic. Head dim D <= 128 (registers: 4 floats of the output row per lane).
//
// Grouped-query attention: rows are [q (H heads) | k (Hkv heads) | v (Hkv heads)], C3 = C + 2 Ckv
// (Ckv = Hkv D), and query head h reads K/V head h / (H / Hkv). Pass 2 runs per (b, K/V head)
// and walks the group's query heads in order, so dk, dv still have one owner.
#include <stdlib.h>
#include <string.h>

#include "lib/backend/cuda/kernels.cuh"

#define TILE 32 // keys (or queries) per shared-memory tile: one per lane
#define NW 8    // warps per block: rows per block
#define DMAX 128
#define DPL (DMAX / 32) // head-dim elements per lane

// ---- forward ----
__global__ void attn_fwd_kernel(float *out, float *lse, const float *qkv, int T, int C, int H,
                                int Hkv, int D, float scale) {
    extern __shared__ float smem[];
    int ldk = D + 1; // padded: lane j reads row j of the tile without bank conflicts
    float *Ks = smem, *Vs = Ks + TILE * ldk, *Qs = Vs + TILE * D;
    int bh = blockIdx.y, b = bh / H, h = bh % H;
    int w = threadIdx.x >> 5, lane = threadIdx.x & 31;
    long Ckv = (long)Hkv * D, C3 = C + 2 * Ckv;
    const float *base = qkv + (long)b * T * C3 + (long)h * D;
    const float *kbase = qkv + (long)b * T * C3 + C + (long)(h / (H / Hkv)) * D;
    int r0 = blockIdx.x * NW, row = r0 + w;
    int last = min(r0 + NW, T) - 1; // the block's last row: keys [0, last]
    float *q = Qs + w * D;
    if (row < T)
        for (int d = lane; d < D; d += 32) q[d] = base[(long)row * C3 + d];
    float o[DPL] = {0.0f, 0.0f, 0.0f, 0.0f}, m = -INFINITY, l = 0.0f;
    for (int k0 = 0; k0 <= last; k0 += TILE) {
        __syncthreads(); // the previous tile is no longer read
        for (int e = threadIdx.x; e < TILE * D; e += blockDim.x) {
            int j = e / D, d = e % D, key = k0 + j;
            float kv = 0.0f, vv = 0.0f;
            if (key < T) {
                kv = kbase[(long)key * C3 + d];
                vv = kbase[(long)key * C3 + Ckv + d];
            }
            Ks[j * ldk + d] = kv;
            Vs[j * D + d] = vv;
        }
        __syncthreads();
        if (row >= T || k0 > row) continue; // warp-uniform
        int key = k0 + lane;
        float s = -INFINITY;
        if (key <= row) {
            float acc = 0.0f;
            for (int d = 0; d < D; d++) acc += q[d] * Ks[lane * ldk + d];
            s = acc * scale;
        }
        float mn = fmaxf(m, ax_warp_max(s)); // finite: key k0 <= row is always valid
        float p = key <= row ? expf(s - mn) : 0.0f;
        float corr = expf(m - mn);
        l = l * corr + ax_warp_sum(p);
        int nk = min(TILE, row - k0 + 1);
        for (int t = 0; t < DPL; t++) o[t] *= corr;
        for (int jj = 0; jj < nk; jj++) {
            float pj = __shfl_sync(0xffffffffu, p, jj);
            for (int t = 0; t < DPL; t++) {
                int d = lane + 32 * t;
                if (d < D) o[t] += pj * Vs[jj * D + d];
            }
        }
        m = mn;
    }
    if (row < T) {
        float inv = 1.0f / l;
        float *dst = out + ((long)b * T + row) * C + (long)h * D;
        for (int t = 0; t < DPL; t++) {
            int d = lane + 32 * t;
            if (d < D) dst[d] = o[t] * inv;
        }
        if (lane == 0) lse[(long)bh * T + row] = m + logf(l);
    }
}

// ---- backward pass 1: Di and dq, one warp per query row ----
__global__ void attn_bwd_dq_kernel(float *dqkv, float *Dbuf, const float *dout, const float *qkv,
                                   const float *lse, int T, int C, int H, int Hkv, int D,
                                   float scale) {
    extern __shared__ float smem[];
    int ldk = D + 1;
    float *Ks = smem, *Vs = Ks + TILE * ldk, *Qs = Vs + TILE * ldk, *Gs = Qs + NW * D;
    int bh = blockIdx.y, b = bh / H, h = bh % H;
    int w = threadIdx.x >> 5, lane = threadIdx.x & 31;
    long Ckv = (long)Hkv * D, C3 = C + 2 * Ckv;
    const float *base = qkv + (long)b * T * C3 + (long)h * D;
    const float *kbase = qkv + (long)b * T * C3 + C + (long)(h / (H / Hkv)) * D;
    const float *gbase = dout + (long)b * T * C + (long)h * D;
    int r0 = blockIdx.x * NW, row = r0 + w;
    int last = min(r0 + NW, T) - 1;
    float *q = Qs + w * D, *g = Gs + w * D;
    if (row < T)
        for (int d = lane; d < D; d += 32) {
            q[d] = base[(long)row * C3 + d];
            g[d] = gbase[(long)row * C + d];
        }
    float L = row < T ? lse[(long)bh * T + row] : 0.0f;
    float Di = 0.0f, dq[DPL] = {0.0f, 0.0f, 0.0f, 0.0f};
    for (int pass = 0; pass < 2; pass++) {
        for (int k0 = 0; k0 <= last; k0 += TILE) {
            __syncthreads();
            for (int e = threadIdx.x; e < TILE * D; e += blockDim.x) {
                int j = e / D, d = e % D, key = k0 + j;
                Ks[j * ldk + d] = key < T ? kbase[(long)key * C3 + d] : 0.0f;
                Vs[j * ldk + d] = key < T ? kbase[(long)key * C3 + Ckv + d] : 0.0f;
            }
            __syncthreads();
            if (row >= T || k0 > row) continue;
            int key = k0 + lane;
            float p = 0.0f, dp = 0.0f;
            if (key <= row) {
                float s = 0.0f;
                for (int d = 0; d < D; d++) {
                    s += q[d] * Ks[lane * ldk + d];
                    dp += g[d] * Vs[lane * ldk + d];
                }
                p = expf(s * scale - L);
            }
            if (pass == 0) {
                Di += ax_warp_sum(p * dp);
                continue;
            }
            float ds = scale * p * (dp - Di);
            int nk = min(TILE, row - k0 + 1);
            for (int jj = 0; jj < nk; jj++) {
                float dsj = __shfl_sync(0xffffffffu, ds, jj);
                for (int t = 0; t < DPL; t++) {
                    int d = lane + 32 * t;
                    if (d < D) dq[t] += dsj * Ks[jj * ldk + d];
                }
            }
        }
    }
    if (row < T) {
        float *dst = dqkv + ((long)b * T + row) * C3 + (long)h * D;
        for (int t = 0; t < DPL; t++) {
            int d = lane + 32 * t;
            if (d < D) dst[d] += dq[t];
        }
        if (lane == 0) Dbuf[(long)bh * T + row] = Di;
    }
}

// ---- backward pass 2: dk and dv, one warp per key row; queries stream through shared ----
__global__ void attn_bwd_dkv_kernel(float *dqkv, const float *dout, const float *qkv,
                                    const float *lse, const float *Dbuf, int T, int C, int H,
                                    int Hkv, int D, float scale) {
    extern __shared__ float smem[];
    int ldk = D + 1;
    float *Qs = smem, *Gs = Qs + TILE * ldk, *Ls = Gs + TILE * ldk, *Ds = Ls + TILE;
    float *Kw = Ds + TILE, *Vw = Kw + NW * D;
    int bk = blockIdx.y, b = bk / Hkv, hk = bk % Hkv, G = H / Hkv;
    int w = threadIdx.x >> 5, lane = threadIdx.x & 31;
    long Ckv = (long)Hkv * D, C3 = C + 2 * Ckv;
    const float *kbase = qkv + (long)b * T * C3 + C + (long)hk * D;
    int j0 = blockIdx.x * NW, key = j0 + w;
    float *k = Kw + w * D, *v = Vw + w * D;
    if (key < T)
        for (int d = lane; d < D; d += 32) {
            k[d] = kbase[(long)key * C3 + d];
            v[d] = kbase[(long)key * C3 + Ckv + d];
        }
    float dk[DPL] = {0.0f, 0.0f, 0.0f, 0.0f}, dv[DPL] = {0.0f, 0.0f, 0.0f, 0.0f};
    for (int h = hk * G; h < hk * G + G; h++) { // the group's query heads, in order
        const float *base = qkv + (long)b * T * C3 + (long)h * D;
        const float *gbase = dout + (long)b * T * C + (long)h * D;
        long bh = (long)b * H + h;
        for (int i0 = j0 / TILE * TILE; i0 < T; i0 += TILE) {
            __syncthreads();
            for (int e = threadIdx.x; e < TILE * D; e += blockDim.x) {
                int i = e / D, d = e % D, r = i0 + i;
                Qs[i * ldk + d] = r < T ? base[(long)r * C3 + d] : 0.0f;
                Gs[i * ldk + d] = r < T ? gbase[(long)r * C + d] : 0.0f;
            }
            if (threadIdx.x < TILE) {
                int r = i0 + threadIdx.x;
                Ls[threadIdx.x] = r < T ? lse[(long)bh * T + r] : 0.0f;
                Ds[threadIdx.x] = r < T ? Dbuf[(long)bh * T + r] : 0.0f;
            }
            __syncthreads();
            if (key >= T || i0 + TILE - 1 < key) continue; // no query of this tile sees the key
            int r = i0 + lane;
            float p = 0.0f, ds = 0.0f;
            if (r < T && r >= key) {
                float s = 0.0f, dp = 0.0f;
                for (int d = 0; d < D; d++) {
                    s += Qs[lane * ldk + d] * k[d];
                    dp += Gs[lane * ldk + d] * v[d];
                }
                p = expf(s * scale - Ls[lane]);
                ds = scale * p * (dp - Ds[lane]);
            }
            for (int ii = 0; ii < TILE; ii++) {
                float pi = __shfl_sync(0xffffffffu, p, ii), dsi = __shfl_sync(0xffffffffu, ds, ii);
                for (int t = 0; t < DPL; t++) {
                    int d = lane + 32 * t;
                    if (d < D) {
                        dv[t] += pi * Gs[ii * ldk + d];
                        dk[t] += dsi * Qs[ii * ldk + d];
                    }
                }
            }
        }
    }
    if (key < T) {
        float *dst = dqkv + ((long)b * T + key) * C3 + C + (long)hk * D;
        for (int t = 0; t < DPL; t++) {
            int d = lane + 32 * t;
            if (d < D) {
                dst[d] += dk[t];
                dst[Ckv + d] += dv[t];
            }
        }
    }
}

static int shape_ok(int B, int C, int H, int Hkv, const char *op) {
    if (Hkv <= 0 || H % Hkv) {
        ax_cuda_fail("%s: %d K/V heads do not divide %d query heads", op, Hkv, H);
        return 0;
    }
    if ((long)B * H > 65535) { /* gridDim.y */
        ax_cuda_fail("%s: B*H = %d*%d exceeds the kernel's 65535 (sequence, head) pairs", op, B, H);
        return 0;
    }
    if (H <= 0 || C % H || C / H > DMAX || C / H < 1) {
        ax_cuda_fail("%s: head dim C/H = %d/%d is not supported by the CUDA kernel (needs an "
                     "integer <= %d)",
                     op, C, H, DMAX);
        return 0;
    }
    return 1;
}

// out[B,T,C]; att: lse in its first B*H*T floats (see the top of this file)
static void fused_forward(ax_ctx *ctx, float *out, float *att, const float *qkv, int B, int T,
                          int C, int H, int Hkv) {
    if (!shape_ok(B, C, H, Hkv, "attention_forward")) return;
    int D = C / H;
    dim3 grid((T + NW - 1) / NW, B * H);
    size_t sh = sizeof(float) * ((size_t)TILE * (D + 1) + (size_t)TILE * D + (size_t)NW * D);
    attn_fwd_kernel<<<grid, NW * 32, sh, AX_STREAM(ctx)>>>(out, att, qkv, T, C, H, Hkv, D,
                                                           1.0f / sqrtf((float)D));
    ax_cuda_launched("attention_forward");
}

// dqkv += ; scratch: the first B*H*T floats hold Di between the two passes
static void fused_backward(ax_ctx *ctx, float *dqkv, float *scratch, const float *dout,
                           const float *qkv, const float *att, int B, int T, int C, int H,
                           int Hkv) {
    if (!shape_ok(B, C, H, Hkv, "attention_backward")) return;
    int D = C / H;
    float scale = 1.0f / sqrtf((float)D);
    dim3 grid((T + NW - 1) / NW, B * H);
    size_t sh1 = sizeof(float) * (2 * (size_t)TILE * (D + 1) + 2 * (size_t)NW * D);
    attn_bwd_dq_kernel<<<grid, NW * 32, sh1, AX_STREAM(ctx)>>>(dqkv, scratch, dout, qkv, att, T, C,
                                                               H, Hkv, D, scale);
    ax_cuda_launched("attention_backward (dq)");
    size_t sh2 =
        sizeof(float) * (2 * (size_t)TILE * (D + 1) + 2 * (size_t)TILE + 2 * (size_t)NW * D);
    dim3 grid2((T + NW - 1) / NW, B * Hkv); // one block column per (b, K/V head)
    attn_bwd_dkv_kernel<<<grid2, NW * 32, sh2, AX_STREAM(ctx)>>>(dqkv, dout, qkv, att, scratch, T,
                                                                 C, H, Hkv, D, scale);
    ax_cuda_launched("attention_backward (dk, dv)");
}

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

// query rows per block: AXMEM_CUDA_ATTENTION=gemm:ROWS (tests), else the most that fit the
// budget (all of T when they do; multiples of 16 otherwise, at least 16)
static int blk_rows(int B, int T, int H) {
    const char *e = getenv("AXMEM_CUDA_ATTENTION");
    if (e && !strncmp(e, "gemm:", 5) && atoi(e + 5) > 0) return imin(atoi(e + 5), T);
    long per_row = (long)B * H * T * (long)sizeof(float);
    long q = BLK_BUDGET / (per_row > 0 ? per_row : 1);
    if (q >= T) return T;
    q = q / 16 * 16;
    return (int)(q < 16 ? imin(16, T) : q);
}

static int use_fused(void) {
    const char *e = getenv("AXMEM_CUDA_ATTENTION");
    return e && !strcmp(e, "fused");
}

// AXMEM_CUDA_ATTENTION=flash: the fused bf16 kernels of ops_flash.cu, on bf16 contexts and the
// head dims they take (not yet the default: unmeasured on a GPU)
static int use_flash(const ax_ctx *ctx, int B, int C, int H, int Hkv) {
    const char *e = getenv("AXMEM_CUDA_ATTENTION");
    return e && !strcmp(e, "flash") && ((const ax_cuda_ctx *)ctx->impl)->bf16 &&
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
extern "C" void ax_cuda_attention_forward(ax_ctx *ctx, float *out, float *att, const float *qkv,
                                          int B, int T, int C, int H, int Hkv) {
    if (B <= 0 || T <= 0 || !heads_ok(C, H, Hkv, "attention_forward")) return;
    if (use_fused())
        fused_forward(ctx, out, att, qkv, B, T, C, H, Hkv);
    else if (use_flash(ctx, B, C, H, Hkv))
        ax_cuda_flash_forward(ctx, out, att, qkv, B, T, C, H, Hkv);
    else
        blocked_forward(ctx, out, att, qkv, B, T, C, H, Hkv);
}

// dqkv += ; scratch: B*H*T floats, D_i between the fused kernels' passes (unused when blocked)
// out: the forward's output (flash reads D_i from it; NULL takes the blocked path)
extern "C" void ax_cuda_attention_backward(ax_ctx *ctx, float *dqkv, float *scratch,
                                           const float *dout, const float *qkv, const float *att,
                                           const float *out, int B, int T, int C, int H, int Hkv) {
    if (B <= 0 || T <= 0 || !heads_ok(C, H, Hkv, "attention_backward")) return;
    if (use_fused())
        fused_backward(ctx, dqkv, scratch, dout, qkv, att, B, T, C, H, Hkv);
    else if (out && scratch && use_flash(ctx, B, C, H, Hkv))
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

extern "C" void ax_cuda_attention_decode(ax_ctx *ctx, float *out, const float *q, const float *kc,
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
