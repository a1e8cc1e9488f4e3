#include "reports/svg.h"

#include <math.h>
#include <stdio.h>

/* Okabe-Ito: distinguishable with the common colour-vision deficiencies */
static const char *palette[] = {"#0072B2", "#D55E00", "#009E73", "#CC79A7",
                                "#E69F00", "#56B4E9", "#000000", "#F0E442"};

const char *ax_svg_color(int i) {
    return palette[i % 8];
}

enum { W = AX_SVG_W, H = AX_SVG_H, ML = AX_SVG_ML, MR = AX_SVG_MR, MT = AX_SVG_MT, MB = AX_SVG_MB };

/* a 1-2-5 step giving about five ticks over [0, top] */
double ax_svg_nice_step(double top) {
    if (!(top > 0)) return 1;
    double raw = top / 5, mag = pow(10, floor(log10(raw))), f = raw / mag;
    return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * mag;
}

void ax_svg_open(ax_rep_buf *b, const char *title) {
    ax_rep_printf(b,
                  "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 %d %d\" role=\"img\" "
                  "class=\"chart\"><title>",
                  W, H);
    ax_rep_html(b, title);
    ax_rep_printf(b, "</title><text x=\"%d\" y=\"20\" class=\"ct\">", ML);
    ax_rep_html(b, title);
    ax_rep_puts(b, "</text>");
}

/* y grid lines and labels for [y0, y1] mapped onto the plot area */
static void y_axis(ax_rep_buf *b, double y0, double y1, int percent, const char *ylabel) {
    double step = ax_svg_nice_step(y1 - y0), ph = H - MT - MB;
    for (double t = ceil(y0 / step) * step; t <= y1 + step * 1e-9; t += step) {
        double y = MT + ph - (t - y0) / (y1 - y0) * ph;
        ax_rep_printf(b, "<line x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" class=\"grid\"/>", ML,
                      W - MR, y, y);
        if (percent)
            ax_rep_printf(b, "<text x=\"%d\" y=\"%.1f\" class=\"yl\">%g%%</text>", ML - 6, y + 4,
                          t * 100);
        else
            ax_rep_printf(b, "<text x=\"%d\" y=\"%.1f\" class=\"yl\">%g</text>", ML - 6, y + 4, t);
    }
    ax_rep_printf(b, "<text transform=\"translate(14 %d) rotate(-90)\" class=\"al\">", MT + H / 3);
    ax_rep_html(b, ylabel);
    ax_rep_printf(b, "</text><line x1=\"%d\" x2=\"%d\" y1=\"%d\" y2=\"%d\" class=\"axis\"/>", ML,
                  W - MR, H - MB, H - MB);
}

void ax_svg_x_label(ax_rep_buf *b, const char *xlabel) {
    ax_rep_printf(b, "<text x=\"%d\" y=\"%d\" class=\"al\">", ML + (W - ML - MR) / 2, H - 8);
    ax_rep_html(b, xlabel);
    ax_rep_puts(b, "</text>");
}

void ax_svg_legend(ax_rep_buf *b, const char *const *names, int n) {
    double x = W - MR - 10;
    for (int s = n - 1; s >= 0; s--) { /* right-aligned: lay out from the right */
        double w = 18 + 7.0 * (double)snprintf(NULL, 0, "%s", names[s]);
        x -= w;
        ax_rep_printf(b, "<rect x=\"%.1f\" y=\"28\" width=\"12\" height=\"12\" fill=\"%s\"/>", x,
                      ax_svg_color(s));
        ax_rep_printf(b, "<text x=\"%.1f\" y=\"38\" class=\"lg\">", x + 16);
        ax_rep_html(b, names[s]);
        ax_rep_puts(b, "</text>");
        x -= 8;
    }
}

