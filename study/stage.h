/* Resumable stages: a stage that finished writes a record, OUT/stages/NAME.json, holding the
 * XXH3 of its settings and of every file it read and wrote (a folder: its files, recursively,
 * by name). A rerun skips the stage when the record is there and every hash is the same, so a
 * stage cut off before its record, or whose input changed (a stage before it ran again), or
 * whose output was touched, runs again; records are written atomically, after the outputs. */
#pragma once
#include <stdint.h>

#include "lib/core/status.h"

/* XXH3 of a file's bytes, or of a folder (each entry's name and hash, sorted by name); errors
 * name the path */
ax_status ax_study_hash_path(const char *path, uint64_t *out);
/* 1 when out/stages/name.json records these settings and files with their current hashes */
int ax_study_stage_done(const char *out, const char *name, uint64_t settings,
                        const char *const *files, int n);
/* writes the record (after the stage's outputs are complete) */
ax_status ax_study_stage_mark(const char *out, const char *name, uint64_t settings,
                              const char *const *files, int n);
/* forgets the record (before a stage runs again) */
void ax_study_stage_clear(const char *out, const char *name);
