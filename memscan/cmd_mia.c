/* `axmem memscan mia`: membership inference on member / non-member document sets. The work is
 * ax_ms_mia_run (memscan/mia_run.h); this parses the flags and prints one line per score. */
#include "memscan/cmd_util.h"
#include "memscan/over_steps.h"
#include "memscan/mia_run.h"

#include <stdio.h>

int ax_ms_cmd_mia(int argc, char **argv) {
    int over = ax_ms_over_steps(&ax_ms_steps_mia, argc, argv); /* --all-steps */
    if (over >= 0) return over;
    ax_ms_mia_opts fl;
    ax_ms_mia_summary sum;
    int rc = ax_ms_cli_parse("mia", &ax_ms_mia_table, &fl, argc, argv);
    if (rc >= 0) return rc;
    ax_status st = ax_ms_mia_run(&fl, &sum);
    if (st != AX_OK) return ax_ms_cli_fail("mia", st);
    ax_ms_mia_print(&fl, &sum, stdout);
    return 0;
}
