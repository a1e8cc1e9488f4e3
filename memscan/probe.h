/* Extractable memorization (Carlini et al. 2021/2023; Pythia's memorization score): prompt a
 * model with a P-token prefix taken from a training document, greedy-decode S tokens with the
 * KV cache, and compare them with the true continuation. */
#pragma once
#include <stdint.h>
#include "data/axd.h"
#include "lib/model/model.h"
#include "lib/core/status.h"

typedef struct {
    int prefix, suffix;        /* P, S tokens */
    int samples;               /* how many (document, offset) probes */
    int batch;                 /* sequences decoded together per rank */
    uint64_t seed;             /* picks documents and offsets */
    int random_offset;         /* where the prefix starts: AX_PROBE_START (0) the document start;
                                  AX_PROBE_RANDOM (1) anywhere it fits; AX_PROBE_DEEP (2) at least
                                  P + S tokens in (documents of >= 2 (P + S) tokens only) */
    int lead_eot;              /* prompts of prefixes at a document start begin with end-of-text, as
                                  `--packing doc` training sequences do (model input 1 + P tokens) */
    int draws;                 /* sampled continuations per probe (0: greedy only) */
    ax_sample_params sampling; /* their temperature, top-k, top-p (seed: set from `seed`) */
    int repeat;                /* samples may exceed the eligible documents, which are then probed
                                  again (other offsets); 0: samples <= eligible, each document at
                                  most once */
} ax_probe_config;

enum { AX_PROBE_START = 0, AX_PROBE_RANDOM = 1, AX_PROBE_DEEP = 2 };

typedef struct {
    uint64_t doc, offset;       /* where the prefix starts (token offset within the document) */
    int exact;                  /* all S generated tokens equal the true suffix */
    int matched_prefix;         /* leading generated tokens that match */
    double token_accuracy;      /* fraction of the S positions that match (Pythia's score) */
    double rouge_l;             /* token LCS F1 of generation vs truth */
    uint32_t duplicates;        /* training-set occurrences of the index's n-token window at the
                                   prefix start (0 without --index) */
    int32_t *truth, *generated; /* [S] each, owned by the result set */
    int sampled_exact;          /* of the config's draws, how many reproduce the suffix exactly */
} ax_probe_sample;

typedef struct {
    int n;
    ax_probe_sample *s;
    int32_t *tokens; /* backing store: sample i's generated [2S i, 2S i + S), truth after it */
    int eligible_docs;
    int lead_eot; /* the config's lead_eot: prompts at a document start began with end-of-text */
} ax_probe_result;

/* The documents a probe of c can use: long enough for prefix + suffix (twice that for deep
 * offsets), their end-of-text excluded. */
int ax_probe_eligible(const ax_axd_t *ds, const ax_probe_config *c);

/* Picks the samples (deterministic in seed), spreads them over the grid's batch ranks, decodes
 * greedily and gathers every sample's result on every rank. With draws > 0 each probe is also
 * continued `draws` times by sampling (lib/model/sample.h), draw j's token at suffix position k
 * keyed by ax_probe_draw_key: the same seed gives the same draws on every grid. The model must be
 * allocated with T >= prefix + suffix (the prompt, end-of-text included, plus S - 1 fed-back
 * tokens). Collective. */
ax_status ax_probe_run(ax_model_t *m, const ax_axd_t *ds, const ax_probe_config *c,
                       ax_probe_result *out);
void ax_probe_result_free(ax_probe_result *r);
/* The sampling key of draw j's suffix token k of probe i at prefix length P. */
uint64_t ax_probe_draw_key(uint64_t seed, int P, int i, int j, int k);

/* Token-level longest common subsequence F1 (RougeL) of a[na] vs b[nb]. */
double ax_rouge_l(const int32_t *a, int na, const int32_t *b, int nb); /* NaN: out of memory */

/* The exact (Clopper-Pearson) two-sided 95% interval of a rate of k successes in n trials:
 * [lo, hi] with P(X >= k | lo) = P(X <= k | hi) = 2.5% (lo = 0 when k = 0, hi = 1 when k = n).
 * A bootstrap degenerates at 0/n and n/n ("100% (100-100%)"); this gives 89.1-100% at 32/32. */
void ax_clopper_pearson(long k, long n, double *lo, double *hi);

/* Mean and 95% percentile-bootstrap interval of x[n] (B resamples, seeded). */
void ax_bootstrap_ci(const double *x, int n, int resamples, uint64_t seed, double *mean, double *lo,
                     double *hi);

/* The same for observations in clusters (cluster[i]: the document probe i came from, when
 * documents are probed more than once): a cluster bootstrap, resampling whole clusters with
 * replacement; each resample's mean is its sum over its count. */
void ax_bootstrap_ci_clustered(const double *x, const uint64_t *cluster, int n, int resamples,
                               uint64_t seed, double *mean, double *lo, double *hi);

/* The exact interval of a rate of 0/1 outcomes x[n] in clusters (Korn and Graubard 1998):
 * Clopper-Pearson at the effective sample size n* = p(1 - p) / v, v the between-cluster
 * variance of the ratio estimate p = sum x / n, and k* = p n* successes (beta quantiles at
 * real counts); n* <= n. Where v says nothing (p = 0 or 1) n* is the number of clusters,
 * each cluster one observation: the most its repeats could be worth. *n_eff: n* (may be NULL). */
void ax_clopper_pearson_clustered(const double *x, const uint64_t *cluster, int n, double *mean,
                                  double *lo, double *hi, double *n_eff);
/* Clopper-Pearson at real k and n (0 <= k <= n): beta quantiles; equals ax_clopper_pearson at
 * integers. */
void ax_clopper_pearson_real(double k, double n, double *lo, double *hi);
