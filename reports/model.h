/* The report's data: what the loaders read, what the sections build the document from; all of
 * it in the report's arena. Internal to reports/. */
#pragma once
#include <stdint.h>

#include "lib/core/json.h"
#include "lib/core/status.h"
#include "reports/arena.h"
#include "reports/report.h"

#define AX_REP_TOP 5 /* memorized samples listed per run */
/* bounds for values read from scan files (check.c): counts past 2^53 are not exact in JSON,
 * token lengths past 2^24 are far beyond any scan's flags */
#define AX_REP_MAX_COUNT 9007199254740992LL
#define AX_REP_MAX_TOKENS 16777216LL

typedef struct {
    double mean, lo, hi;
} ax_rep_stat;

typedef struct { /* checkpoint and dataset identity, as every scan file records it */
    char *ckpt_path, *goldfish, *ds_path, *ds_xxh3;
    int64_t step, ds_docs, ds_tokens;
} ax_rep_ident;

typedef struct {
    char *bucket;
    int64_t samples;
    double exact_match_rate;
} ax_rep_dup;

typedef struct {
    int64_t doc, offset, matched_prefix;
    int exact;
    double token_accuracy;
    char *truth_text, *generated_text; /* NULL unless the samples hold decoded text (and the
                                          report shows text) */
} ax_rep_sample;

typedef struct {
    char *file;
    ax_rep_ident id;
    int64_t prefix, suffix, n; /* n: documents probed */
    int64_t n_exact;           /* from samples.jsonl when present, else rate x n */
    ax_rep_stat exact, tok_acc, rouge_l;
    double mp_mean;
    int64_t *mp_hist; /* [n_mp_hist]: probes by matched-prefix length */
    int n_mp_hist;
    ax_rep_dup *dup; /* by_duplication table, n_dup rows (0: absent) */
    int n_dup;
    char *samples_file; /* NULL when no samples file was read */
    int64_t n_sample_rows;
    ax_rep_sample top[AX_REP_TOP];
    int n_top;
    /* the goldfish audit (metrics.goldfish_divergence; audited 0: the scan has none): probes
     * whose greedy output diverged, how many first diverged on a position the loss dropped,
     * and the dropped share of their suffix positions (that share by chance) */
    int audited;
    int64_t diverged, on_dropped;
    double dropped_fraction;
} ax_rep_probe;

typedef struct {
    char *file;
    ax_rep_ident id;
    int64_t n, samples, length; /* index window n, generations, tokens each */
    double frac_span, mean_span;
    int64_t max_span;
    char **hist_labels; /* longest_span_hist buckets, in file order */
    int64_t *hist;
    int n_hist;
    char *samples_file; /* verified against the scan's record; NULL when it records none */
} ax_rep_regurg;

/* memscan mia (mia.json): one row per score */
#define AX_REP_MIA_SCORES 8
#define AX_REP_MIA_FREE 4 /* model-free baselines */
/* A model-free score is flagged when its AUC is this far from 0.5 or its interval excludes 0.5
 * (memscan mia's rule, AX_MIA_FAR_AUC) */
#define AX_REP_MIA_FAR_AUC 0.1
typedef struct {
    char *name;                 /* "loss", "zlib", "min_k", "min_k_pp", "ref"; "zlib_bpb", ... */
    double auc, auc_lo, auc_hi; /* ROC AUC and its bootstrap 95% interval */
    /* TPR at 0.1% and 1% FPR; NaN where the scan's non-members cannot resolve the rate
     * (fewer than ax_rep_fpr_min_nonmembers), whatever the file holds */
    double tpr_0_1, tpr_1;
    double *fpr, *tpr; /* [n_roc]: the ROC curve, (0,0) to (1,1), non-decreasing */
    int n_roc;
} ax_rep_mia_score;

typedef struct {
    char *file;
    ax_rep_ident id;                  /* checkpoint; dataset = the member set */
    char *nonmembers_path, *ref_ckpt; /* ref_ckpt: NULL without --ref-ckpt */
    int64_t members, nonmembers, tokens_per_doc;
    int64_t zlib_level; /* config.zlib_level; 0: not recorded */
    ax_rep_mia_score score[AX_REP_MIA_SCORES];
    int n_score;
    /* the model-free baselines (model_free); has_free 0: the scan has no such block */
    ax_rep_mia_score free[AX_REP_MIA_FREE];
    int n_free, has_free;
    char *samples_file; /* verified against the scan's record */
} ax_rep_mia;

/* memscan exposure (exposure.json): the table by repeat count, and each canary from the
 * samples (its secret only when the report shows text) */
typedef struct {
    int64_t repeats, canaries, extracted; /* repeats 0: the "overall" row */
    double mean, median, min, max, extracted_share;
} ax_rep_exp_row;

typedef struct {
    int64_t id, repeats;
    double exposure;
    int extracted;
    char *secret, *generated_text; /* NULL unless --show-text */
} ax_rep_canary;

