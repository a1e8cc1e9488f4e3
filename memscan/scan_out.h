/* Pieces every scan writer shares (memscan probe, generate): the scan JSON's header, decoded
 * text fields, and the writer that publishes a scan JSON and its samples JSONL together.
 *
 * A scan is complete or absent: the samples go to a temporary file beside their name
 * (mode 0600: they hold training text), the scan JSON to another; both are fsynced, then the
 * old scan JSON is removed, the samples renamed into place and the scan JSON renamed last (it
 * is the commit marker), each rename made durable. The scan JSON records the samples file's
 * name, size, line count and XXH3 ("samples" block), so `axmem report` can tell a samples file
 * that does not belong to it. A failure at any point (a full disk) removes the temporaries and
 * leaves either the previous complete scan or no scan JSON. */
#pragma once
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "data/tokenizer.h"
#include "lib/ckpt/ckpt.h"
#include "lib/core/config.h"
#include "lib/core/json.h"

#define AX_MS_PATH_MAX 4096

/* Where a scan's model runs: --grid, --device, --precision (lib/core/config.h flag groups) */
#define AX_MS_MODEL_ENTRIES(F)                                                                     \
    AX_CFG_GRID_ENTRY(F, "process grid DxXxYxZ (launch with mpirun)"),                             \
        AX_CFG_DEVICE_ENTRY(F,                                                                     \
                            "where the model computes (cuda needs a build with scons cuda=yes)"),  \
        AX_CFG_PRECISION_ENTRY(F)

/* The model's place and the outputs of the scans that decode (probe, generate): --out is the
 * scan's JSON, --samples-out the per-sample file beside it */
// clang-format off
#define AX_MS_SCAN_RUN_ENTRIES(F, out_default, samples_help)                                       \
    AX_MS_MODEL_ENTRIES(F), AX_CFG_COMM_ENTRY(F), AX_CFG_THREADS_ENTRY(F),                         \
    AX_CFG_OUT_ENTRY(F, out_default,                                                               \
                     "results (schema axmem-scan v1); replaced together with the samples file"),   \
    {"samples-out", AX_CFG_STR, F(samples_out), "", 1, 0, samples_help}
// clang-format on

typedef struct {
    char scan[AX_MS_PATH_MAX], samples[AX_MS_PATH_MAX];         /* final names */
    char scan_tmp[AX_MS_PATH_MAX], samples_tmp[AX_MS_PATH_MAX]; /* "" when none */
    char samples_name[AX_MS_PATH_MAX]; /* as recorded: relative to the scan's folder, or absolute */
    FILE *f;                           /* the samples temporary, open until commit */
    void *hash;                        /* XXH3 state of the bytes written */
    uint64_t bytes, lines;
} ax_ms_scan_out;

/* Creates the folders of scan JSON `out` and of its samples file (as mkdir -p), so a scan
 * fails before its work, not after, when they cannot be made. */
ax_status ax_ms_scan_out_prepare(const char *out, const char *samples_out);
/* Opens the writer for scan JSON `out` and its samples file (samples_out, or the name derived
 * by ax_ms_samples_path), creating their folders. The two names must differ. */
ax_status ax_ms_scan_out_open(ax_ms_scan_out *so, const char *out, const char *samples_out);
/* Appends the writer's text as one JSONL line to the samples. */
ax_status ax_ms_scan_out_line(ax_ms_scan_out *so, const ax_jw *row);
/* Writes key "samples": {file, bytes, lines, xxh3} into the scan object being built; call it
 * after the last line. */
void ax_ms_scan_out_record(const ax_ms_scan_out *so, ax_jw *w);
/* Publishes the samples and the scan JSON (the writer's text) as described above. */
ax_status ax_ms_scan_out_commit(ax_ms_scan_out *so, const ax_jw *scan);
/* Opens the writer for DIR/NAME.json and DIR/NAME.samples.jsonl, creating DIR. */
ax_status ax_ms_scan_out_open_in(ax_ms_scan_out *so, const char *dir, const char *name);
/* Ends a scan whose writing so far returned st: the "samples" record, the top-level object
 * closed, the commit (when st is AX_OK), then the writer closed and w freed. On success
 * *written = 1 and the files' names go to scan and samples (each [AX_MS_PATH_MAX]). */
ax_status ax_ms_scan_out_finish(ax_ms_scan_out *so, ax_jw *w, ax_status st, int *written,
                                char *scan, char *samples);
/* Removes whatever temporaries remain and frees the writer (safe after commit or failure). */
void ax_ms_scan_out_close(ax_ms_scan_out *so);

/* Opens the top-level object: schema "axmem-scan", version 1, kind, and the checkpoint block
 * (path, step, goldfish spec) and dataset block (path, checksum, docs, tokens). */
void ax_ms_scan_header(ax_jw *w, const char *kind, const ax_ckpt_t *ck, const char *ds_path,
                       uint64_t ds_checksum, uint64_t docs, uint64_t tokens);
/* key: [ids[0], ..., ids[n - 1]] */
void ax_ms_json_ids(ax_jw *w, const char *key, const int32_t *ids, size_t n);
/* key (NULL: a value in an array): [a, b], an interval or a point */
void ax_ms_json_pair(ax_jw *w, const char *key, double a, double b);
/* key: decoded text of ids[n], when a tokenizer is given (nothing otherwise). Token spans can
 * cut a character: the text is cut at character boundaries (ax_utf8_clip). */
void ax_ms_text_field(ax_jw *w, const char *key, const ax_tokenizer_t *tok, const int32_t *ids,
                      size_t n);
/* The samples file of a scan JSON: explicit path when given, else named after out in its
 * folder: DIR/NAME.json -> DIR/NAME.samples.jsonl (probe.json -> probe.samples.jsonl,
 * regurgitation.json -> regurgitation.samples.jsonl), so two scans never share one. */
void ax_ms_samples_path(const char *explicit_path, const char *out, char *dst, size_t n);
