/* The argument helpers every command shares: its flags through a config table
 * (lib/core/config.h), its usage errors and failures as one line on stderr, subcommand
 * dispatch, hand-parsed flags, and strict numbers. */
#pragma once
#include <stdint.h>

#include "lib/core/config.h"
#include "lib/core/status.h"

/* ---- one command's flags and exit codes ----
 * `cmd` is the command as typed after "axmem" ("data encode", "memscan probe"). Usage errors
 * exit 2 and runtime failures 1, each with one line "axmem CMD: ..." on stderr. Under MPI every
 * rank parses the same argv, so only rank 0 prints help and usage errors; a failure prints on
 * rank 0 and on the rank whose own failure it is, "[rN]"-prefixed (ax_cli_set_world). */
void ax_cli_set_world(int rank, int size); /* lib/dist/mpienv.c, at start-up */
/* Defaults, then argv into fl by table t (was_set as ax_cfg_parse_argv, may be NULL): -1 to go
 * on, else the exit code (0 after --help). */
int ax_cli_parse(const char *cmd, const ax_cfg_table *t, void *fl, int argc, char **argv,
                 uint8_t *was_set);
/* "axmem CMD: <fmt with arg>; see 'axmem CMD --help'"; returns 2 */
int ax_cli_usage(const char *cmd, const char *fmt, const char *arg);
/* "axmem CMD: <the error message>"; returns 2 for AX_ERR_ARG, else 1 */
int ax_cli_fail(const char *cmd, ax_status st);
/* Each required text flag: {value, "--flag VALUE"}; the usage error (2) for the first empty
 * one, else 0. */
int ax_cli_require(const char *cmd, const char *const (*need)[2], int n);

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

/* ---- strict number parsing for flags, config files and environment variables ----
 * Only what a person means by a decimal number is accepted: an optional '-', digits without
 * a leading zero ("0" itself is fine), an optional fraction (".5" is 0.5) and exponent. Rejected:
 * leading
 * '+' or whitespace, trailing text, hex and octal ("0x10", "010"), "inf", "nan", an empty
 * string. Each returns 1 when s is valid and fits (the value in *out), 0 when it is not a
 * number of that kind, -1 when it is one but out of the type's range. */
/* an integer; decimal exponent forms that are exactly integral ("1e6", "2.5e3") count, up to
 * 2^53 (where every integer is exact in a double) */
int ax_parse_i64(const char *s, int64_t *out);
/* a finite double: the decimal syntax above (no "0x1p3" hex floats) */
int ax_parse_f64(const char *s, double *out);
/* a byte or item count: digits, then an optional binary suffix K, M, G or T (2^10 ..
 * 2^40, either case) optionally followed by "B" or "iB": "64M", "1KiB", "4096" */
int ax_parse_size(const char *s, uint64_t *out);
