/* `axmem memscan generate`: the regurgitation scan of a checkpoint. The work is
 * ax_ms_generate_run (memscan/generate_run.h); this parses the flags and prints the headline
 * numbers. */
#include "cli/commands.h"
#include "lib/core/cliargs.h"
#include "memscan/generate_run.h"

#include <stdio.h>

int ax_cmd_memscan_generate(int argc, char **argv) {
    ax_ms_generate_opts fl;
    ax_ms_generate_summary sum;
    int rc = ax_cli_parse("memscan generate", &ax_ms_generate_table, &fl, argc, argv, NULL);
    if (rc >= 0) return rc;
    ax_status st = ax_ms_generate_run(&fl, &sum);
    if (st != AX_OK) return ax_cli_fail("memscan generate", st);
    ax_ms_generate_print(&sum, stdout);
    return 0;
}
