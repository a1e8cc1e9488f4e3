/* Membership inference (memscan mia): per-document scores of member and non-member documents
 * under a model, and how well each score separates the two sets. Scores, each oriented so that
 * HIGHER = MORE LIKELY A MEMBER:
 *   loss      -(mean token loss)                                  (Yeom et al. 2018)
 *   zlib      -(mean token loss / zlib bytes of the decoded text)  (Carlini et al. 2021;
 *             zlib level 6, AX_ZLIB_LEVEL)
 *   min_k     mean of the lowest k% token log-probabilities         (Shi et al. 2024)
 *   min_k_pp  the same over (log p - mu) / sigma of each position    (Zhang et al. 2024)
 *   ref       reference model's loss - the model's loss: the per-token log likelihood ratio
 *   ref_ratio -(the model's loss / the reference model's loss)   (Carlini et al. 2021)
 * A document is scored on its first T tokens, read after an end-of-text (training sequences
 * put one before every document: `--packing doc` explicitly, packed ones after the previous
 * document's).
 *
 * Model-free baselines: scores that read no model, so any separation they show is a difference
 * between the two sets' distributions (e.g. a held-out set filtered by n-gram overlap), not
 * membership. Each is the raw value, oriented once as HIGHER VALUE = MEMBER (neither has an
 * expected direction: an AUC of 0.3 says as much as 0.7):
 *   zlib_bpb  8 x zlib bytes / bytes of the decoded scored text (the zlib attack's text)
 *   length    the document's tokens in its dataset (all of them, end-of-text excluded) */
#pragma once
#include <stdint.h>
#include "data/axd.h"
#include "data/tokenizer.h"
#include "lib/core/status.h"
#include "lib/model/model.h"
#include "memscan/privacy_metrics.h"

typedef enum {
    AX_MIA_LOSS,
    AX_MIA_ZLIB,
    AX_MIA_MIN_K,
    AX_MIA_MIN_K_PP,
    AX_MIA_REF,
    AX_MIA_REF_RATIO,
    AX_MIA_N
} ax_mia_kind;
extern const char
    *const ax_mia_names[AX_MIA_N]; /* "loss", "zlib", "min_k", "min_k_pp", "ref", "ref_ratio" */

typedef enum { AX_MIA_FREE_ZLIB_BPB, AX_MIA_FREE_LENGTH, AX_MIA_FREE_N } ax_mia_free_kind;
extern const char *const ax_mia_free_names[AX_MIA_FREE_N]; /* "zlib_bpb", "length" */

/* A model-free score is flagged when its AUC is this far from 0.5 or its interval excludes
 * 0.5 (ax_mia_far_from_chance). */
#define AX_MIA_FAR_AUC 0.1

typedef struct {
    int max_docs;  /* per set; 0: every document (a seeded random subset when fewer) */
    int T;         /* tokens per document scored (the models' sequence length) */
    double k_frac; /* min-k% fraction, (0, 1] */
    int batch;     /* documents per forward per rank */
    uint64_t seed; /* picks the subsets */
    int progress;  /* progress lines on stderr (rank 0) */
} ax_mia_config;

typedef struct {
    uint64_t doc;           /* index in its dataset */
    int member;             /* 1: from the member set */
    int n_tokens;           /* tokens scored */
    double loss, ref_loss;  /* mean token loss (nats); ref_loss NaN without a reference model */
    double zlib_bytes;      /* zlib bytes of the decoded scored text; NaN without a tokenizer */
    double text_bytes;      /* bytes of that text; NaN without a tokenizer */
    uint64_t doc_tokens;    /* the whole document's tokens (end-of-text excluded) */
    double score[AX_MIA_N]; /* NaN where not computed */
    double free_score[AX_MIA_FREE_N]; /* model-free; NaN where not computed */
} ax_mia_doc;

typedef struct {
    double auc, auc_lo, auc_hi; /* ROC AUC and its 95% bootstrap interval */
    /* TPR at 0.1% and at 1% FPR; NaN where the non-members are too few to resolve that FPR
     * (nn < ax_fpr_min_nonmembers(fpr)) */
    double tpr_at_0_1, tpr_at_1;
    long nm, nn;       /* members and non-members that took part (a NaN score takes none) */
    ax_roc_point *roc; /* a bounded subset of the curve's points, (0,0)..(1,1) */
    long n_roc;
} ax_mia_metrics;

typedef struct {
    int n, n_mem, n_non; /* documents: members first */
    ax_mia_doc *d;
    int has[AX_MIA_N]; /* the scores computed */
    ax_mia_metrics m[AX_MIA_N];
    int has_free[AX_MIA_FREE_N]; /* the model-free scores computed (zlib_bpb needs a tokenizer) */
    ax_mia_metrics free_m[AX_MIA_FREE_N];
} ax_mia_result;

/* Scores the documents of `mem` and `non` (each a random subset of c->max_docs when larger;
 * documents without a token are skipped) with model m, and ref when not NULL; zlib needs tok
 * (NULL: not computed). Every rank passes the same arguments and gets every document's scores.
 * Collective over the models' grids. */
ax_status ax_mia_score(ax_model_t *m, ax_model_t *ref, const ax_axd_t *mem, const ax_axd_t *non,
                       const ax_tokenizer_t *tok, const ax_mia_config *c, ax_mia_result *out);
/* ROC AUC with a `reps`-replicate bootstrap interval, TPR at low FPR and the ROC curve (at most
 * about 2 * max_points points, denser at low FPR) for every computed score, model-free ones
 * included. Local. */
ax_status ax_mia_metrics_compute(ax_mia_result *r, int reps, uint64_t seed, int max_points);
/* How far a (model-free) score's AUC is from chance: 2 if its 95% interval excludes 0.5, 1 if
 * not but |AUC - 0.5| >= AX_MIA_FAR_AUC (too few documents to be sure), 0 otherwise. */
int ax_mia_far_from_chance(const ax_mia_metrics *m);
void ax_mia_result_free(ax_mia_result *r);
