/* GEMM on oneDNN's dnnl_sgemm, and the linear layer built on it.
 * Debian's libdnnl runs on GNU OpenMP, the same pool as our own loops, so the GEMM threads and
 * the kernel threads never fight over the cores. dnnl_sgemm is row-major, so it maps 1:1. */
#include "lib/backend/cpu/cpu.h"

#include <omp.h>
#include <oneapi/dnnl/dnnl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/log.h"

/* the first failure, process-wide (GEMMs run on OpenMP threads that hold no context) */
static int g_failed;
static char g_why[256];

ax_status ax_cpu_status(ax_ctx *ctx) {
    (void)ctx;
    if (__atomic_load_n(&g_failed, __ATOMIC_ACQUIRE) != 1) return AX_OK; /* 2: being written */
    return ax_errorf(AX_ERR_INTERNAL, "%s (a bug in axmem: please report it)", g_why);
}

/* B's leading dimension (floats) that puts its rows on the same few cache sets, and the padding
 * a copy gets. dnnl 2.6 multiplies a short A (m <= ~384 rows) by an untransposed B without
 * packing B, so when B's rows lie a multiple of 2 KiB apart (ldb = 512, 1024, 1536, 2048...) the
 * kernel's loads from successive rows evict each other (dinp = dout w of the SwiGLU down
 * projection ran at about half the square-GEMM rate on AVX2, near full rate with B copied to
 * ldb = 2064 first, copy included). m >= 448 packs B and gains nothing. dnnl's AVX-512 kernel
 * does not suffer it (the copy only cost time there), so AVX-512 builds go straight to dnnl. */
#ifdef __AVX512F__
#define PAD_ALIASING_B 0
#else
#define PAD_ALIASING_B 1
#endif
enum {
    ALIASING_LD = 512,
    PADDED_LD_EXTRA = 16,
    PAD_MIN_M = 32,              /* fewer rows: the copy costs what the GEMM reads */
    PAD_MAX_M = 384,             /* more rows: dnnl packs B itself */
    PAD_MIN_FLOATS = 1 << 16,    /* smaller B: fits in L2 anyway */
    PAD_SCRATCH_FLOATS = 4 << 20 /* 16 MiB: longer B goes through in slices of k */
};

/* a per-thread buffer that grows; NULL when out of memory (the caller then skips the copy) */
static float *pad_scratch(size_t floats) {
    static _Thread_local float *buf;
    static _Thread_local size_t cap;
    if (floats <= cap) return buf;
    free(buf);
    cap = 0;
    buf = aligned_alloc(64, (floats * sizeof(float) + 63) / 64 * 64);
    if (buf) cap = floats;
    return buf;
}

/* dst[rows, cols] (ld dld) = src (ld sld); on the team when called outside a parallel region */
static void copy_rows(float *dst, long dld, const float *src, long sld, long rows, long cols) {
#pragma omp parallel for if (!omp_in_parallel()) schedule(static)
    for (long r = 0; r < rows; r++) memcpy(dst + r * dld, src + r * sld, sizeof(float) * cols);
}

/* C = alpha op(A) B + beta C with B [k, n] copied to a padded ld, k in slices that fit the
 * scratch; returns -1 when there is no scratch (nothing was computed) */
static int sgemm_padded_b(char transa, long m, long n, long k, float alpha, const float *A,
                          long lda, const float *B, long ldb, float beta, float *C, long ldc) {
    long ld = n + PADDED_LD_EXTRA, kc = PAD_SCRATCH_FLOATS / ld;
    if (kc < 1) kc = 1;
    if (kc > k) kc = k;
    float *S = pad_scratch((size_t)kc * ld);
    if (!S) return -1;
    int s = dnnl_success;
    for (long k0 = 0; k0 < k && s == dnnl_success; k0 += kc) {
        long kb = k - k0 < kc ? k - k0 : kc;
        copy_rows(S, ld, B + k0 * ldb, ldb, kb, n);
        const float *Ak = transa == 'N' ? A + k0 : A + k0 * lda;
        s = (int)dnnl_sgemm(transa, 'N', m, n, kb, alpha, Ak, lda, S, ld, k0 ? 1.0f : beta, C, ldc);
    }
    return s;
}

/* the forward's narrow column chunks (ax_sgemm, C = A B^T): at most this many rows and this
 * inner dimension, about this many columns a chunk */
enum { NT_NARROW_MAX_M = 384, NT_NARROW_MAX_K = 1024, NT_NARROW_COLS = 256 };
/* C = A^T B split by rows of C: from this many rows a thread, in chunks of this many */
enum { TN_ROWS_MIN = 8192, TN_ROWS_CHUNK = 3072 };

