/* out[N,OC] = inp[N,C] w[OC,C]^T for a few rows N: the matmuls of KV-cached decoding (N = the
 * decoding batch), where dnnl_sgemm packs the whole weight matrix for a handful of rows, i.e.
 * reads and writes every weight once more than the product needs.
 *
 * Here each weight row is read once, straight from its row-major place: the output rows
 * (weight rows) are split into one contiguous range per thread; a tile of JB = 5 weight rows
 * against NB <= 4 input rows keeps NB x JB vector accumulators (lanes over k) in registers, then
 * sums the accumulators' lanes (16 at once by a shuffle tree that adds each output's lanes in the
 * same pairwise order as a lone vector's reduction). The inputs (N x C
 * floats, <= 256 KB at N = 32, C = 2048) stay in L2 while the weights stream from memory once. Per
 * output element the sum runs in fixed order (16 lane partial sums over k, then a fixed reduction
 * tree), whatever the thread count: results do not depend on threads. */
#include "lib/backend/cpu/cpu.h"

#include <omp.h>

#if defined(__AVX512F__)
#include <immintrin.h>
#define VL 16
typedef __m512 vec;
static inline vec vzero(void) {
    return _mm512_setzero_ps();
}
static inline vec vload(const float *p) {
    return _mm512_loadu_ps(p);
}
static inline void vstore(float *p, vec v) {
    _mm512_storeu_ps(p, v);
}
static inline vec vfma(vec a, vec b, vec c) {
    return _mm512_fmadd_ps(a, b, c);
}
static inline float vsum(vec v) {
    return _mm512_reduce_add_ps(v);
}
/* the value in a register: gcc would otherwise fold a weight load into each of its NB FMAs,
 * reading it NB times (the load port, not the FMAs, then sets the pace) */
static inline vec vkeep(vec v) {
    __asm__("" : "+v"(v));
    return v;
}
/* 16 accumulators' lane sums in one vector, by a fixed tree of 15 adds (against 16 x 4 for
 * reducing each alone): halves, then quarters, then pairs within 128-bit lanes. Lane i of the
 * result holds the sum of a[g_group_src[i]]. */
#define SUM_GROUP 16 /* accumulators a sum_group reduces */
static int g_group_src[16];
static inline vec sum_group(const vec *a) {
    vec b[8], c[4], d[2];
    for (int i = 0; i < 8; i++)
        b[i] = _mm512_add_ps(_mm512_shuffle_f32x4(a[2 * i], a[2 * i + 1], 0x44),
                             _mm512_shuffle_f32x4(a[2 * i], a[2 * i + 1], 0xEE));
    for (int i = 0; i < 4; i++)
        c[i] = _mm512_add_ps(_mm512_shuffle_f32x4(b[2 * i], b[2 * i + 1], 0x88),
                             _mm512_shuffle_f32x4(b[2 * i], b[2 * i + 1], 0xDD));
    for (int i = 0; i < 2; i++)
        d[i] = _mm512_add_ps(_mm512_unpacklo_ps(c[2 * i], c[2 * i + 1]),
                             _mm512_unpackhi_ps(c[2 * i], c[2 * i + 1]));
    return _mm512_add_ps(_mm512_shuffle_ps(d[0], d[1], 0x44), _mm512_shuffle_ps(d[0], d[1], 0xEE));
}
/* which accumulator each lane of sum_group holds: found by running it on a[i] = i in every lane */
__attribute__((constructor)) static void sum_group_map(void) {
    vec a[16];
    float r[16];
    for (int i = 0; i < 16; i++) a[i] = _mm512_set1_ps((float)i);
    _mm512_storeu_ps(r, sum_group(a));
    for (int i = 0; i < 16; i++) g_group_src[i] = (int)(r[i] / 16.0f + 0.5f);
}
#elif defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#define VL 8
typedef __m256 vec;
static inline vec vzero(void) {
    return _mm256_setzero_ps();
}
static inline vec vload(const float *p) {
    return _mm256_loadu_ps(p);
}
static inline void vstore(float *p, vec v) {
    _mm256_storeu_ps(p, v);
}
static inline vec vfma(vec a, vec b, vec c) {
    return _mm256_fmadd_ps(a, b, c);
}
static inline vec vkeep(vec v) {
    __asm__("" : "+x"(v));
    return v;
}
/* ((v0 + v4) + (v2 + v6)) + ((v1 + v5) + (v3 + v7)) */
static inline float vsum(vec v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}
/* 8 accumulators' lane sums in one vector, each in vsum's order (7 adds and 14 shuffles against
 * 8 x 6 ops reducing each alone): 128-bit halves, then pairs of pairs, then pairs. Lane i of the
 * result holds the sum of a[g_group_src[i]]. */