/* log y axis: grid lines at the powers of ten in [10^l0, 10^l1] */
static void y_axis_log(ax_rep_buf *b, double l0, double l1, const char *ylabel) {
    double ph = H - MT - MB;
    for (double t = ceil(l0); t <= l1 + 1e-9; t += 1) {
        double y = MT + ph - (t - l0) / (l1 - l0) * ph;
        ax_rep_printf(b, "<line x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" class=\"grid\"/>", ML,
                      W - MR, y, y);
        ax_rep_printf(b, "<text x=\"%d\" y=\"%.1f\" class=\"yl\">%g</text>", ML - 6, y + 4,
                      pow(10, t));
    }
    ax_rep_printf(b, "<text transform=\"translate(14 %d) rotate(-90)\" class=\"al\">", MT + H / 3);
    ax_rep_html(b, ylabel);
    ax_rep_puts(b, " (log scale)");
    ax_rep_printf(b, "</text><line x1=\"%d\" x2=\"%d\" y1=\"%d\" y2=\"%d\" class=\"axis\"/>", ML,
                  W - MR, H - MB, H - MB);
}

void ax_svg_bar_chart(ax_rep_buf *b, const ax_svg_bars *c) {
    double top = c->ymax, l0 = 0, l1 = 1;
    if (c->logy) { /* baseline half a decade under the smallest positive value, so it shows */
        double lo = INFINITY, hi = 0;
        for (int i = 0; i < c->n_cat * c->n_series; i++)
            if (c->v[i] > 0) lo = fmin(lo, c->v[i]), hi = fmax(hi, c->v[i]);
        if (!isfinite(lo)) lo = hi = 1;
        l0 = log10(lo) - 0.5, l1 = ceil(log10(hi) + 1e-9);
        top = 1;
    } else if (!(top > 0)) {
        for (int i = 0; i < c->n_cat * c->n_series; i++) {
            if (c->v[i] > top) top = c->v[i];
            if (c->hi && c->hi[i] > top) top = c->hi[i];
        }
        top = top > 0 ? ceil(top / ax_svg_nice_step(top)) * ax_svg_nice_step(top) : 1;
    }
    ax_svg_open(b, c->title);
    if (c->logy)
        y_axis_log(b, l0, l1, c->ylabel);
    else
        y_axis(b, 0, top, c->percent, c->ylabel);
    double pw = W - ML - MR, ph = H - MT - MB, slot = pw / c->n_cat;
    double bw = slot * 0.8 / c->n_series;
    if (bw > 90) bw = 90; /* a few wide slots: keep bars bar-shaped, centred in the slot */
    /* label at most ~24 categories so the labels do not overlap */
    int every = c->n_cat > 24 ? (c->n_cat + 23) / 24 : 1;
    for (int k = 0; k < c->n_cat; k++) {
        double x0 = ML + slot * (k + 0.5) - bw * c->n_series / 2;
        for (int s = 0; s < c->n_series; s++) {
            int i = s * c->n_cat + k;
            double v = c->v[i] < 0 ? 0 : c->v[i] > top && !c->logy ? top : c->v[i];
            double h = c->logy ? (v > 0 ? (log10(v) - l0) / (l1 - l0) * ph : 0) : v / top * ph,
                   x = x0 + bw * s;
            const char *col = ax_svg_color(c->color_by_cat ? k : s);
            ax_rep_printf(b,
                          "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
                          "fill=\"%s\"><title>",
                          x, MT + ph - h, bw > 1.5 ? bw - 0.5 : bw, h, col);
            ax_rep_html(b, c->series ? c->series[s] : c->cats[k]);
            ax_rep_puts(b, " ");
            ax_rep_html(b, c->cats[k]);
            if (c->percent)
                ax_rep_printf(b, ": %.1f%%", c->v[i] * 100);
            else
                ax_rep_printf(b, ": %g", c->v[i]);
            ax_rep_puts(b, "</title></rect>");
            if (c->lo && c->hi && !c->logy) { /* CI whisker */
                double ylo = MT + ph - c->lo[i] / top * ph, yhi = MT + ph - c->hi[i] / top * ph;
                double xm = x + bw / 2, cap = bw / 4 < 8 ? bw / 4 : 8;
                ax_rep_printf(b,
                              "<path d=\"M%.1f %.1fV%.1fM%.1f %.1fH%.1fM%.1f %.1fH%.1f\" "
                              "class=\"ci\"/>",
                              xm, ylo, yhi, xm - cap, ylo, xm + cap, xm - cap, yhi, xm + cap);
            }
            if (c->percent && c->n_cat * c->n_series <= 12) /* value above short bar lists */
                ax_rep_printf(b, "<text x=\"%.1f\" y=\"%.1f\" class=\"bv\">%.0f%%</text>",
                              x + bw / 2, MT + ph - h - 4, c->v[i] * 100);
        }
        if (k % every == 0) {
            ax_rep_printf(b, "<text x=\"%.1f\" y=\"%d\" class=\"xl\">", ML + slot * (k + 0.5),
                          H - MB + 16);
            ax_rep_html(b, c->cats[k]);
            ax_rep_puts(b, "</text>");
        }
    }
    ax_svg_x_label(b, c->xlabel);
    if (c->n_series > 1 && c->series) ax_svg_legend(b, c->series, c->n_series);
    ax_rep_puts(b, "</svg>\n");
}

