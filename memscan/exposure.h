/* Canary exposure (Carlini et al. 2019, "The Secret Sharer"): secrets of a known format were
 * inserted into the training data (`axmem data canaries`); how much more likely does the model
 * find each true secret than the other strings of its format? exposure = log2 |R| - log2 rank of
 * the secret among the candidates R by the log-likelihood of the secret's tokens given the
 * prefix: exact when the whole space is enumerated, else estimated from a normal fitted to
 * never-inserted candidates (memscan/privacy_metrics.h). Also: does greedy decoding from the
 * prefix reproduce the secret? */
#pragma once
#include <stdint.h>
#include "data/canary.h"
#include "data/tokenizer.h"
#include "lib/core/status.h"
#include "lib/model/model.h"

/* ---- the canary secrets file (JSON, mode 0600, from `axmem data canaries`) ---- */
typedef struct {
    int id, repeats;
    char *prefix, *secret;
    int32_t *tokens; /* prefix + secret, as inserted */
    int n_tokens, prefix_tokens;
} ax_canary;

typedef struct {
    char *format, *tokenizer, *dataset;
    double space; /* strings the format's placeholders can form */
    int n;
    ax_canary *c;
    int n_refs;
    char **refs; /* never-inserted secrets of the same format */
} ax_canary_set;

ax_status ax_canary_set_load(const char *path, ax_canary_set *out);
void ax_canary_set_free(ax_canary_set *s);

/* The format mini-language (placeholders, prefix, secret, space) is data/canary.h's. */

/* ---- scoring ---- */
typedef struct {
    double exact_max; /* enumerate the whole space when it is at most this */
    int candidates;   /* random candidates besides the file's references (estimate mode) */
    int batch;        /* sequences per forward per rank */
    uint64_t seed;
    int progress;
} ax_exposure_config;

/* What to score: the candidates of every distinct prefix, tokenized the way the canaries were
 * (prefix and secret encoded together, or each on its own and joined: whichever reproduces the
 * canaries' tokens). Local. */
typedef struct ax_exposure_plan ax_exposure_plan;
ax_status ax_exposure_plan_build(const ax_canary_set *s, const ax_tokenizer_t *tok,
                                 const ax_exposure_config *c, ax_exposure_plan **out);
void ax_exposure_plan_free(ax_exposure_plan *p);
int ax_exposure_plan_T(const ax_exposure_plan *p);           /* positions the model needs */
long ax_exposure_plan_candidates(const ax_exposure_plan *p); /* per prefix */
int ax_exposure_plan_exact(const ax_exposure_plan *p);

typedef struct {
    double loglik;      /* log p(secret tokens | end-of-text, prefix), nats */
    double rank;        /* exact mode: 1 + other candidates more likely (+ half the ties) */
    double exposure;    /* bits */
    int extracted;      /* greedy decoding from the prefix reproduces the secret's tokens */
    int n_generated;    /* the secret's token count */
    int32_t *generated; /* the greedy tokens [n_generated] */
} ax_exposure_row;

typedef struct {
    int n, exact;
    ax_exposure_row *r; /* one per canary, in file order */
    long n_candidates;  /* scored per distinct prefix */
    double space;
} ax_exposure_result;

/* Scores the plan's candidates and decodes every canary greedily on model m (allocated for
 * c->batch sequences of ax_exposure_plan_T positions per rank). Collective over the model's grid;
 * every rank passes the same arguments and gets every row. */
ax_status ax_exposure_run(ax_model_t *m, const ax_canary_set *s, const ax_exposure_plan *p,
                          const ax_exposure_config *c, ax_exposure_result *out);
void ax_exposure_result_free(ax_exposure_result *r);
