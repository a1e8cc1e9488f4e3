#include "lib/core/progress.h"
#include "lib/core/log.h"
#include "lib/core/timer.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

static void start(ax_progress *p, const char *label) {
    memset(p, 0, sizeof *p);
    p->label = label;
    p->t0 = p->last_draw = ax_now();
    p->tty = isatty(STDERR_FILENO);
}

void ax_progress_begin(ax_progress *p, const char *label, long start_at, long total) {
    start(p, label);
    p->start = start_at;
    p->total = total;
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
    fprintf(stderr, "%s%s %ld/%ld (%.0f%%)%s%s%s %.0f tok/s ETA %s%s", p->tty ? "\r\033[K" : "",
            p->label, done, p->total, 100.0 * (double)done / (double)(p->total ? p->total : 1),
            lossbuf, p->note[0] ? " " : "", p->note, tokens_per_s, eta,
            p->tty && !force_line ? "" : "\n");
    p->drawn = p->tty && !force_line;
}

void ax_progress_tick(ax_progress *p, long done) {
    double now = ax_now();
    /* off a terminal last_draw moves only when a line is printed */
    int line = !p->tty && now - p->last_draw >= 5.0;
    ax_progress_update(p, done, -1, (double)done / (now - p->t0 + 1e-9), line);
}

void ax_progress_note(ax_progress *p, const char *note) {
    snprintf(p->note, sizeof p->note, "%s", note);
}

void ax_progress_end(ax_progress *p) {
    if (p->drawn) fputc('\n', stderr);
    p->drawn = 0;
}

void ax_progress_bytes_begin(ax_progress *p, const char *label, uint64_t total) {
    start(p, label);
    p->bytes_all = total;
}

static void show_bytes(ax_progress *p, uint64_t bytes, const char *extra, int final) {
    double dt = ax_now() - p->t0;
    double mb = (double)bytes / 1e6;
    char pct[32] = "";
    if (p->bytes_all && !final)
        snprintf(pct, sizeof pct, " / %.1f MB (%.0f%%)", (double)p->bytes_all / 1e6,
                 100.0 * (double)bytes / (double)p->bytes_all);
    char line[512];
    snprintf(line, sizeof line, "%s: %.1f MB%s, %.1f MB/s, %.1f s%s%s", p->label, mb, pct,
             dt > 0 ? mb / dt : 0.0, dt, extra ? ", " : "", extra ? extra : "");
    if (p->tty) {
        fprintf(stderr, "\r\033[K%s%s", line, final ? "\n" : "");
        fflush(stderr);
    } else {
        ax_log(AX_LOG_INFO, "%s", line);
    }
}

void ax_progress_bytes(ax_progress *p, uint64_t bytes, const char *extra) {
    if (ax_log_get_level() < AX_LOG_INFO) return;
    double now = ax_now();
    if (now - p->last_draw < (p->tty ? 0.25 : 5.0)) return;
    p->last_draw = now;
    show_bytes(p, bytes, extra, 0);
}

void ax_progress_bytes_done(ax_progress *p, uint64_t bytes, const char *extra) {
    if (ax_log_get_level() < AX_LOG_INFO) return;
    show_bytes(p, bytes, extra, 1);
}
