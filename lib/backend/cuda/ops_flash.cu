// Causal attention as fused bf16 tensor-core kernels (flash-attention style) for bf16 contexts:
// the scores and probabilities live in shared memory and registers only, never in device
// memory. Head dims 16, 32, 64 and 128 (template D); other shapes take the blocked path.
//
// Warp matrix ops (wmma, 16x16x16, bf16 operands, fp32 accumulation) on tiles staged in shared
// memory as bf16 (rounded to nearest even from the fp32 activations). A block is 4 warps;
// each warp owns 16 rows of a 64-row tile.
//   forward   per query tile: for each key tile, S = Q K^T (fp32), online softmax on the
//             warp's rows (running max m, sum l; O in register fragments rescaled when m grows),
//             P rounded to bf16, O += P V. Writes O / l and lse = m + log l (as the blocked
//             path: the two are interchangeable).
//   backward  D_i = rowsum(dO * O) (the forward's output), then two kernels so every output
//             row has one owner (no atomics, deterministic):
//             per query tile:  P = exp(scale S - lse), dP = dO V^T, dS = scale P (dP - D_i),
//                              dQ += dS K (fragments in registers across the key tiles);
//             per key tile:    the transposed products P^T, dS^T for the warp's 16 keys over
//                              every later query tile of each query head of the K/V head's
//                              group, dV += P^T dO, dK += dS^T Q.
// Shared-memory rows are padded (bf16: D + 8, fp32: width + 4) so 16-row blocks stay 32-byte
// aligned, as wmma loads require, and rows do not start on the same bank.
#include <cuda_bf16.h>
#include <mma.h>

#include "lib/backend/cuda/kernels.cuh"

using namespace nvcuda;

#define FT 64        // rows per tile (queries or keys), 16 per warp
#define FW 4         // warps per block
#define LDS (FT + 4) // fp32 score rows
#define LDP (FT + 8) // bf16 probability rows

typedef __nv_bfloat16 bf16;
typedef wmma::fragment<wmma::matrix_a, 16, 16, 16, bf16, wmma::row_major> frag_a;
typedef wmma::fragment<wmma::matrix_b, 16, 16, 16, bf16, wmma::row_major> frag_b_row;
typedef wmma::fragment<wmma::matrix_b, 16, 16, 16, bf16, wmma::col_major> frag_b_col;
typedef wmma::fragment<wmma::accumulator, 16, 16, 16, float> frag_c;

// rows [r0, r0 + FT) of an fp32 [T, ld] matrix (at column offset `src`) into bf16 dst[FT, D + 8];
// rows past T are zeros
template <int D> __device__ void stage_rows(bf16 *dst, const float *src, long ld, int r0, int T) {
    for (int e = threadIdx.x; e < FT * D; e += blockDim.x) {
        int r = e / D, d = e % D;
        dst[r * (D + 8) + d] =
            __float2bfloat16_rn(r0 + r < T ? src[(long)(r0 + r) * ld + d] : 0.0f);
    }
}

// acc[16, 16 n..] = A[16, D] B^T where B is [FT, D] (row-major, ld D + 8): scores of 16 rows
// against the tile's FT rows, into S[16, LDS]
template <int D> __device__ void scores(float *S, const bf16 *A, const bf16 *Bt) {
    for (int n = 0; n < FT / 16; n++) {
        frag_c acc;
        wmma::fill_fragment(acc, 0.0f);
        for (int k = 0; k < D / 16; k++) {
            frag_a a;
            frag_b_col b;
            wmma::load_matrix_sync(a, A + k * 16, D + 8);
            wmma::load_matrix_sync(b, Bt + (n * 16) * (D + 8) + k * 16, D + 8);
            wmma::mma_sync(acc, a, b, acc);
        }
        wmma::store_matrix_sync(S + n * 16, acc, LDS, wmma::mem_row_major);
    }
}

// S[16, FT] = A B^T with A the warp's 16 query rows as register fragments (D / 16 of them) and
// B the tile's FT key rows [FT, D + 8] in shared memory
template <int D> __device__ void scores_q(float *S, const frag_a *qf, const bf16 *Bt) {
    for (int n = 0; n < FT / 16; n++) {
        frag_c acc;
        wmma::fill_fragment(acc, 0.0f);
        for (int k = 0; k < D / 16; k++) {
            frag_b_col b;
            wmma::load_matrix_sync(b, Bt + (n * 16) * (D + 8) + k * 16, D + 8);
            wmma::mma_sync(acc, qf[k], b, acc);
        }
        wmma::store_matrix_sync(S + n * 16, acc, LDS, wmma::mem_row_major);
    }
}

