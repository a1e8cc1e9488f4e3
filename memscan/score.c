#include "memscan/score.h"

#include "lib/core/fastmath.h"
#include "lib/core/timer.h"
#include "lib/dist/comm.h"
#include "lib/dist/mpienv.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The one place that reads the model's logits: this rank's [B, T, Vl] vocabulary slice of the
 * last forward, columns for global ids [v0, v0 + valid), copied through the backend. */
static ax_status read_logits(ax_model_t *m, float *host, int *v0, int *valid, int *Vl) {
    ax_model_vocab_slice(m, v0, valid, Vl);
    return ax_model_read_logits(m, host);
}

void ax_score_result_free(ax_score_result *r) {
    free(r->off), free(r->logp), free(r->mu), free(r->sigma);
    memset(r, 0, sizeof *r);
}

/* Per row of the local slice (N rows of Vl columns, `valid` real ones): the row max over the
 * whole vocabulary (all-reduce MAX over Y), then with d = l - max the sums
 * {sum e^d, sum e^d d, sum e^d d^2, d of the target if this rank owns it} (all-reduce SUM over
 * Y, float64), from which log p(target) = d_t - log Z, mu = S1/Z - log Z, sigma^2 = S2/Z -
 * (S1/Z)^2 (the variance of log p equals that of d: they differ by the constant log Z). */
static ax_status row_stats(ax_grid_t *g, const float *lg, int N, int Vl, int valid, int v0,
                           const int32_t *targets, const uint8_t *mask, float *rowmax, double *st,
                           float *logp, float *mu, float *sigma) {
#pragma omp parallel for schedule(static)
    for (int r = 0; r < N; r++) {
        float mx = -INFINITY;
        const float *l = lg + (size_t)r * Vl;
#pragma omp simd reduction(max : mx)
        for (int v = 0; v < valid; v++) mx = l[v] > mx ? l[v] : mx;
        rowmax[r] = mx;
    }
    AX_CHECK(ax_coll_allreduce(g, AX_AXIS_Y, rowmax, N, AX_DT_F32, AX_OP_MAX));
    /* d = l - max and e^d in float (ax_expf: vectorised; glibc's double exp made this pass 1/8 of
     * a GPT-2-124M scoring), summed in float over chunks of SCORE_CHUNK columns and the chunks
     * in double: 32 terms a SIMD lane before each double add, so the sums keep ~1e-6 */
    enum { SCORE_CHUNK = 512 };
#pragma omp parallel for schedule(static)
    for (int r = 0; r < N; r++) {
        double s0 = 0, s1 = 0, s2 = 0, dt = 0;
        if (mask[r]) {
            const float *l = lg + (size_t)r * Vl;
            float mx = rowmax[r];
            for (int c0 = 0; c0 < valid; c0 += SCORE_CHUNK) {
                int c1 = valid - c0 < SCORE_CHUNK ? valid : c0 + SCORE_CHUNK;
                float a0 = 0, a1 = 0, a2 = 0;
#pragma omp simd reduction(+ : a0, a1, a2)
                for (int v = c0; v < c1; v++) {
                    float d = l[v] - mx, e = ax_expf(d);
                    a0 += e, a1 += e * d, a2 += e * d * d;
                }
                s0 += a0, s1 += a1, s2 += a2;
            }
            int t = targets[r] - v0;
            if (t >= 0 && t < valid) dt = (double)l[t] - mx;
        }
        double *s = st + 4 * (size_t)r;
        s[0] = s0, s[1] = s1, s[2] = s2, s[3] = dt;
    }
    AX_CHECK(ax_coll_allreduce(g, AX_AXIS_Y, st, 4L * N, AX_DT_F64, AX_OP_SUM));
    for (int r = 0; r < N; r++) {
        const double *s = st + 4 * (size_t)r;
        if (!mask[r]) {
            logp[r] = mu[r] = sigma[r] = 0;
            continue;
        }
        double lz = log(s[0]), e1 = s[1] / s[0], var = s[2] / s[0] - e1 * e1;
        logp[r] = (float)(s[3] - lz);
        mu[r] = (float)(e1 - lz);
        sigma[r] = (float)sqrt(var > 0 ? var : 0);
    }
    return AX_OK;
}

