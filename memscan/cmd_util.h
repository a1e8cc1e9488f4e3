/* Argument helpers shared by the `axmem memscan` subcommands (memscan/cmd_*.c). Usage errors
 * exit 2 and runtime failures 1, each with one line on stderr. */
#pragma once
#include <stdint.h>

#include "lib/core/config.h"
#include "lib/core/status.h"

int ax_ms_cli_usage(const char *sub, const char *fmt, const char *arg); /* returns 2 */
int ax_ms_cli_fail(const char *sub, ax_status st);                      /* 1, or 2 for AX_ERR_ARG */
/* Defaults, then argv into fl by the table t: -1 to go on, else the exit code (0 after --help,
 * 2 for a usage error). Only rank 0 prints, as every rank parses the same argv. */
int ax_ms_cli_parse(const char *sub, const ax_cfg_table *t, void *fl, int argc, char **argv);

int ax_ms_cmd_lookup(int argc, char **argv);   /* memscan/cmd_lookup.c */
int ax_ms_cmd_probe(int argc, char **argv);    /* memscan/cmd_probe.c */
int ax_ms_cmd_generate(int argc, char **argv); /* memscan/cmd_generate.c */
int ax_ms_cmd_mia(int argc, char **argv);      /* memscan/cmd_mia.c */
int ax_ms_cmd_exposure(int argc, char **argv); /* memscan/cmd_exposure.c */