/* at most ~1500 vertices per line: a browser draws that instantly and it still shows the
 * curve's shape; the last point is always kept */
#define MAX_VERTICES 1500

void ax_svg_line_chart(ax_rep_buf *b, const char *title, const char *xlabel, const char *ylabel,
                       const ax_svg_line *s, int n) {
    double x0 = INFINITY, x1 = -INFINITY, y1 = -INFINITY, y0 = 0;
    for (int k = 0; k < n; k++) {
        for (int64_t i = 0; i < s[k].n; i++) {
            x0 = fmin(x0, s[k].x[i]), x1 = fmax(x1, s[k].x[i]), y1 = fmax(y1, s[k].y[i]);
        }
        for (int64_t i = 0; i < s[k].n_pts; i++) {
            x0 = fmin(x0, s[k].px[i]), x1 = fmax(x1, s[k].px[i]), y1 = fmax(y1, s[k].py[i]);
        }
    }
    if (!isfinite(x0)) x0 = 0, x1 = 1, y1 = 1;
    if (x1 <= x0) x1 = x0 + 1;
    if (!(y1 > 0)) y1 = 1;
    y1 = ceil(y1 / ax_svg_nice_step(y1)) * ax_svg_nice_step(y1);
    double pw = W - ML - MR, ph = H - MT - MB;
#define PX(v) (ML + ((v)-x0) / (x1 - x0) * pw)
#define PY(v) (MT + ph - ((v)-y0) / (y1 - y0) * ph)
    ax_svg_open(b, title);
    y_axis(b, y0, y1, 0, ylabel);
    double xs = ax_svg_nice_step(x1 - x0);
    for (double t = ceil(x0 / xs) * xs; t <= x1 + xs * 1e-9; t += xs)
        ax_rep_printf(b, "<text x=\"%.1f\" y=\"%d\" class=\"xl\">%g</text>", PX(t), H - MB + 16, t);
    const char *names[8];
    int nn = 0;
    for (int k = 0; k < n; k++) {
        const ax_svg_line *l = &s[k];
        if (l->n) {
            int64_t stride = (l->n + MAX_VERTICES - 1) / MAX_VERTICES;
            ax_rep_printf(b, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.6\" points=\"",
                          ax_svg_color(k));
            for (int64_t i = 0; i < l->n; i += stride)
                ax_rep_printf(b, "%.1f,%.1f ", PX(l->x[i]), PY(l->y[i]));
            if ((l->n - 1) % stride)
                ax_rep_printf(b, "%.1f,%.1f", PX(l->x[l->n - 1]), PY(l->y[l->n - 1]));
            ax_rep_puts(b, "\"><title>");
            ax_rep_html(b, l->name);
            ax_rep_puts(b, " loss</title></polyline>");
        }
        int64_t pstride = (l->n_pts + MAX_VERTICES - 1) / MAX_VERTICES;
        for (int64_t i = 0; i < l->n_pts; i += pstride ? pstride : 1) {
            ax_rep_printf(b,
                          "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3.5\" fill=\"white\" stroke=\"%s\" "
                          "stroke-width=\"1.6\"><title>",
                          PX(l->px[i]), PY(l->py[i]), ax_svg_color(k));
            ax_rep_html(b, l->name);
            ax_rep_printf(b, " val_loss %.4g at step %g</title></circle>", l->py[i], l->px[i]);
        }
        if (nn < 8) names[nn++] = l->name;
    }
#undef PX
#undef PY
    ax_svg_x_label(b, xlabel);
    if (n > 1) ax_svg_legend(b, names, nn);
    ax_rep_puts(b, "</svg>\n");
}
