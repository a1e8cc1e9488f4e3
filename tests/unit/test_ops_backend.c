/* lib/backend/backend.h: backend selection, execution contexts and their scratch arena, the
 * memory functions of the table, and the data-movement ops of decoding (KV append, strided row
 * copies, argmax over a vocabulary slice) against plain loops. */
#include <criterion/criterion.h>
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/backend/cpu/cpu.h"
#include "lib/backend/ops.h"

static ax_ctx *new_ctx(size_t scratch) {
    ax_ctx *ctx = NULL;
    cr_assert_eq(ax_ctx_create(ax_backend_cpu(), scratch, &ctx), AX_OK);
    return ctx;
}

Test(ops_backend, select_by_name) {
    const ax_backend *be = NULL;
    ax_error_clear();
    cr_assert_eq(ax_backend_select("cpu", &be), AX_OK);
    cr_assert_eq(be, ax_backend_cpu());
    cr_assert_str_eq(ax_backend_name(be), "cpu");
    /* a build without CUDA: a clear error that names the rebuild; a CUDA build on a machine
     * without a GPU: a clear error that says so; with a GPU: the CUDA table */
    ax_status st = ax_backend_select("cuda", &be);
    if (st == AX_OK) {
        cr_assert_str_eq(ax_backend_name(be), "cuda");
    } else {
        cr_assert_eq(st, AX_ERR_UNSUPPORTED);
        cr_assert_null(be);
        cr_assert((strstr(ax_error_msg(), "built without CUDA") &&
                   strstr(ax_error_msg(), "scons cuda=yes")) ||
                      strstr(ax_error_msg(), "no CUDA device found"),
                  "%s", ax_error_msg());
    }
    ax_error_clear();
    cr_assert_eq(ax_backend_select("tpu", &be), AX_ERR_ARG);
    cr_assert(strstr(ax_error_msg(), "tpu"), "%s", ax_error_msg());
}

Test(ops_backend, memory_functions) {
    ax_ctx *ctx = new_ctx(0);
    cr_assert_null(ctx->stream);
    float *d = ax_dev_alloc(ctx, 100 * sizeof(float));
    cr_assert_not_null(d);
    cr_assert_eq((uintptr_t)d % 64, 0, "device memory is 64-byte aligned");
    for (int i = 0; i < 100; i++) cr_assert_eq(d[i], 0.0f, "device memory starts zeroed");
    float h[100], back[100];
    for (int i = 0; i < 100; i++) h[i] = (float)i + 0.5f;
    ax_copy(ctx, d, h, sizeof h, AX_COPY_H2D);
    ax_zero(ctx, d + 10, 5 * sizeof(float));
    ax_sync(ctx);
    ax_copy(ctx, back, d, sizeof back, AX_COPY_D2H);
    for (int i = 0; i < 100; i++)
        cr_assert_eq(back[i], i >= 10 && i < 15 ? 0.0f : h[i], "element %d", i);
    /* a host view: what is written through it is on the device after unmap */
    float *v = ax_map(ctx, d, 100 * sizeof(float), AX_MAP_READ | AX_MAP_WRITE);
    cr_assert_not_null(v);
    cr_assert_eq(v[20], h[20], "a read view starts with the device's contents");
    v[7] = -3.0f;
    ax_unmap(ctx, d, v, 100 * sizeof(float), AX_MAP_READ | AX_MAP_WRITE);
    ax_copy(ctx, back, d, sizeof back, AX_COPY_D2H);
    cr_assert_eq(back[7], -3.0f);
    ax_dev_free(ctx, d);
    ax_ctx_free(ctx);
}

Test(ops_backend, scratch_is_reserved_once) {
    ax_ctx *ctx = new_ctx(256);
    char *base = ax_ctx_scratch(ctx, 100);
    cr_assert_not_null(base);
    cr_assert_eq(ax_ctx_scratch(ctx, 256), base, "within the reservation: the same block");
    cr_assert_eq(ax_ctx_reserve(ctx, 128), AX_OK);
    cr_assert_eq(ax_ctx_scratch(ctx, 200), base, "a smaller reserve keeps the block");
    cr_assert_eq(ax_ctx_reserve(ctx, 1 << 16), AX_OK);
    cr_assert_geq(ctx->scratch.cap, (size_t)1 << 16);
    /* a kernel that needs workspace takes it from the arena and never grows it when the
     * caller reserved enough: the arena's block is the same before and after */
    char *big = ctx->scratch.base;
    float x[5000];
    for (int i = 0; i < 5000; i++) x[i] = 1.0f;
    double ss = 0;
    for (int rep = 0; rep < 3; rep++) ss = ax_sum_squares(ctx, x, 5000);
    cr_assert_eq(ss, 5000.0);
    cr_assert_eq(ctx->scratch.base, big);
    ax_ctx_free(ctx);
}

