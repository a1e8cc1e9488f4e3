/* `axmem memscan exposure` as a library call: load a checkpoint onto a grid, rank every canary
 * of a secrets file among the strings of its format and decode it greedily (memscan/exposure.h),
 * and publish DIR/exposure.json (no secrets) with DIR/exposure.samples.jsonl (the secrets, mode
 * 0600; memscan/scan_out.h). The command (memscan/cmd_memscan.c) parses its flags into the
 * options and prints the table; `axmem demo` can fill the options itself. */
#pragma once
#include <stdint.h>
#include <stdio.h>
#include "lib/core/config.h"
#include "lib/core/status.h"
#include "memscan/scan_out.h"

/* The command's settings; ax_ms_exposure_table drives the flags, --help and the defaults: fill
 * with ax_cfg_set_defaults, then set fields. */
typedef struct {
    char ckpt[AX_CFG_STR_MAX];      /* run or step directory (required) */
    char canaries[AX_CFG_STR_MAX];  /* the secrets file of `axmem data canaries` (required) */
    char tokenizer[AX_CFG_STR_MAX]; /* "": the one the secrets file names */
    char out[AX_CFG_STR_MAX];       /* output folder (required) */
    char grid[AX_CFG_STR_MAX];      /* DxXxYxZ */
    char device[AX_CFG_STR_MAX];    /* "cpu" | "cuda" */
    char precision[AX_CFG_STR_MAX]; /* "auto" | "fp32" | "bf16" */
    double exact_max;               /* enumerate spaces up to this size */
    int64_t candidates, batch, seed;
    int64_t threads; /* OpenMP threads, 0 = leave as is */
} ax_ms_exposure_opts;

extern const ax_cfg_table ax_ms_exposure_table;

/* One row of the table: the canaries inserted `repeats` times (-1: all of them). */
typedef struct {
    int repeats, canaries, extracted; /* extracted: greedy decoding reproduced the secret */
    double mean, median;              /* exposure, bits */
} ax_ms_exposure_bucket;

#define AX_MS_EXPOSURE_ROWS 64 /* rows kept in the summary (the scan JSON has them all) */
typedef struct {
    int written; /* 1 on the rank that wrote the files (rank 0); 0 elsewhere */
    int canaries, exact;
    long candidates; /* scored per prefix */
    double space;
    char format[AX_CFG_STR_MAX];
    ax_ms_exposure_bucket overall; /* rank 0 */
    int n_rows;
    ax_ms_exposure_bucket by_repeats[AX_MS_EXPOSURE_ROWS]; /* ascending repeats (rank 0) */
    int reads_known;          /* whether the planted copies training read are known (rank 0): */
    long copies, copies_read; /* planted, and read by training */
    int canaries_short;       /* canaries trained on fewer copies than their repeat count */
    char scan[AX_MS_PATH_MAX], samples_path[AX_MS_PATH_MAX]; /* the files written */
} ax_ms_exposure_summary;

/* Runs the scan and writes it. Collective over the grid (every rank calls it; rank 0 writes).
 * Errors name the flag or file: AX_ERR_ARG for settings (the command exits 2), others for
 * data, checkpoints and I/O (exit 1). */
ax_status ax_ms_exposure_run(const ax_ms_exposure_opts *o, ax_ms_exposure_summary *out);
/* The table by repeat count and the files, on f; nothing where the summary was not written. */
void ax_ms_exposure_print(const ax_ms_exposure_summary *s, FILE *f);