// acc[i] *= the factor of acc[i]'s row, for every fragment of `o`: the 16 row factors are laid
// out as a 16 x 16 tile (row r all f[r]) in the warp's scratch and loaded as a fragment of the
// same type, whose element i sits at the same matrix position as every other fragment's. Lanes
// 2r and 2r + 1 hold row r's factor `f`. Leaves the scratch free again.
template <int N> __device__ void scale_rows(frag_c *o, float *scratch, float f) {
    int lane = threadIdx.x & 31, row = lane >> 1, half = lane & 1;
    for (int c = half * 8; c < half * 8 + 8; c++) scratch[row * LDS + c] = f;
    __syncwarp();
    frag_c fr;
    wmma::load_matrix_sync(fr, scratch, LDS, wmma::mem_row_major);
    for (int n = 0; n < N; n++)
        for (int i = 0; i < fr.num_elements; i++) o[n].x[i] *= fr.x[i];
    __syncwarp();
}

// ---- forward ----
// The warp's O[16, D] and its Q[16, D] stay in register fragments across the key tiles (no
// O round trip through shared memory per tile, and no Q tile): the block's shared memory is
// the K and V tiles, the warps' scores and probabilities: 61 KB at D = 128 (3 blocks an SM)
// where O and Q in shared memory took 112 KB (2 blocks).
template <int D>
__device__ __forceinline__ void flash_fwd_body(float *out, float *lse, const float *qkv, int T,
                                               int C, int H, int Hkv, float scale) {
    extern __shared__ float fsm[];
    const int ldq = D + 8;
    bf16 *Ks = (bf16 *)fsm, *Vs = Ks + FT * ldq;
    float *Ss = (float *)(Vs + FT * ldq);
    bf16 *Ps = (bf16 *)(Ss + FW * 16 * LDS);
    int w = threadIdx.x >> 5, lane = threadIdx.x & 31;
    int bh = blockIdx.y, b = bh / H, h = bh % H;
    int q0 = ((T + FT - 1) / FT - 1 - (int)blockIdx.x) * FT; // the longest rows first
    long Ckv = (long)Hkv * D, C3 = C + 2 * Ckv;
    const float *qbase = qkv + (long)b * T * C3 + (long)h * D;
    const float *kbase = qkv + (long)b * T * C3 + C + (long)(h / (H / Hkv)) * D;
    float *S = Ss + w * 16 * LDS;
    bf16 *P = Ps + w * 16 * LDP;
    // Q through the K buffer into fragments (the first key tile overwrites it after a barrier)
    frag_a qf[D / 16];
    frag_c o[D / 16];
    stage_rows<D>(Ks, qbase, C3, q0, T);
    __syncthreads();
    for (int k = 0; k < D / 16; k++) {
        wmma::load_matrix_sync(qf[k], Ks + w * 16 * ldq + k * 16, ldq);
        wmma::fill_fragment(o[k], 0.0f);
    }
    int row = lane >> 1, half = lane & 1; // lanes 2r and 2r + 1 share the warp's row r
    int q = q0 + w * 16 + row, wlast = q0 + w * 16 + 15;
    float m = -INFINITY, l = 0.0f;
    int last = min(q0 + FT, T) - 1; // the block's last query: keys [0, last]
    for (int k0 = 0; k0 <= last; k0 += FT) {
        __syncthreads(); // the previous tile (or Q) is no longer read
        stage_rows<D>(Ks, kbase, C3, k0, T);
        stage_rows<D>(Vs, kbase + Ckv, C3, k0, T);
        __syncthreads();
        if (k0 > wlast) continue; // warp-uniform: every key is after the warp's queries
        scores_q<D>(S, qf, Ks);
        __syncwarp();
        float mx = -INFINITY;
        for (int c = half * (FT / 2); c < (half + 1) * (FT / 2); c++)
            if (k0 + c <= q && k0 + c < T) mx = fmaxf(mx, scale * S[row * LDS + c]);
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
        float mn = fmaxf(m, mx);
        float corr = mn == -INFINITY ? 1.0f : expf(m - mn); // exp(-inf) = 0 on the first keys
        float sum = 0.0f;
        for (int c = half * (FT / 2); c < (half + 1) * (FT / 2); c++) {
            float p = 0.0f;
            if (k0 + c <= q && k0 + c < T && mn != -INFINITY)
                p = expf(scale * S[row * LDS + c] - mn);
            bf16 pb = __float2bfloat16_rn(p);
            P[row * LDP + c] = pb;
            sum += __bfloat162float(pb); // l sums the probabilities P V multiplies
        }
        sum += __shfl_xor_sync(0xffffffffu, sum, 1);
        l = l * corr + sum;
        m = mn;
        __syncwarp();                         // S is read: its first 16 columns are scratch now
        scale_rows<D / 16>(o, S, corr);       // O *= corr per row
        for (int dn = 0; dn < D / 16; dn++) { // O += P V
            for (int k = 0; k < FT / 16; k++) {
                frag_a a;
                frag_b_row v;
                wmma::load_matrix_sync(a, P + k * 16, LDP);
                wmma::load_matrix_sync(v, Vs + (k * 16) * ldq + dn * 16, ldq);
                wmma::mma_sync(o[dn], a, v, o[dn]);
            }
        }
    }
    // O / l, through the warp's scratch 16 columns at a time (rows past T are not written)
    scale_rows<D / 16>(o, S, q < T ? 1.0f / l : 0.0f);
    float *dst = out + ((long)b * T + q) * C + (long)h * D;
    for (int dn = 0; dn < D / 16; dn++) {
        wmma::store_matrix_sync(S, o[dn], LDS, wmma::mem_row_major);
        __syncwarp();
        if (q < T)
            for (int c = half * 8; c < half * 8 + 8; c++) dst[dn * 16 + c] = S[row * LDS + c];
        __syncwarp();
    }
    if (q < T && !half) lse[(long)bh * T + q] = m + logf(l);
}

