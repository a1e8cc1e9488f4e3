/* MPI start-up that stays out of the way of serial runs.
 *
 * MPI is initialised only when the process was started by a launcher (mpirun/srun/...: env
 * OMPI_COMM_WORLD_SIZE, PMI_SIZE, PMIX_RANK or SLURM_PROCID present). A serial run never calls
 * into MPI, so `axmem train` works without mpirun (and as root, without Open MPI's root
 * environment variables).
 *
 * Thread level is MPI_THREAD_FUNNELED: only the main thread calls MPI (collectives are issued
 * outside OpenMP parallel regions). */
#pragma once
#include "lib/core/status.h"

/* Call once, first thing in main. Initialises MPI when launched (see above), sets
 * MPI_ERRORS_RETURN on MPI_COMM_WORLD and prefixes log lines with the world rank. Without
 * OMP_NUM_THREADS, the ranks on a node share its cores (cores / local ranks threads each).
 * Returns AX_ERR_MPI when MPI_Init_thread fails or the funneled level is unavailable. */
ax_status ax_mpi_start(int *argc, char ***argv);
int ax_mpi_active(void);     /* 1 when MPI was initialised by ax_mpi_start */
int ax_mpi_world_rank(void); /* 0 when serial */
int ax_mpi_world_size(void); /* 1 when serial */
void ax_mpi_stop(void);      /* MPI_Finalize if ax_mpi_start initialised MPI; idempotent */
/* Terminates every rank (MPI_Abort when active, exit(code) otherwise): for a failure on one
 * rank that the others cannot learn about through a collective. */
void ax_mpi_abort(int code) __attribute__((noreturn));
