/* Hand-parsed subcommand flags (commands whose flags take lists or positional text, where the
 * config table does not fit). */
#pragma once

/* "-h" or "--help" */
int ax_cli_is_help(const char *a);
/* "--name VALUE" or "--name=VALUE" at argv[*i]: 1 and *val set on a match (advancing *i past a
 * separate value), 0 if argv[*i] is another flag, -1 if the value is missing. */
int ax_cli_flag(int argc, char **argv, int *i, const char *name, const char **val);
