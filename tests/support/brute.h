/* Brute-force reference for the memscan index: every window sorted by content, for tests and
 * the MPI driver to check the hash index against (small datasets only: ~20 bytes per token). */
#pragma once
#include <stdint.h>

#include "data/axd.h"
#include "index/index.h"

typedef struct {
    int n;
    uint64_t n_tokens;
    uint32_t *count; /* [n_tokens]: occurrences of the window starting here (0: no window) */
    uint64_t *first; /* [n_tokens]: its first occurrence */
    uint64_t *occ;   /* [n_windows]: window starts grouped by window, ascending in a group */
    uint64_t *at;    /* [n_tokens]: where the group of the window starting here begins in occ */
    uint64_t n_windows, n_distinct, hist[AX_MEMSCAN_HIST];
} ax_memscan_brute;

ax_status ax_memscan_brute_build(const ax_axd_t *ds, int n, ax_memscan_brute *out);
void ax_memscan_brute_free(ax_memscan_brute *b);

/* Compares an index with the reference: the info's windows, distinct count and histogram, a
 * lookup of every window of the dataset, and the occurrence list of every repeated window
 * (only the windows this handle owns, for a shard). Returns the number of mismatches; `why`
 * gets the first one. */
uint64_t ax_memscan_brute_check(const ax_memscan_index_t *idx, const ax_memscan_brute *b, char *why,
                                size_t why_len);
