/* Progress of long work on stderr (only rank 0 should call it): on a terminal one line redrawn
 * in place; otherwise plain lines at a slow cadence, so logs stay readable. Two kinds: counted
 * units (training steps, index tokens: done of total, rate, ETA) and bytes (data pipelines: MB,
 * MB/s; shown at info log level). Stopping on Ctrl-C is lib/core/stop.h's. */
#pragma once
#include <stdint.h>

typedef struct {
    const char *label;
    long start, total;  /* units */
    uint64_t bytes_all; /* bytes expected, 0 if unknown */
    double t0, last_draw;
    int tty;
    int drawn;     /* a line is on screen */
    char note[48]; /* shown after the loss (ax_progress_note) */
} ax_progress;

void ax_progress_begin(ax_progress *p, const char *label, long start, long total);
/* done: units finished so far; loss < 0 omits it; rate in units the caller names (tok/s).
 * force_line: print a line even when not on a terminal. */
void ax_progress_update(ax_progress *p, long done, double loss, double tokens_per_s,
                        int force_line);
/* The same with no loss and the rate since begin, a plain line every 5 s off a terminal. */
void ax_progress_tick(ax_progress *p, long done);
/* A short text shown after the loss from the next update on (e.g. "eps 1.23"); "" for none. */
void ax_progress_note(ax_progress *p, const char *note);
void ax_progress_end(ax_progress *p);

/* bytes processed so far; `extra` (may be NULL) is appended, e.g. "1234 docs" */
void ax_progress_bytes_begin(ax_progress *p, const char *label, uint64_t total);
void ax_progress_bytes(ax_progress *p, uint64_t bytes, const char *extra);
void ax_progress_bytes_done(ax_progress *p, uint64_t bytes, const char *extra);
