/* Occurrence lists of the memscan index: every position of every window that occurs more than
 * once, so spans can be extended against all occurrences, not only the first.
 *
 * In memory (CSR): group g is one duplicated window; its positions pos[off[g], off[g+1]) are
 * ascending, so pos[off[g]] is the window's first occurrence (the table entry's position), and
 * groups are in ascending order of that first occurrence: a window's list is found by binary
 * search on the first occurrence the table gives. 8 bytes per position of a duplicated window
 * plus 8 per duplicated window; windows that occur once cost nothing.
 *
 * Built from the build's merge edges: each time a window already in the table is seen again
 * at position b, the builder records (a, b) with a the table's current first occurrence. The
 * current first can drop later (pairs do not arrive in position order across ranks), so an
 * edge's a is resolved to the window's final first by following the edges that lowered it. */
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "lib/core/status.h"

typedef struct {
    uint64_t a, b;
} ax_ms_edge;

typedef struct {
    uint64_t n_groups, n_pos;
    uint64_t *off; /* [n_groups + 1] */
    uint64_t *pos; /* [n_pos] */
} ax_ms_occ;

/* Groups the edges (consumed: e is reordered and freed) into lists. */
ax_status ax_ms_occ_from_edges(ax_ms_edge *e, uint64_t n_edges, ax_ms_occ *out);
/* Puts the groups in ascending order of their first occurrence (files written by several
 * ranks hold each rank's groups in turn). */
ax_status ax_ms_occ_sort_groups(ax_ms_occ *o);
void ax_ms_occ_free(ax_ms_occ *o);
size_t ax_ms_occ_bytes(const ax_ms_occ *o);

/* The positions of the window whose first occurrence is `first`; 0 if it has no list. */
uint64_t ax_ms_occ_find(const ax_ms_occ *o, uint64_t first, const uint64_t **list);
