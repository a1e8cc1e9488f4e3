/* Sharded kernels against the same kernels over one shard: splitting the hidden dimension or the
 * vocabulary across S "ranks" (simulated here, with the all-reduces done by hand) must give
 * the same results. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lib/backend/ops.h"
#include "lib/core/rng.h"
#include "tests/unit/test_ops_util.h"

static float *randn(long n, uint64_t stream, float scale) {
    float *p = malloc((size_t)n * sizeof *p);
    for (long i = 0; i < n; i++) p[i] = scale * ax_rng_normal(11, stream, (uint64_t)i);
    return p;
}

static void close_all(const float *a, const float *b, long n, float tol, const char *what) {
    for (long i = 0; i < n; i++)
        cr_assert(fabsf(a[i] - b[i]) <= tol * (1.0f + fabsf(b[i])), "%s[%ld]: %g vs %g", what, i,
                  a[i], b[i]);
}

/* copy columns [c0, c0+w) of x[N,C] into out[N,w] */
static void cols(float *out, const float *x, int N, int C, int c0, int w) {
    for (int i = 0; i < N; i++) memcpy(out + (long)i * w, x + (long)i * C + c0, sizeof(float) * w);
}

Test(ops_shard, rmsnorm_split_hidden_matches_one_shard) {
    int N = 7, C = 48, S = 3, w = C / S;
    float *x = randn((long)N * C, 1, 1.0f), *wt = randn(C, 2, 1.0f),
          *dy = randn((long)N * C, 3, 1.0f);
    float *y = calloc((size_t)N * C, 4), *rs = calloc(N, 4), *dx = calloc((size_t)N * C, 4),
          *dw = calloc(C, 4);
    rmsnorm_forward1(CTX, y, rs, x, wt, N, C, 1e-5f);
    rmsnorm_backward1(CTX, dx, dw, dy, x, wt, rs, N, C);

    float ss[7] = {0}, dot[7] = {0}, part[7];
    float *xs = malloc((size_t)N * w * 4), *dys = malloc((size_t)N * w * 4);
    for (int s = 0; s < S; s++) { /* all-reduce of the partial sums, by hand */
        cols(xs, x, N, C, s * w, w);
        ax_rmsnorm_sumsq(CTX, part, xs, N, w);
        for (int i = 0; i < N; i++) ss[i] += part[i];
        cols(dys, dy, N, C, s * w, w);
        ax_rmsnorm_backward_dot(CTX, part, dys, xs, wt + s * w, N, w);
        for (int i = 0; i < N; i++) dot[i] += part[i];
    }
    for (int s = 0; s < S; s++) {
        float *ys = malloc((size_t)N * w * 4), *rss = malloc(N * 4),
              *dxs = calloc((size_t)N * w, 4), *dws = calloc(w, 4),
              *ref = malloc((size_t)N * w * 4);
        cols(xs, x, N, C, s * w, w);
        cols(dys, dy, N, C, s * w, w);
        ax_rmsnorm_apply(CTX, ys, rss, xs, wt + s * w, ss, N, w, C, 1e-5f);
        cols(ref, y, N, C, s * w, w);
        close_all(ys, ref, (long)N * w, 1e-5f, "y");
        close_all(rss, rs, N, 1e-5f, "rstd");
        ax_rmsnorm_backward_apply(CTX, dxs, dws, dys, xs, wt + s * w, rss, dot, N, w, C);
        cols(ref, dx, N, C, s * w, w);
        close_all(dxs, ref, (long)N * w, 1e-4f, "dx");
        close_all(dws, dw + s * w, w, 1e-4f, "dweight");
        free(ys), free(rss), free(dxs), free(dws), free(ref);
    }
    free(x), free(wt), free(dy), free(y), free(rs), free(dx), free(dw), free(xs), free(dys);
}

