/* `axmem help --markdown` (cli/help_markdown.c): prints the command reference, docs/cli.md. */
#pragma once
#include <stdio.h>

/* usage: prints `axmem --help`; run: calls a command as main would (argv[0] its name), without
 * starting MPI. Returns the exit code: 1 when a command's --help fails. */
int ax_cli_help_markdown(void (*usage)(FILE *), int (*run)(int, char **));
