// RMSNorm over a hidden dimension that may be sharded (sumsq / apply / backward_dot /
// backward_apply; the caller all-reduces between the halves). One block per row for the row
// reductions; dweight sums chunks of rows per column, then the chunks in order (deterministic, no
// atomics).
#include "lib/backend/cuda/kernels.cuh"

#define NT 256

// ss[i] = sum_c inp[i,c]^2 (sumsq), or dot[i] = sum_c g w x (backward_dot) when g != NULL
__global__ void row_dot_kernel(float *out, const float *g, const float *w, const float *inp,
                               int C) {
    __shared__ float sh[32];
    const float *x = inp + (long)blockIdx.x * C;
    const float *gy = g ? g + (long)blockIdx.x * C : NULL;
    float s = 0.0f;
    for (int c = threadIdx.x; c < C; c += blockDim.x) s += gy ? gy[c] * w[c] * x[c] : x[c] * x[c];
    s = ax_block_sum(s, sh);
    if (threadIdx.x == 0) out[blockIdx.x] = s;
}

// out = inp * r * w with r = 1/sqrt(ss/C_total + eps). Rows of out are ldo apart (C for fp32;
// bf16 storage: ax_bf16_ld(C))
template <typename T>
__global__ void rms_apply_kernel(T *out, long ldo, float *rstd, const float *inp, const float *w,
                                 const float *ss, int C, int C_total, float eps) {
    const float *x = inp + (long)blockIdx.x * C;
    T *o = out + (long)blockIdx.x * ldo;
    float r = 1.0f / sqrtf(ss[blockIdx.x] / (float)C_total + eps);
    for (int c = threadIdx.x; c < C; c += blockDim.x) ax_store(o + c, x[c] * r * w[c]);
    if (threadIdx.x == 0) rstd[blockIdx.x] = r;
}

// dinp += r w dy - x r^3 dot / C_total
__global__ void rms_bwd_dx_kernel(float *dinp, const float *dout, const float *inp, const float *w,
                                  const float *rstd, const float *dot, int C, int C_total) {
    long off = (long)blockIdx.x * C;
    const float *x = inp + off, *dy = dout + off;
    float *dx = dinp + off;
    float r = rstd[blockIdx.x], k = r * r * r * dot[blockIdx.x] / (float)C_total;
    for (int c = threadIdx.x; c < C; c += blockDim.x) dx[c] += r * w[c] * dy[c] - x[c] * k;
}

// dweight[c] += sum_rows dy x r, rows in order (one thread per column)
__global__ void rms_bwd_dw_kernel(float *dweight, const float *dout, const float *inp,
                                  const float *rstd, int N, int C) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= C) return;
    float acc = 0.0f;
    for (int i = 0; i < N; i++) acc += dout[(long)i * C + c] * inp[(long)i * C + c] * rstd[i];
    dweight[c] += acc;
}

// The same in two deterministic stages when N is large (one thread walking all N rows leaves
// the GPU idle): part[k, c] = the sum over rows [k*DW_ROWS, (k+1)*DW_ROWS), then the chunks
// summed in order per column.
#define DW_ROWS 256
__global__ void rms_dw_partial_kernel(float *part, const float *dout, const float *inp,
                                      const float *rstd, int N, int C) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= C) return;
    int i0 = blockIdx.y * DW_ROWS, i1 = min(i0 + DW_ROWS, N);
    float acc = 0.0f;
    for (int i = i0; i < i1; i++) acc += dout[(long)i * C + c] * inp[(long)i * C + c] * rstd[i];
    part[(long)blockIdx.y * C + c] = acc;
}
__global__ void rms_dw_sum_kernel(float *dweight, const float *part, int nchunk, int C) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= C) return;
    float acc = 0.0f;
    for (int k = 0; k < nchunk; k++) acc += part[(long)k * C + c];
    dweight[c] += acc;
}

