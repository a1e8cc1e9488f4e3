#include "lib/core/cliargs.h"
#include "lib/core/status.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int ax_cli_is_help(const char *a) {
    return !strcmp(a, "-h") || !strcmp(a, "--help");
}

int ax_cli_flag(int argc, char **argv, int *i, const char *name, const char **val) {
    const char *a = argv[*i];
    size_t n = strlen(name);
    if (strncmp(a, name, n) != 0) return 0;
    if (a[n] == '=') {
        *val = a + n + 1;
        return 1;
    }
    if (a[n] != 0) return 0;
    if (*i + 1 >= argc) return -1;
    *val = argv[++*i];
    return 1;
}

static int g_rank, g_size = 1;

void ax_cli_set_world(int rank, int size) {
    g_rank = rank, g_size = size;
}

int ax_cli_parse(const char *cmd, const ax_cfg_table *t, void *fl, int argc, char **argv,
                 uint8_t *was_set) {
    int help = 0;
    ax_status st = ax_cfg_set_defaults(t, fl);
    if (st == AX_OK) st = ax_cfg_parse_argv(t, fl, argc, argv, was_set, &help);
    if (st != AX_OK) {
        if (g_rank == 0) fprintf(stderr, "axmem %s: %s\n", cmd, ax_error_msg());
        return st == AX_ERR_ARG ? 2 : 1;
    }
    if (!help) return -1;
    if (g_rank == 0) ax_cfg_print_help(t, stdout);
    return 0;
}

int ax_cli_usage(const char *cmd, const char *fmt, const char *arg) {
    if (g_rank != 0) return 2;
    fprintf(stderr, "axmem %s: ", cmd);
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "; see 'axmem %s --help'\n", cmd);
    return 2;
}

int ax_cli_fail(const char *cmd, ax_status st) {
    const char *m = ax_error_msg();
    size_t n = strlen(cmd);
    if (!strncmp(m, cmd, n) && !strncmp(m + n, ": ", 2)) m += n + 2; /* "CMD: " said already */
    /* other ranks speak only for a failure of their own */
    if (g_rank == 0 || (!strstr(m, "another rank failed") && !strstr(m, "rank 0"))) {
        if (g_size > 1)
            fprintf(stderr, "axmem %s: [r%d] %s\n", cmd, g_rank, m[0] ? m : ax_status_str(st));
        else
            fprintf(stderr, "axmem %s: %s\n", cmd, m[0] ? m : ax_status_str(st));
    }
    return st == AX_ERR_ARG ? 2 : 1;
}

int ax_cli_require(const char *cmd, const char *const (*need)[2], int n) {
    for (int i = 0; i < n; i++)
        if (!need[i][0][0]) return ax_cli_usage(cmd, "%s is required", need[i][1]);
    return 0;
}

int ax_cli_dispatch(const char *cmd, const char *help, const ax_cli_sub *subs, int n, int argc,
                    char **argv) {
    ax_error_clear(); /* messages are sticky: a stale one must not be reported as ours */
    if (argc < 2) {
        fputs(help, stderr);
        return 2;
    }
    const char *sub = argv[1];
    if (ax_cli_is_help(sub) || !strcmp(sub, "help")) {
        fputs(help, stdout);
        return 0;
    }
    for (int i = 0; i < n; i++)
        if (!strcmp(sub, subs[i].name)) return subs[i].fn(argc - 1, argv + 1);
    fprintf(stderr, "axmem %s: unknown subcommand '%s' (", cmd, sub);
    for (int i = 0; i < n; i++) fprintf(stderr, "%s%s", i ? ", " : "", subs[i].name);
    fprintf(stderr, "); run 'axmem %s --help'\n", cmd);
    return 2;
}

/* ---------------------------------------------------------------- strict numbers */

/* Length of the decimal number at s (0 if none): [-]int[.frac][(e|E)[+-]digits], where int is
 * "0", starts with 1-9, or is left out before a fraction (".5"). *integral_text is set when there
 * is neither fraction nor exponent. */
static size_t decimal_len(const char *s, int *integral_text) {
    size_t i = 0;
    if (s[i] == '-') i++;
    if (s[i] == '0') {
        i++;
    } else if (s[i] >= '1' && s[i] <= '9') {
        while (s[i] >= '0' && s[i] <= '9') i++;
    } else if (!(s[i] == '.' && s[i + 1] >= '0' && s[i + 1] <= '9')) { /* ".5" is 0.5 */
        return 0;
    }
    *integral_text = 1;
    if (s[i] == '.') {
        i++;
        if (s[i] < '0' || s[i] > '9') return 0;
        while (s[i] >= '0' && s[i] <= '9') i++;
        *integral_text = 0;
    }
    if (s[i] == 'e' || s[i] == 'E') {
        i++;
        if (s[i] == '+' || s[i] == '-') i++;
        if (s[i] < '0' || s[i] > '9') return 0;
        while (s[i] >= '0' && s[i] <= '9') i++;
        *integral_text = 0;
    }
    return i;
}

int ax_parse_i64(const char *s, int64_t *out) {
    int plain = 0;
    size_t n = decimal_len(s, &plain);
    if (n == 0 || s[n] != 0) return 0;
    if (plain) {
        errno = 0;
        char *end;
        long long v = strtoll(s, &end, 10);
        if (errno == ERANGE) return -1;
        if (errno || *end) return 0;
        *out = v;
        return 1;
    }
    double d = strtod(s, NULL);
    if (!isfinite(d)) return -1;
    if (d != floor(d)) return 0;
    if (fabs(d) > 9007199254740992.0) return -1; /* 2^53: beyond it the text may not be exact */
    *out = (int64_t)d;
    return 1;
}

int ax_parse_f64(const char *s, double *out) {
    int plain = 0;
    size_t n = decimal_len(s, &plain);
    if (n == 0 || s[n] != 0) return 0;
    errno = 0;
    double d = strtod(s, NULL);
    if (!isfinite(d)) return -1;
    *out = d;
    return 1;
}

int ax_parse_size(const char *s, uint64_t *out) {
    size_t i = 0;
    if (s[0] == '0' && s[1] >= '0' && s[1] <= '9') return 0; /* "010" */
    while (s[i] >= '0' && s[i] <= '9') i++;
    if (i == 0) return 0;
    errno = 0;
    unsigned long long v = strtoull(s, NULL, 10);
    if (errno == ERANGE) return -1;
    static const char units[] = "kKmMgGtT"; /* either case: 2^10, 2^20, 2^30, 2^40 */
    const char *unit = s[i] ? strchr(units, s[i]) : NULL;
    int shift = unit ? 10 * (1 + (int)(unit - units) / 2) : 0;
    if (shift) {
        i++;
        if (s[i] == 'i' && s[i + 1] == 'B')
            i += 2;
        else if (s[i] == 'B' || s[i] == 'b')
            i++;
    }
    if (s[i] != 0) return 0;
    if (shift && v > (UINT64_MAX >> shift)) return -1;
    *out = (uint64_t)v << shift;
    return 1;
}
