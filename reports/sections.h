/* The report's sections, each built once into the document from the loaded scans; the
 * renderers (doc.h) turn the document into HTML, Markdown and JSON. */
#pragma once
#include "reports/doc.h"
#include "reports/model.h"

/* The summary, first: the headline (the conclusion, then each run's numbers), the notes that
 * qualify it, intro (NULL: none) and the key numbers with a column per run. The demo's
 * summary.md is this section alone. */
void ax_rep_section_summary(ax_doc *d, const ax_report *r, const char *intro);
/* mitigations compared (runs of `axmem study`, with study.json; none: no section): leakage
 * against held-out loss per mitigation, the privacy guarantee, trade-off charts */
void ax_rep_section_compare(ax_doc *d, const ax_report *r);
/* extraction (exact match, by duplication, matched prefix, most memorized samples), the
 * goldfish audit, regurgitation */
void ax_rep_section_probe(ax_doc *d, const ax_report *r);
/* membership inference (scores, model-free baselines, ROC curves), canary exposure */
void ax_rep_section_privacy(ax_doc *d, const ax_report *r);
/* memorization over training, training loss, each run's checkpoint and data, the training
 * set's duplication */
void ax_rep_section_training(ax_doc *d, const ax_report *r);

/* shared by the sections */
/* the reader's name of a membership score ("min_k_pp" -> "min-k%++"); unknown ids as they are */
const char *ax_rep_score_name(const char *id);
const ax_rep_mia_score *ax_rep_strongest(const ax_rep_mia *m); /* highest AUC */
/* a facts table (label / value rows) and one row of it */
ax_doc_table *ax_rep_facts(ax_doc *d, const char *id);
void ax_rep_fact(ax_doc *d, ax_doc_table *t, const char *label, ax_doc_cell v);
/* a part for one run ("LABEL: what", id KIND-LABEL) opening with its facts table, whose first
 * row is the scan's file (none when file is NULL) */
ax_doc_table *ax_rep_run_part(ax_doc *d, const ax_rep_run *run, const char *kind, const char *what,
                              const char *file);
/* the y axis of bars counting things: logarithmic when the positive values span two orders
 * of magnitude (then from half a decade under the smallest), else linear from 0 */
void ax_rep_count_axis(ax_doc_chart *c);
/* a bar chart over n categories with one series per name, its values zeroed; NULL on OOM */
ax_doc_chart *ax_rep_bars(ax_doc *d, const char *id, const char *title, int n_cat,
                          const char *const *names, int n_series);
