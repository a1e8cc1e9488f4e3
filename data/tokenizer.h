/* Tokenizers, two kinds behind one API:
 *  - axmem's own byte-level BPE, trained and applied in C. Ids 0..255 are the raw bytes,
 *    AX_TOK_EOT (256) ends every document, merges follow from 257. Any byte string
 *    round-trips exactly: decode(encode(x)) == x.
 *  - a Hugging Face tokenizer.json (BPE: GPT-2, GPT-NeoX/Pythia, Llama-2, Llama-3 styles),
 *    detected by content; encoding gives the ids the `tokenizers` library gives with
 *    add_special_tokens=False (no BOS/EOS added); its end-of-text id is the file's
 *    (ax_tokenizer_eot). See data/hf/hf_tok.h. */
#pragma once
#include <stddef.h>
#include <stdint.h>
#include "lib/core/status.h"

#define AX_TOK_EOT 256
#define AX_TOK_FIRST_MERGE 257

typedef struct ax_tokenizer ax_tokenizer_t;

/* Loads either kind; the file's content decides (axmem magic, else JSON). */
ax_status ax_tokenizer_load(const char *path, ax_tokenizer_t **out);
void ax_tokenizer_free(ax_tokenizer_t *t);
int ax_tokenizer_vocab_size(const ax_tokenizer_t *t);
/* The id that ends every document: AX_TOK_EOT for axmem tokenizers; for tokenizer.json the
 * special token <|endoftext|> (GPT-2 50256, GPT-NeoX 0), <|end_of_text|> (Llama-3), </s>
 * (Llama-2) or <eos>, the first present (a file with none is refused at load). */
int32_t ax_tokenizer_eot(const ax_tokenizer_t *t);
/* 1 for a Hugging Face tokenizer.json (no merge list, cannot be saved) */
int ax_tokenizer_is_hf(const ax_tokenizer_t *t);
uint64_t ax_tokenizer_checksum(const ax_tokenizer_t *t); /* identity, stored in datasets' users */
/* Encode n bytes; *out is malloc'd (caller frees), *n_out its length. No EOT is added. */
ax_status ax_tokenizer_encode(const ax_tokenizer_t *t, const uint8_t *bytes, size_t n,
                              int32_t **out, size_t *n_out);
/* The bytes of one token (axmem EOT -> empty; a tokenizer.json's added tokens -> their text,
 * <0xNN> -> the byte, the Metaspace "▁" -> a space), and a whole decode into a malloc'd
 * buffer (for tokenizer.json with a prepended "▁", one leading space is dropped, as the
 * library's decoder does). */
const uint8_t *ax_tokenizer_token_bytes(const ax_tokenizer_t *t, int32_t id, size_t *len);
ax_status ax_tokenizer_decode(const ax_tokenizer_t *t, const int32_t *ids, size_t n, uint8_t **out,
                              size_t *n_out);

/* ---- additions: saving, training, parallel encoding ---- */

/* Writes the binary tokenizer file (axmem kind only) (magic, version, vocab size, merges, XXH3) via
 * path.partial + fsync + rename. */
ax_status ax_tokenizer_save(const ax_tokenizer_t *t, const char *path);
/* merge i (0-based) joins ids (*a, *b) into AX_TOK_FIRST_MERGE + i */
int ax_tokenizer_n_merges(const ax_tokenizer_t *t);
void ax_tokenizer_merge(const ax_tokenizer_t *t, int i, uint32_t *a, uint32_t *b);

/* BPE training: feed text, then train. Chunk counts are kept, not the text, so memory grows
 * with the number of distinct chunks. Merges are chosen by highest pair count; ties go to the
 * smallest (left id, right id), so training is deterministic. */
typedef struct ax_bpe_trainer ax_bpe_trainer_t;
ax_status ax_bpe_trainer_create(ax_bpe_trainer_t **out);
void ax_bpe_trainer_free(ax_bpe_trainer_t *tr);
/* Counts the chunks of one piece of text. Pieces must be whole documents or cut at
 * ax_pretok_find_split points (data/pretok.h) so chunks match the unsplit text. */
ax_status ax_bpe_trainer_add(ax_bpe_trainer_t *tr, const uint8_t *bytes, size_t n);
uint64_t ax_bpe_trainer_n_chunks(const ax_bpe_trainer_t *tr); /* distinct chunks so far */
/* Learns up to vocab_size - 257 merges (fewer, with a warning, if the text runs out of
 * pairs). `stop` (may be NULL) is polled; when it becomes nonzero training stops with
 * AX_ERR_INTERRUPTED. Progress is logged at info level. */
ax_status ax_bpe_trainer_train(ax_bpe_trainer_t *tr, int vocab_size, volatile int *stop,
                               ax_tokenizer_t **out);

/* A reusable encoder: per-thread chunk caches that persist across calls, and OpenMP over
 * blocks cut at chunk boundaries, so the result is the same for any thread count. One encoder
 * serves one calling thread at a time (ax_tokenizer_encode makes its own, so it is safe
 * anywhere). */
typedef struct ax_tok_encoder ax_tok_encoder_t;
/* n_threads <= 0: omp_get_max_threads() */
ax_status ax_tok_encoder_create(const ax_tokenizer_t *t, int n_threads, ax_tok_encoder_t **out);
void ax_tok_encoder_free(ax_tok_encoder_t *e);
/* Encodes n_segs independent byte strings (e.g. documents) in parallel; outs[i] is malloc'd
 * (caller frees; may be NULL when n_outs[i] == 0). */
ax_status ax_tok_encoder_encode_many(ax_tok_encoder_t *e, size_t n_segs, const uint8_t *const *segs,
                                     const size_t *lens, int32_t **outs, size_t *n_outs);
ax_status ax_tok_encoder_encode(ax_tok_encoder_t *e, const uint8_t *bytes, size_t n, int32_t **out,
                                size_t *n_out);
/* Largest block one thread encodes at a time (default 256 KiB; tests make it tiny). */
void ax_tok_encoder_set_block_bytes(ax_tok_encoder_t *e, size_t bytes);
