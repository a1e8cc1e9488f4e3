/* `axmem memscan generate` as a library call, the regurgitation scan: load a checkpoint onto a
 * grid, sample free generations (memscan/generate.h), slide each over the training-set index
 * for verbatim spans of >= n training tokens, and publish regurgitation.json with its samples
 * file (memscan/scan_out.h). The command (memscan/cmd_memscan.c) parses its flags into the
 * options and prints the summary; `axmem demo` fills the options itself. */
#pragma once
#include <stdint.h>
#include <stdio.h>
#include "lib/core/config.h"
#include "lib/core/status.h"
#include "memscan/scan_out.h"

/* The command's settings; ax_ms_generate_table drives the flags, --help and the defaults: fill
 * with ax_cfg_set_defaults, then set fields. */
typedef struct {
    char ckpt[AX_CFG_STR_MAX];        /* run or step directory (required) */
    char index[AX_CFG_STR_MAX];       /* `memscan index` of the training set (required) */
    char data[AX_CFG_STR_MAX];        /* the indexed dataset ("": the path the index stores) */
    char tokenizer[AX_CFG_STR_MAX];   /* optional: decoded text in the samples file */
    char grid[AX_CFG_STR_MAX];        /* DxXxYxZ */
    char out[AX_CFG_STR_MAX];         /* the scan JSON */
    char samples_out[AX_CFG_STR_MAX]; /* "": named after out (ax_ms_samples_path) */
    char device[AX_CFG_STR_MAX];      /* "cpu" | "cuda" */
    char precision[AX_CFG_STR_MAX];   /* "auto" | "fp32" | "bf16" */
    char comm[AX_CFG_STR_MAX];        /* "auto" | "mpi" | "nccl" */
    int64_t samples, length, batch, top_k, seed;
    int64_t threads;           /* OpenMP threads, 0 = leave as is */
    int64_t max_sources;       /* documents listed per span */
    double temperature;        /* 0 = greedy */
    int not_training_data;     /* the index is knowingly not of the training data */
    int allow_other_tokenizer; /* an index of data encoded by another tokenizer */
} ax_ms_generate_opts;

extern const ax_cfg_table ax_ms_generate_table;

typedef struct {
    int written;               /* 1 on the rank that wrote the files (rank 0); 0 elsewhere */
    long samples, length;      /* generations and tokens in each */
    unsigned n;                /* the index's window: spans are >= n tokens */
    long with_span;            /* generations holding a verbatim span */
    double mean_longest_span;  /* tokens, over all generations (0 where none) */
    long max_longest_span;     /* tokens */
    long longest_span_hist[4]; /* none, n..2n-1, 2n..4n-1, >= 4n */
    int data_is_training;      /* the indexed data vs the training data: 1, 0, -1 unknown */
    double decode_s;           /* decoding wall time (model load excluded) */
    char scan[AX_MS_PATH_MAX], samples_path[AX_MS_PATH_MAX]; /* the files written */
} ax_ms_generate_summary;

/* Runs the scan and writes it. Collective over the grid (every rank calls it; rank 0 writes).
 * Errors name the flag or file: AX_ERR_ARG for settings (the command exits 2), others for data,
 * checkpoints and I/O (exit 1). */
ax_status ax_ms_generate_run(const ax_ms_generate_opts *o, ax_ms_generate_summary *out);
/* The command's headline line (share of generations with a span, the longest, the files) on f;
 * nothing where the summary was not written (ranks other than 0). */
void ax_ms_generate_print(const ax_ms_generate_summary *s, FILE *f);
