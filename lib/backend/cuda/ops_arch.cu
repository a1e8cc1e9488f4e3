// The ops of the architectures beyond Llama (GPT-NeoX, GPT-2; lib/backend/ops.h): LayerNorm over
// a possibly sharded hidden dimension (row sum, squared deviations, apply; backward dots and
// apply), GELU (erf and tanh), bias add and bias gradient. One block per row for the row
// reductions; column sums (dweight, dbias) by chunks of rows per column, then the chunks in
// order: deterministic, no atomics (the order differs from the CPU's by rounding only).
#include "lib/backend/cuda/kernels.cuh"

#define NT 256
#define COL_ROWS 256 // rows per chunk of a column sum

static int threads_for(int C) {
    int t = 32;
    while (t < NT && t < C) t *= 2;
    return t;
}

// sum[i] = sum_c x (mu == NULL), or sum_c (x - mu[i] / C_total)^2 (the reduced row sum given)
__global__ void ln_rowstat_kernel(float *out, const float *inp, const float *sum, int C,
                                  int C_total) {
    __shared__ float sh[32];
    const float *x = inp + (long)blockIdx.x * C;
    float s = 0.0f;
    if (sum) {
        float mu = sum[blockIdx.x] / (float)C_total;
        for (int c = threadIdx.x; c < C; c += blockDim.x) s += (x[c] - mu) * (x[c] - mu);
    } else {
        for (int c = threadIdx.x; c < C; c += blockDim.x) s += x[c];
    }
    s = ax_block_sum(s, sh);
    if (threadIdx.x == 0) out[blockIdx.x] = s;
}

// rows of out are ldo apart (C for fp32; bf16 storage: ax_bf16_ld(C))
template <typename T>
__global__ void ln_apply_kernel(T *out, long ldo, float *mean, float *rstd, const float *inp,
                                const float *w, const float *b, const float *sum, const float *sq,
                                int C, int C_total, float eps) {
    long off = (long)blockIdx.x * C;
    T *o = out + (long)blockIdx.x * ldo;
    float mu = sum[blockIdx.x] / (float)C_total,
          r = 1.0f / sqrtf(sq[blockIdx.x] / (float)C_total + eps);
    for (int c = threadIdx.x; c < C; c += blockDim.x)
        ax_store(o + c, (inp[off + c] - mu) * r * w[c] + b[c]);
    if (threadIdx.x == 0) mean[blockIdx.x] = mu, rstd[blockIdx.x] = r;
}

// dots[i] = sum_c dy w ; dots[N + i] = sum_c dy w xhat
__global__ void ln_dots_kernel(float *dots, const float *dout, const float *inp, const float *w,
                               const float *mean, const float *rstd, int N, int C) {
    __shared__ float sh[32];
    long off = (long)blockIdx.x * C;
    float mu = mean[blockIdx.x], r = rstd[blockIdx.x], a = 0.0f, b = 0.0f;
    for (int c = threadIdx.x; c < C; c += blockDim.x) {
        float gw = dout[off + c] * w[c];
        a += gw;
        b += gw * (inp[off + c] - mu) * r;
    }
    a = ax_block_sum(a, sh);
    b = ax_block_sum(b, sh);
    if (threadIdx.x == 0) dots[blockIdx.x] = a, dots[N + blockIdx.x] = b;
}

__global__ void ln_dx_kernel(float *dinp, const float *dout, const float *inp, const float *w,
                             const float *mean, const float *rstd, const float *dots, int N, int C,
                             int C_total) {
    long off = (long)blockIdx.x * C;
    float mu = mean[blockIdx.x], r = rstd[blockIdx.x], a = dots[blockIdx.x] / (float)C_total,
          b = dots[N + blockIdx.x] / (float)C_total;
    for (int c = threadIdx.x; c < C; c += blockDim.x)
        dinp[off + c] += r * (dout[off + c] * w[c] - a - (inp[off + c] - mu) * r * b);
}

// Column sums over rows [y * rows, (y + 1) * rows) of dout (mean == NULL) or dout * xhat into
// out[y, c] (accumulate: out[c] +=, the single-chunk pass)
__global__ void colsum_kernel(float *out, int accumulate, const float *dout, const float *inp,
                              const float *mean, const float *rstd, int N, int C, int rows) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= C) return;
    int i0 = blockIdx.y * rows, i1 = min(i0 + rows, N);
    float acc = 0.0f;
    for (int i = i0; i < i1; i++) {
        float v = dout[(long)i * C + c];
        if (mean) v *= (inp[(long)i * C + c] - mean[i]) * rstd[i];
        acc += v;
    }
    float *o = out + (long)blockIdx.y * C + c;
    *o = accumulate ? *o + acc : acc;
}
__global__ void colsum_finish_kernel(float *dst, const float *part, int nchunk, int C) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= C) return;
    float acc = 0.0f;
    for (int k = 0; k < nchunk; k++) acc += part[(long)k * C + c];
    dst[c] += acc;
}

