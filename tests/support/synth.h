/* Synthetic .axd corpora with planted duplicates, for tests and benchmarks: random documents
 * (tokens drawn from a small alphabet give natural repeats, a large one gives none), plus
 * passages each copied into several distinct documents at random offsets. */
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "lib/core/status.h"

typedef struct {
    uint32_t vocab; /* dataset vocabulary (>= 257) */
    uint64_t n_docs;
    uint32_t doc_len_min, doc_len_max; /* tokens per document before end-of-text */
    uint32_t alphabet;                 /* tokens drawn from [0, alphabet), never end-of-text */
    uint32_t n_passages, passage_len;  /* planted passages */
    uint32_t copies;                   /* documents passage 0 is copied into */
    uint32_t copies_growth;            /* passage j gets copies * growth^j copies (0, 1: same) */
    uint64_t seed;
} ax_memscan_synth_opts;

typedef struct {
    uint32_t passage;
    uint64_t doc, offset; /* where this copy starts: document, token offset inside it */
    uint64_t pos;         /* the same as a global token position */
} ax_memscan_plant;

/* Writes the corpus to path. Each planted document holds exactly one copy (documents shorter
 * than the passage are skipped). *plants (may be NULL) gets every copy, in document order;
 * plants need as many documents as copies in all. */
ax_status ax_memscan_synth_write(const char *path, const ax_memscan_synth_opts *o,
                                 ax_memscan_plant **plants, size_t *n_plants);
/* The tokens of planted passage j (len passage_len), as written. */
void ax_memscan_synth_passage(const ax_memscan_synth_opts *o, uint32_t j, int32_t *out);
