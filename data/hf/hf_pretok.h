/* The pre-tokenizer regexes of Hugging Face byte-level tokenizers, hand-compiled (no regex
 * engine): each function returns the end (exclusive, in bytes) of the match the regex makes at
 * byte i < n of UTF-8 text, scanning as the `tokenizers` library does (leftmost-first
 * alternation, greedy with backtracking). Every position matches, so consecutive matches
 * partition the text. Bytes that are not well-formed UTF-8 count as one character each, of
 * class "other" (neither letter, number nor space).
 *   GPT-2 / GPT-NeoX (ByteLevel's own):
 *     's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
 *   Llama-3 (a Split pre-tokenizer):
 *     (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|
 *      ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
 *   Qwen2: the same with \p{N} in place of \p{N}{1,3}. */
#pragma once
#include <stddef.h>
#include <stdint.h>

typedef struct {
    uint32_t lo, hi;
    uint8_t cls; /* 1 = \p{L}, 2 = \p{N} */
} ax_hf_urange;
extern const ax_hf_urange ax_hf_uranges[];
extern const unsigned ax_hf_n_uranges;

enum { AX_HF_RE_NONE = 0, AX_HF_RE_GPT2 = 1, AX_HF_RE_LLAMA3 = 2, AX_HF_RE_QWEN2 = 3 };
/* The regex strings as tokenizer.json spells them (Split's pattern.Regex). */
extern const char ax_hf_re_gpt2[];
extern const char ax_hf_re_llama3[];
extern const char ax_hf_re_qwen2[]; /* Llama-3's with \p{N} (one digit) for \p{N}{1,3} */

/* 1 = letter, 2 = number, 0 = other, for a code point */
int ax_hf_ucls(uint32_t cp);
/* Unicode White_Space (what \s matches) */
int ax_hf_uspace(uint32_t cp);

size_t ax_hf_match_gpt2(const uint8_t *p, size_t n, size_t i);
/* max_digits: 3 for Llama-3, 1 for Qwen2 */
size_t ax_hf_match_llama3(const uint8_t *p, size_t n, size_t i, int max_digits);
