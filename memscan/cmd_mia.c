/* `axmem memscan mia`: membership inference on member / non-member document sets. The work is
 * ax_ms_mia_run (memscan/mia_run.h); this parses the flags and prints one line per score. */
#include "cli/commands.h"
#include "lib/core/cliargs.h"
#include "memscan/mia_run.h"
#include "memscan/over_steps.h"

#include <stdio.h>

int ax_cmd_memscan_mia(int argc, char **argv) {
    int over = ax_ms_over_steps(&ax_ms_steps_mia, argc, argv); /* --all-steps */
    if (over >= 0) return over;
    ax_ms_mia_opts fl;
    ax_ms_mia_summary sum;
    int rc = ax_cli_parse("memscan mia", &ax_ms_mia_table, &fl, argc, argv, NULL);
    if (rc >= 0) return rc;
    ax_status st = ax_ms_mia_run(&fl, &sum);
    if (st != AX_OK) return ax_cli_fail("memscan mia", st);
    ax_ms_mia_print(&fl, &sum, stdout);
    return 0;
}
