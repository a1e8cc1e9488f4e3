/* report.json's "over_training" block per run: each curve it has, by source, with its points
 * (step, value, interval; token accuracy and the rise flag for extraction). */
#include "reports/cells.h"
#include "reports/model.h"

static const char *const keys[AX_REP_NCURVES] = {"probe", "train_scans", "mia", "exposure"};

void ax_rep_json_curves(ax_jw *w, const ax_rep_run *run) {
    int any = 0;
    for (int k = 0; k < AX_REP_NCURVES; k++) any |= !!run->curve[k];
    if (!any) {
        ax_jw_null(w);
        return;
    }
    ax_jw_obj_begin(w);
    for (int k = 0; k < AX_REP_NCURVES; k++) {
        const ax_rep_curve *c = run->curve[k];
        if (!c) continue;
        int extraction = k == AX_REP_CURVE_PROBE || k == AX_REP_CURVE_TRAIN;
        ax_jw_key(w, keys[k]);
        ax_jw_obj_begin(w);
        ax_jw_key(w, "file"), ax_jw_str(w, c->file);
        ax_jw_key(w, "source"), ax_jw_str(w, ax_rep_curve_source(k));
        ax_jw_key(w, "metric");
        ax_jw_str(w, extraction              ? "exact_match_rate"
                     : k == AX_REP_CURVE_MIA ? "auc"
                                             : "exposure_mean");
        if (c->score) ax_jw_key(w, "score"), ax_jw_str(w, c->score);
        ax_jw_key(w, "skipped"), ax_jw_int(w, c->n_skipped);
        ax_jw_key(w, "points");
        ax_jw_arr_begin(w);
        for (int64_t i = 0; i < c->n; i++) {
            ax_jw_obj_begin(w);
            ax_jw_key(w, "step"), ax_jw_int(w, (int64_t)c->step[i]);
            ax_jw_key(w, "value"), ax_jw_num(w, c->v[i]);
            if (k != AX_REP_CURVE_EXPOSURE) {
                ax_jw_key(w, "ci95");
                ax_jw_arr_begin(w);
                ax_jw_num(w, c->lo[i]), ax_jw_num(w, c->hi[i]);
                ax_jw_arr_end(w);
            }
            if (extraction) {
                ax_jw_key(w, "token_accuracy"), ax_jw_num(w, c->tok[i]);
                ax_jw_key(w, "extraction_rising"), ax_jw_bool(w, ax_rep_curve_rising(c, i));
            }
            ax_jw_obj_end(w);
        }
        ax_jw_arr_end(w);
        ax_jw_obj_end(w);
    }
    ax_jw_obj_end(w);
}
