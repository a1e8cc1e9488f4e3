/* `axmem memscan mia` as a library call: load a checkpoint (and optionally a reference one)
 * onto a grid, score member and non-member documents (memscan/mia.h), and publish DIR/mia.json
 * with DIR/mia.samples.jsonl (memscan/scan_out.h). The command (memscan/cmd_memscan.c) parses its
 * flags into the options and prints the summary; `axmem demo` can fill the options itself. */
#pragma once
#include <stdint.h>
#include <stdio.h>
#include "lib/core/config.h"
#include "lib/core/status.h"
#include "memscan/mia.h"
#include "memscan/probe_run.h"
#include "memscan/scan_out.h"

/* The command's settings; ax_ms_mia_table drives the flags, --help and the defaults: fill with
 * ax_cfg_set_defaults, then set fields. */
typedef struct {
    char ckpt[AX_CFG_STR_MAX];       /* run or step directory (required) */
    char members[AX_CFG_STR_MAX];    /* .axd the model was trained on (required) */
    char nonmembers[AX_CFG_STR_MAX]; /* .axd it was not trained on (required) */
    char ref_ckpt[AX_CFG_STR_MAX];   /* optional reference model */
    char tokenizer[AX_CFG_STR_MAX];  /* optional: the zlib score */
    char out[AX_CFG_STR_MAX];        /* output folder (required) */
    char grid[AX_CFG_STR_MAX];       /* DxXxYxZ */
    char device[AX_CFG_STR_MAX];     /* "cpu" | "cuda" */
    char precision[AX_CFG_STR_MAX];  /* "auto" | "fp32" | "bf16" */
    int64_t max_docs, tokens_per_doc, k, bootstrap, batch, seed;
    int64_t threads; /* OpenMP threads, 0 = leave as is */
} ax_ms_mia_opts;

extern const ax_cfg_table ax_ms_mia_table;

typedef struct {
    int written;             /* 1 on the rank that wrote the files (rank 0); 0 elsewhere */
    int members, nonmembers; /* documents scored */
    int has[AX_MIA_N];       /* the scores computed */
    ax_ms_ci auc[AX_MIA_N];  /* ROC AUC and its bootstrap 95% interval (rank 0) */
    /* TPR at 0.1% and 1% FPR (rank 0); NaN where the non-members cannot resolve the rate */
    double tpr_at_0_1[AX_MIA_N], tpr_at_1[AX_MIA_N];
    /* the model-free baselines (memscan/mia.h): AUC with its interval, and how far it is from
     * chance (ax_mia_far_from_chance: 0, 1, 2) */
    int has_free[AX_MIA_FREE_N];
    ax_ms_ci free_auc[AX_MIA_FREE_N];
    int free_far[AX_MIA_FREE_N];
    char scan[AX_MS_PATH_MAX], samples_path[AX_MS_PATH_MAX]; /* the files written */
} ax_ms_mia_summary;

/* Runs the attack and writes the scan. Collective over the grid (every rank calls it; rank 0
 * writes). Errors name the flag or file: AX_ERR_ARG for settings (the command exits 2), others
 * for data, checkpoints and I/O (exit 1). */
ax_status ax_ms_mia_run(const ax_ms_mia_opts *o, ax_ms_mia_summary *out);
/* One line per score (AUC with its interval, TPR at the FPRs the non-members resolve, and
 * why any other is left out), the model-free baselines, and the files, on f; the warning of
 * each model-free score far from chance on stderr too. Nothing where the summary was not
 * written. */
void ax_ms_mia_print(const ax_ms_mia_opts *o, const ax_ms_mia_summary *s, FILE *f);
