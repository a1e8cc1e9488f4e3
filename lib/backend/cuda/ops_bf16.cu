// fp32 -> bf16 staging of GEMM operands for --precision bf16 (gemm.c): round to nearest even
// (__float2bfloat16_rn: one cvt.rn.bf16.f32 on sm_80+), NaN stays NaN, overflow goes to inf.
#include <cuda_bf16.h>

#include "lib/backend/cuda/kernels.cuh"

#define TPB 256

__global__ void to_bf16_kernel(__nv_bfloat16 *dst, long ldd, const float *src, long rows, long cols,
                               long ld) {
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < rows * cols;
         i += (long)gridDim.x * blockDim.x) {
        long r = i / cols, c = i % cols;
        dst[r * ldd + c] = __float2bfloat16_rn(src[r * ld + c]);
    }
}

extern "C" void ax_cuda_to_bf16(ax_ctx *ctx, void *dst, long ldd, const float *src, long rows,
                                long cols, long ld) {
    if (rows <= 0 || cols <= 0) return;
    to_bf16_kernel<<<ax_blocks(rows * cols, TPB), TPB, 0, AX_STREAM(ctx)>>>(
        (__nv_bfloat16 *)dst, ldd, src, rows, cols, ld);
    // not ax_cuda_launched: this writes only the staging, so the generation stays
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) ax_cuda_fail("kernel launch of to_bf16: %s", cudaGetErrorString(e));
}
