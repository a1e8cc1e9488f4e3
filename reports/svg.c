/* Draws a chart in a W x H view box: grid and tick labels, then bars (with whiskers and value
 * labels above them) or lines (with interval bands and markers), reference lines. Log axes
 * serve ROC curves (the low-FPR end matters) and repeat counts; values outside an axis are
 * drawn at its nearest end. */
#include "reports/svg.h"

#include <math.h>
#include <stdio.h>

/* Okabe-Ito: distinguishable with the common colour-vision deficiencies */
static const char *palette[] = {"#0072B2", "#D55E00", "#009E73", "#CC79A7",
                                "#E69F00", "#56B4E9", "#000000", "#F0E442"};

const char *ax_svg_color(int i) {
    return palette[i % 8];
}

enum { W = 720, H = 300, ML = 64, MR = 16, MT = 24, MB = 52, PW = W - ML - MR, PH = H - MT - MB };

typedef struct {
    int base;      /* 0: linear */
    double t0, t1; /* the range, in log_base units on a log axis */
} axis;

static axis make_axis(int base, double v0, double v1) {
    axis a = {base, v0, v1};
    if (base) a.t0 = log(v0 > 0 ? v0 : 1e-300) / log(base), a.t1 = log(v1 > 0 ? v1 : 1) / log(base);
    if (!(a.t1 > a.t0)) a.t1 = a.t0 + 1;
    return a;
}

/* where v lies along the axis, 0 to 1 (clamped; 0 and below are the start of a log axis) */
static double frac(const axis *a, double v) {
    if (a->base) v = log(v > pow(a->base, a->t0) ? v : pow(a->base, a->t0)) / log(a->base);
    double f = (v - a->t0) / (a->t1 - a->t0);
    return f < 0 ? 0 : f > 1 ? 1 : f;
}

/* powers of the base on a log axis, a 1-2-5 step on a linear one */
static int ticks(const axis *a, double *t, int max) {
    int n = 0;
    if (a->base) {
        for (double e = ceil(a->t0 - 1e-9); e <= a->t1 + 1e-9 && n < max; e += 1)
            t[n++] = pow(a->base, e);
        return n;
    }
    double step = ax_doc_axis_step(a->t1 - a->t0);
    for (double v = ceil(a->t0 / step - 1e-9) * step; v <= a->t1 + step * 1e-9 && n < max;
         v += step)
        t[n++] = fabs(v) < step * 1e-9 ? 0 : v;
    return n;
}

static void tick_label(ax_rep_buf *b, double v, int percent) {
    ax_rep_printf(b, percent ? "%g%%" : "%g", percent ? v * 100 : v);
}

#define PX(v) (ML + frac(&ax, (v)) * PW)
#define PY(v) (MT + PH - frac(&ay, (v)) * PH)

static void grid(ax_rep_buf *b, const ax_doc_chart *c, const axis *pay, const axis *pax) {
    axis ay = *pay, ax = pax ? *pax : make_axis(0, 0, 1);
    double t[64];
    int nt = ticks(&ay, t, 64);
    for (int i = 0; i < nt; i++) {
        ax_rep_printf(b, "<line x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" class=\"grid\"/>", ML,
                      W - MR, PY(t[i]), PY(t[i]));
        ax_rep_printf(b, "<text x=\"%d\" y=\"%.1f\" class=\"yl\">", ML - 6, PY(t[i]) + 4);
        tick_label(b, t[i], c->percent_y);
        ax_rep_puts(b, "</text>");
    }
    nt = pax ? ticks(&ax, t, 64) : 0;
    for (int i = 0; i < nt; i++) {
        ax_rep_printf(b, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%d\" class=\"grid\"/>",
                      PX(t[i]), PX(t[i]), MT, H - MB);
        ax_rep_printf(b, "<text x=\"%.1f\" y=\"%d\" class=\"xl\">", PX(t[i]), H - MB + 16);
        tick_label(b, t[i], c->percent_x);
        ax_rep_puts(b, "</text>");
    }
    ax_rep_printf(b, "<text transform=\"translate(14 %d) rotate(-90)\" class=\"al\">", MT + PH / 2);
    ax_rep_html(b, c->ylabel);
    ax_rep_printf(b, "</text><text x=\"%d\" y=\"%d\" class=\"al\">", ML + PW / 2, H - 8);
    ax_rep_html(b, c->xlabel);
    ax_rep_printf(b, "</text><path d=\"M%d %dV%dH%d\" class=\"axis\" fill=\"none\"/>", ML, MT,
                  H - MB, W - MR);
}

