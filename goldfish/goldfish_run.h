/* `axmem goldfish show` and `axmem goldfish stats` as library calls (goldfish/cmd_goldfish.c
 * parses their flags and prints): what a spec drops from one text, and from a whole dataset
 * (the dropped fraction of its targets, the targets kept because they open a document, and
 * the longest run of supervised targets inside one document: the longest passage the model is
 * trained on verbatim). */
#pragma once
#include <stdint.h>

#include "data/axd.h"
#include "data/tokenizer.h"
#include "goldfish/goldfish.h"
#include "lib/core/status.h"

/* `show`: text[len] tokenized as one document and masked by g. */
typedef struct {
    int32_t *ids;  /* [n] */
    uint8_t *keep; /* [n]: 0 where g drops the target */
    size_t n;
    long dropped;
    uint64_t longest; /* the longest run of kept targets */
} ax_goldfish_shown;
ax_status ax_goldfish_show(const ax_goldfish *g, const ax_tokenizer_t *tok, const char *text,
                           size_t len, ax_goldfish_shown *out);
void ax_goldfish_shown_free(ax_goldfish_shown *s);

typedef struct {
    uint64_t docs, tokens;
    uint64_t targets;     /* every token after the first (each predicted from those before) */
    uint64_t dropped;     /* targets the spec drops */
    uint64_t prefix_kept; /* hash: targets kept as one of the first h of their document */
    double dropped_frac;  /* dropped / targets */
    double expected_frac; /* 1/k (0 for none) */
    double dropped_frac_after_prefix; /* hash: dropped / (targets - prefix_kept) */
    uint64_t longest_run; /* longest run of kept targets not crossing a document start */
    int run_located;      /* 1 when longest_run_doc/_start are meaningful (not static) */
    uint64_t longest_run_doc, longest_run_start; /* its document and first token within it */
    double seconds;
} ax_goldfish_stats;

/* Longest run of kept targets (keep[i] = 1) that does not cross a document start (doc_pos 0). */
uint64_t ax_goldfish_longest_run(const uint8_t *keep, const uint32_t *doc_pos, long n);

/* Applies g to d's token stream (documents from its offsets); static masks restart every
 * seq_len targets, as in training. Shows progress at info level on long datasets; a stop
 * signal ends it with AX_ERR_INTERRUPTED (nothing reported). */
ax_status ax_goldfish_stats_compute(const ax_goldfish *g, const ax_axd_t *d, uint64_t seq_len,
                                    ax_goldfish_stats *out);
