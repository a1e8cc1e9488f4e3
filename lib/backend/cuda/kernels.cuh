// Device helpers shared by the kernel files of lib/backend/cuda/: launch geometry, warp and
// block reductions with a fixed order (deterministic: the same inputs give the same bits).
#pragma once
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include "lib/backend/cuda/cuda.h"

#define AX_STREAM(ctx) ((cudaStream_t)(ctx)->stream)

static inline unsigned ax_blocks(long n, int threads) {
    long b = (n + threads - 1) / threads;
    return (unsigned)(b < 1 ? 1 : b > 1048576 ? 1048576 : b); /* grid-stride loops cover more */
}

// An op's output element: fp32, or bf16 storage rounded to nearest even (the _bf16 producers:
// the same arithmetic as the fp32 op, so the stored value is what a bf16 GEMM would stage)
__device__ __forceinline__ void ax_store(float *p, float v) {
    *p = v;
}
__device__ __forceinline__ void ax_store(__nv_bfloat16 *p, float v) {
    *p = __float2bfloat16_rn(v);
}

// The bits of f rounded to bf16 as the CPU's to_bf16 and lib/dist round (nearest even; a NaN
// made the quiet NaN (u >> 16) | 0x40, not the device's canonical one): the to_bf16 op and the
// bf16 copy AdamW writes
__device__ __forceinline__ uint16_t ax_bf16_bits(float f) {
    unsigned u = __float_as_uint(f);
    return (u & 0x7fffffffu) > 0x7f800000u ? (uint16_t)((u >> 16) | 0x40u)
                                           : __bfloat16_as_ushort(__float2bfloat16_rn(f));
}

template <class T> __device__ __forceinline__ T ax_warp_sum(T v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}
__device__ __forceinline__ float ax_warp_max(float v) {
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

// Sum (float or double) / max (float) over the block (blockDim.x a multiple of 32, <= 1024);
// every thread gets the result. `sh` is 32 elements of shared memory; the function syncs before
// reusing it.
template <bool MAX, class T> __device__ __forceinline__ T ax_block_reduce(T v, T *sh) {
    int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = blockDim.x >> 5;
    v = MAX ? ax_warp_max(v) : ax_warp_sum(v);
    __syncthreads();
    if (lane == 0) sh[w] = v;
    __syncthreads();
    v = lane < nw ? sh[lane] : MAX ? (T)-INFINITY : (T)0;
    return MAX ? ax_warp_max(v) : ax_warp_sum(v);
}
template <class T> __device__ __forceinline__ T ax_block_sum(T v, T *sh) {
    return ax_block_reduce<false>(v, sh);
}
__device__ __forceinline__ float ax_block_max(float v, float *sh) {
    return ax_block_reduce<true>(v, sh);
}
