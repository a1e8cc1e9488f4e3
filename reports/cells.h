/* The summary table's cells, shared by the HTML and Markdown writers so they agree. Cells are
 * plain text; each writer escapes them. "-" marks data the run does not have. */
#pragma once
#include "reports/model.h"

#define AX_REP_NCOLS 13
#define AX_REP_CELL 256
extern const char *const ax_rep_cols[AX_REP_NCOLS];
void ax_rep_summary_cells(const ax_rep_run *run, char cells[AX_REP_NCOLS][AX_REP_CELL]);
/* "100.0% (95% CI 100.0-100.0%)"-style text for a rate */
void ax_rep_fmt_rate(char *dst, size_t n, const ax_rep_stat *s);

/* cells_privacy.c: the membership-inference table (one row per run and score) and the exposure
 * table (one row per run and repeat count, then the run's "all" row) */
#define AX_REP_MIA_NCOLS 7
#define AX_REP_EXP_NCOLS 7
#define AX_REP_TOP_CANARIES 5
extern const char *const ax_rep_mia_cols[AX_REP_MIA_NCOLS];
extern const char *const ax_rep_exp_cols[AX_REP_EXP_NCOLS];
/* "min_k_pp" -> "min-k%++", "length" -> "length in tokens (model-free)" etc.; unknown names as
 * they are */
const char *ax_rep_score_desc(const char *name);
/* s: one of run->mia->score or ->free; a TPR the non-members cannot resolve is "n/a" */
void ax_rep_mia_cells(const ax_rep_run *run, const ax_rep_mia_score *s, char c[][AX_REP_CELL]);
/* The sentences under the membership-inference table, for run (0 when it has none to say):
 * the warning of model-free score k (ax_rep_mia_far > 0); why a TPR is n/a; that the scan has
 * no model-free baseline. */
#define AX_REP_NOTE 1024
int ax_rep_mia_warning(const ax_rep_run *run, int k, char *buf, size_t n);
int ax_rep_mia_tpr_note(const ax_rep_run *run, char *buf, size_t n);
int ax_rep_mia_no_baseline(const ax_rep_run *run, char *buf, size_t n);
/* row: one of run->exposure->rows, or &run->exposure->overall */
void ax_rep_exp_cells(const ax_rep_run *run, const ax_rep_exp_row *row, char c[][AX_REP_CELL]);
/* the indexes of the (up to max) most exposed canaries into idx; -1 on OOM */
int ax_rep_top_canaries(const ax_rep_exposure *e, int64_t *idx, int max);

/* cells_curves.c: memorization over training, one row per step of a run's extraction curve
 * (memscan probe --all-steps, or train --scan-every records) */
#define AX_REP_CURVE_NCOLS 7
extern const char *const ax_rep_curve_cols[AX_REP_CURVE_NCOLS];
/* k: AX_REP_CURVE_PROBE or AX_REP_CURVE_TRAIN; i: the point */
void ax_rep_curve_cells(const ax_rep_run *run, int k, int64_t i, char c[][AX_REP_CELL]);
/* "memscan probe --all-steps" etc.: where a curve came from */
const char *ax_rep_curve_source(int k);
/* 1 if any run has any curve */
int ax_rep_any_curve(const ax_report *r);