typedef struct {
    char *file, *format, *method;
    ax_rep_ident id;
    double space, max_exposure; /* |R| and log2 |R| */
    int64_t candidates;
    ax_rep_exp_row overall, *rows; /* rows: by repeat count, ascending */
    int n_rows;
    ax_rep_canary *canary; /* [n_canary], from the samples file (0: none recorded) */
    int64_t n_canary;
    char *samples_file;
} ax_rep_exposure;

typedef struct {
    char *file;
    int64_t n; /* training steps read */
    size_t cap, cap_val;
    double *step, *loss;
    int64_t n_val;
    double *val_step, *val_loss;
    /* DP-SGD runs: the privacy spent by the last row that records it ("epsilon" and "delta",
     * or "dp_epsilon" and "dp_delta"); has_dp 0: no row does */
    int has_dp;
    double epsilon, delta, eps_step;
} ax_rep_train;

/* RUN/study.json, which `axmem study` writes beside each mitigation's scans */
typedef struct {
    char *file, *mitigation, *kind; /* kind: none, goldfish, dedup, dp */
    int64_t train_docs, train_tokens, members, nonmembers, canaries, dedup_n;
    double eps_target, noise, delta, clip; /* dp: 0 where not given */
} ax_rep_study;

/* Memorization over training: one headline metric versus step (load_curves.c), from a curve
 * file of `memscan probe|mia|exposure --all-steps` (axmem-curve v1) or the scan records
 * `train --scan-every` appends to metrics.jsonl. Steps strictly ascend. */
enum {
    AX_REP_CURVE_PROBE,    /* probe.curve.json: exact-match rate, its interval, token accuracy */
    AX_REP_CURVE_TRAIN,    /* metrics.jsonl scan records: the same, probed inside training */
    AX_REP_CURVE_MIA,      /* mia.curve.json: AUC of one score, its bootstrap interval */
    AX_REP_CURVE_EXPOSURE, /* exposure.curve.json: mean exposure over all canaries (bits) */
    AX_REP_NCURVES
};
typedef struct {
    char *file;
    char *score; /* mia: the score plotted ("loss" when the curve has it, else the first) */
    int64_t n, n_skipped; /* n_skipped: checkpoints the scan could not open */
    size_t cap;
    double bound;                     /* exposure: the largest log2 |R| recorded; 0: none */
    double *step, *v, *lo, *hi, *tok; /* tok: token accuracy (probe, train); lo = hi = v for
                                         exposure, which has no interval */
} ax_rep_curve;

typedef struct {
    char *label, *dir;
    ax_rep_probe *probe;                 /* NULL when the run has no extraction probe */
    ax_rep_regurg *regurg;               /* NULL when it has no regurgitation scan */
    ax_rep_mia *mia;                     /* NULL without a membership-inference scan */
    ax_rep_exposure *exposure;           /* NULL without a canary-exposure scan */
    ax_rep_train *train;                 /* NULL without metrics.jsonl */
    ax_rep_study *study;                 /* NULL without study.json */
    ax_rep_curve *curve[AX_REP_NCURVES]; /* NULL: the run has no such curve */
    char *warning;                       /* e.g. the two scans name different checkpoints */
} ax_rep_run;

typedef struct {
    char *file;
    int64_t n, windows, distinct;
    char **labels;
    int64_t *counts;
    int n_hist;
} ax_rep_index;

typedef struct {
    ax_rep_run *runs;
    int n_runs;
    ax_rep_index *index; /* NULL without --index */
    ax_arena mem;        /* everything the report holds */
    int text_chars;      /* 0: no sample text in any output (--redact or --text-chars 0) */
    int show_text;       /* 1: HTML and Markdown quote memorized text and canary secrets
                            (--show-text); 0: they show none, and no secret is even loaded */
} ax_report;

/* load.c */
ax_status ax_rep_load(const ax_report_opts *o, ax_report *r);
void ax_rep_free(ax_report *r);
/* load_privacy.c: mia.json / exposure.json (kind membership-inference / canary-exposure) and
 * their samples files; v is the parsed scan, its header already checked */
ax_status ax_rep_parse_mia(ax_arena *a, const ax_json *v, const char *path, ax_rep_mia *m);
/* the fewest non-members that resolve a false positive rate: the smallest n with
 * floor(fpr n) >= 1 (memscan's ax_fpr_min_nonmembers) */
int64_t ax_rep_fpr_min_nonmembers(double fpr);
/* how far a model-free score's AUC is from chance: 2 (interval excludes 0.5), 1 (|AUC - 0.5| >=
 * AX_REP_MIA_FAR_AUC), 0 */
int ax_rep_mia_far(const ax_rep_mia_score *s);
ax_status ax_rep_parse_exposure(ax_arena *a, const ax_json *v, const char *path,
                                ax_rep_exposure *e);
