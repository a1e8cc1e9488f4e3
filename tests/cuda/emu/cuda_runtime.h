// TEST-ONLY CUDA emulator, the kernel side (see cuda_runtime_api.h here). tests/cuda/emu/run.sh
// rewrites `k<<<grid, block, shmem, stream>>>(args)` into ax_emu_launch(...) and
// `extern __shared__ T x[];` into a pointer to the launch's dynamic shared memory. The blocks
// of a launch run one after another (so `__shared__` arrays can be function statics); the
// threads of a block are fibers (ucontext) on one OS thread, switched at every barrier:
// __syncthreads waits for the block, each warp shuffle for the warp, so warp-synchronous code
// runs in lockstep as on the GPU. A barrier that not every thread reaches (divergent
// __syncthreads, a shuffle in divergent code) is reported as a deadlock and aborts.
#pragma once
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <ucontext.h>

#include <chrono>
#include <functional>
#include <map>
#include <type_traits>
#include <vector>

#include "cuda_runtime_api.h"

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __shared__ static

// vector_types.h's aligned vectors, as the kernels load and store them
struct alignas(16) float4 {
    float x, y, z, w;
};
struct alignas(8) uint2 {
    unsigned x, y;
};

struct dim3 {
    unsigned x, y, z;
    dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};

inline dim3 threadIdx, blockIdx, blockDim, gridDim;

struct ax_emu_barrier {
    unsigned size = 0, arrived = 0, gen = 0;
};
struct ax_emu_fiber {
    ucontext_t ctx;
    std::vector<char> stack;
    ax_emu_barrier *waiting = nullptr; // blocked on this barrier
    unsigned gen = 0;                  // ... until its generation moves past this
    bool done = false;
};
struct ax_emu_state {
    ucontext_t sched;
    std::vector<ax_emu_fiber> f;
    ax_emu_barrier block;
    std::vector<ax_emu_barrier> warps;
    std::vector<double> slots; // one 8-byte slot per thread for shuffles
    std::vector<char> smem;
    unsigned cur = 0;
    std::function<void()> body;
};
inline ax_emu_state *ax_emu_cur;

inline void *ax_emu_smem() {
    return ax_emu_cur->smem.data();
}
inline void ax_emu_wait(ax_emu_barrier *b) {
    ax_emu_state *st = ax_emu_cur;
    if (++b->arrived == b->size) { // the last one releases the others and goes on
        b->arrived = 0;
        b->gen++;
        return;
    }
    ax_emu_fiber &me = st->f[st->cur];
    me.waiting = b;
    me.gen = b->gen;
    swapcontext(&me.ctx, &st->sched);
}
inline void __syncthreads() {
    ax_emu_wait(&ax_emu_cur->block);
}
inline void __syncwarp(unsigned mask = 0xffffffffu) {
    (void)mask;
    ax_emu_wait(&ax_emu_cur->warps[threadIdx.x / 32]);
}
template <class T> inline T ax_emu_shfl(T v, int src) {
    static_assert(sizeof(T) <= sizeof(double), "shuffle of a type wider than 8 bytes");
    unsigned me = threadIdx.x, w = me / 32;
    memcpy(&ax_emu_cur->slots[me], &v, sizeof v);
    __syncwarp();
    T r;
    memcpy(&r, &ax_emu_cur->slots[w * 32 + (src & 31)], sizeof r);
    __syncwarp();
    return r;
}
template <class T> inline T __shfl_sync(unsigned mask, T v, int src) {
    (void)mask;
    return ax_emu_shfl(v, src);
}
template <class T> inline T __shfl_xor_sync(unsigned mask, T v, int lanemask) {
    (void)mask;
    return ax_emu_shfl(v, (int)(threadIdx.x % 32) ^ lanemask);
}
inline int min(int a, int b) {
    return a < b ? a : b;
}
inline int max(int a, int b) {
    return a > b ? a : b;
}

