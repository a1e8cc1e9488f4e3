// The ops whose result comes back to the host: vocabulary-parallel cross-entropy
// (goldfish mask: mask[i] = 0 drops row i), the sum of squares for the gradient norm, and
// the greedy argmax over a vocabulary slice. Per-row values go to the context's scratch, one
// block sums them in a fixed order (deterministic), and the double is copied back and waited
// for: these ops synchronise the stream.
#include <limits.h>

#include "lib/backend/cuda/kernels.cuh"

#define NT 256

// *out = sum of x[n] in double, one block, fixed order
__global__ void sum_doubles_kernel(double *out, const double *x, long n) {
    __shared__ double sh[32];
    double s = 0.0;
    for (long i = threadIdx.x; i < n; i += blockDim.x) s += x[i];
    s = ax_block_sum(s, sh);
    if (threadIdx.x == 0) *out = s;
}

static double sum_to_host(ax_ctx *ctx, double *dev, long n, const char *op) {
    double *res = dev + n, host = NAN;
    sum_doubles_kernel<<<1, 1024, 0, AX_STREAM(ctx)>>>(res, dev, n);
    ax_cuda_launched(op);
    ax_cuda_d2h_sync(ctx, &host, res, sizeof host);
    return host;
}

// ---- vocabulary-parallel cross-entropy: rowmax, partial, finish ----
__global__ void ce_rowmax_kernel(float *rowmax, const float *logits, int Vl, int valid) {
    __shared__ float sh[32];
    const float *x = logits + (long)blockIdx.x * Vl;
    float mx = -INFINITY;
    for (int j = threadIdx.x; j < valid; j += blockDim.x) mx = fmaxf(mx, x[j]);
    mx = ax_block_max(mx, sh);
    if (threadIdx.x == 0) rowmax[blockIdx.x] = mx;
}

__global__ void ce_partial_kernel(float *stats, const float *logits, const float *rowmax,
                                  const int32_t *targets, const uint8_t *mask, int Vl, int valid,
                                  int v0) {
    __shared__ float sh[32];
    int i = blockIdx.x;
    const float *x = logits + (long)i * Vl;
    float mx = rowmax[i], s = 0.0f;
    for (int j = threadIdx.x; j < valid; j += blockDim.x) s += expf(x[j] - mx);
    s = ax_block_sum(s, sh);
    if (threadIdx.x == 0) {
        int t = mask && !mask[i] ? -1 : targets[i] - v0;
        stats[2 * i] = s;
        stats[2 * i + 1] = t >= 0 && t < valid ? x[t] : 0.0f;
    }
}

__global__ void ce_finish_kernel(double *rowloss, float *losses, float *dlogits,
                                 const float *logits, const float *rowmax, const float *stats,
                                 const int32_t *targets, const uint8_t *mask, float dscale, int Vl,
                                 int valid, int v0) {
    int i = blockIdx.x;
    int sup = !mask || mask[i];
    double l = sup ? log((double)stats[2 * i]) + (double)rowmax[i] - (double)stats[2 * i + 1] : 0.0;
    if (threadIdx.x == 0) {
        rowloss[i] = l;
        if (losses) losses[i] = (float)l;
    }
    if (!dlogits) return;
    float *d = dlogits + (long)i * Vl;
    const float *x = logits + (long)i * Vl;
    if (!sup) {
        for (int j = threadIdx.x; j < Vl; j += blockDim.x) d[j] = 0.0f;
        return;
    }
    float mx = rowmax[i], k = dscale / stats[2 * i];
    for (int j = threadIdx.x; j < Vl; j += blockDim.x)
        d[j] = j < valid ? expf(x[j] - mx) * k : 0.0f;
    __syncthreads();
    int t = targets[i] - v0;
    if (threadIdx.x == 0 && t >= 0 && t < valid) d[t] -= dscale;
}

extern "C" void ax_cuda_ce_rowmax(ax_ctx *ctx, float *rowmax, const float *logits, int N, int Vl,
                                  int valid) {
    if (N <= 0) return;
    ce_rowmax_kernel<<<N, NT, 0, AX_STREAM(ctx)>>>(rowmax, logits, Vl, valid);
    ax_cuda_launched("ce_rowmax");
}
extern "C" void ax_cuda_ce_partial(ax_ctx *ctx, float *stats, const float *logits,
                                   const float *rowmax, const int32_t *targets, const uint8_t *mask,
                                   int N, int Vl, int valid, int v0) {
    if (N <= 0) return;
    ce_partial_kernel<<<N, NT, 0, AX_STREAM(ctx)>>>(stats, logits, rowmax, targets, mask, Vl, valid,
                                                    v0);
    ax_cuda_launched("ce_partial");
}
extern "C" double ax_cuda_ce_finish(ax_ctx *ctx, float *losses, float *dlogits, const float *logits,
                                    const float *rowmax, const float *stats, const int32_t *targets,
                                    const uint8_t *mask, float dscale, int N, int Vl, int valid,
                                    int v0) {
    if (N <= 0) return 0.0;
    double *rowloss = (double *)ax_ctx_scratch(ctx, sizeof(double) * ((size_t)N + 1));
    if (!rowloss) return NAN;
    ce_finish_kernel<<<N, NT, 0, AX_STREAM(ctx)>>>(rowloss, losses, dlogits, logits, rowmax, stats,
                                                   targets, mask, dscale, Vl, valid, v0);
    ax_cuda_launched("ce_finish");
    return sum_to_host(ctx, rowloss, N, "ce_finish (sum)");
}

