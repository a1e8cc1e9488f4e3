/* DP-SGD in a training run (--dp-clip; docs/privacy.md "DP-SGD in axmem train"): the settings
 * resolved against the dataset, the step's Poisson sample (train/dp_sample.h) and the privacy
 * accountant (train/dp_accountant.h), which the checkpoint manifest carries so a resumed run
 * continues epsilon exactly.
 *
 * A DP step (train/train_run.c): zero the gradients; for each micro-batch of the step's sampled
 * examples ax_model_dp_micro (clip each example's gradient to C, sum, scaled by 1 / (q N)); add
 * N(0, (sigma C / (q N))^2) once per parameter with ax_model_dp_noise; AdamW without the global
 * clip. Abadi et al. 2016 with Poisson sampling and a fixed denominator, as Opacus. */
#pragma once
#include <stdint.h>

#include "lib/core/json.h"
#include "lib/core/status.h"
#include "lib/model/model.h"
#include "train/dp_accountant.h"
#include "train/train_config.h"

typedef struct {
    double clip;  /* C */
    double sigma; /* noise multiplier */
    double q;     /* Poisson sampling rate */
    double delta;
    double target_epsilon; /* --dp-epsilon (0: --dp-noise was given) */
    int64_t examples;      /* N: training windows, or documents with --packing doc */
    char unit[96];         /* what one example is: the unit the guarantee covers */
    uint64_t sample_seed, noise_seed;
    ax_dp_accountant acct;   /* the steps taken so far */
    double epsilon;          /* after them, for delta */
    int64_t *sample, cap, n; /* the current step's sampled examples */
} ax_train_dp;

/* Settings -> *d for a dataset of n_examples (the loader's windows or documents): the sampling
 * rate (--dp-sample-rate, or --batch / N, which must not exceed 1), delta below 1 / N, and the
 * noise multiplier (--dp-noise, or the least that meets --dp-epsilon over --steps). Errors name
 * the flags. The accountant starts empty (a new run). */
ax_status ax_train_dp_resolve(ax_train_dp *d, const ax_train_config *c, uint64_t n_examples);
/* A resumed run: the accountant and noise multiplier from the checkpoint state's "dp" object
 * (written by ax_train_dp_write_state), which must have accounted exactly `step` steps at the
 * run's sampling rate. A noise multiplier solved anew differs only when --steps changed: the
 * stored one is kept (epsilon then ends away from the target, with a warning). */
ax_status ax_train_dp_resume(ax_train_dp *d, const ax_json *state, long step, const char *path);
/* Accounts one more step and updates d->epsilon. */
ax_status ax_train_dp_account(ax_train_dp *d);
/* The manifest state's "dp" member: {"unit", "sampling": "poisson", "clip", "noise",
 * "sample_rate", "delta", "epsilon", "target_epsilon" (when given), "examples",
 * "expected_batch", "steps", "conversion": "tight", "accountant": {...}} (a key, then its
 * object, into the open state object). */
void ax_train_dp_write_state(const ax_train_dp *d, ax_jw *w);
void ax_train_dp_free(ax_train_dp *d);