// D = 128 took 177 registers uncapped: 2 blocks an SM, where its 61 KB of shared memory allow 3;
// capped for 3 (__launch_bounds__) it takes 168 and a 16-byte spill. The smaller head dims
// stay uncapped (a cap made ptxas use more registers there, not fewer).
__global__ void __launch_bounds__(FW * 32, 3)
    flash_fwd_kernel_128(float *out, float *lse, const float *qkv, int T, int C, int H, int Hkv,
                         float scale) {
    flash_fwd_body<128>(out, lse, qkv, T, C, H, Hkv, scale);
}
template <int D>
__global__ void flash_fwd_kernel(float *out, float *lse, const float *qkv, int T, int C, int H,
                                 int Hkv, float scale) {
    flash_fwd_body<D>(out, lse, qkv, T, C, H, Hkv, scale);
}

// ---- backward: D_i = rowsum(dO * O) per (b, h, query), one warp per row ----
__global__ void flash_di_kernel(float *Di, const float *dout, const float *out, long rows, int T,
                                int C, int H, int D) {
    long r = (long)blockIdx.x * FW + (threadIdx.x >> 5); // r = (b H + h) T + i
    int lane = threadIdx.x & 31;
    if (r >= rows) return;
    long bh = r / T, b = bh / H, h = bh % H, i = r % T;
    const float *g = dout + (b * T + i) * C + h * D, *o = out + (b * T + i) * C + h * D;
    float s = 0.0f;
    for (int d = lane; d < D; d += 32) s += g[d] * o[d];
    s = ax_warp_sum(s);
    if (!lane) Di[r] = s;
}