// ---- sum of squares in double: a fixed grid (the same partials for any device) ----
#define SS_BLOCKS 256
__global__ void sum_squares_kernel(double *part, const float *x, long n) {
    __shared__ double sh[32];
    double s = 0.0;
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n;
         i += (long)gridDim.x * blockDim.x)
        s += (double)x[i] * (double)x[i];
    s = ax_block_sum(s, sh);
    if (threadIdx.x == 0) part[blockIdx.x] = s;
}

extern "C" double ax_cuda_sum_squares(ax_ctx *ctx, const float *x, long n) {
    if (n <= 0) return 0.0;
    double *part = (double *)ax_ctx_scratch(ctx, sizeof(double) * (SS_BLOCKS + 1));
    if (!part) return NAN;
    sum_squares_kernel<<<SS_BLOCKS, NT, 0, AX_STREAM(ctx)>>>(part, x, n);
    ax_cuda_launched("sum_squares");
    return sum_to_host(ctx, part, SS_BLOCKS, "sum_squares (sum)");
}

// ---- dot product in double (per-example gradient norms): the same fixed grid ----
__global__ void dot_kernel(double *part, const float *a, const float *b, long n) {
    __shared__ double sh[32];
    double s = 0.0;
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n;
         i += (long)gridDim.x * blockDim.x)
        s += (double)a[i] * (double)b[i];
    s = ax_block_sum(s, sh);
    if (threadIdx.x == 0) part[blockIdx.x] = s;
}

extern "C" double ax_cuda_dot(ax_ctx *ctx, const float *a, const float *b, long n) {
    if (n <= 0) return 0.0;
    double *part = (double *)ax_ctx_scratch(ctx, sizeof(double) * (SS_BLOCKS + 1));
    if (!part) return NAN;
    dot_kernel<<<SS_BLOCKS, NT, 0, AX_STREAM(ctx)>>>(part, a, b, n);
    ax_cuda_launched("dot");
    return sum_to_host(ctx, part, SS_BLOCKS, "dot (sum)");
}

// ---- greedy choice over a vocabulary slice: largest value, ties to the lowest id ----
__global__ void argmax_kernel(double *best, const float *x, int Vl, int valid, int v0) {
    __shared__ float sv[NT];
    __shared__ int si[NT];
    const float *row = x + (long)blockIdx.x * Vl;
    float v = -INFINITY;
    int idx = INT_MAX;
    for (int j = threadIdx.x; j < valid; j += blockDim.x)
        if (row[j] > v || (row[j] == v && j < idx)) v = row[j], idx = j;
    sv[threadIdx.x] = v;
    si[threadIdx.x] = idx;
    __syncthreads();
    for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) {
            float ov = sv[threadIdx.x + s];
            int oi = si[threadIdx.x + s];
            if (ov > sv[threadIdx.x] || (ov == sv[threadIdx.x] && oi < si[threadIdx.x]))
                sv[threadIdx.x] = ov, si[threadIdx.x] = oi;
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        int arg = si[0] == INT_MAX ? 0 : si[0];
        best[2 * blockIdx.x] = valid > 0 ? (double)row[arg] : -INFINITY;
        best[2 * blockIdx.x + 1] = -(double)(v0 + arg);
    }
}

// best is HOST memory [2B]
extern "C" void ax_cuda_argmax_rows(ax_ctx *ctx, double *best, const float *x, int B, int Vl,
                                    int valid, int v0) {
    if (B <= 0) return;
    double *dev = (double *)ax_ctx_scratch(ctx, sizeof(double) * 2 * (size_t)B);
    if (!dev) return;
    argmax_kernel<<<B, NT, 0, AX_STREAM(ctx)>>>(dev, x, Vl, valid, v0);
    ax_cuda_launched("argmax_rows");
    ax_cuda_d2h_sync(ctx, best, dev, sizeof(double) * 2 * (size_t)B);
}