static void dweight_sum(ax_ctx *ctx, float *dweight, const float *dout, const float *inp,
                        const float *rstd, int N, int C) {
    int nchunk = (N + DW_ROWS - 1) / DW_ROWS;
    unsigned cb = (unsigned)((C + 127) / 128);
    float *part = nchunk > 1 && nchunk <= 65535
                      ? (float *)ax_ctx_scratch(ctx, sizeof(float) * (size_t)nchunk * C)
                      : NULL;
    if (!part) { /* one chunk, or no workspace: the single pass (same sum, less parallel) */
        rms_bwd_dw_kernel<<<cb, 128, 0, AX_STREAM(ctx)>>>(dweight, dout, inp, rstd, N, C);
        return;
    }
    rms_dw_partial_kernel<<<dim3(cb, nchunk), 128, 0, AX_STREAM(ctx)>>>(part, dout, inp, rstd, N,
                                                                        C);
    rms_dw_sum_kernel<<<cb, 128, 0, AX_STREAM(ctx)>>>(dweight, part, nchunk, C);
}

static int threads_for(int C) {
    int t = 32;
    while (t < NT && t < C) t *= 2;
    return t;
}

template <typename T>
static void apply(ax_ctx *ctx, T *out, long ldo, float *rstd, const float *inp, const float *weight,
                  const float *ss, int N, int C, int C_total, float eps, const char *op) {
    if (N <= 0 || C <= 0) return;
    auto k = rms_apply_kernel<T>; /* (a variable: the emulator's launch rewrite takes a name) */
    k<<<N, threads_for(C), 0, AX_STREAM(ctx)>>>(out, ldo, rstd, inp, weight, ss, C, C_total, eps);
    ax_cuda_launched(op);
}

static void backward(ax_ctx *ctx, float *dinp, float *dweight, const float *dout, const float *inp,
                     const float *weight, const float *rstd, const float *dot, int N, int C,
                     int C_total, const char *op) {
    if (N <= 0 || C <= 0) return;
    if (dinp)
        rms_bwd_dx_kernel<<<N, threads_for(C), 0, AX_STREAM(ctx)>>>(dinp, dout, inp, weight, rstd,
                                                                    dot, C, C_total);
    if (dweight) dweight_sum(ctx, dweight, dout, inp, rstd, N, C);
    ax_cuda_launched(op);
}

extern "C" void ax_cuda_rmsnorm_sumsq(ax_ctx *ctx, float *ss, const float *inp, int N, int C) {
    if (N <= 0) return;
    row_dot_kernel<<<N, threads_for(C), 0, AX_STREAM(ctx)>>>(ss, NULL, NULL, inp, C);
    ax_cuda_launched("rmsnorm_sumsq");
}
extern "C" void ax_cuda_rmsnorm_apply(ax_ctx *ctx, float *out, float *rstd, const float *inp,
                                      const float *weight, const float *ss, int N, int C,
                                      int C_total, float eps) {
    apply(ctx, out, C, rstd, inp, weight, ss, N, C, C_total, eps, "rmsnorm_apply");
}
extern "C" void ax_cuda_rmsnorm_apply_bf16(ax_ctx *ctx, uint16_t *out, float *rstd,
                                           const float *inp, const float *weight, const float *ss,
                                           int N, int C, int C_total, float eps) {
    apply(ctx, (__nv_bfloat16 *)out, ax_bf16_ld(C), rstd, inp, weight, ss, N, C, C_total, eps,
          "rmsnorm_apply_bf16");
}
extern "C" void ax_cuda_rmsnorm_backward_dot(ax_ctx *ctx, float *dot, const float *dout,
                                             const float *inp, const float *weight, int N, int C) {
    if (N <= 0) return;
    row_dot_kernel<<<N, threads_for(C), 0, AX_STREAM(ctx)>>>(dot, dout, weight, inp, C);
    ax_cuda_launched("rmsnorm_backward_dot");
}
extern "C" void ax_cuda_rmsnorm_backward_apply(ax_ctx *ctx, float *dinp, float *dweight,
                                               const float *dout, const float *inp,
                                               const float *weight, const float *rstd,
                                               const float *dot, int N, int C, int C_total) {
    backward(ctx, dinp, dweight, dout, inp, weight, rstd, dot, N, C, C_total,
             "rmsnorm_backward_apply");
}
