/* `axmem memscan exposure`: exposure of the canaries `axmem data canaries` inserted. The work
 * is ax_ms_exposure_run (memscan/exposure_run.h); this parses the flags and prints the table by
 * repeat count. */
#include "cli/commands.h"
#include "lib/core/cliargs.h"
#include "memscan/exposure_run.h"
#include "memscan/over_steps.h"

#include <stdio.h>

int ax_cmd_memscan_exposure(int argc, char **argv) {
    int over = ax_ms_over_steps(&ax_ms_steps_exposure, argc, argv); /* --all-steps */
    if (over >= 0) return over;
    ax_ms_exposure_opts fl;
    ax_ms_exposure_summary sum;
    int rc = ax_cli_parse("memscan exposure", &ax_ms_exposure_table, &fl, argc, argv, NULL);
    if (rc >= 0) return rc;
    ax_status st = ax_ms_exposure_run(&fl, &sum);
    if (st != AX_OK) return ax_cli_fail("memscan exposure", st);
    ax_ms_exposure_print(&sum, stdout);
    return 0;
}