// ---- backward, per query tile: dQ ----
template <int D>
__global__ void flash_dq_kernel(float *dqkv, const float *dout, const float *qkv, const float *lse,
                                const float *Di, int T, int C, int H, int Hkv, float scale) {
    extern __shared__ float fsm[];
    const int ldq = D + 8;
    bf16 *Qs = (bf16 *)fsm, *Gs = Qs + FT * ldq, *Ks = Gs + FT * ldq, *Vs = Ks + FT * ldq;
    float *Ss = (float *)(Vs + FT * ldq);
    bf16 *DSs = (bf16 *)(Ss + FW * 16 * LDS);
    int w = threadIdx.x >> 5, lane = threadIdx.x & 31;
    int bh = blockIdx.y, b = bh / H, h = bh % H;
    int q0 = ((T + FT - 1) / FT - 1 - (int)blockIdx.x) * FT;
    long Ckv = (long)Hkv * D, C3 = C + 2 * Ckv;
    const float *qbase = qkv + (long)b * T * C3 + (long)h * D;
    const float *kbase = qkv + (long)b * T * C3 + C + (long)(h / (H / Hkv)) * D;
    float *S = Ss + w * 16 * LDS;
    bf16 *DS = DSs + w * 16 * LDP;
    stage_rows<D>(Qs, qbase, C3, q0, T);
    stage_rows<D>(Gs, dout + (long)b * T * C + (long)h * D, C, q0, T);
    int row = lane >> 1, half = lane & 1;
    int q = q0 + w * 16 + row, wlast = q0 + w * 16 + 15;
    float L = q < T ? lse[(long)bh * T + q] : 0.0f, Dq = q < T ? Di[(long)bh * T + q] : 0.0f;
    frag_c dq[D / 16];
    for (int dn = 0; dn < D / 16; dn++) wmma::fill_fragment(dq[dn], 0.0f);
    int last = min(q0 + FT, T) - 1;
    for (int k0 = 0; k0 <= last; k0 += FT) {
        __syncthreads();
        stage_rows<D>(Ks, kbase, C3, k0, T);
        stage_rows<D>(Vs, kbase + Ckv, C3, k0, T);
        __syncthreads();
        if (k0 > wlast) continue;
        scores<D>(S, Qs + w * 16 * ldq, Ks); // S = Q K^T
        __syncwarp();
        float p[FT / 2];
        for (int c = 0; c < FT / 2; c++) {
            int key = k0 + half * (FT / 2) + c;
            p[c] = key <= q && q < T ? expf(scale * S[row * LDS + half * (FT / 2) + c] - L) : 0.0f;
        }
        __syncwarp();
        scores<D>(S, Gs + w * 16 * ldq, Vs); // dP = dO V^T
        __syncwarp();
        for (int c = 0; c < FT / 2; c++) {
            int col = half * (FT / 2) + c;
            DS[row * LDP + col] = __float2bfloat16_rn(scale * p[c] * (S[row * LDS + col] - Dq));
        }
        __syncwarp();
        for (int dn = 0; dn < D / 16; dn++) // dQ += dS K
            for (int k = 0; k < FT / 16; k++) {
                frag_a a;
                frag_b_row kf;
                wmma::load_matrix_sync(a, DS + k * 16, LDP);
                wmma::load_matrix_sync(kf, Ks + (k * 16) * ldq + dn * 16, ldq);
                wmma::mma_sync(dq[dn], a, kf, dq[dn]);
            }
    }
    __syncthreads(); // the K and V tiles become each warp's [16, D + 4] staging
    float *st = (float *)Ks + w * 16 * (D + 4);
    for (int dn = 0; dn < D / 16; dn++)
        wmma::store_matrix_sync(st + dn * 16, dq[dn], D + 4, wmma::mem_row_major);
    __syncwarp();
    if (q < T) {
        float *dst = dqkv + ((long)b * T + q) * C3 + (long)h * D;
        for (int d = half * (D / 2); d < (half + 1) * (D / 2); d++) dst[d] += st[row * (D + 4) + d];
    }
}

