/* The report's charts as inline SVG. Each returns 1 if it drew (0: no data for it). */
#pragma once
#include "reports/buf.h"
#include "reports/model.h"

int ax_rep_chart_exact(const ax_report *r, ax_rep_buf *b);  /* exact match per run, CI */
int ax_rep_chart_prefix(const ax_report *r, ax_rep_buf *b); /* matched-prefix histograms */
int ax_rep_chart_spans(const ax_report *r, ax_rep_buf *b);  /* longest-span histograms */
int ax_rep_chart_loss(const ax_report *r, ax_rep_buf *b);   /* loss curves, val points */
int ax_rep_chart_dup(const ax_report *r, ax_rep_buf *b);    /* index duplication histogram */
