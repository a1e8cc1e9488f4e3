/* Megatron / GPT-NeoX indexed datasets (PATH.bin + PATH.idx, the "MMIDIDX" format Pythia's
 * pre-tokenized Pile ships in) converted to .axd without re-tokenizing.
 *
 * PATH.idx (little-endian; offsets in bytes):
 *    0  char[9]  "MMIDIDX\0\0"
 *    9  u64      version (1)
 *   17  u8       dtype of the tokens in .bin: 1 u8, 2 i8, 3 i16, 4 i32, 5 i64, 6 f64, 7 f32
 *                (Megatron-LM core; GPT-NeoX's copy swaps 6 and 7),
 *                8 u16 (floats are never token ids: rejected)
 *   18  u64      n_seq: number of sequences
 *   26  u64      n_doc_idx: entries of doc_idx (number of documents + 1)
 *   34  i32      sizes[n_seq]      tokens per sequence
 *   ..  i64      pointers[n_seq]   byte offset of each sequence in PATH.bin
 *   ..  i64      doc_idx[n_doc_idx] document d is sequences [doc_idx[d], doc_idx[d+1])
 * PATH.bin is the token payload, dtype elements, nothing else.
 * The arrays after the 34-byte header are not naturally aligned: every read goes through memcpy.
 */
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "lib/core/status.h"

typedef struct {
    uint8_t dtype; /* dtype code (1-8, floats rejected) */
    uint32_t elem; /* bytes per token */
    uint64_t n_seq, n_docs;
    const uint8_t *sizes; /* i32[n_seq], unaligned */
    const uint8_t *ptrs;  /* i64[n_seq], unaligned */
    const uint8_t *docs;  /* i64[n_docs + 1], unaligned */
    uint64_t n_tokens;    /* sum of sizes */
} ax_megatron_idx;

/* Parses and checks an index held in memory (n bytes) against the size of its .bin: header,
 * dtype, file length, sizes >= 0, every sequence inside the .bin and aligned to the dtype, the
 * sequences covering exactly the .bin's bytes, doc_idx starting at 0, never decreasing and ending
 * at n_seq. Errors name `path` and the fault. The result points into p. */
ax_status ax_megatron_idx_parse(const uint8_t *p, size_t n, uint64_t bin_size, const char *path,
                                ax_megatron_idx *out);
uint32_t ax_megatron_idx_size(const ax_megatron_idx *x, uint64_t seq);
uint64_t ax_megatron_idx_ptr(const ax_megatron_idx *x, uint64_t seq);
uint64_t ax_megatron_idx_doc(const ax_megatron_idx *x, uint64_t d); /* doc_idx[d], d <= n_docs */

typedef struct {
    uint32_t vocab_size; /* 0: the largest id + 1 (at least 257) */
    int64_t eot;         /* end-of-text id; < 0: the id every document already ends with */
} ax_megatron_options;

typedef struct {
    uint64_t docs, tokens; /* in the .axd, end-of-text included */
    uint64_t eot_added;    /* documents that did not already end with end-of-text */
    uint32_t vocab, eot;
    int eot_inferred;
} ax_megatron_result;

/* Converts prefix.bin + prefix.idx into the .axd out_path: document d of the .axd is the
 * tokens of the sequences of document d, in order, then end-of-text unless the document already
 * ends with it. The .axd records end-of-text (data/axd.h, version 3 when it is not 256) and
 * tokenizer identity 0 (unknown). Both files are memory-mapped and read in order; memory beyond
 * the writer's 8 bytes per document is one document's tokens. */
ax_status ax_megatron_import(const char *prefix, const char *out_path,
                             const ax_megatron_options *opt, ax_megatron_result *res);
