/* The summary table's cells, shared by the HTML and Markdown writers so they agree. Cells are
 * plain text; each writer escapes them. "-" marks data the run does not have. */
#pragma once
#include "reports/model.h"

#define AX_REP_NCOLS 11
#define AX_REP_CELL 256
extern const char *const ax_rep_cols[AX_REP_NCOLS];
void ax_rep_summary_cells(const ax_rep_run *run, char cells[AX_REP_NCOLS][AX_REP_CELL]);
/* "100.0% (95% CI 100.0-100.0%)"-style text for a rate */
void ax_rep_fmt_rate(char *dst, size_t n, const ax_rep_stat *s);