#define SUM_GROUP 8
static const int g_group_src[8] = {0, 2, 4, 6, 1, 3, 5, 7};
static inline vec sum_group(const vec *a) {
    vec p[4], q[2];
    for (int i = 0; i < 4; i++) /* p[i]: a[2i]'s v0+v4 .. v3+v7, then a[2i+1]'s */
        p[i] = _mm256_add_ps(_mm256_permute2f128_ps(a[2 * i], a[2 * i + 1], 0x20),
                             _mm256_permute2f128_ps(a[2 * i], a[2 * i + 1], 0x31));
    for (int i = 0; i < 2; i++) /* (v0+v4) + (v2+v6), (v1+v5) + (v3+v7) of two per half */
        q[i] = _mm256_add_ps(_mm256_shuffle_ps(p[2 * i], p[2 * i + 1], 0x44),
                             _mm256_shuffle_ps(p[2 * i], p[2 * i + 1], 0xEE));
    return _mm256_add_ps(_mm256_shuffle_ps(q[0], q[1], 0x88), _mm256_shuffle_ps(q[0], q[1], 0xDD));
}
#else
#define VL 8 /* portable: an array the compiler may vectorise */
typedef struct {
    float f[VL];
} vec;
static inline vec vzero(void) {
    vec v = {{0}};
    return v;
}
static inline vec vload(const float *p) {
    vec v;
    for (int i = 0; i < VL; i++) v.f[i] = p[i];
    return v;
}
static inline vec vfma(vec a, vec b, vec c) {
    for (int i = 0; i < VL; i++) c.f[i] += a.f[i] * b.f[i];
    return c;
}
static inline float vsum(vec v) {
    float s = 0.0f;
    for (int i = 0; i < VL; i++) s += v.f[i];
    return s;
}
static inline vec vkeep(vec v) {
    return v;
}
#endif

/* The tiles that measured fastest (bench/bench_decode_matmuls.c). AVX-512: NB x JB accumulators
 * + NB input vectors + one weight vector = 20 + 4 + 1 of the 32 registers, 9 loads feeding 20
 * FMAs a k step. AVX2 (16 registers): 3 inputs x 4 weight rows = 12 accumulators + 3 inputs + 1
 * weight (larger tiles spilled). Each output keeps its own accumulator whatever the tile: the
 * same bits. */
#if defined(__AVX512F__)
enum { JB = 5, NB = 4, JB_FEW = 8 };
#else
enum { JB = 4, NB = 3, JB_FEW = 6 };
#endif
/* AVX2: the inputs pinned in registers too (12 accumulators + 3 inputs + 1 weight = 16): left
 * to itself gcc folded each input load into its FMAs, 15 loads a k step for 12 FMAs */
#if defined(__AVX2__) && !defined(__AVX512F__)
#define KEEP_X(v) vkeep(v)
#else
#define KEEP_X(v) (v)
#endif

/* out[n, j] for n < nb, j < jb (compile-time constants after inlining) over k in [0, C):
 * whole vectors, then the k tail (C % VL) added scalar at the end, in order. */
