/* The `axmem data` subcommands as library calls (data/cmd_data.c parses their flags and
 * prints; the demo and tests call these directly): tokenizer-train, encode, decode and info
 * here; split, canaries and import-megatron in data/split.h, data/canary.h, data/megatron.h.
 * tokenizer-train and encode stream their inputs (text or .jsonl files, data/input.h), show
 * progress on stderr, stop with AX_ERR_INTERRUPTED on a stop signal, and write their output
 * only when complete. */
#pragma once
#include <stdint.h>
#include <stdio.h>

#include "data/tokenizer.h"
#include "lib/core/status.h"

typedef struct {
    int vocab, merges;
    uint64_t checksum;
    double seconds;
} ax_data_tokenizer_result;

/* Learns a byte-level BPE tokenizer of `vocab` ids from the inputs (at most max_bytes of text;
 * 0: all) and saves it to out_path. split_lines: in non-JSONL files each non-empty line is a
 * document. */
ax_status ax_data_tokenizer_train(const char *const *inputs, int n_inputs, int split_lines,
                                  uint64_t vocab, uint64_t max_bytes, const char *out_path,
                                  ax_data_tokenizer_result *res);

typedef struct {
    uint64_t docs, tokens; /* tokens include each document's end-of-text */
    uint64_t text_bytes;
} ax_data_encode_result;

/* Tokenizes the inputs' documents with the tokenizer at tok_path into the .axd out_path (each
 * document ends with end-of-text), encoding 32 MB batches on `threads` threads (0: OMP_NUM_THREADS
 * or all cores); documents keep their input order. */
ax_status ax_data_encode(const char *tok_path, const char *const *inputs, int n_inputs,
                         int split_lines, int threads, const char *out_path,
                         ax_data_encode_result *res);

/* Writes the bytes of document `doc` of dataset `data` (doc < 0: every document, in order) to
 * out, once the dataset is checked to be tok's (tok_path names it in errors). */
ax_status ax_data_decode(const ax_tokenizer_t *tok, const char *tok_path, const char *data,
                         int64_t doc, FILE *out);
/* Writes the bytes of token ids[n] to out. */
ax_status ax_data_decode_ids(const ax_tokenizer_t *tok, const int32_t *ids, size_t n, FILE *out);

/* `axmem data info`: a dataset's header and tokens-per-document statistics (each document's
 * count includes its end-of-text). verify: hash the payload even if the verified-file cache
 * has it; else the header only. */
typedef struct {
    int version, token_bytes; /* axd format version, bytes per token */
    uint32_t vocab, eot;
    uint64_t docs, tokens, checksum, tok_checksum;  /* tok_checksum 0: unknown */
    uint64_t len_min, len_median, len_p99, len_max; /* with docs > 0 */
    double len_mean;
} ax_data_info;
ax_status ax_data_info_read(const char *path, int verify, ax_data_info *out);
