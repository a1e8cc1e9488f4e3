// TEST-ONLY stand-in for the toolkit's mma.h (see cuda_runtime_api.h here): the warp matrix
// (wmma) API for 16x16x16 tiles of bf16 operands with fp32 accumulators, as
// lib/backend/cuda/ uses it. On the GPU a fragment's elements are spread over the warp's lanes
// in an unspecified layout, so correct code only loads, stores, fills and multiplies them, or
// combines the elements x[i] of two fragments of the same type (element i is the same matrix
// position in both); here every thread holds the whole tile, which is one valid such layout. The
// operations are warp-collective there and plain per-thread work here: data written by other lanes
// must be published with __syncwarp (or __syncthreads) first, as on the GPU, and the emulator's
// fibers, switched only at barriers, make a missing one show as a wrong result.
#pragma once
#include <type_traits>

#include "cuda_bf16.h"
#include "cuda_runtime.h"

namespace nvcuda {
namespace wmma {

struct matrix_a {};
struct matrix_b {};
struct accumulator {};
struct row_major {};
struct col_major {};
enum layout_t { mem_row_major, mem_col_major };

template <class Use, int M, int N, int K, class T, class Layout = void> struct fragment {
    static_assert(M == 16 && N == 16 && K == 16, "the emulator has 16x16x16 tiles only");
    enum { num_elements = 16 * 16 };
    float x[num_elements]; // element (r, c) at x[16 r + c]; elementwise code may use x[i]
};

static inline float ax_emu_f(float x) {
    return x;
}
static inline float ax_emu_f(__nv_bfloat16 x) {
    return __bfloat162float(x);
}

template <class Use, class T, class Layout, class P>
inline void load_matrix_sync(fragment<Use, 16, 16, 16, T, Layout> &f, const P *p, unsigned ldm) {
    // matrix_a (r, c) = (row, k); matrix_b (r, c) = (k, col); row_major: (r, c) at r ldm + c
    constexpr bool row = std::is_same<Layout, row_major>::value;
    for (int r = 0; r < 16; r++)
        for (int c = 0; c < 16; c++)
            f.x[16 * r + c] = ax_emu_f(row ? p[r * ldm + c] : p[c * ldm + r]);
}
inline void load_matrix_sync(fragment<accumulator, 16, 16, 16, float> &f, const float *p,
                             unsigned ldm, layout_t l) {
    for (int r = 0; r < 16; r++)
        for (int c = 0; c < 16; c++)
            f.x[16 * r + c] = l == mem_row_major ? p[r * ldm + c] : p[c * ldm + r];
}
// A store waits for the whole warp first: every lane has loaded what the tile held before
// (load, multiply, store back to the same tile is one collective step on the GPU, and here
// each fiber would otherwise add its product on top of the others').
inline void store_matrix_sync(float *p, const fragment<accumulator, 16, 16, 16, float> &f,
                              unsigned ldm, layout_t l) {
    __syncwarp();
    for (int r = 0; r < 16; r++)
        for (int c = 0; c < 16; c++)
            (l == mem_row_major ? p[r * ldm + c] : p[c * ldm + r]) = f.x[16 * r + c];
}
template <class Use, class T, class Layout>
inline void fill_fragment(fragment<Use, 16, 16, 16, T, Layout> &f, float x) {
    for (int i = 0; i < 256; i++) f.x[i] = x;
}
// d = a b + c, products of the (already bf16) operands accumulated in fp32
template <class T, class LA, class LB>
inline void mma_sync(fragment<accumulator, 16, 16, 16, float> &d,
                     const fragment<matrix_a, 16, 16, 16, T, LA> &a,
                     const fragment<matrix_b, 16, 16, 16, T, LB> &b,
                     const fragment<accumulator, 16, 16, 16, float> &c) {
    float out[256];
    for (int r = 0; r < 16; r++)
        for (int n = 0; n < 16; n++) {
            float s = c.x[16 * r + n];
            for (int k = 0; k < 16; k++) s += a.x[16 * r + k] * b.x[16 * k + n];
            out[16 * r + n] = s;
        }
    for (int i = 0; i < 256; i++) d.x[i] = out[i];
}

} // namespace wmma
} // namespace nvcuda
