/* Canaries: `axmem data canaries` plants random secrets of a given format in
 * a dataset at chosen repeat counts and writes them, with never-planted reference secrets of
 * the same format, to a secrets file (mode 0600) that `axmem memscan exposure` reads.
 *
 * Format mini-language: literal text plus placeholders {dN} (N decimal digits), {aN} (N
 * lowercase letters), {hN} (N lowercase hex digits), 1 <= N <= 64. "{{" and "}}" are a
 * literal brace; any other brace is an error. At least one placeholder. The literal text
 * before the first placeholder is the PREFIX; everything from the first placeholder on
 * (placeholders filled, later literal text kept) is the SECRET; LEAD + prefix + secret is the
 * canary's TEXT, where the lead is " " for a canary planted between sentences and "" for one
 * planted as a document. The SPACE is the number of secrets the placeholders can form (product
 * of 10^N, 26^N, 16^N), a double (exact below 2^53).
 *
 * Placement, as a canary study plants them (each copy a whole segment of the text, so the
 * canaried corpus decodes to text that re-encodes to the same tokens):
 *  - between sentences (default): " " + prefix + secret goes at a token boundary of a document
 *    where the text before ends a sentence ('.', '!' or '?', then any closing quotes or
 *    brackets) and the text after starts with whitespace, or at the document's end (before its
 *    end-of-text). A boundary is taken only if decoding the document, inserting the text there
 *    and encoding gives back the document's tokens with the canary's own tokens (the encoding
 *    of the text alone) in between; else another is drawn.
 *  - as documents (as_documents): each copy is a document of its own, prefix + secret, at a
 *    uniformly drawn place among the documents.
 * within > 0 (for `train --packing doc --seq-len within`, which trains on a document's first
 * seq-len tokens): every copy ends within the first `within` tokens of its document, counting
 * every copy planted in that document.
 *
 * Secrets file (JSON, version 2; version 1 had no lead, placement or identity):
 *   {"version":2, "format":F, "space":S, "seed":SEED, "tokenizer":"<path as given>",
 *    "dataset":"<output .axd as given>", "dataset_xxh3":"0x...", "dataset_docs":D,
 *    "dataset_tokens":N, "placement":"sentence-boundary"|"documents", "within":W, "lead":" ",
 *    "references_complete":bool,
 *    "canaries":[{"id":0, "prefix":"my PIN is ", "secret":"123456", "repeats":4,
 *                 "tokens":[ids of the canary text, as planted], "prefix_tokens":P,
 *                 "inserted":[{"doc":12, "token_pos":345}, ...]}, ...],
 *    "references":["654321", ...]}
 * prefix_tokens P: the leading tokens whose bytes lie wholly inside lead + prefix (the tokenizer
 * may join the prefix's last bytes with the secret's first, e.g. " 123456"); greedy decoding
 * continues them. token_pos is where the canary's first token sits in that document of the
 * OUTPUT dataset; dataset_xxh3 is the output's payload checksum (ax_axd_checksum). references
 * are distinct from each other and from every canary; references_complete is true when they are
 * every other string of the space (small spaces: exposure by exact enumeration). */
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
    int as_documents; /* each copy a document of its own (else between sentences) */
    long within;      /* > 0: copies end within a document's first `within` tokens */
} ax_canary_config;

typedef struct {
    long canaries, references;
    int references_complete;
    uint64_t insertions, tokens_added, docs, tokens_out;
    uint64_t redrawn; /* boundaries drawn and refused (re-encoding moved the tokens), documents
                         with no boundary left (or none within `within`) */
    double space;
} ax_canary_result;

/* Plants the canaries: each canary's copies in turn, each in a uniformly drawn document (one
 * with a boundary left, see above) at a uniformly drawn boundary of it, or as a document at a
 * uniformly drawn place. Writes c->out (atomically, 0600, the input's tokenizer identity) and
 * c->secrets (atomically, 0600). Refuses an output that is the input, or the same file for both
 * outputs; the tokenizer must be the dataset's. Nothing is written on failure (an error names
 * what to change when no boundary can be found, e.g. --as-documents). */
ax_status ax_data_canaries(const ax_canary_config *c, ax_canary_result *r);
