/* Canary exposure (Carlini et al. 2019, "The Secret Sharer"): secrets of a known format were
 * planted in the training data (`axmem data canaries`); how much more likely does the model find
 * each true secret than the other strings of its format? Every candidate is scored the same way:
 * the log-likelihood of its whole canary text (lead + prefix + candidate, tokenized as the
 * canaries were planted) after an end-of-text, i.e. minus the Secret Sharer's log-perplexity, so
 * where the tokenizer joins the prefix's last space to some secrets and not others, every
 * candidate is still charged for the same text. exposure = log2 |R| - log2 rank, rank = 1 + the
 * candidates at least as likely (ties count against the secret): exact when the whole space is
 * enumerated, else estimated from a skew-normal fitted to sampled candidates
 * (memscan/privacy_metrics.h). Also: does greedy decoding from the prefix reproduce the secret? */
#pragma once
#include <stdint.h>
#include "data/axd.h"
#include "data/canary.h"
#include "data/tokenizer.h"
#include "lib/core/json.h"
#include "lib/core/status.h"
#include "lib/model/model.h"
#include "memscan/skewnorm.h"

/* ---- the canary secrets file (JSON, mode 0600, from `axmem data canaries`) ---- */
typedef struct {
    uint64_t doc, token_pos; /* where a copy sits in the canaried dataset */
} ax_canary_site;

typedef struct {
    int id, repeats;
    char *prefix, *secret;
    int32_t *tokens; /* lead + prefix + secret, as planted */
    int n_tokens, prefix_tokens;
    ax_canary_site *sites; /* the planted copies ("inserted"); may be fewer than repeats in a
                              hand-made file */
    int n_sites;
} ax_canary;

typedef struct {
    char *format, *tokenizer, *dataset;
    char *lead;   /* text before every canary's prefix as planted: " " between sentences, "" as a
                     document (or a version-1 file) */
    double space; /* strings the format's placeholders can form */
    int n;
    ax_canary *c;
    int n_refs;
    char **refs;      /* never-inserted secrets of the same format */
    int has_identity; /* the file records the canaried dataset's identity: */
    uint64_t dataset_xxh3, dataset_docs, dataset_tokens;
} ax_canary_set;

/* Reads a secrets file (version 1 or 2, see data/canary.h); errors name the file and field. */
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

/* What to score: the candidates of every distinct prefix, each the whole text lead + prefix +
 * candidate tokenized the way the canaries were (encoded together, or lead + prefix and the
 * candidate each on its own and joined: whichever reproduces the canaries' tokens). Local. */
typedef struct ax_exposure_plan ax_exposure_plan;
ax_status ax_exposure_plan_build(const ax_canary_set *s, const ax_tokenizer_t *tok,
                                 const ax_exposure_config *c, ax_exposure_plan **out);
void ax_exposure_plan_free(ax_exposure_plan *p);
int ax_exposure_plan_T(const ax_exposure_plan *p);           /* positions the model needs */
long ax_exposure_plan_candidates(const ax_exposure_plan *p); /* per prefix */
int ax_exposure_plan_exact(const ax_exposure_plan *p);

typedef struct {
    double loglik;      /* log p(every token of the canary's text | end-of-text), nats */
    double rank;        /* exact mode: 1 + other candidates at least as likely; NAN estimated */
    double exposure;    /* bits */
    int extracted;      /* greedy decoding from the prefix reproduces the secret's tokens */
    int n_generated;    /* tokens after the prefix's */
    int32_t *generated; /* the greedy tokens [n_generated] */
    int group;          /* index into the result's groups */
} ax_exposure_row;

/* The canaries sharing one prefix share their candidates (and, estimated, one fit). */
typedef struct {
    const char *prefix; /* the set's string */
    long candidates;    /* exact: the whole space; estimated: the sample the fit saw */
    ax_skewnorm fit;    /* estimated only: on the candidates' log-perplexities (nats) */
} ax_exposure_group;

typedef struct {
    int n, exact;
    ax_exposure_row *r; /* one per canary, in file order */
    long n_candidates;  /* scored per distinct prefix */
    double space;
    int n_groups;
    ax_exposure_group *g;
} ax_exposure_result;

/* Scores the plan's candidates and decodes every canary greedily on model m (allocated for
 * c->batch sequences of ax_exposure_plan_T positions per rank). Collective over the model's grid;
 * every rank passes the same arguments and gets every row. */
ax_status ax_exposure_run(ax_model_t *m, const ax_canary_set *s, const ax_exposure_plan *p,
                          const ax_exposure_config *c, ax_exposure_result *out);
void ax_exposure_result_free(ax_exposure_result *r);

/* ---- which planted copies training read ---- */

/* A copy is read when every one of its tokens is a training target: with `--packing doc` (a
 * sample is end-of-text + a document's first seq-len tokens) token_pos + its tokens <= seq-len;
 * packed (windows of seq-len + 1 tokens at multiples of seq-len; the stream's first
 * (n_tokens - 1) / seq-len x seq-len + 1 tokens, targets from the second) its stream position
 * is >= 1 and its last token within them. Positions, not steps: a run shorter than an epoch
 * may not have sampled every document. */
typedef struct {
    int known;     /* 0: could not tell; why says why */
    char why[512]; /* known: what was compared; else the reason */
    char packing[16];
    int64_t seq_len;
    long copies, copies_read;
    int canaries_short; /* canaries with fewer copies read than planted (repeats) */
    int *read;          /* [canaries]: copies read; NULL when not known */
} ax_exposure_reads;

/* From the checkpoint's training config ("packing", "seq-len") and state ("dataset_xxh3"),
 * the secrets' planted positions, and the canaried dataset: ds (opened, or NULL) or at least
 * its checksum (have_sum). Not known (no error) when the checkpoint records no training
 * config, was trained on another dataset, the secrets file has no positions, or packed training
 * needs the dataset and it is not found. AX_ERR_CORRUPT when a position lies outside the
 * dataset; AX_ERR_NOMEM. */
ax_status ax_exposure_reads_compute(const ax_canary_set *s, const ax_json *train_config,
                                    const ax_json *train_state, const ax_axd_t *ds, int have_sum,
                                    uint64_t ds_sum, ax_exposure_reads *out);
void ax_exposure_reads_free(ax_exposure_reads *r);
