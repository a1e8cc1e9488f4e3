/* Decoding's matmuls on weights packed once: out[N,OC] = inp[N,C] w[OC,C]^T where w was copied
 * into column groups, P[g][k][GW] = w[g * GW + j, k] (zero past OC), GW = JV vectors of output
 * columns. A tile of RB input rows x JV weight vectors keeps RB x JV accumulators in registers:
 * each k step loads JV vectors of P (contiguous: one stream a group) and broadcasts RB inputs,
 * so no lane sum is left at the end (gemv.c's row-major kernel must reduce 16 lanes per output,
 * and re-reads the inputs from L2 for every 5 weight rows).
 *
 * Every output is one chain of FMAs over k = 0 .. C-1 in order, started from zero, whatever the
 * tile, the thread, the batch around its row or the k block (partial sums go through `out`
 * unchanged): the same bits at any thread count and any N, so a sequence decodes the same at any
 * --batch. The k range runs in blocks of KB so that a group's block (GW x KB floats, 192 KB)
 * stays in L2 while every row tile uses it, and the row tiles prefetch the next block into L2
 * (with the hardware prefetcher alone the first row tile of each block waited on memory). The
 * tile sizes were the fastest measured (bench/bench_decode_matmuls.c). */
#include "lib/backend/cpu/cpu.h"

#include <math.h>
#include <omp.h>
#include <string.h>

#if defined(__AVX512F__)
#include <immintrin.h>
#define VL 16
typedef __m512 vec;
#define vzero() _mm512_setzero_ps()
#define vload(p) _mm512_loadu_ps(p)
#define vstore(p, v) _mm512_storeu_ps((p), (v))
#define vbcast(x) _mm512_set1_ps(x)
#define vfma(a, b, c) _mm512_fmadd_ps((a), (b), (c))
#define JV 3 /* 24 accumulators + 3 weights + 1 input of the 32 registers */
#define RB 8
#elif defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#define VL 8
typedef __m256 vec;
#define vzero() _mm256_setzero_ps()
#define vload(p) _mm256_loadu_ps(p)
#define vstore(p, v) _mm256_storeu_ps((p), (v))
#define vbcast(x) _mm256_set1_ps(x)
#define vfma(a, b, c) _mm256_fmadd_ps((a), (b), (c))
#define JV 3 /* 12 accumulators + 3 weights + 1 input of the 16 registers */
#define RB 4
#else
#define VL 8 /* portable: arrays the compiler may vectorise, the same chain per output */
typedef struct {
    float f[VL];
} vec;
static inline vec vzero(void) {
    vec v = {{0}};
    return v;
}
static inline vec vload(const float *p) {
    vec v;
    memcpy(v.f, p, sizeof v.f);
    return v;
}
static inline void vstore(float *p, vec v) {
    memcpy(p, v.f, sizeof v.f);
}
static inline vec vbcast(float x) {
    vec v;
    for (int i = 0; i < VL; i++) v.f[i] = x;
    return v;
}
static inline vec vfma(vec a, vec b, vec c) {
    for (int i = 0; i < VL; i++) c.f[i] = fmaf(a.f[i], b.f[i], c.f[i]);
    return c;
}
#define JV 3
#define RB 4
#endif
enum {
    GW = JV * VL,      /* output columns a group */
    KB_BYTES = 196608, /* a group's k block: GW x KB floats */
    PF_MIN_N = 1       /* software prefetch for N above this (N = 1 streams as fast without) */
};

static long groups(int OC) {
    return ((long)OC + GW - 1) / GW;
}
static int kblock(void) {
    return KB_BYTES / (GW * (int)sizeof(float));
}

size_t ax_cpu_matmul_pack_bytes(ax_ctx *ctx, int C, int OC) {
    (void)ctx;
    return C > 0 && OC > 0 ? sizeof(float) * (size_t)groups(OC) * (size_t)C * GW : 0;
}

void ax_cpu_matmul_pack(ax_ctx *ctx, void *packed, const float *w, int C, int OC) {
    (void)ctx;
    float *p = packed;
    long ng = groups(OC);
    /* each k reads GW rows' element k: the same GW lines serve 16 k in a row */
#pragma omp parallel for schedule(static)
    for (long g = 0; g < ng; g++) {
        float *pg = p + g * (long)C * GW;
        long o0 = g * GW, nc = OC - o0 < GW ? OC - o0 : GW;
        for (int k = 0; k < C; k++) {
            float *dst = pg + (long)k * GW;
            for (long j = 0; j < nc; j++) dst[j] = w[(o0 + j) * C + k];
            for (long j = nc; j < GW; j++) dst[j] = 0.0f;
        }
    }
}

/* out rows [0, nb) (ldo apart), columns [0, ncols) of one group, k in [k0, k1): accumulators
 * start at zero (k0 = 0) or at the partial sums in out; nb a compile-time constant after
 * inlining. A group narrower than GW (the last) goes through a padded copy of its rows. */