// the reinterpreting casts of the device's math API
inline unsigned __float_as_uint(float f) {
    unsigned u;
    memcpy(&u, &f, sizeof u);
    return u;
}
inline float __uint_as_float(unsigned u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

inline void ax_emu_entry() {
    ax_emu_state *st = ax_emu_cur;
    st->body();
    st->f[st->cur].done = true;
    swapcontext(&st->f[st->cur].ctx, &st->sched);
}

// cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes): the launch
// check below allows k up to `bytes` of dynamic shared memory (48 KiB otherwise), 227 KiB at most
enum cudaFuncAttribute { cudaFuncAttributeMaxDynamicSharedMemorySize = 8 };
inline std::map<const void *, size_t> &ax_emu_smem_optin() {
    static std::map<const void *, size_t> m;
    return m;
}
template <class F> inline cudaError_t cudaFuncSetAttribute(F *k, cudaFuncAttribute a, int v) {
    if (a != cudaFuncAttributeMaxDynamicSharedMemorySize || v < 0 || v > 227 * 1024)
        return cudaErrorInvalidValue;
    ax_emu_smem_optin()[(const void *)k] = (size_t)v;
    return cudaSuccess;
}

// the kernel's parameter types, not deduced from the arguments (so NULL converts at the call)
template <class T> struct ax_emu_id { using type = T; };
template <class... P>
void ax_emu_launch(dim3 g, dim3 b, size_t shmem, void (*k)(P...),
                   typename ax_emu_id<P>::type... a) {
    unsigned nt = b.x * b.y * b.z;
    size_t smem_cap = 48 * 1024;
    auto opt = ax_emu_smem_optin().find((const void *)k);
    if (opt != ax_emu_smem_optin().end() && opt->second > smem_cap) smem_cap = opt->second;
    if (nt == 0 || nt > 1024 || b.y != 1 || b.z != 1 || g.z != 1 || g.x == 0 || g.y == 0 ||
        g.y > 65535 || shmem > smem_cap || (nt % 32 && nt > 32)) {
        fprintf(stderr,
                "emu: bad launch configuration grid (%u,%u,%u) block (%u,%u,%u) shmem %zu\n", g.x,
                g.y, g.z, b.x, b.y, b.z, shmem);
        abort(); // the real launch would fail: the test must see it
    }
    static const bool trace = getenv("AX_EMU_TRACE") != nullptr;
    auto t0 = std::chrono::steady_clock::now();
    ax_emu_state st;
    unsigned nw = (nt + 31) / 32;
    st.block.size = nt;
    st.warps.resize(nw);
    for (unsigned w = 0; w < nw; w++) st.warps[w].size = nt < 32 ? nt : 32;
    st.slots.assign(nw * 32, 0.0);
    st.smem.assign(shmem + 16, (char)0x5A); // dynamic shared memory starts as garbage
    st.f.resize(nt);
    for (auto &f : st.f) f.stack.resize(128 * 1024);
    st.body = [&]() { k(a...); };
    ax_emu_cur = &st;
    ax_emu_open(); // device memory is reachable while the kernel runs
    blockDim = b;
    gridDim = g;
    for (unsigned by = 0; by < g.y; by++)
        for (unsigned bx = 0; bx < g.x; bx++) {
            blockIdx = dim3(bx, by);
            for (unsigned t = 0; t < nt; t++) {
                ax_emu_fiber &f = st.f[t];
                getcontext(&f.ctx);
                f.ctx.uc_stack.ss_sp = f.stack.data();
                f.ctx.uc_stack.ss_size = f.stack.size();
                f.ctx.uc_link = nullptr;
                makecontext(&f.ctx, ax_emu_entry, 0);
                f.done = false;
                f.waiting = nullptr;
            }
            for (unsigned left = nt;;) { // round robin over the runnable fibers
                unsigned progressed = 0;
                for (unsigned t = 0; t < nt; t++) {
                    ax_emu_fiber &f = st.f[t];
                    if (f.done || (f.waiting && f.waiting->gen == f.gen)) continue;
                    f.waiting = nullptr;
                    st.cur = t;
                    threadIdx = dim3(t);
                    swapcontext(&st.sched, &f.ctx);
                    progressed++;
                    if (f.done) left--;
                }
                if (!left) break;
                if (!progressed) {
                    fprintf(stderr,
                            "emu: deadlock in block (%u,%u): a barrier or shuffle that "
                            "not every thread reaches\n",
                            bx, by);
                    abort();
                }
            }
        }
    ax_emu_close();
    ax_emu_cur = nullptr;
    if (trace)
        fprintf(stderr, "emu: grid (%u,%u) x %u threads: %.1f ms\n", g.x, g.y, nt,
                std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                    .count());
}
