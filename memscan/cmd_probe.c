/* `axmem memscan probe`: extractable memorization of a checkpoint on its training data. The
 * work is ax_ms_probe_run (memscan/probe_run.h); this parses the flags and prints the headline
 * numbers. */
#include "lib/core/config.h"
#include "lib/dist/mpienv.h"
#include "memscan/cmd_util.h"
#include "memscan/over_steps.h"
#include "memscan/probe_run.h"

#include <stdio.h>

int ax_ms_cmd_probe(int argc, char **argv) {
    int over = ax_ms_over_steps(&ax_ms_steps_probe, argc, argv); /* --all-steps */
    if (over >= 0) return over;
    ax_ms_probe_opts fl;
    ax_ms_probe_summary sum;
    int help = 0;
    ax_status st = ax_cfg_set_defaults(&ax_ms_probe_table, &fl);
    if (st == AX_OK) st = ax_cfg_parse_argv(&ax_ms_probe_table, &fl, argc, argv, NULL, &help);
    if (help) {
        ax_cfg_print_help(&ax_ms_probe_table, stdout);
        return 0;
    }
    if (st == AX_OK) st = ax_ms_probe_run(&fl, &sum);
    if (st != AX_OK) {
        if (ax_mpi_world_rank() == 0) fprintf(stderr, "axmem memscan probe: %s\n", ax_error_msg());
        return st == AX_ERR_ARG ? 2 : 1;
    }
    ax_ms_probe_print(&fl, &sum, stdout);
    return 0;
}
