/* report.json: the combined data, versioned (schema axmem-report v1), for tools and for
 * comparing reports over time. Curves are thinned to at most CURVE_POINTS points (the stride
 * is recorded); final values are exact. */
#include "reports/model.h"

#define CURVE_POINTS 1000

static void stat(ax_jw *w, const char *key, const ax_rep_stat *s) {
    ax_jw_key(w, key);
    ax_jw_obj_begin(w);
    ax_jw_key(w, "mean"), ax_jw_num(w, s->mean);
    ax_jw_key(w, "ci95");
    ax_jw_arr_begin(w);
    ax_jw_num(w, s->lo), ax_jw_num(w, s->hi);
    ax_jw_arr_end(w);
    ax_jw_obj_end(w);
}

static void ident(ax_jw *w, const ax_rep_ident *id) {
    ax_jw_key(w, "checkpoint");
    ax_jw_obj_begin(w);
    ax_jw_key(w, "path"), ax_jw_str(w, id->ckpt_path);
    ax_jw_key(w, "step"), ax_jw_int(w, id->step);
    ax_jw_key(w, "goldfish"), ax_jw_str(w, id->goldfish);
    ax_jw_obj_end(w);
    ax_jw_key(w, "dataset");
    ax_jw_obj_begin(w);
    ax_jw_key(w, "path"), ax_jw_str(w, id->ds_path);
    ax_jw_key(w, "xxh3"), ax_jw_str(w, id->ds_xxh3);
    ax_jw_key(w, "docs"), ax_jw_int(w, id->ds_docs);
    ax_jw_key(w, "tokens"), ax_jw_int(w, id->ds_tokens);
    ax_jw_obj_end(w);
}

static void probe(ax_jw *w, const ax_rep_probe *p) {
    ax_jw_obj_begin(w);
    ax_jw_key(w, "file"), ax_jw_str(w, p->file);
    ident(w, &p->id);
    ax_jw_key(w, "prefix"), ax_jw_int(w, p->prefix);
    ax_jw_key(w, "suffix"), ax_jw_int(w, p->suffix);
    ax_jw_key(w, "probed"), ax_jw_int(w, p->n);
    ax_jw_key(w, "exact"), ax_jw_int(w, p->n_exact);
    stat(w, "exact_match_rate", &p->exact);
    stat(w, "token_accuracy", &p->tok_acc);
    stat(w, "rouge_l", &p->rouge_l);
    ax_jw_key(w, "matched_prefix_mean"), ax_jw_num(w, p->mp_mean);
    ax_jw_key(w, "matched_prefix_hist");
    ax_jw_arr_begin(w);
    for (int k = 0; k < p->n_mp_hist; k++) ax_jw_int(w, p->mp_hist[k]);
    ax_jw_arr_end(w);
    if (p->n_dup) {
        ax_jw_key(w, "by_duplication");
        ax_jw_arr_begin(w);
        for (int k = 0; k < p->n_dup; k++) {
            ax_jw_obj_begin(w);
            ax_jw_key(w, "bucket"), ax_jw_str(w, p->dup[k].bucket);
            ax_jw_key(w, "samples"), ax_jw_int(w, p->dup[k].samples);
            ax_jw_key(w, "exact_match_rate"), ax_jw_num(w, p->dup[k].exact_match_rate);
            ax_jw_obj_end(w);
        }
        ax_jw_arr_end(w);
    }
    if (p->samples_file) {
        ax_jw_key(w, "samples_file"), ax_jw_str(w, p->samples_file);
        ax_jw_key(w, "top_samples");
        ax_jw_arr_begin(w);
        for (int k = 0; k < p->n_top; k++) {
            const ax_rep_sample *s = &p->top[k];
            ax_jw_obj_begin(w);
            ax_jw_key(w, "doc"), ax_jw_int(w, s->doc);
            ax_jw_key(w, "offset"), ax_jw_int(w, s->offset);
            ax_jw_key(w, "matched_prefix"), ax_jw_int(w, s->matched_prefix);
            ax_jw_key(w, "exact"), ax_jw_bool(w, s->exact);
            ax_jw_key(w, "token_accuracy"), ax_jw_num(w, s->token_accuracy);
            if (s->truth_text) ax_jw_key(w, "truth_text"), ax_jw_str(w, s->truth_text);
            if (s->generated_text) ax_jw_key(w, "generated_text"), ax_jw_str(w, s->generated_text);
            ax_jw_obj_end(w);
        }
        ax_jw_arr_end(w);
    }
    ax_jw_obj_end(w);
}

static void regurg(ax_jw *w, const ax_rep_regurg *g) {
    int64_t hit, total;
    ax_rep_regurg_counts(g, &hit, &total);
    ax_jw_obj_begin(w);
    ax_jw_key(w, "file"), ax_jw_str(w, g->file);
    ident(w, &g->id);
    ax_jw_key(w, "n"), ax_jw_int(w, g->n);
    ax_jw_key(w, "generations"), ax_jw_int(w, total);
    ax_jw_key(w, "with_verbatim_span"), ax_jw_int(w, hit);
    ax_jw_key(w, "length"), ax_jw_int(w, g->length);
    ax_jw_key(w, "frac_with_verbatim_span"), ax_jw_num(w, g->frac_span);
    ax_jw_key(w, "mean_longest_span"), ax_jw_num(w, g->mean_span);
    ax_jw_key(w, "max_longest_span"), ax_jw_int(w, g->max_span);
    ax_jw_key(w, "longest_span_hist");
    ax_jw_obj_begin(w);
    for (int k = 0; k < g->n_hist; k++) ax_jw_key(w, g->hist_labels[k]), ax_jw_int(w, g->hist[k]);
    ax_jw_obj_end(w);
    ax_jw_obj_end(w);
}

