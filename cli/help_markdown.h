/* `axmem help --markdown` (cli/help_markdown.c): prints the command reference, docs/cli.md. */
#pragma once
#include <stdio.h>

/* usage: prints `axmem --help`; run: calls a command as main would (argv[0] its name), without
 * starting MPI; commands[n_commands]: main's command names, each of which must have a page.
 * Returns the exit code: 1 when a command's --help fails or a command has no page. */
int ax_cli_help_markdown(void (*usage)(FILE *), int (*run)(int, char **),
                         const char *const *commands, int n_commands);