ax_status ax_score_seqs(ax_model_t *m, int n, const int32_t *const *tok, const int *len,
                        const ax_score_opts *o, ax_score_result *out) {
    memset(out, 0, sizeof *out);
    ax_grid_t *g = ax_model_grid(m);
    int T = 0, parts = ax_grid_dim(g, AX_AXIS_BATCH), me = ax_grid_coord(g, AX_AXIS_BATCH);
    int v0, valid, Vl;
    ax_model_vocab_slice(m, &v0, &valid, &Vl);
    (void)v0, (void)valid;
    /* the model's T: the sequences must fit it (checked per sequence below) */
    for (int i = 0; i < n; i++) T = len[i] - 1 > T ? len[i] - 1 : T;
    int B = (n + parts - 1) / parts; /* sequences per rank per forward: all ranks the same */
    if (B > o->batch) B = o->batch;
    if (B < 1) B = 1;
    out->n = n;
    out->off = malloc(sizeof(long) * ((size_t)n + 1));
    if (!out->off) return ax_errorf(AX_ERR_NOMEM, "out of memory for %d sequences", n);
    out->off[0] = 0;
    for (int i = 0; i < n; i++) {
        if (len[i] < 2)
            return ax_score_result_free(out),
                   ax_errorf(AX_ERR_ARG, "sequence %d has %d tokens; scoring needs at least 2", i,
                             len[i]);
        out->off[i + 1] = out->off[i] + len[i] - 1;
    }
    int Bm, Tm = o->T;
    ax_model_shape(m, &Bm, &Tm);
    if (o->T != Tm || B > Bm) /* a forward reads the model's B x T tokens: the buffers below */
        return ax_score_result_free(out),
               ax_errorf(AX_ERR_INTERNAL,
                         "scoring %d sequences of %d positions a forward on a model created for "
                         "%d of %d; create the model with the scoring's batch and positions",
                         B, o->T, Bm, Tm);
    if (T > Tm)
        return ax_score_result_free(out),
               ax_errorf(AX_ERR_ARG,
                         "a sequence of %d tokens does not fit the model's %d positions "
                         "(+1); score shorter sequences",
                         T + 1, Tm);
    T = Tm;
    int N = B * T, k = o->want_dist ? 3 : 1;
    size_t tot = (size_t)out->off[n] ? (size_t)out->off[n] : 1;
    out->logp = malloc(sizeof(float) * tot);
    if (o->want_dist)
        out->mu = malloc(sizeof(float) * tot), out->sigma = malloc(sizeof(float) * tot);
    int32_t *in = calloc((size_t)N, sizeof(int32_t)), *tg = calloc((size_t)N, sizeof(int32_t));
    uint8_t *mask = calloc((size_t)N, 1);
    float *lg = malloc(sizeof(float) * (size_t)N * Vl), *rowmax = malloc(sizeof(float) * N);
    double *sums = malloc(sizeof(double) * 4 * (size_t)N);
    float *mine = malloc(sizeof(float) * 3 * (size_t)N),
          *all = malloc(sizeof(float) * 3 * (size_t)N * parts);
    ax_status st = AX_OK;
    if (!out->logp || (o->want_dist && (!out->mu || !out->sigma)) || !in || !tg || !mask || !lg ||
        !rowmax || !sums || !mine || !all) {
        st = ax_errorf(AX_ERR_NOMEM, "out of memory scoring %d sequences", n);
        goto done;
    }
    double t_last = ax_now();
    int R = B * parts; /* sequences per round, all ranks */
    for (int r0 = 0; r0 < n; r0 += R) {
        memset(mask, 0, (size_t)N);
        for (int j = 0; j < B; j++) {
            int i = r0 + me * B + j;
            int32_t *ri = in + (size_t)j * T, *rt = tg + (size_t)j * T;
            memset(ri, 0, sizeof(int32_t) * (size_t)T), memset(rt, 0, sizeof(int32_t) * (size_t)T);
            if (i >= n) continue; /* padding: masked out */
            memcpy(ri, tok[i], sizeof(int32_t) * (size_t)(len[i] - 1));
            memcpy(rt, tok[i] + 1, sizeof(int32_t) * (size_t)(len[i] - 1));
            memset(mask + (size_t)j * T, 1, (size_t)(len[i] - 1));
        }
        ax_model_forward(m, in, tg, mask, B, 1.0f, 0);
        AX_CHECK_GOTO(ax_model_status(m), done);
        AX_CHECK_GOTO(read_logits(m, lg, &v0, &valid, &Vl), done);
        /* mine: [k][N] (logp, then mu and sigma) */
        AX_CHECK_GOTO(row_stats(g, lg, N, Vl, valid, v0, tg, mask, rowmax, sums, mine, mine + N,
                                mine + 2 * (size_t)N),
                      done);
        /* logp first in `mine`: without mu and sigma only it travels */
        AX_CHECK_GOTO(ax_coll_allgather(g, AX_AXIS_BATCH, mine, (long)k * N, all, AX_DT_F32), done);
        for (int q = 0; q < parts; q++)
            for (int j = 0; j < B; j++) {
                int i = r0 + q * B + j;
                if (i >= n) continue;
                const float *a = all + (size_t)q * k * N + (size_t)j * T;
                size_t nt = (size_t)(len[i] - 1), at = (size_t)out->off[i];
                memcpy(out->logp + at, a, sizeof(float) * nt);
                if (k == 3) {
                    memcpy(out->mu + at, a + N, sizeof(float) * nt);
                    memcpy(out->sigma + at, a + 2 * (size_t)N, sizeof(float) * nt);
                }
            }
        int done_n = r0 + R < n ? r0 + R : n;
        if (o->progress && ax_mpi_world_rank() == 0 && (ax_now() - t_last > 5 || done_n == n) &&
            n > R) {
            fprintf(stderr, "%s: scored %d/%d sequences\n", o->progress, done_n, n);
            t_last = ax_now();
        }
    }
done:
    free(in), free(tg), free(mask), free(lg), free(rowmax), free(sums), free(mine), free(all);
    if (st != AX_OK) ax_score_result_free(out);
    return st;
}
