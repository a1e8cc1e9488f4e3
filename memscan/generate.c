#include "memscan/generate.h"
#include "lib/dist/comm.h"
#include "lib/core/rng.h"

#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

/* The k-th largest of a[0..n) (1 <= k <= n), a reordered: the value a descending sort puts at
 * k - 1, found in expected linear time (three-way partition around a median of three, so runs
 * of equal logits cost nothing). qsort of a GPT-2 row took ~3 ms a token, most of a
 * generation's time at batch 32 against its decoding step. */
float ax_kth_largest(float *a, int n, int k) {
    int lo = 0, hi = n, want = k - 1; /* the answer's index in descending order, within [lo, hi) */
    while (hi - lo > 1) {
        float x = a[lo], y = a[lo + (hi - lo) / 2], z = a[hi - 1];
        float p = x > y ? (y > z ? y : (x > z ? z : x)) : (x > z ? x : (y > z ? z : y));
        /* [lo, gt) > p, [gt, i) == p, [lt, hi) < p; [i, lt) not yet seen */
        int gt = lo, i = lo, lt = hi;
        while (i < lt) {
            float v = a[i];
            if (v > p) {
                a[i] = a[gt], a[gt] = v;
                gt++, i++;
            } else if (v < p) {
                lt--;
                a[i] = a[lt], a[lt] = v;
            } else {
                i++; /* equal (or NaN: kept with the pivot, so the range always shrinks) */
            }
        }
        if (want < gt)
            hi = gt;
        else if (want < lt)
            return p;
        else
            lo = lt;
    }
    return a[lo];
}

int32_t ax_sample_token(const float *logits, int V, double temperature, int top_k, double u,
                        float *scratch) {
    int arg = 0;
    for (int v = 1; v < V; v++)
        if (logits[v] > logits[arg]) arg = v;
    if (temperature <= 0) return arg;
    /* the k-th largest logit is the cut: ties at the cut are all kept */
    float cut = -INFINITY;
    if (top_k > 0 && top_k < V) {
        memcpy(scratch, logits, sizeof(float) * (size_t)V);
        cut = ax_kth_largest(scratch, V, top_k);
    }
    double sum = 0;
    for (int v = 0; v < V; v++)
        sum += scratch[v] =
            logits[v] >= cut ? (float)exp((logits[v] - logits[arg]) / temperature) : 0.0f;
    double target = u * sum, acc = 0;
    for (int v = 0; v < V; v++) {
        acc += scratch[v];
        if (scratch[v] > 0 && acc > target) return v;
    }
    return arg; /* rounding left target at the very top: the likeliest token */
}

ax_status ax_generate(ax_model_t *m, const ax_generate_config *c, int32_t *out) {
    ax_grid_t *g = ax_model_grid(m);
    int parts = ax_grid_dim(g, AX_AXIS_BATCH), me = ax_grid_coord(g, AX_AXIS_BATCH);
    int per = (c->samples + parts - 1) / parts, L = c->length, V = ax_model_config_of(m)->vocab;
    int32_t *mine = calloc((size_t)per * L, sizeof(int32_t)),
            *all = calloc((size_t)per * parts * L, sizeof(int32_t));
    int nt = omp_get_max_threads(); /* a scratch row per thread: the rows sample in parallel */
    float *logits = malloc(sizeof(float) * (size_t)c->batch * V),
          *scratch = malloc(sizeof(float) * (size_t)V * (size_t)nt);
    int32_t *tok = malloc(sizeof(int32_t) * (size_t)c->batch);
    ax_status st = AX_OK;
    if (!mine || !all || !logits || !scratch || !tok) {
        st = ax_errorf(AX_ERR_NOMEM, "out of memory for %d generations", c->samples);
        goto done;
    }
    for (int b0 = 0; b0 < per; b0 += c->batch) {
        int B = per - b0 < c->batch ? per - b0 : c->batch;
        AX_CHECK_GOTO(ax_model_decode_begin(m, B), done);
        for (int j = 0; j < B; j++) tok[j] = c->start_token;
        for (int pos = 0; pos < L; pos++) {
            ax_model_decode_step(m, tok, pos);
            AX_CHECK_GOTO(ax_model_decode_full_logits(m, logits), done);
            /* each row alone (its draw keyed by its sample): the same tokens on any thread count */
#pragma omp parallel for schedule(static) num_threads(nt)
            for (int j = 0; j < B; j++) {
                uint64_t sample = (uint64_t)me * per + b0 + j; /* the draw is keyed by sample */
                double u = (double)(ax_rng_u64(c->seed, sample, (uint64_t)pos) >> 11) * 0x1.0p-53;
                float *sc = scratch + (size_t)omp_get_thread_num() * V;
                tok[j] =
                    ax_sample_token(logits + (size_t)j * V, V, c->temperature, c->top_k, u, sc);
                mine[(size_t)(b0 + j) * L + pos] = tok[j];
            }
        }
        AX_CHECK_GOTO(ax_model_status(m), done);
    }
    /* token ids travel as i32: every batch rank's generations, in sample order */
    AX_CHECK_GOTO(ax_coll_allgather(g, AX_AXIS_BATCH, mine, (long)per * L, all, AX_DT_I32), done);
    memcpy(out, all, sizeof(int32_t) * (size_t)c->samples * (size_t)L);
done:
    free(mine), free(all), free(logits), free(scratch), free(tok);
    return st;
}