/* the blocked attention takes its per-thread tiles from the arena: with the reservation that
 * ax_attention_scratch_bytes names, forward and backward never grow it */
Test(ops_backend, attention_workspace_is_the_reserved_arena) {
    int B = 1, T = 300, C = 32, H = 2, D = C / H;
    ax_ctx *ctx = new_ctx(0);
    cr_assert_eq(ax_ctx_reserve(ctx, ax_attention_scratch_bytes(T, D, omp_get_max_threads())),
                 AX_OK);
    char *base = ctx->scratch.base;
    size_t cap = ctx->scratch.cap;
    long nq = (long)B * T * 3 * C, no = (long)B * T * C;
    float *qkv = calloc((size_t)nq, sizeof(float)), *out = calloc((size_t)no, sizeof(float));
    float *dqkv = calloc((size_t)nq, sizeof(float)),
          *lse = calloc((size_t)B * H * T, sizeof(float));
    float *scratch = calloc((size_t)B * H * T, sizeof(float)),
          *dout = calloc((size_t)no, sizeof(float));
    for (long i = 0; i < nq; i++) qkv[i] = (float)((i * 37) % 11) / 11.0f - 0.5f;
    for (long i = 0; i < no; i++) dout[i] = (float)((i * 13) % 7) / 7.0f - 0.5f;
    ax_attention_forward_gqa(ctx, out, lse, qkv, B, T, C, H, H);
    ax_attention_backward_gqa(ctx, dqkv, scratch, dout, qkv, lse, NULL, B, T, C, H, H);
    cr_assert_eq(ax_ctx_status(ctx), AX_OK);
    cr_assert_eq(ctx->scratch.base, base, "the arena was not reallocated");
    cr_assert_eq(ctx->scratch.cap, cap);
    free(qkv), free(out), free(dqkv), free(lse), free(scratch), free(dout);
    ax_ctx_free(ctx);
}

Test(ops_backend, kv_append_and_copy_rows) {
    ax_ctx *ctx = new_ctx(0);
    enum { B = 8, H = 8, D = 4, Tm = 5, C = H * D }; /* B x H = 64 rows: the threaded append */
    float qkv[B * 3 * C], kc[B * H * Tm * D], vc[B * H * Tm * D];
    for (int i = 0; i < B * 3 * C; i++) qkv[i] = (float)i;
    for (int i = 0; i < B * H * Tm * D; i++) kc[i] = vc[i] = -1.0f;
    ax_kv_append(ctx, kc, vc, qkv + C, qkv + 2 * C, 3 * C, B, H, D, Tm, 3);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++)
            for (int t = 0; t < Tm; t++)
                for (int d = 0; d < D; d++) {
                    long at = (((long)b * H + h) * Tm + t) * D + d;
                    float k = t == 3 ? qkv[b * 3 * C + C + h * D + d] : -1.0f;
                    float v = t == 3 ? qkv[b * 3 * C + 2 * C + h * D + d] : -1.0f;
                    cr_assert_eq(kc[at], k, "k b%d h%d t%d d%d", b, h, t, d);
                    cr_assert_eq(vc[at], v, "v b%d h%d t%d d%d", b, h, t, d);
                }
    float q[B * C + 1];
    q[B * C] = 42.0f;
    ax_copy_rows(ctx, q, C, qkv, 3 * C, B, C); /* the query columns, compacted */
    for (int b = 0; b < B; b++)
        for (int c = 0; c < C; c++) cr_assert_eq(q[b * C + c], qkv[b * 3 * C + c]);
    cr_assert_eq(q[B * C], 42.0f, "nothing written past rows x cols");
    ax_ctx_free(ctx);
}

