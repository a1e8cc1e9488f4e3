/* Hand-parsed subcommand flags (commands whose flags take lists or positional text, where the
 * config table does not fit). */
#pragma once

/* "-h" or "--help" */
int ax_cli_is_help(const char *a);
/* "--name VALUE" or "--name=VALUE" at argv[*i]: 1 and *val set on a match (advancing *i past a
 * separate value), 0 if argv[*i] is another flag, -1 if the value is missing. */
int ax_cli_flag(int argc, char **argv, int *i, const char *name, const char **val);

/* A command with subcommands ("axmem data encode ..."): argv[0] is the command, argv[1] the
 * subcommand, whose function gets argv + 1. Prints help for "-h"/"--help"/"help"; an unknown
 * or missing subcommand is a usage error (exit 2) listing the valid ones. */
typedef struct {
    const char *name;
    int (*fn)(int argc, char **argv);
} ax_cli_sub;
int ax_cli_dispatch(const char *cmd, const char *help, const ax_cli_sub *subs, int n, int argc,
                    char **argv);