Test(ops_shard, vocab_parallel_crossentropy_matches_one_shard) {
    int N = 9, V = 50, S = 4, Vl = 13; /* 4 x 13 = 52: the last shard has 2 padding columns */
    float *logits = randn((long)N * V, 4, 3.0f);
    int32_t tg[9];
    uint8_t mask[9];
    for (int i = 0; i < N; i++)
        tg[i] = (int32_t)ax_rng_below(5, 0, (uint64_t)i, (uint64_t)V), mask[i] = i % 4 != 2;
    float *dl = malloc((size_t)N * V * 4), loss_ref[9];
    double tot_ref = crossentropy1(CTX, loss_ref, dl, logits, tg, mask, 0.25f, N, V);

    float *sh[4], mx[9], part[9], stats[18] = {0}, st[18];
    for (int i = 0; i < N; i++) mx[i] = -INFINITY;
    for (int s = 0; s < S; s++) { /* padded local logits: garbage in the padding columns */
        int valid = V - s * Vl < Vl ? V - s * Vl : Vl;
        sh[s] = malloc((size_t)N * Vl * 4);
        for (int i = 0; i < N; i++)
            for (int j = 0; j < Vl; j++)
                sh[s][i * Vl + j] = j < valid ? logits[i * V + s * Vl + j] : 1e30f;
        ax_ce_rowmax(CTX, part, sh[s], N, Vl, valid);
        for (int i = 0; i < N; i++) mx[i] = fmaxf(mx[i], part[i]);
    }
    for (int s = 0; s < S; s++) {
        int valid = V - s * Vl < Vl ? V - s * Vl : Vl;
        ax_ce_partial(CTX, st, sh[s], mx, tg, mask, N, Vl, valid, s * Vl);
        for (int i = 0; i < 2 * N; i++) stats[i] += st[i];
    }
    for (int s = 0; s < S; s++) {
        int valid = V - s * Vl < Vl ? V - s * Vl : Vl;
        float losses[9];
        double tot = ax_ce_finish(CTX, losses, sh[s], sh[s], mx, stats, tg, mask, 0.25f, N, Vl,
                                  valid, s * Vl);
        cr_assert(fabs(tot - tot_ref) < 1e-4 * fabs(tot_ref), "total %g vs %g", tot, tot_ref);
        close_all(losses, loss_ref, N, 1e-5f, "loss");
        for (int i = 0; i < N; i++)
            for (int j = 0; j < Vl; j++) {
                float want = j < valid ? dl[i * V + s * Vl + j] : 0.0f;
                cr_assert(fabsf(sh[s][i * Vl + j] - want) <= 1e-6f, "dlogits[%d,%d] shard %d", i, j,
                          s);
            }
        free(sh[s]);
    }
    free(logits), free(dl);
}

Test(ops_shard, sharded_embedding_matches_full) {
    int N = 10, C = 8, V = 20, S = 3, rows = 7; /* 3 x 7 = 21 rows: one padding row */
    float *wte = randn((long)V * C, 6, 1.0f), *dy = randn((long)N * C, 7, 1.0f);
    int32_t tok[10];
    for (int i = 0; i < N; i++) tok[i] = (int32_t)ax_rng_below(8, 0, (uint64_t)i, (uint64_t)V);
    tok[3] = tok[5]; /* a repeated token accumulates twice */
    float *ref = malloc((size_t)N * C * 4), *dref = calloc((size_t)V * C, 4);
    ax_embedding_shard_forward(CTX, ref, tok, wte, N, C, 0, V); /* one shard: the whole table */
    ax_embedding_shard_backward(CTX, dref, dy, tok, N, C, 0, V);
    float *sum = calloc((size_t)N * C, 4), *out = malloc((size_t)N * C * 4);
    for (int s = 0; s < S; s++) {
        int own = V - s * rows < rows ? V - s * rows : rows;
        float *dw = calloc((size_t)rows * C, 4);
        ax_embedding_shard_forward(CTX, out, tok, wte + (long)s * rows * C, N, C, s * rows, own);
        for (long i = 0; i < (long)N * C; i++) sum[i] += out[i];
        ax_embedding_shard_backward(CTX, dw, dy, tok, N, C, s * rows, own);
        close_all(dw, dref + (long)s * rows * C, (long)own * C, 0, "dwte");
        free(dw);
    }
    close_all(sum, ref, (long)N * C, 0, "embedding");
    free(wte), free(dy), free(ref), free(dref), free(sum), free(out);
}
