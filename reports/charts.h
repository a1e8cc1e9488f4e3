/* The report's charts as inline SVG. Each returns 1 if it drew (0: no data for it). */
#pragma once
#include "reports/buf.h"
#include "reports/model.h"

int ax_rep_chart_exact(const ax_report *r, ax_rep_buf *b);  /* exact match per run, CI */
int ax_rep_chart_prefix(const ax_report *r, ax_rep_buf *b); /* matched-prefix histograms */
int ax_rep_chart_spans(const ax_report *r, ax_rep_buf *b);  /* longest-span histograms */
int ax_rep_chart_loss(const ax_report *r, ax_rep_buf *b);   /* loss curves, val points */
int ax_rep_chart_dup(const ax_report *r, ax_rep_buf *b);    /* index duplication histogram */
/* charts_privacy.c */
int ax_rep_chart_roc(const ax_rep_run *run, ax_rep_buf *b);    /* the run's ROC curves, log-log */
int ax_rep_chart_exposure(const ax_report *r, ax_rep_buf *b);  /* exposure vs repeats, all runs */
int ax_rep_chart_dup_exact(const ax_report *r, ax_rep_buf *b); /* exact match by duplication */
/* 1 if the positive values span two orders of magnitude or more (then counts go on a log axis) */
int ax_rep_spans_decades(const double *v, int n);
/* charts_curves.c: one metric versus training step, a line per run and curve: k =
 * AX_REP_CURVE_PROBE draws extraction (the probe curves and train --scan-every records) with
 * its 95% interval band, AX_REP_CURVE_MIA the AUC, AX_REP_CURVE_EXPOSURE the mean exposure */
int ax_rep_chart_curve(const ax_report *r, int k, ax_rep_buf *b);
