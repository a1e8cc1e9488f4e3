/* Hand-parsed subcommand flags (commands whose flags take lists or positional text, where the
 * config table does not fit). */
#pragma once
#include <stdint.h>

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
