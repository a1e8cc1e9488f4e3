/* Inline SVG charts for the HTML report: grouped bars (with optional CI whiskers) and lines
 * (with optional point markers). Self-contained markup, no scripts, fixed palette. */
#pragma once
#include <stdint.h>

#include "reports/buf.h"

typedef struct {
    const char *title, *xlabel, *ylabel;
    int n_cat, n_series;
    const char *const *cats;   /* category labels, n_cat */
    const char *const *series; /* legend entries, n_series (no legend when 1) */
    const double *v;           /* bar heights, v[s * n_cat + c] */
    const double *lo, *hi;     /* whisker ends, same layout, or NULL */
    double ymax;               /* top of the y axis; 0: from the data */
    int percent;               /* label the y axis in % (values are fractions) */
    int color_by_cat;          /* one series: colour each category's bar like its run */
} ax_svg_bars;

typedef struct {
    const char *name;
    int64_t n; /* line points */
    const double *x, *y;
    int64_t n_pts; /* marker points (e.g. validation loss) */
    const double *px, *py;
} ax_svg_line;

/* the i-th series colour (shared with the HTML legend swatches) */
const char *ax_svg_color(int i);
void ax_svg_bar_chart(ax_rep_buf *b, const ax_svg_bars *c);
void ax_svg_line_chart(ax_rep_buf *b, const char *title, const char *xlabel, const char *ylabel,
                       const ax_svg_line *s, int n);
