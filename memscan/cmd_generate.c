/* `axmem memscan generate`: the regurgitation scan of a checkpoint. The work is
 * ax_ms_generate_run (memscan/generate_run.h); this parses the flags and prints the headline
 * numbers. */
#include "lib/core/config.h"
#include "lib/dist/mpienv.h"
#include "memscan/cmd_util.h"
#include "memscan/generate_run.h"

#include <stdio.h>

int ax_ms_cmd_generate(int argc, char **argv) {
    ax_ms_generate_opts fl;
    ax_ms_generate_summary sum;
    int help = 0;
    ax_status st = ax_cfg_set_defaults(&ax_ms_generate_table, &fl);
    if (st == AX_OK) st = ax_cfg_parse_argv(&ax_ms_generate_table, &fl, argc, argv, NULL, &help);
    if (help) {
        ax_cfg_print_help(&ax_ms_generate_table, stdout);
        return 0;
    }
    if (st == AX_OK) st = ax_ms_generate_run(&fl, &sum);
    if (st != AX_OK) {
        if (ax_mpi_world_rank() == 0)
            fprintf(stderr, "axmem memscan generate: %s\n", ax_error_msg());
        return st == AX_ERR_ARG ? 2 : 1;
    }
    ax_ms_generate_print(&sum, stdout);
    return 0;
}
