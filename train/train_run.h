/* The training loop behind `axmem train` (the command: train/cmd_train.c). */
#pragma once
#include <stdint.h>
#include "lib/core/json.h"
#include "lib/core/status.h"
#include "lib/dist/grid.h"
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
    int dp;             /* DP-SGD: epsilon after last_step for delta, and the privacy unit */
    double dp_epsilon, dp_delta;
    char dp_unit[96];
} ax_train_result;

/* Runs (or resumes) training as configured. was_set marks flags given by the user (for
 * presets and resume checks); may be NULL. Polls the stop flag (lib/core/stop.h, turned on here
 * with ax_stop_catch) before every step: all ranks agree, stop at the same step boundary and
 * write a checkpoint there (also at step 0 of a new run, so --resume always has one). */
ax_status ax_train_run(ax_train_config *cfg, const uint8_t *was_set, ax_train_result *res);

/* Scans inside training (`--scan-every N --scan-config FILE`): the loop calls a hook, which the
 * command fills with memscan's probe (train/train_scan.h) and tests with a script. A scan step is a
 * checkpoint step: the run writes a checkpoint there (also when --ckpt-every would not) and the
 * hook reads it, so the scan sees exactly what a later `memscan probe --ckpt` would and never
 * touches the training state: losses are the same with and without scans. */
typedef struct {
    long step;          /* steps completed */
    const char *ckpt;   /* the checkpoint of this step: RUN/ckpt/step-NNNNNN */
    const char *out;    /* the run directory */
    ax_grid_t *grid;    /* the training grid: the scan is collective over it */
    const char *device; /* the training --device */
} ax_train_scan_point;

typedef struct {
    const char *name;     /* the record's "scan" value, e.g. "probe" */
    const char *rate_key; /* the record's headline rate, e.g. "exact_match"; the record also has
                           * RATE_KEY_lo and RATE_KEY_hi (its 95% interval) */
    /* At start-up on every rank, after a resume merged the settings and before any model
     * memory: read and check cfg->scan_config, so a bad file fails before the first step. */
    ax_status (*prepare)(void *ctx, const ax_train_config *cfg);
    /* At each scan step on every rank (collective over p->grid). On rank 0: the record's
     * members after "step" and "scan" go into the open object rec, and the headline rate and
     * its interval into rate, lo, hi (other ranks leave them). */
    ax_status (*scan)(void *ctx, const ax_train_scan_point *p, ax_jw *rec, double *rate, double *lo,
                      double *hi);
    void *ctx;
} ax_train_scan_hook;

/* ax_train_run with scans: after the scan at step s (s a multiple of --scan-every), rank 0
 * appends {"step":s,"scan":NAME,...,"extraction_rising":B} to metrics.jsonl and warns when
 * the rate is above the previous scan's upper bound (the previous scan is found in
 * metrics.jsonl after a resume; a scan lost to a crash between its checkpoint and its record is
 * run again on resume). hook may be NULL (then --scan-every is an error). */
ax_status ax_train_run_scan(ax_train_config *cfg, const uint8_t *was_set,
                            const ax_train_scan_hook *hook, ax_train_result *res);
