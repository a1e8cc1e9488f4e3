/* The training loop behind `axmem train`. */
#pragma once
#include <stdint.h>
#include "lib/status.h"
#include "train/train_config.h"

typedef struct {
    long first_step; /* 0, or the step resumed from */
    long last_step;  /* steps completed */
    double final_loss;
    int interrupted; /* stopped early by SIGINT after writing a checkpoint */
} ax_train_result;

/* Runs (or resumes) training as configured. was_set marks flags given by the user (for
 * presets and resume checks); may be NULL. */
ax_status ax_train_run(ax_train_config *cfg, const uint8_t *was_set, ax_train_result *res);
