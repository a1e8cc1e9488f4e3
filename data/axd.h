/* The .axd token dataset: a header, document offsets, then tokens; read by memory-mapping.
 *
 * Layout (little-endian):
 *   0  char[8]  magic "AXMEMAXD"
 *   8  u32      version (2, or 3 when the end-of-text id is not AX_TOK_EOT; version 1 files,
 *               without the tokenizer field, still load)
 *  12  u32      vocab_size
 *  16  u32      token_width (2 or 4 bytes)
 *  20  u32      version 3: the end-of-text id that ends every document; versions 1-2: 0
 *               (their end-of-text is AX_TOK_EOT)
 *  24  u64      n_docs
 *  32  u64      n_tokens
 *  40  u64      XXH3_64 of everything after the header (offsets + tokens)
 *  48  u64      identity of the tokenizer that encoded it (ax_tokenizer_checksum; 0 = unknown)
 *  56  u64      XXH3_64 of bytes [0, 56) (header checksum)
 *  64  u64[n_docs + 1] doc offsets (token index where each doc starts; last = n_tokens)
 *  ..  tokens (token_width bytes each)
 * Every document ends with the end-of-text token (ax_axd_eot: AX_TOK_EOT for datasets axmem's
 * tokenizer encoded; the source's own id for imported ones, e.g. 0 for GPT-NeoX/Pythia data) so
 * the stream is contiguous. */
#pragma once
#include <stddef.h>
#include <stdint.h>
#include "data/tokenizer.h"
#include "lib/core/status.h"

typedef struct ax_axd ax_axd_t;

/* How much ax_axd_open checks of the payload (magic, version, sizes against the file length,
 * the header checksum and monotone offsets are always checked):
 *   AX_AXD_VERIFY (1; 0 means the same): the payload checksum and every token id < vocab, once
 *     per version of the file: a pass is recorded in the verified-file cache
 *     (data/verify_cache.h: keyed by device, inode, size, mtime and ctime) and later opens of
 *     the unchanged file skip it. Every reader whose results depend on the tokens uses this.
 *   AX_AXD_VERIFY_REHASH: hash even when cached (`axmem data info`, the check for bit rot).
 *   AX_AXD_HEADER_ONLY: skip the payload (`data info --no-verify`: instant inspection only;
 *     nothing computed from the tokens may rely on such an open).
 * Why cache rather than always hash: a `memscan lookup` of one passage takes milliseconds, while
 * hashing a large corpus takes about a second per GB; `train`, `index` and `probe` read every
 * token anyway. Files under 64 MiB are never cached: they are simply hashed.
 * Errors name the path and say what to do (usually: re-run `axmem data encode`). */
#define AX_AXD_VERIFY 1
#define AX_AXD_VERIFY_REHASH 2
#define AX_AXD_HEADER_ONLY (-1)
ax_status ax_axd_open(const char *path, int verify_payload, ax_axd_t **out);
void ax_axd_free(ax_axd_t *d);
uint32_t ax_axd_vocab_size(const ax_axd_t *d);
uint64_t ax_axd_n_docs(const ax_axd_t *d);
uint64_t ax_axd_n_tokens(const ax_axd_t *d);
uint64_t ax_axd_checksum(const ax_axd_t *d);           /* payload XXH3: the dataset's identity */
uint64_t ax_axd_tokenizer_checksum(const ax_axd_t *d); /* encoder's identity; 0 = unknown (v1) */
uint32_t ax_axd_eot(const ax_axd_t *d); /* the id that ends every document (AX_TOK_EOT unless v3) */
/* The tokenizer must be the one the dataset was encoded with: same vocabulary size and
 * end-of-text id and, when the dataset records it, the same identity. Errors name both files. */
ax_status ax_axd_check_tokenizer(const ax_axd_t *d, const ax_tokenizer_t *tok,
                                 const char *tok_path);
const char *ax_axd_path(const ax_axd_t *d);            /* as passed to ax_axd_open (for messages) */
const uint64_t *ax_axd_doc_offsets(const ax_axd_t *d); /* [n_docs + 1] */
uint32_t ax_axd_token(const ax_axd_t *d, uint64_t i);
/* copy tokens [start, start+n) widened to int32 */
void ax_axd_tokens(const ax_axd_t *d, uint64_t start, uint64_t n, int32_t *out);
/* document containing token i (binary search on offsets) */
uint64_t ax_axd_doc_of(const ax_axd_t *d, uint64_t i);

/* Streaming writer: documents are appended one at a time (never all held in memory);
 * writes to path.partial, then fsync + rename on ax_axd_writer_close. */
typedef struct ax_axd_writer ax_axd_writer_t;
ax_status ax_axd_writer_create(const char *path, uint32_t vocab_size, ax_axd_writer_t **out);
/* records the encoding tokenizer's identity in the header (default 0 = unknown) */
void ax_axd_writer_set_tokenizer(ax_axd_writer_t *w, uint64_t tokenizer_checksum);
/* The id that ends every document (default AX_TOK_EOT; must be < the vocabulary size). Another id
 * is recorded in the header (version 3), so imported datasets keep their source's end-of-text. */
ax_status ax_axd_writer_set_eot(ax_axd_writer_t *w, uint32_t eot);
/* appends tokens and then the end-of-text id if the doc does not already end with it */
ax_status ax_axd_writer_add_doc(ax_axd_writer_t *w, const int32_t *tokens, size_t n);
ax_status ax_axd_writer_close(ax_axd_writer_t *w); /* finalises; frees w in all cases */
void ax_axd_writer_abort(ax_axd_writer_t *w);      /* removes the partial file; frees w */
