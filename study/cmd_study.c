/* `axmem study`: flags and printing over study/study_run.h. */
#include "cli/commands.h"
#include "lib/core/cliargs.h"
#include "lib/core/fsutil.h"
#include "study/study_run.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int ax_study_cli(const ax_study_config *c) {
    ax_study_result r;
    ax_status st = ax_study_check(c, &r); /* flags checked before any work */
    if (st == AX_OK) st = ax_study_run(c, &r);
    if (st != AX_OK) return ax_cli_fail(c->who, st);
    char *text = NULL;
    size_t len = 0;
    if (ax_read_file(r.summary, &text, &len) == AX_OK) fwrite(text, 1, len, stdout);
    free(text);
    if (!strcmp(c->who, "study"))
        printf("study: %d mitigations, %lld members, %lld non-members, %lld canaries; %d stages "
               "run, %d done before\n",
               r.n, (long long)r.members, (long long)r.nonmembers, (long long)r.canaries,
               r.stages_run, r.stages_skipped);
    printf("wrote %s, %s/report.html, report.md, report.json\n", r.summary, r.report_dir);
    return 0;
}

int ax_cmd_study(int argc, char **argv) {
    ax_study_config c;
    int rc = ax_cli_parse("study", &ax_study_table, &c, argc, argv, NULL);
    if (rc >= 0) return rc;
    c.first_doc = 0, c.title = NULL, c.who = "study";
    return ax_study_cli(&c);
}
