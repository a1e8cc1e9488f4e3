/* GPT-2 style pre-tokenisation over raw bytes (no regex): text is cut into chunks and BPE
 * merges never cross a chunk boundary. Chunks, in order of preference at each position:
 *   a contraction ('s 't 'm 'd 're 've 'll), an optional leading space + a run of letters
 *   (A-Z, a-z and every byte >= 0x80, so UTF-8 words stay whole), of digits, or of other
 *   non-space bytes; a whitespace run (its last space goes to the next word when one follows).
 * The chunks partition the input exactly, so any byte string round-trips. */
#pragma once
#include <stddef.h>
#include <stdint.h>

enum { AX_PT_OTHER = 0, AX_PT_LETTER = 1, AX_PT_DIGIT = 2, AX_PT_SPACE = 3 };
extern const uint8_t ax_pretok_class[256];

/* End (exclusive) of the chunk that starts at i < n. */
size_t ax_pretok_next(const uint8_t *p, size_t n, size_t i);

/* 1 if cutting the text at k (0 < k < n) yields the same chunks as not cutting it: a chunk
 * ends at k whatever follows, and the chunk at k does not depend on what precedes. */
int ax_pretok_safe_split(const uint8_t *p, size_t n, size_t k);

/* The first safe cut at or after `from` (n if none): used to split big inputs into blocks
 * that encode independently and concatenate to exactly the serial result. */
size_t ax_pretok_find_split(const uint8_t *p, size_t n, size_t from);
