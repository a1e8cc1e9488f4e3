#include "data/progress.h"
#include "lib/core/log.h"
#include "lib/core/timer.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

void ax_data_progress_init(ax_data_progress *p, const char *label, uint64_t total) {
    memset(p, 0, sizeof *p);
    p->label = label;
    p->total = total;
    p->t0 = p->last = ax_now();
    p->tty = isatty(STDERR_FILENO);
}

static void show(ax_data_progress *p, uint64_t bytes, const char *extra, int final) {
    double dt = ax_now() - p->t0;
    double mb = (double)bytes / 1e6;
    char pct[32] = "";
    if (p->total && !final)
        snprintf(pct, sizeof pct, " / %.1f MB (%.0f%%)", (double)p->total / 1e6,
                 100.0 * (double)bytes / (double)p->total);
    char line[512];
    snprintf(line, sizeof line, "%s: %.1f MB%s, %.1f MB/s, %.1f s%s%s", p->label, mb, pct,
             dt > 0 ? mb / dt : 0.0, dt, extra ? ", " : "", extra ? extra : "");
    if (p->tty) {
        fprintf(stderr, "\r\033[K%s%s", line, final ? "\n" : "");
        fflush(stderr);
    } else {
        ax_log(AX_LOG_INFO, "%s", line);
    }
    p->shown = 1;
}

void ax_data_progress_update(ax_data_progress *p, uint64_t bytes, const char *extra) {
    if (ax_log_get_level() < AX_LOG_INFO) return;
    double now = ax_now();
    if (now - p->last < (p->tty ? 0.25 : 5.0)) return;
    p->last = now;
    show(p, bytes, extra, 0);
}

void ax_data_progress_done(ax_data_progress *p, uint64_t bytes, const char *extra) {
    if (ax_log_get_level() < AX_LOG_INFO) return;
    show(p, bytes, extra, 1);
}
