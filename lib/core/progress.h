/* Progress for long work: on a terminal one line redrawn in place; otherwise plain lines at
 * the caller's cadence (logs stay readable). Prints to stderr; only rank 0 should call it. */
#pragma once

typedef struct {
    const char *label;
    long start, total;
    double t0, last_draw;
    int tty;
    int drawn; /* a \r line is on screen */
} ax_progress;

void ax_progress_begin(ax_progress *p, const char *label, long start, long total);
/* done: units finished so far; loss < 0 omits it; rate in units the caller names (tok/s).
 * force_line: print a line even when not on a terminal. */
void ax_progress_update(ax_progress *p, long done, double loss, double tokens_per_s,
                        int force_line);
void ax_progress_end(ax_progress *p);