static inline __attribute__((always_inline)) void tile(int nb, int jb, const float *x, long ldx,
                                                       const float *w, long ldw, int C, float *out,
                                                       long ldo, const float *pf, int npf) {
    vec acc[NB * JB > 2 * JB_FEW ? NB * JB : 2 * JB_FEW]; /* acc[n * jb + j] */
    for (int n = 0; n < nb; n++)
        for (int j = 0; j < jb; j++) acc[n * jb + j] = vzero();
    int kv = C / VL * VL, steps = kv / VL;
    /* npf cache lines of the next weight tile spread evenly over the k steps (one burst of them
     * all stalled on the load queue): step s prefetches line s * npf / steps, in 16.16 fixed
     * point, so neighbouring steps repeat a line (an L1 hit) and the loop has no branch. pf
     * NULL (a compile-time constant at the bandwidth-bound call sites) drops the prefetch. */
    unsigned pos = 0, inc = steps ? (unsigned)(((unsigned long)npf << 16) / (unsigned)steps) : 0;
    for (int k = 0; k < kv; k += VL) {
        vec xv[NB];
        if (pf) __builtin_prefetch(pf + (pos >> 16) * 16, 0, 3);
        pos += inc;
        for (int n = 0; n < nb; n++) xv[n] = KEEP_X(vload(x + n * ldx + k));
        for (int j = 0; j < jb; j++) {
            vec wv = vkeep(vload(w + j * ldw + k));
            for (int n = 0; n < nb; n++) acc[n * jb + j] = vfma(xv[n], wv, acc[n * jb + j]);
        }
    }
#ifdef SUM_GROUP
    if (nb * jb > SUM_GROUP / 2 && kv == C) {
        /* SUM_GROUP at a time; a short last group is padded with copies, whose lanes are
         * dropped (each output lane of sum_group adds only its own accumulator's lanes) */
        for (int a0 = 0; a0 < nb * jb; a0 += SUM_GROUP) {
            vec g[SUM_GROUP];
            float r[SUM_GROUP];
            for (int i = 0; i < SUM_GROUP; i++) g[i] = acc[a0 + i < nb * jb ? a0 + i : a0];
            vstore(r, sum_group(g));
            for (int i = 0; i < SUM_GROUP; i++) {
                int a = a0 + g_group_src[i];
                if (a < nb * jb) out[a / jb * ldo + a % jb] = r[i];
            }
        }
        return;
    }
#endif
    for (int n = 0; n < nb; n++)
        for (int j = 0; j < jb; j++) {
            float s = vsum(acc[n * jb + j]);
            for (int k = kv; k < C; k++) s += x[n * ldx + k] * w[j * ldw + k];
            out[n * ldo + j] = s;
        }
}

/* weight rows [j0, j1) against every input row: tiles of JB rows x NB inputs, the weight tile
 * (JB x C floats, contiguous) read from memory once and reused from L1 by every input tile. With
 * more than one input tile (N > NB) each of them prefetches its share of the next weight tile's
 * cache lines, so the load of the next tile hides behind this one's FMAs (the last whole tile
 * prefetches `after`, the first tile of the caller's next range, when not NULL); with one
 * (N <= NB, bandwidth-bound) the tiles follow each other in memory and the hardware prefetcher
 * keeps up (software prefetches there only took load slots: 0.67x in cache). */