// dst[C] += column sums (see colsum_kernel), in two stages when there are many rows
static void colsum(ax_ctx *ctx, float *dst, const float *dout, const float *inp, const float *mean,
                   const float *rstd, int N, int C) {
    int nchunk = (N + COL_ROWS - 1) / COL_ROWS;
    unsigned cb = (unsigned)((C + 127) / 128);
    float *part = nchunk > 1 && nchunk <= 65535
                      ? (float *)ax_ctx_scratch(ctx, sizeof(float) * (size_t)nchunk * C)
                      : NULL;
    if (!part) { // one chunk, or no workspace: one pass (same sum, less parallel)
        colsum_kernel<<<dim3(cb, 1), 128, 0, AX_STREAM(ctx)>>>(dst, 1, dout, inp, mean, rstd, N, C,
                                                               N);
        return;
    }
    colsum_kernel<<<dim3(cb, nchunk), 128, 0, AX_STREAM(ctx)>>>(part, 0, dout, inp, mean, rstd, N,
                                                                C, COL_ROWS);
    colsum_finish_kernel<<<cb, 128, 0, AX_STREAM(ctx)>>>(dst, part, nchunk, C);
}

extern "C" void ax_cuda_layernorm_rowsum(ax_ctx *ctx, float *sum, const float *inp, int N, int C) {
    if (N <= 0) return;
    ln_rowstat_kernel<<<N, threads_for(C), 0, AX_STREAM(ctx)>>>(sum, inp, NULL, C, C);
    ax_cuda_launched("layernorm_rowsum");
}
extern "C" void ax_cuda_layernorm_sqdev(ax_ctx *ctx, float *sq, const float *inp, const float *sum,
                                        int N, int C, int C_total) {
    if (N <= 0) return;
    ln_rowstat_kernel<<<N, threads_for(C), 0, AX_STREAM(ctx)>>>(sq, inp, sum, C, C_total);
    ax_cuda_launched("layernorm_sqdev");
}
extern "C" void ax_cuda_layernorm_apply(ax_ctx *ctx, float *out, float *mean, float *rstd,
                                        const float *inp, const float *weight, const float *bias,
                                        const float *sum, const float *sq, int N, int C,
                                        int C_total, float eps) {
    if (N <= 0) return;
    auto k = ln_apply_kernel<float>; /* (a variable: the emulator's launch rewrite takes a name) */
    k<<<N, threads_for(C), 0, AX_STREAM(ctx)>>>(out, C, mean, rstd, inp, weight, bias, sum, sq, C,
                                                C_total, eps);
    ax_cuda_launched("layernorm_apply");
}
extern "C" void ax_cuda_layernorm_apply_bf16(ax_ctx *ctx, uint16_t *out, float *mean, float *rstd,
                                             const float *inp, const float *weight,
                                             const float *bias, const float *sum, const float *sq,
                                             int N, int C, int C_total, float eps) {
    if (N <= 0) return;
    auto k = ln_apply_kernel<__nv_bfloat16>;
    k<<<N, threads_for(C), 0, AX_STREAM(ctx)>>>((__nv_bfloat16 *)out, ax_bf16_ld(C), mean,
                                                rstd, inp, weight, bias, sum, sq, C, C_total, eps);
    ax_cuda_launched("layernorm_apply_bf16");
}
extern "C" void ax_cuda_layernorm_backward_dot(ax_ctx *ctx, float *dots, const float *dout,
                                               const float *inp, const float *weight,
                                               const float *mean, const float *rstd, int N, int C) {
    if (N <= 0) return;
    ln_dots_kernel<<<N, threads_for(C), 0, AX_STREAM(ctx)>>>(dots, dout, inp, weight, mean, rstd, N,
                                                             C);
    ax_cuda_launched("layernorm_backward_dot");
}
extern "C" void ax_cuda_layernorm_backward_apply(ax_ctx *ctx, float *dinp, float *dweight,
                                                 float *dbias, const float *dout, const float *inp,
                                                 const float *weight, const float *mean,
                                                 const float *rstd, const float *dots, int N, int C,
                                                 int C_total) {
    if (N <= 0 || C <= 0) return;
    if (dinp)
        ln_dx_kernel<<<N, threads_for(C), 0, AX_STREAM(ctx)>>>(dinp, dout, inp, weight, mean, rstd,
                                                               dots, N, C, C_total);
    if (dweight) colsum(ctx, dweight, dout, inp, mean, rstd, N, C);
    if (dbias) colsum(ctx, dbias, dout, NULL, NULL, NULL, N, C);
    ax_cuda_launched("layernorm_backward_apply");
}

