/* The training loop behind `axmem train`. */
#pragma once
#include <stdint.h>
#include "lib/core/status.h"
#include "train/train_config.h"

typedef enum {
    AX_TRAIN_DONE = 0,     /* reached --steps (or was already there) */
    AX_TRAIN_STOP_SIGNAL,  /* a stop request (lib/core/stop.h: Ctrl-C, SIGTERM, ...) */
    AX_TRAIN_STOP_STEPS,   /* --exit-after-steps */
    AX_TRAIN_STOP_MINUTES, /* --exit-after-minutes */
} ax_train_stop;

typedef struct {
    long first_step; /* 0, or the step resumed from */
    long last_step;  /* steps completed */
    double final_loss;
    int interrupted;    /* stopped before --steps, after writing a checkpoint at last_step */
    ax_train_stop stop; /* why it stopped; the same on every rank */
    int stop_signal;    /* AX_TRAIN_STOP_SIGNAL: the signal (0 if requested in code); the
                         * highest one any rank received, so every rank reports the same */
} ax_train_result;

/* Runs (or resumes) training as configured. was_set marks flags given by the user (for
 * presets and resume checks); may be NULL. Polls the stop flag (lib/core/stop.h, turned on here
 * with ax_stop_catch) before every step: all ranks agree, stop at the same step boundary and
 * write a checkpoint there (also at step 0 of a new run, so --resume always has one). */
ax_status ax_train_run(ax_train_config *cfg, const uint8_t *was_set, ax_train_result *res);