static void bars(ax_rep_buf *b, const ax_doc_chart *c) {
    axis ay = make_axis(c->ylog, c->y0, c->y1);
    grid(b, c, &ay, NULL);
    double slot = (double)PW / c->n_cat, bw = slot * 0.8 / c->n_series;
    if (bw > 90) bw = 90; /* a few wide slots: keep bars bar-shaped, centred in the slot */
    int every = c->n_cat > 24 ? (c->n_cat + 23) / 24 : 1; /* labels that do not overlap */
    for (int k = 0; k < c->n_cat; k++) {
        double x0 = ML + slot * (k + 0.5) - bw * c->n_series / 2;
        for (int s = 0; s < c->n_series; s++) {
            const ax_doc_series *se = &c->s[s];
            double v = se->y[k], top = PY(v), x = x0 + bw * s;
            ax_rep_printf(b,
                          "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
                          "fill=\"%s\"><title>",
                          x, top, bw > 1.5 ? bw - 0.5 : bw, MT + PH - top,
                          ax_svg_color(c->color_by_cat ? k : s));
            ax_rep_html(b, c->n_series > 1 ? se->name : c->cats[k]);
            if (c->n_series > 1) ax_rep_puts(b, " "), ax_rep_html(b, c->cats[k]);
            ax_rep_printf(b, c->percent_y ? ": %.1f%%" : ": %g", c->percent_y ? v * 100 : v);
            ax_rep_puts(b, "</title></rect>");
            if (se->lo && se->hi) { /* the interval's whisker */
                double xm = x + bw / 2, cap = bw / 4 < 8 ? bw / 4 : 8;
                double ylo = PY(se->lo[k]), yhi = PY(se->hi[k]);
                ax_rep_printf(b,
                              "<path d=\"M%.1f %.1fV%.1fM%.1f %.1fH%.1fM%.1f %.1fH%.1f\" "
                              "class=\"ci\"/>",
                              xm, ylo, yhi, xm - cap, ylo, xm + cap, xm - cap, yhi, xm + cap);
                top = fmin(top, yhi);
            }
            if (c->percent_y && c->n_cat * c->n_series <= 12) /* the value, above its whisker */
                ax_rep_printf(b, "<text x=\"%.1f\" y=\"%.1f\" class=\"bv\">%.0f%%</text>",
                              x + bw / 2, top - 7, v * 100);
        }
        if (k % every == 0) {
            ax_rep_printf(b, "<text x=\"%.1f\" y=\"%d\" class=\"xl\">", ML + slot * (k + 0.5),
                          H - MB + 16);
            ax_rep_html(b, c->cats[k]);
            ax_rep_puts(b, "</text>");
        }
    }
}

