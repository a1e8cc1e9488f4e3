// Elementwise and data-movement kernels: the vocabulary-sharded embedding, SwiGLU, residual
// accumulation, rotary embedding, AdamW, KV-cache append, strided row copies and
// the k = 0 GEMM scale. The CPU kernels (lib/backend/cpu/) are the specification.
#include "lib/backend/cuda/kernels.cuh"

#define TPB 256

// ---- C[m,n] = beta C (beta = 0 writes exact zeros, clearing NaNs) ----
__global__ void scale_matrix_kernel(float *C, long ldc, long m, long n, float beta) {
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < m * n;
         i += (long)gridDim.x * blockDim.x) {
        float *c = C + (i / n) * ldc + i % n;
        *c = beta == 0.0f ? 0.0f : beta * *c;
    }
}
extern "C" void ax_cuda_scale_matrix(ax_ctx *ctx, float *C, long ldc, long m, long n, float beta) {
    if (m <= 0 || n <= 0) return;
    scale_matrix_kernel<<<ax_blocks(m * n, TPB), TPB, 0, AX_STREAM(ctx)>>>(C, ldc, m, n, beta);
    ax_cuda_launched("gemm (k = 0)");
}

// ---- embedding: rows [v0, v0 + rows) of the table are here ----
// out[N,C] = wte[t - v0] for owned tokens, 0 otherwise. One block row per token.
__global__ void emb_fwd_kernel(float *out, const int32_t *tokens, const float *wte, int N, int C,
                               int v0, int rows) {
    for (int i = blockIdx.y; i < N; i += gridDim.y) { /* gridDim.y is at most 65535 */
        long r = (long)tokens[i] - v0;
        int owned = r >= 0 && r < rows;
        for (int c = blockIdx.x * blockDim.x + threadIdx.x; c < C; c += gridDim.x * blockDim.x)
            out[(long)i * C + c] = owned ? wte[r * C + c] : 0.0f;
    }
}

// dwte[rows,C] += scatter of dout[N,C]. One thread per column walks all N rows in order: two
// rows naming the same token never race, no float atomics, and the sum order is the CPU's
// (bit-identical to it). The price is parallelism limited to C threads; a sort-by-token
// segmented sum is the faster deterministic alternative if this shows in profiles.
__global__ void emb_bwd_kernel(float *dwte, const float *dout, const int32_t *tokens, int N, int C,
                               int v0, int rows) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= C) return;
    for (int i = 0; i < N; i++) {
        long r = (long)tokens[i] - v0;
        if (r < 0 || r >= rows) continue;
        dwte[r * C + c] += dout[(long)i * C + c];
    }
}

extern "C" void ax_cuda_embedding_shard_forward(ax_ctx *ctx, float *out, const int32_t *tokens,
                                                const float *wte, int N, int C, int v0, int rows) {
    if (N <= 0 || C <= 0) return;
    dim3 grid((C + TPB - 1) / TPB, N < 65535 ? N : 65535);
    emb_fwd_kernel<<<grid, TPB, 0, AX_STREAM(ctx)>>>(out, tokens, wte, N, C, v0, rows);
    ax_cuda_launched("embedding_forward");
}
extern "C" void ax_cuda_embedding_shard_backward(ax_ctx *ctx, float *dwte, const float *dout,
                                                 const int32_t *tokens, int N, int C, int v0,
                                                 int rows) {
    if (N <= 0 || C <= 0) return;
    emb_bwd_kernel<<<(C + 127) / 128, 128, 0, AX_STREAM(ctx)>>>(dwte, dout, tokens, N, C, v0, rows);
    ax_cuda_launched("embedding_backward");
}