static void curve(ax_jw *w, const char *xk, const char *yk, const double *x, const double *y,
                  int64_t n) {
    int64_t stride = (n + CURVE_POINTS - 1) / CURVE_POINTS;
    if (stride < 1) stride = 1;
    ax_jw_obj_begin(w);
    ax_jw_key(w, "stride"), ax_jw_int(w, stride);
    for (int pass = 0; pass < 2; pass++) {
        const double *v = pass ? y : x;
        ax_jw_key(w, pass ? yk : xk);
        ax_jw_arr_begin(w);
        for (int64_t i = 0; i < n; i += stride) ax_jw_num(w, v[i]);
        if (n && (n - 1) % stride) ax_jw_num(w, v[n - 1]); /* keep the last point */
        ax_jw_arr_end(w);
    }
    ax_jw_obj_end(w);
}

static void train(ax_jw *w, const ax_rep_train *t) {
    ax_jw_obj_begin(w);
    ax_jw_key(w, "file"), ax_jw_str(w, t->file);
    ax_jw_key(w, "steps_logged"), ax_jw_int(w, t->n);
    if (t->n) {
        ax_jw_key(w, "final_step"), ax_jw_num(w, t->step[t->n - 1]);
        ax_jw_key(w, "final_loss"), ax_jw_num(w, t->loss[t->n - 1]);
    }
    if (t->n_val) {
        ax_jw_key(w, "final_val_step"), ax_jw_num(w, t->val_step[t->n_val - 1]);
        ax_jw_key(w, "final_val_loss"), ax_jw_num(w, t->val_loss[t->n_val - 1]);
    }
    ax_jw_key(w, "loss_curve");
    curve(w, "step", "loss", t->step, t->loss, t->n);
    ax_jw_key(w, "val_curve");
    curve(w, "step", "val_loss", t->val_step, t->val_loss, t->n_val);
    ax_jw_obj_end(w);
}

void ax_rep_write_json(const ax_report *r, ax_jw *w) {
    ax_jw_obj_begin(w);
    ax_jw_key(w, "schema"), ax_jw_str(w, "axmem-report");
    ax_jw_key(w, "version"), ax_jw_int(w, 1);
    ax_jw_key(w, "title"), ax_jw_str(w, r->title);
    ax_jw_key(w, "headline"), ax_jw_str(w, r->headline);
    /* redacted: no sample text anywhere (--redact or --text-chars 0); else top_samples carry
     * the full decoded text the samples file holds */
    ax_jw_key(w, "redacted"), ax_jw_bool(w, r->text_chars == 0);
    /* --show-text: HTML and Markdown quote memorized text, and canary secrets appear (here
     * too); without it no output holds a secret */
    ax_jw_key(w, "show_text"), ax_jw_bool(w, r->show_text);
    if (r->note) ax_jw_key(w, "note"), ax_jw_str(w, r->note);
    ax_jw_key(w, "runs");
    ax_jw_arr_begin(w);
    for (int i = 0; i < r->n_runs; i++) {
        const ax_rep_run *run = &r->runs[i];
        ax_jw_obj_begin(w);
        ax_jw_key(w, "label"), ax_jw_str(w, run->label);
        if (run->dir) ax_jw_key(w, "dir"), ax_jw_str(w, run->dir);
        if (ax_rep_run_ident(run)) ident(w, ax_rep_run_ident(run)); /* NULL: curves only */
        if (run->warning) ax_jw_key(w, "warning"), ax_jw_str(w, run->warning);
        ax_jw_key(w, "probe");
        run->probe ? probe(w, run->probe) : ax_jw_null(w);
        ax_jw_key(w, "regurgitation");
        run->regurg ? regurg(w, run->regurg) : ax_jw_null(w);
        ax_jw_key(w, "membership_inference");
        run->mia ? ax_rep_json_mia(w, run) : ax_jw_null(w);
        ax_jw_key(w, "canary_exposure");
        run->exposure ? ax_rep_json_exposure(w, run->exposure) : ax_jw_null(w);
        ax_jw_key(w, "training");
        run->train ? train(w, run->train) : ax_jw_null(w);
        ax_jw_key(w, "over_training"); /* memorization versus step; null without curves */
        ax_rep_json_curves(w, run);
        ax_jw_obj_end(w);
    }
    ax_jw_arr_end(w);
    ax_jw_key(w, "index");
    if (r->index) {
        const ax_rep_index *x = r->index;
        ax_jw_obj_begin(w);
        ax_jw_key(w, "file"), ax_jw_str(w, x->file);
        ax_jw_key(w, "n"), ax_jw_int(w, x->n);
        ax_jw_key(w, "windows"), ax_jw_int(w, x->windows);
        ax_jw_key(w, "distinct_windows"), ax_jw_int(w, x->distinct);
        ax_jw_key(w, "duplication_histogram");
        ax_jw_obj_begin(w);
        for (int k = 0; k < x->n_hist; k++) ax_jw_key(w, x->labels[k]), ax_jw_int(w, x->counts[k]);
        ax_jw_obj_end(w);
        ax_jw_obj_end(w);
    } else {
        ax_jw_null(w);
    }
    ax_jw_obj_end(w);
}
