/* `axmem memscan`: the corpus index's commands (index/: index, lookup, info) and the model
 * scans (this folder: generate, probe, mia, exposure), each scan's flags parsed here and its
 * work done by its X_run.c (memscan/probe_run.h, ...). MPI is started by the dispatcher
 * (cli/main.c) under a launcher; index and the scans are collective then. */
#include "cli/commands.h"
#include "lib/core/cliargs.h"
#include "memscan/generate_run.h"
#include "memscan/over_steps.h"

#include <stdio.h>
#include <stdlib.h>

static const char *TOP_HELP =
    "usage: axmem memscan SUBCOMMAND [flags]   (axmem memscan SUBCOMMAND --help)\n\n"
    "n-gram index of the training set, lookups against it, and scans of checkpoints for\n"
    "memorized training text.\n\n"
    "subcommands:\n"
    "  index     hash every n-token window of a .axd dataset into an index (MPI: mpirun -np N)\n"
    "  lookup    is this passage in the training data? longest verbatim span, sources\n"
    "  info      describe an index: dataset, window length, duplication histogram\n"
    "  generate  regurgitation scan: free generations slid over the index, verbatim spans\n"
    "  probe     extractable memorization of a checkpoint: prefix -> greedy suffix, exact match\n"
    "  mia       membership inference: member vs non-member documents, ROC AUC per score\n"
    "  exposure  canary exposure: rank of each inserted secret among its format's candidates\n";

/* probe, mia, exposure: over a run's checkpoints (--all-steps, --steps), or one checkpoint:
 * its flags, the run, and the headline lines */
static int scan(const ax_ms_steps_kind *k, int argc, char **argv) {
    int rc = ax_ms_over_steps(k, argc, argv);
    if (rc >= 0) return rc;
    char cmd[32];
    snprintf(cmd, sizeof cmd, "memscan %s", k->name);
    void *fl = malloc(k->opts_size), *sum = malloc(k->summary_size);
    if (!fl || !sum) rc = ax_cli_fail(cmd, ax_errorf(AX_ERR_NOMEM, "out of memory"));
    if (rc < 0) rc = ax_cli_parse(cmd, k->table, fl, argc, argv, NULL);
    if (rc < 0) {
        ax_status st = k->run(fl, sum);
        if (st == AX_OK) k->print(fl, sum, stdout);
        rc = st == AX_OK ? 0 : ax_cli_fail(cmd, st);
    }
    free(fl);
    free(sum);
    return rc;
}

static int cmd_probe(int argc, char **argv) {
    return scan(&ax_ms_steps_probe, argc, argv);
}
static int cmd_mia(int argc, char **argv) {
    return scan(&ax_ms_steps_mia, argc, argv);
}
static int cmd_exposure(int argc, char **argv) {
    return scan(&ax_ms_steps_exposure, argc, argv);
}

static int cmd_generate(int argc, char **argv) {
    ax_ms_generate_opts fl;
    ax_ms_generate_summary sum;
    int rc = ax_cli_parse("memscan generate", &ax_ms_generate_table, &fl, argc, argv, NULL);
    if (rc >= 0) return rc;
    ax_status st = ax_ms_generate_run(&fl, &sum);
    if (st != AX_OK) return ax_cli_fail("memscan generate", st);
    ax_ms_generate_print(&sum, stdout);
    return 0;
}

int ax_cmd_memscan(int argc, char **argv) {
    static const ax_cli_sub subs[] = {{"index", ax_cmd_memscan_index},
                                      {"lookup", ax_cmd_memscan_lookup},
                                      {"info", ax_cmd_memscan_info},
                                      {"generate", cmd_generate},
                                      {"probe", cmd_probe},
                                      {"mia", cmd_mia},
                                      {"exposure", cmd_exposure}};
    return ax_cli_dispatch("memscan", TOP_HELP, subs, (int)(sizeof subs / sizeof subs[0]), argc,
                           argv);
}