// ---- SwiGLU: out = silu(gate) * up, h[N,2F] = [gate | up] ----
// Rows over blockIdx.y (in turn past gridDim.y), columns over the threads: no 64-bit division
// per element (the flat index's i / F held these kernels at about half the memory rate).
static dim3 row_grid(long rows, long cols) {
    long x = (cols + TPB - 1) / TPB;
    return dim3((unsigned)(x < 1024 ? x : 1024), (unsigned)(rows < 65535 ? rows : 65535));
}
// rows of out are ldo apart (F for fp32; bf16 storage: ax_bf16_ld(F))
template <typename T>
__global__ void swiglu_fwd_kernel(T *out, long ldo, const float *h, long N, int F) {
    for (long r = blockIdx.y; r < N; r += gridDim.y) {
        const float *gate = h + r * 2 * F, *up = gate + F;
        for (int j = blockIdx.x * blockDim.x + threadIdx.x; j < F; j += gridDim.x * blockDim.x) {
            float g = gate[j];
            ax_store(out + r * ldo + j, g / (1.0f + expf(-g)) * up[j]);
        }
    }
}
// s = sigmoid(g): d gate = dout u s (1 + g (1 - s)), d up = dout g s
__device__ __forceinline__ void swiglu_grads(float g, float u, float d, float *dg, float *du) {
    float s = 1.0f / (1.0f + expf(-g));
    *dg = d * u * s * (1.0f + g * (1.0f - s));
    *du = d * g * s;
}
// dh[N,2F] +=
__global__ void swiglu_bwd_kernel(float *dh, const float *dout, const float *h, long N, int F) {
    for (long r = blockIdx.y; r < N; r += gridDim.y) {
        const float *gate = h + r * 2 * F, *up = gate + F, *dy = dout + r * F;
        float *dg = dh + r * 2 * F, *du = dg + F;
        for (int j = blockIdx.x * blockDim.x + threadIdx.x; j < F; j += gridDim.x * blockDim.x) {
            float a, b;
            swiglu_grads(gate[j], up[j], dy[j], &a, &b);
            dg[j] += a;
            du[j] += b;
        }
    }
}
// dh[N, ldh] (bf16 storage) = the sums above on a zeroed dh (0 + x: the same bits, signed
// zeros included)
__global__ void swiglu_bwd_bf16_kernel(__nv_bfloat16 *dh, long ldh, const float *dout,
                                       const float *h, long N, int F) {
    for (long r = blockIdx.y; r < N; r += gridDim.y) {
        const float *gate = h + r * 2 * F, *up = gate + F, *dy = dout + r * F;
        __nv_bfloat16 *dg = dh + r * ldh, *du = dg + F;
        for (int j = blockIdx.x * blockDim.x + threadIdx.x; j < F; j += gridDim.x * blockDim.x) {
            float a, b;
            swiglu_grads(gate[j], up[j], dy[j], &a, &b);
            ax_store(dg + j, 0.0f + a);
            ax_store(du + j, 0.0f + b);
        }
    }
}
extern "C" void ax_cuda_swiglu_forward(ax_ctx *ctx, float *out, const float *h, int N, int F) {
    if (N <= 0 || F <= 0) return;
    auto k =
        swiglu_fwd_kernel<float>; /* (a variable: the emulator's launch rewrite takes a name) */
    k<<<row_grid(N, F), TPB, 0, AX_STREAM(ctx)>>>(out, F, h, N, F);
    ax_cuda_launched("swiglu_forward");
}
extern "C" void ax_cuda_swiglu_forward_bf16(ax_ctx *ctx, uint16_t *out, const float *h, int N,
                                            int F) {
    if (N <= 0 || F <= 0) return;
    auto k = swiglu_fwd_kernel<__nv_bfloat16>;
    k<<<row_grid(N, F), TPB, 0, AX_STREAM(ctx)>>>((__nv_bfloat16 *)out, ax_bf16_ld(F), h, N, F);
    ax_cuda_launched("swiglu_forward_bf16");
}
extern "C" void ax_cuda_swiglu_backward(ax_ctx *ctx, float *dh, const float *dout, const float *h,
                                        int N, int F) {
    if (N <= 0 || F <= 0) return;
    swiglu_bwd_kernel<<<row_grid(N, F), TPB, 0, AX_STREAM(ctx)>>>(dh, dout, h, N, F);
    ax_cuda_launched("swiglu_backward");
}
extern "C" void ax_cuda_swiglu_backward_bf16(ax_ctx *ctx, uint16_t *dh, const float *dout,
                                             const float *h, int N, int F) {
    if (N <= 0 || F <= 0) return;
    swiglu_bwd_bf16_kernel<<<row_grid(N, F), TPB, 0, AX_STREAM(ctx)>>>(
        (__nv_bfloat16 *)dh, ax_bf16_ld(2L * F), dout, h, N, F);
    ax_cuda_launched("swiglu_backward_bf16");
}

