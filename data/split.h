/* Member / non-member splits with ground truth: `axmem data split`.
 *
 * A seeded random draw sends round(holdout * n_docs) documents of one dataset to a held-out
 * set and the rest to a training set, so both come from the same distribution. A held-out
 * document that shares any run of >= ngram tokens with the training set is then dropped (it
 * is neither a clean non-member nor a member): sharing a run of >= N tokens means sharing an
 * N-token window, so every N-token window of the training documents goes into a hash set
 * (XXH3_64 of the ids as little-endian int32) and each held-out window is looked up.
 * Windows never include a document's end-of-text token; a document shorter than N tokens has
 * none. Both sets keep the input's document order.
 *
 * Memory: the set holds 8 bytes per slot, slots = the smallest power of two >= 2 x the
 * training windows (load <= 1/2), i.e. 16-32 bytes per training token, checked against
 * max_memory before anything is allocated, plus 8 bytes per input document for the draw.
 * A 64-bit hash collision could only drop a clean held-out document (never keep an
 * overlapping one); with W training windows the chance per held-out window is ~W / 2^64. */
#pragma once
#include <stdint.h>
#include "lib/core/json.h"
#include "lib/core/status.h"

typedef struct {
    double holdout;      /* fraction of documents drawn into the held-out set, in (0, 1) */
    uint64_t seed;       /* the draw is a function of the seed and the document count only */
    int ngram;           /* N >= 1: the overlap rule's window */
    uint64_t max_memory; /* bytes the n-gram set may take (0: no limit) */
} ax_split_config;

#define AX_SPLIT_LISTED 32 /* dropped documents listed by index in the summary */

typedef struct {
    uint64_t docs, tokens;                 /* input (tokens include each end-of-text) */
    uint64_t train_docs, train_tokens;     /* written to the training set */
    uint64_t drawn_docs;                   /* drawn into held-out, before the n-gram rule */
    uint64_t holdout_docs, holdout_tokens; /* kept and written to the held-out set */
    uint64_t dropped_docs, dropped_tokens; /* drawn but sharing an n-gram with training */
    uint64_t train_windows, table_bytes;   /* the n-gram set: windows inserted, bytes used */
    int n_listed;                          /* the first AX_SPLIT_LISTED dropped documents: */
    uint64_t listed_doc[AX_SPLIT_LISTED];  /*   index in the input */
    uint64_t listed_pos[AX_SPLIT_LISTED];  /*   offset of its first shared window */
} ax_split_result;

/* Reads `input` (verified), writes the two datasets (atomically, mode 0600, the input's
 * tokenizer identity), fills *r. Errors: holdout outside (0, 1) or drawing no document or
 * every document, ngram < 1, an output equal to the input or to the other output, the n-gram
 * set over max_memory (the message says how much it needs), and the reader's and writers'
 * errors. Nothing is written on failure. */
ax_status ax_data_split(const char *input, const char *out_train, const char *out_holdout,
                        const ax_split_config *c, ax_split_result *r);

/* The summary as one JSON object: the config, the counts and the listed drops, with the rule
 * that dropped them. */
void ax_split_result_json(const ax_split_result *r, const ax_split_config *c, ax_jw *w);

/* 1 if paths a and b name the same file: the same existing inode, or the same text. Shared by
 * the data commands that refuse to overwrite their input. */
int ax_data_same_file(const char *a, const char *b);
