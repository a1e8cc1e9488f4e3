/* Stop requests (Ctrl-C, SIGTERM, ...) and the stalled-rank watchdog: the one place where
 * asynchronous signals reach axmem.
 *
 * Why a thread and not a handler: a signal handler runs on whichever thread the kernel picks,
 * and oneDNN 2.6's AVX-512 sgemm (Debian 12) points the stack pointer into heap memory while
 * it runs, so a handler frame, even a no-op one, lands on the heap and corrupts it. So
 * ax_stop_start() blocks the stop signals before any other thread exists (every thread
 * inherits the mask) and one dedicated thread receives them with sigtimedwait(). Commands
 * that stop cleanly call ax_stop_catch() and poll the stop flag at safe points: a signal then
 * only sets the flag, and a second one ends the process at once (default action, after a
 * one-line message). Commands that never call ax_stop_catch() end at the first signal as if
 * there were no thread (default action, run on the signal thread). Once a second, the same
 * thread checks the watchdog below.
 *
 * Stop signals: SIGINT, SIGTERM, SIGUSR1, SIGUSR2 (mpirun forwards the last two to every rank;
 * Slurm's --signal can send them ahead of a time limit), and SIGHUP unless it is ignored
 * (nohup). Without ax_stop_start() (unit tests, MPI test drivers) nothing is blocked, the
 * flag stays 0 unless ax_stop_request() sets it, and the watchdog never fires. */
#pragma once
#include "lib/core/status.h"

/* Call first thing in main, before MPI_Init and before any OpenMP/BLAS thread starts. Also
 * reads AXMEM_STALL_TIMEOUT (seconds, default 600). Once per process; a failure leaves the
 * signal mask as it was. */
ax_status ax_stop_start(void);
int ax_stop_started(void);
/* This process polls the flag from now on (process-wide, stays on). */
void ax_stop_catch(void);

int ax_stop_requested(void); /* 1 once a stop was requested */
int ax_stop_signal(void);    /* the signal that requested it; 0 if none or requested in code */
/* The flag as a pointer, for loops that take a `volatile int *stop` (nonzero = stop). */
volatile int *ax_stop_flag(void);
const char *ax_stop_signal_name(int sig); /* "SIGINT", ...; "request" for 0 */
void ax_stop_request(int sig); /* as if `sig` had arrived (0: no signal); for tests and code */
void ax_stop_clear(void);      /* forget a request: in-process runs one after another (tests) */

/* ---- stalled-rank watchdog ----
 * Code about to block in a collective calls ax_stall_begin; when it returns, ax_stall_end.
 * If one wait lasts longer than the timeout, another rank has stopped progressing (killed,
 * SIGSTOPped, deadlocked): the watchdog prints "rank R: waited N s in OP over AXIS: ..." and
 * _exit(1)s, after which the launcher (mpirun, srun) ends the job. Only waits inside
 * collectives over more than one rank are marked, so serial runs are never affected. */
void ax_stall_set_timeout(double seconds); /* 0 = off */
double ax_stall_timeout(void);
void ax_stall_set_rank(int rank);                      /* for the message; ax_mpi_start sets it */
void ax_stall_begin(const char *op, const char *axis); /* static strings */
void ax_stall_end(void);