// ---- residual accumulation ----
__global__ void accumulate_kernel(float *dst, const float *src, long n) {
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n;
         i += (long)gridDim.x * blockDim.x)
        dst[i] += src[i];
}
extern "C" void ax_cuda_accumulate(ax_ctx *ctx, float *dst, const float *src, long n) {
    if (n <= 0) return;
    accumulate_kernel<<<ax_blocks(n, TPB), TPB, 0, AX_STREAM(ctx)>>>(dst, src, n);
    ax_cuda_launched("accumulate");
}

// ---- rotary embedding: pairs (i, i + D/2), angle(t, i) = t theta^(-2i/D) ----
// cos/sin[T, D/2], angles in double like the CPU table
__global__ void rope_table_kernel(float *cos_t, float *sin_t, int T, int D, float theta) {
    int h = D / 2;
    for (long k = blockIdx.x * (long)blockDim.x + threadIdx.x; k < (long)T * h;
         k += (long)gridDim.x * blockDim.x) {
        int t = (int)(k / h), i = (int)(k % h);
        double a = (double)t * pow((double)theta, -2.0 * i / (double)D);
        cos_t[k] = (float)cos(a);
        sin_t[k] = (float)sin(a);
    }
}
// x[B,T,ld], heads at x[row*ld + h*D + d]; sgn = -1 applies the inverse rotation (backward).
// Rows (b, t) over blockIdx.y, the row's H * D/2 pairs over the threads.
__global__ void rope_kernel(float *x, const float *cos_t, const float *sin_t, int B, int T, int H,
                            int D, long ld, float sgn) {
    int h2 = D / 2, pairs = H * h2;
    for (long row = blockIdx.y; row < (long)B * T; row += gridDim.y) {
        int t = (int)(row % T);
        const float *ct = cos_t + (long)t * h2, *st = sin_t + (long)t * h2;
        for (int p = blockIdx.x * blockDim.x + threadIdx.x; p < pairs;
             p += gridDim.x * blockDim.x) {
            int hd = p / h2, i = p - hd * h2;
            float *x1 = x + row * ld + (long)hd * D, *x2 = x1 + h2;
            float cs = ct[i], s = sgn * st[i];
            float a = x1[i], c = x2[i];
            x1[i] = a * cs - c * s;
            x2[i] = a * s + c * cs;
        }
    }
}
extern "C" void ax_cuda_rope_table(ax_ctx *ctx, float *cos_t, float *sin_t, int T, int D,
                                   float theta) {
    if (T <= 0 || D < 2) return;
    rope_table_kernel<<<ax_blocks((long)T * (D / 2), TPB), TPB, 0, AX_STREAM(ctx)>>>(cos_t, sin_t,
                                                                                     T, D, theta);
    ax_cuda_launched("rope_table");
}
static void rope(ax_ctx *ctx, float *x, const float *cos_t, const float *sin_t, int B, int T, int H,
                 int D, long ld, float sgn) {
    long total = (long)B * T * H * (D / 2);
    if (total <= 0) return;
    rope_kernel<<<row_grid((long)B * T, (long)H * (D / 2)), TPB, 0, AX_STREAM(ctx)>>>(
        x, cos_t, sin_t, B, T, H, D, ld, sgn);
    ax_cuda_launched(sgn > 0 ? "rope_forward" : "rope_backward");
}
extern "C" void ax_cuda_rope_forward(ax_ctx *ctx, float *x, const float *cos_t, const float *sin_t,
                                     int B, int T, int H, int D, long ld) {
    rope(ctx, x, cos_t, sin_t, B, T, H, D, ld, 1.0f);
}
extern "C" void ax_cuda_rope_backward(ax_ctx *ctx, float *dx, const float *cos_t,
                                      const float *sin_t, int B, int T, int H, int D, long ld) {
    rope(ctx, dx, cos_t, sin_t, B, T, H, D, ld, -1.0f);
}

