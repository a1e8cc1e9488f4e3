/* axmem: maps a subcommand name to its folder's entry point. */
#include "cli/commands.h"
#include "cli/help_markdown.h"
#include "lib/core/log.h"
#include "lib/dist/mpienv.h"
#include "lib/core/stop.h"

#include <stdio.h>
#include <string.h>

typedef struct {
    const char *name;
    int (*fn)(int, char **);
    const char *help;
} command;

static const command commands[] = {
    {"data", ax_cmd_data, "tokenizer training, corpus -> .axd encoding, decoding, inspection"},
    {"train", ax_cmd_train, "train a model (goldfish loss, checkpoints, metrics.jsonl)"},
    {"goldfish", ax_cmd_goldfish, "goldfish loss masks: show which tokens a spec drops"},
    {"dp", ax_cmd_dp, "privacy accountant: epsilon of DP-SGD settings, or the noise for a target"},
    {"memscan", ax_cmd_memscan,
     "training-set index, lookups, extraction probes, regurgitation scans"},
    {"model", ax_cmd_model,
     "Hugging Face Llama-family models: import to / export from checkpoints"},
    {"report", ax_cmd_report, "scan results -> self-contained HTML (inline SVG), Markdown, JSON"},
    {"plan", ax_cmd_plan, "rank 4D grids by predicted step time, compute/comm/memory breakdown"},
    {"study", ax_cmd_study,
     "compare mitigations (none, goldfish, dedup, dp) on one split: train, scan, one report"},
    {"demo", ax_cmd_demo,
     "the whole job on the bundled corpus: baseline vs goldfish, scans, report"},
    {"version", ax_cmd_version,
     "this build: commit, BLAS, CUDA plugin, NCCL; --devices lists GPUs"},
};
static const int n_commands = (int)(sizeof commands / sizeof commands[0]);

static void usage(FILE *f) {
    fprintf(f, "usage: axmem COMMAND [flags]   (axmem COMMAND --help for its flags)\n\n"
               "Train transformer language models with memorization mitigation and measure\n"
               "how much of their training data they regurgitate.\n\ncommands:\n");
    for (int i = 0; i < n_commands; i++)
        fprintf(f, "  %-8s %s\n", commands[i].name, commands[i].help);
    fprintf(f,
            "\nenvironment (docs/env.md):\n"
            "  AXMEM_LOG=error|warn|info|debug  log level (default: info)\n"
            "  AXMEM_STALL_TIMEOUT=SECONDS      fail a multi-rank job whose ranks wait longer\n"
            "                                   than this in one collective (default 600, 0 =\n"
            "                                   off; train: --stall-timeout)\n"
            "  AXMEM_CUDA_PLUGIN=PATH           the CUDA plugin, libaxmem_cuda.so (default:\n"
            "                                   ../lib/ beside this program)\n"
            "  AXMEM_CUDA_PROFILE=1             print each CUDA op's device time at exit\n"
            "  AXMEM_CACHE_DIR=DIR|off          where datasets of 64 MiB or more are remembered\n"
            "                                   as verified (default: $XDG_CACHE_HOME/axmem/\n"
            "                                   verified, else ~/.cache/axmem/verified; off:\n"
            "                                   hash every time)\n"
            "  OMP_NUM_THREADS=N                threads per rank (default: all cores, shared\n"
            "                                   by the ranks of a node)\n"
            "  NO_COLOR, TERM=dumb              no colour from goldfish show --color auto\n"
            "\nCtrl-C (SIGINT), SIGTERM, SIGHUP, SIGUSR1 and SIGUSR2 stop at the next safe\n"
            "point (train: after the current step, with a checkpoint); a second one exits\n"
            "at once.\n");
}

/* argv[0] names the command; -1 when there is none of that name */
static int run_command(int argc, char **argv) {
    for (int i = 0; i < n_commands; i++)
        if (!strcmp(argv[0], commands[i].name)) return commands[i].fn(argc, argv);
    return -1;
}

int main(int argc, char **argv) {
    /* before MPI_Init and before any OpenMP/oneDNN thread: every thread inherits the blocked
     * stop signals, and only lib/stop's thread receives them (lib/core/stop.h says why) */
    if (ax_stop_start() != AX_OK) {
        fprintf(stderr, "axmem: %s\n", ax_error_msg());
        return 2;
    }
    ax_log_init();
    ax_cmd_data_set_dedup(ax_cmd_data_dedup);
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    static char version_cmd[] = "version";
    if (!strcmp(argv[1], "--version")) argv[1] = version_cmd;
    if (!strcmp(argv[1], "help") && argc == 3 && !strcmp(argv[2], "--markdown")) {
        const char *names[sizeof commands / sizeof commands[0]];
        for (int i = 0; i < n_commands; i++) names[i] = commands[i].name;
        return ax_cli_help_markdown(usage, run_command, names, n_commands); /* docs/cli.md */
    }
    if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    for (int i = 0; i < n_commands; i++) {
        if (strcmp(argv[1], commands[i].name)) continue;
        /* MPI only when launched by mpirun/srun: serial runs never touch it */
        if (ax_mpi_start(&argc, &argv) != AX_OK) {
            fprintf(stderr, "axmem: %s\n", ax_error_msg());
            return 1;
        }
        ax_error_clear(); /* no message from start-up may pose as this command's cause */
        int rc = commands[i].fn(argc - 1, argv + 1);
        ax_mpi_stop();
        return rc;
    }
    fprintf(stderr, "axmem: unknown command '%s'; run 'axmem --help' for the list\n", argv[1]);
    return 2;
}
