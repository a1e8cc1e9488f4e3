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
    int logy;                  /* logarithmic y axis (counts spanning orders of magnitude):
                                  decades from the smallest positive value; 0 draws no bar */
} ax_svg_bars;

typedef struct {
    const char *name;
    int64_t n; /* line points */
    const double *x, *y;
    int64_t n_pts; /* marker points (e.g. validation loss) */
    const double *px, *py;
} ax_svg_line;

/* the plot area: a W x H view box, margins left, right, top, bottom */
enum {
    AX_SVG_W = 720,
    AX_SVG_H = 320,
    AX_SVG_ML = 64,
    AX_SVG_MR = 16,
    AX_SVG_MT = 52,
    AX_SVG_MB = 52
};

/* x/y plot with linear or logarithmic axes (svg_xy.c): lines and markers per series, the
 * i-th series in the i-th colour, optional reference lines */
typedef struct {
    const char *name;
    int n; /* line vertices */
    const double *x, *y;
    int n_pts; /* markers (hollow circles) */
    const double *px, *py;
    const double *lo, *hi; /* non-NULL: a shaded band from lo to hi under the line (an
                              interval at each of the n line vertices) */
} ax_svg_xy_series;

typedef struct {
    const char *title, *xlabel, *ylabel;
    int xlog, ylog;        /* 0: linear axis; 2 or 10: logarithmic, ticks at powers of it */
    double x0, x1, y0, y1; /* axis ranges in data units (> 0 on a log axis); values outside
                              are drawn at the nearest edge */
    const ax_svg_xy_series *s;
    int n;
    int diagonal;    /* dashed y = x: a ROC curve's chance line */
    double vline[4]; /* dotted verticals (e.g. FPR 0.1% and 1%), n_vline of them */
    int n_vline;
    const char *hline_label; /* non-NULL: a dashed horizontal line at hline, labelled */
    double hline;
    int percent_x, percent_y; /* label ticks in % (values are fractions) */
} ax_svg_xy;
void ax_svg_xy_chart(ax_rep_buf *b, const ax_svg_xy *c);

/* shared by the chart kinds */
double ax_svg_nice_step(double top); /* a 1-2-5 step giving about five ticks over [0, top] */
void ax_svg_open(ax_rep_buf *b, const char *title);
void ax_svg_x_label(ax_rep_buf *b, const char *xlabel);
void ax_svg_legend(ax_rep_buf *b, const char *const *names, int n);

/* the i-th series colour (shared with the HTML legend swatches) */
const char *ax_svg_color(int i);
void ax_svg_bar_chart(ax_rep_buf *b, const ax_svg_bars *c);
void ax_svg_line_chart(ax_rep_buf *b, const char *title, const char *xlabel, const char *ylabel,
                       const ax_svg_line *s, int n);
