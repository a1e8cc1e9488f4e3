/* Checkpoints: a directory step-NNNNNN/ holding manifest.json and one zstd shard per blob.
 * Written to step-NNNNNN.partial/, every file fsynced, then renamed and the parent fsynced:
 * a crash never damages the last good checkpoint, and an existing step is never overwritten.
 *
 * manifest.json: {"format":"axmem-ckpt","version":1,"step":N,"grid":"1x1x1x1",
 *   "config":{...}, "state":{...}, "tensors":[{"name","shape":[..],"offset","numel"}],
 *   "shards":[{"blob","file","offset","count","bytes","zbytes","xxh3":"0x..."}]}
 * Blob = a named float array (e.g. "params", "adam_m", "adam_v"); tensors index into the
 * parameter blobs by offset. A shard holds blob[offset, offset+count). */
#pragma once
#include <stddef.h>
#include <stdint.h>
#include "lib/core/json.h"
#include "lib/core/status.h"

typedef struct {
    char name[64];
    int ndim;
    int64_t shape[4];
    int64_t offset; /* in floats, within the parameter blobs */
    int64_t numel;
} ax_tensor_info;

typedef struct {
    const char *name; /* blob name */
    const float *data;
    int64_t count;
} ax_ckpt_blob;

typedef struct {
    const char *grid;        /* "DxXxYxZ" it was written on */
    const char *config_json; /* serialised config object (ax_cfg_write_json) */
    const char *state_json;  /* serialised training-state object (step, data position, ...) */
    const ax_tensor_info *tensors;
    int n_tensors;
    const ax_ckpt_blob *blobs;
    int n_blobs;
    int zstd_level; /* 0 -> default (3) */
} ax_ckpt_write_args;

/* Writes ckpt_dir/step-%06ld (creating ckpt_dir). Fails if that step already exists, and
 * (AX_ERR_CORRUPT, naming the blob and tensor) if a blob holds a NaN or an infinity: no
 * checkpoint is written from a non-finite state. */
ax_status ax_ckpt_write(const char *ckpt_dir, long step, const ax_ckpt_write_args *a);

/* Newest complete checkpoint in ckpt_dir (ignores *.partial). out gets its path.
 * AX_ERR_IO with a clear message if there is none. */
ax_status ax_ckpt_find_latest(const char *ckpt_dir, char *out, size_t out_size);

/* The step directory a user names with dir (flag: the flag's name, for messages): dir itself
 * when it holds manifest.json (a step directory), else the newest complete step in dir/ckpt
 * (a training run) or in dir (a checkpoint directory, as `axmem model import --out` writes).
 * out gets its path. Otherwise an error that says what dir holds and what to pass. */
ax_status ax_ckpt_resolve(const char *dir, const char *flag, char *out, size_t out_size);

typedef struct ax_ckpt ax_ckpt_t;
/* Opens and validates manifest.json (format, version, required fields, shard files present
 * with the stated sizes, and a folder named step-NNNNNN holding the manifest of step NNNNNN).
 * Errors name the file and what to do. */
ax_status ax_ckpt_open(const char *step_dir, ax_ckpt_t **out);
void ax_ckpt_free(ax_ckpt_t *c);
long ax_ckpt_step(const ax_ckpt_t *c);
const char *ax_ckpt_path(const ax_ckpt_t *c);
const ax_json *ax_ckpt_config(const ax_ckpt_t *c); /* the "config" object */
const ax_json *ax_ckpt_state(const ax_ckpt_t *c);  /* the "state" object */
const char *ax_ckpt_grid(const ax_ckpt_t *c);      /* "DxXxYxZ" it was written on */
int ax_ckpt_n_tensors(const ax_ckpt_t *c);
const ax_tensor_info *ax_ckpt_tensor(const ax_ckpt_t *c, int i);
/* Reads blob[offset, offset+count) into dst, decompressing the shards that cover it and
 * verifying each shard's XXH3. Errors (missing blob, short, checksum) name the shard file; a
 * NaN or infinity among the values read is AX_ERR_CORRUPT naming the checkpoint, blob and
 * tensor, so no reader (resume, --init, scans, export) uses a non-finite model. */
ax_status ax_ckpt_read_blob(const ax_ckpt_t *c, const char *blob, int64_t offset, int64_t count,
                            float *dst);
/* Number of floats in `blob`, or -1 if the checkpoint has no such blob. */
int64_t ax_ckpt_blob_count(const ax_ckpt_t *c, const char *blob);

/* Test-only: raw bytes per shard (default 256 MiB; 0 restores it), so tests can cross shard
 * boundaries with small blobs. Rounded down to whole floats. Not thread-safe. */
void ax_ckpt_set_shard_bytes(size_t bytes);