/* e->samples_file: each canary, checked against the table; secrets kept only if asked */
ax_status ax_rep_read_exposure_samples(ax_arena *a, ax_rep_exposure *e, int keep_secrets);
/* load_curves.c: a parsed axmem-curve file into run->curve[its scan] (a second curve of one
 * scan for a run is an error); one metrics.jsonl row with "scan" into run->curve[TRAIN] */
ax_status ax_rep_parse_curve(ax_arena *a, const ax_json *v, const char *path, ax_rep_run *run);
ax_status ax_rep_scan_record(ax_arena *a, const ax_json *row, const char *what, const char *file,
                             ax_rep_run *run);
/* 1 if exact match at point i rose above the previous point's upper bound */
int ax_rep_curve_rising(const ax_rep_curve *c, int64_t i);
/* load_study.c: RUN/study.json */
ax_status ax_rep_parse_study(ax_arena *a, const ax_json *v, const char *path, ax_rep_study *s);
/* a run trained without a mitigation: its study record says none, or (none) its goldfish is
 * none */
int ax_rep_is_baseline(const ax_rep_run *run);
/* jsonget.c: getters shared by the loaders; failures name path and field */
ax_status ax_rep_nomem(void);
/* "the file was edited or damaged" with what is wrong (printf) and the command to rerun */
ax_status ax_rep_damaged(const char *path, const char *cmd, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
ax_status ax_rep_read_json(const char *path, ax_json **out);
ax_status ax_rep_get_obj(const ax_json *obj, const char *key, const char *path,
                         const ax_json **out);
/* obj.key = [lo, hi]: both in [min, max], lo <= hi (else damaged: rerun cmd; NULL: the command
 * that wrote it); field names it in messages */
ax_status ax_rep_get_pair(const ax_json *obj, const char *key, const char *field, double min,
                          double max, const char *cmd, const char *path, double out[2]);
/* obj.key = {"mean", "ci95": [lo, hi]}, a rate: all in [0, 1], lo <= mean <= hi; named sec.key */
ax_status ax_rep_get_rate(const ax_json *obj, const char *sec, const char *key, const char *path,
                          ax_rep_stat *s);
/* obj.key as a whole number in [lo, hi]; section names the object in messages ("" = top) */
ax_status ax_rep_get_int(const ax_json *obj, const char *section, const char *key, int64_t lo,
                         int64_t hi, const char *path, int64_t *out);
ax_status ax_rep_opt_int(const ax_json *obj, const char *section, const char *key, int64_t lo,
                         int64_t hi, int64_t dflt, const char *path, int64_t *out);
/* obj.key as a finite number in [lo, hi] */
ax_status ax_rep_get_in(const ax_json *obj, const char *section, const char *key, double lo,
                        double hi, const char *path, double *out);
ax_status ax_rep_opt_typed(const ax_json *obj, const char *key, ax_json_type t, const char *path,
                           const char *field, const ax_json **out);
/* schema "axmem-scan" v1; the kind and the checkpoint / dataset identity */
ax_status ax_rep_scan_header(ax_arena *a, const ax_json *v, const char *path, const char **kind,
                             ax_rep_ident *id);
typedef ax_status (*ax_rep_line_fn)(const ax_json *row, const char *what, void *ctx);
/* fn on each non-blank line of a JSONL file; errors name "path line N" */
ax_status ax_rep_each_jsonl(const char *path, ax_rep_line_fn fn, void *ctx);
/* check.c: domain checks; failures name path and field and say the file was edited or damaged */
ax_status ax_rep_check_num(double v, double lo, double hi, const char *path, const char *field);
/* x must be a whole number in [lo, hi] (missing or another type is an error too) */
ax_status ax_rep_check_int(const ax_json *x, int64_t lo, int64_t hi, const char *path,
                           const char *field, int64_t *out);
/* mean and both interval ends in [lo, hi], and the interval brackets the mean */
ax_status ax_rep_check_stat(const ax_rep_stat *s, double lo, double hi, const char *path,
                            const char *field);
/* a <= b, e.g. a count against its total */
ax_status ax_rep_check_le(int64_t a, const char *fa, int64_t b, const char *fb, const char *path);
/* samples_rec.c: the samples file a scan JSON records ("samples" block) */
typedef struct {
    char *path; /* resolved against the scan JSON's folder; NULL: the scan records none */
    int64_t bytes, lines;
    uint64_t xxh3;
} ax_rep_samples_rec;
ax_status ax_rep_samples_rec_read(ax_arena *a, const ax_json *scan, const char *scan_path,
                                  ax_rep_samples_rec *rec);
/* the file exists and matches the record; errors name both files */
ax_status ax_rep_samples_rec_verify(const ax_rep_samples_rec *rec, const char *scan_path);
/* the run's identity: from its probe, else its regurgitation scan; NULL if neither */
const ax_rep_ident *ax_rep_run_ident(const ax_rep_run *run);
/* generations with a verbatim span, out of total */
void ax_rep_regurg_counts(const ax_rep_regurg *g, int64_t *hit, int64_t *total);