static inline __attribute__((always_inline)) void tile(int nb, const float *x, long ldx,
                                                       const float *pg, int k0, int k1, float *out,
                                                       long ldo, int ncols, const char *pf,
                                                       long pfn) {
    vec acc[RB][JV];
    float pad[RB][GW];
    int narrow = ncols < GW;
    for (int r = 0; r < nb; r++) {
        const float *o = out + r * ldo;
        if (narrow && k0) {
            memcpy(pad[r], o, sizeof(float) * (size_t)ncols);
            memset(pad[r] + ncols, 0, sizeof(float) * (size_t)(GW - ncols));
            o = pad[r];
        }
        for (int j = 0; j < JV; j++) acc[r][j] = k0 ? vload(o + j * VL) : vzero();
    }
    const float *wp = pg + (long)k0 * GW;
    int pfk = pfn > 0 ? (int)((pfn + (k1 - k0) - 1) / (k1 - k0)) : 0; /* lines a k step */
    for (int k = k0; k < k1; k++, wp += GW) {
        for (int q = 0; q < pfk && pfn > 0; q++, pfn--, pf += 64) __builtin_prefetch(pf, 0, 2);
        vec wv[JV];
        for (int j = 0; j < JV; j++) wv[j] = vload(wp + j * VL);
        for (int r = 0; r < nb; r++) {
            vec xb = vbcast(x[r * ldx + k]);
            for (int j = 0; j < JV; j++) acc[r][j] = vfma(xb, wv[j], acc[r][j]);
        }
    }
    for (int r = 0; r < nb; r++) {
        float *o = narrow ? pad[r] : out + r * ldo;
        for (int j = 0; j < JV; j++) vstore(o + j * VL, acc[r][j]);
        if (narrow) memcpy(out + r * ldo, pad[r], sizeof(float) * (size_t)ncols);
    }
}

/* every row of one group: row tiles inside k blocks, so a block serves all of them from L2.
 * While they compute, the row tiles prefetch the next block (the next k block or the next
 * group: the packing is contiguous) into L2, each its share of the lines, so the first tile of
 * a block does not wait on memory alone (`end`: the end of the packed matrix). */
static void group(float *out, const float *inp, const float *pg, const float *end, int N, int C,
                  int OC, long g) {
    int ncols = OC - (int)(g * GW) < GW ? OC - (int)(g * GW) : GW, kb = kblock();
    float *o = out + g * GW;
    int tiles = (N + RB - 1) / RB;
    for (int k0 = 0; k0 < C; k0 += kb) {
        int k1 = C - k0 < kb ? C : k0 + kb;
        const char *next = (const char *)(pg + (long)k1 * GW);
        long lines = ((const char *)end - next) / 64, block = (long)(k1 - k0) * GW / 16;
        if (lines > block) lines = block;
        if (lines < 0 || N <= PF_MIN_N) lines = 0;
        for (int n = 0, t = 0; n < N; n += RB, t++) {
            const float *x = inp + (long)n * C;
            float *on = o + (long)n * OC;
            long l0 = lines * t / tiles, l1 = lines * (t + 1) / tiles;
            const char *pf = next + 64 * l0;
            long pfn = l1 - l0;
            /* each case a constant row count */
#define TILE_CASE(label, nb)                                                                       \
    label:                                                                                         \
    tile(nb, x, C, pg, k0, k1, on, OC, ncols, pf, pfn);                                            \
    break;
            switch (N - n < RB ? N - n : RB) {
#if RB > 4
                TILE_CASE(case 8, 8)
                TILE_CASE(case 7, 7)
                TILE_CASE(case 6, 6)
                TILE_CASE(case 5, 5)
#endif
                TILE_CASE(case 4, 4)
                TILE_CASE(case 3, 3)
                TILE_CASE(case 2, 2)
                TILE_CASE(default, 1)
#undef TILE_CASE
            }
        }
    }
}

/* Threads take groups in shrinking chunks (guided), so a thread whose partner is off the core
 * does not wait at the join. Which thread computes a group does not change its bits. */
void ax_cpu_matmul_forward_packed(ax_ctx *ctx, float *out, const float *inp, const void *packed,
                                  int N, int C, int OC) {
    (void)ctx;
    if (N <= 0 || OC <= 0) return;
    if (C <= 0) {
        memset(out, 0, sizeof(float) * (size_t)N * (size_t)OC);
        return;
    }
    const float *p = packed;
    long ng = groups(OC);
    const float *end = p + ng * (long)C * GW;
    int nt = omp_in_parallel() ? 1 : omp_get_max_threads();
    if (nt > (ng + 1) / 2) nt = (int)((ng + 1) / 2); /* at least 2 groups a thread */
    if (nt <= 1) {
        for (long g = 0; g < ng; g++) group(out, inp, p + g * (long)C * GW, end, N, C, OC, g);
        return;
    }
#pragma omp parallel for schedule(guided, 2) num_threads(nt)
    for (long g = 0; g < ng; g++) group(out, inp, p + g * (long)C * GW, end, N, C, OC, g);
}