#define SQRT_HALF 0.70710678118654752f
#define INV_SQRT_2PI 0.39894228040143268f
#define SQRT_2_OVER_PI 0.79788456080286536f
#define GELU_K 0.044715f

// gelu(x): the one expression both forward kernels store
__device__ __forceinline__ float gelu_of(float x, int tanh_approx) {
    if (tanh_approx) return 0.5f * x * (1.0f + tanhf(SQRT_2_OVER_PI * (x + GELU_K * x * x * x)));
    return 0.5f * x * (1.0f + erff(x * SQRT_HALF));
}

// out = gelu(h) (dout == NULL), or dh += dout gelu'(h)
__global__ void gelu_kernel(float *out, const float *dout, const float *h, long n,
                            int tanh_approx) {
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n;
         i += (long)gridDim.x * blockDim.x) {
        float x = h[i];
        if (!dout) {
            out[i] = gelu_of(x, tanh_approx);
        } else if (tanh_approx) {
            float t = tanhf(SQRT_2_OVER_PI * (x + GELU_K * x * x * x));
            float du = SQRT_2_OVER_PI * (1.0f + 3.0f * GELU_K * x * x);
            out[i] += dout[i] * (0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * du);
        } else {
            float e = erff(x * SQRT_HALF);
            out[i] += dout[i] * (0.5f * (1.0f + e) + x * INV_SQRT_2PI * expf(-0.5f * x * x));
        }
    }
}

// out[N, ldo] (bf16 storage) = gelu(h[N, F]): rows over blockIdx.y, as the padded rows need
__global__ void gelu_bf16_kernel(__nv_bfloat16 *out, long ldo, const float *h, long N, int F,
                                 int tanh_approx) {
    for (long r = blockIdx.y; r < N; r += gridDim.y)
        for (int j = blockIdx.x * blockDim.x + threadIdx.x; j < F; j += gridDim.x * blockDim.x)
            ax_store(out + r * ldo + j, gelu_of(h[r * F + j], tanh_approx));
}

extern "C" void ax_cuda_gelu_forward(ax_ctx *ctx, float *out, const float *h, int N, int F,
                                     int tanh_approx) {
    long n = (long)N * F;
    if (n <= 0) return;
    gelu_kernel<<<ax_blocks(n, NT), NT, 0, AX_STREAM(ctx)>>>(out, NULL, h, n, tanh_approx);
    ax_cuda_launched("gelu_forward");
}
extern "C" void ax_cuda_gelu_forward_bf16(ax_ctx *ctx, uint16_t *out, const float *h, int N, int F,
                                          int tanh_approx) {
    if (N <= 0 || F <= 0) return;
    long x = (F + NT - 1) / NT;
    dim3 grid((unsigned)(x < 1024 ? x : 1024), (unsigned)(N < 65535 ? N : 65535));
    gelu_bf16_kernel<<<grid, NT, 0, AX_STREAM(ctx)>>>((__nv_bfloat16 *)out, ax_bf16_ld(F), h,
                                                      N, F, tanh_approx);
    ax_cuda_launched("gelu_forward_bf16");
}
extern "C" void ax_cuda_gelu_backward(ax_ctx *ctx, float *dh, const float *dout, const float *h,
                                      int N, int F, int tanh_approx) {
    long n = (long)N * F;
    if (n <= 0) return;
    gelu_kernel<<<ax_blocks(n, NT), NT, 0, AX_STREAM(ctx)>>>(dh, dout, h, n, tanh_approx);
    ax_cuda_launched("gelu_backward");
}

__global__ void bias_add_kernel(float *out, const float *bias, long n, int OC) {
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n;
         i += (long)gridDim.x * blockDim.x)
        out[i] += bias[i % OC];
}

extern "C" void ax_cuda_bias_add(ax_ctx *ctx, float *out, const float *bias, int N, int OC) {
    long n = (long)N * OC;
    if (n <= 0) return;
    bias_add_kernel<<<ax_blocks(n, NT), NT, 0, AX_STREAM(ctx)>>>(out, bias, n, OC);
    ax_cuda_launched("bias_add");
}
extern "C" void ax_cuda_bias_backward(ax_ctx *ctx, float *dbias, const float *dout, int N, int OC) {
    if (N <= 0 || OC <= 0) return;
    colsum(ctx, dbias, dout, NULL, NULL, NULL, N, OC);
    ax_cuda_launched("bias_backward");
}