// ---- backward, per key tile of one K/V head: dK, dV over the group's query heads ----
template <int D>
__global__ void flash_dkv_kernel(float *dqkv, const float *dout, const float *qkv, const float *lse,
                                 const float *Di, int T, int C, int H, int Hkv, float scale) {
    extern __shared__ float fsm[];
    const int ldq = D + 8;
    bf16 *Ks = (bf16 *)fsm, *Vs = Ks + FT * ldq, *Qs = Vs + FT * ldq, *Gs = Qs + FT * ldq;
    float *Ls = (float *)(Gs + FT * ldq), *Dsh = Ls + FT, *Ss = Dsh + FT;
    bf16 *Pt = (bf16 *)(Ss + FW * 16 * LDS), *DSt = Pt + FW * 16 * LDP;
    int w = threadIdx.x >> 5, lane = threadIdx.x & 31;
    int bk = blockIdx.y, b = bk / Hkv, hk = bk % Hkv, G = H / Hkv;
    int k0 = blockIdx.x * FT;
    long Ckv = (long)Hkv * D, C3 = C + 2 * Ckv;
    const float *kbase = qkv + (long)b * T * C3 + C + (long)hk * D;
    float *S = Ss + w * 16 * LDS;
    bf16 *P = Pt + w * 16 * LDP, *DS = DSt + w * 16 * LDP;
    stage_rows<D>(Ks, kbase, C3, k0, T);
    stage_rows<D>(Vs, kbase + Ckv, C3, k0, T);
    int row = lane >> 1, half = lane & 1, key = k0 + w * 16 + row;
    frag_c dk[D / 16], dv[D / 16];
    for (int dn = 0; dn < D / 16; dn++) {
        wmma::fill_fragment(dk[dn], 0.0f);
        wmma::fill_fragment(dv[dn], 0.0f);
    }
    for (int h = hk * G; h < hk * G + G; h++) { // the group's query heads, in order
        long bh = (long)b * H + h;
        const float *qbase = qkv + (long)b * T * C3 + (long)h * D;
        const float *gbase = dout + (long)b * T * C + (long)h * D;
        for (int q0 = k0; q0 < T; q0 += FT) {
            __syncthreads();
            stage_rows<D>(Qs, qbase, C3, q0, T);
            stage_rows<D>(Gs, gbase, C, q0, T);
            if (threadIdx.x < FT) {
                int i = q0 + threadIdx.x;
                Ls[threadIdx.x] = i < T ? lse[bh * T + i] : 0.0f;
                Dsh[threadIdx.x] = i < T ? Di[bh * T + i] : 0.0f;
            }
            __syncthreads();
            scores<D>(S, Ks + w * 16 * ldq, Qs); // S^T = K Q^T: the warp's keys x the queries
            __syncwarp();
            float p[FT / 2];
            for (int c = 0; c < FT / 2; c++) {
                int col = half * (FT / 2) + c, i = q0 + col;
                p[c] = i >= key && i < T && key < T ? expf(scale * S[row * LDS + col] - Ls[col])
                                                    : 0.0f;
                P[row * LDP + col] = __float2bfloat16_rn(p[c]);
            }
            __syncwarp();
            scores<D>(S, Vs + w * 16 * ldq, Gs); // dP^T = V dO^T
            __syncwarp();
            for (int c = 0; c < FT / 2; c++) {
                int col = half * (FT / 2) + c;
                DS[row * LDP + col] =
                    __float2bfloat16_rn(scale * p[c] * (S[row * LDS + col] - Dsh[col]));
            }
            __syncwarp();
            for (int dn = 0; dn < D / 16; dn++) // dV += P^T dO ; dK += dS^T Q
                for (int k = 0; k < FT / 16; k++) {
                    frag_a a;
                    frag_b_row x;
                    wmma::load_matrix_sync(a, P + k * 16, LDP);
                    wmma::load_matrix_sync(x, Gs + (k * 16) * ldq + dn * 16, ldq);
                    wmma::mma_sync(dv[dn], a, x, dv[dn]);
                    wmma::load_matrix_sync(a, DS + k * 16, LDP);
                    wmma::load_matrix_sync(x, Qs + (k * 16) * ldq + dn * 16, ldq);
                    wmma::mma_sync(dk[dn], a, x, dk[dn]);
                }
        }
    }
    __syncthreads(); // the Q and dO tiles become each warp's [16, D + 4] staging
    float *st = (float *)Qs + w * 16 * (D + 4);
    for (int pass = 0; pass < 2; pass++) {
        for (int dn = 0; dn < D / 16; dn++)
            wmma::store_matrix_sync(st + dn * 16, pass ? dv[dn] : dk[dn], D + 4,
                                    wmma::mem_row_major);
        __syncwarp();
        if (key < T) {
            float *dst = dqkv + ((long)b * T + key) * C3 + C + (pass ? Ckv : 0) + (long)hk * D;
            for (int d = half * (D / 2); d < (half + 1) * (D / 2); d++)
                dst[d] += st[row * (D + 4) + d];
        }
        __syncwarp();
    }
}

// ---- host ----
static size_t fwd_smem(int D) { // K and V tiles, the warps' scores and probabilities
    return 2 * (size_t)FT * (D + 8) * 2 + FW * 16 * (LDS * 4 + LDP * 2);
}
static size_t dq_smem(int D) {
    return 4 * (size_t)FT * (D + 8) * 2 + FW * 16 * (LDS * 4 + LDP * 2);
}
static size_t dkv_smem(int D) {
    return 4 * (size_t)FT * (D + 8) * 2 + 2 * FT * 4 + FW * 16 * (LDS * 4 + 2 * LDP * 2);
}

