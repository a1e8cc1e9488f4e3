/* x/y charts with linear or logarithmic axes: ROC curves on log-log axes (the low-FPR end is
 * what matters for membership inference), exposure against a log2 repeat count. */
#include "reports/svg.h"

#include <math.h>
#include <stdio.h>

enum { W = AX_SVG_W, H = AX_SVG_H, ML = AX_SVG_ML, MR = AX_SVG_MR, MT = AX_SVG_MT, MB = AX_SVG_MB };

typedef struct {
    int base;      /* 0: linear */
    double t0, t1; /* the axis range, in log_base units on a log axis */
} axis;

static double to_axis(const axis *a, double v) {
    if (!a->base) return v;
    double lo = pow(a->base, a->t0);
    return log(v < lo ? lo : v) / log(a->base); /* 0 and below: drawn at the axis start */
}

/* the fraction of the axis' length at which v lies, clamped to [0, 1] */
static double frac(const axis *a, double v) {
    double f = (to_axis(a, v) - a->t0) / (a->t1 - a->t0);
    return f < 0 ? 0 : f > 1 ? 1 : f;
}

#define PX(v) (ML + frac(&ax, (v)) * pw)
#define PY(v) (MT + ph - frac(&ay, (v)) * ph)

static void tick_label(ax_rep_buf *b, double v, int percent) {
    if (percent)
        ax_rep_printf(b, "%g%%", v * 100);
    else
        ax_rep_printf(b, "%g", v);
}

/* tick values: powers of the base on a log axis, a 1-2-5 step on a linear one */
static int ticks(const axis *a, double *t, int max) {
    int n = 0;
    if (a->base) {
        for (double e = ceil(a->t0 - 1e-9); e <= a->t1 + 1e-9 && n < max; e += 1)
            t[n++] = pow(a->base, e);
    } else {
        double step = ax_svg_nice_step(a->t1 - a->t0);
        for (double v = ceil(a->t0 / step) * step; v <= a->t1 + step * 1e-9 && n < max; v += step)
            t[n++] = v;
    }
    return n;
}

static axis make_axis(int base, double v0, double v1) {
    axis a = {base, v0, v1};
    if (base) {
        a.t0 = log(v0 > 0 ? v0 : 1e-300) / log(base);
        a.t1 = log(v1 > 0 ? v1 : 1) / log(base);
    }
    if (!(a.t1 > a.t0)) a.t1 = a.t0 + 1;
    return a;
}

void ax_svg_xy_chart(ax_rep_buf *b, const ax_svg_xy *c) {
    axis ax = make_axis(c->xlog, c->x0, c->x1), ay = make_axis(c->ylog, c->y0, c->y1);
    double pw = W - ML - MR, ph = H - MT - MB, t[64];
    ax_svg_open(b, c->title);
    int nt = ticks(&ay, t, 64);
    for (int i = 0; i < nt; i++) {
        double y = PY(t[i]);
        ax_rep_printf(b, "<line x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" class=\"grid\"/>", ML,
                      W - MR, y, y);
        ax_rep_printf(b, "<text x=\"%d\" y=\"%.1f\" class=\"yl\">", ML - 6, y + 4);
        tick_label(b, t[i], c->percent_y);
        ax_rep_puts(b, "</text>");
    }
    nt = ticks(&ax, t, 64);
    for (int i = 0; i < nt; i++) {
        double x = PX(t[i]);
        ax_rep_printf(b, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%d\" class=\"grid\"/>", x, x,
                      MT, H - MB);
        ax_rep_printf(b, "<text x=\"%.1f\" y=\"%d\" class=\"xl\">", x, H - MB + 16);
        tick_label(b, t[i], c->percent_x);
        ax_rep_puts(b, "</text>");
    }
    ax_rep_printf(b, "<text transform=\"translate(14 %d) rotate(-90)\" class=\"al\">", MT + H / 3);
    ax_rep_html(b, c->ylabel);
    ax_rep_printf(b, "</text><path d=\"M%d %dV%dH%d\" class=\"axis\" fill=\"none\"/>", ML, MT,
                  H - MB, W - MR);
    if (c->diagonal) { /* y = x over the common range: a straight line on equal axes */
        double lo = fmax(c->x0, c->y0), hi = fmin(c->x1, c->y1);
        ax_rep_printf(b,
                      "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#888\" "
                      "stroke-dasharray=\"5 4\" class=\"chance\"><title>chance (random "
                      "guess)</title></line>",
                      PX(lo), PY(lo), PX(hi), PY(hi));
    }
    for (int i = 0; i < c->n_vline && i < 4; i++)
        ax_rep_printf(b,
                      "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%d\" stroke=\"#bbb\" "
                      "stroke-dasharray=\"2 3\"/>",
                      PX(c->vline[i]), PX(c->vline[i]), MT, H - MB);
    if (c->hline_label) {
        double y = PY(c->hline);
        ax_rep_printf(b,
                      "<line x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#444\" "
                      "stroke-dasharray=\"6 4\" class=\"maxline\"/><text x=\"%d\" y=\"%.1f\" "
                      "class=\"lg\">",
                      ML, W - MR, y, y, ML + 6, y - 5);
        ax_rep_html(b, c->hline_label);
        ax_rep_puts(b, "</text>");
    }
    const char *names[8];
    int nn = 0;
    for (int k = 0; k < c->n; k++) {
        const ax_svg_xy_series *s = &c->s[k];
        if (s->n && s->lo && s->hi) { /* the interval band: along hi, back along lo */
            ax_rep_printf(b,
                          "<polygon class=\"band\" fill=\"%s\" fill-opacity=\"0.18\" "
                          "stroke=\"none\" points=\"",
                          ax_svg_color(k));
            for (int i = 0; i < s->n; i++)
                ax_rep_printf(b, "%.1f,%.1f ", PX(s->x[i]), PY(s->hi[i]));
            for (int i = s->n - 1; i >= 0; i--)
                ax_rep_printf(b, "%.1f,%.1f ", PX(s->x[i]), PY(s->lo[i]));
            ax_rep_puts(b, "\"><title>");
            ax_rep_html(b, s->name);
            ax_rep_puts(b, ": 95% interval</title></polygon>");
        }
        if (s->n) {
            ax_rep_printf(b, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.8\" points=\"",
                          ax_svg_color(k));
            for (int i = 0; i < s->n; i++) ax_rep_printf(b, "%.1f,%.1f ", PX(s->x[i]), PY(s->y[i]));
            ax_rep_puts(b, "\"><title>");
            ax_rep_html(b, s->name);
            ax_rep_puts(b, "</title></polyline>");
        }
        for (int i = 0; i < s->n_pts; i++) {
            ax_rep_printf(b,
                          "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"white\" stroke=\"%s\" "
                          "stroke-width=\"1.4\"><title>",
                          PX(s->px[i]), PY(s->py[i]), ax_svg_color(k));
            ax_rep_html(b, s->name);
            ax_rep_printf(b, ": %g, %.3g</title></circle>", s->px[i], s->py[i]);
        }
        if (nn < 8) names[nn++] = s->name;
    }
    ax_svg_x_label(b, c->xlabel);
    if (c->n > 1) ax_svg_legend(b, names, nn);
    ax_rep_puts(b, "</svg>\n");
}
