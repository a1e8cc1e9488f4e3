/* Exact duplicate documents for `data dedup --documents` (index/dedup_run.h). */
#pragma once
#include <stdint.h>

#include "data/axd.h"
#include "lib/dist/grid.h"

/* dup[d] = 1 when document d is identical (every token) to an earlier document. Documents are
 * hashed (XXH3 of their tokens with seed, masked to `bits` as window hashes are), each rank
 * hashing an equal share; rank 0 groups equal hashes and confirms by comparing tokens, so the
 * answer is exact whatever the hash. Collective over g's world axis (g NULL: serial); *dup
 * (malloc'd, n_docs bytes) and *n_dup on rank 0, NULL and 0 elsewhere. */
ax_status ax_dedup_docs(const ax_axd_t *ds, ax_grid_t *g, uint64_t seed, int bits, uint8_t **dup,
                        uint64_t *n_dup);
