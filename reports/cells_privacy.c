/* The privacy tables' cells (membership inference, canary exposure), shared by the HTML and
 * Markdown writers so they agree. Secrets appear only in a --show-text report. */
#include "reports/cells.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const ax_rep_mia_cols[AX_REP_MIA_NCOLS] = {
    "run", "score", "AUC (95% CI)", "TPR @ 0.1% FPR", "TPR @ 1% FPR", "members", "non-members"};

const char *const ax_rep_exp_cols[AX_REP_EXP_NCOLS] = {"run",
                                                       "repeats",
                                                       "canaries",
                                                       "mean exposure (bits)",
                                                       "median exposure (bits)",
                                                       "extracted by greedy decoding",
                                                       "max possible (bits)"};

const char *ax_rep_score_desc(const char *name) {
    static const char *const map[][2] = {
        {"loss", "loss"},
        {"zlib", "zlib ratio"},
        {"min_k", "min-k% prob"},
        {"min_k_pp", "min-k%++"},
        {"ref", "loss difference to reference model"},
        {"ref_ratio", "loss ratio to reference model"},
        {"zlib_bpb", "zlib bits per byte of the text (model-free)"},
        {"length", "length in tokens (model-free)"}};
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (!strcmp(name, map[i][0])) return map[i][1];
    return name;
}

static void tpr_cell(char *c, double v) {
    if (isnan(v))
        snprintf(c, AX_REP_CELL, "n/a");
    else
        snprintf(c, AX_REP_CELL, "%.1f%%", v * 100);
}

void ax_rep_mia_cells(const ax_rep_run *run, const ax_rep_mia_score *s, char c[][AX_REP_CELL]) {
    const ax_rep_mia *m = run->mia;
    snprintf(c[0], AX_REP_CELL, "%s", run->label);
    snprintf(c[1], AX_REP_CELL, "%s", ax_rep_score_desc(s->name));
    snprintf(c[2], AX_REP_CELL, "%.3f (%.3f-%.3f)", s->auc, s->auc_lo, s->auc_hi);
    tpr_cell(c[3], s->tpr_0_1);
    tpr_cell(c[4], s->tpr_1);
    snprintf(c[5], AX_REP_CELL, "%lld", (long long)m->members);
    snprintf(c[6], AX_REP_CELL, "%lld", (long long)m->nonmembers);
}

int ax_rep_mia_warning(const ax_rep_run *run, int k, char *buf, size_t n) {
    const ax_rep_mia_score *s = &run->mia->free[k];
    int far = ax_rep_mia_far(s);
    buf[0] = '\0';
    if (!far) return 0;
    snprintf(buf, n,
             "%s: the model-free score %s has AUC %.3f (95%% CI %.3f-%.3f)%s: members and "
             "non-members %s in distribution without the model, so part of the model scores' "
             "AUCs may be that shift, not membership.",
             run->label, ax_rep_score_desc(s->name), s->auc, s->auc_lo, s->auc_hi,
             far == 2 ? ", its interval excluding 0.5" : ", its interval holding 0.5",
             far == 2 ? "differ" : "may differ");
    return 1;
}

int ax_rep_mia_tpr_note(const ax_rep_run *run, char *buf, size_t n) {
    const ax_rep_mia *m = run->mia;
    int64_t a = ax_rep_fpr_min_nonmembers(0.001), b = ax_rep_fpr_min_nonmembers(0.01);
    buf[0] = '\0';
    if (m->nonmembers >= a) return 0;
    if (m->nonmembers >= b)
        snprintf(buf, n, "%s: TPR at 0.1%% FPR needs >= %lld non-members", run->label,
                 (long long)a);
    else
        snprintf(buf, n, "%s: TPR at 0.1%% FPR needs >= %lld non-members and at 1%% FPR >= %lld",
                 run->label, (long long)a, (long long)b);
    size_t k = strlen(buf);
    snprintf(buf + k, n - k,
             " (a threshold's false positive rate moves in steps of 1/non-members); the scan has "
             "%lld: n/a.",
             (long long)m->nonmembers);
    return 1;
}

int ax_rep_mia_no_baseline(const ax_rep_run *run, char *buf, size_t n) {
    buf[0] = '\0';
    if (run->mia->has_free) return 0;
    snprintf(buf, n,
             "%s: the scan has no model-free baseline (an older memscan mia wrote it), so how much "
             "of its AUC the two sets' distributions explain is unknown; rerun memscan mia.",
             run->label);
    return 1;
}

void ax_rep_exp_cells(const ax_rep_run *run, const ax_rep_exp_row *row, char c[][AX_REP_CELL]) {
    const ax_rep_exposure *e = run->exposure;
    snprintf(c[0], AX_REP_CELL, "%s", run->label);
    if (row == &e->overall)
        snprintf(c[1], AX_REP_CELL, "all");
    else
        snprintf(c[1], AX_REP_CELL, "%lld", (long long)row->repeats);
    snprintf(c[2], AX_REP_CELL, "%lld", (long long)row->canaries);
    snprintf(c[3], AX_REP_CELL, "%.2f", row->mean);
    snprintf(c[4], AX_REP_CELL, "%.2f", row->median);
    snprintf(c[5], AX_REP_CELL, "%lld/%lld (%.0f%%)", (long long)row->extracted,
             (long long)row->canaries, row->extracted_share * 100);
    snprintf(c[6], AX_REP_CELL, "%.2f", e->max_exposure);
}

/* canaries by exposure, highest first (ties: more repeats first, then id) */
static const ax_rep_canary *sort_base;
static int by_exposure(const void *a, const void *b) {
    const ax_rep_canary *x = &sort_base[*(const int64_t *)a], *y = &sort_base[*(const int64_t *)b];
    if (x->exposure != y->exposure) return x->exposure < y->exposure ? 1 : -1;
    if (x->repeats != y->repeats) return x->repeats < y->repeats ? 1 : -1;
    return (x->id > y->id) - (x->id < y->id);
}

int ax_rep_top_canaries(const ax_rep_exposure *e, int64_t *idx, int max) {
    int64_t *all = malloc(sizeof(int64_t) * (size_t)(e->n_canary ? e->n_canary : 1));
    if (!all) return -1;
    for (int64_t i = 0; i < e->n_canary; i++) all[i] = i;
    sort_base = e->canary; /* the report is built on one thread */
    qsort(all, (size_t)e->n_canary, sizeof *all, by_exposure);
    int n = e->n_canary < max ? (int)e->n_canary : max;
    memcpy(idx, all, sizeof(int64_t) * (size_t)n);
    free(all);
    return n;
}