/* C[m,n] = alpha op(A)[m,k] op(B)[k,n] + beta C */
void ax_sgemm(char transa, char transb, long m, long n, long k, float alpha, const float *A,
              long lda, const float *B, long ldb, float beta, float *C, long ldc) {
    if (m <= 0 || n <= 0) return;
    if (k <= 0) { /* empty product: C = beta C (BLAS semantics; beta = 0 clears NaNs too) */
        for (long i = 0; i < m; i++)
            for (long j = 0; j < n; j++)
                C[i * ldc + j] = beta == 0.0f ? 0.0f : beta * C[i * ldc + j];
        return;
    }
    int s = dnnl_success; /* int: an OpenMP reduction over the threads' statuses */
    int nt = omp_in_parallel() ? 1 : omp_get_max_threads();
    if (transa == 'N' && transb == 'T' && alpha == 1.0f && !omp_in_parallel() &&
        ax_sgemm_primitive_nt(m, n, k, A, lda, B, ldb, beta, C, ldc) == 0)
        return;
    if (transa == 'N' && transb == 'T' && nt > 1 && n / nt >= 256) {
        /* The forward shape (C = A B^T, m = 256-ish token rows, wide n) is where dnnl's own
         * split is weakest; column chunks of C, each run single-threaded and taken from a shared
         * counter (so no thread waits long at the join when the other lost its core), come
         * near the square-GEMM rate (bench/bench_gemm.c). Wide n (the LM head) goes in about
         * 2048-column chunks; few rows (m <= 384) with k <= 1024 in about 256 columns (dnnl
         * packs A afresh per call, so more rows want wider chunks). NN/TN shapes gained
         * nothing from it and stay with dnnl's partitioning. */
        long nch = nt, per;
        if (m <= NT_NARROW_MAX_M && k <= NT_NARROW_MAX_K && n / nt >= 2 * NT_NARROW_COLS)
            nch = nt * ((n + NT_NARROW_COLS * nt - 1) / (NT_NARROW_COLS * nt));
        else if (n / nt >= 8192)
            nch = nt * ((n + 2048L * nt - 1) / (2048L * nt));
        per = ((n + nch - 1) / nch + 15) / 16 * 16;
        nch = (n + per - 1) / per;
#pragma omp parallel for num_threads(nt) schedule(dynamic, 1) reduction(max : s) /* errors > 0 */
        for (long c = 0; c < nch; c++) {
            long j0 = per * c, j1 = j0 + per < n ? j0 + per : n;
            int r = (int)dnnl_sgemm('N', 'T', m, j1 - j0, k, alpha, A, lda, B + j0 * ldb, ldb, beta,
                                    C + j0, ldc);
            s = r > s ? r : s;
        }
    } else if (transa == 'T' && transb == 'N' && nt > 1 && m / nt >= TN_ROWS_MIN) {
        /* dW = dout^T in of the LM head (m = the vocabulary's rows): chunks of ~3072 rows of C
         * from a shared counter, each on one thread, beat dnnl's own split (bench/bench_gemm.c);
         * the chunk count is a multiple of the threads so that they end together. */
        long cw = TN_ROWS_CHUNK, nch = nt * ((m + cw * nt - 1) / (cw * nt));
        long per = ((m + nch - 1) / nch + 15) / 16 * 16;
        nch = (m + per - 1) / per;
#pragma omp parallel for num_threads(nt) schedule(dynamic, 1) reduction(max : s)
        for (long c = 0; c < nch; c++) {
            long i0 = per * c, i1 = i0 + per < m ? i0 + per : m;
            int r = (int)dnnl_sgemm('T', 'N', i1 - i0, n, k, alpha, A + i0, lda, B, ldb, beta,
                                    C + i0 * ldc, ldc);
            s = r > s ? r : s;
        }
    } else if (PAD_ALIASING_B && transb == 'N' && ldb % ALIASING_LD == 0 && m >= PAD_MIN_M &&
               m <= PAD_MAX_M && k * n >= PAD_MIN_FLOATS &&
               (s = sgemm_padded_b(transa, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc)) >= 0) {
        /* done, with B padded */
    } else {
        s = (int)dnnl_sgemm(transa, transb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
    }
    if (s != dnnl_success) {
        /* only bad arguments get here: a caller bug, not a user error */
        char why[sizeof g_why];
        snprintf(
            why, sizeof why,
            "dnnl_sgemm(%c,%c,m=%ld,n=%ld,k=%ld,lda=%ld,ldb=%ld,ldc=%ld) failed with status %d",
            transa, transb, m, n, k, lda, ldb, ldc, s);
        ax_log(AX_LOG_ERROR, "%s", why);
        int expected = 0;
        if (__atomic_compare_exchange_n(&g_failed, &expected, 2, 0, __ATOMIC_ACQ_REL,
                                        __ATOMIC_ACQUIRE)) {
            memcpy(g_why, why, sizeof why);
            __atomic_store_n(&g_failed, 1, __ATOMIC_RELEASE);
        }
    }
}

/* out[N,OC] = inp[N,C] w[OC,C]^T; a few rows (decoding) read the weights once in gemv.c */
void ax_cpu_matmul_forward(ax_ctx *ctx, float *out, const float *inp, const float *w, int N, int C,
                           int OC) {
    (void)ctx;
    if (N <= AX_CPU_GEMV_MAX_N) {
        ax_cpu_gemv_forward(out, inp, w, N, C, OC);
        return;
    }
    ax_sgemm('N', 'T', N, OC, C, 1.0f, inp, C, w, C, 0.0f, out, OC);
}

/* dinp[N,C] += dout[N,OC] w[OC,C] ; dw[OC,C] += dout^T inp[N,C] (beta = 1 accumulates) */
void ax_cpu_matmul_backward(ax_ctx *ctx, float *dinp, float *dw, const float *dout,
                            const float *inp, const float *w, int N, int C, int OC) {
    (void)ctx;
    if (dinp) ax_sgemm('N', 'N', N, C, OC, 1.0f, dout, OC, w, C, 1.0f, dinp, C);
    if (dw) ax_sgemm('T', 'N', OC, C, N, 1.0f, dout, OC, inp, C, 1.0f, dw, C);
}
