/* `axmem memscan probe`: extractable memorization of a checkpoint on its training data. The
 * work is ax_ms_probe_run (memscan/probe_run.h); this parses the flags and prints the headline
 * numbers. */
#include "cli/commands.h"
#include "lib/core/cliargs.h"
#include "memscan/over_steps.h"
#include "memscan/probe_run.h"

#include <stdio.h>

int ax_cmd_memscan_probe(int argc, char **argv) {
    int over = ax_ms_over_steps(&ax_ms_steps_probe, argc, argv); /* --all-steps */
    if (over >= 0) return over;
    ax_ms_probe_opts fl;
    ax_ms_probe_summary sum;
    int rc = ax_cli_parse("memscan probe", &ax_ms_probe_table, &fl, argc, argv, NULL);
    if (rc >= 0) return rc;
    ax_status st = ax_ms_probe_run(&fl, &sum);
    if (st != AX_OK) return ax_cli_fail("memscan probe", st);
    ax_ms_probe_print(&fl, &sum, stdout);
    return 0;
}
