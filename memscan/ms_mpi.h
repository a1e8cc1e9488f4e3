/* MPI for memscan, guarded: library code takes the MPI path only when MPI is initialised with
 * more than one rank in MPI_COMM_WORLD; otherwise it runs serially and makes no MPI calls
 * beyond MPI_Initialized/MPI_Finalized (which are legal at any time, even in forked tests).
 * Whoever owns main initialises MPI (lib/dist/mpienv.h for the CLI, MPI_Init in test drivers). */
#pragma once
#include <stdint.h>

#include "lib/core/status.h"

typedef struct {
    int active; /* 1: MPI path on MPI_COMM_WORLD */
    int rank, size;
} ax_ms_world;

ax_ms_world ax_ms_world_get(void);

/* Reductions that are no-ops (copy through) on the serial path. */
int ax_ms_allreduce_u64(const ax_ms_world *w, uint64_t *v, int n, int op_max);
int ax_ms_allreduce_max_u8(const ax_ms_world *w, uint8_t *v, int n);
/* A status all ranks agree on: the worst one. A rank that was fine but sees another's failure
 * gets a message "WHAT: another rank failed (see its message)". Serial: st unchanged. */
ax_status ax_ms_agree(const ax_ms_world *w, ax_status st, const char *what);
