/* Byte-level BPE tokenizer, trained and applied in C.
 * Ids 0..255 are the raw bytes, AX_TOK_EOT (256) ends every document, merges follow from 257.
 * Any byte string round-trips exactly: decode(encode(x)) == x. */
#pragma once
#include <stddef.h>
#include <stdint.h>
#include "lib/status.h"

#define AX_TOK_EOT 256
#define AX_TOK_FIRST_MERGE 257

typedef struct ax_tokenizer ax_tokenizer_t;

ax_status ax_tokenizer_load(const char *path, ax_tokenizer_t **out);
void ax_tokenizer_free(ax_tokenizer_t *t);
int ax_tokenizer_vocab_size(const ax_tokenizer_t *t);
uint64_t ax_tokenizer_checksum(const ax_tokenizer_t *t); /* identity, stored in datasets' users */
/* Encode n bytes; *out is malloc'd (caller frees), *n_out its length. No EOT is added. */
ax_status ax_tokenizer_encode(const ax_tokenizer_t *t, const uint8_t *bytes, size_t n,
                              int32_t **out, size_t *n_out);
/* The bytes of one token (EOT -> empty), and a whole decode into a malloc'd buffer. */
const uint8_t *ax_tokenizer_token_bytes(const ax_tokenizer_t *t, int32_t id, size_t *len);
ax_status ax_tokenizer_decode(const ax_tokenizer_t *t, const int32_t *ids, size_t n,
                              uint8_t **out, size_t *n_out);
