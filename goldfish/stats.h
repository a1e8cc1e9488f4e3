/* What a goldfish spec does to a whole dataset: the dropped fraction of its targets, the targets
 * kept because they open a document, and the longest run of supervised targets inside one
 * document (the longest passage the model is trained on verbatim). `axmem goldfish stats`
 * prints it; the demo and tests call it directly. */
#pragma once
#include <stdint.h>

#include "data/axd.h"
#include "goldfish/goldfish.h"
#include "lib/core/status.h"

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
