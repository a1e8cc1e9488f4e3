/* Memorization over training: one scan (memscan probe, mia or exposure) run on
 * every checkpoint of a run, or on a list of its steps, and one curve file of the scan's headline
 * metrics versus step.
 *
 * `memscan KIND --ckpt RUN_DIR --all-steps [flags]` (or `--steps 100,200`) parses the scan's flags
 * with its table, then calls its library entry point once per checkpoint with --ckpt set to the
 * step directory and --out moved into a folder per step, reads back the scan JSON it wrote
 * (rank 0) and adds that step's point to the curve, rewritten atomically after every step (a
 * long scan stopped half-way keeps a curve of the steps done):
 *   probe (--out probe.json):  DIR/step-NNNNNN/probe.json ...,  DIR/probe.curve.json
 *   mia, exposure (--out DIR): DIR/step-NNNNNN/mia.json ...,    DIR/mia.curve.json
 * Every flag means what it means for one checkpoint, and the three kinds share this one loop. A
 * checkpoint that cannot be opened (no manifest, a missing or truncated shard) is skipped: a line
 * on stderr and an entry in the curve's "skipped" list. A scan that fails on a checkpoint that
 * opened stops the loop with the command's exit code (a setting or the disk, which would fail every
 * step); the curve keeps the steps done. Collective under mpirun: every rank runs the loop, rank 0
 * writes. */
#pragma once
#include <stddef.h>
#include <stdio.h>
#include "lib/core/config.h"
#include "lib/core/json.h"
#include "lib/core/status.h"
#include "memscan/scan_out.h"

typedef struct {
    long step;
    char path[AX_MS_PATH_MAX]; /* RUN/ckpt/step-NNNNNN (or RUN/step-NNNNNN) */
} ax_ms_step;

/* The checkpoints of run directory `run` (its ckpt/ folder, else the folder itself), ascending by
 * step; step-NNNNNN.partial and other names are ignored. `list`: NULL or "" for all, else comma
 * separated step numbers ("100,200"), each of which must be there (AX_ERR_ARG naming the first
 * missing one and the steps the run has), returned in ascending order without repeats. An empty
 * run is AX_ERR_IO naming it. *out is malloc'd. */
ax_status ax_ms_steps_list(const char *run, const char *list, ax_ms_step **out, int *n);

/* The curve file: {"schema":"axmem-curve","version":1,"scan":KIND,"run":RUN,
 *   "points":[{"step":N,"ckpt":DIR,"scan_file":F, ...headline metrics...}, ...],
 *   "skipped":[{"step":N,"ckpt":DIR,"reason":"..."}, ...]}   points ascending by step. */
typedef struct ax_ms_curve ax_ms_curve;
ax_status ax_ms_curve_new(const char *path, const char *kind, const char *run, ax_ms_curve **out);
/* A point: w holds one object, opened by ax_ms_curve_point_begin (step, ckpt), then the scan's
 * members, then closed. Points are kept in the order added (the loop adds ascending steps). */
void ax_ms_curve_point_begin(ax_jw *w, long step, const char *ckpt);
ax_status ax_ms_curve_add(ax_ms_curve *c, const ax_jw *point);
ax_status ax_ms_curve_skip(ax_ms_curve *c, long step, const char *ckpt, const char *reason);
ax_status ax_ms_curve_write(const ax_ms_curve *c); /* temp + rename */
void ax_ms_curve_free(ax_ms_curve *c);

/* A scan the loop can drive: its library entry point (memscan/probe_run.h, mia_run.h,
 * exposure_run.h) and settings table. */
typedef struct {
    const char *name;          /* the subcommand: "probe", "mia", "exposure" */
    int out_is_dir;            /* --out names a folder (mia, exposure) or the scan JSON (probe) */
    const char *scan_file;     /* out_is_dir: the scan JSON's name in the folder ("mia.json") */
    const ax_cfg_table *table; /* its settings; it has --ckpt and --out (and --samples-out) */
    size_t opts_size, summary_size;
    ax_status (*run)(const void *opts, void *summary);             /* collective; rank 0 writes */
    void (*print)(const void *opts, const void *summary, FILE *f); /* the headline (rank 0) */
    /* Writes the headline metrics of scan JSON `scan` as members of the open object w;
     * `what` names the file in errors. */
    ax_status (*point)(const ax_json *scan, const char *what, ax_jw *w);
} ax_ms_steps_kind;

extern const ax_ms_steps_kind ax_ms_steps_probe, ax_ms_steps_mia, ax_ms_steps_exposure;

/* The command's first line: -1 when argv has none of --all-steps, --steps, --help (the command
 * goes on with one checkpoint), else the exit code (0; 1 failure; 2 usage): the scan's --help
 * with these two flags added, or the loop. */
int ax_ms_over_steps(const ax_ms_steps_kind *k, int argc, char **argv);
