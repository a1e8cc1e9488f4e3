#include "lib/dist/mpienv.h"
#include "lib/core/cliargs.h"
#include "lib/core/log.h"
#include "lib/core/stop.h"

#include <mpi.h>
#include <omp.h>
#include <stdlib.h>

static int g_active;   /* we called MPI_Init_thread */
static int g_finished; /* we called MPI_Finalize */
static int g_rank, g_size = 1;

/* Launched by a process manager? Each launcher exports one of these into every rank. */
static int launched(void) {
    static const char *vars[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "SLURM_PROCID"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
        if (getenv(vars[i])) return 1;
    return 0;
}

/* Ranks on one node split its cores unless OMP_NUM_THREADS says otherwise: 8 ranks each
 * spinning up a thread per core on a 2-core machine would thrash. */
static void share_cores(void) {
    if (getenv("OMP_NUM_THREADS")) return;
    MPI_Comm node;
    int local = 1;
    if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) !=
        MPI_SUCCESS)
        return;
    MPI_Comm_size(node, &local);
    MPI_Comm_free(&node);
    int threads = omp_get_num_procs() / local;
    omp_set_num_threads(threads > 0 ? threads : 1);
    ax_log(AX_LOG_DEBUG,
           "%d ranks on this node: %d OpenMP threads each (set OMP_NUM_THREADS to "
           "choose)",
           local, threads > 0 ? threads : 1);
}

ax_status ax_mpi_start(int *argc, char ***argv) {
    if (g_active || g_finished) return AX_OK;
    if (!launched()) return AX_OK;
    int provided = 0;
    if (MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS)
        return ax_errorf(AX_ERR_MPI, "MPI_Init_thread failed; check the mpirun command line (a "
                                     "serial run needs no launcher)");
    g_active = 1;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    if (provided < MPI_THREAD_FUNNELED) {
        ax_mpi_stop();
        return ax_errorf(AX_ERR_MPI,
                         "this MPI library provides thread level %d, below MPI_THREAD_FUNNELED; "
                         "use an MPI built with thread support",
                         provided);
    }
    ax_log_set_rank(g_rank);
    ax_cli_set_world(g_rank, g_size);
    ax_stall_set_rank(g_rank);
    share_cores();
    return AX_OK;
}

int ax_mpi_active(void) {
    return g_active;
}
int ax_mpi_world_rank(void) {
    return g_active ? g_rank : 0;
}
int ax_mpi_world_size(void) {
    return g_active ? g_size : 1;
}

void ax_mpi_stop(void) {
    if (!g_active) return;
    MPI_Finalize();
    g_active = 0;
    g_finished = 1;
    g_rank = 0;
    g_size = 1;
}

void ax_mpi_abort(int code) {
    if (g_active) MPI_Abort(MPI_COMM_WORLD, code);
    exit(code);
}
