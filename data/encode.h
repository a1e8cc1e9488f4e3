/* The data pipeline as library calls: `axmem data tokenizer-train` and `axmem data encode` parse
 * flags and call these; the demo and tests call them directly. Both stream their inputs (text
 * or .jsonl files, data/input.h), show progress on stderr, stop with AX_ERR_INTERRUPTED on a
 * stop signal, and write their output only when complete. */
#pragma once
#include <stdint.h>

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
