/* Canaries (issue 11 item 2): `axmem data canaries` plants random secrets of a given format in
 * a dataset at chosen repeat counts and writes them, with never-inserted reference secrets of
 * the same format, to a secrets file (mode 0600) that `axmem memscan exposure` reads.
 *
 * Format mini-language: literal text plus placeholders {dN} (N decimal digits), {aN} (N
 * lowercase letters), {hN} (N lowercase hex digits), 1 <= N <= 64. "{{" and "}}" are a
 * literal brace; any other brace is an error. At least one placeholder. The literal text
 * before the first placeholder is the PREFIX; everything from the first placeholder on
 * (placeholders filled, later literal text kept) is the SECRET; prefix + secret is the
 * canary's text. The SPACE is the number of secrets the placeholders can form (product of
 * 10^N, 26^N, 16^N), a double (exact below 2^53).
 *
 * Secrets file (JSON, version 1):
 *   {"version":1, "format":F, "space":S, "seed":SEED, "tokenizer":"<path as given>",
 *    "dataset":"<output .axd as given>", "references_complete":bool,
 *    "canaries":[{"id":0, "prefix":"my PIN is ", "secret":"123456", "repeats":4,
 *                 "tokens":[ids of prefix+secret, tokenized together], "prefix_tokens":P,
 *                 "inserted":[{"doc":12, "token_pos":345}, ...]}, ...],
 *    "references":["654321", ...]}
 * prefix_tokens P: the leading tokens whose bytes lie wholly inside the prefix (the tokenizer
 * may join the prefix's last bytes with the secret's first, e.g. " 123456"), i.e. the context
 * every candidate secret shares; tokens[P..] continue it. token_pos is where the canary's
 * first token sits in that document of the OUTPUT dataset. references are distinct from each
 * other and from every canary; references_complete is true when they are every other string
 * of the space (small spaces: exposure by exact enumeration). */
#pragma once
#include <stdint.h>
#include "lib/core/status.h"

#define AX_CANARY_MAX_PARTS 32
#define AX_CANARY_MAX_TEXT 1024

typedef struct {
    int n_parts;
    struct {
        char kind; /* 0 literal; 'd', 'a' or 'h' placeholder */
        int n;     /* placeholder width, or literal byte count */
        int off;   /* literal: offset of its text in lit[] */
    } part[AX_CANARY_MAX_PARTS];
    char lit[AX_CANARY_MAX_TEXT];
    int first_ph;   /* index of the first placeholder part */
    int prefix_len; /* bytes of the prefix */
    double space;
} ax_canary_format;

/* Parses fmt; errors (AX_ERR_ARG) name --format and say what is wrong ("{d0}", "{x3}", no
 * placeholder, an unmatched brace, too long). */
ax_status ax_canary_format_parse(const char *fmt, ax_canary_format *f);
/* The prefix (NUL-terminated) into out[AX_CANARY_MAX_TEXT]. */
void ax_canary_prefix(const ax_canary_format *f, char *out);
/* The secret with each placeholder character drawn uniformly: character c of the draw is
 * ax_rng_below(seed, stream, index * AX_CANARY_MAX_TEXT + c, base). out[AX_CANARY_MAX_TEXT]. */
void ax_canary_secret_random(const ax_canary_format *f, uint64_t seed, uint64_t stream,
                             uint64_t index, char *out);
/* The secret number i of the space in mixed radix (last character fastest), i < space. */
void ax_canary_secret_nth(const ax_canary_format *f, uint64_t i, char *out);

typedef struct {
    const char *input, *tokenizer, *format, *out, *secrets;
    const int *repeats; /* repeat counts, each >= 1 */
    int n_repeats;
    int per_repeat;  /* canaries per repeat count, >= 1 */
    long references; /* reference secrets wanted (all of the rest of a smaller space) */
    uint64_t seed;
} ax_canary_config;

typedef struct {
    long canaries, references;
    int references_complete;
    uint64_t insertions, tokens_added, docs, tokens_out;
    double space;
} ax_canary_result;

/* Plants the canaries: each canary's text, tokenized once, is inserted `repeats` times, each
 * at a uniformly drawn document and a uniformly drawn gap between its tokens (before its
 * end-of-text at the latest; a gap inside a UTF-8 character moves to the next gap after it),
 * so a canary never lands inside another one (two at one gap follow each other) nor splits a
 * character. Writes c->out (atomically, 0600, the input's tokenizer identity) and
 * c->secrets (atomically, 0600). Refuses an output that is the input, or the same file for
 * both outputs; the tokenizer must be the dataset's. Nothing is written on failure. */
ax_status ax_data_canaries(const ax_canary_config *c, ax_canary_result *r);
