/* Progress for long data work (bytes, MB/s; lib/core/progress.h is the training-step kind): on
 * stderr at info level, a \r-updated line on a terminal, a plain log line every few seconds
 * otherwise. Ctrl-C: lib/core/stop.h (ax_stop_catch, then poll ax_stop_flag()). */
#pragma once
#include <stdint.h>

typedef struct {
    const char *label;
    uint64_t total; /* bytes expected, 0 if unknown */
    double t0, last;
    int tty, shown;
} ax_data_progress;

void ax_data_progress_init(ax_data_progress *p, const char *label, uint64_t total);
/* bytes processed so far; `extra` (may be NULL) is appended, e.g. "1234 docs" */
void ax_data_progress_update(ax_data_progress *p, uint64_t bytes, const char *extra);
void ax_data_progress_done(ax_data_progress *p, uint64_t bytes, const char *extra);
