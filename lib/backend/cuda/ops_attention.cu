// Causal attention as fused, memory-efficient kernels (flash-attention style): the T x T
// score matrix is never stored.
//
// Forward: one warp per query row, 8 rows per block; keys and values stream through shared
// memory in tiles of 32, lane j scoring key j of the tile, with the online softmax (running
// max m and sum l, the output rescaled when m grows). The op's `att` buffer [B,H,T] receives
// the per-row logsumexp lse = m + log(l), as on the CPU (lib/backend/cpu/ops_attention.c); only
// this backend's own attention_backward reads it.
//
// Backward recomputes the probabilities from q, k and lse (p = exp(scale q.k - lse)):
//   pass 1, per query row:  Di = sum_j p_ij dp_ij with dp_ij = dO_i . v_j   (into `scratch`)
//                           dq_i += sum_j ds_ij k_j, ds_ij = scale p_ij (dp_ij - Di)
//   pass 2, per key row:    dv_j += sum_i p_ij dO_i ; dk_j += sum_i ds_ij q_i
// Each output row is owned by one warp, so there are no atomics and the result is
// deterministic. Head dim D <= 128 (registers: 4 floats of the output row per lane).
//
// Grouped-query attention: rows are [q (H heads) | k (Hkv heads) | v (Hkv heads)], C3 = C + 2 Ckv
// (Ckv = Hkv D), and query head h reads K/V head h / (H / Hkv). Pass 2 runs per (b, K/V head)
// and walks the group's query heads in order, so dk, dv still have one owner.
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
extern "C" void ax_cuda_attention_forward(ax_ctx *ctx, float *out, float *att, const float *qkv,
                                          int B, int T, int C, int H, int Hkv) {
    if (B <= 0 || T <= 0 || !shape_ok(B, C, H, Hkv, "attention_forward")) return;
    int D = C / H;
    dim3 grid((T + NW - 1) / NW, B * H);
    size_t sh = sizeof(float) * ((size_t)TILE * (D + 1) + (size_t)TILE * D + (size_t)NW * D);
    attn_fwd_kernel<<<grid, NW * 32, sh, AX_STREAM(ctx)>>>(out, att, qkv, T, C, H, Hkv, D,
                                                           1.0f / sqrtf((float)D));
    ax_cuda_launched("attention_forward");
}

// dqkv += ; scratch: the first B*H*T floats hold Di between the two passes
extern "C" void ax_cuda_attention_backward(ax_ctx *ctx, float *dqkv, float *scratch,
                                           const float *dout, const float *qkv, const float *att,
                                           int B, int T, int C, int H, int Hkv) {
    if (B <= 0 || T <= 0 || !shape_ok(B, C, H, Hkv, "attention_backward")) return;
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

// ---- one decoding step: a warp per (sequence, head), keys straight from the cache ----
__global__ void attn_decode_kernel(float *out, const float *q, const float *kc, const float *vc,
                                   int H, int Hkv, int D, int len, int Tmax, float scale) {
    extern __shared__ float qs[];
    int bh = blockIdx.x, b = bh / H, h = bh % H, lane = threadIdx.x;
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
            float acc = 0.0f;
            for (int d = 0; d < D; d++) acc += qs[d] * k[(long)t * D + d];
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
    attn_decode_kernel<<<B * H, 32, sizeof(float) * D, AX_STREAM(ctx)>>>(
        out, q, kc, vc, H, Hkv, D, len, Tmax, 1.0f / sqrtf((float)D));
    ax_cuda_launched("attention_decode");
}
