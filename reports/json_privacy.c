/* report.json's privacy blocks: per run, the membership-inference scores with their ROC curves,
 * the model-free baselines, their warnings and why a TPR is null, and the exposure table with
 * each canary. A canary's secret (and the greedy output, which may spell it) is written only in
 * a --show-text report. */
#include "reports/cells.h"
#include "reports/model.h"

static void curve_pts(ax_jw *w, const double *x, const double *y, int n) {
    ax_jw_arr_begin(w);
    for (int i = 0; i < n; i++) {
        ax_jw_arr_begin(w);
        ax_jw_num(w, x[i]), ax_jw_num(w, y[i]);
        ax_jw_arr_end(w);
    }
    ax_jw_arr_end(w);
}

/* one object per score: AUC, interval, the TPRs (null where the non-members cannot resolve
 * the rate), the ROC curve; model-free ones with how far they are from chance */
static void scores(ax_jw *w, const ax_rep_mia_score *sc, int n, int model_free) {
    ax_jw_obj_begin(w);
    for (int k = 0; k < n; k++) {
        const ax_rep_mia_score *s = &sc[k];
        ax_jw_key(w, s->name);
        ax_jw_obj_begin(w);
        ax_jw_key(w, "auc"), ax_jw_num(w, s->auc);
        ax_jw_key(w, "auc_ci95");
        ax_jw_arr_begin(w);
        ax_jw_num(w, s->auc_lo), ax_jw_num(w, s->auc_hi);
        ax_jw_arr_end(w);
        ax_jw_key(w, "tpr_at_fpr_0.001"), ax_jw_num(w, s->tpr_0_1);
        ax_jw_key(w, "tpr_at_fpr_0.01"), ax_jw_num(w, s->tpr_1);
        if (model_free) ax_jw_key(w, "far_from_chance"), ax_jw_int(w, ax_rep_mia_far(s));
        ax_jw_key(w, "roc"); /* [fpr, tpr] */
        curve_pts(w, s->fpr, s->tpr, s->n_roc);
        ax_jw_obj_end(w);
    }
    ax_jw_obj_end(w);
}

void ax_rep_json_mia(ax_jw *w, const ax_rep_run *run) {
    const ax_rep_mia *m = run->mia;
    char t[AX_REP_NOTE];
    ax_jw_obj_begin(w);
    ax_jw_key(w, "file"), ax_jw_str(w, m->file);
    ax_jw_key(w, "members_path"), ax_jw_str(w, m->id.ds_path);
    ax_jw_key(w, "nonmembers_path"), ax_jw_str(w, m->nonmembers_path);
    ax_jw_key(w, "reference");
    m->ref_ckpt ? ax_jw_str(w, m->ref_ckpt) : ax_jw_null(w);
    ax_jw_key(w, "members"), ax_jw_int(w, m->members);
    ax_jw_key(w, "nonmembers"), ax_jw_int(w, m->nonmembers);
    ax_jw_key(w, "tokens_per_doc"), ax_jw_int(w, m->tokens_per_doc);
    if (m->zlib_level) ax_jw_key(w, "zlib_level"), ax_jw_int(w, m->zlib_level);
    ax_jw_key(w, "tpr_min_nonmembers");
    ax_jw_obj_begin(w);
    ax_jw_key(w, "tpr_at_fpr_0.001"), ax_jw_int(w, ax_rep_fpr_min_nonmembers(0.001));
    ax_jw_key(w, "tpr_at_fpr_0.01"), ax_jw_int(w, ax_rep_fpr_min_nonmembers(0.01));
    ax_jw_obj_end(w);
    ax_jw_key(w, "scores");
    scores(w, m->score, m->n_score, 0);
    ax_jw_key(w, "model_free"); /* null: the scan has no model-free baseline */
    m->has_free ? scores(w, m->free, m->n_free, 1) : ax_jw_null(w);
    ax_jw_key(w, "warnings"); /* the sentences the HTML and Markdown print under the table */
    ax_jw_arr_begin(w);
    for (int k = 0; k < m->n_free; k++)
        if (ax_rep_mia_warning(run, k, t, sizeof t)) ax_jw_str(w, t);
    if (ax_rep_mia_no_baseline(run, t, sizeof t)) ax_jw_str(w, t);
    ax_jw_arr_end(w);
    ax_jw_key(w, "tpr_note");
    ax_rep_mia_tpr_note(run, t, sizeof t) ? ax_jw_str(w, t) : ax_jw_null(w);
    ax_jw_obj_end(w);
}

static void exp_row(ax_jw *w, const ax_rep_exp_row *r, int with_repeats) {
    ax_jw_obj_begin(w);
    if (with_repeats) ax_jw_key(w, "repeats"), ax_jw_int(w, r->repeats);
    ax_jw_key(w, "canaries"), ax_jw_int(w, r->canaries);
    ax_jw_key(w, "exposure_mean"), ax_jw_num(w, r->mean);
    ax_jw_key(w, "exposure_median"), ax_jw_num(w, r->median);
    ax_jw_key(w, "exposure_min"), ax_jw_num(w, r->min);
    ax_jw_key(w, "exposure_max"), ax_jw_num(w, r->max);
    ax_jw_key(w, "extracted"), ax_jw_int(w, r->extracted);
    ax_jw_key(w, "extracted_share"), ax_jw_num(w, r->extracted_share);
    ax_jw_obj_end(w);
}

void ax_rep_json_exposure(ax_jw *w, const ax_rep_exposure *e) {
    ax_jw_obj_begin(w);
    ax_jw_key(w, "file"), ax_jw_str(w, e->file);
    ax_jw_key(w, "format"), ax_jw_str(w, e->format);
    ax_jw_key(w, "space"), ax_jw_num(w, e->space);
    ax_jw_key(w, "max_exposure"), ax_jw_num(w, e->max_exposure);
    ax_jw_key(w, "method"), ax_jw_str(w, e->method);
    ax_jw_key(w, "candidates"), ax_jw_int(w, e->candidates);
    ax_jw_key(w, "overall");
    exp_row(w, &e->overall, 0);
    ax_jw_key(w, "by_repeats");
    ax_jw_arr_begin(w);
    for (int k = 0; k < e->n_rows; k++) exp_row(w, &e->rows[k], 1);
    ax_jw_arr_end(w);
    if (e->samples_file) {
        ax_jw_key(w, "samples_file"), ax_jw_str(w, e->samples_file);
        ax_jw_key(w, "canaries");
        ax_jw_arr_begin(w);
        for (int64_t k = 0; k < e->n_canary; k++) {
            const ax_rep_canary *c = &e->canary[k];
            ax_jw_obj_begin(w);
            ax_jw_key(w, "id"), ax_jw_int(w, c->id);
            ax_jw_key(w, "repeats"), ax_jw_int(w, c->repeats);
            ax_jw_key(w, "exposure"), ax_jw_num(w, c->exposure);
            ax_jw_key(w, "extracted"), ax_jw_bool(w, c->extracted);
            /* loaded only for --show-text (load.c) */
            if (c->secret) ax_jw_key(w, "secret"), ax_jw_str(w, c->secret);
            if (c->generated_text) ax_jw_key(w, "generated_text"), ax_jw_str(w, c->generated_text);
            ax_jw_obj_end(w);
        }
        ax_jw_arr_end(w);
    }
    ax_jw_obj_end(w);
}