template <int D>
static void fwd_launch(ax_ctx *ctx, float *out, float *lse, const float *qkv, int B, int T, int C,
                       int H, int Hkv) {
    void (*k)(float *, float *, const float *, int, int, int, int, float);
    if constexpr (D == 128)
        k = flash_fwd_kernel_128;
    else
        k = flash_fwd_kernel<D>;
    size_t sh = fwd_smem(D);
    cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)sh);
    dim3 grid((T + FT - 1) / FT, B * H);
    k<<<grid, FW * 32, sh, AX_STREAM(ctx)>>>(out, lse, qkv, T, C, H, Hkv, 1.0f / sqrtf((float)D));
    ax_cuda_launched("attention_forward (flash)");
}

template <int D>
static void bwd_launch(ax_ctx *ctx, float *dqkv, float *Di, const float *dout, const float *qkv,
                       const float *lse, const float *out, int B, int T, int C, int H, int Hkv) {
    float scale = 1.0f / sqrtf((float)D);
    long rows = (long)B * H * T;
    flash_di_kernel<<<(unsigned)((rows + FW - 1) / FW), FW * 32, 0, AX_STREAM(ctx)>>>(
        Di, dout, out, rows, T, C, H, D);
    ax_cuda_launched("attention_backward (flash)");
    void (*kq)(float *, const float *, const float *, const float *, const float *, int, int, int,
               int, float) = flash_dq_kernel<D>;
    size_t shq = dq_smem(D);
    cudaFuncSetAttribute(kq, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)shq);
    dim3 gq((T + FT - 1) / FT, B * H);
    kq<<<gq, FW * 32, shq, AX_STREAM(ctx)>>>(dqkv, dout, qkv, lse, Di, T, C, H, Hkv, scale);
    ax_cuda_launched("attention_backward (flash)");
    void (*kkv)(float *, const float *, const float *, const float *, const float *, int, int, int,
                int, float) = flash_dkv_kernel<D>;
    size_t shk = dkv_smem(D);
    cudaFuncSetAttribute(kkv, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)shk);
    dim3 gk((T + FT - 1) / FT, B * Hkv);
    kkv<<<gk, FW * 32, shk, AX_STREAM(ctx)>>>(dqkv, dout, qkv, lse, Di, T, C, H, Hkv, scale);
    ax_cuda_launched("attention_backward (flash)");
}

extern "C" int ax_cuda_flash_supported(int B, int C, int H, int Hkv) {
    int D = H > 0 && C % H == 0 ? C / H : 0;
    return (D == 16 || D == 32 || D == 64 || D == 128) && Hkv > 0 && H % Hkv == 0 &&
           (long)B * H <= 65535;
}

// the instantiation for head dim D = 16, 32, 64 or 128 (ax_cuda_flash_supported)
static int dim_index(int D) {
    return D == 16 ? 0 : D == 32 ? 1 : D == 64 ? 2 : 3;
}

extern "C" void ax_cuda_flash_forward(ax_ctx *ctx, float *out, float *lse, const float *qkv, int B,
                                      int T, int C, int H, int Hkv) {
    static void (*const launch[])(ax_ctx *, float *, float *, const float *, int, int, int, int,
                                  int) = {fwd_launch<16>, fwd_launch<32>, fwd_launch<64>,
                                          fwd_launch<128>};
    launch[dim_index(C / H)](ctx, out, lse, qkv, B, T, C, H, Hkv);
}

// Di: B*H*T floats of workspace (the op's scratch)
extern "C" void ax_cuda_flash_backward(ax_ctx *ctx, float *dqkv, float *Di, const float *dout,
                                       const float *qkv, const float *lse, const float *out, int B,
                                       int T, int C, int H, int Hkv) {
    static void (*const launch[])(ax_ctx *, float *, float *, const float *, const float *,
                                  const float *, const float *, int, int, int, int, int) = {
        bwd_launch<16>, bwd_launch<32>, bwd_launch<64>, bwd_launch<128>};
    launch[dim_index(C / H)](ctx, dqkv, Di, dout, qkv, lse, out, B, T, C, H, Hkv);
}
