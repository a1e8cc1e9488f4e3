/* `axmem memscan probe` as a library call: load a checkpoint onto a grid, probe it on its
 * training data (memscan/probe.h), count each probed window's duplicates in an index, and
 * publish probe.json with its samples file (memscan/scan_out.h). The command
 * (memscan/cmd_memscan.c) parses its flags into the options and prints the summary; `axmem demo`
 * fills the options itself. */
#pragma once
#include <stdint.h>
#include <stdio.h>
#include "lib/core/config.h"
#include "lib/core/status.h"
#include "memscan/scan_out.h"

/* The command's settings; ax_ms_probe_table (name, type, default, range, help of each) drives
 * the flags, --help and the defaults: fill with ax_cfg_set_defaults, then set fields. */
typedef struct {
    char ckpt[AX_CFG_STR_MAX];        /* run or step directory (required) */
    char data[AX_CFG_STR_MAX];        /* the training dataset .axd (required) */
    char tokenizer[AX_CFG_STR_MAX];   /* optional: decoded text in the samples file */
    char out[AX_CFG_STR_MAX];         /* the scan JSON */
    char samples_out[AX_CFG_STR_MAX]; /* "": named after out (ax_ms_samples_path) */
    char offset[AX_CFG_STR_MAX];      /* "start" | "random": where prefixes start */
    char grid[AX_CFG_STR_MAX];        /* DxXxYxZ */
    char index[AX_CFG_STR_MAX];       /* optional: duplication counts of the probed windows */
    char device[AX_CFG_STR_MAX];      /* "cpu" | "cuda" */
    char precision[AX_CFG_STR_MAX];   /* "auto" | "fp32" | "bf16" */
    char comm[AX_CFG_STR_MAX];        /* "auto" | "mpi" | "nccl" */
    int64_t samples, prefix, suffix, batch, seed;
    int64_t threads;                     /* OpenMP threads, 0 = leave as is */
    char prefix_lengths[AX_CFG_STR_MAX]; /* "16,32,64": several P in one run ("": --prefix) */
    int64_t samples_per_prefix;          /* sampled continuations per probe (0: greedy only) */
    double temperature, top_p;           /* their softmax temperature and nucleus */
    int64_t top_k;                       /* and top-k (0: no limit) */
    int repeat_docs;           /* --samples beyond the eligible documents probes them again */
    int not_training_data;     /* --data is knowingly not the training data (no warning) */
    int allow_other_tokenizer; /* --data of another tokenizer than the training data's */
} ax_ms_probe_opts;

#define AX_MS_PROBE_MAX_LENGTHS 16 /* --prefix-lengths entries */

extern const ax_cfg_table ax_ms_probe_table;

/* An estimate and its 95% interval, as written in the scan JSON's metrics. */
typedef struct {
    double mean, lo, hi;
} ax_ms_ci;

typedef struct {
    int written;          /* 1 on the rank that wrote the files (rank 0); 0 elsewhere */
    int samples;          /* probes */
    int documents;        /* distinct documents probed (< samples only with --repeat-docs) */
    int clustered;        /* intervals clustered by document (documents probed more than once) */
    int data_is_training; /* --data vs the checkpoint's training data: 1, 0, -1 unknown */
    int prefix;           /* their prefix length (the first of --prefix-lengths) */
    int n_lengths;        /* with --prefix-lengths: each length and its exact-match rate */
    int lengths[AX_MS_PROBE_MAX_LENGTHS];
    double exact_by_length[AX_MS_PROBE_MAX_LENGTHS];
    ax_ms_ci exact_match;    /* exact (Clopper-Pearson) interval */
    ax_ms_ci token_accuracy; /* bootstrap interval */
    ax_ms_ci rouge_l;        /* bootstrap interval */
    double matched_prefix_mean;
    /* with --samples-per-prefix N (draws = N; else 0): the mean share of draws reproducing the
     * suffix (p_hat), and the share of probes where at least one of the N did */
    int draws;
    double sampled_p_mean, sampled_any_rate;
    /* goldfish audit (hash-goldfish checkpoints; audited = 0 otherwise): probes whose greedy
     * continuation diverged, how many of those first diverged on a dropped position, and the
     * dropped fraction of their suffix positions (the share expected if uniform) */
    int audited;
    long diverged, diverged_on_dropped;
    double dropped_fraction;
    double decode_s; /* decoding wall time (model load excluded) and the tokens generated */
    long tokens;
    char scan[AX_MS_PATH_MAX], samples_path[AX_MS_PATH_MAX]; /* the files written */
} ax_ms_probe_summary;

/* Runs the probe and writes the scan. Collective over the grid (every rank calls it; rank 0
 * writes). Errors name the flag or file: AX_ERR_ARG for settings (the command exits 2), others
 * for data, checkpoints and I/O (exit 1). */
ax_status ax_ms_probe_run(const ax_ms_probe_opts *o, ax_ms_probe_summary *out);
/* The command's headline line (exact match with its interval, token accuracy, the files) on f;
 * nothing where the summary was not written (ranks other than 0). */
void ax_ms_probe_print(const ax_ms_probe_opts *o, const ax_ms_probe_summary *s, FILE *f);