// ---- AdamW over the slab: the CPU's operations in the CPU's order ----
// one parameter: the update every AdamW kernel applies (same arithmetic, same results)
__device__ __forceinline__ void adamw_one(float &p, float g, float &m, float &v, float lr, float b1,
                                          float b2, float eps, float wd, float gs, float ibc1,
                                          float ibc2) {
    g *= gs;
    float mi = b1 * m + (1.0f - b1) * g;
    float vi = b2 * v + (1.0f - b2) * (g * g);
    float upd = (mi * ibc1) / (sqrtf(vi * ibc2) + eps) + wd * p;
    m = mi;
    v = vi;
    p = p - lr * upd;
}
// p16 (NULL: none): the new parameter's bf16 copy, written in the same pass (llm.c's AdamW)
__global__ void adamw_kernel(float *param, uint16_t *p16, const float *grad, float *m, float *v,
                             long n, float lr, float b1, float b2, float eps, float wd, float gs,
                             float ibc1, float ibc2) {
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n;
         i += (long)gridDim.x * blockDim.x) {
        adamw_one(param[i], grad[i], m[i], v[i], lr, b1, b2, eps, wd, gs, ibc1, ibc2);
        if (p16) p16[i] = ax_bf16_bits(param[i]);
    }
}
// the same four floats at a time (16-byte loads and stores, 8-byte bf16 stores: more bytes in
// flight per thread on a pass that moves 28-30 bytes per parameter; it ran at about half the
// H200's bandwidth), for n4 groups of 4 of aligned arrays; the caller does the tail
__global__ void adamw4_kernel(float4 *param, uint2 *p16, const float4 *grad, float4 *m, float4 *v,
                              long n4, float lr, float b1, float b2, float eps, float wd, float gs,
                              float ibc1, float ibc2) {
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n4;
         i += (long)gridDim.x * blockDim.x) {
        float4 p = param[i], g = grad[i], mi = m[i], vi = v[i];
        adamw_one(p.x, g.x, mi.x, vi.x, lr, b1, b2, eps, wd, gs, ibc1, ibc2);
        adamw_one(p.y, g.y, mi.y, vi.y, lr, b1, b2, eps, wd, gs, ibc1, ibc2);
        adamw_one(p.z, g.z, mi.z, vi.z, lr, b1, b2, eps, wd, gs, ibc1, ibc2);
        adamw_one(p.w, g.w, mi.w, vi.w, lr, b1, b2, eps, wd, gs, ibc1, ibc2);
        param[i] = p, m[i] = mi, v[i] = vi;
        if (p16) {
            uint2 o;
            o.x = (unsigned)ax_bf16_bits(p.x) | (unsigned)ax_bf16_bits(p.y) << 16;
            o.y = (unsigned)ax_bf16_bits(p.z) | (unsigned)ax_bf16_bits(p.w) << 16;
            p16[i] = o;
        }
    }
}
extern "C" void ax_cuda_adamw_update(ax_ctx *ctx, float *param, uint16_t *param16,
                                     const float *grad, float *m, float *v, long n, float lr,
                                     float beta1, float beta2, float eps, float wd,
                                     float grad_scale, long t) {
    if (n <= 0) return;
    float ibc1 = (float)(1.0 / (1.0 - pow(beta1, (double)t)));
    float ibc2 = (float)(1.0 / (1.0 - pow(beta2, (double)t)));
    long n4 = 0;
    if ((((uintptr_t)param | (uintptr_t)grad | (uintptr_t)m | (uintptr_t)v) & 15) == 0 &&
        ((uintptr_t)param16 & 7) == 0) {
        n4 = n / 4;
        if (n4)
            adamw4_kernel<<<ax_blocks(n4, TPB), TPB, 0, AX_STREAM(ctx)>>>(
                (float4 *)param, (uint2 *)param16, (const float4 *)grad, (float4 *)m, (float4 *)v,
                n4, lr, beta1, beta2, eps, wd, grad_scale, ibc1, ibc2);
    }
    long done = 4 * n4;
    if (done < n)
        adamw_kernel<<<ax_blocks(n - done, TPB), TPB, 0, AX_STREAM(ctx)>>>(
            param + done, param16 ? param16 + done : NULL, grad + done, m + done, v + done,
            n - done, lr, beta1, beta2, eps, wd, grad_scale, ibc1, ibc2);
    ax_cuda_launched("adamw_update");
}

