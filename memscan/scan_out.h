/* Pieces every scan.json / samples.jsonl writer shares (memscan probe, generate). */
#pragma once
#include <stddef.h>
#include <stdint.h>
#include "data/tokenizer.h"
#include "lib/ckpt.h"
#include "lib/json.h"

/* Opens the top-level object: schema "axmem-scan", version 1, kind, and the checkpoint block
 * (path, step, goldfish spec) and dataset block (path, checksum, docs, tokens). */
void ax_ms_scan_header(ax_jw *w, const char *kind, const ax_ckpt_t *ck, const char *ds_path,
                       uint64_t ds_checksum, uint64_t docs, uint64_t tokens);
/* key: decoded text of ids[n], when a tokenizer is given (nothing otherwise) */
void ax_ms_text_field(ax_jw *w, const char *key, const ax_tokenizer_t *tok, const int32_t *ids,
                      size_t n);
/* explicit path, else samples.jsonl in the folder of out */
void ax_ms_samples_path(const char *explicit_path, const char *out, char *dst, size_t n);
/* writes the writer's text plus a newline to path (the error names flag and path) */
ax_status ax_ms_write_json(const ax_jw *w, const char *flag, const char *path);
