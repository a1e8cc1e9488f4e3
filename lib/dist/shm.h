/* Memory shared by the ranks of one host: each rank of an axis contributes a segment, and every
 * rank on the same host reads and writes the others' segments directly. For work that moves
 * many small items between ranks (the memscan index build): an owner reads its items where
 * their producer wrote them, instead of a copy into a send buffer, the transport's copy and a
 * receive buffer; and ranks then need to meet only when one runs out of room, not at every
 * exchange. MPI shared windows underneath (files in /dev/shm). Ranks on other hosts get no
 * segment (ax_shm_index is -1); callers fall back to messages there. */
#pragma once
#include <stddef.h>

#include "lib/core/status.h"
#include "lib/dist/grid.h"

typedef struct ax_shm ax_shm;

/* Collective over the axis: every rank gets `bytes` of zeroed memory starting on a page
 * boundary, its pages faulted in now (a fault per page later, inside a hot loop, costs; and a
 * /dev/shm too small fails here instead of killing the process when a page is first written).
 * Returns AX_ERR_UNSUPPORTED on every rank (agreed over the axis) on a serial grid or a 1-rank
 * axis, or when the system cannot give it (/dev/shm smaller than twice what the host's ranks
 * ask, a refused window, a failed populate): the caller then exchanges messages. */
ax_status ax_shm_create(ax_grid_t *g, ax_axis axis, size_t bytes, ax_shm **out);
void ax_shm_free(ax_shm *s); /* accepts NULL; collective over the axis */

int ax_shm_ranks(const ax_shm *s);             /* ranks of the axis on this host */
int ax_shm_all_local(const ax_shm *s);         /* 1 when the whole axis is on this host */
int ax_shm_index(const ax_shm *s, int coord);  /* an axis coordinate's index here; -1: elsewhere */
void *ax_shm_base(const ax_shm *s, int index); /* the segment of the rank with that index */
