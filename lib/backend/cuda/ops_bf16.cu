// fp32 -> bf16 staging of GEMM operands for --precision bf16 (gemm.c): round to nearest even
// (__float2bfloat16_rn: one cvt.rn.bf16.f32 on sm_80+), NaN stays NaN, overflow goes to inf.
// And the to_bf16 / from_bf16 ops (the wire format of --grad-comm bf16, the bf16 copy of a bf16
// model's weights): flat conversions both ways.
#include <cuda_bf16.h>
#include <stdint.h>

#include "lib/backend/cuda/kernels.cuh"

#define TPB 256

// One row of the matrix per blockIdx.y (rows beyond gridDim.y in turn), four columns per
// thread: a 16-byte load and an 8-byte store where `vec` says the rows allow it (src and ld
// 16-byte aligned, dst and ldd 8-byte), elementwise otherwise. No integer division per element
// (the flat version's 64-bit divisions held it at ~1.1 TB/s on the H200).
__global__ void to_bf16_kernel(__nv_bfloat16 *dst, long ldd, const float *src, long rows, long cols,
                               long ld, int vec) {
    long step = 4L * gridDim.x * blockDim.x;
    for (long r = blockIdx.y; r < rows; r += gridDim.y) {
        const float *s = src + r * ld;
        __nv_bfloat16 *d = dst + r * ldd;
        for (long c = 4L * (blockIdx.x * (long)blockDim.x + threadIdx.x); c < cols; c += step) {
            if (vec && c + 4 <= cols) {
                float4 v = *(const float4 *)(s + c);
                uint2 o;
                o.x = (unsigned)__bfloat16_as_ushort(__float2bfloat16_rn(v.x)) |
                      (unsigned)__bfloat16_as_ushort(__float2bfloat16_rn(v.y)) << 16;
                o.y = (unsigned)__bfloat16_as_ushort(__float2bfloat16_rn(v.z)) |
                      (unsigned)__bfloat16_as_ushort(__float2bfloat16_rn(v.w)) << 16;
                *(uint2 *)(d + c) = o;
            } else {
                for (long e = c; e < c + 4 && e < cols; e++) d[e] = __float2bfloat16_rn(s[e]);
            }
        }
    }
}

extern "C" void ax_cuda_stage_bf16(ax_ctx *ctx, void *dst, long ldd, const float *src, long rows,
                                   long cols, long ld) {
    if (rows <= 0 || cols <= 0) return;
    int vec = (uintptr_t)src % 16 == 0 && ld % 4 == 0 && (uintptr_t)dst % 8 == 0 && ldd % 4 == 0;
    long xb = (cols + 4L * TPB - 1) / (4L * TPB);
    dim3 grid((unsigned)(xb < 1024 ? xb : 1024), (unsigned)(rows < 65535 ? rows : 65535));
    to_bf16_kernel<<<grid, TPB, 0, AX_STREAM(ctx)>>>((__nv_bfloat16 *)dst, ldd, src, rows, cols, ld,
                                                     vec);
    // not ax_cuda_launched: this writes only the staging, so the generation stays
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) ax_cuda_fail("kernel launch of to_bf16: %s", cudaGetErrorString(e));
}

// ---- the to_bf16 / from_bf16 ops (ax_bf16_bits: kernels.cuh) ----
__global__ void wire_to_bf16_kernel(uint16_t *dst, const float *src, long n) {
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n;
         i += (long)gridDim.x * blockDim.x)
        dst[i] = ax_bf16_bits(src[i]);
}
__global__ void wire_from_bf16_kernel(float *dst, const uint16_t *src, long n) {
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n;
         i += (long)gridDim.x * blockDim.x)
        dst[i] = __uint_as_float((unsigned)src[i] << 16);
}
extern "C" void ax_cuda_to_bf16(ax_ctx *ctx, uint16_t *dst, const float *src, long n) {
    if (n <= 0) return;
    wire_to_bf16_kernel<<<ax_blocks(n, TPB), TPB, 0, AX_STREAM(ctx)>>>(dst, src, n);
    ax_cuda_launched("to_bf16");
}
extern "C" void ax_cuda_from_bf16(ax_ctx *ctx, float *dst, const uint16_t *src, long n) {
    if (n <= 0) return;
    wire_from_bf16_kernel<<<ax_blocks(n, TPB), TPB, 0, AX_STREAM(ctx)>>>(dst, src, n);
    ax_cuda_launched("from_bf16");
}