static void lines(ax_rep_buf *b, const ax_doc_chart *c) {
    axis ax = make_axis(c->xlog, c->x0, c->x1), ay = make_axis(c->ylog, c->y0, c->y1);
    grid(b, c, &ay, &ax);
    if (c->diagonal) { /* y = x over the common range: straight on equal axes */
        double lo = fmax(c->x0, c->y0), hi = fmin(c->x1, c->y1);
        ax_rep_printf(b,
                      "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#888\" "
                      "stroke-dasharray=\"5 4\" class=\"chance\"><title>chance (random "
                      "guess)</title></line>",
                      PX(lo), PY(lo), PX(hi), PY(hi));
    }
    for (int i = 0; i < c->n_vline; i++)
        ax_rep_printf(b,
                      "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%d\" stroke=\"#bbb\" "
                      "stroke-dasharray=\"2 3\"/>",
                      PX(c->vline[i]), PX(c->vline[i]), MT, H - MB);
    if (c->hline_label) {
        double y = PY(c->hline);
        ax_rep_printf(b,
                      "<line x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#444\" "
                      "stroke-dasharray=\"6 4\" class=\"maxline\"/><text x=\"%d\" y=\"%.1f\" "
                      "class=\"ref\">",
                      ML, W - MR, y, y, ML + 6, y - 7);
        ax_rep_html(b, c->hline_label);
        ax_rep_puts(b, "</text>");
    }
    for (int k = 0; k < c->n_series; k++) {
        const ax_doc_series *s = &c->s[k];
        const char *col = ax_svg_color(k);
        /* runs side by side at one repeat count: each nudged a little along the log axis */
        double nudge = c->dodge && c->n_series > 1 && c->xlog
                           ? pow(c->xlog, 0.12 * ((double)k - (c->n_series - 1) / 2.0))
                           : 1;
        if (s->n && s->lo && s->hi) { /* the interval band: along hi, back along lo */
            ax_rep_printf(b, "<polygon class=\"band\" fill=\"%s\" fill-opacity=\"0.18\" points=\"",
                          col);
            for (int i = 0; i < s->n; i++)
                ax_rep_printf(b, "%.1f,%.1f ", PX(s->x[i] * nudge), PY(s->hi[i]));
            for (int i = s->n - 1; i >= 0; i--)
                ax_rep_printf(b, "%.1f,%.1f ", PX(s->x[i] * nudge), PY(s->lo[i]));
            ax_rep_puts(b, "\"><title>");
            ax_rep_html(b, s->name);
            ax_rep_puts(b, ": 95% interval</title></polygon>");
        }
        if (s->n) {
            ax_rep_printf(b, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.8\" points=\"",
                          col);
            for (int i = 0; i < s->n; i++)
                ax_rep_printf(b, "%.1f,%.1f ", PX(s->x[i] * nudge), PY(s->y[i]));
            ax_rep_puts(b, "\"><title>");
            ax_rep_html(b, s->name);
            ax_rep_puts(b, "</title></polyline>");
        }
        for (int i = 0; i < s->n_pts; i++) {
            if (s->plo && s->phi) { /* the marker's interval */
                double xm = PX(s->px[i] * nudge), ylo = PY(s->plo[i]), yhi = PY(s->phi[i]);
                ax_rep_printf(b,
                              "<path d=\"M%.1f %.1fV%.1fM%.1f %.1fH%.1fM%.1f %.1fH%.1f\" "
                              "stroke=\"%s\" stroke-width=\"1.5\" fill=\"none\"/>",
                              xm, ylo, yhi, xm - 5, ylo, xm + 5, xm - 5, yhi, xm + 5, col);
            }
            ax_rep_printf(b,
                          "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"white\" stroke=\"%s\" "
                          "stroke-width=\"1.4\"><title>",
                          PX(s->px[i] * nudge), PY(s->py[i]), col);
            ax_rep_html(b, s->name);
            ax_rep_printf(b, ": %g, %.3g</title></circle>", s->px[i], s->py[i]);
        }
    }
}

void ax_svg_chart(ax_rep_buf *b, const ax_doc_chart *c) {
    ax_rep_printf(b,
                  "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 %d %d\" role=\"img\" "
                  "class=\"chart\"><title>",
                  W, H);
    ax_rep_html(b, c->title);
    ax_rep_puts(b, "</title>");
    (c->bars ? bars : lines)(b, c);
    ax_rep_puts(b, "</svg>\n");
}