Test(ops_backend, argmax_rows_ties_to_lowest_id) {
    ax_ctx *ctx = new_ctx(0);
    enum { B = 3, Vl = 6 };
    float x[B * Vl] = {
        0,  3,  1,  3,  2,  9, /* 9 is padding (valid = 5): never chosen */
        -5, -4, -4, -6, -7, 0, /* */
        1,  1,  1,  1,  1,  1,
    };
    double best[2 * B];
    ax_argmax_rows(ctx, best, x, B, Vl, 5, 100);
    cr_assert_eq(best[0], 3.0);
    cr_assert_eq(best[1], -101.0, "first of the tied 3s, global id v0 + 1");
    cr_assert_eq(best[2], -4.0);
    cr_assert_eq(best[3], -101.0);
    cr_assert_eq(best[4], 1.0);
    cr_assert_eq(best[5], -100.0);
    ax_argmax_rows(ctx, best, x, 1, Vl, 0, 7); /* a rank that owns no real token */
    cr_assert(isinf(best[0]) && best[0] < 0);
    ax_ctx_free(ctx);
}

/* the block-skipping argmax against the plain first-maximum scan: every length 1..70 (short
 * rows, one block, tails), maxima planted at each offset of a block, runs of ties, NaNs (never
 * chosen, and a NaN in column 0 is never beaten), and 64 rows x 3000 on 1-3 threads (the
 * parallel path) */
static int argmax_scalar(const float *row, int n) {
    int arg = 0;
    for (int j = 1; j < n; j++)
        if (row[j] > row[arg]) arg = j;
    return arg;
}
Test(ops_backend, argmax_rows_matches_the_scalar_scan) {
    ax_ctx *ctx = new_ctx(0);
    enum { B = 64, VL = 3000 };
    float *x = malloc(sizeof(float) * B * VL);
    double *best = malloc(sizeof(double) * 2 * B);
    uint64_t r = 12345;
    for (int trial = 0; trial < 6; trial++) {
        for (long i = 0; i < (long)B * VL; i++) {
            r = r * 6364136223846793005ull + 1442695040888963407ull;
            /* few distinct values: ties everywhere */
            x[i] = (float)((r >> 33) % (trial < 3 ? 7 : 100000)) - 3.0f;
        }
        for (int b = 0; b < B; b++) {
            float *row = x + (long)b * VL;
            if (b % 5 == 1) row[(b * 37 + trial) % VL] = 1e6f; /* one clear maximum */
            if (b % 7 == 2) row[(b * 11) % VL] = NAN;
            if (b % 9 == 3) row[0] = NAN;
            if (b % 11 == 4)
                for (int j = 0; j < VL; j++) row[j] = -1.0f;
        }
        for (int nt = 1; nt <= 3; nt++) {
            omp_set_num_threads(nt);
            int valid = trial % 2 ? VL : VL - 13;
            ax_argmax_rows(ctx, best, x, B, VL, valid, 1000);
            for (int b = 0; b < B; b++) {
                const float *row = x + (long)b * VL;
                int want = argmax_scalar(row, valid);
                cr_assert_eq(best[2 * b + 1], -(double)(1000 + want), "trial %d row %d: %g vs %d",
                             trial, b, -best[2 * b + 1] - 1000, want);
                cr_assert(isnan(row[want]) ? isnan(best[2 * b]) : best[2 * b] == row[want]);
            }
        }
    }
    omp_set_num_threads(1);
    for (int n = 1; n <= 70; n++)
        for (int at = 0; at < n; at++) {
            float row[70];
            for (int j = 0; j < n; j++) row[j] = (float)(j % 3);
            row[at] = 5.0f;
            if (at + 17 < n) row[at + 17] = 5.0f; /* a tie later: the first one wins */
            ax_argmax_rows(ctx, best, row, 1, n, n, 0);
            cr_assert_eq(best[1], -(double)at, "n=%d at=%d", n, at);
            cr_assert_eq(best[0], 5.0);
        }
    free(x), free(best);
    ax_ctx_free(ctx);
}

/* A kernel failure never aborts the process: it is kept, and the context reports it (with a
 * message) so the model can fail the step with an error. */
Test(backend, gemm_failure_is_reported_not_fatal) {
    const ax_backend *be = NULL;
    cr_assert_eq(ax_backend_select("cpu", &be), AX_OK);
    ax_ctx *ctx = NULL;
    cr_assert_eq(ax_ctx_create(be, 0, &ctx), AX_OK);
    cr_assert_eq(ax_ctx_status(ctx), AX_OK);
    float a[4] = {1, 2, 3, 4}, c[4] = {0};
    ax_sgemm('N', 'N', 2, 2, 2, 1.0f, a, 1, a, 1, 0.0f, c, 1); /* lda < k: bad arguments */
    ax_error_clear();
    cr_assert_eq(ax_ctx_status(ctx), AX_ERR_INTERNAL);
    cr_assert(strstr(ax_error_msg(), "dnnl_sgemm"), "%s", ax_error_msg());
    ax_ctx_free(ctx);
}
