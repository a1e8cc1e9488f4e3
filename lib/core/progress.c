#include "lib/core/progress.h"
#include "lib/core/timer.h"

#include <stdio.h>
#include <unistd.h>

void ax_progress_begin(ax_progress *p, const char *label, long start, long total) {
    p->label = label;
    p->start = start;
    p->total = total;
    p->t0 = p->last_draw = ax_now();
    p->tty = isatty(2);
    p->drawn = 0;
}

static void fmt_eta(char *buf, size_t n, double s) {
    if (s < 0 || s > 1e7)
        snprintf(buf, n, "?");
    else if (s < 60)
        snprintf(buf, n, "%.0fs", s);
    else if (s < 3600)
        snprintf(buf, n, "%dm%02ds", (int)s / 60, (int)s % 60);
    else
        snprintf(buf, n, "%dh%02dm", (int)s / 3600, ((int)s % 3600) / 60);
}

void ax_progress_update(ax_progress *p, long done, double loss, double tokens_per_s,
                        int force_line) {
    double now = ax_now();
    if (!force_line && (!p->tty || now - p->last_draw < 0.1)) return;
    p->last_draw = now;
    double per = (now - p->t0) / (double)(done - p->start > 0 ? done - p->start : 1);
    char eta[32], lossbuf[32] = "";
    fmt_eta(eta, sizeof eta, per * (double)(p->total - done));
    if (loss >= 0) snprintf(lossbuf, sizeof lossbuf, " loss %.4f", loss);
    fprintf(stderr, "%s%s %ld/%ld (%.0f%%)%s %.0f tok/s ETA %s%s", p->tty ? "\r\033[K" : "",
            p->label, done, p->total, 100.0 * (double)done / (double)(p->total ? p->total : 1),
            lossbuf, tokens_per_s, eta, p->tty && !force_line ? "" : "\n");
    p->drawn = p->tty && !force_line;
}

void ax_progress_end(ax_progress *p) {
    if (p->drawn) fputc('\n', stderr);
    p->drawn = 0;
}