// ---- decoding data movement ----
// kc, vc[B,H,Tmax,D] at position pos <- k, v rows (row b at k + b*ld, head h at + h*D)
__global__ void kv_append_kernel(float *kc, float *vc, const float *k, const float *v, long ld,
                                 int B, int H, int D, int Tmax, int pos) {
    long total = (long)B * H * D;
    for (long e = blockIdx.x * (long)blockDim.x + threadIdx.x; e < total;
         e += (long)gridDim.x * blockDim.x) {
        int d = (int)(e % D);
        long bh = e / D;
        int h = (int)(bh % H), b = (int)(bh / H);
        long dst = (bh * Tmax + pos) * D + d, src = (long)b * ld + (long)h * D + d;
        kc[dst] = k[src];
        vc[dst] = v[src];
    }
}
extern "C" void ax_cuda_kv_append(ax_ctx *ctx, float *kc, float *vc, const float *k, const float *v,
                                  long ld, int B, int H, int D, int Tmax, int pos) {
    long total = (long)B * H * D;
    if (total <= 0) return;
    kv_append_kernel<<<ax_blocks(total, TPB), TPB, 0, AX_STREAM(ctx)>>>(kc, vc, k, v, ld, B, H, D,
                                                                        Tmax, pos);
    ax_cuda_launched("kv_append");
}

// cudaMemcpyDefault: the direction from the pointers (unified addressing), because the model
// also copies device rows into host memory with this op (lib/model/model_decode.c,
// ax_model_decode_full_logits); a copy into pageable host memory has completed on return.
extern "C" void ax_cuda_copy_rows(ax_ctx *ctx, float *dst, long ld_dst, const float *src,
                                  long ld_src, long rows, long cols) {
    if (rows <= 0 || cols <= 0) return;
    cudaError_t e =
        rows == 1
            ? cudaMemcpyAsync(dst, src, sizeof(float) * cols, cudaMemcpyDefault, AX_STREAM(ctx))
            : cudaMemcpy2DAsync(dst, sizeof(float) * ld_dst, src, sizeof(float) * ld_src,
                                sizeof(float) * cols, rows, cudaMemcpyDefault, AX_STREAM(ctx));
    if (e != cudaSuccess)
        ax_cuda_fail("copy_rows (cudaMemcpy2DAsync, %ld x %ld): %s", rows, cols,
                     cudaGetErrorString(e));
}

// ---- per-example gradient norms: rows scaled by w[N]; columns idx[n] of x gathered ----
__global__ void scale_rows_kernel(float *x, const float *w, long N, long cols) {
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < N * cols;
         i += (long)gridDim.x * blockDim.x)
        x[i] *= w[i / cols];
}
extern "C" void ax_cuda_scale_rows(ax_ctx *ctx, float *x, const float *w, int N, long cols) {
    if (N <= 0 || cols <= 0) return;
    scale_rows_kernel<<<ax_blocks((long)N * cols, TPB), TPB, 0, AX_STREAM(ctx)>>>(x, w, N, cols);
    ax_cuda_launched("scale_rows");
}

__global__ void gather_cols_kernel(float *out, const float *x, long ldx, const int32_t *idx,
                                   long R, int n) {
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < R * n;
         i += (long)gridDim.x * blockDim.x)
        out[i] = x[(i / n) * ldx + idx[i % n]];
}
extern "C" void ax_cuda_gather_cols(ax_ctx *ctx, float *out, const float *x, long ldx,
                                    const int32_t *idx, int R, int n) {
    if (R <= 0 || n <= 0) return;
    gather_cols_kernel<<<ax_blocks((long)R * n, TPB), TPB, 0, AX_STREAM(ctx)>>>(out, x, ldx, idx,
                                                                               R, n);
    ax_cuda_launched("gather_cols");
}
