/* `axmem memscan`: the corpus index's commands (index/: index, lookup, info) and the model
 * scans (this folder: generate, probe, mia, exposure). MPI is started by the dispatcher
 * (cli/main.c) under a launcher; index and the scans are collective then. */
#include "cli/commands.h"
#include "lib/core/cliargs.h"

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

int ax_cmd_memscan(int argc, char **argv) {
    static const ax_cli_sub subs[] = {
        {"index", ax_cmd_memscan_index},      {"lookup", ax_cmd_memscan_lookup},
        {"info", ax_cmd_memscan_info},        {"generate", ax_cmd_memscan_generate},
        {"probe", ax_cmd_memscan_probe},      {"mia", ax_cmd_memscan_mia},
        {"exposure", ax_cmd_memscan_exposure}};
    return ax_cli_dispatch("memscan", TOP_HELP, subs, (int)(sizeof subs / sizeof subs[0]), argc,
                           argv);
}
