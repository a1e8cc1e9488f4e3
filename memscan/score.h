/* Per-token scores of token sequences under a model on the grid: the inputs of the membership
 * and exposure attacks (memscan mia, exposure). For every target position t of a sequence:
 *   logp  = log p(x_t | x_<t)
 *   mu    = E_{z~p}[log p(z)]          (minus the entropy of the next-token distribution)
 *   sigma = sqrt(Var_{z~p}[log p(z)])
 * over the FULL vocabulary (min-k%++, Zhang et al. 2024). The vocabulary is split over Y, so
 * like the loss these take a row max and then sums over the Y ranks; the sequences are spread
 * over the batch ranks and every rank ends with every sequence's scores. (One full row at a
 * time: ax_token_logp_stats in memscan/privacy_metrics.h, the tests' reference.) */
#pragma once
#include <stdint.h>
#include "lib/core/status.h"
#include "lib/model/model.h"

typedef struct {
    int n;       /* sequences */
    long *off;   /* [n + 1]: sequence i's targets are [off[i], off[i + 1]) (len[i] - 1 of them) */
    float *logp; /* [off[n]] */
    float *mu, *sigma; /* [off[n]] each; NULL unless asked for */
} ax_score_result;

typedef struct {
    int T;                /* the model's sequence length (as allocated) */
    int batch;            /* sequences per forward per rank (at most the model's allocated batch) */
    int want_dist;        /* also mu and sigma */
    const char *progress; /* non-NULL: world rank 0 prints "<progress>: k/n sequences" lines on
                             stderr every few seconds */
} ax_score_opts;

/* Sequence i is tok[i][0..len[i]) with 2 <= len[i] <= o->T + 1:
 * the model reads tok[i][0..len - 1) and predicts tok[i][1..len). Every rank passes the same
 * sequences. Collective over the grid. */
ax_status ax_score_seqs(ax_model_t *m, int n, const int32_t *const *tok, const int *len,
                        const ax_score_opts *o, ax_score_result *out);
void ax_score_result_free(ax_score_result *r);