static void rows(float *out, const float *inp, const float *w, int N, int C, int OC, long j0,
                 long j1, const float *after) {
    if (N <= 2) { /* bandwidth-bound: wider weight tiles (JB_FEW rows) stream faster */
        long j = j0;
        for (; j + JB_FEW <= j1; j += JB_FEW) {
            if (N == 2)
                tile(2, JB_FEW, inp, C, w + j * C, C, C, out + j, OC, 0, 0);
            else
                tile(1, JB_FEW, inp, C, w + j * C, C, C, out + j, OC, 0, 0);
        }
        for (; j < j1; j++)
            for (int n = 0; n < N; n++)
                tile(1, 1, inp + (long)n * C, C, w + j * C, C, C, out + (long)n * OC + j, OC, 0, 0);
        return;
    }
    int ntile = (N + NB - 1) / NB;
    long lines = ((long)JB * C + 15) / 16; /* 16 floats a line */
    long j = j0;
    for (; j + JB <= j1; j += JB) {
        const float *wj = w + j * C, *pf = 0;
        const float *next = j + 2 * JB <= j1 ? wj + (long)JB * C : after;
        int do_pf = ntile > 1 && next, n = 0, it = 0, npf = 0;
        for (; n < N; n += NB, it++) {
            pf = inp, npf = 0; /* nothing to fetch: the inputs' first line (in L1), never NULL */
            if (do_pf) {       /* lines [it * lines / ntile, (it + 1) * lines / ntile) */
                long l0 = it * lines / ntile, l1 = (it + 1) * lines / ntile;
                pf = next + l0 * 16, npf = (int)(l1 - l0);
            }
            const float *x = inp + (long)n * C;
            float *o = out + (long)n * OC + j;
            int nb = N - n < NB ? N - n : NB; /* a compile-time constant in each call */
            if (nb == NB)
                tile(NB, JB, x, C, wj, C, C, o, OC, pf, npf);
            else if (nb == 3)
                tile(3, JB, x, C, wj, C, C, o, OC, pf, npf);
            else if (nb == 2)
                tile(2, JB, x, C, wj, C, C, o, OC, pf, npf);
            else
                tile(1, JB, x, C, wj, C, C, o, OC, pf, npf);
        }
    }
    for (; j < j1; j++) {
        int n = 0;
        for (; n + NB <= N; n += NB)
            tile(NB, 1, inp + (long)n * C, C, w + j * C, C, C, out + (long)n * OC + j, OC, 0, 0);
        for (; n < N; n++)
            tile(1, 1, inp + (long)n * C, C, w + j * C, C, C, out + (long)n * OC + j, OC, 0, 0);
    }
}

/* Threads take chunks of whole tiles from a shared counter rather than one fixed share each,
 * so a thread whose partner is off the core waits at most one chunk (at most 1/8 of a thread's
 * share) at the join. Toward the end the chunks shrink (a 1/(2 nt) share of what is left, down
 * to 2 tiles), so the threads also finish together. The chunk table depends only on the shape
 * and the thread count. A thread claims its next chunk before it runs the current one, so the
 * current one's last tile prefetches the next's first. Which thread computes an output does not
 * change its bits. */
enum { GEMV_MAX_CHUNKS = 256, GEMV_MIN_TILES = 2 };
void ax_cpu_gemv_forward(float *out, const float *inp, const float *w, int N, int C, int OC) {
    if (N <= 0 || OC <= 0) return;
    int nt = omp_in_parallel() ? 1 : omp_get_max_threads();
    /* at least 64 weight rows a thread: below that the fork costs more than it saves */
    long max_nt = (OC + 63) / 64;
    if (nt > max_nt) nt = (int)max_nt;
    if (nt <= 1) {
        rows(out, inp, w, N, C, OC, 0, OC, NULL);
        return;
    }
    long tr = N <= 2 ? JB_FEW : JB, tiles = (OC + tr - 1) / tr; /* weight rows a tile */
    long ct = tiles / (8L * nt) > 4 ? tiles / (8L * nt) : 4;    /* tiles a chunk at most */
    long start[GEMV_MAX_CHUNKS + 1]; /* chunk c: tiles [start[c], start[c+1]) */
    int nchunks = 0;
    for (long t = 0; t < tiles; nchunks++) {
        long rem = tiles - t, sz = rem / (2L * nt);
        if (sz > ct) sz = ct;
        if (sz < GEMV_MIN_TILES) sz = GEMV_MIN_TILES;
        if (sz > rem || nchunks == GEMV_MAX_CHUNKS - 1) sz = rem;
        start[nchunks] = t;
        t += sz;
    }
    start[nchunks] = tiles;
    long next = nt;
#pragma omp parallel num_threads(nt)
    {
        long cur = omp_get_thread_num(), nxt; /* chunks 0..nt-1 start the threads */
        while (cur < nchunks) {
#pragma omp atomic capture
            nxt = next++;
            long j0 = start[cur] * tr, j1 = start[cur + 1] * tr < OC ? start[cur + 1] * tr : OC;
            rows(out, inp, w, N, C, OC, j0, j1, nxt < nchunks ? w + start[nxt] * tr * C : NULL);
            cur = nxt;
        }
    }
}
